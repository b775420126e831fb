"""Search, trash and undo on PostgreSQL only: the index's triggers follow writes from anywhere.

The shared tests (test_search.py, test_trash_and_undo.py, test_fork.py) run on the "postgres" kind
too; these are what only PostgreSQL has: writes made by another process, or by plain SQL that is
no lovia code at all, reach the index through its triggers; a version 1 database is indexed when
it moves to version 2; lovia's words (not PostgreSQL's parser's) are what is searched, so the hits
are the in-memory store's.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import psycopg
import pytest

from lovia import AssistantMessage, ToolCall, ToolResult, UserMessage
from lovia.stores._postgres_db import PostgresSchema
from lovia.stores._postgres_session import _PostgresSessionCore, session_v1
from lovia.stores.memory import InMemorySession
from lovia.stores.postgres import SESSION_SCHEMA, PostgresSession

ROOT = Path(__file__).resolve().parents[2]


def found(hits) -> list[tuple[str, int | None, str]]:
    return [(hit.session_id, hit.position, hit.kind) for hit in hits]


def highlighted(hit) -> list[str]:
    return [hit.snippet[start:end] for start, end in hit.matches]


async def fill(session) -> None:
    await session.append("s-web", [
        UserMessage(text="Read https://example.com/docs/page_one.html and the file /usr/lib/libfoo.so.3 please"),
        ToolCall(call_id="c1", name="fetch_url", arguments='{"url": "https://example.com/docs"}'),
        ToolResult(call_id="c1", output="<html><b>Déjà vu</b> at café-bar; version 3.11.2, 1e10 & co_op "
                                        "mail bob@example.org ÉCOLE naïve ZÜRICH straße Ærø"),
        AssistantMessage(text="The page says: déjà vu. Written by well-known co-op members in 2024."),
    ])
    await session.append("s-other", [UserMessage(text="漢字 and かな mixed with Ελληνικά ΟΔΟΣ"),
                                      AssistantMessage(text="snake_case and camelCase and kebab-case words")])
    await session.rename_session("s-other", "Scripts: 漢字 and déjà")


QUERIES = [
    "example", "example.com", "docs", "page_one", "page", "one", "html", "libfoo", "so", "3", "usr lib",
    "deja", "déjà vu", '"deja vu"', "cafe", "bar", "cafe-bar", "3.11", "11", "1e10", "co_op", "co", "op",
    "bob", "example.org", "ecole", "naive", "zurich", "strasse", "straße", "aerø", "ærø", "aero", "well-known",
    "known", "漢字", "かな", "ελληνικα", "οδος", "snake", "case", "camelcase", "kebab*", "ca*", '"snake case"',
    "fetch", "url", "fetch_url", "d*", '"deja v"*', "-bar deja", "deja -cafe", "co -op", '"co op"', "b",
]


async def test_the_same_hits_as_the_in_memory_store(postgres_url):
    memory = InMemorySession()
    async with PostgresSession(postgres_url) as postgres:
        for store in (memory, postgres):
            await fill(store)
        for query in QUERIES:
            assert found(await postgres.search(query)) == found(await memory.search(query)), query


async def test_snippets_mark_the_text_as_written_and_say_where_it_was_cut(postgres_url):
    async with PostgresSession(postgres_url) as session:
        await session.append("s", [UserMessage(text="start " + "filler " * 40 + "the Zürich station " + "tail " * 40)])
        [hit] = await session.search("zurich")
        assert highlighted(hit) == ["Zürich"]
        assert hit.snippet.startswith("…") and hit.snippet.endswith("…") and len(hit.snippet) < 120
        await session.append("t", [UserMessage(text="Grab libfoo.so\nnow")])
        [hit] = await session.search("libfoo")
        assert highlighted(hit) == ["libfoo.so"] and hit.snippet == "Grab libfoo.so now"


async def test_writes_by_plain_sql_reach_the_index_through_its_triggers(postgres_url):
    async with PostgresSession(postgres_url) as session:
        await session.append("s", [UserMessage(text="nothing yet")])
        with psycopg.connect(postgres_url, autocommit=True) as conn:  # no lovia code on this side
            conn.execute(
                "INSERT INTO lovia_segments (session_id, run_id, start, entry_count, meta, appended_at, kinds, "
                "entries) VALUES ('s', 'raw', 1, 2, '{}', 1.0, 'user assistant', "
                "'[{\"type\":\"user\",\"text\":\"a heron\"},{\"type\":\"assistant\",\"text\":\"a stork\"}]')")
            assert found(await session.search("heron")) == [("s", 1, "user")]
            conn.execute("UPDATE lovia_segments SET entries = replace(entries, 'heron', 'crane') "
                         "WHERE run_id = 'raw'")
            assert found(await session.search("heron")) == []
            assert found(await session.search("crane")) == [("s", 1, "user")]
            conn.execute("UPDATE lovia_session_info SET title = 'Birds of prey' WHERE session_id = 's'")
            assert found(await session.search("prey")) == [("s", None, "title")]
            conn.execute("DELETE FROM lovia_segments WHERE run_id = 'raw'")
            conn.execute("DELETE FROM lovia_session_info WHERE session_id = 's'")
            assert await session.search("stork") == [] and await session.search("prey") == []
            # A damaged array and a NUL character never fail the write that stores them.
            conn.execute(
                "INSERT INTO lovia_segments (session_id, run_id, start, entry_count, meta, appended_at, kinds, "
                "entries) VALUES ('d', 'bad', 0, 1, '{}', 1.0, 'user', 'not json'), "
                "('d', 'half', 1, 3, '{}', 1.0, 'user', '[\"x\", 7, {\"type\":\"user\",\"text\":\"legible\"}]')")
        assert found(await session.search("legible")) == [("d", 3, "user")]
        await session.append("n", [UserMessage(text="hello"), AssistantMessage(text="before\x00after")])
        [hit] = await session.search("after")
        assert (hit.session_id, hit.position) == ("n", 1)
        assert found(await session.search('"before after"')) == [("n", 1, "assistant")]  # as the NUL separates words


CHILD = """
import asyncio, sys
from lovia import UserMessage
from lovia.stores.postgres import PostgresSession

async def main(url):
    async with PostgresSession(url) as session:
        await session.append("far", [UserMessage(text="an albatross from afar")], run_id="a1")
        await session.append("far", [UserMessage(text="then a puffin")], run_id="a2")
        await session.rename_session("far", "Seabirds")
        await session.rewind("far", keep_entries=1)
        await session.append("gone", [UserMessage(text="a cormorant")])
        await session.trash_session("gone")
        await session.append("kept", [UserMessage(text="a cormorant kept")])
    print("DONE")

asyncio.run(main(sys.argv[1]))
"""


async def test_another_processes_writes_are_searchable_here(postgres_url):
    async with PostgresSession(postgres_url) as session:
        await session.search("warm")  # the schema is in place, and this store's connections open
        child = await asyncio.create_subprocess_exec(
            sys.executable, "-c", CHILD, postgres_url, cwd=str(ROOT),
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
        out, err = await child.communicate()
        assert child.returncode == 0 and out.decode().strip() == "DONE", err.decode()
        assert found(await session.search("albatross")) == [("far", 0, "user")]
        assert found(await session.search("puffin")) == []  # rewound away there
        assert found(await session.search("seabirds")) == [("far", None, "title")]
        assert found(await session.search("cormorant")) == [("kept", 0, "user")]  # the other is in the trash
        [trashed] = await session.list_trash()
        await session.restore_session(trashed.trash_id)
        assert found(await session.search("cormorant")) == [("gone", 0, "user"), ("kept", 0, "user")]


class _VersionOneSession(_PostgresSessionCore):
    """The session store as version 1 of the schema had it: the core alone."""

    _schema = PostgresSchema("session", SESSION_SCHEMA.migrations[:1])


async def test_a_version_1_database_is_indexed_when_it_moves_to_version_2(postgres_url):
    assert SESSION_SCHEMA.migrations[0] is session_v1
    async with _VersionOneSession(postgres_url) as old:
        await old.append("s", [UserMessage(text="an old osprey"), AssistantMessage(text="indeed")])
        await old.append("s", [UserMessage(text="and an owl")])
        await old.rename_session("s", "Raptors")
        await old.append("t", [UserMessage(text="an untitled osprey")])
    async with PostgresSession(postgres_url) as session:
        assert found(await session.search("osprey")) == [("t", 0, "user"), ("s", 0, "user")]
        assert found(await session.search("raptors")) == [("s", None, "title")]
        [hit] = await session.search("owl")
        assert (hit.position, hit.title) == (2, "Raptors")
        assert (await session.search("untitled"))[0].title == "an untitled osprey"
        await session.rewind_undoably("s", keep_entries=2)
        assert found(await session.search("owl")) == []
        await session.undo_rewind("s")
        assert found(await session.search("owl")) == [("s", 2, "user")]
    with psycopg.connect(postgres_url) as conn:
        assert conn.execute("SELECT version FROM lovia_schema WHERE store = 'session'").fetchone() == (SESSION_SCHEMA.version,)


async def test_an_entry_too_large_for_one_tsvector_is_indexed_by_its_first_words(postgres_url):
    # 200,000 different words: more than PostgreSQL's 1 MB tsvector holds. The append is not refused.
    output = " ".join(f"w{i}x" for i in range(200_000))
    async with PostgresSession(postgres_url) as session:
        await session.append("big", [ToolResult(call_id="c", output=output), UserMessage(text="small talk")])
        assert found(await session.search("w1x")) == [("big", 0, "tool_result")]
        assert found(await session.search("small")) == [("big", 1, "user")]
        assert len(await session.load("big")) == 2


async def test_the_trash_keeps_runs_as_stored_and_purge_leaves_nothing(postgres_url):
    async with PostgresSession(postgres_url) as session:
        await session.append("a", [UserMessage(text="one")], meta={"future_field": [1, {"x": None}]})
        await session.append("b", [UserMessage(text="two")])
        a = await session.trash_session("a")
        await session.trash_session("b")
        assert await session.purge_trash(trash_id=a.trash_id) == 1
        with psycopg.connect(postgres_url) as conn:
            assert conn.execute("SELECT COUNT(*) FROM lovia_trash_runs").fetchone() == (1,)
            assert conn.execute("SELECT COUNT(*) FROM lovia_search").fetchone() == (0,)
        [b] = await session.list_trash()
        await session.restore_session(b.trash_id)
        with psycopg.connect(postgres_url) as conn:
            assert conn.execute("SELECT COUNT(*) FROM lovia_trash_runs").fetchone() == (0,)


@pytest.mark.parametrize("query", ["x" * 3000, "-" + "y" * 3000 + " cafe"])
async def test_words_too_long_to_index(postgres_url, query):
    async with PostgresSession(postgres_url) as session:
        await session.append("s", [UserMessage(text="cafe " + "x" * 3000)])
        hits = await session.search(query)
        assert found(hits) == ([] if query.startswith("x") else [("s", 0, "user")])


async def test_a_word_inside_a_token_too_long_for_a_tsquery_is_found_and_the_search_answers(postgres_url):
    """A signed URL or a long path is one token of PostgreSQL's parser, past the 2,047 bytes a ``tsquery``
    lexeme may have: the snippet's query must leave it out rather than fail the whole search."""
    signed = "https://example.com/download?sig=" + "ab12" * 700
    async with PostgresSession(postgres_url) as session:
        await session.append("s", [ToolResult(call_id="c", output=f"fetched {signed} ok")])
        await session.append("t", [UserMessage(text="download it again")])
        hits = await session.search("download")
        assert found(hits) == [("t", 0, "user"), ("s", 0, "tool_result")]
        assert highlighted(hits[0]) == ["download"]
        assert hits[1].snippet.startswith("fetched https://example.com")  # no token left to mark: the text's start


async def test_a_run_whose_meta_holds_a_nul_character_or_an_odd_timing_is_found(postgres_url):
    """A run's meta is any JSON lovia was given (a carried summary may hold a NUL character, which
    PostgreSQL's JSON functions refuse): a hit's time is read from it without failing the search.
    A literal backslash before "u0000" in the text stays as it is."""
    async with PostgresSession(postgres_url) as session:
        await session.append("s", [UserMessage(text="a kestrel")],
                             meta={"summary": "cut\x00here \\u0000", "timing": {"finished_at": 7.0}})
        await session.append("t", [UserMessage(text="a kestrel again")], meta={"timing": {"finished_at": "soon"}})
        await session.append("u", [UserMessage(text="one more kestrel")],
                             meta={"timing": {"started_at": 1.0, "finished_at": 2.5}})
        hits = await session.search("kestrel")
        assert found(hits) == [("u", 0, "user"), ("t", 0, "user"), ("s", 0, "user")]
        assert (hits[0].at, hits[2].at) == (2.5, 7.0) and isinstance(hits[1].at, float)


async def test_a_run_holding_a_nul_character_and_the_text_of_its_escape_is_indexed(postgres_url):
    """A NUL character is indexed as a space; the six characters ``\\u0000`` written in a message (code
    about escapes) are text like any other, and must not keep the run out of the index."""
    async with PostgresSession(postgres_url) as session:
        await session.append("s", [UserMessage(text=r"a heron wrote \u0000 in JSON"),
                                   ToolResult(call_id="c", output="binary\x00output")])
        assert found(await session.search("heron")) == [("s", 0, "user")]
        assert found(await session.search('"binary output"')) == [("s", 1, "tool_result")]
