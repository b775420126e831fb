"""How a run stopped: what a list of runs left behind says of each, from its head and entries alone.

Pure: nothing here reads a store, a clock or a terminal (``now`` is passed in), so the runs
list, the inspector and any other view tell a run's story the same way, and tests check it
without a store.

A run not in its session yet stopped for one reason (:attr:`RunStop.kind`) at one point of
its loop (:attr:`RunStop.moment`):

- ``kind``: ``stopped`` (interrupted: the user stopped it, or its program cancelled it),
  ``crashed`` (left ``running`` by a process that died, or whose lease lapsed), ``failed``
  (an error ended it; ``model_error`` when the model endpoint's), ``elsewhere`` (another
  process executes it now: not stopped at all), ``running`` (this process executes it) or
  ``completed``.
- ``moment``: ``streaming`` (a model turn was streaming; its partial text is
  ``head.cut_off_text``), ``tools`` (inside the tool calls that have no result yet, the ones a
  resume runs again), ``waiting`` (a model turn was asked and nothing of it had arrived: the
  stop came while waiting for the model), ``answered`` (after the model's final answer, before
  the run was finalized) or ``between_turns``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from lovia import errors
from lovia.checkpoint import RunHead
from lovia.entries import Entry, UserMessage
from lovia.timing import ModelStep
from lovia.transcript import dangling_tool_calls

__all__ = ["Moment", "RunState", "RunStop", "StopKind", "error_reason", "first_line", "how_run_stopped", "run_state"]

RunState = Literal["completed", "running", "elsewhere", "interrupted", "crashed", "failed"]

StopKind = Literal["stopped", "crashed", "failed", "elsewhere", "running", "completed"]
Moment = Literal["streaming", "tools", "waiting", "answered", "between_turns"]

MODEL_ERROR_PREFIX = "ModelError: "
"""How the runner records a failure raised by the model endpoint (``"{type}: {message}"``)."""

_LOVIA_ERRORS = frozenset(name for name, value in vars(errors).items()
                          if isinstance(value, type) and issubclass(value, errors.LoviaError))
"""The names of lovia's own errors: their messages say what went wrong without their class."""


@dataclass(frozen=True, slots=True)
class RunStop:
    """How one run stopped (see the module docstring), and the one-line detail that goes with it.

    ``detail`` is, by ``kind`` and ``moment``: the partial answer's text (``streaming``, on
    one line, whole: cut it to the room there is), the first line of the error (``failed``;
    without the ``ModelError:`` prefix for a model error), or the process that holds the run
    (``elsewhere``: ``pid 4242 on build-7``); ``""`` when there is nothing to add. ``calls``
    are the names of the tool calls without a result, in the order they were made (those a
    resume executes again, or, for a run executing now, those running).
    """

    kind: StopKind
    moment: Moment
    detail: str = ""
    calls: tuple[str, ...] = ()
    model_error: bool = False

    @property
    def headline(self) -> str:
        """``crashed while streaming``, ``stopped inside wait, send_mail``, ``failed on a model error``,
        ``running elsewhere``: what a list says first of the run (the names are not cut)."""
        return self.describe(", ".join(self.calls))

    def describe(self, calls: str) -> str:
        """:attr:`headline` with ``calls`` in place of the calls' names (``2 tool calls`` where they do not fit)."""
        if self.kind == "elsewhere":
            return "running elsewhere" + (f" inside {calls}" if self.calls else "")
        if self.kind == "running":
            return "running here"
        if self.kind == "completed":
            return "completed"
        if self.kind == "failed":
            return "failed on a model error" if self.model_error else "failed"
        return f"{self.kind} {_MOMENT_WORDS[self.moment].format(calls=calls)}"


_MOMENT_WORDS = {
    "streaming": "while streaming",
    "tools": "inside {calls}",
    "waiting": "before the first token",  # 32 cells with its mark: whole in the 34 of the runs list
    "answered": "after its answer",
    "between_turns": "between turns",
}


def run_state(head: RunHead, now: float | None = None) -> RunState:
    """How a run's head reads to a user, as of ``now`` (default: the current time).

    A ``running`` run is ``crashed`` when nothing holds it (its owner is gone or its lease
    lapsed), ``elsewhere`` when another process holds it, and ``running`` when this one does.
    """
    if head.status != "running":
        return head.status
    holder = head.holder(now)
    return "crashed" if holder is None else "running" if holder == "here" else "elsewhere"


def _asked_and_no_chunk_came(head: RunHead, entries: Sequence[Entry]) -> bool:
    """Whether the run stopped waiting for a model turn: its last step is a turn that ended (cut off)
    or never did (its process died) before a first chunk, or, with no step saved yet, the run holds
    its input alone (a run killed in its first seconds: the lease's first renewal saves its steps)."""
    if not head.steps:
        return head.turn == 0 and all(isinstance(entry, UserMessage) for entry in entries)
    step = head.steps[-1]
    return isinstance(step, ModelStep) and step.first_token_at is None and (step.cut_off or step.finished_at is None)


def error_reason(error: str) -> str:
    """A failed run's error as the runner stores it (``"{type}: {message}"``), as a user reads it:
    one of lovia's own (``ModelError``, ``MaxTurnsExceeded``) without its class, whose name only
    took the room of the reason; another (a hook's ``KeyError: 'x'``) with it, as ``'x'`` alone
    would say nothing."""
    name, colon, rest = error.partition(": ")
    return rest if colon and name in _LOVIA_ERRORS else error


def first_line(text: str) -> str:
    """The first non-blank line of ``text``, stripped; ``""`` when there is none."""
    return next((line.strip() for line in text.splitlines() if line.strip()), "")


def how_run_stopped(head: RunHead, entries: Sequence[Entry], now: float) -> RunStop:
    """How the run with ``head`` and its own ``entries`` stopped, as of ``now`` (epoch seconds).

    Whether another process holds it is :meth:`RunHead.holder` at ``now`` (this process's live
    executions, the owner's liveness, the lease). The moment is ``streaming`` when the head
    kept text of a turn cut off (``cut_off_text``; the journal fills it for a crashed run),
    else ``tools`` when calls have no result, else ``waiting`` when its last step is a model turn
    that had no chunk yet (cut off, or never ended: its process died), or when no step is saved and
    the run holds its input alone, else ``answered`` when its last model turn gave the answer, else
    ``between_turns``.
    (A run killed waiting for a later turn, before the lease's next renewal saved that turn's step,
    reads ``between_turns``: its head was last saved before the turn was asked.)
    """
    calls = tuple(call.name for call in dangling_tool_calls(entries))
    moment: Moment
    if head.cut_off_text:
        moment = "streaming"
    elif calls:
        moment = "tools"
    elif _asked_and_no_chunk_came(head, entries):
        moment = "waiting"
    elif head.answered:
        moment = "answered"
    else:
        moment = "between_turns"
    streamed = head.cut_off_text or ""
    state = run_state(head, now)
    if state == "failed":
        error = first_line(head.error or "")
        return RunStop("failed", moment, error_reason(error), calls, error.startswith(MODEL_ERROR_PREFIX))
    if state in ("interrupted", "crashed"):
        return RunStop("stopped" if state == "interrupted" else "crashed", moment, streamed, calls)
    if state == "elsewhere":
        owner = head.owner
        return RunStop("elsewhere", moment, f"pid {owner.pid} on {owner.host}" if owner else "", calls)
    return RunStop("completed" if state == "completed" else "running", moment, calls=calls)  # or running here
