"""Fixtures that run every store test against every bundled store.

The "postgres" kind runs on a fresh database of the test session's PostgreSQL server (the
``postgres_url`` fixture of tests/conftest.py), and skips with the reason when no server can be had.
"""

from __future__ import annotations

import pytest

from lovia import InMemoryCheckpointer, InMemorySession, SQLiteCheckpointer, SQLiteSession

STORE_KINDS = ["memory", "sqlite", "sqlite-wal", "postgres"]


class StoreFactory:
    """Makes stores of one kind; SQLite ones on one file in a tmp dir, PostgreSQL ones on one database
    (``url``), so they can be reopened."""

    def __init__(self, kind: str, tmp_path, url: str | None = None) -> None:
        self.kind = kind
        self.path = tmp_path / "lovia.db"
        self.url = url
        self._memory_session = InMemorySession()
        self._memory_checkpointer = InMemoryCheckpointer()
        self.opened: list = []

    @property
    def persistent(self) -> bool:
        return self.kind != "memory"

    def query(self, sql: str) -> list[tuple]:
        """Rows of ``sql`` read straight from the database (a SQLite file or the PostgreSQL one), bypassing lovia."""
        assert self.persistent, "an in-memory store has no database to read"
        if self.kind == "postgres":
            import psycopg

            with psycopg.connect(self.url) as conn:
                return conn.execute(sql).fetchall()
        import sqlite3

        with sqlite3.connect(self.path) as conn:
            return conn.execute(sql).fetchall()

    def table_names(self) -> set[str]:
        """The names of the tables lovia made in the database."""
        if self.kind == "postgres":
            sql = "SELECT tablename FROM pg_tables WHERE schemaname = current_schema()"
        else:
            sql = "SELECT name FROM sqlite_master WHERE type = 'table'"
        return {name for (name,) in self.query(sql)}

    def session(self):
        if self.kind == "memory":
            return self._memory_session
        if self.kind == "postgres":
            from lovia.stores.postgres import PostgresSession

            store = PostgresSession(self.url)
            self.opened.append(store)
            return store
        store = SQLiteSession(self.path, wal=self.kind == "sqlite-wal")
        self.opened.append(store)
        return store

    def checkpointer(self):
        if self.kind == "memory":
            return self._memory_checkpointer
        if self.kind == "postgres":
            from lovia.stores.postgres import PostgresCheckpointer

            store = PostgresCheckpointer(self.url)
            self.opened.append(store)
            return store
        store = SQLiteCheckpointer(self.path, wal=self.kind == "sqlite-wal")
        self.opened.append(store)
        return store

    async def close(self) -> None:
        for store in self.opened:
            await store.close()


@pytest.fixture(params=STORE_KINDS)
async def stores(request, tmp_path):
    # The database only for the kind that needs it: the other kinds run without a server.
    url = request.getfixturevalue("postgres_url") if request.param == "postgres" else None
    factory = StoreFactory(request.param, tmp_path, url)
    yield factory
    await factory.close()


@pytest.fixture
async def session(stores):
    return stores.session()


@pytest.fixture
async def checkpointer(stores):
    return stores.checkpointer()
