"""Search over 10,000 sessions: ``SQLiteSession.search`` against a bare FTS5 query on the same index.

The file: 10,000 sessions of three runs each (a question and its answer; a tool call, its
output and an answer; a follow-up and its answer), every tenth session with a title given by
rename, written through ``SQLiteSession`` so the index is the one its triggers keep.

Per query, in one process, alternated: lovia's ``search(query, limit=50)`` as the terminal UI
calls it (a ``wal=True`` store, as the app opens; titles, then entries newest first, each hit's
session, position and title), and the baseline: the same ``MATCH`` expression and the same limit
on the same index through a plain ``sqlite3`` connection on the calling thread,
``SELECT rowid, snippet(...) FROM lovia_search WHERE lovia_search MATCH ? ORDER BY rowid DESC
LIMIT 50``, the least any search that shows snippets newest first must ask. The ratio is taken
per repetition; the median and spread are printed. With WAL, lovia reads on the caller's thread
(see ``SQLiteDatabase.read_here``); the last column is the same search through a ``wal=False``
store on the same file, which reads on the store's thread (one hop there and back), as it does in
rollback-journal mode, against the same baseline.

Queries: a rare word (one session), a common word (in every session), a word in every tenth
session, a phrase, a prefix, and a word with an exclusion.

``python bench/search.py [--repeat 30] [--sessions 10000]``
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sqlite3
import sys
import tempfile
import time
from pathlib import Path

from _stats import Figure, print_table, ratios

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from lovia import AssistantMessage, SQLiteSession, ToolCall, ToolResult, UserMessage  # noqa: E402
from lovia.stores._search import parse_query  # noqa: E402

LIMIT = 50
WORDS = ["harbour", "lantern", "copper", "meadow", "violet", "granite", "ember", "willow", "saffron", "quartz"]
QUERIES = {
    "rare word (1 session)": "zanzibar7777",
    "common word (every session)": "question",
    "word in 1 of 10 sessions": "lantern",
    "phrase": '"copper willow"',
    "prefix": "saff*",
    "word, one excluded": "granite -ember",
}


async def build(path: Path, sessions: int) -> None:
    async with SQLiteSession(path, wal=True) as session:
        for i in range(sessions):
            sid = f"s-{i:06d}"
            a, b = WORDS[i % len(WORDS)], WORDS[(i * 7 + 3) % len(WORDS)]
            extra = " zanzibar7777" if i == sessions // 2 else ""
            await session.append(sid, [UserMessage(text=f"Question {i} about the {a} {b}{extra}"),
                                       AssistantMessage(text=f"An answer on {a} and {b}: see the notes.")])
            await session.append(sid, [
                ToolCall(call_id=f"c{i}", name="grep", arguments=json.dumps({"pattern": a})),
                ToolResult(call_id=f"c{i}", output=f"notes/{a}.md: the {b} was found here\n" * 5),
                AssistantMessage(text=f"The grep found {b} in the {a} notes."),
            ])
            await session.append(sid, [UserMessage(text=f"And the {b} question?"),
                                       AssistantMessage(text=f"Settled: {b} {a}.")])
            if i % 10 == 0:
                await session.rename_session(sid, f"About the {a} {b}")


def bare(conn: sqlite3.Connection, expression: str) -> list[tuple]:
    return conn.execute(
        "SELECT rowid, snippet(lovia_search, 0, char(2), char(3), '…', 12) FROM lovia_search "
        "WHERE lovia_search MATCH ? ORDER BY rowid DESC LIMIT ?", (expression, LIMIT)).fetchall()


async def measure(path: Path, repeat: int) -> list[tuple[str, str, str, str, str, int]]:
    rows = []
    conn = sqlite3.connect(path)
    async with SQLiteSession(path, wal=True) as session, SQLiteSession(path) as on_thread:
        for name, query in QUERIES.items():
            expression = parse_query(query).fts()
            hits = await session.search(query, limit=LIMIT)  # warm all three
            assert await on_thread.search(query, limit=LIMIT) == hits
            bare(conn, expression)
            lovia_times, bare_times, thread_times = [], [], []
            for _ in range(repeat):
                start = time.perf_counter()
                await session.search(query, limit=LIMIT)
                middle = time.perf_counter()
                bare(conn, expression)
                end = time.perf_counter()
                await on_thread.search(query, limit=LIMIT)
                lovia_times.append(middle - start)
                bare_times.append(end - middle)
                thread_times.append(time.perf_counter() - end)
            rows.append((name, Figure.of(lovia_times).ms(), Figure.of(bare_times).ms(),
                         ratios(lovia_times, bare_times).times(), ratios(thread_times, bare_times).times(), len(hits)))
    conn.close()
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=30)
    parser.add_argument("--sessions", type=int, default=10_000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "search.db"
        started = time.perf_counter()
        asyncio.run(build(path, args.sessions))
        print(f"built {args.sessions} sessions in {time.perf_counter() - started:.1f} s "
              f"({path.stat().st_size / 1e6:.1f} MB)")
        rows = asyncio.run(measure(path, args.repeat))
    print_table(("query", "lovia search", "bare FTS5 query", "ratio", "ratio, wal=False", "hits"),
                [(*row[:-1], str(row[-1])) for row in rows])


if __name__ == "__main__":
    main()
