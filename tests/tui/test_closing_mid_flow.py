"""Closing the app while a user's flow is still at work ends it cleanly.

Textual cancels a widget's workers only as that widget itself unmounts, after its children are
removed: a flow of the main screen whose store read answered while the app was closing looked for
a list no longer there, and the app ended on a crash report (seen under load in CI: NoMatches for
the sessions list, and for the transcript from the chat panel's own flows).
"""

from __future__ import annotations

import asyncio

from textual import events

from lovia.tui.screens.confirm import ConfirmScreen
from lovia.tui.screens.search import SearchScreen
from lovia.tui.screens.trash import TrashScreen
from lovia.tui.widgets.sessions_pane import SessionList
from tests.tui.conftest import make_app, settle, wait_for
from tests.tui.test_new_user_pass import stored_sessions


async def test_a_flow_whose_store_answers_as_the_app_closes_does_not_crash_it(tmp_path):
    db = tmp_path / "lovia.db"
    await stored_sessions(db, "First", "Second")
    app = make_app(db)
    list_going = asyncio.Event()

    def note_the_list_going(message) -> None:
        if isinstance(message, events.Unmount) and isinstance(message._sender, SessionList):
            list_going.set()

    async with app.run_test(size=(80, 24), message_hook=note_the_list_going) as pilot:
        await settle(pilot)
        await pilot.press("ctrl+b")
        await wait_for(pilot, lambda: app.focused is app.screen.query_one("#session-list"))
        await pilot.press("delete")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen))
        await pilot.press("y")
        await wait_for(pilot, lambda: not isinstance(app.screen, ConfirmScreen))
        await settle(pilot)
        await pilot.press("f8")
        await wait_for(pilot, lambda: isinstance(app.screen, TrashScreen) and app.screen.items)

        listing, asked = app.backend.session_listing, asyncio.Event()

        async def answers_as_the_list_goes(*args, **kwargs):
            answer = await listing(*args, **kwargs)  # the store's own answer, given late
            asked.set()
            await list_going.wait()
            for _ in range(3):  # a few turns of the loop: the list is out of the DOM, its screen not yet
                await asyncio.sleep(0)
            return answer

        app.backend.session_listing = answers_as_the_list_goes
        await pilot.press("r")  # restored: the flow lists the session again, then opens it
        await wait_for(pilot, asked.is_set)
    # Leaving the block closes the app: run_test raises the error that ended it (NoMatches before the fix).


async def test_a_search_that_answers_as_its_screen_closes_does_not_crash_the_app(tmp_path):
    """The same with a dialog: a search whose store answered while escape was removing its screen
    looked for the results list already gone (the screen's workers are cancelled after its widgets)."""
    db = tmp_path / "lovia.db"
    await stored_sessions(db, "First", "Second")
    app = make_app(db)
    results_going = asyncio.Event()

    def note_the_results_going(message) -> None:
        if isinstance(message, events.Unmount) and getattr(message._sender, "id", None) == "search-results":
            results_going.set()

    async with app.run_test(size=(80, 24), message_hook=note_the_results_going) as pilot:
        await settle(pilot)
        search, asked = app.backend.search, asyncio.Event()

        async def answers_as_the_screen_goes(*args, **kwargs):
            answer = await search(*args, **kwargs)  # the store's own answer, given late
            asked.set()
            await results_going.wait()
            for _ in range(3):  # a few turns of the loop: the list is out of the DOM, its screen not yet
                await asyncio.sleep(0)
            return answer

        app.backend.search = answers_as_the_screen_goes
        await pilot.press("ctrl+f")
        await wait_for(pilot, lambda: isinstance(app.screen, SearchScreen))
        await pilot.press("F", "i", "r", "s", "t")
        await wait_for(pilot, asked.is_set)
        await pilot.press("escape")
        await wait_for(pilot, lambda: app.screen is app.main)
        await settle(pilot)
        assert app.is_running
