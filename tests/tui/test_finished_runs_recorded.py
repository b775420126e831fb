"""A run that finished just before a crash, checkpoint finalized but not yet in its session,
is replayed into its session when the app starts, so its answer is not lost from view."""

from __future__ import annotations

import time

from lovia import (
    AssistantMessage,
    RunHead,
    RunSnapshot,
    SQLiteCheckpointer,
    SQLiteSession,
    UserMessage,
)
from tests.tui.conftest import make_app, wait_for


async def store_finished_but_unrecorded(db) -> None:
    """What a process killed between finalizing two runs' checkpoints and their appends leaves."""
    async with SQLiteSession(db, wal=True) as session, SQLiteCheckpointer(db, wal=True) as checkpointer:
        await session.append("s-a", [UserMessage(text="earlier"), AssistantMessage(text="ok")], run_id="old",
                             meta={"timing": {"started_at": time.time() - 60, "finished_at": time.time() - 59}})
        for run_id, session_id, question in [("run-in-a", "s-a", "second question"),
                                             ("run-in-b", "s-b", "a new conversation"),
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
        await wait_for(pilot, lambda: "run-in-a" in chat.transcript.run_ids)  # the open session shows it
    async with SQLiteSession(db, wal=True) as session, SQLiteCheckpointer(db, wal=True) as checkpointer:
        assert [s.run_id for s in await session.segments("s-a")] == ["old", "run-in-a"]
        assert [e.text for e in await session.load("s-b")] == ["a new conversation", "answer to a new conversation"]
        # The checkpoints stay: other workers sharing the file may replay them.
        assert (await checkpointer.load("run-in-b")).head.status == "completed"
        # A worker's run is the worker's to heal (by re-issuing it): the app leaves it alone.
        assert await session.segments("s-c") == []


async def test_recording_finished_runs_again_changes_nothing(tmp_path):
    db = tmp_path / "lovia.db"
    await store_finished_but_unrecorded(db)
    for _ in range(2):
        app = make_app(db)
        async with app.run_test(size=(160, 45)) as pilot:
            await wait_for(pilot, lambda app=app: {i.session_id for i in app.screen.query_one("SessionsPane").sessions}
                           == {"s-a", "s-b"})
    async with SQLiteSession(db, wal=True) as session:
        assert [s.run_id for s in await session.segments("s-a")] == ["old", "run-in-a"]
        assert [s.run_id for s in await session.segments("s-b")] == ["run-in-b"]
