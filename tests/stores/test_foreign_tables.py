"""A table under one of lovia's names that lovia did not create: refused before any store writes.

The app opens its session store, then its checkpointer (:func:`lovia.cli.open_stores`). A table in
the checkpointer's way must be found before the session store migrates, and the message must name
it, say that lovia did not create it and changed nothing, and say what to do. Against the suite's
real PostgreSQL server and real SQLite files.
"""

from __future__ import annotations

import sqlite3

import psycopg
import pytest

from lovia import DatabaseFileError, SQLiteCheckpointer, SQLiteSession, UserMessage
from lovia.cli import open_postgres_stores, open_stores
from lovia.db_location import parse_db_location
from lovia.stores._postgres_db import PostgresSchema
from lovia.stores._sqlite_db import SQLiteDatabase, StoreSchema
from lovia.stores.postgres import PostgresCheckpointer, PostgresSession
from lovia.stores.sqlite import CHECKPOINT_SCHEMA, SESSION_SCHEMA
from tests.postgres_server import PASSWORD

FOREIGN_RUNS = "CREATE TABLE lovia_runs (run_id TEXT PRIMARY KEY, payload TEXT)"
FOREIGN_SEGMENTS = "CREATE TABLE lovia_segments (id INTEGER, note TEXT)"
FOREIGN_SCHEMA = "CREATE TABLE lovia_schema (name TEXT, created TEXT)"


def admin(url: str, *statements: str) -> None:
    with psycopg.connect(url, autocommit=True) as conn:
        for statement in statements:
            conn.execute(statement)


def postgres_tables(url: str) -> list[str]:
    with psycopg.connect(url) as conn:
        rows = conn.execute("SELECT tablename FROM pg_tables WHERE schemaname = 'public' ORDER BY 1").fetchall()
    return [name for (name,) in rows]


def assert_refusal_names(message: str, table: str) -> None:
    assert f"table {table}" in message and "lovia did not create" in message, message
    assert "changed nothing" in message and "drop or rename" in message and "another database" in message, message
    assert "SQLSTATE" not in message and "nothing was written" not in message, message
    assert PASSWORD not in message


# -- PostgreSQL ------------------------------------------------------------------------------


async def test_a_foreign_table_in_the_checkpointers_way_is_refused_before_the_session_store_migrates(postgres_url):
    admin(postgres_url, FOREIGN_RUNS)
    with pytest.raises(DatabaseFileError) as raised:
        await open_postgres_stores(parse_db_location(postgres_url))
    assert_refusal_names(str(raised.value), "lovia_runs")
    assert postgres_tables(postgres_url) == ["lovia_runs"]  # no session table, no lovia_schema row


@pytest.mark.parametrize("statement, table", [(FOREIGN_SEGMENTS, "lovia_segments"), (FOREIGN_SCHEMA, "lovia_schema")])
async def test_a_foreign_table_is_named_with_what_to_do_by_either_store(postgres_url, statement, table):
    admin(postgres_url, statement)
    for store in (PostgresSession(postgres_url), PostgresCheckpointer(postgres_url)):
        with pytest.raises(DatabaseFileError) as raised:
            await store.open()
        assert_refusal_names(str(raised.value), table)
        await store.close()
    assert postgres_tables(postgres_url) == [table]


async def test_a_table_of_lovias_name_with_other_columns_is_refused_even_where_lovia_recorded_its_store(
        postgres_url):
    async with PostgresSession(postgres_url):
        pass
    admin(postgres_url, "DROP TABLE lovia_session_changes", "CREATE TABLE lovia_session_changes (note TEXT)")
    with pytest.raises(DatabaseFileError) as raised:
        await PostgresCheckpointer(postgres_url).open()
    assert_refusal_names(str(raised.value), "lovia_session_changes")
    assert "its columns are not lovia's" in str(raised.value)
    assert "lovia_runs" not in postgres_tables(postgres_url)


async def test_an_older_session_store_is_not_migrated_when_a_table_is_in_the_checkpointers_way(postgres_url):
    class OldSession(PostgresSession):
        _schema = PostgresSchema("session", PostgresSession._schema.migrations[:1])

    async with OldSession(postgres_url):
        pass
    admin(postgres_url, FOREIGN_RUNS)
    with pytest.raises(DatabaseFileError):
        await open_postgres_stores(parse_db_location(postgres_url))
    with psycopg.connect(postgres_url) as conn:
        assert conn.execute("SELECT store, version FROM lovia_schema").fetchall() == [("session", 1)]
    assert "lovia_trash" not in postgres_tables(postgres_url)


async def test_the_list_of_lovias_postgres_objects_is_what_the_migrations_create(postgres_url):
    from lovia.stores._postgres_db import POSTGRES_OBJECTS

    async with PostgresSession(postgres_url), PostgresCheckpointer(postgres_url):
        pass
    with psycopg.connect(postgres_url) as conn:
        rows = conn.execute(
            """SELECT c.relname, c.relkind, ARRAY(SELECT a.attname::text FROM pg_attribute AS a
                                                  WHERE a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped)
                 FROM pg_class AS c JOIN pg_namespace AS n ON n.oid = c.relnamespace
                WHERE n.nspname = 'public' AND c.relname <> 'lovia_schema'
                  AND NOT EXISTS (SELECT 1 FROM pg_constraint AS k WHERE k.conindid = c.oid)  -- a key's own index
                  AND NOT EXISTS (SELECT 1 FROM pg_depend AS d WHERE d.objid = c.oid AND d.deptype = 'i')  -- identity
            """).fetchall()
        functions = {name for (name,) in conn.execute(
            "SELECT p.proname FROM pg_proc AS p JOIN pg_namespace AS n ON n.oid = p.pronamespace "
            "WHERE n.nspname = 'public'").fetchall()}
    created = {name: (frozenset(columns) if kind == "r" else None) for name, kind, columns in rows}
    created.update(dict.fromkeys(functions))
    listed = {name: columns for versions in POSTGRES_OBJECTS.values() for objects in versions
              for name, columns in objects.items()}
    assert listed == created


# -- SQLite ----------------------------------------------------------------------------------


async def old_sqlite_file(path) -> None:
    """A file an older lovia left: its session store at version 5, no checkpoint tables."""
    old = SQLiteDatabase(path, wal=False, schema=StoreSchema("session", SESSION_SCHEMA.steps[:5]))
    await old.write(lambda conn: None, "making an older file")
    await old.close()


async def test_sqlite_an_older_file_is_not_migrated_when_a_table_is_in_the_checkpointers_way(tmp_path):
    path = tmp_path / "lovia.db"
    await old_sqlite_file(path)
    with sqlite3.connect(path) as conn:
        conn.execute(FOREIGN_RUNS)
    conn.close()
    with pytest.raises(DatabaseFileError) as raised:
        await open_stores(path)
    assert_refusal_names(str(raised.value), "lovia_runs")
    with sqlite3.connect(path) as conn:
        assert conn.execute("SELECT store, version FROM lovia_schema").fetchall() == [("session", 5)]
        assert conn.execute("PRAGMA journal_mode").fetchone() == ("delete",)  # not switched to WAL either
    conn.close()


async def test_sqlite_a_lovia_schema_of_another_shape_is_named(tmp_path):
    path = tmp_path / "lovia.db"
    with sqlite3.connect(path) as conn:
        conn.execute(FOREIGN_SCHEMA)
    conn.close()
    before = path.read_bytes()
    for store in (SQLiteSession(path, wal=True), SQLiteCheckpointer(path, wal=True)):
        with pytest.raises(DatabaseFileError) as raised:
            await store.open()
        assert_refusal_names(str(raised.value), "lovia_schema")
        await store.close()
    assert path.read_bytes() == before


async def test_sqlite_a_file_lovia_wrote_opens_as_before(tmp_path):
    """lovia's own tables are never taken for foreign ones: the second open reads what the first wrote."""
    path = tmp_path / "lovia.db"
    session, checkpointer = await open_stores(path)
    await session.append("s-1", [UserMessage(text="kept")], run_id="run-1")
    await session.close()
    await checkpointer.close()
    session, checkpointer = await open_stores(path)
    try:
        assert [entry.text for entry in await session.load("s-1")] == ["kept"]
        assert await checkpointer.list_runs() == []
    finally:
        await session.close()
        await checkpointer.close()
    with sqlite3.connect(path) as conn:
        versions = dict(conn.execute("SELECT store, version FROM lovia_schema").fetchall())
    conn.close()
    assert versions == {"session": SESSION_SCHEMA.version, "checkpoint": CHECKPOINT_SCHEMA.version}
