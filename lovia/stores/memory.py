"""In-memory stores: for tests and ephemeral chat. They do not survive the process."""

from __future__ import annotations

import itertools
import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from lovia.checkpoint import (
    IfStored,
    PartialAnswer,
    RunHead,
    RunOwner,
    RunSnapshot,
    RunStatus,
    RunSummary,
    check_alone_in_session,
    check_save,
    claimed_session,
    plan_claim,
    taken_up,
    with_partial,
)
from lovia.entries import Entry, ToolResult, UserMessage
from lovia.errors import UserError
from lovia.session import (
    FORK_META_KEY,
    EntryPage,
    ForkOrigin,
    RewindUndo,
    RunSpan,
    SearchHit,
    Segment,
    SessionInfo,
    TrashedSession,
    TrimPreview,
)
from lovia.stores._common import (
    check_fork,
    check_keep,
    check_purge,
    clean_meta,
    filter_sessions,
    fork_target_taken,
    new_run_id,
    nothing_to_fork,
    nothing_to_undo,
    page_of,
    restore_refused,
    rewind_cut,
    title_from,
)
from lovia.stores._search import check_search_limit, match_text, parse_query, searched_text, snippet_of
from lovia.timing import ModelStep
from lovia.transcript import trim_output, truncate_run

__all__ = ["InMemoryCheckpointer", "InMemorySession"]


@dataclass
class _StoredSession:
    segments: list[Segment] = field(default_factory=list)
    created_at: float = field(default_factory=time.time)
    last_activity: float = field(default_factory=time.time)
    title: str | None = None
    undo: _Undo | None = None


@dataclass
class _Undo:
    """What a session's last undoable rewind dropped: the runs it kept whole, then these."""

    info: RewindUndo
    kept_runs: int
    dropped: list[Segment]


@dataclass
class _Trashed:
    listed: TrashedSession
    stored: _StoredSession


class InMemorySession:
    """A :class:`~lovia.session.Session` held in a dict; gone when the process ends.

    It honours the same contract as :class:`~lovia.stores.sqlite.SQLiteSession`, including
    ``rewind``, ``trim_tool_results`` with its preview, and the listing used by the terminal UI.
    It does not report outside changes (:class:`~lovia.session.ChangeReportingSession`): only
    code of this process can write to it, and that code can tell its own UI.
    """

    def __init__(self) -> None:
        self._sessions: dict[str, _StoredSession] = {}
        # When each run was stored, in order, for search's newest-first (as SQLite's ``seq`` orders them).
        self._stored_order: dict[tuple[str, str], tuple[int, float]] = {}
        self._appends = itertools.count(1)
        self._titled: dict[str, int] = {}  # when each session's title was given, in that order
        self._trash: dict[int, _Trashed] = {}
        self._trash_ids = 0

    async def __aenter__(self) -> InMemorySession:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    async def close(self) -> None:
        """Nothing to release; present so stores are interchangeable."""

    async def segments(self, session_id: str) -> list[Segment]:
        stored = self._sessions.get(session_id)
        return list(stored.segments) if stored else []

    async def load(self, session_id: str) -> list[Entry]:
        return [entry for segment in await self.segments(session_id) for entry in segment.entries]

    async def read_page(self, session_id: str, *, start: int | None = None, limit: int = 200) -> EntryPage:
        """See :class:`~lovia.session.PagedSession`."""
        spans: list[tuple[RunSpan, Sequence[Entry]]] = []
        position = 0
        for segment in await self.segments(session_id):
            count = len(segment.entries)
            spans.append((RunSpan(segment.run_id, position, count, segment.meta), segment.entries))
            position += count
        page = page_of(spans, position, start, limit)
        # Each run's meta is the caller's own copy, as ``segments`` gives them.
        return replace(page, runs=tuple(replace(span, meta=clean_meta(span.meta)) for span in page.runs))

    async def append(
        self,
        session_id: str,
        entries: Sequence[Entry],
        *,
        run_id: str | None = None,
        meta: dict[str, Any] | None = None,
    ) -> str:
        segment = Segment(run_id or new_run_id(), tuple(entries), clean_meta(meta))
        stored = self._sessions.get(session_id)
        if stored is None:
            stored = self._sessions[session_id] = _StoredSession()
        elif any(s.run_id == segment.run_id for s in stored.segments):
            return segment.run_id
        stored.segments.append(segment)
        stored.last_activity = time.time()
        self._stored_order[(session_id, segment.run_id)] = (next(self._appends), stored.last_activity)
        undo = stored.undo
        if undo is not None:  # the first run after an undoable rewind is its resend; the next one forgets it
            if undo.info.added_run_id is None:
                undo.info = replace(undo.info, added_run_id=segment.run_id)
            else:
                stored.undo = None
        return segment.run_id

    async def clear(self, session_id: str) -> None:
        """Forget the session for good: its runs, its undo, and its copies in the trash."""
        self._sessions.pop(session_id, None)
        for trash_id in [t for t, item in self._trash.items() if item.listed.session_id == session_id]:
            del self._trash[trash_id]

    # -- trash (see lovia.session.TrashingSession) -------------------------------------------

    async def trash_session(self, session_id: str) -> TrashedSession | None:
        """Move the session to the trash; ``None`` when it is unknown. Its rewind undo is forgotten."""
        stored = self._sessions.pop(session_id, None)
        if stored is None:
            return None
        stored.undo = None
        self._trash_ids += 1
        info = self._info(session_id, stored)
        listed = TrashedSession(self._trash_ids, session_id, info.title, info.entry_count, info.run_count,
                                stored.created_at, stored.last_activity, time.time())
        self._trash[listed.trash_id] = _Trashed(listed, stored)
        return listed

    async def list_trash(self) -> list[TrashedSession]:
        """What the trash holds, most recently deleted first."""
        return sorted((item.listed for item in self._trash.values()),
                      key=lambda t: (t.deleted_at, t.trash_id), reverse=True)

    async def restore_session(self, trash_id: int) -> str:
        """Bring a deletion back; refused when it is gone or its session id is in use again."""
        item = self._trash.get(trash_id)
        if item is None:
            raise UserError(f"nothing in the trash is numbered {trash_id}: it was restored or purged meanwhile")
        session_id = item.listed.session_id
        if session_id in self._sessions:
            raise restore_refused(session_id)
        del self._trash[trash_id]
        self._sessions[session_id] = item.stored
        return session_id

    async def purge_trash(self, *, trash_id: int | None = None, deleted_before: float | None = None) -> int:
        """Forget trashed sessions for good: ``trash_id``, or every one deleted before ``deleted_before``."""
        check_purge(trash_id, deleted_before)
        gone = [t for t, item in self._trash.items()
                if t == trash_id or (deleted_before is not None and item.listed.deleted_at < deleted_before)]
        for t in gone:
            del self._trash[t]
        return len(gone)

    # -- rewind and its undo -----------------------------------------------------------------

    async def rewind_undoably(self, session_id: str, *, keep_entries: int) -> int:
        """:meth:`rewind`, keeping what it drops as the session's undo (see lovia.session.UndoableRewindSession)."""
        return self._rewind(session_id, keep_entries, undoable=True)

    async def rewind_undo(self, session_id: str) -> RewindUndo | None:
        stored = self._sessions.get(session_id)
        return stored.undo.info if stored is not None and stored.undo is not None else None

    async def undo_rewind(self, session_id: str) -> RewindUndo:
        """Put the session back as it was before its last undoable rewind (the resend's run dropped)."""
        stored = self._sessions.get(session_id)
        undo = stored.undo if stored is not None else None
        if stored is None or undo is None:
            raise nothing_to_undo(session_id)
        stored.segments = [*stored.segments[:undo.kept_runs], *undo.dropped]
        stored.undo = None
        stored.last_activity = time.time()
        return undo.info

    async def rewind(self, session_id: str, *, keep_entries: int) -> int:
        """Drop the transcript's tail past ``keep_entries`` and return how many entries went.

        Whole later runs are deleted; the run the cut lands in is truncated, made
        tool-consistent and loses its meta. ``keep_entries=0`` empties the session; a count
        at or past the end changes nothing. Checkpoints of rewound runs are left alone: call
        :func:`lovia.rewind_with_checkpoints` to forget them too.
        """
        return self._rewind(session_id, keep_entries, undoable=False)

    def _rewind(self, session_id: str, keep_entries: int, *, undoable: bool) -> int:
        stored = self._sessions.get(session_id)
        segments = stored.segments if stored is not None else []
        whole, partial = rewind_cut([len(s.entries) for s in segments], keep_entries)
        if stored is None or whole == len(segments):
            return 0
        before = sum(len(s.entries) for s in stored.segments)
        # The runs before the cut stay as they are, runs of no entries included (as in SQLite): the
        # undo counts them (``kept_runs``). Only the run the cut lands in goes when nothing of it is left.
        kept = stored.segments[:whole]
        if partial:
            cut = stored.segments[whole]
            truncated = Segment(cut.run_id, tuple(truncate_run(cut.entries, partial)), {})
            if truncated.entries:
                kept.append(truncated)
        dropped = stored.segments[whole:]
        stored.segments = kept
        now = stored.last_activity = time.time()
        removed = before - sum(len(s.entries) for s in stored.segments)
        stored.undo = _Undo(RewindUndo(session_id, now, keep_entries, removed, tuple(s.run_id for s in dropped), None),
                            whole, dropped) if undoable else None
        return removed

    async def fork(self, session_id: str, *, keep_entries: int, new_session_id: str) -> int:
        """Copy the first ``keep_entries`` entries into ``new_session_id`` (:class:`~lovia.session.ForkableSession`)."""
        check_fork(keep_entries, session_id, new_session_id)
        source = self._sessions.get(session_id)
        if new_session_id in self._sessions:
            raise fork_target_taken(new_session_id)
        segments = source.segments if source is not None else []
        whole, partial = rewind_cut([len(s.entries) for s in segments], keep_entries)
        copied = [Segment(new_run_id(), s.entries, clean_meta(s.meta)) for s in segments[:whole]]
        if partial:
            copied.append(Segment(new_run_id(), tuple(truncate_run(segments[whole].entries, partial)), {}))
        copied = [s for s in copied if s.entries]
        if source is None or not copied:
            raise nothing_to_fork(session_id)
        cut = min(keep_entries, sum(len(s.entries) for s in segments))
        origin = ForkOrigin(session_id, cut, time.time(), self._info(session_id, source).title)
        copied[0] = replace(copied[0], meta={**copied[0].meta, FORK_META_KEY: origin.to_meta()})
        self._sessions[new_session_id] = _StoredSession(copied, title=source.title)
        return sum(len(s.entries) for s in copied)

    async def trim_tool_results(self, session_id: str, *, keep_chars: int = 400, keep_runs: int = 1) -> int:
        """Cut tool outputs older than the last ``keep_runs`` runs to ``keep_chars``; return how many.

        Structure, order and call-id pairing are kept and a marker says what was cut;
        trimming again with the same arguments changes nothing (and returns 0).
        """
        return (await self._trim(session_id, keep_chars, keep_runs, apply=True)).results

    async def preview_trim_tool_results(
        self, session_id: str, *, keep_chars: int = 400, keep_runs: int = 1
    ) -> TrimPreview:
        """What :meth:`trim_tool_results` with the same arguments would cut now; changes nothing."""
        return await self._trim(session_id, keep_chars, keep_runs, apply=False)

    async def _trim(self, session_id: str, keep_chars: int, keep_runs: int, *, apply: bool) -> TrimPreview:
        check_keep("keep_chars", keep_chars)
        check_keep("keep_runs", keep_runs)
        stored = self._sessions.get(session_id)
        if stored is None:
            return TrimPreview()
        older = len(stored.segments) - keep_runs
        results = chars = 0
        new_segments = list(stored.segments)
        for index in range(max(0, older)):
            segment = stored.segments[index]
            entries = list(segment.entries)
            changed = False
            for position, entry in enumerate(entries):
                if not isinstance(entry, ToolResult):
                    continue
                trimmed = trim_output(entry, keep_chars)
                if trimmed is None:
                    continue
                results += 1
                chars += len(entry.output) - len(trimmed.output)
                entries[position] = trimmed
                changed = True
            if changed:
                new_segments[index] = replace(segment, entries=tuple(entries))
        if apply:
            stored.segments = new_segments
        return TrimPreview(results, chars)

    async def list_sessions(self, *, query: str | None = None, limit: int | None = None) -> list[SessionInfo]:
        """Sessions, most recently active first; ``query`` filters by id or title (any case)."""
        infos = [self._info(session_id, stored) for session_id, stored in self._sessions.items()]
        infos.sort(key=lambda i: i.last_activity or 0.0, reverse=True)
        return filter_sessions(infos, query, limit)

    async def session_info(self, session_id: str) -> SessionInfo | None:
        """One session as :meth:`list_sessions` shows it, or ``None``."""
        stored = self._sessions.get(session_id)
        return self._info(session_id, stored) if stored else None

    async def rename_session(self, session_id: str, title: str) -> None:
        """Give the session a title of its own (an empty title restores the default)."""
        stored = self._sessions.get(session_id)
        if stored is None:
            stored = self._sessions[session_id] = _StoredSession()
        stored.title = title_from(title) or None
        self._titled[session_id] = next(self._appends)  # search lists the latest given first

    async def search(self, query: str, *, limit: int = 50, session_id: str | None = None) -> list[SearchHit]:
        """See :class:`~lovia.session.SearchableSession`: every session scanned, as the SQLite index would match.

        Titles that match come first (the latest given first), then entries, the most recently
        stored first.
        """
        parsed = parse_query(query)
        check_search_limit(limit)
        hits: list[tuple[tuple[int, float, int], SearchHit]] = []
        titled = sorted(((sid, s) for sid, s in self._sessions.items() if s.title and session_id is None),
                        key=lambda item: -self._titled.get(item[0], 0))
        for titled_id, stored in titled:
            matches = match_text(stored.title or "", parsed)
            if matches is not None:
                snippet, offsets, breaks = snippet_of(stored.title or "", matches)
                hits.append(((0, 0.0, 0), SearchHit(titled_id, stored.title or "", None, "title", snippet, offsets,
                                                    None, stored.last_activity, breaks)))
        titles = len(hits)
        scope = list(self._sessions.items()) if session_id is None else \
            [(session_id, self._sessions[session_id])] if session_id in self._sessions else []
        for found, stored in scope:
            title: str | None = None
            position = 0
            for segment in stored.segments:
                order, at = self._stored_order.get((found, segment.run_id), (0, stored.last_activity))
                at = segment.finished_at or at  # when the run finished, if its timing was recorded
                for offset, entry in enumerate(segment.entries):
                    text = searched_text(entry)
                    matches = match_text(text, parsed) if text else None
                    if matches is not None:
                        title = title if title is not None else self._info(found, stored).title
                        snippet, offsets, breaks = snippet_of(text, matches)
                        hits.append(((1, -order, -offset), SearchHit(found, title, position + offset, entry.type,
                                                                      snippet, offsets, segment.run_id, at, breaks)))
                position += len(segment.entries)
        hits[titles:] = sorted(hits[titles:], key=lambda hit: hit[0])
        return [hit for _, hit in hits[:limit]]

    @staticmethod
    def _info(session_id: str, stored: _StoredSession) -> SessionInfo:
        title = stored.title
        if title is None:
            first = next(
                (e for s in stored.segments for e in s.entries if isinstance(e, UserMessage)), None
            )
            title = title_from(first.text) if first else ""
        return SessionInfo(
            session_id=session_id,
            title=title,
            entry_count=sum(len(s.entries) for s in stored.segments),
            run_count=len(stored.segments),
            created_at=stored.created_at,
            last_activity=stored.last_activity,
            total_run_seconds=sum(s.run_seconds or 0.0 for s in stored.segments),
        )


class InMemoryCheckpointer:
    """A :class:`~lovia.checkpoint.ClaimingCheckpointer` held in a dict.

    It cannot recover anything after a crash: use it for tests and for resuming within one
    process, and :class:`~lovia.stores.sqlite.SQLiteCheckpointer` for crash recovery. Its
    methods never wait, so each is atomic for the tasks of one event loop. Like the in-memory
    session, it does not report outside changes: nobody outside this process can make any. It
    keeps the partial-answer journal (:class:`~lovia.checkpoint.JournalingCheckpointer`), so a
    run whose task died mid-answer in this process shows its text as the SQLite store's does.
    """

    def __init__(self) -> None:
        self._runs: dict[str, RunSnapshot] = {}
        # The partial-answer journal: run id -> (the claim and turn of the head it was written
        # under, what it holds); see :class:`~lovia.checkpoint.JournalingCheckpointer`.
        self._partials: dict[str, tuple[str | None, int, PartialAnswer]] = {}

    async def __aenter__(self) -> InMemoryCheckpointer:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    async def close(self) -> None:
        """Nothing to release; present so stores are interchangeable."""

    async def save(self, snapshot: RunSnapshot) -> None:
        run_id, stored = snapshot.run_id, self._runs.get(snapshot.run_id)
        have = check_save(run_id, snapshot.head.claim, len(snapshot.entries),
                          (len(stored.entries), stored.head.claim) if stored else None,
                          lambda: self._copy(stored.head if stored else None))
        head = self._copy(snapshot.head)  # a private copy, as a file would hold
        if stored is None:
            self._runs[run_id] = RunSnapshot(run_id, head, list(snapshot.entries))
        else:
            stored.entries.extend(snapshot.entries[have:len(snapshot.entries)])
            stored.head = head
        partial = self._partials.get(run_id)
        if partial is not None and partial[:2] != (head.claim, head.turn):  # not a renewal mid-stream
            del self._partials[run_id]

    async def journal_partial(self, run_id: str, text: str, *, claim: str | None,
                              step: ModelStep | None = None) -> bool:
        """Journal the text so far of the streaming turn; see :class:`~lovia.checkpoint.JournalingCheckpointer`."""
        stored = self._runs.get(run_id)
        if stored is None or stored.head.status != "running" or stored.head.claim != claim:
            return False
        self._partials[run_id] = (claim, stored.head.turn, PartialAnswer(text, step))
        return True

    def _partial(self, run_id: str) -> PartialAnswer | None:
        partial = self._partials.get(run_id)
        return partial[2] if partial is not None else None

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
        """Check and take ``run_id`` for one execution; see :class:`~lovia.checkpoint.ClaimingCheckpointer`."""
        return self._claim(run_id, owner, token, lease_seconds, start, if_stored, alone=False)

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
        """:meth:`claim`, only while no other run of the session executes; see
        :class:`~lovia.checkpoint.SessionExclusiveCheckpointer`."""
        return self._claim(run_id, owner, token, lease_seconds, start, if_stored, alone=True)

    def _claim(self, run_id: str, owner: RunOwner, token: str, lease_seconds: float,
               start: RunSnapshot | None, if_stored: IfStored, *, alone: bool) -> RunSnapshot | None:
        stored = self._runs.get(run_id)
        start = RunSnapshot(run_id, self._copy(start.head), list(start.entries)) if start is not None else None
        before = self._copy(stored.head) if stored is not None else None  # plan_claim takes the stored head in place
        now = time.time()
        # On copies: a refused claim must leave the stored head as it was.
        planned = self._copy(stored.head) if stored is not None else None
        step = plan_claim(run_id, planned, start, owner, token, lease_seconds, now, if_stored)
        if alone and (session_id := claimed_session(step, planned, start)) is not None:
            check_alone_in_session(session_id, run_id, ((other, run.head) for other, run in self._runs.items()
                                                        if run.head.session_id == session_id), now)
        if stored is not None and planned is not None:
            stored.head = planned
        if step == "store_start":
            assert start is not None
            self._runs[run_id] = start
            self._partials.pop(run_id, None)  # the journal of a run it replaced is over
            return None
        if step == "update" and stored is not None:  # the turn it was cut off in joins its timeline
            assert before is not None
            taken_up(stored.head, before, self._partial(run_id))
        # As stored, as the SQLite store returns it: the journal's text is only for a crashed run's readers.
        found = None if step == "none" or stored is None else RunSnapshot(run_id, self._copy(stored.head),
                                                                          list(stored.entries))
        if found is not None and step == "update":
            found.taken_from = before
        if step == "update":
            self._partials.pop(run_id, None)  # read: taken, its journal is over (as in the SQLite store)
        return found

    @staticmethod
    def _copy(head: RunHead | None) -> RunHead:
        assert head is not None
        return RunHead.from_dict(head.to_dict())

    async def load(self, run_id: str) -> RunSnapshot | None:
        stored = self._runs.get(run_id)
        if stored is None:
            return None
        head = with_partial(RunHead.from_dict(stored.head.to_dict()), self._partial(run_id))
        return RunSnapshot(run_id, head, list(stored.entries))

    async def delete(self, run_id: str) -> bool:
        self._partials.pop(run_id, None)
        return self._runs.pop(run_id, None) is not None

    async def list_runs(
        self, *, statuses: Sequence[RunStatus] | None = None, limit: int | None = None
    ) -> list[RunSummary]:
        """Runs with one of ``statuses`` (all when ``None``), most recently updated first."""
        runs = [
            RunSummary(s.run_id, with_partial(RunHead.from_dict(s.head.to_dict()), self._partial(s.run_id)),
                       len(s.entries))
            for s in self._runs.values()
            if statuses is None or s.head.status in statuses
        ]
        runs.sort(key=lambda r: r.head.updated_at, reverse=True)
        return runs[:limit] if limit is not None else runs
