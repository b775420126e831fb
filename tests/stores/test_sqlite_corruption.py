"""Damaged database files: a clear LoviaError that quotes nothing stored, and no write into them.

A corpus is made from one real lovia database whose conversation carries marker words: bytes
flipped in every page, every page zeroed, the file cut at several offsets, a wrong header,
and rows whose JSON was replaced through SQLite itself. For each, reading everything and then
appending must either work on a file that passes SQLite's ``integrity_check``, or raise a
:class:`LoviaError` whose message holds none of the markers; an append is never accepted into
a file that fails ``integrity_check``, and a refused append leaves the file byte-identical.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import sqlite3
from collections.abc import Callable
from pathlib import Path

import pytest

from lovia import (
    AssistantMessage,
    DatabaseFileError,
    LoviaError,
    RunHead,
    RunSnapshot,
    SQLiteCheckpointer,
    SQLiteSession,
    StoreError,
    ToolCall,
    ToolResult,
    UserMessage,
)
from lovia.cli import open_stores

MARKERS = ("ZEBRA", "quokka", "Marmalade")
SECRET = " ".join(MARKERS)
PAGE = 4096


def make_database(path: Path) -> None:
    """A lovia file as the app leaves it (WAL mode, closed cleanly) with the markers everywhere."""

    async def write():
        async with SQLiteSession(path, wal=True) as session, SQLiteCheckpointer(path, wal=True) as checkpointer:
            for s in range(3):
                for r in range(12):
                    entries = [
                        UserMessage(text=f"{SECRET} question {s}.{r}"),
                        ToolCall(call_id=f"c{s}{r}", name="search", arguments=json.dumps({"q": SECRET})),
                        ToolResult(call_id=f"c{s}{r}", output=f"{SECRET} " * (40 if r % 4 else 400)),
                        AssistantMessage(text=f"{SECRET} answer {s}.{r}"),
                    ]
                    await session.append(f"s{s}", entries, run_id=f"r{s}-{r}", meta={"note": SECRET})
            await checkpointer.save(RunSnapshot("live", RunHead(agent="bot", first_input=SECRET, session_id="s0"),
                                                [UserMessage(text=SECRET)]))

    asyncio.run(write())
    assert not Path(f"{path}-wal").exists()
    with sqlite3.connect(path) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"


@pytest.fixture(scope="module")
def pristine(tmp_path_factory) -> bytes:
    path = tmp_path_factory.mktemp("pristine") / "lovia.db"
    make_database(path)
    return path.read_bytes()


def flip(offset: int) -> Callable[[bytes], bytes]:
    def damage(data: bytes) -> bytes:
        if offset >= len(data):
            return data
        return data[:offset] + bytes([data[offset] ^ 0xA5]) + data[offset + 1:]
    return damage


def zero_page(page: int) -> Callable[[bytes], bytes]:
    return lambda data: data[:page * PAGE] + bytes(PAGE) + data[(page + 1) * PAGE:]


def truncate(size: int) -> Callable[[bytes], bytes]:
    return lambda data: data[:size]


def overwrite(offset: int, new: bytes) -> Callable[[bytes], bytes]:
    return lambda data: data[:offset] + new + data[offset + len(new):]


def byte_damages(pages: int) -> dict[str, Callable[[bytes], bytes]]:
    damages: dict[str, Callable[[bytes], bytes]] = {}
    for page in range(pages):
        for where in (0, 1, 3, 5, 8, 100, PAGE // 2, PAGE - 2):
            damages[f"flip page {page} byte {where}"] = flip(page * PAGE + where)
        damages[f"zero page {page}"] = zero_page(page)
    for size in (1, 50, 100, PAGE, PAGE + 1, 2 * PAGE, pages * PAGE // 2, (pages - 1) * PAGE, pages * PAGE - 1):
        damages[f"truncate at {size}"] = truncate(size)
    damages.update({
        "garbage header": overwrite(0, b"not my database!"),
        "invalid page size": overwrite(16, b"\x03\x00"),
        "unknown file format versions": overwrite(18, b"\x07\x07"),
        "huge reserved space": overwrite(20, b"\xff"),
        "huge database size": overwrite(28, b"\x7f\xff\xff\xff"),
        "unknown schema format": overwrite(44, b"\x00\x00\x00\x09"),
        "bad text encoding": overwrite(56, b"\x00\x00\x00\x07"),
    })
    return damages


ROW_DAMAGES = {
    # A run's entries are one JSON array (schema 3); the second run's first entry is damaged.
    "entry not json": "UPDATE lovia_segment_entries SET entries = '[{\"type\":\"user\",\"text\":\"' || ? || ' cut' "
                      "WHERE segment_seq = 2",
    "entry not an object": "UPDATE lovia_segment_entries SET entries = json_set(entries, '$[0]', json_array(?)) "
                           "WHERE segment_seq = 2",
    "entry type holds text": "UPDATE lovia_segment_entries SET entries = json_set(entries, '$[0]', "
                             "json_object('type', ?, 'text', 'x')) WHERE segment_seq = 2",
    "entry type is a number": "UPDATE lovia_segment_entries SET entries = json_set(entries, '$[0]', "
                              "json_object('type', 7, 'text', ?)) WHERE segment_seq = 2",
    "entries not a list": "UPDATE lovia_segment_entries SET entries = json_object('type', 'user', 'text', ?) "
                          "WHERE segment_seq = 2",
    "entry text is a blob": "UPDATE lovia_segment_entries SET entries = CAST(? AS BLOB) WHERE segment_seq = 2",
    # A byte changed inside the text, as a disk or a copy damages it: no longer UTF-8, which
    # Python's sqlite3 refuses to read as text (an error of its own, without SQLite's code).
    "entry text not utf-8": "UPDATE lovia_segment_entries SET entries = '[{\"type\":\"user\",\"text\":\"' || ? "
                            "|| CAST(X'FF' AS TEXT) || '\"}]' WHERE segment_seq = 2",
    "entries of no run": "UPDATE lovia_segment_entries SET segment_seq = 999, "
                         "entries = json_array(json_object('type', 'user', 'text', ?)) WHERE segment_seq = 2",
    "entries fewer than recorded": "UPDATE lovia_segment_entries SET entries = json_remove(entries, '$[3]') "
                                   "WHERE segment_seq = 2 AND ? IS NOT NULL",
    "first user entry not json": "UPDATE lovia_segment_entries SET entries = ? || '{' WHERE segment_seq = 1",
    "meta not json": "UPDATE lovia_segments SET meta = '{\"note\": \"' || ? WHERE seq = 2",
    "meta not an object": "UPDATE lovia_segments SET meta = json_array(?) WHERE seq = 2",
    "head not json": "UPDATE lovia_runs SET head = ? || '}'",
    "head not an object": "UPDATE lovia_runs SET head = json_array(?)",
    "head field of the wrong kind": "UPDATE lovia_runs SET head = json_set(head, '$.usage', ?)",
    "checkpoint entry not json": "UPDATE lovia_run_entries SET data = ? || ']'",
}


def assert_quotes_nothing(exc: BaseException, case: str) -> None:
    assert isinstance(exc, LoviaError), f"{case}: {type(exc).__name__} is not a LoviaError: {exc}"
    message = str(exc)
    for marker in MARKERS:
        assert marker not in message, f"{case}: the error quotes stored text: {message}"
    assert exc.__cause__ is None, f"{case}: the error carries a cause that may quote stored text"


async def read_everything(path: Path) -> None:
    async with SQLiteSession(path, wal=True) as session, SQLiteCheckpointer(path, wal=True) as checkpointer:
        for info in await session.list_sessions():
            await session.segments(info.session_id)
            await session.load(info.session_id)
        listed = [run.run_id for run in await checkpointer.list_runs()]
        # A run whose head is damaged is left out of the list (see ListableCheckpointer); loading it
        # is refused.
        for run_id in dict.fromkeys([*listed, "live"]):
            await checkpointer.load(run_id)


async def append(path: Path) -> None:
    session = SQLiteSession(path, wal=True)
    try:
        await session.append("s0", [UserMessage(text="after the damage")], run_id="probe")
    finally:
        await session.close()


def integrity(path: Path) -> str:
    try:
        with sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True) as conn:
            return str(conn.execute("PRAGMA integrity_check").fetchone()[0])
    except sqlite3.DatabaseError as exc:
        return f"unreadable: {exc}"


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def exercise(path: Path, case: str) -> str:
    """Read everything, then append; return what happened, asserting the promises on the way."""
    outcome = "read"
    try:
        asyncio.run(read_everything(path))
    except Exception as exc:
        assert_quotes_nothing(exc, case)
        outcome = "read refused"
    before = digest(path)
    try:
        asyncio.run(append(path))
    except Exception as exc:
        assert_quotes_nothing(exc, case)
        assert digest(path) == before, f"{case}: a refused append changed the file"
        return outcome + ", append refused"
    verdict = integrity(path)
    assert verdict == "ok", f"{case}: an append was accepted into a file failing integrity_check: {verdict}"
    return outcome + ", append accepted"


def test_every_damaged_byte_is_refused_quoting_nothing_or_harmless(tmp_path, pristine):
    damages = byte_damages(len(pristine) // PAGE)
    outcomes: dict[str, str] = {}
    for number, (case, damage) in enumerate(damages.items()):
        path = tmp_path / f"case{number}.db"
        path.write_bytes(damage(pristine))
        outcomes[case] = exercise(path, case)
    refused = [case for case, outcome in outcomes.items() if "refused" in outcome]
    # The corpus must really exercise refusal, not only harmless damage.
    assert len(refused) > len(damages) // 4, outcomes


@pytest.mark.parametrize("case", sorted(ROW_DAMAGES))
def test_a_damaged_row_is_a_clear_error_quoting_nothing(tmp_path, pristine, case):
    path = tmp_path / "lovia.db"
    path.write_bytes(pristine)
    with sqlite3.connect(path) as conn:
        changed = conn.execute(ROW_DAMAGES[case], (SECRET,)).rowcount
    assert changed >= 1
    with pytest.raises(StoreError) as caught:
        asyncio.run(read_everything(path))
    assert_quotes_nothing(caught.value, case)
    assert "damaged" in str(caught.value) or "corrupt" in str(caught.value)


# Damage to one run of one session (its row of entries or its meta).
RUN_ROW_DAMAGES = sorted(case for case, sql in ROW_DAMAGES.items() if "lovia_segment" in sql)


@pytest.mark.parametrize("case", RUN_ROW_DAMAGES)
def test_one_damaged_run_leaves_every_session_listed_and_searchable(tmp_path, pristine, case):
    # The app lists sessions at start and searches all of them: one damaged run refused the
    # whole listing (a statement parsing its JSON failed), so no session could be opened.
    path = tmp_path / "lovia.db"
    path.write_bytes(pristine)
    with sqlite3.connect(path) as conn:
        assert conn.execute(ROW_DAMAGES[case], (SECRET,)).rowcount >= 1

    async def use() -> None:
        async with SQLiteSession(path, wal=True) as session:
            assert sorted(info.session_id for info in await session.list_sessions()) == ["s0", "s1", "s2"]
            assert (await session.session_info("s0")) is not None
            hits = await session.search("question", limit=100)
            assert {hit.session_id for hit in hits} >= {"s1", "s2"}
            assert all(type(hit.at) is float for hit in hits)
            # An undamaged session still reads whole.
            assert len(await session.load("s2")) == 48

    asyncio.run(use())


def test_a_file_failing_integrity_check_is_refused_before_any_write(tmp_path, pristine):
    path = tmp_path / "lovia.db"
    path.write_bytes(pristine)
    with sqlite3.connect(path) as conn:
        index_page = conn.execute("SELECT rootpage FROM sqlite_master WHERE name = 'lovia_segments_by_start'")
        (page,) = index_page.fetchone()
    damaged = zero_page(page - 1)(pristine)
    path.write_bytes(damaged)
    session = SQLiteSession(path, wal=True)
    with pytest.raises(DatabaseFileError, match="corrupt") as caught:
        asyncio.run(session.append("s0", [UserMessage(text="into a broken file")]))
    assert_quotes_nothing(caught.value, "zeroed index page")
    asyncio.run(session.close())
    assert path.read_bytes() == damaged


@pytest.mark.parametrize("wal", [False, True])
def test_the_app_start_up_refuses_a_corrupt_file_untouched(tmp_path, pristine, wal):
    path = tmp_path / "lovia.db"
    path.write_bytes(pristine)
    if not wal:
        with sqlite3.connect(path) as conn:
            conn.execute("PRAGMA journal_mode = DELETE")
    data = path.read_bytes()
    pages = len(data) // PAGE
    # A page in the middle of the conversation: a table's leaf page holding its text (not an overflow
    # page, whose zeroed content SQLite cannot tell from text; the search index made the file longer).
    middle = min((page for page in range(1, pages) if data[page * PAGE] == 0x0D
                  and SECRET.encode() in data[page * PAGE:(page + 1) * PAGE]), key=lambda page: abs(page - pages // 2))
    damaged = zero_page(middle)(data)
    path.write_bytes(damaged)
    with pytest.raises(DatabaseFileError, match="corrupt") as caught:
        asyncio.run(open_stores(path))
    assert_quotes_nothing(caught.value, "zeroed middle page")
    assert path.read_bytes() == damaged
    if not wal:  # reading a rollback-journal file leaves nothing beside it
        assert sorted(os.listdir(tmp_path)) == ["lovia.db"]


@pytest.mark.parametrize("read", ["load", "read_page"])
def test_text_that_is_no_longer_utf8_is_called_damage(tmp_path, pristine, read):
    """A new user's trial: a byte changed inside a run's text made opening its session say "SQLite
    failed while reading a page ... (OperationalError)", which blamed SQLite and said nothing to do."""
    path = tmp_path / "lovia.db"
    path.write_bytes(pristine)
    with sqlite3.connect(path) as conn:
        assert conn.execute(ROW_DAMAGES["entry text not utf-8"], (SECRET,)).rowcount == 1
        [session_id] = conn.execute("SELECT session_id FROM lovia_segments WHERE seq = 2").fetchone()

    async def open_it() -> None:
        async with SQLiteSession(path, wal=True) as session:
            await getattr(session, read)(session_id)

    with pytest.raises(DatabaseFileError) as caught:
        asyncio.run(open_it())
    assert_quotes_nothing(caught.value, read)
    assert "corrupt" in str(caught.value) and "Restore it from a backup" in str(caught.value)
