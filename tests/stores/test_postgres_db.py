"""What only the PostgreSQL stores have: a server to reach, a pool to keep clean, a schema shared by hosts."""

from __future__ import annotations

import asyncio
import socket
from urllib.parse import urlsplit, urlunsplit

import psycopg
import pytest

from lovia import PostgresCheckpointer, PostgresSession, SchemaError, StoreError, UserMessage
from lovia.stores._postgres_db import PostgresDatabase, PostgresSchema, redacted_url

SECRET = "s3cret-pass-word"


def tables(url: str) -> list[str]:
    with psycopg.connect(url) as conn:
        return [name for (name,) in conn.execute(
            "SELECT tablename FROM pg_tables WHERE schemaname = 'public' ORDER BY tablename").fetchall()]


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])  # nothing listens there once the socket is closed


def test_the_url_is_shown_without_its_password():
    assert redacted_url(f"postgresql://bob:{SECRET}@db.example:6432/lovia?sslmode=require") == \
        "postgresql://bob@db.example:6432/lovia"
    assert redacted_url(f"host=db.example user=bob password={SECRET} dbname=lovia") == "postgresql://bob@db.example/lovia"
    assert SECRET not in repr(PostgresSession(f"postgresql://bob:{SECRET}@db.example/lovia"))


async def test_a_server_that_is_down_is_a_clear_error_without_the_password():
    url = f"postgresql://bob:{SECRET}@127.0.0.1:{closed_port()}/lovia"
    session = PostgresSession(url)
    for attempt in (session.open(), session.append("s", [UserMessage(text="hi")]), session.load("s")):
        with pytest.raises(StoreError) as raised:
            await attempt
        message = str(raised.value)
        assert SECRET not in message
        assert "127.0.0.1" in message and "bob@" in message
        assert "down" in message and "nothing was written" in message
    await session.close()


async def test_a_wrong_password_is_a_clear_error_and_nothing_is_written(postgres, postgres_url):
    database = postgres_url.rsplit("/", 1)[1]
    for store in (PostgresSession(postgres.with_password(database, SECRET)),
                  PostgresCheckpointer(postgres.with_password(database, SECRET))):
        with pytest.raises(StoreError) as raised:
            await store.open()
        message = str(raised.value)
        assert SECRET not in message
        assert "refused the user name or password" in message and database in message
        await store.close()
    assert tables(postgres_url) == []


async def test_no_password_at_all_says_where_one_is_given(postgres, postgres_url, monkeypatch, tmp_path):
    """A trial's server wanted a password the URL did not hold: the error said the server "refused the
    user name or password", which none was given, and not where libpq looks for one."""
    database = postgres_url.rsplit("/", 1)[1]
    parts = urlsplit(postgres.url(database))
    no_password = urlunsplit((parts.scheme, f"{parts.username}@{parts.hostname}:{parts.port}", parts.path, "", ""))
    monkeypatch.delenv("PGPASSWORD", raising=False)
    monkeypatch.setenv("PGPASSFILE", str(tmp_path / "no-such-pgpass"))
    with pytest.raises(StoreError) as raised:
        await PostgresSession(no_password).open()
    message = str(raised.value)
    assert "no password was given" in message and "PGPASSWORD" in message and "~/.pgpass" in message
    assert tables(postgres_url) == []


async def test_a_database_that_does_not_exist_is_named(postgres):
    with pytest.raises(StoreError, match="the database does not exist"):
        await PostgresSession(postgres.url("lovia_no_such_database")).open()


async def test_a_newer_schema_is_refused_and_left_untouched(postgres_url):
    async with PostgresSession(postgres_url) as session:
        await session.append("s1", [UserMessage(text="kept")], run_id="r1")
    with psycopg.connect(postgres_url) as conn:
        conn.execute("UPDATE lovia_schema SET version = 99 WHERE store = 'session'")
    before = tables(postgres_url)

    newer = PostgresSession(postgres_url)
    with pytest.raises(SchemaError) as raised:
        await newer.load("s1")
    message = str(raised.value)
    assert "schema version 99" in message and "Upgrade lovia" in message and "not modified" in message
    assert "@127.0.0.1" in message and "lovia_test:" not in message  # the URL without its password
    await newer.close()

    assert tables(postgres_url) == before
    with psycopg.connect(postgres_url) as conn:
        assert conn.execute("SELECT version FROM lovia_schema WHERE store = 'session'").fetchone() == (99,)
        assert conn.execute("SELECT run_id FROM lovia_segments").fetchall() == [("r1",)]


async def test_a_caller_cancelled_mid_transaction_leaves_nothing_and_its_connection_is_discarded(postgres_url):
    async def make(conn) -> None:
        await conn.execute("CREATE TABLE things (name TEXT)")

    db = PostgresDatabase(postgres_url, schema=PostgresSchema("test", (make,)), min_size=1, max_size=1)
    inside = asyncio.Event()
    pids: list[int] = []

    async def half(conn) -> None:
        await conn.execute("INSERT INTO things VALUES ('half')")
        pids.append((await (await conn.execute("SELECT pg_backend_pid()")).fetchone())[0])
        inside.set()
        await conn.execute("SELECT pg_sleep(60)")

    task = asyncio.ensure_future(db.transaction(half, "writing half a transaction"))
    await inside.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task

    async def look(conn) -> tuple[int, int, str]:
        pid = (await (await conn.execute("SELECT pg_backend_pid()")).fetchone())[0]
        count = (await (await conn.execute("SELECT count(*) FROM things")).fetchone())[0]
        return pid, count, conn.info.transaction_status.name

    # The pool's only connection was replaced, not handed back mid-transaction: the next use works
    # on a new server process, in a transaction of its own, and sees nothing of the half one.
    pid, count, status = await db.read(look, "looking")
    assert pid != pids[0]
    assert count == 0
    assert status == "INTRANS"
    with psycopg.connect(postgres_url, autocommit=True) as admin:
        # The cancelled connection's server process ends (it may take a moment after the close).
        for _ in range(500):
            if not admin.execute("SELECT 1 FROM pg_stat_activity WHERE pid = %s", (pids[0],)).fetchone():
                break
            await asyncio.sleep(0.02)
        else:
            pytest.fail("the cancelled transaction's connection stayed open")
    await db.transaction(lambda conn: conn.execute("INSERT INTO things VALUES ('whole')"), "writing")
    assert await db.read(lambda conn: _names(conn), "reading") == ["whole"]
    await db.close()


async def _names(conn) -> list[str]:
    return [name for (name,) in await (await conn.execute("SELECT name FROM things")).fetchall()]


async def test_an_error_inside_a_transaction_rolls_it_back_and_keeps_the_connection(postgres_url):
    async def make(conn) -> None:
        await conn.execute("CREATE TABLE things (name TEXT PRIMARY KEY)")

    db = PostgresDatabase(postgres_url, schema=PostgresSchema("test", (make,)), min_size=1, max_size=1)

    async def twice(conn) -> None:
        await conn.execute("INSERT INTO things VALUES ('stored text')")
        await conn.execute("INSERT INTO things VALUES ('stored text')")

    with pytest.raises(StoreError) as raised:
        await db.transaction(twice, "adding things")
    assert "23505" in str(raised.value) and "adding things" in str(raised.value)
    assert "stored text" not in str(raised.value)  # the server's message quotes the key: never shown
    assert await db.read(_names, "reading") == []
    await db.close()


async def test_other_objects_writes_change_the_token_and_its_own_do_not(postgres_url):
    async with PostgresSession(postgres_url) as mine, PostgresSession(postgres_url) as other:
        first = await mine.outside_change_token()
        await mine.append("s", [UserMessage(text="mine")])
        await mine.rename_session("s", "Mine")
        await mine.load("s")
        # A notification of its own would arrive within this round trip's time; none comes.
        await other.list_sessions()
        assert await mine.outside_change_token() == first

        await other.append("s", [UserMessage(text="theirs")])
        for _ in range(500):  # delivered a moment after the commit
            if await mine.outside_change_token() != first:
                break
            await asyncio.sleep(0.01)
        else:
            pytest.fail("another store's append never changed the token")


def test_a_store_opened_in_one_event_loop_works_in_the_next(postgres_url):
    session = PostgresSession(postgres_url)
    asyncio.run(session.open())
    asyncio.run(session.append("s", [UserMessage(text="in the second loop")], run_id="r1"))
    assert asyncio.run(session.outside_change_token()) is not None
    assert [e.text for e in asyncio.run(session.load("s"))] == ["in the second loop"]
    asyncio.run(session.close())
    with pytest.raises(StoreError, match="closed"):
        asyncio.run(session.load("s"))


async def test_a_nul_character_in_a_message_or_a_meta_does_not_fail_the_listing(postgres_url):
    # PostgreSQL's JSON operators refuse the \u0000 escape lovia's JSON writes for it.
    async with PostgresSession(postgres_url) as session:
        await session.append("s", [UserMessage(text="before\x00after")], run_id="r1",
                             meta={"note": "a\x00b", "active_seconds": 2.5})
        info = await session.session_info("s")
        assert info is not None
        assert (info.title, info.total_run_seconds) == ("before after", 2.5)
        assert [i.session_id for i in await session.list_sessions()] == ["s"]
        assert (await session.load("s"))[0].text == "before\x00after"
        assert (await session.segments("s"))[0].meta["note"] == "a\x00b"


async def test_pooled_connections_the_server_ended_while_idle_are_replaced(postgres_url):
    async with PostgresSession(postgres_url, min_size=2, max_size=2) as session:
        await asyncio.gather(*(session.append(f"s{i}", [UserMessage(text="before")]) for i in range(4)))
        with psycopg.connect(postgres_url, autocommit=True) as admin:  # as a server restart would
            ended = admin.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                                  "WHERE datname = current_database() AND pid != pg_backend_pid()").fetchall()
        assert ended and all(ok for (ok,) in ended)
        await session.append("s0", [UserMessage(text="after")])
        assert [e.text for e in await session.load("s0")] == ["before", "after"]


async def test_the_listening_connection_probes_an_idle_link_unless_the_url_says_otherwise(postgres_url):
    # The LISTEN connection idles while nobody writes; a NAT dropping it silently must be noticed
    # in about a minute, not the system's two hours (the UI would stop seeing others' changes).
    async with PostgresSession(postgres_url) as session:
        await session.outside_change_token()
        conn = session._db._listener_conn
        assert conn is not None
        options = {item.keyword.decode(): (item.val or b"").decode() for item in conn.pgconn.info}
        assert options["keepalives_idle"] == "30" and options["keepalives_count"] == "3"
    own = postgres_url + ("&" if "?" in postgres_url else "?") + "keepalives_idle=120"
    async with PostgresSession(own) as session:
        await session.outside_change_token()
        options = {item.keyword.decode(): (item.val or b"").decode() for item in session._db._listener_conn.pgconn.info}
        assert options["keepalives_idle"] == "120" and options["keepalives_count"] == ""
