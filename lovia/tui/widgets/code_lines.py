"""CodeLines: a code block's highlighted lines, one widget that renders a line at a time.

A streamed code block grows by a line every few tokens. Shown as labels, each growth lays out
every label of the block (a 2,000-line block is 63 labels of 32 lines) and renders the last label
whole; the screen's refresh then took longer than a frame, and Textual's refresh timer skipped to
the frame after next (bench/tui_stream.py: a display lag p95 of 81 ms at 200 tokens/s on a quiet
machine, against the 50 ms target). Here the block is one widget drawn through Textual's line API:
a growth lays out one widget and renders the line that changed; after a resize only the rows on
screen are asked for, and they come from a cache of rendered lines.
"""

from __future__ import annotations

from collections.abc import Sequence

from rich.cells import cell_len
from textual.content import Content
from textual.geometry import Region, Size
from textual.selection import Selection
from textual.strip import Strip
from textual.style import Style
from textual.visual import Visual
from textual.widget import Widget

TAB_SIZE = 8
"""As Textual's ``Content`` draws a tab."""

ROOM_LINES = 8
"""Blank rows at most that a growing block keeps below its last line, so that it lays out once per that many.

Fewer in a short block (a quarter of its rows) and on a small screen (a sixth of its rows: 4 in
an 80x24 terminal, where 8 would blank half the transcript, and where a layout costs less). A
streamed code block keeps them (:class:`CodeLines`), and so does a streamed answer as a whole
(:class:`~lovia.tui.widgets.streaming_markdown.StreamingMarkdown`)."""


def room_for(rows: int, screen_rows: int) -> int:
    """The blank rows a growing block of ``rows`` rows keeps below them on a screen ``screen_rows`` high."""
    return min(ROOM_LINES, rows // 4, screen_rows // 6)


def kept_height(needed: int, height: int, room: int) -> int:
    """The height of a growing block that needs ``needed`` rows and is ``height`` high.

    Kept while ``needed`` fits with at most ``room`` blank rows left below; else ``needed`` and
    the room: the block changes size once per ``room`` rows it grows by, not at every row.
    """
    return height if needed <= height <= needed + room else needed + room


def same_paint(one: Content, other: Content) -> bool:
    """Whether two contents paint the same (``Content.__eq__`` compares the text only)."""
    return one.plain == other.plain and list(one.spans) == list(other.spans)


def _width(line: Content) -> int:
    """The cells ``line`` takes as drawn: its tabs expanded (``cell_len`` counts a tab as none, and
    a line measured short would wrap, its end lost; Textual's label wraps it onto a row of its own)."""
    plain = line.plain
    return line.expand_tabs(TAB_SIZE).cell_length if "\t" in plain else cell_len(plain)


class CodeLines(Widget):
    """Lines of highlighted code, painted exactly as a ``Label(Content("\\n".join(lines)), expand=True)``,
    but for a line that tabs make wider than the label measures: drawn whole here, wrapped there.

    Promises: :meth:`show` renders again only the lines that changed, and lays the widget out
    again only when its size changed (a line added beyond the room kept for growing, a line
    removed, a line wider than the block); a line once rendered is not rendered again until it,
    the width, the style or the selection changes. Selecting text with the mouse and copying it
    work as in a label.
    """

    DEFAULT_CSS = """
    CodeLines { width: auto; height: auto; min-height: 1; }
    """

    def __init__(self, lines: Sequence[Content] = (), *, classes: str | None = None) -> None:
        super().__init__(classes=classes)
        self._lines: list[Content] = list(lines) or [Content("")]
        self._widest = max(map(_width, self._lines))
        self._height = len(self._lines)
        self._rendered: dict[int, Strip] = {}
        self._rendered_for: tuple[object, ...] | None = None

    @property
    def lines(self) -> Sequence[Content]:
        return self._lines

    @property
    def text(self) -> str:
        return "\n".join(line.plain for line in self._lines)

    def show(self, lines: Sequence[Content], start: int = 0, *, growing: bool = False) -> None:
        """Show ``lines`` in place of the lines from ``start`` on (those before are kept).

        ``growing``: more lines are coming, so the block keeps blank room below its last line (see
        :data:`ROOM_LINES`) and lays out again only once they fill it, instead of at every line: a
        layout is of the whole screen, and costs a frame and more in a long transcript. Shown with
        ``growing`` false, the block takes its lines' height.
        """
        old = self._lines
        if start > len(old):
            raise ValueError(f"lines shown from {start}, after the {len(old)} lines there are")
        new = old[:start] + list(lines)
        if not new:
            new = [Content("")]
        changed = [y for y in range(start, max(len(old), len(new)))
                   if y >= len(old) or y >= len(new) or not same_paint(old[y], new[y])]
        height = self._height_for(len(new), growing)
        if not changed and height == self._height:
            return
        self._lines = new
        widest = self._widest
        if any(y < len(old) and _width(old[y]) == widest for y in changed):
            widest = max(map(_width, new))  # the widest line changed: measure them all again
        else:
            widest = max([widest, *(_width(new[y]) for y in changed if y < len(new))])
        for y in changed:
            self._rendered.pop(y, None)
        # The width is the container's unless a line is wider: a longest line growing within it
        # changes no size.
        resized = height != self._height or (widest != self._widest and max(widest, self._widest) >= self.size.width)
        self._height, self._widest = height, widest
        if resized:
            self.refresh(layout=True)
        else:
            width = self.size.width
            self.refresh(*(Region(0, y, width, 1) for y in changed))

    def _height_for(self, count: int, growing: bool) -> int:
        """The rows for ``count`` lines: room kept below them while they grow."""
        if not growing:
            return count
        return kept_height(count, self._height, room_for(count, self.screen.size.height if self.is_attached else 0))

    @property
    def room(self) -> int:
        """The blank rows kept below the lines for them to grow into."""
        return self._height - len(self._lines)

    def get_content_width(self, container: Size, viewport: Size) -> int:
        return max(container.width, self._widest)  # a label's ``expand``: as wide as its container at least

    def get_content_height(self, container: Size, viewport: Size, width: int) -> int:
        return self._height

    def get_selection(self, selection: Selection) -> tuple[str, str] | None:
        return selection.extract(self.text), "\n"

    def render_line(self, y: int) -> Strip:
        style = self.visual_style
        selection = self.text_selection
        context = (self.size.width, style, self.app.theme, selection)
        if context != self._rendered_for:
            self._rendered.clear()
            self._rendered_for = context
        strip = self._rendered.get(y)
        if strip is None:
            strip = self._rendered[y] = self._render_one(y, style, selection)
        return strip

    def _render_one(self, y: int, style: Style, selection: Selection | None) -> Strip:
        """Line ``y`` as the label's render of all the lines gives it (its mouse offsets included)."""
        if y >= len(self._lines):
            return Strip.blank(self.size.width, style.rich_style)
        line = self._lines[y]
        if selection is not None and (span := selection.get_span(y)) is not None:
            start, end = span
            selected = Style.from_styles(self.screen.get_component_styles("screen--selection"))
            line = line.stylize(selected, start, len(line.plain) if end == -1 else end)
        strips = Visual.to_strips(self, line, self.size.width, 1, style, apply_selection=False)
        strip = strips[0] if strips else Strip.blank(self.size.width, style.rich_style)
        # Rendered alone, the line says it is the first: the mouse's selection needs its own row.
        return strip.apply_offsets(0, y) if y else strip
