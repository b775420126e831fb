"""``lovia doctor [--db PATH|URL] [--quick] [--fix]``: check a lovia database and say what to do.

What it checks, in this order: that the file is a SQLite file and a lovia one; SQLite's own
``integrity_check`` (``quick_check`` with ``--quick``); tables (and indexes, triggers...) under
lovia's names that lovia did not create, which the stores refuse to open the database over (named,
with what to do; the other checks leave them alone); the schema version of each store
(current, older: migrated at the next open, newer: written by a newer lovia, which this one
refuses); stored runs lovia cannot read, read with the stores' own decoders (entries gone or
damaged; an entry of a type a newer lovia wrote, whose advice is to upgrade); orphaned
checkpoints (a run not finished whose session already holds it, so that resuming it would
answer twice; a run of a session that went to the trash after it started); runs whose owner
is gone (crashed: left ``running`` by a process that died or whose lease lapsed); the size of
the WAL file; and the tool-output archive beside the file (``tool-outputs``, see
:class:`lovia.context.FileResultStore`): files no stored entry refers to.

Promises: without ``--fix`` the database file is opened read-only and never written (SQLite
may create the ``-wal`` and ``-shm`` files beside it for the read, as any reader does); no
message quotes conversation text (only ids, counts, sizes and SQLite's own messages, which name
tables and pages). The exit status is 0 when all is well (notes included), 1 when something is
wrong, 2 when the file cannot be checked at all (missing, not SQLite, not lovia's). ``--fix``
deletes orphaned checkpoints, deletes archive files nothing refers to (older than an hour, so
an output a running answer has just archived is never taken for one) and checkpoints the WAL
back into the file; it never touches conversation and fixes nothing SQLite reports damaged.

On a PostgreSQL database (``--db postgresql://...``, :func:`examine_postgres`) what applies is
checked in one read-only transaction: the schema versions, stored runs whose entries cannot be
read, the same judgement of checkpoints (orphaned, crashed, waiting), and the search index
(every stored run and title in it). SQLite's integrity check, the WAL and the archive beside the
file do not apply, and a note says so. ``--fix`` deletes the orphaned checkpoints there too.
A server that cannot be reached or refuses the password exits 2, naming the server without the
password; so does a database whose ``lovia_schema`` is missing or not lovia's, naming any table of
lovia's names there that lovia did not create.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import json
import sqlite3
import sys
import time
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from lovia.checkpoint import RunHead
from lovia.context import FileResultStore
from lovia.db_location import DbLocation, PostgresLocation, chosen_db, db_argument, postgres_store_classes
from lovia.entries import entries_from_json_array
from lovia.errors import LoviaError, UnknownEntryTypeError, UserError
from lovia.stores._sqlite_db import (
    SQLITE_ELSEWHERE,
    UPGRADE_HOW,
    ForeignObject,
    foreign_objects_advice,
    foreign_objects_summary,
    sqlite_foreign_objects,
    stored_object,
)
from lovia.stores.sqlite import CHECKPOINT_SCHEMA, SESSION_SCHEMA, STORE_SCHEMAS

__all__ = ["Finding", "Report", "examine", "main"]

Severity = Literal["ok", "note", "problem"]
KNOWN_VERSIONS = {SESSION_SCHEMA.store: SESSION_SCHEMA.version, CHECKPOINT_SCHEMA.store: CHECKPOINT_SCHEMA.version}
WAL_LIMIT_BYTES = 64 * 1024 * 1024
"""A WAL file above this size means checkpoints have not run for long (a reader held the file)."""
ARCHIVE_DIR = "tool-outputs"
ARCHIVE_GRACE_SECONDS = 3600.0
"""An archive file younger than this is never called unreferenced: a running answer archives an
output before its next checkpoint records the reference."""
SHOWN_IDS = 5
"""How many run ids a finding names before it says "and N more"."""


class CannotCheck(Exception):
    """The file cannot be checked at all; the message says why and what to do."""


@dataclass(frozen=True)
class Finding:
    """One thing the doctor found: what, how bad, and what to do about it."""

    check: str
    severity: Severity
    summary: str
    advice: str = ""
    fixable: bool = False


@dataclass
class Report:
    """Everything one examination found, and what ``--fix`` would do about it."""

    path: DbLocation
    """The SQLite file, or the PostgreSQL database (shown without its password)."""
    findings: list[Finding] = field(default_factory=list)
    orphaned_runs: list[str] = field(default_factory=list)
    unreferenced_files: list[Path] = field(default_factory=list)
    wal_too_big: bool = False
    schema_current: bool = False
    journal_mode: str = "delete"

    @property
    def problems(self) -> list[Finding]:
        return [f for f in self.findings if f.severity == "problem"]

    def add(self, check: str, severity: Severity, summary: str, advice: str = "", *, fixable: bool = False) -> None:
        self.findings.append(Finding(check, severity, summary, advice, fixable))


def examine(path: Path, *, quick: bool = False, now: float | None = None) -> Report:
    """Check the database at ``path`` read-only; raise :class:`CannotCheck` when it cannot be checked at all."""
    now = time.time() if now is None else now
    report = Report(path)
    _check_file(path)
    try:
        conn = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
    except sqlite3.Error as exc:
        raise CannotCheck(f"SQLite cannot open {path} ({exc}); check its permissions") from None
    try:
        _check_integrity(conn, report, quick)
        tables = _tables(conn)
        if "lovia_schema" not in tables:
            raise CannotCheck(f"{report.path} is a SQLite database but not a lovia one (it has no lovia_schema "
                              "table): give lovia's file with --db PATH")
        try:
            foreign = sqlite_foreign_objects(conn, STORE_SCHEMAS, whole=True)
        except sqlite3.DatabaseError:
            foreign = []  # the integrity finding says what is damaged
        tables -= _judge_foreign(foreign, report, SQLITE_ELSEWHERE, lovias=True)
        _check_schema(conn, tables, report, {thing.store for thing in foreign})
        report.journal_mode = _journal_mode(conn)
        for check in (_check_sessions, _check_runs, _check_archive):
            try:
                check(conn, tables, report, now)
            except sqlite3.DatabaseError as exc:
                report.add(check.__name__.removeprefix("_check_"), "problem",
                           f"could not be checked: SQLite says {exc}",
                           "the file is damaged there: see the integrity finding above")
    finally:
        conn.close()
    _check_wal(path, report)
    return report


def _check_file(path: Path) -> None:
    try:
        with path.open("rb") as file:
            header = file.read(16)
    except FileNotFoundError:
        raise CannotCheck(f"there is no database at {path}: give the file with --db PATH") from None
    except OSError as exc:
        raise CannotCheck(f"cannot read {path}: {exc.strerror}") from None
    if not header:  # SQLite (and so lovia, opening it) takes an empty file as a new, empty database
        raise CannotCheck(f"{path} is empty (0 bytes): it holds no session. lovia makes it a new database when "
                          "it opens it; if it held your sessions, it was emptied: restore it from a backup")
    if header != b"SQLite format 3\x00":
        raise CannotCheck(f"{path} is not a SQLite database (its header is not SQLite's): it is not a lovia "
                          "file, or its first page is destroyed; restore it from a backup")


def _tables(conn: sqlite3.Connection) -> set[str]:
    try:
        return {name for (name,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    except sqlite3.DatabaseError as exc:
        raise CannotCheck(f"SQLite cannot read the list of tables ({exc}): the file is damaged beyond what lovia "
                          "can check; restore it from a backup, or try `sqlite3 FILE .recover`") from None


def _journal_mode(conn: sqlite3.Connection) -> str:
    try:
        return str(conn.execute("PRAGMA journal_mode").fetchone()[0]).lower()
    except sqlite3.DatabaseError:
        return "unknown"


def _check_integrity(conn: sqlite3.Connection, report: Report, quick: bool) -> None:
    pragma = "quick_check" if quick else "integrity_check"
    try:
        rows = [str(row[0]) for row in conn.execute(f"PRAGMA {pragma}(20)")]
    except sqlite3.DatabaseError as exc:
        rows = [f"SQLite could not run the check ({exc})"]
    if rows == ["ok"]:
        report.add("integrity", "ok", f"SQLite's {pragma} found nothing wrong")
        return
    # SQLite's messages name tables, indexes, pages and rows, never stored values.
    shown = "; ".join(rows[:3]) + (f"; and {len(rows) - 3} more" if len(rows) > 3 else "")
    report.add("integrity", "problem", f"SQLite's {pragma} reports damage: {shown}",
               "stop every lovia using the file and copy it aside; restore it from a backup, or salvage what "
               "SQLite can read with `sqlite3 FILE .recover | sqlite3 NEW.db` and check NEW.db with lovia doctor")


def _judge_foreign(foreign: Sequence[ForeignObject], report: Report, elsewhere: str, *, lovias: bool) -> set[str]:
    """Report objects under lovia's names that lovia did not create (the stores refuse the database while
    they are there); return their names, which the other checks then leave alone.

    Without a ``lovia_schema`` of lovia's own (``lovias`` false, or it is one of them) there is
    nothing of lovia's to check: :class:`CannotCheck`, naming them all the same.
    """
    if not foreign:
        return set()
    summary, advice = foreign_objects_summary(foreign), foreign_objects_advice(foreign, elsewhere)
    refused = "lovia refuses to open it (and changes nothing in it)"
    if not lovias or any(thing.name == "lovia_schema" for thing in foreign):
        raise CannotCheck(f"{report.path} holds {summary}: {refused}. {advice[0].upper()}{advice[1:]}")
    report.add("tables", "problem", f"the database holds {summary}: {refused}", advice)
    return {thing.name for thing in foreign}


def _check_schema(conn: sqlite3.Connection, tables: set[str], report: Report, blocked: set[str]) -> None:
    try:
        versions = dict(conn.execute("SELECT store, version FROM lovia_schema"))
    except sqlite3.DatabaseError as exc:
        report.add("schema", "problem", f"the schema versions cannot be read: SQLite says {exc}",
                   "the file is damaged: see the integrity finding")
        return
    _judge_schema(versions, KNOWN_VERSIONS, report, blocked)


BLOCKED = "lovia cannot create them while the objects named by the tables finding are in their way"
"""What the doctor says of a store whose tables' names objects lovia did not create hold."""


def _judge_schema(versions: dict[str, Any], known_versions: dict[str, int], report: Report,
                  blocked: Collection[str] = ()) -> None:
    """What each store's recorded version means for this lovia (``known_versions``). ``blocked``: the stores
    some of whose names objects lovia did not create hold, so that lovia cannot create or migrate them."""
    current = not blocked
    for store, known in known_versions.items():
        version = versions.get(store)
        if version is None:
            current = False
            report.add("schema", "note", f"the {store} store has no tables yet",
                       BLOCKED if store in blocked else "lovia creates them when it opens the database")
        elif not isinstance(version, int) or version > known:
            current = False
            report.add("schema", "problem",
                       f"the {store} store is at version {version}, newer than this lovia's {known}: a newer lovia "
                       "wrote it, and this one refuses to open it", f"upgrade lovia to open it: {UPGRADE_HOW}")
        elif version < known:
            current = False
            report.add("schema", "note", f"the {store} store is at version {version}; this lovia's is {known}",
                       BLOCKED if store in blocked else
                       "lovia moves it to the new layout when it next opens the database, in one transaction; keep "
                       "a copy if an older lovia must still read it")
        else:
            report.add("schema", "ok", f"the {store} store is at version {version}, this lovia's")
    for store in sorted(set(versions) - set(known_versions)):
        report.add("schema", "note", f"the database also holds a store this lovia does not know ({store!r})",
                   "another program shares it; lovia leaves its tables alone")
    report.schema_current = current


def _agreeing(number: int, one: str, many: str) -> str:
    """``number`` and the words that agree with it: ``1 run was``, ``3 runs were``."""
    return f"{number} {one if number == 1 else many}"


def _them(things: Sequence[object], one: str = "it", many: str = "them") -> str:
    """``it`` for one thing, ``them`` for several (or the words given)."""
    return one if len(things) == 1 else many


def _in_sessions(session_ids: Sequence[str]) -> str:
    """``in session s1``, ``in sessions s1, s2``."""
    return f"in {'session' if len(session_ids) == 1 else 'sessions'} {_ids(session_ids)}"


def _ids(run_ids: Sequence[str]) -> str:
    shown = ", ".join(run_ids[:SHOWN_IDS])
    return shown + (f" and {len(run_ids) - SHOWN_IDS} more" if len(run_ids) > SHOWN_IDS else "")


RunState = Literal["readable", "damaged", "newer"]


def _run_state(count: int, meta: Any, entries: Any) -> RunState:
    """Whether a stored run reads as lovia's stores read it, with the decoders they use.

    ``damaged``: text that is not UTF-8, a meta that is not a JSON object, entries that are not
    the JSON lovia wrote, or not as many as recorded; ``newer``: an entry of a type this lovia does
    not know (a newer lovia wrote it, and this one refuses to guess at its meaning).
    """
    try:
        meta = meta.decode() if isinstance(meta, bytes) else meta
        entries = entries.decode() if isinstance(entries, bytes) else entries
        stored_object(meta, "meta", "")
        decoded = entries_from_json_array(entries)
    except UnknownEntryTypeError:
        return "newer"
    except (UnicodeDecodeError, LoviaError):
        return "damaged"
    return "readable" if len(decoded) == count else "damaged"


def _report_unreadable(runs: dict[RunState, list[tuple[str, str]]], report: Report, *, cannot: str,
                       damaged: str) -> None:
    """The runs :func:`_run_state` found damaged or newer (session and run ids), as problems.

    ``cannot`` says what lovia cannot do with the sessions of damaged runs (``{}``: "that session"
    or "those sessions", then "it" or "them"); ``damaged``: what is damaged ("file", "database").
    """
    kinds: list[tuple[RunState, tuple[str, str], str, str]] = [
        ("damaged", ("stored run holds entries or run details", "stored runs hold entries or run details"),
         cannot, f"restore the {damaged} from a backup; the other sessions read as they are"),
        ("newer", ("stored run holds entries of a type this lovia does not know",
                   "stored runs hold entries of a type this lovia does not know"),
         "this lovia cannot open {}",
         f"upgrade lovia to open {{}}: {UPGRADE_HOW}; the other sessions read as they are"),
    ]
    for state, what, cannot_do, advice in kinds:
        found = runs.get(state, [])
        if not found:
            continue
        sessions = list(dict.fromkeys(session_id for session_id, _ in found))
        those = ("that session", "it") if len(sessions) == 1 else ("those sessions", "them")
        why = f" that are not the JSON lovia wrote (the {damaged} is damaged)" if state == "damaged" \
            else " (a newer lovia wrote them)"
        report.add("sessions", "problem",
                   f"{_agreeing(len(found), *what)}{why}, {_in_sessions(sessions)}: {cannot_do.format(*those)}",
                   advice.format(those[0]))


def _check_sessions(conn: sqlite3.Connection, tables: set[str], report: Report, now: float) -> None:
    """Stored runs lovia cannot read: SQLite finds nothing wrong, yet lovia refuses to open their sessions
    (and to trash or fork those whose row of entries is gone), and its message sends the user here."""
    if not {"lovia_segments", "lovia_segment_entries"} <= tables:
        return
    lost = conn.execute("SELECT g.session_id, g.run_id FROM lovia_segments AS g LEFT JOIN lovia_segment_entries AS e "
                        "ON e.segment_seq = g.seq WHERE e.segment_seq IS NULL ORDER BY g.session_id, g.seq").fetchall()
    # Every run read as the store reads it. As bytes: text a damaged byte left invalid UTF-8 would
    # fail the fetch, in a message quoting it.
    unreadable: dict[RunState, list[tuple[str, str]]] = {}
    for session_id, run_id, count, meta, entries in conn.execute(
            "SELECT g.session_id, g.run_id, g.entry_count, CAST(g.meta AS BLOB), CAST(e.entries AS BLOB) "
            "FROM lovia_segments AS g JOIN lovia_segment_entries AS e ON e.segment_seq = g.seq "
            "ORDER BY g.session_id, g.seq"):
        state = _run_state(count, meta, entries)
        if state != "readable":
            unreadable.setdefault(state, []).append((session_id, run_id))
    if not lost and not unreadable:
        report.add("sessions", "ok", "every stored run has its entries")
        return
    if lost:
        sessions = list(dict.fromkeys(session_id for session_id, _ in lost))
        those = ("that session", "it") if len(sessions) == 1 else ("those sessions", "them")
        report.add("sessions", "problem",
                   f"{_agreeing(len(lost), 'stored run has lost its entries', 'stored runs have lost their entries')}"
                   f" (the file is damaged), {_in_sessions(sessions)}: lovia cannot open {those[0]}, nor move "
                   f"{those[1]} to the trash",
                   "restore the file from a backup; the other sessions read as they are")
    _report_unreadable(unreadable, report, cannot="lovia cannot open {}", damaged="file")


def _check_runs(conn: sqlite3.Connection, tables: set[str], report: Report, now: float) -> None:
    if "lovia_runs" not in tables:
        return
    live: set[str] = set()
    stored: set[tuple[str, str]] = set()
    if "lovia_segments" in tables:
        stored = {(s, r) for s, r in conn.execute("SELECT session_id, run_id FROM lovia_segments")}
        live = {s for s, _ in stored}
    if "lovia_session_info" in tables:
        live |= {s for (s,) in conn.execute("SELECT session_id FROM lovia_session_info")}
    trashed: dict[str, float] = {}
    if "lovia_trash" in tables:
        trashed = dict(conn.execute("SELECT session_id, MAX(deleted_at) FROM lovia_trash GROUP BY session_id"))
    _judge_runs(conn.execute("SELECT run_id, head FROM lovia_runs ORDER BY updated_at"), stored, live, trashed, report)


def _judge_runs(heads: Iterable[tuple[str, str]], stored: set[tuple[str, str]], live: set[str],
                trashed: dict[str, float], report: Report) -> None:
    """Sort the checkpoints (``heads``: run id and head JSON, oldest first) into orphaned, crashed, waiting...

    ``stored``: every (session id, run id) the session store holds; ``live``: the session ids it
    knows; ``trashed``: each session id in the trash with when it was last deleted.
    """
    # Each trashed session id not in use again, with when it was last deleted: a run that started
    # before that was the deleted session's (deleting finalizes or drops them all, so one left is an
    # orphan); one started after is a new conversation under that id, stopped before its first
    # answer, and its checkpoint is all there is of it.
    trashed = {s: deleted for s, deleted in trashed.items() if s not in live}
    in_session: list[str] = []
    of_trashed: list[str] = []
    crashed: list[str] = []
    damaged: list[str] = []
    gone_sessions: list[str] = []
    waiting: list[str] = []
    caches: list[str] = []
    elsewhere: list[str] = []
    for run_id, text in heads:
        try:
            head = RunHead.from_dict(json.loads(text))
        except (TypeError, ValueError, AttributeError):
            damaged.append(run_id)
            continue
        session_id = head.session_id
        if session_id in trashed and head.started_at < trashed[session_id] and not head.is_held():
            of_trashed.append(run_id)
        elif head.status != "completed" and (session_id, run_id) in stored:
            in_session.append(run_id)
        elif head.status == "completed":
            (caches if session_id is None or session_id in live else gone_sessions).append(run_id)
        elif head.crashed:
            crashed.append(run_id)
        elif head.status == "running":
            elsewhere.append(run_id)
        else:
            waiting.append(run_id)
    report.orphaned_runs = in_session + of_trashed
    if in_session:
        what = _agreeing(len(in_session), "unfinished run is already in its session",
                         "unfinished runs are already in their sessions")
        report.add("checkpoints", "problem",
                   f"{what}: {_ids(in_session)} (a finalize stopped between storing the run and deleting its "
                   "checkpoint); resuming one would answer twice",
                   f"delete {_them(in_session, 'its checkpoint', 'their checkpoints')}: lovia doctor --fix",
                   fixable=True)
    if of_trashed:
        what = _agreeing(len(of_trashed), "run belongs to a session", "runs belong to sessions")
        report.add("checkpoints", "problem",
                   f"{what} in the trash: {_ids(of_trashed)}; lovia deletes them when it moves a session there, so "
                   "something stopped it half-way",
                   f"delete {_them(of_trashed, 'its checkpoint', 'their checkpoints')}: lovia doctor --fix "
                   "(restoring the session does not need them)",
                   fixable=True)
    if damaged:
        report.add("checkpoints", "problem",
                   f"{_agreeing(len(damaged), 'run has', 'runs have')} a damaged head: {_ids(damaged)}",
                   f"discard {_them(damaged)} in lovia's runs list (ctrl+o), or restore the file from a backup")
    if crashed:
        report.add("crashed runs", "problem",
                   f"{_agreeing(len(crashed), 'run was', 'runs were')} left running by a process that is gone (or "
                   f"whose lease lapsed): {_ids(crashed)}",
                   "open lovia: the runs list (ctrl+o) resumes each, keeps it as a partial answer, or discards it"
                   if len(crashed) > 1 else
                   "open lovia: the runs list (ctrl+o) resumes it, keeps it as a partial answer, or discards it")
    if gone_sessions:
        what = _agreeing(len(gone_sessions), "completed run belongs to a session that does",
                         "completed runs belong to sessions that do")
        report.add("checkpoints", "note",
                   f"{what} not exist: {_ids(gone_sessions)} (their append failed, or the session was cleared)",
                   "a replay appends a run to its session (lovia's start-up replays its own newest ones): "
                   "Runner.run(agent, [], session=..., session_id=SESSION, checkpoint=CheckpointOptions(checkpointer, "
                   "RUN_ID)); if a session was cleared on purpose, delete the run's checkpoint instead "
                   "(await checkpointer.delete(RUN_ID)), or a replay brings it back")
    if elsewhere:
        report.add("runs", "note", f"{_agreeing(len(elsewhere), 'run is', 'runs are')} being executed now by a live "
                   f"process: {_ids(elsewhere)}")
    if waiting:
        what = _agreeing(len(waiting), "stopped or failed run waits", "stopped or failed runs wait")
        report.add("runs", "note", f"{what} for a decision: {_ids(waiting)}",
                   f"lovia's runs list (ctrl+o) resumes, finalizes or discards {'them' if len(waiting) > 1 else 'it'}")
    if not (in_session or of_trashed or damaged or crashed):
        kept = _agreeing(len(caches), "completed run kept as a replay cache", "completed runs kept as replay caches")
        report.add("checkpoints", "ok", f"no orphaned or crashed runs ({kept})")


def _check_wal(path: Path, report: Report) -> None:
    wal = path.with_name(path.name + "-wal")
    try:
        size = wal.stat().st_size
    except FileNotFoundError:
        report.add("wal", "ok", "no WAL file (no writer has it open, or the file is not in WAL mode)")
        return
    if size > WAL_LIMIT_BYTES:
        report.wal_too_big = True
        report.add("wal", "problem", f"the WAL file is {_size(size)}: its changes have not been copied back into the "
                   "database for long (a reader kept the file busy); reads slow down as it grows",
                   "close the other programs using the file (the last one to close copies the WAL back), or run "
                   "lovia doctor --fix while nothing else uses it", fixable=True)
    else:
        report.add("wal", "ok", f"the WAL file is {_size(size)}")


def _size(count: int) -> str:
    if count < 1024:
        return f"{count} bytes"
    return f"{count / 1024:.1f} KiB" if count < 1024 * 1024 else f"{count / (1024 * 1024):.1f} MiB"


def _archived_keys(conn: sqlite3.Connection, tables: set[str]) -> set[str]:
    """Every archive key a stored entry, run meta or checkpoint head refers to (live, trash or undo)."""
    keys: set[str] = set()

    def from_meta(rows: Iterable[tuple[Any]], path: str) -> None:
        for (text,) in rows:
            try:
                archived = (json.loads(text).get("context") or {}).get("archived") if path == "meta" else \
                    (json.loads(text).get("context_state") or {}).get("archived")
            except (ValueError, AttributeError):
                continue
            if isinstance(archived, dict):
                keys.update(v for v in archived.values() if isinstance(v, str))

    def from_entries(rows: Iterable[tuple[str, str]]) -> None:
        keys.update(FileResultStore.key_for(run_id, call_id) for run_id, call_id in rows if isinstance(call_id, str))

    array = "json_each(CASE WHEN json_valid({0}) THEN {0} ELSE '[]' END) AS item"
    result = "json_extract(item.value, '$.type') = 'tool_result'"
    call = "json_extract(item.value, '$.call_id')"
    if {"lovia_segments", "lovia_segment_entries"} <= tables:
        from_meta(conn.execute("SELECT meta FROM lovia_segments"), "meta")
        from_entries(conn.execute(
            f"SELECT g.run_id, {call} FROM lovia_segments AS g JOIN lovia_segment_entries AS e "
            f"ON e.segment_seq = g.seq, {array.format('e.entries')} WHERE {result}"))
    for table in ("lovia_trash_runs", "lovia_rewind_undo_runs"):
        if table in tables:
            from_meta(conn.execute(f"SELECT meta FROM {table}"), "meta")
            from_entries(conn.execute(f"SELECT r.run_id, {call} FROM {table} AS r, {array.format('r.entries')} "
                                      f"WHERE {result}"))
    if "lovia_runs" in tables:
        from_meta(conn.execute("SELECT head FROM lovia_runs"), "head")
    if "lovia_run_entries" in tables:
        from_entries(conn.execute("SELECT run_id, json_extract(data, '$.call_id') FROM lovia_run_entries "
                                  "WHERE type = 'tool_result' AND json_valid(data)"))
    return keys


def _check_archive(conn: sqlite3.Connection, tables: set[str], report: Report, now: float) -> None:
    assert isinstance(report.path, Path), "the archive beside the file is checked for a SQLite file"
    directory = report.path.parent / ARCHIVE_DIR
    if not directory.is_dir():
        report.add("archive", "ok", f"no tool-output archive beside the file ({directory} does not exist)")
        return
    files = {p.stem: p for p in directory.glob("*.txt") if p.is_file()}
    keys = _archived_keys(conn, tables)
    unreferenced = sorted(p for key, p in files.items()
                          if key not in keys and now - p.stat().st_mtime > ARCHIVE_GRACE_SECONDS)
    report.unreferenced_files = unreferenced
    # Files no entry refers to yet that are younger than the grace are spared, not referred to:
    # counted apart, so that the report never calls them referred to.
    referred = sum(1 for key in files if key in keys)
    young = len(files) - referred - len(unreferenced)
    kept = (f"{_agreeing(young, 'file', 'files')} no entry refers to, kept until "
            f"{'it is' if young == 1 else 'they are'} an hour old (a write may be under way)")
    if unreferenced:
        size = sum(p.stat().st_size for p in unreferenced)
        what = _agreeing(len(unreferenced), f"file in {directory} ({_size(size)}) holds",
                         f"files in {directory} ({_size(size)}) hold")
        report.add("archive", "problem",
                   f"{what} tool outputs no stored entry refers to (their runs were rewound or deleted for good, or "
                   "purged from the trash)" + (f"; besides, {kept}" if young else ""),
                   f"delete {_them(unreferenced)}: lovia doctor --fix (nothing can show or recall "
                   f"{_them(unreferenced)})", fixable=True)
    elif young:
        also = f"{_agreeing(referred, 'file is', 'files are')} referred to; " if referred else ""
        report.add("archive", "ok", f"in {directory}: {also}{kept}")
    elif files:
        every = f"every one of the {len(files)} files" if len(files) != 1 else "the one file"
        report.add("archive", "ok", f"{every} in {directory} is referred to")
    else:
        report.add("archive", "ok", f"{directory} holds no tool outputs")


# -- --fix ---------------------------------------------------------------------------------


async def _delete_checkpoints(path: Path, run_ids: Sequence[str], wal: bool) -> None:
    from lovia.stores.sqlite import SQLiteCheckpointer

    async with SQLiteCheckpointer(path, wal=wal) as checkpointer:
        for run_id in run_ids:
            await checkpointer.delete(run_id)


def fix(report: Report) -> list[str]:
    """Do what ``--fix`` promises for ``report``'s findings; return what was done, one line each."""
    if isinstance(report.path, PostgresLocation):
        return _fix_postgres(report, report.path)
    done: list[str] = []
    if report.orphaned_runs:
        if not report.schema_current:
            done.append("left the orphaned checkpoints: open the file with lovia first (it migrates it), then run "
                        "lovia doctor --fix again")
        else:
            asyncio.run(_delete_checkpoints(report.path, report.orphaned_runs, report.journal_mode == "wal"))
            orphaned = _agreeing(len(report.orphaned_runs), "orphaned checkpoint", "orphaned checkpoints")
            done.append(f"deleted {orphaned}")
    if report.unreferenced_files:
        for file in report.unreferenced_files:
            file.unlink(missing_ok=True)
        done.append("deleted " + _agreeing(len(report.unreferenced_files), "unreferenced archive file",
                                           "unreferenced archive files"))
    if report.wal_too_big:
        conn = sqlite3.connect(report.path, timeout=5.0)
        try:
            busy, _, _ = conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
        finally:
            conn.close()
        done.append("copied the WAL back into the database" if not busy else
                    "could not copy the WAL back: another program holds the file; close it and try again")
    return done


# -- PostgreSQL ----------------------------------------------------------------------------

SQLITE_ONLY = ("SQLite's integrity check, the WAL file's size and the tool-output archive beside the file are "
               "SQLite checks, not made on PostgreSQL")
"""What the doctor says it leaves out on a PostgreSQL database, so that "all is well" claims no more than it checked."""


def examine_postgres(where: PostgresLocation, *, now: float | None = None) -> Report:
    """Check the PostgreSQL database at ``where`` in one read-only transaction; raise :class:`CannotCheck` when it
    cannot be checked (the driver missing, the server down, the password refused, no lovia tables there).

    What applies of the SQLite checks: the schema versions, stored runs whose entries cannot be
    read, orphaned and crashed checkpoints, the search index; the others are named as
    SQLite-only in a note. Nothing is written; no message holds the password or conversation.
    """
    try:
        postgres_store_classes()  # a UserError saying to install the extra when the driver is missing
    except UserError as exc:
        raise CannotCheck(str(exc)) from None
    report = Report(where)
    asyncio.run(_examine_postgres(where, report, time.time() if now is None else now))
    return report


def _postgres_known_versions() -> dict[str, int]:
    session_schema = importlib.import_module("lovia.stores.postgres").SESSION_SCHEMA
    checkpoint_schema = importlib.import_module("lovia.stores._postgres_checkpoint").CHECKPOINT_SCHEMA
    return {session_schema.store: session_schema.version, checkpoint_schema.store: checkpoint_schema.version}


async def _examine_postgres(where: PostgresLocation, report: Report, now: float) -> None:
    import psycopg

    from lovia.stores._postgres_db import translate_error

    try:
        conn = await psycopg.AsyncConnection.connect(where.url, connect_timeout=10)
    except psycopg.Error as exc:
        raise CannotCheck(str(translate_error(exc, where.where, "connecting to check it"))) from None
    async with conn:
        await conn.set_read_only(True)
        await conn.set_isolation_level(psycopg.IsolationLevel.REPEATABLE_READ)  # one snapshot for every check
        try:
            await _postgres_checks(conn, where, report)
        except psycopg.Error as exc:
            raise CannotCheck(str(translate_error(exc, where.where, "checking it"))) from None
        finally:
            await conn.rollback()
    report.add("sqlite only", "note", SQLITE_ONLY,
               "PostgreSQL checks its own pages (data checksums, the amcheck extension); back it up with pg_dump")


async def _postgres_checks(conn: Any, where: PostgresLocation, report: Report) -> None:
    from lovia.stores._postgres_db import POSTGRES_ELSEWHERE, lovia_objects, postgres_layouts
    from lovia.stores._sqlite_db import foreign_objects

    found, versions = await lovia_objects(conn)
    foreign = foreign_objects(found, versions, postgres_layouts())
    ignored = _judge_foreign(foreign, report, POSTGRES_ELSEWHERE, lovias=versions is not None)
    cur = await conn.execute("SELECT table_name, column_name FROM information_schema.columns "
                             "WHERE table_schema = current_schema() AND table_name LIKE 'lovia%'")
    columns: dict[str, set[str]] = {}
    for table, column in await cur.fetchall():
        if table not in ignored:
            columns.setdefault(table, set()).add(column)
    if versions is None:
        raise CannotCheck(f"{where} holds no lovia tables (no lovia_schema table): give lovia's database with --db; "
                          "lovia creates its tables the first time it opens one")
    _judge_schema(versions, _postgres_known_versions(), report, {thing.store for thing in foreign})
    stored: set[tuple[str, str]] = set()
    live: set[str] = set()
    if "lovia_segments" in columns:
        stored = await _postgres_segments(conn, report)
        live = {session_id for session_id, _ in stored}
    if "lovia_session_info" in columns:
        cur = await conn.execute("SELECT session_id FROM lovia_session_info")
        live |= {session_id for (session_id,) in await cur.fetchall()}
    trashed: dict[str, float] = {}
    if {"session_id", "deleted_at"} <= columns.get("lovia_trash", set()):
        cur = await conn.execute("SELECT session_id, MAX(deleted_at) FROM lovia_trash GROUP BY session_id")
        trashed = dict(await cur.fetchall())
    if "lovia_runs" in columns:
        cur = await conn.execute("SELECT run_id, head FROM lovia_runs ORDER BY updated_at")
        _judge_runs(await cur.fetchall(), stored, live, trashed, report)
    await _postgres_search_index(conn, columns, report)


async def _postgres_segments(conn: Any, report: Report) -> set[tuple[str, str]]:
    """Every stored run as (session id, run id); runs lovia cannot read (:func:`_run_state`) are a problem.

    A run's entries are one JSON array in its row, so they cannot go missing on their own as in
    SQLite's separate table. Read with a server-side cursor, a batch at a time.
    """
    stored: set[tuple[str, str]] = set()
    unreadable: dict[RunState, list[tuple[str, str]]] = {}
    async with conn.cursor(name="lovia_doctor_segments") as cur:
        cur.itersize = 200
        await cur.execute("SELECT session_id, run_id, entry_count, meta, entries FROM lovia_segments "
                          "ORDER BY session_id, seq")
        async for session_id, run_id, count, meta, entries in cur:
            stored.add((session_id, run_id))
            state = _run_state(count, meta, entries)
            if state != "readable":
                unreadable.setdefault(state, []).append((session_id, run_id))
    if not unreadable:
        report.add("sessions", "ok", f"every stored run has its entries ({_agreeing(len(stored), 'run', 'runs')})")
        return stored
    _report_unreadable(unreadable, report, cannot="lovia cannot open {}, nor move {} to the trash", damaged="database")
    return stored


async def _postgres_search_index(conn: Any, columns: dict[str, set[str]], report: Report) -> None:
    """The full-text index (session schema 2): each stored run has a document per searched entry, each titled
    session one for its title. Triggers keep it in step; a run or title it lacks is one search cannot find."""
    import psycopg

    if not {"lovia_search", "lovia_search_titles", "lovia_segments", "lovia_session_info"} <= set(columns):
        return
    try:
        async with conn.transaction():  # a savepoint: a failure here leaves the other checks' findings
            cur = await conn.execute(
                "SELECT g.session_id FROM lovia_segments AS g "
                "WHERE (SELECT count(*) FROM lovia_searched_entries(g.entries)) "
                "<> (SELECT count(*) FROM lovia_search AS s WHERE s.segment_seq = g.seq) ORDER BY g.session_id, g.seq")
            runs = [session_id for (session_id,) in await cur.fetchall()]
            cur = await conn.execute(
                "SELECT i.session_id FROM lovia_session_info AS i WHERE i.title IS NOT NULL AND NOT EXISTS "
                "(SELECT 1 FROM lovia_search_titles AS t WHERE t.session_id = i.session_id AND t.body = i.title) "
                "ORDER BY i.session_id")
            titles = [session_id for (session_id,) in await cur.fetchall()]
    except psycopg.Error as exc:
        report.add("search", "note", f"the search index could not be checked (SQLSTATE {exc.sqlstate})",
                   "searching still works as far as the index goes")
        return
    if not runs and not titles:
        report.add("search", "ok", "the search index holds every stored run and title")
        return
    sessions = list(dict.fromkeys(runs + titles))
    report.add("search", "problem",
               f"the search index is out of step for {_agreeing(len(runs), 'stored run', 'stored runs')} and "
               f"{_agreeing(len(titles), 'title', 'titles')}, {_in_sessions(sessions)}: searches miss or misplace "
               "what they hold (reading them is unaffected)",
               "something wrote to lovia's tables without its triggers (disabled, or a restore without them); "
               "restore the database from a backup, or open those sessions and move them to the trash and back")


def _fix_postgres(report: Report, where: PostgresLocation) -> list[str]:
    if not report.orphaned_runs:
        return []
    if not report.schema_current:
        return ["left the orphaned checkpoints: open the database with lovia first (it migrates it), then run "
                "lovia doctor --fix again"]
    asyncio.run(_delete_postgres_checkpoints(where, report.orphaned_runs))
    return [f"deleted {_agreeing(len(report.orphaned_runs), 'orphaned checkpoint', 'orphaned checkpoints')}"]


async def _delete_postgres_checkpoints(where: PostgresLocation, run_ids: Sequence[str]) -> None:
    _, checkpointer_class = postgres_store_classes()
    checkpointer = checkpointer_class(where.url)
    try:
        for run_id in run_ids:
            await checkpointer.delete(run_id)
    finally:
        await checkpointer.close()


# -- the command ---------------------------------------------------------------------------

_MARK = {"ok": "ok     ", "note": "note   ", "problem": "PROBLEM"}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="lovia doctor",
        description="Check a lovia database: SQLite's integrity check, schema versions, orphaned checkpoints, "
                    "crashed runs, the WAL's size and the tool-output archive; on PostgreSQL the schema versions, "
                    "stored runs, checkpoints and the search index. Read-only unless --fix is given. "
                    "Exit status: 0 all well, 1 something is wrong, 2 the database cannot be checked.")
    parser.add_argument("--db", type=db_argument, metavar="PATH|URL",
                        help="the SQLite file or the postgresql:// URL to check (default: the config file's db, "
                             "else lovia.db in your user data directory)")
    parser.add_argument("--quick", action="store_true", help="SQLite's quick_check instead of the full "
                                                             "integrity_check (faster on a large file)")
    parser.add_argument("--fix", action="store_true",
                        help="delete orphaned checkpoints and archive files nothing refers to, and copy a large WAL "
                             "back into the file; never touches conversation")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(sys.argv[1:] if argv is None else argv)
    try:
        where = chosen_db(args.db)
        report = examine_postgres(where) if isinstance(where, PostgresLocation) else examine(where, quick=args.quick)
    except (CannotCheck, UserError) as exc:
        print(f"lovia doctor: {exc}", file=sys.stderr)
        return 2
    print(f"lovia doctor: {where}")
    for finding in report.findings:
        print(f"  {_MARK[finding.severity]}  {finding.check}: {finding.summary}")
        if finding.advice and finding.severity != "ok":
            print(f"             → {finding.advice}")
    problems = report.problems
    if args.fix:
        for line in fix(report):
            print(f"  fixed    {line}")
        if any(f.fixable for f in problems):
            report = examine_postgres(where) if isinstance(where, PostgresLocation) else examine(where, quick=True)
            problems = report.problems
    if not problems:
        print("All is well." if not args.fix else "All is well now.")
        return 0
    fixable = [f for f in problems if f.fixable]
    print(f"{len(problems)} problem{'s' if len(problems) != 1 else ''} found."
          + (" Nothing was changed; lovia doctor --fix mends those marked so." if fixable and not args.fix else ""))
    return 1


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
