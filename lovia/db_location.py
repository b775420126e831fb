"""Where the app's data lives: a SQLite file's path, or a PostgreSQL server's URL.

``lovia --db``, ``lovia export --db``, ``lovia doctor --db`` and the config file's ``db`` key
take either: a text starting ``postgresql://`` or ``postgres://`` names a PostgreSQL database
(any libpq URL: ``postgresql://user@host:5432/dbname?sslmode=require``), anything else without a
``scheme://`` is a file path. Another scheme (``mysql://``, ``sqlite://``...) is refused, naming
the two kinds lovia knows, and so is a libpq ``key=value`` string (``host=db dbname=lovia``),
which would otherwise name a new SQLite file.

Promise: nothing here ever puts a URL's password into a message. A
:class:`PostgresLocation` prints and reprs as :attr:`PostgresLocation.where` (the URL without
its password, nor any query parameter naming a password); the full URL is only in ``url``.
"""

from __future__ import annotations

import argparse
import importlib
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from lovia.errors import UserError
from lovia.stores import POSTGRES_EXTRA_HINT

__all__ = ["POSTGRES_SCHEMES", "DbLocation", "PostgresLocation", "chosen_db", "db_argument", "parse_db_location",
           "postgres_store_classes", "redacted_url"]

POSTGRES_SCHEMES = ("postgresql", "postgres")
"""The URL schemes that name a PostgreSQL database (libpq accepts both)."""
_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*)://")
_CONNINFO = re.compile(r"^(host|hostaddr|port|dbname|user|password|passfile|service|sslmode|options)\s*=",
                       re.IGNORECASE)
"""The start of a libpq ``key=value`` connection string, which ``--db`` does not take (it would be a file's name)."""


def redacted_url(url: str) -> str:
    """``url`` without its password, and without query parameters that name a password (``password``,
    ``sslpassword``): what a message may show of it."""
    scheme, _, rest = url.partition("://")
    host_end = re.search(r"[/?#]", rest)
    if host_end is not None and "@" in rest[host_end.start():]:
        # An '@' after the host: the user info held a '/', '?' or '#' not percent-encoded, so the URL
        # splits elsewhere than meant and any part shown could be the password's.
        return f"{scheme}://… (an '@' after its host: a '/', '?' or '#' in a password must be written %2F %3F %23)"
    try:
        parts = urlsplit(url)
        host = parts.hostname or ""
        port = parts.port
    except ValueError:  # a port that is no number: show no more than the scheme
        return url.split("://", 1)[0] + "://…"
    if ":" in host:  # an IPv6 address goes back in brackets
        host = f"[{host}]"
    netloc = host + (f":{port}" if port is not None else "")
    if parts.username:
        netloc = f"{parts.username}@{netloc}"
    kept = [(k, v) for k, v in parse_qsl(parts.query, keep_blank_values=True) if "password" not in k.lower()]
    query = urlencode(kept)
    return urlunsplit((parts.scheme, netloc, parts.path, query, ""))


@dataclass(frozen=True)
class PostgresLocation:
    """A PostgreSQL database named by a libpq URL; shown without its password."""

    url: str = field(repr=False)

    @property
    def where(self) -> str:
        """The URL without its password, for messages (``postgresql://bob@db:5432/lovia``)."""
        return redacted_url(self.url)

    def __str__(self) -> str:
        return self.where

    def __repr__(self) -> str:
        return f"PostgresLocation({self.where!r})"


DbLocation = Path | PostgresLocation
"""A SQLite file or a PostgreSQL database."""


def parse_db_location(text: str, *, source: str = "--db", relative_to: Path | None = None) -> DbLocation:
    """A SQLite path or a :class:`PostgresLocation` from what the user wrote in ``source``.

    A path has ``~`` expanded; a relative one is taken from ``relative_to`` when given (the config
    file's directory), else from the current directory. A :class:`~lovia.errors.UserError` for an
    empty text, a scheme lovia does not know (the message names the scheme only, never the rest), or a
    directory.
    """
    text = text.strip()
    if not text:
        raise UserError(f"{source} is empty: give a SQLite file's path or a postgresql:// URL")
    scheme = _SCHEME.match(text)
    if scheme is not None:
        name = scheme.group(1).lower()
        if name in POSTGRES_SCHEMES:
            return PostgresLocation(text)
        raise UserError(f"{source} names a database of an unknown kind ({name}://): give a SQLite file's path "
                        "(e.g. ./team.db) or a PostgreSQL URL (postgresql://user@host/dbname)")
    if _CONNINFO.match(text):
        raise UserError(f"{source} looks like a libpq connection string (key=value ...), which lovia would take for "
                        "a file's name: give it as a URL, postgresql://user@host:port/dbname?sslmode=...")
    path = Path(text).expanduser()
    if relative_to is not None and not path.is_absolute():
        path = relative_to / path
    inside = path / "lovia.db"
    try:
        directory, holds_one = path.is_dir(), inside.is_file()
    except OSError:  # not readable, a name too long: opening the store says what is wrong, as before
        directory = holds_one = False
    if directory:  # the data directory, say: each command said it differently, one as if nothing were there
        hint = f"it holds {inside.name}: give {inside}" if holds_one else "give a database file's path"
        raise UserError(f"{source} names a directory, {path}, not a database file: {hint}")
    return path


def db_argument(text: str) -> DbLocation:
    """``--db``'s argparse type: a SQLite path or a PostgreSQL URL (:func:`parse_db_location`)."""
    try:
        return parse_db_location(text, source="--db")
    except UserError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def chosen_db(given: DbLocation | None) -> DbLocation:
    """Where the data lives: ``--db`` (``given``), else the config file's ``db``, else ``lovia.db`` in the
    user data directory. The config file is read only when ``given`` is ``None``, and only for its
    ``db`` (a file that is no TOML, or a bad ``db``, is a :class:`~lovia.errors.UserError` then)."""
    if given is not None:
        return given
    from lovia.tui.config import Config, default_db_path

    return Config.load_db() or default_db_path()


def postgres_store_classes() -> tuple[Any, Any]:
    """``(PostgresSession, PostgresCheckpointer)``, imported only now: a :class:`~lovia.errors.UserError`
    saying what to install when the PostgreSQL driver is missing."""
    try:
        # imported by name: psycopg is imported only once a PostgreSQL database is asked for
        stores = importlib.import_module("lovia.stores.postgres")
    except ImportError as exc:
        missing = (exc.name or "").partition(".")[0]
        if missing not in ("psycopg", "psycopg_pool", "psycopg_binary", "psycopg_c"):
            raise
        raise UserError(f"a postgresql:// database needs the PostgreSQL driver, which is not installed "
                        f"({missing}): {POSTGRES_EXTRA_HINT}") from None
    return stores.PostgresSession, stores.PostgresCheckpointer
