"""ConfirmScreen: a yes/no question; dismisses with True or False."""

from __future__ import annotations

from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Button, Static

from lovia.tui.keymap import keymap_of


class ConfirmScreen(ModalScreen[bool]):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("y", "answer(True)", "Yes", id="confirm.yes"),
        Binding("n,escape", "answer(False)", "No", id="confirm.no"),
    ]

    DEFAULT_CSS = """
    ConfirmScreen { align: center middle; }
    ConfirmScreen > Vertical {
        width: 70; max-width: 100%; height: auto; max-height: 100%;
        border: thick $warning; background: $surface; padding: 1 2;
    }
    ConfirmScreen Horizontal { height: auto; align-horizontal: right; margin-top: 1; }
    ConfirmScreen Button { margin-left: 2; }
    """

    def __init__(self, question: str, *, confirm: str = "Yes") -> None:
        super().__init__()
        self.question = question
        self.confirm = confirm

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static(self.question, id="question", markup=False)
            with Horizontal():
                keymap = keymap_of(self)  # the keys in force, as the config file's [keys] may have moved them
                yield Button(Content(f"Cancel ({keymap.first_key_text('confirm.no')})"), id="no")
                yield Button(Content(f"{self.confirm} ({keymap.first_key_text('confirm.yes')})"), id="yes",
                             variant="warning")

    def ask_instead(self, question: str, *, confirm: str) -> None:
        """Put another question, where what was asked no longer holds (the same keys answer it)."""
        self.question, self.confirm = question, confirm
        self.query_one("#question", Static).update(question)
        self.query_one("#yes", Button).label = Content(f"{confirm} ({keymap_of(self).first_key_text('confirm.yes')})")

    def on_button_pressed(self, event: Button.Pressed) -> None:
        self.dismiss(event.button.id == "yes")

    def action_answer(self, answer: bool) -> None:
        self.dismiss(answer)
