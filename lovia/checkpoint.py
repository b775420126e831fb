"""The Checkpointer protocol: progress within one run, for crash recovery and idempotency.

A checkpoint is keyed by ``run_id`` alone, globally per checkpointer. It holds the run's own
entries (append-only while the run lives) and a small mutable :class:`RunHead`.

A run has one writer at a time. The runner claims a run before it executes it: the head
records the owning process, a token naming this one execution, and a lease (an expiry
time) that every snapshot and a timer renew. A checkpointer that can check and take a
claim in one atomic step says so by implementing :class:`ClaimingCheckpointer`.
"""

from __future__ import annotations

import dataclasses
import os
import socket
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, get_args, runtime_checkable

from lovia.entries import Entry
from lovia.errors import RunClaimedError
from lovia.usage import Usage

__all__ = [
    "DEFAULT_LEASE_SECONDS",
    "CheckpointOptions",
    "Checkpointer",
    "ClaimingCheckpointer",
    "IfRunExists",
    "ListableCheckpointer",
    "RunHead",
    "RunOwner",
    "RunSnapshot",
    "RunStatus",
    "RunSummary",
]

RunStatus = Literal["running", "interrupted", "completed", "failed"]
IfRunExists = Literal["resume", "restart", "fail", "resume_only"]
RUN_STATUSES: tuple[str, ...] = get_args(RunStatus)
IF_RUN_EXISTS: tuple[str, ...] = get_args(IfRunExists)
DEFAULT_LEASE_SECONDS = 60.0
"""How long a claim on a run lasts without renewal; the runner renews it three times as often."""


def _process_start_ticks(pid: int) -> int | None:
    """The kernel's start time of ``pid`` (Linux), which tells a reused pid from the original."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            fields = stat.read().rsplit(b")", 1)[1].split()
        return int(fields[19])  # field 22 of stat(5); the split starts at field 3
    except (OSError, IndexError, ValueError):
        return None


@dataclass(frozen=True, slots=True)
class RunOwner:
    """The process that is executing a run: host, pid and the pid's start time."""

    host: str
    pid: int
    started: int | None = None

    @classmethod
    def current(cls) -> RunOwner:
        """The calling process."""
        global _CURRENT
        pid = os.getpid()
        if _CURRENT is None or _CURRENT.pid != pid:  # computed once, and again after a fork
            _CURRENT = cls(host=socket.gethostname(), pid=pid, started=_process_start_ticks(pid))
        return _CURRENT

    def is_alive(self) -> bool | None:
        """Whether the owner still runs: ``None`` when it is on another host and unknowable."""
        if self.host != socket.gethostname():
            return None
        try:
            os.kill(self.pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            pass  # exists, owned by someone else
        if self.started is not None:
            return _process_start_ticks(self.pid) == self.started
        return True

    def to_dict(self) -> dict[str, Any]:
        return {"host": self.host, "pid": self.pid, "started": self.started}

    @classmethod
    def from_dict(cls, data: dict[str, Any] | None) -> RunOwner | None:
        if not data or "pid" not in data:
            return None
        return cls(host=str(data.get("host", "")), pid=int(data["pid"]), started=data.get("started"))

    def __str__(self) -> str:
        return f"process {self.pid} on {self.host}"


_CURRENT: RunOwner | None = None


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

    def __post_init__(self) -> None:
        if self.status not in RUN_STATUSES:
            raise ValueError(f"run status must be one of {', '.join(RUN_STATUSES)}, got {self.status!r}")

    def is_held(self, now: float | None = None) -> bool:
        """Whether an execution holds the run now: ``running``, owner not known dead, lease not lapsed.

        An owner on this host is checked directly, so a killed one lets go at once; one on
        another host holds the run until its lease lapses. A head without a claim (written
        by an older lovia, or by hand) is held only while its owner is known to be alive,
        that is, on this host.
        """
        if self.status != "running" or self.owner is None:
            return False
        alive = self.owner.is_alive()
        if alive is False:
            return False
        if self.claim is None or self.lease_until is None:
            return alive is True
        return (time.time() if now is None else now) < self.lease_until

    @property
    def crashed(self) -> bool:
        """``running``, but nothing holds it: its owner is gone or its lease lapsed."""
        return self.status == "running" and not self.is_held()

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        data = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        data["usage"] = self.usage.to_dict()
        data["owner"] = self.owner.to_dict() if self.owner else None
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RunHead:
        """Rebuild from :meth:`to_dict` output; fields this version does not know are ignored."""
        known = {f.name for f in dataclasses.fields(cls)}
        kwargs = {k: v for k, v in data.items() if k in known}
        kwargs["usage"] = Usage.from_dict(data.get("usage"))
        kwargs["owner"] = RunOwner.from_dict(data.get("owner"))
        if kwargs.get("status") not in RUN_STATUSES:
            kwargs["status"] = "interrupted"  # a status from a newer lovia: offer it for resume
        return cls(**kwargs)


@dataclass(slots=True)
class RunSnapshot:
    """One in-flight (or finished) run: its own entries and its head."""

    run_id: str
    head: RunHead
    entries: list[Entry] = field(default_factory=list)


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
    others get :class:`~lovia.errors.RunClaimedError`. Its ``save`` also refuses a snapshot
    whose ``head.claim`` is not the stored head's (when that has one): an execution that lost
    its claim stops writing. Without this capability the runner falls back to a
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
    ) -> RunSnapshot | None:
        """Check and take ``run_id`` for execution ``token`` of ``owner``, in one atomic step.

        A stored run that is ``completed`` is returned as it is. One held by another
        execution (see :meth:`RunHead.is_held`) raises :class:`~lovia.errors.RunClaimedError`
        naming its owner and changes nothing. Any other stored run is taken, see
        :func:`take_claim`, and returned with the new head. With no stored run, ``start``
        (if given) is stored, taken the same way, and ``None`` is returned; without
        ``start`` nothing is stored and ``None`` is returned.
        """
        ...


@runtime_checkable
class ListableCheckpointer(Checkpointer, Protocol):
    """A checkpointer that can list its runs, as the bundled ones do."""

    async def list_runs(
        self, *, statuses: Sequence[RunStatus] | None = None, limit: int | None = None
    ) -> list[RunSummary]:
        """Runs with one of ``statuses`` (all when ``None``), most recently updated first."""
        ...


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
    owner is on this host and gone).
    """

    checkpointer: Checkpointer
    run_id: str
    if_run_exists: IfRunExists = "resume"
    delete_on_success: bool = False
    resume_from: RunSnapshot | None = None
    lease_seconds: float = DEFAULT_LEASE_SECONDS

    def __post_init__(self) -> None:
        if not self.lease_seconds > 0:
            raise ValueError(f"lease_seconds must be more than 0, got {self.lease_seconds!r}")
        if self.if_run_exists not in IF_RUN_EXISTS:
            raise ValueError(
                f"if_run_exists must be one of {', '.join(map(repr, IF_RUN_EXISTS))}, got {self.if_run_exists!r}"
            )
        if not self.run_id:
            raise ValueError("a checkpoint needs a non-empty run_id; generate one, e.g. uuid4().hex")


def take_claim(run_id: str, head: RunHead, owner: RunOwner, token: str, lease_seconds: float, now: float) -> bool:
    """Take ``head`` for execution ``token`` of ``owner``; what both bundled stores' ``claim`` do.

    Returns ``False`` and changes nothing for a completed run. Raises
    :class:`~lovia.errors.RunClaimedError` if another execution holds it. Otherwise the head
    becomes ``running`` under the new owner, token and lease, its last error is cleared,
    and ``True`` is returned.
    """
    if head.status == "completed":
        return False
    # A head without a claim names no execution; if it names this very process, none of
    # this lovia's executions can be running it, so it is taken rather than refused.
    unclaimed_here = head.claim is None and head.owner == owner
    if head.claim != token and not unclaimed_here and head.is_held(now):
        raise claim_refused(run_id, head)
    head.status, head.owner, head.claim, head.error = "running", owner, token, None
    head.lease_until = now + lease_seconds
    head.updated_at = now
    return True


def claim_refused(run_id: str, head: RunHead) -> RunClaimedError:
    """The error for a run that another execution holds (``head`` is the stored one)."""
    if head.owner == RunOwner.current():
        return RunClaimedError(f"run {run_id!r} is already executing in this process; wait for it or stop it")
    lease = f" under a lease until {_clock(head.lease_until)}" if head.lease_until else ""
    return RunClaimedError(
        f"run {run_id!r} is being executed by {head.owner}{lease}; wait for it to finish or stop it there, "
        "then resume. If that process is gone, the run can be taken over once its lease lapses."
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
