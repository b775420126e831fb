"""What was typed and not sent comes back in its session's composer the next time lovia starts.

Real apps, one after another, on one SQLite file and one ``state.json``, as ``lovia`` run again is.
A message typed, then a quit while the question about the session's crashed run was up, was lost.
"""

from __future__ import annotations

import json

import pytest

from lovia.tui.screens.choice import ChoiceScreen
from tests.tui.conftest import make_app, settle, type_and_send, wait_for
from tests.tui.test_crash_resume import crash_a_run

SIZES = [(80, 24), (160, 45)]


async def composer_text_at_start(db) -> tuple[str, str | None]:
    app = make_app(db)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        return app.screen.chat.composer.text, app.screen.chat.session_id


@pytest.mark.parametrize("size", SIZES)
async def test_a_message_typed_when_the_crashed_run_question_was_up_comes_back_after_a_quit(tmp_path, size):
    db = tmp_path / "lovia.db"
    crash_a_run(db)
    app = make_app(db)
    async with app.run_test(size=size) as pilot:
        await settle(pilot)
        assert app.screen.chat.session_id == "s-crash"
        app.screen.query_one("#composer").focus()
        await pilot.press(*"is it done?", "enter")
        await wait_for(pilot, lambda: isinstance(app.screen, ChoiceScreen))  # resume, keep or discard the run
        await pilot.press("ctrl+q")
        await wait_for(pilot, lambda: app.return_code is not None)
    assert await composer_text_at_start(db) == ("is it done?", "s-crash")


async def test_each_sessions_unsent_text_comes_back_in_it_and_a_sent_one_does_not(tmp_path):
    db = tmp_path / "lovia.db"
    app = make_app(db)
    async with app.run_test(size=(160, 45)) as pilot:
        await settle(pilot)
        await type_and_send(pilot, "first session")
        first = app.screen.chat.session_id
        await pilot.press(*"a second thought")
        await pilot.press("ctrl+n")  # a new session: the text stays with the first
        await settle(pilot)
        await type_and_send(pilot, "second session")
        second = app.screen.chat.session_id
        await pilot.press(*"half a line")
        await pilot.press("ctrl+q")
        await wait_for(pilot, lambda: app.return_code is not None)
    unsent = json.loads((tmp_path / "state.json").read_text())["unsent"]
    assert unsent == {first: "a second thought", second: "half a line"}

    app = make_app(db)
    async with app.run_test(size=(160, 45)) as pilot:
        await settle(pilot)
        chat = app.screen.chat
        assert chat.session_id == second and chat.composer.text == "half a line"
        await app.screen.open_session(first)
        await settle(pilot)
        assert chat.composer.text == "a second thought"
        chat.composer.focus()
        await pilot.press("enter")  # sent now
        await settle(pilot)
        await pilot.press("ctrl+q")
        await wait_for(pilot, lambda: app.return_code is not None)
    # Sent, it does not come back; the other session's text left there stays.
    assert json.loads((tmp_path / "state.json").read_text())["unsent"] == {second: "half a line"}
