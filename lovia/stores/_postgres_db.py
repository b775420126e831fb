"""One PostgreSQL database as a lovia store sees it: connect, migrate, transact, hear of changes.

The driver is psycopg 3 (its ``AsyncConnection``) with ``psycopg_pool.AsyncConnectionPool``,
rather than asyncpg. It is the better-trodden path for this workload: pipeline mode batches a
transaction's statements into one round trip when that pays; its prepared statements can be
turned off per connection (``prepare_threshold=None``) where asyncpg prepares every statement, so
it can work behind pgbouncer in transaction pooling mode (as lovia uses it, with psycopg's default
of preparing a statement run 5 times on one connection, pgbouncer needs ``max_prepared_statements``,
version 1.21 or later; preparing is left on: turned off, appends measured about 35% slower in the
review of issue 11); it takes any libpq connection string
(URLs, ``key=value`` strings, ``PGHOST``/``PGPASSWORD`` and the other ``PG*`` variables, a
``.pgpass`` file, service files), so the URL a user gives lovia means what it means to ``psql``;
and its pool is maintained by the same project, with explicit check-out and return so that a
connection in an unknown state is never handed to the next caller.

How a store uses it. Every operation is one async function over an ``AsyncConnection`` run by
:meth:`PostgresDatabase.transaction` (read-write, ``READ COMMITTED``) or
:meth:`PostgresDatabase.read` (``REPEATABLE READ READ ONLY``: one consistent snapshot), in one
transaction on a connection checked out of the pool for just that long. Connections run in
autocommit mode and the transaction is begun and ended here, explicitly, so that its state is
always known:

- It commits, or it raised an ordinary exception and was rolled back: the connection goes back
  to the pool, idle.
- The caller was cancelled (or anything else interrupted it) while the transaction was open, or
  the rollback itself failed: the connection is closed, then handed back to the pool, which
  discards it and opens another. It is never returned mid-transaction, and the server rolls the
  transaction back as the connection ends, so a half-done write leaves nothing.
- A serialization failure or a deadlock (SQLSTATE 40001, 40P01), which PostgreSQL resolves by
  failing one of the transactions, is retried a few times from the start: an operation's
  function must therefore do nothing but statements on its connection.
- A pooled connection that died while idle (the server restarted, a proxy's idle timeout) fails
  at ``BEGIN``, before anything of the operation was sent: it is discarded and the operation
  runs on another connection.

Schema: a table ``lovia_schema (store, version)``, as in the SQLite stores, one row per store
(``session``, ``checkpoint``). Opening looks at the store's version first; a newer one than this
lovia knows is refused with :class:`~lovia.errors.SchemaError` and nothing is touched. An older
one is migrated in one transaction that holds ``pg_advisory_xact_lock(MIGRATION_LOCK)``, and the
version is read again under the lock, so hosts opening a fresh database at once migrate it once;
PostgreSQL's DDL is transactional, so a migration that fails leaves the database as it was.
Before either, an object under one of lovia's names that lovia did not create (a table of another
program, a ``lovia_schema`` of another shape: :data:`POSTGRES_OBJECTS` lists the names) is refused
with :class:`~lovia.errors.DatabaseFileError` naming it, and nothing is touched; every store's names
are checked by whichever store opens, so the app's session store never migrates a database its
checkpointer would then refuse (:meth:`PostgresDatabase._check_schema` says why).

Changes by others (:meth:`PostgresDatabase.outside_change_token`): a write transaction calls
:meth:`PostgresDatabase.notify_change`, a ``pg_notify`` on the store's channel carrying this
database object's id, delivered at commit (and not at all on rollback). One ``LISTEN``
connection per database object, started on the first call, counts notifications from other
objects (of this process or any other); the token is that count, read without a query.

Error messages name the database by :attr:`PostgresDatabase.where` (the URL without its password),
what lovia was doing and the SQLSTATE with its name, never the server's message text: it can quote
stored values (a unique violation quotes the key). A refused connection says whether the
credentials, the database name or the server itself is the trouble.

A database object may be opened in one event loop and used in a later one, one loop at a time
(``lovia`` opens the app's stores before its UI's loop starts): pools and the ``LISTEN`` connection
belong to a loop, so a new loop gets its own, and the schema is checked once.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import uuid
import weakref
from collections.abc import Awaitable, Callable, Hashable
from dataclasses import dataclass
from typing import Any, TypeVar

import psycopg
from psycopg.pq import TransactionStatus
from psycopg_pool import AsyncConnectionPool, PoolTimeout

from lovia._async import shielded, wait_out
from lovia.errors import DatabaseFileError, SchemaError, StoreError
from lovia.stores._sqlite_db import (
    UPGRADE_HOW,
    ForeignObject,
    FoundObject,
    Layout,
    foreign_objects,
    foreign_objects_message,
    schema_table_is_lovias,
)

T = TypeVar("T")

Migration = Callable[[psycopg.AsyncConnection[Any]], Awaitable[None]]
"""One step of a store's schema: DDL (and data moves) on a connection inside the migration's transaction."""

MIGRATION_LOCK = 0x6C6F76696100  # "lovia\0": the advisory lock key every lovia migration holds
SCHEMA_TABLE_SQL = "CREATE TABLE IF NOT EXISTS lovia_schema (store TEXT PRIMARY KEY, version INTEGER NOT NULL)"
RETRIED_SQLSTATES = frozenset({"40001", "40P01"})  # serialization failure, deadlock detected
RETRIES = 5
POOL_TIMEOUT_SECONDS = 30.0
CONNECT_TIMEOUT_SECONDS = 10
"""How long a connection attempt may take, unless the URL (or ``PGCONNECT_TIMEOUT``) says: libpq's
default is to wait forever for a host that drops packets."""
KEEPALIVES = {"keepalives": 1, "keepalives_idle": 30, "keepalives_interval": 10, "keepalives_count": 3}
"""libpq's TCP keepalive settings for lovia's connections, unless the URL gives its own (:func:`_connect_options`)."""

# Read committed whatever the server's default: a write that takes an advisory lock and then reads
# (an append, a claim, a claim alone in its session) must see what the lock's last holder committed.
_WRITE = "BEGIN ISOLATION LEVEL READ COMMITTED"
_READ = "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY"


POSTGRES_ELSEWHERE = "a new one: createdb NAME, then --db postgresql://USER@HOST/NAME"
"""Where lovia's messages send a user whose database holds tables of lovia's names that lovia did not create."""

_SEGMENT_ROW = ("run_id", "meta", "entry_count", "appended_at", "kinds", "entries")
POSTGRES_OBJECTS: dict[str, tuple[dict[str, frozenset[str] | None], ...]] = {
    "session": (
        {  # session_v1 (lovia.stores._postgres_session)
            "lovia_segments": frozenset({"seq", "session_id", "start", *_SEGMENT_ROW}),
            "lovia_session_info": frozenset({"session_id", "title", "created_at", "last_activity"}),
            "lovia_segments_by_start": None,
            "lovia_session_info_by_activity": None,
        },
        {  # session_v2 (lovia.stores._postgres_extras)
            "lovia_trash": frozenset({"trash_id", "session_id", "title", "shown_title", "created_at", "last_activity",
                                      "deleted_at"}),
            "lovia_trash_runs": frozenset({"trash_id", "position", *_SEGMENT_ROW}),
            "lovia_rewind_undo": frozenset({"session_id", "rewound_at", "keep_entries", "kept_runs", "removed",
                                            "last_activity", "added_run_id"}),
            "lovia_rewind_undo_runs": frozenset({"session_id", "position", *_SEGMENT_ROW}),
            "lovia_search": frozenset({"segment_seq", "item", "kind", "body", "words"}),
            "lovia_search_titles": frozenset({"session_id", "doc", "body", "words"}),
            **dict.fromkeys(("lovia_trash_by_deleted", "lovia_trash_by_session", "lovia_search_by_words",
                             "lovia_search_titles_by_words", "lovia_search_title_docs", "lovia_fold", "lovia_words",
                             "lovia_words_tsvector", "lovia_tsvector", "lovia_searched_entries",
                             "lovia_search_index_run", "lovia_search_index_title")),
        },
        {  # session_v3 (lovia.stores._postgres_extras)
            "lovia_session_changes": frozenset({"session_id", "xact"}),
            "lovia_session_changes_by_xact": None,
            "lovia_log_session_change": None,
        },
    ),
    "checkpoint": (
        {  # _checkpoint_v1 (lovia.stores._postgres_checkpoint)
            "lovia_runs": frozenset({"run_id", "status", "session_id", "updated_at", "entry_count", "claim", "turn",
                                     "head"}),
            "lovia_run_entries": frozenset({"run_id", "position", "type", "data"}),
            "lovia_run_partials": frozenset({"run_id", "claim", "turn", "text", "step", "updated_at"}),
            "lovia_runs_by_status": None,
            "lovia_runs_by_update": None,
        },
    ),
}
"""The objects each version of each PostgreSQL store creates under a name of its own: a table with its
columns, an index, a sequence or a function with ``None``. Names PostgreSQL picks itself (a primary
key's index, an identity column's sequence) are left out: PostgreSQL picks another when one is taken.
``tests/stores/test_foreign_tables.py`` compares this with what the migrations create."""


def postgres_layouts() -> dict[str, tuple[Layout, ...]]:
    """Every PostgreSQL store's objects at each of its versions (``[0]`` none), for :func:`foreign_objects`."""
    layouts: dict[str, tuple[Layout, ...]] = {}
    for store, created in POSTGRES_OBJECTS.items():
        held: list[Layout] = [{}]
        for objects in created:
            held.append({**held[-1], **objects})
        layouts[store] = tuple(held)
    return layouts


_KINDS = {"r": "table", "p": "table", "v": "view", "m": "materialized view", "i": "index", "I": "index",
          "S": "sequence", "c": "type", "f": "foreign table", "F": "function", "T": "type"}
_LOVIA_NAMES = sorted({"lovia_schema", *(name for created in POSTGRES_OBJECTS.values() for objects in created
                                         for name in objects)})
_LOVIA_OBJECTS_SQL = """
    WITH here AS (SELECT oid FROM pg_namespace WHERE nspname = current_schema())
    SELECT c.relname::text, c.relkind::text, ARRAY(SELECT a.attname::text FROM pg_attribute AS a
                                                   WHERE a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped)
      FROM pg_class AS c WHERE c.relnamespace = (SELECT oid FROM here) AND c.relname = ANY(%(names)s)
    UNION ALL
    SELECT p.proname::text, 'F', NULL FROM pg_proc AS p
     WHERE p.pronamespace = (SELECT oid FROM here) AND p.proname = ANY(%(names)s)
    UNION ALL
    SELECT t.typname::text, 'T', NULL FROM pg_type AS t
     WHERE t.typnamespace = (SELECT oid FROM here) AND t.typrelid = 0 AND t.typname = ANY(%(names)s)"""


async def lovia_objects(conn: psycopg.AsyncConnection[Any]) -> tuple[dict[str, FoundObject], dict[str, int] | None]:
    """The objects of lovia's names in the schema lovia creates its tables in (the current schema), and the
    stores' versions from ``lovia_schema`` (``None`` when there is none, or one without lovia's columns).

    Call it inside a transaction of one snapshot (``REPEATABLE READ``), so that another process's
    migration committing meanwhile is seen whole or not at all.
    """
    cur = await conn.execute(_LOVIA_OBJECTS_SQL, {"names": _LOVIA_NAMES})
    found: dict[str, FoundObject] = {}
    for name, kind, columns in await cur.fetchall():
        if name not in found or kind not in ("F", "T"):  # a relation's name before a function's of that name
            found[name] = (_KINDS.get(kind, "object"), None if columns is None else frozenset(columns))
    schema = found.get("lovia_schema")
    if schema is None or not schema_table_is_lovias(schema):
        return found, None
    cur = await conn.execute("SELECT store, version FROM lovia_schema")
    return found, {str(store): version for store, version in await cur.fetchall() if isinstance(version, int)}


@dataclass(frozen=True)
class PostgresSchema:
    """A store's name in ``lovia_schema`` and its migrations: version N is ``migrations[:N]`` applied."""

    store: str
    migrations: tuple[Migration, ...]

    @property
    def version(self) -> int:
        return len(self.migrations)


def redacted_url(url: str) -> str:
    """``url`` (a URL or ``key=value`` connection string) as ``postgresql://user@host:port/dbname``.

    Never the password; parts the string leaves to libpq's defaults are left out. A URL's password
    is cut out as its writer meant it, up to the last ``@`` of the URL, before the rest is parsed:
    generated passwords often hold a ``/``, ``?``, ``#`` or ``@`` that is not percent-encoded, which
    libpq would read as the end of the password and take what follows for the host, port or
    database name.
    """
    scheme, sep, rest = url.strip().partition("://")
    if sep and scheme.lower() in ("postgresql", "postgres") and "@" in rest:
        userinfo, _, hosts = rest.rpartition("@")
        name = userinfo.partition(":")[0]
        url = f"{scheme}://{name}@{hosts}" if name else f"{scheme}://{hosts}"
    try:
        params = psycopg.conninfo.conninfo_to_dict(url)
    except psycopg.Error:
        return "a PostgreSQL database (its connection string could not be read)"
    user = params.get("user")
    host = str(params.get("host") or "")
    if "," in host or host.startswith("/"):
        host = f"[{host}]"  # several hosts, or a socket directory: shown as given
    port = params.get("port")
    netloc = (f"{user}@" if user else "") + host + (f":{port}" if port else "")
    dbname = params.get("dbname")
    return f"postgresql://{netloc}/{dbname or ''}"


def _connect_options(url: str) -> dict[str, Any]:
    """Options lovia adds to ``url``'s own, each only where neither it nor the environment sets it.

    A connect timeout; and TCP keepalives probing an idle connection after 30 s: the ``LISTEN``
    connection idles for as long as nobody writes, and a NAT or firewall that drops it silently
    would otherwise leave the UI blind to other processes' changes for the system's default
    (about two hours) before the connection is known lost and listening starts again.
    """
    try:
        given = psycopg.conninfo.conninfo_to_dict(url)
    except psycopg.Error:
        given = {}
    options: dict[str, Any] = {}
    if "connect_timeout" not in given and not os.environ.get("PGCONNECT_TIMEOUT"):
        options["connect_timeout"] = CONNECT_TIMEOUT_SECONDS
    if not any(name.startswith("keepalives") for name in given):
        options.update(KEEPALIVES)
    return options


class PostgresDatabase:
    """One PostgreSQL database for one store object: a pool opened on first use, and its schema.

    Several stores (and processes, on any host) may share a database; each store records and
    migrates its own schema version in ``lovia_schema``.
    """

    def __init__(self, url: str, *, schema: PostgresSchema, min_size: int = 1, max_size: int = 10) -> None:
        self._url = url
        self.schema = schema
        self._min_size = min_size
        self._max_size = max_size
        self._where = redacted_url(url)
        self._connect_options = _connect_options(url)
        self._id = uuid.uuid4().hex  # the payload of this object's notifications
        self._checked = False  # the schema was checked (and migrated) once: enough for this object
        self._closed = False
        self._pool: AsyncConnectionPool[psycopg.AsyncConnection[Any]] | None = None
        self._pool_loop: weakref.ref[asyncio.AbstractEventLoop] | None = None
        self._lock: asyncio.Lock | None = None
        self._lock_loop: weakref.ref[asyncio.AbstractEventLoop] | None = None
        self._listener: asyncio.Task[None] | None = None
        self._listener_conn: psycopg.AsyncConnection[Any] | None = None
        self._guard: asyncio.Task[None] | None = None  # closes the pool when its loop ends
        self._outside_changes = 0

    @property
    def where(self) -> str:
        """The database's URL without its password, for messages (``postgresql://bob@db:5432/lovia``)."""
        return self._where

    @property
    def channel(self) -> str:
        """The ``LISTEN``/``NOTIFY`` channel of this store's changes."""
        return f"lovia_{self.schema.store}"

    def __repr__(self) -> str:
        return f"PostgresDatabase({self._where!r}, store={self.schema.store!r})"

    # -- opening -------------------------------------------------------------------------

    def _opening_lock(self) -> asyncio.Lock:
        loop = asyncio.get_running_loop()
        if self._lock is None or self._lock_loop is None or self._lock_loop() is not loop:
            self._lock, self._lock_loop = asyncio.Lock(), weakref.ref(loop)
        return self._lock

    async def open(self) -> None:
        """Check the schema (migrating it, or refusing a newer one) and open the pool. Idempotent.

        Raises :class:`StoreError` naming :attr:`where` when the server cannot be reached or refuses
        the connection; nothing is written then.
        """
        await self._ensure_pool()

    async def _ensure_pool(self) -> AsyncConnectionPool[psycopg.AsyncConnection[Any]]:
        loop = asyncio.get_running_loop()
        pool = self._pool
        if pool is not None and self._pool_loop is not None and self._pool_loop() is loop and not self._closed:
            return pool
        async with self._opening_lock():
            return await self._open_pool_locked(loop)

    def _refuse_if_closed(self) -> None:
        if self._closed:
            raise StoreError(f"the store on {self._where} is closed; create a new one")

    async def _open_pool_locked(
        self, loop: asyncio.AbstractEventLoop
    ) -> AsyncConnectionPool[psycopg.AsyncConnection[Any]]:
        """:meth:`_ensure_pool`'s work, under the opening lock.

        :meth:`close` may be called while it waits: it then keeps nothing it made and raises
        :class:`StoreError`, and ``close`` returns once it has.
        """
        self._refuse_if_closed()
        if self._pool is not None and self._pool_loop is not None and self._pool_loop() is loop:
            return self._pool
        if not self._checked:
            await self._check_schema()
            self._checked = True
            self._refuse_if_closed()  # closed meanwhile: no pool is made
        if self._pool is not None:
            # Made in an earlier event loop, which owns its tasks and sockets: let it go.
            self._forget_pool()
        pool = AsyncConnectionPool(
            self._url,
            min_size=self._min_size,
            max_size=self._max_size,
            kwargs={"autocommit": True, **self._connect_options},
            timeout=POOL_TIMEOUT_SECONDS,
            name=f"lovia {self.schema.store}",
            open=False,
        )
        try:
            await pool.open(wait=True, timeout=POOL_TIMEOUT_SECONDS)
        except BaseException as exc:
            await pool.close()  # its tasks would outlive the loop otherwise (see _close_with_loop)
            if isinstance(exc, PoolTimeout):
                raise self._no_connection(f"opening the {self.schema.store} store") from None
            raise
        if self._closed:  # closed while the pool connected: it is not kept
            await pool.close()
            self._refuse_if_closed()
        self._pool, self._pool_loop = pool, weakref.ref(loop)
        self._guard = loop.create_task(self._close_with_loop(pool), name=f"lovia {self.schema.store} pool closer")
        return pool

    async def _close_with_loop(self, pool: AsyncConnectionPool[psycopg.AsyncConnection[Any]]) -> None:
        """Wait until cancelled (:meth:`close`, or the event loop ending: ``asyncio.run`` cancels every
        task), then close ``pool`` and this loop's ``LISTEN`` connection.

        psycopg_pool's background tasks survive a cancellation (a connection attempt cancelled is
        retried), so a pool left open would keep ``asyncio.run`` from ever returning, and a store
        nobody closed would hang its program's exit.
        """
        try:
            await asyncio.get_running_loop().create_future()
        finally:
            if self._pool is pool:
                self._pool, self._pool_loop = None, None
            if self._listener is not None and self._listener.get_loop() is asyncio.get_running_loop():
                await self._stop_listening()
            await pool.close()

    def _forget_pool(self) -> None:
        pool, self._pool, self._pool_loop = self._pool, None, None
        if pool is None:
            return
        # Its loop is gone or elsewhere: close its idle connections' sockets directly.
        for conn in list(getattr(pool, "_pool", ())):
            with contextlib.suppress(Exception):
                conn.pgconn.finish()

    async def _connect(self, action: str) -> psycopg.AsyncConnection[Any]:
        """A connection of its own (not pooled), errors translated."""
        try:
            return await psycopg.AsyncConnection.connect(self._url, autocommit=True, **self._connect_options)
        except psycopg.Error as exc:
            raise self._translate(exc, action) from None

    async def _check_schema(self) -> None:
        """Refuse a database lovia must not write to, else migrate this store's schema if it is older.

        Refused, before anything is written: an object under one of lovia's names that lovia did not
        create (:func:`~lovia.stores._sqlite_db.foreign_objects`), and a newer schema of this store.
        Every store's names are checked, not only this store's: the app opens its session store,
        then its checkpointer, and a table in the checkpointer's way found only when the
        checkpointer migrates would leave the database migrated by the session store behind a
        message saying nothing was written. One check of all of them, by whichever store opens
        first, keeps each store's migration its own (a worker that only keeps sessions creates no
        checkpoint tables) and costs one catalog query per store object.
        """
        action = f"opening the {self.schema.store} store"
        conn = await self._connect(action)
        try:
            try:
                await conn.execute(_READ)  # one snapshot: a migration committing meanwhile is seen whole or not at all
                try:
                    found, versions = await lovia_objects(conn)
                finally:
                    await conn.execute("ROLLBACK")
            except psycopg.Error as exc:
                raise self._translate(exc, action) from None
            foreign = foreign_objects(found, versions, postgres_layouts())
            version = (versions or {}).get(self.schema.store, 0)
            if versions is not None:
                self._check_version(version)
            if foreign:
                raise DatabaseFileError(foreign_objects_message(self._where, foreign, POSTGRES_ELSEWHERE))
            if version < self.schema.version:
                try:
                    await self._migrate(conn)
                except psycopg.Error as exc:
                    raise translate_error(
                        exc, self._where, f"migrating the {self.schema.store} schema",
                        outcome=f"the migration was rolled back, leaving the {self.schema.store} store's tables "
                                "as they were") from None
        finally:
            await conn.close()

    async def _migrate(self, conn: psycopg.AsyncConnection[Any]) -> None:
        target = self.schema.version
        async with conn.transaction():
            # Hosts opening a fresh database at once queue here; the first migrates, the others
            # find the version it left.
            await conn.execute("SELECT pg_advisory_xact_lock(%s)", (MIGRATION_LOCK,))
            await conn.execute(SCHEMA_TABLE_SQL)
            version = await _schema_version(conn, self.schema.store)
            self._check_version(version)
            if version >= target:
                return
            for step in self.schema.migrations[version:]:
                await step(conn)
            await conn.execute(
                "INSERT INTO lovia_schema (store, version) VALUES (%s, %s) "
                "ON CONFLICT (store) DO UPDATE SET version = excluded.version",
                (self.schema.store, target),
            )

    def _check_version(self, version: int) -> None:
        if version > self.schema.version:
            raise SchemaError(
                f"{self._where} holds a lovia {self.schema.store} store at schema version {version}, "
                f"newer than the {self.schema.version} this lovia knows. Upgrade lovia to open it ({UPGRADE_HOW}); "
                "the database was not modified."
            )

    # -- running operations --------------------------------------------------------------

    async def transaction(self, fn: Callable[[psycopg.AsyncConnection[Any]], Awaitable[T]], action: str) -> T:
        """Run ``fn`` in one read-write transaction; all of it is committed or none.

        ``action`` ("appending to session 'x'") goes into error messages. ``fn`` may be run again
        after a serialization failure or deadlock, so it must only run statements on its connection.
        A caller cancelled mid-transaction: the connection is closed and discarded (the server rolls
        the transaction back), never returned to the pool mid-transaction. Opens lazily on first use.
        """
        return await self._run(fn, _WRITE, action)

    async def read(self, fn: Callable[[psycopg.AsyncConnection[Any]], Awaitable[T]], action: str) -> T:
        """Run ``fn`` in a ``REPEATABLE READ READ ONLY`` transaction: one consistent snapshot."""
        return await self._run(fn, _READ, action)

    async def _run(self, fn: Callable[[psycopg.AsyncConnection[Any]], Awaitable[T]], begin: str, action: str) -> T:
        pool = await self._ensure_pool()
        stale = 0
        attempt = 0
        while True:
            try:
                return await self._once(pool, fn, begin, action)
            except _StaleConnection as found:
                # A pooled connection the server or the network had ended while it sat idle (a
                # restart, an idle timeout): nothing of the transaction was sent. Another one is
                # tried, as many times as the pool may hold connections, then a fresh one.
                stale += 1
                if stale > self._max_size:
                    raise self._translate(found.error, action) from None
            except psycopg.Error as exc:
                if exc.sqlstate in RETRIED_SQLSTATES and attempt < RETRIES:
                    await asyncio.sleep(0.005 * 2**attempt)
                    attempt += 1
                    continue
                raise self._translate(exc, action) from None

    async def _once(
        self,
        pool: AsyncConnectionPool[psycopg.AsyncConnection[Any]],
        fn: Callable[[psycopg.AsyncConnection[Any]], Awaitable[T]],
        begin: str,
        action: str,
    ) -> T:
        try:
            conn = await pool.getconn()
        except PoolTimeout:
            raise self._no_connection(action) from None
        idle = False  # whether the connection is known to be back to idle, outside a transaction
        try:
            try:
                try:
                    await conn.execute(begin)
                except psycopg.OperationalError as exc:
                    if conn.closed or conn.broken:
                        raise _StaleConnection(exc) from None
                    raise
                result = await fn(conn)
                await conn.execute("COMMIT")
                idle = True
                return result
            except Exception:
                # An ordinary failure: roll back here, on this connection, and keep it if that works.
                # A cancellation (BaseException) skips this: the connection is closed below.
                status = conn.info.transaction_status
                if status in (TransactionStatus.INTRANS, TransactionStatus.INERROR):
                    with contextlib.suppress(psycopg.Error):
                        await conn.execute("ROLLBACK")
                idle = conn.info.transaction_status == TransactionStatus.IDLE and not conn.closed
                raise
        finally:
            if not idle:
                # Never back to the pool mid-transaction: closing ends the transaction on the server
                # (rolled back) and the pool replaces a closed connection.
                await conn.close()
            # Handed back even if cancelled again meanwhile: a connection never returned is lost to the pool.
            await shielded(pool.putconn(conn))

    # -- changes by others ---------------------------------------------------------------

    @property
    def notification(self) -> tuple[str, str]:
        """``(channel, payload)`` as :meth:`notify_change` sends them, for a statement that calls
        ``pg_notify`` itself (saving a round trip)."""
        return self.channel, self._id

    async def notify_change(self, conn: psycopg.AsyncConnection[Any]) -> None:
        """Inside a write transaction: tell other database objects of this store that it changed.

        Delivered when the transaction commits, not at all if it rolls back.
        """
        await conn.execute("SELECT pg_notify(%s, %s)", (self.channel, self._id))

    async def outside_change_token(self) -> Hashable:
        """How many changes other database objects (any process) notified on this store's channel.

        Changes when another object's write transaction committed since the previous call; never
        for this object's own writes. The first call starts one ``LISTEN`` connection; later calls
        make no query. Should that connection be lost (or the event loop change) the count steps
        on, as changes may have been missed, and listening starts again.
        """
        loop = asyncio.get_running_loop()
        listener = self._listener
        if listener is not None and not listener.done() and listener.get_loop() is loop:
            return self._outside_changes
        async with self._opening_lock():
            listener = self._listener
            if listener is not None and not listener.done() and listener.get_loop() is loop:
                return self._outside_changes
            self._refuse_if_closed()
            if listener is not None:
                await self._stop_listening()
                self._outside_changes += 1  # what happened while nobody listened is unknown
            await self._open_pool_locked(loop)  # the schema first: a newer one is refused here too
            conn = await self._connect(f"listening for changes to the {self.schema.store} store")
            try:
                await conn.execute(f'LISTEN "{self.channel}"')
                self._refuse_if_closed()  # closed while it connected: the connection is not kept
            except BaseException as exc:
                await conn.close()
                if isinstance(exc, psycopg.Error):
                    raise self._translate(exc, f"listening for changes to the {self.schema.store} store") from None
                raise
            self._listener_conn = conn
            self._listener = loop.create_task(self._count_notifications(conn), name=f"lovia listen {self.channel}")
            return self._outside_changes

    async def _count_notifications(self, conn: psycopg.AsyncConnection[Any]) -> None:
        with contextlib.suppress(psycopg.Error):
            async for note in conn.notifies():
                if note.payload != self._id:
                    self._outside_changes += 1
        self._outside_changes += 1  # the connection ended: the next call listens again

    async def _stop_listening(self) -> None:
        listener, conn, self._listener, self._listener_conn = self._listener, self._listener_conn, None, None
        if listener is not None and not listener.done() and listener.get_loop() is asyncio.get_running_loop():
            listener.cancel()
            await wait_out(listener)  # a cancellation of our caller meanwhile is raised after
        if conn is not None:
            if listener is None or listener.get_loop() is asyncio.get_running_loop():
                with contextlib.suppress(Exception):
                    await conn.close()
            else:
                with contextlib.suppress(Exception):
                    conn.pgconn.finish()

    # -- closing -------------------------------------------------------------------------

    async def close(self) -> None:
        """Close the pool and the ``LISTEN`` connection; later operations raise :class:`StoreError`.

        Idempotent.
        """
        self._closed = True
        async with self._opening_lock():
            pass  # an open or a first change check under way ends first, keeping nothing (see _open_pool_locked)
        await self._stop_listening()
        guard, self._guard = self._guard, None
        if guard is not None and not guard.done() and guard.get_loop() is asyncio.get_running_loop():
            guard.cancel()  # it closes the pool
            with contextlib.suppress(asyncio.CancelledError):
                await guard
        if self._pool is not None:  # made in a loop that is not this one
            self._forget_pool()

    # -- errors --------------------------------------------------------------------------

    def _no_connection(self, action: str) -> StoreError:
        return StoreError(
            f"no connection to {self._where} could be had within {POOL_TIMEOUT_SECONDS:g} s while {action}: "
            "the server is down or unreachable, or every connection is busy; nothing was written. "
            "Check that the server runs, then retry."
        )

    def _translate(self, exc: psycopg.Error, action: str) -> StoreError:
        return translate_error(exc, self._where, action)


class _StaleConnection(Exception):
    """A pooled connection found dead at ``BEGIN``: the operation may be tried on another one."""

    def __init__(self, error: psycopg.OperationalError) -> None:
        super().__init__("stale pooled connection")
        self.error = error


async def _schema_version(conn: psycopg.AsyncConnection[Any], store: str) -> int:
    """The stored version of ``store``; 0 when the database holds none (new to lovia, or to this store).

    A ``lovia_schema`` table of another shape (not lovia's) raises :class:`DatabaseFileError` naming it.
    """
    cur = await conn.execute(
        "SELECT ARRAY(SELECT attname::text FROM pg_attribute WHERE attrelid = to_regclass('lovia_schema') "
        "AND attnum > 0 AND NOT attisdropped) WHERE to_regclass('lovia_schema') IS NOT NULL")
    row = await cur.fetchone()
    if not row:
        return 0
    if not schema_table_is_lovias(("table", frozenset(row[0]))):
        where = redacted_url(conn.info.dsn)  # libpq's connection string without the password
        raise DatabaseFileError(
            foreign_objects_message(where, [ForeignObject("table", "lovia_schema", "", True)], POSTGRES_ELSEWHERE))
    cur = await conn.execute("SELECT version FROM lovia_schema WHERE store = %s", (store,))
    row = await cur.fetchone()
    return int(row[0]) if row else 0


# SQLSTATEs of a connection the server refused, and what the user should check.
_REFUSALS = {
    "28P01": "the server refused the user name or password",
    "28000": "the server refused the connection for this user (see its pg_hba.conf)",
    "3D000": "the database does not exist on that server",
    "42501": "the user may not do this there (permission denied)",
    "53300": "the server has no connection slots left",
    "57P03": "the server is starting up or shutting down",
}


def translate_error(exc: psycopg.Error, where: str, action: str, *, outcome: str = "nothing was written") -> StoreError:
    """A :class:`StoreError` that says what went wrong with the database and what to do.

    It never quotes the server's message (it can carry stored values) nor the password: it names
    ``where``, the action, and the SQLSTATE with psycopg's name for it. ``outcome`` says what became
    of the database (a migration's own words: it was rolled back).
    """
    state = exc.sqlstate
    if state in _REFUSALS:
        return StoreError(
            f"could not use {where} while {action}: {_REFUSALS[state]} (SQLSTATE {state}); {outcome}. "
            "Check the connection URL (user, password, database) and retry."
        )
    if state is None and isinstance(exc, psycopg.OperationalError):
        # libpq could not reach the server, or lost it; its message names the host, never a password,
        # but is not quoted anyway. A refused password also lands here on some libpq versions.
        text = str(exc)
        if "no password supplied" in text:
            reason = ("the server asks for a password and no password was given: put it in the URL "
                      "(postgresql://USER:PASSWORD@HOST/DATABASE), in PGPASSWORD, or in ~/.pgpass")
        elif "password authentication failed" in text:
            reason = "the server refused the user name or password"
        elif "does not exist" in text and "database" in text:
            reason = "the database does not exist on that server"
        else:
            reason = "the server is down, unreachable, or closed the connection"
        return StoreError(
            f"could not use {where} while {action}: {reason}; {outcome}. Check that the server "
            "runs and the connection URL (host, port, user, password, database), then retry."
        )
    name = type(exc).__name__
    code = f"SQLSTATE {state} {name}" if state else name
    return StoreError(f"PostgreSQL failed while {action} on {where} ({code}); {outcome}.")
