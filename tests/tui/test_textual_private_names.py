"""Textual names we rely on that Textual does not promise to keep: they start with an underscore.

Each test says which lovia code needs the name, so a Textual release that renames one fails here,
with a pointer, instead of as a puzzling symptom in a pilot test.
"""

from __future__ import annotations

import inspect

import pytest
from textual.app import App, ComposeResult
from textual.widgets import OptionList, TextArea

from lovia.tui.widgets.composer import Composer
from lovia.tui.widgets.sessions_pane import SessionList


@pytest.mark.parametrize(("ours", "textuals"), [(Composer, TextArea), (SessionList, OptionList)])
def test_the_key_handlers_we_extend_exist(ours, textuals):
    # Composer and SessionList take some keys themselves and pass the rest to super()._on_key,
    # Textual's own key handling (for TextArea: the typing itself).
    assert issubclass(ours, textuals)
    handler = getattr(textuals, "_on_key", None)
    assert handler is not None and inspect.iscoroutinefunction(handler), (
        f"Textual's {textuals.__name__} no longer has an async _on_key: {ours.__module__}.{ours.__name__}._on_key "
        "must hand unhandled keys to Textual another way")
    assert list(inspect.signature(handler).parameters) == ["self", "event"]


class ComposerApp(App[None]):
    def compose(self) -> ComposeResult:
        yield Composer()


async def test_keys_the_composer_passes_on_are_typed():
    app = ComposerApp()
    async with app.run_test() as pilot:
        await pilot.press("h", "i", "space", "x")
        assert app.query_one(Composer).text == "hi x"


async def test_the_apps_notifications_can_be_read():
    # tests/tui read what the app told the user from App._notifications: Textual has no public reader.
    app = App[None]()
    async with app.run_test() as pilot:
        app.notify("saved")
        await pilot.pause()
        assert [notification.message for notification in app._notifications] == ["saved"]
