"""One SQLite file as a lovia store sees it: open, validate, migrate, transact.

Every operation of a store is one plain function over a ``sqlite3.Connection`` that runs,
start to finish, on the store's own worker thread: ``BEGIN`` .. ``COMMIT`` is a single thread
hop. That keeps the cost per transaction low and means a cancelled caller can never split a
transaction: once queued, it runs to ``COMMIT`` or ``ROLLBACK``, and the caller waits for that
outcome (however often it is cancelled meanwhile) before its cancellation propagates.

The worker is a small class of our own over the standard library (a daemon thread, a queue
of calls, results handed back with ``loop.call_soon_threadsafe``) rather than aiosqlite:
lovia needs exactly "run this function on the connection's thread", which aiosqlite offers
only through private names (``Connection._execute``, ``_connection``, ``_thread``), and
aiosqlite's thread is not a daemon, so a store left open kept the interpreter from exiting
unless patched.

Why a thread at all, and what is left of the cost per transaction. Measured 2026-12-03 on this
project's 2-core VM, shared with other jobs (medians, lowest-highest in brackets):

- Running each transaction on the event loop's own thread would save the hop, but blocks the
  loop for the commit's fsync and for any wait on another connection's lock: 2,000 commits
  here took 1.15 ms at the median, 15.6 ms at p99 and 20.4 ms at worst in rollback-journal
  mode, 0.23, 0.88 and 4.6 ms with WAL, and a commit that meets a held lock waits up to the
  busy timeout (5 s, or 30 s with WAL). And it gains little: a tool-call turn against its
  commit floor (``bench/runner.py``'s measure, 25 pairs, two runs each) was 1.29x, 1.36x on the
  thread against 1.27x, 1.23x inline in rollback-journal mode, and 1.94x, 1.85x against 1.58x,
  1.82x with WAL. The thread stays: the app's loop must not stall on the disk.
- The hop itself: an empty call's round trip with :meth:`_Worker.run` against the same call
  awaited through :func:`lovia._async.shielded`, the previous way, which added a future and a
  loop turn to every call (9 x 3,000 calls each, same run): 41 us (31-185) against 51 us
  (35-317) with the machine busy, 49 us (33-102) against 95 us (38-108) with it idle, 34.5
  against 41.3 us with the process pinned to one CPU. Now the caller awaits the call's own
  future, and only a cancelled caller waits on a second one (``_Call.waiter``) until the call
  has ended. What remains per call is about three futex wake-ups, two epoll waits and a write to
  the loop's wake-up socket (see the second pass below); the spread is this VM waking an idle
  CPU (pinned to one CPU the round trip is 30-40 us; across two, on an idle machine, other runs
  measured up to 190 us), which shows next to a 0.2-0.3 ms WAL commit and not next to a 1-2 ms
  rollback-journal one.
- And the hop is not all of what is left: the same run loop with raw ``sqlite3`` commits made
  inline in place of the checkpointer (lovia's JSON encoding, no hop, no claim check) measured
  1.47x and 1.60x its WAL floor, so the loop's own work between commits weighs about as much
  as the hop does; with the transactions inline a tool-call turn was 1.6-1.8x, on the thread
  1.9-2.8x (idle machine at the top).
- A second pass (issue 9, item 5). Per save of a WAL tool-call run against the floor's commit
  (``bench/runner.py``'s run, three runs of 15 pairs, before the two changes below): lovia's
  save, as the loop awaits it, 330-410 us against 212-259; ``BEGIN IMMEDIATE`` 10-14 us against
  8-10, the statements 24-36 against 14-19, ``COMMIT`` 212-238 against 190-231, and 84-122 us of
  round trip and store Python around them; the loop's own work between two saves 64-86 us,
  where the same loop warm, with no store, takes about 31 (62 us a turn). Everything runs a
  little slower on threads that sleep between calls than the floor's commits back to back on
  one busy thread. A round trip for a 200-us call, taken apart: 21-27 us from the caller to
  the call starting (13 of them the loop's own work before it sleeps; the worker wakes, then
  may wait for the GIL), 20-29 us from its end until the loop wakes, then 20-35 us until the
  caller resumed: ``call_soon_threadsafe`` had woken the loop through its socket pair while the
  worker was still in ``send``, and the loop's reads of it waited for the worker. Two changes
  were measured interleaved with the code before it: results handed back through a pipe of
  lovia's own that the loop watched (that last part 10 us; a tool-call turn 3.6-6.4% faster with
  WAL, three runs of 30 pairs, 2-5% in rollback-journal mode; taken out again, see below), and
  the checkpointer's claim check folded into its head write (those statements 14.9 against
  7.5 us, 3,000 pairs; a save 1.5-2.5% faster; kept). The pipe was taken out: a loop's
  registration of a descriptor number is only as good as every other user of that loop. When
  other code closes a descriptor the loop still watches (a library closing a socket under its
  transport), the loop keeps the number in its map while the kernel forgets it; a pipe opened
  next gets that number, and registering it then changes only the map, so the kernel never
  wakes the loop for it: a store call never came back, and, as a cancelled call waits for its
  end, no timeout ended it (CI hung once so; ``test_sqlite_waker.py`` makes it happen). Results
  now come back through ``loop.call_soon_threadsafe``, whose wake-up channel the loop opens
  before any other. Looked at and left: encoding (the head and only the new entries, with
  msgspec: 3.5 and 4 us a save); the worker woken through an ``eventfd`` instead of its queue
  (within 4 us, below the noise); the lease renewal (it does not touch the store per turn: a
  20-turn run makes 42 saves, the spec's count). The whole process pinned to one CPU measured
  1.72x against 2.20x unpinned, as its wake-ups then stay on one CPU; a library does not pin
  its caller's threads. What is left of the WAL tool-call turn (see the README's figures) is
  two round trips a turn, about 60 us each, and the loop's work on a CPU that just woke,
  against commits of 0.2-0.25 ms: the 1.3x target needs the hop gone, and inline commits
  (above) block the loop on the disk and still measured 1.6-1.8x.

One exception to "everything on the worker": :meth:`SQLiteDatabase.read_here`, which the
search uses. With WAL it runs a read on a second, read-only connection on the caller's thread,
so the event loop is held for the read's own CPU time (a search over 10,000 sessions: 0.1-2 ms;
one that walks the whole index, 10 ms here) but never waits on a lock: WAL readers do not wait
for writers, the connection has no busy timeout, and a busy answer sends the read to the worker.
Measured 2026-12-03 (``bench/search.py``'s file, 300 interleaved repetitions, the machine shared
and busy, medians): the round trip of an empty read on the worker took 40-130 us (230-260 us in
another run), and a search through the worker 0.13, 1.22 and 2.03 ms (a rare word, a common
word, a phrase) against 0.08, 0.96 and 1.48 ms in place. In rollback-journal mode a read waits
for a commit under way, so it stays on the worker.

For a fresh run the runner makes no more commits than the spec asks for, and no read before
its claim (see :mod:`lovia.runtime.runner`): it is claimed without being loaded first, and its
claim is not followed by a save of the same head.

The file itself is only ever opened through SQLite. POSIX record locks belong to the process,
and closing any descriptor of the file, even one opened just to peek at its header, releases
every lock this process holds on it: another process would then checkpoint and delete the WAL
under a live connection, and later commits would be lost. So a file that is not a database is
recognised by SQLite saying so, a new file is created by SQLite (and then made private with
``chmod`` by path, before anything is written to it), and paths are inspected with ``stat``
only.

Before a store first writes to a file that already existed, the file must pass SQLite's
``integrity_check``, run on the store's own connection before it switches the journal mode or
migrates, so a refused file is left as it was. A second store of this process on a file the
first still holds open skips it: the app opens its two stores once, before its UI starts, and
the file is read through once. The check reads the whole file, and in rollback-journal mode
(the default, ``wal=False``) other processes' writers wait for it. ``quick_check`` would not
be enough: it costs nearly as much (it reads every page too; 37 ms against 47 ms for a 55 MB
file) but does not compare indexes with their tables, and in the corruption corpus of
``tests/stores/test_sqlite_corruption.py`` 8 of 457 damaged files pass it and fail
``integrity_check`` (a flipped key byte leaves a row missing from an index, such as the one
that keeps a run from being stored twice in a session): with ``quick_check`` the corpus test
fails, as an append into such a file is accepted.

Before it too, and before the journal mode changes, an object under one of lovia's names that
lovia did not create (a table another program made in a lovia file, a ``lovia_schema`` of
another shape) is refused, named, with what to do; every store's names are checked by whichever
store opens first (:meth:`SQLiteDatabase._refuse_foreign_objects`), so the app's session store never
migrates a file its checkpointer would then refuse. What each store's migrations create is taken
from running them on an empty database in memory (:func:`sqlite_layouts`); the PostgreSQL stores
share the judgement (:func:`foreign_objects`) with a list of their own.

Error messages never quote SQLite's message text: in a damaged file that text can carry bytes
of stored conversation (a garbled schema row is quoted back). They name the file, what lovia
was doing, SQLite's error code and what to do.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import os
import queue
import sqlite3
import stat
import threading
import time
import weakref
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Generic, TypeVar

from lovia._files import make_file_private
from lovia.errors import DatabaseFileError, SchemaError, StoreError

T = TypeVar("T")

BUSY_TIMEOUT_SECONDS = 5.0
WAL_BUSY_TIMEOUT_SECONDS = 30.0
SCHEMA_TABLE_SQL = (
    "CREATE TABLE IF NOT EXISTS lovia_schema (store TEXT PRIMARY KEY, version INTEGER NOT NULL)"
)
UPGRADE_HOW = "update the checkout lovia was installed from (git pull) and reinstall it from there (pip install -e .)"
"""How to upgrade lovia, for messages about a database a newer lovia wrote: ours is installed from its
checkout; the package of that name on PyPI is another project."""
SCHEMA_TABLE_COLUMNS = frozenset({"store", "version"})
"""The columns of lovia's ``lovia_schema`` (SQLite and PostgreSQL): a table of that name without them is not lovia's."""

Migration = Callable[[sqlite3.Connection], None]


@dataclass(frozen=True, slots=True)
class StoreSchema:
    """A store's name in ``lovia_schema`` and its migrations: ``steps[i]`` goes to version i+1."""

    store: str
    steps: Sequence[Migration]

    @property
    def version(self) -> int:
        return len(self.steps)


# -- the worker thread -------------------------------------------------------------------


@dataclass(slots=True)
class _Call(Generic[T]):
    """One call for the worker thread, and how its outcome reaches the loop that submitted it.

    ``future`` carries the outcome to the caller. A cancelled caller's future is cancelled,
    so the worker also signals ``ended`` and sets ``waiter``, the future such a caller awaits
    instead until the call has really run. Those three are touched on the loop's thread only;
    the worker hands the outcome to the loop with ``call_soon_threadsafe``.
    """

    fn: Callable[[], T]
    future: asyncio.Future[T]
    loop: asyncio.AbstractEventLoop
    ended: bool = False
    waiter: asyncio.Future[None] | None = None


class _Worker:
    """A daemon thread that runs submitted calls one at a time, in submission order.

    Every submitted call runs to its end, whether or not anyone still awaits its future; its
    outcome is then handed to the future on the submitting loop. The thread is a daemon, so
    a store nobody closed does not keep the interpreter alive (SQLite's journal makes an
    abrupt end safe), and it ends by itself once stopped or once its owner is collected.
    """

    def __init__(self, name: str) -> None:
        self._calls: queue.SimpleQueue[_Call[Any] | None] = queue.SimpleQueue()
        thread = threading.Thread(target=_serve, args=(self._calls,), name=name, daemon=True)
        thread.start()

    async def run(self, fn: Callable[[], T]) -> T:
        """Run ``fn`` on the thread and return its result or raise its exception.

        A caller cancelled meanwhile still waits until ``fn`` has ended (its outcome is then
        dropped) before ``CancelledError`` propagates, however often it is cancelled: what
        ``fn`` does, a transaction, is never left half-way by the caller moving on. This is
        :func:`lovia._async.shielded` without its extra future and loop turn per call.
        """
        loop = asyncio.get_running_loop()
        call: _Call[T] = _Call(fn, loop.create_future(), loop)
        self._calls.put(call)
        try:
            return await call.future
        except asyncio.CancelledError:
            while not call.ended:  # the call is queued or running: its real end comes first
                call.waiter = loop.create_future()
                with contextlib.suppress(asyncio.CancelledError):
                    await call.waiter
            raise

    def stop(self) -> None:
        """End the thread once the calls queued so far have run. Idempotent."""
        self._calls.put(None)


def _serve(calls: queue.SimpleQueue[_Call[Any] | None]) -> None:
    # A function, not a method: the thread must not keep its owner alive.
    while (call := calls.get()) is not None:
        try:
            outcome: tuple[Any, BaseException | None] = (call.fn(), None)
        except BaseException as exc:  # handed to the caller, whatever it is
            outcome = (None, exc)
        with contextlib.suppress(RuntimeError):  # a closed loop: nobody is left to tell
            call.loop.call_soon_threadsafe(_settle, call, *outcome)
        del call, outcome


def _settle(call: _Call[Any], result: Any, error: BaseException | None) -> None:
    call.ended = True
    if call.waiter is not None and not call.waiter.done():
        call.waiter.set_result(None)
    if call.future.cancelled():
        return
    if isinstance(error, StopIteration):  # a future cannot hold one (asyncio's tasks do the same)
        wrapped = RuntimeError("a store call raised StopIteration")
        wrapped.__cause__ = error
        error = wrapped
    if error is not None:
        call.future.set_exception(error)
    else:
        call.future.set_result(result)


# -- the file ----------------------------------------------------------------------------


def _inspect_path(path: Path) -> bool:
    """Whether ``path`` exists; refuse what cannot be a database, looking with ``stat`` only."""
    try:
        info = path.stat()  # follows a symlink to its target
    except FileNotFoundError:
        if path.is_symlink():
            raise DatabaseFileError(
                f"{path} is a symlink to {os.readlink(path)}, which does not exist; lovia does not "
                "create a database through a dangling link. Create the target or remove the link."
            ) from None
        if not path.parent.is_dir():
            raise DatabaseFileError(
                f"cannot create {path}: the directory {path.parent} does not exist; create it first"
            ) from None
        return False
    except OSError as exc:
        raise DatabaseFileError(f"cannot use {path}: {exc.strerror}; check the path and its permissions") from None
    if not stat.S_ISREG(info.st_mode):
        raise DatabaseFileError(f"{path} is not a regular file; point lovia at a database file")
    return True


def check_integrity(conn: sqlite3.Connection, path: Path) -> None:
    """Raise :class:`DatabaseFileError` unless SQLite's ``integrity_check`` passes. Reads only."""
    try:
        verdict = conn.execute("PRAGMA integrity_check(1)").fetchone()
    except sqlite3.Error as exc:
        raise translate_error(exc, path, "checking the file's integrity") from None
    if verdict is None or verdict[0] != "ok":
        raise _corrupt(path, "checking the file's integrity")


class _CheckedFiles:
    """Files that passed ``integrity_check`` and that a store of this process holds open.

    A second store on a file already open here skips the check. A file is known by device
    and inode, which cannot name another file while a connection keeps this one open: so
    the entry goes when the last store on it closes.
    """

    def __init__(self) -> None:
        self._open: dict[tuple[int, int], int] = {}
        self._lock = threading.Lock()

    def __contains__(self, key: tuple[int, int] | None) -> bool:
        with self._lock:
            return key is not None and key in self._open

    def hold(self, key: tuple[int, int] | None) -> None:
        if key is not None:
            with self._lock:
                self._open[key] = self._open.get(key, 0) + 1

    def release(self, key: tuple[int, int] | None) -> None:
        if key is not None:
            with self._lock:
                if self._open.get(key, 0) <= 1:
                    self._open.pop(key, None)
                else:
                    self._open[key] -= 1


_checked_files = _CheckedFiles()


def _file_key(path: Path) -> tuple[int, int] | None:
    try:
        info = os.stat(path)
    except OSError:
        return None
    return info.st_dev, info.st_ino


def stored_object(text: Any, what: str, path: str | os.PathLike[str]) -> dict[str, Any]:
    """Parse a JSON object lovia stored; anything else raises :class:`DatabaseFileError`.

    The message names ``what`` and the file, never the stored text: a damaged row may hold
    any part of a conversation.
    """
    try:
        value = json.loads(text)
    except (TypeError, ValueError):
        value = None
    if not isinstance(value, dict):
        raise DatabaseFileError(
            f"the {what} in {path} is damaged (it is not the JSON object lovia wrote); lovia left "
            "it as it is. Restore the file from a backup, or move it aside and start a new file."
        )
    return value


# -- objects of lovia's names that lovia did not create (shared with the PostgreSQL stores) ------------

Layout = Mapping[str, "frozenset[str] | None"]
"""The objects one store has at one schema version: each name, with a table's columns (``None`` for an
index, a trigger, a sequence or a function). A store's layouts are indexed by version, ``[0]`` empty."""

FoundObject = tuple[str, "frozenset[str] | None"]
"""An object of one of lovia's names found in a database: its kind (``table``, ``index`` ...) and, for a
table, its columns."""


@dataclass(frozen=True)
class ForeignObject:
    """An object under one of lovia's names that lovia did not create (see :func:`foreign_objects`)."""

    kind: str
    name: str
    store: str
    """The store whose name it is (``""`` for ``lovia_schema``, every store's)."""
    other_columns: bool = False
    """A table of a name lovia's store has at its recorded version, whose columns are not lovia's."""

    def __str__(self) -> str:
        return f"{self.kind} {self.name}" + (" (its columns are not lovia's)" if self.other_columns else "")


def schema_table_is_lovias(found: FoundObject) -> bool:
    """Whether a ``lovia_schema`` found is a table with lovia's columns (``store``, ``version``)."""
    kind, columns = found
    return kind == "table" and SCHEMA_TABLE_COLUMNS.issubset(columns or ())


def foreign_objects(found: Mapping[str, FoundObject], versions: Mapping[str, int] | None,
                    layouts: Mapping[str, Sequence[Layout]]) -> list[ForeignObject]:
    """The objects of ``found`` that lovia did not create, judged by the stores' recorded ``versions``.

    ``found``: the database's objects of lovia's names; ``versions``: ``lovia_schema``'s rows
    (``None`` when there is no ``lovia_schema``); ``layouts``: every store's layouts. A
    ``lovia_schema`` without lovia's columns is foreign, and the versions are then taken as none.
    An object is lovia's when its store's recorded version has it (a table only with lovia's
    columns, extra ones allowed); it is foreign when a migration of its store still to come would
    create it (it would fail, or lovia would write into another program's table). A name lovia's
    store used once and dropped is left alone, as is everything of a store recorded at a version
    newer than this lovia knows (that store is refused as newer).
    """
    foreign: list[ForeignObject] = []
    schema = found.get("lovia_schema")
    if schema is not None and not schema_table_is_lovias(schema):
        foreign.append(ForeignObject(schema[0], "lovia_schema", "", schema[0] == "table"))
        versions = None
    for store, layout in layouts.items():
        version = (versions or {}).get(store, 0)
        if version >= len(layout):
            continue  # newer than this lovia knows
        held = layout[version]
        pending: set[str] = set()
        for before, after in zip(layout[version:], layout[version + 1:], strict=False):
            pending |= set(after) - set(before)
        for name in sorted(found):
            kind, columns = found[name]
            if name in held:
                expected = held[name]
                # A table's columns unreadable here (None: a virtual table whose module is missing) are not judged.
                if expected is not None and (kind != "table" or (columns is not None and not expected <= columns)):
                    foreign.append(ForeignObject(kind, name, store, kind == "table"))
            elif name in pending:
                foreign.append(ForeignObject(kind, name, store))
    return foreign


def foreign_objects_summary(foreign: Sequence[ForeignObject]) -> str:
    """``a table lovia_runs that lovia did not create, under a name lovia uses for its own tables``."""
    one = len(foreign) == 1
    listed = ", ".join(str(thing) for thing in foreign)
    return (f"{'a ' if one else ''}{listed} that lovia did not create, under {'a name' if one else 'names'} "
            "lovia uses for its own tables")


def foreign_objects_advice(foreign: Sequence[ForeignObject], elsewhere: str) -> str:
    """What to do about ``foreign`` objects (``elsewhere``: how to point lovia at another database)."""
    them, those = ("it", f"that {foreign[0].kind}") if len(foreign) == 1 else ("them", "those")
    return (f"use another database for lovia ({elsewhere}), or, if nothing needs {those}, drop or rename "
            f"{them}; then open it again")


def foreign_objects_message(where: str, foreign: Sequence[ForeignObject], elsewhere: str) -> str:
    """What a store refusing a database holding ``foreign`` objects says: which, that lovia did not create
    them and changed nothing, and what to do."""
    advice = foreign_objects_advice(foreign, elsewhere)
    return (f"{where} holds {foreign_objects_summary(foreign)}; lovia cannot keep its data there and changed "
            f"nothing in it. {advice[0].upper()}{advice[1:]}.")


def _sqlite_objects(conn: sqlite3.Connection) -> dict[str, FoundObject]:
    """The file's objects whose names start ``lovia``, as :func:`foreign_objects` takes them."""
    found: dict[str, FoundObject] = {}
    for kind, name in conn.execute("SELECT type, name FROM sqlite_master WHERE substr(name, 1, 5) = 'lovia'"):
        columns = None
        if kind in ("table", "view"):
            with contextlib.suppress(sqlite3.OperationalError):  # a virtual table whose module this SQLite lacks
                columns = frozenset(row[0] for row in conn.execute("SELECT name FROM pragma_table_info(?)", (name,)))
        found[name] = (kind, columns)
    return found


@functools.cache
def _layouts_of(steps: tuple[Migration, ...]) -> tuple[Layout, ...]:
    """A store's layout at each version, taken from its migrations run on an empty database in memory.

    Derived, not written down, so a new migration cannot leave them behind: each step's objects are
    what the step made (a table's columns as ``ALTER TABLE`` left them). A step that fails there (one
    that needs data to move) makes nothing known from it on, so nothing is refused for its sake.
    """
    conn = sqlite3.connect(":memory:", isolation_level=None)
    layouts: list[Layout] = [{}]
    try:
        for step in steps:
            step(conn)
            layouts.append({name: columns for name, (_, columns) in _sqlite_objects(conn).items()})
    except Exception:
        layouts += [layouts[-1]] * (len(steps) + 1 - len(layouts))
    finally:
        conn.close()
    return tuple(layouts)


def sqlite_layouts(schemas: Sequence[StoreSchema]) -> dict[str, Sequence[Layout]]:
    """Every store's layouts (see :data:`Layout`), for :func:`foreign_objects`."""
    return {schema.store: _layouts_of(tuple(schema.steps)) for schema in schemas}


def sqlite_foreign_objects(conn: sqlite3.Connection, schemas: Sequence[StoreSchema], *,
                           whole: bool = False) -> list[ForeignObject]:
    """The objects of lovia's names in the file on ``conn`` that lovia did not create (see :func:`foreign_objects`).

    Call it inside a transaction, so that another process's migration committing meanwhile is seen
    whole or not at all. A store opening asks only what could stand in a migration's way; ``whole``
    (``lovia doctor``) asks about every object, in a file whose stores are all current too (a table
    of lovia's dropped and made again with other columns).
    """
    if not whole and _every_store_current(conn, schemas):
        # No migration of any store is to come, so nothing can be in one's way: the check of every
        # object (a few milliseconds, the migrations run in memory once) is left to files that need it.
        return []
    found = _sqlite_objects(conn)
    if not found:
        return []
    versions = None
    schema = found.get("lovia_schema")
    if schema is not None and schema_table_is_lovias(schema):
        versions = {str(store): version for store, version in conn.execute("SELECT store, version FROM lovia_schema")
                    if isinstance(version, int)}
    return foreign_objects(found, versions, sqlite_layouts(schemas))


def _every_store_current(conn: sqlite3.Connection, schemas: Sequence[StoreSchema]) -> bool:
    """Whether the file's ``lovia_schema`` is lovia's and records every store of ``schemas`` at its latest version."""
    columns = frozenset(row[0] for row in conn.execute("SELECT name FROM pragma_table_info('lovia_schema')"))
    if not schema_table_is_lovias(("table", columns)):
        return False
    versions = dict(conn.execute("SELECT store, version FROM lovia_schema").fetchall())
    return all(versions.get(schema.store) == schema.version for schema in schemas)


SQLITE_ELSEWHERE = "give another file with --db PATH"


def _schema_version(conn: sqlite3.Connection, store: str) -> int | None:
    """The stored version of ``store``: ``None`` if the file is not lovia's, 0 if new to it.

    A ``lovia_schema`` table of another shape (not lovia's) raises :class:`DatabaseFileError` naming it.
    """
    tables = {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    if "lovia_schema" not in tables:
        return 0 if not tables else None
    columns = {row[0] for row in conn.execute("SELECT name FROM pragma_table_info('lovia_schema')")}
    if not schema_table_is_lovias(("table", frozenset(columns))):
        file = next((row[2] for row in conn.execute("PRAGMA database_list") if row[1] == "main"), "") or "the file"
        raise DatabaseFileError(
            foreign_objects_message(file, [ForeignObject("table", "lovia_schema", "", True)], SQLITE_ELSEWHERE))
    row = conn.execute("SELECT version FROM lovia_schema WHERE store = ?", (store,)).fetchone()
    return int(row[0]) if row else 0


class SQLiteDatabase:
    """One connection to one file for one store object, opened on first use.

    Several stores (and processes) may share a file; each store records and migrates its
    own schema version in the ``lovia_schema`` table. Before the first write, a file that
    already existed must pass SQLite's ``integrity_check``. A store may be opened in one event
    loop and used in a later one, one loop at a time.
    """

    def __init__(self, path: str | os.PathLike[str], *, wal: bool, schema: StoreSchema,
                 others: Sequence[StoreSchema] = ()) -> None:
        self.path = Path(path)
        self.wal = wal
        self.schema = schema
        # Every store's schema that may share the file, this one's as given: their names are checked on opening.
        self.schemas = tuple({**{other.store: other for other in others}, schema.store: schema}.values())
        self._worker: _Worker | None = None
        self._conn: sqlite3.Connection | None = None  # used on the worker thread only
        self._file_key: tuple[int, int] | None = None
        self._release_file: Callable[[], Any] | None = None
        self._lock = asyncio.Lock()
        self._lock_loop: weakref.ref[asyncio.AbstractEventLoop] | None = None
        self._closed = False
        # A read-only second connection, used on the caller's thread by read_here (WAL only).
        self._reader: sqlite3.Connection | None = None
        self._reader_possible = wal and self.path.name != ":memory:"  # another connection sees the same data
        # The file as the store's connection opened it: a relative path resolved against the working
        # directory of that moment (as SQLite resolves it), for read_here's connection to find it again.
        self._opened_path: Path | None = None

    def _serialised(self) -> asyncio.Lock:
        """The lock that queues this store's operations in the running event loop.

        An asyncio lock belongs to the first loop that waits on it, but a store is not tied to
        one loop (``lovia`` opens the app's stores before its UI's loop starts), so each loop
        gets a lock of its own. A store is used from one loop at a time.
        """
        loop = asyncio.get_running_loop()
        if self._lock_loop is None or self._lock_loop() is not loop:
            self._lock, self._lock_loop = asyncio.Lock(), weakref.ref(loop)
        return self._lock

    # -- opening ---------------------------------------------------------------------

    async def _ensure_open(self) -> _Worker:
        if self._worker is not None and self._conn is not None:
            return self._worker
        if self._closed:
            raise StoreError(f"the store on {self.path} is closed; create a new one")
        if self._worker is None:
            self._worker = _Worker(f"lovia-sqlite {self.path.name}")
            weakref.finalize(self, self._worker.stop)
        await self._worker.run(self._open_sync)
        return self._worker

    def _open_sync(self) -> None:
        # Records the connection itself, so that one opened for a caller cancelled meanwhile
        # is still closed by close().
        existed = _inspect_path(self.path)
        timeout = WAL_BUSY_TIMEOUT_SECONDS if self.wal else BUSY_TIMEOUT_SECONDS
        self._opened_path = self.path.absolute()
        try:
            conn = sqlite3.connect(self.path, isolation_level=None, timeout=timeout)
        except sqlite3.Error as exc:
            raise self._translate(exc, "opening the file") from None
        try:
            if not existed:
                # Nothing is written to it yet, and SQLite creates its -wal, -shm and -journal
                # files later with the mode of the file itself.
                make_file_private(self.path)
            self._validate(conn)
            if self.wal:
                self._switch_to_wal(conn)
            self._migrate(conn)
        except BaseException:
            conn.close()
            raise
        self._conn = conn
        _checked_files.hold(self._file_key)
        # Released by close(), or when a store nobody closed is collected.
        self._release_file = weakref.finalize(self, _checked_files.release, self._file_key)

    def _validate(self, conn: sqlite3.Connection) -> None:
        try:
            version = _schema_version(conn, self.schema.store)
        except sqlite3.Error as exc:
            raise self._translate(exc, "reading the file's schema") from None
        except UnicodeDecodeError:
            # SQLite's message quoted a damaged schema's bytes, which Python could not decode.
            raise _corrupt(self.path, "reading the file's schema") from None
        self._check_version(version)
        self._refuse_foreign_objects(conn)
        key = _file_key(self.path)
        if key not in _checked_files:
            check_integrity(conn, self.path)
        self._file_key = key

    def _refuse_foreign_objects(self, conn: sqlite3.Connection) -> None:
        """Refuse a file holding an object of one of lovia's names that lovia did not create.

        Every store's names are checked (:attr:`schemas`), not only this store's, and before
        anything is written: the app opens its session store, then its checkpointer, on one file,
        and a table in the checkpointer's way found only when the checkpointer migrates would
        leave the file migrated by the session store behind a message saying nothing was written.
        Read in one transaction, so another process's migration is seen whole or not at all.
        """
        try:
            conn.execute("BEGIN")
            try:
                foreign = sqlite_foreign_objects(conn, self.schemas)
            finally:
                conn.execute("ROLLBACK")
        except sqlite3.Error as exc:
            raise self._translate(exc, "reading the file's schema") from None
        if foreign:
            raise DatabaseFileError(foreign_objects_message(str(self.path), foreign, SQLITE_ELSEWHERE))

    def _check_version(self, version: int | None) -> None:
        if version is None:
            raise DatabaseFileError(
                f"{self.path} is a SQLite database but not a lovia one (it has no lovia_schema "
                "table); lovia left it untouched. Point lovia at another file."
            )
        if version > self.schema.version:
            raise SchemaError(
                f"{self.path} holds a lovia {self.schema.store} store at schema version {version}, "
                f"newer than the {self.schema.version} this lovia knows. Upgrade lovia to open it ({UPGRADE_HOW}); "
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
            except sqlite3.Error as exc:
                raise self._translate(exc, "switching to WAL mode") from None
            if str(mode).lower() != "wal" and self.path.name != ":memory:":
                raise StoreError(f"{self.path} refused WAL mode (it stays in {mode!r} mode)")
            return

    def _migrate(self, conn: sqlite3.Connection) -> None:
        target = self.schema.version
        # A cheap look first, so an up-to-date file is opened without taking the write lock.
        try:
            if _schema_version(conn, self.schema.store) == target:
                return
        except sqlite3.Error as exc:
            raise self._translate(exc, "reading the file's schema") from None

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

    async def read_here(self, fn: Callable[[sqlite3.Connection], T], action: str) -> T:
        """:meth:`read`, run on the caller's thread when that cannot make it wait on a lock.

        For short reads whose result the caller awaits at once (a search): the hop to the worker
        thread and back is most of their cost. With WAL, ``fn`` runs in a read transaction on a
        second, read-only connection, on the calling thread, after this store's operations queued
        before it (so it sees their writes). WAL readers never wait for writers, and this
        connection has no busy timeout: should SQLite still answer busy (another connection
        rebuilding the WAL index after a crash, say), nothing is waited for and the read runs
        on the worker, as every read does in rollback-journal mode (where
        a read waits for a commit under way, up to the busy timeout) and for a ``:memory:`` file.

        The price: the event loop is held for the read's own CPU time, which the worker would
        have spent instead. For a search over 10,000 sessions (``bench/search.py``) that is
        0.1-2 ms; a query that walks the whole index (a common prefix with itself excluded,
        ``t* -t*``) took 10 ms here, and grows with the index. SQLite may also retry briefly
        while another connection rewrites the WAL index's header (microseconds). ``fn`` must
        only read: the connection is opened read-only (``mode=ro``), and a write fails.
        """
        async with self._serialised():
            if self._conn is None:
                await self._ensure_open()
            worker, conn = self._worker, self._conn
            assert worker is not None and conn is not None
            if self._reader is None and self._reader_possible:
                # Opened on the worker (opening touches the disk); used from the caller's thread.
                await worker.run(self._open_reader_sync)
            if self._reader is not None:
                try:
                    return self._read_sync(self._reader, fn, action)
                except _ReaderBusy:
                    pass
            return await worker.run(lambda: self._transaction_sync(conn, fn, "BEGIN", action))

    def _open_reader_sync(self) -> None:
        """Open the read-only connection :meth:`read_here` uses, when there can be one.

        It records the connection itself, so one opened for a caller cancelled meanwhile is
        still closed by :meth:`close`. It must open the store's own file: the one the store's
        connection validated, migrated and writes to. A path that names another file now (the
        file was replaced or moved, since the store opened it) gets none: that file was never
        checked, and SQLite would pair it with the ``-wal`` and ``-shm`` files of the store's.
        Reads then stay on the worker, on the store's connection.
        """
        opened = self._opened_path
        if opened is None:
            return
        if self._file_key is None or _file_key(opened) != self._file_key:  # not even opened then
            self._reader_possible = False
            return
        try:
            reader = sqlite3.connect(opened.as_uri() + "?mode=ro", uri=True, isolation_level=None,
                                     timeout=0, check_same_thread=False)
        except sqlite3.Error:
            return  # tried again by the next read_here; reads take the worker meanwhile
        try:
            mode = str(reader.execute("PRAGMA journal_mode").fetchone()[0]).lower()
        except sqlite3.Error:
            reader.close()
            return
        if mode != "wal":
            self._reader_possible = False  # a rollback-journal read may wait for a writer: never here
            reader.close()
            return
        # Looked at again once the reader has the file open: the path still named the store's file.
        if self._file_key is None or _file_key(opened) != self._file_key:
            self._reader_possible = False
            reader.close()
            return
        self._reader = reader

    def _read_sync(self, reader: sqlite3.Connection, fn: Callable[[sqlite3.Connection], T], action: str) -> T:
        try:
            reader.execute("BEGIN")
            try:
                result = fn(reader)
            finally:
                if reader.in_transaction:
                    reader.execute("ROLLBACK")  # ends the read transaction: it has nothing to keep
        except sqlite3.Error as exc:
            if _is_busy(exc):
                raise _ReaderBusy from None
            raise self._translate(exc, action) from None
        except UnicodeDecodeError:
            raise _corrupt(self.path, action) from None  # see _transaction_sync
        return result

    async def data_version(self) -> int:
        """SQLite's ``PRAGMA data_version`` on this store's connection.

        It changes when another connection, of this process or another, committed to the file
        since this connection last looked, and not for this connection's own writes. One
        statement on the worker thread, between this store's transactions: it reads the
        file's change counter (in WAL mode, the header of the WAL index), no table, and
        takes no write lock. In WAL mode a writer never blocks it; in rollback-journal mode
        it waits, like any read, for a commit under way (up to the busy timeout).
        """
        def look(conn: sqlite3.Connection) -> int:
            try:
                return int(conn.execute("PRAGMA data_version").fetchone()[0])
            except sqlite3.Error as exc:
                raise self._translate(exc, "checking for changes by other connections") from None

        return await self._on_worker(look)

    async def _transact(self, fn: Callable[[sqlite3.Connection], T], begin: str, action: str) -> T:
        return await self._on_worker(lambda conn: self._transaction_sync(conn, fn, begin, action))

    async def _on_worker(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        """Run ``fn`` on the connection's thread, after this store's operations queued before it."""
        async with self._serialised():
            worker = self._worker if self._conn is not None else await self._ensure_open()
            conn = self._conn
            assert worker is not None and conn is not None
            # Once queued, the call runs to its end on the worker thread whatever we do: its
            # real outcome is waited for (so the lock is not freed mid-transaction) before a
            # cancellation propagates.
            return await worker.run(lambda: fn(conn))

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
        except UnicodeDecodeError:
            # SQLite's message quoted a damaged schema's bytes (a trigger's, met as a write fires
            # it), which Python could not decode: the file is damaged, as when opening it.
            raise _corrupt(self.path, action) from None
        return result

    async def close(self) -> None:
        """Close the connection and end the worker; later operations raise :class:`StoreError`.

        Idempotent.
        """
        async with self._serialised():
            self._closed = True
            worker, conn, self._worker, self._conn = self._worker, self._conn, None, None
            reader, self._reader = self._reader, None
            if worker is None:
                return
            if reader is not None:
                await worker.run(reader.close)
            if conn is not None:
                await worker.run(conn.close)
            if self._release_file is not None:
                self._release_file()
            worker.stop()

    # -- errors ----------------------------------------------------------------------

    def _translate(self, exc: sqlite3.Error, action: str) -> StoreError:
        return translate_error(exc, self.path, action)


class _ReaderBusy(Exception):
    """The read-only connection met a lock: :meth:`SQLiteDatabase.read_here` takes the worker instead."""


def translate_error(exc: sqlite3.Error, path: Path, action: str) -> StoreError:
    """A :class:`StoreError` that says what went wrong with ``path`` and what to do.

    It never quotes SQLite's message, which for a damaged file may carry stored text; it
    names SQLite's error code instead.
    """
    code = _code(exc)
    name = getattr(exc, "sqlite_errorname", None) or type(exc).__name__
    if code == sqlite3.SQLITE_NOTADB or (code is None and "not a database" in str(exc)):
        return DatabaseFileError(
            f"{path} is not a SQLite database (or its header is damaged), so not a lovia one; lovia "
            "left it untouched. Point lovia at another file, or restore this one from a backup."
        )
    # "malformed" also covers SQLite's JSON functions meeting a damaged stored value; "decode to
    # UTF-8" is Python's sqlite3 meeting text a changed byte left invalid (an error without a code).
    if code == sqlite3.SQLITE_CORRUPT or "malformed" in str(exc) or (code is None and "decode to UTF-8" in str(exc)):
        return _corrupt(path, action)
    if code == sqlite3.SQLITE_CANTOPEN:
        return DatabaseFileError(
            f"cannot open {path} while {action} ({name}): check that it exists and that you may read "
            "and write it and its directory"
        )
    if code in (sqlite3.SQLITE_FULL, sqlite3.SQLITE_IOERR):
        return StoreError(
            f"could not use {path} while {action} ({name}): the disk is full or a file-size limit was "
            "reached, or the device failed. Nothing of it was stored and earlier data is intact; "
            "free some space and retry."
        )
    if _is_busy(exc):
        return StoreError(
            f"{path} stayed locked by another connection while {action}; nothing was written. "
            "Retry, or open every store on this file with wal=True."
        )
    if code == sqlite3.SQLITE_READONLY:
        return StoreError(
            f"{path} is read-only while {action} ({name}); nothing was written. Check the "
            "permissions of the file and its directory."
        )
    return StoreError(f"SQLite failed while {action} in {path} ({name}); nothing was written.")


def _corrupt(path: Path, action: str) -> DatabaseFileError:
    return DatabaseFileError(
        f"{path} is corrupt: SQLite found damaged data while {action}, and lovia wrote nothing "
        "more to it. Restore it from a backup, or move it aside and start a new file "
        "(`sqlite3 FILE .recover` can often save what is still readable)."
    )


def _code(exc: sqlite3.Error) -> int | None:
    """SQLite's primary result code, or ``None`` for an error SQLite did not raise itself."""
    extended = getattr(exc, "sqlite_errorcode", None)
    return None if extended is None else extended & 0xFF


def _is_busy(exc: sqlite3.Error) -> bool:
    code = _code(exc)
    if code is not None:
        return code in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED)
    message = str(exc)
    return "database is locked" in message or "database is busy" in message
