"""A stop that lands while a run completes: the run ends as what its checkpoint says.

Finalization (the completed checkpoint, the session append, the optional delete) runs to its
end once it starts; a stop that lands after it is the caller's own cancellation, and the
stream still reports the completion it stored. A stop before it leaves the run interrupted.
"""

from __future__ import annotations

import asyncio

import pytest

from lovia import (
    Agent,
    CheckpointOptions,
    InMemoryCheckpointer,
    InMemorySession,
    RunCompleted,
    RunInterrupted,
    Runner,
    RunSnapshot,
    ScriptedModel,
)
from lovia.agent import RunHooks


class SlowRunEnd(RunHooks):
    """``on_run_end`` takes a while, so a stop can land after the run was stored as completed."""

    def __init__(self) -> None:
        self.entered = asyncio.Event()

    async def on_run_end(self, ctx, result) -> None:
        self.entered.set()
        await asyncio.sleep(30)


class FinalSaveWaits(InMemoryCheckpointer):
    """A real in-memory checkpointer whose finalizing save waits, as one behind a busy lock would."""

    def __init__(self) -> None:
        super().__init__()
        self.finalizing = asyncio.Event()
        self.go_on = asyncio.Event()

    async def save(self, snapshot: RunSnapshot) -> None:
        if snapshot.head.status == "completed":
            self.finalizing.set()
            await self.go_on.wait()
        await super().save(snapshot)


async def _events(stream) -> list:
    return [event async for event in stream]


async def test_a_stop_after_the_run_was_stored_as_completed_still_reports_the_completion():
    hooks = SlowRunEnd()
    checkpointer, session = InMemoryCheckpointer(), InMemorySession()
    agent = Agent(name="bot", model=ScriptedModel(["done"]), hooks=hooks)
    stream = Runner.stream(agent, "go", session=session, session_id="u1",
                           checkpoint=CheckpointOptions(checkpointer, "r1"))
    consumer = asyncio.ensure_future(_events(stream))
    await asyncio.wait_for(hooks.entered.wait(), 10)
    stream.stop()
    events = await asyncio.wait_for(consumer, 10)
    assert type(events[-1]) is RunCompleted and events[-1].result.final_output == "done"
    assert RunInterrupted not in {type(e) for e in events}
    assert (await checkpointer.load("r1")).head.status == "completed"
    assert [s.run_id for s in await session.segments("u1")] == ["r1"]


async def test_a_stop_during_the_finalizing_save_waits_for_it_and_the_run_completes():
    checkpointer, session = FinalSaveWaits(), InMemorySession()
    agent = Agent(name="bot", model=ScriptedModel(["done"]))
    stream = Runner.stream(agent, "go", session=session, session_id="u1",
                           checkpoint=CheckpointOptions(checkpointer, "r1"))
    consumer = asyncio.ensure_future(_events(stream))
    await asyncio.wait_for(checkpointer.finalizing.wait(), 10)
    stream.stop()
    await asyncio.sleep(0.05)  # the stop is delivered while the save still waits
    checkpointer.go_on.set()
    events = await asyncio.wait_for(consumer, 10)
    stored = await checkpointer.load("r1")
    assert stored.head.status == "completed" and stored.head.lease_until is None  # never left "running"
    assert [s.run_id for s in await session.segments("u1")] == ["r1"]  # the append was not abandoned
    assert type(events[-1]) is RunCompleted


async def test_a_failed_finalizing_save_marks_the_run_failed_not_left_running():
    class FinalSaveFails(InMemoryCheckpointer):
        async def save(self, snapshot: RunSnapshot) -> None:
            if snapshot.head.status == "completed":
                raise OSError("disk went away")
            await super().save(snapshot)

    checkpointer = FinalSaveFails()
    agent = Agent(name="bot", model=ScriptedModel(["done"]))
    stream = Runner.stream(agent, "go", checkpoint=CheckpointOptions(checkpointer, "r1"))
    with pytest.raises(OSError, match="disk went away"):
        await _events(stream)
    assert (await checkpointer.load("r1")).head.status == "failed"
