"""Make the README's screenshots from the real app on a demo database.

    python screenshots/make_screenshots.py

Writes screenshots/*.svg. Times are fixed (see demo_data.py) and shown in UTC.
"""

from __future__ import annotations

import asyncio
import os
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

os.environ["TZ"] = "UTC"
time.tzset()

from lovia import BUILTIN_TOOLS, Agent, MCPServer, SQLiteCheckpointer, SQLiteSession  # noqa: E402
from lovia.models import DemoModel  # noqa: E402
from lovia.tui.app import LoviaApp  # noqa: E402
from lovia.tui.backend import ChatBackend  # noqa: E402
from lovia.tui.config import RememberedState  # noqa: E402
from lovia.tui.session_servers import SessionServers  # noqa: E402
from screenshots.demo_data import build, build_stopped_runs  # noqa: E402

WIDE = (160, 45)
NARROW = (80, 24)


MOVED_KEYS = {"app.help": ("f1", "question_mark"), "main.toggle_sessions": ("f4",), "transcript.copy": ("ctrl+y",)}
"""The keymap scene's [keys] table."""


async def shoot(db: Path, name: str, theme: str, steps, size: tuple[int, int] = WIDE,
                keys: dict[str, tuple[str, ...]] | None = None, mcp: SessionServers | None = None) -> None:
    agent = Agent(name="assistant", tools=BUILTIN_TOOLS, model=DemoModel(delay=0))
    backend = ChatBackend(SQLiteSession(db, wal=True), SQLiteCheckpointer(db, wal=True), agent, mcp=mcp)
    app = LoviaApp(backend, model_label="demo (offline)", theme=theme, state=RememberedState(db.parent / "s.json"),
                   keys=keys)
    async with app.run_test(size=size) as pilot:
        await pilot.pause()
        await steps(pilot)
        await pilot.pause(0.3)
        app.save_screenshot(f"{name}.svg", str(HERE))
    print(f"wrote screenshots/{name}.svg")


async def nothing(pilot) -> None:
    pass


async def runs_and_inspector(pilot) -> None:
    pilot.app.screen.query_one("#run-list").focus()
    await pilot.pause(0.2)


async def help_screen(pilot) -> None:
    await pilot.press("f1")


async def live_tool_call(pilot) -> None:
    await pilot.press("ctrl+n")
    await pilot.press(*"what time is it?", "enter")
    await pilot.pause(0.5)
    await pilot.app.workers.wait_for_complete()
    transcript = pilot.app.screen.chat.transcript
    transcript.focus()
    await pilot.press("end", "up", "enter")


async def runs_over_the_conversation(pilot) -> None:
    await pilot.press("ctrl+o")
    await pilot.pause(0.2)


async def stop_and_continue(pilot) -> None:
    await pilot.press("ctrl+n")
    await pilot.press(*"wait 30", "enter")
    await pilot.pause(0.6)
    await pilot.press("escape")
    await pilot.app.workers.wait_for_complete()
    await pilot.press(*"what time is it?", "enter")
    await pilot.pause(0.5)
    await pilot.app.workers.wait_for_complete()


async def fork_from_a_message(pilot) -> None:
    """The newest session forked at its last stored answer (f in the transcript): the fork is open.

    The fork records when it was made: the clock reads a fixed time meanwhile, as the demo data's do.
    """
    from unittest import mock

    from screenshots.demo_data import BASE_TIME

    from lovia.tui.widgets.assistant_message import AssistantMessageView

    transcript = pilot.app.screen.chat.transcript
    transcript.focus()
    await pilot.pause()
    views = transcript.views
    transcript.selected = max(i for i, view in enumerate(views) if isinstance(view, AssistantMessageView)
                              and transcript.header_above(view).run_id != "run-demo-interrupted")
    await pilot.pause()
    with mock.patch("time.time", return_value=BASE_TIME + 2 * 3600):
        await pilot.press("f")
        await pilot.pause(0.5)
        await pilot.app.workers.wait_for_complete()


async def timeline_of_a_run(pilot) -> None:
    """The waterfall of the run that called a tool: ``w`` on one of its messages."""
    transcript = pilot.app.screen.chat.transcript
    transcript.focus()
    await pilot.pause()
    views = transcript.views
    transcript.selected = next(i for i, view in enumerate(views)
                               if transcript.header_above(view).run_id == "s-atlas-run-1")
    await pilot.press("w")
    await pilot.pause(0.3)


async def search_for_atlas(pilot) -> None:
    """ctrl+f, "atlas" typed: the hits across sessions, the matches highlighted."""
    await pilot.press("ctrl+f")
    await pilot.pause(0.2)
    await pilot.press(*"atlas")
    for _ in range(100):  # until the hits are listed (the screen searches after a pause in typing)
        if getattr(pilot.app.screen, "searched", None) == "atlas":
            break
        await pilot.pause(0.05)


async def runs_stopped(pilot) -> None:
    """The runs list saying how each run stopped, and the inspector on one stopped inside two calls."""
    pilot.app.screen.query_one("#run-list").focus()
    await pilot.press("down", "down")
    await pilot.pause(0.3)
    await pilot.press("f6")


async def shoot_runs_stopped(tmp: Path) -> None:
    db = tmp / "stopped.db"
    await build(db)
    await build_stopped_runs(db)
    await shoot(db, "runs-stopped-dark", "lovia-dark", runs_stopped)


async def trash_screen(pilot) -> None:
    """f8: a deleted session in the trash, to restore or purge."""
    await pilot.press("f8")
    await pilot.pause(0.3)


async def shoot_trash(tmp: Path) -> None:
    db = tmp / "trash.db"
    await build(db)
    async with SQLiteSession(db, wal=True) as session:
        await session.trash_session("s-groceries")
    await shoot(db, "trash-dark", "lovia-dark", trash_screen, (100, 30))


async def mcp_servers_screen(pilot) -> None:
    """f5: the config file's MCP servers; the notes server started (s) to list its tools."""
    await pilot.press("f5")
    await pilot.pause(0.2)
    await pilot.press("s")
    server = pilot.app.backend.mcp.servers[0]
    while server.state != "running":
        await pilot.pause(0.1)
    await pilot.pause(0.3)


async def shoot_mcp_servers(tmp: Path) -> None:
    db = tmp / "mcp.db"
    await build(db)
    # The command as a user's config would name an installed server: a script on PATH.
    bin_dir = tmp / "bin"
    bin_dir.mkdir()
    script = bin_dir / "notes-mcp"
    script.write_text(f"#!/bin/sh\nexec {sys.executable} {HERE / 'mcp_notes_server.py'}\n")
    script.chmod(0o755)
    os.environ["PATH"] = f"{bin_dir}{os.pathsep}{os.environ['PATH']}"
    servers = [MCPServer("notes", command="notes-mcp", log=tmp / "notes.log"),
               MCPServer("web", url="http://127.0.0.1:8931/mcp")]
    mcp = SessionServers(servers, on_by_default={"notes"})
    try:
        await shoot(db, "mcp-servers-dark", "lovia-dark", mcp_servers_screen, (100, 30), mcp=mcp)
    finally:
        await mcp.stop()


async def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "demo.db"
        await build(db)
        await shoot(db, "main-dark", "lovia-dark", nothing)
        await shoot(db, "runs-and-inspector-light", "lovia-light", runs_and_inspector)
        await shoot(db, "help-high-contrast", "lovia-high-contrast", help_screen)
        await shoot(db, "tool-call-dark", "lovia-dark", live_tool_call)
        await shoot(db, "narrow-runs-light", "lovia-light", runs_over_the_conversation, NARROW)
        await shoot(db, "stop-and-continue-dark", "lovia-dark", stop_and_continue, (100, 30))
        await shoot_runs_stopped(Path(tmp))
        await shoot_trash(Path(tmp))
        await shoot_mcp_servers(Path(tmp))
        # The scenes below start from the demo file as built: the ones above sent messages and
        # stopped runs, which changed which session is the newest (the one the app opens).
        for name, scene, size, keys in (("timeline-dark", timeline_of_a_run, (120, 30), None),
                                        ("keymap-dark", help_screen, (100, 30), MOVED_KEYS),
                                        ("search-dark", search_for_atlas, (100, 24), None),
                                        ("fork-dark", fork_from_a_message, NARROW, None)):
            fresh = Path(tmp) / f"{name}.db"
            await build(fresh)
            await shoot(fresh, name, "lovia-dark", scene, size, keys=keys)


if __name__ == "__main__":
    asyncio.run(main())
