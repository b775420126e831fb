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
from collections.abc import AsyncIterator
from dataclasses import dataclass, replace
from typing import Any, Literal

from lovia.agent import Agent
from lovia.checkpoint import (
    DEFAULT_LEASE_SECONDS,
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
)
from lovia.context import ContextPolicy
from lovia.entries import Entry, UserMessage
from lovia.errors import LoviaError, UserError
from lovia.rewind import rewind_with_checkpoints
from lovia.runtime import Runner, RunStream
from lovia.session import (
    ClosableStore,
    DescribableSession,
    ListableSession,
    RenamableSession,
    RewindableSession,
    Session,
    SessionInfo,
    TrimmableSession,
    TrimPreview,
    TrimPreviewingSession,
)
from lovia.transcript import drop_dangling_tool_calls

# How many of the newest completed runs a start-up replays into their sessions (see record_finished_runs).
HEAL_NEWEST_RUNS = 20
# The run ids this app makes; it replays only its own runs (see record_finished_runs).
APP_RUN_PREFIX = "lovia-run-"
# How many completed runs are listed to find the app's newest among other workers' runs.
HEAL_SCAN_FACTOR = 10
RunState = Literal["completed", "running", "elsewhere", "interrupted", "crashed", "failed"]
STATE_LABELS: dict[str, str] = {"elsewhere": "running elsewhere"}
"""How a state reads where it is not its own name."""
RESUMABLE: tuple[RunStatus, ...] = ("running", "interrupted", "failed")
TRIM_KEEP_CHARS = 400
"""How much of each old tool output a trim from the UI keeps."""


@dataclass(frozen=True)
class TranscriptRun:
    """One run as the transcript shows it: a stored segment or an in-flight checkpoint."""

    run_id: str
    entries: tuple[Entry, ...]
    state: RunState
    started_at: float | None
    duration: float | None
    error: str | None = None
    owner: str | None = None
    """Who executes a run ``running elsewhere`` (e.g. ``process 4242 on build-7``)."""


@dataclass(frozen=True)
class Transcript:
    """A session's completed runs (in order), then its in-flight runs (oldest first)."""

    session_id: str
    runs: tuple[TranscriptRun, ...]


def run_state(head: RunHead) -> RunState:
    """How a run's head reads to a user.

    A ``running`` run is ``crashed`` when nothing holds it (its owner is gone or its lease
    lapsed), ``elsewhere`` when another process holds it, and ``running`` when this one does.
    """
    if head.status != "running":
        return head.status
    holder = head.holder()
    return "crashed" if holder is None else "running" if holder == "here" else "elsewhere"


def _given_back(taken: RunSnapshot) -> RunHead:
    """The head of a run a claim took, as the claim found it, to store when the action fails.

    It keeps the claim's token (the stored head carries it: a save under any other is refused)
    with no lease, so nothing holds the run once the action's claim is released.
    """
    if taken.taken_from is None:
        return replace(taken.head, status="interrupted", lease_until=None)
    return replace(taken.taken_from, claim=taken.head.claim, lease_until=None)


def _refuse_held(run_id: str, head: RunHead) -> None:
    if head.is_held():
        raise claim_refused(run_id, head)


class ChatBackend:
    """Sessions, runs and the agent the UI drives."""

    def __init__(self, session: Session, checkpointer: Checkpointer, agent: Agent[Any], *,
                 context_policy: ContextPolicy | None = None, max_turns: int = 25) -> None:
        self.session = session
        self.checkpointer = checkpointer
        self.agent = agent
        self.context_policy = context_policy
        self.max_turns = max_turns

    async def close(self) -> None:
        """Close both stores (the ones that can be closed)."""
        for store in (self.session, self.checkpointer):
            if isinstance(store, ClosableStore):
                await store.close()

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
    def can_list_runs(self) -> bool:
        return isinstance(self.checkpointer, ListableCheckpointer)

    # -- sessions ------------------------------------------------------------------------

    @staticmethod
    def new_session_id() -> str:
        return f"s-{uuid.uuid4().hex[:12]}"

    async def sessions(self, query: str | None = None) -> list[SessionInfo]:
        """Sessions matching ``query``, most recent first; none when the store cannot list."""
        session = self.session
        if not isinstance(session, ListableSession):
            return []
        return await session.list_sessions(query=query or None)

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

    async def delete_session(self, session_id: str) -> None:
        """Forget the session and every run checkpoint of it; refused while one of its runs executes.

        Every run is checked before anything is deleted, then each is taken (see
        :meth:`_taken`) and deleted, so one that started meanwhile stops that.
        """
        summaries = await self.runs(session_id=session_id, include_completed=True)
        for summary in summaries:
            _refuse_held(summary.run_id, summary.head)
        for summary in summaries:
            async with self._taken(summary.run_id):
                await self.checkpointer.delete(summary.run_id)
        await self.session.clear(session_id)

    async def transcript(self, session_id: str) -> Transcript:
        """The full transcript: the session's completed runs plus its in-flight ones."""
        runs = [
            TranscriptRun(s.run_id, s.entries, "completed", s.started_at, s.duration)
            for s in await self.session.segments(session_id)
        ]
        for summary in reversed(await self.runs(session_id=session_id)):
            snapshot = await self.checkpointer.load(summary.run_id)
            if snapshot is not None:
                head = snapshot.head
                state = run_state(head)
                runs.append(TranscriptRun(summary.run_id, tuple(snapshot.entries), state, head.started_at, None,
                                          head.error, str(head.owner) if state == "elsewhere" else None))
        return Transcript(session_id, tuple(runs))

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

    async def snapshot(self, run_id: str) -> RunSnapshot | None:
        return await self.checkpointer.load(run_id)

    def send(self, session_id: str, text: str) -> tuple[UserMessage, RunStream]:
        """Start a new run of the agent on ``text`` in ``session_id``.

        Returns the user message as it will be stored (show that one: it is equal to the
        stored entry, so it can be found again for an edit) and the run's stream.
        """
        if not text.strip():
            raise UserError("an empty message is not sent")
        message = UserMessage(text=text)
        run_id = f"{APP_RUN_PREFIX}{uuid.uuid4().hex}"
        stream = Runner.stream(self.agent, [message], session=self.session, session_id=session_id,
                               checkpoint=CheckpointOptions(self.checkpointer, run_id), max_turns=self.max_turns,
                               context_policy=self.context_policy)
        return message, stream

    async def resume(self, run_id: str) -> tuple[str, RunStream]:
        """Continue an interrupted, crashed or failed run; returns its session id and stream."""
        snapshot = await self.checkpointer.load(run_id)
        if snapshot is None:
            raise UserError(f"run {run_id} is gone; it may have been finished or discarded elsewhere")
        if snapshot.head.status == "completed":
            raise UserError(f"run {run_id} already completed; nothing to resume")
        _refuse_held(run_id, snapshot.head)
        session_id = snapshot.head.session_id
        if session_id is None:
            raise UserError(f"run {run_id} belongs to no session, so it cannot be shown here")
        stream = Runner.stream(self.agent, [], session=self.session, session_id=session_id,
                               checkpoint=CheckpointOptions(self.checkpointer, run_id, if_run_exists="resume_only"),
                               max_turns=self.max_turns, context_policy=self.context_policy)
        return session_id, stream

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
            options = CheckpointOptions(checkpointer, summary.run_id, if_run_exists="resume_only")
            try:
                await Runner.run(self.agent, [], session=self.session, session_id=session_id, checkpoint=options)
            except LoviaError:
                continue  # deleted or changed meanwhile: whoever did that owns it now
            replayed.append((session_id, summary.run_id))
        return replayed

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
        the append. Returns the session id and how many entries were kept.
        """
        async with self._taken(run_id) as snapshot:
            if snapshot is None:
                raise UserError(f"run {run_id} is gone; nothing to finalize")
            head = snapshot.head
            if head.status == "completed":  # completed meanwhile: its session gets the whole run
                raise UserError(f"run {run_id} completed meanwhile, so it is not finalized as partial; "
                                "reopen its session to see it")
            if head.session_id is None:
                raise UserError(f"run {run_id} belongs to no session; discard it instead")
            kept = drop_dangling_tool_calls(snapshot.entries)
            meta = {"timing": {"started_at": head.started_at, "finished_at": time.time()}, "partial": True}
            await self.session.append(head.session_id, kept, run_id=run_id, meta=meta)
            await self.checkpointer.delete(run_id)
            return head.session_id, len(kept)

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
                        await checkpointer.save(RunSnapshot(run_id, _given_back(snapshot), snapshot.entries))
                raise

    # -- rewind and trim -----------------------------------------------------------------

    async def rewind(self, session_id: str, keep_entries: int) -> int:
        """Keep the first ``keep_entries`` stored entries of ``session_id``; return how many went.

        The checkpoints of the runs it truncates or deletes go too (this object holds the
        checkpointer): see :func:`lovia.rewind.rewind_with_checkpoints`, which does it.
        """
        session = self.session
        if not isinstance(session, RewindableSession):
            raise UserError(f"{type(session).__name__} cannot rewind: edit-and-resend and regenerate need a "
                            "rewind(session_id, *, keep_entries) method")
        return await rewind_with_checkpoints(session, self.checkpointer, session_id, keep_entries=keep_entries)

    async def last_user_message(self, session_id: str) -> UserMessage | None:
        """The session's last stored user message."""
        entries = await self.session.load(session_id)
        return next((e for e in reversed(entries) if isinstance(e, UserMessage)), None)

    async def position_of(self, session_id: str, message: UserMessage) -> int | None:
        """Where ``message`` stands in the stored transcript (what rewind counts), if stored."""
        entries = await self.session.load(session_id)
        return next((i for i in range(len(entries) - 1, -1, -1) if entries[i] == message), None)

    async def regenerate(self, session_id: str) -> tuple[UserMessage, RunStream]:
        """Drop the last exchange and ask again with the same user message."""
        last = await self.last_user_message(session_id)
        if last is None:
            raise UserError("nothing to regenerate: this session has no message yet")
        return await self.resend_edited(session_id, last, last.text)

    async def resend_edited(self, session_id: str, original: UserMessage, text: str) -> tuple[UserMessage, RunStream]:
        """Edit-and-resend: drop ``original`` and everything after it, then send ``text``."""
        if not text.strip():
            raise UserError("an empty message is not sent")
        position = await self.position_of(session_id, original)
        if position is None:
            raise UserError("that message is not in the session any more (it belongs to a run still in flight, "
                            "or was rewound): resume or finalize the run first")
        await self.rewind(session_id, position)
        return self.send(session_id, text)

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

