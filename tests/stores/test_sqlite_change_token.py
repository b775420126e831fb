"""The SQLite stores tell, cheaply, when another connection or process committed to their file."""

from __future__ import annotations

import asyncio
import sqlite3
import subprocess
import sys
import textwrap

import pytest

from lovia import (
    AssistantMessage,
    ChangeReportingCheckpointer,
    ChangeReportingSession,
    InMemoryCheckpointer,
    InMemorySession,
    RunHead,
    RunSnapshot,
    SQLiteCheckpointer,
    SQLiteSession,
    StoreError,
    UserMessage,
)

JOURNALS = pytest.mark.parametrize("wal", [False, True], ids=["rollback-journal", "wal"])

OTHER_PROCESS = textwrap.dedent(
    """
    import asyncio, sys
    from lovia import AssistantMessage, RunHead, RunSnapshot, SQLiteCheckpointer, SQLiteSession, UserMessage

    async def main(path, wal, what):
        if what == "session":
            async with SQLiteSession(path, wal=wal) as session:
                await session.append("from-elsewhere", [UserMessage(text="hi"), AssistantMessage(text="hello")])
        else:
            async with SQLiteCheckpointer(path, wal=wal) as checkpointer:
                await checkpointer.save(RunSnapshot("run-elsewhere", RunHead(agent="bot"), [UserMessage(text="hi")]))

    asyncio.run(main(sys.argv[1], sys.argv[2] == "wal", sys.argv[3]))
    """
)


def write_from_another_process(path, wal: bool, what: str) -> None:
    done = subprocess.run([sys.executable, "-c", OTHER_PROCESS, str(path), "wal" if wal else "rollback", what],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr


def test_only_the_sqlite_stores_report_outside_changes(tmp_path):
    assert isinstance(SQLiteSession(tmp_path / "a.db"), ChangeReportingSession)
    assert isinstance(SQLiteCheckpointer(tmp_path / "a.db"), ChangeReportingCheckpointer)
    # Only code of its own process can write to an in-memory store: there is no outside to report.
    assert not isinstance(InMemorySession(), ChangeReportingSession)
    assert not isinstance(InMemoryCheckpointer(), ChangeReportingCheckpointer)


@JOURNALS
async def test_the_token_changes_after_another_store_objects_commit_and_only_then(tmp_path, wal):
    path = tmp_path / "lovia.db"
    async with SQLiteSession(path, wal=wal) as mine, SQLiteSession(path, wal=wal) as other, \
            SQLiteCheckpointer(path, wal=wal) as checkpointer:
        first = await mine.outside_change_token()
        # Nothing written, then only reads (by this store and the others): the token stays.
        assert await mine.outside_change_token() == first
        await mine.list_sessions()
        await other.segments("s")
        await checkpointer.list_runs()
        assert await mine.outside_change_token() == first

        # This store's own writes are not news to it.
        await mine.append("s", [UserMessage(text="mine")])
        await mine.rename_session("s", "my title")
        assert await mine.outside_change_token() == first

        # Another store object's commit is, and then the token stays at its new value.
        await other.append("s", [UserMessage(text="theirs")])
        second = await mine.outside_change_token()
        assert second != first
        assert await mine.outside_change_token() == second

        # The checkpointer has a connection of its own, so its saves are outside changes for the
        # session store, and the session's appends are for it.
        before = await checkpointer.outside_change_token()
        await checkpointer.save(RunSnapshot("r", RunHead(agent="bot"), [UserMessage(text="hi")]))
        third = await mine.outside_change_token()
        assert third != second
        assert await checkpointer.outside_change_token() == before
        await mine.append("s", [AssistantMessage(text="ok")])
        assert await checkpointer.outside_change_token() != before


@JOURNALS
@pytest.mark.parametrize("what", ["session", "checkpoint"])
async def test_the_token_changes_after_another_process_commits(tmp_path, wal, what):
    path = tmp_path / "lovia.db"
    async with SQLiteSession(path, wal=wal) as session, SQLiteCheckpointer(path, wal=wal) as checkpointer:
        tokens = (await session.outside_change_token(), await checkpointer.outside_change_token())
        assert (await session.outside_change_token(), await checkpointer.outside_change_token()) == tokens

        write_from_another_process(path, wal, what)

        now = (await session.outside_change_token(), await checkpointer.outside_change_token())
        assert now[0] != tokens[0] and now[1] != tokens[1]
        # What the other process wrote is there to be read, and reading it changes nothing.
        if what == "session":
            assert [info.session_id for info in await session.list_sessions()] == ["from-elsewhere"]
        else:
            assert [summary.run_id for summary in await checkpointer.list_runs()] == ["run-elsewhere"]
        assert (await session.outside_change_token(), await checkpointer.outside_change_token()) == now


async def test_the_check_does_not_wait_for_a_writer_in_wal_mode_nor_see_its_uncommitted_work(tmp_path):
    path = tmp_path / "lovia.db"
    async with SQLiteSession(path, wal=True) as session:
        before = await session.outside_change_token()
        writer = sqlite3.connect(path, isolation_level=None, timeout=0)
        try:
            writer.execute("BEGIN IMMEDIATE")  # holds the write lock until COMMIT
            writer.execute("INSERT INTO lovia_session_info (session_id, created_at, last_activity) VALUES ('w', 1, 1)")
            # The busy timeout of a WAL store is 30 s: a check that needed the write lock would hang
            # here (the guard fails the test long before), one that waited for the commit would too.
            during = await asyncio.wait_for(session.outside_change_token(), timeout=20)
            assert during == before
            writer.execute("COMMIT")
        finally:
            writer.close()
        assert await session.outside_change_token() != before


async def test_a_closed_store_refuses_the_check_saying_so(tmp_path):
    session = SQLiteSession(tmp_path / "lovia.db", wal=True)
    await session.outside_change_token()
    await session.close()
    with pytest.raises(StoreError, match="closed"):
        await session.outside_change_token()
