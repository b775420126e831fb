"""Fixtures every test directory can use: a real PostgreSQL server and a fresh database per test."""

from __future__ import annotations

import os

import pytest

from tests import postgres_server


@pytest.fixture(scope="session")
def postgres():
    """A running PostgreSQL server (:class:`tests.postgres_server.PostgresServer`).

    Skips the test, with the reason, when none can be started; fails instead under CI, which
    installs one (``.ci/run``).
    """
    try:
        with postgres_server.server() as started:
            yield started
            return
    except (RuntimeError, ImportError) as error:
        reason = f"PostgreSQL tests need a server: {error}"
    if os.environ.get("CI"):
        pytest.fail(reason)
    pytest.skip(reason)


@pytest.fixture
def postgres_url(postgres):
    """A URL to a new, empty database on :func:`postgres`, dropped after the test."""
    name = postgres_server.create_database(postgres.admin_url)
    yield postgres.url(name)
    postgres_server.drop_database(postgres.admin_url, name)
