"""PromptScreen: ask for one line of text; dismisses with it, or None if cancelled."""

from __future__ import annotations

from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Input, Static

from lovia.tui.keymap import keymap_of
from lovia.tui.widgets.text_input import TextInput


class PromptScreen(ModalScreen[str | None]):
    """A question and an input holding ``value``; enter answers with the input's text."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "cancel", "Cancel", id="prompt.cancel")]

    DEFAULT_CSS = """
    PromptScreen { align: center middle; }
    PromptScreen > Vertical {
        width: 70; max-width: 100%; height: auto; max-height: 100%;
        border: thick $accent; background: $surface; padding: 1 2;
    }
    PromptScreen #prompt-keys { color: $text-muted; margin-top: 1; }
    """

    def __init__(self, question: str, value: str = "") -> None:
        super().__init__()
        self.question = question
        self.value = value

    def compose(self) -> ComposeResult:
        # The value and the cursor at its end are set here, not after mount, and focusing does
        # not select it all: keys typed at once after the prompt opens extend the value.
        answer = TextInput(value=self.value, id="answer", select_on_focus=False)
        answer.cursor_position = len(self.value)
        with Vertical():
            yield Static(self.question, markup=False)
            yield answer
            # The keys a first-time user needs: how to keep a title, and how to replace it whole.
            cancel = keymap_of(self).key_text("prompt.cancel")
            yield Static(f"enter done · {cancel} cancel · ctrl+u clear", id="prompt-keys", markup=False)

    def focus_answer(self) -> None:
        """Focus the input now, not at the next turn of the event loop (as ``Widget.focus`` does)."""
        self.set_focus(self.query_one("#answer", Input))

    def on_input_submitted(self, event: Input.Submitted) -> None:
        self.dismiss(event.value)

    def action_cancel(self) -> None:
        self.dismiss(None)
