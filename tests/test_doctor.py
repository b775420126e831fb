"""``lovia doctor``: real files (healthy, damaged, older, newer, with orphans), a real crashed process.

Every run checks what the command promises besides its verdict: the exit status, that the file
is left byte for byte as it was without ``--fix``, and that nothing it prints quotes the
conversation (the files carry marker words everywhere).
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from lovia import (
    AssistantMessage,
    RunHead,
    RunSnapshot,
    SQLiteCheckpointer,
    SQLiteSession,
    ToolCall,
    ToolResult,
    UnknownEntryTypeError,
    UserMessage,
    doctor,
)
from lovia.cli import main as lovia_main
from lovia.context import FileResultStore
from tests.stores.test_sqlite_corruption import PAGE, zero_page

MARKERS = ("ZEBRA", "quokka", "Marmalade")
SECRET = " ".join(MARKERS)
DATA = Path(__file__).resolve().parent / "stores" / "data"


def make_file(path: Path) -> None:
    """A lovia file as the app leaves it, closed cleanly, the markers in every entry and meta."""

    async def write():
        async with SQLiteSession(path, wal=True) as session, SQLiteCheckpointer(path, wal=True) as checkpointer:
            for s in range(2):
                for r in range(6):
                    run_id = f"r{s}-{r}"
                    await session.append(f"s{s}", [
                        UserMessage(text=f"{SECRET} question"),
                        ToolCall(call_id=f"c{r}", name="search", arguments="{}"),
                        ToolResult(call_id=f"c{r}", output=f"{SECRET} " * 50),
                        AssistantMessage(text=f"{SECRET} answer"),
                    ], run_id=run_id, meta={"note": SECRET})
                    await checkpointer.save(RunSnapshot(run_id, RunHead(agent="bot", first_input=SECRET,
                                                                        session_id=f"s{s}", status="completed"),
                                                        [UserMessage(text=SECRET)]))

    asyncio.run(write())


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def run_doctor(capsys, path: Path, *extra: str) -> tuple[int, str]:
    """``lovia doctor --db PATH`` through the CLI's table of commands, in this process."""
    status = lovia_main(["doctor", "--db", str(path), *extra])
    out = capsys.readouterr()
    text = out.out + out.err
    for marker in MARKERS:
        assert marker not in text, f"doctor quoted the conversation: {text}"
    return status, text


@pytest.fixture
def healthy(tmp_path) -> Path:
    path = tmp_path / "lovia.db"
    make_file(path)
    return path


def test_a_healthy_file_is_well_and_left_untouched(capsys, healthy):
    before = digest(healthy)
    status, text = run_doctor(capsys, healthy)
    assert status == 0, text
    assert "All is well." in text and "PROBLEM" not in text
    assert "12 completed runs kept as replay caches" in text
    assert digest(healthy) == before


def test_the_command_runs_as_a_real_process(healthy):
    done = subprocess.run([sys.executable, "-m", "lovia.cli", "doctor", "--db", str(healthy), "--quick"],
                          capture_output=True, text=True, timeout=120, check=False,
                          cwd=Path(__file__).resolve().parent.parent)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "quick_check found nothing wrong" in done.stdout


def test_a_missing_file_a_foreign_file_and_a_file_of_another_program_cannot_be_checked(capsys, tmp_path):
    status, text = run_doctor(capsys, tmp_path / "none.db")
    assert status == 2 and "there is no database" in text
    junk = tmp_path / "junk.db"
    junk.write_bytes(b"not a database at all" * 100)
    status, text = run_doctor(capsys, junk)
    assert status == 2 and "not a SQLite database" in text
    # An empty file is no damaged database (lovia takes it as a new one): it said "restore it from a backup".
    empty = tmp_path / "empty.db"
    empty.touch()
    status, text = run_doctor(capsys, empty)
    assert status == 2 and "is empty (0 bytes)" in text and "not a SQLite database" not in text
    other = tmp_path / "other.db"
    with sqlite3.connect(other) as conn:
        conn.execute("CREATE TABLE notes (body TEXT)")
    conn.close()
    status, text = run_doctor(capsys, other)
    assert status == 2 and "not a lovia one" in text


def test_a_damaged_page_is_reported_quoting_nothing_and_left_as_it_is(capsys, healthy):
    with sqlite3.connect(healthy) as conn:
        (page,) = conn.execute("SELECT rootpage FROM sqlite_master WHERE name = 'lovia_segments_by_start'").fetchone()
    conn.close()
    damaged = zero_page(page - 1)(healthy.read_bytes())
    healthy.write_bytes(damaged)
    status, text = run_doctor(capsys, healthy)
    assert status == 1
    assert "PROBLEM  integrity" in text and "restore it from a backup" in text
    assert healthy.read_bytes() == damaged
    status, text = run_doctor(capsys, healthy, "--fix")  # nothing SQLite reports damaged is "fixed"
    assert status == 1 and healthy.read_bytes() == damaged


def test_a_page_of_conversation_destroyed_is_reported(capsys, healthy):
    data = healthy.read_bytes()
    pages = len(data) // PAGE
    leaf = next(page for page in range(1, pages) if data[page * PAGE] == 0x0D
                and SECRET.encode() in data[page * PAGE:(page + 1) * PAGE])
    healthy.write_bytes(zero_page(leaf)(data))
    status, text = run_doctor(capsys, healthy, "--quick")
    assert status == 1 and "PROBLEM  integrity: SQLite's quick_check reports damage" in text


def test_an_older_file_is_a_note_and_is_not_migrated(capsys, tmp_path):
    path = tmp_path / "v2.db"
    shutil.copyfile(DATA / "session-v2.db", path)
    before = digest(path)
    status, text = run_doctor(capsys, path)
    assert "note     schema: the session store is at version 2" in text and "moves it to the new layout" in text
    assert status == 1 and "crashed runs: 1 run was" in text  # the file's one run was left running, ownerless
    assert digest(path) == before


def test_a_newer_file_is_a_problem(capsys, healthy):
    with sqlite3.connect(healthy) as conn:
        conn.execute("UPDATE lovia_schema SET version = 99 WHERE store = 'session'")
    conn.close()
    status, text = run_doctor(capsys, healthy)
    assert status == 1 and "newer than this lovia's" in text and "upgrade lovia" in text


# -- orphaned checkpoints ------------------------------------------------------------------------


def test_orphaned_checkpoints_are_named_and_fix_deletes_only_them(capsys, healthy):
    async def orphan():
        async with SQLiteSession(healthy, wal=True) as session, SQLiteCheckpointer(healthy, wal=True) as checkpointer:
            # A finalize that stopped between the append and the delete: the run is in its session, unfinished.
            await checkpointer.save(RunSnapshot("half-finalized", RunHead(agent="bot", session_id="s0",
                                                                          status="interrupted"),
                                                [UserMessage(text=SECRET)]))
            await session.append("s0", [UserMessage(text=SECRET)], run_id="half-finalized")
            # A session in the trash whose completed run's checkpoint stayed.
            await session.trash_session("s1")
            return await session.segments("s0")

    kept = asyncio.run(orphan())
    before = digest(healthy)
    status, text = run_doctor(capsys, healthy)
    assert status == 1
    assert "1 unfinished run is already in its session: half-finalized" in text
    assert "6 runs belong to sessions in the trash: r1-0" in text
    assert digest(healthy) == before

    status, text = run_doctor(capsys, healthy, "--fix")
    assert status == 0, text
    assert "deleted 7 orphaned checkpoints" in text and "All is well now." in text

    async def after():
        async with SQLiteSession(healthy, wal=True) as session, SQLiteCheckpointer(healthy, wal=True) as checkpointer:
            runs = {r.run_id for r in await checkpointer.list_runs()}
            return runs, await session.segments("s0"), await session.list_trash()

    runs, segments, trash = asyncio.run(after())
    assert runs == {f"r0-{r}" for r in range(6)}
    assert [s.run_id for s in segments] == [s.run_id for s in kept]
    assert [t.session_id for t in trash] == ["s1"]


# -- a real crashed process, and its WAL --------------------------------------------------------

CHILD = """
import asyncio, sys, time
from lovia import RunHead, RunOwner, RunSnapshot, SQLiteCheckpointer, UserMessage

async def main():
    checkpointer = SQLiteCheckpointer(sys.argv[1], wal=True)
    start = RunSnapshot("child-run", RunHead(agent="bot", session_id="s0", first_input=sys.argv[2]),
                        [UserMessage(text=sys.argv[2])])
    await checkpointer.claim("child-run", RunOwner.current(), token="child", lease_seconds=600, start=start)
    print("claimed", flush=True)
    await asyncio.sleep(600)

asyncio.run(main())
"""


def test_a_run_whose_process_was_killed_is_a_crashed_run(capsys, healthy, monkeypatch):
    child = subprocess.Popen([sys.executable, "-c", CHILD, str(healthy), SECRET], stdout=subprocess.PIPE, text=True,
                             cwd=Path(__file__).resolve().parent.parent)
    try:
        assert child.stdout.readline().strip() == "claimed"
        status, text = run_doctor(capsys, healthy)
        assert status == 0, text
        assert "1 run is being executed now by a live process: child-run" in text
    finally:
        os.kill(child.pid, signal.SIGKILL)
        child.wait()
    status, text = run_doctor(capsys, healthy)
    assert status == 1
    assert "PROBLEM  crashed runs: 1 run was left running by a process that is gone" in text
    assert "child-run" in text and "the runs list (ctrl+o)" in text

    # The killed writer left its WAL behind: above the limit it is a problem --fix mends.
    wal = Path(f"{healthy}-wal")
    assert wal.stat().st_size > 0
    monkeypatch.setattr(doctor, "WAL_LIMIT_BYTES", 1)
    status, text = run_doctor(capsys, healthy)
    assert status == 1 and "PROBLEM  wal: the WAL file is" in text
    status, text = run_doctor(capsys, healthy, "--fix")
    assert "copied the WAL back into the database" in text
    assert status == 1  # the crashed run is the user's to decide: --fix leaves it
    assert "PROBLEM  wal" not in text.split("fixed")[-1]


# -- the tool-output archive --------------------------------------------------------------------


def test_archive_files_no_entry_refers_to_are_reported_and_fix_deletes_only_old_ones(capsys, healthy):
    archive = healthy.parent / "tool-outputs"
    archive.mkdir()
    referenced = archive / f"{FileResultStore.key_for('r0-3', 'c3')}.txt"
    orphan = archive / f"{FileResultStore.key_for('rewound-run', 'c9')}.txt"
    young = archive / f"{FileResultStore.key_for('running-now', 'c1')}.txt"
    hour_ago = time.time() - 2 * 3600
    for file in (referenced, orphan, young):
        file.write_text(SECRET)
    for file in (referenced, orphan):
        os.utime(file, (hour_ago, hour_ago))
    status, text = run_doctor(capsys, healthy)
    assert status == 1
    assert "1 file in" in text and "no stored entry refers to" in text
    assert "besides, 1 file no entry refers to, kept until it is an hour old" in text  # the young one
    assert orphan.exists()

    status, text = run_doctor(capsys, healthy, "--fix")
    assert status == 0, text
    assert not orphan.exists() and referenced.exists() and young.exists()


def test_archive_files_of_trashed_sessions_are_still_referred_to(capsys, healthy):
    archive = healthy.parent / "tool-outputs"
    archive.mkdir()
    file = archive / f"{FileResultStore.key_for('r1-2', 'c2')}.txt"
    file.write_text(SECRET)
    os.utime(file, (time.time() - 7200, time.time() - 7200))

    async def trash():
        async with SQLiteSession(healthy, wal=True) as session, SQLiteCheckpointer(healthy, wal=True) as checkpointer:
            for r in range(6):
                await checkpointer.delete(f"r1-{r}")
            await session.trash_session("s1")

    asyncio.run(trash())
    status, text = run_doctor(capsys, healthy)
    assert status == 0, text
    assert "the one file in" in text


def test_a_young_archive_file_no_entry_refers_to_is_not_called_referred_to(capsys, healthy):
    # The user's trial: an output archived (trimmed), its session deleted and purged from the
    # trash, doctor run at once. The file is spared for its age, not because anything refers to it.
    archive = healthy.parent / "tool-outputs"
    referred = archive / f"{FileResultStore.key_for('r0-3', 'c3')}.txt"
    purged = archive / f"{FileResultStore.key_for('r1-2', 'c2')}.txt"

    async def archive_then_purge():
        await FileResultStore(archive).put(FileResultStore.key_for("r1-2", "c2"), SECRET)
        async with SQLiteSession(healthy, wal=True) as session, SQLiteCheckpointer(healthy, wal=True) as checkpointer:
            for r in range(6):
                await checkpointer.delete(f"r1-{r}")
            trashed = await session.trash_session("s1")
            assert trashed is not None
            assert await session.purge_trash(trash_id=trashed.trash_id) == 1

    asyncio.run(archive_then_purge())
    status, text = run_doctor(capsys, healthy)
    assert status == 0, text
    line = next(line for line in text.splitlines() if "archive:" in line)
    assert "is referred to" not in line and "the one file" not in line
    assert "1 file no entry refers to, kept until it is an hour old (a write may be under way)" in line

    # With a file an entry does refer to beside it, the two are counted apart.
    asyncio.run(FileResultStore(archive).put(FileResultStore.key_for("r0-3", "c3"), SECRET))
    hour_ago = time.time() - 2 * 3600
    status, text = run_doctor(capsys, healthy)
    assert status == 0, text
    line = next(line for line in text.splitlines() if "archive:" in line)
    assert "1 file is referred to; 1 file no entry refers to, kept until it is an hour old" in line

    # Once it is old, it is what it always was: a file no entry refers to, for --fix.
    os.utime(purged, (hour_ago, hour_ago))
    status, text = run_doctor(capsys, healthy)
    assert status == 1 and "no stored entry refers to" in text
    status, text = run_doctor(capsys, healthy, "--fix")
    assert status == 0, text
    assert not purged.exists() and referred.exists()


def test_a_new_conversation_under_a_trashed_id_is_not_orphaned(capsys, healthy):
    # Its session was deleted, then a new conversation under that id stopped before its first
    # answer: its run is the only record of it (the trash's restore refuses while it exists).
    async def new_conversation():
        async with SQLiteSession(healthy, wal=True) as session, SQLiteCheckpointer(healthy, wal=True) as checkpointer:
            trashed = await session.trash_session("s1")
            for run_id in (f"r1-{r}" for r in range(6)):  # delete_session drops its completed runs' checkpoints
                await checkpointer.delete(run_id)
            await checkpointer.save(RunSnapshot("after-the-deletion", RunHead(
                agent="bot", session_id="s1", status="interrupted", started_at=trashed.deleted_at + 1),
                [UserMessage(text=SECRET)]))

    asyncio.run(new_conversation())
    status, text = run_doctor(capsys, healthy, "--fix")
    assert status == 0, text
    assert "belong to sessions in the trash" not in text and "orphaned checkpoints" not in text
    assert "1 stopped or failed run waits for a decision: after-the-deletion" in text

    async def runs():
        async with SQLiteCheckpointer(healthy, wal=True) as checkpointer:
            return {r.run_id for r in await checkpointer.list_runs()}

    assert "after-the-deletion" in asyncio.run(runs())


@pytest.mark.parametrize("damage", [
    "UPDATE lovia_segments SET meta = '{\"cut' WHERE run_id = 'r1-2'",
    "UPDATE lovia_segments SET meta = '[1]' WHERE run_id = 'r1-2'",
    "UPDATE lovia_segment_entries SET entries = '[{\"type\": \"user\"' WHERE segment_seq = "
    "(SELECT seq FROM lovia_segments WHERE run_id = 'r1-2')",
    # Valid JSON that is not lovia's entries (a new user's trial: "assistant" became "assXXtant", and
    # the doctor said all is well while opening the session said an entry is damaged).
    "UPDATE lovia_segment_entries SET entries = json_set(entries, '$[0].type', 'assXXtant') WHERE segment_seq = "
    "(SELECT seq FROM lovia_segments WHERE run_id = 'r1-2')",
    "UPDATE lovia_segment_entries SET entries = json_set(entries, '$[0]', json_array(1)) WHERE segment_seq = "
    "(SELECT seq FROM lovia_segments WHERE run_id = 'r1-2')",
    "UPDATE lovia_segment_entries SET entries = json_remove(entries, '$[0]') WHERE segment_seq = "
    "(SELECT seq FROM lovia_segments WHERE run_id = 'r1-2')",
    # A byte changed in the file: text no longer UTF-8 (opening the session said the file is corrupt).
    "UPDATE lovia_segment_entries SET entries = CAST(replace(CAST(entries AS BLOB), CAST('answer' AS BLOB), "
    "X'FF') AS TEXT) WHERE segment_seq = (SELECT seq FROM lovia_segments WHERE run_id = 'r1-2')",
    "UPDATE lovia_segments SET meta = CAST(replace(CAST(meta AS BLOB), CAST('note' AS BLOB), X'FF') AS TEXT) "
    "WHERE run_id = 'r1-2'",
    # An entry of a known type without a field it must have.
    "UPDATE lovia_segment_entries SET entries = json_remove(entries, '$[0].text') WHERE segment_seq = "
    "(SELECT seq FROM lovia_segments WHERE run_id = 'r1-2')",
])
def test_a_run_whose_json_is_damaged_is_a_problem(capsys, healthy, damage):
    # SQLite finds nothing wrong, the sessions list and search still work, and opening that session
    # says it is damaged and to restore the file: the doctor must name it, not say all is well.
    with sqlite3.connect(healthy) as conn:
        assert conn.execute(damage).rowcount == 1
    conn.close()
    before = digest(healthy)
    status, text = run_doctor(capsys, healthy)
    assert status == 1
    assert "1 stored run holds entries or run details that are not the JSON lovia wrote" in text
    assert "in session s1: lovia cannot open that session" in text
    assert digest(healthy) == before


def test_a_run_holding_an_entry_of_a_type_this_lovia_does_not_know_is_named_with_the_upgrade_advice(capsys, healthy):
    # The store refuses that session as written by a newer lovia, saying to upgrade: the doctor
    # said the file was damaged and to restore it from a backup, losing what the newer lovia wrote.
    with sqlite3.connect(healthy) as conn:
        assert conn.execute("UPDATE lovia_segment_entries SET entries = json_set(entries, '$[1].type', 'reasoning') "
                            "WHERE segment_seq = (SELECT seq FROM lovia_segments WHERE run_id = 'r1-2')").rowcount == 1
    conn.close()
    before = digest(healthy)

    async def open_it():
        async with SQLiteSession(healthy) as session:
            await session.load("s1")

    with pytest.raises(UnknownEntryTypeError, match="newer lovia"):
        asyncio.run(open_it())
    status, text = run_doctor(capsys, healthy)
    assert status == 1
    assert ("1 stored run holds entries of a type this lovia does not know (a newer lovia wrote them), in session "
            "s1: this lovia cannot open that session") in text
    assert "upgrade lovia to open that session" in text
    assert "not the JSON lovia wrote" not in text and "backup" not in text
    assert digest(healthy) == before


def test_a_run_that_lost_its_entries_is_a_problem(capsys, healthy):
    # SQLite's own check finds nothing wrong; lovia refuses to read or trash that session, and says
    # to run the doctor, which must then name it.
    with sqlite3.connect(healthy) as conn:
        conn.execute("DELETE FROM lovia_segment_entries WHERE segment_seq = "
                     "(SELECT seq FROM lovia_segments WHERE run_id = 'r1-2')")
    conn.close()
    before = digest(healthy)
    status, text = run_doctor(capsys, healthy)
    assert status == 1
    assert "1 stored run has lost its entries (the file is damaged), in session s1: lovia cannot open that session, nor move it to the trash" in text
    assert digest(healthy) == before


def test_a_mistake_elsewhere_in_the_config_file_does_not_stop_doctor_or_export(capsys, healthy, tmp_path,
                                                                               monkeypatch):
    # A [keys] typo refused the tools that check and save the data (only the file's db counts there).
    config = tmp_path / "config.toml"
    config.write_text(f'db = "{healthy}"\n[keys]\n"chat.send" = "ctl+y"\n')
    monkeypatch.setenv("LOVIA_CONFIG", str(config))
    assert lovia_main(["doctor", "--quick"]) == 0, capsys.readouterr()
    assert "quick_check found nothing wrong" in capsys.readouterr().out
    assert lovia_main(["export", "s0", "--format", "jsonl"]) == 0, capsys.readouterr()
    assert '"record":"session"' in capsys.readouterr().out.replace(" ", "")
    config.write_text("db = [1")  # no TOML at all: nothing says where the data is
    assert lovia_main(["doctor", "--quick"]) == 2
    assert "is not valid TOML" in capsys.readouterr().err


def test_a_completed_run_whose_session_is_gone_gets_advice_that_works(capsys, healthy):
    """The advice named the app's start-up and its discard, which refuses a completed run: for a run
    another program ran (its resume given no session), nothing in it could be done."""
    from lovia import Agent, CheckpointOptions, Runner
    from lovia.models import ScriptedModel

    async def orphan():
        async with SQLiteCheckpointer(healthy, wal=True) as checkpointer:
            await checkpointer.save(RunSnapshot("r-gone", RunHead(agent="bot", first_input=SECRET, session_id="s-gone",
                                                                  status="completed"),
                                                [UserMessage(text=SECRET), AssistantMessage(text=SECRET)]))

    asyncio.run(orphan())
    status, text = run_doctor(capsys, healthy)
    assert status == 0, text
    assert "1 completed run belongs to a session that does not exist: r-gone" in text
    assert "Runner.run(agent, [], session=..., session_id=SESSION" in text
    assert "await checkpointer.delete(RUN_ID)" in text

    async def follow_the_advice():  # the replay it names puts the run in its session
        async with SQLiteSession(healthy, wal=True) as session, SQLiteCheckpointer(healthy, wal=True) as checkpointer:
            await Runner.run(Agent(name="bot", model=ScriptedModel([])), [], session=session, session_id="s-gone",
                             checkpoint=CheckpointOptions(checkpointer, "r-gone"))
            assert [s.run_id for s in await session.segments("s-gone")] == ["r-gone"]

    asyncio.run(follow_the_advice())
    status, text = run_doctor(capsys, healthy)
    assert status == 0 and "session that does not exist" not in text, text
