"""What lovia's lists share: a cursor that stops at the first and the last entry, and ages kept current."""

from __future__ import annotations

from textual.widgets import OptionList

AGES_REFRESH_SECONDS = 30.0
"""How often the sessions and runs lists re-render their relative ages ("3 min ago") from the
data they hold; no store is asked, so a list nobody writes to still reads true."""


class StoppingOptionList(OptionList):
    """An :class:`OptionList` whose up and down stop at the first and last enabled option.

    Textual's wraps around: ``up`` on the first session lands on the last one, where a
    ``delete`` meant for the top removes the wrong session.
    """

    def _step(self, direction: int) -> None:
        if self.highlighted is None:
            # Nothing highlighted yet: Textual's own picks the first (or last) enabled option.
            (super().action_cursor_down if direction > 0 else super().action_cursor_up)()
            return
        index = self.highlighted + direction
        while 0 <= index < self.option_count:
            if not self.get_option_at_index(index).disabled:
                self.highlighted = index
                return
            index += direction
        # Past the end: the highlight stays where it is.

    def action_cursor_up(self) -> None:
        self._step(-1)

    def action_cursor_down(self) -> None:
        self._step(1)
