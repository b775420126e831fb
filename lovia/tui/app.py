"""LoviaApp: the terminal UI over a ChatBackend."""

from __future__ import annotations

from collections.abc import Iterable
from typing import ClassVar

import rich
from rich.segment import Segments
from textual.app import App, SystemCommand
from textual.binding import Binding, BindingType
from textual.screen import Screen
from textual.theme import Theme

from lovia.themes import DEFAULT_THEME, THEME_NAMES, THEMES
from lovia.tui.backend import ChatBackend
from lovia.tui.config import RememberedState
from lovia.tui.screens.help import HelpScreen
from lovia.tui.screens.main import MainScreen
from lovia.tui.widgets.chat_panel import ChatPanel
from lovia.tui.widgets.transcript import Transcript


class LoviaApp(App[None]):
    """Chat, inspect and resume runs from the keyboard."""

    TITLE = "lovia"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("ctrl+n", "new_session", "New session"),
        # priority: TextArea has its own f6, and switching panes must work from every pane
        Binding("f6", "next_pane", "Next pane", priority=True),
        Binding("shift+f6", "previous_pane", "Previous pane", show=False, priority=True),
        Binding("ctrl+t", "next_theme", "Theme"),
        Binding("f1", "help", "Help"),
    ]

    def __init__(self, backend: ChatBackend, *, model_label: str, theme: str | None = None,
                 state: RememberedState | None = None) -> None:
        super().__init__()
        self.backend = backend
        self.model_label = model_label
        self.state = state
        self._initial_theme = theme

    def on_mount(self) -> None:
        for theme in THEMES:
            self.register_theme(theme)
        remembered = self.state.load().get("theme") if self.state else None
        wanted = self._initial_theme or remembered or DEFAULT_THEME
        self.theme = wanted if wanted in self.available_themes else DEFAULT_THEME
        self.theme_changed_signal.subscribe(self, self._remember_theme)
        self.sub_title = self.model_label
        self.push_screen(MainScreen(self.backend))

    async def on_unmount(self) -> None:
        await self.backend.close()

    def _fatal_error(self) -> None:
        # Textual's crash report prints every frame's local variables, which would put the
        # conversation, or an API key, on the terminal and into whatever logs it: ours shows
        # the traceback without them. Private Textual API, guarded by
        # tests/tui/test_textual_private_names.py and the pinned Textual range.
        from rich.traceback import Traceback

        self.bell()
        traceback = Traceback(show_locals=False, width=None, suppress=[rich])
        self._exit_renderables.append(Segments(self.console.render(traceback, self.console.options)))
        self._close_messages_no_wait()

    def _remember_theme(self, theme: Theme) -> None:
        if self.state is not None:
            self.state.remember(theme=theme.name)

    @property
    def main(self) -> MainScreen:
        return next(s for s in self.screen_stack if isinstance(s, MainScreen))

    # -- actions -----------------------------------------------------------------------------

    async def action_new_session(self) -> None:
        await self.main.open_session(None)
        self.main.query_one("#composer").focus()

    def action_next_pane(self) -> None:
        self.main.focus_pane(1)

    def action_previous_pane(self) -> None:
        self.main.focus_pane(-1)

    def action_next_theme(self) -> None:
        names = THEME_NAMES
        current = names.index(self.theme) if self.theme in names else -1
        self.theme = names[(current + 1) % len(names)]
        self.notify(f"Theme: {self.theme}")

    def action_help(self) -> None:
        self.push_screen(HelpScreen())

    def get_system_commands(self, screen: Screen) -> Iterable[SystemCommand]:
        yield from super().get_system_commands(screen)
        if not isinstance(screen, MainScreen):
            return
        chat = screen.query_one(ChatPanel)
        transcript = screen.query_one(Transcript)
        yield SystemCommand("Send message", "Send what is in the composer", chat.composer.action_submit)
        yield SystemCommand("Stop", "Stop the running answer (it stays resumable)", chat.action_stop)
        yield SystemCommand("Resume", "Resume this session's interrupted run", chat.action_resume)
        if self.backend.can_rewind:
            yield SystemCommand("Regenerate", "Drop the last answer and ask again", chat.action_regenerate)
            yield SystemCommand("Edit last message", "Edit your last message and resend it", chat.action_edit_last)
            yield SystemCommand("Edit selected message", "Edit the selected message and resend",
                                transcript.action_edit)
        if self.backend.can_trim:
            yield SystemCommand("Trim tool outputs", "Cut old tool outputs to reclaim space", transcript.action_trim)
        yield SystemCommand("Copy message", "Copy the selected message", transcript.action_copy)
        yield SystemCommand("Copy code block", "Copy the selected message's last code block",
                            transcript.action_copy_code)
        yield SystemCommand("New session", "Start a new conversation", self.action_new_session)
        yield SystemCommand("Next pane", "Move focus to the next pane", self.action_next_pane)
        yield SystemCommand("Next theme", "Switch to the next lovia theme", self.action_next_theme)
        yield SystemCommand("Help", "Every key lovia knows", self.action_help)
