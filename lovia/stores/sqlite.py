"""SQLite stores: sessions and checkpoints that survive crashes.

Both take a file path and ``wal=False``; ``wal=True`` switches the file to WAL journal mode
with a long busy timeout, for a file shared by several stores or processes. New files are
created readable by their owner only. See :mod:`lovia.stores._sqlite_db` for how opening,
migration and transactions work.

How a session is kept (schema 3), and why. Each run is one row of ``lovia_segments`` (run id,
meta, entry count, and ``start``: the position of its first entry in the session) and one row of
``lovia_segment_entries`` holding its entries as one JSON array, with their type tags
(``kinds``) beside it. Loading a session reads one row per run, and the arrays are decoded by
msgspec straight into the entry dataclasses (:func:`lovia.entries.entries_from_json_array`).
``start`` lets ``read_page`` find and read only the runs a page touches. The arrays live in a
table of their own so that ``lovia_segments`` stays narrow: listing sessions sums counts and
meta over every run without paging through conversation text.

Measured with ``python bench/stores.py`` (10,000 entries in 1,000 runs, medians with the
spread on the 2-core machine shared with other work), against raw sqlite3 reading the same
entries stored one JSON array per run and ``json.loads``-ing them into dicts. Schema 2 (a row
per entry, ``json.loads`` per row, then a dataclass from each dict) took 2.65x (1.83-3.36) of
that in the default journal mode and 2.70x (1.58-3.52) with WAL. Schema 3 takes 0.89x
(0.61-1.71) and 0.90x (0.57-1.65) (another run: 0.97x and 0.96x), below the baseline, whose
``json.loads`` builds only dicts.
One load, taken apart: fetching the 1,000 rows 5.5 ms (the baseline's 3.7 ms: a run is two
rows, joined), decoding 14 ms (the baseline's ``json.loads`` 22.5 ms).

The codec was chosen by measuring decoders of the same 10,000 entries side by side (fastest of
15, ms): ``json.loads`` to dicts 37; dicts to the dataclasses 44; msgspec Structs in a tagged
union, then copied into the dataclasses, 43 (the copy costs more than the decoding saves);
msgspec into the dataclasses with a decoder made per sequence of type tags, the tags read from
the JSON in a first pass, 21. Trusting the stored ``kinds`` instead of that first pass was
faster still (11) but was not taken: an entry whose own tag disagrees with ``kinds`` (a damaged
row) would decode silently as the wrong kind, where the spec wants it refused. ``kinds`` only
narrows which runs a trim or a title search reads. The entry classes stay dataclasses: they are
public API.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import sqlite3
import time
from collections.abc import Sequence
from typing import Any

import msgspec

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
from lovia.entries import (
    Entry,
    ToolResult,
    UserMessage,
    entries_from_json,
    entries_from_json_array,
    entries_to_json_array,
    entry_kinds,
    entry_to_dict,
)
from lovia.errors import DatabaseFileError, StoreError, UserError
from lovia.session import (
    FORK_META_KEY,
    EntryPage,
    ForkOrigin,
    RewindUndo,
    RunSpan,
    SearchHit,
    Segment,
    SessionChanges,
    SessionInfo,
    TrashedSession,
    TrimPreview,
)
from lovia.stores._common import (
    check_fork,
    check_keep,
    check_page,
    check_purge,
    clean_meta,
    filter_sessions,
    fork_target_taken,
    new_run_id,
    nothing_to_fork,
    nothing_to_undo,
    page_of,
    page_window,
    readable_run_summaries,
    restore_refused,
    rewind_cut,
    title_from,
)
from lovia.stores._search import (
    ELLIPSIS,
    MARK_CLOSE,
    MARK_OPEN,
    SNIPPET_WORDS,
    check_search_limit,
    parse_query,
    unmark_lines,
)
from lovia.stores._sqlite_db import SQLiteDatabase, StoreSchema, stored_object
from lovia.timing import ModelStep, step_from_dict, step_to_dict
from lovia.transcript import trim_output, truncate_run

__all__ = ["CHECKPOINT_SCHEMA", "SESSION_SCHEMA", "SQLiteCheckpointer", "SQLiteSession"]


# -- schemas -----------------------------------------------------------------------------


def _session_v1(conn: sqlite3.Connection) -> None:
    conn.execute(
        """CREATE TABLE lovia_segments (
            seq INTEGER PRIMARY KEY,
            session_id TEXT NOT NULL,
            run_id TEXT NOT NULL,
            meta TEXT NOT NULL,
            entry_count INTEGER NOT NULL,
            appended_at REAL NOT NULL,
            UNIQUE (session_id, run_id)
        )"""
    )
    conn.execute(
        """CREATE TABLE lovia_entries (
            seq INTEGER PRIMARY KEY,
            segment_seq INTEGER NOT NULL,
            session_id TEXT NOT NULL,
            type TEXT NOT NULL,
            data TEXT NOT NULL
        )"""
    )
    conn.execute("CREATE INDEX lovia_entries_by_session ON lovia_entries (session_id)")


def _session_v2(conn: sqlite3.Connection) -> None:
    # Version 2 keeps per-session facts (a title given by a user, first and last activity)
    # so that listing sessions does not have to scan every segment.
    conn.execute(
        """CREATE TABLE lovia_session_info (
            session_id TEXT PRIMARY KEY,
            title TEXT,
            created_at REAL NOT NULL,
            last_activity REAL NOT NULL
        )"""
    )
    conn.execute(
        """INSERT INTO lovia_session_info (session_id, title, created_at, last_activity)
           SELECT session_id, NULL, MIN(appended_at), MAX(appended_at)
           FROM lovia_segments GROUP BY session_id"""
    )


def _session_v3(conn: sqlite3.Connection) -> None:
    # Version 3 keeps a run's entries as one JSON array in one row, with their type tags
    # beside it, and where the run starts in its session's transcript: a session loads with
    # one row per run instead of one per entry, and a page is found by position. See the
    # module docstring for the measurements behind it.
    conn.execute("ALTER TABLE lovia_segments ADD COLUMN start INTEGER NOT NULL DEFAULT 0")
    conn.execute(
        """CREATE TABLE lovia_segment_entries (
            segment_seq INTEGER PRIMARY KEY,
            kinds TEXT NOT NULL,
            entries TEXT NOT NULL
        )"""
    )
    damaged = conn.execute(
        "SELECT e.session_id FROM lovia_entries AS e LEFT JOIN lovia_segments AS g ON g.seq = e.segment_seq "
        "WHERE g.seq IS NULL OR g.session_id IS NOT e.session_id OR typeof(e.data) != 'text' "
        "OR typeof(e.type) != 'text' LIMIT 1"
    ).fetchone()
    if damaged is not None:
        # Raised inside the migration's transaction: the file stays as it was, at version 2.
        raise DatabaseFileError(
            f"an entry of session {damaged[0]!r} is damaged (it belongs to no stored run, or is not text), so "
            "lovia cannot move the file to its new layout and left it as it was. Restore it from a backup, "
            "or move it aside and start a new file."
        )
    rows = conn.execute(
        "SELECT g.seq, g.session_id, e.type, e.data FROM lovia_segments AS g "
        "LEFT JOIN lovia_entries AS e ON e.segment_seq = g.seq ORDER BY g.session_id, g.seq, e.seq"
    )
    # One run at a time, so a large file is not held in memory. The stored texts are joined as
    # they are, so nothing of them changes (fields a newer lovia wrote stay); a damaged one
    # leaves its run's array damaged, refused when it is read.
    positions: list[tuple[int, int, int]] = []  # start, entry count, seq of each run
    session, position = None, 0
    for (seq, session_id), items in itertools.groupby(rows, key=lambda row: (row[0], row[1])):
        entries = [(kind, data) for _, _, kind, data in items if data is not None]  # NULLs: a run of none
        if session_id != session:
            session, position = session_id, 0
        conn.execute(
            "INSERT INTO lovia_segment_entries (segment_seq, kinds, entries) VALUES (?, ?, ?)",
            (seq, " ".join(kind for kind, _ in entries), "[" + ",".join(data for _, data in entries) + "]"),
        )
        positions.append((position, len(entries), seq))
        position += len(entries)
    conn.executemany("UPDATE lovia_segments SET start = ?, entry_count = ? WHERE seq = ?", positions)
    conn.execute("DROP TABLE lovia_entries")
    conn.execute("CREATE INDEX lovia_segments_by_start ON lovia_segments (session_id, start)")


def _session_v4(conn: sqlite3.Connection) -> None:
    # Version 4 keeps what a user can take back: sessions deleted to the trash, and what the
    # last rewind of a session dropped. Both move a run's rows out of ``lovia_segments`` and
    # ``lovia_segment_entries`` into tables of their own (and back on restore or undo), so the
    # live tables hold only live sessions, and what watches them (the search index's
    # triggers) sees a deletion and a re-insertion, never a hidden row.
    conn.execute(
        """CREATE TABLE lovia_trash (
            trash_id INTEGER PRIMARY KEY,
            session_id TEXT NOT NULL,
            title TEXT,
            shown_title TEXT NOT NULL,
            created_at REAL NOT NULL,
            last_activity REAL NOT NULL,
            deleted_at REAL NOT NULL
        )"""
    )
    conn.execute("CREATE INDEX lovia_trash_by_deleted ON lovia_trash (deleted_at)")
    conn.execute(
        """CREATE TABLE lovia_trash_runs (
            trash_id INTEGER NOT NULL,
            position INTEGER NOT NULL,
            run_id TEXT NOT NULL,
            meta TEXT NOT NULL,
            entry_count INTEGER NOT NULL,
            appended_at REAL NOT NULL,
            kinds TEXT NOT NULL,
            entries TEXT NOT NULL,
            PRIMARY KEY (trash_id, position)
        ) WITHOUT ROWID"""
    )
    conn.execute(
        """CREATE TABLE lovia_rewind_undo (
            session_id TEXT PRIMARY KEY,
            rewound_at REAL NOT NULL,
            keep_entries INTEGER NOT NULL,
            kept_runs INTEGER NOT NULL,
            removed INTEGER NOT NULL,
            last_activity REAL NOT NULL,
            added_run_id TEXT
        )"""
    )
    conn.execute(
        """CREATE TABLE lovia_rewind_undo_runs (
            session_id TEXT NOT NULL,
            position INTEGER NOT NULL,
            run_id TEXT NOT NULL,
            meta TEXT NOT NULL,
            entry_count INTEGER NOT NULL,
            appended_at REAL NOT NULL,
            kinds TEXT NOT NULL,
            entries TEXT NOT NULL,
            PRIMARY KEY (session_id, position)
        ) WITHOUT ROWID"""
    )


# -- full-text search (schema 5) ---------------------------------------------------------
#
# One FTS5 document per searched entry, so a hit names its entry: its rowid is the run's
# ``seq`` times 2**24 plus the entry's index in the run's array, and a hit's place in its
# session is that run's ``start`` plus the index, read when searching (a rewind or a restore
# moves runs; their rowids stay theirs). A run's documents are one rowid range, so a run is
# unindexed with one range delete. Titles a user gave are documents too, one per session, with
# rowids from 2**62 on (numbered by ``lovia_search_titles``, the latest given the highest), so
# one ``ORDER BY rowid DESC`` reads titles first, then entries newest first: the index's own
# order, which FTS5 walks and stops after ``LIMIT`` hits, ranking none. Triggers on the tables that hold entries
# and titles keep the index in step with every write, whoever makes it (append, rewind, trim,
# clear, the trash and the rewind undo, another process).
_RUN_DOCS = 1 << 24
"""Documents a run may have: an entry's index in its run is below it."""
_TITLE_DOCS = 1 << 62
"""Where titles' rowids start (runs' end below it: ``seq`` stays below 2**38)."""
_ENTRY_TYPE = "CASE WHEN item.type = 'object' THEN json_extract(item.value, '$.type') END"
"""The type of the entry ``item`` (a ``json_each`` row of a run's array), ``NULL`` for an item that
is no object (a damaged run, refused when read): ``json_extract`` on it would fail the statement,
and with it the write or migration that indexes or lists the run."""
_SEARCHED_TEXT = f"""CASE {_ENTRY_TYPE}
        WHEN 'user' THEN json_extract(item.value, '$.text')
        WHEN 'assistant' THEN json_extract(item.value, '$.text')
        WHEN 'tool_result' THEN json_extract(item.value, '$.output')
        WHEN 'tool_call' THEN json_extract(item.value, '$.name') || ' ' || json_extract(item.value, '$.arguments')
    END"""


def _index_run(run: str) -> str:
    """The statement indexing the searched entries of ``{run}`` (a row of ``lovia_segment_entries``).

    A damaged array (not valid JSON) is left unindexed, and so is an item of it that is no object,
    rather than failing the write; reading the run refuses it anyway.
    """
    return f"""INSERT INTO lovia_search (rowid, body, kind)
        SELECT {run}.segment_seq * {_RUN_DOCS} + item.key, {_SEARCHED_TEXT}, {_ENTRY_TYPE}
        FROM json_each(CASE WHEN json_valid({run}.entries) THEN {run}.entries ELSE '[]' END) AS item
        WHERE item.key < {_RUN_DOCS} AND {_SEARCHED_TEXT} != ''"""


def _unindex_run(run: str) -> str:
    return (f"DELETE FROM lovia_search WHERE rowid >= {run}.segment_seq * {_RUN_DOCS} "
            f"AND rowid < ({run}.segment_seq + 1) * {_RUN_DOCS}")


_INDEX_TITLE = f"""INSERT INTO lovia_search_titles (session_id) SELECT new.session_id WHERE new.title IS NOT NULL;
    INSERT INTO lovia_search (rowid, body, kind) SELECT {_TITLE_DOCS} + doc, new.title, 'title'
        FROM lovia_search_titles WHERE session_id = new.session_id AND new.title IS NOT NULL"""
_UNINDEX_TITLE = f"""DELETE FROM lovia_search
        WHERE rowid = {_TITLE_DOCS} + (SELECT doc FROM lovia_search_titles WHERE session_id = old.session_id);
    DELETE FROM lovia_search_titles WHERE session_id = old.session_id"""


def fts5_available() -> bool:
    """Whether this Python's SQLite has FTS5 (CPython's bundled SQLite does on most builds)."""
    try:
        with contextlib.closing(sqlite3.connect(":memory:")) as probe:
            probe.execute("CREATE VIRTUAL TABLE probe USING fts5(body)")
        return True
    except sqlite3.OperationalError:
        return False


def _session_v5(conn: sqlite3.Connection) -> None:
    # Version 5 adds the search index (see above) and indexes what the file holds. Without
    # FTS5 the file still moves to version 5, without an index: search then says why it
    # cannot, and everything else works.
    if not fts5_available():
        return
    conn.execute("CREATE VIRTUAL TABLE lovia_search USING fts5(body, kind UNINDEXED, "
                 "tokenize = 'unicode61 remove_diacritics 2')")
    conn.execute("CREATE TABLE lovia_search_titles (doc INTEGER PRIMARY KEY, session_id TEXT NOT NULL UNIQUE)")
    conn.execute(f"""CREATE TRIGGER lovia_search_run_added AFTER INSERT ON lovia_segment_entries BEGIN
        {_index_run("new")}; END""")
    conn.execute(f"""CREATE TRIGGER lovia_search_run_removed AFTER DELETE ON lovia_segment_entries BEGIN
        {_unindex_run("old")}; END""")
    conn.execute(f"""CREATE TRIGGER lovia_search_run_changed AFTER UPDATE OF entries, segment_seq
        ON lovia_segment_entries BEGIN {_unindex_run("old")}; {_index_run("new")}; END""")
    conn.execute(f"""CREATE TRIGGER lovia_search_title_added AFTER INSERT ON lovia_session_info BEGIN
        {_INDEX_TITLE}; END""")
    conn.execute(f"""CREATE TRIGGER lovia_search_title_changed AFTER UPDATE OF title, session_id
        ON lovia_session_info BEGIN {_UNINDEX_TITLE}; {_INDEX_TITLE}; END""")
    conn.execute(f"""CREATE TRIGGER lovia_search_title_removed AFTER DELETE ON lovia_session_info BEGIN
        {_UNINDEX_TITLE}; END""")
    # What the file holds already, through the statements the triggers run.
    conn.execute(_index_run("run").replace("FROM json_each", "FROM lovia_segment_entries AS run, json_each"))
    conn.execute("INSERT INTO lovia_search_titles (session_id) SELECT session_id FROM lovia_session_info "
                 "WHERE title IS NOT NULL")
    conn.execute(f"INSERT INTO lovia_search (rowid, body, kind) SELECT {_TITLE_DOCS} + t.doc, i.title, 'title' "
                 "FROM lovia_search_titles AS t JOIN lovia_session_info AS i USING (session_id)")


# -- the change log (schema 6) -------------------------------------------------------------
#
# Per session, the number of the last change to its listing, so a list of thousands of sessions
# is updated session by session (``sessions_changed``) rather than read whole after every write
# somewhere else. Every write a listing shows goes through ``lovia_session_info`` (an append,
# a rewind and an undo bump its activity; a rename sets its title; a new session, a fork and a
# restore insert its row; a deletion, to the trash or for good, deletes it), so triggers on that
# table alone keep the log, whoever writes. A session deleted keeps its row: the next reader
# learns it is gone. Numbers only grow (the highest plus one, under the write lock).
_LOG_CHANGE = """INSERT INTO lovia_session_changes (session_id, change)
    VALUES ({row}.session_id, (SELECT IFNULL(MAX(change), 0) + 1 FROM lovia_session_changes))
    ON CONFLICT (session_id) DO UPDATE SET change = excluded.change"""


def _session_v6(conn: sqlite3.Connection) -> None:
    conn.execute("CREATE TABLE lovia_session_changes (session_id TEXT PRIMARY KEY, change INTEGER NOT NULL)")
    conn.execute("CREATE INDEX lovia_session_changes_by_change ON lovia_session_changes (change)")
    conn.execute(f"""CREATE TRIGGER lovia_session_added AFTER INSERT ON lovia_session_info BEGIN
        {_LOG_CHANGE.format(row="new")}; END""")
    conn.execute(f"""CREATE TRIGGER lovia_session_changed AFTER UPDATE ON lovia_session_info BEGIN
        {_LOG_CHANGE.format(row="new")}; END""")
    conn.execute(f"""CREATE TRIGGER lovia_session_renumbered AFTER UPDATE OF session_id ON lovia_session_info
        WHEN old.session_id != new.session_id BEGIN {_LOG_CHANGE.format(row="old")}; END""")
    conn.execute(f"""CREATE TRIGGER lovia_session_removed AFTER DELETE ON lovia_session_info BEGIN
        {_LOG_CHANGE.format(row="old")}; END""")


def _checkpoint_v1(conn: sqlite3.Connection) -> None:
    conn.execute(
        """CREATE TABLE lovia_runs (
            run_id TEXT PRIMARY KEY,
            status TEXT NOT NULL,
            session_id TEXT,
            updated_at REAL NOT NULL,
            entry_count INTEGER NOT NULL,
            head TEXT NOT NULL
        )"""
    )
    conn.execute("CREATE INDEX lovia_runs_by_status ON lovia_runs (status, updated_at)")
    conn.execute(
        """CREATE TABLE lovia_run_entries (
            run_id TEXT NOT NULL,
            position INTEGER NOT NULL,
            type TEXT NOT NULL,
            data TEXT NOT NULL,
            PRIMARY KEY (run_id, position)
        ) WITHOUT ROWID"""
    )


def _checkpoint_v2(conn: sqlite3.Connection) -> None:
    """The partial-answer journal: per run, the text so far of the model turn in progress.

    Apart from ``lovia_runs`` and ``lovia_run_entries``, so a resume is what the spec says
    whatever it holds. ``claim`` and ``turn`` are the stored head's when the text was written:
    a save of the run under another claim or turn (the turn's snapshot, a resume going on)
    clears it, a lease renewal during the stream does not. ``step`` is the turn's timing so far
    (:func:`lovia.timing.step_to_dict` as JSON). A rowid table: the text can be long.
    """
    conn.execute(
        """CREATE TABLE lovia_run_partials (
            run_id TEXT PRIMARY KEY,
            claim TEXT,
            turn INTEGER NOT NULL,
            text TEXT NOT NULL,
            step TEXT,
            updated_at REAL NOT NULL
        )"""
    )


SESSION_SCHEMA = StoreSchema("session", (_session_v1, _session_v2, _session_v3, _session_v4, _session_v5,
                                         _session_v6))
CHECKPOINT_SCHEMA = StoreSchema("checkpoint", (_checkpoint_v1, _checkpoint_v2))
STORE_SCHEMAS = (SESSION_SCHEMA, CHECKPOINT_SCHEMA)
"""Every store that may share a file: opening any of them checks all their tables' names first."""


class _SQLiteStore:
    """What both SQLite stores share: a lazily opened database and a clean close."""

    _schema: StoreSchema

    def __init__(self, path: str | os.PathLike[str], *, wal: bool = False) -> None:
        self._db = SQLiteDatabase(path, wal=wal, schema=self._schema, others=STORE_SCHEMAS)

    @property
    def path(self) -> str:
        """The database file."""
        return str(self._db.path)

    async def open(self) -> None:
        """Open, validate and migrate the file now instead of at first use."""
        await self._db.read(lambda conn: None, "opening")

    async def close(self) -> None:
        """Close the connection. Idempotent; the store cannot be used afterwards."""
        await self._db.close()

    async def outside_change_token(self) -> int:
        """SQLite's ``PRAGMA data_version`` on this store's connection.

        It changes when another connection (the other store on the file, another store
        object, another process) committed to the file since the previous call, never for
        this store's own writes or any reads. See
        :class:`~lovia.session.ChangeReportingSession`; the two SQLite stores on one file
        have a connection each, so each one sees the other's commits.
        """
        return await self._db.data_version()

    async def __aenter__(self):
        await self.open()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.path!r}, wal={self._db.wal})"


_encode_json = msgspec.json.Encoder().encode
"""The checkpointer's JSON encoder, for entries and heads: a snapshot encodes both, and msgspec
does it in a fraction of ``json.dumps``'s time; its text is the same compact UTF-8 JSON."""


def _encode(entries: Sequence[Entry]) -> list[tuple[str, str]]:
    """A checkpoint's entries as rows: each one's type and its JSON, as :func:`entry_to_json` writes it."""
    return [(entry.type, _encode_json(entry_to_dict(entry)).decode()) for entry in entries]


# A session's runs in the order they were appended: ``start`` only grows along a session, and
# ties (runs of no entries) fall to ``seq``, which also grows; the (session_id, start) index
# yields exactly this order, so no sort is needed.
_IN_ORDER = "ORDER BY g.start, g.seq"
_RUNS_WITH_ENTRIES = (
    "FROM lovia_segments AS g LEFT JOIN lovia_segment_entries AS e ON e.segment_seq = g.seq "
    "WHERE g.session_id = ?"
)
# Where the next run of a session starts: the end of its last one.
_SESSION_END = (
    "SELECT start + entry_count FROM lovia_segments WHERE session_id = ? ORDER BY start DESC, seq DESC LIMIT 1"
)


class SQLiteSession(_SQLiteStore):
    """A :class:`~lovia.session.Session` in a SQLite file.

    Besides the protocol it offers ``rewind``, ``trim_tool_results`` with its preview, the
    listing used by the terminal UI (``list_sessions``, ``session_info``, ``rename_session``),
    ``read_page`` (:class:`~lovia.session.PagedSession`) and ``outside_change_token``, which
    tells of other processes' writes.

    Each run is a row of ``lovia_segments`` and a row of its entries as one JSON array; the
    module docstring tells why, with the measurements.
    """

    _schema = SESSION_SCHEMA
    _indexed = False  # the search index was seen in the file (it is never dropped)

    async def segments(self, session_id: str) -> list[Segment]:
        def read(conn: sqlite3.Connection) -> list[tuple[str, int, str, Any]]:
            return conn.execute(
                f"SELECT g.run_id, g.entry_count, g.meta, e.entries {_RUNS_WITH_ENTRIES} {_IN_ORDER}",
                (session_id,),
            ).fetchall()

        rows = await self._db.read(read, f"reading session {session_id!r}")
        return [
            Segment(
                run_id,
                self._run_entries(session_id, run_id, count, text, self._where(session_id, run_id), 0),
                stored_object(meta, f"meta of run {run_id!r} of session {session_id!r}", self.path),
            )
            for run_id, count, meta, text in rows
        ]

    async def load(self, session_id: str) -> list[Entry]:
        def read(conn: sqlite3.Connection) -> list[tuple[str, int, int, Any]]:
            return conn.execute(
                f"SELECT g.run_id, g.start, g.entry_count, e.entries {_RUNS_WITH_ENTRIES} {_IN_ORDER}",
                (session_id,),
            ).fetchall()

        rows = await self._db.read(read, f"loading session {session_id!r}")
        # Decoded on the event loop's thread: it is CPU work either way, and building
        # objects here avoids handing them across threads.
        entries: list[Entry] = []
        for run_id, start, count, text in rows:
            # A damaged entry is named by its run and its position in the session.
            entries.extend(self._run_entries(session_id, run_id, count, text, self._where(session_id, run_id), start))
        return entries

    async def read_page(self, session_id: str, *, start: int | None = None, limit: int = 200) -> EntryPage:
        """See :class:`~lovia.session.PagedSession`. Reads only the runs the page touches."""
        check_page(start, limit)

        def read(conn: sqlite3.Connection) -> tuple[int, list[tuple[str, int, int, str, Any]]]:
            last = conn.execute(_SESSION_END, (session_id,)).fetchone()
            total = last[0] if last else 0
            first, end = page_window(total, start, limit)
            if first >= end:
                return total, []
            # From the run holding position ``first`` (the last to start at or before it) to
            # the last run starting before ``end``.
            return total, conn.execute(
                f"SELECT g.run_id, g.start, g.entry_count, g.meta, e.entries {_RUNS_WITH_ENTRIES} "
                "AND g.entry_count > 0 AND g.start < ? AND g.start >= "
                "(SELECT MAX(start) FROM lovia_segments WHERE session_id = ? AND start <= ?) "
                f"{_IN_ORDER}",
                (session_id, end, session_id, first),
            ).fetchall()

        total, rows = await self._db.read(read, f"reading a page of session {session_id!r}")
        spans = [
            (
                RunSpan(run_id, run_start, count,
                        stored_object(meta, f"meta of run {run_id!r} of session {session_id!r}", self.path)),
                self._run_entries(session_id, run_id, count, text, self._where(session_id, run_id), run_start),
            )
            for run_id, run_start, count, meta, text in rows
        ]
        return page_of(spans, total, start, limit)

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

        def write(conn: sqlite3.Connection) -> None:
            inserted = conn.execute(
                "INSERT INTO lovia_segments (session_id, run_id, meta, entry_count, appended_at, start) "
                f"SELECT ?, ?, ?, ?, ?, COALESCE(({_SESSION_END}), 0) WHERE true "
                "ON CONFLICT (session_id, run_id) DO NOTHING",
                (session_id, run_id, meta_json, len(entries), now, session_id),
            )
            if not inserted.rowcount:
                return  # idempotent by run id: a replayed run never duplicates entries
            conn.execute(
                "INSERT INTO lovia_segment_entries (segment_seq, kinds, entries) VALUES (?, ?, ?)",
                (inserted.lastrowid, kinds, text),
            )
            _touch(conn, session_id, now)
            undo = conn.execute("SELECT added_run_id FROM lovia_rewind_undo WHERE session_id = ?",
                                (session_id,)).fetchone()
            if undo is not None:  # the first run after an undoable rewind is its resend; the next one forgets it
                if undo[0] is None:
                    conn.execute("UPDATE lovia_rewind_undo SET added_run_id = ? WHERE session_id = ?",
                                 (run_id, session_id))
                else:
                    _forget_undo(conn, session_id)

        await self._db.write(write, f"appending to session {session_id!r}")
        return run_id

    async def clear(self, session_id: str) -> None:
        def write(conn: sqlite3.Connection) -> None:
            conn.execute(
                "DELETE FROM lovia_segment_entries WHERE segment_seq IN "
                "(SELECT seq FROM lovia_segments WHERE session_id = ?)",
                (session_id,),
            )
            conn.execute("DELETE FROM lovia_segments WHERE session_id = ?", (session_id,))
            conn.execute("DELETE FROM lovia_session_info WHERE session_id = ?", (session_id,))
            # For good (the spec's clear): what the trash and the undo keep of it goes too.
            _forget_undo(conn, session_id)
            conn.execute("DELETE FROM lovia_trash_runs WHERE trash_id IN "
                         "(SELECT trash_id FROM lovia_trash WHERE session_id = ?)", (session_id,))
            conn.execute("DELETE FROM lovia_trash WHERE session_id = ?", (session_id,))

        await self._db.write(write, f"clearing session {session_id!r}")

    # -- trash (see lovia.session.TrashingSession) -------------------------------------------

    async def trash_session(self, session_id: str) -> TrashedSession | None:
        """Move the session to the trash; ``None`` when it is unknown. Its rewind undo is forgotten.

        Its runs' rows move, in one transaction, to ``lovia_trash_runs``, as they are stored
        (fields a newer lovia wrote included).
        """
        def write(conn: sqlite3.Connection) -> TrashedSession | None:
            infos = _session_infos(conn, session_id)
            if not infos:
                return None
            info = infos[0]
            (title,) = conn.execute("SELECT title FROM lovia_session_info WHERE session_id = ?",
                                    (session_id,)).fetchone()
            now = time.time()
            trash_id = conn.execute(
                "INSERT INTO lovia_trash (session_id, title, shown_title, created_at, last_activity, deleted_at) "
                "VALUES (?, ?, ?, ?, ?, ?)",
                (session_id, title, info.title, info.created_at, info.last_activity, now),
            ).lastrowid
            assert trash_id is not None
            _move_runs_out(conn, session_id, "lovia_trash_runs (trash_id, ", trash_id, 0)
            conn.execute("DELETE FROM lovia_session_info WHERE session_id = ?", (session_id,))
            _forget_undo(conn, session_id)
            return TrashedSession(trash_id, session_id, info.title, info.entry_count, info.run_count,
                                  info.created_at, info.last_activity, now)

        return await self._db.write(write, f"moving session {session_id!r} to the trash")

    async def list_trash(self) -> list[TrashedSession]:
        """What the trash holds, most recently deleted first."""
        def read(conn: sqlite3.Connection) -> list[TrashedSession]:
            rows = conn.execute(
                "SELECT t.trash_id, t.session_id, t.shown_title, COALESCE(SUM(r.entry_count), 0), COUNT(r.run_id), "
                "t.created_at, t.last_activity, t.deleted_at FROM lovia_trash AS t "
                "LEFT JOIN lovia_trash_runs AS r USING (trash_id) GROUP BY t.trash_id "
                "ORDER BY t.deleted_at DESC, t.trash_id DESC"
            ).fetchall()
            return [TrashedSession(*row) for row in rows]

        return await self._db.read(read, "listing the trash")

    async def restore_session(self, trash_id: int) -> str:
        """Bring a deletion back; refused when it is gone or its session id is in use again."""
        def write(conn: sqlite3.Connection) -> str:
            row = conn.execute("SELECT session_id, title, created_at, last_activity FROM lovia_trash "
                               "WHERE trash_id = ?", (trash_id,)).fetchone()
            if row is None:
                raise UserError(f"nothing in the trash is numbered {trash_id}: it was restored or purged meanwhile")
            session_id, title, created_at, last_activity = row
            if conn.execute("SELECT 1 FROM lovia_session_info WHERE session_id = ? UNION ALL "
                            "SELECT 1 FROM lovia_segments WHERE session_id = ? LIMIT 1",
                            (session_id, session_id)).fetchone():
                raise restore_refused(session_id)
            conn.execute("INSERT INTO lovia_session_info (session_id, title, created_at, last_activity) "
                         "VALUES (?, ?, ?, ?)", (session_id, title, created_at, last_activity))
            _move_runs_in(conn, session_id, "lovia_trash_runs", "trash_id", trash_id, 0)
            conn.execute("DELETE FROM lovia_trash WHERE trash_id = ?", (trash_id,))
            return str(session_id)

        return await self._db.write(write, f"restoring item {trash_id} of the trash")

    async def purge_trash(self, *, trash_id: int | None = None, deleted_before: float | None = None) -> int:
        """Forget trashed sessions for good: ``trash_id``, or every one deleted before ``deleted_before``."""
        check_purge(trash_id, deleted_before)

        def write(conn: sqlite3.Connection) -> int:
            ids = [(t,) for (t,) in conn.execute(
                "SELECT trash_id FROM lovia_trash WHERE trash_id = ? OR deleted_at < ?",
                (trash_id, deleted_before),
            )]
            conn.executemany("DELETE FROM lovia_trash_runs WHERE trash_id = ?", ids)
            conn.executemany("DELETE FROM lovia_trash WHERE trash_id = ?", ids)
            return len(ids)

        return await self._db.write(write, "purging the trash")

    # -- the last rewind's undo (see lovia.session.UndoableRewindSession) --------------------

    async def rewind_undoably(self, session_id: str, *, keep_entries: int) -> int:
        """:meth:`rewind`, keeping what it drops as the session's undo (see lovia.session.UndoableRewindSession)."""
        check_keep("keep_entries", keep_entries)
        return await self._db.write(lambda conn: self._rewind(conn, session_id, keep_entries, undoable=True),
                                    f"rewinding session {session_id!r}")

    async def rewind_undo(self, session_id: str) -> RewindUndo | None:
        return await self._db.read(lambda conn: _undo_of(conn, session_id), f"reading the undo of {session_id!r}")

    async def undo_rewind(self, session_id: str) -> RewindUndo:
        """Put the session back as it was before its last undoable rewind (the resend's run dropped)."""
        def write(conn: sqlite3.Connection) -> RewindUndo:
            undo = _undo_of(conn, session_id)
            if undo is None:
                raise nothing_to_undo(session_id)
            (kept_runs,) = conn.execute("SELECT kept_runs FROM lovia_rewind_undo WHERE session_id = ?",
                                        (session_id,)).fetchone()
            heads = conn.execute(
                f"SELECT g.seq, g.start + g.entry_count FROM lovia_segments AS g WHERE g.session_id = ? {_IN_ORDER}",
                (session_id,),
            ).fetchall()
            _delete_runs(conn, [(seq,) for seq, _ in heads[kept_runs:]])
            start = heads[kept_runs - 1][1] if 0 < kept_runs <= len(heads) else 0
            _move_runs_in(conn, session_id, "lovia_rewind_undo_runs", "session_id", session_id, start)
            _forget_undo(conn, session_id)
            _touch(conn, session_id, time.time())
            return undo

        return await self._db.write(write, f"undoing the rewind of session {session_id!r}")

    async def rewind(self, session_id: str, *, keep_entries: int) -> int:
        """Drop the transcript's tail past ``keep_entries`` and return how many entries went.

        Whole later runs are deleted; the run the cut lands in is truncated, made
        tool-consistent and loses its meta. ``keep_entries=0`` empties the session; a count
        at or past the end changes nothing. Checkpoints of rewound runs are left alone: call
        :func:`lovia.rewind_with_checkpoints` to forget them too.
        """
        check_keep("keep_entries", keep_entries)  # before the write lock is taken
        return await self._db.write(lambda conn: self._rewind(conn, session_id, keep_entries, undoable=False),
                                    f"rewinding session {session_id!r}")

    def _rewind(self, conn: sqlite3.Connection, session_id: str, keep_entries: int, *, undoable: bool) -> int:
        heads = conn.execute(
            f"SELECT g.seq, g.run_id, g.entry_count FROM lovia_segments AS g WHERE g.session_id = ? {_IN_ORDER}",
            (session_id,),
        ).fetchall()
        whole, partial = rewind_cut([count for _, _, count in heads], keep_entries)
        if whole == len(heads):
            return 0
        before = sum(count for _, _, count in heads)
        _forget_undo(conn, session_id)
        if undoable:  # what the cut touches, copied as stored before it changes
            (last_activity,) = conn.execute(
                "SELECT COALESCE((SELECT last_activity FROM lovia_session_info WHERE session_id = ?), 0)",
                (session_id,)).fetchone()
            _copy_runs(conn, [seq for seq, _, _ in heads[whole:]], "lovia_rewind_undo_runs (session_id, ",
                       session_id, 0)
        later = [(seq,) for seq, _, _ in heads[whole + (1 if partial else 0):]]
        _delete_runs(conn, later)
        after = sum(count for _, _, count in heads[:whole])
        if partial:
            seq, run_id, count = heads[whole]
            kept, truncated = self._truncated_run(conn, session_id, seq, run_id, count, partial)
            if truncated is not None:
                conn.execute("UPDATE lovia_segment_entries SET kinds = ?, entries = ? WHERE segment_seq = ?",
                             (*truncated, seq))
                conn.execute("UPDATE lovia_segments SET meta = '{}', entry_count = ? WHERE seq = ?", (kept, seq))
            else:
                _delete_runs(conn, [(seq,)])
            after += kept
        now = time.time()
        _touch(conn, session_id, now)
        if undoable:
            conn.execute(
                "INSERT INTO lovia_rewind_undo (session_id, rewound_at, keep_entries, kept_runs, removed, "
                "last_activity, added_run_id) VALUES (?, ?, ?, ?, ?, ?, NULL)",
                (session_id, now, keep_entries, whole, before - after, last_activity),
            )
        return before - after

    def _truncated_run(self, conn: sqlite3.Connection, session_id: str, seq: int, run_id: str, count: int,
                       partial: int) -> tuple[int, tuple[str, str] | None]:
        """The run ``seq`` cut to its first ``partial`` entries as ``rewind`` cuts it (made tool-consistent).

        Returns how many entries are left and their ``(kinds, JSON array)``, ``None`` when none
        is. The array is the stored JSON items of the survivors, not the entries encoded again:
        fields this version does not know (a newer lovia wrote them) are kept.
        """
        row = conn.execute("SELECT entries FROM lovia_segment_entries WHERE segment_seq = ?", (seq,)).fetchone()
        text: Any = row[0] if row else None
        entries = self._run_entries(session_id, run_id, count, text, self._where(session_id, run_id), 0)
        kept = truncate_run(entries, partial)
        if not kept:
            return 0, None
        survivors = {id(entry) for entry in kept}
        items = [item for item, entry in zip(json.loads(text), entries, strict=True) if id(entry) in survivors]
        return len(kept), (entry_kinds(kept), _json_array(items))

    async def fork(self, session_id: str, *, keep_entries: int, new_session_id: str) -> int:
        """Copy the first ``keep_entries`` entries into ``new_session_id``; see :class:`~lovia.session.ForkableSession`.

        One transaction. Whole runs are copied row to row (their stored JSON and meta as they
        are, fields a newer lovia wrote included); only the run the cut lands inside is decoded,
        truncated as ``rewind`` truncates it, and only the first copied run's meta is rewritten
        (to add the :class:`~lovia.session.ForkOrigin`). No schema change: the origin lives in
        that meta, the copied title in ``lovia_session_info``.
        """
        check_fork(keep_entries, session_id, new_session_id)

        def write(conn: sqlite3.Connection) -> int:
            taken = conn.execute(
                "SELECT 1 FROM lovia_session_info WHERE session_id = ? "
                "UNION ALL SELECT 1 FROM lovia_segments WHERE session_id = ? LIMIT 1",
                (new_session_id, new_session_id),
            ).fetchone()
            if taken is not None:
                raise fork_target_taken(new_session_id)
            heads = conn.execute(
                f"SELECT g.seq, g.run_id, g.entry_count, g.meta FROM lovia_segments AS g WHERE g.session_id = ? "
                f"{_IN_ORDER}",
                (session_id,),
            ).fetchall()
            whole, partial = rewind_cut([count for _, _, count, _ in heads], keep_entries)
            # Each copy: the source run's seq (its entries row is copied as it is) or its truncated
            # entries (kinds, JSON), its meta as stored, and its entry count.
            copies: list[tuple[int | None, str, str, int]] = [
                (seq, run_id, meta, count) for seq, run_id, count, meta in heads[:whole] if count
            ]
            truncated: tuple[str, str] | None = None
            if partial:
                seq, run_id, count, _ = heads[whole]
                kept, truncated = self._truncated_run(conn, session_id, seq, run_id, count, partial)
                if truncated is not None:
                    copies.append((None, run_id, "{}", kept))
            if not copies:
                raise nothing_to_fork(session_id)
            now = time.time()
            infos = _session_infos(conn, session_id)
            origin = ForkOrigin(session_id, min(keep_entries, sum(count for _, _, count, _ in heads)), now,
                                infos[0].title if infos else "")
            first_seq, first_run, first_meta, first_count = copies[0]
            meta = stored_object(first_meta, f"meta of run {first_run!r} of session {session_id!r}", self.path)
            meta[FORK_META_KEY] = origin.to_meta()
            copies[0] = (first_seq, first_run, json.dumps(meta, separators=(",", ":")), first_count)
            position = 0
            for seq, run_id, meta_json, count in copies:
                inserted = conn.execute(
                    "INSERT INTO lovia_segments (session_id, run_id, meta, entry_count, appended_at, start) "
                    "VALUES (?, ?, ?, ?, ?, ?)",
                    (new_session_id, new_run_id(), meta_json, count, now, position),
                )
                if seq is None:
                    assert truncated is not None
                    conn.execute("INSERT INTO lovia_segment_entries (segment_seq, kinds, entries) VALUES (?, ?, ?)",
                                 (inserted.lastrowid, *truncated))
                elif conn.execute(
                        "INSERT INTO lovia_segment_entries (segment_seq, kinds, entries) "
                        "SELECT ?, kinds, entries FROM lovia_segment_entries WHERE segment_seq = ?",
                        (inserted.lastrowid, seq)).rowcount != 1:
                    self._run_entries(session_id, run_id, count, None, "", 0)  # raises: its entries are lost
                position += count
            conn.execute(
                "INSERT INTO lovia_session_info (session_id, title, created_at, last_activity) "
                "SELECT ?, (SELECT title FROM lovia_session_info WHERE session_id = ?), ?, ?",
                (new_session_id, session_id, now, now),
            )
            return position

        return await self._db.write(write, f"forking session {session_id!r}")

    async def trim_tool_results(self, session_id: str, *, keep_chars: int = 400, keep_runs: int = 1) -> int:
        """Cut tool outputs older than the last ``keep_runs`` runs to ``keep_chars``; return how many.

        Structure, order and call-id pairing are kept and a marker says what was cut;
        trimming again with the same arguments changes nothing (and returns 0).
        """
        check_keep("keep_chars", keep_chars)
        check_keep("keep_runs", keep_runs)
        trimmed = await self._db.write(
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

    def _trim(
        self, conn: sqlite3.Connection, session_id: str, keep_chars: int, keep_runs: int, *, apply: bool
    ) -> TrimPreview:
        seqs = [seq for (seq,) in conn.execute(
            f"SELECT g.seq FROM lovia_segments AS g WHERE g.session_id = ? {_IN_ORDER}", (session_id,)
        )]
        older = seqs[: max(0, len(seqs) - keep_runs)]
        if not older:
            return TrimPreview()
        # Only runs that hold a tool result, and are long enough for one to be worth
        # cutting, are decoded at all. Runs are numbered in the order they were appended.
        rows = conn.execute(
            f"SELECT g.seq, g.run_id, g.entry_count, e.entries {_RUNS_WITH_ENTRIES} AND g.seq <= ? "
            f"AND instr(e.kinds, '{ToolResult.type}') AND length(e.entries) > ? {_IN_ORDER}",
            (session_id, older[-1], keep_chars),
        ).fetchall()
        updates: list[tuple[str, int]] = []
        results = chars = 0
        for seq, run_id, count, text in rows:
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
                updates.append((_json_array(stored), seq))
        if updates and apply:
            conn.executemany("UPDATE lovia_segment_entries SET entries = ? WHERE segment_seq = ?", updates)
        return TrimPreview(results, chars)

    async def list_sessions(self, *, query: str | None = None, limit: int | None = None) -> list[SessionInfo]:
        """Sessions, most recently active first; ``query`` filters by id or title (any case)."""
        page = None if query else limit  # a query filters titles made here, so its limit comes after it
        infos = await self._db.read(lambda conn: _session_infos(conn, None, page), "listing sessions")
        return filter_sessions(infos, query, limit)

    async def session_info(self, session_id: str) -> SessionInfo | None:
        """One session as :meth:`list_sessions` shows it, or ``None``."""
        infos = await self._db.read(lambda conn: _session_infos(conn, session_id), "reading a session")
        return infos[0] if infos else None

    async def sessions_changed(self, since: int | None) -> SessionChanges:
        """See :class:`~lovia.session.ChangeTrackingSession`: from the change log schema 6 keeps
        (two indexed reads in one transaction; the mark is the log's highest number)."""
        def read(conn: sqlite3.Connection) -> SessionChanges:
            (mark,) = conn.execute("SELECT IFNULL(MAX(change), 0) FROM lovia_session_changes").fetchone()
            if since is None or since > mark:  # none given, or above the log's: the file was replaced
                return SessionChanges(mark, None)
            changed = conn.execute("SELECT session_id FROM lovia_session_changes WHERE change > ?", (since,))
            return SessionChanges(mark, tuple(session_id for (session_id,) in changed))

        return await self._db.read(read, "reading which sessions changed")

    async def rename_session(self, session_id: str, title: str) -> None:
        """Give the session a title of its own (an empty title restores the default)."""
        def write(conn: sqlite3.Connection) -> None:
            _touch(conn, session_id, time.time(), bump=False)
            conn.execute(
                "UPDATE lovia_session_info SET title = ? WHERE session_id = ?",
                (title_from(title) or None, session_id),
            )

        await self._db.write(write, f"renaming session {session_id!r}")

    async def search(self, query: str, *, limit: int = 50, session_id: str | None = None) -> list[SearchHit]:
        """See :class:`~lovia.session.SearchableSession`: FTS5 ``MATCH`` on the index schema 5 keeps.

        Titles that match come first (the latest given first), then entries, the most recently
        stored first: the index's own order (see "full-text search" above), so the first
        ``limit`` are read without ranking every match. One statement finds the hits, one more
        the titles of their sessions, in one read transaction. Within one session, only the
        rowids of its runs are read. With WAL it runs on the caller's thread, on a read-only
        connection (:meth:`~lovia.stores._sqlite_db.SQLiteDatabase.read_here`: no hop to the
        store's thread, which was the larger part of a search's cost, and no wait on a lock).
        """
        expression = parse_query(query).fts()
        check_search_limit(limit)

        def read(conn: sqlite3.Connection) -> list[SearchHit]:
            if not self._indexed and conn.execute(
                    "SELECT 1 FROM sqlite_master WHERE name = 'lovia_search'").fetchone() is None:
                raise StoreError(
                    f"{self.path} has no search index: the Python that moved it to its current layout had an "
                    "SQLite without FTS5. Search needs a Python whose sqlite3 module has FTS5 (CPython's "
                    "bundled SQLite has it on most builds); everything else works without it."
                )
            self._indexed = True
            try:
                if session_id is None:
                    rows = conn.execute(_SEARCH, (expression, limit)).fetchall()
                else:
                    first, last = conn.execute("SELECT MIN(seq), MAX(seq) FROM lovia_segments WHERE session_id = ?",
                                               (session_id,)).fetchone()
                    rows = [] if first is None else conn.execute(
                        _SEARCH_SESSION, (expression, first * _RUN_DOCS, (last + 1) * _RUN_DOCS, session_id, limit)
                    ).fetchall()
            except sqlite3.OperationalError as error:
                if "fts5" not in str(error):
                    raise
                # The expression is made of quoted words only; should FTS5 still refuse it, it is
                # the query's fault, and never a crash.
                raise UserError("That search could not be understood; search for plain words.") from None
            # A run whose segment is gone (a damaged file) has no session to show: left out.
            rows = [row for row in rows if row[0] is not None]
            if not rows:
                return []
            sessions: dict[str, tuple[str, float | None]] = {}
            for found, last_activity, title in conn.execute(_TITLES, (json.dumps(list({r[0]: 0 for r in rows})),)):
                if title is None:
                    first = conn.execute(_FIRST_USER_TEXT, (found,)).fetchone()
                    title = first[0] if first and isinstance(first[0], str) else ""
                sessions[found] = (title_from(title), last_activity)
            hits: list[SearchHit] = []
            for found, kind, marked, position, run_id, at in rows:
                snippet, matches, breaks = unmark_lines(marked)
                hits.append(SearchHit(found, sessions[found][0], position, kind, snippet, matches, run_id,
                                      sessions[found][1] if at is None else at, breaks))
            return hits

        return await self._db.read_here(read, "searching sessions")

    def _run_entries(
        self, session_id: str, run_id: str, count: int, text: Any, where: str, first: int
    ) -> tuple[Entry, ...]:
        """A stored run's entries; ``where`` and ``first`` (its first entry's number) name a damaged one."""
        if text is None:  # the column is NOT NULL: the run's row of entries is missing
            raise DatabaseFileError(
                f"run {run_id!r} of session {session_id!r} in {self.path} has lost its entries: the file is "
                "damaged. Restore it from a backup, or move it aside and start a new file."
            )
        entries = entries_from_json_array(text, where=where, first=first)
        if len(entries) != count:
            # Positions in the session (rewind, pages) count on the recorded number.
            raise DatabaseFileError(
                f"run {run_id!r} of session {session_id!r} in {self.path} is damaged: it holds {len(entries)} "
                f"entries where {count} were recorded. Restore the file from a backup."
            )
        return entries

    def _where(self, session_id: str, run_id: str | None = None) -> str:
        run = f", run {run_id!r}" if run_id else ""
        return f"session {session_id!r}{run} of {self.path}"


def _delete_runs(conn: sqlite3.Connection, seqs: list[tuple[int]]) -> None:
    conn.executemany("DELETE FROM lovia_segment_entries WHERE segment_seq = ?", seqs)
    conn.executemany("DELETE FROM lovia_segments WHERE seq = ?", seqs)


_RUN_COLUMNS = "run_id, meta, entry_count, appended_at, kinds, entries"


def _copy_runs(conn: sqlite3.Connection, seqs: list[int], into: str, key: object, first: int) -> None:
    """Copy the live runs ``seqs`` (in that order) into a table ``into`` opens: ``"<table> (<key column>, "``,
    numbered from ``first``; their rows are left as stored."""
    for position, seq in enumerate(seqs, start=first):
        conn.execute(
            f"INSERT INTO {into}position, {_RUN_COLUMNS}) SELECT ?, ?, g.run_id, g.meta, g.entry_count, "
            "g.appended_at, e.kinds, e.entries FROM lovia_segments AS g "
            "JOIN lovia_segment_entries AS e ON e.segment_seq = g.seq WHERE g.seq = ?",
            (key, position, seq),
        )
        if not conn.execute("SELECT changes()").fetchone()[0]:
            raise DatabaseFileError(
                "a run lost its entries (the file is damaged), so lovia did not move it aside and changed nothing; "
                "run `lovia doctor` to see what is wrong"
            )


def _move_runs_out(conn: sqlite3.Connection, session_id: str, into: str, key: object, first: int) -> None:
    """Move every run of the live session into ``into`` (see :func:`_copy_runs`), in session order."""
    seqs = [seq for (seq,) in conn.execute(
        f"SELECT g.seq FROM lovia_segments AS g WHERE g.session_id = ? {_IN_ORDER}", (session_id,))]
    _copy_runs(conn, seqs, into, key, first)
    _delete_runs(conn, [(seq,) for seq in seqs])


def _move_runs_in(conn: sqlite3.Connection, session_id: str, table: str, key_column: str, key: object,
                  start: int) -> None:
    """Append the runs ``table`` keeps under ``key`` to the live session, in their order, from position
    ``start``, and delete them there. Each gets a new ``seq`` (one after the session's last)."""
    rows = conn.execute(
        f"SELECT {_RUN_COLUMNS} FROM {table} WHERE {key_column} = ? ORDER BY position", (key,)
    ).fetchall()
    for run_id, meta, count, appended_at, kinds, entries in rows:
        seq = conn.execute(
            "INSERT INTO lovia_segments (session_id, run_id, meta, entry_count, appended_at, start) "
            "VALUES (?, ?, ?, ?, ?, ?)",
            (session_id, run_id, meta, count, appended_at, start),
        ).lastrowid
        conn.execute("INSERT INTO lovia_segment_entries (segment_seq, kinds, entries) VALUES (?, ?, ?)",
                     (seq, kinds, entries))
        start += count
    conn.execute(f"DELETE FROM {table} WHERE {key_column} = ?", (key,))


def _forget_undo(conn: sqlite3.Connection, session_id: str) -> None:
    conn.execute("DELETE FROM lovia_rewind_undo_runs WHERE session_id = ?", (session_id,))
    conn.execute("DELETE FROM lovia_rewind_undo WHERE session_id = ?", (session_id,))


def _undo_of(conn: sqlite3.Connection, session_id: str) -> RewindUndo | None:
    row = conn.execute("SELECT rewound_at, keep_entries, removed, added_run_id FROM lovia_rewind_undo "
                       "WHERE session_id = ?", (session_id,)).fetchone()
    if row is None:
        return None
    runs = tuple(r for (r,) in conn.execute(
        "SELECT run_id FROM lovia_rewind_undo_runs WHERE session_id = ? ORDER BY position", (session_id,)))
    rewound_at, keep_entries, removed, added = row
    return RewindUndo(session_id, rewound_at, keep_entries, removed, runs, added)


def _json_array(items: list[Any]) -> str:
    """Stored JSON items written back as the array :func:`~lovia.entries.entries_to_json_array` makes."""
    return json.dumps(items, ensure_ascii=False, separators=(",", ":"))


def _touch(conn: sqlite3.Connection, session_id: str, now: float, *, bump: bool = True) -> None:
    conn.execute(
        "INSERT INTO lovia_session_info (session_id, title, created_at, last_activity) VALUES (?, NULL, ?, ?) "
        + ("ON CONFLICT (session_id) DO UPDATE SET last_activity = excluded.last_activity" if bump
           else "ON CONFLICT (session_id) DO NOTHING"),
        (session_id, now, now),
    )


# The text of a session's first user message: found in the first run whose kinds name one,
# so only that run's array is parsed. A damaged array (not JSON) gives no text, not a failed
# statement: one damaged run must not stop every session from being listed.
_FIRST_USER_TEXT = f"""
    SELECT json_extract(item.value, '$.text') FROM json_each((
        SELECT IIF(json_valid(e.entries), e.entries, '[]')
        {_RUNS_WITH_ENTRIES} AND instr(' ' || e.kinds || ' ', ' {UserMessage.type} ')
        {_IN_ORDER} LIMIT 1
    )) AS item
    WHERE {_ENTRY_TYPE} = '{UserMessage.type}' ORDER BY item.key LIMIT 1"""


def _indexed_first_user_text(session: str) -> str:
    """SQL for the text of the first user message of the session ``session`` names, read from the search index.

    The same message as :data:`_FIRST_USER_TEXT`: the first user entry (by ``kinds``) of the
    first run that has one, without parsing that run's array. It is read by its rowid from
    FTS5's own copy of the documents, ``lovia_search_content`` (``id`` the rowid, ``c0`` the
    body, ``c1`` the kind: the table FTS5 keeps for a table with content, part of its file
    format), as a plain table. NULL when the index cannot say (no such run, or no document
    there: an empty text, an entry past the run's documents, a damaged run): ask
    :data:`_FIRST_USER_TEXT` then. Listing 10,000 untitled sessions, a query each for their
    first messages took 80-90% of ``list_sessions`` (110-230 ms in all here; 40-60 ms so).
    """
    kinds = "(' ' || e.kinds || ' ')"
    before = f"substr({kinds}, 1, instr({kinds}, ' {UserMessage.type} '))"  # up to the space before it
    index_in_run = f"(length({before}) - length(replace({before}, ' ', '')) - 1)"
    return f"""(SELECT c.c0 FROM lovia_search_content AS c WHERE c.c1 = '{UserMessage.type}' AND c.id = (
        SELECT g.seq * {_RUN_DOCS} + {index_in_run}
        FROM lovia_segments AS g JOIN lovia_segment_entries AS e ON e.segment_seq = g.seq
        WHERE g.session_id = {session} AND instr({kinds}, ' {UserMessage.type} ') {_IN_ORDER} LIMIT 1))"""


def _has_search_index(conn: sqlite3.Connection) -> bool:
    return conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'lovia_search_content'").fetchone() is not None


def _json_number(column: str, path: str) -> str:
    """SQL for the number at ``path`` in the JSON ``column``, else NULL.

    A run's meta is its writer's: a time there that is not a number (a string, ``true``) is not
    taken for one, as :class:`~lovia.session.SegmentInfo` does not take it; and a meta that is not
    JSON at all (a damaged row) gives NULL rather than failing the whole statement, so one damaged
    run does not stop every session from being listed or searched (reading that run says it is
    damaged).
    """
    # Nested CASEs: SQLite does not promise to stop an AND before a json_type that would fail.
    return (f"CASE WHEN json_valid({column}) THEN CASE WHEN json_type({column}, '{path}') IN ('integer', 'real') "
            f"THEN json_extract({column}, '{path}') END END")


def _session_infos(conn: sqlite3.Connection, only: str | None, limit: int | None = None) -> list[SessionInfo]:
    """``only`` that session, or the ``limit`` most recently active (all when ``None``), newest first."""
    where, args = ("WHERE i.session_id = ?", (only,)) if only is not None else ("", ())
    # A page reads (and titles) only its sessions: the terminal UI's first paint lists the newest.
    sessions = "lovia_session_info" if limit is None else \
        f"(SELECT * FROM lovia_session_info ORDER BY last_activity DESC LIMIT {int(limit)})"
    # Listing, the untitled sessions' first messages are read in the same statement, from the index.
    first_text_sql = f"CASE WHEN i.title IS NULL THEN {_indexed_first_user_text('i.session_id')} END" \
        if only is None and _has_search_index(conn) else "NULL"
    rows = conn.execute(
        f"""SELECT i.session_id, i.title, {first_text_sql}, i.created_at, i.last_activity,
                   COALESCE(SUM(g.entry_count), 0), COUNT(g.seq),
                   TOTAL(COALESCE({_json_number('g.meta', '$.active_seconds')},
                                  MAX(0, {_json_number('g.meta', '$.timing.finished_at')}
                                         - {_json_number('g.meta', '$.timing.started_at')})))
            FROM {sessions} AS i LEFT JOIN lovia_segments AS g USING (session_id)
            {where}
            GROUP BY i.session_id ORDER BY i.last_activity DESC""",
        args,
    ).fetchall()
    infos = []
    for session_id, title, first_text, created_at, last_activity, entry_count, run_count, seconds in rows:
        if title is None:
            if first_text is None:
                first = conn.execute(_FIRST_USER_TEXT, (session_id,)).fetchone()
                first_text = first[0] if first else None
            title = title_from(first_text) if isinstance(first_text, str) else ""
        infos.append(SessionInfo(session_id, title, entry_count, run_count, created_at, last_activity, float(seconds)))
    return infos


_SNIPPET = f"snippet(lovia_search, 0, '{MARK_OPEN}', '{MARK_CLOSE}', '{ELLIPSIS}', {SNIPPET_WORDS})"
_SEARCH = f"""
    SELECT COALESCE(g.session_id, t.session_id), s.kind, {_SNIPPET}, g.start + s.rowid % {_RUN_DOCS}, g.run_id,
           COALESCE({_json_number('g.meta', '$.timing.finished_at')}, g.appended_at)
    FROM lovia_search AS s
    LEFT JOIN lovia_segments AS g ON s.rowid < {_TITLE_DOCS} AND g.seq = s.rowid / {_RUN_DOCS}
    LEFT JOIN lovia_search_titles AS t ON s.rowid >= {_TITLE_DOCS} AND t.doc = s.rowid - {_TITLE_DOCS}
    WHERE lovia_search MATCH ? ORDER BY s.rowid DESC LIMIT ?"""
# One session's entries: the range of its runs' rowids, then its runs.
_SEARCH_SESSION = f"""
    SELECT g.session_id, s.kind, {_SNIPPET}, g.start + s.rowid % {_RUN_DOCS}, g.run_id,
           COALESCE({_json_number('g.meta', '$.timing.finished_at')}, g.appended_at)
    FROM lovia_search AS s JOIN lovia_segments AS g ON g.seq = s.rowid / {_RUN_DOCS}
    WHERE lovia_search MATCH ? AND s.rowid >= ? AND s.rowid < ? AND g.session_id = ?
    ORDER BY s.rowid DESC LIMIT ?"""
# The titles of the sessions in a JSON array, as :class:`SessionInfo` has them: the one given,
# else the first user message, read from the index (``None`` when it cannot say, and
# :data:`_FIRST_USER_TEXT` is asked). Read from FTS5's content table as a plain table, without an
# FTS5 cursor, a quarter less time for the statement (108 against 146 us for 25 sessions).
_TITLES = f"""
    SELECT w.value, i.last_activity, COALESCE(i.title, {_indexed_first_user_text('w.value')})
    FROM json_each(?) AS w
    LEFT JOIN lovia_session_info AS i ON i.session_id = w.value"""


class SQLiteCheckpointer(_SQLiteStore):
    """A :class:`~lovia.checkpoint.ClaimingCheckpointer` in a SQLite file.

    Each ``save`` appends only the entries past those already stored and replaces the
    head, in one transaction, so its cost does not grow with the run's length. Its claim check
    is the head's write itself when the run is as this store last stored it (one ``UPDATE``
    whose ``WHERE`` names the claim and the entry count; half the statement time of a read
    then a write), and a full read of the stored run otherwise. ``claim``
    checks and takes a run in one ``BEGIN IMMEDIATE`` transaction, so of several processes
    claiming a run on one file exactly one gets it. ``outside_change_token`` tells of other
    connections' writes (:class:`~lovia.checkpoint.ChangeReportingCheckpointer`). It keeps the
    partial-answer journal (:class:`~lovia.checkpoint.JournalingCheckpointer`) in a table of its
    own (schema 2): one upsert per journal write, checked against the claim in its ``WHERE``.
    """

    _schema = CHECKPOINT_SCHEMA

    def __init__(self, path: str | os.PathLike[str], *, wal: bool = False) -> None:
        super().__init__(path, wal=wal)
        self._stored_counts = _StoredCounts()
        self._journalled = _JournalledRuns()

    async def save(self, snapshot: RunSnapshot) -> None:
        run_id, entries = snapshot.run_id, snapshot.entries
        # Read now: the runner goes on changing its head while this runs on the worker thread.
        claim, head_row, turn = snapshot.head.claim, _head_row(snapshot.head), snapshot.head.turn
        total = len(entries)
        counts = self._stored_counts
        journalled = self._journalled.to_clear(run_id)

        def write(conn: sqlite3.Connection) -> bool:
            have = counts.get(run_id)
            # The usual save, by the execution that stored the run last: the check is folded into
            # the head's write, which changes the row only if it still holds this claim and the
            # entries this store last saw stored; anything else (another claim, another count, no
            # run) takes the full check below, within the same transaction.
            if (
                claim is None
                or have is None
                or have > total
                or conn.execute(_UPDATE_OWN_HEAD, (*head_row, total, run_id, have, claim)).rowcount != 1
            ):
                row = conn.execute(
                    "SELECT entry_count, json_extract(head, '$.claim') FROM lovia_runs WHERE run_id = ?", (run_id,)
                ).fetchone()
                have = check_save(run_id, claim, total, (row[0], row[1]) if row else None,
                                  lambda: self._stored_head(conn, run_id))
                _write_head(conn, run_id, head_row, total)
            # Bounded by ``total``: the runner may append more while this runs on the worker thread.
            fresh = _encode(entries[have:total])
            conn.executemany(
                "INSERT INTO lovia_run_entries (run_id, position, type, data) VALUES (?, ?, ?, ?)",
                [(run_id, have + i, type_name, data) for i, (type_name, data) in enumerate(fresh)],
            )
            counts.remember(run_id, total)  # a guess until the commit: a failed one only costs the full check
            return journalled is not None and conn.execute(_CLEAR_PARTIAL, (run_id, claim, turn)).rowcount > 0

        if await self._db.write(write, f"saving the checkpoint of run {run_id!r}"):
            self._journalled.cleared(run_id, journalled)

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
        return await self._claim(run_id, owner, token, lease_seconds, start, if_stored, alone=False)

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
        :class:`~lovia.checkpoint.SessionExclusiveCheckpointer`. The session's running runs are read in
        the claim's own write transaction, which the file lets one connection hold at a time."""
        return await self._claim(run_id, owner, token, lease_seconds, start, if_stored, alone=True)

    async def _claim(self, run_id: str, owner: RunOwner, token: str, lease_seconds: float,
                     start: RunSnapshot | None, if_stored: IfStored, *, alone: bool) -> RunSnapshot | None:
        start = RunSnapshot(run_id, RunHead.from_dict(start.head.to_dict()), start.entries) if start else None
        fresh = _encode(start.entries) if start is not None else []
        counts = self._stored_counts

        def write(conn: sqlite3.Connection) -> tuple[RunHead, list[str], RunHead | None] | None:
            row = conn.execute("SELECT head FROM lovia_runs WHERE run_id = ?", (run_id,)).fetchone()
            stored = _decode_head(row[0], run_id, self.path) if row else None
            before = _decode_head(row[0], run_id, self.path) if row else None  # plan_claim takes ``stored`` in place
            now = time.time()
            step = plan_claim(run_id, stored, start, owner, token, lease_seconds, now, if_stored)
            if alone and (session_id := claimed_session(step, stored, start)) is not None:
                running = conn.execute("SELECT run_id, head FROM lovia_runs "
                                       "WHERE session_id = ? AND status = 'running' AND run_id != ?",
                                       (session_id, run_id)).fetchall()
                check_alone_in_session(session_id, run_id,
                                       ((other, _decode_head(text, other, self.path)) for other, text in running), now)
            if step == "store_start":
                assert start is not None
                conn.execute("DELETE FROM lovia_run_entries WHERE run_id = ?", (run_id,))
                conn.executemany(
                    "INSERT INTO lovia_run_entries (run_id, position, type, data) VALUES (?, ?, ?, ?)",
                    [(run_id, i, type_name, data) for i, (type_name, data) in enumerate(fresh)],
                )
                _write_head(conn, run_id, _head_row(start.head), len(fresh))
                counts.remember(run_id, len(fresh))
                if stored is not None:  # replaced: the journal of the run it replaced is over
                    conn.execute("DELETE FROM lovia_run_partials WHERE run_id = ?", (run_id,))
            if stored is None or step == "store_start":
                return None
            if step == "update":
                assert before is not None
                _write_head(conn, run_id, _head_row(taken_up(stored, before, _partial(conn, run_id))), None)
                conn.execute("DELETE FROM lovia_run_partials WHERE run_id = ?", (run_id,))  # read: taken, it is over
            return stored, _entry_rows(conn, run_id), before if step == "update" else None

        found = await self._db.write(write, f"claiming run {run_id!r}")
        self._journalled.forget(run_id)
        if found is None:
            return None
        head, rows, taken_from = found
        entries = entries_from_json(rows, where=f"checkpoint of run {run_id!r} in {self.path}")
        return RunSnapshot(run_id, head, entries, taken_from=taken_from)

    async def load(self, run_id: str) -> RunSnapshot | None:
        def read(conn: sqlite3.Connection) -> tuple[str, list[str], PartialAnswer | None] | None:
            row = conn.execute("SELECT head FROM lovia_runs WHERE run_id = ?", (run_id,)).fetchone()
            if row is None:
                return None
            return row[0], _entry_rows(conn, run_id), _partial(conn, run_id)

        found = await self._db.read(read, f"loading the checkpoint of run {run_id!r}")
        if found is None:
            return None
        head_json, rows, partial = found
        entries = entries_from_json(rows, where=f"checkpoint of run {run_id!r} in {self.path}")
        return RunSnapshot(run_id, with_partial(_decode_head(head_json, run_id, self.path), partial), entries)

    async def journal_partial(self, run_id: str, text: str, *, claim: str | None,
                              step: ModelStep | None = None) -> bool:
        """Journal the text so far of the streaming turn; see :class:`~lovia.checkpoint.JournalingCheckpointer`.

        One statement: the text is written only while the stored run is ``running`` under
        ``claim``, with that head's turn, replacing the run's previous text.
        """
        step_json = _encode_json(step_to_dict(step)).decode() if step is not None else None
        self._journalled.wrote(run_id)  # before the write: a save from now on clears it

        def write(conn: sqlite3.Connection) -> bool:
            return conn.execute(_JOURNAL_PARTIAL, (text, step_json, time.time(), run_id, claim)).rowcount > 0

        return await self._db.write(write, f"journalling the streaming answer of run {run_id!r}")

    def _stored_head(self, conn: sqlite3.Connection, run_id: str) -> RunHead:
        (head_json,) = conn.execute("SELECT head FROM lovia_runs WHERE run_id = ?", (run_id,)).fetchone()
        return _decode_head(head_json, run_id, self.path)

    async def delete(self, run_id: str) -> bool:
        def write(conn: sqlite3.Connection) -> bool:
            conn.execute("DELETE FROM lovia_run_entries WHERE run_id = ?", (run_id,))
            conn.execute("DELETE FROM lovia_run_partials WHERE run_id = ?", (run_id,))
            return conn.execute("DELETE FROM lovia_runs WHERE run_id = ?", (run_id,)).rowcount > 0

        deleted = await self._db.write(write, f"deleting the checkpoint of run {run_id!r}")
        self._journalled.forget(run_id)
        return deleted

    async def list_runs(
        self, *, statuses: Sequence[RunStatus] | None = None, limit: int | None = None
    ) -> list[RunSummary]:
        """Runs with one of ``statuses`` (all when ``None``), most recently updated first."""
        def read(conn: sqlite3.Connection) -> list[tuple[str, str, int, str | None, str | None]]:
            # A running run's journal comes along, for the one that crashed (``with_partial``).
            sql = ("SELECT r.run_id, r.head, r.entry_count, CASE WHEN r.status = 'running' THEN p.text END, "
                   "p.step FROM lovia_runs AS r LEFT JOIN lovia_run_partials AS p USING (run_id)")
            args: list[Any] = []
            if statuses is not None:
                sql += f" WHERE r.status IN ({', '.join('?' for _ in statuses)})"
                args.extend(statuses)
            sql += " ORDER BY r.updated_at DESC"
            if limit is not None:
                sql += " LIMIT ?"
                args.append(limit)
            return conn.execute(sql, args).fetchall()

        if statuses is not None and not statuses:
            return []
        rows = await self._db.read(read, "listing runs")
        return readable_run_summaries(rows, lambda head, run_id: _decode_head(head, run_id, self.path), _partial_answer)


_HeadRow = tuple[str, str | None, float, str]

# A save's head write with its claim check: it changes the row only while the stored run holds
# the saving claim and the entry count this store last stored (``_StoredCounts``).
_UPDATE_OWN_HEAD = (
    "UPDATE lovia_runs SET status = ?, session_id = ?, updated_at = ?, head = ?, entry_count = ? "
    "WHERE run_id = ? AND entry_count = ? AND json_extract(head, '$.claim') = ?"
)


# The journal's write: only while the stored run is running under the writer's claim, tagged with
# the stored head's claim and turn (what ``_CLEAR_PARTIAL`` compares with each save).
_JOURNAL_PARTIAL = (
    "INSERT INTO lovia_run_partials (run_id, claim, turn, text, step, updated_at) "
    "SELECT run_id, json_extract(head, '$.claim'), COALESCE(json_extract(head, '$.turn'), 0), ?, ?, ? "
    "FROM lovia_runs WHERE run_id = ? AND status = 'running' AND json_extract(head, '$.claim') IS ? "
    "ON CONFLICT (run_id) DO UPDATE SET claim = excluded.claim, turn = excluded.turn, text = excluded.text, "
    "step = excluded.step, updated_at = excluded.updated_at"
)

# A save clears the journal unless it is of the same execution and turn (a lease renewal while
# the model streams): the turn's snapshot landed, or the run went on under another claim. Only
# for the runs this store journalled (``_JournalledRuns``): another process's journal of a run is
# cleared by the claim that takes the run from it.
_CLEAR_PARTIAL = "DELETE FROM lovia_run_partials WHERE run_id = ? AND (claim IS NOT ? OR turn IS NOT ?)"


def _partial(conn: sqlite3.Connection, run_id: str) -> PartialAnswer | None:
    """What the journal holds of ``run_id``'s streaming turn, if anything."""
    row = conn.execute("SELECT text, step FROM lovia_run_partials WHERE run_id = ?", (run_id,)).fetchone()
    return _partial_answer(*row) if row else None


def _partial_answer(text: str | None, step_json: str | None) -> PartialAnswer | None:
    """A journal row read back; a step this version cannot read is left out (the text is what matters)."""
    if text is None:
        return None
    step = None
    if step_json is not None:
        with contextlib.suppress(ValueError):
            data = json.loads(step_json)
            read = step_from_dict(data) if isinstance(data, dict) else None
            step = read if isinstance(read, ModelStep) else None
    return PartialAnswer(text, step)


class _JournalledRuns:
    """The runs this store journalled and whose journal a save may still have to clear.

    A save runs the journal's ``DELETE`` only for these (6 us a save otherwise, measured): a run
    that streamed nothing since its last save has nothing to clear. A run is forgotten once a save
    cleared its journal, unless it was journalled again meanwhile (each write counts a
    generation). Past ``_LIMIT`` runs (stopped runs keep theirs), every save clears from then on.
    """

    _LIMIT = 1024

    def __init__(self) -> None:
        self._runs: dict[str, int] = {}
        self._generation = 0
        self._every_save = False

    def wrote(self, run_id: str) -> None:
        self._generation += 1
        self._runs[run_id] = self._generation
        if len(self._runs) > self._LIMIT:
            self._every_save, self._runs = True, {}

    def to_clear(self, run_id: str) -> int | None:
        """A token for :meth:`cleared` when a save of ``run_id`` must clear its journal, else ``None``."""
        return 0 if self._every_save else self._runs.get(run_id)

    def cleared(self, run_id: str, token: int | None) -> None:
        if token and self._runs.get(run_id) == token:
            del self._runs[run_id]

    def forget(self, run_id: str) -> None:
        """The run was claimed or deleted, which cleared its journal."""
        self._runs.pop(run_id, None)


class _StoredCounts:
    """How many entries this store last stored for recent runs; used on the worker thread only.

    Only a hint: a save's write checks it against the stored row in its own transaction, and
    a stale or missing count (another process wrote, a commit failed) costs the full check.
    """

    _LIMIT = 256  # runs remembered: a store saves a few runs at a time

    def __init__(self) -> None:
        self._counts: dict[str, int] = {}

    def get(self, run_id: str) -> int | None:
        return self._counts.get(run_id)

    def remember(self, run_id: str, count: int) -> None:
        if len(self._counts) >= self._LIMIT and run_id not in self._counts:
            self._counts.clear()
        self._counts[run_id] = count


def _head_row(head: RunHead) -> _HeadRow:
    """The ``lovia_runs`` columns that come from a head: status, session, update time, the head."""
    return head.status, head.session_id, head.updated_at, _encode_json(head.to_dict()).decode()


def _write_head(conn: sqlite3.Connection, run_id: str, row: _HeadRow, entry_count: int | None) -> None:
    """Insert or replace the run's head; ``entry_count=None`` keeps the stored count."""
    status, session_id, updated_at, head_json = row
    conn.execute(
        "INSERT INTO lovia_runs (run_id, status, session_id, updated_at, entry_count, head) "
        "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (run_id) DO UPDATE SET status = excluded.status, "
        "session_id = excluded.session_id, updated_at = excluded.updated_at, "
        "entry_count = COALESCE(?, entry_count), head = excluded.head",
        (run_id, status, session_id, updated_at, entry_count or 0, head_json, entry_count),
    )


def _entry_rows(conn: sqlite3.Connection, run_id: str) -> list[str]:
    rows = conn.execute("SELECT data FROM lovia_run_entries WHERE run_id = ? ORDER BY position", (run_id,))
    return [data for (data,) in rows]


def _decode_head(text: str, run_id: str, path: str) -> RunHead:
    try:
        return RunHead.from_dict(stored_object(text, f"head of run {run_id!r}", path))
    except (TypeError, ValueError, AttributeError):
        # The message of the cause may quote stored values: never show it.
        raise DatabaseFileError(
            f"the head of run {run_id!r} in {path} is damaged (its fields are not what lovia wrote); "
            "lovia left it as it is. Delete the run, or restore the file from a backup."
        ) from None
