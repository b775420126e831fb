"""``lovia doctor`` (and ``lovia export``) on a database holding a table of lovia's name that lovia did not
create, and the advice for a database a newer lovia wrote. Real PostgreSQL server, real files."""

from __future__ import annotations

import asyncio
import sqlite3

import psycopg
import pytest

from lovia.cli import main as lovia_main
from lovia.stores.postgres import PostgresSession
from lovia.stores.sqlite import SQLiteCheckpointer, SQLiteSession
from tests.postgres_server import PASSWORD


@pytest.fixture(autouse=True)
def own_config(tmp_path, monkeypatch):
    monkeypatch.setenv("LOVIA_CONFIG", str(tmp_path / "config.toml"))
    monkeypatch.setenv("LOVIA_DATA_DIR", str(tmp_path / "data"))


def run(capsys, *args: str) -> tuple[int, str, str]:
    status = lovia_main(list(args))
    out = capsys.readouterr()
    return status, out.out, out.err


def admin(url: str, *statements: str) -> None:
    with psycopg.connect(url, autocommit=True) as conn:
        for statement in statements:
            conn.execute(statement)


async def open_and_close(store) -> None:
    async with store:
        pass


@pytest.mark.parametrize("statement, table", [
    ("CREATE TABLE lovia_runs (run_id TEXT PRIMARY KEY, payload TEXT)", "lovia_runs"),
    ("CREATE TABLE lovia_segments (id INTEGER, note TEXT)", "lovia_segments"),
    ("CREATE TABLE lovia_schema (name TEXT, created TIMESTAMPTZ)", "lovia_schema"),
])
def test_doctor_names_a_foreign_table_in_a_database_without_lovias_and_says_what_to_do(capsys, postgres_url,
                                                                                        statement, table):
    admin(postgres_url, statement)
    status, out, err = run(capsys, "doctor", "--db", postgres_url)
    assert status == 2, out + err
    assert f"table {table}" in err and "lovia did not create" in err and "drop or rename" in err, err
    assert "another database" in err and "holds no lovia tables" not in err and "SQLSTATE" not in err, err
    assert PASSWORD not in out + err


def test_doctor_reports_a_foreign_table_beside_lovias_store_as_a_problem(capsys, postgres_url):
    asyncio.run(open_and_close(PostgresSession(postgres_url)))
    admin(postgres_url, "CREATE TABLE lovia_runs (run_id TEXT PRIMARY KEY, payload TEXT)")
    status, out, err = run(capsys, "doctor", "--db", postgres_url)
    assert status == 1, out + err
    assert "PROBLEM  tables:" in out and "table lovia_runs that lovia did not create" in out, out
    assert "drop or rename" in out and "SQLSTATE" not in out + err
    assert "lovia creates them when it opens" not in out  # it cannot, while lovia_runs is in the way


def test_export_names_a_foreign_lovia_schema(capsys, postgres_url):
    admin(postgres_url, "CREATE TABLE lovia_schema (name TEXT, created TIMESTAMPTZ)")
    status, out, err = run(capsys, "export", "s-1", "--db", postgres_url)
    assert status == 2 and "table lovia_schema" in err and "lovia did not create" in err, err
    assert "SQLSTATE" not in err


def session_file_then(tmp_path, statement: str):
    """A SQLite file a session store made, then changed by ``statement`` run on it by another program."""
    path = tmp_path / "lovia.db"
    asyncio.run(open_and_close(SQLiteSession(path)))
    with sqlite3.connect(path) as conn:
        conn.execute(statement)
    conn.close()
    return path


def test_sqlite_doctor_reports_a_foreign_table_beside_lovias_store(capsys, tmp_path):
    path = session_file_then(tmp_path, "CREATE TABLE lovia_runs (run_id TEXT PRIMARY KEY, payload TEXT)")
    status, out, err = run(capsys, "doctor", "--db", str(path))
    assert status == 1 and "table lovia_runs that lovia did not create" in out and "drop or rename" in out, out


def test_sqlite_doctor_reports_a_table_of_lovias_made_again_with_other_columns(capsys, tmp_path):
    """Both stores current, the stores' opening skips the check (no migration is to come), and the
    doctor skipped it too: "All is well" over a lovia_run_partials another program made again."""
    path = tmp_path / "lovia.db"

    async def both_stores() -> None:
        async with SQLiteSession(path), SQLiteCheckpointer(path):
            pass

    asyncio.run(both_stores())
    with sqlite3.connect(path) as conn:
        conn.execute("DROP TABLE lovia_run_partials")
        conn.execute("CREATE TABLE lovia_run_partials (id INTEGER PRIMARY KEY, note TEXT)")
    conn.close()
    status, out, err = run(capsys, "doctor", "--db", str(path))
    assert status == 1 and "lovia_run_partials" in out and "lovia did not create" in out, out


# -- a database a newer lovia wrote: the advice names no package of someone else's --------------


def assert_upgrade_advice(out: str) -> None:
    assert "newer than this lovia's" in out
    assert "pip install -U lovia" not in out and "pip install lovia" not in out
    assert "upgrade lovia" in out and "checkout lovia was installed from" in out and "pip install -e ." in out


def test_doctor_on_a_newer_postgres_database_says_to_update_the_checkout(capsys, postgres_url):
    asyncio.run(open_and_close(PostgresSession(postgres_url)))
    admin(postgres_url, "UPDATE lovia_schema SET version = 99 WHERE store = 'session'")
    status, out, err = run(capsys, "doctor", "--db", postgres_url)
    assert status == 1
    assert_upgrade_advice(out)
    status, out, err = run(capsys, "--db", postgres_url)  # the app says the same
    assert status == 2 and "Upgrade lovia" in err and "checkout lovia was installed from" in err, err


def test_doctor_on_a_newer_sqlite_file_says_to_update_the_checkout(capsys, tmp_path):
    path = session_file_then(tmp_path, "UPDATE lovia_schema SET version = 99 WHERE store = 'session'")
    status, out, err = run(capsys, "doctor", "--db", str(path))
    assert status == 1
    assert_upgrade_advice(out)
