"""What the SQLite stores promise about the file itself."""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import sqlite3
import stat
from pathlib import Path

import pytest

from lovia import (
    DatabaseFileError,
    EntryDecodeError,
    RunHead,
    RunSnapshot,
    SchemaError,
    SQLiteCheckpointer,
    SQLiteSession,
    StoreError,
    UserMessage,
)
from lovia.stores._sqlite_db import SQLiteDatabase, StoreSchema
from lovia.stores.sqlite import CHECKPOINT_SCHEMA, SESSION_SCHEMA


def fingerprint(path) -> tuple[str, int]:
    data = Path(path).read_bytes()
    return hashlib.sha256(data).hexdigest(), os.stat(path).st_mtime_ns


def versions(path) -> dict[str, int]:
    with sqlite3.connect(path) as conn:
        return dict(conn.execute("SELECT store, version FROM lovia_schema"))


async def test_new_files_are_readable_by_their_owner_only(tmp_path):
    for wal in (False, True):
        path = tmp_path / f"chat-{wal}.db"
        async with SQLiteSession(path, wal=wal) as session:
            await session.append("u1", [UserMessage(text="secret")])
            for candidate in [path, *tmp_path.glob(f"chat-{wal}.db-*")]:
                assert stat.S_IMODE(os.stat(candidate).st_mode) == 0o600, candidate


async def test_wal_sets_wal_mode_and_the_default_does_not(tmp_path):
    async with SQLiteSession(tmp_path / "w.db", wal=True) as s:
        await s.append("u1", [UserMessage(text="x")])
    async with SQLiteSession(tmp_path / "d.db") as s:
        await s.append("u1", [UserMessage(text="x")])
    with sqlite3.connect(tmp_path / "w.db") as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    with sqlite3.connect(tmp_path / "d.db") as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "delete"


@pytest.mark.parametrize("wal", [False, True])
async def test_several_stores_share_one_file(tmp_path, wal):
    path = tmp_path / "lovia.db"
    sessions = [SQLiteSession(path, wal=wal), SQLiteSession(path, wal=wal)]
    checkpointer = SQLiteCheckpointer(path, wal=wal)
    await sessions[0].append("u1", [UserMessage(text="from one")], run_id="r1")
    await checkpointer.save(RunSnapshot("r1", RunHead(agent="bot"), [UserMessage(text="in flight")]))
    await sessions[1].append("u1", [UserMessage(text="from two")], run_id="r2")
    assert [e.text for e in await sessions[0].load("u1")] == ["from one", "from two"]
    assert (await checkpointer.load("r1")).entries[0].text == "in flight"
    assert versions(path) == {"session": SESSION_SCHEMA.version, "checkpoint": CHECKPOINT_SCHEMA.version}
    for store in (*sessions, checkpointer):
        await store.close()


async def test_a_file_that_is_not_sqlite_is_refused_and_untouched(tmp_path):
    path = tmp_path / "notes.db"
    path.write_text("my shopping list\n" * 100)
    before = fingerprint(path)
    session = SQLiteSession(path, wal=True)
    with pytest.raises(DatabaseFileError, match="not a SQLite database"):
        await session.load("u1")
    assert fingerprint(path) == before
    await session.close()


async def test_a_foreign_sqlite_database_is_refused_and_untouched(tmp_path):
    path = tmp_path / "app.db"
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE customers (id INTEGER PRIMARY KEY, name TEXT)")
        conn.execute("INSERT INTO customers (name) VALUES ('Ada')")
    before = fingerprint(path)
    for store in (SQLiteSession(path, wal=True), SQLiteCheckpointer(path)):
        with pytest.raises(DatabaseFileError, match="not a lovia one"):
            await store.open()
        await store.close()
    assert fingerprint(path) == before


async def test_a_corrupt_database_is_refused_with_a_clear_error_and_untouched(tmp_path):
    path = tmp_path / "chat.db"
    async with SQLiteSession(path) as session:
        for i in range(200):
            await session.append("u1", [UserMessage(text=f"message {i} " + "x" * 200)])
    data = bytearray(path.read_bytes())
    data[100:4096] = b"\xde\xad" * ((4096 - 100) // 2)  # smash the schema page
    path.write_bytes(bytes(data))
    before = fingerprint(path)
    session = SQLiteSession(path, wal=True)
    with pytest.raises(DatabaseFileError, match="corrupt"):
        await session.load("u1")
    await session.close()
    assert fingerprint(path) == before


async def test_a_newer_schema_is_refused_and_the_file_is_not_modified(tmp_path):
    path = tmp_path / "chat.db"
    async with SQLiteSession(path) as session:
        await session.append("u1", [UserMessage(text="from the future")])
    with sqlite3.connect(path) as conn:
        conn.execute("UPDATE lovia_schema SET version = 99 WHERE store = 'session'")
    before = fingerprint(path)
    session = SQLiteSession(path, wal=True)  # would switch the journal mode if it went on
    with pytest.raises(SchemaError, match="Upgrade lovia"):
        await session.load("u1")
    await session.close()
    assert fingerprint(path) == before
    # The other store in the file is not blocked by the session store's version.
    async with SQLiteCheckpointer(path) as checkpointer:
        assert await checkpointer.load("x") is None


async def test_a_version_1_file_migrates_on_open_and_keeps_its_data(tmp_path):
    path = tmp_path / "old.db"
    v1 = StoreSchema("session", SESSION_SCHEMA.steps[:1])
    old = SQLiteDatabase(path, wal=False, schema=v1)

    def write_v1(conn):
        conn.execute("INSERT INTO lovia_segments (session_id, run_id, meta, entry_count, appended_at) "
                     "VALUES ('u1', 'r1', '{}', 1, 50.0)")
        conn.execute("INSERT INTO lovia_entries (segment_seq, session_id, type, data) VALUES (1, 'u1', 'user', ?)",
                     (json.dumps({"type": "user", "text": "written by v1", "created_at": 50.0}),))

    await old.write(write_v1, "seeding")
    await old.close()
    assert versions(path) == {"session": 1}

    async with SQLiteSession(path) as session:
        assert [e.text for e in await session.load("u1")] == ["written by v1"]
        info = await session.session_info("u1")
        assert (info.title, info.created_at, info.entry_count) == ("written by v1", 50.0, 1)
    assert versions(path) == {"session": SESSION_SCHEMA.version}


async def test_a_failing_migration_rolls_back_and_leaves_the_old_version(tmp_path):
    path = tmp_path / "old.db"
    old = SQLiteDatabase(path, wal=False, schema=StoreSchema("session", SESSION_SCHEMA.steps[:1]))
    await old.read(lambda conn: None, "creating")
    await old.close()

    def broken(conn):
        conn.execute("CREATE TABLE half_done (x)")
        raise sqlite3.OperationalError("simulated failure in the middle of a migration")

    newer = SQLiteDatabase(path, wal=False, schema=StoreSchema("session", (*SESSION_SCHEMA.steps, broken)))
    with pytest.raises(StoreError, match="migrating"):
        await newer.read(lambda conn: None, "opening")
    await newer.close()
    assert versions(path) == {"session": 1}
    with sqlite3.connect(path) as conn:
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    assert "half_done" not in tables and "lovia_session_info" not in tables


async def test_an_unknown_entry_type_names_itself_and_where_it_is(tmp_path):
    path = tmp_path / "chat.db"
    async with SQLiteSession(path) as session:
        await session.append("u1", [UserMessage(text="fine")], run_id="r1")
    with sqlite3.connect(path) as conn:
        conn.execute("UPDATE lovia_segment_entries SET entries = json_insert(entries, '$[#]', json(?)), "
                     "kinds = kinds || ' hologram' WHERE segment_seq = 1",
                     (json.dumps({"type": "hologram", "created_at": 1.0}),))
        conn.execute("UPDATE lovia_segments SET entry_count = 2 WHERE seq = 1")
    before = fingerprint(path)
    async with SQLiteSession(path) as session:
        with pytest.raises(EntryDecodeError, match=r"'hologram'.*session 'u1'.*entry #1"):
            await session.load("u1")
        with pytest.raises(EntryDecodeError, match=r"'hologram'.*run 'r1'"):
            await session.segments("u1")
    assert fingerprint(path)[0] == before[0]


async def test_fields_written_by_a_newer_lovia_are_ignored(tmp_path):
    path = tmp_path / "chat.db"
    async with SQLiteSession(path) as session:
        await session.append("u1", [UserMessage(text="hi")], run_id="r1")
    with sqlite3.connect(path) as conn:
        conn.execute("UPDATE lovia_segment_entries SET entries = json_set(entries, '$[0].mood', 'cheerful', "
                     "'$[0].lang', 'en')")
    async with SQLiteSession(path) as session:
        [entry] = await session.load("u1")
        assert entry.text == "hi"


async def test_a_missing_directory_is_a_clear_error(tmp_path):
    session = SQLiteSession(tmp_path / "no" / "such" / "dir" / "chat.db")
    with pytest.raises(DatabaseFileError, match="does not exist"):
        await session.load("u1")
    await session.close()


async def test_a_directory_is_not_a_database(tmp_path):
    session = SQLiteSession(tmp_path)
    with pytest.raises(DatabaseFileError, match="not a regular file"):
        await session.load("u1")


async def test_a_dangling_symlink_is_refused_and_its_target_not_created(tmp_path):
    link = tmp_path / "chat.db"
    link.symlink_to(tmp_path / "target.db")
    session = SQLiteSession(link)
    with pytest.raises(DatabaseFileError, match=r"symlink .* does not exist"):
        await session.append("u1", [UserMessage(text="x")])
    await session.close()
    assert not (tmp_path / "target.db").exists()


@pytest.mark.parametrize("wal", [False, True])
async def test_a_symlink_to_a_database_file_is_used(tmp_path, wal):
    target = tmp_path / "real.db"
    async with SQLiteSession(target, wal=wal) as session:
        await session.append("u1", [UserMessage(text="through the file")], run_id="r1")
    link = tmp_path / "link.db"
    link.symlink_to(target)
    async with SQLiteSession(link, wal=wal) as session:
        await session.append("u1", [UserMessage(text="through the link")], run_id="r2")
        assert [e.text for e in await session.load("u1")] == ["through the file", "through the link"]
    async with SQLiteSession(target, wal=wal) as session:
        assert len(await session.load("u1")) == 2
    assert link.is_symlink()


async def test_a_new_file_is_private_whatever_the_umask(tmp_path):
    previous = os.umask(0o022)
    try:
        path = tmp_path / "chat.db"
        async with SQLiteSession(path, wal=True) as session:
            await session.append("u1", [UserMessage(text="secret")])
            for candidate in [path, *tmp_path.glob("chat.db-*")]:
                assert stat.S_IMODE(os.stat(candidate).st_mode) == 0o600, candidate
    finally:
        os.umask(previous)


async def test_close_is_idempotent_and_a_closed_store_says_so(tmp_path):
    session = SQLiteSession(tmp_path / "chat.db")
    await session.append("u1", [UserMessage(text="x")])
    await session.close()
    await session.close()
    with pytest.raises(StoreError, match="closed"):
        await session.load("u1")
    assert repr(session).startswith("SQLiteSession(")


def test_a_store_opened_in_one_event_loop_serves_the_next(tmp_path):
    # `lovia` opens the app's stores before its UI's event loop runs; concurrent callers in
    # each loop are queued, whichever loop the store met first.
    session = SQLiteSession(tmp_path / "lovia.db", wal=True)

    async def appends(loop_number: int) -> None:
        await asyncio.gather(*(session.append(f"u{loop_number}", [UserMessage(text=f"m{i}")], run_id=f"r{i}")
                               for i in range(5)))

    asyncio.run(appends(1))
    asyncio.run(appends(2))

    async def read_and_close() -> list[list[str]]:
        try:
            return [sorted(s.run_id for s in await session.segments(f"u{n}")) for n in (1, 2)]
        finally:
            await session.close()

    assert asyncio.run(read_and_close()) == [[f"r{i}" for i in range(5)]] * 2
