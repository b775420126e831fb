"""UserMessageView: what the user said."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.content import Content
from textual.widgets import Static

from lovia.entries import UserMessage
from lovia.stores._search import SearchQuery, match_text
from lovia.tui.widgets.message_view import MessageView, code_blocks


class UserMessageView(MessageView):
    DEFAULT_CSS = """
    UserMessageView { margin: 1 0 0 0; }
    UserMessageView > Static { color: $text; }
    UserMessageView .who { color: $primary; text-style: bold; }
    """

    def __init__(self, message: UserMessage) -> None:
        super().__init__()
        self.message = message

    def compose(self) -> ComposeResult:
        yield Static("you", classes="who")
        yield Static(Text(self.message.text), classes="text")

    def copy_text(self) -> str:
        return self.message.text

    def code_blocks(self) -> list[str]:
        return code_blocks(self.message.text)

    def match_row(self, query: SearchQuery) -> int | None:
        """The row of the first match, the text wrapped as its widget wraps it (a long paste scrolls there)."""
        matches = match_text(self.message.text, query)
        shown = self.query_one(".text", Static)
        if not matches or not shown.content_region.width:
            return None
        # The rows of the text up to the end of the match's first word: that word ends on the last.
        rows = Content(self.message.text[:matches[0][1]]).wrap(shown.content_region.width)
        return shown.content_region.y - self.region.y + len(rows) - 1
