"""Crash recovery with real processes killed by SIGKILL at each point of a run."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from lovia import SQLiteCheckpointer, SQLiteSession
from tests.runtime.helpers import comparable

CHILD = Path(__file__).with_name("crash_child.py")
ROOT = Path(__file__).resolve().parents[2]


def start(db: Path, log: Path, point: str) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.Popen([sys.executable, str(CHILD), str(db), str(log), point], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env)


def run_to_end(db: Path, log: Path) -> str:
    child = start(db, log, "none")
    out, err = child.communicate(timeout=60)
    assert child.returncode == 0, err
    return out.strip()


def crash_at(db: Path, log: Path, point: str) -> None:
    child = start(db, log, point)
    line = child.stdout.readline().strip()
    if line != f"AT {point}":
        child.kill()
        raise AssertionError(f"child did not reach {point}: {line!r} {child.stderr.read()}")
    os.kill(child.pid, signal.SIGKILL)
    child.wait(timeout=30)
    assert child.returncode == -signal.SIGKILL


async def final_state(db: Path) -> tuple[list, str]:
    async with SQLiteSession(db, wal=True) as session, SQLiteCheckpointer(db, wal=True) as checkpointer:
        entries = await session.load("u1")
        snapshot = await checkpointer.load("crash-run")
        segments = await session.segments("u1")
        assert [s.run_id for s in segments] == ["empty-start", "crash-run"]
        return entries, snapshot.head.status


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory):
    directory = tmp_path_factory.mktemp("uninterrupted")
    db, log = directory / "lovia.db", directory / "tools.log"
    out = run_to_end(db, log)
    assert out == "DONE replayed=False output=Both steps are done."
    entries, status = asyncio.run(final_state(db))
    assert status == "completed"
    assert log.read_text().split("\n")[:-1] == ["started one", "finished one", "started two", "finished two"]
    assert [(e.type, e.call_id) for e in entries if e.type in ("tool_call", "handoff")] == [
        ("tool_call", "c-one"), ("tool_call", "c-two"), ("tool_call", "c-hand"), ("handoff", "c-hand")]
    return comparable(entries)


@pytest.mark.parametrize("point, replayed, tool_log", [
    # Killed after the model asked for step one: the dangling call runs on resume.
    ("after-model-turn", False, ["started one", "finished one", "started two", "finished two"]),
    # Killed inside step two: it runs again (at-least-once), step one does not.
    ("inside-tool", False, ["started one", "finished one", "started two", "started two", "finished two"]),
    ("after-tool-result", False, ["started one", "finished one", "started two", "finished two"]),
    # Killed after the transfer's result, before the switch: the resumed handoff keeps the call's id.
    ("after-handoff-result", False, ["started one", "finished one", "started two", "finished two"]),
    # Killed after the answer was saved, before finalization: the answer is not asked for twice.
    ("after-final-turn", False, ["started one", "finished one", "started two", "finished two"]),
    ("before-session-append", True, ["started one", "finished one", "started two", "finished two"]),
])
def test_reissuing_the_call_after_a_sigkill_gives_the_uninterrupted_result(
        tmp_path, uninterrupted, point, replayed, tool_log):
    db, log = tmp_path / "lovia.db", tmp_path / "tools.log"
    crash_at(db, log, point)
    out = run_to_end(db, log)
    assert out == f"DONE replayed={replayed} output=Both steps are done."
    entries, status = asyncio.run(final_state(db))
    assert status == "completed"
    assert comparable(entries) == uninterrupted  # nothing duplicated, nothing lost
    executed = log.read_text().split("\n")[:-1]
    assert executed == tool_log
    assert executed.count("finished one") == 1  # a completed tool never runs again


def test_a_crashed_run_is_listed_as_crashed(tmp_path):
    db, log = tmp_path / "lovia.db", tmp_path / "tools.log"
    crash_at(db, log, "inside-tool")

    async def check():
        async with SQLiteCheckpointer(db, wal=True) as checkpointer:
            [summary] = await checkpointer.list_runs(statuses=["running", "interrupted"])
            assert summary.run_id == "crash-run" and summary.head.crashed
            assert summary.head.first_input == "Run the job." and summary.head.session_id == "u1"

    asyncio.run(check())
