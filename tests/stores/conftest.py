"""Fixtures that run every store test against every bundled store."""

from __future__ import annotations

import pytest

from lovia import InMemoryCheckpointer, InMemorySession, SQLiteCheckpointer, SQLiteSession

STORE_KINDS = ["memory", "sqlite", "sqlite-wal"]


class StoreFactory:
    """Makes stores of one kind; SQLite ones on one file in a tmp dir, so they can be reopened."""

    def __init__(self, kind: str, tmp_path) -> None:
        self.kind = kind
        self.path = tmp_path / "lovia.db"
        self._memory_session = InMemorySession()
        self._memory_checkpointer = InMemoryCheckpointer()
        self.opened: list = []

    @property
    def persistent(self) -> bool:
        return self.kind != "memory"

    def session(self):
        if self.kind == "memory":
            return self._memory_session
        store = SQLiteSession(self.path, wal=self.kind == "sqlite-wal")
        self.opened.append(store)
        return store

    def checkpointer(self):
        if self.kind == "memory":
            return self._memory_checkpointer
        store = SQLiteCheckpointer(self.path, wal=self.kind == "sqlite-wal")
        self.opened.append(store)
        return store

    async def close(self) -> None:
        for store in self.opened:
            await store.close()


@pytest.fixture(params=STORE_KINDS)
async def stores(request, tmp_path):
    factory = StoreFactory(request.param, tmp_path)
    yield factory
    await factory.close()


@pytest.fixture
async def session(stores):
    return stores.session()


@pytest.fixture
async def checkpointer(stores):
    return stores.checkpointer()
