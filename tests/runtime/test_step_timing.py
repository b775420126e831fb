"""Per-step timing: every model turn and tool call is recorded, in the head while in flight and in the segment."""

from __future__ import annotations

import asyncio
import itertools

import pytest

from lovia import (
    Agent,
    CheckpointOptions,
    ModelError,
    RunHead,
    Runner,
    SQLiteCheckpointer,
    SQLiteSession,
    ToolCallStarted,
    tool,
)
from lovia.models import ScriptedModel, ScriptedTurn, call
from lovia.timing import (
    ModelStep,
    ToolStep,
    step_from_dict,
    steps_from_meta,
    steps_to_meta,
    tokens_per_second,
)
from lovia.usage import Usage


def ordered(steps) -> bool:
    return all(a.started_at <= b.started_at for a, b in itertools.pairwise(steps))


async def test_a_run_records_its_model_turns_and_tool_calls_in_the_head_and_the_segment(tmp_path):
    @tool
    async def add(a: int, b: int) -> int:
        """Add."""
        await asyncio.sleep(0.01)
        return a + b

    @tool
    async def broken() -> str:
        """Fails."""
        raise RuntimeError("no")

    model = ScriptedModel([
        ScriptedTurn(text="Adding.", tool_calls=[call("add", {"a": 1, "b": 2}, call_id="c1"),
                                                 call("broken", {}, call_id="c2")],
                     usage=Usage(requests=1, input_tokens=30, output_tokens=12), delay=0.01),
        ScriptedTurn(text="It is 3.", chunk_chars=2, delay=0.005),
    ], name="scripted-model")
    db = tmp_path / "lovia.db"
    async with SQLiteSession(db) as session, SQLiteCheckpointer(db) as checkpointer:
        await Runner.run(Agent(name="calc", model=model, tools=[add, broken]), "1+2?", session=session,
                         session_id="s", checkpoint=CheckpointOptions(checkpointer, "r1"))
        [segment] = await session.segments("s")
        head = (await checkpointer.load("r1")).head
    steps = steps_from_meta(segment.meta)
    assert steps == head.steps and head.model == "scripted-model"
    assert [(s.kind, getattr(s, "name", None) or getattr(s, "turn", None)) for s in steps] == [
        ("model", 1), ("tool", "add"), ("tool", "broken"), ("model", 2)]
    first, added, failed, last = steps
    assert isinstance(first, ModelStep) and first.agent == "calc" and first.model == "scripted-model"
    assert (first.input_tokens, first.output_tokens) == (30, 12)
    assert first.started_at <= first.first_token_at <= first.finished_at
    assert isinstance(added, ToolStep) and (added.call_id, added.error) == ("c1", False)
    assert added.duration >= 0.01
    assert isinstance(failed, ToolStep) and failed.error is True
    assert first.finished_at <= added.started_at and added.finished_at <= last.started_at
    assert not any(s.cut_off for s in steps) and ordered(steps)
    assert tokens_per_second(last) is not None and tokens_per_second(last) > 0
    assert segment.meta["timing"]["started_at"] <= first.started_at  # beside the spec's timing, within it


async def test_a_resumed_run_keeps_the_steps_it_had_and_marks_the_one_a_stop_cut_off(tmp_path):
    gate = asyncio.Event()

    @tool
    async def slow() -> str:
        """Blocks the first time."""
        if not gate.is_set():
            gate.set()
            await asyncio.sleep(3600)
        return "done"

    model = ScriptedModel([ScriptedTurn(tool_calls=[call("slow", {}, call_id="c1")]), "Finished."])
    agent = Agent(name="a", model=model, tools=[slow])
    db = tmp_path / "lovia.db"
    async with SQLiteSession(db) as session, SQLiteCheckpointer(db) as checkpointer:
        stream = Runner.stream(agent, "go", session=session, session_id="s",
                               checkpoint=CheckpointOptions(checkpointer, "r1"))
        async for event in stream:
            if isinstance(event, ToolCallStarted):
                await asyncio.wait_for(gate.wait(), 10)
                stream.stop()
        stopped = (await checkpointer.load("r1")).head
        assert stopped.status == "interrupted"
        turn, cut = stopped.steps
        assert isinstance(turn, ModelStep) and turn.finished_at is not None and not turn.cut_off
        assert isinstance(cut, ToolStep) and cut.cut_off and cut.finished_at is not None  # ended by the stop
        assert cut.stopped  # by the user, which the timeline says (it said "cut off", as for a crash)

        await Runner.run(agent, [], session=session, session_id="s",
                         checkpoint=CheckpointOptions(checkpointer, "r1", if_run_exists="resume_only"))
        [segment] = await session.segments("s")
    steps = steps_from_meta(segment.meta)
    assert steps[:2] == [turn, cut]  # what the first execution recorded is kept
    assert [(s.kind, s.cut_off) for s in steps] == [("model", False), ("tool", True), ("tool", False),
                                                    ("model", False)]
    assert steps[2].call_id == "c1"  # the dangling call, run again on resume


async def test_a_turn_the_model_endpoint_ended_with_an_error_is_marked_failed_not_just_cut_off(tmp_path):
    model = ScriptedModel([ScriptedTurn(text="partial words", chunk_chars=4, error=ModelError("HTTP 502"),
                                        fail_after=2)])
    async with SQLiteCheckpointer(tmp_path / "lovia.db") as checkpointer:
        with pytest.raises(ModelError):
            await Runner.run(Agent(name="a", model=model), "go", checkpoint=CheckpointOptions(checkpointer, "r1"))
        head = (await checkpointer.load("r1")).head
    (turn,) = head.steps
    assert isinstance(turn, ModelStep) and turn.error and turn.cut_off and turn.finished_at is not None
    assert not turn.stopped  # nobody stopped it
    assert steps_from_meta({"steps": steps_to_meta(head.steps)}) == [turn]


def test_steps_round_trip_and_what_cannot_be_read_is_skipped():
    steps = [ModelStep("a", None, 1.0), ToolStep("c", "t", 2.0, 3.5, error=True, cut_off=True),
             ModelStep("a", "m", 4.0, None, 4.5, cut_off=True, stopped=True)]
    assert steps_from_meta({"steps": steps_to_meta(steps)}) == steps
    assert steps_from_meta({}) == [] and steps_from_meta(None) == []
    assert steps_from_meta({"steps": "nonsense"}) == []
    assert steps_from_meta({"steps": [{"kind": "model"}, {"kind": "future"}, 7, steps_to_meta(steps)[1]]}) == [
        steps[1]]
    assert "stopped" not in steps_to_meta(steps)[1] and steps_to_meta(steps)[2]["stopped"] is True
    assert step_from_dict({"kind": "model", "agent": "a", "started_at": "x"}) is None
    assert steps[0].duration is None and steps[0].time_to_first_token is None
    assert tokens_per_second(ModelStep("a", "m", 0.0, 1.0, 3.0, output_tokens=10)) == 5.0
    assert tokens_per_second(ModelStep("a", "m", 0.0, 1.0, 1.0, output_tokens=10)) is None  # all at once
    assert tokens_per_second(ModelStep("a", "m", 0.0, 1.0, 3.0)) is None  # usage unknown


def test_a_head_stored_before_steps_and_model_reads_none():
    data = RunHead(agent="a").to_dict()
    del data["steps"], data["model"]
    old = RunHead.from_dict(data)
    assert old.steps == [] and old.model is None
    data["model"], data["steps"] = 5, [{"kind": "tool", "call_id": "c", "name": "t", "started_at": 1}]
    odd = RunHead.from_dict(data)
    assert odd.model is None and odd.steps == [ToolStep("c", "t", 1.0)]
