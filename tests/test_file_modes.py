"""Every file lovia creates is 0600 and every directory 0700, even under umask 000.

The real code runs with the process umask set to 0 (restored afterwards) and the modes are
read back with os.stat.
"""

from __future__ import annotations

import asyncio
import json
import os
import stat
from pathlib import Path

import pytest

from lovia import FileResultStore, SQLiteSession, UserMessage
from lovia._files import make_private_dirs, replace_file_privately
from lovia.cli import build_app, build_parser
from lovia.tui.config import RememberedState


@pytest.fixture
def umask_000():
    previous = os.umask(0)
    try:
        yield
    finally:
        os.umask(previous)


def mode(path: Path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


def assert_private_tree(top: Path, below: Path) -> None:
    """``top`` and everything under it: directories 0700, files 0600; ``below`` must exist already."""
    assert top.is_dir() and below.exists()
    seen = [top, *top.rglob("*")]
    for path in seen:
        expected = 0o700 if path.is_dir() else 0o600
        assert mode(path) == expected, f"{path} is {oct(mode(path))}, expected {oct(expected)}"


def test_state_json_and_its_missing_directories(tmp_path, umask_000):
    state = RememberedState(tmp_path / "new" / "data" / "state.json")
    state.remember(theme="lovia-light")
    state.remember(last_session="s-1")  # replaces the file: still private
    assert_private_tree(tmp_path / "new", state.path)
    assert state.load() == {"theme": "lovia-light", "last_session": "s-1"}
    assert os.listdir(state.path.parent) == ["state.json"]  # no temporary file left behind


def test_state_json_replaces_a_world_readable_file_with_a_private_one(tmp_path, umask_000):
    path = tmp_path / "state.json"
    path.write_text(json.dumps({"theme": "lovia-dark"}))
    os.chmod(path, 0o644)
    before = os.stat(path).st_ino
    RememberedState(path).remember(theme="lovia-light")
    assert mode(path) == 0o600 and os.stat(path).st_ino != before  # a new file, renamed over the old
    assert json.loads(path.read_text()) == {"theme": "lovia-light"}


async def test_tool_output_archive_and_its_missing_directories(tmp_path, umask_000):
    store = FileResultStore(tmp_path / "new" / "deeper" / "tool-outputs")
    key = FileResultStore.key_for("run-1", "call-1")
    await store.put(key, "a long output")
    await store.put(key, "a longer output, replacing it")
    assert_private_tree(tmp_path / "new", store.directory / f"{key}.txt")
    assert await store.get(key) == "a longer output, replacing it"
    assert os.listdir(store.directory) == [f"{key}.txt"]


def test_the_data_directory_the_app_makes_and_the_files_in_it(tmp_path, monkeypatch, umask_000):
    data = tmp_path / "home" / ".local" / "share" / "lovia"
    monkeypatch.setenv("LOVIA_DATA_DIR", str(data))
    monkeypatch.setenv("LOVIA_CONFIG", str(tmp_path / "no-config.toml"))
    monkeypatch.delenv("LOVIA_MODEL", raising=False)
    app = build_app(build_parser().parse_args([]))  # runs its own event loop to check the database
    db = data / "lovia.db"

    async def use_everything() -> None:
        async with SQLiteSession(db, wal=True) as session:  # while open, the WAL and shared-memory files exist
            await session.append("s", [UserMessage(text="hello")])
            await app.backend.context_policy.result_store.put(FileResultStore.key_for("r", "c"), "output")
            app.state.remember(theme="lovia-light")
            assert {p.name for p in data.iterdir()} >= {"lovia.db", "lovia.db-wal", "lovia.db-shm", "state.json",
                                                        "tool-outputs"}
            assert_private_tree(tmp_path / "home", db)

    asyncio.run(use_everything())


def test_private_directories_accept_existing_ones_as_they_are(tmp_path, umask_000):
    shared = tmp_path / "shared"
    shared.mkdir(mode=0o755)
    os.chmod(shared, 0o755)
    make_private_dirs(shared / "mine")
    make_private_dirs(shared / "mine")  # already there: nothing to do
    assert mode(shared) == 0o755 and mode(shared / "mine") == 0o700


def test_a_failed_replacement_leaves_the_old_file_and_no_temporary_one(tmp_path, umask_000):
    path = tmp_path / "state.json"
    replace_file_privately(path, "old")
    with pytest.raises(UnicodeEncodeError):
        replace_file_privately(path, "\ud800 cannot be encoded")
    assert path.read_text() == "old" and os.listdir(tmp_path) == ["state.json"]
