"""Two stores in one process keep that process's SQLite locks, whatever other processes do.

POSIX record locks belong to the process: closing any descriptor of the file releases all of
them. If opening a second store touched the file outside SQLite, another process opening and
closing the file would see no reader, checkpoint and delete the WAL, and what the first
process writes afterwards would be lost at its next crash. These tests run real processes and
end them with SIGKILL, as a crash would.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from lovia import SQLiteCheckpointer, SQLiteSession

CHILD = Path(__file__).with_name("sqlite_child.py")
ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="SIGKILL and POSIX locks")


class Child:
    """A ``sqlite_child.py serve`` process: each command returns once the child acknowledged it."""

    def __init__(self, path: Path) -> None:
        self.process = subprocess.Popen(
            [sys.executable, str(CHILD), str(path), "serve"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, text=True, env={**os.environ, "PYTHONPATH": str(ROOT)})

    def __call__(self, command: str) -> None:
        assert self.process.stdin and self.process.stdout
        self.process.stdin.write(command + "\n")
        self.process.stdin.flush()
        answer = self.process.stdout.readline().strip()
        if answer != f"ok {command}":
            self.process.kill()
            raise AssertionError(f"{command!r} failed: {answer!r}\n{self.process.stderr.read()}")

    def kill(self) -> None:
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(timeout=30)

    def exit(self) -> None:
        self("exit")
        assert self.process.wait(timeout=30) == 0


def open_and_close_from_another_process(path: Path) -> None:
    # A plain reader that comes and goes: when it thinks it is the last connection, SQLite
    # checkpoints and deletes the WAL on close.
    code = ("import sqlite3, sys; c = sqlite3.connect(sys.argv[1]); "
            "c.execute('SELECT count(*) FROM lovia_segments').fetchone(); c.close()")
    subprocess.run([sys.executable, "-c", code, str(path)], check=True, timeout=30)


def stored(path: Path) -> tuple[dict[str, list[str]], set[str], str]:
    """Each session's run ids, the checkpointed run ids, and the file's integrity_check verdict."""

    async def read():
        async with SQLiteSession(path, wal=True) as session, SQLiteCheckpointer(path, wal=True) as checkpointer:
            infos = await session.list_sessions()
            sessions = {i.session_id: [s.run_id for s in await session.segments(i.session_id)] for i in infos}
            runs = {r.run_id for r in await checkpointer.list_runs()}
        return sessions, runs

    sessions, runs = asyncio.run(read())
    with sqlite3.connect(path) as conn:
        verdict = conn.execute("PRAGMA integrity_check").fetchone()[0]
    return sessions, runs, verdict


def test_an_append_after_another_process_came_and_went_survives_a_crash(tmp_path):
    path = tmp_path / "lovia.db"
    app = Child(path)
    app("open")  # both stores open, as in the app
    app("append u1 before first")
    open_and_close_from_another_process(path)
    app("append u1 after second")
    app("save r-after in-flight")
    app.kill()
    sessions, runs, verdict = stored(path)
    assert sessions == {"u1": ["before", "after"]}
    assert runs == {"r-after"}
    assert verdict == "ok"


def test_two_app_instances_on_one_file_keep_both_conversations(tmp_path):
    path = tmp_path / "lovia.db"
    first, second = Child(path), Child(path)
    first("open")
    first("append one r1-1 hello-from-one")
    second("open")
    second("append two r2-1 hello-from-two")
    first("append one r1-2 again-from-one")
    second("append two r2-2 again-from-two")
    first("close")
    second("append two r2-3 after-one-quit")
    first.exit()
    second.kill()
    sessions, _, verdict = stored(path)
    assert sessions == {"one": ["r1-1", "r1-2"], "two": ["r2-1", "r2-2", "r2-3"]}
    assert verdict == "ok"


@pytest.mark.parametrize("writers", [4, 8])
def test_every_acknowledged_append_of_many_writer_processes_survives_sigkill(tmp_path, writers):
    path = tmp_path / "lovia.db"
    go = tmp_path / "go"
    appends = 30
    children = [
        subprocess.Popen([sys.executable, str(CHILD), str(path), "hammer", str(appends), f"w{n}", str(go)],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         env={**os.environ, "PYTHONPATH": str(ROOT)})
        for n in range(writers)
    ]
    for child in children:  # every writer has its stores open before any of them appends
        assert child.stdout is not None
        opened = child.stdout.readline()
        if opened != "opened\n":
            child.wait(timeout=30)
            assert child.stderr is not None
            raise AssertionError(f"a writer failed to open its stores: {opened!r}\n{child.stderr.read()}")
    go.touch()
    acked: set[str] = set()
    for child in children:
        assert child.stdout is not None
        for line in child.stdout:
            if line.startswith("acked "):
                acked.add(line.split()[1])
            if line.strip() == "done":
                break
    # Every writer has finished and still holds its stores open; now they all crash.
    for child in children:
        child.send_signal(signal.SIGKILL)
    for child in children:
        child.wait(timeout=30)
        assert child.stderr is not None
        assert "Traceback" not in child.stderr.read()
    assert len(acked) == writers * appends
    sessions, runs, verdict = stored(path)
    assert verdict == "ok"
    assert set(sessions.get("shared", [])) == acked
    assert runs == acked
