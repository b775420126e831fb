"""Long histories in the running app: opening a long session against a short one.

Run by ``bench/tui.py``.
"""

from __future__ import annotations

import time
from pathlib import Path

from _stats import Figure, ratios


async def open_samples(db: Path, repeat: int) -> tuple[list[float], list[float]]:
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
    return long_times, short_times


async def rows(db: Path, repeat: int) -> list[tuple[str, str, str, str]]:
    """The long-history rows of the TUI table: measure, lovia, baseline, ratio."""
    long, short = await open_samples(db, repeat)
    return [("open a 10,000-entry session (baseline: a 10-entry session)", Figure.of(long).ms(),
             Figure.of(short).ms(), ratios(long, short).times())]
