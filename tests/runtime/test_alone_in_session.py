"""Runs of one session started at the same moment by several processes: with ``alone_in_session``,
exactly one executes (issue: two windows sending at once both ran, each model missing the other's
message). Real processes, released together, on a SQLite file and on PostgreSQL."""

from __future__ import annotations

import asyncio
import contextlib
import sys
from pathlib import Path

from lovia import SQLiteSession

CHILD = Path(__file__).with_name("alone_child.py")
WORKERS = 4


async def race(target: str, tmp_path: Path) -> list[str]:
    """Start WORKERS processes, release them together, let the winner finish; their last lines."""
    go, release = tmp_path / "go", tmp_path / "release"
    children = [await asyncio.create_subprocess_exec(sys.executable, str(CHILD), target, f"run-{n}", str(go),
                                                     str(release), stdout=asyncio.subprocess.PIPE,
                                                     stderr=asyncio.subprocess.PIPE)
                for n in range(WORKERS)]
    for child in children:
        assert child.stdout is not None
        line = await asyncio.wait_for(child.stdout.readline(), 60)
        assert line.decode().strip() == "READY", (await child.stderr.read()).decode()
    go.touch()
    outcomes: dict[int, str] = {}
    all_but_one_ended = asyncio.Event()

    async def outcome(n: int) -> None:
        out, err = await children[n].communicate()
        assert children[n].returncode == 0, err.decode()
        outcomes[n] = out.decode().strip()
        if len(outcomes) >= WORKERS - 1:
            all_but_one_ended.set()

    waits = [asyncio.ensure_future(outcome(n)) for n in range(WORKERS)]
    # The refused ones end by themselves; the one that runs waits in its tool until released
    # (should more than one run, they all wait: released after a while, the check says so).
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(all_but_one_ended.wait(), 60)
    release.touch()
    await asyncio.wait_for(asyncio.gather(*waits), 60)
    return [outcomes[n] for n in range(WORKERS)]


def check(outcomes: list[str]) -> None:
    assert sorted(line.split(" ", 1)[0] for line in outcomes) == ["RAN"] + ["REFUSED"] * (WORKERS - 1), outcomes
    for line in outcomes:
        if line.startswith("REFUSED"):
            assert "of session 'shared' is being executed" in line and "question" not in line


async def test_of_runs_started_at_once_in_one_session_on_a_sqlite_file_one_runs(tmp_path):
    db = tmp_path / "lovia.db"
    check(await race(str(db), tmp_path))
    async with SQLiteSession(db, wal=True) as session:
        assert len(await session.segments("shared")) == 1


async def test_of_runs_started_at_once_in_one_session_on_postgres_one_runs(tmp_path, postgres_url):
    from lovia.stores.postgres import PostgresSession

    check(await race(postgres_url, tmp_path))
    async with PostgresSession(postgres_url) as session:
        assert len(await session.segments("shared")) == 1
