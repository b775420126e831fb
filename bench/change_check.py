"""What the terminal UI's once-a-second change check costs, against a bare ``PRAGMA data_version``.

    python bench/change_check.py [--calls 2000] [--repeat 7]

On one WAL file holding lovia's schema it times, per call:
- raw: ``PRAGMA data_version`` on a plain sqlite3 connection, on the calling thread;
- store: ``SQLiteSession.outside_change_token()``, the same statement on the store's worker thread;
- backend: ``ChatBackend.changed_elsewhere()``, which asks both stores (two statements, two hops).
Each run times ``--calls`` calls of each; the figures are the median of ``--repeat`` runs, with
the lowest and highest run beside it, and the ratios are against raw in the same run.
"""

from __future__ import annotations

import argparse
import asyncio
import sqlite3
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from lovia import Agent, DemoModel, SQLiteCheckpointer, SQLiteSession
from lovia.tui.backend import ChatBackend


def raw_checks(path: Path, calls: int) -> float:
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        start = time.perf_counter()
        for _ in range(calls):
            conn.execute("PRAGMA data_version").fetchone()
        return (time.perf_counter() - start) / calls
    finally:
        conn.close()


async def store_checks(session: SQLiteSession, calls: int) -> float:
    start = time.perf_counter()
    for _ in range(calls):
        await session.outside_change_token()
    return (time.perf_counter() - start) / calls


async def backend_checks(backend: ChatBackend, calls: int) -> float:
    start = time.perf_counter()
    for _ in range(calls):
        await backend.changed_elsewhere()
    return (time.perf_counter() - start) / calls


async def one_run(path: Path, calls: int) -> dict[str, float]:
    session, checkpointer = SQLiteSession(path, wal=True), SQLiteCheckpointer(path, wal=True)
    backend = ChatBackend(session, checkpointer, Agent(name="bench", model=DemoModel()))
    try:
        await session.open()
        await checkpointer.open()
        return {"raw": raw_checks(path, calls), "store": await store_checks(session, calls),
                "backend": await backend_checks(backend, calls)}
    finally:
        await backend.close()


def spread(values: list[float], scale: float = 1.0, unit: str = "") -> str:
    return (f"{statistics.median(values) * scale:.2f}{unit} "
            f"({min(values) * scale:.2f}-{max(values) * scale:.2f})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()
    runs = []
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "lovia.db"
        for _ in range(args.repeat):
            runs.append(asyncio.run(one_run(path, args.calls)))
    us = 1e6
    print(f"{args.calls} calls per run, {args.repeat} runs: median (lowest-highest run)\n")
    print("| check | us per call | ratio vs raw |")
    print("|---|---|---|")
    print(f"| raw PRAGMA data_version | {spread([r['raw'] for r in runs], us)} | 1 |")
    for key, label in [("store", "SQLiteSession.outside_change_token"), ("backend", "ChatBackend.changed_elsewhere")]:
        print(f"| {label} | {spread([r[key] for r in runs], us)} "
              f"| {spread([r[key] / r['raw'] for r in runs], unit='x')} |")


if __name__ == "__main__":
    main()
