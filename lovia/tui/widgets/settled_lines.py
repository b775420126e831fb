"""Widgets that will not change again, shown as the lines they painted: one widget in place of many.

Textual lays out the whole screen whenever a widget changes size, and the cost grows with the
number of widgets on it. A long streamed answer mounts hundreds (~950 for 50 sections of
headings, lists, code and quotes), and it grows on every update, so each update relaid all of
them out (170 ms each late in that answer): at 200 tokens/s its display fell seconds behind.

Capturing the lines costs about what rendering them does (~0.5-1 ms a row here), once: worth it
for markdown blocks (a widget or more per line or two), not for a code block (one widget that
draws its lines, :mod:`lovia.tui.widgets.code_lines`), which stays as it is.

Blocks an answer has finished will never change while it streams. A container that
:class:`FoldsSettled` hides such children (``display: none``: Textual no longer lays them out)
and shows in their place a :class:`SettledLines`, one widget holding the lines they painted,
captured once, appended to as more settle. A per-token update then lays out a few widgets.

Promise: a fold paints exactly what the hidden children painted (the rows between them
included); when what they would paint may differ (another width, background or theme, a
horizontal scroll), or one of them must change, the container unfolds: the children show again,
laid out and painted by Textual as before.
"""

from __future__ import annotations

from collections.abc import Sequence

from textual import events
from textual._compositor import Compositor
from textual.geometry import Region, Spacing
from textual.strip import Strip
from textual.widget import Widget

FOLD_AT = 4
"""Children are folded once this many have settled: fewer cost the layout less than a fold costs.

Measured (bench/tui_stream.py's mixed answer, steady at 200 tokens/s, twelve runs each
interleaved, 2026-12-05, once the answer kept room to grow): a display lag p95 of ~51 ms at the
median with 4 against ~60 ms with 8, the same sustained rate; 2 (four runs) and 16 (three)
showed no gain over 4."""


def painted_rows(container: Widget, top: int, bottom: int) -> list[Strip] | None:
    """What ``container`` and its displayed descendants paint in its rows ``top`` to ``bottom``.

    Rows count from the container's top edge, and each strip spans its width. ``None`` when the
    screen has not laid out the container as it is now (a child was mounted or resized since the
    last refresh): the rows are not known yet.
    """
    width = container.outer_size.width
    rows = Region(0, top, width, bottom - top)
    origin = container.region.offset
    if not rows or container.region.size != container.outer_size:
        return None
    # A compositor of its own lays the container out at the origin (Textual's arrangement, cached
    # from the screen's layout) and gives each descendant's region, clip and paint order.
    compositor = Compositor()
    compositor.reflow(container, container.outer_size)
    lines = container.render_lines(rows)  # its own background, under the children
    for widget, geometry in reversed(compositor.layers):  # back to front
        shown = geometry.region.intersection(geometry.clip).intersection(rows)
        if widget is container or not shown:
            continue
        if widget.region.translate(-origin) != geometry.region:  # the screen has not laid it out so
            return None
        strips = widget.render_lines(shown.translate(-geometry.region.offset))
        for y, strip in zip(shown.line_range, strips, strict=False):
            line = lines[y - top]
            lines[y - top] = Strip.join([line.crop(0, shown.x), strip.crop(0, shown.width),
                                         line.crop(shown.right, width)])
    # What the mouse would act on belongs to the hidden widgets (links, offsets): drop it.
    return [line.discard_meta() for line in lines]


class SettledLines(Widget):
    """The captured lines of folded children, painted as they are; empty and not displayed until a fold."""

    DEFAULT_CSS = """
    SettledLines { width: 1fr; height: auto; display: none; }
    """
    ALLOW_SELECT = False  # its text belongs to the hidden children; the container unfolds at the end

    def __init__(self) -> None:
        super().__init__()
        self.lines: list[Strip] = []
        self.painted_for: tuple[object, ...] | None = None
        """What the lines depend on besides the children (see :meth:`FoldsSettled.paint_context`)."""

    def get_content_height(self, container, viewport, width: int) -> int:
        return len(self.lines)

    def on_enter(self, event: events.Enter) -> None:
        # The mouse selects and follows links in Textual's widgets, not in these lines.
        container = self.parent
        if isinstance(container, FoldsSettled) and container.unfold_on_pointer:
            container.unfold()

    def render_lines(self, crop: Region) -> list[Strip]:
        # The strips are final: Textual's styles (background, filters) were applied when they were painted.
        container = self.parent
        if isinstance(container, FoldsSettled) and self.painted_for != container.paint_context():
            self.call_later(container.unfold)  # painted for another width, background or theme
        blank = Strip.blank(crop.width)
        return [self.lines[y].crop(crop.x, crop.right) if y < len(self.lines) else blank
                for y in crop.line_range]


class FoldsSettled(Widget):
    """A container whose children that will not change again can be folded into a :class:`SettledLines`.

    The subclass calls :meth:`init_folding`, composes :attr:`settled` first among its children,
    calls :meth:`fold_settled` with the children that settled (in order, after any folded before),
    and :meth:`unfold` before a folded child changes.
    """

    settled: SettledLines
    folded: list[Widget]
    """The children hidden behind :attr:`settled`, in order."""
    unfold_on_pointer: bool
    """Whether the mouse over the folded lines shows the children again: set once they will not change."""

    def init_folding(self) -> None:
        """Called by the subclass's ``__init__`` (Textual's blocks are built without calling every ``__init__``)."""
        self.settled = SettledLines()
        self.folded = []
        self.unfold_on_pointer = False

    def paint_context(self) -> tuple[object, ...]:
        """What the children's paint depends on besides themselves: changed, a fold is stale."""
        return (self.outer_size.width, self.virtual_size.width, self.scroll_offset, self.background_colors,
                self.app.theme, self.app.native_ansi_color)

    def can_fold(self) -> bool:
        """Whether folding would paint correctly now (a subclass may refuse, e.g. while scrolled sideways)."""
        return True

    def fold_settled(self, children: Sequence[Widget]) -> bool:
        """Fold ``children`` (displayed, laid out, never to change) once there are :data:`FOLD_AT`.

        Returns whether they were folded. Nothing is folded when the screen has not laid them out
        as they are now: the caller tries again at its next update.
        """
        laid_out = 0  # children mounted since the screen's last layout have no region yet
        while laid_out < len(children) and children[laid_out].region:
            laid_out += 1
        children = children[:laid_out]
        if len(children) < FOLD_AT or not self.can_fold():
            return False
        settled = self.settled
        offset = self.region.y
        top = settled.region.bottom - offset if settled.display else self.content_region.y - offset
        bottom = children[-1].region.bottom - offset
        lines = painted_rows(self, top, bottom)
        if lines is None:
            return False
        gutter = self.styles.gutter  # the settled lines sit in the content area, as the children did
        lines = [line.crop(gutter.left, self.outer_size.width - gutter.right) for line in lines]
        context = self.paint_context()
        if settled.display and settled.painted_for != context:
            # The lines so far were painted for another width (the scrollbar showed) or theme. Drawn,
            # they ask for an unfold themselves; scrolled out of view they are never drawn, and
            # without this every later update would lay out every block again.
            self.unfold()
            return False
        settled.lines = [*settled.lines, *lines] if settled.display else lines
        settled.painted_for = context
        # The rows after the last folded child are its bottom margin, which Textual merges with the
        # next child's top margin as before.
        settled.styles.margin = Spacing(0, 0, children[-1].styles.margin.bottom, 0)
        with self.app.batch_update():
            for child in children:
                child.display = False
            settled.display = True
            settled.refresh(layout=True)
        self.folded.extend(children)
        return True

    def unfold(self) -> None:
        """Show the folded children again, laid out and painted by Textual."""
        if not self.folded:
            return
        with self.app.batch_update():
            for child in self.folded:
                child.display = True
            self.settled.display = False
            self.settled.lines = []
            self.settled.painted_for = None
        self.folded = []
