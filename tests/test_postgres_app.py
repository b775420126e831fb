"""The lovia command on PostgreSQL: ``--db URL``, the config file's ``db``, clear refusals, export and doctor.

Against the real server of the ``postgres`` fixture: a refused password and a closed port are
refused before the UI with exit code 2, a message that never holds the password, and nothing
written to the database.
"""

from __future__ import annotations

import asyncio
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from lovia.cli import archive_dir, build_parser
from lovia.db_location import PostgresLocation, parse_db_location, redacted_url
from lovia.errors import UserError
from lovia.tui.config import Config

ROOT = Path(__file__).resolve().parents[1]
SECRET = "s3cret-Pa55word"


def lovia(*args: str, tmp_path: Path, env: dict | None = None, code: str | None = None) -> subprocess.CompletedProcess:
    """``python -m lovia.cli ARGS`` (or ``python -c CODE ARGS``) with its own config and data directory."""
    environment = {**os.environ, "PYTHONPATH": str(ROOT), "LOVIA_CONFIG": str(tmp_path / "config.toml"),
                   "LOVIA_DATA_DIR": str(tmp_path / "data"), **(env or {})}
    environment.pop("LOVIA_MODEL", None)
    command = [sys.executable, "-c", code, *args] if code else [sys.executable, "-m", "lovia.cli", *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=120, env=environment,
                          stdin=subprocess.DEVNULL)


def tables_of(admin_url: str) -> list[str]:
    """The tables of the database ``admin_url`` reaches."""
    import psycopg

    with psycopg.connect(admin_url) as conn:
        rows = conn.execute("SELECT tablename FROM pg_tables WHERE schemaname = 'public' ORDER BY 1").fetchall()
    return [name for (name,) in rows]


def closed_port() -> int:
    """A port of 127.0.0.1 nothing listens on (taken from the system, then let go)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


# -- where the data lives: a path or a URL ----------------------------------------------------


@pytest.mark.parametrize("text", ["postgresql://bob@db.internal:5433/lovia", "postgres://bob@db/lovia",
                                  "POSTGRESQL://bob@db/lovia"])
def test_a_postgresql_url_names_a_postgres_database(text):
    where = parse_db_location(text)
    assert isinstance(where, PostgresLocation) and where.url == text


def test_a_path_is_a_sqlite_file_and_the_config_files_is_taken_from_its_directory(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    assert parse_db_location("team.db") == Path("team.db")
    assert parse_db_location("~/team.db") == tmp_path / "team.db"
    assert build_parser().parse_args(["--db", "./x.db"]).db == Path("x.db")
    config = tmp_path / "conf" / "config.toml"
    config.parent.mkdir()
    config.write_text('db = "data/team.db"\n')
    assert Config.load(config).db == tmp_path / "conf" / "data" / "team.db"
    config.write_text('db = "postgresql://bob@db.internal/lovia"\n')
    assert Config.load(config).db == PostgresLocation("postgresql://bob@db.internal/lovia")


def test_the_password_is_never_shown():
    url = f"postgresql://bob:{SECRET}@db.internal:5433/lovia?sslmode=require&password={SECRET}"
    where = PostgresLocation(url)
    for shown in (where.where, str(where), repr(where), redacted_url(url), f"{where}"):
        assert SECRET not in shown
    assert where.where == "postgresql://bob@db.internal:5433/lovia?sslmode=require"


@pytest.mark.parametrize("where", ["--db", "config"])
def test_an_unknown_scheme_is_refused_naming_the_scheme_only(tmp_path, where):
    url = f"mysql://bob:{SECRET}@db/lovia"
    if where == "config":
        (tmp_path / "config.toml").write_text(f'db = "{url}"\n')
        done = lovia(tmp_path=tmp_path)
    else:
        done = lovia("--db", url, tmp_path=tmp_path)
    assert done.returncode == 2
    assert "mysql://" in done.stderr and "postgresql://" in done.stderr and SECRET not in done.stderr
    with pytest.raises(UserError, match="unknown kind"):
        parse_db_location(url)


def test_a_libpq_key_value_string_is_refused_not_taken_for_a_file(tmp_path):
    done = lovia("--db", f"host=db.internal dbname=lovia password={SECRET}", tmp_path=tmp_path)
    assert done.returncode == 2 and "give it as a URL" in done.stderr and SECRET not in done.stderr
    assert list(Path(tmp_path).glob("host=*")) == [] and list(Path.cwd().glob("host=*")) == []
    assert parse_db_location("./host=1.db") == Path("host=1.db")  # a path that only holds "=" is a path


def test_export_and_doctor_refuse_an_unknown_scheme_too(tmp_path):
    for args in (("export", "s-1", "--db", f"sqlite://{SECRET}"), ("doctor", "--db", f"redis://:{SECRET}@h")):
        done = lovia(*args, tmp_path=tmp_path)
        assert done.returncode == 2 and "unknown kind" in done.stderr and SECRET not in done.stderr


def test_the_archive_of_a_postgres_database_is_in_the_data_directory_one_folder_per_database(tmp_path, monkeypatch):
    monkeypatch.setenv("LOVIA_DATA_DIR", str(tmp_path))
    one = archive_dir(PostgresLocation(f"postgresql://bob:{SECRET}@db.internal:5433/lovia"))
    other = archive_dir(PostgresLocation("postgresql://bob@db.internal/other"))
    assert one == tmp_path / "postgres" / "db.internal-5433-lovia" / "tool-outputs"
    assert other.parent.parent == one.parent.parent and other != one
    assert archive_dir(tmp_path / "x.db") == tmp_path / "tool-outputs"


BLOCK_PSYCOPG = """
import sys
class NoPsycopg:
    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in ("psycopg", "psycopg_pool"):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
sys.meta_path.insert(0, NoPsycopg())
from lovia.cli import main
sys.exit(main(sys.argv[1:]))
"""


@pytest.mark.parametrize("command", [(), ("export", "s-1"), ("doctor",)])
def test_without_the_driver_a_url_says_to_install_the_extra(tmp_path, command):
    done = lovia(*command, "--db", f"postgresql://bob:{SECRET}@127.0.0.1:1/lovia", tmp_path=tmp_path,
                 code=BLOCK_PSYCOPG)
    assert done.returncode == 2, done.stderr
    assert "pip install 'psycopg[binary]>=3.2.1' 'psycopg-pool>=3.2'" in done.stderr and SECRET not in done.stderr
    assert "Traceback" not in done.stderr


# -- refusals against the real server ----------------------------------------------------------


def test_a_wrong_password_is_refused_before_the_ui_and_nothing_is_written(tmp_path, postgres, postgres_url):
    database = postgres_url.rsplit("/", 1)[1]
    url = postgres.with_password(database, SECRET)
    done = lovia("--db", url, tmp_path=tmp_path)
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith("lovia: ") and "password" in done.stderr
    assert SECRET not in done.stderr + done.stdout
    assert tables_of(postgres_url) == []
    assert not (tmp_path / "data").exists()  # not even the archive's directory


def test_a_server_that_is_down_is_refused_before_the_ui(tmp_path):
    url = f"postgresql://bob:{SECRET}@127.0.0.1:{closed_port()}/lovia?connect_timeout=5"
    done = lovia("--db", url, tmp_path=tmp_path)
    assert done.returncode == 2, done.stderr
    assert "down" in done.stderr and "127.0.0.1" in done.stderr and SECRET not in done.stderr


def test_a_missing_database_is_refused_and_not_created(tmp_path, postgres):
    url = postgres.url("lovia_no_such_database")
    done = lovia("--db", url, tmp_path=tmp_path)
    assert done.returncode == 2 and "does not exist" in done.stderr, done.stderr


def test_the_app_opens_on_a_url_from_the_config_file_and_the_password_may_come_from_the_environment(
        tmp_path, monkeypatch, postgres, postgres_url):
    from lovia.cli import build_app

    monkeypatch.setenv("LOVIA_CONFIG", str(tmp_path / "config.toml"))
    monkeypatch.setenv("LOVIA_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.delenv("LOVIA_MODEL", raising=False)
    without_password = PostgresLocation(postgres_url).where
    assert ":" not in without_password.split("//", 1)[1].split("@", 1)[0]
    (tmp_path / "config.toml").write_text(f'db = "{without_password}"\n')
    from tests.postgres_server import PASSWORD

    monkeypatch.setenv("PGPASSWORD", PASSWORD)
    app = build_app(build_parser().parse_args([]))
    try:
        assert type(app.backend.session).__name__ == "PostgresSession"
        assert type(app.backend.checkpointer).__name__ == "PostgresCheckpointer"
        assert {"lovia_schema", "lovia_segments", "lovia_runs"} <= set(tables_of(postgres_url))
    finally:
        asyncio.run(app.backend.close())


# -- export and doctor on PostgreSQL -----------------------------------------------------------

MARKER = "Quokka-Marmalade"


def write_sessions(url: str) -> None:
    """Two sessions as the app leaves them: runs of the demo agent through both PostgreSQL stores, with checkpoints."""
    from lovia import Agent, CheckpointOptions, DemoModel, Runner
    from lovia.stores.postgres import PostgresCheckpointer, PostgresSession

    async def write() -> None:
        session, checkpointer = PostgresSession(url), PostgresCheckpointer(url)
        try:
            agent = Agent(name="assistant", model=DemoModel(delay=0))
            for number, session_id in enumerate(("s-pg-trip", "s-pg-other")):
                for turn in range(2):
                    await Runner.run(agent, f"{MARKER} question {turn}", session=session, session_id=session_id,
                                     checkpoint=CheckpointOptions(checkpointer, f"run-{number}-{turn}"))
        finally:
            await session.close()
            await checkpointer.close()

    asyncio.run(write())


def test_export_reads_a_postgres_session_by_prefix_as_markdown_and_json_lines(tmp_path, postgres_url):
    write_sessions(postgres_url)
    done = lovia("export", "s-pg-t", "--db", postgres_url, tmp_path=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.count("## Run ") == 2 and f"{MARKER} question 1" in done.stdout
    out = tmp_path / "trip.jsonl"
    done = lovia("export", "s-pg-trip", "--db", postgres_url, "-o", str(out), tmp_path=tmp_path)
    assert done.returncode == 0, done.stderr
    import json

    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["record"] for r in records if r["record"] != "entry"] == ["session", "run", "run"]
    assert records[0]["session_id"] == "s-pg-trip" and records[0]["run_count"] == 2


def test_export_of_an_unknown_session_is_refused_and_a_wrong_password_says_so_without_it(tmp_path, postgres,
                                                                                          postgres_url):
    write_sessions(postgres_url)
    done = lovia("export", "s-nope", "--db", postgres_url, tmp_path=tmp_path)
    assert done.returncode == 2 and "no session 's-nope'" in done.stderr
    wrong = postgres.with_password(postgres_url.rsplit("/", 1)[1], SECRET)
    done = lovia("export", "s-pg-trip", "--db", wrong, tmp_path=tmp_path)
    assert done.returncode == 2 and "password" in done.stderr and SECRET not in done.stderr


def admin(url: str, statement: str, params: tuple = ()) -> None:
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(statement, params)


def test_doctor_on_a_healthy_postgres_database_says_all_is_well_and_what_it_did_not_check(tmp_path, postgres_url):
    write_sessions(postgres_url)
    done = lovia("doctor", "--db", postgres_url, tmp_path=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    out = done.stdout
    assert "the session store is at version" in out and "the checkpoint store is at version" in out
    assert "every stored run has its entries (4 runs)" in out
    assert "the search index holds every stored run and title" in out
    assert "SQLite checks, not made on PostgreSQL" in out and "All is well." in out
    assert MARKER not in out and "lovia_test-password" not in out and "lovia-test-password" not in out


def test_doctor_finds_unreadable_runs_and_orphaned_checkpoints_and_fix_deletes_only_the_checkpoints(tmp_path,
                                                                                                     postgres_url):
    write_sessions(postgres_url)
    import json

    import psycopg

    with psycopg.connect(postgres_url, autocommit=True) as conn:
        # an unfinished run that its session already holds (a finalize stopped half-way)
        (head,) = conn.execute("SELECT head FROM lovia_runs WHERE run_id = 'run-0-1'").fetchone()
        conn.execute("UPDATE lovia_runs SET status = 'interrupted', head = %s WHERE run_id = 'run-0-1'",
                     (json.dumps({**json.loads(head), "status": "interrupted"}),))
        # a run whose entries were damaged
        conn.execute("UPDATE lovia_segments SET entries = '[{\"type\": \"user_message\"' WHERE run_id = 'run-1-0'")
        # a run a newer lovia wrote an entry of a new type into (the store says to upgrade, not to restore)
        conn.execute("UPDATE lovia_segments SET entries = jsonb_set(entries::jsonb, '{0,type}', '\"reasoning\"')::text "
                     "WHERE run_id = 'run-0-0'")
    done = lovia("doctor", "--db", postgres_url, tmp_path=tmp_path)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "1 unfinished run is already in its session: run-0-1" in done.stdout
    assert ("1 stored run holds entries or run details that are not the JSON lovia wrote (the database is damaged), "
            "in session s-pg-other: lovia cannot open that session, nor move it to the trash") in done.stdout
    assert ("1 stored run holds entries of a type this lovia does not know (a newer lovia wrote them), in session "
            "s-pg-trip: this lovia cannot open that session") in done.stdout
    assert MARKER not in done.stdout + done.stderr
    done = lovia("doctor", "--db", postgres_url, "--fix", tmp_path=tmp_path)
    assert "deleted 1 orphaned checkpoint" in done.stdout
    assert done.returncode == 1  # the damaged run is left as it is: restoring it is the user's
    with psycopg.connect(postgres_url) as conn:
        assert conn.execute("SELECT count(*) FROM lovia_runs WHERE run_id = 'run-0-1'").fetchone() == (0,)
        assert conn.execute("SELECT count(*) FROM lovia_segments").fetchone() == (4,)


def test_doctor_refuses_an_empty_database_and_a_wrong_password_and_writes_nothing(tmp_path, postgres, postgres_url):
    done = lovia("doctor", "--db", postgres_url, tmp_path=tmp_path)
    assert done.returncode == 2 and "holds no lovia tables" in done.stderr, done.stderr
    wrong = postgres.with_password(postgres_url.rsplit("/", 1)[1], SECRET)
    done = lovia("doctor", "--db", wrong, tmp_path=tmp_path)
    assert done.returncode == 2 and "password" in done.stderr and SECRET not in done.stderr
    assert tables_of(postgres_url) == []


def test_doctor_finds_runs_the_search_index_lacks_and_the_trash_and_back_mends_them(tmp_path, postgres_url):
    write_sessions(postgres_url)
    admin(postgres_url, "DELETE FROM lovia_search WHERE segment_seq = "
                        "(SELECT seq FROM lovia_segments WHERE run_id = 'run-1-1')")
    done = lovia("doctor", "--db", postgres_url, tmp_path=tmp_path)
    assert done.returncode == 1, done.stdout
    assert "the search index is out of step for 1 stored run and 0 titles, in session s-pg-other" in done.stdout

    from lovia.stores.postgres import PostgresSession

    async def trash_and_back() -> None:
        session = PostgresSession(postgres_url)
        try:
            await session.trash_session("s-pg-other")
            (trashed,) = await session.list_trash()
            await session.restore_session(trashed.trash_id)
        finally:
            await session.close()

    asyncio.run(trash_and_back())
    done = lovia("doctor", "--db", postgres_url, tmp_path=tmp_path)
    assert done.returncode == 0, done.stdout


def test_a_database_from_a_newer_lovia_is_refused_by_the_app_and_named_by_doctor_and_left_alone(tmp_path,
                                                                                                postgres_url):
    write_sessions(postgres_url)
    admin(postgres_url, "UPDATE lovia_schema SET version = 99 WHERE store = 'session'")
    done = lovia("--db", postgres_url, tmp_path=tmp_path)
    assert done.returncode == 2 and "newer" in done.stderr, done.stderr
    done = lovia("doctor", "--db", postgres_url, tmp_path=tmp_path)
    assert done.returncode == 1
    assert "the session store is at version 99, newer than this lovia's" in done.stdout
    import psycopg

    from lovia.stores.postgres import CHECKPOINT_SCHEMA

    with psycopg.connect(postgres_url) as conn:
        assert conn.execute("SELECT store, version FROM lovia_schema ORDER BY store").fetchall() == [
            ("checkpoint", CHECKPOINT_SCHEMA.version), ("session", 99)]
        assert conn.execute("SELECT count(*) FROM lovia_segments").fetchone() == (4,)


def test_export_and_doctor_use_the_config_files_db_when_no_db_is_given(tmp_path, postgres_url):
    write_sessions(postgres_url)
    (tmp_path / "config.toml").write_text(f'db = "{postgres_url}"\n')
    done = lovia("export", "s-pg-trip", tmp_path=tmp_path)
    assert done.returncode == 0 and "## Run 2" in done.stdout, done.stderr
    done = lovia("doctor", tmp_path=tmp_path)
    assert done.returncode == 0 and "every stored run has its entries (4 runs)" in done.stdout, done.stderr
    assert "lovia-test-password" not in done.stdout  # the config file's URL holds it; the report names none


def test_export_of_a_database_without_lovia_tables_is_refused_and_creates_none(tmp_path, postgres_url):
    # ``lovia export`` only reads: a URL naming a database lovia never used (the server's
    # ``postgres`` database, a typo'd name that happens to exist) is refused as a missing SQLite
    # file is, not given lovia's tables.
    done = lovia("export", "s-any", "--db", postgres_url, tmp_path=tmp_path)
    assert done.returncode == 2 and "no lovia sessions" in done.stderr, done.stderr
    assert tables_of(postgres_url) == []


# A password holding '/', '?', '#' or '@' not percent-encoded (common in generated passwords) makes
# the URL split elsewhere than its writer meant: the password must still never be shown.
UNENCODED_PASSWORDS = ["4821/Kx9z", "4821?Kx9z", "4821#Kx9z", "Kx9z@4821/w0rd", "Kx9z@4821"]


@pytest.mark.parametrize("password", UNENCODED_PASSWORDS)
def test_a_password_with_an_unencoded_delimiter_is_never_shown(password):
    url = f"postgresql://bob:{password}@db.internal/lovia"
    where = PostgresLocation(url)
    for shown in (where.where, str(where), repr(where), redacted_url(url)):
        for part in ("4821", "Kx9z", "w0rd"):
            assert part not in shown, shown
    assert where.where.startswith("postgresql://")


def test_a_directory_as_the_database_is_refused_by_every_command_naming_the_file_in_it(tmp_path):
    """The data directory given as --db: the app said "not a regular file", doctor "Is a directory",
    export "no lovia data file", and none named the file inside it."""
    data = tmp_path / "data"
    data.mkdir()
    (data / "lovia.db").write_bytes(b"")
    for args in (("--db", str(data)), ("doctor", "--db", str(data)), ("export", "s-1", "--db", str(data))):
        done = lovia(*args, tmp_path=tmp_path)
        assert done.returncode == 2, done.stderr
        assert f"names a directory, {data}, not a database file: it holds lovia.db: give {data / 'lovia.db'}" \
            in done.stderr
    (data / "lovia.db").unlink()
    with pytest.raises(UserError, match="names a directory, .*: give a database file's path"):
        parse_db_location(str(data), source="db in the config file")


def test_a_path_the_file_system_cannot_look_at_is_left_to_the_store_to_refuse():
    # A name too long (or a directory not readable) made the directory check raise out of argparse.
    long_name = "x" * 5000
    assert parse_db_location(long_name) == Path(long_name)
