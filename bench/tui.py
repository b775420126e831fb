"""TUI benchmarks, as ratios against a baseline in the same run.

    python bench/tui.py [--repeat 5]

Each part lives in its own module and gives rows of one table:
- ``tui_startup``: first paint of the real CLI path against a bare Textual app;
- ``tui_history``: long histories (open, move) against a short session;
- ``tui_sessions``: first paint with 10,000 sessions against 10, and the queries a turn costs;
- ``tui_stream``: long answers streaming (tokens/s, display lag, escape) against a bare Textual Log.
Every figure is the median of --repeat repetitions with the lowest and highest in brackets;
a ratio is taken per repetition (see ``_stats``).
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import tui_history  # noqa: E402
import tui_sessions  # noqa: E402
import tui_startup  # noqa: E402
import tui_stream  # noqa: E402
from _stats import TUI_COLUMNS, print_table  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    from screenshots.demo_data import build

    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "demo.db"
        asyncio.run(build(db, long_entries=10_000))
        table = tui_startup.rows(db, args.repeat)
        table += asyncio.run(tui_history.rows(db, args.repeat))
        table += asyncio.run(tui_sessions.rows(args.repeat))
        table += asyncio.run(tui_stream.rows(args.repeat))
    print(f"lovia TUI benchmark: median of {args.repeat} (lowest-highest)\n")
    print_table(TUI_COLUMNS, table)


if __name__ == "__main__":
    main()
