"""MessageView: the base of every selectable item in the transcript."""

from __future__ import annotations

from textual.widget import Widget


class MessageView(Widget):
    """Something the transcript's cursor can select and copy.

    ``flat_index`` is the entry's position in the session's stored transcript (what rewind
    counts), or ``None`` for entries of runs still in flight.
    """

    DEFAULT_CSS = """
    MessageView { height: auto; padding: 0 1; }
    MessageView.-selected { background: $boost; border-left: thick $accent; }
    """

    def __init__(self, flat_index: int | None = None, **kwargs) -> None:
        super().__init__(**kwargs)
        self.flat_index = flat_index

    def copy_text(self) -> str:
        """What ``copy`` puts on the clipboard."""
        return ""
