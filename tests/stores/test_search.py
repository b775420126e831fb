"""Full-text search (SearchableSession): what it finds, where, and that it follows every change.

Run against every bundled store: the in-memory store scans, the SQLite one queries its FTS5
index, kept by triggers; both must find the same hits.
"""

from __future__ import annotations

import asyncio
import shutil
import sqlite3
from pathlib import Path

import pytest

from lovia import AssistantMessage, SQLiteSession, StoreError, ToolCall, ToolResult, UserError, UserMessage
from lovia.errors import DamagedEntryError
from lovia.session import SearchableSession
from lovia.stores import sqlite as sqlite_store
from lovia.stores._search import parse_query, unmark
from lovia.stores.memory import InMemorySession

DATA = Path(__file__).resolve().parent / "data"


def found(hits) -> list[tuple[str, int | None, str]]:
    return [(hit.session_id, hit.position, hit.kind) for hit in hits]


def highlighted(hit) -> list[str]:
    return [hit.snippet[start:end] for start, end in hit.matches]


async def fill(session) -> None:
    await session.append("s-cafe", [UserMessage(text="Where is the best café in Zürich?"),
                                    AssistantMessage(text="Try the Café Odeon.\nIt is old and fine.")])
    await session.append("s-build", [
        UserMessage(text="fix the build please"),
        ToolCall(call_id="c1", name="shell", arguments='{"cmd": "make all"}'),
        ToolResult(call_id="c1", output="error: libfoo.so not found\n" + "noise " * 300),
        AssistantMessage(text="The library is missing; install libfoo."),
    ])
    await session.append("s-cafe", [UserMessage(text="and a quiet one?"),
                                    AssistantMessage(text="Quiet: the Cafe Schober.")])


async def test_both_bundled_stores_are_searchable(session):
    assert isinstance(session, SearchableSession)


async def test_finds_user_text_answers_tool_calls_and_outputs_at_their_positions(session):
    await fill(session)
    # Newest stored first: the second run of s-cafe, then s-build, then s-cafe's first run.
    assert found(await session.search("cafe")) == [
        ("s-cafe", 3, "assistant"), ("s-cafe", 1, "assistant"), ("s-cafe", 0, "user")]
    assert found(await session.search("libfoo")) == [("s-build", 3, "assistant"), ("s-build", 2, "tool_result")]
    assert found(await session.search("make")) == [("s-build", 1, "tool_call")]
    [hit] = await session.search("zurich")  # any case, no diacritics
    assert highlighted(hit) == ["Zürich"]
    assert hit.title == "Where is the best café in Zürich?"
    assert hit.run_id is not None and hit.at is not None
    # Each found entry is the one read at that position.
    for hit in await session.search("the"):
        page = await session.read_page(hit.session_id, start=hit.position, limit=1)
        text = getattr(page.entries[0], "text", None) or getattr(page.entries[0], "output", "")
        assert "the" in text.lower()


async def test_a_snippet_is_one_line_around_the_match(session):
    await fill(session)
    [hit] = await session.search("libfoo.so")
    assert "\n" not in hit.snippet
    assert len(hit.snippet) < 200  # not the whole 1,800-character output
    assert highlighted(hit) == ["libfoo", "so"] or highlighted(hit) == ["libfoo.so"]


async def test_a_snippet_tells_where_its_lines_began(session):
    # One line, its line breaks spaces; ``breaks`` says which spaces they were (a list item's
    # "- " is told from a dash inside a line by them).
    text = "Plans - two:\n- Atlas first\r\n- then the rest"
    await session.append("s", [AssistantMessage(text=text)])
    [hit] = await session.search("atlas")
    assert "\n" not in hit.snippet and "\r" not in hit.snippet
    assert len(hit.breaks) == 3 and all(hit.snippet[at] == " " for at in hit.breaks)
    restored = "".join("\n" if at in hit.breaks else c for at, c in enumerate(hit.snippet))
    assert "two: - Atlas" not in restored and "two:\n- Atlas first\n\n- then the rest" in restored
    assert restored.strip("…") in text.replace("\r", "\n")  # stores cut it where they will
    assert highlighted(hit) == ["Atlas"]


async def test_phrases_prefixes_and_exclusions(session):
    await fill(session)
    assert found(await session.search('"old and fine"')) == [("s-cafe", 1, "assistant")]
    assert found(await session.search('"fine and old"')) == []
    assert found(await session.search("libr*")) == [("s-build", 3, "assistant")]
    assert found(await session.search("cafe -quiet")) == [("s-cafe", 1, "assistant"), ("s-cafe", 0, "user")]
    assert found(await session.search("cafe quiet")) == [("s-cafe", 3, "assistant")]


@pytest.mark.parametrize("query", [
    '"unbalanced cafe', 'cafe"', '"', '""', "cafe*", "*cafe", "c*a*f*e", "-", "--cafe", "cafe -", "cafe AND",
    "NEAR(cafe odeon)", "cafe OR", "(cafe", "cafe)", "^cafe", "cafe:odeon", "body:cafe", "{cafe}", "'cafe'",
    "caf\u00e9 \\ /", "NOT cafe", "cafe NOT", "+cafe", "a\u0000b", "\u200bcafe", "漢字", "🙂 cafe",
])
async def test_no_query_a_user_types_crashes(session, query):
    await fill(session)
    try:
        hits = await session.search(query)
    except UserError as error:
        assert str(error)
    else:
        assert isinstance(hits, list)


@pytest.mark.parametrize("query", ["", "   ", "***", "-cafe", '-"cafe odeon"', "()"])
async def test_a_query_with_nothing_to_find_says_so(session, query):
    with pytest.raises(UserError):
        await session.search(query)


async def test_the_limit(session):
    await fill(session)
    assert len(await session.search("the", limit=2)) == 2
    with pytest.raises(UserError):
        await session.search("the", limit=0)


async def test_titles_given_are_found_first_and_follow_renames(session):
    await fill(session)
    await session.rename_session("s-build", "Linker trouble with the cafe menu")
    hits = await session.search("cafe")
    assert found(hits)[0] == ("s-build", None, "title")
    assert highlighted(hits[0]) == ["cafe"]
    assert all(hit.title == "Linker trouble with the cafe menu" for hit in hits if hit.session_id == "s-build")
    await session.rename_session("s-build", "Linker trouble")
    assert found(await session.search("menu")) == []
    assert found(await session.search("linker")) == [("s-build", None, "title")]
    await session.rename_session("s-build", "")  # back to the first message
    assert found(await session.search("linker")) == []


async def test_search_follows_rewind_trim_and_clear(session):
    await fill(session)
    await session.rewind("s-cafe", keep_entries=3)  # inside the second run: its answer goes
    assert found(await session.search("schober")) == []
    assert found(await session.search("quiet")) == [("s-cafe", 2, "user")]
    await session.rewind("s-cafe", keep_entries=1)
    assert found(await session.search("odeon")) == []
    await session.trim_tool_results("s-build", keep_chars=30, keep_runs=0)
    assert found(await session.search("noise")) == []
    assert found(await session.search("libfoo")) == [("s-build", 3, "assistant"), ("s-build", 2, "tool_result")]
    await session.clear("s-build")
    assert found(await session.search("libfoo")) == []
    await session.append("s-build", [UserMessage(text="libfoo again")])
    assert found(await session.search("libfoo")) == [("s-build", 0, "user")]


async def test_search_follows_the_trash_and_the_rewind_undo(session):
    if not hasattr(session, "trash_session") or not hasattr(session, "rewind_undoably"):
        pytest.skip("the trash is not in this store yet")
    await fill(session)
    trashed = await session.trash_session("s-build")
    assert found(await session.search("libfoo")) == []
    await session.restore_session(trashed.trash_id)
    assert found(await session.search("libfoo")) == [("s-build", 3, "assistant"), ("s-build", 2, "tool_result")]
    await session.rewind_undoably("s-cafe", keep_entries=2)
    assert found(await session.search("schober")) == []
    await session.undo_rewind("s-cafe")
    assert found(await session.search("schober")) == [("s-cafe", 3, "assistant")]


async def test_the_index_survives_reopening_and_sees_other_connections_writes(stores):
    if not stores.persistent:
        pytest.skip("a memory store does not outlive its object")
    first, second = stores.session(), stores.session()
    await fill(first)
    assert found(await second.search("odeon")) == [("s-cafe", 1, "assistant")]
    await second.append("s-new", [UserMessage(text="odeon opening hours")])
    assert found(await first.search("odeon"))[0] == ("s-new", 0, "user")


async def test_both_stores_find_the_same(tmp_path):
    memory, sqlite = InMemorySession(), SQLiteSession(tmp_path / "same.db")
    async with sqlite:
        for store in (memory, sqlite):
            await fill(store)
            await store.rename_session("s-cafe", "Coffee in Zürich")
            await store.rename_session("s-build", "Coffee and the build")
            await store.rename_session("s-cafe", "Coffee in Zürich, again")  # given last: listed first
        for query in ["cafe", "the", "zurich", "li*", '"the c', "quiet -schober", "make all", "coffee", "again"]:
            assert found(await memory.search(query)) == found(await sqlite.search(query)), query


def test_queries_reach_fts5_as_quoted_words_only():
    assert parse_query('cafe "old and" fin* -quiet').fts() == '("cafe" "old and" "fin" *) NOT "quiet"'
    assert parse_query('say "hi').fts() == '"say" "hi"'
    assert parse_query("NEAR(a b)").fts() == "\"near a\" \"b\""  # one word-run: a phrase
    assert unmark("a \x02b\x03 c\nd") == ("a b c d", ((2, 3),))


async def test_a_stored_mark_character_does_not_shift_the_highlight(tmp_path):
    # FTS5's snippet marks a match with \x02 .. \x03; a tool's output may hold those characters
    # itself. They are dropped, and the offsets still point at the match.
    async with SQLiteSession(tmp_path / "marks.db") as session:
        await session.append("s", [UserMessage(text="x\x03 cafe \x02")])
        [hit] = await session.search("cafe")
    assert highlighted(hit) == ["cafe"]
    assert "\x02" not in hit.snippet and "\x03" not in hit.snippet
    assert unmark("x\x03\x02a\x03") == ("xa", ((1, 2),))


async def test_a_wal_search_answers_during_another_connections_write_and_then_sees_it(tmp_path):
    # In WAL mode the search reads on a second, read-only connection: each search is a fresh
    # snapshot of what was committed, whoever holds the write lock meanwhile.
    path = tmp_path / "wal.db"
    async with SQLiteSession(path, wal=True) as session:
        await session.append("s", [UserMessage(text="cafe one")])
        assert [hit.title for hit in await session.search("cafe")] == ["cafe one"]
        writer = sqlite3.connect(path, isolation_level=None)
        try:
            writer.execute("BEGIN IMMEDIATE")
            writer.execute("UPDATE lovia_session_info SET title = 'cafe two' WHERE session_id = 's'")
            assert [hit.title for hit in await session.search("cafe")] == ["cafe one"]
            writer.execute("COMMIT")
        finally:
            writer.close()
        assert [hit.kind for hit in await session.search("two")] == ["title"]
        await session.append("s", [UserMessage(text="cafe three")])  # this store's own write, seen at once
        assert [hit.position for hit in await session.search("three")] == [1]


async def test_a_rollback_journal_search_waits_for_a_writers_commit_then_answers(tmp_path):
    # Without WAL a read waits for another connection's commit under way, on the store's thread:
    # the loop goes on meanwhile, and it is the loop that ends the writer's transaction here.
    path = tmp_path / "journal.db"
    async with SQLiteSession(path) as session:
        await session.append("s", [UserMessage(text="cafe one")])
        assert [hit.title for hit in await session.search("cafe")] == ["cafe one"]  # all opened
        writer = sqlite3.connect(path, isolation_level=None)
        try:
            writer.execute("BEGIN EXCLUSIVE")
            asyncio.get_running_loop().call_later(0.2, writer.execute, "COMMIT")
            assert [hit.title for hit in await session.search("cafe")] == ["cafe one"]
            assert not writer.in_transaction
        finally:
            writer.close()


async def test_a_version_2_file_is_indexed_when_it_is_migrated(tmp_path):
    path = tmp_path / "v2.db"
    shutil.copyfile(DATA / "session-v2.db", path)
    async with SQLiteSession(path) as session:
        memory = InMemorySession()
        infos = await session.list_sessions()
        for info in infos:
            for segment in await session.segments(info.session_id):
                await memory.append(info.session_id, segment.entries, run_id=segment.run_id, meta=segment.meta)
        words = {word for info in infos for entry in await session.load(info.session_id)
                 for word in (getattr(entry, "text", None) or getattr(entry, "output", None) or "").split()[:2]}
        assert words
        for word in sorted(words)[:20]:
            try:
                expected = sorted(found(await memory.search(word, limit=500)))
            except UserError:
                continue
            assert sorted(found(await session.search(word, limit=500))) == expected, word


async def test_without_fts5_the_file_opens_and_search_says_why(tmp_path, monkeypatch):
    # A Python whose SQLite lacks FTS5 cannot be had here: the probe is made to say so.
    monkeypatch.setattr(sqlite_store, "fts5_available", lambda: False)
    async with SQLiteSession(tmp_path / "plain.db") as session:
        await fill(session)
        assert len(await session.load("s-cafe")) == 4
        with pytest.raises(StoreError, match="FTS5"):
            await session.search("cafe")
    with sqlite3.connect(tmp_path / "plain.db") as conn:
        assert conn.execute("SELECT version FROM lovia_schema WHERE store = 'session'").fetchone()[0] == \
            sqlite_store.SESSION_SCHEMA.version


async def test_within_one_session(session):
    await fill(session)
    await session.rename_session("s-cafe", "the cafe list")
    hits = await session.search("the", session_id="s-cafe")
    assert {hit.session_id for hit in hits} == {"s-cafe"}
    assert sorted(hit.position for hit in hits) == [0, 1, 3]  # no title hit
    assert await session.search("the", session_id="s-unknown") == []


async def test_a_damaged_run_does_not_stop_a_version_4_file_from_moving_to_the_index(tmp_path):
    # A run whose array holds an item that is no entry object (damaged in place) is refused when
    # it is read, as before; the migration indexes the rest rather than refusing the whole file.
    path = tmp_path / "v4.db"
    from lovia.stores._sqlite_db import SQLiteDatabase, StoreSchema

    old = SQLiteDatabase(path, wal=False, schema=StoreSchema("session", sqlite_store.SESSION_SCHEMA.steps[:4]))

    def seed(conn):
        for seq, (session_id, entries) in enumerate([
            ("s-damaged", '["damaged", 7, {"type": "user", "text": "half legible"}]'),
            ("s-fine", '[{"type": "user", "text": "perfectly legible words"}]'),
        ], start=1):
            conn.execute("INSERT INTO lovia_segments (seq, session_id, run_id, meta, entry_count, appended_at, start) "
                         "VALUES (?, ?, ?, '{}', 3, 1.0, 0)", (seq, session_id, f"r{seq}"))
            conn.execute("INSERT INTO lovia_segment_entries (segment_seq, kinds, entries) VALUES (?, 'user', ?)",
                         (seq, entries))
            conn.execute("INSERT INTO lovia_session_info (session_id, title, created_at, last_activity) "
                         "VALUES (?, NULL, 1.0, 1.0)", (session_id,))

    await old.write(seed, "seeding")
    await old.close()
    async with SQLiteSession(path) as session:
        assert sorted(found(await session.search("legible"))) == [("s-damaged", 2, "user"), ("s-fine", 0, "user")]
        assert {info.session_id: info.title for info in await session.list_sessions()} == {
            "s-damaged": "half legible", "s-fine": "perfectly legible words"}
        with pytest.raises(DamagedEntryError):
            await session.load("s-damaged")


@pytest.mark.parametrize("finished_at", ["yesterday", True, [1.0], {"at": 1.0}])
async def test_a_hits_time_is_a_number_whatever_a_runs_meta_holds(session, finished_at):
    # ``meta`` is the caller's: a finish time that is not a number is not one, and the hit
    # says when the run was stored instead, as every store's SegmentInfo.finished_at does.
    await session.append("s-odd", [UserMessage(text="an odd walrus")],
                         meta={"timing": {"started_at": 1.0, "finished_at": finished_at}})
    await session.append("s-fine", [UserMessage(text="a fine walrus")],
                         meta={"timing": {"started_at": 1.0, "finished_at": 2.5}})
    hits = {hit.session_id: hit.at for hit in await session.search("walrus")}
    assert hits["s-fine"] == 2.5
    assert type(hits["s-odd"]) is float and hits["s-odd"] > 1_000_000_000  # when it was stored
