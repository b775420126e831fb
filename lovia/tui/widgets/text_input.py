"""TextInput: a one-line box whose editing keys keep their order with the typing around them."""

from __future__ import annotations

from textual import events
from textual.widgets import Input

from lovia.tui.editing_keys import editing_actions, run_in_order

INPUT_ACTIONS = editing_actions(Input.BINDINGS)
"""Input's own keys (backspace, the arrows, enter...) and their actions (see :mod:`lovia.tui.editing_keys`)."""


class TextInput(Input):
    """Textual's Input, with its editing keys and enter run as they arrive (see :mod:`lovia.tui.editing_keys`)."""

    async def _on_key(self, event: events.Key) -> None:
        await super()._on_key(event)  # the typing itself
        await run_in_order(self, event, INPUT_ACTIONS)
