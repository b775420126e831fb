"""Start-up of the real ``lovia`` command against a bare Textual app, in fresh processes.

Each sample is a fresh process. lovia's runs what the ``lovia`` entry point runs
(``lovia.cli.build_parser`` and ``build_app``: the config file, the model, opening and
checking both stores, the tool-output archive, the remembered state) with ``LOVIA_CONFIG`` and
``LOVIA_DATA_DIR`` in a temporary directory holding the demo database as ``lovia.db``; then
the app runs headless. The baseline is a bare Textual app (one Static) started the same way.

- first paint: from just before the process is spawned to the end of the first refresh of the
  app's screen once it is mounted (lovia: its main screen, with the sessions listed and the
  newest session open; bare: its Static), so interpreter start-up and imports count, exit does not;
- idle memory: the process's resident set (VmRSS) once the app is idle after start-up (its
  start-up workers done, then half a second).

Run by ``bench/tui.py``, or alone: ``python bench/tui_startup.py DB [--repeat 5]``.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _stats import TUI_COLUMNS, Figure, print_table, ratios

ROOT = Path(__file__).resolve().parent.parent

CHILD = """
import asyncio, json, sys, time

def resident_bytes():
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    return 0

kind, out = sys.argv[1], sys.argv[2]
if kind == "bare":
    from textual.app import App
    from textual.widgets import Static

    class Bare(App):
        def compose(self):
            yield Static("hello")

    app = Bare()
    ready = lambda app: True
else:
    from lovia.cli import build_app, build_parser

    app = build_app(build_parser().parse_args([]))
    ready = lambda app: app.main_screen is not None and app.main_screen.is_mounted

async def paint_then_exit(pilot):
    while not ready(pilot.app):
        await asyncio.sleep(0.001)
    refreshed = asyncio.Event()
    pilot.app.screen.call_after_refresh(refreshed.set)
    await refreshed.wait()
    painted = time.time()
    await pilot.app.workers.wait_for_complete()
    await pilot.pause(0.5)
    with open(out, "w") as file:
        json.dump({"painted": painted, "rss": resident_bytes()}, file)
    pilot.app.exit()

app.run(headless=True, size=(160, 45), auto_pilot=paint_then_exit)
"""


def sample(kind: str, home: Path) -> tuple[float, int]:
    """One fresh process: seconds to its first paint, and its idle resident memory in bytes."""
    out = home / "sample.json"
    env = {**os.environ, "PYTHONPATH": str(ROOT), "LOVIA_CONFIG": str(home / "config.toml"),
           "LOVIA_DATA_DIR": str(home / "data")}
    # Bytecode is cached, as it is for a user (the first start writes it, see rows()); no model from outside.
    for name in ("LOVIA_MODEL", "LOVIA_BASE_URL", "PYTHONDONTWRITEBYTECODE"):
        env.pop(name, None)
    start = time.time()
    subprocess.run([sys.executable, "-c", CHILD, kind, str(out)], check=True, env=env,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    result = json.loads(out.read_text())
    return result["painted"] - start, result["rss"]


def rows(db: Path, repeat: int) -> list[tuple[str, str, str, str]]:
    """The start-up rows of the TUI table: measure, lovia, baseline, ratio."""
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp)
        (home / "data").mkdir(mode=0o700)
        shutil.copy(db, home / "data" / "lovia.db")
        samples: dict[str, list[tuple[float, int]]] = {"bare": [], "lovia": []}
        sample("lovia", home)  # the first start writes caches (bytecode): not a start a user repeats
        for _ in range(repeat):
            for kind in ("bare", "lovia"):
                samples[kind].append(sample(kind, home))
    paint = {kind: [t for t, _ in got] for kind, got in samples.items()}
    rss = {kind: [m / 2**20 for _, m in got] for kind, got in samples.items()}
    return [
        ("first paint, `lovia` in a fresh process (baseline: a bare Textual app)", Figure.of(paint["lovia"]).ms(),
         Figure.of(paint["bare"]).ms(), ratios(paint["lovia"], paint["bare"]).times()),
        ("idle memory after start-up, RSS (baseline: a bare Textual app)", _mib(Figure.of(rss["lovia"])),
         _mib(Figure.of(rss["bare"])), ratios(rss["lovia"], rss["bare"]).times()),
    ]


def _mib(figure: Figure) -> str:
    return f"{figure.median:.1f} MiB ({figure.low:.1f}-{figure.high:.1f})"


def main() -> None:
    import argparse

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("db", type=Path, help="a lovia database to start on (e.g. screenshots/demo_data.py's)")
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    print_table(TUI_COLUMNS, rows(args.db, args.repeat))


if __name__ == "__main__":
    main()
