"""The timeline of an executing run follows it by reading its checkpoint again each second: a store
that fails meanwhile is told, and the app stays up (real SQLite file, real app at 80x24)."""

from __future__ import annotations

import asyncio

from lovia import Agent, tool
from lovia.models import ScriptedModel, ScriptedTurn, call
from lovia.tui.screens.timeline import FOLLOW_SECONDS, TimelineScreen
from tests.tui.conftest import make_app, settle, told, wait_for


async def test_a_store_failing_while_the_timeline_follows_a_run_is_told_and_the_app_stays_up(tmp_path):
    started, release = asyncio.Event(), asyncio.Event()

    @tool
    async def step() -> str:
        """One slow step."""
        started.set()
        await release.wait()
        return "done"

    model = ScriptedModel([ScriptedTurn(tool_calls=[call("step", {}, call_id="c1")]), "All done."])
    app = make_app(tmp_path / "lovia.db", agent=Agent(name="assistant", model=model, tools=[step]))
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        chat = app.screen.chat
        chat.composer.focus()
        await pilot.press("h", "i", "enter")
        await wait_for(pilot, started.is_set)
        chat.transcript.focus()
        await pilot.press("w")
        await wait_for(pilot, lambda: isinstance(app.screen, TimelineScreen))
        timeline = app.screen
        await app.backend.checkpointer.close()  # the database goes away under the app
        await pilot.pause(FOLLOW_SECONDS * 2.5)  # the follow reads it again meanwhile
        assert app.is_running and app.return_code is None
        assert app.screen is timeline  # what was drawn last stays
        notices = [n.message for n in told(app)]
        assert any(m.startswith("Could not follow the run's timeline:") for m in notices), notices
        await pilot.press("escape")
        release.set()
