"""HelpScreen: every action by name, with the key it takes now, grouped by where it applies."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from rich.style import Style
from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.screen import ModalScreen
from textual.widgets import Static

from lovia.tui.keymap import DEFAULT_KEYMAP, Keymap, actions, keymap_of
from lovia.tui.widgets.steady_scroll import SteadyScroll

# Keys Textual itself provides that lovia does not name (they cannot be moved), by group.
BUILTIN_KEYS = {
    "Anywhere": [("tab / shift+tab", "Move focus")],
    "Transcript": [("pageup / pagedown", "Scroll a page; a cursor left out of sight comes along")],
    "Timeline": [("up / down", "Scroll a line"), ("pageup / pagedown", "Scroll a page"),
                 ("home / end", "Scroll to the first / last step")],
}

# Keys a widget handles itself rather than through BINDINGS, by the group they belong to.
HANDLED_KEYS = {
    "Composer": [("up", "In an empty composer: edit your last message")],
    "Sessions list": [("enter", "Open the highlighted session; the message box takes focus"),
                      ("any letter", "Type to filter by title (an id matches from 4 of its characters)")],
    "Sessions filter": [("enter", "Open the highlighted session (the first match, or the open one if it matches)")],
    "Trash": [("enter", "Restore the highlighted session and open it")],
    "MCP servers": [("enter", "Switch the highlighted server on or off in this session")],
}

# Actions that work in another group too (one action, bound in both places), listed there as well.
ALSO_IN = {"Sessions filter": ("sessions.rename", "sessions.time_view"), "Sessions list": ("sessions-filter.clear",)}


@dataclass(frozen=True)
class KeyRow:
    """One line of the help: the keys in force, the action's name (empty for a key no action
    names), what it does, and its default keys when the config file's ``[keys]`` moved it."""

    keys: str
    name: str
    what: str
    default: str | None = None
    lost: str | None = None
    """Its keys a clash in ``[keys]`` gives to another action (they do not run it), as shown."""


def key_table(keymap: Keymap = DEFAULT_KEYMAP) -> list[tuple[str, list[KeyRow]]]:
    """(place, rows) for every place an action applies in, with the keys ``keymap`` puts in force."""
    groups: dict[str, list[KeyRow]] = {}
    known = actions()
    for action in known.values():
        default = DEFAULT_KEYMAP.configured_key_text(action.name) if keymap.is_rebound(action.name) else None
        groups.setdefault(action.title, []).append(
            KeyRow(keymap.configured_key_text(action.name), action.name, action.description, default,
                   keymap.lost_key_text(action.name)))
    for title, rows in (*BUILTIN_KEYS.items(), *HANDLED_KEYS.items()):
        groups.setdefault(title, []).extend(KeyRow(keys, "", what) for keys, what in rows)
    for title, names in ALSO_IN.items():
        groups.setdefault(title, []).extend(KeyRow(keymap.configured_key_text(name), name, known[name].description,
                                                   lost=keymap.lost_key_text(name)) for name in names)
    return list(groups.items())


class HelpScreen(ModalScreen[None]):
    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape,f1,q", "dismiss", "Close", id="help.close")]

    DEFAULT_CSS = """
    HelpScreen { align: center middle; }
    HelpScreen > VerticalScroll {
        width: 100%; max-width: 88; height: 100%; max-height: 40;
        border: round $accent; background: $surface; padding: 0 1;
    }
    HelpScreen .group-title { margin-top: 1; }
    HelpScreen .clashes { margin-top: 1; color: $warning; }
    """

    def compose(self) -> ComposeResult:
        keymap = keymap_of(self)
        moved = Style(bold=True, underline=True, color=self.app.current_theme.accent)  # a key [keys] moved
        groups = key_table(keymap)
        rows = [row for _, group in groups for row in group]
        key_width, name_width = max(len(r.keys) for r in rows), max(len(r.name) for r in rows)
        close = keymap.first_key_text("help.close")
        with SteadyScroll():
            yield Static(Text(f"lovia keys — {close} closes. A name moves its key in the config file's [keys] "
                              "table; an underlined key was moved there."), classes="title")
            clashes = keymap.clashes() if keymap.rebound else []
            if clashes:  # said at start for 30 s; here for as long as they last
                yield Static(Text("\n".join(["Key clashes in [keys]:", *(f"• {clash}" for clash in clashes)])),
                             classes="clashes")
            for title, group in groups:
                # One table a group, the columns as wide in each, so that the names line up
                table = Table(show_header=False, box=None, padding=(0, 1), expand=True)
                table.add_column(style="bold", no_wrap=True, width=key_width)
                table.add_column(style="dim", no_wrap=True, width=name_width)
                table.add_column(ratio=1)
                for row in group:
                    keys, what = Text(row.keys), Text(row.what)
                    if row.default is not None:
                        keys.stylize(moved)
                        what.append(f" (default {row.default})", style="italic")
                    if row.lost is not None:  # the clash above says to which action
                        what.append(f" ({row.lost} lost to a clash)", style="italic")
                    table.add_row(keys, row.name, what)
                yield Static(Text(title, style="bold underline"), classes="group-title")
                yield Static(table)

    async def action_dismiss(self, result=None) -> None:
        self.dismiss(None)
