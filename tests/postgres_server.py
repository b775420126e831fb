"""A real PostgreSQL server on 127.0.0.1 for the tests, and a fresh database per test.

``LOVIA_TEST_POSTGRES_URL`` (a superuser's URL, e.g. ``postgresql://lovia@127.0.0.1:5432/postgres``)
names a server to use. Without it, the tests start a private cluster of their own, once per test
session: ``initdb`` into a temporary directory (run as the ``postgres`` user when the tests run as
root, as PostgreSQL refuses to run as root), then ``postgres`` on a free port of 127.0.0.1, with
password authentication over TCP (so a wrong password is refused as on a real server) and the
cluster's durability settings left as they are.

When neither can be had, the PostgreSQL tests skip with the reason; under CI (``CI`` set) they
fail instead, as CI installs the server (``.ci/run``).
"""

from __future__ import annotations

import contextlib
import glob
import itertools
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

SUPERUSER = "lovia_test"
PASSWORD = "lovia-test-password"


@dataclass(frozen=True)
class PostgresServer:
    """A running server: ``admin_url`` reaches its ``postgres`` database as a superuser."""

    admin_url: str

    def url(self, database: str) -> str:
        """The superuser's URL for ``database`` on this server."""
        parts = urlsplit(self.admin_url)
        return urlunsplit((parts.scheme, parts.netloc, "/" + database, parts.query, ""))

    def with_password(self, database: str, password: str) -> str:
        """The URL for ``database`` with another password (to see a refusal)."""
        parts = urlsplit(self.url(database))
        host = parts.hostname or "127.0.0.1"
        netloc = f"{parts.username}:{password}@{host}:{parts.port or 5432}"
        return urlunsplit((parts.scheme, netloc, parts.path, parts.query, ""))


def _bindir() -> Path | None:
    found = shutil.which("pg_config")
    if found:
        out = subprocess.run([found, "--bindir"], capture_output=True, text=True, check=False).stdout.strip()
        if out and (Path(out) / "initdb").exists():
            return Path(out)
    candidates = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=lambda p: int(p.split("/")[4]))
    return Path(candidates[-1]).parent if candidates else None


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextlib.contextmanager
def private_cluster() -> Iterator[PostgresServer]:
    """Start a throwaway cluster; stop it and delete its files when done.

    Raises :class:`RuntimeError` with the reason when no server can be started.
    """
    bindir = _bindir()
    if bindir is None:
        raise RuntimeError("no PostgreSQL server programs (initdb) found; install the 'postgresql' package")
    run_as: list[str] = []
    owner = None
    if os.geteuid() == 0:
        try:
            owner = pwd.getpwnam("postgres")
        except KeyError:
            raise RuntimeError("running as root and there is no 'postgres' user to run the server as") from None
        run_as = ["runuser", "-u", "postgres", "--"]
    root = Path(tempfile.mkdtemp(prefix="lovia-pg-"))
    data, sockets = root / "data", root / "sockets"
    sockets.mkdir()
    pwfile = root / "pw"
    pwfile.write_text(PASSWORD + "\n")
    if owner is not None:
        for path in (root, sockets, pwfile):
            os.chown(path, owner.pw_uid, owner.pw_gid)
    port = _free_port()
    log = root / "server.log"
    try:
        subprocess.run(
            [*run_as, str(bindir / "initdb"), "-D", str(data), "-U", SUPERUSER, f"--pwfile={pwfile}",
             "--auth-local=trust", "--auth-host=scram-sha-256", "-E", "UTF8", "--locale=C.UTF-8", "-N"],
            check=True, capture_output=True, text=True,
        )
        subprocess.run(
            [*run_as, str(bindir / "pg_ctl"), "-D", str(data), "-l", str(log), "-w", "-t", "60", "start",
             "-o", f"-h 127.0.0.1 -p {port} -k {sockets} -c max_connections=200"],
            check=True, capture_output=True, text=True,
        )
    except subprocess.CalledProcessError as error:
        detail = (error.stderr or error.stdout or "").strip().splitlines()[-1:] or ["?"]
        shutil.rmtree(root, ignore_errors=True)
        raise RuntimeError(f"could not start a PostgreSQL cluster ({detail[0]})") from None
    try:
        yield PostgresServer(f"postgresql://{SUPERUSER}:{PASSWORD}@127.0.0.1:{port}/postgres")
    finally:
        subprocess.run([*run_as, str(bindir / "pg_ctl"), "-D", str(data), "-m", "immediate", "-w", "stop"],
                       capture_output=True, check=False)
        shutil.rmtree(root, ignore_errors=True)


@contextlib.contextmanager
def server() -> Iterator[PostgresServer]:
    """The server named by ``LOVIA_TEST_POSTGRES_URL``, else a private cluster."""
    url = os.environ.get("LOVIA_TEST_POSTGRES_URL")
    if url:
        yield PostgresServer(url)
    else:
        with private_cluster() as started:
            yield started


_numbers = itertools.count(1)


def create_database(admin_url: str) -> str:
    """A new empty database's name (``lovia_t<pid>_<n>``), created through ``admin_url``."""
    import psycopg

    name = f"lovia_t{os.getpid()}_{next(_numbers)}_{int(time.time() * 1000) % 100000}"
    with psycopg.connect(admin_url, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    return name


def drop_database(admin_url: str, name: str) -> None:
    """Drop ``name``, ending any session still connected to it."""
    import psycopg

    with psycopg.connect(admin_url, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
