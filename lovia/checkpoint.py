"""The Checkpointer protocol: progress within one run, for crash recovery and idempotency.

A checkpoint is keyed by ``run_id`` alone, globally per checkpointer. It holds the run's own
entries (append-only while the run lives) and a small mutable :class:`RunHead`.

A run has one writer at a time. The runner claims a run before it executes it: the head
records the owning process, a token naming this one execution, and a lease (an expiry
time) that every snapshot and a timer renew. A checkpointer that can check and take a
claim in one atomic step says so by implementing :class:`ClaimingCheckpointer`.

Whether a run is held is decided in one place, :meth:`RunHead.holder`: by this process's
registry of live executions for its own runs, by the owner's liveness for a dead owner on
the same machine, and by the lease otherwise.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import socket
import time
from collections.abc import Awaitable, Callable, Hashable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal, Protocol, get_args, runtime_checkable

from lovia.entries import Entry
from lovia.errors import RunClaimedError, UserError
from lovia.timing import ModelStep, Step, shared_step_dicts, steps_from_list
from lovia.usage import Usage

__all__ = [
    "DEFAULT_LEASE_SECONDS",
    "ChangeReportingCheckpointer",
    "CheckpointOptions",
    "Checkpointer",
    "ClaimingCheckpointer",
    "IfRunExists",
    "IfStored",
    "JournalingCheckpointer",
    "ListableCheckpointer",
    "PartialAnswer",
    "RunHead",
    "RunOwner",
    "RunSnapshot",
    "RunStatus",
    "RunSummary",
]

RunStatus = Literal["running", "interrupted", "completed", "failed"]
IfRunExists = Literal["resume", "restart", "fail", "resume_only"]
IfStored = Literal["take", "replace", "leave"]
"""What :meth:`ClaimingCheckpointer.claim` does with a run that is stored already."""
Holder = Literal["here", "elsewhere"]
RUN_STATUSES: tuple[str, ...] = get_args(RunStatus)
IF_RUN_EXISTS: tuple[str, ...] = get_args(IfRunExists)
DEFAULT_LEASE_SECONDS = 60.0
"""How long a claim on a run lasts without renewal; the runner renews it three times as often."""


def _process_start_ticks(pid: int) -> int | None:
    """The kernel's start time of ``pid`` (Linux), which tells a reused pid from the original."""
    fields = _proc_stat(pid)
    try:
        return int(fields[19]) if fields else None  # field 22 of stat(5); the split starts at field 3
    except (IndexError, ValueError):
        return None


def _has_exited(pid: int) -> bool:
    """Whether ``pid`` is a zombie (Linux): killed or exited, waiting for its parent to reap it.

    ``kill(pid, 0)`` still succeeds on a zombie, so without this a run whose owner was just
    killed would look held until its parent (or init) reaps it, which may be never.
    """
    fields = _proc_stat(pid)
    return bool(fields) and fields[0] in (b"Z", b"X")


def _proc_stat(pid: int) -> list[bytes]:
    """The fields of ``/proc/PID/stat`` from the state on (field 3 of stat(5)); empty if unreadable."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            return stat.read().rsplit(b")", 1)[1].split()
    except (OSError, IndexError):
        return []


def _boot_id() -> str | None:
    """This boot of the kernel (Linux): two machines, or two boots of one, never share it."""
    try:
        with open("/proc/sys/kernel/random/boot_id", encoding="ascii") as boot:
            return boot.read().strip() or None
    except (OSError, ValueError):
        return None


def _pid_namespace() -> int | None:
    """This process's PID namespace (Linux): containers on one kernel have different ones."""
    try:
        return os.stat("/proc/self/ns/pid").st_ino
    except OSError:
        return None


@dataclass(frozen=True, slots=True)
class RunOwner:
    """The process that is executing a run: host, pid and the pid's start time.

    ``boot_id`` and ``pid_ns`` (Linux; ``None`` where unreadable, and in heads written by an
    older lovia) say which kernel boot and which PID namespace the pid belongs to: a pid is
    only checked when all three of host, boot and namespace are this process's own, so two
    containers that share a hostname never judge each other's processes.
    """

    host: str
    pid: int
    started: int | None = None
    boot_id: str | None = None
    pid_ns: int | None = None

    @classmethod
    def current(cls) -> RunOwner:
        """The calling process."""
        global _CURRENT
        pid = os.getpid()
        if _CURRENT is None or _CURRENT.pid != pid:  # computed once, and again after a fork
            _CURRENT = cls(host=socket.gethostname(), pid=pid, started=_process_start_ticks(pid),
                           boot_id=_boot_id(), pid_ns=_pid_namespace())
        return _CURRENT

    def same_machine(self) -> bool:
        """Whether this owner's pid means a process this one can see: same host, boot and PID namespace."""
        here = RunOwner.current()
        return (self.host, self.boot_id, self.pid_ns) == (here.host, here.boot_id, here.pid_ns)

    def is_alive(self) -> bool | None:
        """Whether the owner still runs: ``None`` when it is on another machine and unknowable."""
        if not self.same_machine():
            return None
        try:
            os.kill(self.pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            pass  # exists, owned by someone else
        if _has_exited(self.pid):
            return False
        if self.started is not None:
            return _process_start_ticks(self.pid) == self.started
        return True

    def to_dict(self) -> dict[str, Any]:
        return {"host": self.host, "pid": self.pid, "started": self.started, "boot_id": self.boot_id,
                "pid_ns": self.pid_ns}

    @classmethod
    def from_dict(cls, data: dict[str, Any] | None) -> RunOwner | None:
        if not data or "pid" not in data:
            return None
        pid_ns = data.get("pid_ns")
        return cls(host=str(data.get("host", "")), pid=int(data["pid"]), started=data.get("started"),
                   boot_id=data.get("boot_id"), pid_ns=int(pid_ns) if pid_ns is not None else None)

    def __str__(self) -> str:
        return f"process {self.pid} on {self.host}"


_CURRENT: RunOwner | None = None

_LIVE_CLAIMS: dict[str, tuple[int, str]] = {}
"""The claim tokens of the executions live in this process: token -> (id of the checkpointer, run id).

For its own runs this process knows the truth, and it beats the lease: a lease is measured in
wall-clock time and can lapse under a live execution (after a suspend), a token here cannot."""


def register_live_claim(token: str, checkpointer: object, run_id: str) -> None:
    """Record execution ``token`` of ``run_id`` on ``checkpointer`` as live in this process.

    Raises :class:`~lovia.errors.RunClaimedError` when another one of that run on that
    checkpointer is live here already (so two executions in one process never both start,
    even on a checkpointer that cannot claim). Pair it with :func:`release_live_claim`.
    """
    key = (id(checkpointer), run_id)
    if key in _LIVE_CLAIMS.values():
        raise _executing_here(run_id)
    _LIVE_CLAIMS[token] = key


def is_live_here(checkpointer: object, run_id: str) -> bool:
    """Whether an execution of ``run_id`` on ``checkpointer`` is live in this process."""
    return (id(checkpointer), run_id) in _LIVE_CLAIMS.values()


def release_live_claim(token: str) -> None:
    """The execution ``token`` ended (it may have never been registered)."""
    _LIVE_CLAIMS.pop(token, None)


@contextlib.contextmanager
def live_claim(token: str, checkpointer: object, run_id: str) -> Iterator[None]:
    """:func:`register_live_claim` for the length of a block."""
    register_live_claim(token, checkpointer, run_id)
    try:
        yield
    finally:
        release_live_claim(token)


@dataclass(slots=True)
class RunHead:
    """The small mutable part of a checkpoint.

    Besides what resume needs (active agent, usage, turn count, status, the context
    policy's carried state, a handoff that fired but was not applied and the id of the call
    that fired it, whether the last model turn gave the answer, the first start time) it
    holds the run's claim (owning process, the claiming execution's token, the lease's
    expiry in epoch seconds) and what a UI needs to list the run: its session, first input
    and last update, so that a run left ``running`` by a dead owner shows as crashed.

    ``answered`` is set when a model turn asked for no tool calls: the run's answer is then
    its last assistant message (none if that turn said nothing), and a resume finalizes the
    run without calling the model again.

    ``active_seconds`` is how long the run actually executed, summed over its executions
    (each from its start or resume to its end); an execution in progress adds its time so
    far with every save, so a killed run keeps what it ran until its last save. Unlike the
    wall time from ``started_at``, it leaves out the time a run lay stopped. Heads stored
    before lovia recorded it read ``0.0``.

    ``cut_off_text`` is the text the model had streamed in the turn that was in progress
    when the run stopped (interrupted or failed), ``None`` when it stopped between turns or
    said nothing yet. It is not an entry: a resume runs that turn again, as it would without
    it, and the next save of the running run clears it. A caller that records the abandoned
    run as a partial segment can keep it, so what the user saw stream is not lost. A run
    whose process died while a model streamed (``crashed``) gets it from the checkpointer's
    partial-answer journal (:class:`JournalingCheckpointer`) when ``load`` or ``list_runs``
    returns it, so it reads as a stopped run's does.

    ``model`` is the name of the model of the run's last model turn (``None`` before its first
    turn, and in heads stored before lovia recorded it). ``steps`` is the run's per-step
    timing so far (:mod:`lovia.timing`), kept across its executions; the completed run's
    session segment carries them in ``meta["steps"]``.
    """

    agent: str
    status: RunStatus = "running"
    turn: int = 0
    usage: Usage = field(default_factory=Usage)
    context_state: dict[str, Any] = field(default_factory=dict)
    pending_handoff: str | None = None
    started_at: float = field(default_factory=time.time)
    updated_at: float = field(default_factory=time.time)
    session_id: str | None = None
    first_input: str = ""
    owner: RunOwner | None = None
    entry_agent: str | None = None
    error: str | None = None
    handoff_call_id: str | None = None
    answered: bool = False
    claim: str | None = None
    lease_until: float | None = None
    active_seconds: float = 0.0
    cut_off_text: str | None = None
    model: str | None = None
    steps: list[Step] = field(default_factory=list)

    def __post_init__(self) -> None:
        if self.status not in RUN_STATUSES:
            raise ValueError(f"run status must be one of {', '.join(RUN_STATUSES)}, got {self.status!r}")

    def holder(self, now: float | None = None) -> Holder | None:
        """Who holds the run now: ``"here"`` (this process), ``"elsewhere"``, or ``None``.

        Only a ``running`` run can be held. One owned by this process is held exactly while
        the execution its claim names is live here (whatever its lease says). One whose
        owner is on this machine and gone is held by nobody, at once. Otherwise the lease
        decides; a head without a claim (written by an older lovia, or by hand) is held only
        while its owner is known to be alive, that is, on this machine.
        """
        if self.status != "running" or self.owner is None:
            return None
        if self.owner == RunOwner.current():
            return "here" if self.claim is not None and self.claim in _LIVE_CLAIMS else None
        alive = self.owner.is_alive()
        if alive is False:
            return None
        if self.claim is None or self.lease_until is None:
            return "elsewhere" if alive else None
        return "elsewhere" if (time.time() if now is None else now) < self.lease_until else None

    def is_held(self, now: float | None = None) -> bool:
        """Whether an execution holds the run now (see :meth:`holder`)."""
        return self.holder(now) is not None

    @property
    def crashed(self) -> bool:
        """``running``, but nothing holds it: its owner is gone or its lease lapsed."""
        return self.status == "running" and not self.is_held()

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (its ``steps`` dicts are shared between calls: read it, do not change it)."""
        data = {name: getattr(self, name) for name in _HEAD_FIELDS}
        data["usage"] = self.usage.to_dict()
        data["owner"] = self.owner.to_dict() if self.owner else None
        data["steps"] = shared_step_dicts(self.steps)  # read-only dicts, kept from one save to the next
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RunHead:
        """Rebuild from :meth:`to_dict` output; fields this version does not know are ignored."""
        known = {f.name for f in dataclasses.fields(cls)}
        kwargs = {k: v for k, v in data.items() if k in known}
        kwargs["usage"] = Usage.from_dict(data.get("usage"))
        kwargs["owner"] = RunOwner.from_dict(data.get("owner"))
        active = data.get("active_seconds")
        kwargs["active_seconds"] = float(active) if isinstance(active, (int, float)) else 0.0
        kwargs["steps"] = steps_from_list(data.get("steps"))
        if not isinstance(kwargs.get("model"), (str, type(None))):
            kwargs["model"] = None
        if kwargs.get("status") not in RUN_STATUSES:
            kwargs["status"] = "interrupted"  # a status from a newer lovia: offer it for resume
        return cls(**kwargs)


_HEAD_FIELDS: tuple[str, ...] = tuple(f.name for f in dataclasses.fields(RunHead))
"""Looked up once: a head is encoded at every snapshot."""


@dataclass(slots=True)
class RunSnapshot:
    """One in-flight (or finished) run: its own entries and its head.

    ``taken_from`` is set only on a snapshot :meth:`ClaimingCheckpointer.claim` returns for a
    stored run it took: the stored head as it was before, so that a claim taken for an action
    that then fails can be given back as it found the run. It is never stored, nor compared.
    """

    run_id: str
    head: RunHead
    entries: list[Entry] = field(default_factory=list)
    taken_from: RunHead | None = field(default=None, compare=False, repr=False)


@dataclass(frozen=True, slots=True)
class RunSummary:
    """A run as a list shows it, without its entries."""

    run_id: str
    head: RunHead
    entry_count: int


@runtime_checkable
class Checkpointer(Protocol):
    """Where in-flight runs are snapshotted.

    ``save`` is incremental: the entries of ``snapshot`` past those already stored for its
    run are appended and the head replaced, in one atomic step whose cost does not grow
    with the run's length. A run's stored entries are never rewritten; a snapshot holding
    fewer entries than are stored is refused with :class:`~lovia.errors.UserError`.
    """

    async def save(self, snapshot: RunSnapshot) -> None:
        """Persist ``snapshot`` (see the class docstring)."""
        ...

    async def load(self, run_id: str) -> RunSnapshot | None:
        """The stored snapshot of ``run_id``, or ``None``."""
        ...

    async def delete(self, run_id: str) -> bool:
        """Forget ``run_id``; ``True`` if it existed."""
        ...


@runtime_checkable
class ClaimingCheckpointer(Checkpointer, Protocol):
    """A checkpointer that claims a run for one execution atomically, as the bundled ones do.

    With it, a run id issued by several processes at once executes in one of them; the
    others get :class:`~lovia.errors.RunClaimedError`. Its ``save`` also refuses (see
    :func:`check_save`) a snapshot whose ``head.claim`` is not the stored head's (when that
    has one), and, when no run is stored, one whose claim names an execution live in this
    process: an execution that lost its claim, or whose run was deleted, stops writing. Any
    other snapshot is saved as :class:`Checkpointer` says, so a loaded run can be copied into
    another checkpointer with ``save``. Without this capability the runner falls back to a
    best-effort check of the stored head.
    """

    async def claim(
        self,
        run_id: str,
        owner: RunOwner,
        *,
        token: str,
        lease_seconds: float,
        start: RunSnapshot | None = None,
        if_stored: IfStored = "take",
    ) -> RunSnapshot | None:
        """Check and take ``run_id`` for execution ``token`` of ``owner``, in one atomic step.

        What it does is :func:`plan_claim`'s decision. With ``if_stored="take"``, a stored
        run that is ``completed`` is returned as it is; one held by another execution (see
        :meth:`RunHead.holder`) raises :class:`~lovia.errors.RunClaimedError` naming its
        owner and changes nothing; any other is taken and returned with the new head. With
        ``"leave"`` a stored run is returned as it is, never taken. With ``"replace"``
        (``start`` required) a stored run not held by another execution is replaced by
        ``start``. With no stored run, ``start`` (if given) is stored, taken, and ``None``
        is returned; without ``start`` nothing is stored and ``None`` is returned. The
        caller tells a run it took from one returned as it is by ``head.claim == token``; a
        stored run it took is returned with ``taken_from`` set to its head before the claim.
        """
        ...


@runtime_checkable
class SessionExclusiveCheckpointer(ClaimingCheckpointer, Protocol):
    """A claiming checkpointer that claims a run only while no other run of its session executes.

    A chat answers one message at a time: two runs started in one session at the same moment (two
    windows, two workers) would each answer without the other's message. Looking for a running
    run first and claiming after leaves that moment open; this claim looks in the same atomic
    step, so of several runs of one session started at once exactly one executes. The spec lets
    runs of a session execute concurrently: this is for callers that ask for it
    (``CheckpointOptions(alone_in_session=True)``; the terminal UI does).
    """

    async def claim_alone(
        self,
        run_id: str,
        owner: RunOwner,
        *,
        token: str,
        lease_seconds: float,
        start: RunSnapshot | None = None,
        if_stored: IfStored = "take",
    ) -> RunSnapshot | None:
        """:meth:`~ClaimingCheckpointer.claim`, refusing a claim that would take or store the run with
        :class:`~lovia.errors.RunClaimedError`, changing nothing, while another execution holds another
        run of the same session (:meth:`RunHead.is_held`). A run of no session is claimed as ``claim`` does."""
        ...


def claims_alone(checkpointer: object) -> bool:
    """Whether the runner asks ``checkpointer`` for :meth:`~SessionExclusiveCheckpointer.claim_alone` where
    ``alone_in_session`` is asked for: it has one, and no subclass overrides ``claim`` below the class
    that defines it. Such an override (one that logs, say, or refuses some runs) would never be
    called: ``claim`` is then called, and the session looked at just before it, as for a
    checkpointer without ``claim_alone``."""
    if not isinstance(checkpointer, SessionExclusiveCheckpointer):
        return False
    mro = type(checkpointer).__mro__

    def defined_at(name: str) -> int:
        return next((depth for depth, cls in enumerate(mro) if name in vars(cls)), len(mro))

    return defined_at("claim_alone") <= defined_at("claim")


@runtime_checkable
class ListableCheckpointer(Checkpointer, Protocol):
    """A checkpointer that can list its runs, as the bundled ones do."""

    async def list_runs(
        self, *, statuses: Sequence[RunStatus] | None = None, limit: int | None = None
    ) -> list[RunSummary]:
        """Runs with one of ``statuses`` (all when ``None``), most recently updated first.

        A run whose stored head is damaged is left out (loading it raises
        :class:`~lovia.errors.DatabaseFileError`, and ``lovia doctor`` names it): one damaged
        checkpoint must not hide every other run, nor stop sessions from opening.
        """
        ...


@runtime_checkable
class ChangeReportingCheckpointer(Checkpointer, Protocol):
    """A checkpointer that can tell, cheaply, whether someone else wrote to it.

    The checkpoint side of :class:`~lovia.session.ChangeReportingSession`, with the same
    promise: the terminal UI asks both once a second to show runs of other processes as
    they progress. The bundled SQLite checkpointer implements it; the in-memory one does not,
    as only its own process can write to it.
    """

    async def outside_change_token(self) -> Hashable:
        """A token that changes when another connection or process commits to the store.

        Equal tokens from two calls on one checkpointer mean nobody else committed in
        between; different ones mean someone did. Writes through this object and reads need
        not change it. Cheap: no table is read and no write lock taken.
        """
        ...


@runtime_checkable
class JournalingCheckpointer(Checkpointer, Protocol):
    """A checkpointer that keeps the text a model is streaming, so a crash does not lose it.

    The partial-answer journal is kept apart from a run's entries and head: a resume asks the
    model for the interrupted turn again, exactly as the spec says, whatever the journal
    holds. It holds at most one text per run, the text so far of the turn in progress. A
    ``save`` of the run at a later turn or under another claim clears it (the turn's snapshot
    landed, or another execution took the run); a save within the same turn and claim keeps it
    (a lease renewal while the model streams, or the stop that puts the text in
    ``RunHead.cut_off_text``, after which nothing reads it). A claim that takes the run up, and
    ``delete``, delete it.

    ``load`` and ``list_runs`` (and a claim's ``taken_from``) return a run that is
    ``running`` but held by nobody (:attr:`RunHead.crashed`) with its journalled text in
    ``RunHead.cut_off_text``, so a crashed run reads as a stopped one does. Both bundled
    checkpointers implement it.
    """

    async def journal_partial(self, run_id: str, text: str, *, claim: str | None,
                              step: ModelStep | None = None) -> bool:
        """Record ``text`` as what the turn in progress of ``run_id`` has streamed so far.

        ``step`` is that turn's timing so far (started, first token, model; not ended), so a
        crashed run's head shows the turn it died in among its ``steps`` too.

        Written only while the stored run's claim is ``claim`` (an execution that lost its
        claim, or whose run was deleted, must not write); returns whether it was written. It
        replaces the previous text of the run, and is a small write of its own: the runner
        calls it a few times a second at most, never per token, and never waits for it while
        the model streams.
        """
        ...


@dataclass(frozen=True, slots=True)
class PartialAnswer:
    """What a :class:`JournalingCheckpointer` holds for a run: the streaming turn's text so far and its step."""

    text: str
    step: ModelStep | None = None


def with_partial(head: RunHead, partial: PartialAnswer | None) -> RunHead:
    """``head`` with the journalled text as its ``cut_off_text`` (and the turn's step) when the run crashed.

    What both bundled :class:`JournalingCheckpointer` stores do to a head they return: only a
    ``running`` head that nothing holds (:attr:`RunHead.crashed`) takes it; a live run's
    journal is its own business, and a stopped one carries its text already. The turn's
    step, never ended, joins ``steps`` (in place of the same step a lease renewal stored),
    and its model becomes ``model`` (:func:`with_partial_step`). The journal's last write is
    the last moment the run is known to have executed: its ``updated_at`` is then, and the
    time since its last save counts in ``active_seconds`` (a run killed in its first seconds
    of streaming had none, and a finalize then timed it until the user got to it).
    """
    if partial is None or not partial.text or head.cut_off_text is not None or not head.crashed:
        return head
    head.cut_off_text = partial.text
    last_alive = partial.step.streamed_until if partial.step is not None else None
    if last_alive is not None and last_alive > head.updated_at:
        head.active_seconds += last_alive - head.updated_at
        head.updated_at = last_alive
    return with_partial_step(head, partial)


def taken_up(stored: RunHead, before: RunHead, partial: PartialAnswer | None) -> RunHead:
    """What a claim that takes up a stopped or crashed run stores, and ``before`` as a finalize reads it.

    ``stored`` is the head as :func:`plan_claim` made it, ``before`` the head as it was, to
    which :func:`with_partial` gives the journal; the stored head gets the journalled turn
    (:func:`with_partial_step`) and the time the run executed until the journal's last write,
    so a resume counts it too.
    """
    with_partial(before, partial)
    stored.active_seconds = max(stored.active_seconds, before.active_seconds)
    return with_partial_step(stored, partial)


def with_partial_step(head: RunHead, partial: PartialAnswer | None) -> RunHead:
    """``head`` with the journalled turn's step among its ``steps``, its model as ``model``.

    What a claim that takes up a stopped or crashed run does to the head it stores, so the
    resumed run's timeline keeps the turn it was cut off in. A step the head has already is
    kept as it is, unless it is the same turn still unended (a lease renewal stored it as it
    began; the journal's is newer).
    """
    step = partial.step if partial is not None else None
    if step is None:
        return head
    for index, known in enumerate(head.steps):
        if (known.kind, known.started_at) == (step.kind, step.started_at):
            if known.finished_at is None and not known.cut_off:
                head.steps[index] = step
            return head
    head.steps.append(step)
    head.model = step.model or head.model
    return head


@dataclass(frozen=True, slots=True)
class CheckpointOptions:
    """How a run uses a checkpointer.

    ``if_run_exists`` decides what an existing ``run_id`` means: ``"resume"`` continues it
    (replaying a completed one) or starts fresh; ``"restart"`` discards it; ``"fail"``
    raises :class:`~lovia.errors.UserError`; ``"resume_only"`` continues it and raises when
    there is none. ``delete_on_success`` drops the snapshot once the run is in the session.
    ``resume_from`` rehydrates a snapshot obtained elsewhere instead of loading one.
    ``lease_seconds`` is how long the run's claim outlives its last renewal: another
    process may take the run over once a lease that long lapsed unrenewed (at once if the
    owner is on this host and gone). ``alone_in_session`` refuses to execute the run beside
    another run of its session (see the field); ``once_claimed`` is what to do to the session
    once the run holds it, before the run reads its history (see the field).
    """

    checkpointer: Checkpointer
    run_id: str
    if_run_exists: IfRunExists = "resume"
    delete_on_success: bool = False
    resume_from: RunSnapshot | None = None
    lease_seconds: float = DEFAULT_LEASE_SECONDS
    alone_in_session: bool = False
    """Start (or resume) the run only while no other run of its session executes: of runs of one
    session started at once, one executes and the others raise :class:`~lovia.errors.RunClaimedError`
    before anything of them is stored. Checked in the claim's atomic step by a
    :class:`SessionExclusiveCheckpointer` (the bundled ones); a listable checkpointer without it, or
    whose subclass overrides ``claim`` and not ``claim_alone`` (see :func:`claims_alone`: that
    ``claim`` is called), is asked for the session's running runs just before the claim (two starts
    at the same moment may then both run); any other is not asked. A stored run of no session, resumed into the
    caller's session, is checked only that way: its claim does not know the session yet."""
    once_claimed: Callable[[], Awaitable[None]] | None = None
    """Awaited once the run is claimed and before its session's history is read, so what it changes
    in the session is what the run continues from: a rewind before a resend, say. With
    ``alone_in_session`` and a checkpointer that checks it in its claim, no other run of the session
    starts meanwhile, so none sees the change half made or lands between it and this run. Not
    awaited for a run that is replayed (completed already). If it raises (or is cancelled), the run
    ends before anything of it ran: a run the claim stored fresh is deleted, a stored run the claim
    took up is marked ``interrupted``; an error is reported (``RunFailed``) and raised, a
    cancellation is raised (a stream ends as stopped), and neither is recorded on the run."""

    def __post_init__(self) -> None:
        if not self.lease_seconds > 0:
            raise ValueError(f"lease_seconds must be more than 0, got {self.lease_seconds!r}")
        if self.if_run_exists not in IF_RUN_EXISTS:
            raise ValueError(
                f"if_run_exists must be one of {', '.join(map(repr, IF_RUN_EXISTS))}, got {self.if_run_exists!r}"
            )
        if not self.run_id:
            raise ValueError("a checkpoint needs a non-empty run_id; generate one, e.g. uuid4().hex")


ClaimStep = Literal["none", "store_start", "update", "leave"]
"""What a claim does to the store: nothing; store ``start`` (in place of any stored run);
write the stored run's new head; or leave the stored run as it is."""


def released_as_found(snapshot: RunSnapshot, token: str) -> RunHead:
    """The head of a run claimed under ``token`` as the claim found it, released: what to store to give
    the run back unchanged when nothing of it ran (a dangling call completed, a resume refused).

    It keeps the claim's token (the stored head carries it, and a save under another is
    refused) with no lease. A checkpointer that does not report the head it took
    (``taken_from``) leaves the run ``interrupted``; one without claims (the head was only
    loaded) leaves it as loaded.
    """
    if snapshot.head.claim != token:
        return replace(snapshot.head, lease_until=None)
    if snapshot.taken_from is None:
        return replace(snapshot.head, status="interrupted", lease_until=None)
    return replace(snapshot.taken_from, claim=token, lease_until=None)


def plan_claim(
    run_id: str,
    stored: RunHead | None,
    start: RunSnapshot | None,
    owner: RunOwner,
    token: str,
    lease_seconds: float,
    now: float,
    if_stored: IfStored = "take",
) -> ClaimStep:
    """Decide a claim of ``run_id``; what both bundled stores' ``claim`` do, inside their transaction.

    ``stored`` is the stored head (``None`` when there is no run). The head to be written,
    ``stored`` for ``"update"`` and ``start.head`` for ``"store_start"``, is taken in place:
    ``running`` under ``owner``, ``token`` and a lease of ``lease_seconds`` from ``now``, its
    last error cleared. Raises :class:`~lovia.errors.RunClaimedError` (changing nothing)
    when another execution holds the stored run and the claim would take or replace it.
    """
    if stored is None:
        if start is None:
            return "none"
        _take(start.head, owner, token, lease_seconds, now)
        return "store_start"
    if if_stored == "leave" or (if_stored == "take" and stored.status == "completed"):
        return "leave"
    if stored.claim != token and stored.is_held(now):
        raise claim_refused(run_id, stored)
    if if_stored == "replace":
        if start is None:
            raise ValueError("a claim that replaces the stored run needs the run to store in its place (start)")
        _take(start.head, owner, token, lease_seconds, now)
        return "store_start"
    _take(stored, owner, token, lease_seconds, now)
    return "update"


def _take(head: RunHead, owner: RunOwner, token: str, lease_seconds: float, now: float) -> None:
    head.status, head.owner, head.claim, head.error = "running", owner, token, None
    head.lease_until = now + lease_seconds
    head.updated_at = now


def check_save(
    run_id: str,
    claim: str | None,
    total: int,
    stored: tuple[int, str | None] | None,
    stored_head: Callable[[], RunHead],
) -> int:
    """Check a save of ``total`` entries under ``claim``; return how many entries are stored already.

    ``stored`` is the stored run's entry count and claim (``None`` when there is no run);
    ``stored_head`` reads the stored head, for the error. What both bundled stores' ``save``
    check, inside their transaction. A save under a claim needs a stored run carrying that
    claim (or none). With no run stored, a snapshot is stored as the spec says, whatever claim
    its head carries (a copy or backup of a run, say), except when that claim names an
    execution live in this process: that execution's run was stored by its claim, so it was
    deleted since (discarded, restarted, its session deleted) and the execution must stop,
    not store it again. An execution is live from its claim until after its final mark, and
    it saves in its own process, so a stale one is refused wherever it runs. Raises
    :class:`~lovia.errors.RunClaimedError` for those, :class:`~lovia.errors.UserError` for
    fewer entries than stored.
    """
    if stored is None:
        if claim is not None and claim in _LIVE_CLAIMS:
            raise RunClaimedError(
                f"run {run_id!r} is not stored any more (it was discarded, restarted or its session deleted "
                "while this execution ran), so this execution may not write to it; nothing of this snapshot "
                "was saved. Start it again if it is still wanted (to copy a run into another checkpointer, "
                "wait until its execution in this process has stopped)."
            )
        return 0
    have, stored_claim = stored
    if stored_claim is not None and stored_claim != claim:
        raise claim_lost(run_id, stored_head())
    if total < have:
        raise UserError(
            f"checkpoint of run {run_id!r} holds {have} entries but the snapshot has {total}: a run's "
            "checkpointed entries are append-only. Delete the run (or restart it) to start over."
        )
    return have


def _executing_here(run_id: str) -> RunClaimedError:
    return RunClaimedError(f"run {run_id!r} is already executing in this process; wait for it or stop it")


def claim_refused(run_id: str, head: RunHead) -> RunClaimedError:
    """The error for a run that another execution holds (``head`` is the stored one)."""
    if head.owner == RunOwner.current():
        return _executing_here(run_id)
    lease = f" under a lease until {_clock(head.lease_until)}" if head.lease_until else ""
    return RunClaimedError(
        f"run {run_id!r} is being executed by {head.owner}{lease}; wait for it to finish, or stop it there. "
        "If that process is gone, the run can be taken over once its lease lapses."
    )


def claimed_session(step: ClaimStep, stored: RunHead | None, start: RunSnapshot | None) -> str | None:
    """The session of the run a claim whose plan is ``step`` takes or stores (``None``: it takes none)."""
    if step == "store_start":
        return start.head.session_id if start is not None else None
    return stored.session_id if step == "update" and stored is not None else None


def check_alone_in_session(session_id: str, run_id: str, others: Iterable[tuple[str, RunHead]], now: float) -> None:
    """Refuse claiming ``run_id`` while one of ``others`` (stored runs of ``session_id``) is held.

    What :meth:`SessionExclusiveCheckpointer.claim_alone` checks in the bundled stores, inside
    the claim's transaction, before anything is written.
    """
    for other_id, head in others:
        holder = head.holder(now)
        if other_id != run_id and holder is not None:
            where = "in this process" if holder == "here" else f"by {head.owner}"
            raise RunClaimedError(
                f"run {other_id!r} of session {session_id!r} is being executed {where}, so run {run_id!r} was "
                "not started there (it would answer without what that run is doing): wait for it to finish, "
                "or stop it, then start again."
            )


def claim_lost(run_id: str, stored: RunHead) -> RunClaimedError:
    """The error for a save by an execution whose claim was taken over (``stored`` is the new head)."""
    by = f" by {stored.owner}" if stored.owner else ""
    return RunClaimedError(
        f"run {run_id!r} was taken over{by}, so this execution may not write to it any more (its lease "
        "lapsed, or the run was claimed again); nothing of this snapshot was saved. The run goes on there."
    )


def _clock(epoch: float | None) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(epoch)) if epoch else "?"
