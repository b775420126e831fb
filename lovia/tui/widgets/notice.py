"""NoticeView: a line the app adds to the transcript (an error, a stop, a handoff)."""

from __future__ import annotations

from rich.text import Text
from textual.widgets import Static

from lovia.tui.widgets.message_view import MessageView


class NoticeView(MessageView):
    DEFAULT_CSS = """
    NoticeView { margin: 1 0 0 0; color: $text-muted; }
    NoticeView.-error { color: $error; }
    NoticeView.-warning { color: $warning; }
    NoticeView.-handoff { color: $secondary; }
    """

    def __init__(self, text: str, kind: str = "info") -> None:
        super().__init__()
        self.text = text
        self.add_class(f"-{kind}")

    def compose(self):
        yield Static(Text(self.text))

    def copy_text(self) -> str:
        return self.text
