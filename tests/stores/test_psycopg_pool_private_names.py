"""psycopg_pool names lovia relies on that psycopg_pool does not promise to keep (they start with an underscore).

A psycopg_pool release that renames one fails here, with a pointer to the lovia code that needs it,
instead of as sockets left open (lovia's use degrades to doing nothing when the name is gone).
"""

from __future__ import annotations

import collections

import pytest

psycopg_pool = pytest.importorskip("psycopg_pool")


async def test_the_idle_connections_of_a_pool_are_in_its_pool_deque(postgres_url):
    # lovia.stores._postgres_db.PostgresDatabase._forget_pool: a pool made in an event loop that is
    # gone cannot be closed from another; its idle connections' sockets are closed directly.
    pool = psycopg_pool.AsyncConnectionPool(postgres_url, min_size=2, max_size=2, open=False)
    await pool.open(wait=True, timeout=30)
    try:
        idle = getattr(pool, "_pool", None)
        assert isinstance(idle, collections.deque), (
            "psycopg_pool's AsyncConnectionPool no longer keeps its idle connections in _pool: "
            "lovia.stores._postgres_db.PostgresDatabase._forget_pool must close them another way")
        assert len(idle) == 2 and all(hasattr(conn, "pgconn") for conn in idle)
    finally:
        await pool.close()
