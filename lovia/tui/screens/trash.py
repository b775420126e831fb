"""TrashScreen: the sessions deleted to the trash, to restore one or purge it now (f8).

Each line says the session's title, when it was deleted, its size, and how long until it is
purged (``trash_days`` in the config file; purged when lovia next lists its sessions or the
trash after that time, never on a timer). enter or ``r`` restores the highlighted session
(refused with the reason when its id names a session again); delete purges it now, after
asking. The screen dismisses with the id of the session it restored, for the caller to open.
"""

from __future__ import annotations

import math
from typing import ClassVar

from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import OptionList, Static
from textual.widgets.option_list import Option

from lovia.errors import LoviaError
from lovia.session import TrashedSession
from lovia.tui import format
from lovia.tui.backend import ChatBackend
from lovia.tui.keymap import keymap_of
from lovia.tui.screens.confirm import ConfirmScreen
from lovia.tui.widgets.lists import StoppingOptionList


def purge_text(purges_at: float, now: float) -> str:
    """``purged in 30 days`` (rounded up), ``purged in 5 h`` within a day, ``purged at the next listing`` once due."""
    if purges_at <= now:
        return "purged at the next listing"
    left = purges_at - now
    if left >= 86400:  # a countdown rounds up: a session deleted a minute ago with 7 days kept has 7 days left
        return f"purged in {format.count(math.ceil(left / 86400), 'day')}"
    return "purged " + format.ago(purges_at, now)


class TrashList(StoppingOptionList):
    """The trash's items, most recently deleted first."""


class TrashScreen(ModalScreen[str | None]):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("r", "restore", "Restore", id="trash.restore",
                tooltip="Bring the highlighted session back (enter does it too)"),
        Binding("delete", "purge", "Purge now", id="trash.purge",
                tooltip="Delete the highlighted session for good now, after asking"),
        Binding("escape", "close", "Close", id="trash.close"),
    ]

    DEFAULT_CSS = """
    TrashScreen { align: center middle; }
    TrashScreen > Vertical {
        width: 100; max-width: 100%; height: auto; max-height: 100%;
        border: thick $accent; background: $surface; padding: 0 1;
    }
    TrashScreen #trash-title { text-style: bold; padding: 0 1; }
    TrashScreen #trash-about { color: $text-muted; padding: 0 1; }
    /* a share of the screen, not a fixed 20 rows: at 80x24 the key line stays in view below it */
    TrashScreen TrashList { height: auto; max-height: 60vh; border: none; margin-top: 1; }
    TrashScreen #trash-empty { padding: 1 1; color: $text-muted; display: none; }
    TrashScreen.-empty #trash-empty { display: block; }
    TrashScreen.-empty TrashList { display: none; }
    TrashScreen #trash-keys { color: $text-muted; padding: 0 1; margin-top: 1; }
    """

    def __init__(self, backend: ChatBackend) -> None:
        super().__init__()
        self.backend = backend
        self.items: list[TrashedSession] = []

    def compose(self) -> ComposeResult:
        days = self.backend.trash_days
        kept = format.count(round(days), "day") if days >= 1 else "less than a day"
        with Vertical():
            yield Static("Trash", id="trash-title")
            yield Static(f"Deleted sessions stay here {kept}, then go for good the next time lovia lists them.",
                         id="trash-about")
            yield TrashList(id="trash-list")
            keys = keymap_of(self).key_text  # the keys in force, as the config file's [keys] set them
            yield Static(f"The trash is empty: deleting a session ({keys('sessions.delete')} in the sessions list) "
                         "puts it here.", id="trash-empty")
            yield Static(f"enter/{keys('trash.restore')} restore · {keys('trash.purge')} purge now · "
                         f"{keys('trash.close')} close", id="trash-keys")

    async def on_mount(self) -> None:
        await self.reload()
        if (listing := self.query_one_optional(TrashList)) is not None:
            listing.focus()

    async def reload(self, highlight: int | None = None) -> None:
        """Read the trash again (purging what is due) and show it, the cursor on ``highlight`` when given."""
        try:
            self.items = await self.backend.trash()
        except LoviaError as exc:
            self.notify(str(exc), severity="error")
            self.items = []
        listing = self.query_one_optional(TrashList)
        if listing is None:
            return  # closed before its parts were mounted, or while the trash was read: the app quit
        now = format.clock()
        listing.clear_options()
        listing.add_options([self._option(item, now) for item in self.items])
        self.set_class(not self.items, "-empty")
        if self.items:
            listing.highlighted = min(highlight or 0, len(self.items) - 1)

    def _option(self, item: TrashedSession, now: float) -> Option:
        title = format.one_line(format.session_title(item.title), 60)  # its id is on the line below
        details = (f"deleted {format.ago(item.deleted_at, now)} · {format.count(item.entry_count, 'entry', 'entries')}"
                   f" · {purge_text(self.backend.purges_at(item), now)}")
        text = Content.assemble((title, "bold"), "\n", (f"{item.session_id} · {details}", "$text-muted"))
        return Option(text, id=str(item.trash_id))

    @property
    def highlighted_item(self) -> TrashedSession | None:
        index = self.query_one(TrashList).highlighted
        return self.items[index] if index is not None and 0 <= index < len(self.items) else None

    @on(OptionList.OptionSelected)
    def _selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        self.action_restore()

    def action_restore(self) -> None:
        item = self.highlighted_item
        if item is not None:
            self._restore(item)

    @work(group="dialog", exclusive=True)
    async def _restore(self, item: TrashedSession) -> None:
        try:
            session_id = await self.backend.restore_session(item.trash_id)
        except LoviaError as exc:  # its id is taken again, or it went meanwhile: say why, stay
            self.notify(str(exc), severity="error", timeout=10)
            await self.reload(self.query_one(TrashList).highlighted)
            return
        self.notify(f"Restored “{format.one_line(format.session_title(item.title), 40)}”.")
        self.dismiss(session_id)

    def action_purge(self) -> None:
        item = self.highlighted_item
        if item is not None:
            self._purge(item)

    @work(group="dialog", exclusive=True)
    async def _purge(self, item: TrashedSession) -> None:
        title = format.one_line(format.session_title(item.title), 50)
        question = (f"Purge “{title}” now?\nIts {format.count(item.entry_count, 'entry', 'entries')} are deleted "
                    "for good: this cannot be undone.")
        if not await self.app.push_screen_wait(ConfirmScreen(question, confirm="Purge")):
            return
        index = self.query_one(TrashList).highlighted
        try:
            await self.backend.purge_trashed(item.trash_id)
        except LoviaError as exc:
            self.notify(str(exc), severity="error")
        else:  # said, as a restore and a delete are: the list alone changing was easy to miss
            self.notify(f"Purged “{format.one_line(format.session_title(item.title), 40)}”: it is gone for good.")
        await self.reload(index)

    def action_close(self) -> None:
        self.dismiss(None)
