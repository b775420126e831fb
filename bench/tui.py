"""TUI benchmarks, as ratios against a baseline in the same run.

    python bench/tui.py [--repeat 5]

- first paint: a fresh process that starts lovia headless on a demo database and exits after
  its first paint, against a bare Textual app (one Static) doing the same; both include
  interpreter start-up and imports;
- open a session: opening a 10,000-entry session in the running app against opening a
  10-entry one (until the screen has painted it).
Best of --repeat.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

CHILD = """
import sys
from textual.app import App
from textual.widgets import Static

async def paint_then_exit(pilot):
    await pilot.pause()
    pilot.app.exit()

if sys.argv[1] == "bare":
    class Bare(App):
        def compose(self):
            yield Static("hello")
    app = Bare()
else:
    from lovia import Agent, BUILTIN_TOOLS, SQLiteCheckpointer, SQLiteSession
    from lovia.models import DemoModel
    from lovia.tui.app import LoviaApp
    from lovia.tui.backend import ChatBackend
    db = sys.argv[2]
    agent = Agent(name="assistant", tools=BUILTIN_TOOLS, model=DemoModel())
    app = LoviaApp(ChatBackend(SQLiteSession(db, wal=True), SQLiteCheckpointer(db, wal=True), agent),
                   model_label="demo (offline)")
app.run(headless=True, size=(160, 45), auto_pilot=paint_then_exit)
"""


def first_paint(kind: str, db: Path) -> float:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", CHILD, kind, str(db)], check=True, env=env,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - start


async def open_times(db: Path, repeat: int) -> tuple[float, float, int]:
    from lovia import BUILTIN_TOOLS, Agent, SQLiteCheckpointer, SQLiteSession
    from lovia.models import DemoModel
    from lovia.tui.app import LoviaApp
    from lovia.tui.backend import ChatBackend
    from screenshots.demo_data import LONG_SESSION

    agent = Agent(name="assistant", tools=BUILTIN_TOOLS, model=DemoModel())
    app = LoviaApp(ChatBackend(SQLiteSession(db, wal=True), SQLiteCheckpointer(db, wal=True), agent),
                   model_label="demo (offline)")
    long_times, short_times = [], []
    async with app.run_test(size=(160, 45)) as pilot:
        await pilot.pause()
        main = app.main
        for _ in range(repeat):
            for session_id, times in ((LONG_SESSION, long_times), ("s-groceries", short_times)):
                start = time.perf_counter()
                await main.open_session(session_id)
                await pilot.pause()
                times.append(time.perf_counter() - start)
        mounted = len(main.chat.transcript.children)
    return min(long_times), min(short_times), mounted


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    from screenshots.demo_data import build

    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "demo.db"
        asyncio.run(build(db, long_entries=10_000))
        bare = min(first_paint("bare", db) for _ in range(args.repeat))
        lovia = min(first_paint("lovia", db) for _ in range(args.repeat))
        long, short, _ = asyncio.run(open_times(db, args.repeat))
    print(f"lovia TUI benchmark: best of {args.repeat}\n")
    print("| measure | lovia | baseline | ratio |")
    print("|---|---|---|---|")
    print(f"| first paint, fresh process (baseline: bare Textual app) | {lovia * 1000:.0f} ms | {bare * 1000:.0f} ms "
          f"| {lovia / bare:.2f}x |")
    print(f"| open a 10,000-entry session (baseline: a 10-entry session) | {long * 1000:.0f} ms "
          f"| {short * 1000:.0f} ms | {long / short:.2f}x |")


if __name__ == "__main__":
    main()
