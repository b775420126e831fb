"""Store benchmarks, printed as ratios against raw sqlite3 doing the same work in the same run.

    python bench/stores.py [--appends 1000] [--repeat 3]

For each journal setting (the default, and wal=True) it measures:
- appends/s: segments of 10 entries appended one by one to one session;
- load: reading back the resulting 10,000-entry session as entries;
- snapshot cost: one checkpoint save adding one entry, at 10 vs 1,000 stored entries.
The baseline runs the same SQL on the same schema with plain sqlite3 (synchronously, no
thread hop) and json-encodes/decodes the same dicts, so a ratio is lovia's own overhead.
Each figure is the best of --repeat runs.
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

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from lovia import AssistantMessage, RunHead, RunSnapshot, SQLiteCheckpointer, SQLiteSession, ToolCall, ToolResult, UserMessage  # noqa: E402
from lovia.entries import entry_to_dict  # noqa: E402

ENTRIES_PER_SEGMENT = 10


def segment(i: int) -> list:
    entries = [UserMessage(text=f"question {i} " + "q" * 80)]
    for j in range(4):
        entries.append(ToolCall(call_id=f"c{i}-{j}", name="search", arguments='{"query": "atlas"}'))
        entries.append(ToolResult(call_id=f"c{i}-{j}", output="r" * 300, name="search"))
    entries.append(AssistantMessage(text="answer " + "a" * 200, agent="bot"))
    assert len(entries) == ENTRIES_PER_SEGMENT
    return entries


def raw_connect(path: Path, wal: bool) -> sqlite3.Connection:
    conn = sqlite3.connect(path, isolation_level=None, timeout=30)
    if wal:
        conn.execute("PRAGMA journal_mode = WAL")
    return conn


def prepared_file(directory: Path, name: str, wal: bool) -> Path:
    """A file with lovia's schema, created by lovia, for the raw baseline to write into."""
    path = directory / name

    async def create():
        async with SQLiteSession(path, wal=wal), SQLiteCheckpointer(path, wal=wal):
            pass

    asyncio.run(create())
    return path


# -- appends and load ----------------------------------------------------------------------


def raw_appends(path: Path, wal: bool, segments: list) -> float:
    conn = raw_connect(path, wal)
    start = time.perf_counter()
    for i, entries in enumerate(segments):
        rows = [(e.type, json.dumps(entry_to_dict(e), ensure_ascii=False, separators=(",", ":"))) for e in entries]
        now = time.time()
        conn.execute("BEGIN IMMEDIATE")
        if not conn.execute("SELECT 1 FROM lovia_segments WHERE session_id = ? AND run_id = ?", ("s", f"r{i}")).fetchone():
            seq = conn.execute(
                "INSERT INTO lovia_segments (session_id, run_id, meta, entry_count, appended_at) VALUES (?, ?, ?, ?, ?)",
                ("s", f"r{i}", "{}", len(rows), now)).lastrowid
            conn.executemany("INSERT INTO lovia_entries (segment_seq, session_id, type, data) VALUES (?, ?, ?, ?)",
                             [(seq, "s", t, d) for t, d in rows])
            conn.execute("INSERT INTO lovia_session_info (session_id, title, created_at, last_activity) VALUES (?, NULL, ?, ?) "
                         "ON CONFLICT (session_id) DO UPDATE SET last_activity = excluded.last_activity", ("s", now, now))
        conn.execute("COMMIT")
    elapsed = time.perf_counter() - start
    conn.close()
    return elapsed


def raw_load(path: Path, wal: bool) -> tuple[float, int]:
    conn = raw_connect(path, wal)
    start = time.perf_counter()
    conn.execute("BEGIN")
    rows = conn.execute("SELECT data FROM lovia_entries WHERE session_id = ? ORDER BY seq", ("s",)).fetchall()
    conn.execute("COMMIT")
    decoded = [json.loads(data) for (data,) in rows]
    elapsed = time.perf_counter() - start
    conn.close()
    return elapsed, len(decoded)


async def lovia_appends(path: Path, wal: bool, segments: list) -> float:
    async with SQLiteSession(path, wal=wal) as session:
        start = time.perf_counter()
        for i, entries in enumerate(segments):
            await session.append("s", entries, run_id=f"r{i}")
        return time.perf_counter() - start


async def lovia_load(path: Path, wal: bool) -> tuple[float, int]:
    async with SQLiteSession(path, wal=wal) as session:
        start = time.perf_counter()
        entries = await session.load("s")
        return time.perf_counter() - start, len(entries)


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
                         [(run_id, have + i, e.type, json.dumps(entry_to_dict(e), ensure_ascii=False, separators=(",", ":")))
                          for i, e in enumerate(entries[have:count])])
        conn.execute("INSERT INTO lovia_runs (run_id, status, session_id, updated_at, entry_count, head) VALUES (?, ?, ?, ?, ?, ?) "
                     "ON CONFLICT (run_id) DO UPDATE SET status = excluded.status, session_id = excluded.session_id, "
                     "updated_at = excluded.updated_at, entry_count = excluded.entry_count, head = excluded.head",
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
        snapshot = RunSnapshot(f"lovia-{base}", RunHead(agent="bot"), [UserMessage(text="x" * 200) for _ in range(base)])
        await checkpointer.save(snapshot)
        start = time.perf_counter()
        for _ in range(saves):
            snapshot.entries.append(UserMessage(text="x" * 200))
            snapshot.head.turn += 1
            await checkpointer.save(snapshot)
        return (time.perf_counter() - start) / saves


def best(values):
    return min(values)


def run(appends: int, repeat: int, saves: int) -> list[dict]:
    segments = [segment(i) for i in range(appends)]
    rows = []
    for wal in (False, True):
        label = "wal=True" if wal else "default"
        raw_a, lov_a, raw_l, lov_l = [], [], [], []
        snap = {("raw", 10): [], ("raw", 1000): [], ("lovia", 10): [], ("lovia", 1000): []}
        for attempt in range(repeat):
            with tempfile.TemporaryDirectory() as tmp:
                directory = Path(tmp)
                raw_path = prepared_file(directory, "raw.db", wal)
                lovia_path = directory / "lovia.db"
                # Alternate who goes first so neither always gets the warm cache.
                order = [("raw", raw_path), ("lovia", lovia_path)]
                if attempt % 2:
                    order.reverse()
                for who, path in order:
                    if who == "raw":
                        raw_a.append(raw_appends(path, wal, segments))
                        elapsed, n = raw_load(path, wal)
                        raw_l.append(elapsed)
                        for base in (10, 1000):
                            snap[("raw", base)].append(raw_snapshots(path, wal, base, saves))
                    else:
                        lov_a.append(asyncio.run(lovia_appends(path, wal, segments)))
                        elapsed, m = asyncio.run(lovia_load(path, wal))
                        lov_l.append(elapsed)
                        for base in (10, 1000):
                            snap[("lovia", base)].append(asyncio.run(lovia_snapshots(path, wal, base, saves)))
                assert n == m == appends * ENTRIES_PER_SEGMENT
        rows.append({
            "setting": label,
            "raw appends/s": appends / best(raw_a),
            "lovia appends/s": appends / best(lov_a),
            "append ratio": best(lov_a) / best(raw_a),
            "raw load ms": best(raw_l) * 1000,
            "lovia load ms": best(lov_l) * 1000,
            "load ratio": best(lov_l) / best(raw_l),
            "raw snapshot ms @10": best(snap[("raw", 10)]) * 1000,
            "lovia snapshot ms @10": best(snap[("lovia", 10)]) * 1000,
            "lovia snapshot ms @1000": best(snap[("lovia", 1000)]) * 1000,
            "snapshot ratio vs raw": best(snap[("lovia", 10)]) / best(snap[("raw", 10)]),
            "snapshot 1000/10": best(snap[("lovia", 1000)]) / best(snap[("lovia", 10)]),
        })
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--appends", type=int, default=1000, help="segments of 10 entries to append (default 1000)")
    parser.add_argument("--saves", type=int, default=200, help="checkpoint saves measured per size (default 200)")
    parser.add_argument("--repeat", type=int, default=3, help="runs to take the best of (default 3)")
    args = parser.parse_args()
    rows = run(args.appends, args.repeat, args.saves)
    print(f"lovia store benchmark: {args.appends} appends of {ENTRIES_PER_SEGMENT} entries, "
          f"load of {args.appends * ENTRIES_PER_SEGMENT} entries, {args.saves} snapshot saves; best of {args.repeat}")
    print("targets: append and load ratio <= 1.5 (vs raw sqlite3), snapshot 1000/10 <= 1.3\n")
    print("| setting | appends/s lovia (raw) | append ratio | load ms lovia (raw) | load ratio "
          "| snapshot ms @10 lovia (raw) | snapshot ms @1000 | snapshot ratio vs raw | snapshot 1000/10 |")
    print("|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['setting']} | {r['lovia appends/s']:.0f} ({r['raw appends/s']:.0f}) | {r['append ratio']:.2f}x "
              f"| {r['lovia load ms']:.1f} ({r['raw load ms']:.1f}) | {r['load ratio']:.2f}x "
              f"| {r['lovia snapshot ms @10']:.3f} ({r['raw snapshot ms @10']:.3f}) | {r['lovia snapshot ms @1000']:.3f} "
              f"| {r['snapshot ratio vs raw']:.2f}x | {r['snapshot 1000/10']:.2f}x |")


if __name__ == "__main__":
    main()
