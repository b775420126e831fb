"""Switching sessions while a run goes or is being started: refused, and nothing moves.

A refused ``ctrl+n`` still moved focus to the message box (the key's own action focused it
whatever the switch answered), and a switch asked while a message was being sent (the question
about a crashed run open, say) went ahead: the new session showed, and the message, once the
question was answered, ran into the session it was typed in, out of sight.
"""

from __future__ import annotations

from lovia import Agent
from lovia.tui.screens.choice import ChoiceScreen
from lovia.tui.widgets.transcript import Transcript
from tests.tui.conftest import make_app, settle, told, wait_for
from tests.tui.test_run_status import HeldModel, send_and_hold
from tests.tui.test_where_time_went import timed_db


async def test_a_refused_new_session_leaves_focus_where_it_was(tmp_path):
    model = HeldModel(["the answer"])
    app = make_app(tmp_path / "lovia.db", agent=Agent(name="assistant", model=model))
    async with app.run_test(size=(80, 24)) as pilot:
        chat = app.screen.chat
        await send_and_hold(pilot, model)
        session = chat.session_id
        chat.transcript.focus()
        await pilot.pause()
        await pilot.press("ctrl+n")
        await pilot.pause()
        assert "A run is still going: stop it (escape) before switching sessions." in [t.message for t in told(app)]
        assert chat.session_id == session
        assert isinstance(app.focused, Transcript)  # it went to the message box, as if a new session were open
        model.go.set()
        await wait_for(pilot, lambda: not chat.running)


async def test_no_switch_while_a_message_waits_on_the_question_about_a_crashed_run(tmp_path):
    db = tmp_path / "lovia.db"
    await timed_db(db, crashed=True)
    app = make_app(db)
    async with app.run_test(size=(80, 24)) as pilot:
        chat = app.screen.chat
        await app.screen.open_session("s-timed")
        await settle(pilot)
        chat.composer.focus()
        await pilot.pause()
        await pilot.press(*"and now?", "enter")
        await wait_for(pilot, lambda: isinstance(app.screen, ChoiceScreen))
        for switch in (lambda: app.main.open_session(None), lambda: app.main.open_session("s-old")):
            assert await switch() is False
            assert chat.session_id == "s-timed"
        assert "Your message is being sent: switch sessions once its answer has started." in [
            t.message for t in told(app)]
        # Nor is another run resumed meanwhile (from the runs list): its stream would take the transcript.
        assert chat.sending and await chat.resume("run-crashed") is False
        assert "Your message is being sent: resume once its answer has started." in [t.message for t in told(app)]
        await pilot.press("escape")  # the question goes unanswered: nothing is sent
        await settle(pilot)
        assert chat.session_id == "s-timed" and chat.composer.text == "and now?"
        assert await app.main.open_session("s-old") is True  # and now it switches


async def test_the_empty_filter_hint_names_a_key_that_clears_it_while_an_answer_runs(tmp_path):
    """It said "escape clears it", and escape stopped the answer (a priority key) and left the filter."""
    from textual.widgets import Input

    from lovia.tui.widgets.sessions_pane import SessionsPane

    model = HeldModel(["the answer"])
    app = make_app(tmp_path / "lovia.db", agent=Agent(name="assistant", model=model))
    async with app.run_test(size=(160, 45)) as pilot:
        chat = app.screen.chat
        await send_and_hold(pilot, model)
        pane = app.screen.query_one(SessionsPane)
        pane.query_one(Input).focus()
        await pilot.press(*"zzz")

        def hint() -> str:
            return " ".join(str(pane.query_one("#session-list").get_option_at_index(0).prompt).split())

        await wait_for(pilot, lambda: "matches" in hint())
        assert hint() == "No session matches the filter: ctrl+u clears it (escape stops the answer)."
        await pilot.press("ctrl+u")
        await pilot.pause()
        assert pane.query_one(Input).value == "" and chat.running
        await pilot.press(*"zzz")
        model.go.set()
        await wait_for(pilot, lambda: not chat.running)
        await wait_for(pilot, lambda: hint() == "No session matches the filter: escape clears it.")
