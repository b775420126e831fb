"""The core of the PostgreSQL session store: its first schema, and what every session store offers.

:class:`lovia.stores.postgres.PostgresSession` is this core with the extras mixed in (search,
trash, fork, rewind undo: :mod:`lovia.stores._postgres_extras`, whose migration is the schema's
second step). The core mirrors :class:`lovia.stores.sqlite.SQLiteSession`: the same rules (from
:mod:`lovia.stores._common`), the same entry codec, the same messages with the database's URL
(without password) where SQLite names its file.

How a session is kept (schema 1). Each run is one row of ``lovia_segments``: run id, meta, entry
count, ``start`` (the position of its first entry in the session), the entries' type tags
(``kinds``) and the entries as one JSON array (``entries``), the text lovia's codec writes, kept
byte for byte. Loading a session reads one row per run, decoded by msgspec straight into the entry
dataclasses. One table rather than SQLite's two: PostgreSQL moves long values out of line
(TOAST), so summing counts and meta over a session's runs does not page through its text.
``seq`` (an identity column) orders runs appended at one position (runs of no entries).

Positions under concurrent writers. An append runs in one transaction that first takes the
session's lock (:func:`lock_session`, a transaction-level advisory lock on a hash of the session id),
then inserts the run at the session's end with ``ON CONFLICT (session_id, run_id) DO NOTHING``.
Writers of one session, in any process on any host, queue on the lock, and each one's insert
(a statement after the lock, so it sees what the one before committed) finds the end the last
one left: positions never interleave, and a run appended twice is stored once. Every write to a
session (rewind, trim, clear, rename, and the extras' moves) takes the same lock.

Composition points for the extras mixin (``PostgresSessionExtras``): the hooks below are no-ops
here and are called inside the write transactions that need them.

- :meth:`_PostgresSessionCore._after_append` after a run was really stored (not a replay): the
  rewind undo's "the first run after an undoable rewind is its resend" bookkeeping.
- :meth:`_PostgresSessionCore._forget_undo` wherever SQLite's store forgets a session's rewind undo
  (rewind, clear).
- :meth:`_PostgresSessionCore._after_clear`: what ``clear`` removes for good besides the live
  session (its trash items).
- :meth:`_PostgresSessionCore._rewind` takes ``undoable``; with it, it calls
  :meth:`_PostgresSessionCore._keep_for_undo` before it changes anything and
  :meth:`_PostgresSessionCore._record_undo` after, which the core does not implement.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from typing import Any

import psycopg

from lovia.entries import (
    Entry,
    ToolResult,
    UserMessage,
    entries_from_json_array,
    entries_to_json_array,
    entry_kinds,
)
from lovia.errors import DatabaseFileError
from lovia.session import EntryPage, RunSpan, Segment, SessionInfo, TrimPreview
from lovia.stores._common import (
    check_keep,
    check_page,
    clean_meta,
    filter_sessions,
    new_run_id,
    page_of,
    page_window,
    rewind_cut,
    title_from,
)
from lovia.stores._postgres_db import PostgresDatabase, PostgresSchema
from lovia.stores._sqlite_db import stored_object
from lovia.transcript import trim_output, truncate_run

Connection = psycopg.AsyncConnection[Any]

SESSION_LOCK_CLASS = 0x6C6F7669  # "lovi": the first key of every session's advisory lock (see lock_session)


async def session_v1(conn: Connection) -> None:
    """The core tables (see the module docstring); the extras' triggers and moves rely on them."""
    await conn.execute(
        """CREATE TABLE lovia_segments (
            seq BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
            session_id TEXT NOT NULL,
            run_id TEXT NOT NULL,
            start INTEGER NOT NULL,
            entry_count INTEGER NOT NULL,
            meta TEXT NOT NULL,
            appended_at DOUBLE PRECISION NOT NULL,
            kinds TEXT NOT NULL,
            entries TEXT NOT NULL,
            UNIQUE (session_id, run_id)
        )"""
    )
    await conn.execute("CREATE INDEX lovia_segments_by_start ON lovia_segments (session_id, start)")
    await conn.execute(
        """CREATE TABLE lovia_session_info (
            session_id TEXT PRIMARY KEY,
            title TEXT,
            created_at DOUBLE PRECISION NOT NULL,
            last_activity DOUBLE PRECISION NOT NULL
        )"""
    )
    await conn.execute("CREATE INDEX lovia_session_info_by_activity ON lovia_session_info (last_activity)")


async def lock_session(conn: Connection, session_id: str) -> None:
    """Take ``session_id``'s write lock until the transaction ends (every write to a session does, first).

    A transaction-level advisory lock keyed by (:data:`SESSION_LOCK_CLASS`, ``hashtext(session_id)``):
    the two-key form, so it never meets the migrations' one-key lock. Two sessions whose ids hash
    alike merely queue behind each other.
    """
    await conn.execute("SELECT pg_advisory_xact_lock(%s, hashtext(%s))", (SESSION_LOCK_CLASS, session_id))


# A session's runs in the order they were appended: ``start`` only grows along a session, and
# ties (runs of no entries) fall to ``seq``, which also grows.
IN_ORDER = "ORDER BY g.start, g.seq"
# Where the next run of a session starts: the end of its last one.
SESSION_END = (
    "SELECT start + entry_count FROM lovia_segments WHERE session_id = %s ORDER BY start DESC, seq DESC LIMIT 1"
)


class _PostgresSessionCore:
    """A :class:`~lovia.session.Session` in a PostgreSQL database: the core every build has.

    Offers ``rewind``, ``trim_tool_results`` with its preview, the listing the terminal UI uses
    (``list_sessions``, ``session_info``, ``rename_session``), ``read_page`` and
    ``outside_change_token`` (PostgreSQL ``LISTEN``/``NOTIFY``).
    """

    _schema: PostgresSchema

    def __init__(self, url: str, *, min_size: int = 1, max_size: int = 10) -> None:
        self._db = PostgresDatabase(url, schema=self._schema, min_size=min_size, max_size=max_size)

    @property
    def where(self) -> str:
        """The database's URL without its password."""
        return self._db.where

    async def open(self) -> None:
        """Connect, and check and migrate the schema now instead of at first use."""
        await self._db.open()

    async def close(self) -> None:
        """Close the connections. Idempotent; the store cannot be used afterwards."""
        await self._db.close()

    async def outside_change_token(self) -> Any:
        """How many changes other store objects (any process, any host) committed to the sessions.

        From PostgreSQL ``LISTEN``/``NOTIFY`` on the channel ``lovia_session``: every write
        transaction that changes a session notifies it at commit. This object's own writes and
        any reads leave the token as it was; no table is read. A notification arrives a moment
        after its commit, so a change made just before the call may show at the next one.
        See :class:`~lovia.session.ChangeReportingSession`.
        """
        return await self._db.outside_change_token()

    async def __aenter__(self):
        await self.open()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.where!r})"

    # -- reading -----------------------------------------------------------------------

    async def segments(self, session_id: str) -> list[Segment]:
        async def read(conn: Connection) -> list[tuple[Any, ...]]:
            cur = await conn.execute(
                f"SELECT g.run_id, g.entry_count, g.meta, g.entries FROM lovia_segments AS g "
                f"WHERE g.session_id = %s {IN_ORDER}",
                (session_id,),
            )
            return await cur.fetchall()

        rows = await self._db.read(read, f"reading session {session_id!r}")
        return [
            Segment(
                run_id,
                self._run_entries(session_id, run_id, count, text, self._where(session_id, run_id), 0),
                self._meta(meta, session_id, run_id),
            )
            for run_id, count, meta, text in rows
        ]

    async def load(self, session_id: str) -> list[Entry]:
        async def read(conn: Connection) -> list[tuple[Any, ...]]:
            cur = await conn.execute(
                f"SELECT g.run_id, g.start, g.entry_count, g.entries FROM lovia_segments AS g "
                f"WHERE g.session_id = %s {IN_ORDER}",
                (session_id,),
            )
            return await cur.fetchall()

        rows = await self._db.read(read, f"loading session {session_id!r}")
        entries: list[Entry] = []
        for run_id, start, count, text in rows:
            # A damaged entry is named by its run and its position in the session.
            entries.extend(self._run_entries(session_id, run_id, count, text, self._where(session_id, run_id), start))
        return entries

    async def read_page(self, session_id: str, *, start: int | None = None, limit: int = 200) -> EntryPage:
        """See :class:`~lovia.session.PagedSession`. Reads only the runs the page touches."""
        check_page(start, limit)

        async def read(conn: Connection) -> tuple[int, list[tuple[Any, ...]]]:
            cur = await conn.execute(SESSION_END, (session_id,))
            last = await cur.fetchone()
            total = int(last[0]) if last else 0
            first, end = page_window(total, start, limit)
            if first >= end:
                return total, []
            # From the run holding position ``first`` (the last to start at or before it) to
            # the last run starting before ``end``.
            cur = await conn.execute(
                "SELECT g.run_id, g.start, g.entry_count, g.meta, g.entries FROM lovia_segments AS g "
                "WHERE g.session_id = %s AND g.entry_count > 0 AND g.start < %s AND g.start >= "
                "(SELECT MAX(start) FROM lovia_segments WHERE session_id = %s AND start <= %s) "
                f"{IN_ORDER}",
                (session_id, end, session_id, first),
            )
            return total, await cur.fetchall()

        total, rows = await self._db.read(read, f"reading a page of session {session_id!r}")
        spans = [
            (
                RunSpan(run_id, run_start, count, self._meta(meta, session_id, run_id)),
                self._run_entries(session_id, run_id, count, text, self._where(session_id, run_id), run_start),
            )
            for run_id, run_start, count, meta, text in rows
        ]
        return page_of(spans, total, start, limit)

    # -- writing -----------------------------------------------------------------------

    async def append(
        self,
        session_id: str,
        entries: Sequence[Entry],
        *,
        run_id: str | None = None,
        meta: dict[str, Any] | None = None,
    ) -> str:
        run_id = run_id or new_run_id()
        meta_json = json.dumps(clean_meta(meta), separators=(",", ":"))
        kinds, text = entry_kinds(entries), entries_to_json_array(entries)
        now = time.time()

        async def write(conn: Connection) -> None:
            await lock_session(conn, session_id)  # before the end is read: see the module docstring
            # One statement stores the run, and only if it was not stored yet, records the session's
            # activity and tells other store objects (at commit): one round trip instead of three.
            cur = await conn.execute(
                "WITH run AS (INSERT INTO lovia_segments "
                "(session_id, run_id, start, entry_count, meta, appended_at, kinds, entries) "
                f"VALUES (%s, %s, COALESCE(({SESSION_END}), 0), %s, %s, %s, %s, %s) "
                "ON CONFLICT (session_id, run_id) DO NOTHING RETURNING seq), "
                "info AS (INSERT INTO lovia_session_info (session_id, title, created_at, last_activity) "
                f"SELECT %s, NULL, %s, %s FROM run {_BUMP_ACTIVITY}) "
                "SELECT pg_notify(%s, %s) FROM run",
                (session_id, run_id, session_id, len(entries), meta_json, now, kinds, text,
                 session_id, now, now, *self._db.notification),
            )
            if await cur.fetchone() is None:
                return  # idempotent by run id: a replayed run never duplicates entries
            await self._after_append(conn, session_id, run_id)

        await self._db.transaction(write, f"appending to session {session_id!r}")
        return run_id

    async def clear(self, session_id: str) -> None:
        async def write(conn: Connection) -> None:
            await lock_session(conn, session_id)
            await conn.execute("DELETE FROM lovia_segments WHERE session_id = %s", (session_id,))
            await conn.execute("DELETE FROM lovia_session_info WHERE session_id = %s", (session_id,))
            # For good (the spec's clear): what the extras keep of it goes too.
            await self._forget_undo(conn, session_id)
            await self._after_clear(conn, session_id)
            await self._db.notify_change(conn)

        await self._db.transaction(write, f"clearing session {session_id!r}")

    async def rewind(self, session_id: str, *, keep_entries: int) -> int:
        """Drop the transcript's tail past ``keep_entries`` and return how many entries went.

        Whole later runs are deleted; the run the cut lands in is truncated, made
        tool-consistent and loses its meta. ``keep_entries=0`` empties the session; a count
        at or past the end changes nothing. Checkpoints of rewound runs are left alone: call
        :func:`lovia.rewind_with_checkpoints` to forget them too.
        """
        check_keep("keep_entries", keep_entries)
        return await self._db.transaction(
            lambda conn: self._rewind(conn, session_id, keep_entries, undoable=False),
            f"rewinding session {session_id!r}",
        )

    async def _rewind(self, conn: Connection, session_id: str, keep_entries: int, *, undoable: bool) -> int:
        await lock_session(conn, session_id)
        cur = await conn.execute(
            f"SELECT g.seq, g.run_id, g.entry_count FROM lovia_segments AS g WHERE g.session_id = %s {IN_ORDER}",
            (session_id,),
        )
        heads = await cur.fetchall()
        whole, partial = rewind_cut([count for _, _, count in heads], keep_entries)
        if whole == len(heads):
            return 0
        before = sum(count for _, _, count in heads)
        await self._forget_undo(conn, session_id)
        if undoable:  # what the cut touches, kept as stored before it changes
            await self._keep_for_undo(conn, session_id, [seq for seq, _, _ in heads[whole:]])
        later = [seq for seq, _, _ in heads[whole + (1 if partial else 0):]]
        await delete_runs(conn, later)
        after = sum(count for _, _, count in heads[:whole])
        if partial:
            seq, run_id, count = heads[whole]
            kept, truncated = await self._truncated_run(conn, session_id, seq, run_id, count, partial)
            if truncated is not None:
                await conn.execute(
                    "UPDATE lovia_segments SET kinds = %s, entries = %s, meta = '{}', entry_count = %s WHERE seq = %s",
                    (*truncated, kept, seq),
                )
            else:
                await delete_runs(conn, [seq])
            after += kept
        now = time.time()
        await touch(conn, session_id, now)
        if undoable:
            await self._record_undo(conn, session_id, now, keep_entries, whole, before - after)
        await self._db.notify_change(conn)
        return before - after

    async def _truncated_run(
        self, conn: Connection, session_id: str, seq: int, run_id: str, count: int, partial: int
    ) -> tuple[int, tuple[str, str] | None]:
        """The run ``seq`` cut to its first ``partial`` entries as ``rewind`` cuts it (made tool-consistent).

        Returns how many entries are left and their ``(kinds, JSON array)``, ``None`` when none
        is. The array is the stored JSON items of the survivors, not the entries encoded again:
        fields this version does not know (a newer lovia wrote them) are kept.
        """
        cur = await conn.execute("SELECT entries FROM lovia_segments WHERE seq = %s", (seq,))
        row = await cur.fetchone()
        text: Any = row[0] if row else None
        entries = self._run_entries(session_id, run_id, count, text, self._where(session_id, run_id), 0)
        kept = truncate_run(entries, partial)
        if not kept:
            return 0, None
        survivors = {id(entry) for entry in kept}
        items = [item for item, entry in zip(json.loads(text), entries, strict=True) if id(entry) in survivors]
        return len(kept), (entry_kinds(kept), json_array(items))

    async def trim_tool_results(self, session_id: str, *, keep_chars: int = 400, keep_runs: int = 1) -> int:
        """Cut tool outputs older than the last ``keep_runs`` runs to ``keep_chars``; return how many.

        Structure, order and call-id pairing are kept and a marker says what was cut;
        trimming again with the same arguments changes nothing (and returns 0).
        """
        check_keep("keep_chars", keep_chars)
        check_keep("keep_runs", keep_runs)
        trimmed = await self._db.transaction(
            lambda conn: self._trim(conn, session_id, keep_chars, keep_runs, apply=True),
            f"trimming tool outputs of session {session_id!r}",
        )
        return trimmed.results

    async def preview_trim_tool_results(
        self, session_id: str, *, keep_chars: int = 400, keep_runs: int = 1
    ) -> TrimPreview:
        """What :meth:`trim_tool_results` with the same arguments would cut now; changes nothing."""
        check_keep("keep_chars", keep_chars)
        check_keep("keep_runs", keep_runs)
        return await self._db.read(
            lambda conn: self._trim(conn, session_id, keep_chars, keep_runs, apply=False),
            f"measuring tool outputs of session {session_id!r}",
        )

    async def _trim(
        self, conn: Connection, session_id: str, keep_chars: int, keep_runs: int, *, apply: bool
    ) -> TrimPreview:
        if apply:
            await lock_session(conn, session_id)
        cur = await conn.execute(
            f"SELECT g.seq FROM lovia_segments AS g WHERE g.session_id = %s {IN_ORDER}", (session_id,)
        )
        seqs = [seq for (seq,) in await cur.fetchall()]
        older = seqs[: max(0, len(seqs) - keep_runs)]
        if not older:
            return TrimPreview()
        # Only runs that hold a tool result, and are long enough for one to be worth cutting,
        # are read and decoded at all.
        cur = await conn.execute(
            "SELECT g.seq, g.run_id, g.entry_count, g.entries FROM lovia_segments AS g "
            f"WHERE g.seq = ANY(%s) AND strpos(g.kinds, '{ToolResult.type}') > 0 "
            f"AND length(g.entries) > %s {IN_ORDER}",
            (older, keep_chars),
        )
        updates: list[tuple[str, int]] = []
        results = chars = 0
        for seq, run_id, count, text in await cur.fetchall():
            entries = self._run_entries(session_id, run_id, count, text, self._where(session_id, run_id), 0)
            stored: list[dict[str, Any]] | None = None
            for position, entry in enumerate(entries):
                if not isinstance(entry, ToolResult) or (trimmed := trim_output(entry, keep_chars)) is None:
                    continue
                results += 1
                chars += len(entry.output) - len(trimmed.output)
                # Only the two fields a trim changes are rewritten: the rest of the stored
                # JSON, fields a newer lovia wrote included, stays as it was.
                stored = stored if stored is not None else json.loads(text)
                stored[position].update(output=trimmed.output, trimmed_chars=trimmed.trimmed_chars)
            if stored is not None:
                updates.append((json_array(stored), seq))
        if updates and apply:
            async with conn.cursor() as update:
                await update.executemany("UPDATE lovia_segments SET entries = %s WHERE seq = %s", updates)
            await self._db.notify_change(conn)
        return TrimPreview(results, chars)

    # -- listing -----------------------------------------------------------------------

    async def list_sessions(self, *, query: str | None = None, limit: int | None = None) -> list[SessionInfo]:
        """Sessions, most recently active first; ``query`` filters by id or title (any case)."""
        page = None if query else limit  # a query filters titles made here, so its limit comes after it
        infos = await self._db.read(lambda conn: session_infos(conn, None, page), "listing sessions")
        return filter_sessions(infos, query, limit)

    async def session_info(self, session_id: str) -> SessionInfo | None:
        """One session as :meth:`list_sessions` shows it, or ``None``."""
        infos = await self._db.read(lambda conn: session_infos(conn, session_id), "reading a session")
        return infos[0] if infos else None

    async def rename_session(self, session_id: str, title: str) -> None:
        """Give the session a title of its own (an empty title restores the default)."""
        async def write(conn: Connection) -> None:
            await lock_session(conn, session_id)
            await touch(conn, session_id, time.time(), bump=False)
            await conn.execute(
                "UPDATE lovia_session_info SET title = %s WHERE session_id = %s",
                (title_from(title) or None, session_id),
            )
            await self._db.notify_change(conn)

        await self._db.transaction(write, f"renaming session {session_id!r}")

    # -- hooks for the extras (no-ops in the core; see the module docstring) --------------

    async def _after_append(self, conn: Connection, session_id: str, run_id: str) -> None:
        """Inside an append's transaction, after run ``run_id`` was stored (not for a replay)."""

    async def _forget_undo(self, conn: Connection, session_id: str) -> None:
        """Inside a rewind's or a clear's transaction: forget the session's rewind undo."""

    async def _after_clear(self, conn: Connection, session_id: str) -> None:
        """Inside a clear's transaction, after the live session was deleted."""

    async def _keep_for_undo(self, conn: Connection, session_id: str, seqs: list[int]) -> None:
        """Inside an undoable rewind, before it changes anything: keep the runs ``seqs`` as stored."""
        raise NotImplementedError("this session store keeps no rewind undo")

    async def _record_undo(
        self, conn: Connection, session_id: str, now: float, keep_entries: int, kept_runs: int, removed: int
    ) -> None:
        """Inside an undoable rewind, after it: record the undo (``kept_runs`` whole runs were kept)."""
        raise NotImplementedError("this session store keeps no rewind undo")

    # -- stored runs -------------------------------------------------------------------

    def _meta(self, text: Any, session_id: str, run_id: str) -> dict[str, Any]:
        return stored_object(text, f"meta of run {run_id!r} of session {session_id!r}", self.where)

    def _run_entries(
        self, session_id: str, run_id: str, count: int, text: Any, where: str, first: int
    ) -> tuple[Entry, ...]:
        """A stored run's entries; ``where`` and ``first`` (its first entry's number) name a damaged one."""
        if text is None:  # the column is NOT NULL: the run's row went away under the caller
            raise DatabaseFileError(
                f"run {run_id!r} of session {session_id!r} in {self.where} has lost its entries: the database "
                "is damaged. Restore it from a backup."
            )
        entries = entries_from_json_array(text, where=where, first=first)
        if len(entries) != count:
            # Positions in the session (rewind, pages) count on the recorded number.
            raise DatabaseFileError(
                f"run {run_id!r} of session {session_id!r} in {self.where} is damaged: it holds {len(entries)} "
                f"entries where {count} were recorded. Restore the database from a backup."
            )
        return entries

    def _where(self, session_id: str, run_id: str | None = None) -> str:
        run = f", run {run_id!r}" if run_id else ""
        return f"session {session_id!r}{run} of {self.where}"


# -- helpers the extras share ------------------------------------------------------------


async def delete_runs(conn: Connection, seqs: list[int]) -> None:
    """Delete the live runs ``seqs``."""
    if seqs:
        await conn.execute("DELETE FROM lovia_segments WHERE seq = ANY(%s)", (seqs,))


def json_array(items: list[Any]) -> str:
    """Stored JSON items written back as the array :func:`~lovia.entries.entries_to_json_array` makes."""
    return json.dumps(items, ensure_ascii=False, separators=(",", ":"))


_BUMP_ACTIVITY = "ON CONFLICT (session_id) DO UPDATE SET last_activity = excluded.last_activity"


async def touch(conn: Connection, session_id: str, now: float, *, bump: bool = True) -> None:
    """Record the session in ``lovia_session_info`` (made ``now`` if new); ``bump`` moves its last activity."""
    await conn.execute(
        "INSERT INTO lovia_session_info (session_id, title, created_at, last_activity) VALUES (%s, NULL, %s, %s) "
        + (_BUMP_ACTIVITY if bump else "ON CONFLICT (session_id) DO NOTHING"),
        (session_id, now, now),
    )



def without_nul(column: str) -> str:
    """SQL: the JSON text ``column`` as ``json`` that PostgreSQL's operators can read.

    They refuse a ``\\u0000`` escape anywhere in the value (text cannot hold NUL), which lovia's
    JSON writes for a NUL character in a message or a meta; it is read as a space. Any ``\\u0000``
    in valid JSON is an escape or follows an escaped backslash, so the text stays valid JSON.
    """
    return f"replace({column}, '\\u0000', '\\u0020')::json"


# The seconds a run executed, from its meta (as Segment.run_seconds reads it): ``active_seconds``
# when it is a number, else its timing's duration, never below 0.
_META = "gm.meta"  # g.meta read once per row (see session_infos)
_RUN_SECONDS = f"""CASE
    WHEN json_typeof({_META} -> 'active_seconds') = 'number' THEN ({_META} ->> 'active_seconds')::float8
    WHEN json_typeof({_META} #> '{{timing,finished_at}}') = 'number'
         AND json_typeof({_META} #> '{{timing,started_at}}') = 'number'
        THEN GREATEST(0, ({_META} #>> '{{timing,finished_at}}')::float8
                         - ({_META} #>> '{{timing,started_at}}')::float8)
    END"""

# The text of a session's first user message (a NUL in it read as a space: see without_nul): found
# in the first run whose kinds name one, so only that run's array is parsed.
FIRST_USER_TEXT = f"""(
    SELECT item -> 'text' FROM json_array_elements((
        SELECT {without_nul("f.entries")} FROM lovia_segments AS f
        WHERE f.session_id = s.session_id AND ' ' || f.kinds || ' ' LIKE '%% {UserMessage.type} %%'
        ORDER BY f.start, f.seq LIMIT 1
    )) WITH ORDINALITY AS a(item, n)
    WHERE json_typeof(item) = 'object' AND item ->> 'type' = '{UserMessage.type}' ORDER BY n LIMIT 1
)"""


async def session_infos(conn: Connection, only: str | None, limit: int | None = None) -> list[SessionInfo]:
    """``only`` that session, or the ``limit`` most recently active (all when ``None``), newest first."""
    where, args = ("WHERE i.session_id = %s", (only,)) if only is not None else ("", ())
    # A page reads (and titles) only its sessions: the terminal UI's first paint lists the newest.
    sessions = "lovia_session_info" if limit is None else \
        f"(SELECT * FROM lovia_session_info ORDER BY last_activity DESC LIMIT {int(limit)})"
    cur = await conn.execute(
        f"""WITH s AS (
                SELECT i.session_id, i.title, i.created_at, i.last_activity,
                       COALESCE(SUM(g.entry_count), 0) AS entry_count, COUNT(g.seq) AS run_count,
                       COALESCE(SUM({_RUN_SECONDS}), 0) AS seconds
                FROM {sessions} AS i LEFT JOIN lovia_segments AS g USING (session_id)
                LEFT JOIN LATERAL (SELECT {without_nul("g.meta")} AS meta) AS gm ON true
                {where}
                GROUP BY i.session_id, i.title, i.created_at, i.last_activity
            )
            SELECT s.session_id, s.title, s.created_at, s.last_activity, s.entry_count, s.run_count, s.seconds,
                   CASE WHEN s.title IS NULL THEN {FIRST_USER_TEXT} END
            FROM s ORDER BY s.last_activity DESC""",
        args,
    )
    infos = []
    for session_id, title, created_at, last_activity, entry_count, run_count, seconds, first in await cur.fetchall():
        if title is None:
            title = title_from(first) if isinstance(first, str) else ""
        infos.append(SessionInfo(session_id, title, int(entry_count), int(run_count), created_at, last_activity,
                                 float(seconds)))
    return infos
