"""ChatPanel: the transcript and the composer, and the run they drive.

It owns everything a user does to the conversation: send, stop, resume, regenerate,
edit-and-resend, trim and copy. Changes that other panes care about go up as
:class:`ChatPanel.Changed`.
"""

from __future__ import annotations

import time
from typing import ClassVar

from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.message import Message
from textual.reactive import reactive
from textual.widgets import Static

from lovia.entries import UserMessage
from lovia.errors import LoviaError
from lovia.runtime import (
    HandoffOccurred,
    MessageCompleted,
    RunCompleted,
    RunFailed,
    RunInterrupted,
    RunStarted,
    RunStream,
    TextDelta,
    ToolCallStarted,
    ToolResultReceived,
    TurnFinished,
)
from lovia.tui import format
from lovia.tui.backend import TRIM_KEEP_CHARS, ChatBackend
from lovia.tui.clipboard import copy_text
from lovia.tui.screens.confirm import ConfirmScreen
from lovia.tui.widgets.composer import Composer
from lovia.tui.widgets.transcript import Transcript


class ChatPanel(Vertical):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "stop", "Stop"),
        Binding("ctrl+r", "resume", "Resume"),
        Binding("ctrl+g", "regenerate", "Regenerate"),
        Binding("ctrl+l", "edit_last", "Edit last"),
    ]

    DEFAULT_CSS = """
    ChatPanel { width: 1fr; }
    ChatPanel #chat-title { padding: 0 1; color: $text-muted; text-style: bold; }
    ChatPanel #editing { display: none; color: $warning; padding: 0 1; }
    ChatPanel.-editing #editing { display: block; }
    """

    session_id: reactive[str | None] = reactive(None, init=False)
    running: reactive[bool] = reactive(False, init=False)

    class Changed(Message):
        """Sessions or runs changed (a run ended, a session was rewound or trimmed)."""

        def __init__(self, session_id: str | None, run_id: str | None = None) -> None:
            super().__init__()
            self.session_id = session_id
            self.run_id = run_id

    def __init__(self, backend: ChatBackend, **kwargs) -> None:
        super().__init__(**kwargs)
        self.backend = backend
        self.stream: RunStream | None = None
        self._editing: UserMessage | None = None  # the stored message being edited

    def compose(self) -> ComposeResult:
        yield Static("New session", id="chat-title")
        transcript = Transcript(id="transcript")
        transcript.can_edit = self.backend.can_rewind
        transcript.can_trim = self.backend.can_trim
        yield transcript
        yield Static("Editing a message: enter resends it and drops everything after it; escape cancels.",
                     id="editing")
        yield Composer(id="composer")

    @property
    def transcript(self) -> Transcript:
        return self.query_one(Transcript)

    @property
    def composer(self) -> Composer:
        return self.query_one(Composer)

    # -- opening sessions ------------------------------------------------------------------

    async def open_session(self, session_id: str | None) -> None:
        """Show ``session_id`` (``None``: a fresh session that exists once it has a run)."""
        if self.running:
            self.notify("A run is still going: stop it (escape) before switching sessions.", severity="warning")
            return
        self._cancel_edit()
        self.session_id = session_id or self.backend.new_session_id()
        data = await self.backend.transcript(self.session_id) if session_id else None
        await self.transcript.show(data)
        await self.refresh_title()

    async def refresh_title(self) -> None:
        """Show the session's current title (a new session gets one with its first run)."""
        info = await self.backend.session_info(self.session_id) if self.session_id else None
        self.query_one("#chat-title", Static).update(format.one_line(info.title, 80) if info and info.title
                                                     else "New session")

    # -- sending and running ---------------------------------------------------------------

    @on(Composer.Submitted)
    async def _submitted(self, event: Composer.Submitted) -> None:
        event.stop()
        if self.running:
            self.notify("Wait for the answer, or stop it with escape.", severity="warning")
            return
        if self.session_id is None:
            self.session_id = self.backend.new_session_id()
        try:
            if self._editing is not None:
                original = self._editing
                self._cancel_edit()
                message, stream = await self.backend.resend_edited(self.session_id, original, event.text)
                await self.open_session(self.session_id)
            else:
                message, stream = self.backend.send(self.session_id, event.text)
        except LoviaError as exc:
            self.notify(str(exc), severity="error")
            return
        self.composer.clear()
        self._drive(stream, resumed=False, message=message)

    def _drive(self, stream: RunStream, *, resumed: bool, message: UserMessage | None = None) -> None:
        self.stream = stream
        self.running = True
        self._consume(stream, resumed, message)

    @work(exclusive=True, group="run")
    async def _consume(self, stream: RunStream, resumed: bool, message: UserMessage | None) -> None:
        """Show the run's events as they come; ``message`` goes under the run's header, as stored."""
        transcript = self.transcript
        started = time.time()
        reported: BaseException | None = None
        try:
            async for event in stream:
                if isinstance(event, RunStarted):
                    await transcript.begin_run(event.run_id, started, resumed=event.resumed)
                    if message is not None:
                        await transcript.add_user(message)
                        message = None
                    self.post_message(self.Changed(self.session_id, event.run_id))
                elif isinstance(event, TextDelta):
                    await transcript.stream_text(event.text, event.agent)
                elif isinstance(event, MessageCompleted):
                    await transcript.end_message(event.message)
                elif isinstance(event, ToolCallStarted):
                    await transcript.add_tool_call(event.call)
                elif isinstance(event, ToolResultReceived):
                    transcript.add_tool_result(event.result)
                    self.post_message(self.Changed(self.session_id, stream.run_id))
                elif isinstance(event, HandoffOccurred):
                    await transcript.add_notice(f"⇢ handed from {event.from_agent} to {event.to_agent}", "handoff")
                elif isinstance(event, TurnFinished):
                    self.post_message(self.Changed(self.session_id, stream.run_id))
                elif isinstance(event, RunCompleted):
                    await transcript.end_run("completed", time.time() - started)
                elif isinstance(event, RunInterrupted):
                    await transcript.end_run("interrupted")
                    await transcript.add_notice("Stopped. The run is kept: ctrl+r resumes it, or find it in the "
                                                "runs list to resume, discard or finalize.", "warning")
                elif isinstance(event, RunFailed):
                    reported = event.error
                    if message is not None:  # it failed before it started: still show what was sent
                        await transcript.add_user(message)
                        message = None
                    await transcript.end_run("failed")
                    await transcript.add_notice(f"✗ {event.error}", "error", hint="What was stored is kept: "
                                                "ctrl+r retries the run from its checkpoint.")
        except Exception as exc:
            if exc is not reported:  # the run's own error is shown in the transcript; anything else is a bug
                raise
        finally:
            self.running = False
            self.stream = None
            await self.refresh_title()
            self.post_message(self.Changed(self.session_id, stream.run_id))

    def action_stop(self) -> None:
        if self._editing is not None:
            self._cancel_edit()
        elif self.stream is not None:
            self.stream.stop()
        else:
            self.notify("Nothing is running.")

    async def action_resume(self) -> None:
        """Resume this session's newest interrupted, crashed or failed run."""
        if self.running or self.session_id is None:
            return
        runs = await self.backend.runs(session_id=self.session_id)
        if not runs:
            self.notify("This session has no interrupted run to resume.")
            return
        await self.resume(runs[0].run_id)

    async def resume(self, run_id: str) -> None:
        """Resume ``run_id``: its session opens and its stream joins the transcript."""
        if self.running:
            self.notify("A run is still going: stop it (escape) first.", severity="warning")
            return
        try:
            session_id, stream = await self.backend.resume(run_id)
        except LoviaError as exc:
            self.notify(str(exc), severity="error")
            return
        if session_id != self.session_id:
            await self.open_session(session_id)
        self._drive(stream, resumed=True)

    async def action_regenerate(self) -> None:
        if self.running or self.session_id is None:
            return
        try:
            message, stream = await self.backend.regenerate(self.session_id)
        except LoviaError as exc:
            self.notify(str(exc), severity="warning")
            return
        await self.open_session(self.session_id)
        self._drive(stream, resumed=False, message=message)

    async def action_edit_last(self) -> None:
        if self.session_id is None:
            return
        last = await self.backend.last_user_message(self.session_id)
        if last is None:
            self.notify("Nothing to edit yet.")
            return
        self.start_edit(last)

    @on(Composer.EditLastRequested)
    async def _edit_last_requested(self, event: Composer.EditLastRequested) -> None:
        event.stop()
        if self.check_action("edit_last", ()):
            await self.action_edit_last()

    @on(Transcript.EditRequested)
    async def _edit_requested(self, event: Transcript.EditRequested) -> None:
        event.stop()
        if self.session_id is None or await self.backend.position_of(self.session_id, event.message) is None:
            self.notify("That message belongs to a run still in flight: resume or finalize it first.",
                        severity="warning")
            return
        self.start_edit(event.message)

    def start_edit(self, message: UserMessage) -> None:
        """Put ``message`` in the composer; sending it rewinds to just before it."""
        self._editing = message
        self.add_class("-editing")
        self.composer.add_class("-editing")
        self.composer.text = message.text
        self.composer.focus()

    def _cancel_edit(self) -> None:
        self._editing = None
        self.remove_class("-editing")
        self.composer.remove_class("-editing")

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action in ("regenerate", "edit_last"):
            return self.backend.can_rewind and not self.running
        if action == "stop":
            return self.running or self._editing is not None
        if action == "resume":
            return not self.running
        return True

    def watch_running(self, running: bool) -> None:
        self.refresh_bindings()

    # -- trim and copy -----------------------------------------------------------------------

    @on(Transcript.TrimRequested)
    def _trim_requested(self, event: Transcript.TrimRequested) -> None:
        event.stop()
        if self.session_id is not None and self.backend.can_trim:
            self._trim()

    @work(exclusive=True, group="trim")
    async def _trim(self) -> None:
        try:
            await self._ask_and_trim()
        except LoviaError as exc:  # a store error: nothing was trimmed, and the app stays up
            self.notify(str(exc), severity="error")

    async def _ask_and_trim(self) -> None:
        """Ask first, saying how much the trim reclaims when the store can tell; then trim."""
        assert self.session_id is not None
        preview = await self.backend.trim_preview(self.session_id)
        if preview is not None and not preview.results:
            self.notify("No tool output older than the last run is long enough to trim.")
            return
        if preview is not None:
            what = (f"Trim {format.count(preview.results, 'old tool output')} to {TRIM_KEEP_CHARS} characters "
                    f"each?\nThis reclaims {format.size(preview.chars)}.")
        else:
            what = f"Trim old tool outputs to {TRIM_KEEP_CHARS} characters each?\n"
        question = what + (" Outputs from the last run are kept whole; trimmed text is gone for good unless it "
                           "was archived.")
        if await self.app.push_screen_wait(ConfirmScreen(question, confirm="Trim")):
            done = await self.backend.trim(self.session_id)
            self.notify(f"Trimmed {format.count(done, 'tool output')}." if done
                        else "Nothing was long enough to trim.")
            await self.open_session(self.session_id)
            self.post_message(self.Changed(self.session_id))

    @on(Transcript.CopyRequested)
    def _copy(self, event: Transcript.CopyRequested) -> None:
        event.stop()
        how = copy_text(self.app, event.text)
        self.notify(f"Copied the {event.what} ({format.size(len(event.text))}) {how}.")

