"""Review findings on the PostgreSQL base: each test failed on the code it was written against (fixed in 8a4fc37)."""

from __future__ import annotations

import asyncio

import psycopg
import pytest

from lovia import PostgresSession, StoreError
from lovia.stores._postgres_db import redacted_url


def _other_connections(url: str) -> int:
    with psycopg.connect(url, autocommit=True) as conn:
        (count,) = conn.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()"
        ).fetchone()
    return int(count)


async def test_a_store_closed_while_its_first_change_check_connects_leaves_no_connection(postgres_url):
    # The app's change watcher may be connecting (its first check starts the LISTEN connection)
    # when the store is closed: the pool and the LISTEN connection made after close() must not
    # stay open (nor be made at all), and the check must say the store is closed.
    session = PostgresSession(postgres_url)
    check = asyncio.ensure_future(session.outside_change_token())
    await asyncio.sleep(0)  # the check is under way: connecting to look at the schema
    await session.close()
    with pytest.raises(StoreError, match="closed"):
        await check
    assert _other_connections(postgres_url) == 0


async def test_a_store_closed_while_it_opens_leaves_no_pool(postgres_url):
    session = PostgresSession(postgres_url)
    opening = asyncio.ensure_future(session.open())
    await asyncio.sleep(0)
    await session.close()
    with pytest.raises(StoreError, match="closed"):
        await opening
    assert _other_connections(postgres_url) == 0


# A password holding '/', '?', '#' or '@' not percent-encoded (common in generated passwords) makes
# libpq split the URL elsewhere than its writer meant: parts of the password become the port, the
# host or the database name, which the messages show.
UNENCODED_PASSWORDS = ["4821/Kx9z", "4821?Kx9z", "4821#Kx9z", "Kx9z@4821/w0rd", "Kx9z@4821"]


@pytest.mark.parametrize("password", UNENCODED_PASSWORDS)
async def test_a_password_with_an_unencoded_delimiter_is_never_in_a_message(password):
    url = f"postgresql://bob:{password}@127.0.0.1/lovia?connect_timeout=2"
    session = PostgresSession(url)
    shown = [redacted_url(url), repr(session)]
    with pytest.raises(StoreError) as raised:
        await session.open()
    shown.append(str(raised.value))
    await session.close()
    for text in shown:
        for part in ("4821", "Kx9z", "w0rd"):
            assert part not in text, text
