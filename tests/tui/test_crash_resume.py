"""A run crashed by SIGKILL in another process shows as crashed and resumes from the runs list."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from lovia import Agent, SQLiteSession, ToolResult, tool
from lovia.builtin_tools import calculate, current_time
from lovia.models import DemoModel
from lovia.tui.screens.confirm import ConfirmScreen
from lovia.tui.widgets.assistant_message import AssistantMessageView
from lovia.tui.widgets.run_header import RunHeader
from lovia.tui.widgets.user_message import UserMessageView
from screenshots.demo_data import build, build_stopped_runs
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


async def highlight_run(pilot, size: tuple[int, int], run_id: str):
    """The runs list with focus in it (over the conversation at 80x24, ctrl+o), ``run_id`` under its
    cursor and in the inspector; the list."""
    app = pilot.app
    if size == (80, 24):
        await pilot.press("ctrl+o")
    run_list = app.screen.query_one("#run-list")
    run_list.focus()
    ids = [run_list.get_option_at_index(i).id for i in range(run_list.option_count)]
    run_list.highlighted = ids.index(run_id)
    await wait_for(pilot, lambda: app.focused is run_list and app.screen.inspected == run_id)
    return run_list


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


@pytest.mark.parametrize("size", [(80, 24), (160, 45)])
async def test_a_resumed_run_with_another_run_shown_after_it_goes_on_under_its_own_header(tmp_path, size):
    """A new user's trial: in a session with two crashed runs, resuming the earlier one drew its
    answer at the foot of the transcript, under the later run ("crashed, not in the conversation
    yet"), as if it answered that run's question. The resumed run moves below the other, whole,
    and goes on there."""
    db = tmp_path / "demo.db"
    await build(db)
    await build_stopped_runs(db)  # s-atlas: run-demo-tools, then run-demo-streaming after it
    app = make_app(db)
    async with app.run_test(size=size) as pilot:
        await settle(pilot)
        await highlight_run(pilot, size, "run-demo-tools")
        await pilot.press("r")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen) or app.main.chat.running)
        if isinstance(app.screen, ConfirmScreen):  # it ran on another model than the demo
            await pilot.press("y")
        await settle(pilot)
        transcript = app.main.chat.transcript
        shown = [child for child in transcript.children if child.display]
        headers = [child.run_id for child in shown if isinstance(child, RunHeader)]
        assert headers.index("run-demo-tools") > headers.index("run-demo-streaming")
        tools_header = next(h for h in shown if isinstance(h, RunHeader) and h.run_id == "run-demo-tools")
        under_it = shown[shown.index(tools_header) + 1:]
        assert not any(isinstance(child, RunHeader) for child in under_it)
        assert isinstance(under_it[0], UserMessageView) and "Email the report" in under_it[0].message.text
        # The answer the resume streamed (the demo's tools have no send_report, nor pay_invoice) is under it.
        last_answer = [child for child in shown if isinstance(child, AssistantMessageView)][-1]
        assert last_answer in under_it and "pay_invoice" in last_answer.copy_text()
