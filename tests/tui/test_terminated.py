"""SIGTERM and SIGHUP quit the app as "Stop and quit" does, in a real process."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from lovia import SQLiteCheckpointer
from lovia.tui.backend import run_state

ROOT = Path(__file__).resolve().parents[2]

CHILD = textwrap.dedent(
    """
    import asyncio, sys
    from pathlib import Path
    from tests.tui.conftest import make_app

    app = make_app(Path(sys.argv[1]))

    async def start_a_long_answer(pilot):
        if sys.argv[2] == "running":
            app.main.query_one("#composer").focus()
            await pilot.press(*"wait 60", "enter")
            while not app.main.chat.running:
                await asyncio.sleep(0.02)
            await asyncio.sleep(0.3)  # into the tool call
        print("READY", flush=True)

    app.run(headless=True, size=(80, 24), auto_pilot=start_a_long_answer)
    print("EXITED", app.return_code, flush=True)
    """
)


def terminate(db: Path, how: int, state: str) -> list[str]:
    child = subprocess.Popen([sys.executable, "-c", CHILD, str(db), state], stdout=subprocess.PIPE, text=True,
                             env={**os.environ, "PYTHONPATH": str(ROOT)})
    try:
        assert child.stdout.readline().strip() == "READY"
        os.kill(child.pid, how)
        assert child.wait(timeout=30) == 0, "ended by the signal, not by quitting"
    finally:
        child.kill()
    return child.stdout.read().split()


@pytest.mark.parametrize("how", [signal.SIGTERM, signal.SIGHUP])
def test_a_signal_quits_the_idle_app_as_it_quits(tmp_path, how):
    assert terminate(tmp_path / "lovia.db", how, "idle") == ["EXITED", "0"]


def test_a_signal_stops_a_running_answer_and_keeps_it_resumable(tmp_path):
    db = tmp_path / "lovia.db"
    assert terminate(db, signal.SIGTERM, "running") == ["EXITED", "0"]

    async def stored_runs():
        async with SQLiteCheckpointer(db, wal=True) as checkpointer:
            return await checkpointer.list_runs()

    [run] = asyncio.run(stored_runs())
    assert run_state(run.head) == "interrupted", "stopped, not crashed"


async def test_the_handlers_the_app_found_are_back_once_it_closes(tmp_path):
    """Code that runs the app and goes on (a script, a test runner) keeps its own SIGTERM and SIGHUP
    handling: the loop's removal alone left Python's default, which ends the process."""
    from tests.tui.conftest import make_app, settle

    seen: list[int] = []

    def own(number, frame):
        seen.append(number)

    before = {number: signal.signal(number, own) for number in (signal.SIGTERM, signal.SIGHUP)}
    try:
        app = make_app(tmp_path / "lovia.db")
        async with app.run_test(size=(80, 24)) as pilot:
            await settle(pilot)
            assert signal.getsignal(signal.SIGTERM) is not own  # the app's, while it runs
        assert signal.getsignal(signal.SIGTERM) is own and signal.getsignal(signal.SIGHUP) is own
        os.kill(os.getpid(), signal.SIGHUP)
        assert seen == [signal.SIGHUP]
    finally:
        for number, handler in before.items():
            signal.signal(number, handler)


async def test_a_loops_own_signal_handler_found_is_not_put_back_to_ignore_the_signal(tmp_path):
    """Code that took SIGTERM with ``loop.add_signal_handler`` before running the app: the app's took
    its place in the loop, so putting back the loop's wake-up handler alone would leave SIGTERM
    ignored; the default comes back (the process ends), as without the app's restoring."""
    from tests.tui.conftest import make_app, settle

    loop = asyncio.get_running_loop()
    loop.add_signal_handler(signal.SIGTERM, lambda: None)
    try:
        app = make_app(tmp_path / "lovia.db")
        async with app.run_test(size=(80, 24)) as pilot:
            await settle(pilot)
        assert signal.getsignal(signal.SIGTERM) == signal.SIG_DFL
    finally:
        loop.remove_signal_handler(signal.SIGTERM)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)


IN_A_TERMINAL = textwrap.dedent(
    """
    import asyncio, sys
    from pathlib import Path
    from tests.tui.conftest import make_app

    app = make_app(Path(sys.argv[1]))

    async def start_a_long_answer(pilot):
        app.main.query_one("#composer").focus()
        await pilot.press(*"wait 60", "enter")
        while not app.main.chat.running:
            await asyncio.sleep(0.02)
        await asyncio.sleep(0.3)  # into the tool call, the line above the message box counting
        Path(sys.argv[2]).write_text("READY")

    app.run(size=(80, 24), auto_pilot=start_a_long_answer)
    Path(sys.argv[2]).write_text("EXITED")
    """
)


def start_in_a_terminal(db: Path, said: Path) -> tuple[int, int]:
    """The app in a child process whose controlling terminal is a pty (closing it hangs the child up),
    once it has started a long answer: its pid and the terminal's end to read and close."""
    import pty
    import time

    pid, terminal = pty.fork()
    if pid == 0:  # pragma: no cover - the child
        os.environ["PYTHONPATH"] = str(ROOT)
        os.execv(sys.executable, [sys.executable, "-c", IN_A_TERMINAL, str(db), str(said)])
    os.set_blocking(terminal, False)
    deadline = time.monotonic() + 30
    while (said.read_text() if said.exists() else "") != "READY":
        assert time.monotonic() < deadline, "the app never started its answer"
        read_terminal(terminal)
        time.sleep(0.01)
    return pid, terminal


def read_terminal(terminal: int) -> bytes:
    """What the app drew since the last read, as a terminal reads it."""
    try:
        return os.read(terminal, 65536)
    except OSError:
        return b""


def wait_until_ended(pid: int, terminal: int | None = None) -> tuple[int, bytes]:
    """The child's exit code, once it ended (within 30 s), and what it drew meanwhile."""
    import time

    drawn = b""
    deadline = time.monotonic() + 30
    while (ended := os.waitpid(pid, os.WNOHANG))[0] == 0:
        assert time.monotonic() < deadline, "the process did not end"
        if terminal is not None:
            drawn += read_terminal(terminal)
        time.sleep(0.05)
    return os.waitstatus_to_exitcode(ended[1]), drawn


def stopped_not_crashed(db: Path) -> None:
    async def stored_runs():
        async with SQLiteCheckpointer(db, wal=True) as checkpointer:
            return await checkpointer.list_runs()

    [run] = asyncio.run(stored_runs())
    assert run_state(run.head) == "interrupted", "stopped, not crashed"


def test_a_terminal_closed_while_an_answer_runs_ends_the_process(tmp_path):
    # The terminal (a tmux window, an SSH connection) closed mid-answer: the run was saved as stopped,
    # then the process hung for good in Textual's shutdown, writing to a terminal that was gone
    # through a queue that no longer emptied; it kept the database open until killed.
    import time

    db, said = tmp_path / "lovia.db", tmp_path / "said"
    pid, terminal = start_in_a_terminal(db, said)
    try:
        time.sleep(1)  # a terminal that stops reading first, as a closing one does
        os.close(terminal)
        code, _ = wait_until_ended(pid)
    finally:
        with contextlib.suppress(ProcessLookupError, ChildProcessError):
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
    assert code == 0 and said.read_text() == "EXITED", "quit, not ended by force"
    stopped_not_crashed(db)


def test_a_hangup_sent_while_the_terminal_is_still_there_gives_it_back_as_it_was(tmp_path):
    # kill -HUP with the terminal open: its output went to the null device as if the terminal had
    # closed, and the shell was left in the app's screen, mouse reporting on.
    db, said = tmp_path / "lovia.db", tmp_path / "said"
    pid, terminal = start_in_a_terminal(db, said)
    try:
        os.kill(pid, signal.SIGHUP)
        code, drawn = wait_until_ended(pid, terminal)
    finally:
        with contextlib.suppress(ProcessLookupError, ChildProcessError):
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
        os.close(terminal)
    assert code == 0 and said.read_text() == "EXITED"
    assert b"\x1b[?1049l" in drawn, "the app's screen left, the terminal's own back"
    stopped_not_crashed(db)
