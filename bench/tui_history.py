"""Long histories in the running app, against a 10-entry session measured in the same run.

    python bench/tui_history.py [--repeat 5] [--entries 100000] [--size 80x24]

Run by ``bench/tui.py`` too. One SQLite file holds a long session (``--entries``, runs of 200
entries as ``screenshots/demo_data.py`` writes them) and a 10-entry one of the same shape:

- open: ``open_session`` until the screen settled (the newest page drawn), long then short,
  alternating in one app; and the memory (RSS) of a fresh process once it started on the one
  or the other session (made the most recently active, which the app opens first) and settled;
- keys: ``home``, ``end``, ``pageup`` and ``pagedown`` in the transcript, from the key press
  until the screen settled (pages read and mounted), in the long session against the short
  one; the ratio column gives the difference in ms too (the target: within one frame, 16.7 ms);
- scrolling through: ``pagedown`` from the first page over ``--scroll`` entries of the long
  session; the process's RSS at the end against after the first quarter of the way (bounded
  memory does not grow with the distance), and the most widgets mounted on the way.
- long answers (``answers``): a session of six runs whose answers are long formatted markdown
  (headings, lists, code blocks: over a thousand widgets mounted) against six one-line
  answers: focus moved into the transcript and back to the composer, the message cursor moved
  up a message, and the help screen opened and closed, each until the screen is drawn.

Every figure is the median of ``--repeat`` repetitions with the lowest and highest.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from _stats import TUI_COLUMNS, Figure, print_table, ratios  # noqa: E402
from textual import events  # noqa: E402

LONG, SHORT = "s-long-history", "s-short-history"
LONG_ANSWERS, SHORT_ANSWERS = "s-long-answers", "s-short-answers"
SIZES = {"80x24": (80, 24), "160x45": (160, 45)}
FRAME_MS = 1000 / 60

CHILD = """
import resource, sqlite3, sys
from lovia import Agent, BUILTIN_TOOLS, SQLiteCheckpointer, SQLiteSession
from lovia.models import DemoModel
from lovia.tui.app import LoviaApp
from lovia.tui.backend import ChatBackend

db, session_id, width, height = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
with sqlite3.connect(db) as conn:  # the app opens the most recently active session at start: this one
    conn.execute("UPDATE lovia_session_info SET last_activity = "
                 "(SELECT max(last_activity) FROM lovia_session_info) + 1 WHERE session_id = ?", (session_id,))

async def open_then_exit(pilot):
    await pilot.pause()
    await pilot.app.workers.wait_for_complete()
    await pilot.pause()
    with open("/proc/self/statm") as statm:
        print(int(statm.read().split()[1]) * resource.getpagesize() // 1024)
    pilot.app.exit()

agent = Agent(name="assistant", tools=BUILTIN_TOOLS, model=DemoModel())
app = LoviaApp(ChatBackend(SQLiteSession(db, wal=True), SQLiteCheckpointer(db, wal=True), agent),
               model_label="demo (offline)")
app.run(headless=True, size=(width, height), auto_pilot=open_then_exit)
"""


async def build(db: Path, entries: int) -> None:
    """The long session (as demo_data writes it) and a 10-entry one of the same entries."""
    from lovia import AssistantMessage, SQLiteSession, UserMessage
    from screenshots.demo_data import BASE_TIME, build as demo_build

    await demo_build(db, long_entries=entries)
    async with SQLiteSession(db, wal=True) as session:
        for i in range(5):
            await session.append(SHORT, [
                UserMessage(text=f"Question number {i}: what changed in step {i}?", created_at=BASE_TIME + i),
                AssistantMessage(text=f"Step {i} changed **{i % 7} files**; nothing else moved.",
                                 agent="assistant", created_at=BASE_TIME + i)],
                meta={"timing": {"started_at": BASE_TIME + i, "finished_at": BASE_TIME + i + 1}})


def long_answer() -> str:
    """An answer of six sections, each two paragraphs, a nested list and a 15-line code block."""
    code = "\n".join(f"total_{i} = sum(values[:{i}]) * 2  # running total" for i in range(15))
    section = ("The *config* is read with `tomllib` and **validated** before use; every key has a "
               "default so that a partial file still works. " * 2
               + f"\n\n- one\n- two\n  - nested\n\n```python\n{code}\n```\n")
    return "\n".join(f"## Part {k}\n\n{section}" for k in range(6))


async def build_answers(db: Path) -> None:
    """Two sessions of six runs: long formatted answers, and one-line answers."""
    from lovia import AssistantMessage, SQLiteSession, UserMessage
    from screenshots.demo_data import BASE_TIME

    async with SQLiteSession(db, wal=True) as session:
        for session_id, text in ((LONG_ANSWERS, long_answer()), (SHORT_ANSWERS, "A one-line answer.")):
            for i in range(6):
                await session.append(session_id, [
                    UserMessage(text=f"Question {i}", created_at=BASE_TIME + i),
                    AssistantMessage(text=text, agent="assistant", created_at=BASE_TIME + i)],
                    meta={"timing": {"started_at": BASE_TIME + i, "finished_at": BASE_TIME + i + 1}})


def rss_after_open_kb(db: Path, session_id: str, size: tuple[int, int]) -> float:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    out = subprocess.run([sys.executable, "-c", CHILD, str(db), session_id, str(size[0]), str(size[1])],
                         check=True, env=env, capture_output=True, text=True).stdout
    return float(out.split()[-1])


def rss_kb() -> float:
    """This process's resident memory now."""
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * resource.getpagesize() / 1024


def make_app(db: Path):
    from lovia import BUILTIN_TOOLS, Agent, SQLiteCheckpointer, SQLiteSession
    from lovia.models import DemoModel
    from lovia.tui.app import LoviaApp
    from lovia.tui.backend import ChatBackend

    agent = Agent(name="assistant", tools=BUILTIN_TOOLS, model=DemoModel())
    return LoviaApp(ChatBackend(SQLiteSession(db, wal=True), SQLiteCheckpointer(db, wal=True), agent),
                    model_label="demo (offline)")


async def settled(pilot) -> None:
    await pilot.pause()
    await pilot.app.workers.wait_for_complete()
    await pilot.pause()


async def drawn(app) -> None:
    """Until the screen has been refreshed once more (what was changed is drawn)."""
    refreshed = asyncio.get_running_loop().create_future()
    app.screen.call_after_refresh(lambda: refreshed.done() or refreshed.set_result(None))
    app.screen.refresh()
    await refreshed


async def opening(app, session_id: str) -> float:
    """``open_session`` until its newest page is drawn."""
    start = time.perf_counter()
    await app.screen.open_session(session_id)
    await drawn(app)
    return time.perf_counter() - start


async def answer(app, key: str, done: Callable[[], bool]) -> float:
    """A key press until ``done()`` holds and the screen is drawn (pages read in the background not waited for)."""
    return await until_drawn(app, lambda: app.post_message(events.Key(key, None)), done)


def moved(transcript, key: str) -> Callable[[], bool]:
    """What ``key`` is done doing in ``transcript``, from the state it is in now."""
    if key == "home":
        return lambda: transcript.older_hidden == 0 and transcript.selected == 0 and transcript.scroll_y == 0
    if key == "end":
        return lambda: transcript.at_last_message
    before = transcript.scroll_y
    return lambda: transcript.scroll_y != before and transcript.scroll_y == transcript.scroll_target_y


async def until_drawn(app, act: Callable[[], object], done: Callable[[], bool]) -> float:
    """``act()`` until ``done()`` holds and the screen is drawn."""
    start = time.perf_counter()
    act()
    while not done():  # noqa: ASYNC110 - the app's own loop runs meanwhile; a yield is the finest step
        await asyncio.sleep(0)
    await drawn(app)
    return time.perf_counter() - start


ANSWER_MOVES = ("focus into the transcript", "focus back to the composer", "cursor up a message",
                "help opened", "help closed")


async def answer_moves(app, pilot, session_id: str) -> list[float]:
    """The times of :data:`ANSWER_MOVES` in ``session_id``, in order."""
    screen = app.screen
    await screen.open_session(session_id)
    await settled(pilot)
    transcript, composer = screen.chat.transcript, screen.query_one("#composer")
    into = await until_drawn(app, transcript.focus, lambda: transcript.has_focus)
    await settled(pilot)
    back = await until_drawn(app, composer.focus, lambda: composer.has_focus)
    await settled(pilot)
    transcript.focus()
    await settled(pilot)
    selected = transcript.selected
    up = await answer(app, "up", lambda: transcript.selected not in (selected, -1))
    await settled(pilot)
    help_open = await answer(app, "f1", lambda: app.screen is not screen)
    await settled(pilot)
    help_closed = await answer(app, "escape", lambda: app.screen is screen)
    await settled(pilot)
    return [into, back, up, help_open, help_closed]


async def in_app(db: Path, repeat: int, size: tuple[int, int], scroll: int,
                 parts: tuple[str, ...]) -> dict[str, tuple[list[float], ...]]:
    """Open and key timings (long, short) and the scroll-through memory (after, before) in one app."""
    app = make_app(db)
    found: dict[str, tuple[list[float], ...]] = {}
    async with app.run_test(size=size) as pilot:
        await settled(pilot)
        screen = app.screen
        opened: tuple[list[float], list[float]] = ([], [])
        keys = {key: ([], []) for key in ("home", "end", "pageup", "pagedown")}
        for _ in range(repeat):
            for session_id, index in ((LONG, 0), (SHORT, 1)):
                await settled(pilot)
                opened[index].append(await opening(app, session_id))
                transcript = screen.chat.transcript
                transcript.focus()
                await settled(pilot)
                # Each key moves: home from the end, pagedown from the start, end from there, pageup from the end.
                for key in ("home", "pagedown", "end", "pageup") if "keys" in parts else ():
                    keys[key][index].append(await answer(app, key, moved(transcript, key)))
                    await settled(pilot)
        found["open"] = opened
        found.update(keys)
        if "answers" in parts:
            moves: dict[str, tuple[list[float], list[float]]] = {move: ([], []) for move in ANSWER_MOVES}
            for _ in range(repeat):
                for session_id, index in ((LONG_ANSWERS, 0), (SHORT_ANSWERS, 1)):
                    for move, took in zip(ANSWER_MOVES, await answer_moves(app, pilot, session_id), strict=True):
                        moves[move][index].append(took)
            found.update(moves)
        if "scroll" not in parts:
            return found

        await screen.open_session(LONG)
        transcript = screen.chat.transcript
        transcript.focus()
        await settled(pilot)
        await pilot.press("home")
        await settled(pilot)
        first_widgets = len(transcript.children)
        most, quarter_rss = first_widgets, 0.0
        while transcript.older_hidden + transcript.mounted_entries < scroll and transcript.newer_hidden:
            await pilot.press("pagedown")
            await settled(pilot)
            most = max(most, len(transcript.children))
            if not quarter_rss and transcript.older_hidden >= scroll // 4:
                quarter_rss = rss_kb()
        found["scroll"] = ([rss_kb()], [quarter_rss], [float(most)], [float(first_widgets)],
                           [float(transcript.older_hidden + transcript.mounted_entries)])
    return found


def rows_for(db: Path, repeat: int, size: tuple[int, int], entries: int, scroll: int,
             parts: tuple[str, ...]) -> list[tuple[str, str, str, str]]:
    at = f"{size[0]}x{size[1]}"
    found = asyncio.run(in_app(db, repeat, size, scroll, parts))
    long_rss, short_rss = [], []
    for _ in range(repeat):
        long_rss.append(rss_after_open_kb(db, LONG, size))
        short_rss.append(rss_after_open_kb(db, SHORT, size))
    opened_long, opened_short = found["open"]
    table = [
        (f"{at}: open a {entries:,}-entry session (baseline: a 10-entry session)", Figure.of(opened_long).ms(),
         Figure.of(opened_short).ms(), ratios(opened_long, opened_short).times()),
        (f"{at}: memory (RSS) of a process once it opened it (baseline: opening the 10-entry one)",
         mb(Figure.of(long_rss)), mb(Figure.of(short_rss)), ratios(long_rss, short_rss).times()),
    ]
    for key in ("home", "end", "pageup", "pagedown") if "keys" in parts else ():
        long, short = found[key]
        extra = Figure.of([(a - b) * 1000 for a, b in zip(long, short, strict=True)])
        table.append((f"{at}: `{key}` in it, until drawn (baseline: in the 10-entry one)", Figure.of(long).ms(),
                      Figure.of(short).ms(),
                      f"{ratios(long, short).times()}; +{extra.median:.1f} ms ({extra.low:.1f}-{extra.high:.1f})"))
    for move in ANSWER_MOVES if "answers" in parts else ():
        long, short = found[move]
        table.append((f"{at}: {move}, six long formatted answers shown (baseline: six one-line answers)",
                      Figure.of(long).ms(), Figure.of(short).ms(), ratios(long, short).times()))
    if "scroll" not in parts:
        return table
    after, before, most, first, reached = found["scroll"]
    table.append((f"{at}: RSS after `pagedown` through {int(reached[0]):,} entries (baseline: a quarter of the way)",
                  f"{after[0] / 1024:.1f} MB", f"{before[0] / 1024:.1f} MB", f"{after[0] / before[0]:.2f}x"))
    table.append((f"{at}: most widgets mounted meanwhile (baseline: the first page's)", f"{int(most[0])}",
                  f"{int(first[0])}", f"{most[0] / first[0]:.2f}x"))
    return table


def mb(figure: Figure) -> str:
    return f"{figure.median / 1024:.1f} MB ({figure.low / 1024:.1f}-{figure.high / 1024:.1f})"


async def rows(db: Path, repeat: int, *, entries: int = 100_000, sizes: tuple[str, ...] = ("80x24",),
               scroll: int = 2_000, parts: tuple[str, ...] = ("open", "keys", "scroll", "answers")
               ) -> list[tuple[str, str, str, str]]:
    """The long-history rows of the TUI table: measure, lovia, baseline, ratio.

    ``db`` (the driver's demo file) is not used: the long session is built here, at ``entries``.
    """
    with tempfile.TemporaryDirectory() as tmp:
        own = Path(tmp) / "history.db"
        await build(own, entries)
        if "answers" in parts:
            await build_answers(own)
        table: list[tuple[str, str, str, str]] = []
        for size in sizes:
            table += await asyncio.to_thread(rows_for, own, repeat, SIZES[size], entries, scroll, parts)
        return table


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--entries", type=int, default=100_000)
    parser.add_argument("--scroll", type=int, default=2_000, help="entries to page down through")
    parser.add_argument("--size", action="append", choices=sorted(SIZES), help="terminal size (repeatable)")
    parser.add_argument("--parts", default="open,keys,scroll,answers",
                        help="what to measure: open, keys, scroll, answers")
    args = parser.parse_args()
    table = asyncio.run(rows(Path(), args.repeat, entries=args.entries, sizes=tuple(args.size or ["80x24"]),
                             scroll=args.scroll, parts=tuple(args.parts.split(","))))
    print(f"lovia TUI long-history benchmark: median of {args.repeat} (lowest-highest)\n")
    print_table(TUI_COLUMNS, table)


if __name__ == "__main__":
    main()
