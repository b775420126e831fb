"""Resume details: an answered run is finalized without the model, handoff call ids survive,
agents are resolved before anything runs, and a replay heals only the run's own session."""

from __future__ import annotations

import asyncio
import time
import warnings

import pytest

from lovia import (
    AgentResolutionError,
    CheckpointOptions,
    Handoff,
    InMemoryCheckpointer,
    InMemorySession,
    RunHead,
    RunHooks,
    Runner,
    RunSnapshot,
    ScriptedModel,
    ScriptedTurn,
    StoreError,
    ToolCall,
    ToolResult,
    UserMessage,
)
from lovia.agent import Agent
from lovia.models import call
from tests.runtime.helpers import RecordingSession, executions, kinds, step


@pytest.fixture(autouse=True)
def fresh_executions():
    executions.clear()


class StopsAfterTheAnswer(InMemoryCheckpointer):
    """Blocks in the snapshot that holds the final answer (the run is still ``running``)."""

    def __init__(self) -> None:
        super().__init__()
        self.answer_saved = asyncio.Event()

    async def save(self, snapshot: RunSnapshot) -> None:
        await super().save(snapshot)
        last = snapshot.entries[-1].type if snapshot.entries else None
        if snapshot.head.status == "running" and last == "assistant" and not self.answer_saved.is_set():
            self.answer_saved.set()
            await asyncio.Event().wait()  # cancelled here, before finalization


async def test_a_run_cancelled_after_its_answer_is_finalized_on_resume_without_the_model():
    seen: list[str] = []

    class Hooks(RunHooks):
        async def on_run_end(self, ctx, result):
            seen.append(f"end:{result.final_output}")

    def guard(ctx, text):
        seen.append(f"guard:{text}")

    checkpointer, session = StopsAfterTheAnswer(), InMemorySession()
    model = ScriptedModel([ScriptedTurn(text="Working.", tool_calls=[call("step", {"name": "one"}, call_id="c1")]),
                           "The answer."])
    agent = Agent(name="bot", model=model, tools=[step], hooks=Hooks(), output_guardrails=[guard])
    task = asyncio.ensure_future(Runner.run(agent, "go", session=session, session_id="u1",
                                            checkpoint=CheckpointOptions(checkpointer, "r1")))
    await asyncio.wait_for(checkpointer.answer_saved.wait(), 10)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    stopped = await checkpointer.load("r1")
    assert stopped.head.status == "interrupted" and stopped.head.answered
    assert seen == [] and await session.load("u1") == []

    # Any model call would fail, and max_turns=2 is already used up: the answer is not asked for again.
    again = Agent(name="bot", model=ScriptedModel([]), tools=[step], hooks=Hooks(), output_guardrails=[guard])
    result = await Runner.run(again, [], session=session, session_id="u1", max_turns=2,
                              checkpoint=CheckpointOptions(checkpointer, "r1"))
    assert result.final_output == "The answer." and not result.replayed
    assert seen == ["guard:The answer.", "end:The answer."]  # the guardrail never saw it before
    assert kinds(await session.load("u1")) == ["user", "assistant", "tool_call", "tool_result", "assistant"]
    assert executions == ["one"]
    assert (await checkpointer.load("r1")).head.status == "completed"


async def test_an_answered_run_that_failed_before_finalization_is_finalized_on_resume():
    checks: list[str] = []

    def flaky_guard(ctx, text):
        checks.append(text)
        if len(checks) == 1:
            raise ConnectionError("moderation service unreachable")

    checkpointer = InMemoryCheckpointer()
    agent = Agent(name="bot", model=ScriptedModel(["first answer", "second answer"]), output_guardrails=[flaky_guard])
    with pytest.raises(ConnectionError):
        await Runner.run(agent, "go", checkpoint=CheckpointOptions(checkpointer, "r1"))
    assert (await checkpointer.load("r1")).head.status == "failed"
    result = await Runner.run(agent, [], checkpoint=CheckpointOptions(checkpointer, "r1"))
    assert result.final_output == "first answer" and checks == ["first answer", "first answer"]
    assert kinds(result.new_entries) == ["user", "assistant"]


async def test_a_resumed_pending_handoff_keeps_the_call_id_of_the_transfer():
    checkpointer = InMemoryCheckpointer()
    entries = [UserMessage(text="q"), ToolCall(call_id="h-7", name="transfer_to_expert", agent="triage"),
               ToolResult(call_id="h-7", output="Transferred to expert.", name="transfer_to_expert")]
    head = RunHead(agent="triage", status="interrupted", turn=1, pending_handoff="expert", handoff_call_id="h-7")
    await checkpointer.save(RunSnapshot("r1", head, entries))
    expert = Agent(name="expert", model=ScriptedModel(["expert answer"]))
    triage = Agent(name="triage", model=ScriptedModel([]), handoffs=[expert])
    result = await Runner.run(triage, [], checkpoint=CheckpointOptions(checkpointer, "r1"))
    [handoff] = [e for e in result.new_entries if isinstance(e, Handoff)]
    assert handoff.call_id == "h-7"
    assert (await checkpointer.load("r1")).head.handoff_call_id is None


async def test_an_uninterrupted_handoff_records_its_call_id_in_the_head_until_applied():
    heads: list[tuple[str | None, str | None]] = []

    class Watching(InMemoryCheckpointer):
        async def save(self, snapshot: RunSnapshot) -> None:
            await super().save(snapshot)
            heads.append((snapshot.head.pending_handoff, snapshot.head.handoff_call_id))

    expert = Agent(name="expert", model=ScriptedModel(["expert answer"]))
    triage = Agent(name="triage", model=ScriptedModel([ScriptedTurn(
        tool_calls=[call("transfer_to_expert", call_id="h-1")])]), handoffs=[expert])
    result = await Runner.run(triage, "q", checkpoint=CheckpointOptions(Watching(), "r1"))
    assert ("expert", "h-1") in heads and heads[-1] == (None, None)
    assert [e.call_id for e in result.new_entries if isinstance(e, Handoff)] == ["h-1"]


async def test_a_removed_handoff_target_fails_the_resume_before_dangling_calls_run_again():
    checkpointer = InMemoryCheckpointer()
    # One turn asked for a transfer and a step; the transfer's result was saved, the step was not.
    entries = [UserMessage(text="q"),
               ToolCall(call_id="h", name="transfer_to_billing", agent="triage"),
               ToolCall(call_id="s", name="step", arguments='{"name": "charge"}', agent="triage"),
               ToolResult(call_id="h", output="Transferred to billing.", name="transfer_to_billing")]
    head = RunHead(agent="triage", status="interrupted", turn=1, pending_handoff="billing")
    await checkpointer.save(RunSnapshot("r1", head, entries))
    triage = Agent(name="triage", model=ScriptedModel([]), tools=[step])  # billing is gone
    with pytest.raises(AgentResolutionError, match=r"handoff target.*'billing'.*renamed or removed"):
        await Runner.run(triage, [], checkpoint=CheckpointOptions(checkpointer, "r1"))
    assert executions == []  # the dangling step did not run for a resume that cannot go on
    stored = await checkpointer.load("r1")
    # A hard error for the resume, not for the run (the spec): it stays as it was, to resume once billing is back.
    assert kinds(stored.entries) == kinds(entries) and stored.head.status == "interrupted"
    assert stored.head.error is None and stored.head.lease_until is None


async def test_replay_heals_the_runs_own_session_and_leaves_the_callers_alone():
    checkpointer, session = InMemoryCheckpointer(), RecordingSession()
    session.fail_appends = StoreError("disk full")  # finalized, never appended to "a"
    with pytest.raises(StoreError):
        await Runner.run(Agent(name="bot", model=ScriptedModel(["done"])), "go", session=session,
                         session_id="a", checkpoint=CheckpointOptions(checkpointer, "r1"))
    session.fail_appends = None
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        replay = await Runner.run(Agent(name="bot", model=ScriptedModel([])), "go", session=session,
                                  session_id="b", checkpoint=CheckpointOptions(checkpointer, "r1"))
    assert replay.replayed and replay.final_output == "done"
    assert await session.load("b") == []  # not copied into the caller's session
    assert [s.run_id for s in await session.segments("a")] == ["r1"]  # healed where it belongs
    assert replay.session_id == "a"
    [note] = replay.warnings
    assert "belongs to session 'a', not to session 'b'" in note
    assert any(str(w.message) == note and w.category is RuntimeWarning for w in caught)


async def test_a_replay_from_the_runs_own_session_warns_nothing():
    checkpointer, session = InMemoryCheckpointer(), InMemorySession()
    agent = Agent(name="bot", model=ScriptedModel(["done"]))
    await Runner.run(agent, "go", session=session, session_id="a", checkpoint=CheckpointOptions(checkpointer, "r1"))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        replay = await Runner.run(agent, "go", session=session, session_id="a",
                                  checkpoint=CheckpointOptions(checkpointer, "r1"))
    assert replay.replayed and replay.warnings == [] and len(await session.segments("a")) == 1


async def test_a_replay_healed_segment_finishes_when_it_is_appended():
    checkpointer, session = InMemoryCheckpointer(), InMemorySession()
    head = RunHead(agent="bot", status="completed", turn=1, started_at=900.0, updated_at=1000.0, session_id="a")
    await checkpointer.save(RunSnapshot("r1", head, [UserMessage(text="go")]))
    before = time.time()
    await Runner.run(Agent(name="bot", model=ScriptedModel([])), [], session=session, session_id="a",
                     checkpoint=CheckpointOptions(checkpointer, "r1"))
    [segment] = await session.segments("a")
    assert segment.meta["timing"]["started_at"] == 900.0
    assert segment.meta["timing"]["finished_at"] >= before  # the append's time, not the head's last update
