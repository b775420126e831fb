"""The PostgreSQL checkpointer: runs' progress in one database that workers on many hosts share.

It keeps what :class:`~lovia.stores.sqlite.SQLiteCheckpointer` keeps, in the same three tables
(schema "checkpoint", version 1 = SQLite's versions 1 and 2): ``lovia_runs`` (a run's head as
the JSON text lovia writes, with the columns a query needs beside it: status, session, update
time, entry count, and the head's claim and turn), ``lovia_run_entries`` (one row per entry)
and ``lovia_run_partials`` (the partial-answer journal). Its behaviour and its messages are
the SQLite checkpointer's; what differs is how one transaction excludes another.

SQLite runs one write at a time for the whole file. Here writes of different runs go on
side by side, and those of one run are ordered by locks taken inside their transactions:

- ``claim``, ``delete`` and a save that needs its full check take a transaction-scoped
  advisory lock on the run id first (so two of them on a run that is not stored yet do not
  both insert it), then the run's row ``FOR UPDATE``: of several processes on several hosts
  claiming one run, exactly one takes it, and the others see its claim.
- The usual save, by the execution that stored the run last, is one ``UPDATE`` of the head
  whose ``WHERE`` names the claim and the entry count this store last stored: the row lock
  it takes orders it with the others, and under READ COMMITTED a save that waited on that
  lock re-checks the ``WHERE`` against the row as committed. Anything else (another count,
  another claim, no run) takes the full check, within the same transaction.
- A journal write reads the run's row ``FOR KEY SHARE``: it does not wait for saves, but a
  claim or delete under way finishes first, and the write then finds the run's new claim
  (and is refused) or no run.

A save's cost does not grow with the run's length: on the tests' local cluster, a save that
appends one entry to a 5,000-entry run took 0.86x the time of one to a 10-entry run (medians of
5 runs of 200 saves; commit's fsync dominates both). Once the head's ``UPDATE`` succeeded, the
entries' ``INSERT``, the ``NOTIFY`` and the journal's clear go in one pipeline: one round trip.

Within one store object, writes of one run go to the database in the order they were asked
(:class:`_RunQueue`), as SQLite's single writer thread orders them: saves queued together
(tool results landing at once) each append past the one before.

Every write transaction announces itself with ``NOTIFY`` (``PostgresDatabase.notify_change``):
``outside_change_token`` counts other objects' and processes' notifications, so the terminal
UI sees runs of workers elsewhere as they progress without reading a table.

Leases are wall-clock times: the claiming host writes ``lease_until`` by its clock and every
other host judges it by its own (:meth:`~lovia.checkpoint.RunHead.holder`), so hosts sharing a
database need synchronized clocks (NTP); a skew lengthens or shortens every lease by as much.

The journal's text is stored as a JSON string: PostgreSQL's ``text`` cannot hold the NUL
character, which a model may stream. Entries and heads are JSON already, with NUL escaped.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import AsyncIterator, Hashable, Sequence
from typing import Any

from psycopg import AsyncConnection

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
from lovia.entries import entries_from_json
from lovia.errors import DatabaseFileError
from lovia.stores._common import readable_run_summaries
from lovia.stores._postgres_db import PostgresDatabase, PostgresSchema
from lovia.stores.sqlite import _encode, _encode_json, _JournalledRuns, _partial_answer, _StoredCounts
from lovia.timing import ModelStep, step_to_dict

__all__ = ["CHECKPOINT_SCHEMA", "PostgresCheckpointer"]

Connection = AsyncConnection[Any]


async def _checkpoint_v1(conn: Connection) -> None:
    """SQLite's checkpoint versions 1 and 2 in one: runs, their entries and the journal.

    ``claim`` and ``turn`` repeat the head's, so a save's check and the journal's tag are
    column comparisons, not a parse of the head's JSON.
    """
    await conn.execute(
        """CREATE TABLE lovia_runs (
            run_id TEXT PRIMARY KEY,
            status TEXT NOT NULL,
            session_id TEXT,
            updated_at DOUBLE PRECISION NOT NULL,
            entry_count INTEGER NOT NULL,
            claim TEXT,
            turn INTEGER NOT NULL,
            head TEXT NOT NULL
        )"""
    )
    await conn.execute("CREATE INDEX lovia_runs_by_status ON lovia_runs (status, updated_at)")
    await conn.execute("CREATE INDEX lovia_runs_by_update ON lovia_runs (updated_at)")
    await conn.execute(
        """CREATE TABLE lovia_run_entries (
            run_id TEXT NOT NULL,
            position INTEGER NOT NULL,
            type TEXT NOT NULL,
            data TEXT NOT NULL,
            PRIMARY KEY (run_id, position)
        )"""
    )
    await conn.execute(
        """CREATE TABLE lovia_run_partials (
            run_id TEXT PRIMARY KEY,
            claim TEXT,
            turn INTEGER NOT NULL,
            text TEXT NOT NULL,
            step TEXT,
            updated_at DOUBLE PRECISION NOT NULL
        )"""
    )


CHECKPOINT_SCHEMA = PostgresSchema("checkpoint", (_checkpoint_v1,))

_RUN_LOCKS = 0x6C76_7231
"""The first key of the advisory locks on run ids (``pg_advisory_xact_lock(int, int)``); the
second is the run id's hash. Another lock that shares a hash only waits a moment longer."""
_SESSION_RUN_LOCKS = 0x6C76_7332
"""The first key of the advisory locks a claim that must run alone in its session takes (the
second is the session id's hash), after its run's: such claims of one session take turns."""


class PostgresCheckpointer:
    """A :class:`~lovia.checkpoint.ClaimingCheckpointer` in a PostgreSQL database.

    Also :class:`~lovia.checkpoint.ListableCheckpointer`,
    :class:`~lovia.checkpoint.ChangeReportingCheckpointer` and
    :class:`~lovia.checkpoint.JournalingCheckpointer`, as the SQLite one. Each ``save``
    appends only the entries past those already stored and replaces the head, in one
    transaction, so its cost does not grow with the run's length. ``claim`` checks and
    takes a run in one transaction (see the module docstring for the locks), so of several
    processes on several hosts claiming one run, exactly one gets it.

    ``url`` is a libpq connection URL or string (``postgresql://user:pass@host/db``); the
    pool holds ``min_size`` to ``max_size`` connections. The database is opened (and its
    tables created or migrated) at first use, or by :meth:`open`.
    """

    def __init__(self, url: str, *, min_size: int = 1, max_size: int = 10) -> None:
        self._db = PostgresDatabase(url, schema=CHECKPOINT_SCHEMA, min_size=min_size, max_size=max_size)
        self._stored_counts = _StoredCounts()
        self._journalled = _JournalledRuns()
        self._queue = _RunQueue()

    @property
    def where(self) -> str:
        """The database, named for messages: its URL without the password."""
        return self._db.where

    async def open(self) -> None:
        """Connect, and create or migrate the tables, now instead of at first use."""
        await self._db.open()

    async def close(self) -> None:
        """Close the pool. Idempotent; the store cannot be used afterwards."""
        await self._db.close()

    async def __aenter__(self) -> PostgresCheckpointer:
        await self.open()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.where!r})"

    async def outside_change_token(self) -> Hashable:
        """How many writes other store objects (in any process) committed; see
        :class:`~lovia.checkpoint.ChangeReportingCheckpointer`.

        Counted from the ``NOTIFY`` each write transaction sends, on one ``LISTEN``
        connection: no table is read. This store's own writes do not change it.
        """
        return await self._db.outside_change_token()

    async def save(self, snapshot: RunSnapshot) -> None:
        run_id, entries = snapshot.run_id, snapshot.entries
        # Read now: the runner goes on changing its head while this waits for its turn.
        claim, head_row, turn = snapshot.head.claim, _head_row(snapshot.head), snapshot.head.turn
        total = len(entries)
        counts = self._stored_counts

        async def write(conn: Connection) -> bool:
            have = counts.get(run_id)
            # The usual save, by the execution that stored the run last: the check is the head's
            # write itself, which changes the row only if it still holds this claim and the
            # entries this store last saw stored; anything else takes the full check below.
            if (
                claim is None
                or have is None
                or have > total
                or (await conn.execute(_UPDATE_OWN_HEAD, (*head_row, total, run_id, have, claim))).rowcount != 1
            ):
                await _lock_run(conn, run_id)
                cursor = await conn.execute(
                    "SELECT entry_count, claim, head FROM lovia_runs WHERE run_id = %s FOR UPDATE", (run_id,))
                row = await cursor.fetchone()
                have = check_save(run_id, claim, total, (row[0], row[1]) if row else None,
                                  lambda: _decode_head(row[2] if row else "", run_id, self.where))
                await _write_head(conn, run_id, head_row, total)
            # The rest needs no answer before the next statement: one round trip for all of it.
            async with conn.pipeline():
                # Bounded by ``total``: the runner may append more while this waits on the database.
                await _insert_entries(conn, run_id, have, entries[have:total])
                await self._db.notify_change(conn)
                cleared = await conn.execute(_CLEAR_PARTIAL, (run_id, claim, turn)) if journalled is not None else None
            counts.remember(run_id, total)  # a guess until the commit: a failed one only costs the full check
            return cleared is not None and cleared.rowcount > 0

        async with self._queue.turn(run_id):
            journalled = self._journalled.to_clear(run_id)
            if await self._db.transaction(write, f"saving the checkpoint of run {run_id!r}"):
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
        :class:`~lovia.checkpoint.SessionExclusiveCheckpointer`. Such claims of one session take the
        session's advisory lock (:data:`_SESSION_RUN_LOCKS`) before reading its running runs: without
        it, two claims committing at once would each not see the other's run."""
        return await self._claim(run_id, owner, token, lease_seconds, start, if_stored, alone=True)

    async def _claim(self, run_id: str, owner: RunOwner, token: str, lease_seconds: float,
                     start: RunSnapshot | None, if_stored: IfStored, *, alone: bool) -> RunSnapshot | None:
        start = RunSnapshot(run_id, RunHead.from_dict(start.head.to_dict()), start.entries) if start else None
        counts = self._stored_counts

        async def write(conn: Connection) -> tuple[RunHead, list[str], RunHead | None] | None:
            await _lock_run(conn, run_id)  # a run not stored yet has no row to lock
            cursor = await conn.execute("SELECT head FROM lovia_runs WHERE run_id = %s FOR UPDATE", (run_id,))
            row = await cursor.fetchone()
            stored = _decode_head(row[0], run_id, self.where) if row else None
            before = _decode_head(row[0], run_id, self.where) if row else None  # plan_claim takes ``stored`` in place
            now = time.time()
            step = plan_claim(run_id, stored, start, owner, token, lease_seconds, now, if_stored)
            if alone and (session_id := claimed_session(step, stored, start)) is not None:
                await conn.execute("SELECT pg_advisory_xact_lock(%s, hashtext(%s))", (_SESSION_RUN_LOCKS, session_id))
                cursor = await conn.execute("SELECT run_id, head FROM lovia_runs WHERE session_id = %s "
                                            "AND status = 'running' AND run_id != %s", (session_id, run_id))
                running = await cursor.fetchall()
                check_alone_in_session(session_id, run_id,
                                       ((other, _decode_head(text, other, self.where)) for other, text in running), now)
            if step == "store_start":
                assert start is not None
                await conn.execute("DELETE FROM lovia_run_entries WHERE run_id = %s", (run_id,))
                await _insert_entries(conn, run_id, 0, start.entries)
                await _write_head(conn, run_id, _head_row(start.head), len(start.entries))
                counts.remember(run_id, len(start.entries))
                if stored is not None:  # replaced: the journal of the run it replaced is over
                    await conn.execute("DELETE FROM lovia_run_partials WHERE run_id = %s", (run_id,))
                await self._db.notify_change(conn)
            if stored is None or step == "store_start":
                return None
            if step == "update":
                assert before is not None
                await _write_head(conn, run_id, _head_row(taken_up(stored, before, await _partial(conn, run_id))), None)
                # Read: taken, it is over.
                await conn.execute("DELETE FROM lovia_run_partials WHERE run_id = %s", (run_id,))
                await self._db.notify_change(conn)
            return stored, await _entry_rows(conn, run_id), before if step == "update" else None

        async with self._queue.turn(run_id):
            found = await self._db.transaction(write, f"claiming run {run_id!r}")
            self._journalled.forget(run_id)
        if found is None:
            return None
        head, rows, taken_from = found
        entries = entries_from_json(rows, where=f"checkpoint of run {run_id!r} in {self.where}")
        return RunSnapshot(run_id, head, entries, taken_from=taken_from)

    async def load(self, run_id: str) -> RunSnapshot | None:
        async def read(conn: Connection) -> tuple[str, list[str], PartialAnswer | None] | None:
            cursor = await conn.execute(
                "SELECT r.head, p.text, p.step FROM lovia_runs AS r "
                "LEFT JOIN lovia_run_partials AS p USING (run_id) WHERE r.run_id = %s", (run_id,))
            row = await cursor.fetchone()
            if row is None:
                return None
            return row[0], await _entry_rows(conn, run_id), _journal_row(row[1], row[2])

        found = await self._db.read(read, f"loading the checkpoint of run {run_id!r}")
        if found is None:
            return None
        head_json, rows, partial = found
        entries = entries_from_json(rows, where=f"checkpoint of run {run_id!r} in {self.where}")
        return RunSnapshot(run_id, with_partial(_decode_head(head_json, run_id, self.where), partial), entries)

    async def journal_partial(self, run_id: str, text: str, *, claim: str | None,
                              step: ModelStep | None = None) -> bool:
        """Journal the text so far of the streaming turn; see :class:`~lovia.checkpoint.JournalingCheckpointer`.

        One statement: the text is written only while the stored run is ``running`` under
        ``claim``, with that head's turn, replacing the run's previous text.
        """
        text_json = _encode_json(text).decode()
        step_json = _encode_json(step_to_dict(step)).decode() if step is not None else None

        async def write(conn: Connection) -> bool:
            cursor = await conn.execute(_JOURNAL_PARTIAL, (text_json, step_json, time.time(), run_id, claim))
            if cursor.rowcount > 0:
                await self._db.notify_change(conn)
            return cursor.rowcount > 0

        async with self._queue.turn(run_id):
            self._journalled.wrote(run_id)  # before the write: a save from now on clears it
            return await self._db.transaction(write, f"journalling the streaming answer of run {run_id!r}")

    async def delete(self, run_id: str) -> bool:
        async def write(conn: Connection) -> bool:
            await _lock_run(conn, run_id)
            # The row first: a save under way holds it, and the entries it adds are seen below.
            deleted = (await conn.execute("DELETE FROM lovia_runs WHERE run_id = %s", (run_id,))).rowcount > 0
            await conn.execute("DELETE FROM lovia_run_entries WHERE run_id = %s", (run_id,))
            await conn.execute("DELETE FROM lovia_run_partials WHERE run_id = %s", (run_id,))
            if deleted:
                await self._db.notify_change(conn)
            return deleted

        async with self._queue.turn(run_id):
            deleted = await self._db.transaction(write, f"deleting the checkpoint of run {run_id!r}")
            self._journalled.forget(run_id)
        return deleted

    async def list_runs(
        self, *, statuses: Sequence[RunStatus] | None = None, limit: int | None = None
    ) -> list[RunSummary]:
        """Runs with one of ``statuses`` (all when ``None``), most recently updated first."""
        async def read(conn: Connection) -> list[tuple[str, str, int, str | None, str | None]]:
            # A running run's journal comes along, for the one that crashed (``with_partial``).
            sql = ("SELECT r.run_id, r.head, r.entry_count, CASE WHEN r.status = 'running' THEN p.text END, "
                   "p.step FROM lovia_runs AS r LEFT JOIN lovia_run_partials AS p USING (run_id)")
            args: list[Any] = []
            if statuses is not None:
                sql += " WHERE r.status = ANY(%s)"
                args.append(list(statuses))
            sql += " ORDER BY r.updated_at DESC"
            if limit is not None:
                sql += " LIMIT %s"
                args.append(limit)
            cursor = await conn.execute(sql, args)
            return await cursor.fetchall()

        if statuses is not None and not statuses:
            return []
        rows = await self._db.read(read, "listing runs")
        return readable_run_summaries(rows, lambda head, run_id: _decode_head(head, run_id, self.where), _journal_row)


_HeadRow = tuple[str, str | None, float, str | None, int, str]

# A save's head write with its claim check: it changes the row only while the stored run holds
# the saving claim and the entry count this store last stored (``_StoredCounts``).
_UPDATE_OWN_HEAD = (
    "UPDATE lovia_runs SET status = %s, session_id = %s, updated_at = %s, claim = %s, turn = %s, head = %s, "
    "entry_count = %s WHERE run_id = %s AND entry_count = %s AND claim = %s"
)

# The journal's write: only while the stored run is running under the writer's claim, tagged with
# the stored head's claim and turn (what ``_CLEAR_PARTIAL`` compares with each save). The run's
# row is read FOR KEY SHARE: a claim or delete under way ends first, and its result is what is
# checked.
_JOURNAL_PARTIAL = (
    "INSERT INTO lovia_run_partials (run_id, claim, turn, text, step, updated_at) "
    "SELECT run_id, claim, turn, %s, %s, %s FROM lovia_runs "
    "WHERE run_id = %s AND status = 'running' AND claim IS NOT DISTINCT FROM %s FOR KEY SHARE "
    "ON CONFLICT (run_id) DO UPDATE SET claim = excluded.claim, turn = excluded.turn, text = excluded.text, "
    "step = excluded.step, updated_at = excluded.updated_at"
)

# A save clears the journal unless it is of the same execution and turn (a lease renewal while
# the model streams): the turn's snapshot landed, or the run went on under another claim. Only
# for the runs this store journalled (``_JournalledRuns``): another process's journal of a run is
# cleared by the claim that takes the run from it.
_CLEAR_PARTIAL = (
    "DELETE FROM lovia_run_partials WHERE run_id = %s AND (claim IS DISTINCT FROM %s OR turn IS DISTINCT FROM %s)"
)


class _RunQueue:
    """This store's writes of one run, one at a time in the order they were asked.

    ``asyncio.Lock`` wakes its waiters first come, first served; a run's lock is dropped
    when nobody holds or awaits it, so the map holds only runs being written.
    """

    def __init__(self) -> None:
        self._locks: dict[str, tuple[asyncio.Lock, int]] = {}

    @contextlib.asynccontextmanager
    async def turn(self, run_id: str) -> AsyncIterator[None]:
        lock, users = self._locks.get(run_id) or (asyncio.Lock(), 0)
        self._locks[run_id] = (lock, users + 1)
        try:
            async with lock:
                yield
        finally:
            lock, users = self._locks[run_id]
            if users == 1:
                del self._locks[run_id]
            else:
                self._locks[run_id] = (lock, users - 1)


async def _lock_run(conn: Connection, run_id: str) -> None:
    """Take the run's advisory lock until the transaction ends (for a run that may have no row yet)."""
    await conn.execute("SELECT pg_advisory_xact_lock(%s, hashtext(%s))", (_RUN_LOCKS, run_id))


def _head_row(head: RunHead) -> _HeadRow:
    """The ``lovia_runs`` columns that come from a head: status, session, update time, claim, turn, the head."""
    return (head.status, head.session_id, head.updated_at, head.claim, head.turn,
            _encode_json(head.to_dict()).decode())


async def _write_head(conn: Connection, run_id: str, row: _HeadRow, entry_count: int | None) -> None:
    """Insert or replace the run's head; ``entry_count=None`` keeps the stored count."""
    status, session_id, updated_at, claim, turn, head_json = row
    await conn.execute(
        "INSERT INTO lovia_runs (run_id, status, session_id, updated_at, entry_count, claim, turn, head) "
        "VALUES (%s, %s, %s, %s, %s, %s, %s, %s) ON CONFLICT (run_id) DO UPDATE SET status = excluded.status, "
        "session_id = excluded.session_id, updated_at = excluded.updated_at, claim = excluded.claim, "
        "turn = excluded.turn, head = excluded.head, entry_count = COALESCE(%s, lovia_runs.entry_count)",
        (run_id, status, session_id, updated_at, entry_count or 0, claim, turn, head_json, entry_count),
    )


async def _insert_entries(conn: Connection, run_id: str, first: int, entries: Sequence[Any]) -> None:
    """Store ``entries`` as the run's entries from position ``first`` on, in one statement."""
    if not entries:
        return
    rows = _encode(entries)
    await conn.execute(
        "INSERT INTO lovia_run_entries (run_id, position, type, data) "
        "SELECT %s, %s + item.ordinality - 1, item.type, item.data "
        "FROM unnest(%s::text[], %s::text[]) WITH ORDINALITY AS item (type, data, ordinality)",
        (run_id, first, [kind for kind, _ in rows], [data for _, data in rows]),
    )


async def _entry_rows(conn: Connection, run_id: str) -> list[str]:
    cursor = await conn.execute("SELECT data FROM lovia_run_entries WHERE run_id = %s ORDER BY position", (run_id,))
    return [data for (data,) in await cursor.fetchall()]


async def _partial(conn: Connection, run_id: str) -> PartialAnswer | None:
    """What the journal holds of ``run_id``'s streaming turn, if anything."""
    cursor = await conn.execute("SELECT text, step FROM lovia_run_partials WHERE run_id = %s", (run_id,))
    row = await cursor.fetchone()
    return _journal_row(row[0], row[1]) if row else None


def _journal_row(text_json: str | None, step_json: str | None) -> PartialAnswer | None:
    """A journal row read back (its text is a JSON string); a text this version cannot read is none."""
    if text_json is None:
        return None
    try:
        text = json.loads(text_json)
    except ValueError:
        return None
    return _partial_answer(text, step_json) if isinstance(text, str) else None


def _decode_head(text: str, run_id: str, where: str) -> RunHead:
    damaged = DatabaseFileError(
        f"the head of run {run_id!r} in {where} is damaged (its fields are not what lovia wrote); "
        "lovia left it as it is. Delete the run, or restore the database from a backup."
    )
    try:
        data = json.loads(text)
    except (TypeError, ValueError):
        raise damaged from None
    if not isinstance(data, dict):
        raise damaged
    try:
        return RunHead.from_dict(data)
    except (TypeError, ValueError, AttributeError):
        # The message of the cause may quote stored values: never show it.
        raise damaged from None
