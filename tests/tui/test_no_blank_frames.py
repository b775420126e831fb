"""A conversation shown again (an undo, a regenerate, another session opened) never draws a frame
with its messages missing.

A new user's trial, capturing the terminal every quarter second: after an undo the conversation was
blank, then drawn, then blank, then drawn, for over a second; after ``ctrl+g`` a frame showed only
"Waiting for demo…". The transcript removed its views, then mounted the new ones, and frames were
drawn in between: with the old views gone, and with the new ones laid out before their text was in
them (no height). Each frame the app draws is looked at here as it goes to the terminal.
"""

from __future__ import annotations

import pytest

from lovia.tui.screens.confirm import ConfirmScreen
from tests.tui.conftest import make_app, settle, type_and_send, wait_for
from tests.tui.test_new_user_pass import stored_sessions

SIZES = [(80, 24), (160, 45)]


def record_frames(app) -> list[list[tuple[str, int]]]:
    """From now on, for each frame of the main screen the app draws: the views the transcript shows,
    each by its type and height (no height: drawn as nothing). ``App._display`` is where Textual hands
    a frame to the terminal (private: this test breaks loudly if it goes)."""
    frames: list[list[tuple[str, int]]] = []
    display = app._display

    def recorded(screen, renderable):
        if renderable is not None and not app._batch_count and screen is app.main:
            transcript = app.main.chat.transcript
            frames.append([(type(view).__name__, view.size.height) for view in transcript.children
                           if view.display and view is not transcript._live_message])
        return display(screen, renderable)

    app._display = recorded
    return frames


def assert_never_blank(frames: list[list[tuple[str, int]]], *, messages: int) -> None:
    """Every frame shows ``messages`` messages at least (a live answer with nothing streamed yet
    aside), none of them drawn as nothing."""
    assert frames, "no frame drawn"
    for views in frames:
        assert all(height for _, height in views), views
        assert sum(name.endswith("MessageView") for name, _ in views) >= messages, views


async def _regenerated(pilot) -> None:
    await type_and_send(pilot, "hello")
    await type_and_send(pilot, "second question")
    await pilot.press("ctrl+g")
    await settle(pilot)


@pytest.mark.parametrize("size", SIZES)
async def test_an_undo_never_draws_the_conversation_blank(tmp_path, size):
    app = make_app(tmp_path / "lovia.db")
    async with app.run_test(size=size) as pilot:
        await _regenerated(pilot)
        app.main.chat.transcript.focus()
        await pilot.pause()
        await pilot.press("u")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen))
        frames = record_frames(app)
        await pilot.press("y")
        await settle(pilot)
        await pilot.pause(0.3)
        assert_never_blank(frames, messages=4)


@pytest.mark.parametrize("size", SIZES)
async def test_a_regenerate_never_draws_the_conversation_blank(tmp_path, size):
    app = make_app(tmp_path / "lovia.db")
    async with app.run_test(size=size) as pilot:
        await _regenerated(pilot)
        frames = record_frames(app)
        await pilot.press("ctrl+g")
        await settle(pilot)
        await pilot.pause(0.3)
        assert_never_blank(frames, messages=3)  # the message asked again stays in sight


@pytest.mark.parametrize("size", SIZES)
async def test_opening_another_session_never_draws_the_conversation_blank(tmp_path, size):
    db = tmp_path / "lovia.db"
    _, second = await stored_sessions(db, "First", "Second")
    app = make_app(db)
    async with app.run_test(size=size) as pilot:
        await settle(pilot)
        frames = record_frames(app)
        await app.main.open_picked(second)
        await settle(pilot)
        await pilot.pause(0.3)
        assert app.main.chat.session_id == second
        assert_never_blank(frames, messages=2)
