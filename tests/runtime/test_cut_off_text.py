"""RunHead.cut_off_text: what a model streamed of the turn a run stopped in, kept beside the snapshot."""

from __future__ import annotations

import asyncio
import time

from lovia import (
    Agent,
    CheckpointOptions,
    ModelError,
    RunHead,
    Runner,
    SQLiteCheckpointer,
    SQLiteSession,
    TextDelta,
    tool,
)
from lovia.models import ScriptedModel, ScriptedTurn, call
from lovia.run_state import how_run_stopped
from tests.runtime.helpers import consume_in_background


async def stop_after_text(stream, pieces: int) -> str:
    """Consume ``stream`` until ``pieces`` text deltas arrived, stop it, and return what streamed."""
    seen: list[str] = []
    async for event in stream:
        if isinstance(event, TextDelta):
            seen.append(event.text)
            if len(seen) == pieces:
                stream.stop()
    return "".join(seen)


async def test_a_run_stopped_mid_answer_keeps_the_streamed_text_and_a_resume_runs_the_turn_anew(tmp_path):
    db = tmp_path / "lovia.db"
    answer = "The first half of the answer, then the second half of it."
    model = ScriptedModel([ScriptedTurn(text=answer, chunk_chars=10, delay=0.05), "Whole answer."])
    agent = Agent(name="a", model=model)
    async with SQLiteSession(db) as session, SQLiteCheckpointer(db) as checkpointer:
        stream = Runner.stream(agent, "go", session=session, session_id="s",
                               checkpoint=CheckpointOptions(checkpointer, "r1"))
        streamed = await stop_after_text(stream, 3)
        stopped = (await checkpointer.load("r1")).head
        assert stopped.status == "interrupted"
        assert stopped.cut_off_text == streamed == answer[:30]
        assert [e.type for e in (await checkpointer.load("r1")).entries] == ["user"]  # not an entry

        result = await Runner.run(agent, [], session=session, session_id="s",
                                  checkpoint=CheckpointOptions(checkpointer, "r1", if_run_exists="resume_only"))
        assert result.final_output == "Whole answer."  # the cut-off turn ran again
        done = (await checkpointer.load("r1")).head
        assert done.status == "completed" and done.cut_off_text is None
        assert [e.text for e in await session.load("s")] == ["go", "Whole answer."]


async def test_a_run_that_fails_mid_answer_keeps_the_streamed_text(tmp_path):
    model = ScriptedModel([ScriptedTurn(text="partial words here", chunk_chars=5, error=ModelError("gone"),
                                        fail_after=2)])
    async with SQLiteCheckpointer(tmp_path / "lovia.db") as checkpointer:
        stream = Runner.stream(Agent(name="a", model=model), "go", checkpoint=CheckpointOptions(checkpointer, "r1"))
        try:
            async for _ in stream:
                pass
        except ModelError:
            pass
        head = (await checkpointer.load("r1")).head
        assert head.status == "failed" and head.cut_off_text == "partial wo"


async def test_a_run_stopped_between_turns_has_no_cut_off_text(tmp_path):
    started = asyncio.Event()

    async def slow() -> str:
        """Waits to be stopped."""
        started.set()
        await asyncio.sleep(60)
        return "never"

    model = ScriptedModel([ScriptedTurn(text="Let me check.", tool_calls=[call("slow", call_id="c1")])])
    async with SQLiteCheckpointer(tmp_path / "lovia.db") as checkpointer:
        stream = Runner.stream(Agent(name="a", model=model, tools=[tool(slow)]), "go",
                               checkpoint=CheckpointOptions(checkpointer, "r1"))

        task = consume_in_background(stream)
        await started.wait()
        stream.stop()
        await task
        head = (await checkpointer.load("r1")).head
        assert head.status == "interrupted" and head.cut_off_text is None  # the text is an entry already


async def test_a_run_stopped_before_the_first_chunk_reads_as_waiting_for_the_model(tmp_path):
    model = ScriptedModel([ScriptedTurn(text="Too late.", delay=60)])
    async with SQLiteCheckpointer(tmp_path / "lovia.db") as checkpointer:
        stream = Runner.stream(Agent(name="a", model=model), "go", checkpoint=CheckpointOptions(checkpointer, "r1"))

        task = consume_in_background(stream)
        while not model.requests:
            await asyncio.sleep(0.01)
        stream.stop()
        await task
        (summary,) = await checkpointer.list_runs()
        stop = how_run_stopped(summary.head, (await checkpointer.load("r1")).entries, time.time())
        assert stop.headline == "stopped before the first token"  # not "between turns": a turn was asked


def test_a_head_round_trips_its_cut_off_text_and_older_heads_read_none():
    head = RunHead(agent="a", status="interrupted", cut_off_text="so far")
    assert RunHead.from_dict(head.to_dict()).cut_off_text == "so far"
    data = head.to_dict()
    del data["cut_off_text"]
    assert RunHead.from_dict(data).cut_off_text is None
