"""The Checkpointer protocol: progress within one run, for crash recovery and idempotency.

A checkpoint is keyed by ``run_id`` alone, globally per checkpointer. It holds the run's own
entries (append-only while the run lives) and a small mutable :class:`RunHead`.
"""

from __future__ import annotations

import dataclasses
import os
import socket
import time
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, Sequence, get_args, runtime_checkable

from lovia.entries import Entry
from lovia.usage import Usage

__all__ = [
    "CheckpointOptions",
    "Checkpointer",
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
    def current(cls) -> "RunOwner":
        """The calling process."""
        pid = os.getpid()
        return cls(host=socket.gethostname(), pid=pid, started=_process_start_ticks(pid))

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
    def from_dict(cls, data: dict[str, Any] | None) -> "RunOwner | None":
        if not data or "pid" not in data:
            return None
        return cls(host=str(data.get("host", "")), pid=int(data["pid"]), started=data.get("started"))


@dataclass(slots=True)
class RunHead:
    """The small mutable part of a checkpoint.

    Besides what resume needs (active agent, usage, turn count, status, the context
    policy's carried state, a handoff that fired but was not applied, the first start time)
    it holds what a UI needs to list the run: its session, first input, last update and
    owning process, so that a run left ``running`` by a dead process shows as crashed.
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

    def __post_init__(self) -> None:
        if self.status not in RUN_STATUSES:
            raise ValueError(f"run status must be one of {', '.join(RUN_STATUSES)}, got {self.status!r}")

    @property
    def crashed(self) -> bool:
        """``running``, but its owning process on this host no longer exists."""
        return self.status == "running" and self.owner is not None and self.owner.is_alive() is False

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        data = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        data["usage"] = self.usage.to_dict()
        data["owner"] = self.owner.to_dict() if self.owner else None
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "RunHead":
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
    """

    checkpointer: Checkpointer
    run_id: str
    if_run_exists: IfRunExists = "resume"
    delete_on_success: bool = False
    resume_from: RunSnapshot | None = None

    def __post_init__(self) -> None:
        if self.if_run_exists not in IF_RUN_EXISTS:
            raise ValueError(
                f"if_run_exists must be one of {', '.join(map(repr, IF_RUN_EXISTS))}, got {self.if_run_exists!r}"
            )
        if not self.run_id:
            raise ValueError("a checkpoint needs a non-empty run_id; generate one, e.g. uuid4().hex")
