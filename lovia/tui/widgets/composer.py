"""Composer: where the user writes. Enter sends; ctrl+j starts a new line."""

from __future__ import annotations

from typing import ClassVar

from textual import events
from textual.binding import Binding, BindingType
from textual.message import Message
from textual.reactive import reactive
from textual.strip import Strip
from textual.widgets import TextArea

from lovia.tui.editing_keys import editing_actions, run_in_order
from lovia.tui.keymap import keymap_of

EDITING_ACTIONS = editing_actions(TextArea.BINDINGS)
"""TextArea's own keys (backspace, the arrows, ctrl+w...) and their actions (see :mod:`lovia.tui.editing_keys`)."""


class Composer(TextArea):
    """A multi-line message box. An empty (or blank) message is never sent.

    ``up`` in an empty composer asks to edit the last message, as chat apps do.
    """

    # Both keys are handled in ``_on_key``, in order with the typing before them: a priority
    # binding would run when the key reaches the app, ahead of a burst of characters (a paste,
    # fast typing) still queued for this widget, and send an empty box. The bindings are for
    # the footer and the help screen.
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("enter", "submit", "Send", id="composer.send"),
        Binding("ctrl+j", "newline", "New line", show=False, id="composer.newline"),
    ]

    DEFAULT_CSS = """
    Composer { height: auto; min-height: 3; max-height: 12; border: tall $panel; }
    Composer:focus { border: tall $accent; }
    Composer.-editing { border: tall $warning; }
    """

    class EditLastRequested(Message):
        """``up`` in an empty composer: edit the last message."""

    class Submitted(Message):
        def __init__(self, text: str) -> None:
            super().__init__()
            self.text = text

    answering: reactive[bool] = reactive(False, init=False)
    """Whether the chat's answer is running (set by the chat panel): enter then only says to wait
    for it, so the footer leaves Send out (see :class:`~lovia.tui.widgets.footer.HidesInFooter`)."""

    def __init__(self, **kwargs) -> None:
        super().__init__(soft_wrap=True, show_line_numbers=False, **kwargs)
        self.placeholder = "Message — enter to send, ctrl+j for a new line"

    def on_mount(self) -> None:
        keymap = keymap_of(self)  # the keys in force, as the config file's [keys] may have moved them
        if keymap.rebound:
            send, newline = keymap.key_text("composer.send"), keymap.key_text("composer.newline")
            self.placeholder = f"Message — {send} to send, {newline} for a new line"

    def render_line(self, y: int) -> Strip:
        # Textual's TextArea wraps its placeholder at the content width without a floor, and
        # wrapping at width 0 raises (rich divides the line in steps of 0). The layout never
        # squeezes the composer that far, but a terminal being resized passes through any
        # width: with no room to show anything, show nothing.
        if self.content_size.width < 1:
            return Strip.blank(0)
        return super().render_line(y)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "submit" and self.has_class("-editing"):
            return False  # enter resends an edit: the chat panel's "Resend" names it in the footer
        return super().check_action(action, parameters)

    def hidden_in_footer(self, action: str) -> bool:
        return action == "submit" and self.answering

    def watch_answering(self) -> None:
        self.refresh_bindings()

    def action_submit(self) -> None:
        text = self.text
        if not text.strip():
            self.notify("Type a message first: an empty message is not sent.", severity="warning")
            return
        # Lines left empty at the end (a last ctrl+j) would show under the message, and be sent.
        self.post_message(self.Submitted(text.rstrip()))

    def action_newline(self) -> None:
        self.insert("\n")

    def on_text_area_changed(self, event: TextArea.Changed) -> None:
        # TextArea brings the cursor into sight as it moves, before a line added takes its room: at
        # the composer's full height the new line stayed below the view until the next key.
        self.call_after_refresh(self.scroll_cursor_visible)

    async def _on_key(self, event: events.Key) -> None:
        keymap = keymap_of(self)
        send, newline = keymap.keys_in_force("composer.send"), keymap.keys_in_force("composer.newline")
        if event.key in send or event.key in newline:
            event.stop()
            event.prevent_default()
            self.action_submit() if event.key in send else self.action_newline()
            return
        if event.key == "up" and not self.text:
            event.stop()
            event.prevent_default()
            self.post_message(self.EditLastRequested())
            return
        await super()._on_key(event)  # the typing itself (and the cursor's blink, restarted at every key)
        await run_in_order(self, event, EDITING_ACTIONS)
