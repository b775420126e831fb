"""MessageView: the base of every selectable item in the transcript."""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from textual.widget import Widget


class MessageView(Widget):
    """Something the transcript's cursor can select and copy."""

    DEFAULT_CSS = """
    MessageView { height: auto; padding: 0 1; }
    MessageView.-selected { background: $boost; border-left: thick $accent; }
    """

    def copy_text(self) -> str:
        """What ``copy`` puts on the clipboard."""
        return ""


@runtime_checkable
class Expandable(Protocol):
    """A view with more to show than its first lines; ``enter`` on it calls ``toggle``."""

    def toggle(self) -> None:
        """Show everything, or fold back to the summary."""
