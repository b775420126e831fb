"""Two worker processes and the app share one PostgreSQL database: the app shows their runs as they land.

The workers are real child processes (``pg_worker_child.py``) running an agent through
``PostgresSession`` and ``PostgresCheckpointer``; the app is the real one, opened as ``lovia
--db postgresql://...`` opens it (``open_stores``), driven by its pilot. No key is pressed to
see what the workers write: the app's change watcher hears of it (LISTEN/NOTIFY) and reloads.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

from lovia import Agent
from lovia.cli import open_stores
from lovia.db_location import PostgresLocation
from lovia.models import DemoModel
from lovia.run_state import run_state
from lovia.tui.app import LoviaApp
from lovia.tui.backend import ChatBackend
from lovia.tui.config import RememberedState
from lovia.tui.screens.main import MainScreen
from lovia.tui.widgets.assistant_message import AssistantMessageView
from lovia.tui.widgets.runs_pane import RunsPane
from lovia.tui.widgets.sessions_pane import SessionsPane
from tests.tui.conftest import settle, wait_for

CHILD = Path(__file__).with_name("pg_worker_child.py")
ROOT = Path(__file__).resolve().parents[2]
PATIENCE = 60.0
"""A hang guard for what other processes do (they start Python and import lovia first); never a measure."""


async def postgres_app(url: str, state_dir: Path) -> LoviaApp:
    session, checkpointer = await open_stores(PostgresLocation(url))
    backend = ChatBackend(session, checkpointer, Agent(name="assistant", model=DemoModel(delay=0)))
    return LoviaApp(backend, model_label="demo (offline)", state=RememberedState(state_dir / "state.json"))


async def start_worker(url: str, session_id: str, run_id: str, gate: Path) -> asyncio.subprocess.Process:
    return await asyncio.create_subprocess_exec(
        sys.executable, str(CHILD), url, session_id, run_id, str(gate), cwd=str(ROOT),
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)


async def finished(worker: asyncio.subprocess.Process) -> None:
    out, err = await asyncio.wait_for(worker.communicate(), PATIENCE)  # a hang guard
    assert worker.returncode == 0 and out.decode().strip() == "DONE", err.decode()


async def until(pilot, predicate, workers: list[asyncio.subprocess.Process]) -> None:
    """:func:`wait_for` with :data:`PATIENCE`; on giving up, says what the app lists and how the workers ended."""
    try:
        await wait_for(pilot, predicate, PATIENCE)
    except AssertionError:
        screen = pilot.app.main
        runs = {r.run_id: run_state(r.head) for r in screen.query_one(RunsPane).runs}
        ended = []
        for worker in workers:
            if worker.returncode is not None:
                ended.append((worker.returncode, (await worker.stderr.read()).decode()[-2000:]))
        raise AssertionError(f"gave up: sessions {listed_states(screen.query_one(SessionsPane))}, runs {runs}, "
                             f"answers {answers(screen)}, workers ended {ended}") from None


def listed_states(pane: SessionsPane) -> dict[str, object]:
    return {info.session_id: info.state for info in pane.sessions}


def answers(screen: MainScreen) -> list[str]:
    return [view.text for view in screen.chat.transcript.query(AssistantMessageView)]


async def test_two_workers_runs_and_answers_show_in_the_app_as_they_land(tmp_path, postgres_url):
    gates = {name: tmp_path / f"gate-{name}" for name in ("a", "b")}
    app = await postgres_app(postgres_url, tmp_path)
    workers: list[asyncio.subprocess.Process] = []
    try:
        async with app.run_test(size=(160, 45)) as pilot:
            await settle(pilot)
            screen = app.main
            sessions, runs = screen.query_one(SessionsPane), screen.query_one(RunsPane)
            assert sessions.sessions == [] and runs.runs == []

            workers = [await start_worker(postgres_url, f"s-{name}", f"run-{name}", gates[name]) for name in gates]

            # Both runs are in flight in the workers: listed as running elsewhere, and their sessions too.
            await until(pilot, lambda: {r.run_id: run_state(r.head) for r in runs.runs}
                        == {"run-a": "elsewhere", "run-b": "elsewhere"}, workers)
            await until(pilot, lambda: listed_states(sessions) == {"s-a": "elsewhere", "s-b": "elsewhere"}, workers)
            await screen.open_session("s-a")
            await settle(pilot)
            assert "Done with s-a." not in answers(screen)

            # Worker a completes: its run leaves the runs list, its session holds the run, and the open
            # transcript shows the answer, without a key pressed.
            gates["a"].touch()
            await finished(workers[0])
            await until(pilot, lambda: [r.run_id for r in runs.runs] == ["run-b"], workers)
            await until(pilot, lambda: listed_states(sessions) == {"s-a": None, "s-b": "elsewhere"}, workers)
            await until(pilot, lambda: "Done with s-a." in answers(screen), workers)
            assert screen.chat.transcript.run_ids == {"run-a"}
            stored_a = next(info for info in sessions.sessions if info.session_id == "s-a")
            assert stored_a.run_count == 1 and stored_a.entry_count == 5

            # Worker b completes while s-a stays open: the lists follow, the open transcript stays as it is.
            gates["b"].touch()
            await finished(workers[1])
            await until(pilot, lambda: runs.runs == [], workers)
            await until(pilot, lambda: listed_states(sessions) == {"s-a": None, "s-b": None}, workers)
            assert answers(screen)[-1] == "Done with s-a."
            await screen.open_session("s-b")
            await settle(pilot)
            assert answers(screen)[-1] == "Done with s-b."
    finally:
        for gate in gates.values():
            gate.touch()
        for worker in workers:
            if worker.returncode is None:
                worker.kill()
                await worker.wait()


def statements_by_others(url: str) -> list[tuple[int, object, str]]:
    """Each other connection to the database, with when its last statement started and what it is."""
    import psycopg

    with psycopg.connect(url) as conn:
        rows = conn.execute("SELECT pid, query_start, state FROM pg_stat_activity "
                            "WHERE datname = current_database() AND pid <> pg_backend_pid() ORDER BY pid").fetchall()
    return [(pid, start, state) for pid, start, state in rows]


async def test_while_nobody_writes_change_checks_send_the_server_no_statement(tmp_path, postgres_url):
    """The watcher's check is the LISTEN connection's count of notifications: no query, no table read."""
    app = await postgres_app(postgres_url, tmp_path)
    async with app.run_test(size=(160, 45)) as pilot:
        await settle(pilot)
        screen = app.main
        screen._change_timer.pause()  # the checks are driven here, one at a time
        await settle(pilot)
        assert await screen.check_other_windows() is False  # the LISTEN connection is up from the first check
        before = statements_by_others(postgres_url)
        assert before, "the app holds connections to the database"
        assert [await screen.check_other_windows() for _ in range(20)] == [False] * 20
        assert statements_by_others(postgres_url) == before

        # The control: another process's write is news, and the reload that follows does query.
        from lovia import AssistantMessage, UserMessage
        from lovia.stores.postgres import PostgresSession

        other = PostgresSession(postgres_url)
        try:
            await other.append("s-other", [UserMessage(text="hello"), AssistantMessage(text="hi")], run_id="r-1")
        finally:
            await other.close()
        checks: list[bool] = []

        async def check() -> bool:  # the notification reaches the LISTEN connection asynchronously
            checks.append(await screen.check_other_windows())
            return checks[-1]

        while not await check():
            assert len(checks) < 1000, "the write was never noticed"
            await pilot.pause(0.02)
        assert statements_by_others(postgres_url) != before
        assert [info.session_id for info in screen.query_one(SessionsPane).sessions] == ["s-other"]
