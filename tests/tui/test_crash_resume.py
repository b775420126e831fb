"""A run crashed by SIGKILL in another process shows as crashed and resumes from the runs list."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

from lovia import Agent, SQLiteSession, ToolResult, tool
from lovia.builtin_tools import calculate, current_time
from lovia.models import DemoModel
from tests.tui.conftest import make_app, settle, wait_for

ROOT = Path(__file__).resolve().parents[2]

CHILD = textwrap.dedent(
    """
    import asyncio, sys
    from lovia import Agent, BUILTIN_TOOLS, CheckpointOptions, RunHooks, Runner, SQLiteCheckpointer, SQLiteSession
    from lovia.models import DemoModel

    class SayWhenTheToolStarts(RunHooks):
        async def on_tool_start(self, ctx, call):
            print("IN TOOL", flush=True)

    async def main():
        db = sys.argv[1]
        agent = Agent(name="assistant", tools=BUILTIN_TOOLS, model=DemoModel(delay=0), hooks=SayWhenTheToolStarts())
        await Runner.run(agent, "wait 60", session=SQLiteSession(db, wal=True), session_id="s-crash",
                         checkpoint=CheckpointOptions(SQLiteCheckpointer(db, wal=True), "run-crashed"))

    asyncio.run(main())
    """
)


def crash_a_run(db: Path) -> None:
    child = subprocess.Popen([sys.executable, "-c", CHILD, str(db)], stdout=subprocess.PIPE, text=True,
                             env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert child.stdout.readline().strip() == "IN TOOL"
    os.kill(child.pid, signal.SIGKILL)
    child.wait(timeout=30)


async def test_crash_then_resume_from_the_runs_list(tmp_path):
    db = tmp_path / "lovia.db"
    crash_a_run(db)

    @tool(name="wait")
    async def quick_wait(seconds: float) -> str:
        """Waits no time at all in this test."""
        return f"waited {seconds:g} seconds"

    agent = Agent(name="assistant", tools=[current_time, calculate, quick_wait], model=DemoModel(delay=0))
    app = make_app(db, agent=agent)
    async with app.run_test(size=(160, 45)) as pilot:
        await pilot.pause()
        runs = app.screen.query_one("RunsPane")
        [crashed] = runs.runs
        assert crashed.run_id == "run-crashed" and crashed.head.crashed
        app.screen.query_one("#run-list").focus()
        await wait_for(pilot, lambda: app.screen.inspected == "run-crashed")
        await pilot.press("r")
        await settle(pilot)
        assert runs.runs == []
        assert app.screen.chat.session_id == "s-crash"
    async with SQLiteSession(db, wal=True) as session:
        entries = await session.load("s-crash")
    assert [e.type for e in entries] == ["user", "assistant", "tool_call", "tool_result", "assistant"]
    assert [e.output for e in entries if isinstance(e, ToolResult)] == ["waited 60 seconds"]


async def test_a_run_killed_three_seconds_in_keeps_its_time_and_steps(tmp_path):
    # Its head was saved every 5 s of a wait: killed sooner, it kept neither (no "ran", a finalized
    # partial "0.0s", its timeline empty).
    import time

    from lovia import SQLiteCheckpointer

    db = tmp_path / "lovia.db"
    child = subprocess.Popen([sys.executable, "-c", CHILD, str(db)], stdout=subprocess.PIPE, text=True,
                             env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert child.stdout.readline().strip() == "IN TOOL"
    time.sleep(3.0)
    os.kill(child.pid, signal.SIGKILL)
    child.wait(timeout=30)
    async with SQLiteCheckpointer(db, wal=True) as checkpointer:
        head = (await checkpointer.load("run-crashed")).head
    assert head.active_seconds is not None and head.active_seconds >= 2.0
    assert [step.kind for step in head.steps] == ["model", "tool"] and head.steps[-1].finished_at is None


async def test_a_tool_call_the_kill_cut_off_ends_when_the_run_was_last_known_to_run(tmp_path):
    # Its step, stored by a lease renewal while the tool ran, had no end: a resume hours later
    # counted the whole time up to it as the tool's ("tools 24s" for a run killed 4 s in).
    import time

    from lovia import CheckpointOptions, Runner, SQLiteCheckpointer
    from lovia.timing import steps_from_meta

    db = tmp_path / "lovia.db"
    renewing_often = CHILD.replace("async def main():", "import lovia.runtime.runner as r\n"
                                   "r.PROGRESS_SAVE_SECONDS = 0.1\n\nasync def main():")
    child = subprocess.Popen([sys.executable, "-c", renewing_often, str(db)], stdout=subprocess.PIPE, text=True,
                             env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert child.stdout.readline().strip() == "IN TOOL"
    time.sleep(0.5)  # a few renewals store the call's step, not ended
    os.kill(child.pid, signal.SIGKILL)
    child.wait(timeout=30)
    async with SQLiteCheckpointer(db, wal=True) as checkpointer:
        crashed = (await checkpointer.load("run-crashed")).head
        [stored_call] = [step for step in crashed.steps if step.kind == "tool"]
        assert stored_call.finished_at is None
        time.sleep(1.0)  # the time nobody ran it

        @tool(name="wait")
        async def quick_wait(seconds: float) -> str:
            """Waits no time at all in this test."""
            return f"waited {seconds:g} seconds"

        agent = Agent(name="assistant", tools=[current_time, calculate, quick_wait], model=DemoModel(delay=0))
        async with SQLiteSession(db, wal=True) as session:
            await Runner.run(agent, [], session=session, session_id="s-crash",
                             checkpoint=CheckpointOptions(checkpointer, "run-crashed", if_run_exists="resume_only"))
            [segment] = await session.segments("s-crash")
    cut = [step for step in steps_from_meta(segment.meta) if step.kind == "tool" and step.cut_off]
    assert [step.started_at for step in cut] == [stored_call.started_at]
    assert cut[0].finished_at == crashed.updated_at  # its last renewal, before the kill
