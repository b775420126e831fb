"""The Session protocol: conversation that outlives a run.

A session is an append-only list of :class:`Segment` objects, one per completed run, keyed
by a ``session_id`` the caller chooses. The runner loads it as history at run start and
appends the run's own entries as one segment when the run completes.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol, Sequence, runtime_checkable

from lovia.entries import Entry

__all__ = ["RewindableSession", "Segment", "Session", "SessionInfo", "TrimResult"]


@dataclass(frozen=True, slots=True)
class Segment:
    """One completed run stored in a session: its run id, its own entries and opaque meta.

    ``meta["timing"]``, when the runner wrote it, is ``{"started_at", "finished_at"}`` in
    epoch seconds. Segments written before lovia recorded timing, or truncated by a rewind,
    have none.
    """

    run_id: str
    entries: tuple[Entry, ...]
    meta: dict[str, Any] = field(default_factory=dict)

    @property
    def started_at(self) -> float | None:
        """When the run first started, if timing was recorded."""
        return _timing(self.meta, "started_at")

    @property
    def finished_at(self) -> float | None:
        """When the run was appended to the session, if timing was recorded."""
        return _timing(self.meta, "finished_at")

    @property
    def duration(self) -> float | None:
        """Seconds from the run's first start to its append, if timing was recorded."""
        start, end = self.started_at, self.finished_at
        return None if start is None or end is None else max(0.0, end - start)


def _timing(meta: dict[str, Any], key: str) -> float | None:
    timing = meta.get("timing")
    if isinstance(timing, dict) and isinstance(timing.get(key), (int, float)):
        return float(timing[key])
    return None


@dataclass(frozen=True, slots=True)
class TrimResult:
    """What ``trim_tool_results`` cut (or, with ``dry_run=True``, would cut)."""

    results_trimmed: int = 0
    chars_removed: int = 0


@dataclass(frozen=True, slots=True)
class SessionInfo:
    """A session as a list shows it.

    ``title`` is the name given by ``rename_session``, else the first user message's text.
    ``total_run_seconds`` sums the durations of segments that carry timing.
    """

    session_id: str
    title: str
    entry_count: int
    run_count: int
    created_at: float | None
    last_activity: float | None
    total_run_seconds: float


@runtime_checkable
class Session(Protocol):
    """Where the conversation of completed runs is kept.

    Two promises do the heavy lifting. Append-only: there is no replace, a stored run is
    immutable. Idempotent by run id: appending under a run id already stored in that
    session is a no-op, so a replayed run never duplicates its entries.
    """

    async def segments(self, session_id: str) -> list[Segment]:
        """The session's segments in the order they were appended (empty if unknown)."""
        ...

    async def load(self, session_id: str) -> list[Entry]:
        """All entries of the session: the flat concatenation of its segments."""
        ...

    async def append(
        self,
        session_id: str,
        entries: Sequence[Entry],
        *,
        run_id: str | None = None,
        meta: dict[str, Any] | None = None,
    ) -> str:
        """Store ``entries`` as one segment and return its run id.

        Without ``run_id`` a fresh one is made. With a run id already stored in this
        session nothing is written and that run id is returned.
        """
        ...

    async def clear(self, session_id: str) -> None:
        """Forget the session entirely."""
        ...


@runtime_checkable
class RewindableSession(Session, Protocol):
    """A session that can drop its transcript's tail: edit-and-resend and regenerate."""

    async def rewind(self, session_id: str, *, keep_entries: int) -> int:
        """Keep the first ``keep_entries`` entries of ``load()``; return how many went."""
        ...
