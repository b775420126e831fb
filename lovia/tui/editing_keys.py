"""Editing keys taken in order with the typing around them, in every box where the user types.

Textual types a printable key into a TextArea or an Input as the widget takes it, but runs the
widget's own key bindings (backspace, the arrows, ctrl+w, enter in an Input) only once the key has
bubbled up to the app: keys that arrive in one burst (fast typing over a slow link, a terminal
sending a line at once) were applied out of order, "backspace X" deleting the X rather than the
letter before it. The boxes lovia's user types in run those bindings as the key arrives instead.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from textual import events
from textual.binding import BindingsMap, BindingType
from textual.widget import Widget


def editing_actions(bindings: Sequence[BindingType]) -> dict[str, str]:
    """A widget class's own keys (its ``BINDINGS``) and the action each runs."""
    return {key: found[0].action for key, found in BindingsMap(bindings).key_to_bindings.items()}


async def run_in_order(widget: Widget, event: events.Key, actions: Mapping[str, str]) -> None:
    """Run ``event``'s editing action on ``widget`` now, in order with the keys around it.

    A key that reaches a widget's key handler has no priority binding, and the focused widget's own
    binding is the one Textual would run for it. An action that does not apply (copy with nothing
    selected) lets the key go on up, to the next binding for it (ctrl+c: how to quit, or an action
    the config file's ``[keys]`` moved there).
    """
    action = actions.get(event.key)
    if action is not None and await widget.app.run_action(action, widget):
        event.stop()
        event.prevent_default()
