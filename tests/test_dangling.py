"""complete_dangling_call: a dangling call decided before the resume, on a real SQLite file.

A run stops inside a side-effecting tool that counts its executions. Resumed as the spec
says, the tool runs again; completed first through the public API, it never does, and the
resume goes on with the result given.
"""

from __future__ import annotations

import asyncio
import dataclasses
from pathlib import Path

import pytest

from lovia import (
    Agent,
    CheckpointOptions,
    InMemoryCheckpointer,
    InMemorySession,
    RunClaimedError,
    RunHead,
    Runner,
    RunOwner,
    RunSnapshot,
    SQLiteCheckpointer,
    SQLiteSession,
    ToolCall,
    ToolResult,
    UserError,
    UserMessage,
    complete_dangling_call,
    tool,
)
from lovia.models import ScriptedModel, ScriptedTurn, call
from lovia.models.base import ModelRequest
from lovia.timing import ToolStep, given_results, steps_from_meta

RUN = "run-charge"


class Charges:
    """A side-effecting tool that counts its executions; the first one can be held open."""

    def __init__(self) -> None:
        self.executions = 0
        self.started = asyncio.Event()
        self.hold_first = True

        @tool(name="charge_card")
        async def charge_card(amount: int) -> str:
            """Charges the card (counted)."""
            self.executions += 1
            self.started.set()
            if self.hold_first and self.executions == 1:
                await asyncio.sleep(3600)  # stopped here: the charge may or may not have gone through
            return f"charged {amount}"

        self.tool = charge_card


def saw_results(request: ModelRequest) -> ScriptedTurn:
    """The answer names the tool results the model was given, so a test sees what the resume used."""
    results = [e for e in request.messages if isinstance(e, ToolResult)]
    return ScriptedTurn(text="saw " + "; ".join(("error: " if r.is_error else "") + r.output for r in results))


def agent_for(charges: Charges) -> Agent:
    model = ScriptedModel([ScriptedTurn(text="Charging.", tool_calls=[call("charge_card", {"amount": 5},
                                                                           call_id="c-charge")]),
                           saw_results])
    return Agent(name="shop", tools=[charges.tool], model=model)


@pytest.fixture(params=["sqlite", "memory"])
def stores(request, tmp_path: Path):
    if request.param == "sqlite":
        db = tmp_path / "lovia.db"
        return SQLiteSession(db, wal=True), SQLiteCheckpointer(db, wal=True)
    return InMemorySession(), InMemoryCheckpointer()


async def stop_inside_the_charge(charges: Charges, agent: Agent, session, checkpointer) -> None:
    """Start the run and stop it while the charge executes: the call is left dangling."""
    task = asyncio.ensure_future(Runner.run(agent, "buy it", session=session, session_id="s-shop",
                                            checkpoint=CheckpointOptions(checkpointer, RUN)))
    started = asyncio.ensure_future(charges.started.wait())
    await asyncio.wait([task, started], return_when=asyncio.FIRST_COMPLETED)
    started.cancel()
    assert not task.done(), task.exception()  # a run that failed before the tool would leave this test waiting
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    snapshot = await checkpointer.load(RUN)
    assert snapshot.head.status == "interrupted"
    assert [e.type for e in snapshot.entries] == ["user", "assistant", "tool_call"]
    assert charges.executions == 1


async def resume(agent: Agent, session, checkpointer):
    return await Runner.run(agent, [], session=session, session_id="s-shop",
                            checkpoint=CheckpointOptions(checkpointer, RUN, if_run_exists="resume_only"))


async def test_resumed_as_the_spec_says_the_dangling_call_runs_again(stores):
    session, checkpointer = stores
    charges = Charges()
    agent = agent_for(charges)
    await stop_inside_the_charge(charges, agent, session, checkpointer)
    result = await resume(agent, session, checkpointer)
    assert charges.executions == 2  # the spec's at-least-once: the card may be charged twice
    assert result.final_output == "saw charged 5"


async def test_a_call_completed_with_its_output_never_runs_again(stores):
    session, checkpointer = stores
    charges = Charges()
    agent = agent_for(charges)
    await stop_inside_the_charge(charges, agent, session, checkpointer)
    before = (await checkpointer.load(RUN)).head

    stored = await complete_dangling_call(checkpointer, RUN, "c-charge", output="charged 5 (seen in the bank)")

    assert stored == ToolResult(call_id="c-charge", name="charge_card", output="charged 5 (seen in the bank)",
                                created_at=stored.created_at)
    after = await checkpointer.load(RUN)
    assert after.entries[-1] == stored
    assert after.head.status == "interrupted" and after.head.lease_until is None and not after.head.is_held()
    assert (after.head.turn, after.head.usage, after.head.started_at) == (before.turn, before.usage, before.started_at)
    # The call's step says the result was given, not received from the tool (it read as the tool's own).
    [step] = [s for s in after.head.steps if isinstance(s, ToolStep)]
    assert step.call_id == "c-charge" and step.given and step.cut_off and not step.error
    assert given_results(after.head.steps) == {"c-charge"}
    result = await resume(agent, session, checkpointer)
    assert charges.executions == 1
    assert result.final_output == "saw charged 5 (seen in the bank)"
    entries = await session.load("s-shop")
    assert [e.type for e in entries] == ["user", "assistant", "tool_call", "tool_result", "assistant"]
    [segment] = await session.segments("s-shop")
    assert given_results(steps_from_meta(segment.meta)) == {"c-charge"}  # kept in the session


async def test_a_call_completed_with_an_error_reaches_the_model_as_the_tools_failure(stores):
    session, checkpointer = stores
    charges = Charges()
    agent = agent_for(charges)
    await stop_inside_the_charge(charges, agent, session, checkpointer)
    stored = await complete_dangling_call(checkpointer, RUN, "c-charge", error="not charged: card declined")
    assert stored.is_error and stored.output == "not charged: card declined"
    result = await resume(agent, session, checkpointer)
    assert charges.executions == 1
    assert result.final_output == "saw error: not charged: card declined"


async def test_only_the_calls_completed_are_skipped(tmp_path):
    db = tmp_path / "lovia.db"
    checkpointer, session = SQLiteCheckpointer(db, wal=True), SQLiteSession(db, wal=True)
    charges = Charges()
    charges.hold_first = False
    head = RunHead(agent="shop", status="interrupted", turn=1, session_id="s-shop", first_input="buy two")
    entries = [UserMessage(text="buy two"),
               ToolCall(call_id="c-1", name="charge_card", arguments='{"amount": 1}', agent="shop"),
               ToolCall(call_id="c-2", name="charge_card", arguments='{"amount": 2}', agent="shop")]
    await checkpointer.save(RunSnapshot(RUN, head, entries))
    await complete_dangling_call(checkpointer, RUN, "c-1", output="charged 1 earlier")
    agent = Agent(name="shop", tools=[charges.tool], model=ScriptedModel([saw_results]))
    # c-1 never started its tool: it has a step now, taking no time, given; c-2 ran and is not
    snapshot = await checkpointer.load(RUN)
    [given] = snapshot.head.steps
    assert (given.call_id, given.given, given.duration) == ("c-1", True, 0.0)
    result = await resume(agent, session, checkpointer)
    assert charges.executions == 1  # c-2 only
    assert result.final_output == "saw charged 1 earlier; charged 2"
    [segment] = await session.segments("s-shop")
    assert given_results(steps_from_meta(segment.meta)) == {"c-1"}


async def test_a_crashed_run_stays_crashed_and_resumable(tmp_path):
    db = tmp_path / "lovia.db"
    checkpointer = SQLiteCheckpointer(db, wal=True)
    gone = RunOwner(host="worker-gone", pid=4242, started=1)
    head = RunHead(agent="shop", status="running", owner=gone, claim="t-old", lease_until=1.0, session_id="s-shop")
    await checkpointer.save(RunSnapshot(RUN, head, [UserMessage(text="buy"), ToolCall(
        call_id="c-charge", name="charge_card", arguments="{}", agent="shop")]))
    await complete_dangling_call(checkpointer, RUN, "c-charge", output="charged")
    after = await checkpointer.load(RUN)
    assert after.head.status == "running" and after.head.owner == gone and after.head.crashed


async def test_refusals_name_the_run_and_change_nothing(tmp_path):
    db = tmp_path / "lovia.db"
    checkpointer = SQLiteCheckpointer(db, wal=True)
    call_entry = ToolCall(call_id="c-charge", name="charge_card", arguments="{}", agent="shop")
    held = RunHead(agent="shop", status="running", owner=RunOwner(host="worker-far", pid=7, started=1),
                   claim="t-far", lease_until=4_000_000_000.0, session_id="s")
    await checkpointer.save(RunSnapshot("run-held", held, [UserMessage(text="secret words"), call_entry]))
    with pytest.raises(RunClaimedError, match="run 'run-held' is being executed by process 7 on worker-far"):
        await complete_dangling_call(checkpointer, "run-held", "c-charge", output="x")
    assert (await checkpointer.load("run-held")).entries[-1] == call_entry

    with pytest.raises(UserError, match="run 'run-none' is not stored"):
        await complete_dangling_call(checkpointer, "run-none", "c-charge", output="x")

    done = dataclasses.replace(held, status="completed", owner=None, claim=None, lease_until=None)
    await checkpointer.save(RunSnapshot("run-done", done, [UserMessage(text="secret words"), call_entry]))
    with pytest.raises(UserError, match="run 'run-done' has completed"):
        await complete_dangling_call(checkpointer, "run-done", "c-charge", output="x")

    stopped = dataclasses.replace(done, status="interrupted")
    result = ToolResult(call_id="c-charge", output="ok")
    await checkpointer.save(RunSnapshot("run-stopped", stopped, [UserMessage(text="secret words"), call_entry,
                                                                 result]))
    with pytest.raises(UserError, match="tool call 'c-charge' of run 'run-stopped' has a result already"):
        await complete_dangling_call(checkpointer, "run-stopped", "c-charge", output="x")
    with pytest.raises(UserError, match="run 'run-stopped' has no tool call 'c-other'") as refused:
        await complete_dangling_call(checkpointer, "run-stopped", "c-other", error="x")
    assert "secret" not in str(refused.value)
    with pytest.raises(UserError, match=r"exactly one of output= .* or error="):
        await complete_dangling_call(checkpointer, "run-stopped", "c-charge", output="x", error="y")
    with pytest.raises(UserError, match="exactly one"):
        await complete_dangling_call(checkpointer, "run-stopped", "c-charge")
    after = await checkpointer.load("run-stopped")
    assert after.entries[-1] == result and after.head.status == "interrupted" and not after.head.is_held()


async def test_refused_while_the_run_executes_in_this_process(tmp_path):
    db = tmp_path / "lovia.db"
    session, checkpointer = SQLiteSession(db, wal=True), SQLiteCheckpointer(db, wal=True)
    charges = Charges()
    agent = agent_for(charges)
    task = asyncio.ensure_future(Runner.run(agent, "buy it", session=session, session_id="s-shop",
                                            checkpoint=CheckpointOptions(checkpointer, RUN)))
    await charges.started.wait()
    with pytest.raises(RunClaimedError, match=f"run '{RUN}' is already executing in this process"):
        await complete_dangling_call(checkpointer, RUN, "c-charge", output="x")
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert [e.type for e in (await checkpointer.load(RUN)).entries] == ["user", "assistant", "tool_call"]


class PlainCheckpointer:
    """Only the spec's Checkpointer (save, load, delete) over a dict: no claims, no listing."""

    def __init__(self) -> None:
        self.runs: dict[str, RunSnapshot] = {}

    async def save(self, snapshot: RunSnapshot) -> None:
        self.runs[snapshot.run_id] = RunSnapshot(snapshot.run_id, dataclasses.replace(snapshot.head),
                                                 list(snapshot.entries))

    async def load(self, run_id: str) -> RunSnapshot | None:
        stored = self.runs.get(run_id)
        return None if stored is None else RunSnapshot(run_id, dataclasses.replace(stored.head), list(stored.entries))

    async def delete(self, run_id: str) -> bool:
        return self.runs.pop(run_id, None) is not None


async def test_a_checkpointer_that_cannot_claim_checks_the_stored_head():
    checkpointer = PlainCheckpointer()
    session = InMemorySession()
    charges = Charges()
    agent = agent_for(charges)
    await stop_inside_the_charge(charges, agent, session, checkpointer)
    await complete_dangling_call(checkpointer, RUN, "c-charge", output="charged 5 already")
    after = await checkpointer.load(RUN)
    assert after.head.status == "interrupted" and not after.head.is_held()
    result = await resume(agent, session, checkpointer)
    assert charges.executions == 1 and result.final_output == "saw charged 5 already"

    held = dataclasses.replace(after.head, status="running", owner=RunOwner(host="worker-far", pid=7, started=1),
                               claim="t-far", lease_until=4_000_000_000.0)
    await checkpointer.save(RunSnapshot("run-held", held, [UserMessage(text="x"), ToolCall(
        call_id="c-1", name="charge_card", arguments="{}", agent="shop")]))
    with pytest.raises(RunClaimedError, match="run 'run-held' is being executed by process 7 on worker-far"):
        await complete_dangling_call(checkpointer, "run-held", "c-1", output="x")
