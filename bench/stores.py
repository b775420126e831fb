"""Store benchmarks, printed as ratios against raw sqlite3 and raw psycopg doing the same work in the same run.

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

Then the stores side by side, SQLite files (both journal settings) and PostgreSQL, in a fresh
pair of files and a fresh pair of databases per repetition:

- appends/s by 1 writer (``--appends`` runs to one session) and by 8 concurrent writers (the
  same number of runs in all, each writer appending to a session of its own). The 8 writers are
  8 separate processes, each with its own store object (so its own connection pool, or its own
  SQLite connection), as workers on several hosts are: 8 pool connections in one process would
  share one event loop and one interpreter lock, and measure this process rather than the
  store. The processes are started once for the whole run and wait at a barrier after opening
  their store, so neither start-up nor connecting is timed; the time is from the first writer's
  start to the last one's finish. Baselines: raw sqlite3 as above; for PostgreSQL raw psycopg
  (its ``AsyncConnection``, the driver lovia uses, one connection, no pool) running the
  statements ``PostgresSession.append`` runs to store a run and tell others of it, one explicit
  transaction per run, so the ratio is lovia's own overhead (its pool, its checks and encoder,
  any statement beyond those). With 1 writer, the same statements through synchronous psycopg
  are timed too, to show what the async driver itself costs. With the writers, the CPU time
  the writer processes spent per append (the clients', not the server's): on a machine with
  fewer cores than writers, that is what the throughput ends up bounded by.
- PostgreSQL load of the 10,000-entry session: ``PostgresSession.load`` against raw psycopg
  (async) selecting the same rows of lovia's table (``REPEATABLE READ READ ONLY``, as lovia
  reads) and decoding them with ``json.loads``; and ``read_page`` of the last 200 entries against the same
  page of a 200-entry session. (The SQLite files' load and page are the first table's.)

The PostgreSQL server: the one of ``LOVIA_BENCH_POSTGRES_URL`` (a role that may create and drop
databases: the bench makes its own, ``lovia_t...``, and drops them), else a private cluster
started with tests/postgres_server.py (``initdb`` defaults, so ``fsync`` and
``synchronous_commit`` on, over TCP on 127.0.0.1). When neither can be had, the bench says why
and prints the SQLite rows alone.

Each ratio is taken per repetition (or pair), lovia and its baseline back to back, and shown as
the median with the lowest and highest (bench/_stats.py).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import math
import multiprocessing
import os
import sqlite3
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass
from pathlib import Path
from typing import Any

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
from lovia.stores._sqlite_db import BUSY_TIMEOUT_SECONDS, WAL_BUSY_TIMEOUT_SECONDS  # noqa: E402
from tests import postgres_server  # noqa: E402

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
    """A plain connection, waiting for another's lock as long as lovia's store does."""
    timeout = WAL_BUSY_TIMEOUT_SECONDS if wal else BUSY_TIMEOUT_SECONDS
    conn = sqlite3.connect(path, isolation_level=None, timeout=timeout)
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


Ready = Callable[[], object] | None
"""Called once a writer is open and warm, just before its clock starts (the writers' barrier)."""


def clock_starts(ready: Ready) -> float:
    """Wait for ``ready`` (if any), then read the clock every writer process shares."""
    if ready is not None:
        ready()
    return time.monotonic()


# -- appends -------------------------------------------------------------------------------


def raw_appends(path: Path, wal: bool, runs: list, session_id: str = "s", ready: Ready = None) -> float:
    """lovia's append, as SQLiteSession.append runs it (schema 3), with plain sqlite3."""
    conn = raw_connect(path, wal)
    start = clock_starts(ready)
    for i, entries in enumerate(runs):
        kinds, text = " ".join(e.type for e in entries), json_array(entries)
        now = time.time()
        conn.execute("BEGIN IMMEDIATE")
        inserted = conn.execute(
            "INSERT INTO lovia_segments (session_id, run_id, meta, entry_count, appended_at, start) "
            "SELECT ?, ?, ?, ?, ?, COALESCE((SELECT start + entry_count FROM lovia_segments WHERE session_id = ? "
            "ORDER BY start DESC, seq DESC LIMIT 1), 0) WHERE true ON CONFLICT (session_id, run_id) DO NOTHING",
            (session_id, f"{session_id}-r{i}", "{}", len(entries), now, session_id))
        if inserted.rowcount:
            conn.execute("INSERT INTO lovia_segment_entries (segment_seq, kinds, entries) VALUES (?, ?, ?)",
                         (inserted.lastrowid, kinds, text))
            conn.execute("INSERT INTO lovia_session_info (session_id, title, created_at, last_activity) "
                         "VALUES (?, NULL, ?, ?) ON CONFLICT (session_id) DO UPDATE SET "
                         "last_activity = excluded.last_activity", (session_id, now, now))
        conn.execute("COMMIT")
    elapsed = time.monotonic() - start
    conn.close()
    return elapsed


async def lovia_appends(path: Path, wal: bool, runs: list, session_id: str = "s", ready: Ready = None) -> float:
    async with SQLiteSession(path, wal=wal) as session:
        await session.load("warm-up")  # opened and checked before the clock starts
        start = clock_starts(ready)
        for i, entries in enumerate(runs):
            await session.append(session_id, entries, run_id=f"{session_id}-r{i}")
        return time.monotonic() - start


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


# -- PostgreSQL ----------------------------------------------------------------------------
#
# The raw baseline is psycopg's AsyncConnection (the driver lovia uses, as lovia must be async)
# on one connection, no pool, running the statements PostgresSession.append runs (the same SQL,
# the same parameters, the entries encoded as lovia encodes them), one explicit transaction per
# run as lovia's are: the ratio is what lovia itself adds (its pool, its checks, its encoder,
# the statements beyond these). The same with synchronous psycopg is measured once beside it, to
# show what the async driver itself costs.

PG_SESSION_LOCK_CLASS = 0x6C6F7669  # lovia.stores._postgres_session.SESSION_LOCK_CLASS
PG_APPEND_SQL = (
    "SELECT pg_advisory_xact_lock(%(lock)s, hashtext(%(sid)s))",
    "INSERT INTO lovia_segments (session_id, run_id, start, entry_count, meta, appended_at, kinds, entries) "
    "VALUES (%(sid)s, %(run)s, COALESCE((SELECT start + entry_count FROM lovia_segments WHERE session_id = %(sid)s "
    "ORDER BY start DESC, seq DESC LIMIT 1), 0), %(count)s, %(meta)s, %(now)s, %(kinds)s, %(entries)s) "
    "ON CONFLICT (session_id, run_id) DO NOTHING RETURNING seq",
    "INSERT INTO lovia_session_info (session_id, title, created_at, last_activity) VALUES (%(sid)s, NULL, %(now)s, "
    "%(now)s) ON CONFLICT (session_id) DO UPDATE SET last_activity = excluded.last_activity",
    "SELECT pg_notify('lovia_session', 'bench')",  # lovia tells other processes of every write
)
PG_LOAD_SQL = "SELECT entries FROM lovia_segments WHERE session_id = %s ORDER BY start, seq"


def pg_append_params(session_id: str, i: int, entries: list) -> dict[str, Any]:
    return {"lock": PG_SESSION_LOCK_CLASS, "sid": session_id, "run": f"{session_id}-r{i}", "count": len(entries),
            "meta": "{}", "now": time.time(), "kinds": " ".join(e.type for e in entries),
            "entries": json_array(entries)}


async def raw_pg_appends(url: str, runs: list, session_id: str = "s", ready: Ready = None) -> float:
    """PostgresSession.append's statements through a plain psycopg AsyncConnection, one transaction per run."""
    import psycopg

    lock, insert, *rest = PG_APPEND_SQL
    async with await psycopg.AsyncConnection.connect(url, autocommit=True) as conn:
        await conn.execute("SELECT 1")  # connected and warm before the clock starts
        start = clock_starts(ready)
        for i, entries in enumerate(runs):
            params = pg_append_params(session_id, i, entries)
            await conn.execute("BEGIN")
            await conn.execute(lock, params)
            if await (await conn.execute(insert, params)).fetchone() is not None:  # not a replay
                for statement in rest:
                    await conn.execute(statement, params)
            await conn.execute("COMMIT")
        return time.monotonic() - start


def sync_pg_appends(url: str, runs: list, session_id: str = "s") -> float:
    """The same through synchronous psycopg: what the driver costs without an event loop."""
    import psycopg

    lock, insert, *rest = PG_APPEND_SQL
    with psycopg.connect(url) as conn:
        conn.execute("SELECT 1")
        conn.commit()
        start = time.monotonic()
        for i, entries in enumerate(runs):
            params = pg_append_params(session_id, i, entries)
            with conn.cursor() as cursor:
                cursor.execute(lock, params)
                if cursor.execute(insert, params).fetchone() is not None:
                    for statement in rest:
                        cursor.execute(statement, params)
            conn.commit()
        return time.monotonic() - start


async def lovia_pg_appends(url: str, runs: list, session_id: str = "s", ready: Ready = None) -> float:
    from lovia.stores.postgres import PostgresSession

    async with PostgresSession(url) as session:
        await session.load("warm-up")  # pool open, schema checked, before the clock starts
        start = clock_starts(ready)
        for i, entries in enumerate(runs):
            await session.append(session_id, entries, run_id=f"{session_id}-r{i}")
        return time.monotonic() - start


async def raw_pg_load(conn: Any, session_id: str) -> tuple[float, int]:
    """The session's rows as lovia reads them (in a read-only snapshot), decoded by ``json.loads``."""
    start = time.perf_counter()
    await conn.execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
    rows = await (await conn.execute(PG_LOAD_SQL, (session_id,))).fetchall()
    await conn.execute("COMMIT")
    decoded = [item for (text,) in rows for item in json.loads(text)]
    return time.perf_counter() - start, len(decoded)


async def paired_pg_loads(url: str, pairs: int,
                          expected: int) -> tuple[list[float], list[float], dict[str, list[float]]]:
    """Loads by lovia and by raw psycopg back to back (order alternating), then lovia's last pages."""
    import psycopg

    from lovia.stores.postgres import PostgresSession

    lovia_times: list[float] = []
    raw_times: list[float] = []
    pages: dict[str, list[float]] = {"end": [], "short": []}
    async with await psycopg.AsyncConnection.connect(url, autocommit=True) as conn, PostgresSession(url) as session:
        await session.load("warm-up")
        for pair in range(pairs):
            for who in (("raw", "lovia") if pair % 2 else ("lovia", "raw")):
                if who == "raw":
                    elapsed, n = await raw_pg_load(conn, "s")
                    raw_times.append(elapsed)
                else:
                    start = time.perf_counter()
                    n = len(await session.load("s"))
                    lovia_times.append(time.perf_counter() - start)
                assert n == expected, (who, n)
        if hasattr(session, "read_page"):
            for _ in range(pairs):
                for name, sid in (("end", "s"), ("short", "short")):
                    start = time.perf_counter()
                    page = await session.read_page(sid, limit=PAGE)
                    pages[name].append(time.perf_counter() - start)
                    assert len(page.entries) == PAGE
    return lovia_times, raw_times, pages


async def pg_short_session(url: str, runs: list) -> None:
    from lovia.stores.postgres import PostgresSession

    async with PostgresSession(url) as session:
        for i, entries in enumerate(runs):
            await session.append("short", entries, run_id=f"short-{i}")


async def pg_prepare(url: str) -> None:
    """Create lovia's session schema in a fresh database, by lovia, for the raw baseline to write into."""
    from lovia.stores.postgres import PostgresSession

    async with PostgresSession(url) as session:
        await session.load("warm-up")


class PostgresDatabases:
    """Fresh databases on one server, one per use, dropped when done."""

    def __init__(self, server: Any) -> None:
        self.server = server
        self.names: list[str] = []

    def fresh(self) -> str:
        name = postgres_server.create_database(self.server.admin_url)
        self.names.append(name)
        return self.server.url(name)

    def drop_all(self) -> None:
        while self.names:
            postgres_server.drop_database(self.server.admin_url, self.names.pop())


@contextlib.contextmanager
def postgres() -> Iterator[tuple[Any, str]]:
    """``(server, where)``: the server named by LOVIA_BENCH_POSTGRES_URL, else a private cluster.

    ``server`` is None when neither can be had, and ``where`` then says why.
    """
    url = os.environ.get("LOVIA_BENCH_POSTGRES_URL")
    try:
        from lovia.stores.postgres import PostgresSession  # noqa: F401
    except ImportError as error:
        yield None, f"lovia's PostgreSQL store cannot be imported ({error}; pip install -e '.[postgres]')"
        return
    if url:
        yield postgres_server.PostgresServer(url), "the server of LOVIA_BENCH_POSTGRES_URL"
        return
    try:
        cluster = postgres_server.private_cluster()
        server = cluster.__enter__()
    except RuntimeError as error:
        yield None, str(error)
        return
    try:
        yield server, "a private cluster on 127.0.0.1 (initdb defaults: fsync on, synchronous_commit on)"
    finally:
        cluster.__exit__(None, None, None)


# -- concurrent writers: separate processes ------------------------------------------------
#
# Workers on several hosts are separate processes, each with its own store object (so its own
# pool or connection), writing sessions of their own to one database. Here they are WRITERS
# processes on this machine, kept for the whole run (started once, so no start-up is timed),
# each opening its store, then waiting at a barrier so all start appending at once. The figure
# is all their appends over the time from the first start to the last finish.

WRITERS = 8
_barrier: Any = None


def _keep_barrier(barrier: Any) -> None:
    global _barrier
    _barrier = barrier


def _at_barrier() -> None:
    _barrier.wait(timeout=300)


def append_runs(store: str, who: str, target: str, runs: list, session_id: str = "s", ready: Ready = None) -> float:
    """Seconds for ``who`` ("lovia" or "raw") to append ``runs`` to ``session_id`` of ``store`` at ``target``."""
    if store == "postgres":
        appends = raw_pg_appends if who == "raw" else lovia_pg_appends
        return asyncio.run(appends(target, runs, session_id, ready))
    wal = store == "sqlite wal"
    if who == "raw":
        return raw_appends(Path(target), wal, runs, session_id, ready)
    return asyncio.run(lovia_appends(Path(target), wal, runs, session_id, ready))


def one_writer(store: str, who: str, target: str, session_id: str, count: int) -> tuple[float, float, float]:
    """In a writer process: append ``count`` runs to ``session_id``.

    Returns its start and end on the clock the processes share, and the CPU time this process
    (the client: lovia or the raw driver, not the server) spent appending.
    """
    cpu_start = 0.0

    def ready() -> None:
        nonlocal cpu_start
        _at_barrier()
        cpu_start = time.process_time()

    elapsed = append_runs(store, who, target, [run_entries(i) for i in range(count)], session_id, ready)
    end, cpu = time.monotonic(), time.process_time() - cpu_start
    return end - elapsed, end, cpu


@dataclass
class Writers:
    """WRITERS processes, started once (spawned: no event loop or connection inherited), and their barrier."""

    pool: ProcessPoolExecutor
    barrier: Any

    @classmethod
    def start(cls) -> Writers:
        context = multiprocessing.get_context("spawn")
        barrier = context.Barrier(WRITERS)
        return cls(ProcessPoolExecutor(WRITERS, mp_context=context, initializer=_keep_barrier, initargs=(barrier,)),
                   barrier)

    def appends(self, store: str, who: str, target: str, appends: int) -> tuple[float, float]:
        """Seconds for the writers to append ``appends`` runs in all, each to a session of its own,
        and the writers' CPU seconds per append.

        A writer that fails breaks the barrier, so the others stop waiting, and the failure is raised.
        """
        each = max(1, appends // WRITERS)
        futures = [self.pool.submit(one_writer, store, who, target, f"w{n}", each) for n in range(WRITERS)]
        try:
            for future in as_completed(futures, timeout=900):
                if future.exception() is not None:
                    self.barrier.abort()
            spans = [future.result() for future in futures]
        finally:
            self.barrier.reset()
        seconds = max(end for _, end, _ in spans) - min(start for start, _, _ in spans)
        return seconds * appends / (each * WRITERS), sum(cpu for _, _, cpu in spans) / (each * WRITERS)

    def close(self) -> None:
        self.pool.shutdown(cancel_futures=True)


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


def sqlite_row(wal: bool, s: dict[str, list[float]], appends: int) -> tuple[str, ...]:
    """The first table's row for one journal setting: each figure a median with its spread."""
    per_run = [t / appends for t in s["lovia appends"]], [t / appends for t in s["raw appends"]]
    return (
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
    )


def rows(appends: int = 1000, repeat: int = 5, loads: int = 5, saves: int = 200) -> list[tuple[str, ...]]:
    """One table row per journal setting: each figure a median with its spread."""
    return [sqlite_row(wal, measure(wal, appends, repeat, loads, saves), appends) for wal in (False, True)]


# -- the stores side by side ---------------------------------------------------------------

SQLITE_STORES = ("sqlite", "sqlite wal")


def measure_stores(writers: Writers, databases: PostgresDatabases | None, appends: int, repeat: int,
                   loads: int, failures: list[str]) -> tuple[dict[str, dict[str, list[float]]], str | None]:
    """Appends by 1 and by WRITERS writers per store, lovia against its raw baseline, in turns.

    On PostgreSQL also the load of the 10,000-entry session and its last page (the SQLite
    stores' are in the first table). Each repetition on fresh files and fresh databases.
    Returns the samples per store and, when PostgreSQL failed, why (its samples are then left out).
    """
    runs = [run_entries(i) for i in range(appends)]
    stores = [*SQLITE_STORES, "postgres"] if databases is not None else [*SQLITE_STORES]
    samples: dict[str, dict[str, list[float]]] = {store: {} for store in stores}
    failure = None
    for attempt in range(repeat):
        order = ("raw", "lovia") if attempt % 2 else ("lovia", "raw")
        for store in list(stores):
            try:
                store_repetition(writers, databases, store, runs, order, loads, samples[store], failures)
            except Exception as error:
                if store != "postgres":
                    raise
                failure = f"it failed ({type(error).__name__}: {error})"
                stores.remove(store)
                del samples[store]
            finally:
                if store == "postgres" and databases is not None:
                    databases.drop_all()
    return samples, failure


def store_repetition(writers: Writers, databases: PostgresDatabases | None, store: str, runs: list,
                     order: tuple[str, str], loads: int, got: dict[str, list[float]], failures: list[str]) -> None:
    """One repetition of one store, on fresh files or databases, adding to its samples ``got``.

    Concurrent writers that fail (a SQLite writer that waited for the lock longer than its busy
    timeout) leave NaN samples and a line in ``failures``.
    """
    with tempfile.TemporaryDirectory() as tmp:
        if store == "postgres":
            assert databases is not None
            targets = {"raw": databases.fresh(), "lovia": databases.fresh()}
            asyncio.run(pg_prepare(targets["raw"]))
        else:
            raw_path = prepared_file(Path(tmp) / "raw.db", store == "sqlite wal")
            targets = {"raw": str(raw_path), "lovia": str(Path(tmp) / "lovia.db")}
        for who in order:
            got.setdefault(f"{who} 1", []).append(append_runs(store, who, targets[who], runs))
        if store == "postgres":
            got.setdefault("sync 1", []).append(sync_pg_appends(targets["raw"], runs, "sync"))
        for who in order:
            try:
                seconds, cpu = writers.appends(store, who, targets[who], len(runs))
            except Exception as error:  # a writer gave up (on SQLite: waiting for the lock); counted, not fatal
                seconds = cpu = math.nan
                failures.append(f"{STORE_NAMES[store]}, {who}, {WRITERS} writers: {type(error).__name__}: {error}")
            got.setdefault(f"{who} {WRITERS}", []).append(seconds)
            got.setdefault(f"{who} {WRITERS} cpu", []).append(cpu)
        if store == "postgres":
            asyncio.run(pg_short_session(targets["lovia"], runs[:PAGE // ENTRIES_PER_RUN]))
            lovia_loads, raw_loads, pages = asyncio.run(
                paired_pg_loads(targets["lovia"], loads, len(runs) * ENTRIES_PER_RUN))
            got.setdefault("lovia load", []).extend(lovia_loads)
            got.setdefault("raw load", []).extend(raw_loads)
            for name, values in pages.items():
                got.setdefault(f"page {name}", []).extend(values)


def per_second(count: int, seconds: list[float]) -> str:
    figure = Figure.of([count / t for t in seconds])
    return f"{figure.median:,.0f} ({figure.low:,.0f}-{figure.high:,.0f})"


STORE_NAMES = {"sqlite": "SQLite file", "sqlite wal": "SQLite file, wal=True", "postgres": "PostgreSQL"}


def store_row(store: str, s: dict[str, list[float]], first_table: dict[str, list[float]] | None,
              appends: int) -> tuple[str, ...]:
    """A row of the side-by-side table; the SQLite stores' load and page come from the first table."""
    loads = first_table if first_table is not None else s
    row = [STORE_NAMES[store]]
    for writers in (1, WRITERS):
        lovia, raw = s[f"lovia {writers}"], s[f"raw {writers}"]
        failed = {who: sum(math.isnan(t) for t in times) for who, times in (("lovia", lovia), ("raw", raw))}
        kept = [(lt, rt) for lt, rt in zip(lovia, raw, strict=True) if not (math.isnan(lt) or math.isnan(rt))]
        note = "".join(f", {who} failed {n} of {len(lovia)}" for who, n in failed.items() if n)
        if not kept:
            row += [f"none measured{note}", ""]
            continue
        lovia, raw = [lt for lt, _ in kept], [rt for _, rt in kept]
        row += [f"{per_second(appends, lovia)} vs {per_second(appends, raw)}{note}", ratios(lovia, raw).times()]
    cpu = {who: [c for c in s[f"{who} {WRITERS} cpu"] if not math.isnan(c)] for who in ("lovia", "raw")}
    row += [f"{ms(Figure.of(cpu['lovia']))} vs {ms(Figure.of(cpu['raw']))}" if cpu["lovia"] and cpu["raw"] else ""]
    row += [f"{ms(Figure.of(loads['lovia load']))} vs {ms(Figure.of(loads['raw load']))}",
            ratios(loads["lovia load"], loads["raw load"]).times()]
    if loads.get("page end"):
        row += [f"{ms(Figure.of(loads['page end']))} vs {ms(Figure.of(loads['page short']))}",
                ratios(loads["page end"], loads["page short"]).times()]
    else:
        row += ["not Paged", ""]
    return tuple(row)


def store_header(entries: int) -> tuple[str, ...]:
    return ("store", "1 writer, appends/s: lovia vs raw", "time ratio",
            f"{WRITERS} writer processes, appends/s: lovia vs raw", "time ratio",
            "writers' CPU per append, ms: lovia vs raw",
            f"load {entries:,} entries, ms: lovia vs raw", "load ratio",
            f"last page of {PAGE}, ms: vs a {PAGE}-entry session", "page ratio")


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
    entries = args.appends * ENTRIES_PER_RUN
    first = {wal: measure(wal, args.appends, args.repeat, args.loads, args.saves) for wal in (False, True)}
    print(f"lovia store benchmark: {args.appends} appends of {ENTRIES_PER_RUN} entries, load of "
          f"{entries} entries, {args.saves} snapshot saves; medians of {args.repeat} "
          f"repetitions ({args.repeat * args.loads} load pairs) with the lowest and highest")
    print("targets: load ratio <= 1.5 (vs raw sqlite3 reading one JSON array per run and json.loads), append "
          "ratio <= 1.3 (vs raw sqlite3 running lovia's SQL), page ratio ~1, snapshot 1000/10 <= 1.3\n")
    print_table(header(entries), [sqlite_row(wal, first[wal], args.appends) for wal in (False, True)])
    print()
    with postgres() as (server, where), contextlib.ExitStack() as stack:
        databases = PostgresDatabases(server) if server is not None else None
        writers = Writers.start()
        stack.callback(writers.close)
        failures: list[str] = []
        stores, failure = measure_stores(writers, databases, args.appends, args.repeat, args.loads, failures)
    print(f"The stores side by side: {args.appends} appends by 1 writer, and by {WRITERS} writer processes "
          f"({args.appends // WRITERS} each, to a session of their own); baselines: raw sqlite3 and raw psycopg "
          "(AsyncConnection, one connection, no pool) running lovia's SQL; the SQLite files' load and page are "
          "the first table's.")
    print(f"PostgreSQL: {where}." if server is not None else f"No PostgreSQL rows: {where}.")
    if failure:
        print(f"No PostgreSQL rows: {failure}.")
    print()
    print_table(store_header(entries), [
        store_row(store, samples, first[store == "sqlite wal"] if store in SQLITE_STORES else None, args.appends)
        for store, samples in stores.items()])
    if "postgres" in stores:
        pg = stores["postgres"]
        print(f"\nPostgreSQL, 1 writer, the raw baseline through synchronous psycopg instead: "
              f"{per_second(args.appends, pg['sync 1'])} appends/s; the async baseline's time against it: "
              f"{ratios(pg['raw 1'], pg['sync 1']).times()}, lovia's: {ratios(pg['lovia 1'], pg['sync 1']).times()}")
    for line in failures:
        print(f"\nfailed: {line}", end="")
    print()


if __name__ == "__main__":
    main()
