"""Checkpoints in the runner: snapshots, the four policies, resume, replay and ordering."""

from __future__ import annotations

import asyncio
import dataclasses
import subprocess
import sys

import pytest

from lovia import (
    Agent,
    CheckpointOptions,
    InMemoryCheckpointer,
    InMemorySession,
    RunCompleted,
    RunHead,
    RunHooks,
    RunInterrupted,
    Runner,
    RunOwner,
    RunSnapshot,
    ScriptedModel,
    ScriptedTurn,
    SQLiteCheckpointer,
    StoreError,
    ToolCall,
    ToolContext,
    ToolResult,
    UserError,
    UserMessage,
    tool,
)
from lovia.models import call
from tests.runtime.helpers import RecordingCheckpointer, RecordingSession, executions, kinds, step


@pytest.fixture(autouse=True)
def fresh_executions():
    executions.clear()


def two_step_model() -> ScriptedModel:
    return ScriptedModel([
        ScriptedTurn(text="Working.", tool_calls=[call("step", {"name": "one"})]),
        ScriptedTurn(tool_calls=[call("step", {"name": "two"})]),
        "All done.",
    ])


async def test_snapshots_follow_every_model_turn_and_every_tool_result():
    checkpointer = RecordingCheckpointer()
    agent = Agent(name="bot", model=two_step_model(), tools=[step])
    await Runner.run(agent, "go", checkpoint=CheckpointOptions(checkpointer, "r1"))
    writes = [entry for entry in checkpointer.log if entry[0] in ("claim", "save")]
    assert [(what, status, types[-1], len(types)) for what, status, types in writes] == [
        ("claim", "running", "user", 1),  # the run is visible as soon as it starts, stored by its claim
        ("save", "running", "tool_call", 3),      # after model turn 1
        ("save", "running", "tool_result", 4),    # after its tool result
        ("save", "running", "tool_call", 5),      # after model turn 2
        ("save", "running", "tool_result", 6),
        ("save", "running", "assistant", 7),      # after the final model turn
        ("save", "completed", "assistant", 7),    # finalized
    ]


async def test_policy_resume_starts_fresh_then_replays_a_completed_run_without_the_model():
    checkpointer = InMemoryCheckpointer()
    agent = Agent(name="bot", model=two_step_model(), tools=[step])
    first = await Runner.run(agent, "go", checkpoint=CheckpointOptions(checkpointer, "r1"))
    again = Agent(name="bot", model=ScriptedModel([]), tools=[step])  # any model call would fail
    stream = Runner.stream(again, "this new input is ignored", checkpoint=CheckpointOptions(checkpointer, "r1"))
    events = [event async for event in stream]
    replay = stream.result
    assert [type(e) for e in events] == [RunCompleted]  # terminal events only
    assert replay.replayed and replay.finish_reason is None and first.finish_reason == "stop"
    assert replay.final_output == first.final_output == "All done."
    assert replay.usage == first.usage and replay.new_entries == first.new_entries
    assert executions == ["one", "two"]  # nothing re-ran


async def test_policy_restart_discards_the_stored_run():
    checkpointer = InMemoryCheckpointer()
    await Runner.run(Agent(name="bot", model=ScriptedModel(["old"])), "a", checkpoint=CheckpointOptions(checkpointer, "r1"))
    result = await Runner.run(Agent(name="bot", model=ScriptedModel(["new"])), "b",
                              checkpoint=CheckpointOptions(checkpointer, "r1", if_run_exists="restart"))
    assert result.final_output == "new" and not result.replayed
    assert [e.text for e in (await checkpointer.load("r1")).entries] == ["b", "new"]
    fresh = await Runner.run(Agent(name="bot", model=ScriptedModel(["x"])), "c",
                             checkpoint=CheckpointOptions(checkpointer, "r2", if_run_exists="restart"))
    assert fresh.final_output == "x"


async def test_policy_fail_raises_for_an_existing_run_only():
    checkpointer = InMemoryCheckpointer()
    agent = Agent(name="bot", model=ScriptedModel(["a", "b"]))
    await Runner.run(agent, "x", checkpoint=CheckpointOptions(checkpointer, "r1", if_run_exists="fail"))
    with pytest.raises(UserError, match="already exists.*if_run_exists='fail'"):
        await Runner.run(agent, "x", checkpoint=CheckpointOptions(checkpointer, "r1", if_run_exists="fail"))
    assert (await checkpointer.load("r1")).head.status == "completed"  # untouched by the refusal


async def test_policy_resume_only_needs_a_stored_run():
    checkpointer = InMemoryCheckpointer()
    agent = Agent(name="bot", model=ScriptedModel(["a"]))
    with pytest.raises(UserError, match="no stored run 'missing'"):
        await Runner.run(agent, [], checkpoint=CheckpointOptions(checkpointer, "missing", if_run_exists="resume_only"))
    assert await checkpointer.load("missing") is None
    await Runner.run(agent, "x", checkpoint=CheckpointOptions(checkpointer, "r1"))
    replay = await Runner.run(agent, [], checkpoint=CheckpointOptions(checkpointer, "r1", if_run_exists="resume_only"))
    assert replay.replayed and replay.final_output == "a"


async def test_cancelling_a_run_leaves_it_interrupted_and_out_of_the_session():
    gate = asyncio.Event()

    @tool
    async def slow() -> str:
        """Waits forever."""
        gate.set()
        await asyncio.sleep(3600)
        return "never"

    checkpointer, session = InMemoryCheckpointer(), InMemorySession()
    model = ScriptedModel([ScriptedTurn(tool_calls=[call("slow", call_id="c-slow")]), "finished after resume"])
    agent = Agent(name="bot", model=model, tools=[slow])
    task = asyncio.ensure_future(Runner.run(agent, "go", session=session, session_id="u1",
                                            checkpoint=CheckpointOptions(checkpointer, "r1")))
    await asyncio.wait_for(gate.wait(), 5)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    snapshot = await checkpointer.load("r1")
    assert snapshot.head.status == "interrupted"
    assert kinds(snapshot.entries) == ["user", "tool_call"]  # the call is dangling
    assert await session.load("u1") == []  # interrupted runs are not appended

    @tool(name="slow")
    async def quick() -> str:
        """Now fast."""
        return "fast now"

    resumed = await Runner.run(Agent(name="bot", model=model, tools=[quick]), [], session=session, session_id="u1",
                               checkpoint=CheckpointOptions(checkpointer, "r1"))
    assert resumed.final_output == "finished after resume"
    results = [e for e in resumed.new_entries if isinstance(e, ToolResult)]
    assert [(r.call_id, r.output) for r in results] == [("c-slow", "fast now")]
    assert kinds(await session.load("u1")) == ["user", "tool_call", "tool_result", "assistant"]


async def test_stop_interrupts_a_stream_with_an_event():
    checkpointer = InMemoryCheckpointer()
    model = ScriptedModel([ScriptedTurn(text="a long answer " * 50, chunk_chars=5, delay=0.005)])
    stream = Runner.stream(Agent(name="bot", model=model), "talk", checkpoint=CheckpointOptions(checkpointer, "r1"))
    events = []
    async for event in stream:
        events.append(event)
        if len(events) == 5:
            stream.stop()
    assert isinstance(events[-1], RunInterrupted) and stream.stopped and stream.result is None
    assert (await checkpointer.load("r1")).head.status == "interrupted"


async def test_resume_rebuilds_the_run_and_reruns_only_dangling_calls():
    checkpointer = InMemoryCheckpointer()
    session = InMemorySession()
    await session.append("u1", [UserMessage(text="earlier"), ], run_id="old")
    # A crash after model turn 2: call "one" has its result, call "two" is dangling.
    entries = [
        UserMessage(text="go"),
        ToolCall(call_id="c1", name="step", arguments='{"name": "one"}', agent="bot"),
        ToolResult(call_id="c1", output="did one", name="step"),
        ToolCall(call_id="c2", name="step", arguments='{"name": "two"}', agent="bot"),
    ]
    head = RunHead(agent="bot", status="running", turn=2, started_at=1000.0, session_id="u1",
                   owner=RunOwner(host=RunOwner.current().host, pid=2**22 + 12345))  # a pid that is not running
    await checkpointer.save(RunSnapshot("r1", head, entries))

    def instructions(ctx):
        return f"deps={ctx.deps}"

    turn_numbers = []

    @tool(name="step")
    async def counted(ctx: ToolContext, name: str) -> str:
        """Record."""
        executions.append(name)
        turn_numbers.append(ctx.turn)
        return f"did {name}"

    model = ScriptedModel(["resumed and done"])
    agent = Agent(name="bot", model=model, tools=[counted], instructions=instructions)
    result = await Runner.run(agent, "new input is ignored", session=session, session_id="u1", deps="fresh",
                              checkpoint=CheckpointOptions(checkpointer, "r1"))
    assert executions == ["two"] and turn_numbers == [2]  # the dangling call, same turn; not "one"
    request = model.requests[0]
    assert request.instructions == "deps=fresh"  # re-rendered with the new deps
    assert [getattr(e, "text", None) for e in request.messages[:2]] == ["earlier", "go"]  # history + snapshot
    assert "new input is ignored" not in [getattr(e, "text", None) for e in request.messages]
    assert kinds(result.new_entries) == ["user", "tool_call", "tool_result", "tool_call", "tool_result", "assistant"]
    segment = (await session.segments("u1"))[-1]
    assert segment.meta["timing"]["started_at"] == 1000.0  # the run's first start is kept


async def test_a_run_live_in_another_process_is_not_resumed():
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        checkpointer = InMemoryCheckpointer()
        owner = dataclasses.replace(RunOwner.current(), pid=child.pid, started=None)  # a process of this machine
        head = RunHead(agent="bot", status="running", owner=owner)
        await checkpointer.save(RunSnapshot("r1", head, [UserMessage(text="go")]))
        with pytest.raises(UserError, match=f"being executed by process {child.pid}"):
            await Runner.run(Agent(name="bot", model=ScriptedModel(["x"])), [],
                             checkpoint=CheckpointOptions(checkpointer, "r1"))
    finally:
        child.kill()
        child.wait()


async def test_the_same_run_cannot_execute_twice_at_once_in_one_process():
    checkpointer = InMemoryCheckpointer()
    model = ScriptedModel([ScriptedTurn(text="slow " * 20, chunk_chars=5, delay=0.01), "x"])
    options = CheckpointOptions(checkpointer, "r1")
    first = asyncio.ensure_future(Runner.run(Agent(name="bot", model=model), "a", checkpoint=options))
    await asyncio.sleep(0.05)
    with pytest.raises(UserError, match="already executing in this process"):
        await Runner.run(Agent(name="bot", model=model), "a", checkpoint=options)
    assert (await first).final_output.startswith("slow")


async def test_success_order_is_finalize_then_append_then_delete():
    log: list = []
    checkpointer, session = RecordingCheckpointer(log), RecordingSession(log)
    await Runner.run(Agent(name="bot", model=ScriptedModel(["done"])), "go", session=session, session_id="u1",
                     checkpoint=CheckpointOptions(checkpointer, "r1", delete_on_success=True))
    tail = [entry[:2] for entry in log[-3:]]
    assert tail == [("save", "completed"), ("append", "u1"), ("delete", "r1")]
    assert await checkpointer.load("r1") is None
    assert kinds(await session.load("u1")) == ["user", "assistant"]


async def test_a_store_error_before_the_delete_leaves_a_replayable_snapshot_that_heals():
    checkpointer, session = InMemoryCheckpointer(), RecordingSession()
    session.fail_appends = StoreError("disk full")
    agent = Agent(name="bot", model=ScriptedModel(["done"]))
    options = CheckpointOptions(checkpointer, "r1", delete_on_success=True)
    with pytest.raises(StoreError):
        await Runner.run(agent, "go", session=session, session_id="u1", checkpoint=options)
    assert (await checkpointer.load("r1")).head.status == "completed"  # finalized, still replayable
    session.fail_appends = None
    healed = await Runner.run(Agent(name="bot", model=ScriptedModel([])), "go", session=session, session_id="u1",
                              checkpoint=options)
    assert healed.replayed and healed.final_output == "done"
    assert kinds(await session.load("u1")) == ["user", "assistant"]
    assert await checkpointer.load("r1") is None
    # Replaying once more (e.g. a second crash) never duplicates the session's entries.
    await session.append("u1", healed.new_entries, run_id="r1")
    assert len(await session.load("u1")) == 2


async def test_replay_reapplies_the_session_append_idempotently_and_skips_hooks_and_guardrails():
    calls = []

    class Hooks(RunHooks):
        async def on_run_start(self, ctx, agent):
            calls.append("start")

        async def on_run_end(self, ctx, result):
            calls.append("end")

    def guard(ctx, text):
        calls.append("guard")

    checkpointer, session = InMemoryCheckpointer(), RecordingSession()
    agent = Agent(name="bot", model=ScriptedModel(["done"]), hooks=Hooks(), output_guardrails=[guard])
    # A completed checkpoint whose session append never happened (the store failed in between).
    session.fail_appends = StoreError("disk full")
    with pytest.raises(StoreError):
        await Runner.run(agent, "go", session=session, session_id="u1", checkpoint=CheckpointOptions(checkpointer, "r1"))
    session.fail_appends = None
    assert calls == ["start", "guard"]
    calls.clear()
    for _ in range(2):
        replay = await Runner.run(agent, "go", session=session, session_id="u1",
                                  checkpoint=CheckpointOptions(checkpointer, "r1"))
        assert replay.replayed
    assert calls == []
    segments = await session.segments("u1")
    assert [s.run_id for s in segments] == ["r1"] and segments[0].meta["timing"]["started_at"] > 0


async def test_resume_from_rehydrates_a_snapshot_obtained_elsewhere(tmp_path):
    source = SQLiteCheckpointer(tmp_path / "a.db")
    target = SQLiteCheckpointer(tmp_path / "b.db")
    head = RunHead(agent="bot", status="interrupted", turn=1)
    await source.save(RunSnapshot("r1", head, [UserMessage(text="go"),
                                               ToolCall(call_id="c1", name="step", arguments='{"name": "x"}')]))
    snapshot = await source.load("r1")
    result = await Runner.run(Agent(name="bot", model=ScriptedModel(["done"]), tools=[step]), [],
                              checkpoint=CheckpointOptions(target, "r1", resume_from=snapshot))
    assert executions == ["x"] and result.final_output == "done"
    assert (await target.load("r1")).head.status == "completed"
    with pytest.raises(UserError, match="resume_from holds run 'r1'"):
        await Runner.run(Agent(name="bot", model=ScriptedModel([])), [],
                         checkpoint=CheckpointOptions(target, "other", resume_from=snapshot))
    await source.close()
    await target.close()


async def test_a_failed_run_is_marked_and_can_be_resumed():
    from lovia import ModelError

    checkpointer = InMemoryCheckpointer()
    model = ScriptedModel([ScriptedTurn(tool_calls=[call("step", {"name": "a"})]),
                           ScriptedTurn(error=ModelError("endpoint down")), "recovered"])
    agent = Agent(name="bot", model=model, tools=[step])
    with pytest.raises(ModelError):
        await Runner.run(agent, "go", checkpoint=CheckpointOptions(checkpointer, "r1"))
    failed = await checkpointer.load("r1")
    assert failed.head.status == "failed" and "endpoint down" in failed.head.error
    result = await Runner.run(agent, [], checkpoint=CheckpointOptions(checkpointer, "r1"))
    assert result.final_output == "recovered" and executions == ["a"]


async def test_spec_snippets_run_as_written(tmp_path, monkeypatch):
    """The snippets of sessions-and-checkpoints.md, against the offline default model."""
    from uuid import uuid4

    from lovia import BUILTIN_TOOLS, CheckpointOptions, Runner, SQLiteCheckpointer, SQLiteSession

    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("LOVIA_MODEL", raising=False)
    agent = Agent(name="assistant", tools=BUILTIN_TOOLS)

    session = SQLiteSession("chat.db")
    await Runner.run(agent, "My project is called Atlas.", session=session, session_id="u1")
    result = await Runner.run(agent, "What is my project called?", session=session, session_id="u1")
    assert "Atlas" in result.final_output

    cp = SQLiteCheckpointer("runs.db")
    rid = f"report-migration-{uuid4().hex}"
    result = await Runner.run(agent, "Migrate the report format.", checkpoint=CheckpointOptions(cp, rid))
    again = await Runner.run(agent, [], checkpoint=CheckpointOptions(cp, rid, if_run_exists="resume_only"))
    assert again.replayed and again.final_output == result.final_output

    trimmed = await session.trim_tool_results("u1", keep_chars=400, keep_runs=1)
    removed = await session.rewind("u1", keep_entries=12)
    assert trimmed == 0 and removed == 0
    await session.close()
    await cp.close()
