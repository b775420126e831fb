"""HelpScreen: every key, read from the bindings of the widgets that own them."""

from __future__ import annotations

from typing import ClassVar

from rich.table import Table
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.dom import DOMNode
from textual.screen import ModalScreen
from textual.widgets import Static

# Keys Textual itself provides, which are not in our classes' BINDINGS.
KEY_NAMES = {"slash": "/"}  # Textual's key names where they are not what the key shows

BUILTIN_KEYS = [
    ("ctrl+p", "Command palette: every action by name"),
    ("ctrl+q", "Quit (asks first while an answer is running)"),
    ("tab / shift+tab", "Move focus"),
]

# Keys a widget handles itself rather than through BINDINGS, by the group they belong to.
HANDLED_KEYS = {
    "Composer": [("up", "In an empty composer: edit your last message")],
    "Sessions list": [("any letter", "Type to filter by title (an id matches from 4 of its characters)")],
    "Sessions filter": [("enter", "To the list")],
}


def key_table() -> list[tuple[str, list[tuple[str, str]]]]:
    """(pane, [(keys, what)]) for every pane, from the live BINDINGS."""
    from lovia.tui.app import LoviaApp
    from lovia.tui.screens.main import MainScreen
    from lovia.tui.widgets.chat_panel import ChatPanel
    from lovia.tui.widgets.composer import Composer
    from lovia.tui.widgets.inspector import CheckpointInspector
    from lovia.tui.widgets.runs_pane import RunList
    from lovia.tui.widgets.sessions_pane import SessionFilter, SessionList
    from lovia.tui.widgets.transcript import Transcript

    groups: list[tuple[str, list[type[DOMNode]]]] = [
        ("Anywhere", [LoviaApp, MainScreen]), ("Conversation", [ChatPanel]), ("Composer", [Composer]),
        ("Transcript", [Transcript]), ("Sessions list", [SessionList]), ("Sessions filter", [SessionFilter]),
        ("Runs list", [RunList]), ("Checkpoint inspector", [CheckpointInspector]),
    ]
    table = []
    for title, classes in groups:
        rows = []
        for cls in classes:
            for binding in cls.BINDINGS:
                if isinstance(binding, Binding):
                    keys = " / ".join(KEY_NAMES.get(key, key) for key in binding.key.split(","))
                    rows.append((keys, binding.tooltip or binding.description or binding.action))
        if title == "Anywhere":
            rows += BUILTIN_KEYS
        rows += HANDLED_KEYS.get(title, [])
        table.append((title, rows))
    return table


class HelpScreen(ModalScreen[None]):
    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape,f1,q", "dismiss", "Close", id="help.close")]

    DEFAULT_CSS = """
    HelpScreen { align: center middle; }
    HelpScreen > VerticalScroll {
        width: 100%; max-width: 88; height: 100%; max-height: 40;
        border: round $accent; background: $surface; padding: 0 1;
    }
    """

    def compose(self) -> ComposeResult:
        table = Table(show_header=False, box=None, padding=(0, 2), expand=True)
        table.add_column(style="bold", no_wrap=True)
        table.add_column()
        for title, rows in key_table():
            table.add_row(f"[b u]{title}[/]", "")
            for keys, what in rows:
                table.add_row(keys, what)
            table.add_row("", "")
        with VerticalScroll():
            yield Static("lovia keys — escape closes", classes="title")
            yield Static(table)

    async def action_dismiss(self, result=None) -> None:
        self.dismiss(None)
