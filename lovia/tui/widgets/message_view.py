"""MessageView: the base of every selectable item in the transcript."""

from __future__ import annotations

import functools
from typing import Protocol, runtime_checkable

from markdown_it import MarkdownIt
from textual.content import Content
from textual.widget import Widget
from textual.widgets import Static

from lovia.stores._search import SearchQuery, match_to_show
from lovia.tui.restyle import set_class_sparing


class MessageView(Widget):
    """Something the transcript's cursor can select and copy."""

    DEFAULT_CSS = """
    /* The cursor's bar has its column on every message, blank off the cursor: moving the cursor
       changes colours only, so it lays out no message again and the text never shifts. */
    MessageView { height: auto; padding: 0 1; border-left: blank; }
    MessageView.-selected { background: $boost; border-left: thick $accent; }
    """

    def select(self, selected: bool = True) -> None:
        """Show (or stop showing) the transcript's cursor on this message.

        Only this widget is restyled: no rule styles what it holds by the cursor, and Textual's
        default restyles every descendant (an answer's hundreds of blocks, its code highlighted
        again: a tenth of a second a key). The new background refreshes what it holds.
        """
        set_class_sparing(self, selected, "-selected", spared=self)

    def copy_text(self) -> str:
        """What ``copy`` puts on the clipboard."""
        return ""

    def copy_what(self) -> str:
        """What :meth:`copy_text` is, as the notice after a copy names it."""
        return "message"

    def code_blocks(self) -> list[str]:
        """The code blocks of the message, whose last ``y`` copies."""
        return []

    def holds_code(self) -> bool:
        """Whether :meth:`code_blocks` finds any (cheaper, and asked for each message the cursor is on)."""
        return False

    def scroll_code(self, direction: int) -> bool | None:
        """Scroll the code blocks wider than their view half a view sideways (``direction`` 1 right,
        -1 left), as far as they go; whether any moved, ``None`` when none is wider than its view."""
        return None

    def match_row(self, query: SearchQuery) -> int | None:
        """Rows from this view's top to the first row that shows a match of ``query`` (a search hit
        opened here is scrolled to it); ``None`` when the view cannot say, and its top will do."""
        return None

    def reveal(self, query: SearchQuery) -> bool:
        """Unfold what hides the first match of ``query``, before a search hit is scrolled to it;
        True when something unfolds (:meth:`match_row` is then asked once that is laid out). Most
        views hide nothing."""
        return False


def wrapped_match_row(view: Widget, shown: Static, text: str, query: SearchQuery) -> int | None:
    """Rows from ``view``'s top to the row of ``shown`` (drawing ``text`` wrapped, as a ``Static``
    wraps it) that ends the match of ``query`` in ``text`` shown first (:func:`match_to_show`);
    ``None``: no match, or not laid out."""
    match = match_to_show(text, query)
    if not match or not shown.content_region.width:
        return None
    # The rows of the text up to the end of the match's first word: that word ends on the last.
    rows = Content(text[:match[1]]).wrap(shown.content_region.width)
    return shown.content_region.y - view.region.y + len(rows) - 1


def code_blocks(markdown: str) -> list[str]:
    """The contents of the code blocks in ``markdown``, as Textual's ``Markdown`` parses it.

    A fence inside a line (a quote of three backticks in a sentence) opens no block, and a block
    inside a list or a quote is one: each is what Textual's ``Markdown`` draws as code.
    """
    tokens = MarkdownIt("gfm-like").parse(markdown)  # Textual's Markdown's parser, which the views keep
    return [token.content.rstrip("\n") for token in tokens if token.type in ("fence", "code_block")]


def holds_code(markdown: str) -> bool:
    """Whether ``markdown`` has a code block, as :func:`code_blocks` finds them. Most messages have
    no fence and no indented line, and are told so without parsing; a parse is kept for the next ask
    (the footer asks as the cursor moves)."""
    if not ("```" in markdown or "~~~" in markdown or "\n    " in markdown or "\n\t" in markdown
            or markdown.startswith(("    ", "\t"))):
        return False
    return bool(_code_blocks_kept(markdown))


@functools.lru_cache(maxsize=32)
def _code_blocks_kept(markdown: str) -> tuple[str, ...]:
    return tuple(code_blocks(markdown))


@runtime_checkable
class Expandable(Protocol):
    """A view that may have more to show than its first lines; ``enter`` on it calls ``toggle``."""

    @property
    def folds(self) -> bool:
        """Whether there is more to show than its first lines (``toggle`` does something)."""
        ...

    @property
    def expanded(self) -> bool:
        """Whether it shows everything now (``enter`` folds it back)."""
        ...

    def toggle(self) -> None:
        """Show everything, or fold back to the summary."""
