"""NoticeView: a line the app adds to the transcript (an error, a stop, a handoff)."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.reactive import reactive
from textual.widgets import Static

from lovia.tui import format
from lovia.tui.widgets.message_view import MessageView


class NoticeView(MessageView):
    """``text``'s first line, then ``hint``; the rest of a multi-line ``text`` shows on ``enter``.

    A server's error can be a whole traceback: folded, it takes one line of the transcript
    and says how many more there are, and the hint (what to do next) stays in view.
    """

    DEFAULT_CSS = """
    NoticeView { margin: 1 0 0 0; color: $text-muted; }
    NoticeView.-error { color: $error; }
    NoticeView.-warning { color: $warning; }
    NoticeView.-handoff { color: $secondary; }
    NoticeView .hint { color: $text-muted; }
    """

    expanded: reactive[bool] = reactive(False, init=False)

    def __init__(self, text: str, kind: str = "info", *, hint: str = "") -> None:
        super().__init__()
        self.text = text
        self.hint = hint
        self.summary, _, self.details = text.partition("\n")
        self.add_class(f"-{kind}")

    def compose(self) -> ComposeResult:
        yield Static(self._body(), classes="body")
        if self.hint:
            yield Static(Text(self.hint), classes="hint")

    def _body(self) -> Text:
        if not self.details or self.expanded:
            return Text(self.text)
        more = format.count(self.details.count("\n") + 1, "more line")
        return Text.assemble(self.summary, (f"  … {more} (enter shows them)", "dim"))

    def watch_expanded(self) -> None:
        self.query_one(".body", Static).update(self._body())
        self.refresh_bindings()  # enter folds it now: the footer says so

    @property
    def folds(self) -> bool:
        return bool(self.details)

    def toggle(self) -> None:
        """Show the whole text, or fold it back to its first line."""
        if self.details:
            self.expanded = not self.expanded

    def copy_text(self) -> str:
        return self.text
