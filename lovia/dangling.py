"""Decide a dangling tool call before a resume runs it again.

A run that stopped, crashed or failed inside its tool calls leaves calls without a result:
*dangling* calls. The spec's resume executes them again, since whether they ran before the
stop is unknown (a call may have sent the mail and died before its result was saved). For a
side-effecting tool that may be wrong. :func:`complete_dangling_call` records the call's
outcome instead, as the user or the program knows it (the mail did go out; the charge
failed), so that the resume (``Runner.run`` with the same run id, as the spec says) goes on
with that result and never executes the call again::

    from lovia import complete_dangling_call

    await complete_dangling_call(checkpointer, run_id, "call_8f2", output="sent (checked the outbox)")
    await complete_dangling_call(checkpointer, run_id, "call_8f3", error="not charged: card declined")
    await Runner.run(agent, [], session=session, session_id=session_id,
                     checkpoint=CheckpointOptions(checkpointer, run_id, if_run_exists="resume_only"))

The run is claimed for the change as a resume claims it, so a run executing anywhere (in this
process or under another process's live lease) is refused, never raced.
"""

from __future__ import annotations

import contextlib
import time
import uuid
from dataclasses import replace

from lovia.checkpoint import (
    DEFAULT_LEASE_SECONDS,
    Checkpointer,
    ClaimingCheckpointer,
    RunOwner,
    RunSnapshot,
    claim_refused,
    live_claim,
    released_as_found,
)
from lovia.entries import ToolResult
from lovia.errors import UserError
from lovia.timing import Step, ToolStep
from lovia.transcript import dangling_tool_calls, pair_tool_calls

__all__ = ["complete_dangling_call"]


async def complete_dangling_call(
    checkpointer: Checkpointer,
    run_id: str,
    call_id: str,
    *,
    output: str | None = None,
    error: str | None = None,
    lease_seconds: float = DEFAULT_LEASE_SECONDS,
) -> ToolResult:
    """Record the outcome of the run's tool call ``call_id``, which has no result, and return the result stored.

    Give exactly one of ``output`` (the call's output, as the tool would have returned it)
    or ``error`` (stored as an error result, ``is_error=True``, which the model sees as the
    tool's failure). The result is appended to the run's checkpointed entries, after the
    calls, as the runner appends a tool's result; a later resume of the run finds the call
    answered and executes only the calls still without a result (then asks the model, as
    after any tool results). The model sees the text given here as the tool's output: no
    context policy processes it (a long output is not archived), and a handoff call given a
    result this way does not transfer. The call's step in the run's timing is marked ``given``
    (:class:`~lovia.timing.ToolStep`), so a transcript and an export can tell such a result
    from one the tool returned.

    The run is taken for the change as a resume takes it (with a
    :class:`~lovia.checkpoint.ClaimingCheckpointer`, in one atomic step, under a lease of
    ``lease_seconds`` that the change releases) and given back in the state it was found in
    (``interrupted``, ``failed``, or crashed), its head as it was (``updated_at`` included: the
    run stopped when it stopped). Raises
    :class:`~lovia.errors.RunClaimedError` (naming the run and its holder; nothing changed)
    when an execution holds the run, in this process or another, and
    :class:`~lovia.errors.UserError` when the run is not stored, has completed, has no call
    ``call_id`` or that call has a result already, or when not exactly one of ``output`` and
    ``error`` is given. Errors name the run and the call by id, never their text.
    """
    if (output is None) == (error is None):
        raise UserError(f"complete_dangling_call for call {call_id!r} of run {run_id!r} needs exactly one of "
                        "output= (what the tool returned) or error= (why it failed)")
    token = f"complete-{uuid.uuid4().hex}"
    with live_claim(token, checkpointer, run_id):  # refuses a run executing in this process
        if isinstance(checkpointer, ClaimingCheckpointer):
            snapshot = await checkpointer.claim(run_id, RunOwner.current(), token=token, lease_seconds=lease_seconds)
            taken = snapshot is not None and snapshot.head.claim == token
        else:
            snapshot = await checkpointer.load(run_id)
            if snapshot is not None and snapshot.head.is_held():
                raise claim_refused(run_id, snapshot.head)
            taken = snapshot is not None and snapshot.head.status != "completed"
        if snapshot is None:
            raise UserError(f"run {run_id!r} is not stored in this checkpointer, so it has no call to complete "
                            "(it may have been discarded, or finalized into its session)")
        if not taken:
            raise UserError(f"run {run_id!r} has completed, so none of its calls can be completed any more")
        found = released_as_found(snapshot, token)
        try:
            result = _result_for(snapshot, call_id, output, error)
            given = replace(found, steps=_marked_given(found.steps, result))
            await checkpointer.save(RunSnapshot(run_id, given, [*snapshot.entries, result]))
        except BaseException:
            with contextlib.suppress(Exception):  # the refusal or the failed save is the error to report
                await checkpointer.save(RunSnapshot(run_id, found, snapshot.entries))
            raise
        return result


def _marked_given(steps: list[Step], result: ToolResult) -> list[Step]:
    """The run's steps with the call's last step marked ``given`` (its result did not come from the tool):
    what the transcript, the timeline and the export say of it. A call that never started its tool has
    no step: it gets one now, taking no time, at the moment its result was given."""
    for index in range(len(steps) - 1, -1, -1):
        step = steps[index]
        if isinstance(step, ToolStep) and step.call_id == result.call_id:
            return [*steps[:index], replace(step, given=True, error=result.is_error), *steps[index + 1:]]
    now = time.time()
    return [*steps, ToolStep(result.call_id, result.name or "", now, now, error=result.is_error, given=True)]


def _result_for(snapshot: RunSnapshot, call_id: str, output: str | None, error: str | None) -> ToolResult:
    pairs = pair_tool_calls(snapshot.entries)
    if call_id not in pairs:
        waiting = ", ".join(repr(call.call_id) for call in dangling_tool_calls(snapshot.entries)) or "none"
        raise UserError(f"run {snapshot.run_id!r} has no tool call {call_id!r}; its calls without a result: "
                        f"{waiting}")
    call, result = pairs[call_id]
    if result is not None:
        raise UserError(f"tool call {call_id!r} of run {snapshot.run_id!r} has a result already; only a call "
                        "without one can be completed")
    if error is not None:
        return ToolResult(call_id=call_id, name=call.name, output=error, is_error=True)
    assert output is not None
    return ToolResult(call_id=call_id, name=call.name, output=output)
