"""LoviaApp: the terminal UI over a ChatBackend."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from functools import cached_property
from types import FrameType
from typing import Any, ClassVar

import rich
from rich.segment import Segments
from textual import events, work
from textual.app import App, SystemCommand
from textual.await_complete import AwaitComplete
from textual.binding import Binding, BindingType
from textual.css.query import NoMatches
from textual.dom import DOMNode, NoScreen
from textual.notifications import Notification, SeverityLevel
from textual.screen import ModalScreen, Screen
from textual.theme import Theme
from textual.widget import Widget
from textual.widgets import Input, TextArea
from textual.worker import Worker

from lovia.themes import DEFAULT_THEME, THEME_NAMES, THEMES
from lovia.themes.light import readable_on_light
from lovia.tui import format
from lovia.tui.backend import RESUMABLE_STATES, ChatBackend, run_state
from lovia.tui.collector import COLLECTOR
from lovia.tui.config import RememberedState
from lovia.tui.idle import IDLE_WORK
from lovia.tui.keymap import Keymap
from lovia.tui.screens.choice import ChoiceScreen
from lovia.tui.screens.confirm import ConfirmScreen
from lovia.tui.screens.help import HelpScreen
from lovia.tui.screens.main import MainScreen
from lovia.tui.widgets.inspector import CheckpointInspector
from lovia.tui.widgets.runs_pane import RunList, RunsPane
from lovia.tui.widgets.sessions_pane import SessionFilter, SessionList, SessionsPane
from lovia.tui.widgets.transcript import Transcript

OPENS_SOMETHING = frozenset({
    "app.help", "app.command_palette", "main.search", "main.export", "main.trash", "main.mcp_servers",
    "main.toggle_sessions", "main.toggle_runs", "chat.edit_last", "sessions.rename", "sessions.delete",
    "runs.discard", "runs.finalize", "runs.timeline", "transcript.timeline", "inspector.give_output",
    "inspector.give_error", "trash.purge", "runs.resume", "inspector.resume", "chat.resume",
})
"""The actions that open a dialog (a question, a prompt, the timeline; a resume asks first when the
run ran on another model) or move focus to a pane or to the message box (an edit of the last
message): the keys typed right after one go there (see
``LoviaApp.hold_keys``). The transcript's edit, fork and trim keys hold what is typed after them
themselves (``Transcript.on_key``)."""
CLOSES_SOMETHING = frozenset({
    "help.close", "search.close", "trash.close", "trash.restore", "timeline.close", "mcp.close", "confirm.yes",
    "confirm.no", "choice.cancel", "prompt.cancel", "main.close_overlay",
})
"""The actions that close a dialog or fold a pane: the keys typed right after one go where focus comes
back to, not to the dialog going away (``f8 escape ab`` typed "ab" nowhere). Enter in a dialog (the
choice of a list, the answer of a prompt) and the answer keys of a question (``ChoiceScreen``) hold
them too."""
MOVES_FOCUS = OPENS_SOMETHING | CLOSES_SOMETHING
KEYS_HELD_AT_MOST = 0.5
"""Seconds the keys typed after a dialog's key wait for it to take focus (see ``LoviaApp.hold_keys``)."""
KEYS_HELD_WHILE_WORKING = 5.0
"""Seconds they wait at most while the work the key started is still going (a store slow to answer
before the dialog is shown: the export reads the session first). Escape and the quit key among
them wait no longer than :data:`KEYS_HELD_AT_MOST`."""
USER_FLOWS = frozenset({"dialog", "search", "timeline"})
"""The worker groups of what a user's key starts and may end in a dialog (a flow that asks, a search
whose first hit opens): while one a held key started goes, the keys wait up to
:data:`KEYS_HELD_WHILE_WORKING`."""
OPENS_ON_ENTER = (SessionList, SessionFilter)
"""Where enter opens what is highlighted and gives focus to what it opened (a session: its message
box): the keys typed after it wait for focus to move, whenever enter's own handling is done (the
session is read after it)."""
QUIT_WAITS_FOR_SENDING = 10.0
"""Seconds the quit key waits for a message being sent to be stored (a busy store) before it quits
or asks, as the answer runs or not."""
WORKERS_END_AT_MOST = 1.0
"""Seconds the app's workers are given to wind down once cancelled as it closes (see ``LoviaApp._end_workers``)."""
KEYS_HELD_CHECK = 0.01
"""How often the keys held look whether focus has moved (the first look lets the key be handled)."""
COLLECTOR_RESUMES_AFTER = 1.0
"""Seconds after the first paint at which a collector paused for start-up runs again: its first
collection walks every object start-up made (~25 ms here), and the lists read after the first paint
(every session, the check for runs finished before a crash) are done by then."""

TERMINATING_SIGNALS = (signal.SIGTERM, signal.SIGHUP) if hasattr(signal, "SIGHUP") else (signal.SIGTERM,)
"""What quits the app as "Stop and quit" does (see LoviaApp._quit_on_termination)."""
HANGUP = getattr(signal, "SIGHUP", None)
"""The signal of a terminal that closed (see LoviaApp._terminal_gone)."""
OUTLIVES_TERMINAL = 30.0
"""Seconds a process whose terminal closed may take to stop its answer and close, before SIGALRM ends it as
a crash would (its run then reads as crashed, and resumes as one)."""

QUIT_QUESTION = ("An answer is still running. Stop it and quit?\n"
                 "The run is kept: {resume} resumes it the next time you open this session.")
QUIT_AFTER_ANSWER = "The answer has ended meanwhile. Quit now?"
"""The quit question once the answer it asked about has ended while it was shown."""
UNSENT_KEY = "unsent"
"""In ``state.json``: what was typed and not sent when lovia quit, by session id (``""``: a new session)."""


class LoviaApp(App[None]):
    """Chat, inspect and resume runs from the keyboard."""

    TITLE = "lovia"
    # Notices at the top right, under the header, on every screen: at the bottom, Textual's place,
    # they covered the message box (its right half at 80x24, and what was being typed there) and a
    # dialog's line of keys; placed apart on the main screen only, one shown as a dialog opened was
    # drawn twice. One line of padding less: four at once reached the message box at 24 rows.
    CSS = """
    ToastRack { dock: top; align: right top; margin-bottom: 0; margin-top: 1; overflow-y: hidden; }
    Toast { padding: 0 1; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("ctrl+n", "new_session", "New session", id="app.new_session"),
        # priority: TextArea has its own f6, and switching panes must work from every pane
        Binding("f6", "next_pane", "Next pane", priority=True, id="app.next_pane"),
        Binding("shift+f6", "previous_pane", "Previous pane", show=False, priority=True,
                id="app.previous_pane"),
        Binding("ctrl+t", "next_theme", "Theme", id="app.next_theme"),
        Binding("f1", "help", "Help", id="app.help"),
        # Textual's own quit and command palette keys, named here so that [keys] can move them
        # (Textual adds no palette binding of its own when the app has one)
        Binding("ctrl+q", "quit", "Quit", show=False, priority=True, id="app.quit",
                tooltip="Quit (asks first while an answer is running)"),
        Binding("ctrl+p", "command_palette", "palette", show=False, priority=True, id="app.command_palette",
                tooltip="Command palette: every action by name"),
    ]

    def __init__(self, backend: ChatBackend, *, model_label: str, theme: str | None = None,
                 state: RememberedState | None = None, default_theme: str | None = None,
                 tune_collector_for_startup: bool = False, keys: Mapping[str, tuple[str, ...]] | None = None) -> None:
        """``theme`` (from ``--theme``) wins over the theme the user last picked (remembered in
        ``state``), which wins over ``default_theme`` (the config file's), then lovia's default.

        ``tune_collector_for_startup`` (the ``lovia`` command's): the garbage collector is paused
        from when the app loads until :data:`COLLECTOR_RESUMES_AFTER` after the main screen's first
        paint, or until the app closes (see :mod:`lovia.tui.collector`: its full passes were a
        quarter of the CPU time to the first paint).

        ``keys``: the config file's ``[keys]`` table (validated, :func:`lovia.tui.keymap.parse_keys`),
        applied with Textual's keymap; its clashes are shown once the main screen opens.
        """
        super().__init__()
        # Set, not assigned: the watcher would parse the CSS again (the filter takes it up with the theme).
        self.set_reactive(App.ansi_theme_light, readable_on_light(self.ansi_theme_light))
        self.lovia_keymap = Keymap(dict(keys or {}))
        """The keys in force (:func:`lovia.tui.keymap.keymap_of` reads it)."""
        if self.lovia_keymap.rebound:
            self.set_keymap(self.lovia_keymap.textual_keymap())
            # The footer finds the palette's entry by this key (a public class setting, per app here)
            setattr(self, "COMMAND_PALETTE_BINDING", self.lovia_keymap.keys("app.command_palette")[0])  # noqa: B010
        self.backend = backend
        self.model_label = model_label
        self.state = state
        self._initial_theme = theme
        self._default_theme = default_theme
        self._quit_asked = False
        # See _quit_on_termination: each signal taken, with the handling found for it.
        self._signals_taken: dict[int, Callable[[int, FrameType | None], object] | int | None] = {}
        self._terminating = False
        # Standard output and error where they are the terminal, as when the app started (a closed
        # terminal is no tty any more): they are sent to the null device when it closes.
        self._terminal_fds: tuple[int, ...] | None = tuple(fd for fd in (1, 2) if os.isatty(fd))
        self._alarm_set = False  # the watchdog of a closed terminal (see _terminal_gone)
        self._tune_collector = tune_collector_for_startup
        self._keys_from_start_handled = False  # the keys read before the first paint (see on_event)
        self._notices_shown: dict[tuple[str, str, str], float] = {}
        """Each notice on screen (message, title, severity) and when it goes (see :meth:`notify`)."""
        self._keys_held: list[events.Key] | None = None  # see hold_keys
        self._when_keys_held_are_taken: list[Callable[[], object]] = []  # see when_keys_held_are_taken
        self._held_key_handled = False  # whether the key that holds them has run its binding
        self._keys_held_by_work = 0  # blocks of keys_held_meanwhile under way
        self._unsent_taken: dict[str, str] = {}  # the unsent texts this window took from state.json at start

    def run(self, *args: Any, **kwargs: Any) -> Any:
        """Textual's, and then the closed terminal's watchdog is called off: the app has ended, and code
        that ran it goes on (the ``lovia`` command ends at once)."""
        try:
            return super().run(*args, **kwargs)
        finally:
            if self._alarm_set:
                signal.alarm(0)
                self._alarm_set = False

    def on_load(self) -> None:
        # The theme before the app's first styling: set in on_mount, it made Textual parse the CSS
        # again and restyle what was mounted (~15 ms on the way to the first paint).
        for theme in THEMES:
            self.register_theme(theme)
        remembered = self.state.load().get("theme") if self.state else None
        wanted = self._initial_theme or remembered or self._default_theme or DEFAULT_THEME
        self.theme = wanted if wanted in self.available_themes else DEFAULT_THEME
        if self._tune_collector:
            COLLECTOR.pause_for_start()

    def unsent_at_last_quit(self) -> dict[str | None, str]:
        """What was typed and not sent when lovia last quit, by session (see :meth:`exit`)."""
        stored = self.state.load().get(UNSENT_KEY) if self.state is not None else None
        if not isinstance(stored, dict):
            return {}
        self._unsent_taken = {key: text for key, text in stored.items() if isinstance(text, str)}
        return {key or None: text for key, text in self._unsent_taken.items() if text.strip()}

    def exit(self, result: Any = None, return_code: int = 0, message: Any = None) -> None:
        """Textual's, and what was typed and not sent is remembered, to come back in its session's
        composer the next time lovia starts: a message typed, then a quit while a question was up
        (the session's crashed run), was lost. Each window keeps its own: one quitting takes out of
        the file only the texts it took in at start (or wrote at an earlier exit) that are still as
        it found them, and puts in what it holds."""
        with contextlib.suppress(Exception):  # remembering is a convenience: the quit goes on whatever happens
            self._remember_unsent()
        super().exit(result, return_code, message)

    def _remember_unsent(self) -> None:
        main = self.main_screen
        if self.state is None or main is None:
            return
        with contextlib.suppress(NoMatches):  # quit before the conversation was mounted: nothing typed
            unsent = {key or "": text for key, text in main.chat.unsent().items()}
            stored = self.state.load().get(UNSENT_KEY)
            stored = dict(stored) if isinstance(stored, dict) else {}
            # Another window's text, or one it changed since this window took it, stays.
            kept = {key: text for key, text in stored.items() if self._unsent_taken.get(key) != text}
            kept.update(unsent)
            if kept != stored:
                self.state.remember(**{UNSENT_KEY: kept})
            self._unsent_taken = unsent  # what this window holds in the file now (an exit asked twice)

    def first_paint_done(self) -> None:
        """Called by the main screen once it is first painted: if start-up paused the collector, it runs
        again :data:`COLLECTOR_RESUMES_AFTER` seconds later, past the work that follows the first paint."""
        self.call_later(self._after_keys_typed_while_starting)
        if self._tune_collector:
            self.set_timer(COLLECTOR_RESUMES_AFTER, COLLECTOR.resume_after_start, name="resume collector")

    def _after_keys_typed_while_starting(self) -> None:
        # From the app's queue: the keys read before the first paint wait in it, and are handled
        # before this (see on_event).
        self._keys_from_start_handled = True

    def notify(self, message: str, *, title: str = "", severity: SeverityLevel = "information",
               timeout: float | None = None, markup: bool = True) -> None:
        """Textual's notice, but never twice at once: a notice the same as one still shown (a key
        pressed twice where it does nothing) replaces it, shown for its whole time again rather
        than stacked under it. An error reads as a sentence (the library's messages start in lower
        case, as Python's exceptions do).

        Always plain text, whatever ``markup`` says (widgets pass Textual's default, markup on):
        notices quote titles, paths, call names and servers' errors, and ``[/]`` in any of them
        made the toast raise as it drew, which ended the app."""
        if severity == "error":
            message = format.sentence(message)
        shown_for = self.NOTIFICATION_TIMEOUT if timeout is None else timeout
        notice, now = (message, title, severity), time.monotonic()
        self._notices_shown = {shown: until for shown, until in self._notices_shown.items() if until > now}
        if notice in self._notices_shown:
            # On the loop, ahead of the new one (notify may be called from any thread)
            self.call_later(self._withdraw, notice)
        self._notices_shown[notice] = now + shown_for
        super().notify(message, title=title, severity=severity, timeout=timeout, markup=False)

    def _withdraw(self, notice: tuple[str, str, str]) -> None:
        """Take the notice shown the same as ``notice`` off the screen (as drawn with the next notice);
        a new one the same keeps its place in :attr:`_notices_shown` (hence Textual's own
        ``_unnotify``, not this app's)."""
        for shown in list(self._notifications):
            if (shown.message, shown.title, shown.severity) == notice:
                super()._unnotify(shown, refresh=False)

    def withdraw_notices(self, under: Screen[Any]) -> None:
        """Take the notices shown, errors aside, away from the screen ``under`` a dialog just opened.

        They told of what was done there, and over the dialog they hid its text, what is typed
        into it and its keys (at 80 columns a notice takes half the width): "Exported …" covered
        the search box opened right after. The start's key clash notice goes too; the help screen
        lists the clashes for as long as they last. An error stays its time: it says what failed
        and what to do. Textual redraws the toasts of the screen on top only, so those of ``under``
        are hidden here (its ``ToastRack``); its notices come back to it with the screen."""
        for notice in [notice for notice in self._notifications if notice.severity != "error"]:
            self._unnotify(notice, refresh=False)
        for rack in under.query("ToastRack"):
            # Hidden there: the dialog shows what is left, and ``under`` shows through it, with its toasts
            # where they were laid out last (an error moved up by the withdrawal showed twice). Textual
            # shows the rack again, up to date, when the screen comes back.
            rack.display = False

    def clear_notifications(self) -> None:
        self._notices_shown.clear()  # none is shown now: the next may be the same as one cleared
        super().clear_notifications()

    def _unnotify(self, notification: Notification, refresh: bool = True) -> None:
        # Textual's, called when a toast times out or is clicked away (guarded in
        # tests/tui/test_textual_private_names.py): the same notice may show again at once.
        self._notices_shown.pop((notification.message, notification.title, notification.severity), None)
        super()._unnotify(notification, refresh)

    def on_mount(self) -> None:
        IDLE_WORK.enabled = True  # this app tells it of keys and clicks (on_event)
        self.theme_changed_signal.subscribe(self, self._remember_theme)
        self.sub_title = self.model_label
        self.push_screen(MainScreen(self.backend))
        self._report_key_clashes()
        self._quit_on_termination()

    def _quit_on_termination(self) -> None:
        """SIGTERM (``kill``, a service stopping) and SIGHUP (the terminal or the SSH connection closed)
        quit as "Stop and quit" does: a running answer is stopped and saved as stopped (resumable),
        and the terminal is given back as it was. Left to Python, either ended the process at once:
        the terminal stayed in the app's mode (no echo, mouse reporting on), the run read as crashed.
        Not where the loop cannot take signals (another thread than the main one, Windows)."""
        loop = asyncio.get_running_loop()
        for number in TERMINATING_SIGNALS:
            found = signal.getsignal(number)
            try:
                if number == HANGUP:
                    # Taken at once, between two bytecodes, not when the loop next turns: the
                    # terminal's output must go nowhere before anything else is drawn to it (Textual
                    # answers the SIGCONT that comes with a hangup by drawing the whole screen again).
                    signal.signal(number, lambda _number, _frame: self._hung_up(loop))
                else:
                    loop.add_signal_handler(number, self._terminated)
            except (NotImplementedError, RuntimeError, ValueError):
                return
            self._signals_taken[number] = found

    def _hung_up(self, loop: asyncio.AbstractEventLoop) -> None:
        # Runs between two bytecodes of whatever the main thread was doing: nothing may escape it.
        try:
            self._terminal_gone()
        except OSError:
            pass  # no descriptor to spare for the null device: the watchdog still ends the process
        finally:
            with contextlib.suppress(RuntimeError):  # the loop closed meanwhile: nothing left to stop
                loop.call_soon_threadsafe(self._terminated)

    def _terminated(self) -> None:
        if self._terminating:  # asked again while the answer is being stopped: now, whatever is left
            self.exit()
            return
        self._terminating = True
        self.run_worker(self._stop_and_exit(), group="quit")

    def _terminal_gone(self) -> None:
        """The terminal closed (a tmux window, an SSH connection): what the app still draws, and
        Textual's shutdown, go to the null device. Written to the closed terminal, they failed and
        ended Textual's writer thread, whose queue then filled and blocked the app for good: a
        process left running, holding its database, after its answer was stopped and saved. Should
        the process still not end, SIGALRM ends it :data:`OUTLIVES_TERMINAL` seconds later (an alarm, not
        a thread: starting one here could wait for good on a lock the interrupted code holds).

        A SIGHUP sent while the terminal is still there (``kill -HUP``) quits as SIGTERM does, the
        terminal given back as it was: only descriptors that are no terminal any more are redirected."""
        if self.is_headless or self._terminal_fds is None:
            return
        gone = [fd for fd in self._terminal_fds if not os.isatty(fd)]  # a hung-up terminal is no tty
        if not gone:
            return
        self._terminal_fds = None
        if hasattr(signal, "SIGALRM"):
            signal.signal(signal.SIGALRM, signal.SIG_DFL)
            signal.alarm(int(OUTLIVES_TERMINAL))
            self._alarm_set = True
        null = os.open(os.devnull, os.O_WRONLY)
        try:
            for fd in gone:
                os.dup2(null, fd)
        finally:
            os.close(null)

    async def _stop_and_exit(self) -> None:
        main = self.main_screen
        if main is not None and main.chat.running:
            await main.stop_run_and_wait()
        self.exit()

    def _report_key_clashes(self) -> None:
        said = self.lovia_keymap.clash_notice()  # what each clash does, in lines that fit at 80x24
        if said:
            self.notify(said[0], title=said[1], severity="warning", timeout=30)

    async def on_event(self, event: events.Event) -> None:
        if isinstance(event, (events.Key, events.MouseDown)):
            IDLE_WORK.input_seen()
        if isinstance(event, events.Key) and not event.is_forwarded:
            if event.key == "ctrl+j" and not self._keys_from_start_handled:
                # An enter typed while lovia started, before Textual took the terminal over: the
                # terminal's line discipline made it a line feed, the byte of ctrl+j (a new line),
                # and "hello enter" typed at once waited in the composer unsent. Such keys wait in
                # the app's queue until the first paint; a real ctrl+j among them, typed before
                # anything showed, is taken for an enter too.
                event = events.Key("enter", "\r")
            if self._keys_held is not None:
                self._keys_held.append(event)  # see hold_keys
            else:
                await self._take_key(event)
            return
        await super().on_event(event)

    async def _take_key(self, key: events.Key) -> None:
        """Send ``key`` where focus is, as Textual does; one that opens or closes a dialog or a pane
        holds the keys after it (see :meth:`hold_keys`)."""
        bound = self._focus_moving_binding(key) if key.key in self._keys_that_move_focus else None
        screen = self.screen
        answers = isinstance(screen, ChoiceScreen) and screen.answers_on(key.key)
        if bound is None and not answers:
            await super().on_event(key)
            return
        # As it was before the key: a priority binding's action runs in the next line; any other's
        # once the key has come back up to the app (on_key). A choice's key never comes back up:
        # the question takes it, and the wait ends as the question goes.
        before = (screen, self.focused, set(self.workers))
        answered = self._flows_that_may_go_on(screen)
        self._held_key_handled = False
        focus_must_move = key.key == "enter" and isinstance(self.focused, OPENS_ON_ENTER)
        await super().on_event(key)
        self.hold_keys(before, focus_must_move=focus_must_move, answered=answered)
        if bound is not None and bound.priority:
            self._settle_held_key()  # its action has run (any other's runs once the key is back up here)

    def _flows_that_may_go_on(self, dialog: Screen) -> tuple[Screen, frozenset[Worker]] | None:
        """For a key on ``dialog`` (it may answer it): the screen under it, and the user flows run from
        that screen (:data:`USER_FLOWS`), one of which may have asked and go on with what the answer
        said (a finalize, a session opened) before focus lands where the keys are meant. A flow run
        from further down waits for a screen still up (the trash shows while its purge question is
        answered) and is not counted: the keys would have waited for the trash to close."""
        if not isinstance(dialog, ModalScreen) or len(self.screen_stack) < 2:
            return None
        under = self.screen_stack[-2]
        flows = frozenset(worker for worker in self.workers if worker.group in USER_FLOWS
                          and not worker.is_finished and _screen_of(worker.node) is under)
        return under, flows

    def on_key(self, event: events.Key) -> None:
        # The held key has come back up to the app. Textual calls this just before its own _on_key
        # runs the key's binding, in the same message: what follows it in the app's queue comes after.
        if self._keys_held is not None:
            self.call_later(self._settle_held_key)

    def _settle_held_key(self) -> None:
        """The held key's action has run: the wait may end once what it posted has reached the screen.

        Many a key's action posts a message that starts its flow (a question, a prompt) where it is
        handled, on the screen. The wait looked once after 10 ms, and in 1 in 20 bursts (``delete
        n`` in the sessions list) the message had not arrived: the keys went to the list, and the
        question came up after them."""
        def handled() -> None:
            self._held_key_handled = True

        self._after_what_focus_posted(handled)

    def _after_what_focus_posted(self, then: Callable[[], object], *, up_to: DOMNode | None = None) -> None:
        """Call ``then`` once what was posted so far to the focused widget has gone up to ``up_to``
        (default: the screen), or at once with nothing focused.

        A message bubbles up one widget at a time, each taking it from its own queue: so does
        this, a call queued on the focused widget, then on its parent, and so on, after whatever
        was posted there (the way up gone, ``then`` is called where it broke off)."""
        stop = up_to or self.screen

        def hop(node: DOMNode) -> None:
            parent = node.parent
            if node is stop or parent is None or not parent.call_later(hop, parent):
                then()

        focused = self.focused
        if focused is None or not focused.call_later(hop, focused):
            then()

    # -- keys typed right after a dialog's or a pane's key -----------------------------------

    @cached_property
    def _keys_that_end_the_wait(self) -> frozenset[str]:
        return frozenset({"escape", *self.lovia_keymap.keys("app.quit")})

    def _escape_or_quit_held(self) -> bool:
        """Whether escape or the quit key is among the keys held: they wait no longer than a plain hold."""
        return any(key.key in self._keys_that_end_the_wait for key in self._keys_held or ())

    @cached_property
    def _keys_that_move_focus(self) -> frozenset[str]:
        return frozenset({"enter", *(key for name in MOVES_FOCUS for key in self.lovia_keymap.keys(name))})

    def _focus_moving_binding(self, key: events.Key) -> Binding | None:
        """The binding of :data:`MOVES_FOCUS` (or enter's in a dialog or in :data:`OPENS_ON_ENTER`) ``key``
        runs where focus is now, if any: the action applies, and a text box there does not type it (a
        letter moved onto one in ``[keys]``)."""
        if key.is_printable and isinstance(self.focused, (Input, TextArea)):
            return None
        bound = self.screen.active_bindings.get(key.key)
        if bound is None or not bound.enabled:
            return None
        if bound.binding.id in MOVES_FOCUS or (key.key == "enter" and (
                isinstance(self.screen, ModalScreen) or isinstance(self.focused, OPENS_ON_ENTER))):
            return bound.binding
        return None

    def hold_keys(self, before: tuple[Screen, Widget | None, set[Worker]] | None = None, *,
                  focus_must_move: bool = False,
                  answered: tuple[Screen, frozenset[Worker]] | None = None) -> None:
        """Keys typed from now on wait until focus has moved (the dialog or the pane the key just
        read opens takes it), then go where it is; when nothing took it, once the work the key
        started (its workers) is done, or after :data:`KEYS_HELD_AT_MOST` at most
        (:data:`KEYS_HELD_WHILE_WORKING` while that work goes on), they go where focus is all the
        same. Escape or the quit key among them lets them go after :data:`KEYS_HELD_AT_MOST` in any
        case: neither waits on a slow store.

        Textual sends each key to the focus of the moment it reads the key, and a dialog takes
        focus a moment after its key (a worker shows it, its resume focuses it): ``ctrl+f time
        enter`` in one burst searched for nothing while "time" went into the message box and enter
        sent it. Called as a key of :data:`MOVES_FOCUS` is read, before the next is. The wait
        is a worker, so whoever waits for the app's workers waits for the keys held too. ``before``:
        the screen, the focus and the workers as they were before the key (default: now).
        ``focus_must_move``: the key always gives focus to what it opens (:data:`OPENS_ON_ENTER`), so
        the wait does not end with the key's handling. ``answered``: for a key on a dialog, the screen
        under it and the flows that may go on with its answer (see :meth:`_flows_that_may_go_on`):
        once that screen is back, the keys wait for those flows to end, or to show a dialog of their own.
        """
        if self._keys_held is None:
            self._keys_held = []
            screen, focused, workers = before or (self.screen, self.focused, set(self.workers))
            self.run_worker(self._wait_for_focus_to_move(screen, focused, workers, focus_must_move, answered),
                            group="keys held", exit_on_error=False)

    @contextlib.contextmanager
    def keys_held_meanwhile(self) -> Iterator[None]:
        """Keys typed while the block runs wait, then go where focus is once it is done (as
        :meth:`hold_keys` has them wait for the work a key started: :data:`KEYS_HELD_WHILE_WORKING`
        at most, escape and the quit key :data:`KEYS_HELD_AT_MOST`).

        For the work a dialog's answer starts before focus lands where the keys are meant: a
        session restored from the trash is listed and opened, and "xyz" typed right after ``r``
        went into the message box of the session open before it (its draft). With the answer's own
        hold (see :meth:`hold_keys`) under way, that hold lasts until the block is done too."""
        self._keys_held_by_work += 1
        if self._keys_held is None:
            self._held_key_handled = True  # no key of its own to wait for
            self.hold_keys()
        try:
            yield
        finally:
            self._keys_held_by_work -= 1

    async def _wait_for_focus_to_move(self, screen: Screen, focused: Widget | None, workers: set[Worker],
                                      focus_must_move: bool, answered: tuple[Screen, frozenset[Worker]] | None) -> None:
        since = time.monotonic()
        under, asked_by = answered or (None, frozenset())
        try:
            while True:
                await asyncio.sleep(KEYS_HELD_CHECK)
                started = [worker for worker in self.workers
                           if worker not in workers and worker.group != "keys held" and not worker.is_finished]
                going_on = any(not worker.is_finished for worker in asked_by)
                # Held longer only for a user action's flow the key started or answered (the app's
                # checks and the widgets' own workers come and go meanwhile, and must not keep the
                # keys waiting).
                working = (self._keys_held_by_work > 0 or going_on
                           or any(worker.group in USER_FLOWS for worker in started))
                waited = time.monotonic() - since
                if waited > KEYS_HELD_WHILE_WORKING or (
                        waited > KEYS_HELD_AT_MOST and (self._escape_or_quit_held() or not working)):
                    return
                if self._keys_held_by_work or (going_on and self.screen is under):
                    continue
                if self.screen is not screen:
                    if self.focused is not None:
                        return  # a dialog, once it has taken focus (as it is shown, or once it read what it shows)
                    continue
                if self.focused is not focused or (self._held_key_handled and not started and not focus_must_move):
                    return
        finally:
            # From the app's own queue, in order with the keys read after; whatever ended the wait
            # (an error, the app closing): the keys are never held for good.
            self.call_later(self._let_go_held_keys)

    async def _let_go_held_keys(self) -> None:
        keys, self._keys_held = self._keys_held or [], None
        for index, key in enumerate(keys):
            await self._take_key(key)
            if self._keys_held is not None:  # that key opened something too: the rest wait for it
                self._keys_held[:0] = keys[index + 1:]
                return
        waiting, self._when_keys_held_are_taken = self._when_keys_held_are_taken, []
        for then in waiting:
            self._after_what_focus_posted(then)

    def when_keys_held_are_taken(self, then: Callable[[], object]) -> None:
        """Call ``then`` once the keys typed so far, the held ones included (see :meth:`hold_keys`),
        have been handled where focus is and what they posted has gone up to the screen.

        For a flow whose keys typed meanwhile mean something else than the same keys later: a
        search hit's opening, where typed letters are text (:attr:`Transcript.typing_goes_to_composer`)."""
        if self._keys_held is None:
            self._after_what_focus_posted(then)
        else:
            self._when_keys_held_are_taken.append(then)

    def pop_screen(self) -> AwaitComplete:
        """Close the screen on top (a dialog), the workers it owns cancelled first: Textual cancels
        them only once its widgets are gone, and a search answering as escape closed its screen
        looked for its results list there and ended the app on a crash report. A flow of the
        screen under it waiting for the dialog's answer is that screen's, and goes on; a dialog's
        widgets own no workers (one that did would keep them until it unmounts, as Textual has it)."""
        if len(self.screen_stack) > 1:
            self.workers.cancel_node(self.screen)
        return super().pop_screen()

    async def _shutdown(self) -> None:
        # Private Textual (guarded by tests/tui/test_textual_private_names.py and the pinned
        # range): the one way every close goes (the quit key, a signal, a test's end), before any
        # widget is removed.
        await self._end_workers()
        await super()._shutdown()

    async def _end_workers(self) -> None:
        """Cancel every worker, and give them :data:`WORKERS_END_AT_MOST` to wind down, while the
        widgets and the stores are all still there.

        The app's own run has Textual cancel every worker as its message loop ends, but not wait
        for them; closed from outside that loop (a test's end, ``run_test``), nothing is cancelled
        before the widgets are removed, and Textual cancels a widget's workers only as it
        unmounts, after its children: a flow whose store answered then (a session restored from
        the trash being listed) looked for a list no longer there, and the app ended on a crash
        report (CI, under load). The wait lets a cancelled flow's cleanup run against whole
        widgets and open stores (an answer being stopped marks its run interrupted). A worker
        started during the wait is not cancelled here: Textual's own close does it, as before."""
        workers = [worker for worker in self.workers if not worker.is_finished]
        for worker in workers:
            worker.cancel()

        async def ended(worker: Worker) -> None:
            with contextlib.suppress(Exception):  # cancelled, or failed in its cleanup (reported as ever)
                await worker.wait()

        if workers:
            waits = [asyncio.ensure_future(ended(worker)) for worker in workers]
            _, still_going = await asyncio.wait(waits, timeout=WORKERS_END_AT_MOST)
            for wait in still_going:
                wait.cancel()  # the wait on it, not the worker: Textual's close ends that

    async def on_unmount(self) -> None:
        loop = asyncio.get_running_loop()
        for number, found in self._signals_taken.items():
            if number == HANGUP:
                signal.signal(number, signal.SIG_DFL)  # as the loop's removal leaves one
            else:
                loop.remove_signal_handler(number)  # which leaves Python's default: the handling found comes back
            # Not None (set outside Python: nothing to put back from here), nor an event loop's own
            # handler: that one only wakes its loop for the callback the app's took the place of, and
            # put back without it, the signal would be ignored; the default ends the process instead.
            if found is not None and not getattr(found, "__module__", "").startswith("asyncio"):
                signal.signal(number, found)
        self._signals_taken.clear()
        IDLE_WORK.drop()  # the widgets it would unfold are going; the collector thaws below
        COLLECTOR.app_closed()  # runs again even if the first paint never came (an error at start)
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
        # Only a theme the file does not hold already: the signal comes for the theme set at start
        # too, and rewriting the file the same (an fsync) sat on the way to the first paint.
        if self.state is not None and self.state.load().get("theme") != theme.name:
            self.state.remember(theme=theme.name)

    @property
    def main_screen(self) -> MainScreen | None:
        """The main screen, under any dialog over it; ``None`` before it opens or once it closed."""
        return next((s for s in self.screen_stack if isinstance(s, MainScreen)), None)

    @property
    def main(self) -> MainScreen:
        main = self.main_screen
        assert main is not None, "the main screen is open while the app takes keys"
        return main

    @property
    def escape_to_minimize(self) -> bool:
        # While an answer runs, escape stops it (MainScreen's binding), even in a maximized pane.
        main = self.main_screen
        return super().escape_to_minimize and not (main is not None and main.check_action("stop_run", ()))

    # -- quitting ------------------------------------------------------------------------------

    async def action_quit(self) -> None:
        """Quit; while an answer is running, ask first: stop it (it stays resumable) and quit, or stay.

        The keys read before the quit key are handled first, and a message they sent is stored
        first: the quit key is a priority key, run as it is read, and ``enter ctrl+q`` typed
        together quit before the message box had sent anything (the message was lost). A second
        quit key while this goes on, or while the question is up, does nothing more."""
        if self._quit_asked:
            return
        self._quit_asked = True
        decided = False

        def decide() -> None:
            nonlocal decided
            if not decided:
                decided = True
                self._quit_or_ask()

        # The keys before it go up to the app (their bindings run there), then what their
        # bindings posted goes up to the screen (a message sent reaches the chat panel). A widget
        # on the way busy with the store (a handler awaiting it) holds the quit no longer than a
        # held key: decided then all the same.
        self._after_what_focus_posted(lambda: self._after_what_focus_posted(decide), up_to=self)
        self.set_timer(KEYS_HELD_AT_MOST, decide, name="quit")

    @work(group="quit")
    async def _quit_or_ask(self) -> None:
        try:
            main = self.main_screen
            deadline = time.monotonic() + QUIT_WAITS_FOR_SENDING
            # The message being stored. While the question about the session's unfinished runs is
            # up, nothing is being stored: the quit goes ahead, as with any other question up.
            while main is not None and main.chat.sending and self.screen is main:
                if time.monotonic() > deadline:
                    break
                await asyncio.sleep(KEYS_HELD_CHECK)
            if main is None or not main.chat.running:
                self.exit()
                return
            question = QUIT_QUESTION.format(resume=self.lovia_keymap.key_text("chat.resume"))
            dialog = ConfirmScreen(question, confirm="Stop and quit")

            def answer_ended(running: bool) -> None:
                if not running and dialog.is_attached:
                    dialog.ask_instead(QUIT_AFTER_ANSWER, confirm="Quit")

            # Not asked before the dialog is mounted: the answer may end as it opens.
            dialog.call_after_refresh(lambda: dialog.watch(main.chat, "running", answer_ended))
            stop = await self.push_screen_wait(dialog)
        finally:
            self._quit_asked = False
        if stop:
            self.notify("Stopping the answer…")
            await main.stop_run_and_wait()
            self.exit()

    # -- actions -----------------------------------------------------------------------------

    async def action_new_session(self) -> None:
        if await self.main.open_session(None):
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
        """Every action of the app, each only while it applies (the keys' own checks decide).

        Of Textual's own commands only Quit stays (it runs lovia's quit, which asks first while an
        answer runs). Its theme picker, keys panel, screenshot and maximize go: lovia has its own
        theme (ctrl+t), help (f1) and pane maximizing (f10), and the keys panel squeezed the
        conversation and did not close with escape.
        """
        main = screen if isinstance(screen, MainScreen) else None
        if any(command.callback == self.action_quit for command in super().get_system_commands(screen)):
            yield SystemCommand("Quit", "Quit lovia; it asks first while an answer is running "
                                f"({self.lovia_keymap.key_text('app.quit')})", self.action_quit)
        if main is not None:
            yield from self._main_screen_commands(main)

    def _main_screen_commands(self, main: MainScreen) -> Iterable[SystemCommand]:
        chat = main.chat
        transcript = chat.query_one(Transcript)
        running = chat.running
        opened = chat.has_history
        keys = self.lovia_keymap.key_text  # the keys in force, as the [keys] table set them
        if not running:
            yield SystemCommand("Send message", f"Send what is in the composer ({keys('composer.send')})",
                                chat.composer.action_submit)
        if chat.check_action("stop", ()):
            yield SystemCommand("Stop", f"Stop the running answer; it stays resumable ({keys('chat.stop')})",
                                chat.action_stop)
        if chat.check_action("cancel_edit", ()):
            yield SystemCommand("Cancel edit", f"Leave the message as it is and restore the draft "
                                f"({keys('chat.cancel_edit')})", chat.action_cancel_edit)
        if chat.check_action("resume", ()) and not chat.hidden_in_footer("resume"):
            yield SystemCommand("Resume", f"Resume this session's stopped, crashed or failed run "
                                f"({keys('chat.resume')})", chat.action_resume)
        if opened and chat.check_action("regenerate", ()) and not chat.hidden_in_footer("regenerate"):
            yield SystemCommand("Regenerate", f"Drop the last answer and ask again ({keys('chat.regenerate')})",
                                chat.action_regenerate)
        if opened and chat.check_action("edit_last", ()):
            yield SystemCommand("Edit last message", f"Edit your last message and resend it "
                                f"({keys('chat.edit_last')})", chat.action_edit_last)
        if opened and transcript.check_action("edit", ()) and transcript.applies("edit") and not running:
            yield SystemCommand("Edit selected message", f"Edit the selected message and resend "
                                f"({keys('transcript.edit')} in the transcript)", transcript.action_edit)
        if opened and transcript.check_action("trim", ()) and transcript.applies("trim") and not running:
            yield SystemCommand("Trim tool outputs", f"Cut old tool outputs to reclaim space "
                                f"({keys('transcript.trim')} in the transcript)", transcript.action_trim)
        if transcript.selected_view is not None and transcript.check_action("fork", ()) and not running:
            yield SystemCommand("Fork from selected message", "A new session copied up to and including the "
                                f"selected message ({keys('transcript.fork')} in the transcript); the original stays",
                                transcript.action_fork)
        if opened and main.check_action("export", ()):
            yield SystemCommand("Export session", "Write the open session to a Markdown or JSON lines file "
                                f"({keys('main.export')})", main.action_export)
        if transcript.applies("expand"):
            yield SystemCommand("Expand or collapse tool call", f"Show or hide the selected tool call's details "
                                f"({keys('transcript.expand')} in the transcript)", transcript.action_expand)
        if transcript.selected_view is not None:
            yield SystemCommand("Copy message", f"Copy the selected message ({keys('transcript.copy')} in the "
                                "transcript)", transcript.action_copy)
        if transcript.applies("copy_code"):
            yield SystemCommand("Copy code block", "Copy the selected message's last code block; again, the one "
                                f"before ({keys('transcript.copy_code')} in the transcript)",
                                transcript.action_copy_code)
        if opened:
            yield SystemCommand("Timeline of a run", "Where the time went: the run under the transcript cursor (the "
                                "last one when none is selected) as a waterfall of its steps "
                                f"({keys('transcript.timeline')} in the transcript)", transcript.action_timeline)
        if transcript.check_action("undo_rewind", ()) and transcript.applies("undo_rewind") and not running:
            yield SystemCommand("Undo rewind", "Bring the transcript back as it was before the last edit-and-resend "
                                f"or regenerate ({keys('transcript.undo_rewind')} in the transcript)",
                                transcript.action_undo_rewind)
        if main.check_action("search", ()):
            yield SystemCommand("Search", f"Find words in every session's messages, tool outputs and titles "
                                f"({keys('main.search')})", main.action_search)
        if transcript.applies("match"):
            yield SystemCommand("Next match", f"The search's next match ({keys('transcript.next_match')} in the "
                                "transcript)", lambda: transcript.action_match(1))
            yield SystemCommand("Previous match", f"The search's previous match "
                                f"({keys('transcript.previous_match')} in the transcript)",
                                lambda: transcript.action_match(-1))
        if main.check_action("mcp_servers", ()):
            yield SystemCommand("MCP servers", f"Their state and tools; switch one on or off in this session "
                                f"({keys('main.mcp_servers')})", main.action_mcp_servers)
        if main.check_action("trash", ()):
            yield SystemCommand("Trash", "The sessions you deleted: restore one, or purge it now "
                                f"({keys('main.trash')})", main.action_trash)
        yield from self._session_commands(main)
        yield from self._run_commands(main)
        for name, title in (("sessions", "sessions pane"), ("runs", "runs pane and inspector")):
            if main.pane(name) is not None:
                shown = main.pane_shown(name)
                yield SystemCommand(f"{'Hide' if shown else 'Show'} the {title}",
                                    f"{'Fold' if shown else 'Show'} it ({keys(f'main.toggle_{name}')})",
                                    lambda name=name, shown=shown: main.show_pane(name, not shown))
        if main.maximized is not None:
            yield SystemCommand("Restore pane", f"Show every pane again ({keys('main.minimize')})", main.minimize)
        elif main.focused is not None:
            yield SystemCommand("Maximize pane", f"Give the focused pane the whole screen ({keys('main.maximize')})",
                                main.action_maximize)
        if not running:
            yield SystemCommand("New session", f"Start a new conversation ({keys('app.new_session')})",
                                self.action_new_session)
        yield SystemCommand("Next pane", f"Move focus to the next pane ({keys('app.next_pane')})",
                            self.action_next_pane)
        yield SystemCommand("Previous pane", f"Move focus to the previous pane ({keys('app.previous_pane')})",
                            self.action_previous_pane)
        yield SystemCommand("Next theme", f"Switch to the next lovia theme ({keys('app.next_theme')})",
                            self.action_next_theme)
        yield SystemCommand("Help", f"Every key lovia knows ({keys('app.help')})", self.action_help)

    def _session_commands(self, main: MainScreen) -> Iterable[SystemCommand]:
        pane = main.pane("sessions")  # not a query of the screen: that would walk every message shown
        if not isinstance(pane, SessionsPane):
            return
        listed = {info.session_id for info in pane.sessions}
        session_id = main.chat.session_id
        keys = self.lovia_keymap.key_text
        yield SystemCommand("Filter sessions", f"Type to narrow the sessions list ({keys('sessions.filter')} in it)",
                            main.filter_sessions)
        yield SystemCommand("Next sessions time view", f"Now: {pane.time_view.title}. By last activity, active today, "
                            f"active this week, longest first ({keys('sessions.time_view')} in the sessions pane)",
                            main.next_sessions_time_view)
        if session_id in listed and not main.chat.running:
            if pane.query_one(SessionList).check_action("rename", ()):
                yield SystemCommand("Rename session", f"Give the open session a new title ({keys('sessions.rename')})",
                                    lambda: pane.post_message(SessionsPane.Action("rename", session_id)))
            yield SystemCommand("Delete session", f"Move the open session to the trash; {keys('main.trash')} "
                                f"restores it ({keys('sessions.delete')} in the sessions list)"
                                if self.backend.can_trash else
                                f"Delete the open session for good ({keys('sessions.delete')} in the sessions list)",
                                lambda: pane.post_message(SessionsPane.Action("delete", session_id)))

    def _run_commands(self, main: MainScreen) -> Iterable[SystemCommand]:
        side = main.pane("runs")
        lists: list[RunList] = list(side.query(RunList)) if side is not None else []
        if not lists:
            return
        run_list = lists[0]
        highlighted = run_list.highlighted
        run_id = run_list.get_option_at_index(highlighted).id if highlighted is not None else None
        run = next((r for r in main.query_one(RunsPane).runs if r.run_id == run_id), None)
        if run is not None and run_state(run.head) in RESUMABLE_STATES and not main.chat.running:
            for action, title, help_text in (
                    ("resume", "Resume selected run", "Resume the run selected in the runs list"),
                    ("discard", "Discard selected run", "Delete the selected run's checkpoint"),
                    ("finalize", "Finalize selected run", "Add the selected run to its session as it stands")):
                yield SystemCommand(title, help_text, lambda action=action: run_list.action_act(action))
        if run is not None:
            yield SystemCommand("Timeline of selected run", "The run selected in the runs list as a waterfall of its "
                                f"steps ({self.lovia_keymap.key_text('runs.timeline')} in the runs list)",
                                lambda: run_list.action_act("timeline"))
        inspector = main.query_one(CheckpointInspector)
        if inspector.run_id is not None:
            yield SystemCommand("Copy run id", f"Copy the id of the inspected run, {inspector.run_id}",
                                inspector.action_copy_run_id)


def _screen_of(node: DOMNode) -> Screen | None:
    """The screen ``node`` is on (itself for a screen); ``None`` once it is off every screen."""
    if isinstance(node, Screen):
        return node
    try:
        return node.screen if isinstance(node, Widget) else None
    except NoScreen:
        return None
