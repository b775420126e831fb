"""Start-up of the real app against a bare Textual app, in fresh processes.

First paint: a fresh process that starts lovia headless on a demo database and exits after its
first paint, against a bare Textual app (one Static) doing the same; both include interpreter
start-up and imports. Run by ``bench/tui.py``.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from _stats import Figure, ratios

ROOT = Path(__file__).resolve().parent.parent

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


def rows(db: Path, repeat: int) -> list[tuple[str, str, str, str]]:
    """The start-up rows of the TUI table: measure, lovia, baseline, ratio."""
    bare, lovia = [], []
    for _ in range(repeat):
        bare.append(first_paint("bare", db))
        lovia.append(first_paint("lovia", db))
    return [("first paint, fresh process (baseline: a bare Textual app)", Figure.of(lovia).ms(),
             Figure.of(bare).ms(), ratios(lovia, bare).times())]
