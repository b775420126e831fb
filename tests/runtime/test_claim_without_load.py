"""A fresh run is claimed without loading it first; what the load decided still holds."""

from __future__ import annotations

import asyncio

from lovia import Agent, CheckpointOptions, InMemoryCheckpointer, InMemorySession, Runner, ScriptedModel


class CountingCheckpointer(InMemoryCheckpointer):
    """Counts the loads the runner makes (not those the in-memory claim makes itself)."""

    def __init__(self) -> None:
        super().__init__()
        self.loads = 0
        self._claiming = False

    async def claim(self, run_id, owner, **options):
        self._claiming = True
        try:
            return await super().claim(run_id, owner, **options)
        finally:
            self._claiming = False

    async def load(self, run_id):
        self.loads += not self._claiming
        return await super().load(run_id)


class HeldAppendSession(InMemorySession):
    """A session whose first append waits until released: its run is completed and still live."""

    def __init__(self) -> None:
        super().__init__()
        self.entered = asyncio.Event()
        self.release = asyncio.Event()

    async def append(self, session_id, entries, *, run_id=None, meta=None):
        if not self.entered.is_set():
            self.entered.set()
            await self.release.wait()
        return await super().append(session_id, entries, run_id=run_id, meta=meta)


async def test_a_fresh_run_and_its_replay_make_no_load_before_their_claim():
    checkpointer = CountingCheckpointer()
    agent = Agent(name="bot", model=ScriptedModel(["hello"]))
    first = await Runner.run(agent, "hi", checkpoint=CheckpointOptions(checkpointer, "r1"))
    again = await Runner.run(agent, "hi", checkpoint=CheckpointOptions(checkpointer, "r1"))
    assert (first.replayed, again.replayed, again.final_output) == (False, True, "hello")
    assert checkpointer.loads == 0


async def test_a_run_completed_by_an_execution_still_live_here_is_replayed_not_refused():
    checkpointer, session = CountingCheckpointer(), HeldAppendSession()
    agent = Agent(name="bot", model=ScriptedModel(["hello"]))
    options = CheckpointOptions(checkpointer, "r1")
    first = asyncio.ensure_future(Runner.run(agent, "hi", checkpoint=options, session=session, session_id="u1"))
    await session.entered.wait()  # finalized: its checkpoint says completed, its execution is live
    second = await Runner.run(agent, "hi", checkpoint=options, session=session, session_id="u1")
    assert second.replayed and second.final_output == "hello"
    session.release.set()
    assert (await first).final_output == "hello"
    assert [e.type for e in await session.load("u1")] == ["user", "assistant"]
