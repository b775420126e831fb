"""The run loop: model turns, tool calls, handoffs, sessions and checkpoints.

``Runner.run`` returns a :class:`RunResult`; ``Runner.stream`` yields typed events and then
offers the result. Both follow ``sessions-and-checkpoints.md``:

- with a session, history is loaded at start and the run's own entries are appended as one
  timed segment on completion (never when interrupted);
- with a checkpoint, the run is snapshotted after every model turn and every tool result;
  an existing run id resumes, replays, restarts or fails per ``if_run_exists``;
- a run is claimed before it executes (atomically, when the checkpointer is a
  ``ClaimingCheckpointer``), and its lease is renewed while it runs, so a run id issued by
  several processes at once executes in one of them; with ``if_run_exists="resume"`` the
  claim alone decides (no load before it), and a fresh run's claim is its first snapshot;
- on success the checkpoint is finalized first, then the session append, then the optional
  delete, so a crash between them heals on the next replay;
- while a model streams, the text so far is journalled a few times a second to a checkpointer
  that keeps a partial-answer journal (apart from the snapshots, so resume is unchanged), and
  every model turn and tool call is recorded as a timed step (:mod:`lovia.timing`) in the
  head, then in the completed segment's ``meta["steps"]``.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import json
import time
import warnings
from collections.abc import AsyncIterator, Callable, Iterable, Sequence
from dataclasses import replace
from typing import Any, cast

from lovia._async import shielded, wait_out
from lovia.agent import Agent, agent_graph
from lovia.checkpoint import (
    Checkpointer,
    CheckpointOptions,
    ClaimingCheckpointer,
    IfStored,
    JournalingCheckpointer,
    ListableCheckpointer,
    RunHead,
    RunOwner,
    RunSnapshot,
    SessionExclusiveCheckpointer,
    check_alone_in_session,
    claim_refused,
    claims_alone,
    is_live_here,
    plan_claim,
    register_live_claim,
    release_live_claim,
    released_as_found,
)
from lovia.context import ContextPolicy
from lovia.entries import USUAL_FINISH_REASONS, AssistantMessage, Entry, Handoff, ToolCall, ToolResult, UserMessage
from lovia.errors import (
    AgentResolutionError,
    GuardrailTripped,
    MaxTurnsExceeded,
    RunClaimedError,
    StoreError,
    UserError,
)
from lovia.mcp import MCPServer, MCPTool
from lovia.models import ModelRequest, resolve_model
from lovia.models.base import FinishChunk, Model, RetryChunk, TextChunk, ToolCallChunk, UsageChunk
from lovia.run_state import first_line
from lovia.runtime.events import (
    HandoffOccurred,
    MessageCompleted,
    ModelRetrying,
    RunCompleted,
    RunEvent,
    RunFailed,
    RunInterrupted,
    RunStarted,
    TextDelta,
    ToolCallStarted,
    ToolResultReceived,
    TurnFinished,
)
from lovia.runtime.journal import PartialAnswerJournal
from lovia.runtime.result import RunResult
from lovia.session import Segment, Session
from lovia.stores._common import clean_meta, new_run_id
from lovia.timing import ModelStep, Step, ToolStep, steps_to_meta
from lovia.tools import RunContext, Tool, ToolArgumentsError, ToolContext, ToolError
from lovia.transcript import dangling_tool_calls
from lovia.usage import Usage

__all__ = ["DEFAULT_MAX_TURNS", "RunStream", "Runner"]

DEFAULT_MAX_TURNS = 25
FIRST_INPUT_CHARS = 200
_IF_STORED: dict[str, IfStored] = {"fail": "leave", "restart": "replace"}
"""What a claim does with a run stored between the load and the claim, per ``if_run_exists``."""

PROGRESS_SAVE_SECONDS = 2.0
"""A run waiting on a long tool call or model turn saves its head at least this often (its lease, its
time so far and its steps): a run killed a few seconds in kept none of them at 5 s (a commit every
2 s of a wait costs nothing a user or a shared database would notice)."""


class Runner:
    """Runs agents. Stateless: everything a run needs is passed to ``run`` or ``stream``."""

    @staticmethod
    async def run(
        agent: Agent[Any],
        input: str | Sequence[Entry | str] | None,
        *,
        session: Session | None = None,
        session_id: str | None = None,
        checkpoint: CheckpointOptions | None = None,
        deps: Any = None,
        max_turns: int = DEFAULT_MAX_TURNS,
        context_policy: ContextPolicy | None = None,
        mcp_servers: Sequence[MCPServer] = (),
    ) -> RunResult:
        """Run ``agent`` on ``input`` to completion and return the result.

        Cancelling the awaiting task stops the run: its checkpoint is marked
        ``interrupted`` before the cancellation propagates, and nothing is appended to the
        session. Once the run finalizes (its checkpoint completed, then the session append)
        a cancellation waits for that to end and is raised after it: the run is completed and
        in the session, ``RunCompleted`` was emitted, and ``on_run_end`` is not called.
        Errors propagate after the checkpoint is marked ``failed``.

        ``mcp_servers`` are offered to every agent of the run, after each agent's own
        (``Agent.mcp_servers``): servers chosen per run, as the app enables them per session.
        """
        stream = Runner.stream(agent, input, session=session, session_id=session_id, checkpoint=checkpoint,
                               deps=deps, max_turns=max_turns, context_policy=context_policy,
                               mcp_servers=mcp_servers)
        async for _ in stream:
            pass
        if stream.result is None:  # stopped through stream.stop(), which run() never calls
            raise asyncio.CancelledError()
        return stream.result

    @staticmethod
    def stream(
        agent: Agent[Any],
        input: str | Sequence[Entry | str] | None,
        *,
        session: Session | None = None,
        session_id: str | None = None,
        checkpoint: CheckpointOptions | None = None,
        deps: Any = None,
        max_turns: int = DEFAULT_MAX_TURNS,
        context_policy: ContextPolicy | None = None,
        mcp_servers: Sequence[MCPServer] = (),
    ) -> RunStream:
        """A run whose events are yielded as they happen; iterate it once.

        After iteration ``result`` holds the :class:`RunResult` (``None`` if stopped).
        ``stop()`` interrupts the run: the stream then yields :class:`RunInterrupted` and ends.
        """
        return RunStream(_Run(agent, input, session=session, session_id=session_id, checkpoint=checkpoint,
                              deps=deps, max_turns=max_turns, context_policy=context_policy,
                              mcp_servers=mcp_servers))


_DONE = object()


class RunStream:
    """The events of one run; see :meth:`Runner.stream`."""

    def __init__(self, run: _Run) -> None:
        self._run = run
        self._queue: asyncio.Queue[Any] = asyncio.Queue()
        self._task: asyncio.Task[RunResult] | None = None
        self._iterated = False
        self._ended_stopped = False
        self.result: RunResult | None = None

    @property
    def run_id(self) -> str:
        """The run's id (the checkpoint's, or a fresh one)."""
        return self._run.run_id

    @property
    def stopped(self) -> bool:
        """True once the run was stopped by :meth:`stop` or cancellation."""
        return self._ended_stopped or (self._task is not None and self._task.cancelled())

    def stop(self) -> None:
        """Interrupt the run; the checkpoint says ``interrupted`` and the stream ends."""
        if self._task is not None and not self._task.done():
            self._task.cancel()

    def __aiter__(self) -> AsyncIterator[RunEvent]:
        return self._events()

    async def _events(self) -> AsyncIterator[RunEvent]:
        if self._iterated:
            raise UserError("a run stream can be iterated only once")
        self._iterated = True
        task = self._task = asyncio.ensure_future(self._run.execute(self._queue.put_nowait))
        task.add_done_callback(lambda _: self._queue.put_nowait(_DONE))
        try:
            while (item := await self._queue.get()) is not _DONE:
                yield item
            if task.cancelled():
                return
            self.result = task.result()  # raises the run's error, after its RunFailed event
        finally:
            if not task.done():
                task.cancel()
                with contextlib.suppress(BaseException):  # its outcome was reported as an event
                    await shielded(task)
            # The ended task is let go: its error's traceback holds the frames of the run's last
            # steps, and they the model's request, the whole conversation (see _Run.execute).
            self._ended_stopped, self._task = task.cancelled(), None


class _Run:
    """One execution of a run: the state the loop carries between steps."""

    def __init__(
        self,
        agent: Agent[Any],
        input: str | Sequence[Entry | str] | None,
        *,
        session: Session | None,
        session_id: str | None,
        checkpoint: CheckpointOptions | None,
        deps: Any,
        max_turns: int,
        context_policy: ContextPolicy | None,
        mcp_servers: Sequence[MCPServer] = (),
    ) -> None:
        if session is not None and not session_id:
            raise UserError("a session needs a session_id: pass session_id=... to say which conversation this is")
        if max_turns < 1:
            raise UserError(f"max_turns must be at least 1, got {max_turns}")
        self.entry_agent = agent
        self.input_entries = _input_entries(input)
        self.session = session
        self.session_id = session_id
        self.checkpoint = checkpoint
        self.deps = deps
        self.max_turns = max_turns
        self.policy = context_policy
        self.mcp_servers = list(mcp_servers)
        self.run_id = checkpoint.run_id if checkpoint else new_run_id()
        # Asked once: a check against a runtime protocol inspects every member.
        self._claims_atomically = checkpoint is not None and isinstance(checkpoint.checkpointer, ClaimingCheckpointer)
        self.agent = agent
        self.entries: list[Entry] = []
        self.history: list[Entry] = []
        self.head: RunHead | None = None
        self.run_state: dict[str, Any] = {}  # the context policy's state for this run's own results
        self.conversation_state: dict[str, Any] = {}  # ... and for the whole conversation
        self._models: dict[str, Model] = {}
        self._instructions: dict[str, str] = {}
        self._graph: dict[str, Agent[Any]] | None = None
        self._emit: Callable[[RunEvent], None] = lambda event: None
        self._token = new_run_id()  # names this execution in the run's claim
        self.warnings: list[str] = []  # for RunResult.warnings, each also issued with warnings.warn
        self._told_servers: set[str] = set()  # MCP servers whose failure to start was warned of
        self._last_save = time.monotonic()
        self._renewal_error: BaseException | None = None
        # Set when once_claimed failed, so the run ends before anything of it ran: whether the claim
        # stored it fresh (see _prepare_once_claimed); None otherwise.
        self._not_started: bool | None = None
        # Set when a resume found an agent it needs missing and gave the run back as it was (see
        # _check_resume_agents): the run ends, reported, with nothing marked on it.
        self._given_back = False
        self._completed: RunResult | None = None  # set once the checkpoint says completed
        self._completion_reported = False
        # Active time: what earlier executions ran (read from the head at this one's first
        # save) plus this one's time since it started, on a clock that wall-time jumps leave alone.
        self._active_before: float | None = None
        self._active_since = time.monotonic()
        # The text streamed so far of the model turn in progress; None between turns.
        self._streaming: list[str] | None = None
        journals = checkpoint is not None and isinstance(checkpoint.checkpointer, JournalingCheckpointer)
        self._journal = PartialAnswerJournal(self._journal_partial if journals else None)
        # Where this execution's steps that have not ended yet are in ``head.steps``, and the model turn's.
        self._open_steps: set[int] = set()
        self._turn_step: int | None = None

    # -- entry point -----------------------------------------------------------------------

    async def execute(self, emit: Callable[[RunEvent], None]) -> RunResult:
        self._emit = emit
        self._active_since = time.monotonic()
        try:
            if self._claim_decides_alone():
                snapshot = await self._claim(None)  # a stored run is taken up by the claim itself
            else:
                snapshot = await self._existing_snapshot()
                if snapshot is None or snapshot.head.status != "completed":
                    if snapshot is not None:
                        # A run this agent cannot resume is refused before the claim: it stays as it is.
                        self._resume_agents(snapshot.head)
                    snapshot = await self._claim(snapshot)
            if snapshot is not None and snapshot.head.status == "completed":
                return await self._replay(snapshot)  # maybe completed just now, elsewhere
            if snapshot is not None:
                await self._check_resume_agents(snapshot)
            async with self._renewing_lease():  # renewed while once_claimed runs too
                await self._prepare_once_claimed(fresh=snapshot is None)
                taken_from = snapshot.taken_from if snapshot is not None else None
                return await self._drive(resumed=snapshot is not None, taken_from=taken_from)
        except asyncio.CancelledError:
            failure = self._renewal_error
            if self._not_started is not None:
                await self._forget_not_started(self._not_started)
                if failure is None:
                    raise
                task = asyncio.current_task()
                if task is not None:
                    task.uncancel()
                emit(RunFailed(self.run_id, failure))
                raise failure from None
            if self._given_back:  # refused for a missing agent, given back as found: a stop marks nothing
                raise
            if self._completed is not None:
                # Stopped once its checkpoint said completed: it did complete (a store error in
                # its append heals on replay). A stop is the caller's own cancellation, raised;
                # one from a lease renewal that failed meanwhile is nobody's, and is dropped.
                self._report_completion(self._completed)
                if failure is None:
                    raise
                task = asyncio.current_task()
                if task is not None:
                    task.uncancel()
                return self._completed
            if failure is None:
                await self._mark("interrupted")
                emit(RunInterrupted(self.run_id))
                raise
            # Cancelled by the lease renewal, which failed: the run failed, nobody stopped it.
            task = asyncio.current_task()
            if task is not None:
                task.uncancel()
            await self._fail(failure)
            raise failure from None
        except BaseException as exc:
            if self._not_started is not None:
                await self._forget_not_started(self._not_started)
                emit(RunFailed(self.run_id, exc))
            elif self._given_back:
                emit(RunFailed(self.run_id, exc))
            else:
                await self._fail(exc)
            raise
        finally:
            self._journal.abandon()
            release_live_claim(self._token)  # after the mark: until then this execution holds the run
            # The conversation read for this run is let go: a stream kept after its end (the app's
            # worker is, as long as the run's widgets are shown) kept a whole session's history,
            # one more with each run: 144 MB a message in a session of 100,000 entries.
            self.history, self.conversation_state = [], {}

    async def _prepare_once_claimed(self, *, fresh: bool) -> None:
        """``CheckpointOptions.once_claimed``, between the claim and the history read (the lease renewed).

        Should it fail (or be cancelled), the run ends before it began: ``_not_started`` tells
        ``execute``, which undoes the claim once the renewals stopped (:meth:`_forget_not_started`)
        and reports an error (``RunFailed``) rather than recording it on the run.
        """
        options = self.checkpoint
        if options is None or options.once_claimed is None:
            return
        try:
            await options.once_claimed()
        except BaseException:
            self._not_started = fresh
            raise

    async def _forget_not_started(self, fresh: bool) -> None:
        """Undo the claim of a run whose ``once_claimed`` failed: the fresh run the claim stored is
        deleted (it holds only its input); a stored run it took up is released ``interrupted``, as
        a stop leaves it. Shielded: done even while cancelled. Its own failure is not reported."""
        options = self.checkpoint
        assert options is not None
        with contextlib.suppress(Exception):
            if fresh:
                await wait_out(asyncio.ensure_future(options.checkpointer.delete(self.run_id)))
            else:
                await self._mark("interrupted")

    def _resume_agents(self, head: RunHead) -> Agent[Any]:
        """The agent a resume of the run whose head is ``head`` goes on with; its pending handoff's
        target must be found too. Raises :class:`AgentResolutionError` for one the entry agent's
        handoff graph lacks (renamed or removed, or another program's agent)."""
        agent = self._agent_named(head.agent, what="the active agent")
        if head.pending_handoff:
            self._agent_named(head.pending_handoff, what="the handoff target")
        return agent

    async def _check_resume_agents(self, taken: RunSnapshot) -> None:
        """Find the agents the resume of the run just claimed needs; when one is missing, give the run
        back as the claim found it and raise.

        The spec makes a missing agent a hard error for the resume, not for the run: nothing of it
        ran, so it stays as it was (stopped, crashed or failed, its error kept) and resumes once
        the agent is back, rather than reading ``failed`` for an error that was the caller's. A
        checkpointer that does not report the head it took (``RunSnapshot.taken_from``) gets the
        run back ``interrupted``, as a stop leaves it.
        """
        try:
            self._resume_agents(taken.head)
        except AgentResolutionError:
            self._given_back = True  # execute reports the error, but marks nothing
            options = self.checkpoint
            if options is not None and self.head is not None:
                back = released_as_found(taken, self._token)
                try:
                    await shielded(options.checkpointer.save(RunSnapshot(self.run_id, back, list(self.entries))))
                except Exception as error:  # the resolution's error is the one raised; this one is told
                    self._warn(f"run {self.run_id!r} could not be given back as it was found ({type(error).__name__}); "
                               "it stays claimed by this execution until its lease runs out")
            raise

    async def _fail(self, exc: BaseException) -> None:
        await self._mark("failed", error=f"{type(exc).__name__}: {exc}")
        self._emit(RunFailed(self.run_id, exc))

    def _claim_decides_alone(self) -> bool:
        """Whether the claim alone does what loading the stored run first would decide.

        So it is for ``if_run_exists="resume"`` with no ``resume_from`` and a
        :class:`ClaimingCheckpointer`: a claim given the fresh run stores it when none is
        stored, returns a completed one as it is (to replay), refuses one held elsewhere and
        takes any other (to resume), which is what the runner does with a loaded run. The
        read transaction of the load is then saved. Not while another execution of the run is
        live in this process: the claim would refuse at once, where a run that execution
        completed is to be replayed.
        """
        options = self.checkpoint
        return (self._claims_atomically and options is not None and options.if_run_exists == "resume"
                and options.resume_from is None and not is_live_here(options.checkpointer, options.run_id))

    async def _existing_snapshot(self) -> RunSnapshot | None:
        options = self.checkpoint
        if options is None:
            return None
        snapshot = options.resume_from
        if snapshot is not None and snapshot.run_id != options.run_id:
            raise UserError(f"resume_from holds run {snapshot.run_id!r}, but the checkpoint options name "
                            f"{options.run_id!r}; pass the same run id")
        stored = await options.checkpointer.load(options.run_id)
        snapshot = snapshot or stored
        policy = options.if_run_exists
        if snapshot is None:
            if policy == "resume_only":
                raise UserError(f"no stored run {options.run_id!r} to resume (if_run_exists='resume_only'); "
                                "check the run id, or use 'resume' to start it fresh")
            return None
        if policy == "fail":
            raise _already_exists(options.run_id, snapshot.head)
        if (policy == "restart" or options.resume_from is not None) and stored is not None and stored.head.is_held():
            raise claim_refused(options.run_id, stored.head)  # never discard a run someone is executing
        if policy == "restart":
            if not self._claims_atomically:
                await options.checkpointer.delete(options.run_id)  # a claiming one replaces it atomically
            return None
        if options.resume_from is not None:
            # A rehydrated snapshot becomes the stored one, so later saves extend it; the claim
            # it carries was on another store (or is over), so it is claimed afresh here.
            head = replace(snapshot.head, owner=None, claim=None, lease_until=None)
            snapshot = RunSnapshot(snapshot.run_id, head, list(snapshot.entries))
            await options.checkpointer.delete(options.run_id)
            await options.checkpointer.save(RunSnapshot(snapshot.run_id, replace(head), list(snapshot.entries)))
        return snapshot

    async def _claim(self, snapshot: RunSnapshot | None) -> RunSnapshot | None:
        """Take the run for this execution before anything of it runs.

        Returns the stored run to resume (its head now names this execution) or to replay
        (completed meanwhile); ``None`` for a fresh run. Either way ``head`` and ``entries``
        are set before anything can stop this, so a cancelled run is marked ``interrupted``.
        A run another execution holds raises :class:`RunClaimedError`. With a
        :class:`ClaimingCheckpointer` the check and the take are one atomic step, and
        ``if_run_exists`` is honoured inside it (a run stored meanwhile is not resumed under
        ``"fail"``, nor kept under ``"restart"``); with a plain checkpointer the stored head
        is checked and saved taken at once, so two processes starting at the same moment can
        still both run it.
        """
        options = self.checkpoint
        start = self._fresh_snapshot() if snapshot is None else None
        if options is None:
            assert start is not None
            self.head, self.entries = start.head, start.entries
            return None
        checkpointer = options.checkpointer
        if options.alone_in_session and not claims_alone(checkpointer):
            await self._check_alone_in_session(checkpointer)
        register_live_claim(self._token, checkpointer, self.run_id)
        self._last_save = time.monotonic()
        if self._claims_atomically:
            claiming = cast(ClaimingCheckpointer, checkpointer)
            if_stored = _IF_STORED.get(options.if_run_exists, "take")
            stored = await self._claim_atomically(claiming, start, if_stored)
            if stored is None and start is None:  # deleted since it was loaded: as if it never was
                if options.if_run_exists == "resume_only":
                    raise UserError(f"run {self.run_id!r} was deleted before it could be resumed; "
                                    "check who discarded it, or use 'resume' to start it fresh")
                start = self._fresh_snapshot()
                stored = await self._claim_atomically(claiming, start, if_stored)
            if stored is not None and if_stored == "leave":  # stored meanwhile, by another process
                raise _already_exists(self.run_id, stored.head)
        else:
            stored = snapshot
            if stored is not None:
                plan_claim(self.run_id, stored.head, None, RunOwner.current(), self._token,
                           options.lease_seconds, time.time())
        if stored is None:
            assert start is not None
            self.head, self.entries = start.head, start.entries
        elif stored.head.status != "completed":
            self.head, self.entries = stored.head, list(stored.entries)
        if not self._claims_atomically and self.head is not None:
            await self._save()  # taken at once: the window in which another process sees it free is short
        return stored

    async def _check_alone_in_session(self, checkpointer: Checkpointer) -> None:
        """``alone_in_session`` with a checkpointer that cannot check it in its claim: the session's running
        runs are asked for just before (a run started elsewhere at the same moment is not seen)."""
        if self.session_id is None or not isinstance(checkpointer, ListableCheckpointer):
            return
        running = await checkpointer.list_runs(statuses=["running"])
        check_alone_in_session(self.session_id, self.run_id, ((r.run_id, r.head) for r in running
                                                              if r.head.session_id == self.session_id), time.time())

    async def _claim_atomically(self, checkpointer: ClaimingCheckpointer, start: RunSnapshot | None,
                                if_stored: IfStored) -> RunSnapshot | None:
        assert self.checkpoint is not None
        alone = self.checkpoint.alone_in_session and claims_alone(checkpointer)
        claim = cast(SessionExclusiveCheckpointer, checkpointer).claim_alone if alone else checkpointer.claim
        try:
            return await claim(self.run_id, RunOwner.current(), token=self._token,
                               lease_seconds=self.checkpoint.lease_seconds, start=start, if_stored=if_stored)
        except asyncio.CancelledError:
            # The claim's transaction may have committed as the cancellation came, its result
            # then dropped: take up the claimed run, so that it is marked interrupted (released)
            # rather than left running under this process's lease. The load is waited out and
            # its result taken up even if another cancellation lands meanwhile.
            recovery = asyncio.ensure_future(checkpointer.load(self.run_id))
            try:
                await wait_out(recovery)
            finally:
                loaded = recovery.done() and not recovery.cancelled() and recovery.exception() is None
                found = recovery.result() if loaded else None
                if found is not None and found.head.claim == self._token:
                    self.head, self.entries = found.head, list(found.entries)
            raise

    def _continue_in_own_session(self, head: RunHead) -> None:
        """A resumed run goes on in the session it recorded, whichever the caller named (as a replay).

        Its history comes from there and its completion is appended there; a caller naming
        another session gets a warning, and that session is left alone. A caller naming no session
        gets a warning too: the run then reads no history and its answer reaches no session. A run
        that recorded none takes the caller's.
        """
        own = head.session_id
        if own is None:
            head.session_id = self.session_id
            return
        if self.session is None:
            # The spec's "continue a known run by id" names no session: the run's history would not
            # be read and its answer never reach its conversation, with nothing to say so.
            self._warn(f"run {self.run_id!r} belongs to session {own!r}, but no session was given: it resumes "
                       f"without that session's history, and its answer is not appended there. Pass session= and "
                       f"session_id={own!r} to resume it in its conversation")
        elif self.session_id != own:
            self._warn(f"run {self.run_id!r} belongs to session {own!r}, not to session {self.session_id!r}; it "
                       f"resumes in its own session and leaves session {self.session_id!r} as it is. Use a new "
                       "run id to run it there")
        self.session_id = own

    def _warn(self, note: str) -> None:
        warnings.warn(note, RuntimeWarning, stacklevel=3)
        self.warnings.append(note)

    def _fresh_snapshot(self) -> RunSnapshot:
        now = time.time()
        # A new run's active time counts from its start, as its wall time does, not from the
        # store reads before it: it can then never exceed the wall time.
        self._active_since = time.monotonic()
        head = RunHead(
            agent=self.entry_agent.name, status="running", started_at=now, updated_at=now,
            session_id=self.session_id, first_input=_first_input(self.input_entries), owner=RunOwner.current(),
            entry_agent=self.entry_agent.name, claim=self._token, model=self._model_name(self.entry_agent),
        )
        return RunSnapshot(self.run_id, head, list(self.input_entries))

    @contextlib.asynccontextmanager
    async def _renewing_lease(self) -> AsyncIterator[None]:
        """Keep the run's lease from lapsing while it executes, through long tool calls too.

        Every snapshot renews the lease; this renews it when none came for a third of its
        length, or for ``PROGRESS_SAVE_SECONDS`` if that is sooner, so a run killed during a
        long tool call keeps its time so far (``RunHead.active_seconds``) to within that. When
        a renewal finds the run taken over (or fails for a reason other than the store being
        busy), the run is stopped, and fails with that error.
        """
        run_task = asyncio.current_task()
        if self.checkpoint is None or run_task is None:
            yield
            return
        interval = min(self.checkpoint.lease_seconds / 3, PROGRESS_SAVE_SECONDS)
        renewer = asyncio.ensure_future(self._renew(run_task, interval))
        try:
            yield
        finally:
            renewer.cancel()
            await wait_out(renewer)  # its save may be under way: the run's own last save must come after

    async def _renew(self, run_task: asyncio.Task[Any], interval: float) -> None:
        while True:
            due = self._last_save + interval - time.monotonic()
            if due > 0:  # a snapshot renewed it meanwhile
                await asyncio.sleep(due)
                continue
            if self.head is None or self.head.status != "running":  # finishing: its last save lets go
                await asyncio.sleep(interval)
                continue
            try:
                await self._save()
            except StoreError:
                continue  # busy or briefly unwritable: the next renewal may pass; a lapse shows at the next save
            except Exception as exc:
                self._renewal_error = exc
                run_task.cancel()
                return

    # -- fresh runs and resumes ------------------------------------------------------------

    async def _drive(self, *, resumed: bool, taken_from: RunHead | None = None) -> RunResult:
        """Execute the run claimed; ``taken_from`` is its head as stored before the claim took it up."""
        last_alive = taken_from.updated_at if taken_from is not None else None
        head = self.head
        assert head is not None
        if resumed:
            # Every agent the resume needs is found before anything runs: a missing one is a
            # hard error that must not come after the dangling calls were executed again.
            self.agent = self._resume_agents(head)  # found at the claim (see _check_resume_agents)
            self._continue_in_own_session(head)
            # Their process died, last known to run at ``last_alive`` (the head the claim took up, its
            # journal counted): cut off then, when known, not drawn on through the time nobody ran it.
            _mark_steps_cut_off(head.steps, range(len(head.steps)), finished_at=last_alive)
        segments: list[Segment] = []
        if self.session is not None and self.session_id is not None:
            segments = await self.session.segments(self.session_id)
        self.history = [entry for segment in segments for entry in segment.entries]
        self.run_state = dict(head.context_state)
        if self.policy is not None:
            self.conversation_state = self.policy.carried_state(segments, self.run_state)

        self._emit(RunStarted(self.run_id, self.agent.name, resumed, self.session_id, self._model(self.agent).name,
                              taken_from.status if resumed and taken_from is not None else None))
        if resumed:
            head.model = self._model(self.agent).name
            await self._save()  # the head as this execution goes on with it (its session, say)
        # A fresh run's head is the one its claim (or the save right after it) just stored.
        if self.agent.hooks:
            await self.agent.hooks.on_run_start(self._context(), self.agent)
        if resumed:
            # Calls the crash left without results run again (same turn), never completed ones;
            # then a handoff that fired but was not applied is completed.
            dangling = dangling_tool_calls(self.entries)
            if dangling:
                await self._check_dangling_servers(dangling)
                await self._run_tools(dangling, rerun=True)
            if head.pending_handoff:
                await self._apply_handoff()
        else:
            await self._check_guardrails(self.agent.input_guardrails, _input_text(self.input_entries), "input")
        if head.answered:
            # The run stopped after the model gave its answer, before finalization: the answer
            # stands and is finalized (output guardrails included, they never saw it), not asked for again.
            final_text, finish = _answer(self.entries), None
        else:
            final_text, finish = await self._loop()
        return await self._complete(final_text, finish)

    async def _loop(self) -> tuple[str, str | None]:
        head = self.head
        assert head is not None
        while True:
            if head.turn >= self.max_turns:
                raise MaxTurnsExceeded(f"reached max_turns={self.max_turns} without a final answer: the model "
                                       "called tools every turn. Raise max_turns (lovia's config file, or the "
                                       "Runner's argument), or check the agent's tools")
            message, calls, usage, finish = await self._model_turn()
            head.turn += 1
            head.usage += usage
            if message:
                self.entries.append(message)
            self.entries.extend(calls)
            head.answered = not calls  # a turn without tool calls is the answer
            await self._save()  # after the model turn
            if message:
                self._emit(MessageCompleted(message))
            if not calls:
                self._emit(TurnFinished(head.turn, self.agent.name, replace(head.usage)))
                return (message.text if message else ""), finish
            await self._run_tools(calls, rerun=False)
            if head.pending_handoff:
                await self._apply_handoff()
            self._emit(TurnFinished(head.turn, self.agent.name, replace(head.usage)))

    async def _model_turn(self) -> tuple[AssistantMessage | None, list[ToolCall], Usage, str | None]:
        """One model turn: its message (if any), its tool calls, usage and finish reason.

        The turn's last entry records an unusual finish reason, so a turn cut off by the token
        limit (``length``) stays visible in the stored transcript.
        """
        agent = self.agent
        if agent.name not in self._instructions:  # rendered once per start or resume, per agent
            self._instructions[agent.name] = await agent.render_instructions(self._context())
        specs = agent.tool_specs(await self._mcp_tools(agent))
        recall = self._recall_tool()
        if recall is not None:
            specs.append(recall.spec)
        request = ModelRequest(self._instructions[agent.name], [*self.history, *self.entries], specs, agent.name)
        model = self._model(agent)
        text: list[str] = []
        self._streaming = text  # kept by the head if the run stops before the turn ends
        step: int | None = self._model_turn_started(agent, model)
        sent_again_at = 0.0  # while ``step`` is None: when the model said it sends its request again

        def attempt_step() -> int:
            """The step of the request's attempt under way: one sent again is timed from its sending."""
            if step is not None:
                return step
            return self._model_turn_started(agent, model, started_at=min(sent_again_at, time.time()))

        first_token_at: float | None = None
        slots: dict[tuple[int, int], dict[str, Any]] = {}
        usage = Usage()
        usage_reported = False
        finish: str | None = None
        try:
            async for chunk in model.stream(request):
                step = attempt_step()  # something of the request sent again starts its attempt
                if isinstance(chunk, RetryChunk) and first_token_at is None:
                    sent_again_at, step = self._model_asks_again(step, agent, model, chunk), None
                    continue
                if first_token_at is None and isinstance(chunk, (TextChunk, ToolCallChunk)):
                    first_token_at = self._first_token(step)
                if isinstance(chunk, TextChunk):
                    if chunk.text:
                        text.append(chunk.text)
                        self._journal.streamed(text)  # returns at once: a write, when due, runs on its own
                        self._emit(TextDelta(chunk.text, agent.name))
                elif isinstance(chunk, ToolCallChunk):
                    slot = _call_slot(slots, chunk)
                    slot["call_id"] = slot["call_id"] or chunk.call_id
                    slot["name"] = slot["name"] or chunk.name or ""
                    slot["arguments"].append(chunk.arguments)
                elif isinstance(chunk, UsageChunk):
                    usage.add(chunk.usage)
                    usage_reported = True
                elif isinstance(chunk, FinishChunk):
                    finish = chunk.reason
        except Exception:
            # The endpoint's error ended the turn (or the request sent again failed too).
            self._step_finished(attempt_step(), error=True, cut_off=True)
            raise
        step = attempt_step()  # a model may say it asks again, then end its stream
        await self._model_turn_ended(step, usage if usage_reported else None)
        if usage_reported:
            usage.requests = max(usage.requests, 1)
        else:  # the endpoint reported no usage: its tokens are unknown, not zero
            usage = Usage(requests=1, unreported_requests=1)
        taken = self._call_ids() if slots else set()
        calls = []
        for _, slot in sorted(slots.items()):
            call_id = _unique_call_id(slot["call_id"], taken)
            taken.add(call_id)
            calls.append(ToolCall(call_id=call_id, name=slot["name"], arguments="".join(slot["arguments"]) or "{}",
                                  agent=agent.name))
        unusual_finish = None if finish in USUAL_FINISH_REASONS else finish
        if calls:
            calls[-1] = replace(calls[-1], finish_reason=unusual_finish)
        message = None
        # A turn cut off before it produced anything still gets a (empty) message, so the
        # transcript can say why the answer is missing.
        if text or (unusual_finish and not calls):
            message = AssistantMessage(text="".join(text), agent=agent.name,
                                       finish_reason=None if calls else unusual_finish)
        return message, calls, usage, finish

    def _call_ids(self) -> set[str]:
        """The ids of every tool call the model sees: its history's and this run's."""
        return {entry.call_id for entry in (*self.history, *self.entries) if isinstance(entry, ToolCall)}

    # -- tools and handoffs ------------------------------------------------------------------

    async def _run_tools(self, calls: Sequence[ToolCall], *, rerun: bool) -> None:
        """Execute ``calls`` concurrently; each result is appended and snapshotted as it lands."""

        async def execute(call: ToolCall) -> None:
            self._emit(ToolCallStarted(call, rerun))
            started_at = time.time()
            tool = await self._find_tool(call.name)  # starts the MCP server the call goes to, if need be
            step = self._step_started(ToolStep(call_id=call.call_id, name=call.name, started_at=started_at,
                                               server=tool.server if isinstance(tool, MCPTool) else None))
            if isinstance(tool, MCPTool):  # a crash during the call leaves its server named in the checkpoint
                await self._save()
            result = await self._tool_result(call, tool)
            self._step_finished(step, error=result.is_error)
            self.entries.append(result)
            await self._save()  # after every tool result
            self._emit(ToolResultReceived(result))
            if self.agent.hooks:
                await self.agent.hooks.on_tool_end(self._tool_context(call), call, result)

        tasks = [asyncio.ensure_future(execute(call)) for call in calls]
        try:
            await asyncio.gather(*tasks)
        except BaseException:
            for task in tasks:
                task.cancel()
            for task in tasks:
                with contextlib.suppress(BaseException):  # each ends as its call: dangling or done
                    await shielded(task)
            raise

    async def _mcp_tools(self, agent: Agent[Any]) -> list[Tool]:
        """The MCP tools offered to ``agent``; a server that cannot start is told once a run, its tools left out."""
        recall = self._recall_tool()
        tools = await agent.mcp_tools(self.mcp_servers, reserved=[recall.name] if recall is not None else [])
        for server in self._servers_of(agent):
            if server.state == "failed" and server.name not in self._told_servers:
                self._told_servers.add(server.name)
                self._warn(f"MCP server {server.name!r} is not offered to the model: {server.error}")
        return tools

    def _servers_of(self, agent: Agent[Any]) -> list[MCPServer]:
        return [*agent.mcp_servers, *self.mcp_servers]

    async def _check_dangling_servers(self, dangling: Sequence[ToolCall]) -> None:
        """Refuse to send a dangling MCP call again anywhere but to the server it went to.

        A call that may have run on one server is not sent to another that offers a tool of the
        same name (nor answered "unknown tool" when its server is off): the resume stops with a
        :class:`UserError` before any call runs again, and the run stays resumable.
        """
        assert self.head is not None
        went_to = {step.call_id: step.server for step in self.head.steps if isinstance(step, ToolStep) and step.server}
        for call in dangling:
            server = went_to.get(call.call_id)
            if server is None:
                continue
            tool = await self._find_tool(call.name)
            if not (isinstance(tool, MCPTool) and tool.server == server):
                raise UserError(f"run {self.run_id!r} has a call to {call.name} ({call.call_id}) that went to MCP "
                                f"server {server!r}, which this run does not offer now; offer that server again "
                                "(in the app: f5) and resume, or give the call's result first")

    async def _find_tool(self, name: str) -> Tool | None:
        """The agent's tool called ``name`` (its own, then its MCP servers'), or the recall tool."""
        tool = self.agent.find_tool(name)
        if tool is None and self._servers_of(self.agent) and self.agent.handoff_target(name) is None:
            tool = self.agent.find_tool(name, await self._mcp_tools(self.agent))
        return tool or self._recall_tool(named=name)

    async def _tool_result(self, call: ToolCall, tool: Tool | None) -> ToolResult:
        # Checked before any path (tool, handoff, recall, unknown): a call whose arguments do
        # not parse, typically one cut off by the token limit, is never acted on.
        try:
            call.parsed_arguments()
        except ValueError as exc:
            return ToolResult(call_id=call.call_id, name=call.name, is_error=True, output=_unparseable(call, exc))
        target = self.agent.handoff_target(call.name)
        if target is not None:
            return self._handoff_result(call, target)
        if tool is None:
            available = ", ".join(spec.name for spec in self.agent.tool_specs(await self._mcp_tools(self.agent)))
            available = available or "none"
            down = [f"{s.name!r} ({s.error})" for s in self._servers_of(self.agent) if s.state == "failed"]
            why = f"; MCP servers not running, whose tools are not offered: {', '.join(down)}" if down else ""
            return ToolResult(call_id=call.call_id, name=call.name, is_error=True,
                              output=f"unknown tool {call.name!r}; available tools: {available}{why}")
        ctx = self._tool_context(call)
        if self.agent.hooks:
            await self.agent.hooks.on_tool_start(ctx, call)
        try:
            output, is_error = await tool.invoke(ctx, call.arguments), False
        except ToolArgumentsError as exc:
            output, is_error = f"invalid arguments for {call.name}: {exc}", True
        except ToolError as exc:  # worded for the model by the tool itself
            output, is_error = str(exc), True
        except Exception as exc:  # the model sees the failure and can react to it
            output, is_error = f"{type(exc).__name__}: {exc}", True
        result = ToolResult(call_id=call.call_id, output=output, name=call.name, is_error=is_error)
        if self.policy is not None:
            result = await self.policy.process_result(result, run_id=self.run_id, run_state=self.run_state)
            self.conversation_state.setdefault("archived", {}).update(self.run_state.get("archived", {}))
            assert self.head is not None
            # Checked where the policy made it: a store would refuse it, or give back other types, later.
            self.head.context_state = clean_meta(self.run_state, what="a context policy's run state")
        return result

    def _handoff_result(self, call: ToolCall, target: Agent[Any]) -> ToolResult:
        assert self.head is not None
        if self.head.pending_handoff:
            return ToolResult(call_id=call.call_id, name=call.name, is_error=True,
                              output=f"a handoff to {self.head.pending_handoff} is already under way this turn")
        self.head.pending_handoff, self.head.handoff_call_id = target.name, call.call_id
        return ToolResult(call_id=call.call_id, name=call.name, output=f"Transferred to {target.name}.")

    async def _apply_handoff(self) -> None:
        head = self.head
        assert head is not None and head.pending_handoff
        source, target = self.agent, self._agent_named(head.pending_handoff, what="the handoff target")
        self.entries.append(Handoff(from_agent=source.name, to_agent=target.name, call_id=head.handoff_call_id))
        self.agent, head.agent, head.pending_handoff, head.handoff_call_id = target, target.name, None, None
        await self._save()
        self._emit(HandoffOccurred(source.name, target.name))
        if source.hooks:
            await source.hooks.on_handoff(self._context(), source, target)

    def _recall_tool(self, named: str | None = None) -> Tool | None:
        if self.policy is None:
            return None
        recall = self.policy.recall_tool(self.conversation_state)
        if recall is None or (named is not None and recall.name != named):
            return None
        return recall

    # -- completion, replay, failure -----------------------------------------------------------

    async def _complete(self, final_text: str, finish: str | None) -> RunResult:
        head = self.head
        assert head is not None
        await self._check_guardrails(self.agent.output_guardrails, final_text, "output")
        result = RunResult(final_output=final_text, new_entries=list(self.entries), usage=replace(head.usage),
                           last_agent=self.agent.name, run_id=self.run_id, finish_reason=finish,
                           session_id=self.session_id, warnings=list(self.warnings))
        # Once finalization starts it runs to its end: a stop in the middle must not leave the
        # checkpoint unmarked, or finalized while its session append was abandoned.
        await shielded(self._finalize(result))
        if self.agent.hooks:
            await self.agent.hooks.on_run_end(self._context(), result)
        self._report_completion(result)
        return result

    async def _finalize(self, result: RunResult) -> None:
        head = self.head
        assert head is not None
        head.status = "completed"
        await self._save()  # 1. the checkpoint is finalized
        self._completed = result
        # The segment's active time runs to the append, as its wall time does (the spec times it to
        # the append): the final save is part of the run. Left out, a run that went straight through
        # read "5.3s · ran 5.2s", as a run stopped and resumed does.
        self._count_active_time(head)
        await self._append_to_session(self.entries, head, finished_at=time.time(),  # 2. the session append
                                      session_id=self.session_id)
        if self.checkpoint is not None and self.checkpoint.delete_on_success:
            await self.checkpoint.checkpointer.delete(self.run_id)  # 3. only now may the snapshot go

    def _report_completion(self, result: RunResult) -> None:
        if not self._completion_reported:
            self._completion_reported = True
            self._emit(RunCompleted(result))

    async def _replay(self, snapshot: RunSnapshot) -> RunResult:
        """A completed run: its stored result, without the model, hooks or guardrails.

        The session append is re-applied to the run's own session (the one its head
        records), whichever session the caller named: a caller naming another one gets a
        warning, and its session is left alone.
        """
        head = snapshot.head
        if self.session is not None and self.session_id != head.session_id:
            own = f"session {head.session_id!r}" if head.session_id else "no session"
            self._warn(f"completed run {self.run_id!r} belongs to {own}, not to session {self.session_id!r}; "
                       f"its replay leaves session {self.session_id!r} as it is. Use a new run id to run it there")
        try:
            last_agent = agent_graph(self.entry_agent).get(head.agent)
        except AgentResolutionError:
            last_agent = None
        if last_agent is None:
            self._warn(f"agent {head.agent!r} of completed run {self.run_id!r} is not in the handoff graph of "
                       f"{self.entry_agent.name!r} any more; replaying it as {self.entry_agent.name!r}")
            last_agent = self.entry_agent
        # Re-applied idempotently: heals a crash between finalization and the append.
        await self._append_to_session(snapshot.entries, head, finished_at=time.time(), session_id=head.session_id)
        if self.checkpoint is not None and self.checkpoint.delete_on_success:
            await self.checkpoint.checkpointer.delete(self.run_id)
        result = RunResult(final_output=_answer(snapshot.entries), new_entries=list(snapshot.entries),
                           usage=replace(head.usage), last_agent=last_agent.name, run_id=self.run_id,
                           finish_reason=None, session_id=head.session_id, replayed=True,
                           warnings=list(self.warnings))
        self._emit(RunCompleted(result))
        return result

    async def _append_to_session(self, entries: Sequence[Entry], head: RunHead, *, finished_at: float,
                                 session_id: str | None) -> None:
        if self.session is None or session_id is None:
            return
        # "agent": who was active at the end, so a chat's next run can go on with the agent a handoff chose.
        meta: dict[str, Any] = {"timing": {"started_at": head.started_at, "finished_at": finished_at},
                                "agent": head.agent}
        if head.active_seconds:  # a head stored before lovia counted it has none to give
            meta["active_seconds"] = head.active_seconds
        if head.steps:  # beside the spec's timing: each model turn and tool call (lovia.timing)
            meta["steps"] = steps_to_meta(head.steps)
        if head.context_state:
            meta["context"] = head.context_state
        await self.session.append(session_id, list(entries), run_id=self.run_id, meta=meta)

    async def _mark(self, status: str, *, error: str | None = None) -> None:
        """Record how the run stopped; shielded, so a cancelled run still says ``interrupted``."""
        if self.checkpoint is None or self.head is None or self._completed is not None:
            return  # a finalized checkpoint stays completed: what is missing after it heals on replay
        self.head.status = status  # type: ignore[assignment]
        self.head.error = error
        self.head.cut_off_text = "".join(self._streaming) or None if self._streaming else None
        _mark_steps_cut_off(self.head.steps, self._open_steps, finished_at=time.time(),
                            stopped=status == "interrupted")
        self._open_steps.clear()
        try:
            await shielded(self._save())
        except asyncio.CancelledError:
            pass  # cancelled again while marking: the mark was still written, and we are stopping anyway
        except RunClaimedError:
            pass  # the run was taken over: it is not this execution's to mark any more
        except Exception as exc:  # the run's own error matters more; say why the mark is missing
            warnings.warn(f"could not mark run {self.run_id!r} {status}: {exc}", RuntimeWarning, stacklevel=2)

    async def _save(self) -> None:
        if self.head is None:
            return
        self._count_active_time(self.head)
        if self.head.status == "running":
            self.head.cut_off_text = None  # a resumed run went on: the turn it cut off runs again
        if self.checkpoint is None:
            return
        now = time.time()
        self.head.updated_at = now
        # A running run renews its lease with every snapshot; a stopped or finished one lets go.
        self.head.lease_until = now + self.checkpoint.lease_seconds if self.head.status == "running" else None
        self._last_save = time.monotonic()
        await self.checkpoint.checkpointer.save(RunSnapshot(self.run_id, self.head, self.entries))

    def _count_active_time(self, head: RunHead) -> None:
        """Bring ``head.active_seconds`` up to now: earlier executions' time plus this one's so far."""
        if self._active_before is None:
            self._active_before = head.active_seconds
        head.active_seconds = self._active_before + (time.monotonic() - self._active_since)

    # -- per-step timing and the partial-answer journal ---------------------------------------

    def _step_started(self, step: Step) -> int:
        """Record a model turn or tool call as it starts (the head carries it, unended); its index."""
        assert self.head is not None
        self.head.steps.append(step)
        self._open_steps.add(len(self.head.steps) - 1)
        return len(self.head.steps) - 1

    def _step_finished(self, index: int, **ended: Any) -> None:
        """The step at ``index`` ended now; ``ended`` holds what became known with it (tokens, error)."""
        assert self.head is not None
        self.head.steps[index] = replace(self.head.steps[index], finished_at=time.time(), **ended)
        self._open_steps.discard(index)

    def _model_turn_started(self, agent: Agent[Any], model: Model, *, started_at: float | None = None) -> int:
        """A model turn begins (its request sent ``started_at``, else now): the head names its model,
        records it as a step, and the journal starts pacing."""
        assert self.head is not None
        self.head.model = model.name
        self._turn_step = self._step_started(ModelStep(
            agent=agent.name, model=model.name, started_at=time.time() if started_at is None else started_at,
            turn=self.head.turn + 1))
        self._journal.turn_started()
        return self._turn_step

    def _model_asks_again(self, index: int, agent: Agent[Any], model: Model, retry: RetryChunk) -> float:
        """The model's request at step ``index`` failed and is sent again after ``retry.wait``: that
        attempt ends with its error, and returns when the next is sent. The next attempt's step
        starts when something of it comes, timed from then, so the wait counts as neither's time
        to first token (the timeline shows the gap), and a stop during the wait leaves no step open."""
        self._step_finished(index, error=True, cut_off=True, asked_again=True)
        self._emit(ModelRetrying(agent.name, model.name, first_line(retry.reason), retry.wait))
        return time.time() + max(0.0, retry.wait)

    def _first_token(self, index: int) -> float:
        """The turn's first text or tool call arrived now: its step says so (the journal writes it with the text)."""
        assert self.head is not None
        step = self.head.steps[index]
        assert isinstance(step, ModelStep)
        now = time.time()
        self.head.steps[index] = replace(step, first_token_at=now)
        return now

    async def _model_turn_ended(self, index: int, usage: Usage | None) -> None:
        """The turn's stream ended: a journal write under way lands first (the turn's snapshot, which clears
        the journal, comes after it), and the turn's step ends with the tokens reported (``None``: unknown)."""
        await self._journal.settle()
        self._streaming = None
        self._step_finished(index, input_tokens=usage.input_tokens if usage else None,
                            output_tokens=usage.output_tokens if usage else None)

    async def _journal_partial(self, text: str) -> bool:
        """Write the streaming turn's text so far to the checkpointer's journal, under this execution's claim."""
        assert self.checkpoint is not None and self.head is not None
        checkpointer = cast(JournalingCheckpointer, self.checkpoint.checkpointer)
        step = self.head.steps[self._turn_step] if self._turn_step is not None else None
        if isinstance(step, ModelStep):  # as a crashed run's head will show it: streaming until now
            step = replace(step, streamed_until=time.time())
        return await checkpointer.journal_partial(self.run_id, text, claim=self.head.claim,
                                                  step=step if isinstance(step, ModelStep) else None)

    # -- small helpers -----------------------------------------------------------------------

    def _agent_named(self, name: str, *, what: str) -> Agent[Any]:
        if self._graph is None:
            self._graph = agent_graph(self.entry_agent)
        agent = self._graph.get(name)
        if agent is None:
            known = ", ".join(sorted(self._graph))
            raise AgentResolutionError(
                f"{what} of run {self.run_id!r} is {name!r}, which is not in the handoff graph of "
                f"{self.entry_agent.name!r} (it has {known}). Was it renamed or removed? An in-flight run "
                "needs the agent it was using; restore it to resume the run."
            )
        return agent

    def _model_name(self, agent: Agent[Any]) -> str | None:
        """``agent``'s model's name for the head, stored before its first turn; ``None`` if it cannot be resolved
        (the run then fails at that turn, after its claim, with the resolution's error)."""
        try:
            return self._model(agent).name
        except Exception:
            return None

    def _model(self, agent: Agent[Any]) -> Model:
        if agent.name not in self._models:
            self._models[agent.name] = resolve_model(agent.model)
        return self._models[agent.name]

    def _context(self) -> RunContext[Any]:
        assert self.head is not None
        return RunContext(self.run_id, self.deps, self.agent.name, self.session_id, self.head.turn, self.head.usage)

    def _tool_context(self, call: ToolCall) -> ToolContext[Any]:
        assert self.head is not None
        return ToolContext(self.run_id, self.deps, self.agent.name, self.session_id, self.head.turn,
                           self.head.usage, call_id=call.call_id)

    async def _check_guardrails(self, guardrails: Sequence[Any], text: str, kind: str) -> None:
        for guardrail in guardrails:
            verdict = guardrail(self._context(), text)
            if inspect.isawaitable(verdict):
                verdict = await verdict
            if verdict:
                name = getattr(guardrail, "__name__", "guardrail")
                raise GuardrailTripped(f"{kind} guardrail {name} stopped run {self.run_id!r}: {verdict}")


def _mark_steps_cut_off(steps: list[Step], indices: Iterable[int], *, finished_at: float | None,
                        stopped: bool = False) -> None:
    """Mark the unended steps at ``indices`` cut off: by a stop (``stopped``) or error (ended now) or a
    crash (end unknown)."""
    for index in indices:
        if steps[index].finished_at is None and not steps[index].cut_off:
            steps[index] = replace(steps[index], finished_at=finished_at, cut_off=True, stopped=stopped)


def _already_exists(run_id: str, head: RunHead) -> UserError:
    return UserError(f"run {run_id!r} already exists (status {head.status}) and if_run_exists='fail'; "
                     "use a new run id, or 'resume' / 'restart'")


def _answer(entries: Sequence[Entry]) -> str:
    """A run's answer: the text of its last entry if that is the assistant's, else nothing."""
    last = entries[-1] if entries else None
    return last.text if isinstance(last, AssistantMessage) else ""


def _call_slot(slots: dict[tuple[int, int], dict[str, Any]], chunk: ToolCallChunk) -> dict[str, Any]:
    """Where ``chunk``'s fragment of a tool call goes: slots by the call's place in the turn
    (``index``), then by the calls seen at that place. A fragment naming another id than the
    call at its index is a call of its own: some servers number every call 0, or none. Without
    ids, so is one naming a tool after the call at its index has whole arguments (a server that
    repeats the name in each fragment of one call keeps it one: its arguments are not whole yet)."""
    index = chunk.index
    last = max((n for i, n in slots if i == index), default=None)
    if last is not None:
        slot = slots[index, last]
        another_id = chunk.call_id and slot["call_id"] and chunk.call_id != slot["call_id"]
        another_name = (chunk.name and not chunk.call_id and not slot["call_id"] and slot["name"]
                        and _whole_json("".join(slot["arguments"])))
        if not (another_id or another_name):
            return slot
    return slots.setdefault((index, 0 if last is None else last + 1), {"call_id": None, "name": "", "arguments": []})


def _whole_json(text: str) -> bool:
    """Whether ``text`` is a whole JSON value (a call's arguments complete)."""
    try:
        json.loads(text)
    except ValueError:
        return False
    return True


def _unique_call_id(proposed: str | None, taken: set[str]) -> str:
    """``proposed`` unless it is missing or taken, else a fresh id.

    Results are paired with their calls by id (in the transcript, on resume, for the timing
    of each call), and some servers give none, or the same one every turn ("call_1"). A call
    whose id is taken gets a fresh one; the model sees it with its result, so each pair is
    its own to the model too.
    """
    if proposed and proposed not in taken:
        return proposed
    return f"call_{new_run_id()[:16]}"


def _unparseable(call: ToolCall, exc: ValueError) -> str:
    if call.finish_reason == "length":
        return (f"the arguments of this {call.name} call were cut off at the model's output token limit, so it "
                "was not run; call it again with shorter arguments")
    problem = f"arguments are not valid JSON ({exc})" if isinstance(exc, json.JSONDecodeError) else str(exc)
    return f"invalid arguments for {call.name}: {problem}; the call was not run: send a JSON object"


def _input_entries(input: str | Sequence[Entry | str] | None) -> list[Entry]:
    if input is None:
        return []
    if isinstance(input, str):
        return [UserMessage(text=input)]
    entries: list[Entry] = []
    for item in input:
        entries.append(UserMessage(text=item) if isinstance(item, str) else item)
    return entries


def _input_text(entries: Sequence[Entry]) -> str:
    return "\n".join(e.text for e in entries if isinstance(e, UserMessage))


def _first_input(entries: Sequence[Entry]) -> str:
    return " ".join(_input_text(entries).split())[:FIRST_INPUT_CHARS]
