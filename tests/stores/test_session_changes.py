"""Which sessions changed (``ChangeTrackingSession.sessions_changed``): the stores' change logs.

Real SQLite files and a real PostgreSQL server; writes by a second store object on the database
(as another process's) and by the reading object itself. Every write a session listing shows is
named, and nothing else.
"""

from __future__ import annotations

import pytest

from lovia import AssistantMessage, ChangeTrackingSession, SQLiteSession, UserMessage
from lovia.stores import sqlite as sqlite_store
from lovia.stores._sqlite_db import SQLiteDatabase, StoreSchema
from lovia.stores.postgres import PostgresSession


def exchange(text: str) -> list:
    return [UserMessage(text=text), AssistantMessage(text=f"answer to {text}")]


@pytest.fixture(params=["sqlite", "postgres"])
def two_stores(request, tmp_path):
    """Two store objects on one database (a connection each, as two processes'): SQLite and PostgreSQL."""
    if request.param == "sqlite":
        path = tmp_path / "lovia.db"
        return lambda: SQLiteSession(path, wal=True)
    url = request.getfixturevalue("postgres_url")
    return lambda: PostgresSession(url)


def named(ids: list[str], expected: list[str], store) -> bool:
    """SQLite names exactly the sessions changed; PostgreSQL may name one again while a transaction
    that began before the last read is still open anywhere on the server (a shared test server)."""
    return ids == expected if isinstance(store, SQLiteSession) else set(expected) <= set(ids)


async def test_every_write_a_listing_shows_names_its_session_once(two_stores):
    async with two_stores() as reader, two_stores() as writer:
        assert isinstance(reader, ChangeTrackingSession)
        first = await reader.sessions_changed(None)
        assert first.session_ids is None  # no mark given: list everything

        async def changed(since: int) -> tuple[int, list[str]]:
            found = await reader.sessions_changed(since)
            assert found.session_ids is not None
            return found.mark, sorted(found.session_ids)

        await writer.append("s-a", exchange("one"))
        await writer.append("s-b", exchange("two"))
        await writer.append("s-a", exchange("three"))
        mark, ids = await changed(first.mark)
        assert named(ids, ["s-a", "s-b"], reader)
        if isinstance(reader, SQLiteSession):
            assert await changed(mark) == (mark, [])  # nothing since: the same mark, nobody named

        steps = [
            ("rename", lambda: writer.rename_session("s-b", "Bee")),
            ("rewind", lambda: writer.rewind("s-a", keep_entries=2)),
            ("undoable rewind", lambda: writer.rewind_undoably("s-a", keep_entries=0)),
            ("undo", lambda: writer.undo_rewind("s-a")),
            ("fork", lambda: writer.fork("s-a", keep_entries=2, new_session_id="s-fork")),
            ("trash", lambda: writer.trash_session("s-b")),
            ("clear", lambda: writer.clear("s-fork")),
            ("own append", lambda: reader.append("s-c", exchange("four"))),
        ]
        expected = {"rename": ["s-b"], "rewind": ["s-a"], "undoable rewind": ["s-a"], "undo": ["s-a"],
                    "fork": ["s-fork"], "trash": ["s-b"], "clear": ["s-fork"], "own append": ["s-c"]}
        for name, write in steps:
            await write()
            mark, ids = await changed(mark)
            assert named(ids, expected[name], reader), name
        [trashed] = await writer.list_trash()
        await writer.restore_session(trashed.trash_id)
        assert named((await changed(mark))[1], ["s-b"], reader)


async def test_a_trim_which_no_listing_shows_names_nobody_and_a_foreign_mark_lists_everything(tmp_path):
    path = tmp_path / "lovia.db"
    async with SQLiteSession(path) as session:
        await session.append("s-a", exchange("one"))
        mark = (await session.sessions_changed(None)).mark
        await session.trim_tool_results("s-a", keep_chars=10, keep_runs=0)
        assert (await session.sessions_changed(mark)).session_ids == ()
        assert (await session.sessions_changed(mark + 1000)).session_ids is None  # not this file's: list all


async def test_a_version_5_file_moves_to_the_log_and_tracks_from_then_on(tmp_path):
    path = tmp_path / "v5.db"
    old = SQLiteDatabase(path, wal=False, schema=StoreSchema("session", sqlite_store.SESSION_SCHEMA.steps[:5]))

    def seed(conn):
        conn.execute("INSERT INTO lovia_segments (seq, session_id, run_id, meta, entry_count, appended_at, start) "
                     "VALUES (1, 's-old', 'r1', '{}', 1, 1.0, 0)")
        conn.execute("INSERT INTO lovia_segment_entries (segment_seq, kinds, entries) VALUES "
                     "(1, 'user', '[{\"type\": \"user\", \"text\": \"from before\"}]')")
        conn.execute("INSERT INTO lovia_session_info (session_id, title, created_at, last_activity) "
                     "VALUES ('s-old', NULL, 1.0, 1.0)")

    await old.write(seed, "seeding")
    await old.close()
    async with SQLiteSession(path) as session:
        start = await session.sessions_changed(None)
        assert start.mark == 0
        assert [info.session_id for info in await session.list_sessions()] == ["s-old"]
        await session.append("s-old", exchange("after"))
        assert (await session.sessions_changed(start.mark)).session_ids == ("s-old",)


async def test_postgres_a_change_committed_after_a_later_one_is_not_skipped(postgres_url):
    """PostgreSQL numbers a change by its transaction's id, taken before the commit: a transaction
    that began first and commits last must still be named after the reader's mark moved on."""
    import psycopg

    async with PostgresSession(postgres_url) as reader, PostgresSession(postgres_url) as writer:
        await writer.append("s-slow", exchange("one"))
        await writer.append("s-fast", exchange("two"))
        mark = (await reader.sessions_changed(None)).mark
        async with await psycopg.AsyncConnection.connect(postgres_url) as slow, slow.transaction():
            await slow.execute("UPDATE lovia_session_info SET title = 'Slow' WHERE session_id = 's-slow'")
            await writer.rename_session("s-fast", "Fast")  # begun after, committed first
            seen = await reader.sessions_changed(mark)
            assert seen.session_ids == ("s-fast",)
            mark = seen.mark
            # the slow one commits now, after the reader's mark moved past the fast one
        later = await reader.sessions_changed(mark)
        assert later.session_ids is not None and "s-slow" in later.session_ids
        assert (await reader.session_info("s-slow")).title == "Slow"
