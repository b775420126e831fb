"""A tool cannot freeze the app: escape stops a run while a sync tool is blocked in its thread,
and a calculation too large to do is an error result, not minutes of a stalled event loop."""

from __future__ import annotations

import threading

from lovia import Agent, SQLiteCheckpointer, tool
from lovia.models import ScriptedModel, ScriptedTurn, call
from lovia.transcript import dangling_tool_calls
from lovia.tui.screens.help import HelpScreen
from lovia.tui.widgets.run_header import RunHeader
from lovia.tui.widgets.tool_call_view import ToolCallView
from tests.tui.conftest import make_app, settle, type_and_send, wait_for


async def test_escape_stops_a_run_whose_sync_tool_is_blocked(tmp_path):
    started, release = threading.Event(), threading.Event()
    threads: list[threading.Thread] = []

    @tool
    def blocking() -> str:
        """Block until released."""
        threads.append(threading.current_thread())
        started.set()
        release.wait()
        return "the late result"

    db = tmp_path / "lovia.db"
    model = ScriptedModel([ScriptedTurn(tool_calls=[call("blocking", call_id="c-block")]), "never asked"])
    app = make_app(db, agent=Agent(name="assistant", model=model, tools=[blocking]))

    async def assert_interrupted_with_the_call_dangling() -> None:
        async with SQLiteCheckpointer(db, wal=True) as checkpointer:
            [run] = await checkpointer.list_runs()
            snapshot = await checkpointer.load(run.run_id)
        assert snapshot.head.status == "interrupted"
        assert [c.call_id for c in dangling_tool_calls(snapshot.entries)] == ["c-block"]

    try:
        async with app.run_test(size=(160, 45)) as pilot:
            await pilot.press(*"go", "enter")
            await wait_for(pilot, started.is_set)
            chat = app.screen.chat
            assert chat.running

            await pilot.press("escape")
            await wait_for(pilot, lambda: not chat.running)
            assert threads[0].is_alive()  # stopped while the tool's thread is still blocked
            assert [r.head.status for r in app.screen.query_one("RunsPane").runs] == ["interrupted"]
            assert chat.transcript.query_one(RunHeader).has_class("-interrupted")
            await assert_interrupted_with_the_call_dangling()

            await pilot.press("ctrl+t")  # the app answers other keys meanwhile
            await pilot.pause()
            assert app.theme == "lovia-light"
            await pilot.press("f1")
            await pilot.pause()
            assert isinstance(app.screen, HelpScreen)
            await pilot.press("escape")
            await pilot.pause()
            assert not isinstance(app.screen, HelpScreen)

            release.set()  # the tool returns to a run that has ended: its result goes nowhere
            await wait_for(pilot, lambda: not threads[0].is_alive())
            await settle(pilot)
            assert app.screen.chat.transcript.query_one(ToolCallView).result is None
            await assert_interrupted_with_the_call_dangling()
            assert model.remaining == 1
    finally:
        release.set()


async def test_the_calculation_from_the_issue_answers_with_an_error_instead_of_freezing_the_app(tmp_path):
    app = make_app(tmp_path / "lovia.db")  # the offline demo model and the built-in tools
    async with app.run_test(size=(160, 45)) as pilot:
        await type_and_send(pilot, "calculate ((9^999)^999)^999")
        transcript = app.screen.chat.transcript
        view = transcript.query_one(ToolCallView)
        assert view.result is not None and view.result.is_error
        assert "would have about 952,336 digits" in view.result.output
        assert transcript.query_one(RunHeader).has_class("-completed")
