"""ChoiceScreen: a question with a few answers, each on a key; dismisses with the answer's value."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from textual import events
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Button, Static

from lovia.tui.keymap import keymap_of


@dataclass(frozen=True)
class Choice:
    """One answer: what the button says, the key that picks it, and the value it dismisses with."""

    label: str
    key: str
    value: str


class ChoiceScreen(ModalScreen[str | None]):
    """Asks ``question``; a choice's key or button dismisses with its value, escape with ``None``."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "choose(None)", "Cancel", id="choice.cancel")]

    DEFAULT_CSS = """
    ChoiceScreen { align: center middle; }
    ChoiceScreen > Vertical { width: 76; max-width: 100%; height: auto; border: thick $warning;
                              background: $surface; padding: 1 2; }
    ChoiceScreen Horizontal { height: auto; align-horizontal: right; margin-top: 1; }
    ChoiceScreen Button { margin-left: 1; min-width: 8; }
    """

    def __init__(self, question: str, choices: list[Choice]) -> None:
        super().__init__()
        self.question = question
        self.choices = choices

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static(self.question, id="question", markup=False)
            with Horizontal():
                keymap = keymap_of(self)  # a key the config file's [keys] moved is named as it is now
                cancel = keymap.first_key_text("choice.cancel") if keymap.is_rebound("choice.cancel") else "esc"
                yield Button(Content(f"Cancel ({cancel})"), id="cancel")
                for choice in self.choices:
                    yield Button(Content(f"{choice.label} ({choice.key})"), id=f"choice-{choice.value}",
                                 variant="warning")

    def answers_on(self, key: str) -> bool:
        """Whether ``key`` picks one of the choices (it dismisses the question)."""
        return any(choice.key == key for choice in self.choices)

    def on_key(self, event: events.Key) -> None:
        value = next((c.value for c in self.choices if event.key == c.key), None)
        if value is not None:
            event.stop()
            self.dismiss(value)

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        value = next((c.value for c in self.choices if event.button.id == f"choice-{c.value}"), None)
        self.dismiss(value)

    def action_choose(self, value: str | None) -> None:
        self.dismiss(value)
