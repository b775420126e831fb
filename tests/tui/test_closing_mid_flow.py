"""Closing the app, or a dialog, while a flow of it is still at work ends it cleanly.

Textual cancels a widget's workers only as that widget itself unmounts, after its children are
removed: a flow whose store answered in between looked for a widget no longer there, and the app
ended on a crash report (seen under load in CI: NoMatches for the sessions list, and for the
transcript from the chat panel's own flows).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

from textual import events
from textual.widgets import Static

from lovia.tui.screens.confirm import ConfirmScreen
from lovia.tui.screens.search import SearchScreen
from lovia.tui.screens.trash import TrashScreen
from lovia.tui.widgets.transcript import Transcript
from tests.tui.conftest import make_app, settle, wait_for
from tests.tui.test_new_user_pass import stored_sessions


async def open_the_trash_on_a_deleted_session(pilot) -> None:
    """From the sessions list (shown with ``ctrl+b``), delete the highlighted session, then open the trash on it."""
    app = pilot.app
    await pilot.press("ctrl+b")
    await wait_for(pilot, lambda: app.focused is app.screen.query_one("#session-list"))
    await pilot.press("delete")
    await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen))
    await pilot.press("y")
    await wait_for(pilot, lambda: not isinstance(app.screen, ConfirmScreen))
    await settle(pilot)
    await pilot.press("f8")
    await wait_for(pilot, lambda: isinstance(app.screen, TrashScreen) and app.screen.items)


class AnswersAsItGoes:
    """A store call (the real one) whose answer is given as the widget with id ``widget_id`` is
    being removed: ``asked`` is set once the store has answered; ``note`` is the app's message hook."""

    def __init__(self, call: Callable[..., Awaitable[Any]], widget_id: str) -> None:
        self.call, self.widget_id = call, widget_id
        self.asked, self.going = asyncio.Event(), asyncio.Event()

    def note(self, message) -> None:
        if isinstance(message, events.Unmount) and getattr(message._sender, "id", None) == self.widget_id:
            self.going.set()

    async def __call__(self, *args, **kwargs):
        answer = await self.call(*args, **kwargs)
        self.asked.set()
        await self.going.wait()
        for _ in range(3):  # a few turns of the loop: the widget is out of the DOM, its screen not yet
            await asyncio.sleep(0)
        return answer


async def test_a_flow_whose_store_answers_as_the_app_closes_does_not_crash_it(tmp_path):
    db = tmp_path / "lovia.db"
    await stored_sessions(db, "First", "Second")
    app = make_app(db)
    late = AnswersAsItGoes(app.backend.session_listing, "session-list")
    async with app.run_test(size=(80, 24), message_hook=late.note) as pilot:
        await settle(pilot)
        await open_the_trash_on_a_deleted_session(pilot)
        app.backend.session_listing = late
        await pilot.press("r")  # restored: the flow lists the session again, then opens it
        await wait_for(pilot, late.asked.is_set)
    # Leaving the block closes the app: run_test raises the error that ended it (NoMatches before the fix).


async def test_a_search_that_answers_as_its_screen_closes_does_not_crash_the_app(tmp_path):
    db = tmp_path / "lovia.db"
    await stored_sessions(db, "First", "Second")
    app = make_app(db)
    late = AnswersAsItGoes(app.backend.search, "search-results")
    async with app.run_test(size=(80, 24), message_hook=late.note) as pilot:
        await settle(pilot)
        app.backend.search = late
        await pilot.press("ctrl+f")
        await wait_for(pilot, lambda: isinstance(app.screen, SearchScreen))
        await pilot.press("F", "i", "r", "s", "t")
        await wait_for(pilot, late.asked.is_set)
        await pilot.press("escape")
        await wait_for(pilot, lambda: app.screen is app.main)
        await settle(pilot)
        assert app.is_running  # the search's NoMatches ended it before the fix


class SlowToGo(Static):
    """A widget whose removal takes a while: its unmount handler is at work for 0.3 s."""

    def __init__(self) -> None:
        super().__init__("going")
        self.going = asyncio.Event()

    async def on_unmount(self) -> None:
        self.going.set()
        await asyncio.sleep(0.3)


async def test_a_flow_cancelled_while_it_removes_widgets_leaves_their_removal_to_end(tmp_path):
    # Textual's awaitable removal gathers the removed widgets' own message loops: a flow cancelled
    # while it awaited one cancelled those loops with it, and the app's close then failed on a
    # CancelledError (a resumed run's reshow cancelled as the app closed; seen in CI).
    db = tmp_path / "lovia.db"
    await stored_sessions(db, "First", "Second")
    app = make_app(db)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        transcript = app.main.query_one(Transcript)
        going = SlowToGo()
        await transcript.mount(going)
        flow = transcript.run_worker(transcript.show(None))
        await wait_for(pilot, going.going.is_set)
        flow.cancel()
        await wait_for(pilot, lambda: not going.is_attached, give_up_after=5)
        assert app.is_running
    # Leaving the block closes the app: run_test raises the error that ended it (CancelledError before the fix).


async def test_an_answer_whose_feeder_is_cancelled_as_a_heading_is_replaced_leaves_the_close_clean(tmp_path):
    # The same cause inside a streaming answer: Textual's Markdown.append replaces a heading by
    # awaiting its removal. The app's close cancels the answer's feeder; cancelled there, it
    # cancelled the heading's message loop, and the close failed on its CancelledError.
    from textual.widgets.markdown import MarkdownBlock

    from lovia import Agent
    from lovia.models import ScriptedModel, ScriptedTurn
    from lovia.tui.widgets.assistant_message import AssistantMessageView

    text = "# A title\n\nThe words after the title, and more of them, streamed slowly."
    model = ScriptedModel([ScriptedTurn(text=text, chunk_chars=3, delay=0.05)])
    app = make_app(tmp_path / "lovia.db", agent=Agent(name="assistant", model=model))
    cancelled = asyncio.Event()

    def note(message) -> None:
        sender = getattr(message, "_sender", None)
        if cancelled.is_set() or not isinstance(message, events.Unmount) or not isinstance(sender, MarkdownBlock):
            return
        view = next((node for node in sender.ancestors if isinstance(node, AssistantMessageView)), None)
        if view is not None and view._feeder is not None:
            view._feeder.cancel()  # as the app's close cancels it, while the heading is being removed
            cancelled.set()
            app.exit()

    async with app.run_test(size=(80, 24), message_hook=note) as pilot:
        await pilot.press(*"tell me", "enter")
        await wait_for(pilot, cancelled.is_set)
    # Leaving the block closes the app: run_test raises the error that ended it (CancelledError before the fix).
