"""What lovia's lists share: a cursor that stops at the first and the last entry, and ages kept current."""

from __future__ import annotations

from collections.abc import Iterable

from rich.text import Text
from textual.widgets import OptionList

AGES_REFRESH_SECONDS = 1.0
"""How often the sessions and runs lists work out their relative ages ("42 s ago") again from the
data they hold: no store is asked, and only an option whose text changed is drawn again, so a list
nobody writes to still reads true to the second (every 30 s, "42 s ago" could mean 71). A list
folded away (80 columns) is left alone until shown: in Textual, a list laid out while hidden in the
same frame as a toast going left that toast painted on the terminal."""

OPTION_MARGIN = 2
"""Cells an option's text leaves free at its right in the sessions and runs lists, so its text keeps
off the list's edge (Textual's options themselves have no padding)."""


def replace_changed_prompts(options: OptionList, prompts: Iterable[Text], start: int = 0) -> None:
    """Give the options from the ``start``-th on ``prompts``, in order, leaving alone each already showing
    its own (highlight and scroll stay; an unchanged option is not laid out again)."""
    for index, prompt in enumerate(prompts, start):
        if options.get_option_at_index(index).prompt != prompt:
            options.replace_option_prompt_at_index(index, prompt)


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

    @property
    def option_text_width(self) -> int:
        """The cells an option's text is fitted to: the list's content width less
        :data:`OPTION_MARGIN`, 0 before the list is laid out."""
        return max(0, self.scrollable_content_region.width - OPTION_MARGIN)
