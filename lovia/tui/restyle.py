"""Changing a container's class without restyling the messages it holds.

Textual restyles every descendant of a widget whose classes change, since a rule may style a
descendant by an ancestor's class. The screen and the chat panel hold the transcript, and a
session of long answers is thousands of widgets (a block of markdown each, code highlighted
again when restyled): a dialog opened and closed, a pane shown, an edit begun cost the better
part of a second each. No rule styles what a message holds by these containers' classes, so
what the transcript holds is left as it is.
"""

from __future__ import annotations

from collections.abc import Iterator

from textual.widget import Widget


def set_class_sparing(container: Widget, add: bool, name: str, spared: Widget) -> None:
    """Add or remove ``container``'s class ``name``, restyling it and what it holds but what is inside
    ``spared`` (``spared`` itself is restyled)."""
    if container.has_class(name) == add:
        return
    container.set_class(add, name, update=False)
    container.app.stylesheet.update_nodes(_widgets_but_inside(container, spared), animate=True)


def _widgets_but_inside(root: Widget, spared: Widget) -> Iterator[Widget]:
    stack = [root]
    while stack:
        widget = stack.pop()
        yield widget
        if widget is not spared:
            stack.extend(reversed(widget.children))
