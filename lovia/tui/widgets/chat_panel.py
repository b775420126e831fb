"""ChatPanel: the transcript and the composer, and the run they drive.

It owns everything a user does to the conversation: send, stop, resume, regenerate,
edit-and-resend, trim and copy. Changes that other panes care about go up as
:class:`ChatPanel.Changed`.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Awaitable, Callable, Mapping
from typing import ClassVar, Literal

from textual import events, on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.message import Message
from textual.reactive import reactive
from textual.widgets import Static

from lovia.entries import AssistantMessage, UserMessage
from lovia.errors import AgentResolutionError, LoviaError, MaxTurnsExceeded, RunClaimedError
from lovia.runtime import (
    HandoffOccurred,
    MessageCompleted,
    ModelRetrying,
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
from lovia.tui.backend import (
    CUT_OFF,
    FORK_MARK,
    RESUMABLE_STATES,
    RESUME_WITH_AGENT,
    STATE_LABELS,
    TRIM_KEEP_CHARS,
    ChatBackend,
    EditOutgrown,
    EditTarget,
    RunsNeedDecision,
    RunState,
    Settle,
    StartedRun,
    Transcript as TranscriptData,
    TranscriptRun,
    needed_agents,
    run_state,
)
from lovia.tui.clipboard import copy_text
from lovia.tui.keymap import keymap_of
from lovia.tui.restyle import set_class_sparing
from lovia.tui.screens.choice import Choice, ChoiceScreen
from lovia.tui.screens.confirm import ConfirmScreen
from lovia.tui.store_errors import told_on
from lovia.tui.widgets.composer import Composer
from lovia.tui.widgets.run_status import RunStatus
from lovia.tui.widgets.transcript import Transcript
from lovia.tui.widgets.user_message import UserMessageView


class ChatPanel(Vertical):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "stop", "Stop", id="chat.stop"),
        Binding("escape", "cancel_edit", "Cancel edit", id="chat.cancel_edit"),
        # Enter is the composer's key; while editing, this binding only names it in the footer.
        Binding("enter", "resend", "Resend", id="chat.resend"),
        Binding("ctrl+r", "resume", "Resume", id="chat.resume"),
        Binding("ctrl+g", "regenerate", "Regenerate", id="chat.regenerate"),
        Binding("ctrl+l", "edit_last", "Edit last", id="chat.edit_last"),
    ]

    DEFAULT_CSS = """
    ChatPanel { width: 1fr; }
    ChatPanel #chat-title {  /* a line at any width (a fork's origin one more): what is too long is cut with … */
        padding: 0 1; color: $text-muted; text-style: bold; text-wrap: nowrap; text-overflow: ellipsis;
    }
    ChatPanel #editing { display: none; color: $warning; padding: 0 1; }
    ChatPanel.-editing #editing { display: block; }
    """

    session_id: reactive[str | None] = reactive(None, init=False)
    running: reactive[bool] = reactive(False, init=False)
    has_resumable_run: reactive[bool] = reactive(True, init=False)
    """Whether the open session has a stopped, crashed or failed run; the screen sets it from the runs list."""
    runs_elsewhere: reactive[bool] = reactive(False, init=False)
    """Whether another process executes a run of the open session now (regenerate and edit-last are
    refused until it ends); the screen sets it from the runs list."""

    class RunSaved(Message):
        """The live run ``run_id`` saved a snapshot (a model turn, or a tool call that starts)."""

        def __init__(self, run_id: str) -> None:
            super().__init__()
            self.run_id = run_id

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
        self._editing: EditTarget | None = None  # the message being edited
        self._draft = ""  # what the composer held when the edit began: it comes back when the edit ends
        self._being_sent = ""  # a message taken out of the composer, its run not started (a question may be up)
        # What was typed and not sent in each session left, back when it is opened again (None: a new
        # session's); and the session whose text the composer holds (see _composer_to).
        self._unsent: dict[str | None, str] = {}
        self._composer_for: str | None = None
        self._starting = False  # a run is being started (runs settled first, maybe a question asked)
        self._shown_session: str | None = None  # the session the transcript shows (session_id leads it while one opens)
        self._told_server_failures: set[tuple[str, str | None]] = set()  # (server, why): told once in the transcript
        self._live_input: str | None = None  # what the run executing here was asked: a new session's title meanwhile
        self._untitled = True  # the title shows no title of the session's yet

    def compose(self) -> ComposeResult:
        yield Static("New session", id="chat-title", markup=False)
        transcript = Transcript(id="transcript")
        transcript.can_edit = self.backend.can_rewind
        transcript.can_trim = self.backend.can_trim
        transcript.can_fork = self.backend.can_fork
        transcript.can_undo = self.backend.can_undo_rewind
        yield transcript
        yield Static("Editing a message: enter resends it and drops everything after it; escape cancels.",
                     id="editing")
        yield RunStatus(id="run-status")
        yield Composer(id="composer")

    @property
    def transcript(self) -> Transcript:
        return self.query_one(Transcript)

    @property
    def composer(self) -> Composer:
        return self.query_one(Composer)

    # -- opening sessions ------------------------------------------------------------------

    async def open_session(self, session_id: str | None) -> bool:
        """Show ``session_id`` (``None``: a fresh session that exists once it has a run).

        False, with a notice, when it could not be read (a damaged run, the file gone): what
        was shown stays, and the app goes on. Refused (False, said) while a run goes here, and
        for another session while a message is being sent.
        """
        if self.running:
            self.notify("A run is still going: stop it (escape) before switching sessions.", severity="warning")
            return False
        if self._starting and session_id != self.session_id:
            # The message being sent runs in the session it was typed in: switched away now, its
            # answer would stream there out of sight (a question about a crashed run may be open).
            self.notify("Your message is being sent: switch sessions once its answer has started.",
                        severity="warning")
            return False
        # Set before the read: a reload of the open session under way (an outside change) reads
        # the session it finds open when it starts, so this one, opened later, stays open.
        self.session_id = opening = session_id or self.backend.new_session_id()
        data = None
        if session_id:
            with told_on(self, "open that session"):
                data = await self.backend.transcript(session_id, page=self.transcript.page_size)
            if data is None:
                if self.session_id == session_id:
                    self.session_id = self._shown_session  # the one the transcript shows, as it shows it
                return False
            if self.session_id != opening:
                return True  # another open was asked for while this one read: that one shows
        self._end_edit()  # an edit goes on while the session it edits stays shown
        self._composer_to(opening, new=session_id is None)
        await self._show(data)
        self._shown_session = self.session_id
        await self.refresh_title()
        self.refresh_bindings()  # what the footer offers depends on what the session holds
        return True

    @property
    def sending(self) -> bool:
        """Whether a message is being sent: its run is being started (a question about the session's
        unfinished runs may be open). Another session is not opened meanwhile."""
        return self._starting

    async def refresh_title(self) -> None:
        """Show the session's current title (a new session gets one with its first run).

        A session none of whose runs reached it yet (stopped, crashed, failed) is titled by its
        first run's input, as the sessions pane lists it.
        """
        with told_on(self, "read the session's title"):
            info = await self.backend.session_info(self.session_id) if self.session_id else None
            title = info.title if info and info.title else None
            if title is None and self.session_id:
                unstored = await self.backend.runs(session_id=self.session_id)  # newest first
                title = unstored[-1].head.first_input if unstored else None
            # The first run of a session, while it executes here: titled by its input, as listed.
            title = title or self._live_input
            self._untitled = not title
            shown = _title_line(title)
            self.query_one("#chat-title", Static).update(shown)  # now: its fork origin may be unreadable
            origin = None
            if info is not None and self.session_id:
                # A damaged first run (said when its page is read) tells no origin: not forked, then.
                with contextlib.suppress(LoviaError):
                    origin = await self.backend.fork_origin(self.session_id)
            if origin is not None:
                mark = "" if shown.startswith(FORK_MARK) else f"{FORK_MARK} "
                # A line of its own: after the title it was cut off at any width a long title fills.
                shown += (f"\n{mark}forked from “{format.one_line(origin.title or origin.session_id, 40)}” "
                          f"at entry {origin.entries}, {format.when(origin.forked_at)}")
            self.query_one("#chat-title", Static).update(shown)
            # Whenever what the session holds is shown again (opened, rewound, a run ended), so is
            # whether its last rewind can still be undone (u, offered only then).
            await self._refresh_undo()

    async def _refresh_undo(self) -> None:
        transcript = self.transcript
        available = bool(self.session_id and self.backend.can_undo_rewind
                         and await self.backend.rewind_undo(self.session_id))
        if available != transcript.undo_available:
            transcript.undo_available = available
            transcript.refresh_bindings()

    # -- sending and running ---------------------------------------------------------------

    @on(Composer.Submitted)
    def _submitted(self, event: Composer.Submitted) -> None:
        event.stop()
        if self.running or self._starting:
            self.notify("Wait for the answer, or stop it with escape.", severity="warning")
            return
        if self.session_id is None:
            self.session_id = self._shown_session = self.backend.new_session_id()
        session_id, text, editing = self.session_id, event.text, self._editing
        if editing is not None:
            self._start_run(lambda settle: self.backend.resend_edited(session_id, editing.message, text, settle=settle,
                                                                      position=editing.position, said=editing),
                            composer="draft", sent=text,
                            not_started=lambda error: self._resend_refused(error, editing, text))
        else:
            self._start_run(lambda settle: self.backend.send(session_id, text, settle=settle), composer="clear",
                            sent=text)

    def _start_run(self, begin: Callable[[Settle | None], Awaitable[StartedRun]], *,
                   composer: Literal["clear", "draft", "keep"], sent: str = "",
                   not_started: Callable[[BaseException | None], None] | None = None) -> None:
        """Start the run ``begin`` makes, and show it.

        From this call on, the panel is sending (an enter or a ctrl+g read before the run starts
        is refused, as while it runs), and ``sent``, the text the composer submitted (``clear``,
        ``draft``), is taken out of it: what was typed after it stays for the next message,
        keys read after enter and before the submission reached the panel included. Should
        the message not go (refused, a question answered with resume or escape), it comes
        back, before what was typed meanwhile. Both were done once the run started: a second
        enter sent the two messages run together, and the keys typed right after enter were
        wiped with the message.

        When crashed or failed runs of the session are not in it yet, the user is asked first
        (resume, keep as partial, discard; see :meth:`ChatBackend.send`). Once the run starts,
        the composer gets back the draft an edit put aside (``draft``), or is kept as it is.
        Runs settled on the way (a stopped run finalized, say) are stored by the time the run
        holds the session, and an edit's rewind is made then: the session is shown again, as
        stored, before the new run. A run that fails before it starts (refused: another run of
        the session executes) is shown in the transcript with its message, unless ``not_started``
        is given: it is then told of the error instead (a resend: nothing of it is shown).
        """
        self._starting = True
        # Until the run starts: a busy or unreachable store can take its timeout.
        self.query_one(RunStatus).saving_message()
        held, taken = self.composer.text, ""
        if composer != "keep":
            # What was typed after it stays (past the blank end the composer cut off what it sent);
            # should the text have changed before the submission got here (a backspace read with
            # the enter), it all goes, as it went before once the run started.
            taken = sent if held.startswith(sent) else held
            self._put_in_composer(held[len(taken):].lstrip())
        self._send_and_show(begin, composer=composer, taken=taken, not_started=not_started)

    @work(group="dialog")  # a user action: the several-windows watcher leaves the transcript alone meanwhile
    async def _send_and_show(self, begin: Callable[[Settle | None], Awaitable[StartedRun]], *,
                             composer: Literal["clear", "draft", "keep"], taken: str,
                             not_started: Callable[[BaseException | None], None] | None) -> None:
        """The rest of :meth:`_start_run`, from a worker; ``taken``: what it took out of the composer."""
        status = self.query_one(RunStatus)
        started: StartedRun | None = None
        if composer == "clear":
            self._being_sent = taken  # a quit meanwhile remembers it (see unsent)
        try:
            try:
                started = await begin(None)
            except RunsNeedDecision as exc:
                status.clear()  # a question now, not a wait
                settle = await self._ask_what_to_do(exc)
                if settle is None or settle == "resume":
                    # Back at once, before the keys typed after the answer reach the composer.
                    self._give_back(taken)
                    taken = self._being_sent = ""
                    if settle == "resume" and await self.resume(exc.runs[0].run_id, asked_while_sending=True):
                        self.notify("Your message stays in the composer: send it when the run is done.")
                    return
                status.saving_message()
                started = await begin(settle)
        except EditOutgrown as exc:  # another window went on with the session: the edit says what enter drops now
            if self._editing is not None:
                self._editing = exc.target
                self._say_what_resending_drops(exc.target)
            self.notify(str(exc), severity="warning", timeout=15)
            return
        except LoviaError as exc:
            self.notify(str(exc), severity="error")
            return
        finally:
            self._starting = False
            self._being_sent = ""
            if started is None and self.is_attached:  # not sent
                self._give_back(taken)
                if not self.running:  # (a resumed run has the line)
                    status.clear()
        if composer == "draft" and self._editing is not None:
            typed = self.composer.text
            self._end_edit()
            self._give_back(typed, before=False)
        # settled runs moved, or an edit rewinds (see ChatBackend.resend_edited)
        self._drive(started.stream, message=started.message,
                    show_stored_first=bool(started.settled) or composer != "clear", not_started=not_started)

    async def _ask_what_to_do(self, need: RunsNeedDecision) -> Settle | Literal["resume"] | None:
        """Ask what happens to crashed or failed runs before a message goes: settle them so (keep,
        discard), resume the oldest instead, or (``None``) send nothing."""
        # The oldest goes first: resumed, its answer lands before the later runs are settled, in order.
        oldest = need.runs[0]
        state = run_state(oldest.head)
        anew = ANSWER_ASKED_AGAIN if oldest.head.cut_off_text else ""
        started = format.when(oldest.head.started_at)
        # A run that needs an agent lovia's does not have cannot resume here: not offered (see AgentNotHere).
        missing = self.backend.missing_agent(needed_agents(oldest.head))
        cannot = f"needs agent {missing!r}, which lovia's agent does not have: {RESUME_WITH_AGENT}"
        if len(need.runs) > 1:  # resume takes the oldest; keep and discard settle every one
            resume = (f"• The oldest cannot be resumed here: it {cannot}\n" if missing is not None else
                      f"• Resume the oldest: it goes on from its last saved step{anew}; your message waits in the "
                      "composer.\n")
            question = (f"This session has {len(need.runs)} runs that did not finish, the oldest started {started}; "
                        "they are not in the conversation yet. Before your message is sent:\n"
                        f"{resume}"
                        "• Keep as partial: what each did so far joins the conversation, marked as it stopped, "
                        "before your message.\n"
                        "• Discard them: their checkpoints are deleted; nothing of them reaches the conversation.")
        else:
            resume = (f"• It cannot be resumed here: it {cannot}\n" if missing is not None else
                      f"• Resume it: it goes on from its last saved step{anew}; your message waits in the composer.\n")
            question = (f"This session has a run that {STATE_LABELS.get(state, state)} (started {started}); it is not "
                        "in the conversation yet. Before your message is sent:\n"
                        f"{resume}"
                        "• Keep as partial: what it did so far joins the conversation, marked as "
                        f"{state}, before your message.\n"
                        "• Discard it: its checkpoint is deleted; nothing of it reaches the conversation.")
        if need.stopped:  # kept whatever is decided here, as sending after a stop keeps it: said, not done unseen
            which = (f"the stopped run started {format.when(need.stopped[0].head.started_at)}"
                     if len(need.stopped) == 1 else f"its {len(need.stopped)} stopped runs")
            question += (f"\nKeep or discard: either way {which} joins the conversation as partial, as sending after "
                         "a stop does.")
        choices = [Choice("Resume", "r", "resume")] if missing is None else []
        choices += [Choice("Keep as partial", "k", "keep"), Choice("Discard", "d", "discard")]
        choice = await self.app.push_screen_wait(ChoiceScreen(question, choices))
        return "keep" if choice == "keep" else "discard" if choice == "discard" else \
            "resume" if choice == "resume" else None

    async def _show_session(self, then: Callable[[], Awaitable[None]] | None = None) -> None:
        """Show the open session again, as stored now.

        ``then``, what is shown next at once (a run's start under it), is shown in the same frame:
        between the two, a regenerate drew the conversation without the message it asks again. The
        store is read first, so the screen is never held while it answers (a busy file, a far server).
        """
        if self.session_id is None:
            if then is not None:
                await then()
            return
        read: list[TranscriptData | None] = []
        with told_on(self, "show the session again"):
            read.append(await self.backend.transcript(self.session_id, page=self.transcript.page_size))
        with self.app.batch_update():
            if read:
                await self._show(read[0])
            if then is not None:
                await then()
        if read:
            await self.refresh_title()

    async def _show_run_start(self, started: RunStarted, stored: TranscriptRun | None,
                              message: UserMessage | None) -> None:
        """The run ``started`` begins in the transcript (as ``stored`` so far), under ``message`` when it
        was just sent."""
        await self.transcript.begin_run(started.run_id, stored, resumed=started.resumed)
        if message is not None:
            await self.transcript.add_user(message)

    async def _show(self, data: TranscriptData | None) -> None:
        """Show ``data`` in the transcript; under its newest run, when it lies stopped, crashed or failed,
        how to go on with it, as the stop said when it was live (the quit question promised it)."""
        await self.transcript.show(data)
        newest = data.in_flight[-1] if data is not None and data.in_flight else None
        if newest is not None and newest.state == "failed" and newest.error:
            # Its error whole, as shown live: the header holds the start of it, cut to a line.
            await self.transcript.add_notice(f"✗ {format.stored_failure(newest.error)}", "error",
                                             hint=self._how_to_go_on("failed", newest))
        elif newest is not None and newest.state in RESUMABLE_STATES:
            await self.transcript.add_notice(self._how_to_go_on(newest.state, newest), "warning")

    def _how_to_go_on(self, state: RunState, run: TranscriptRun | None) -> str:
        """What the user can do with this session's newest run ``run``, left ``state`` (interrupted,
        crashed or failed). A resume goes on from the run's last saved step: an answer cut off as
        it streamed is asked for again, not continued, and the user is told so."""
        resume = keymap_of(self).key_text("chat.resume")
        anew = ANSWER_ASKED_AGAIN if run is not None and _cut_mid_answer(run) else ""
        missing = self.backend.missing_agent(run.needs_agents) if run is not None else None
        if missing is not None:  # the resume key would refuse it (see AgentNotHere): that is not offered
            then = ("Sending your next message keeps what it did so far in the conversation, marked as stopped."
                    if state == "interrupted" else "Sending a message first asks whether to keep or discard it.")
            return (f"This run {STATE_LABELS.get(state, state)} and is not in the conversation yet. It needs agent "
                    f"{missing!r}, which lovia's agent does not have. {RESUME_WITH_AGENT} {then}")
        if state == "interrupted":
            return (f"Stopped. {resume} resumes it{anew}; sending your next message keeps what it did so far in the "
                    "conversation, marked as stopped.")
        goes_on = "retries it from its checkpoint" if state == "failed" else "resumes it from its last saved step"
        if state == "failed" and run is not None and (run.error or "").startswith(MAX_TURNS_PREFIX):
            goes_on = _AFTER_MAX_TURNS
        return (f"This run {state} and is not in the conversation yet: {resume} {goes_on}{anew}; sending a message "
                "first asks whether to resume, keep or discard it.")

    async def _tell_servers_down(self) -> None:
        """A line in the transcript, once per failure, for an MCP server this session offers that could not start."""
        for server in self.backend.mcp.offered(self.session_id):
            failure = (server.name, server.error)
            if server.state == "failed" and failure not in self._told_server_failures:
                self._told_server_failures.add(failure)
                servers = keymap_of(self).key_text("main.mcp_servers")
                await self.transcript.add_notice(f"MCP server {server.name} is not offered to the model: "
                                                 f"{server.error}. {servers} lists the servers.", "warning")

    @staticmethod
    def _tell_status(status: RunStatus, event: object, model: str | None) -> str | None:
        """Move the line above the composer on to what ``event`` says the run does now; returns the
        model asked from now on."""
        if isinstance(event, RunStarted):
            model = event.model
            status.waiting_for_model(model)
        elif isinstance(event, HandoffOccurred):
            model = None
        elif isinstance(event, TextDelta):
            status.answering(model)
        elif isinstance(event, ModelRetrying):
            model = event.model
            status.asking_again(model, event.reason, event.wait)
        elif isinstance(event, ToolCallStarted):
            status.running_tools(event.call.call_id, event.call.name)
        elif isinstance(event, ToolResultReceived):
            status.tool_done(event.result.call_id, model)
        elif isinstance(event, (RunCompleted, RunFailed, RunInterrupted)):
            status.clear()
        return model

    def _drive(self, stream: RunStream, *, message: UserMessage | None = None,
               show_stored_first: bool = False,
               not_started: Callable[[BaseException | None], None] | None = None) -> None:
        self.stream = stream
        self.running = True
        self._consume(stream, message, show_stored_first, not_started)

    @work(exclusive=True, group="run")
    async def _consume(self, stream: RunStream, message: UserMessage | None,
                       show_stored_first: bool = False,
                       not_started: Callable[[BaseException | None], None] | None = None) -> None:
        """Show the run's events as they come; ``message`` goes under the run's header, as stored.

        With ``show_stored_first`` the session is shown again as stored when the run starts (or
        fails before it could): what the run's start changed in it (see :meth:`_start_run`) shows.
        """
        transcript = self.transcript
        status = self.query_one(RunStatus)
        model: str | None = None  # the model the run's agent asks (after a handoff: not known here)
        reported: BaseException | None = None
        interrupted = False
        retried = False  # a failed run taken up again
        begun = False  # RunStarted came: the run was claimed here
        try:
            async for event in stream:
                model = self._tell_status(status, event, model)
                if show_stored_first and isinstance(event, (RunFailed, RunInterrupted)):
                    show_stored_first = False
                    await self._show_session()
                if isinstance(event, RunStarted):
                    begun = True
                    retried = event.resumed_from == "failed"
                    stored = await self._stored_run(event.run_id)
                    first = message or (stored.entries[0] if stored and stored.entries else None)
                    self._live_input = first.text if isinstance(first, UserMessage) else None
                    show_start = functools.partial(self._show_run_start, event, stored, message)
                    message = None
                    if show_stored_first:
                        show_stored_first = False
                        await self._show_session(then=show_start)  # in one frame with the session shown again
                    else:
                        await show_start()
                    if self._untitled and self._live_input:  # no store to ask: a session untitled has no origin
                        self._untitled = False
                        self.query_one("#chat-title", Static).update(_title_line(self._live_input))
                    self.post_message(self.Changed(self.session_id, event.run_id))
                elif isinstance(event, TextDelta):
                    await transcript.stream_text(event.text, event.agent)
                elif isinstance(event, MessageCompleted):
                    await transcript.end_message(event.message)
                    self.post_message(self.RunSaved(stream.run_id))
                elif isinstance(event, ToolCallStarted):
                    await transcript.add_tool_call(event.call, rerun=event.rerun)
                    self.post_message(self.RunSaved(stream.run_id))
                elif isinstance(event, ToolResultReceived):
                    transcript.add_tool_result(event.result)
                    self.post_message(self.Changed(self.session_id, stream.run_id))
                elif isinstance(event, HandoffOccurred):
                    await transcript.add_notice(f"⇢ handed from {event.from_agent} to {event.to_agent}", "handoff")
                elif isinstance(event, TurnFinished):
                    await self._tell_servers_down()
                    self.post_message(self.Changed(self.session_id, stream.run_id))
                elif isinstance(event, RunCompleted):
                    await transcript.end_run("completed", await self._stored_run(stream.run_id))
                elif isinstance(event, RunInterrupted):
                    interrupted = True
                    stopped = await self._stored_run(stream.run_id)
                    await transcript.end_run("interrupted", stopped)
                    await transcript.add_notice(self._how_to_go_on("interrupted", stopped), "warning")
                elif isinstance(event, RunFailed) and message is not None and not_started is not None:
                    reported = event.error  # before it started: told, not shown as a run
                    message = None
                    not_started(event.error)
                elif isinstance(event, RunFailed) and message is None and not begun \
                        and isinstance(event.error, RunClaimedError):
                    # A resume another window or worker claimed first (both asked at once): the run
                    # goes on there and shows here as running elsewhere; it did not fail, and the
                    # resume key would be refused the same way.
                    reported = event.error
                    self.notify(f"Not resumed: {event.error}", severity="warning", timeout=10)
                elif isinstance(event, RunFailed):
                    reported = event.error
                    unsent = message
                    if message is not None:  # it failed before it started: still show what was sent
                        await transcript.add_user(message)
                        message = None
                    stored = await self._stored_run(stream.run_id)
                    await transcript.end_run("failed", stored)
                    if stored is None and unsent is not None:
                        # Nothing of it was stored (the checkpoint could not even be written): the only copy
                        # of the message is on screen, so it goes back where it can be sent again.
                        self._give_back(unsent.text)
                        hint = "Nothing of this run was stored: your message is back in the composer to send again."
                    elif isinstance(event.error, AgentResolutionError):
                        # A resume refused for an agent it needs (the backend refuses most first): the
                        # runner left the run as it was, and the resume key would fail the same way.
                        hint = ("The run is left as it was: it resumes once lovia runs with the agents it needs "
                                "(lovia --agent MODULE:ATTR).")
                    else:
                        keys = keymap_of(self).key_text
                        # Out of turns, a retry fails at once: it needs more of them first.
                        goes_on = _AFTER_MAX_TURNS if isinstance(event.error, MaxTurnsExceeded) else \
                            "retries the run from its checkpoint"
                        hint = f"What was stored is kept: {keys('chat.resume')} {goes_on}; " \
                               f"{keys('chat.edit_last')} edits the message."
                    # A retry that fails as the run did looked as if the key did nothing: it says so.
                    failed = format.stored_failure(f"{type(event.error).__name__}: {event.error}")
                    await transcript.add_notice(f"✗ {'Failed again: ' if retried else ''}{failed}", "error", hint=hint)
            if message is not None and not_started is not None and stream.stopped and not interrupted:
                # Stopped (escape) before it started, while its start changed the session (a
                # resend's rewind): no event came. What the stop left is shown, and the resend told.
                if show_stored_first:
                    await self._show_session()
                not_started(None)
        except Exception as exc:
            # The run's own error is shown in the transcript; anything else is a bug, unless the app is
            # closing and the widgets this worker updates went away under it.
            if exc is not reported and self.is_attached:
                raise
        finally:
            self.stream = None
            self._live_input = None
            if self.is_attached:  # else the app is closing and cancelled this worker: no screen is left to update
                status.clear()
                self.running = False
                await self.refresh_title()
                self.post_message(self.Changed(self.session_id, stream.run_id))

    async def _stored_run(self, run_id: str) -> TranscriptRun | None:
        """``run_id`` as the stores have it now, for the figures a reopened transcript shows; ``None`` if unreadable."""
        try:
            return await self.backend.transcript_run(self.session_id, run_id)
        except LoviaError:
            return None  # the live figures are then the ones the transcript has

    def action_stop(self) -> None:
        """Stop the running answer; with none running, escape cancels an edit."""
        if self.stream is not None:
            self.stream.stop()
        elif self._editing is not None:
            self.action_cancel_edit()
        else:
            self.notify("Nothing is running.")

    def on_key(self, event: events.Key) -> None:
        """The keys of resume, regenerate and edit-last while an answer runs (or a message is being
        sent): their bindings are off then, so the footer and the command palette leave them out,
        and each key says why it does nothing, as enter and the session keys do."""
        if not self._busy_now:
            return
        keys = keymap_of(self)
        action = next((action for action in ("resume", "regenerate", "edit_last")
                       if event.key in keys.keys_in_force(f"chat.{action}")), None)
        if action is not None:
            event.stop()
            event.prevent_default()
            self._say_busy(action)

    @property
    def _busy_now(self) -> bool:
        """Whether an answer runs here, or a message is on its way to start one."""
        return self.running or self._starting

    def _say_busy(self, action: str) -> None:
        """Say why ``action`` does nothing while an answer runs (see :data:`BUSY_NOTICES`)."""
        self.notify(BUSY_NOTICES[action], severity="warning")

    def action_resume(self) -> None:
        """Resume this session's newest interrupted, crashed or failed run."""
        if self.running:
            self._say_busy("resume")
        else:
            self._resume_newest()

    @work(group="dialog")  # it may ask first (see resume)
    async def _resume_newest(self) -> None:
        runs = None
        if self.session_id is not None:
            with told_on(self, "list this session's runs"):
                runs = await self.backend.runs(session_id=self.session_id)
            if runs is None:
                return
        if not runs:
            self.notify("This session has no interrupted run to resume.")
            return
        await self.resume(runs[0].run_id)

    async def resume(self, run_id: str, *, asked_while_sending: bool = False) -> bool:
        """Resume ``run_id``: its session opens and its stream joins the transcript. False when it
        was not resumed (refused, said; or the user said no).

        A run that ran on another model than the one lovia uses now is resumed only if the user
        agrees (it asks from a worker): a run begun on a hosted model went on with the offline
        demo, or the other way round, without a word. While a message is being sent, only the
        question asked before it resumes (``asked_while_sending``)."""
        if self.running:
            self._say_busy("resume")
            return False
        if self._starting and not asked_while_sending:  # (the question before a message: its own resume)
            self.notify("Your message is being sent: resume once its answer has started.", severity="warning")
            return False
        try:
            change = await self.backend.model_change(run_id)
        except LoviaError as exc:
            self.notify(str(exc), severity="error")
            return False
        if change is not None:
            was, now = change
            question = (f"This run ran on {was}; lovia uses {now} now, and a resume goes on with it. To go on "
                        f"with {was}, quit and start lovia on it (--model, and --base-url for a local server; "
                        "with --agent, the model its agent names).")
            if not await self.app.push_screen_wait(ConfirmScreen(question, confirm=f"Resume with {now}")):
                return False
        try:
            session_id, stream = await self.backend.resume(run_id)
        except LoviaError as exc:
            self.notify(str(exc), severity="error")
            return False
        if session_id != self.session_id and not await self.open_session(session_id):
            # Its stored part could not be read (said): the run is shown on its own, in its session.
            self._end_edit()
            self._composer_to(session_id)
            self.session_id = self._shown_session = session_id
            await self.transcript.show(None)
            await self.refresh_title()
        self._drive(stream)
        return True

    def action_regenerate(self) -> None:
        """Ask the last message again (a stopped or failed last run's own message, see ``ChatBackend.last_message``)."""
        if self._busy_now:
            self._say_busy("regenerate")
            return
        if self.session_id is None or not self.has_history:
            self.notify("Nothing to regenerate yet: send a message first.")
            return
        if self._editing is not None:
            # The regenerate would drop the message being edited, or its answer, from under the edit.
            keys = keymap_of(self).key_text
            self.notify(f"A message is being edited: {keys('chat.resend')} resends it, {keys('chat.cancel_edit')} "
                        "cancels the edit; then regenerate.", severity="warning")
            return
        session_id = self.session_id
        self._start_run(lambda settle: self.backend.regenerate(session_id, settle=settle), composer="keep",
                        not_started=self._resend_refused)

    async def action_edit_last(self, composer_then: str | None = None) -> None:
        """Edit the last message: a stopped or failed last run's own message, else the last stored one.

        ``composer_then``: what the composer held when the edit was asked for (see :meth:`start_edit`);
        by default, what it holds as this begins.
        """
        if self._busy_now:
            self._say_busy("edit_last")
            return
        if self.session_id is None:
            self.notify("Nothing to edit yet.")
            return
        if composer_then is None:
            composer_then = self.composer.text
        try:
            last = await self.backend.last_message(self.session_id)
        except LoviaError as exc:
            self.notify(str(exc), severity="error")
            return
        if last is None:
            self.notify("Nothing to edit yet.")
            return
        self.start_edit(last, composer_then=composer_then)

    @on(Composer.EditLastRequested)
    async def _edit_last_requested(self, event: Composer.EditLastRequested) -> None:
        event.stop()
        if self._busy_now and self.backend.can_rewind and self.has_history:
            self._say_busy("edit_last")  # as ctrl+l says
        elif self.check_action("edit_last", ()) and self.has_history:  # up in a new session's composer: nothing
            # Asked with the composer empty: what it holds by the time the edit starts was typed for the edit.
            await self.action_edit_last(composer_then="")

    @on(Transcript.EditRequested)
    async def _edit_requested(self, event: Transcript.EditRequested) -> None:
        event.stop()
        if self._busy_now:  # the edit could not be sent until the answer is over
            self.transcript.take_typed_ahead(end=True)
            self._say_busy("edit")
            return
        try:
            target = await self.backend.locate(self.session_id, event.message, position=event.position) \
                if self.session_id else None
        except LoviaError as exc:
            self.transcript.take_typed_ahead(end=True)  # typed for an edit there will not be
            self.notify(str(exc), severity="error")
            return
        if target is None:
            self.transcript.take_typed_ahead(end=True)
            self.notify("That message is not in this session any more: it was rewound, or its run was discarded.",
                        severity="warning")
            return
        # Held on until focus leaves the transcript (for the composer, or the question below).
        typed = self.transcript.take_typed_ahead(end=False)
        if target.later_runs and not self.backend.can_undo_rewind:
            self._confirm_edit(target, typed)
        else:
            self.start_edit(target, typed=typed)

    @on(Transcript.TypedAhead)
    def _typed_ahead(self, event: Transcript.TypedAhead) -> None:
        """Keys typed for an edit or a fork that came after it began, or while a search hit opened: after
        what the composer holds, if it is editing or the fork opened (a trim's question drops them)."""
        event.stop()
        if (event.action == "edit" and self._editing is not None) or event.action in ("fork", "message"):
            self._type_into_composer(event.text)

    @on(Transcript.TypingForTheComposer)
    def _typing_for_the_composer(self, event: Transcript.TypingForTheComposer) -> None:
        event.stop()
        self.composer.focus()

    def _type_into_composer(self, text: str) -> None:
        if not self.composer.text:  # "f and tell me more": the space went between the key and the text
            text = text.lstrip()
        if text:
            self.composer.insert(text, self.composer.document.end)
            self.composer.move_cursor(self.composer.document.end)

    @work(group="dialog")
    async def _confirm_edit(self, target: EditTarget, typed: str) -> None:
        """An earlier message, in a store that cannot undo a rewind: say what resending it drops for
        good, and edit it only if the user agrees. (Where `u` undoes the resend, the edit starts at
        once, as regenerate does, and its line says what enter drops: a question there took the
        letters typed for the edit as its answer.)"""
        question = (f"Edit this earlier message?\nResending it drops {_dropped_by_resending(target)}. Cancelling the "
                    "edit keeps everything.")
        confirmed = await self.app.push_screen_wait(ConfirmScreen(question, confirm="Edit"))
        # The question took the keys (a screen pushed over it leaves the transcript focused): what
        # reached the transcript before it showed is dropped, and its keys are its own again.
        self.transcript.take_typed_ahead(end=True)
        if confirmed:
            self.start_edit(target, typed=typed)

    def _resend_refused(self, error: BaseException | None, target: EditTarget | None = None, text: str = "") -> None:
        """A resend (``target``, resent as ``text``) or a regenerate that failed (``error``) or was
        stopped (``None``) before its run started: nothing of it was kept. Said in a notice; an edit
        is taken up again with the text as it was resent, so enter tries again (the composer would
        otherwise send it as a new message)."""
        if target is not None and self._editing is None:
            self.start_edit(target)
            self._put_in_composer(text)
        again = "press enter to resend" if target is not None else \
            f"{keymap_of(self).key_text('chat.regenerate')} to regenerate"
        why = (f"another run of this session is being executed: wait for its answer, then {again}"
               if isinstance(error, RunClaimedError) else "stopped before it started" if error is None
               else str(error).rstrip("."))
        self.notify(f"Not {'resent' if target is not None else 'regenerated'}: {why}.", severity="error",
                    timeout=10)

    def start_edit(self, target: EditTarget, *, typed: str = "", composer_then: str | None = None) -> None:
        """Put the message in the composer, cursor at its end; what the composer held is put aside.

        Enter resends it (dropping it, its answer and ``target.later_runs`` later runs);
        escape cancels. Either way, what was put aside comes back. What was typed while the
        message was being found goes after it: ``typed`` (held by the transcript), and, given
        ``composer_then``, what the composer held when the edit was asked for, what it gained
        since (the composer had the keys).
        """
        held = self.composer.text
        if composer_then is not None and held.startswith(composer_then):
            held, typed = composer_then, held[len(composer_then):] + typed
        if self._editing is None:
            self._draft = held
        self._editing = target
        self._say_what_resending_drops(target)
        set_class_sparing(self, True, "-editing", spared=self.transcript)
        self.composer.add_class("-editing")
        self._put_in_composer(target.message.text + typed)
        self.composer.focus()
        self._bindings_changed()

    def _say_what_resending_drops(self, target: EditTarget) -> None:
        """The editing line: what enter drops, and what undoes it."""
        dropped = _dropped_by_resending(target)
        drops = f", dropping {dropped}" if dropped else ""
        undo = keymap_of(self).sure_key_text("transcript.undo_rewind") if self.backend.can_undo_rewind else None
        if target.later_runs and undo:
            drops += f" ({undo} in the conversation undoes that)"
        self.query_one("#editing", Static).update(f"Editing: enter resends it{drops}; escape gives your draft back.")

    def action_cancel_edit(self) -> None:
        """Leave the edit: nothing is sent, and the composer gets back what it held before."""
        if self._starting and self._editing is not None:
            # The edit is being resent: cancelled now, its draft came back while the resend went on.
            self.notify("The edited message is being sent: escape stops its answer once it has started.",
                        severity="warning")
            return
        self._end_edit()

    def action_resend(self) -> None:
        self.composer.action_submit()

    def _end_edit(self) -> None:
        if self._editing is None:
            return
        self._editing = None
        set_class_sparing(self, False, "-editing", spared=self.transcript)
        self.composer.remove_class("-editing")
        self._put_in_composer(self._draft)
        self._draft = ""
        self._bindings_changed()

    def _composer_to(self, session_id: str, *, new: bool = False) -> None:
        """The composer goes with ``session_id`` (``new``: a new session, with nothing stored): what it
        holds stays with the session it was typed in, and what was typed in this one and not sent
        comes back.

        Carried over, a message begun in one conversation was sent in the next one opened. Kept in
        memory, for this window; a new session's text is kept under ``None``, as its id is not
        opened again once it is left with nothing stored.
        """
        if session_id == self._composer_for and not new:
            return  # the same session again (a reload): the text stays where it is
        leaving = self._composer_key
        coming = None if new else session_id
        self._composer_for = session_id
        if leaving == coming:
            return
        if text := self.composer.text:
            self._unsent[leaving] = text
        else:
            self._unsent.pop(leaving, None)
        self._put_in_composer(self._unsent.pop(coming, ""))

    @property
    def _composer_key(self) -> str | None:
        """Under which session the composer's text is kept: ``None`` for a new session with nothing
        stored (its id is not opened again once it is left)."""
        if self._composer_for == self._shown_session and not self.has_history:
            return None
        return self._composer_for

    def unsent(self) -> dict[str | None, str]:
        """What was typed here and not sent, by session (``None``: a new session's): the composer's
        text, or during an edit the draft it put aside (the edit is not a message of its own), and
        what is kept for each session left. Remembered when the app quits (see :meth:`take_unsent`)."""
        unsent = dict(self._unsent)
        here = self._composer_key
        text = self._draft if self._editing is not None else self.composer.text
        if self._being_sent:  # as it would come back should it not go: before what was typed since
            text = f"{self._being_sent}\n{text}" if text else self._being_sent
        if text.strip():
            unsent[here] = text
        else:
            unsent.pop(here, None)
        return unsent

    def take_unsent(self, unsent: Mapping[str | None, str]) -> None:
        """Texts typed and not sent when lovia last quit (:meth:`unsent`): each goes back to its
        session's composer, at once for the session open now, else when it is opened. Text typed
        here meanwhile stays first."""
        here = self._composer_key
        for session_id, text in unsent.items():
            if session_id == here:
                self._give_back(text, before=False)
            elif session_id in self._unsent:
                self._unsent[session_id] = f"{self._unsent[session_id]}\n{text}"
            else:
                self._unsent[session_id] = text

    def _put_in_composer(self, text: str) -> None:
        self.composer.text = text
        self.composer.move_cursor(self.composer.document.end)

    def _give_back(self, text: str, *, before: bool = True) -> None:
        """Put ``text`` back in the composer, on lines of its own before what it holds now (``before``)
        or after it: what was typed while a message was being sent is kept."""
        if not text:
            return
        held = self.composer.text
        self._put_in_composer(text if not held else f"{text}\n{held}" if before else f"{held}\n{text}")

    def _bindings_changed(self) -> None:
        self.refresh_bindings()
        self.composer.refresh_bindings()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action in ("regenerate", "edit_last"):
            return self.backend.can_rewind and not self.running
        if action == "stop":
            return self.running
        if action == "cancel_edit":
            return self._editing is not None and not self.running
        if action == "resend":
            return self._editing is not None
        if action == "resume":
            return not self.running
        return True

    def hidden_in_footer(self, action: str) -> bool:
        """Resume while the session has no run to resume, regenerate and edit-last while it has no
        message or another process runs a run of it, regenerate while a message is edited (see
        :class:`~lovia.tui.widgets.footer.HidesInFooter`): pressed all the same, each says so."""
        if action == "resume":
            return not self.has_resumable_run
        if action == "regenerate" and self._editing is not None:
            return True  # refused while an edit is open (see action_regenerate)
        return action in ("regenerate", "edit_last") and (not self.has_history or self.runs_elsewhere)

    @property
    def has_history(self) -> bool:
        """Whether the open session shows any run, stored, in flight or just sent."""
        transcript = self.transcript
        return bool(transcript.run_ids) or bool(transcript.views)

    def watch_running(self, running: bool) -> None:
        self.transcript.answering = self.composer.answering = running
        self.refresh_bindings()

    def watch_has_resumable_run(self) -> None:
        self.refresh_bindings()

    def watch_runs_elsewhere(self) -> None:
        self._bindings_changed()

    # -- trim and copy -----------------------------------------------------------------------

    @on(Transcript.TrimRequested)
    def _trim_requested(self, event: Transcript.TrimRequested) -> None:
        event.stop()
        if self._busy_now and self.backend.can_trim:  # trim waits while an answer runs (see Transcript.applies)
            self.transcript.take_typed_ahead(end=True)
            self._say_busy("trim")
            return
        if self.session_id is not None and self.backend.can_trim and self.transcript.may_hold_tool_output:
            self._trim()
            return
        if self.backend.can_trim:
            self.notify("This session has no tool output to trim.")
        self.transcript.take_typed_ahead(end=True)

    @work(exclusive=True, group="trim")
    async def _trim(self) -> None:
        try:
            await self._ask_and_trim()
        except LoviaError as exc:  # a store error: nothing was trimmed, and the app stays up
            self.notify(str(exc), severity="error")
        finally:
            # What reached the transcript before the question showed (or instead of it) is dropped:
            # it was not typed for the conversation's keys.
            self.transcript.take_typed_ahead(end=True)

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
        archive = self.backend.archive_directory
        question = what + (" Outputs from the last run are kept whole. " + (
            f"Long outputs are archived (in {archive}) as tools return them: enter on a trimmed one shows it "
            "whole again; any not archived are cut for good." if archive else
            "Tool outputs are not archived here: the trimmed text is gone for good."))
        if await self.app.push_screen_wait(ConfirmScreen(question, confirm="Trim")):
            done = await self.backend.trim(self.session_id)
            self.notify(f"Trimmed {format.count(done, 'tool output')}." if done
                        else "Nothing was long enough to trim.")
            await self.open_session(self.session_id)
            self.post_message(self.Changed(self.session_id))

    @on(Transcript.UndoRewindRequested)
    def _undo_requested(self, event: Transcript.UndoRewindRequested) -> None:
        event.stop()
        if self.session_id is not None and self.backend.can_undo_rewind:
            self._undo_rewind(self.session_id)

    @work(group="dialog")
    async def _undo_rewind(self, session_id: str) -> None:
        """Ask, then put the transcript back as it was before the last edit-and-resend or regenerate."""
        if self._busy_now:
            self._say_busy("undo")
            return
        try:
            undo = await self.backend.rewind_undo(session_id)
            if undo is None:
                self.notify(f"Nothing to undo: {keymap_of(self).key_text('transcript.undo_rewind')} brings back what "
                            "an edit-and-resend or a regenerate dropped, until the next message is sent.")
                await self._refresh_undo()
                return
            dropped = f"{format.count(undo.removed, 'entry', 'entries')} of {format.count(len(undo.run_ids), 'run')}"
            question = (f"Undo the last edit-and-resend or regenerate?\nWhat it dropped comes back ({dropped}), and "
                        "what took its place goes: your message as it was sent again, and the answer to it.")
            if not await self.app.push_screen_wait(ConfirmScreen(question, confirm="Undo")):
                return
            await self.backend.undo_rewind(session_id)
        except LoviaError as exc:  # refused (a run of the session executes) or a store error: nothing changed
            self.notify(str(exc), severity="error")
            return
        await self.open_session(session_id)
        self.post_message(self.Changed(session_id))
        # Not "as it was before": a run not in the session yet that the resend replaced (stopped,
        # crashed or failed) was recorded in it first, and comes back as a partial answer, not resumable.
        self.notify("Undone: what it dropped is back in the conversation, and what took its place is gone.")

    @on(Transcript.ForkRequested)
    def _fork_requested(self, event: Transcript.ForkRequested) -> None:
        event.stop()
        if self.session_id is not None and self.backend.can_fork:
            self._fork(self.session_id, event)
        else:
            self.transcript.take_typed_ahead(end=True)

    @work(group="dialog")  # not exclusive: that would cancel the group's other user actions (a run starting)
    async def _fork(self, session_id: str, request: Transcript.ForkRequested) -> None:
        """Copy the session up to and including the picked entry into a new session, and open it to write in.

        What was typed right after ``f`` goes into the new session's composer (see :meth:`Transcript.on_key`).
        """
        transcript = self.transcript
        if self._busy_now:  # forked meanwhile, the new session could not be opened
            transcript.take_typed_ahead(end=True)
            self._say_busy("fork")
            return
        at_user_message = isinstance(transcript.selected_view, UserMessageView)
        try:
            position = request.position
            if position is None and request.run_id is not None and request.matches is not None:
                position = await self.backend.stored_position(session_id, request.run_id, request.matches)
            if position is None:
                transcript.take_typed_ahead(end=True)
                # Its run did not finish here (answering here, fork waits): stopped, crashed or
                # failed, or running elsewhere. Say how any of those gets stored.
                keys = keymap_of(self).key_text
                self.notify("That message is not in the session yet: its run has not finished. Fork from "
                            f"it once the run is stored: resumed ({keys('chat.resume')}) to its end, or "
                            f"finalized ({keys('runs.finalize')} in the runs list).", severity="warning")
                return
            new_session_id, copied = await self.backend.fork(session_id, position)
        except LoviaError as exc:  # refused (rewound meanwhile) or a store error: nothing was made
            transcript.take_typed_ahead(end=True)
            self.notify(str(exc), severity="error")
            return
        typed = transcript.take_typed_ahead(end=False)  # the rest comes as focus leaves (TypedAhead)
        # Focus moves before the fork is shown, and at once (focus() would wait for a refresh): shown
        # with focus, the transcript puts its cursor on the last message once laid out, and whether
        # that came first was a race.
        self._end_edit()  # as opening another session does, but first: its draft would replace what is typed
        self._composer_to(new_session_id)  # what was typed here stays here; what comes now is the fork's
        self.screen.set_focus(self.composer)
        self._type_into_composer(typed)
        if not await self.open_session(new_session_id):  # said why; the source stays, with its own text
            self._composer_to(session_id)
            return
        self.post_message(self.Changed(new_session_id))
        # A fork at one of your messages ends with it, unanswered: regenerate asks for its answer.
        answer = (f" It ends with your message: {keymap_of(self).key_text('chat.regenerate')} gets it an answer."
                  if at_user_message else "")
        self.notify(f"Forked: a new session with {format.count(copied, 'entry', 'entries')} of this one, "
                    f"open to go on from there. The original is unchanged.{answer}")

    @on(Transcript.CopyRequested)
    def _copy(self, event: Transcript.CopyRequested) -> None:
        event.stop()
        how = copy_text(self.app, event.text)
        self.notify(f"Copied {event.what} ({format.size(len(event.text))}) {how}.{event.then}")

    @on(Transcript.NewBelow)
    def _new_below(self, event: Transcript.NewBelow) -> None:
        event.stop()
        self.query_one(RunStatus).new_below = event.new_below


def _title_line(title: str | None) -> str:
    """The chat's title line for a session's title (``None`` or empty: a new session's).

    On one line, not cut to a width: ``#chat-title`` cuts it with an ellipsis to the width it
    has, in cells, and again when that changes (cut at 80 here, a wide terminal showed 80).
    Only a title wider than any terminal (a long first message) is cut, to spare laying it out."""
    return format.one_line(title, TITLE_CELLS) if title else "New session"


TITLE_CELLS = 1000
"""More cells than a terminal is wide: a title is cut here only to spare laying out a long first message."""


BUSY_NOTICES = {
    "resume": "A run is still going: stop it (escape) first.",
    "regenerate": "Wait for the answer, or stop it with escape, then regenerate.",
    "edit_last": "Wait for the answer, or stop it with escape, then edit.",
    "edit": "Wait for the answer, or stop it with escape, then edit.",
    "trim": "Wait for the answer, or stop it with escape, then trim.",
    "undo": "Wait for the answer, or stop it with escape, then undo.",
    "fork": "Wait for the answer, or stop it with escape, before forking.",
}
"""What a conversation key says while an answer runs, for what it would do (enter and the session keys say it too)."""


MAX_TURNS_PREFIX = f"{MaxTurnsExceeded.__name__}: "
"""How the runner stores the error of a run that ran out of turns (``"{type}: {message}"``)."""

_AFTER_MAX_TURNS = "goes on with it once max_turns is raised in the config file and lovia started again"
"""What the resume key does for a run out of turns: with the same max_turns it fails at once."""

ANSWER_ASKED_AGAIN = " (the answer it was writing when cut off is asked for again)"
"""Said of a resume of a run cut off while an answer streamed: the model answers that turn anew."""


def _cut_mid_answer(run: TranscriptRun) -> bool:
    """Whether ``run`` was cut off while an answer streamed (its last entry the partial answer)."""
    last = run.entries[-1] if run.entries else None
    return isinstance(last, AssistantMessage) and last.finish_reason == CUT_OFF


def _dropped_by_resending(target: EditTarget) -> str:
    """What resending ``target`` drops, as the editing line and its question say it ("" for nothing):
    its answer (a message never answered, as a fork's last, has none) and the runs after it."""
    dropped = [*(["its answer"] if target.answered else []),
               *([f"the {format.count(target.later_runs, 'run')} after it"] if target.later_runs else [])]
    return " and ".join(dropped)
