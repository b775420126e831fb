"""Schema 3 of the session store: a run's entries in one row, migrated from files lovia wrote before.

``data/session-v2.db`` was written by lovia at schema 2 (``data/make_session_v2.py``), and
``data/session-v2.json`` is what that lovia read back from it; the migrated file must read the same.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import sqlite3
from pathlib import Path

import pytest

from lovia import (
    AssistantMessage,
    DatabaseFileError,
    EntryDecodeError,
    SQLiteCheckpointer,
    SQLiteSession,
    ToolCall,
    ToolResult,
    UserMessage,
)
from lovia.entries import entries_from_json, entries_from_json_array, entries_to_json_array, entry_to_dict
from lovia.errors import DamagedEntryError
from lovia.stores.sqlite import SESSION_SCHEMA

DATA = Path(__file__).resolve().parent / "data"
GOLDEN = json.loads((DATA / "session-v2.json").read_text())


def v2_file(tmp_path: Path) -> Path:
    path = tmp_path / "v2.db"
    shutil.copyfile(DATA / "session-v2.db", path)
    return path


def versions(path: Path) -> dict[str, int]:
    with sqlite3.connect(path) as conn:
        return dict(conn.execute("SELECT store, version FROM lovia_schema"))


def tables(path: Path) -> set[str]:
    with sqlite3.connect(path) as conn:
        return {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}


def dicts(entries) -> list[dict]:
    return [entry_to_dict(e) for e in entries]


@pytest.mark.parametrize("wal", [False, True])
async def test_a_version_2_file_reads_the_same_once_migrated(tmp_path, wal):
    path = v2_file(tmp_path)
    assert versions(path) == {"session": 2, "checkpoint": 1}
    async with SQLiteSession(path, wal=wal) as session:
        infos = {info.session_id: info for info in await session.list_sessions()}
        assert sorted(infos) == sorted(GOLDEN["sessions"])
        for sid, golden in GOLDEN["sessions"].items():
            info = infos[sid]
            assert [info.title, info.entry_count, info.run_count, info.created_at, info.last_activity,
                    info.total_run_seconds] == golden["info"], sid
            assert dicts(await session.load(sid)) == golden["load"], sid
            segments = await session.segments(sid)
            assert [[s.run_id, dicts(s.entries), s.meta] for s in segments] == golden["segments"], sid
            page = await session.read_page(sid, start=3, limit=5)
            assert [page.start, dicts(page.entries), [[r.run_id, r.start, r.count, r.meta] for r in page.runs],
                    page.total] == golden["page"], sid
    assert versions(path) == {"session": SESSION_SCHEMA.version, "checkpoint": 1}
    assert "lovia_entries" not in tables(path)
    with sqlite3.connect(path) as conn:
        # A field a newer lovia wrote is carried over as it was stored (and ignored on reading).
        assert conn.execute("SELECT json_extract(entries, '$[1].mood') FROM lovia_segment_entries "
                            "WHERE segment_seq = 1").fetchone() == ("cheerful",)
    async with SQLiteCheckpointer(path, wal=wal) as checkpointer:
        assert [e.text for e in (await checkpointer.load("live")).entries] == ["in flight"]


async def test_a_migrated_file_goes_on_working(tmp_path):
    path = v2_file(tmp_path)
    chat = GOLDEN["sessions"]["chat"]
    total = len(chat["load"])
    async with SQLiteSession(path) as session:
        await session.append("chat", [UserMessage(text="after"), AssistantMessage(text="the move")], run_id="new")
        await session.append("chat", [UserMessage(text="after")], run_id="new")  # idempotent
        page = await session.read_page("chat", limit=3)
        assert (page.start, page.total) == (total - 1, total + 2)
        assert [(r.run_id, r.start, r.count) for r in page.runs] == [("chat-handoff", total - 2, 2), ("new", total, 2)]
        assert await session.rewind("chat", keep_entries=total + 1) == 1
        assert [e.text for e in (await session.load("chat"))[-2:]] == ["expert here", "after"]
        assert await session.trim_tool_results("chat", keep_chars=10) > 0
        assert (await session.session_info("chat")).entry_count == total + 1
    async with SQLiteSession(path) as session:  # opening again migrates nothing
        assert len(await session.load("chat")) == total + 1
    assert versions(path)["session"] == SESSION_SCHEMA.version


def fingerprint(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.mark.parametrize("damage", [
    "UPDATE lovia_entries SET segment_seq = 999 WHERE seq = 3",
    "UPDATE lovia_entries SET data = CAST(data AS BLOB) WHERE seq = 3",
])
async def test_a_damaged_version_2_file_is_not_migrated_and_left_as_it_was(tmp_path, damage):
    path = v2_file(tmp_path)
    with sqlite3.connect(path) as conn:
        conn.execute(damage)
    before = fingerprint(path)
    session = SQLiteSession(path)
    with pytest.raises(DatabaseFileError, match="damaged") as caught:
        await session.load("chat")
    await session.close()
    assert "question" not in str(caught.value)
    assert fingerprint(path) == before
    assert versions(path)["session"] == 2


async def test_a_page_reads_only_the_runs_it_touches(tmp_path):
    """A damaged early run does not stop a page at the end from being read: it is not read at all."""
    path = tmp_path / "chat.db"
    async with SQLiteSession(path) as session:
        for n in range(50):
            await session.append("s", [UserMessage(text=f"q{n}"), AssistantMessage(text=f"a{n}")], run_id=f"r{n}")
    with sqlite3.connect(path) as conn:
        conn.execute("UPDATE lovia_segment_entries SET entries = '[{' WHERE segment_seq = 1")
    async with SQLiteSession(path) as session:
        page = await session.read_page("s", limit=5)
        assert [e.text for e in page.entries] == ["a47", "q48", "a48", "q49", "a49"]
        assert [r.run_id for r in page.runs] == ["r47", "r48", "r49"]
        page = await session.read_page("s", start=51, limit=4)
        assert [e.text for e in page.entries] == ["a25", "q26", "a26", "q27"]
        with pytest.raises(DamagedEntryError, match=r"session 's', run 'r0' of .* are damaged"):
            await session.load("s")


async def test_rewinding_and_trimming_keep_the_fields_a_newer_lovia_wrote(tmp_path):
    path = tmp_path / "chat.db"
    entries = [UserMessage(text="q"), ToolCall(call_id="c", name="t"), ToolResult(call_id="c", output="x" * 500),
               AssistantMessage(text="a")]
    async with SQLiteSession(path) as session:
        await session.append("s", entries, run_id="r1")
        await session.append("s", entries, run_id="r2")
    with sqlite3.connect(path) as conn:
        conn.execute("UPDATE lovia_segment_entries SET entries = json_set(entries, '$[0].mood', 'calm', "
                     "'$[2].mood', 'busy')")
    async with SQLiteSession(path) as session:
        assert await session.trim_tool_results("s", keep_chars=10) == 1
        assert await session.rewind("s", keep_entries=5) == 3
        assert [type(e) for e in await session.load("s")] == [*map(type, entries), UserMessage]
    with sqlite3.connect(path) as conn:
        rows = conn.execute("SELECT kinds, json_extract(entries, '$[0].mood'), json_extract(entries, '$[2].mood'), "
                            "json_extract(entries, '$[2].trimmed_chars') FROM lovia_segment_entries "
                            "ORDER BY segment_seq").fetchall()
    assert rows == [("user tool_call tool_result assistant", "calm", "busy", 490), ("user", "calm", None, None)]


async def test_each_entry_s_own_type_tag_decides_what_it_is(tmp_path):
    """The ``kinds`` column only helps find runs; an entry is what its stored JSON says."""
    path = tmp_path / "chat.db"
    async with SQLiteSession(path) as session:
        await session.append("s", [UserMessage(text="q"), AssistantMessage(text="a")], run_id="r1")
    with sqlite3.connect(path) as conn:
        conn.execute("UPDATE lovia_segment_entries SET kinds = 'assistant user'")
    async with SQLiteSession(path) as session:
        assert [type(e) for e in await session.load("s")] == [UserMessage, AssistantMessage]


def test_the_array_codec_keeps_the_single_entry_rules():
    entries = [UserMessage(text="q ü", created_at=1.0), ToolCall(call_id="c", name="t", created_at=2.0),
               ToolResult(call_id="c", output="o", is_error=True, created_at=3.0), AssistantMessage(text="a")]
    text = entries_to_json_array(entries)
    assert json.loads(text) == [entry_to_dict(e) for e in entries]
    assert list(entries_from_json_array(text)) == entries
    assert entries_from_json_array("[]") == ()
    # Unknown fields are ignored; an old entry without created_at gets one.
    [old] = entries_from_json_array('[{"type":"user","text":"hi","mood":"calm"}]')
    assert old.text == "hi" and isinstance(old.created_at, float)
    # A field of an unexpected kind is kept as the single-entry decoder keeps it.
    [odd] = entries_from_json_array('[{"type":"user","text":7,"created_at":1}]')
    assert odd == UserMessage(text=7, created_at=1)  # type: ignore[arg-type]
    with pytest.raises(EntryDecodeError, match=r"unknown transcript entry type 'hologram' in run 'r', entry #12"):
        entries_from_json_array('[{"type":"user","text":"SECRET"},{"type":"hologram"}]', where="run 'r'", first=11)
    for damaged in ('[{"type":"user","text":"SECRET', '{"type":"user","text":"SECRET"}', '["SECRET"]',
                    '[{"type":"SECRET stuff","text":"x"}]', '[{"type":7,"text":"SECRET"}]', None, b"\xff SECRET"):
        with pytest.raises(DamagedEntryError) as caught:
            entries_from_json_array(damaged, where="run 'r'")
        assert "SECRET" not in str(caught.value) and caught.value.__cause__ is None


def test_long_arrays_and_joined_rows_decode_by_the_same_rules():
    long = [UserMessage(text=str(i), created_at=float(i)) if i % 2 else ToolResult(call_id=str(i), output="o")
            for i in range(600)]
    assert list(entries_from_json_array(entries_to_json_array(long))) == long
    stored = json.loads(entries_to_json_array(long))
    stored[580]["type"] = "hologram"
    with pytest.raises(EntryDecodeError, match=r"'hologram' in run 'r', entry #580"):
        entries_from_json_array(json.dumps(stored), where="run 'r'")
    # A checkpoint's rows, one entry each, go through the same decoder joined into one array.
    rows = [json.dumps(entry_to_dict(e)) for e in long]
    assert entries_from_json(rows) == long
    assert entries_from_json([]) == []
    for damaged in (['{"type":"user","text":"a"},{"type":"user","text":"SECRET"}'], ["1"], ['"SECRET"'],
                    ['{"type":"user","text":"a"}', '{"type":"user","text":"SECRET"']):
        with pytest.raises(DamagedEntryError) as caught:
            entries_from_json(damaged, where="run 'r'")
        assert "SECRET" not in str(caught.value) and "entry #" in str(caught.value)
