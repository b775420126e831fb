"""A vertical scroll whose page keys go a whole page per key, however fast they come."""

from __future__ import annotations

from textual.actions import SkipAction
from textual.containers import VerticalScroll


class SteadyScroll(VerticalScroll):
    """:class:`~textual.containers.VerticalScroll` with ``pageup`` and ``pagedown`` counted from where
    the view is heading, not from where its slide has got to.

    Textual's page keys count from the offset reached so far, and start their scroll after the
    next refresh: keys that came together all went one page from the same place, and a key
    pressed while the last page still slid went a page from there, short of where the last one
    was heading. In a long transcript, pagedown pressed fast covered less ground than slowly (20
    presses 0.1 s apart reached step 28 of a session where slow ones reached question 44). Here
    the scroll starts at once, so the next key knows where the view is heading.
    """

    def action_page_down(self) -> None:
        self._page(1)

    def action_page_up(self) -> None:
        self._page(-1)

    def _page(self, direction: int) -> None:
        if not self.allow_vertical_scroll:
            raise SkipAction()
        sliding = self.app.animator.is_being_animated(self, "scroll_y")
        start = self.scroll_target_y if sliding else self.scroll_y
        asked = start + direction * self.scrollable_content_region.height
        self.scroll_to(y=asked, immediate=True)
        self.paged(direction, self.scroll_target_y)
        self.page_cut_short(asked - self.scroll_target_y)

    def paged(self, direction: int, top: float) -> None:
        """A page key moved the view (``direction`` 1: down) to show from ``top``; for a subclass with
        a cursor to keep in sight."""

    def page_cut_short(self, rows: float) -> None:
        """A page key asked ``rows`` further than the content goes (negative: up); for a subclass
        with more to show there once it is read."""
