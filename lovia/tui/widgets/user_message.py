"""UserMessageView: what the user said."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.widgets import Static

from lovia.entries import UserMessage
from lovia.stores._search import SearchQuery
from lovia.tui.widgets.message_view import MessageView, code_blocks, holds_code, wrapped_match_row


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

    def holds_code(self) -> bool:
        return holds_code(self.message.text)

    def match_row(self, query: SearchQuery) -> int | None:
        """The row of the first match, the text wrapped as its widget wraps it (a long paste scrolls there)."""
        return wrapped_match_row(self, self.query_one(".text", Static), self.message.text, query)
