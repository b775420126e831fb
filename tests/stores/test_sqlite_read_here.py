"""The WAL search's read on a second, read-only connection (``SQLiteDatabase.read_here``) reads the
store's own file: the one its connection opened, validated and migrated, whatever its path names now."""

from __future__ import annotations

import os
import sqlite3

import pytest

from lovia import UserMessage
from lovia.stores.sqlite import SQLiteSession


def found(hits) -> list[tuple[str, int | None]]:
    return [(hit.session_id, hit.position) for hit in hits]


@pytest.mark.parametrize("how", ["the path replaced", "the directory changed"])
async def test_a_wal_search_reads_the_file_the_store_opened(tmp_path, monkeypatch, how):
    ours, theirs = tmp_path / "ours", tmp_path / "theirs"
    ours.mkdir()
    theirs.mkdir()
    async with SQLiteSession(theirs / "chat.db", wal=True) as other:  # another lovia file, of the same name
        await other.append("elsewhere", [UserMessage(text="a puffin")])
    monkeypatch.chdir(ours)
    session = SQLiteSession("chat.db", wal=True)  # a relative path, as `lovia --db chat.db` gives
    try:
        await session.append("here", [UserMessage(text="an albatross")])  # opened: the store's file is this one
        if how == "the path replaced":
            # Its WAL moved into the file first, so what the path names now is the other file alone.
            with sqlite3.connect(ours / "chat.db") as raw:
                raw.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            raw.close()
            os.replace(theirs / "chat.db", ours / "chat.db")
        else:
            monkeypatch.chdir(theirs)
        assert found(await session.search("albatross")) == [("here", 0)]
        assert await session.search("puffin") == []
        await session.append("here", [UserMessage(text="and a gannet")])
        assert found(await session.search("gannet")) == [("here", 1)]
    finally:
        await session.close()
