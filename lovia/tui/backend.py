"""What the terminal UI does to sessions and runs, over the store protocols only.

The UI never touches SQL: it asks this object. Capabilities the stores may lack (listing,
rewind, trim, rename) are the small protocols of :mod:`lovia.session` and
:class:`~lovia.checkpoint.ListableCheckpointer`, checked with ``isinstance``; they are
reported by ``can_*`` properties, and the UI hides what is missing. The stores are called
only with the signatures those protocols define.
"""

from __future__ import annotations

import contextlib
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass, field, fields, replace
from operator import attrgetter
from pathlib import Path
from typing import Any, Literal

from lovia._async import shielded
from lovia._wording import count
from lovia.agent import Agent, agent_graph
from lovia.checkpoint import (
    DEFAULT_LEASE_SECONDS,
    ChangeReportingCheckpointer,
    Checkpointer,
    CheckpointOptions,
    ClaimingCheckpointer,
    ListableCheckpointer,
    RunHead,
    RunOwner,
    RunSnapshot,
    RunStatus,
    RunSummary,
    claim_refused,
    live_claim,
    released_as_found,
)
from lovia.context import ContextPolicy, archived_in
from lovia.dangling import complete_dangling_call
from lovia.entries import AssistantMessage, Entry, ToolCall, ToolResult, UserMessage
from lovia.errors import (
    AgentResolutionError,
    DatabaseFileError,
    EntryDecodeError,
    LoviaError,
    RunClaimedError,
    UserError,
)
from lovia.export import ExportFormat, ExportSummary, write_export
from lovia.models import resolve_model
from lovia.rewind import rewind_with_checkpoints
from lovia.run_state import RunState, first_line, run_state
from lovia.runtime import Runner, RunStream
from lovia.runtime.runner import DEFAULT_MAX_TURNS
from lovia.session import (
    ChangeReportingSession,
    ChangeTrackingSession,
    ClosableStore,
    DescribableSession,
    EntryPage,
    ForkableSession,
    ForkOrigin,
    ListableSession,
    PagedSession,
    RenamableSession,
    RewindableSession,
    RewindUndo,
    RunSpan,
    SearchableSession,
    SearchHit,
    Segment,
    Session,
    SessionChanges,
    SessionInfo,
    TrashedSession,
    TrashingSession,
    TrimmableSession,
    TrimPreview,
    TrimPreviewingSession,
    UndoableRewindSession,
)
from lovia.stores._common import filter_sessions, page_of, rewind_cut, title_from
from lovia.timing import Step, steps_from_meta, steps_to_meta
from lovia.transcript import dangling_tool_calls, drop_dangling_tool_calls
from lovia.tui.session_servers import SessionServers

FORK_MARK = "⑂"
"""What a fork's title begins with, and what marks a forked session where it is shown."""
# How many of the newest completed runs a start-up replays into their sessions (see record_finished_runs).
HEAL_NEWEST_RUNS = 20
# The run ids this app makes; it replays only its own runs (see record_finished_runs).
APP_RUN_PREFIX = "lovia-run-"
# How many completed runs are listed to find the app's newest among other workers' runs.
HEAL_SCAN_FACTOR = 10
STATE_LABELS: dict[str, str] = {"elsewhere": "running elsewhere", "interrupted": "stopped"}
"""How a state reads where it is not its own name ("interrupted" is the stores' name for a run
the user stopped: the notes under it and the runs list say "stopped")."""
RESUMABLE: tuple[RunStatus, ...] = ("running", "interrupted", "failed")
RESUMABLE_STATES: tuple[RunState, ...] = ("interrupted", "crashed", "failed")
"""The states of a run a user can resume from this window (see :func:`run_state`)."""
LIVE_STATES: tuple[RunState, ...] = ("running", "elsewhere")
"""States of a run that is executing, here or in another process: its times still grow."""
CUT_OFF = "cut_off"
"""The finish reason of an answer whose run stopped while it streamed, kept when the run is finalized."""
TRIM_KEEP_CHARS = 400
"""How much of each old tool output a trim from the UI keeps."""
DEFAULT_TRASH_DAYS = 30.0
"""How long a deleted session stays in the trash before it is purged, unless the config says otherwise."""
OPEN_PAGE = 24
"""How many of its newest stored entries a session opens with (a screenful; the rest is read as it is wanted)."""
LOCATE_PAGE = 256
"""How many entries from the end an edit target is looked for in, a page at a time, before the whole session is read."""
Settle = Literal["keep", "discard"]
"""What sending does with a crashed or failed run of the session: keep it as a partial segment, or discard it."""
PartialEnd = Literal["stopped", "interrupted", "crashed", "failed"]
"""How a run finalized as a partial segment ended (its ``meta["ended"]``): ``stopped`` for a run that
was stopped (``interrupted``: escape, quit, a signal), however it was finalized; otherwise its state
when it was finalized. ``interrupted`` is what lovia before 2026-12-05 recorded for a stopped run
finalized from the runs list: read, never written now."""
SEARCH_LIMIT = 200
"""Hits a search shows (the search screen's list, and what ``n``/``N`` step through across sessions)."""


class AgentNotHere(UserError):
    """A resume was refused before anything changed: the run needs an agent the app's agent does not reach
    through its handoffs (another program's, or one renamed or removed). ``agent`` names it."""

    def __init__(self, run_id: str, agent: str, app_agent: str) -> None:
        self.run_id, self.agent = run_id, agent
        super().__init__(f"Run {run_id} needs agent {agent!r}, which lovia's agent {app_agent!r} does not have (nor "
                         f"hand off to), so it cannot resume here; it is left as it is. {RESUME_WITH_AGENT}")


RESUME_WITH_AGENT = ("To resume it, start lovia on that agent: lovia --agent MODULE:ATTR (e.g. "
                     "myproject.agents:support).")

"""How a run whose agent the app lacks is resumed (see :class:`AgentNotHere`)."""


class EditOutgrown(UserError):
    """An edit's resend was refused before anything changed: runs were added after the message since
    the edit began (another window went on with the session), which resending would drop unannounced.
    ``target`` is the message as it stands now, with what resending it drops."""

    def __init__(self, target: EditTarget, added: int, *, undoable: bool) -> None:
        self.target = target
        drops = f"drops {'it' if added == 1 else 'them'} too" + ("" if undoable else ", for good")
        super().__init__(f"{count(added, 'run')} joined the session after this message since you began the "
                         f"edit (another window went on with it), and resending {drops}: the editing line now "
                         "says so. Press enter to resend all the same, or escape to keep everything")


class RunsNeedDecision(UserError):
    """Sending was refused, and nothing changed: crashed or failed runs of the session are not in it yet.

    The caller decides first: resume them, or send again with ``settle="keep"`` (each becomes a
    partial segment, before the new run) or ``settle="discard"``. ``runs`` are those runs,
    oldest first; ``stopped``, the session's stopped runs, which sending keeps as partial
    whatever is decided (as it does after a stop), oldest first.
    """

    def __init__(self, session_id: str, runs: Sequence[RunSummary], stopped: Sequence[RunSummary] = ()) -> None:
        self.runs = tuple(runs)
        self.stopped = tuple(stopped)
        states = sorted({run_state(r.head) for r in self.runs})
        what = f"{len(self.runs)} runs" if len(self.runs) > 1 else "a run"
        super().__init__(f"session {session_id!r} has {what} that {' or '.join(states)} before reaching it; "
                         "resume it, or send again keeping it as a partial answer or discarding it")


@dataclass(frozen=True)
class StartedRun:
    """A run :meth:`ChatBackend.send` started.

    ``message`` is the user message as it will be stored (show that one: it is equal to the
    stored entry, so it can be found again for an edit). ``settled`` names the session's runs
    that are finalized or discarded by the time it starts (before it, or, for an
    edit-and-resend, once its run holds the session), so what is shown of the session is stale
    then.
    """

    message: UserMessage
    stream: RunStream
    agent: str
    """The agent the run starts with (the one the session's last run ended with, see ``send``)."""
    settled: tuple[str, ...] = ()


@dataclass(frozen=True)
class EditTarget:
    """A user message an edit or a regenerate acts on, and what resending it drops."""

    message: UserMessage
    position: int | None
    """Where it stands in the stored transcript (what rewind counts); ``None`` for a run's not stored yet."""
    run_id: str | None
    """The run not in the session yet that it opened (resending discards that run); ``None`` when stored."""
    later_runs: int
    """How many runs after the message's own run resending drops, stored or not."""
    answered: bool = True
    """Whether its own run holds anything after it (an answer, a tool call), which resending drops."""


@dataclass(frozen=True, slots=True)
class SessionListing(SessionInfo):
    """A session as the sessions pane lists it: what the store says, and how its unstored runs stand.

    ``state`` is the state of its newest run not in the session yet (``interrupted``,
    ``crashed``, ``failed``, ``elsewhere`` or ``running``), ``None`` when every run of it is
    stored. A session the store does not know yet (none of its runs completed) is listed
    with no entries or runs, titled by its first run's input. ``activity`` is what lists are
    ordered by, newest first: its last activity, stored or not (a run's last save counts).
    """

    state: RunState | None = None
    activity: float = 0.0


@dataclass(frozen=True)
class TranscriptRun:
    """One run as the transcript shows it: a stored segment or an in-flight checkpoint."""

    run_id: str
    entries: tuple[Entry, ...]
    state: RunState
    started_at: float | None
    duration: float | None
    error: str | None = None
    """Why it failed: an in-flight run's error, or its first line for a run finalized as failed (``meta["error"]``)."""
    owner: str | None = None
    """Who executes a run ``running elsewhere`` (e.g. ``process 4242 on build-7``)."""
    partial: bool = False
    """A stored segment finalized from a run that did not complete (``meta["partial"]``)."""
    ended: str | None = None
    """How a finalized partial ended: ``stopped``, ``interrupted``, ``crashed`` or ``failed`` (``meta["ended"]``)."""
    active_seconds: float | None = None
    """How long the run actually executed, summed over its executions; ``None`` when not recorded.
    ``duration`` is the wall time from its first start instead (the spec's timing)."""
    steps: tuple[Step, ...] = ()
    """Its model turns and tool calls with their times (:mod:`lovia.timing`): a segment's
    ``meta["steps"]`` or an in-flight run's head; empty for runs stored before lovia recorded them."""
    saved_at: float | None = None
    """An in-flight run's last save (its head's ``updated_at``): it executed at least until then."""
    needs_agents: tuple[str, ...] = ()
    """The agents a resume of an in-flight run goes on with: its active agent, and the target of a handoff
    not applied yet (see :meth:`ChatBackend.missing_agent`)."""

    @property
    def known_until(self) -> float | None:
        """The last moment the run is known to have been executing, for a run not executing now: its
        end when stored, else its last save, or its start plus the time it ran if that is later (a
        crashed run's lease kept that up to date while a tool call ran). Its steps that never ended
        went on at least until then. ``None`` for a run executing (it goes on) or one whose times
        are not known.

        The last save counts for a run stopped and resumed: its start plus the time it ran falls
        inside the pause, before the resumed part even began."""
        if self.state in LIVE_STATES or self.started_at is None:
            return None
        ends = [self.started_at + seconds for seconds in (self.duration, self.active_seconds) if seconds]
        if self.saved_at is not None and self.saved_at > self.started_at and self._resumed_after_a_pause:
            ends.append(self.saved_at)
        return max(ends) if ends else None

    @property
    def _resumed_after_a_pause(self) -> bool:
        """Whether a step began once an earlier one had been cut off with a known end (a resume ends
        every step the execution before it left open), or after the run's start plus the time it
        ran: it was resumed after a pause, and its last save is its own. A save without such a step
        may not be (a claim to resume it that failed sets it too)."""
        if self.started_at is None:
            return False
        ran_until = self.started_at + (self.active_seconds or 0.0)
        cut_until: float | None = None  # the latest end of a step cut off so far
        for step in sorted(self.steps, key=lambda step: step.started_at):
            if step.started_at > ran_until or (cut_until is not None and step.started_at >= cut_until):
                return True
            if step.cut_off and step.finished_at is not None:
                cut_until = max(cut_until or step.finished_at, step.finished_at)
        return False

    @classmethod
    def of_segment(cls, segment: Segment) -> TranscriptRun:
        """A stored segment, with the figures its meta records."""
        meta = segment.meta
        active = meta.get("active_seconds")
        ended = meta.get("ended")
        error = meta.get("error")
        return cls(segment.run_id, segment.entries, "completed", segment.started_at, segment.duration,
                   error=error if isinstance(error, str) else None,
                   partial=bool(meta.get("partial")), ended=ended if isinstance(ended, str) else None,
                   active_seconds=float(active) if isinstance(active, (int, float)) else None,
                   steps=tuple(steps_from_meta(meta)))

    @classmethod
    def of_snapshot(cls, snapshot: RunSnapshot) -> TranscriptRun:
        """An in-flight run as its checkpoint stands (its wall time is unknown until it is appended)."""
        head = snapshot.head
        state = run_state(head)
        cut_off = cut_off_message(head)
        entries = (*snapshot.entries, cut_off) if cut_off is not None else tuple(snapshot.entries)
        return cls(snapshot.run_id, entries, state, head.started_at, None, head.error,
                   str(head.owner) if state == "elsewhere" else None,
                   active_seconds=head.active_seconds or None, steps=tuple(head.steps), saved_at=head.updated_at,
                   needs_agents=needed_agents(head))


@dataclass(frozen=True)
class PageRun:
    """One stored run as a page of the transcript has it.

    ``run.entries`` are the run's entries on the page, from position ``first``; the whole run
    holds ``count`` entries from position ``start`` (before the page when it began on an
    earlier one). ``later_results`` are the results, stored after the page, of calls on it.
    """

    run: TranscriptRun
    first: int
    start: int
    count: int
    later_results: Mapping[str, ToolResult] = field(default_factory=dict)

    @property
    def begins_here(self) -> bool:
        """Whether the run's first entry is on this page (its header goes with it)."""
        return self.first == self.start

    @property
    def whole(self) -> bool:
        """Whether every entry of the run is on this page."""
        return self.begins_here and len(self.run.entries) == self.count


@dataclass(frozen=True)
class TranscriptPage:
    """Stored entries ``start`` to ``end`` of a session's transcript, by run; ``total`` as read."""

    start: int
    end: int
    runs: tuple[PageRun, ...]
    total: int


class TranscriptPages:
    """Pages of one session's stored transcript, read when they are wanted.

    A store with :class:`~lovia.session.PagedSession` reads each page on its own, at a cost
    that grows with the page; any other store's session is loaded whole once, here, and
    paged from memory. A page whose last run goes on past it carries the results of its calls
    stored after it (:attr:`PageRun.later_results`), so every page shows its tool calls
    complete on its own.
    """

    def __init__(self, session: Session, session_id: str) -> None:
        self.session = session
        self.session_id = session_id
        self._whole: list[tuple[RunSpan, Sequence[Entry]]] | None = None
        self._whole_total = 0

    async def read(self, start: int | None, limit: int) -> TranscriptPage:
        """Up to ``limit`` entries from ``start`` (``None``: the last ``limit``), with their runs."""
        page = await self._entry_page(start, limit)
        runs: list[PageRun] = []
        offset = 0
        for span in page.runs:
            first = max(span.start, page.start)
            taken = min(span.end, page.end) - first
            entries = page.entries[offset:offset + taken]
            offset += taken
            run = TranscriptRun.of_segment(Segment(span.run_id, entries, span.meta))
            runs.append(PageRun(run, first, span.start, span.count))
        if runs and runs[-1].start + runs[-1].count > page.end:
            runs[-1] = replace(runs[-1], later_results=await self._later_results(runs[-1], page.end))
        return TranscriptPage(page.start, page.end, tuple(runs), page.total)

    async def _later_results(self, run: PageRun, end: int) -> dict[str, ToolResult]:
        answered = {e.call_id for e in run.run.entries if isinstance(e, ToolResult)}
        waiting = {e.call_id for e in run.run.entries if isinstance(e, ToolCall) and e.call_id not in answered}
        if not waiting:
            return {}
        # To the run's end: parallel calls store their results after all of them, so a result can
        # lie any distance on; a page of a store decodes the whole runs it touches in any case.
        after = await self._entry_page(end, run.start + run.count - end)
        return {e.call_id: e for e in after.entries if isinstance(e, ToolResult) and e.call_id in waiting}

    async def _entry_page(self, start: int | None, limit: int) -> EntryPage:
        session = self.session
        if isinstance(session, PagedSession):
            return await session.read_page(self.session_id, start=start, limit=limit)
        if self._whole is None:
            spans: list[tuple[RunSpan, Sequence[Entry]]] = []
            for segment in await session.segments(self.session_id):
                spans.append((RunSpan(segment.run_id, self._whole_total, len(segment.entries), segment.meta),
                              segment.entries))
                self._whole_total += len(segment.entries)
            self._whole = spans
        return page_of(self._whole, self._whole_total, start, limit)


@dataclass(frozen=True)
class Transcript:
    """How a session opens: its newest stored page, then its in-flight runs (oldest first).

    ``pages`` reads the rest of what is stored, a page at a time.
    """

    session_id: str
    last_page: TranscriptPage
    in_flight: tuple[TranscriptRun, ...]
    pages: TranscriptPages

    @property
    def runs(self) -> tuple[TranscriptRun, ...]:
        """The runs shown at first: those of the newest page (as much of them as it holds), then in-flight ones."""
        return (*(run.run for run in self.last_page.runs), *self.in_flight)


def cut_off_message(head: RunHead) -> AssistantMessage | None:
    """What the model had streamed of the turn a stopped or failed run was in, as a message marked ``cut_off``.

    ``None`` for a run that stopped between turns, or is running again (its resume runs that
    turn anew, so the text would show twice). Finalizing the run keeps it in the session. A
    crashed run (``running``, held by nobody) has the text its checkpointer journalled.
    """
    if (head.status == "running" and not head.crashed) or not head.cut_off_text:
        return None
    return AssistantMessage(text=head.cut_off_text, agent=head.agent, finish_reason=CUT_OFF,
                            created_at=head.updated_at)


def _runs_by_session(runs: Sequence[RunSummary]) -> tuple[dict[str, RunSummary], dict[str, RunSummary]]:
    """Each session's newest and oldest of ``runs`` (given newest first)."""
    newest: dict[str, RunSummary] = {}
    oldest: dict[str, RunSummary] = {}
    for summary in runs:
        if summary.head.session_id is not None:
            newest.setdefault(summary.head.session_id, summary)
            oldest[summary.head.session_id] = summary
    return newest, oldest


# What a SessionInfo holds, in its fields' order: a SessionListing is made of them and two more. A
# getter made once, in place of asking `fields()` for every session (the check after another
# window's write lists every session: 10,000 of them took 29 ms of the event loop so, 13 now).
_INFO_VALUES: Callable[[SessionInfo], tuple[Any, ...]] = attrgetter(*(f.name for f in fields(SessionInfo)))


def _listing(info: SessionInfo, newest_run: RunSummary | None, oldest_run: RunSummary | None = None) -> SessionListing:
    """A stored session as listed, marked by its newest unstored run (if any).

    Untitled in the store with no message of the user's in it (what it held was rewound away:
    a stopped first answer regenerated, or its message edited and sent again, then stopped),
    it is titled by its oldest unstored run's input, as a session only its runs know is."""
    if newest_run is None:
        return SessionListing(*(*_INFO_VALUES(info), None, info.last_activity or 0.0))
    activity = max(info.last_activity or 0.0, newest_run.head.updated_at)
    listing = SessionListing(*(*_INFO_VALUES(info), run_state(newest_run.head), activity))
    if not info.title and oldest_run is not None:
        return replace(listing, title=title_from(oldest_run.head.first_input))
    return listing


def _unstored_listing(session_id: str, oldest: RunSummary, newest: RunSummary) -> SessionListing:
    """A session only its unstored runs know: titled by the first one's input, with no entries or runs."""
    return SessionListing(session_id, title_from(oldest.head.first_input), 0, 0, oldest.head.started_at,
                          newest.head.updated_at, 0.0, state=run_state(newest.head), activity=newest.head.updated_at)


def _refuse_held(run_id: str, head: RunHead) -> None:
    if head.is_held():
        raise claim_refused(run_id, head)


class ChatBackend:
    """Sessions, runs and the agent the UI drives."""

    def __init__(self, session: Session, checkpointer: Checkpointer, agent: Agent[Any], *,
                 context_policy: ContextPolicy | None = None, max_turns: int = DEFAULT_MAX_TURNS,
                 trash_days: float = DEFAULT_TRASH_DAYS, mcp: SessionServers | None = None) -> None:
        self.session = session
        self.mcp = mcp or SessionServers()
        """The MCP servers runs may offer, switched on or off per session."""
        self.trash_days = trash_days
        self._trash_purged = False  # the expired trash is purged once at the first listing, then as it is listed
        self.checkpointer = checkpointer
        self.agent = agent
        self.context_policy = context_policy
        self.max_turns = max_turns
        self._outside_change_tokens: list[Hashable] | None = None
        self._dangling: dict[str, tuple[tuple[float, int], tuple[ToolCall, ...]]] = {}  # see dangling_calls
        self._resends: dict[str, str] = {}  # session id -> the run id of its last resend started here

    async def close(self) -> None:
        """Stop the MCP servers that were started (the config file's and the agents' own), then close both
        stores (the ones that can be closed)."""
        await self.mcp.stop()
        with contextlib.suppress(AgentResolutionError):  # two agents share a name: a run said so already
            await SessionServers([s for agent in agent_graph(self.agent).values() for s in agent.mcp_servers]).stop()
        for store in (self.session, self.checkpointer):
            if isinstance(store, ClosableStore):
                await store.close()

    async def changed_elsewhere(self) -> bool:
        """Whether another connection or process wrote to either store since the previous call.

        Asks each store that can tell (:class:`~lovia.session.ChangeReportingSession`,
        :class:`~lovia.checkpoint.ChangeReportingCheckpointer`) for its outside-change token: one
        cheap statement each on SQLite, no table read. The first call only takes note and says
        ``False``; so does every call when neither store can tell. The two SQLite stores hold a
        connection each, so while this process runs an answer, each store's writes are news to
        the other one: expect ``True`` at every call while a run here saves, and ``False`` again
        once nobody writes (reads never change a token).
        """
        tokens: list[Hashable] = []
        if isinstance(self.session, ChangeReportingSession):
            tokens.append(await self.session.outside_change_token())
        if isinstance(self.checkpointer, ChangeReportingCheckpointer):
            tokens.append(await self.checkpointer.outside_change_token())
        before, self._outside_change_tokens = self._outside_change_tokens, tokens
        return before is not None and tokens != before

    async def sessions_changed(self, since: int | None) -> SessionChanges | None:
        """Which sessions changed since the mark ``since`` (:class:`~lovia.session.ChangeTrackingSession`);
        ``None`` when the session store cannot tell, or cannot list and describe one session (what
        updating a list session by session needs: :meth:`session_listing`)."""
        session = self.session
        if not (isinstance(session, ChangeTrackingSession) and isinstance(session, ListableSession)
                and isinstance(session, DescribableSession)):
            return None
        return await session.sessions_changed(since)

    # -- capabilities --------------------------------------------------------------------

    @property
    def can_rewind(self) -> bool:
        """Edit-and-resend and regenerate need ``rewind``."""
        return isinstance(self.session, RewindableSession)

    @property
    def can_trim(self) -> bool:
        """Trimming old tool outputs needs ``trim_tool_results``."""
        return isinstance(self.session, TrimmableSession)

    @property
    def can_list_sessions(self) -> bool:
        """The sessions pane needs ``list_sessions``."""
        return isinstance(self.session, ListableSession)

    @property
    def can_rename(self) -> bool:
        """Renaming a session needs ``rename_session``."""
        return isinstance(self.session, RenamableSession)

    @property
    def can_trash(self) -> bool:
        """Deleting to a trash (and restoring from it) needs a :class:`~lovia.session.TrashingSession`."""
        return isinstance(self.session, TrashingSession)

    @property
    def can_undo_rewind(self) -> bool:
        """Undoing a rewind needs an :class:`~lovia.session.UndoableRewindSession`."""
        return isinstance(self.session, UndoableRewindSession)

    @property
    def can_list_runs(self) -> bool:
        return isinstance(self.checkpointer, ListableCheckpointer)

    @property
    def can_search(self) -> bool:
        """Search (ctrl+f) needs ``search`` (:class:`~lovia.session.SearchableSession`)."""
        return isinstance(self.session, SearchableSession)

    async def search(self, query: str, *, limit: int = SEARCH_LIMIT, session_id: str | None = None) -> list[SearchHit]:
        """The store's hits for ``query`` (see :class:`~lovia.session.SearchableSession`); a ``UserError`` when
        the store cannot search."""
        session = self.session
        if not isinstance(session, SearchableSession):
            raise UserError(f"{type(session).__name__} cannot search: it has no "
                            "search(query, *, limit, session_id) method")
        return await session.search(query, limit=limit, session_id=session_id)

    # -- sessions ------------------------------------------------------------------------

    @staticmethod
    def new_session_id() -> str:
        return f"s-{uuid.uuid4().hex[:12]}"

    async def sessions(self, query: str | None = None, *, limit: int | None = None) -> list[SessionListing]:
        """Sessions with a stored or unstored run, matching ``query``, most recent first (see :class:`SessionListing`).

        The store lists the sessions it knows (filtered its own way); a session whose runs
        all stopped, crashed or failed before completing is known only to the checkpointer,
        and is added with its first run's input as title (filtered by id and title, as the
        bundled stores do). Each is marked with the state of its newest unstored run and
        ordered by its latest activity, stored or not. With ``limit``, the newest ``limit`` of
        them: the store is asked for that many, and the few sessions with unstored runs it did
        not return are looked up one by one (their runs may make them newer). None when the
        store cannot list.
        """
        session = self.session
        if not isinstance(session, ListableSession):
            return []
        if not self._trash_purged:  # the app's first listing: what stayed in the trash too long goes
            await self.purge_expired_trash()
        stored = await session.list_sessions(query=query or None, limit=limit)
        newest, oldest = _runs_by_session(await self._unstored_runs())
        listed = [_listing(info, newest.get(info.session_id), oldest.get(info.session_id)) for info in stored]
        unknown = set(newest) - {info.session_id for info in stored}
        if unknown and (query or limit is not None):  # a stored session the query or the limit left out
            elsewhere = await self._stored_infos(session, sorted(unknown))
            unknown -= {info.session_id for info in elsewhere}
            # Left out by the limit, its unstored runs may make it newer than the page; by the query,
            # an untitled one may match by the title its oldest unstored run gives it (see _listing).
            listed += filter_sessions([_listing(info, newest[info.session_id], oldest[info.session_id])
                                       for info in elsewhere], query or None, None)  # type: ignore[arg-type]
        added = [_unstored_listing(session_id, oldest[session_id], newest[session_id]) for session_id in unknown]
        listed += filter_sessions(added, query or None, None)  # type: ignore[arg-type]
        listed.sort(key=lambda info: info.activity, reverse=True)
        return listed[:limit] if limit is not None else listed

    async def _stored_infos(self, session: ListableSession, session_ids: list[str]) -> list[SessionInfo]:
        """Those of ``session_ids`` the store has: one ``session_info`` each (the few with unstored runs),
        or the whole listing when the store cannot describe one session."""
        if not isinstance(session, DescribableSession):
            wanted = set(session_ids)
            return [info for info in await session.list_sessions() if info.session_id in wanted]
        found = []
        for session_id in session_ids:
            info = await session.session_info(session_id)
            if info is not None:
                found.append(info)
        return found

    async def session_listing(self, session_id: str, *,
                              unstored: Sequence[RunSummary] | None = None) -> SessionListing | None:
        """``session_id`` as :meth:`sessions` lists it, read alone; ``None`` when no store knows it.

        ``unstored`` are the runs not in their sessions yet (as :meth:`unstored_runs` gives them),
        when the caller has them: then this is one ``session_info`` query, else the runs are
        listed too. Not listable, or not describable: ``None``.
        """
        if not isinstance(self.session, ListableSession) or not isinstance(self.session, DescribableSession):
            return None
        runs = [r for r in (await self._unstored_runs() if unstored is None else unstored)
                if r.head.session_id == session_id]
        info = await self.session_info(session_id)
        newest, oldest = _runs_by_session(runs)
        if info is not None:
            return _listing(info, newest.get(session_id), oldest.get(session_id))
        return _unstored_listing(session_id, oldest[session_id], newest[session_id]) if runs else None

    async def session_info(self, session_id: str) -> SessionInfo | None:
        """``session_id``'s title, counts and timings; ``None`` when unknown or the store cannot tell."""
        session = self.session
        if not isinstance(session, DescribableSession):
            return None
        return await session.session_info(session_id)

    async def rename(self, session_id: str, title: str) -> None:
        session = self.session
        if not isinstance(session, RenamableSession):
            raise UserError(f"{type(session).__name__} cannot rename sessions: it has no "
                            "rename_session(session_id, title) method")
        await session.rename_session(session_id, title)

    async def check_deletable(self, session_id: str) -> list[RunSummary]:
        """The session's runs, every one checked: refused (naming who runs it) while one executes anywhere."""
        summaries = await self.runs(session_id=session_id, include_completed=True)
        for summary in summaries:
            _refuse_held(summary.run_id, summary.head)
        return summaries

    async def delete_session(self, session_id: str) -> TrashedSession | None:
        """Move the session to the trash (or, with a store that has none, forget it); refused while one
        of its runs executes. Returns the trash's item, ``None`` when nothing was kept.

        Every run is checked before anything changes. With a trash, nothing of the session is
        lost: its runs not in it yet (stopped, crashed, failed) are finalized into it first, as
        partial runs marked how they ended, so they go to the trash with it and come back with
        it; the checkpoints of its completed runs (replay caches of runs its segments hold) are
        deleted, so that no start-up replays a run into a session in the trash. Without one,
        the session is cleared and every checkpoint of it deleted, as before. A completed run its
        session lacks (its append never happened: the spec's crash window) is replayed into it
        first, with a trash, so that its answer goes there too. Each run is taken
        (see :meth:`_taken`) before it is finalized or deleted, so one that started meanwhile
        stops that.
        """
        summaries = await self.check_deletable(session_id)
        session = self.session
        trashing = isinstance(session, TrashingSession)
        stored = await self._stored_run_ids(session_id) if trashing and summaries else None
        for summary in sorted(summaries, key=lambda r: r.head.started_at):  # oldest first: the order they belong in
            if trashing and summary.head.status != "completed":
                await self.finalize(summary.run_id)
                continue
            if stored is not None and summary.run_id not in stored:
                # Completed, but its session never got it (the spec's crash window): its checkpoint is
                # all there is of it, so it goes into the session, to the trash with it.
                await self._replay(summary.run_id, session_id)
            async with self._taken(summary.run_id):
                await self.checkpointer.delete(summary.run_id)
        if isinstance(session, TrashingSession):
            return await session.trash_session(session_id)
        await session.clear(session_id)
        return None

    async def _stored_run_ids(self, session_id: str) -> set[str] | None:
        """The ids of the runs ``session_id`` holds; ``None`` when a damaged entry keeps them from being read
        (a damaged session can still go to the trash, its rows moved as they are)."""
        try:
            return {segment.run_id for segment in await self.session.segments(session_id)}
        except (DatabaseFileError, EntryDecodeError):
            return None

    async def trash(self) -> list[TrashedSession]:
        """What the trash holds, most recently deleted first, after purging what stayed past ``trash_days``."""
        session = self.session
        if not isinstance(session, TrashingSession):
            return []
        await self.purge_expired_trash()
        return await session.list_trash()

    async def purge_expired_trash(self) -> int:
        """Forget, for good, the sessions deleted more than ``trash_days`` ago; return how many went.

        Run when the app first lists its sessions and whenever the trash is listed: never on a
        timer, so a session is never purged while nobody looks.
        """
        session = self.session
        self._trash_purged = True
        if not isinstance(session, TrashingSession):
            return 0
        return await session.purge_trash(deleted_before=time.time() - self.trash_days * 86400)

    def purges_at(self, item: TrashedSession) -> float:
        """When ``item`` is purged (the first listing after this time)."""
        return item.deleted_at + self.trash_days * 86400

    async def restore_session(self, trash_id: int) -> str:
        """Bring a deleted session back from the trash; return its session id.

        Refused, changing nothing, when its id names a session again: one the store has, or
        one known only by its runs not stored yet (a new conversation under that id that
        stopped or crashed before its first answer). Ids are the user's: lovia never merges
        the two nor renames either; the user deletes the new one first (it goes to the trash
        too) and then restores.
        """
        session = self.session
        if not isinstance(session, TrashingSession):
            raise UserError(f"{type(session).__name__} has no trash: deleted sessions are gone")
        item = next((t for t in await session.list_trash() if t.trash_id == trash_id), None)
        if item is not None and await self._in_flight(item.session_id):
            raise UserError(f"session {item.session_id!r} cannot be restored: a new conversation under that id has "
                            "runs not stored yet. Delete that one first (it goes to the trash too), then restore")
        return await session.restore_session(trash_id)

    async def purge_trashed(self, trash_id: int) -> int:
        """Forget one item of the trash for good now; returns 1, or 0 when it was gone already."""
        session = self.session
        if not isinstance(session, TrashingSession):
            return 0
        return await session.purge_trash(trash_id=trash_id)

    async def transcript(self, session_id: str, *, page: int = OPEN_PAGE) -> Transcript:
        """The session as it opens: its newest ``page`` stored entries, its in-flight runs, and a reader for the rest.

        Its cost grows with the page, not with the session, when the store offers
        :class:`~lovia.session.PagedSession`; any other store's session is loaded whole.
        """
        pages = TranscriptPages(self.session, session_id)
        last_page = await pages.read(None, page)
        in_flight = []
        for summary in reversed(await self.runs(session_id=session_id)):
            snapshot = await self.checkpointer.load(summary.run_id)
            if snapshot is not None:
                in_flight.append(TranscriptRun.of_snapshot(snapshot))
        return Transcript(session_id, last_page, tuple(in_flight), pages)

    async def transcript_run(self, session_id: str | None, run_id: str) -> TranscriptRun | None:
        """``run_id`` as a reopened transcript shows it: its segment once in ``session_id``, else its checkpoint.

        What a live run's header and tool lines are rebuilt from, so they read as they will
        when the session is opened again. A run that just completed is the session's last:
        with a paged store it is read on its own, not with the whole session.
        """
        snapshot = await self.checkpointer.load(run_id)
        if snapshot is not None and snapshot.head.status != "completed":
            return TranscriptRun.of_snapshot(snapshot)
        if session_id is not None:
            session = self.session
            if isinstance(session, PagedSession):
                [last] = (await TranscriptPages(session, session_id).read(None, 1)).runs or [None]
                if last is not None and last.run.run_id == run_id:
                    return await self.stored_run(session_id, last)
            for segment in reversed(await self.session.segments(session_id)):
                if segment.run_id == run_id:
                    return TranscriptRun.of_segment(segment)
        return TranscriptRun.of_snapshot(snapshot) if snapshot is not None else None

    async def stored_run(self, session_id: str, run: PageRun) -> TranscriptRun:
        """``run`` with all its entries, when a page holds only part of it."""
        if run.whole:
            return run.run
        page = await TranscriptPages(self.session, session_id).read(run.start, max(1, run.count))
        return next((r.run for r in page.runs if r.run.run_id == run.run.run_id), run.run)

    # -- runs ----------------------------------------------------------------------------

    async def runs(self, *, session_id: str | None = None, include_completed: bool = False) -> list[RunSummary]:
        """Runs a user may resume (interrupted, crashed, failed) or watch (running elsewhere), newest first."""
        checkpointer = self.checkpointer
        if not isinstance(checkpointer, ListableCheckpointer):
            return []
        statuses = None if include_completed else list(RESUMABLE)
        found = await checkpointer.list_runs(statuses=statuses)
        if not include_completed:
            # A run this process executes is shown live by the chat, not listed as a leftover.
            found = [r for r in found if run_state(r.head) != "running"]
        if session_id is not None:
            found = [r for r in found if r.head.session_id == session_id]
        return found

    async def unstored_runs(self) -> list[RunSummary]:
        """Every run not in its session yet, the ones this process executes included, newest first (one query).

        The tool calls without a result of those a list shows are read too (see
        :attr:`dangling_calls`): one load per run whose checkpoint changed since the last call.
        """
        runs = await self._unstored_runs()
        await self._read_dangling_calls(self.listed_runs(runs))
        return runs

    @property
    def dangling_calls(self) -> Mapping[str, tuple[ToolCall, ...]]:
        """The tool calls without a result of each run the last :meth:`unstored_runs` listed (by run id),
        those of runs this process executes left out: what a resume would execute again."""
        return {run_id: calls for run_id, (_, calls) in self._dangling.items()}

    async def _read_dangling_calls(self, runs: Sequence[RunSummary]) -> None:
        known, self._dangling = self._dangling, {}
        for summary in runs:
            # A checkpoint's entries are append-only and every save stamps its head: same stamp and
            # count, same calls.
            key = (summary.head.updated_at, summary.entry_count)
            if summary.run_id in known and known[summary.run_id][0] == key:
                self._dangling[summary.run_id] = known[summary.run_id]
                continue
            calls: tuple[ToolCall, ...] = ()
            if summary.entry_count > 1:  # a run's first entry is its input: a call comes later
                snapshot = await self.checkpointer.load(summary.run_id)
                calls = tuple(dangling_tool_calls(snapshot.entries)) if snapshot is not None else ()
            self._dangling[summary.run_id] = (key, calls)

    @staticmethod
    def listed_runs(unstored: Sequence[RunSummary]) -> list[RunSummary]:
        """What :meth:`runs` lists, from :meth:`unstored_runs`: all but the runs this process executes."""
        return [r for r in unstored if run_state(r.head) != "running"]

    async def _unstored_runs(self) -> list[RunSummary]:
        """Every run not in its session yet, the ones this process executes included, newest first."""
        checkpointer = self.checkpointer
        if not isinstance(checkpointer, ListableCheckpointer):
            return []
        return await checkpointer.list_runs(statuses=list(RESUMABLE))

    async def _in_flight(self, session_id: str) -> list[RunSummary]:
        """``session_id``'s runs not in it yet, in the order they started (the order they belong in)."""
        runs = [r for r in await self._unstored_runs() if r.head.session_id == session_id]
        return sorted(runs, key=lambda r: r.head.started_at)

    async def snapshot(self, run_id: str) -> RunSnapshot | None:
        return await self.checkpointer.load(run_id)

    async def send(self, session_id: str, text: str, *, settle: Settle | None = None) -> StartedRun:
        """Start a new run on ``text`` in ``session_id``, after the session's runs not in it yet.

        A chat keeps its order: a run of the session that did not reach it comes before the
        new one, or not at all. So first, oldest first, a stopped run (``interrupted``) is
        finalized into the session as a partial segment marked ``stopped`` (the spec's
        bundled-UI behaviour: the model sees the question and the partial answer); a crashed
        or failed one is finalized the same way, marked ``crashed`` or ``failed``, with
        ``settle="keep"``, or discarded with ``settle="discard"``; without ``settle`` sending
        is refused with :class:`RunsNeedDecision` before anything changed. A run another
        process executes in the session refuses sending (its answer would land after the new
        one): :class:`~lovia.errors.RunClaimedError` names who runs it. That is looked at here,
        and again in the new run's claim (``alone_in_session``), atomically: of two windows
        sending at the same moment, the second run's stream fails with it before storing
        anything of that run (runs settled first stay settled). Each finalize or discard takes
        its run first (see :meth:`_taken`), so one resumed elsewhere meanwhile is refused rather
        than raced.

        Handoffs carry over: the run starts with the agent the session's last run ended with
        (its segment's ``meta["agent"]``) when the app's agent reaches it through handoffs,
        else with the app's agent.
        """
        _check_text(text)
        settled = await self._settle(await self._in_flight(session_id), settle)
        return await self._start(session_id, text, settled)

    async def _start(self, session_id: str, text: str, settled: Sequence[str], *, run_id: str | None = None,
                     once_claimed: Callable[[], Awaitable[None]] | None = None,
                     agent: Agent[Any] | None = None) -> StartedRun:
        """The new run's stream (``once_claimed``: see :class:`~lovia.checkpoint.CheckpointOptions`); it
        starts with ``agent`` when given, else the one the session's last run ended with (see :meth:`send`)."""
        message = UserMessage(text=text)
        if agent is None:
            segments = await self.session.segments(session_id)
            agent = self._continuing_agent(_ended_with(segments[-1] if segments else None))
        run_id = run_id or new_app_run_id()
        stream = Runner.stream(agent, [message], session=self.session, session_id=session_id,
                               checkpoint=CheckpointOptions(self.checkpointer, run_id, alone_in_session=True,
                                                            once_claimed=once_claimed),
                               max_turns=self.max_turns,
                               context_policy=self.context_policy, mcp_servers=self.mcp.offered(session_id))
        return StartedRun(message, stream, agent.name, tuple(settled))

    def _continuing_agent(self, name: str | None) -> Agent[Any]:
        """The agent named ``name`` (the one the session's last run ended with), if the app's agent
        reaches it; else the app's agent."""
        if name is None or name == self.agent.name:
            return self.agent
        try:
            return agent_graph(self.agent).get(name, self.agent)
        except AgentResolutionError:  # two agents share a name: the run reports it when it needs to
            return self.agent

    async def _settle(self, runs: Sequence[RunSummary], settle: Settle | None) -> list[str]:
        """Put ``runs`` (unstored runs of one session, oldest first) into their session or away.

        See :meth:`send`. Everything that refuses is checked before anything changes.
        """
        self._check_settleable(runs, settle)
        for summary in runs:
            if run_state(summary.head) == "interrupted" or settle == "keep":
                await self.finalize(summary.run_id)
            else:
                await self.discard(summary.run_id)
        return [r.run_id for r in runs]

    @staticmethod
    def _check_settleable(runs: Sequence[RunSummary], settle: Settle | None) -> None:
        """Refuse settling ``runs`` when one is executing, or crashed or failed with no ``settle`` given."""
        for summary in runs:
            if summary.head.is_held():
                where = "here" if summary.head.holder() == "here" else f"by {summary.head.owner}"
                raise RunClaimedError(f"a run of this session ({summary.run_id}) is being executed {where}; its "
                                      "answer would land after your message: wait for it to finish, or stop it "
                                      "there, then send")
        undecided = [r for r in runs if run_state(r.head) in ("crashed", "failed")]
        if undecided and settle is None:
            stopped = [r for r in runs if run_state(r.head) == "interrupted"]
            raise RunsNeedDecision(runs[0].head.session_id or "", undecided, stopped)

    async def resume(self, run_id: str) -> tuple[str, RunStream]:
        """Continue an interrupted, crashed or failed run; returns its session id and stream."""
        snapshot = await self._resumable(run_id)
        session_id = snapshot.head.session_id
        if session_id is None:
            raise UserError(f"run {run_id} belongs to no session, so it cannot be shown here")
        stream = Runner.stream(self.agent, [], session=self.session, session_id=session_id,
                               checkpoint=CheckpointOptions(self.checkpointer, run_id, if_run_exists="resume_only",
                                                             alone_in_session=True),
                               max_turns=self.max_turns, context_policy=self.context_policy,
                               mcp_servers=self.mcp.offered(session_id))
        return session_id, stream

    async def _resumable(self, run_id: str) -> RunSnapshot:
        """``run_id``'s snapshot, when a resume may take it up: refused (a ``UserError``) when it is
        gone, completed, or executing here or elsewhere."""
        snapshot = await self.checkpointer.load(run_id)
        if snapshot is None:
            raise UserError(f"run {run_id} is gone; it may have been finished or discarded elsewhere")
        if snapshot.head.status == "completed":
            raise UserError(f"run {run_id} already completed; nothing to resume")
        _refuse_held(run_id, snapshot.head)
        missing = self.missing_agent(needed_agents(snapshot.head))
        if missing is not None:  # the runner would refuse it too, but only once the run is claimed
            raise AgentNotHere(run_id, missing, self.agent.name)
        return snapshot

    def missing_agent(self, names: Sequence[str]) -> str | None:
        """The first of ``names`` (agents a run needs to resume) that the app's agent does not reach through
        its handoffs: a resume here refuses that run, as the spec makes it a hard error. ``None``
        when it has every one (or two of its agents share a name: the resume says so itself)."""
        try:
            graph = agent_graph(self.agent)
        except AgentResolutionError:
            return None
        return next((name for name in names if name not in graph), None)

    async def model_change(self, run_id: str) -> tuple[str, str] | None:
        """The model ``run_id`` last ran on and the one a resume goes on with, when they differ.

        A resume re-resolves the run's agent by name, as the spec says: its model is the one the
        app's agent names now (``--model``, the config file), not necessarily the run's. ``None``
        when they are the same, or when the run's is not known (a head stored before lovia kept
        its model). A run a resume would refuse is refused here, before anyone is asked: one
        whose agent the app's agent does not have too (:class:`AgentNotHere`).
        """
        snapshot = await self._resumable(run_id)
        if not snapshot.head.model:
            return None
        model = self._continuing_agent(snapshot.head.agent).model
        try:
            now = resolve_model(model).name  # as the runner resolves it (None: the default)
        except LoviaError:
            return None  # the resume says why it cannot go on
        return (snapshot.head.model, now) if now != snapshot.head.model else None

    async def complete_call(self, run_id: str, call_id: str, *, output: str | None = None,
                            error: str | None = None) -> ToolResult:
        """Give dangling call ``call_id`` of ``run_id`` its output or an error, so resuming does not run it again.

        :func:`lovia.complete_dangling_call` on this backend's checkpointer: refused while
        the run executes (here or elsewhere) or once it completed.
        """
        return await complete_dangling_call(self.checkpointer, run_id, call_id, output=output, error=error)

    async def record_finished_runs(self, *, newest: int = HEAL_NEWEST_RUNS) -> list[tuple[str, str]]:
        """Replay the app's newest completed runs that their sessions lack; returns their (session, run) ids.

        A process that dies between finalizing a run's checkpoint and appending it to the
        session leaves a completed run that no list shows. The spec's replay heals it (the
        append is idempotent) without calling the model, keeping the checkpoint as the
        replay cache. A run counts as missing when its session was last active before the
        run was finalized (an append always comes after its run's finalizing save), or when
        the session does not exist; a store that cannot say is replayed anyway. Only the
        app's own runs (ids ``lovia-run-...``) are looked at, the newest ``newest`` of them:
        the crash window is at a run's very end, and a worker sharing the file heals its runs
        by re-issuing them, as the spec says (a session its code cleared must not come back).
        """
        checkpointer = self.checkpointer
        if not isinstance(checkpointer, ListableCheckpointer):
            return []
        completed = await checkpointer.list_runs(statuses=["completed"], limit=newest * HEAL_SCAN_FACTOR)
        ours = [r for r in completed if r.run_id.startswith(APP_RUN_PREFIX) and r.head.session_id][:newest]
        replayed: list[tuple[str, str]] = []
        for summary in ours:
            session_id = summary.head.session_id
            assert session_id is not None
            if isinstance(self.session, DescribableSession):
                info = await self.session.session_info(session_id)
                last = info.last_activity if info is not None else None
                if last is not None and last >= summary.head.updated_at:
                    continue  # appended (or the session moved on since): nothing to heal
            if await self._replay(summary.run_id, session_id):
                replayed.append((session_id, summary.run_id))
        return replayed

    async def _replay(self, run_id: str, session_id: str) -> bool:
        """The spec's replay of completed run ``run_id``: appended to ``session_id`` if it lacks it (idempotent,
        no model call). ``False`` when the run was deleted or changed meanwhile: whoever did that owns it now."""
        options = CheckpointOptions(self.checkpointer, run_id, if_run_exists="resume_only")
        try:
            await Runner.run(self.agent, [], session=self.session, session_id=session_id, checkpoint=options)
        except LoviaError:
            return False
        return True

    async def discard(self, run_id: str) -> None:
        """Delete the run's checkpoint; refused while it executes (here or in another process)."""
        async with self._taken(run_id) as snapshot:
            if snapshot is not None and snapshot.head.status == "completed":
                # Its session has it; its checkpoint is the replay cache a worker re-issuing it relies on.
                raise UserError(f"run {run_id} completed meanwhile, so there is nothing to discard; reopen its "
                                "session to see it")
            await self.checkpointer.delete(run_id)

    async def finalize(self, run_id: str) -> tuple[str, int]:
        """Record an abandoned run in its session as a partial, tool-consistent segment.

        The run is taken first (see :meth:`_taken`), so nobody resumes it meanwhile. Dangling
        tool calls are dropped (``drop_dangling_tool_calls``); the checkpoint is deleted after
        the append. The segment's meta says what it is: ``partial`` (True), ``ended`` (how it
        ended: ``crashed`` or ``failed`` for a run in that state, ``stopped`` for any other),
        ``agent`` (the agent active at its end: the target of a handoff that fired, if one
        was not applied yet, since its result told the model so), its ``timing`` and
        ``active_seconds``. Returns the session id and how many entries were kept.
        """
        async with self._taken(run_id) as snapshot:
            if snapshot is None:
                raise UserError(f"run {run_id} is gone; nothing to finalize")
            head = snapshot.head
            found = run_state(snapshot.taken_from or head)  # as it was before this claim took it
            # A run that was stopped reads "stopped" whichever way it was finalized (sending, f, a delete).
            ended: PartialEnd = found if found in ("crashed", "failed") else "stopped"
            if head.status == "completed":  # completed meanwhile: its session gets the whole run
                raise UserError(f"run {run_id} completed meanwhile, so it is not finalized as partial; "
                                "reopen its session to see it")
            if head.session_id is None:
                raise UserError(f"run {run_id} belongs to no session; discard it instead")
            kept = drop_dangling_tool_calls(snapshot.entries)
            cut_off = cut_off_message(snapshot.taken_from or head)  # the claim marked ``head`` running
            if cut_off is not None:  # what the user saw stream before the stop is kept too
                kept.append(cut_off)
            # Until it last executed (its stop, its failure, a crashed run's last journal write or save),
            # not until the user got to it: the time between is nobody's run time.
            ran_until = max((snapshot.taken_from or head).updated_at, head.started_at)
            timing = {"started_at": head.started_at}
            if ended != "crashed" or ran_until > head.started_at:
                # A crashed run that saved nothing after its start died at an unknown time: with no
                # end, it reads "time not known" rather than a run of 0.0s.
                timing["finished_at"] = ran_until
            meta: dict[str, Any] = {"timing": timing, "partial": True, "ended": ended,
                                    "agent": head.pending_handoff or head.agent}
            if head.active_seconds:
                meta["active_seconds"] = head.active_seconds
            if head.steps:  # its timeline so far (lovia.timing), as a completed run's segment has it
                meta["steps"] = steps_to_meta(head.steps)
            error = (snapshot.taken_from or head).error  # the claim cleared it on ``head``
            if ended == "failed" and error and (reason := first_line(error)):
                meta["error"] = reason  # the checkpoint, which held it, goes: its header still says why
            # To its end even if the app quits meanwhile: a run its session has must not be given back
            # resumable (resuming it would answer twice, and its new answer would never be stored).
            await shielded(self._record_partial(snapshot, head.session_id, kept, meta))
            return head.session_id, len(kept)

    async def _record_partial(self, taken: RunSnapshot, session_id: str, kept: Sequence[Entry],
                              meta: dict[str, Any]) -> None:
        """Append the partial to its session, then forget the run's checkpoint.

        If the delete fails, the checkpoint is marked completed instead (what a completed run
        leaves anyway: a replay cache no list offers to resume) and the delete's error raised.
        """
        await self.session.append(session_id, list(kept), run_id=taken.run_id, meta=meta)
        try:
            await self.checkpointer.delete(taken.run_id)
        except BaseException:
            done = replace(taken.head, status="completed", lease_until=None, updated_at=time.time())
            with contextlib.suppress(Exception):  # the delete's error is the one to report
                await self.checkpointer.save(RunSnapshot(taken.run_id, done, taken.entries))
            raise

    @contextlib.asynccontextmanager
    async def _taken(self, run_id: str) -> AsyncIterator[RunSnapshot | None]:
        """The stored run (``None`` if there is none), held by this process for the block.

        A run another execution holds, in this process or another, is refused with
        :class:`~lovia.errors.RunClaimedError` naming it. With a
        :class:`~lovia.checkpoint.ClaimingCheckpointer` the run is claimed (one atomic step),
        so no execution starts or resumes it meanwhile, and one whose lease lapsed cannot
        write to it any more; otherwise its stored head is checked. If the block fails (a
        refused action, a failed append), a run it took is given back as it was found: its
        status, error and the rest of its head as before the claim, its lease released (a
        checkpointer that does not report the head it took, see ``RunSnapshot.taken_from``,
        leaves it ``interrupted``).
        """
        checkpointer, token = self.checkpointer, f"ui-{uuid.uuid4().hex}"
        with live_claim(token, checkpointer, run_id):
            if isinstance(checkpointer, ClaimingCheckpointer):
                snapshot = await checkpointer.claim(run_id, RunOwner.current(), token=token,
                                                    lease_seconds=DEFAULT_LEASE_SECONDS)
            else:
                snapshot = await checkpointer.load(run_id)
                if snapshot is not None:
                    _refuse_held(run_id, snapshot.head)
            try:
                yield snapshot
            except BaseException:
                if snapshot is not None and snapshot.head.claim == token:
                    with contextlib.suppress(Exception):  # the block's own error matters more
                        await self._give_back(snapshot, token)
                raise

    async def _give_back(self, taken: RunSnapshot, token: str) -> None:
        """Store the run a failed action took as it was found, unless the action already recorded it.

        A run the action deleted, or marked completed (its session has it), stays so: giving it
        back would make a run its session holds resumable again.
        """
        stored = await self.checkpointer.load(taken.run_id)
        if stored is not None and stored.head.status != "completed":
            await self.checkpointer.save(RunSnapshot(taken.run_id, released_as_found(taken, token), taken.entries))

    # -- fork and export -----------------------------------------------------------------

    @property
    def can_fork(self) -> bool:
        """Forking a session from a message needs ``fork`` (:class:`~lovia.session.ForkableSession`)."""
        return isinstance(self.session, ForkableSession)

    async def fork(self, session_id: str, position: int) -> tuple[str, int]:
        """Copy ``session_id`` up to and including its stored entry at ``position`` into a new session.

        Returns the new session's id and how many entries it holds. A tool call takes its
        result along (the cut goes just past the result), so the call the user picked stays in
        the copy; a cut inside a run is otherwise made tool-consistent by the store. The fork is
        titled ``⑂`` and the source's title, so the sessions list tells it apart; where it came
        from is recorded in it (:class:`~lovia.session.ForkOrigin`, see :meth:`fork_origin`).
        """
        session = self.session
        if not isinstance(session, ForkableSession):
            raise UserError(f"{type(session).__name__} cannot fork sessions: it has no "
                            "fork(session_id, *, keep_entries, new_session_id) method")
        pages = TranscriptPages(session, session_id)
        probe = await pages._entry_page(position, 1)
        if not probe.entries:
            raise UserError("that message is not in this session any more (it was rewound meanwhile): pick it again")
        keep = position + 1
        picked = probe.entries[0]
        if isinstance(picked, ToolCall) and probe.runs:
            rest = await pages._entry_page(position, max(1, probe.runs[0].end - position))
            keep = next((position + i + 1 for i, e in enumerate(rest.entries)
                         if isinstance(e, ToolResult) and e.call_id == picked.call_id), keep)
        new_session_id = self.new_session_id()
        copied = await session.fork(session_id, keep_entries=keep, new_session_id=new_session_id)
        info = await self.session_info(session_id)
        if info is not None and isinstance(session, RenamableSession):
            await session.rename_session(new_session_id, f"{FORK_MARK} {info.title or session_id}")
        return new_session_id, copied

    async def stored_position(self, session_id: str, run_id: str, matches: Callable[[Entry], bool]) -> int | None:
        """Where the last stored entry of run ``run_id`` that ``matches`` is in ``session_id``; ``None`` if none is.

        For a message this window showed live: its run is the session's last, or near it, so the
        session is read from its end a page at a time until the run is found.
        """
        pages = TranscriptPages(self.session, session_id)
        end: int | None = None
        while end is None or end > 0:
            start = None if end is None else max(0, end - LOCATE_PAGE)
            page = await pages._entry_page(start, LOCATE_PAGE if end is None else end - (start or 0))
            spans = [span for span in page.runs if span.run_id == run_id]
            if spans:
                span = spans[0]
                run = await pages._entry_page(span.start, max(1, span.count))
                found = [run.start + i for i, entry in enumerate(run.entries) if matches(entry)]
                return found[-1] if found else None
            if page.start == 0:
                return None
            end = page.start
        return None

    async def fork_origin(self, session_id: str) -> ForkOrigin | None:
        """Where ``session_id`` was forked from, as its first run records it; ``None`` for a session not forked.

        One page of one entry with a paged store; any other store's session is read whole.
        """
        first = await TranscriptPages(self.session, session_id)._entry_page(0, 1)
        return ForkOrigin.from_meta(first.runs[0].meta) if first.runs else None

    async def has_stored_runs(self, session_id: str) -> bool:
        """Whether the session store holds a run of ``session_id`` (one whose runs never finished has
        none: what the export writes)."""
        session = self.session
        if isinstance(session, DescribableSession):
            info = await session.session_info(session_id)
            return info is not None and info.run_count > 0
        return bool(await session.segments(session_id))

    async def export(self, session_id: str, path: str | Path, *, fmt: ExportFormat | None = None) -> ExportSummary:
        """Write ``session_id`` to the file ``path`` (see :func:`lovia.export.write_export`): Markdown, or
        JSON lines for a ``.jsonl`` name; read a page at a time from a paged store. A trimmed tool output
        the context policy's archive holds is written whole, as the transcript shows it."""
        archive = self.context_policy.result_store if self.context_policy is not None else None
        return await write_export(self.session, session_id, path, fmt=fmt, archive=archive)

    # -- rewind and trim -----------------------------------------------------------------

    async def rewind(self, session_id: str, keep_entries: int) -> int:
        """Keep the first ``keep_entries`` stored entries of ``session_id``; return how many went.

        The checkpoints of the runs it truncates or deletes go too (this object holds the
        checkpointer): see :func:`lovia.rewind.rewind_with_checkpoints`, which does it. With a
        store that can, what it drops is kept until the next message: :meth:`undo_rewind`.
        """
        session = self.session
        if not isinstance(session, RewindableSession):
            raise UserError(f"{type(session).__name__} cannot rewind: edit-and-resend and regenerate need a "
                            "rewind(session_id, *, keep_entries) method")
        return await rewind_with_checkpoints(session, self.checkpointer, session_id, keep_entries=keep_entries,
                                             undoable=True)

    async def rewind_undo(self, session_id: str) -> RewindUndo | None:
        """What undoing the session's last rewind would bring back; ``None``: nothing to undo."""
        found = await self._undo_in_reach(session_id)
        return found[0] if found is not None else None

    async def _undo_in_reach(self, session_id: str, in_flight: list[RunSummary] | None = None
                             ) -> tuple[RewindUndo, RunSummary | None] | None:
        """The session's last rewind while it can still be undone, and the resend's run when that is
        not stored yet; ``None`` once the next message was sent.

        The store forgets the undo when a run is appended after the resend's. A next message whose
        run is not stored yet (stopped, crashed or failed) forgets it too: undoing then discarded
        that run with the resend's, and what it held was lost. ``in_flight``: the session's runs not
        in it yet, when the caller has read them (read here otherwise).
        """
        session = self.session
        if not isinstance(session, UndoableRewindSession):
            return None
        undo = await session.rewind_undo(session_id)
        if undo is None:
            return None
        if in_flight is None:
            in_flight = await self._in_flight(session_id)
        # The resend's run is made (and claims the session) before the rewind, which waits for that
        # claim: it started before the rewind, and saved since (its claim went on to run, or was marked
        # stopped, crashed or failed). A next message's run started after it.
        since = [r for r in in_flight if max(r.head.started_at, r.head.updated_at) >= undo.rewound_at]
        resend = self._resends.get(session_id)
        if resend is not None and undo.added_run_id in (None, resend):
            # Started here: known by its id. Any other run since is a next message (the resend
            # discarded, or stopped before it ran, left only that one: counted, it was taken for it).
            if any(r.run_id != resend for r in since):
                return None
            return undo, next((r for r in in_flight if r.run_id == resend), None)
        # Resent from another window, or before this one started: the first run since is the resend's.
        if len(since) > (0 if undo.added_run_id is not None else 1):
            return None
        return undo, (since[0] if since else None)

    async def undo_rewind(self, session_id: str) -> RewindUndo:
        """Put the session back as it was before its last rewind (an edit-and-resend or a regenerate).

        Possible until the next message is sent. The runs the rewind dropped come back whole
        (a truncated one as it was) and the resend's run is dropped: its answer when it
        finished (its checkpoint, the replay cache, is deleted first, as a rewind deletes
        those it undoes), or, stopped, crashed or failed and not stored yet, its checkpoint
        (discarded). Refused, changing nothing, while a run of the session executes here or
        elsewhere: its answer would land in a session it no longer belongs to.
        """
        session = self.session
        if not isinstance(session, UndoableRewindSession):
            raise UserError(f"{type(session).__name__} cannot undo a rewind: it keeps nothing a rewind drops")
        # One read of the runs not stored yet for both questions: what the undo reaches, and whether
        # one executes (read twice, a run could start or stop between them).
        in_flight = await self._in_flight(session_id)
        found = await self._undo_in_reach(session_id, in_flight)
        if found is None:
            raise UserError("nothing to undo: no edit-and-resend or regenerate since the last message")
        undo, unstored_resend = found
        for summary in in_flight:
            if summary.head.is_held():
                raise RunClaimedError(f"a run of this session ({summary.run_id}) is executing: wait for its answer, "
                                      "or stop it, then undo")
        if unstored_resend is not None:
            await self.discard(unstored_resend.run_id)
        if undo.added_run_id is not None:
            await self.checkpointer.delete(undo.added_run_id)
        return await session.undo_rewind(session_id)

    async def last_message(self, session_id: str) -> EditTarget | None:
        """The message an edit-last or a regenerate acts on: the last run's.

        When the session's newest run is not in it yet (stopped, crashed or failed, not
        finalized), that run's first user message, from its checkpoint: what the user sees
        last. Otherwise the session's last stored user message, found from the end a page at a
        time.
        """
        in_flight = await self._in_flight(session_id)
        for later, summary in enumerate(reversed(in_flight)):
            snapshot = await self.checkpointer.load(summary.run_id)
            run_entries = snapshot.entries if snapshot else ()
            found = next(((i, e) for i, e in enumerate(run_entries) if isinstance(e, UserMessage)), None)
            if found is not None:
                cut_off = snapshot is not None and bool(snapshot.head.cut_off_text)  # an answer too (see locate)
                answered = found[0] < len(run_entries) - 1 or cut_off
                return EditTarget(found[1], None, summary.run_id, later, answered=answered)
        pages = TranscriptPages(self.session, session_id)
        page = await pages.read(None, LOCATE_PAGE)
        while True:
            entries = [(run.first + i, e) for run in page.runs for i, e in enumerate(run.run.entries)]
            last = next(((p, e) for p, e in reversed(entries) if isinstance(e, UserMessage)), None)
            if last is not None:
                return await self.locate(session_id, last[1], position=last[0])
            if page.start == 0:
                return None
            page = await pages.read(max(0, page.start - LOCATE_PAGE), page.start - max(0, page.start - LOCATE_PAGE))

    async def locate(self, session_id: str, message: UserMessage, *, position: int | None = None,
                     skip_run: str | None = None) -> EditTarget | None:
        """Where ``message`` is: in a run of ``session_id`` not stored yet, or in its stored transcript.

        ``None`` when it is in neither (rewound, or its run was discarded meanwhile). The
        later runs counted are the runs after the message's own run: stored ones (as a rewind
        cuts, see :func:`~lovia.stores._common.rewind_cut`) and the unstored ones, which all
        come after what is stored. ``position`` is where the caller saw it stored: with a paged
        store, a message that near the end is checked there without reading the whole session.
        ``skip_run`` is a run not looked in, nor counted: a resend's own, which asks the same.
        """
        in_flight = [r for r in await self._in_flight(session_id) if r.run_id != skip_run]
        for index, summary in enumerate(in_flight):
            snapshot = await self.checkpointer.load(summary.run_id)
            if snapshot is not None and message in snapshot.entries:
                # An answer cut off as it streamed (journalled, not in its entries) is an answer too.
                answered = (snapshot.entries.index(message) < len(snapshot.entries) - 1
                            or bool(snapshot.head.cut_off_text))
                return EditTarget(message, None, summary.run_id, len(in_flight) - index - 1, answered=answered)
        session = self.session
        if position is not None and isinstance(session, PagedSession):
            probe = await session.read_page(session_id, start=position, limit=1)
            if probe.entries[:1] == (message,) and probe.total - position <= LOCATE_PAGE:
                rest = await session.read_page(session_id, start=position, limit=probe.total - position)
                if rest.entries[:1] == (message,):
                    return EditTarget(message, position, None, len(rest.runs) - 1 + len(in_flight),
                                      answered=rest.runs[0].end > position + 1)
        segments = await self.session.segments(session_id)
        entries = [entry for segment in segments for entry in segment.entries]
        position = next((i for i in range(len(entries) - 1, -1, -1) if entries[i] == message), None)
        if position is None:
            return None
        whole, _ = rewind_cut([len(segment.entries) for segment in segments], position)
        own_run_end = sum(len(segment.entries) for segment in segments[:whole + 1])
        return EditTarget(message, position, None, len(segments) - whole - 1 + len(in_flight),
                          answered=position < own_run_end - 1)

    async def regenerate(self, session_id: str, *, settle: Settle | None = None) -> StartedRun:
        """Drop the last exchange and ask again with the same user message (see :meth:`last_message`)."""
        last = await self.last_message(session_id)
        if last is None:
            raise UserError("nothing to regenerate: this session has no message yet")
        return await self.resend_edited(session_id, last.message, last.message.text, settle=settle,
                                        position=last.position)

    async def resend_edited(self, session_id: str, original: UserMessage, text: str, *,
                            settle: Settle | None = None, position: int | None = None,
                            said: EditTarget | None = None) -> StartedRun:
        """Edit-and-resend: drop ``original`` and everything after it, then send ``text``.

        A stored message is rewound to (its later runs go, stored or not); a message of a run
        not stored yet discards that run and the later ones. Runs before it that are not
        stored yet are settled as :meth:`send` does (``settle``). Everything that refuses
        (a run executing elsewhere, a decision needed) is checked before anything changes.
        ``position`` is where the caller found it stored (see :meth:`locate`). ``said``: the
        message as the user was told what resending drops; should more runs follow it now,
        :class:`EditOutgrown` is raised, and nothing changes.
        """
        _check_text(text)
        target = await self.locate(session_id, original, position=position)
        in_flight = await self._in_flight(session_id)
        ids = [r.run_id for r in in_flight]
        if target is None or (target.run_id is not None and target.run_id not in ids):
            raise UserError("that message is not in this session any more (it was rewound, or its run was "
                            "discarded or finalized meanwhile): pick it again")
        if said is not None and target.later_runs > said.later_runs:
            raise EditOutgrown(target, target.later_runs - said.later_runs, undoable=self.can_undo_rewind)
        cut = ids.index(target.run_id) if target.run_id is not None else 0
        before, dropped = in_flight[:cut], in_flight[cut:]
        for summary in dropped:
            _refuse_held(summary.run_id, summary.head)
        self._check_settleable(before, settle)
        run_id = new_app_run_id()
        self._resends[session_id] = run_id  # what an undo of this rewind may discard (see _undo_in_reach)

        async def drop_once_claimed() -> None:
            """The rewind (and the settling of the runs around it), once the resend's run holds the session.

            Done before its claim, a run another window started in between made the claim refuse
            after the rewind, and landed where the resend was meant to (an undo then dropped it).
            """
            if self.can_undo_rewind and dropped:
                # Undoable: the dropped runs are finalized into the session (after ``before``, in
                # order) and rewound away with the rest, so an undo brings them back as partial runs.
                await self._settle(before, settle)
                for summary in dropped:
                    await self.finalize(summary.run_id)
                stored = await self.locate(session_id, original, skip_run=run_id)
                if stored is None or stored.position is None:
                    raise UserError("that message is not in this session any more (it was rewound meanwhile): "
                                    "pick it again")
                await self.rewind(session_id, stored.position)
                return
            for summary in reversed(dropped):
                await self.discard(summary.run_id)
            if target.position is not None:
                await self.rewind(session_id, target.position)
            await self._settle(before, settle)

        kept = [r for r in before if run_state(r.head) == "interrupted" or settle == "keep"]
        if kept:  # settled into the session after what stays of it: the last of them is its last run
            ended_with: str | None = kept[-1].head.pending_handoff or kept[-1].head.agent
        else:
            ended_with = await self._agent_before(session_id, target.position)
        return await self._start(session_id, text, [r.run_id for r in in_flight], run_id=run_id,
                                 once_claimed=drop_once_claimed, agent=self._continuing_agent(ended_with))

    async def _agent_before(self, session_id: str, position: int | None) -> str | None:
        """The agent the session's last run ended with once rewound to ``position`` (``None``: not rewound)."""
        segments = await self.session.segments(session_id)
        if position is None:
            return _ended_with(segments[-1] if segments else None)
        whole, partial = rewind_cut([len(segment.entries) for segment in segments], position)
        # a run the cut lands inside loses its meta (the spec's rewind): it names no agent
        return None if partial or not whole else _ended_with(segments[whole - 1])

    async def trim_preview(self, session_id: str, *, keep_chars: int = TRIM_KEEP_CHARS,
                           keep_runs: int = 1) -> TrimPreview | None:
        """What :meth:`trim` would cut now; ``None`` when the store cannot tell without trimming."""
        session = self.session
        if not isinstance(session, TrimPreviewingSession):
            return None
        return await session.preview_trim_tool_results(session_id, keep_chars=keep_chars, keep_runs=keep_runs)

    async def trim(self, session_id: str, *, keep_chars: int = TRIM_KEEP_CHARS, keep_runs: int = 1) -> int:
        """Cut tool outputs older than the last ``keep_runs`` runs; return how many were cut."""
        session = self.session
        if not isinstance(session, TrimmableSession):
            raise UserError(f"{type(session).__name__} cannot trim tool outputs: it has no "
                            "trim_tool_results(session_id, *, keep_chars, keep_runs) method")
        return await session.trim_tool_results(session_id, keep_chars=keep_chars, keep_runs=keep_runs)

    @property
    def archive_directory(self) -> str | None:
        """Where the context policy archives long tool outputs (see :mod:`lovia.context`); ``None``: nowhere."""
        store = self.context_policy.result_store if self.context_policy is not None else None
        return str(store.directory) if store is not None else None

    async def archived_output(self, session_id: str, result: ToolResult, run_id: str | None = None) -> str | None:
        """The full output of ``result`` (of the run ``run_id``) as the context policy archived it; ``None``
        if it was not (or is gone).

        Found by the conversation's archive index as it stood after that run: the stored runs up to it,
        or every stored run and that run's checkpoint when it is not stored yet (a call id a server
        repeated across runs names each run's own output so). Without ``run_id``, the whole index, as
        the model's ``recall_tool_result`` reads it. An archived text that does not begin with the
        part the session kept (:func:`~lovia.transcript.whole_output_of`) is not this result's.
        """
        policy = self.context_policy
        if policy is None or policy.result_store is None:
            return None
        segments = await self.session.segments(session_id)
        upto = next((i for i, segment in enumerate(segments) if segment.run_id == run_id), None)
        if upto is not None:
            state = policy.carried_state(segments[: upto + 1])
        else:
            state = policy.carried_state(segments)
            for summary in reversed(await self.runs(session_id=session_id)):  # newest last: it wins
                if run_id is None or summary.run_id == run_id:
                    state["archived"].update(archived_in(summary.head.context_state))
        return await policy.result_store.whole_output(state["archived"], result)


def new_app_run_id() -> str:
    """A run id for a run the app starts (see :data:`APP_RUN_PREFIX`)."""
    return f"{APP_RUN_PREFIX}{uuid.uuid4().hex}"


def needed_agents(head: RunHead) -> tuple[str, ...]:
    """The agents a resume of the run whose head is ``head`` needs (see :attr:`TranscriptRun.needs_agents`)."""
    return tuple(name for name in (head.agent, head.pending_handoff) if name)


def _ended_with(segment: Segment | None) -> str | None:
    """The agent a stored run ended with (its meta's ``agent``); ``None`` when it names none."""
    name = segment.meta.get("agent") if segment is not None else None
    return name if isinstance(name, str) else None


def _check_text(text: str) -> None:
    if not text.strip():
        raise UserError("an empty message is not sent")
