"""MainScreen: sessions | conversation | runs and checkpoint inspector.

The conversation always gets most of the width. Below :data:`WIDE` columns the runs pane and
inspector fold away, below :data:`MEDIUM` the sessions pane too; a folded pane comes back as an
overlay by its key (ctrl+b sessions, ctrl+o runs) and folds again when focus leaves it. On a
wide screen the same keys hide and show the panes. f10 maximizes the focused pane.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Iterator, Sequence
from dataclasses import replace
from pathlib import Path
from typing import ClassVar

from textual import events, on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.css.query import NoMatches
from textual.screen import Screen
from textual.timer import Timer
from textual.widget import Widget
from textual.widgets import Header, Static
from textual.worker import Worker

from lovia.checkpoint import RunSnapshot, RunSummary, claim_refused
from lovia.entries import ToolCall
from lovia.errors import LoviaError
from lovia.export import default_file_name, export_target
from lovia.session import SessionInfo
from lovia.transcript import dangling_tool_calls
from lovia.tui import format
from lovia.tui.backend import RESUMABLE_STATES, ChatBackend, RunState, SessionListing, TranscriptRun, run_state
from lovia.tui.keymap import keymap_of
from lovia.tui.restyle import set_class_sparing
from lovia.tui.screens.confirm import ConfirmScreen
from lovia.tui.screens.mcp_servers import ServersScreen
from lovia.tui.screens.prompt import PromptScreen
from lovia.tui.screens.search import MatchNavigator, SearchResults, SearchScreen
from lovia.tui.screens.timeline import TimelineScreen, run_for_timeline
from lovia.tui.screens.trash import TrashScreen
from lovia.tui.store_errors import told_on
from lovia.tui.widgets.chat_panel import ChatPanel
from lovia.tui.widgets.footer import LoviaFooter
from lovia.tui.widgets.inspector import CheckpointInspector
from lovia.tui.widgets.runs_pane import RunsPane
from lovia.tui.widgets.sessions_pane import PAGE, SessionsPane
from lovia.tui.widgets.tool_call_view import ToolCallView
from lovia.tui.widgets.transcript import Transcript

PANES = ("session-list", "transcript", "composer", "run-list", "inspector")
"""The panes f6 and shift+f6 move between, by id, in order."""
CHANGE_CHECK_SECONDS = 1.0
"""How often the main screen asks the stores whether another window or process wrote to them."""
OpenSessionMark = tuple[str, SessionInfo | None, tuple[tuple[str, str, float, int], ...]]
"""What the stores say of the open session, cheaply: its id, its info, and its in-flight runs
(run id, state, last update, entries). It changes when a run of the session lands or progresses, and
when one held elsewhere is held no more."""
ListedRun = tuple[str, str | None, RunState, float]
"""A run not stored yet as a sessions list shows it: its id, session, state and last save."""
FEW_CHANGED = 50
"""Up to this many sessions changed, the lists read those alone (one query each); more, every session at once."""
USER_ACTION_GROUPS = frozenset({"dialog", "run", "trim", "heal", "lists"})
"""Worker groups of things the user (or start-up) is doing that may reopen the transcript themselves."""

MEDIUM = 110
"""From this width the sessions pane is shown beside the conversation."""
WIDE = 150
"""From this width the runs pane and inspector are shown too."""

SIDE_PANES = {"sessions": "SessionsPane", "runs": "#side"}
"""The panes that fold, by name: what ctrl+b and ctrl+o show and hide."""

WELCOME = ("Write a message below and press enter to start a conversation. "
           "f1 lists every key; ctrl+p finds any action by name.")
"""The welcome with lovia's default keys; with keys moved by the config file's [keys], see
:meth:`MainScreen._welcome`."""


class MainScreen(Screen):
    # Textual annotates it as an instance variable: a ClassVar here would not type-check
    HORIZONTAL_BREAKPOINTS = [(0, "-narrow"), (MEDIUM, "-medium"), (WIDE, "-wide")]  # noqa: RUF012

    BINDINGS: ClassVar[list[BindingType]] = [
        # priority: escape must stop the answer from any pane, ahead of the focused widget's own
        # escape; while nothing runs the binding does not apply and escape goes on as usual
        Binding("escape", "stop_run", "Stop", priority=True,
                tooltip="Stop the running answer, from any pane (it stays resumable)", id="main.stop_run"),
        Binding("ctrl+b", "toggle_pane('sessions')", "Sessions",
                tooltip="Show or hide the sessions pane (over the conversation on a narrow screen)",
                id="main.toggle_sessions"),
        Binding("ctrl+o", "toggle_pane('runs')", "Runs",
                tooltip="Show or hide the runs pane and inspector (over the conversation on a narrow screen)",
                id="main.toggle_runs"),
        # priority: search from anywhere, the composer included (ctrl+f is not one of its keys)
        Binding("ctrl+f", "search", "Search", priority=True, id="main.search",
                tooltip="Search every session: user messages, answers, tool calls and outputs, titles"),
        # One key, two bindings: the footer reads what f10 does now (only one applies at a time).
        Binding("ctrl+s", "export", "Export", id="main.export",
                tooltip="Export the open session to a Markdown file (a .jsonl name writes JSON lines)"),
        Binding("f10", "maximize", "Maximize", tooltip="Maximize the focused pane", id="main.maximize"),
        Binding("f10", "minimize", "Restore", tooltip="Restore every pane", id="main.minimize"),
        Binding("escape", "close_overlay", "Fold pane", show=False,
                tooltip="Fold the pane shown over the conversation", id="main.close_overlay"),
        Binding("f8", "trash", "Trash", show=False, id="main.trash",
                tooltip="The sessions you deleted: restore one, or purge it now"),
        Binding("f5", "mcp_servers", "MCP servers", show=False, id="main.mcp_servers",
                tooltip="The MCP servers of the config file, their tools; switch one on or off in this session"),
    ]

    DEFAULT_CSS = """
    MainScreen #panes { layers: default overlay; }
    MainScreen #side { width: 40; border-left: solid $panel; }
    /* The rule between the runs and the inspector: the pane's, not the inspector's top border, which
       met its focus bar's column in a corner (a box left open on the right). */
    MainScreen RunsPane { border-bottom: solid $panel; }
    MainScreen #welcome { display: none; padding: 1 2; color: $text-muted; }
    /* under another screen (a dialog, the timeline, f5): its keys do not work there, so not shown */
    MainScreen.-covered LoviaFooter { visibility: hidden; }
    MainScreen.-empty #welcome { display: block; }

    /* folded: hidden beside the conversation, shown over it on request */
    MainScreen.-narrow SessionsPane { display: none; }
    MainScreen.-narrow #side, MainScreen.-medium #side { display: none; }
    MainScreen.-narrow.-sessions-open SessionsPane,
    MainScreen.-narrow.-runs-open #side, MainScreen.-medium.-runs-open #side {
        display: block; layer: overlay; height: 100%; background: $surface;
    }
    MainScreen.-narrow.-sessions-open SessionsPane { dock: left; border-right: thick $accent; }
    MainScreen.-narrow.-runs-open #side, MainScreen.-medium.-runs-open #side {
        dock: right; width: 44; max-width: 90%; border-left: thick $accent;
    }
    /* unfolded, hidden by the user */
    MainScreen.-sessions-closed SessionsPane, MainScreen.-runs-closed #side { display: none; }

    /* a maximized overlay is laid out as a pane again: docked, a full screen high, it went
       under the header, which hid the sessions pane's title (important: the overlay rules
       above are more specific) */
    MainScreen.-maximized-view .-maximized {
        width: 1fr !important; height: 1fr !important; max-width: 100%; dock: none !important;
        layer: default !important;
    }
    """

    ALLOW_IN_MAXIMIZED_VIEW: ClassVar[str | None] = "Header, LoviaFooter"
    # The composer has focus from the start, as on_mount leaves it: Textual's default focuses the
    # first focusable widget (the sessions filter), and moving focus on from it restyled both and
    # rebuilt the footer while the app started.
    AUTO_FOCUS: ClassVar[str | None] = "#composer"

    def __init__(self, backend: ChatBackend) -> None:
        super().__init__()
        self.backend = backend
        self.inspected: str | None = None
        self._inspected_run: TranscriptRun | None = None  # the inspected run as the transcript has it
        self._live_run: tuple[str, int | None] | None = None  # the chat's run (and stream) the inspector went to
        self._change_timer: Timer | None = None
        self._change_check: Worker[None] | None = None
        self._open_session_mark: OpenSessionMark | None = None
        self._own_run_ended = False  # a run of this window ended since the last check: its writes are not news
        self._reload_waiting = False  # the open session changed elsewhere, its reload waits for the reader
        self._change_check_error: str | None = None
        self._listed_run_states: dict[str, RunState] | None = None  # as the runs pane listed them at the last check
        # What the sessions list was last brought up to date with, whole or session by session (see
        # refresh_changed): where the session store's changes stood, and the runs not stored yet.
        self._sessions_mark: int | None = None
        self._runs_listed: set[ListedRun] | None = None
        # One refresh of the lists at a time, from its reads to what it shows: a slow one started
        # first would show what it read after a later one had shown what is there now.
        self._lists_updating = asyncio.Lock()
        self._resumed_before = False  # see on_screen_resume
        self._unstored: list[RunSummary] | None = None  # the runs not stored yet, as the lists last read them
        self._panes: dict[str, Widget | None] = {}  # the side panes by name (see SIDE_PANES), once composed
        self._chat_panel: ChatPanel | None = None
        self._matches: MatchNavigator | None = None  # the search whose matches n and N step through
        # While a hit picked in the search opens: the n and N pressed meanwhile, taken from the hit once
        # it is shown (taken at once, they stepped from where the cursor was before the search).
        self._steps_while_a_hit_opens: list[int] | None = None
        self._focus_before_pane: Widget | None = None  # where focus was when a side pane took it
        self._last_search = ""  # the query the search screen had when it last closed: ctrl+f brings it back
        self._export_paths: dict[str, str] = {}  # per session, the export path typed and not written yet

    def _welcome(self) -> str:
        keymap = keymap_of(self)
        if not keymap.rebound:
            return WELCOME
        # A key a clash gave to another action too is not promised (the clash is reported at start)
        send, help_key, palette = (keymap.sure_key_text(name)
                                   for name in ("composer.send", "app.help", "app.command_palette"))
        start = (f"Write a message below and press {send} to start a conversation." if send
                 else "Write a message below to start a conversation.")
        clauses = [f"{help_key} lists every key" if help_key else "",
                   f"{palette} finds any action by name" if palette else ""]
        more = "; ".join(clause for clause in clauses if clause)
        return f"{start} {more}." if more else start

    def compose(self) -> ComposeResult:
        # The width's class from the start: set by Textual's first resize, it restyled and laid
        # out every widget again before the first paint.
        width = self.app.size.width
        self.set_class(True, next(name for floor, name in sorted(self.HORIZONTAL_BREAKPOINTS, reverse=True)
                                  if width >= floor), update=False)
        # Kept: check_action reads them for the footer many times a key press, faster than a query.
        sessions = SessionsPane(can_rename=self.backend.can_rename) if self.backend.can_list_sessions else None
        side = Vertical(id="side")
        self._panes = {"sessions": sessions, "runs": side}
        self._chat_panel = ChatPanel(self.backend)
        yield Header()
        with Horizontal(id="panes"):
            if sessions is not None:
                yield sessions
            with Vertical(id="conversation"):
                yield Static(self._welcome(), id="welcome", markup=False)
                yield self._chat_panel
            with side:
                if self.backend.can_list_runs:
                    yield RunsPane()
                yield CheckpointInspector(id="inspector")
        yield LoviaFooter()

    async def on_mount(self) -> None:
        """First paint: the newest :data:`~lovia.tui.widgets.sessions_pane.PAGE` sessions and the newest one open;
        every other session is listed by a worker after it."""
        footer = self.query_one(LoviaFooter)
        footer.hold()  # the load changes what the keys can do many times: the footer is made once, after it
        await self._follow_other_windows()
        first_page: list[SessionListing] = []
        with told_on(self, "list the sessions"):
            first_page = await self.backend.sessions(limit=PAGE)
        try:
            await self.open_session(first_page[0].session_id if first_page else None, sessions=first_page)
            unsent_at_last_quit = getattr(self.app, "unsent_at_last_quit", None)  # LoviaApp's, as first_paint_done
            if unsent_at_last_quit is not None:
                self.chat.take_unsent(unsent_at_last_quit())
            self.query_one("#composer").focus()
        finally:
            footer.release()
        if len(first_page) >= PAGE:
            self.call_after_refresh(self._list_every_session)  # after the first paint, not competing with it
        self.call_after_refresh(self._record_finished_runs)
        first_paint_done = getattr(self.app, "first_paint_done", None)  # LoviaApp's (it imports this module)
        if first_paint_done is not None:
            self.call_after_refresh(first_paint_done)

    @work(exclusive=True, group="lists")
    async def _list_every_session(self) -> None:
        """After the first paint: every session, for the list to draw as it is scrolled and for the filter."""
        with self._unless_closing():
            await self.refresh_lists()

    @contextlib.contextmanager
    def _unless_closing(self) -> Iterator[None]:
        """For a worker that updates the widgets after awaiting a store: when the app closed meanwhile
        and is removing them, the widget it looks for is gone, and there is nothing left to update."""
        try:
            yield
        except NoMatches:
            if self.app.is_running:
                raise

    @work(group="heal")
    async def _record_finished_runs(self) -> None:
        """After the first paint: a run finished just before a crash gets into its session."""
        try:
            replayed = await self.backend.record_finished_runs()
        except Exception as exc:  # a check at start: it must never take the app down
            self.notify(f"Could not check the last finished runs: {exc}", severity="warning")
            return
        with self._unless_closing():
            chat = self.chat
            if any(session_id == chat.session_id and run_id not in chat.transcript.run_ids
                   for session_id, run_id in replayed) and not chat.running:
                await chat.open_session(chat.session_id)  # one of its runs was missing from what is shown
            if replayed:
                await self.refresh_lists()

    # -- other windows -------------------------------------------------------------------

    async def _follow_other_windows(self) -> None:
        """Start the change watcher; called before the first load, so nothing lands unseen.

        Every ``CHANGE_CHECK_SECONDS`` a timer starts :meth:`check_other_windows` as a worker,
        unless the previous check is still going or the first load is not over. The timer and
        the worker belong to this screen, so they end with it, before the app closes the stores.
        """
        with contextlib.suppress(LoviaError):  # the first load reports a broken store
            await self.backend.changed_elsewhere()  # the first call only takes note of where the stores are
        self.watch(self.chat, "running", self._chat_running_changed, init=False)
        self._change_timer = self.set_interval(CHANGE_CHECK_SECONDS, self._start_change_check,
                                               name="other windows")

    def _chat_running_changed(self, running: bool) -> None:
        if not running:
            self._own_run_ended = True
        for pane in self.query(SessionsPane):
            pane.answering = running

    def _start_change_check(self) -> None:
        # is_mounted: on_mount's first load is over (the timer starts before it, which must not race it).
        if self.is_mounted and self.app.is_running and (self._change_check is None or self._change_check.is_finished):
            self._change_check = self._run_change_check()

    @work(exclusive=True, group="other windows")
    async def _run_change_check(self) -> None:
        """:meth:`check_other_windows`; a store error is said once (not at every check), and checks go on."""
        try:
            with self._unless_closing():
                await self.check_other_windows()
        except LoviaError as exc:
            if str(exc) != self._change_check_error:
                self.notify(f"Could not check for changes by other windows: {exc}", severity="warning")
            self._change_check_error = str(exc)
        else:
            self._change_check_error = None

    async def check_other_windows(self) -> bool:
        """One check for writes by another window or process; returns whether the lists were reloaded.

        When the stores say someone else committed since the last check (one cheap statement
        each, see :meth:`ChatBackend.changed_elsewhere`), the sessions and runs lists are
        reloaded, once whatever changed, and the open session's transcript is reloaded if what
        the stores say of that session (its info and its in-flight runs) changed. A process that
        dies writes nothing: so the same happens when a listed run held elsewhere is held no
        more (its owner on this machine is gone, or its lease lapsed). The two stores
        of this app have a connection each, so this window's own runs count as changes too:
        while one runs, each check reads its session and the runs again (every session waits
        for the check after the run, which lists them all once), and its transcript is left to
        the run; once nobody writes, checks reload nothing. A transcript reload waits while a run
        of this window goes, a message is being edited, a dialog or another action is under way,
        or the reader has scrolled up or has the message cursor in use; it happens at a later
        check once none of that holds.
        """
        # Taken before anything is awaited: a run of this window that ends during this check has
        # writes this check may see only in part, so its flag is left for the next check.
        own_run = self.chat.running or self._own_run_ended
        self._own_run_ended = False
        changed = await self.backend.changed_elsewhere()
        listed_now = self._listed_runs_now()
        if self._listed_run_states is None:
            self._listed_run_states = listed_now  # the first check: as the first load listed them
        if changed or listed_now != self._listed_run_states:
            if self.chat.running and self.chat.session_id is not None:
                # This window's run writes at every turn: its session and the runs are read again
                # now, every session once it ends (a change elsewhere meanwhile is listed then).
                await self.refresh_session(self.chat.session_id)
            else:
                await self.refresh_changed()
            self._listed_run_states = self._listed_runs_now()
            mark = await self._mark_open_session()
            if own_run or self.chat.running:
                pass  # this window's own writes: what it shows is the run as it went, with its notices
            elif mark is not None and mark[1] is None and not mark[2] and self.chat.transcript.run_ids:
                # Nothing of it is left to read: say so at once, whatever the reader was doing.
                self.notify("This session was deleted in another window.", severity="warning")
                self._reload_waiting = False
                if not self.chat.sending:  # else the message being sent goes on, into the session made anew
                    reading = self.chat.transcript.has_focus
                    await self.open_session(None)
                    if reading:  # nothing left to read there: on to writing a new message
                        self.query_one("#composer").focus()
                mark = None
            elif mark is not None and (self._open_session_mark is None or self._open_session_mark[0] != mark[0]):
                # A session this window opened itself without a mark (a fork, a new session): what it
                # shows was read at its opening, nothing to tell the reader about.
                self._reload_waiting = False
            elif mark != self._open_session_mark:
                if not self._reload_waiting and self._reader_away():
                    self.notify("This conversation changed in another window; it updates once you are back at "
                                "its end, or out of the transcript.")
                self._reload_waiting = True
            self._open_session_mark = mark
            changed = True
        if self._reload_waiting and not self._busy_here() and not self._reader_away():
            self._reload_waiting = False
            transcript = self.chat.transcript
            cursor_at_end = transcript.has_focus and transcript.at_last_message
            # Marked before the reload reads: a write landing during it then differs from the mark,
            # and the next check reloads again (marked after, it would hide what the reload missed).
            before_reload = await self._mark_open_session()
            await self.chat.open_session(self.chat.session_id)
            if cursor_at_end:  # the reader follows the end with the cursor: it stays on the last message
                transcript.action_cursor_end()
            self._open_session_mark = before_reload
        return changed

    async def _mark_open_session(self, session_id: str | None = None) -> OpenSessionMark | None:
        """What the stores say of the open session (or of ``session_id``, about to be opened)."""
        session_id = session_id or self.chat.session_id
        if session_id is None:
            return None
        in_flight = await self.backend.runs(session_id=session_id)
        return (session_id, await self.backend.session_info(session_id),
                tuple((r.run_id, run_state(r.head), r.head.updated_at, r.entry_count) for r in in_flight))

    def _listed_runs_now(self) -> dict[str, RunState]:
        """How the runs the runs pane lists read now; no store call (a dead owner is seen by its pid)."""
        side = self.pane("runs")  # a query of the screen would walk every message shown, each second
        panes: list[RunsPane] = list(side.query(RunsPane)) if side is not None else []
        return {r.run_id: run_state(r.head) for pane in panes for r in pane.runs}

    def _busy_here(self) -> bool:
        """Whether this window is running an answer, editing, in a dialog or in another action now."""
        chat = self.chat
        if chat.running or chat.has_class("-editing") or self.app.screen is not self:
            return True
        return any(worker.group in USER_ACTION_GROUPS and not worker.is_finished for worker in self.app.workers)

    def _reader_away(self) -> bool:
        """Whether the reader has scrolled up the transcript or holds its message cursor above its end.

        The cursor on the last message (``end``, or the first ``up``) is back at the end: the
        reload then happens, and the cursor goes to the new last message.
        """
        transcript = self.chat.transcript
        # Content shorter than the view cannot be scrolled away from its end (the anchor may leave
        # scroll_y below 0 then, so is_vertical_scroll_end is no help).
        scrolled_up = transcript.max_scroll_y > 0 and transcript.scroll_y < transcript.max_scroll_y - 1
        scrolled_up = scrolled_up or not transcript.at_end  # an earlier page of a long session is shown
        return scrolled_up or (transcript.has_focus and transcript.selected >= 0 and not transcript.at_last_message)

    async def open_session(self, session_id: str | None, *, sessions: Sequence[SessionInfo] | None = None) -> bool:
        """Show ``session_id`` in the chat; the inspector shows its newest in-flight run, if any.

        The runs are listed again (one query); the sessions list only moves its marker to the
        open session, from what it holds, unless ``sessions`` are given to show. False when the
        session could not be read (the chat said why and shows what it showed).
        """
        # Marked before the chat reads it (see check_other_windows): a write landing meanwhile
        # differs from the mark, and the next check shows it.
        mark = await self._mark_open_session(session_id) if session_id is not None else None
        opened = await self.chat.open_session(session_id)
        if opened:
            self._open_session_mark, self._reload_waiting = mark, False
        if not opened:
            if self.chat.session_id is not None:
                return False  # what was open stays open, as it was
            # Nothing was open (the app is starting): a new session, and the lists as they load.
            session_id = None
            await self.chat.open_session(None)
        self._welcome_if_empty()
        async with self._lists_updating:
            unstored = await self._unstored_runs()
            in_flight = [r for r in self.backend.listed_runs(unstored) if r.head.session_id == session_id] \
                if session_id else []
            self.inspected = in_flight[0].run_id if in_flight else None
            if sessions is None and self.backend.can_list_sessions:
                pane = self.query_one(SessionsPane)
                sessions = pane.listed
            self._show_lists(sessions, unstored)
        await self.inspect(self.inspected)
        return opened

    async def _unstored_runs(self) -> list[RunSummary]:
        """The runs not stored yet; those last read, with a notice, when they cannot be read now (a
        damaged checkpoint): the sessions are listed all the same."""
        with told_on(self, "list the runs"):
            return await self.backend.unstored_runs()
        return self._unstored or []

    @property
    def chat(self) -> ChatPanel:
        return self.query_one(ChatPanel)

    async def refresh_lists(self) -> None:
        """Reload the sessions and runs panes (and the inspected run) from the stores: every session is listed."""
        async with self._lists_updating:
            await self._list_everything()
        await self.inspect(self.inspected)

    async def _list_everything(self) -> None:
        unstored = await self._unstored_runs()
        # Marked before the listing: what is written during it is read again by the next update.
        # Without a mark (the store cannot say, or failed to) every update lists every session.
        mark = None
        with contextlib.suppress(LoviaError):
            changes = await self.backend.sessions_changed(None)
            mark = changes.mark if changes is not None else None
        with told_on(self, "reload the lists"):
            sessions = await self.backend.sessions()  # all: the pane filters by what it shows
            self._show_lists(sessions, unstored)
            self._sessions_mark = mark
            self._runs_listed = _runs_as_listed(unstored)

    async def refresh_changed(self) -> None:
        """Bring the lists up to date after writes here or elsewhere, as :meth:`refresh_lists` does,
        reading only the sessions that changed when the store can say which
        (:class:`~lovia.session.ChangeTrackingSession`) and they are few (:data:`FEW_CHANGED`): with ten
        thousand sessions a full listing holds the app a tenth of a second or more. A session changed
        is one the store names, or one whose runs not stored yet changed (new, gone, written, or
        reading another state: a lease lapsed)."""
        async with self._lists_updating:
            await self._list_what_changed()
        await self.inspect(self.inspected)

    async def _list_what_changed(self) -> None:
        changes = None
        if self._sessions_mark is not None:
            with told_on(self, "reload the lists"):
                changes = await self.backend.sessions_changed(self._sessions_mark)
        if changes is None or changes.session_ids is None or len(changes.session_ids) > FEW_CHANGED:
            await self._list_everything()
            return
        unstored = await self._unstored_runs()
        runs = _runs_as_listed(unstored)
        changed = set(changes.session_ids) | _sessions_of_changed_runs(self._runs_listed or set(), runs)
        if len(changed) > FEW_CHANGED:
            await self._list_everything()
            return
        with told_on(self, "reload the lists"):
            pane = self.query_one(SessionsPane) if self.backend.can_list_sessions else None
            for session_id in sorted(changed):
                listing = await self.backend.session_listing(session_id, unstored=unstored)
                if pane is not None:
                    pane.update_session(session_id, listing, self.chat.session_id)
            self._show_lists(None, unstored)
            self._sessions_mark, self._runs_listed = changes.mark, runs

    async def refresh_session(self, session_id: str, *, runs_too: bool = True) -> None:
        """Bring one session's listing up to date, and the runs pane unless ``runs_too`` is false.

        One ``session_info`` query when the runs are not read again (the states of the runs
        not stored are those the lists last read, with the chat's own run reading running);
        one more to list them. Only that session's option is redrawn.
        """
        if not self.backend.can_list_sessions and not runs_too:
            return
        async with self._lists_updating:
            await self._list_session(session_id, runs_too)

    async def _list_session(self, session_id: str, runs_too: bool) -> None:
        with told_on(self, "reload the lists"):
            unstored = self._unstored
            if runs_too or unstored is None:
                unstored = await self.backend.unstored_runs()
            listing = await self.backend.session_listing(session_id, unstored=unstored)
            if listing is not None and not runs_too and self.chat.running and self.chat.session_id == session_id:
                listing = replace(listing, state="running", activity=max(listing.activity, time.time()))
            if self.backend.can_list_sessions:
                self.query_one(SessionsPane).update_session(session_id, listing, self.chat.session_id)
            if runs_too:
                self._show_lists(None, unstored)

    def _show_lists(self, sessions: Sequence[SessionInfo] | None, unstored: list[RunSummary]) -> None:
        """Show ``sessions`` (all of them, or the first page; ``None``: leave the sessions as listed) and the runs."""
        current = self.chat.session_id
        self._unstored = unstored
        pane = self.query_one(SessionsPane) if self.backend.can_list_sessions else None
        if pane is not None:
            if sessions is not None:
                pane.show(sessions, current)
            elif pane.current != current:
                pane.show(pane.listed, current)
        if self.backend.can_list_runs:
            runs = self.backend.listed_runs(unstored)
            titles = {info.session_id: info.title for info in (pane.listed if pane is not None else [])}
            self.query_one(RunsPane).show(runs, titles, dangling=self.backend.dangling_calls)
            states = {run_state(run.head) for run in runs if run.head.session_id == current}
            self.chat.has_resumable_run = bool(states & set(RESUMABLE_STATES))
            self.chat.runs_elsewhere = "elsewhere" in states

    async def inspect(self, run_id: str | None, stored: TranscriptRun | None = None) -> None:
        """Show ``run_id`` in the inspector: its checkpoint, else ``stored`` (the run as the transcript has it).

        A run without a checkpoint (a stored segment) keeps showing what its session has of
        it when the lists refresh; a newer call wins over a slower older one.
        """
        if run_id != self.inspected or stored is not None:
            self._inspected_run = stored
        self.inspected = run_id
        snapshot, read = None, False
        with told_on(self, "read the inspected run"):
            snapshot = await self.backend.snapshot(run_id) if run_id else None
            read = True
        if not read or self.inspected != run_id:
            return  # another run was picked while this one loaded
        inspector = self.query_one(CheckpointInspector)
        if (snapshot is None and self._inspected_run is not None
                and self._inspected_run.run_id in self.chat.transcript.run_ids):
            inspector.show_run(self._inspected_run)  # its checkpoint is gone, the transcript still shows it
        else:
            inspector.show(snapshot)

    def focus_pane(self, step: int) -> None:
        """Move focus to the next (or previous) pane on screen; folded panes are skipped."""
        # One walk (the focus chain's), not a query of the whole screen per pane.
        shown = {w.id: w for w in self.focus_chain if w.id in PANES}
        panes = [shown[name] for name in PANES if name in shown
                 and (self.maximized is None or self.maximized in shown[name].ancestors_with_self)]
        if not panes:
            return
        focused = self.focused
        index = next((i for i, pane in enumerate(panes) if focused is pane or (focused and pane in focused.ancestors)),
                     -1)
        panes[(index + step) % len(panes)].focus()

    # -- folding and maximizing --------------------------------------------------------

    def pane(self, name: str) -> Widget | None:
        """The side pane ``name`` ("sessions" or "runs"), if this backend has it (and it is mounted)."""
        pane = self._panes.get(name)
        return pane if pane is not None and pane.is_attached else None

    def folded(self, name: str) -> bool:
        """Is the pane ``name`` folded away at this width (shown only as an overlay)?"""
        return self.has_class("-narrow") or (name == "runs" and self.has_class("-medium"))

    def pane_shown(self, name: str) -> bool:
        pane = self.pane(name)
        return pane is not None and pane.display

    def show_pane(self, name: str, show: bool = True) -> None:
        """Show (or hide) a side pane: as an overlay where it is folded, in place where it is not.

        Shown, its list takes focus; hidden while focus was in it, focus goes back where it was
        before the pane took it (the conversation's message cursor, say), else to the composer.
        """
        pane = self.pane(name)
        if pane is None:
            return
        if show and not self._in_side_pane(self.focused):
            self._focus_before_pane = self.focused
        if self.folded(name):
            self._set_screen_class(False, f"-{name}-closed")
            for other in SIDE_PANES:  # one overlay at a time
                self._set_screen_class(show and other == name, f"-{other}-open")
        else:
            self._set_screen_class(False, f"-{name}-open")
            self._set_screen_class(not show, f"-{name}-closed")
        if show:  # at once, so that focus never rests in a pane being hidden
            targets = pane.query("#session-list" if name == "sessions" else "#run-list, CheckpointInspector")
            self.set_focus(targets.first())
        elif self.focused is not None and pane in self.focused.ancestors_with_self:
            before, self._focus_before_pane = self._focus_before_pane, None
            # Back where it was, when that is still there to take it (not in a pane, nor gone).
            if before is None or not before.is_attached or self._in_side_pane(before) or not before.focusable:
                before = self.query_one("#composer")
            self.set_focus(before)

    def _in_side_pane(self, widget: Widget | None) -> bool:
        return widget is not None and any(self.pane(name) in widget.ancestors_with_self for name in SIDE_PANES)

    def on_resize(self, event: events.Resize) -> None:
        # Screen's own handler has set the breakpoints' classes; what they hide is hidden once styled.
        if self.is_active:  # under a dialog, focus is the dialog's: checked again when it closes
            self.call_after_refresh(self._focus_in_sight)

    def _focus_in_sight(self) -> None:
        """A resize folded away the pane with focus: the message box takes focus, as when the pane's own
        key hides it. Left there, focus rested out of sight, the footer offered that pane's keys, and
        what was typed went to it (letters into the sessions filter, seen only when it came back), or
        nothing had focus."""
        focused = self.focused
        if focused is not None and self.maximized in focused.ancestors_with_self:
            return  # a maximized pane shows whatever the width
        # None: Textual let focus go as the pane was hidden, and none was given.
        if focused is None or not all(node.display for node in focused.ancestors_with_self
                                      if isinstance(node, Widget)):
            self.set_focus(self.query_one("#composer"))

    def action_toggle_pane(self, name: str) -> None:
        """Show or hide a side pane. With a pane maximized, the layout is restored and the pane shown:
        toggled behind the maximized one, it was hidden or shown out of sight, and nothing changed."""
        if self.maximized is not None:
            self.minimize()
            self.show_pane(name, True)
            return
        self.show_pane(name, not self.pane_shown(name))

    def action_close_overlay(self) -> None:
        for name in SIDE_PANES:
            if self.has_class(f"-{name}-open"):
                self.show_pane(name, False)

    def watch_maximized(self) -> None:
        self.refresh_bindings()  # f10 reads Maximize or Restore in the footer

    def action_maximize(self) -> None:
        """Maximize the pane that has focus (Textual's own would take the single focused widget)."""
        focused = self.focused
        if focused is None:
            return
        panes = (SessionsPane, ChatPanel, RunsPane, CheckpointInspector)
        pane = next((w for w in focused.ancestors_with_self if isinstance(w, panes)), focused)
        if pane is self.chat and not any(self.pane_shown(name) for name in SIDE_PANES):
            # Maximized, nothing would change (80 columns: the other panes are folded away), and the
            # key seemed to do nothing at all.
            self.notify(f"The conversation fills the window already: {keymap_of(self).key_text('main.maximize')} "
                        "maximizes a pane shown beside others.", timeout=4)
            return
        self.maximized = pane

    def action_stop_run(self) -> None:
        self.chat.action_stop()

    async def stop_run_and_wait(self) -> None:
        """Stop the running answer and wait until its run has ended (and saved as stopped)."""
        chat = self.chat
        runs = [w for w in self.app.workers if w.node is chat and w.group == "run" and not w.is_finished]
        chat.action_stop()
        for worker in runs:
            with contextlib.suppress(Exception):  # its own error is shown in the transcript, or in the crash report
                await worker.wait()

    def filter_sessions(self) -> None:
        """Show the sessions pane (over the conversation if it is folded) and put focus in its filter."""
        self.show_pane("sessions")
        self.set_focus(self.query_one("#session-filter"))

    def next_sessions_time_view(self) -> None:
        """Show the sessions pane (over the conversation if it is folded) in its next time view. From
        the command palette with the pane folded, the view changed out of sight."""
        self.show_pane("sessions")
        self.set_focus(self.query_one("#session-list"))
        self.query_one(SessionsPane).next_time_view()

    def action_export(self) -> None:
        self._export_session()

    def action_trash(self) -> None:
        self._trash_flow()

    def action_mcp_servers(self) -> None:
        self.app.push_screen(ServersScreen(self.backend.mcp, self.chat.session_id))

    @work(group="dialog")  # not exclusive: that would cancel the group's other user actions (a run starting)
    async def _trash_flow(self) -> None:
        """Show the trash; a session restored from it is listed again and opened."""
        restored = await self.app.push_screen_wait(TrashScreen(self.backend))
        if restored is None:
            return
        # What is typed right after restoring is for the session restored: it waits until that is open.
        with self._keys_held_meanwhile():
            await self.refresh_changed()
            if self.chat.running:
                self.notify("The restored session is in the sessions list; the answer running here goes on.")
            else:
                await self.open_picked(restored)

    @work(group="dialog")
    async def _export_session(self) -> None:
        """Ask where to (the current directory, named after the session), write the file, say where it went.

        Only what is stored is written: a run in flight reaches the file once it is in the session.
        """
        session_id = self.chat.session_id
        if session_id is None or not self.chat.transcript.run_ids:
            self.notify("Nothing to export yet: this session has no stored message.", severity="warning")
            return
        try:
            stored = await self.backend.has_stored_runs(session_id)
        except LoviaError as exc:
            self.notify(f"Could not read the session: {exc}", severity="error")
            return
        if not stored and self.chat.running:
            self.notify("Nothing to export yet: this session's first answer is still running; export it once "
                        "it is done.", severity="warning")
            return
        if not stored:  # shown from its checkpoint alone: the export said "no session ... in this store"
            keys = keymap_of(self)
            self.notify(f"Nothing to export yet: this session's run did not finish, and only what is stored is "
                        f"exported. Resume it ({keys.first_key_text('chat.resume')}) or finalize it in the runs "
                        f"list ({keys.first_key_text('runs.finalize')}) first.", severity="warning")
            return
        # The path typed last time for this session and not written (refused, or replacing declined)
        # comes back to be mended; else the current directory, named after the session.
        path: str | None = self._export_paths.get(session_id) or str(Path.cwd() / default_file_name(session_id))
        while True:
            path = await self.app.push_screen_wait(PromptScreen(
                "Export this session to the file (a name ending in .jsonl writes JSON lines, any other Markdown):",
                path or ""))
            if not path or not path.strip():
                return
            self._export_paths[session_id] = path
            target = export_target(path.strip())
            if not (target.is_symlink() or target.exists()) or target.is_dir():  # a directory: the export says so
                break
            if await self.app.push_screen_wait(ConfirmScreen(
                    f"{format.file_path(target)} already exists. Replace it with this session's export?",
                    confirm="Replace")):
                break
            # declined: the file stays as it was, and the path comes back to name another
        try:
            summary = await self.backend.export(session_id, path.strip())
        except LoviaError as exc:  # no such directory, not writable, a store error: said, nothing half-written
            self.notify(str(exc), severity="error")
            return
        self._export_paths.pop(session_id, None)
        entries = format.count(summary.entries, "entry", "entries")
        # The path on its own line: a notice folds a path where its width ends, not at a slash.
        self.notify(f"Exported {format.count(summary.runs, 'run')} ({entries}) to\n"
                    f"{format.file_path(summary.path or path.strip())}", timeout=10)

    def hidden_in_footer(self, action: str) -> bool:
        """Export while the open session has nothing stored (see
        :class:`~lovia.tui.widgets.footer.HidesInFooter`): pressed all the same, it says so."""
        chat = self._chat_panel
        return action == "export" and not (chat is not None and chat.is_attached and chat.transcript.run_ids)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "search":
            return self.backend.can_search
        if action == "trash":
            return self.backend.can_trash
        if action == "export":  # with nothing stored yet, it says so
            return True
        if action == "stop_run":  # asked for the footer at any time, also while the app closes
            chat = self._chat_panel
            return chat is not None and chat.is_attached and chat.running
        if action == "toggle_pane":
            return self.pane(str(parameters[0])) is not None
        if action == "maximize":
            return self.maximized is None
        if action == "minimize":
            return self.maximized is not None
        if action == "close_overlay":
            return any(self.has_class(f"-{name}-open") for name in SIDE_PANES)
        return True

    def on_key(self, event: events.Key) -> None:
        """The conversation's resume key pressed in another pane (the sessions list, the runs list,
        the inspector), where it is not bound: it said nothing. It says where it works instead."""
        keys = keymap_of(self)
        focused = self.focused
        if (event.key not in keys.keys_in_force("chat.resume") or focused is None
                or self.chat in focused.ancestors_with_self or event.key in self.active_bindings):
            return
        event.stop()
        event.prevent_default()
        self.notify(f"{keys.key_text('chat.resume')} resumes the open session's run from the conversation; in the "
                    f"runs list, {keys.key_text('runs.resume')} resumes the run under the cursor.", timeout=6)

    def on_screen_suspend(self) -> None:
        self._set_screen_class(True, "-covered")
        withdraw_notices = getattr(self.app, "withdraw_notices", None)  # LoviaApp's, as first_paint_done
        if withdraw_notices is not None:
            withdraw_notices(self)  # not over the dialog's text, input and keys

    def on_screen_resume(self, event: events.ScreenResume) -> None:
        if not self._resumed_before:
            # The first resume follows the mount, which styled every widget: Textual's restyle of
            # every node again (this handler runs before Screen's) would change nothing.
            self._resumed_before = True
            event.refresh_styles = False
        self._set_screen_class(False, "-covered")
        self.call_after_refresh(self._focus_in_sight)  # a resize under a dialog may have folded a pane

    def _set_screen_class(self, add: bool, name: str) -> None:
        """Add or remove one of the screen's classes; the messages are not restyled (no rule of a
        pane folded or shown, the footer hidden under a dialog or the welcome styles them)."""
        set_class_sparing(self, add, name, spared=self.chat.transcript)

    def on_descendant_focus(self, event: events.DescendantFocus) -> None:
        # An overlay is for a quick look: it folds again once focus moves to the conversation.
        if self.query_one("#conversation") in event.widget.ancestors:
            for name in SIDE_PANES:
                self._set_screen_class(False, f"-{name}-open")

    def _welcome_if_empty(self) -> None:
        self._set_screen_class(not self.chat.transcript.children and not self.chat.running, "-empty")

    @on(ChatPanel.Changed)
    def _conversation_changed(self, event: ChatPanel.Changed) -> None:
        self._welcome_if_empty()

    # -- messages from the panes ---------------------------------------------------------

    @on(ChatPanel.Changed)
    async def _chat_changed(self, event: ChatPanel.Changed) -> None:
        stream = self.chat.stream
        execution = (event.run_id or "", id(stream) if stream is not None and stream.run_id == event.run_id else None)
        started = bool(event.run_id) and execution != self._live_run
        if started:
            # A run the chat starts or resumes is inspected once; a run the reader picks since stays.
            self._live_run, self.inspected = execution, event.run_id
        if event.session_id is None:
            await self.refresh_lists()
            return
        # Between the start and the end of the chat's run (a turn, a tool result) the runs listed do
        # not change (the chat's own run is not listed): one query for its session, none for the runs.
        mid_run = self.chat.running and not started and event.run_id is not None and self._unstored is not None
        await self.refresh_session(event.session_id, runs_too=not mid_run)
        await self.inspect(self.inspected)

    @on(ChatPanel.RunSaved)
    async def _run_saved(self, event: ChatPanel.RunSaved) -> None:
        if event.run_id == self.inspected:
            await self.inspect(event.run_id)  # turn, usage, entries and dangling calls as they land

    # -- search ----------------------------------------------------------------------------

    @work(group="dialog")
    async def action_search(self) -> None:
        """ctrl+f: the search screen; the hit picked opens, and n and N step through the matches."""
        search = SearchScreen(self.backend, self._last_search)
        results: SearchResults | None = await self.app.push_screen_wait(search)
        self._last_search = search.query_text  # as typed, whether a hit was opened or the search closed
        if results is None:
            return
        self._matches = MatchNavigator(self.backend, results)
        transcript = self.chat.transcript
        transcript.search_active = True
        transcript.refresh_bindings()
        steps: list[int] = []
        self._steps_while_a_hit_opens = steps
        transcript.typing_goes_to_composer = True  # a message typed meanwhile is not transcript keys

        def typed_ahead_taken() -> None:
            transcript.typing_goes_to_composer = False

        try:
            await self.show_match(results.hit.session_id, results.hit.position)
            while steps:  # in order, each from where the one before left the cursor
                await self._step_match(steps.pop(0))
        finally:
            self._steps_while_a_hit_opens = None
            # LoviaApp's (it imports this module): the keys typed as the hit opened are held until now.
            getattr(self.app, "when_keys_held_are_taken", lambda then: then())(typed_ahead_taken)

    async def show_match(self, session_id: str, position: int | None) -> None:
        """Open ``session_id`` (unless open) with the cursor on the entry at ``position`` (``None``: at its end)."""
        chat = self.chat
        # The open session is read again when the match is in a run it showed live (stored since).
        stale = position is not None and not chat.transcript.shows_stored(position)
        if session_id != chat.session_id or (stale and not chat.running):
            if chat.running:
                self.notify("A run is still going: stop it (escape) before opening another session.",
                            severity="warning")
                return
            if not await self.open_session(session_id):
                return
        transcript = chat.transcript
        transcript.focus()
        match = self._matches.match if self._matches is not None else None
        if position is not None and not await transcript.show_entry(position, match):
            self.notify("That match is no longer there: the session changed since the search.", severity="warning")
        elif position is not None and self._matches is not None:
            self._matches.shown_at(session_id, transcript.selected_position, position)

    @on(Transcript.MatchRequested)
    async def _match_requested(self, event: Transcript.MatchRequested) -> None:
        if self._steps_while_a_hit_opens is not None:
            self._steps_while_a_hit_opens.append(event.step)
            return
        await self._step_match(event.step)

    async def _step_match(self, step: int) -> None:
        """The next (``step`` 1) or previous (-1) match of the search, from the message under the cursor."""
        matches = self._matches
        if matches is None:
            self.notify(f"No search to step through: {keymap_of(self).key_text('main.search')} searches every "
                        "session.")
            return
        chat = self.chat
        with told_on(self, "search"):
            found = await matches.step(chat.session_id, chat.transcript.selected_position, step)
            if found is None:
                self.notify(f"No {'later' if step > 0 else 'earlier'} match of "
                            f"{format.one_line(matches.results.query, 40)!r}: "
                            f"{keymap_of(self).key_text('main.search')} searches again.")
                return
            await self.show_match(*found)

    @on(Transcript.RunSelected)
    async def _transcript_run_selected(self, event: Transcript.RunSelected) -> None:
        await self.inspect(event.run.run_id, event.run)

    @on(Transcript.TimelineRequested)
    def _timeline_requested(self, event: Transcript.TimelineRequested) -> None:
        self.open_timeline(event.run.run_id, event.run)

    @work(group="timeline")
    async def open_timeline(self, run_id: str, shown: TranscriptRun | None = None) -> None:
        """Show ``run_id``'s timeline: from its checkpoint while it is not in its session, else ``shown``
        (the run as the transcript has it); an executing run is followed as it goes."""
        async def reread() -> TranscriptRun | None:
            return await run_for_timeline(self.backend, run_id, None)

        try:
            run = await run_for_timeline(self.backend, run_id, shown)
        except LoviaError as exc:  # a store error: say so, stay up
            self.notify(str(exc), severity="error")
            return
        if run is None:
            self.notify("That run is gone: it was discarded or finalized meanwhile.", severity="warning")
            return
        await self.app.push_screen(TimelineScreen(run, reread=reread))

    @on(ToolCallView.ArchiveRequested)
    async def _archive_requested(self, event: ToolCallView.ArchiveRequested) -> None:
        session_id = self.chat.session_id
        try:
            result, run = event.view.result, self.chat.transcript.run_of(event.view)
            text = await self.backend.archived_output(session_id, result, run.run_id if run else None) \
                if session_id and result else None
        except (LoviaError, OSError, ValueError) as exc:
            self.notify(f"Could not read the archived output: {exc}", severity="error")
            return
        event.view.show_archived(text, self.backend.archive_directory)

    @on(SessionsPane.Selected)
    async def _session_selected(self, event: SessionsPane.Selected) -> None:
        await self.open_picked(event.session_id)

    async def open_picked(self, session_id: str) -> None:
        """Open a session the user picked (in the list, or restored from the trash), to go on with
        it: the sessions pane shown over the conversation folds, and the message box takes focus
        at every width (a pane shown in place kept it, and the next words typed went to its filter).
        The list's filter is cleared (see :meth:`SessionsPane.clear_filter`)."""
        # What is typed right after the enter that picked it waits until it is open (LoviaApp.hold_keys).
        with self._keys_held_meanwhile():
            await self._open_picked(session_id)

    def _keys_held_meanwhile(self) -> contextlib.AbstractContextManager[None]:
        """``LoviaApp.keys_held_meanwhile`` (keys typed meanwhile wait); nothing under another app."""
        return getattr(self.app, "keys_held_meanwhile", contextlib.nullcontext)()

    async def _open_picked(self, session_id: str) -> None:
        await self.open_session(session_id)
        pane = self.pane("sessions")  # none for a store that cannot list sessions (it may still have a trash)
        if isinstance(pane, SessionsPane):
            pane.clear_filter()
        if self.maximized is not None:  # the sessions pane, maximized: the message box was out of sight
            self.minimize()
        if self.has_class("-sessions-open"):
            self.show_pane("sessions", False)
        self.set_focus(self.query_one("#composer"))

    @on(SessionsPane.Action)
    async def _session_action(self, event: SessionsPane.Action) -> None:
        if event.action == "rename" and event.session_id:
            await self.query_one(SessionsPane).ask_new_title(event.session_id)
        elif event.session_id:
            self._session_flow(event.action, event.session_id)

    @on(SessionsPane.Renamed)
    def _session_renamed(self, event: SessionsPane.Renamed) -> None:
        self._rename_session(event.session_id, event.title)

    @work(group="dialog")
    async def _rename_session(self, session_id: str, title: str) -> None:
        try:
            await self.backend.rename(session_id, title)
            if self.chat.session_id == session_id:
                await self.chat.refresh_title()
        except LoviaError as exc:  # a store error: say so, stay up
            self.notify(str(exc), severity="error")
            await self.refresh_changed()
            return
        await self.refresh_changed()
        # A rename is asked for from the sessions pane, so there is one. Gone from the list without a
        # word, the session looked lost.
        if self.query_one(SessionsPane).filter_hides(session_id):
            keys = keymap_of(self).key_text
            self.notify(f"Renamed. The new title does not match the sessions filter, so the list hides the "
                        f"session: {keys('sessions-filter.clear')} in the list clears the filter.")

    @work(group="dialog")
    async def _session_flow(self, action: str, session_id: str) -> None:
        try:
            await self._act_on_session(action, session_id)
        except LoviaError as exc:  # refused (a run of it executes elsewhere) or a store error: say so, stay up
            self.notify(str(exc), severity="error")
        await self.refresh_changed()

    async def _act_on_session(self, action: str, session_id: str) -> None:
        # As the sessions pane lists it: a session none of whose runs completed is titled by its first input.
        info = await self.backend.session_listing(session_id, unstored=self._unstored) \
            or await self.backend.session_info(session_id)
        title = info.title if info else session_id
        if action == "delete":
            if self.chat.running and self.chat.session_id == session_id:
                self.notify("Stop the running answer first (escape).", severity="warning")
                return
            await self.backend.check_deletable(session_id)  # refused at once, not after a yes
            held = (f"its {format.count(info.entry_count, 'entry', 'entries')} and any interrupted runs of it"
                    if info and info.entry_count else "its unfinished runs")
            trash_key = keymap_of(self).key_text("main.trash")
            if self.backend.can_trash:
                days = format.count(round(self.backend.trash_days), "day")
                question = (f"Delete the session “{title}”?\nIt moves to the trash with {held}: "
                            f"{trash_key} restores it for {days}, then it is gone for good.")
            else:
                question = f"Delete the session “{title}”?\n{held[0].upper()}{held[1:]} are removed for good."
            if not await self.app.push_screen_wait(ConfirmScreen(question, confirm="Delete")):
                return
            trashed = await self.backend.delete_session(session_id)
            if self.chat.session_id == session_id:
                await self.open_session(None)  # a new session, as a window shows one: with the welcome
            if trashed is not None:
                self.notify(f"Moved “{format.one_line(title, 40)}” to the trash: {trash_key} restores it.")

    @on(RunsPane.Highlighted)
    async def _run_highlighted(self, event: RunsPane.Highlighted) -> None:
        await self.inspect(event.run_id)

    @on(CheckpointInspector.CompleteCall)
    def _complete_call(self, event: CheckpointInspector.CompleteCall) -> None:
        self._complete_call_flow(event.run_id, event.call, event.as_error)

    @work(group="dialog")
    async def _complete_call_flow(self, run_id: str, call: ToolCall, as_error: bool) -> None:
        """Ask for a dangling call's output (or error) and store it as its result; resuming then skips it."""
        what = "the error to give" if as_error else "the output it gave"
        prompt = PromptScreen(f"The call {call.name} ({call.call_id}) may have run before the run was cut short.\n"
                              f"Type {what} and press enter: it is stored as the call's result, and resuming will "
                              "not run it "
                              f"again ({keymap_of(self).key_text('prompt.cancel')}: leave it to run again).")
        answer = await self.app.push_screen_wait(prompt)
        if answer is None:
            return
        if not as_error and not answer.strip() and not await self.app.push_screen_wait(ConfirmScreen(
                f"Nothing was typed. Store an empty output as the result of {call.name} ({call.call_id})?\n"
                "The model will read that the call returned nothing, and resuming will not run it again.",
                confirm="Store it empty")):
            return
        answer = answer if as_error or answer.strip() else ""  # spaces alone are nothing typed
        try:
            if as_error:
                await self.backend.complete_call(run_id, call.call_id, error=answer or "failed (no details given)")
            else:
                await self.backend.complete_call(run_id, call.call_id, output=answer)
            self.notify(f"The result of {call.name} is stored; resuming will not run it again.")
            if run_id in self.chat.transcript.run_ids and not self.chat.running:
                await self.chat.open_session(self.chat.session_id)  # the call shows its result now
        except LoviaError as exc:
            self.notify(str(exc), severity="error")
        await self.refresh_changed()

    @on(RunsPane.Action)
    def _run_action(self, event: RunsPane.Action) -> None:
        if event.action == "timeline":
            self.open_timeline(event.run_id)
            return
        self._run_flow(event.action, event.run_id)

    @work(group="dialog")
    async def _run_flow(self, action: str, run_id: str) -> None:
        acted = False  # a discard or finalize done here (not cancelled, not refused)
        try:
            if action == "resume":
                await self.chat.resume(run_id)
                stream = self.chat.stream
                if stream is not None and stream.run_id == run_id:  # resumed (refused: focus stays put)
                    # The message box, as when a session is opened: what is typed next is a message
                    # (on the transcript, its letters ran its keys: "hello" asked what to edit).
                    self.query_one("#composer").focus()
                await self.refresh_changed()
                return
            snapshot = await self.backend.snapshot(run_id)
            if snapshot is not None and snapshot.head.is_held():
                raise claim_refused(run_id, snapshot.head)  # said at once, not after asking
            named = _run_named(snapshot)
            may_have_run = len(dangling_tool_calls(snapshot.entries)) if snapshot is not None else 0
            calls = f"{format.count(may_have_run, 'tool call')} without a result may have run already"
            if action == "discard":
                undone = f" {calls}: discarding the run does not undo what a tool did." if may_have_run else ""
                if await self.app.push_screen_wait(ConfirmScreen(
                        f"Discard {named}? Its checkpoint is deleted; nothing of it reaches the session.{undone}",
                        confirm="Discard")):
                    await self.backend.discard(run_id)
                    acted = True
                    self.notify("Run discarded.")
                    if run_id in self.chat.transcript.run_ids and not self.chat.running:
                        await self.chat.open_session(self.chat.session_id)  # its entries are gone
                    await self._inspect_in_place_of(run_id)
            elif action == "finalize" and await self.app.push_screen_wait(ConfirmScreen(
                    f"Finalize {named} into its session as it stands? " + (
                        f"{calls}: finalizing drops {'it' if may_have_run == 1 else 'them'} from the transcript, "
                        f"so the model will not know what {'it' if may_have_run == 1 else 'they'} did, and it stays "
                        "done."
                        if may_have_run else "Tool calls without results are dropped so the transcript stays "
                                             "consistent.") + " The checkpoint is then deleted.",
                    confirm="Finalize")):
                session_id, kept = await self.backend.finalize(run_id)
                acted = True
                where = "the session"
                if session_id != self.chat.session_id:  # another session's run: which one took its entries
                    where = "another session"
                    with contextlib.suppress(LoviaError):  # done all the same: only its title is not known
                        info = await self.backend.session_info(session_id)
                        where = f"“{format.one_line(format.session_title(info.title if info else ''), 40)}”"
                self.notify(f"Finalized: {format.count(kept, 'entry', 'entries')} added to {where}.")
                if session_id == self.chat.session_id:
                    await self.chat.open_session(session_id)  # the partial is stored now
                await self._inspect_in_place_of(run_id)
        except LoviaError as exc:
            self.notify(str(exc), severity="error")
        await self.refresh_changed()
        if acted:  # emptied by another window, the overlay stays up
            self._fold_runs_overlay_if_emptied()

    def _fold_runs_overlay_if_emptied(self) -> None:
        """The runs overlay has nothing left to act on after a discard or finalize here: it folds,
        and the conversation (where a finalized answer went) shows. Left up, it covered the
        conversation with "Nothing to resume." and kept focus."""
        if self.has_class("-runs-open") and not self.query_one(RunsPane).runs:
            self.show_pane("runs", False)

    async def _inspect_in_place_of(self, run_id: str) -> None:
        """``run_id`` has left the runs list (discarded, finalized): when the inspector showed it, it
        shows the run the list highlights now in its place, if any (it said "select a run" under a
        highlighted one)."""
        if self.inspected == run_id:
            await self.refresh_changed()
            self.inspected = self.query_one(RunsPane).highlighted_run_id


def _runs_as_listed(runs: Sequence[RunSummary]) -> set[ListedRun]:
    return {(r.run_id, r.head.session_id, run_state(r.head), r.head.updated_at) for r in runs}


def _sessions_of_changed_runs(then: set[ListedRun], now: set[ListedRun]) -> set[str]:
    """Sessions whose runs not stored yet differ between two listings of them: a run new, gone,
    written since, or reading another state (its owner died, its lease lapsed)."""
    return {session_id for _, session_id, _, _ in then ^ now if session_id is not None}


def _run_named(snapshot: RunSnapshot | None) -> str:
    """A run as a dialog about it names it: by its first message and start, as the runs list shows
    it (at 80 columns the highlighted entry of the list is out of sight behind the dialog)."""
    if snapshot is None:
        return "this run"
    head = snapshot.head
    first = format.one_line(head.first_input or "(no input)", 40)
    return f"the run “{first}” (started {format.when(head.started_at)})"
