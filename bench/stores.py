"""Store benchmarks, printed as ratios against raw sqlite3 doing the same work in the same run.

    python bench/stores.py [--appends 1000] [--repeat 5] [--loads 5] [--saves 200]

For each journal setting (the default, and wal=True), in a fresh pair of files per repetition:

- appends: runs of 10 entries appended one by one to one session. Baseline: raw sqlite3
  (synchronous, no thread hop) running lovia's SQL for an append (schema 3: the run's row, its
  entries as one JSON array made by ``json.dumps``, the session's last activity) on a file of
  lovia's schema, one transaction per run.
- load: ``load()`` of the resulting 10,000-entry session, as typed entries. Baseline: raw
  sqlite3 reading the same entries stored one JSON array per run (one row per run, a table of
  its own in the same file, the same bytes lovia stores) and decoding them with ``json.loads``
  into dicts. ``--loads`` back-to-back pairs per repetition, the order alternating.
- page: ``read_page`` of 200 entries at the start and at the end of that session, against the
  same page of a 10-run session (the target: a page costs with the page, not the session).
- snapshot cost: one checkpoint save adding one entry, at 10 vs 1,000 stored entries, and
  against raw sqlite3 running the same SQL.

Each ratio is taken per repetition (or pair), lovia and its baseline back to back, and shown as
the median with the lowest and highest (bench/_stats.py).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sqlite3
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from _stats import Figure, print_table, ratios  # noqa: E402

from lovia import (  # noqa: E402
    AssistantMessage,
    RunHead,
    RunSnapshot,
    SQLiteCheckpointer,
    SQLiteSession,
    ToolCall,
    ToolResult,
    UserMessage,
)
from lovia.entries import entry_to_dict  # noqa: E402

ENTRIES_PER_RUN = 10
PAGE = 200


def run_entries(i: int) -> list:
    entries = [UserMessage(text=f"question {i} " + "q" * 80)]
    for j in range(4):
        entries.append(ToolCall(call_id=f"c{i}-{j}", name="search", arguments='{"query": "atlas"}'))
        entries.append(ToolResult(call_id=f"c{i}-{j}", output="r" * 300, name="search"))
    entries.append(AssistantMessage(text="answer " + "a" * 200, agent="bot"))
    assert len(entries) == ENTRIES_PER_RUN
    return entries


def json_array(entries: list) -> str:
    return json.dumps([entry_to_dict(e) for e in entries], ensure_ascii=False, separators=(",", ":"))


def raw_connect(path: Path, wal: bool) -> sqlite3.Connection:
    conn = sqlite3.connect(path, isolation_level=None, timeout=30)
    if wal:
        conn.execute("PRAGMA journal_mode = WAL")
    return conn


def prepared_file(path: Path, wal: bool) -> Path:
    """A file with lovia's schema, created by lovia, for the raw baseline to write into."""

    async def create():
        async with SQLiteSession(path, wal=wal), SQLiteCheckpointer(path, wal=wal):
            pass

    asyncio.run(create())
    return path


# -- appends -------------------------------------------------------------------------------


def raw_appends(path: Path, wal: bool, runs: list) -> float:
    """lovia's append, as SQLiteSession.append runs it (schema 3), with plain sqlite3."""
    conn = raw_connect(path, wal)
    start = time.perf_counter()
    for i, entries in enumerate(runs):
        kinds, text = " ".join(e.type for e in entries), json_array(entries)
        now = time.time()
        conn.execute("BEGIN IMMEDIATE")
        inserted = conn.execute(
            "INSERT INTO lovia_segments (session_id, run_id, meta, entry_count, appended_at, start) "
            "SELECT ?, ?, ?, ?, ?, COALESCE((SELECT start + entry_count FROM lovia_segments WHERE session_id = ? "
            "ORDER BY start DESC, seq DESC LIMIT 1), 0) WHERE true ON CONFLICT (session_id, run_id) DO NOTHING",
            ("s", f"r{i}", "{}", len(entries), now, "s"))
        if inserted.rowcount:
            conn.execute("INSERT INTO lovia_segment_entries (segment_seq, kinds, entries) VALUES (?, ?, ?)",
                         (inserted.lastrowid, kinds, text))
            conn.execute("INSERT INTO lovia_session_info (session_id, title, created_at, last_activity) "
                         "VALUES (?, NULL, ?, ?) ON CONFLICT (session_id) DO UPDATE SET "
                         "last_activity = excluded.last_activity", ("s", now, now))
        conn.execute("COMMIT")
    elapsed = time.perf_counter() - start
    conn.close()
    return elapsed


async def lovia_appends(path: Path, wal: bool, runs: list) -> float:
    async with SQLiteSession(path, wal=wal) as session:
        await session.load("warm-up")  # opened and checked before the clock starts
        start = time.perf_counter()
        for i, entries in enumerate(runs):
            await session.append("s", entries, run_id=f"r{i}")
        return time.perf_counter() - start


# -- load and pages ------------------------------------------------------------------------


def store_baseline_runs(path: Path, runs: list) -> None:
    """The baseline's layout: one row per run holding its entries as one JSON array."""
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE IF NOT EXISTS baseline_runs "
                     "(seq INTEGER PRIMARY KEY, session_id TEXT NOT NULL, entries TEXT NOT NULL)")
        conn.execute("CREATE INDEX IF NOT EXISTS baseline_runs_by_session ON baseline_runs (session_id, seq)")
        conn.executemany("INSERT INTO baseline_runs (session_id, entries) VALUES (?, ?)",
                         [("s", json_array(entries)) for entries in runs])


def raw_load(conn: sqlite3.Connection) -> tuple[float, int]:
    start = time.perf_counter()
    conn.execute("BEGIN")
    rows = conn.execute("SELECT entries FROM baseline_runs WHERE session_id = ? ORDER BY seq", ("s",)).fetchall()
    conn.execute("COMMIT")
    decoded = [item for (text,) in rows for item in json.loads(text)]
    return time.perf_counter() - start, len(decoded)


async def paired_loads(path: Path, wal: bool, pairs: int, expected: int) -> tuple[list[float], list[float]]:
    """``pairs`` loads by lovia and by the baseline, back to back, alternating who goes first."""
    conn = raw_connect(path, wal)
    lovia_times: list[float] = []
    raw_times: list[float] = []
    async with SQLiteSession(path, wal=wal) as session:
        await session.load("warm-up")
        for pair in range(pairs):
            for who in (("raw", "lovia") if pair % 2 else ("lovia", "raw")):
                if who == "raw":
                    elapsed, n = raw_load(conn)
                    raw_times.append(elapsed)
                else:
                    start = time.perf_counter()
                    n = len(await session.load("s"))
                    lovia_times.append(time.perf_counter() - start)
                assert n == expected, (who, n)
    conn.close()
    return lovia_times, raw_times


async def append_short_session(path: Path, wal: bool, runs: list) -> None:
    async with SQLiteSession(path, wal=wal) as session:
        for i, entries in enumerate(runs):
            await session.append("short", entries, run_id=f"short-{i}")


async def page_times(path: Path, wal: bool, pairs: int) -> dict[str, list[float]]:
    """read_page of PAGE entries at both ends of the long session ``s`` and of the short session ``short``."""
    times: dict[str, list[float]] = {"start": [], "end": [], "short": []}
    async with SQLiteSession(path, wal=wal) as session:
        await session.load("warm-up")
        for _ in range(pairs):
            for name, call in (("start", lambda: session.read_page("s", start=0, limit=PAGE)),
                               ("end", lambda: session.read_page("s", limit=PAGE)),
                               ("short", lambda: session.read_page("short", start=0, limit=PAGE))):
                start = time.perf_counter()
                page = await call()
                times[name].append(time.perf_counter() - start)
                assert len(page.entries) == PAGE
    return times


# -- checkpoint snapshots ------------------------------------------------------------------


def raw_snapshots(path: Path, wal: bool, base: int, saves: int) -> float:
    """Per-save seconds of adding one entry + head to a run that already holds ``base``."""
    conn = raw_connect(path, wal)
    run_id = f"raw-{base}"
    head = RunHead(agent="bot")
    entries = [UserMessage(text="x" * 200) for _ in range(base + saves)]

    def save(count: int) -> None:
        head_json = json.dumps(head.to_dict(), separators=(",", ":"))
        conn.execute("BEGIN IMMEDIATE")
        row = conn.execute("SELECT entry_count FROM lovia_runs WHERE run_id = ?", (run_id,)).fetchone()
        have = row[0] if row else 0
        conn.executemany("INSERT INTO lovia_run_entries (run_id, position, type, data) VALUES (?, ?, ?, ?)",
                         [(run_id, have + i, e.type, json.dumps(entry_to_dict(e), ensure_ascii=False,
                                                                  separators=(",", ":")))
                          for i, e in enumerate(entries[have:count])])
        conn.execute("INSERT INTO lovia_runs (run_id, status, session_id, updated_at, entry_count, head) "
                     "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (run_id) DO UPDATE SET status = excluded.status, "
                     "session_id = excluded.session_id, updated_at = excluded.updated_at, "
                     "entry_count = excluded.entry_count, head = excluded.head",
                     (run_id, head.status, head.session_id, head.updated_at, count, head_json))
        conn.execute("COMMIT")

    save(base)
    start = time.perf_counter()
    for n in range(base + 1, base + saves + 1):
        save(n)
    elapsed = (time.perf_counter() - start) / saves
    conn.close()
    return elapsed


async def lovia_snapshots(path: Path, wal: bool, base: int, saves: int) -> float:
    async with SQLiteCheckpointer(path, wal=wal) as checkpointer:
        entries = [UserMessage(text="x" * 200) for _ in range(base)]
        snapshot = RunSnapshot(f"lovia-{base}", RunHead(agent="bot"), entries)
        await checkpointer.save(snapshot)
        start = time.perf_counter()
        for _ in range(saves):
            snapshot.entries.append(UserMessage(text="x" * 200))
            snapshot.head.turn += 1
            await checkpointer.save(snapshot)
        return (time.perf_counter() - start) / saves


# -- the run -------------------------------------------------------------------------------


def measure(wal: bool, appends: int, repeat: int, loads: int, saves: int) -> dict[str, list[float]]:
    runs = [run_entries(i) for i in range(appends)]
    samples: dict[str, list[float]] = {}
    for attempt in range(repeat):
        with tempfile.TemporaryDirectory() as tmp:
            repetition(Path(tmp), wal, runs, loads, saves, attempt % 2 == 1, samples)
    return samples


def repetition(directory: Path, wal: bool, runs: list, loads: int, saves: int, raw_first: bool,
               samples: dict[str, list[float]]) -> None:
    """One repetition on fresh files; ``raw_first`` alternates who goes first, so neither always gets the warm cache."""
    raw_path = prepared_file(directory / "raw.db", wal)
    lovia_path = directory / "lovia.db"

    def in_turn(steps: list[tuple[str, Callable[[], float]]]) -> None:
        for name, step in reversed(steps) if raw_first else steps:
            samples.setdefault(name, []).append(step())

    in_turn([("lovia appends", lambda: asyncio.run(lovia_appends(lovia_path, wal, runs))),
             ("raw appends", lambda: raw_appends(raw_path, wal, runs))])
    asyncio.run(append_short_session(lovia_path, wal, runs[:PAGE // ENTRIES_PER_RUN]))
    store_baseline_runs(lovia_path, runs)
    lovia_loads, raw_loads = asyncio.run(paired_loads(lovia_path, wal, loads, len(runs) * ENTRIES_PER_RUN))
    samples.setdefault("lovia load", []).extend(lovia_loads)
    samples.setdefault("raw load", []).extend(raw_loads)
    for name, values in asyncio.run(page_times(lovia_path, wal, loads)).items():
        samples.setdefault(f"page {name}", []).extend(values)
    for base in (10, 1000):
        in_turn([(f"lovia snapshot {base}", lambda b=base: asyncio.run(lovia_snapshots(lovia_path, wal, b, saves))),
                 (f"raw snapshot {base}", lambda b=base: raw_snapshots(raw_path, wal, b, saves))])


def ms(figure: Figure) -> str:
    """Milliseconds with the spread, to the hundredth: an append is about a millisecond."""
    return f"{figure.median * 1000:.2f} ({figure.low * 1000:.2f}-{figure.high * 1000:.2f})"


def rows(appends: int = 1000, repeat: int = 5, loads: int = 5, saves: int = 200) -> list[tuple[str, ...]]:
    """One table row per journal setting: each figure a median with its spread."""
    table = []
    for wal in (False, True):
        s = measure(wal, appends, repeat, loads, saves)
        per_run = [t / appends for t in s["lovia appends"]], [t / appends for t in s["raw appends"]]
        table.append((
            "wal=True" if wal else "default",
            f"{ms(Figure.of(per_run[0]))} vs {ms(Figure.of(per_run[1]))}",
            ratios(s["lovia appends"], s["raw appends"]).times(),
            f"{ms(Figure.of(s['lovia load']))} vs {ms(Figure.of(s['raw load']))}",
            ratios(s["lovia load"], s["raw load"]).times(),
            f"{ms(Figure.of(s['page start']))}, {ms(Figure.of(s['page end']))} vs {ms(Figure.of(s['page short']))}",
            f"{ratios(s['page start'], s['page short']).times()}, {ratios(s['page end'], s['page short']).times()}",
            f"{ms(Figure.of(s['lovia snapshot 10']))} vs {ms(Figure.of(s['raw snapshot 10']))}",
            ratios(s["lovia snapshot 10"], s["raw snapshot 10"]).times(),
            ratios(s["lovia snapshot 1000"], s["lovia snapshot 10"]).times(),
        ))
    return table


def header(entries: int) -> tuple[str, ...]:
    return ("setting", "append, ms per run: lovia vs raw", "append ratio",
            f"load {entries:,} entries, ms: lovia vs raw", "load ratio",
            f"page of {PAGE} at start, end, ms: vs a {PAGE}-entry session", "page ratio start, end",
            "snapshot @10, ms: lovia vs raw", "snapshot ratio", "snapshot 1000/10")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--appends", type=int, default=1000, help="runs of 10 entries to append (default 1000)")
    parser.add_argument("--repeat", type=int, default=5, help="repetitions, each on fresh files (default 5)")
    parser.add_argument("--loads", type=int, default=5, help="load and page pairs per repetition (default 5)")
    parser.add_argument("--saves", type=int, default=200, help="checkpoint saves measured per size (default 200)")
    args = parser.parse_args()
    table = rows(args.appends, args.repeat, args.loads, args.saves)
    print(f"lovia store benchmark: {args.appends} appends of {ENTRIES_PER_RUN} entries, load of "
          f"{args.appends * ENTRIES_PER_RUN} entries, {args.saves} snapshot saves; medians of {args.repeat} "
          f"repetitions ({args.repeat * args.loads} load pairs) with the lowest and highest")
    print("targets: load ratio <= 1.5 (vs raw sqlite3 reading one JSON array per run and json.loads), append "
          "ratio <= 1.3 (vs raw sqlite3 running lovia's SQL), page ratio ~1, snapshot 1000/10 <= 1.3\n")
    print_table(header(args.appends * ENTRIES_PER_RUN), table)


if __name__ == "__main__":
    main()
