"""PostgreSQL stores: sessions and checkpoints that many processes on many hosts share.

Both take a connection URL (any libpq connection string: ``postgresql://bob@db:5432/lovia``,
``?sslmode=require``, ``PG*`` environment variables and ``.pgpass`` apply) and keep a small pool of
connections (``min_size``, ``max_size``). Installing them: lovia's ``postgres`` extra
(``pip install -e '.[postgres]'`` in the checkout)
(psycopg 3 and psycopg_pool; :mod:`lovia.stores._postgres_db` says why that driver, and how
connecting, migrating, transactions and cancellation work). Importing :mod:`lovia` does not import
psycopg; this module does.

- :class:`PostgresSession`: :mod:`lovia.stores._postgres_session` (the core: how a session is
  kept, appends from concurrent writers) with the extras mixed in.
- :class:`PostgresCheckpointer`: :mod:`lovia.stores._postgres_checkpoint`.

Each store records its schema version in ``lovia_schema``, as the SQLite stores do; a database
written by a newer lovia is refused, untouched, as is one holding a table of one of lovia's names
that lovia did not create (whichever store opens first checks both stores' names).
"""

from __future__ import annotations

from lovia.stores._postgres_checkpoint import CHECKPOINT_SCHEMA, PostgresCheckpointer
from lovia.stores._postgres_db import PostgresSchema
from lovia.stores._postgres_extras import PostgresSessionExtras, session_v2, session_v3
from lovia.stores._postgres_session import _PostgresSessionCore, session_v1

__all__ = ["CHECKPOINT_SCHEMA", "SESSION_SCHEMA", "PostgresCheckpointer", "PostgresSession"]

SESSION_SCHEMA = PostgresSchema("session", (session_v1, session_v2, session_v3))
"""The session store's schema: version 1 the core tables (:func:`~lovia.stores._postgres_session.session_v1`),
version 2 the extras' (:func:`~lovia.stores._postgres_extras.session_v2`: search index, trash, rewind undo),
version 3 the change log (:func:`~lovia.stores._postgres_extras.session_v3`)."""


class PostgresSession(PostgresSessionExtras, _PostgresSessionCore):
    """A :class:`~lovia.session.Session` in a PostgreSQL database, shared by any number of processes.

    Besides the protocol it offers ``rewind``, ``trim_tool_results`` with its preview, the
    listing used by the terminal UI (``list_sessions``, ``session_info``, ``rename_session``),
    ``read_page`` (:class:`~lovia.session.PagedSession`) and ``outside_change_token``, which tells
    of other processes' writes (PostgreSQL ``LISTEN``/``NOTIFY``); and, from
    :class:`~lovia.stores._postgres_extras.PostgresSessionExtras`, full-text ``search``, the trash,
    ``fork`` and the undo of the last rewind. Appends of one run id are idempotent, and concurrent
    writers of a session never interleave positions.
    """

    _schema = SESSION_SCHEMA
