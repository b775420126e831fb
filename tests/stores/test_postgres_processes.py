"""PostgreSQL stores under real processes: opening a fresh database at once, appending one run at once."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path

import psycopg

from lovia import PostgresSession
from tests.stores import postgres_child

CHILD = str(Path(postgres_child.__file__))


def run_together(tmp_path: Path, commands: list[list[str]]) -> None:
    """Start a child per command, let them all go at once, and wait until every one has succeeded."""
    go = tmp_path / "go"
    children = [subprocess.Popen([sys.executable, CHILD, *command, str(go)], stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, text=True) for command in commands]
    try:
        for child in children:
            assert child.stdout is not None
            assert child.stdout.readline() == "ready\n", child.communicate()[1]
        go.touch()
        for child in children:
            out, err = child.communicate(timeout=120)
            assert child.returncode == 0, err
            assert out == "done\n"
    finally:
        for child in children:
            if child.poll() is None:
                child.kill()
                child.wait()


def test_processes_opening_a_fresh_database_at_once_migrate_it_once(postgres_url, tmp_path):
    run_together(tmp_path, [["migrate", postgres_url] for _ in range(6)])
    with psycopg.connect(postgres_url) as conn:
        (runs,) = conn.execute("SELECT count(*) FROM counted_migrations").fetchone()
        versions = dict(conn.execute("SELECT store, version FROM lovia_schema").fetchall())
    assert runs == 1, f"the migration ran {runs} times"
    assert versions["counted"] == 1
    assert versions["session"] >= 1 and versions["checkpoint"] >= 1


def test_appends_of_one_run_from_several_processes_store_it_once_in_order(postgres_url, tmp_path):
    workers = 4
    run_together(tmp_path, [["append", postgres_url, str(worker)] for worker in range(workers)])

    async def check() -> None:
        async with PostgresSession(postgres_url) as session:
            segments = await session.segments("shared")
            run_ids = [s.run_id for s in segments]
            runs = range(postgres_child.RUNS)
            expected = [f"same-{i}" for i in runs] + [f"w{w}-{i}" for w in range(workers) for i in runs]
            assert sorted(run_ids) == sorted(expected)
            # Each worker's runs, and the shared ones, kept the order they were appended in.
            for prefix in ["same-", *(f"w{w}-" for w in range(workers))]:
                mine = [r for r in run_ids if r.startswith(prefix)]
                assert mine == [f"{prefix}{i}" for i in range(postgres_child.RUNS)]
            # Positions never interleaved: each run starts where the one before it ended.
            entries = await session.load("shared")
            assert entries == [e for s in segments for e in s.entries]
            page = await session.read_page("shared", start=0, limit=len(entries))
            position = 0
            for span, segment in zip(page.runs, segments, strict=True):
                assert (span.run_id, span.start, span.count) == (segment.run_id, position, len(segment.entries))
                position += span.count
            assert page.total == position == len(entries)
            info = await session.session_info("shared")
            assert info is not None and (info.entry_count, info.run_count) == (len(entries), len(segments))

    asyncio.run(check())
