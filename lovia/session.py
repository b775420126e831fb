"""The Session protocol: conversation that outlives a run.

A session is an append-only list of :class:`Segment` objects, one per completed run, keyed
by a ``session_id`` the caller chooses. The runner loads it as history at run start and
appends the run's own entries as one segment when the run completes.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from lovia.entries import Entry

__all__ = [
    "FORK_META_KEY",
    "ChangeReportingSession",
    "ChangeTrackingSession",
    "ClosableStore",
    "DescribableSession",
    "EntryPage",
    "ForkOrigin",
    "ForkableSession",
    "ListableSession",
    "PagedSession",
    "RenamableSession",
    "RewindUndo",
    "RewindableSession",
    "RunSpan",
    "SearchHit",
    "SearchableSession",
    "Segment",
    "Session",
    "SessionChanges",
    "SessionInfo",
    "TrashedSession",
    "TrashingSession",
    "TrimPreview",
    "TrimPreviewingSession",
    "TrimmableSession",
    "UndoableRewindSession",
]


@dataclass(frozen=True, slots=True)
class Segment:
    """One completed run stored in a session: its run id, its own entries and opaque meta.

    ``meta["timing"]``, when the runner wrote it, is ``{"started_at", "finished_at"}`` in
    epoch seconds. Segments written before lovia recorded timing, or truncated by a rewind,
    have none; a crashed run the terminal UI finalized before it saved again after its start
    has ``started_at`` alone (when it died is not known). ``meta["agent"]`` names the agent
    active when the run ended (after any handoff), so the next run of a chat can go on with
    it. A run that did not complete and was recorded anyway (the terminal UI does it when the
    user sends the next message) has
    ``meta["partial"]`` True and ``meta["ended"]``: ``stopped`` (it was stopped), ``crashed`` or
    ``failed`` (``interrupted`` in segments older lovia recorded for a stopped run).
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

    @property
    def run_seconds(self) -> float | None:
        """How long the run executed: ``meta["active_seconds"]`` when the runner recorded it, else its duration.

        Unlike the duration, the active time leaves out the time a stopped run lay waiting
        for its resume; segments stored before lovia counted it fall back to the duration.
        """
        active = self.meta.get("active_seconds")
        return float(active) if isinstance(active, (int, float)) and not isinstance(active, bool) else self.duration


def _timing(meta: dict[str, Any], key: str) -> float | None:
    timing = meta.get("timing")
    value = timing.get(key) if isinstance(timing, dict) else None
    if isinstance(value, (int, float)) and not isinstance(value, bool):  # JSON's true is no time
        return float(value)
    return None


@dataclass(frozen=True, slots=True)
class TrimPreview:
    """What ``trim_tool_results`` with the same arguments would cut, measured without cutting.

    ``results`` is the number it would return; ``chars`` how many characters shorter the
    stored tool outputs would get (what the trim reclaims, net of the markers it adds).
    """

    results: int = 0
    chars: int = 0


@dataclass(frozen=True, slots=True)
class SessionInfo:
    """A session as a list shows it.

    ``title`` is the name given by ``rename_session``, else the first user message's text.
    ``total_run_seconds`` sums how long its runs executed (:attr:`Segment.run_seconds`).
    """

    session_id: str
    title: str
    entry_count: int
    run_count: int
    created_at: float | None
    last_activity: float | None
    total_run_seconds: float


@dataclass(frozen=True, slots=True)
class RunSpan:
    """Where one stored run lies in its session's transcript: entries ``start`` to ``start + count``."""

    run_id: str
    start: int
    count: int
    meta: dict[str, Any] = field(default_factory=dict)

    @property
    def end(self) -> int:
        """The position just past the run's last entry."""
        return self.start + self.count


@dataclass(frozen=True, slots=True)
class EntryPage:
    """A slice of a session's transcript, read without the rest of it.

    ``entries`` are the session's entries from position ``start`` on (positions count from 0
    over the whole transcript, as ``rewind`` counts them); ``runs`` are the stored runs that
    have an entry on the page, in order, whole (the first may begin before ``start``, the
    last end after the page); ``total`` is how many entries the session held when it was read.
    """

    start: int
    entries: tuple[Entry, ...]
    runs: tuple[RunSpan, ...]
    total: int

    @property
    def end(self) -> int:
        """The position just past the page's last entry."""
        return self.start + len(self.entries)


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


# -- optional capabilities ----------------------------------------------------------------
#
# The spec's Session is the four methods above and nothing more. What a store may offer
# besides is one small protocol per capability, so that a caller asks ``isinstance`` for
# exactly what it is about to call and degrades when it is absent. Each extends Session:
# it describes a session store that can do one thing more.


@runtime_checkable
class RewindableSession(Session, Protocol):
    """A session that can drop its transcript's tail: edit-and-resend and regenerate."""

    async def rewind(self, session_id: str, *, keep_entries: int) -> int:
        """Keep the first ``keep_entries`` entries of ``load()``; return how many went.

        Whole later runs are deleted; a run the cut lands inside is truncated, kept
        tool-consistent and loses its meta. ``keep_entries=0`` empties the session; a count
        at or past the end is a no-op. A bad count is a ``UserError``.

        The session knows nothing of checkpoints, so a rewound run's live checkpoint stays,
        and re-issuing that run id would replay the undone tail: call
        :func:`lovia.rewind_with_checkpoints`, which deletes them, rather than this directly.
        """
        ...


FORK_META_KEY = "forked_from"
"""The segment meta key under which a fork records where it came from (see :class:`ForkOrigin`)."""


@dataclass(frozen=True, slots=True)
class ForkOrigin:
    """Where a forked session came from: the first ``entries`` entries of ``session_id``, copied at ``forked_at``.

    ``title`` is the source's title at that moment (it may be renamed or deleted since). A fork
    records it in the meta of its first run that has entries, under :data:`FORK_META_KEY`;
    :meth:`from_meta` reads it back from that run's meta (``None`` when there is none, or it is
    not one this version reads). A rewind that cuts inside that run drops its meta, and the
    record with it, as it drops the run's timing.
    """

    session_id: str
    entries: int
    forked_at: float
    title: str = ""

    def to_meta(self) -> dict[str, Any]:
        """The JSON stored under :data:`FORK_META_KEY`."""
        return {"session_id": self.session_id, "entries": self.entries, "at": self.forked_at, "title": self.title}

    @classmethod
    def from_meta(cls, meta: dict[str, Any] | None) -> ForkOrigin | None:
        """The origin a segment's ``meta`` records, or ``None``."""
        data = meta.get(FORK_META_KEY) if meta else None
        if not isinstance(data, dict):
            return None
        session_id, entries, at = data.get("session_id"), data.get("entries"), data.get("at")
        if (not isinstance(session_id, str) or not isinstance(entries, int) or isinstance(entries, bool)
                or not isinstance(at, (int, float)) or isinstance(at, bool)):
            return None
        title = data.get("title")
        return cls(session_id, entries, float(at), title if isinstance(title, str) else "")


@runtime_checkable
class ForkableSession(Session, Protocol):
    """A session store that can copy the start of a session into a new one: the non-destructive sibling of rewind."""

    async def fork(self, session_id: str, *, keep_entries: int, new_session_id: str) -> int:
        """Copy the first ``keep_entries`` entries of ``session_id`` into ``new_session_id``; return how many it holds.

        The cut is the one ``rewind(keep_entries=...)`` makes: whole runs are copied with their
        meta (timing, steps, agent); a run the cut lands inside is copied truncated, made
        tool-consistent, and without its meta (so the copy may hold fewer entries than asked).
        A count past the end copies the whole session. Every copied run gets a new run id, so
        the original's checkpoints (keyed by run id) stay the original's alone: rewinding or
        deleting the fork never touches them. The source's own title, if it was given one, is
        copied; the fork's first run with entries records a :class:`ForkOrigin` in its meta.
        All of it is written at once, or nothing.

        A ``UserError`` when the source has no entries to copy (unknown, empty, or
        ``keep_entries`` 0 or negative), or when ``new_session_id`` already holds a session.
        """
        ...


@runtime_checkable
class TrimmableSession(Session, Protocol):
    """A session that can reclaim the space of old tool outputs."""

    async def trim_tool_results(self, session_id: str, *, keep_chars: int = 400, keep_runs: int = 1) -> int:
        """Cut tool outputs older than the last ``keep_runs`` runs to ``keep_chars``.

        Structure, order and call-id pairing are kept; trimming again with the same
        arguments changes nothing. Returns how many tool results were cut.
        """
        ...


@runtime_checkable
class TrimPreviewingSession(Session, Protocol):
    """A session that can tell, without changing anything, what a trim would reclaim."""

    async def preview_trim_tool_results(
        self, session_id: str, *, keep_chars: int = 400, keep_runs: int = 1
    ) -> TrimPreview:
        """What ``trim_tool_results`` with the same arguments would cut now."""
        ...


@runtime_checkable
class ListableSession(Session, Protocol):
    """A session store that can list its sessions, as a sessions pane shows them."""

    async def list_sessions(self, *, query: str | None = None, limit: int | None = None) -> list[SessionInfo]:
        """Sessions, most recently active first; ``query`` filters by id or title (any case)."""
        ...


@runtime_checkable
class DescribableSession(Session, Protocol):
    """A session store that can describe one session: title, counts and timings."""

    async def session_info(self, session_id: str) -> SessionInfo | None:
        """``session_id`` as a list shows it, or ``None`` if it is unknown."""
        ...


@runtime_checkable
class RenamableSession(Session, Protocol):
    """A session store that keeps a title a user gave a session."""

    async def rename_session(self, session_id: str, title: str) -> None:
        """Give the session a title of its own (an empty title restores the default)."""
        ...


@runtime_checkable
class PagedSession(Session, Protocol):
    """A session store that reads part of a transcript, so a long one opens at once."""

    async def read_page(self, session_id: str, *, start: int | None = None, limit: int = 200) -> EntryPage:
        """Up to ``limit`` entries from position ``start`` (the last ``limit`` when ``start`` is ``None``).

        A ``start`` at or past the end gives an empty page at the end; an unknown session an
        empty page at 0. Its cost grows with the page, not with the session. A negative
        ``start`` or a ``limit`` below 1 is a ``UserError``.
        """
        ...


@dataclass(frozen=True, slots=True)
class SearchHit:
    """One place a search found its words: an entry of a session, or a session's title.

    ``position`` is the entry's place in the session's transcript (counted from 0, as
    ``read_page`` and ``rewind`` count); ``None`` for a hit in a title a user gave the
    session. ``kind`` is the entry's type (``user``, ``assistant``, ``tool_call``,
    ``tool_result``) or ``title``. ``snippet`` is one line of the matched text around the
    match, with ``…`` where it was cut; ``matches`` are the ``(start, end)`` offsets in
    ``snippet`` of the words that matched. ``at`` is when the entry's run finished (its
    ``meta["timing"]``, else when it was stored; the session's last activity for a title);
    ``title`` is the session's title as :class:`SessionInfo` has it. ``breaks`` are the offsets in
    ``snippet`` of the spaces that were line breaks in the text: where a line began, which a
    Markdown list item, heading or quote needs to be told from a dash or ``#`` inside a line.
    """

    session_id: str
    title: str
    position: int | None
    kind: str
    snippet: str
    matches: tuple[tuple[int, int], ...]
    run_id: str | None = None
    at: float | None = None
    breaks: tuple[int, ...] = ()


@runtime_checkable
class SearchableSession(Session, Protocol):
    """A session store that can find words across every session: full-text search."""

    async def search(self, query: str, *, limit: int = 50, session_id: str | None = None) -> list[SearchHit]:
        """Hits for ``query`` as a user typed it, at most ``limit``: titles first, then entries, newest first.

        With ``session_id``, only that session's entries (no title): what a reader stepping
        from match to match in one open session needs.

        Every word is searched for literally, any case and diacritics; ``"a phrase"``,
        ``prefix*`` and ``-left_out`` are understood, and nothing a user types is a syntax
        error (see :mod:`lovia.stores._search`). What is searched: the text of user and
        assistant messages, tool calls' names and arguments, tool outputs, and titles given
        to sessions (an untitled session's title is its first message, found as that
        entry). A query with no word in it, or a limit below 1, is a ``UserError``; a store
        that cannot search its file (a Python whose SQLite lacks FTS5) raises
        :class:`~lovia.errors.StoreError` saying so.
        """
        ...


@runtime_checkable
class ChangeReportingSession(Session, Protocol):
    """A session store that can tell, cheaply, whether someone else wrote to it.

    What a second window of the terminal UI asks once a second, so that it shows the runs
    another process stores as they land. The bundled SQLite store implements it; the
    in-memory one does not: its data lives in one object of one process, so every write to
    it is made by code of that process, which can tell its own UI itself.
    """

    async def outside_change_token(self) -> Hashable:
        """A token that changes when another connection or process commits to the store.

        Two calls on one store object return equal tokens when nothing was committed to the
        store by anyone else in between, and different ones when something was. Writes made
        through this very object need not change it (SQLite's do not), and neither do reads.
        The check is cheap: it reads no table and never takes a write lock, so it may be
        called every second. A closed store raises :class:`~lovia.errors.StoreError`.
        """
        ...


@dataclass(frozen=True, slots=True)
class SessionChanges:
    """Which sessions changed since a mark: see :meth:`ChangeTrackingSession.sessions_changed`."""

    mark: int
    """Where the store's changes stand now: the ``since`` of the next call."""
    session_ids: tuple[str, ...] | None
    """Sessions created, written, renamed, rewound or deleted since the mark given, by anyone;
    ``None`` when that cannot be told (no mark given, or one this store never gave): list every session."""


@runtime_checkable
class ChangeTrackingSession(Session, Protocol):
    """A session store that can say which sessions changed, so a list of thousands is updated
    session by session instead of read again whole after each write somewhere else.

    The bundled SQLite store implements it (a change log its triggers keep, whoever writes).
    """

    async def sessions_changed(self, since: int | None) -> SessionChanges:
        """The sessions whose listing (:meth:`ListableSession.list_sessions`) may differ from what it
        was when ``since`` was the mark, and the mark now; ``since=None`` only takes the mark.

        Every change a list shows counts: a new session, an append, a rename, a rewind, a
        deletion (the id of a session gone is given too), a restore. A change committed after
        the returned mark is in the next call's answer, never lost between the two. One read
        transaction; cheap when few sessions changed.
        """
        ...


@dataclass(frozen=True, slots=True)
class TrashedSession:
    """A session in the trash, as the trash lists it.

    ``trash_id`` names this deletion (a session id may be deleted, used again and deleted
    again: each deletion is an item of its own); ``title`` is the title the session had when it
    was deleted; ``deleted_at`` is when (epoch seconds).
    """

    trash_id: int
    session_id: str
    title: str
    entry_count: int
    run_count: int
    created_at: float | None
    last_activity: float | None
    deleted_at: float


@runtime_checkable
class TrashingSession(Session, Protocol):
    """A session store with a trash: a deleted session can be restored until it is purged.

    What is in the trash is no session any more: ``load``, ``segments`` and the listings do
    not see it, and its id is free for a new session. The spec's ``clear`` keeps its meaning:
    it forgets a session for good, the trashed copies under its id included. The store never
    purges on its own; the caller purges (:meth:`purge_trash`) what it has kept long enough.
    """

    async def trash_session(self, session_id: str) -> TrashedSession | None:
        """Move the session, whole, to the trash and return it as listed; ``None`` when it is unknown.

        Its rewind undo (:class:`UndoableRewindSession`) is forgotten.
        """
        ...

    async def list_trash(self) -> list[TrashedSession]:
        """What the trash holds, most recently deleted first."""
        ...

    async def restore_session(self, trash_id: int) -> str:
        """Bring the deletion ``trash_id`` back as the session it was; return its session id.

        Refused with a :class:`~lovia.errors.UserError`, changing nothing, when there is no such
        item (restored or purged meanwhile) or when its session id is taken again by a live
        session: ids are the caller's, so the two are never merged nor renamed.
        """
        ...

    async def purge_trash(self, *, trash_id: int | None = None, deleted_before: float | None = None) -> int:
        """Forget, for good, the item ``trash_id`` or every item deleted before ``deleted_before``.

        Returns how many items went. Giving neither is a :class:`~lovia.errors.UserError`.
        """
        ...


@dataclass(frozen=True, slots=True)
class RewindUndo:
    """What undoing a session's last rewind would do.

    ``keep_entries`` is what the rewind kept; ``removed`` how many entries it dropped;
    ``run_ids`` the runs it deleted or truncated, which an undo puts back whole, in order;
    ``added_run_id`` the run appended since (the resend), which an undo drops; ``None`` until
    one is appended.
    """

    session_id: str
    rewound_at: float
    keep_entries: int
    removed: int
    run_ids: tuple[str, ...]
    added_run_id: str | None


@runtime_checkable
class UndoableRewindSession(RewindableSession, Protocol):
    """A session whose last rewind can be undone until the next message.

    :meth:`rewind_undoably` rewinds as ``rewind`` does and keeps what it dropped (whole runs
    and the original of a truncated one). The first run appended after it is the resend; it
    stays undoable. Appending another run after that (the next message), a plain ``rewind``,
    ``clear`` and moving the session to the trash forget the undo. Trimming tool outputs
    keeps it (the kept runs are trimmed; what the undo brings back is as it was).
    """

    async def rewind_undoably(self, session_id: str, *, keep_entries: int) -> int:
        """``rewind``, keeping what it drops as the session's undo (replacing an earlier one).

        A rewind that drops nothing changes nothing, the undo included.
        """
        ...

    async def rewind_undo(self, session_id: str) -> RewindUndo | None:
        """The session's undo, or ``None`` when there is none."""
        ...

    async def undo_rewind(self, session_id: str) -> RewindUndo:
        """Put the session back as it was before its last undoable rewind, and return that undo.

        The runs the rewind kept whole stay; the run it truncated comes back whole, the runs
        it deleted come back, and the run appended since (``added_run_id``) is dropped. A
        session with nothing to undo is a :class:`~lovia.errors.UserError`.
        """
        ...


@runtime_checkable
class ClosableStore(Protocol):
    """A store that holds a resource (a database connection) until it is closed."""

    async def close(self) -> None:
        """Release the resource. Idempotent; the store cannot be used afterwards."""
        ...
