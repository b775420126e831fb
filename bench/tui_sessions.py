"""Many sessions in the running app: first paint with 10,000 sessions against 10, and the store
queries the lists make after a turn.

- first paint: the stores opened as the ``lovia`` command opens them (``open_stores``), the app
  started, until the first refresh of its main screen once mounted (the sessions list and the
  latest session loaded) is over; 10,000 sessions against 10, alternated in one process.
- queries during and after a run: the app on 10,000 sessions through stores that count their
  calls (``tests/tui/counting.py``); one message is sent (a plain answer, then one with a tool
  call), and the listing calls (``list_sessions``, ``session_info``, ``list_runs``) are counted
  from the send to the run's end (the send itself lists the unstored runs once), then until the
  refresh at its end and the next several-windows check (1 s later) are over.
- the check after a write elsewhere: another store object on the file (a connection of its own,
  as another process's) appends to one older session, then the several-windows check runs;
  10,000 sessions against 10, and 10,000 with every session listed again at each check (the way
  it was before the session store's change log) in the same run.

Every tenth session has a title given by rename; the others are titled by their first message.
Run by ``bench/tui.py``, or alone: ``python bench/tui_sessions.py [--repeat 5]``.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from pathlib import Path

from _stats import TUI_COLUMNS, Figure, print_table, ratios

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

MANY = 10_000
FEW = 10


async def build_sessions(path: Path, count: int) -> None:
    """``count`` sessions of one run each (a question and its answer), through the store."""
    from lovia import AssistantMessage, SQLiteCheckpointer, SQLiteSession, UserMessage

    async with SQLiteSession(path, wal=True) as session, SQLiteCheckpointer(path, wal=True):
        for i in range(count):
            session_id = f"s-{i:06d}"
            await session.append(session_id, [UserMessage(text=f"Question {i} about topic {i % 97}"),
                                              AssistantMessage(text=f"Answer {i}.", agent="assistant")],
                                 meta={"timing": {"started_at": 1.7e9 + i, "finished_at": 1.7e9 + i + 1.5}})
            if i % 10 == 0:
                await session.rename_session(session_id, f"Renamed session {i}")


def _app(session, checkpointer):
    from lovia import BUILTIN_TOOLS, Agent
    from lovia.models import DemoModel
    from lovia.tui.app import LoviaApp
    from lovia.tui.backend import ChatBackend

    agent = Agent(name="assistant", tools=BUILTIN_TOOLS, model=DemoModel(delay=0))
    return LoviaApp(ChatBackend(session, checkpointer, agent), model_label="demo (offline)")


async def _until_painted(pilot) -> None:
    """Until the first refresh of the main screen once it is mounted (its first load done) is over."""
    app = pilot.app
    while app.main_screen is None or not app.main_screen.is_mounted:
        await asyncio.sleep(0.001)
    painted = asyncio.Event()
    app.main_screen.call_after_refresh(painted.set)
    await painted.wait()


async def first_paint(db: Path) -> float:
    """Seconds from opening the stores to the first paint of the main screen."""
    from lovia.cli import open_stores

    start = time.perf_counter()
    session, checkpointer = await open_stores(db)
    app = _app(session, checkpointer)
    async with app.run_test(size=(160, 45)) as pilot:
        await _until_painted(pilot)
        painted = time.perf_counter() - start
    return painted


async def queries_per_run(db: Path, text: str) -> tuple[dict[str, int], dict[str, int]]:
    """The listing calls made while a run of ``text`` goes (from the send to its end), and after it
    (the refresh at its end and the next several-windows check)."""
    from lovia.tui.screens.main import CHANGE_CHECK_SECONDS
    from tests.tui.counting import CountingCheckpointer, CountingSession, listing_calls, reset

    session, checkpointer = CountingSession(db, wal=True), CountingCheckpointer(db, wal=True)
    app = _app(session, checkpointer)
    async with app.run_test(size=(160, 45)) as pilot:
        await _until_painted(pilot)
        await app.workers.wait_for_complete()
        await pilot.pause(CHANGE_CHECK_SECONDS * 1.5)  # start-up and its first check are over
        await app.workers.wait_for_complete()
        chat = app.screen.chat
        counted: list[dict[str, int]] = []

        def ended(running: bool) -> None:  # called as the run ends, before the refresh its end asks for
            if not running:
                counted.append(listing_calls(session, checkpointer))
                reset(session, checkpointer)

        app.screen.watch(chat, "running", ended, init=False)
        chat.composer.focus()
        await pilot.pause()
        reset(session, checkpointer)
        await pilot.press(*text)
        await pilot.press("enter")
        await app.workers.wait_for_complete()
        await pilot.pause(CHANGE_CHECK_SECONDS * 1.5)
        await app.workers.wait_for_complete()
        await pilot.pause()
        return counted[0], listing_calls(session, checkpointer)


async def checks_after_writes_elsewhere(db: Path, repeat: int, *, full: bool = False) -> list[float]:
    """Seconds of each several-windows check that follows another store object's append to one
    older session (a connection of its own, as another process's); ``full``: every session is
    listed again at each, as before the change log (the mark forgotten before each check)."""
    from lovia import AssistantMessage, SQLiteSession, UserMessage
    from lovia.cli import open_stores

    app = _app(*(await open_stores(db)))
    times: list[float] = []
    async with app.run_test(size=(160, 45)) as pilot:
        await _until_painted(pilot)
        await app.workers.wait_for_complete()
        screen = app.screen
        screen._change_timer.pause()  # the checks are made here, one at a time
        await screen.refresh_lists()  # as the listing after the first paint leaves it
        async with SQLiteSession(db, wal=True) as other:
            for i in range(repeat):
                await other.append(f"s-{i * 3:06d}", [UserMessage(text=f"Back to it {i}"),
                                                      AssistantMessage(text="Again.", agent="assistant")])
                if full:
                    screen._sessions_mark = None
                start = time.perf_counter()
                assert await screen.check_other_windows()
                times.append(time.perf_counter() - start)
                await pilot.pause()
    return times


def _calls(counted: dict[str, int]) -> str:
    return ", ".join(f"{name} {count}" for name, count in counted.items()) or "none"


async def rows(repeat: int) -> list[tuple[str, str, str, str]]:
    """The many-sessions rows of the TUI table: measure, lovia, baseline, ratio."""
    with tempfile.TemporaryDirectory() as tmp:
        many, few = Path(tmp) / "many.db", Path(tmp) / "few.db"
        await build_sessions(many, MANY)
        await build_sessions(few, FEW)
        await first_paint(few)  # the first app in a process pays for imports and caches
        many_times, few_times = [], []
        for _ in range(repeat):
            few_times.append(await first_paint(few))
            many_times.append(await first_paint(many))
        plain = await queries_per_run(many, "hello")
        tool = await queries_per_run(many, "what time is it?")
        elsewhere_few = await checks_after_writes_elsewhere(few, repeat)
        elsewhere_many = await checks_after_writes_elsewhere(many, repeat)
        elsewhere_full = await checks_after_writes_elsewhere(many, repeat, full=True)
    return [
        ("first paint, 10,000 sessions (baseline: 10 sessions)", Figure.of(many_times).ms(),
         Figure.of(few_times).ms(), ratios(many_times, few_times).times()),
        ("listing calls during a one-turn run, 10,000 sessions", _calls(plain[0]), "target: 1 a turn", "-"),
        ("listing calls during a tool-call run (2 turns)", _calls(tool[0]), "target: 1 a turn", "-"),
        ("listing calls after a run (its end, the next check)", _calls(tool[1]), "-", "-"),
        ("the check after another window's write to one session, 10,000 sessions (baseline: 10 sessions)",
         Figure.of(elsewhere_many).ms(), Figure.of(elsewhere_few).ms(), ratios(elsewhere_many, elsewhere_few).times()),
        ("the same check listing every session again, as before the change log (baseline: 10 sessions)",
         Figure.of(elsewhere_full).ms(), Figure.of(elsewhere_few).ms(), ratios(elsewhere_full, elsewhere_few).times()),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    print_table(TUI_COLUMNS, asyncio.run(rows(args.repeat)))


if __name__ == "__main__":
    main()
