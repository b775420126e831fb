"""One SQLite file as a lovia store sees it: open, validate, migrate, transact.

Every operation of a store is one plain function over a ``sqlite3.Connection`` that runs,
start to finish, on the store's aiosqlite worker thread: ``BEGIN`` .. ``COMMIT`` is a single
thread hop. That keeps the cost per transaction low and means a cancelled caller can never
split a transaction: once queued, it runs to ``COMMIT`` or ``ROLLBACK``, and the caller waits
for that outcome (shielded) before its cancellation propagates.
"""

from __future__ import annotations

import asyncio
import os
import sqlite3
import stat
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Sequence, TypeVar

import aiosqlite

from lovia._async import shielded
from lovia.errors import DatabaseFileError, SchemaError, StoreError

T = TypeVar("T")

SQLITE_HEADER = b"SQLite format 3\x00"
BUSY_TIMEOUT_SECONDS = 5.0
WAL_BUSY_TIMEOUT_SECONDS = 30.0
SCHEMA_TABLE_SQL = (
    "CREATE TABLE IF NOT EXISTS lovia_schema (store TEXT PRIMARY KEY, version INTEGER NOT NULL)"
)

Migration = Callable[[sqlite3.Connection], None]


@dataclass(frozen=True, slots=True)
class StoreSchema:
    """A store's name in ``lovia_schema`` and its migrations: ``steps[i]`` goes to version i+1."""

    store: str
    steps: Sequence[Migration]

    @property
    def version(self) -> int:
        return len(self.steps)


def _prepare_file(path: Path) -> None:
    """Refuse what is not a SQLite file; create a missing one readable by its owner only."""
    try:
        info = path.stat()
    except FileNotFoundError:
        if not path.parent.is_dir():
            raise DatabaseFileError(
                f"cannot create {path}: the directory {path.parent} does not exist; create it first"
            ) from None
        try:
            os.close(os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600))
        except FileExistsError:
            pass  # another process created it first: validate theirs
        except OSError as exc:
            raise DatabaseFileError(f"cannot create {path}: {exc.strerror}") from None
        return
    if not stat.S_ISREG(info.st_mode):
        raise DatabaseFileError(f"{path} is not a regular file; point lovia at a database file")
    if info.st_size == 0:
        return
    try:
        with open(path, "rb") as file:
            header = file.read(len(SQLITE_HEADER))
    except OSError as exc:
        raise DatabaseFileError(f"cannot read {path}: {exc.strerror}") from None
    if header != SQLITE_HEADER:
        raise DatabaseFileError(
            f"{path} is not a SQLite database, so not a lovia one; lovia left it untouched. "
            "Point lovia at another file."
        )


def _schema_version(conn: sqlite3.Connection, store: str) -> int | None:
    """The stored version of ``store``: ``None`` if the file is not lovia's, 0 if new to it."""
    tables = {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    if "lovia_schema" not in tables:
        return 0 if not tables else None
    row = conn.execute("SELECT version FROM lovia_schema WHERE store = ?", (store,)).fetchone()
    return int(row[0]) if row else 0


class SQLiteDatabase:
    """One connection to one file for one store object, opened on first use.

    Several stores (and processes) may share a file; each store records and migrates its
    own schema version in the ``lovia_schema`` table.
    """

    def __init__(self, path: str | os.PathLike[str], *, wal: bool, schema: StoreSchema) -> None:
        self.path = Path(path)
        self.wal = wal
        self.schema = schema
        self._connection: aiosqlite.Connection | None = None
        self._raw: sqlite3.Connection | None = None
        self._lock = asyncio.Lock()
        self._closed = False

    # -- opening ---------------------------------------------------------------------

    async def _ensure_open(self) -> None:
        if self._raw is not None:
            return
        if self._closed:
            raise StoreError(f"the store on {self.path} is closed; create a new one")
        _prepare_file(self.path)
        timeout = WAL_BUSY_TIMEOUT_SECONDS if self.wal else BUSY_TIMEOUT_SECONDS
        connection = aiosqlite.connect(self.path, isolation_level=None, timeout=timeout)
        # aiosqlite's worker is not a daemon thread: a store someone forgot to close would
        # keep the interpreter from exiting. SQLite's journal makes an abrupt exit safe.
        getattr(connection, "_thread", connection).daemon = True
        try:
            await connection
        except sqlite3.Error as exc:
            raise self._file_error(exc) from None
        raw = connection._connection  # the sqlite3.Connection the worker thread owns
        try:
            await self._on_thread(connection, raw, self._open_sync)
        except BaseException:
            await connection.close()
            raise
        self._connection, self._raw = connection, raw

    def _open_sync(self, conn: sqlite3.Connection) -> None:
        try:
            version = _schema_version(conn, self.schema.store)
        except sqlite3.DatabaseError as exc:
            raise self._file_error(exc) from None
        self._check_version(version)
        if self.wal:
            self._switch_to_wal(conn)
        self._migrate(conn)

    def _check_version(self, version: int | None) -> None:
        if version is None:
            raise DatabaseFileError(
                f"{self.path} is a SQLite database but not a lovia one (it has no lovia_schema "
                "table); lovia left it untouched. Point lovia at another file."
            )
        if version > self.schema.version:
            raise SchemaError(
                f"{self.path} holds a lovia {self.schema.store} store at schema version {version}, "
                f"newer than the {self.schema.version} this lovia knows. Upgrade lovia to open it; "
                "the file was not modified."
            )

    def _switch_to_wal(self, conn: sqlite3.Connection) -> None:
        # Changing the journal mode needs a lock the busy handler does not always wait for,
        # so several processes opening a fresh file at once must retry it themselves.
        conn.execute(f"PRAGMA busy_timeout = {int(WAL_BUSY_TIMEOUT_SECONDS * 1000)}")
        deadline = time.monotonic() + WAL_BUSY_TIMEOUT_SECONDS
        delay = 0.005
        while True:
            try:
                mode = conn.execute("PRAGMA journal_mode = WAL").fetchone()[0]
            except sqlite3.OperationalError as exc:
                if not _is_busy(exc) or time.monotonic() > deadline:
                    raise self._translate(exc, "switching to WAL mode") from None
                time.sleep(delay)
                delay = min(delay * 2, 0.2)
                continue
            if str(mode).lower() != "wal" and self.path.name != ":memory:":
                raise StoreError(f"{self.path} refused WAL mode (it stays in {mode!r} mode)")
            return

    def _migrate(self, conn: sqlite3.Connection) -> None:
        target = self.schema.version
        # A cheap look first, so an up-to-date file is opened without taking the write lock.
        if _schema_version(conn, self.schema.store) == target:
            return

        def migrate(conn: sqlite3.Connection) -> None:
            version = _schema_version(conn, self.schema.store)  # another process may have won
            self._check_version(version)
            assert version is not None
            if version < target:
                conn.execute(SCHEMA_TABLE_SQL)
                for step in self.schema.steps[version:]:
                    step(conn)
                conn.execute(
                    "INSERT INTO lovia_schema (store, version) VALUES (?, ?) "
                    "ON CONFLICT (store) DO UPDATE SET version = excluded.version",
                    (self.schema.store, target),
                )

        self._transaction_sync(conn, migrate, "BEGIN IMMEDIATE", f"migrating the {self.schema.store} schema")

    # -- running operations ----------------------------------------------------------

    async def write(self, fn: Callable[[sqlite3.Connection], T], action: str) -> T:
        """Run ``fn`` in a ``BEGIN IMMEDIATE`` transaction; all of it is committed or none."""
        return await self._transact(fn, "BEGIN IMMEDIATE", action)

    async def read(self, fn: Callable[[sqlite3.Connection], T], action: str) -> T:
        """Run ``fn`` in a read transaction, so it sees one consistent state of the file."""
        return await self._transact(fn, "BEGIN", action)

    async def _transact(self, fn: Callable[[sqlite3.Connection], T], begin: str, action: str) -> T:
        async with self._lock:
            await self._ensure_open()
            assert self._connection is not None and self._raw is not None
            return await self._on_thread(self._connection, self._raw, self._transaction_sync, fn, begin, action)

    def _transaction_sync(
        self, conn: sqlite3.Connection, fn: Callable[[sqlite3.Connection], T], begin: str, action: str
    ) -> T:
        try:
            conn.execute(begin)
            try:
                result = fn(conn)
                conn.execute("COMMIT")
            except BaseException:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                raise
        except sqlite3.Error as exc:
            raise self._translate(exc, action) from None
        return result

    @staticmethod
    async def _on_thread(connection: aiosqlite.Connection, raw: sqlite3.Connection, fn: Callable[..., T], *args: Any) -> T:
        # Once queued, the function runs to its end on the worker thread whatever we do: wait
        # for its real outcome (so the lock is not freed mid-transaction) before a cancellation.
        return await shielded(connection._execute(fn, raw, *args))

    async def close(self) -> None:
        """Close the connection; later operations raise :class:`StoreError`. Idempotent."""
        async with self._lock:
            self._closed = True
            connection, self._connection, self._raw = self._connection, None, None
            if connection is not None:
                await connection.close()

    # -- errors ----------------------------------------------------------------------

    def _file_error(self, exc: sqlite3.Error) -> StoreError:
        message = str(exc)
        if "not a database" in message or "malformed" in message:
            return DatabaseFileError(
                f"{self.path} is corrupt or not a SQLite database ({message}); lovia left it as it "
                "is. Restore it from a backup or point lovia at another file."
            )
        if "unable to open" in message:
            return DatabaseFileError(
                f"cannot open {self.path} ({message}): check that it exists and that you may read "
                "and write it and its directory"
            )
        return DatabaseFileError(f"cannot open {self.path}: {message}")

    def _translate(self, exc: sqlite3.Error, action: str) -> StoreError:
        message = str(exc)
        if isinstance(exc, sqlite3.OperationalError):
            if "disk is full" in message or "disk I/O error" in message:
                return StoreError(
                    f"could not write to {self.path} while {action}: the disk is full or a "
                    f"file-size limit was reached ({message}). Nothing of it was stored and "
                    "earlier data is intact; free some space and retry."
                )
            if _is_busy(exc):
                return StoreError(
                    f"{self.path} stayed locked by another connection while {action}; nothing "
                    "was written. Retry, or open every store on this file with wal=True."
                )
            if "readonly" in message or "read-only" in message:
                return StoreError(
                    f"{self.path} is read-only ({message}) while {action}; nothing was written. "
                    "Check the permissions of the file and its directory."
                )
        if isinstance(exc, sqlite3.DatabaseError) and ("malformed" in message or "not a database" in message):
            return self._file_error(exc)
        return StoreError(f"SQLite failed while {action} in {self.path}: {message}")


def _is_busy(exc: sqlite3.Error) -> bool:
    message = str(exc)
    return "database is locked" in message or "database is busy" in message or "SQLITE_BUSY" in message
