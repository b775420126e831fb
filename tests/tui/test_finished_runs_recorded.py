"""A run that finished just before a crash, checkpoint finalized but not yet in its session,
is replayed into its session when the app starts, so its answer is not lost from view."""

from __future__ import annotations

import time

from lovia import (
    Agent,
    AssistantMessage,
    RunHead,
    RunSnapshot,
    SQLiteCheckpointer,
    SQLiteSession,
    UserMessage,
)
from lovia.models import DemoModel
from lovia.tui.backend import ChatBackend
from tests.tui.conftest import make_app, wait_for


async def store_finished_but_unrecorded(db) -> None:
    """What a process killed between finalizing two runs' checkpoints and their appends leaves."""
    async with SQLiteSession(db, wal=True) as session, SQLiteCheckpointer(db, wal=True) as checkpointer:
        await session.append("s-a", [UserMessage(text="earlier"), AssistantMessage(text="ok")], run_id="old",
                             meta={"timing": {"started_at": time.time() - 60, "finished_at": time.time() - 59}})
        for run_id, session_id, question in [("lovia-run-in-a", "s-a", "second question"),
                                             ("lovia-run-in-b", "s-b", "a new conversation"),
                                             ("job-of-a-worker", "s-c", "a worker's own run")]:
            head = RunHead(agent="assistant", status="completed", turn=1, session_id=session_id,
                           first_input=question, started_at=time.time() - 5)
            await checkpointer.save(RunSnapshot(run_id, head, [
                UserMessage(text=question), AssistantMessage(text=f"answer to {question}")]))


async def test_finished_runs_missing_from_their_sessions_are_recorded_at_start(tmp_path):
    db = tmp_path / "lovia.db"
    await store_finished_but_unrecorded(db)
    app = make_app(db)
    async with app.run_test(size=(160, 45)) as pilot:
        await pilot.pause()
        pane = app.screen.query_one("SessionsPane")
        await wait_for(pilot, lambda: {i.session_id for i in pane.sessions} == {"s-a", "s-b"})
        chat = app.screen.chat
        assert chat.session_id == "s-a"
        await wait_for(pilot, lambda: "lovia-run-in-a" in chat.transcript.run_ids)  # the open session shows it
    async with SQLiteSession(db, wal=True) as session, SQLiteCheckpointer(db, wal=True) as checkpointer:
        assert [s.run_id for s in await session.segments("s-a")] == ["old", "lovia-run-in-a"]
        assert [e.text for e in await session.load("s-b")] == ["a new conversation", "answer to a new conversation"]
        # The checkpoints stay: other workers sharing the file may replay them.
        assert (await checkpointer.load("lovia-run-in-b")).head.status == "completed"
        # A worker's run is the worker's to heal (by re-issuing it): the app leaves it alone.
        assert await session.segments("s-c") == []


async def test_only_runs_missing_from_their_sessions_are_replayed(tmp_path):
    """A run its session already has is not replayed (so a start-up replay never races a rewind)."""
    db = tmp_path / "lovia.db"
    await store_finished_but_unrecorded(db)
    async with SQLiteSession(db, wal=True) as session, SQLiteCheckpointer(db, wal=True) as checkpointer:
        backend = ChatBackend(session, checkpointer, Agent(name="assistant", model=DemoModel()))
        first = await backend.record_finished_runs()
        assert sorted(first) == [("s-a", "lovia-run-in-a"), ("s-b", "lovia-run-in-b")]
        assert await backend.record_finished_runs() == []  # both are in their sessions now
        # A run the app finished and appended normally is not replayed either.
        async for _ in (await backend.send("s-a", "hello")).stream:
            pass
        assert await backend.record_finished_runs() == []
        assert [s.run_id for s in await session.segments("s-a")][:2] == ["old", "lovia-run-in-a"]
