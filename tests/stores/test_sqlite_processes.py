"""SQLite stores under real processes: concurrent writers, a full disk, exiting unclosed."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import textwrap
import time

import pytest

from lovia import SQLiteCheckpointer, SQLiteSession, UserMessage

WRITER = textwrap.dedent(
    """
    import asyncio, os, sys, time
    from lovia import AssistantMessage, RunHead, RunSnapshot, SQLiteCheckpointer, SQLiteSession, UserMessage

    path, worker, start_at = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])

    async def main():
        while time.time() < start_at:  # every process opens the fresh file at the same moment
            await asyncio.sleep(0.001)
        session = SQLiteSession(path, wal=True)
        checkpointer = SQLiteCheckpointer(path, wal=True)
        for i in range(40):
            entries = [UserMessage(text=f"w{worker} #{i}"), AssistantMessage(text="ok")]
            await session.append("shared", entries, run_id=f"w{worker}-{i}")
            await session.append("shared", [UserMessage(text=f"same #{i}")], run_id=f"same-{i}")
            await session.append(f"own-{worker}", entries)
            await checkpointer.save(RunSnapshot(f"w{worker}-{i}", RunHead(agent="bot"), entries))
        await session.close()
        await checkpointer.close()

    asyncio.run(main())
    """
)


def test_four_processes_append_to_one_fresh_wal_file_at_once(tmp_path):
    path = tmp_path / "shared.db"
    start_at = time.time() + 1.5
    children = [
        subprocess.Popen([sys.executable, "-c", WRITER, str(path), str(worker), str(start_at)],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for worker in range(4)
    ]
    outcomes = [child.communicate(timeout=120) for child in children]
    for child, (_, err) in zip(children, outcomes, strict=True):
        assert child.returncode == 0, err
        assert "locked" not in err


    async def check():
        async with SQLiteSession(path, wal=True) as session, SQLiteCheckpointer(path, wal=True) as checkpointer:
            segments = await session.segments("shared")
            run_ids = [s.run_id for s in segments]
            assert len(run_ids) == len(set(run_ids)), "a run id was stored twice"
            assert set(run_ids) == {f"w{w}-{i}" for w in range(4) for i in range(40)} | {f"same-{i}" for i in range(40)}
            for worker in range(4):
                own = await session.load(f"own-{worker}")
                assert [e.text for e in own[::2]] == [f"w{worker} #{i}" for i in range(40)]
            runs = await checkpointer.list_runs()
            assert len(runs) == 160 and all(r.entry_count == 2 for r in runs)

    asyncio.run(check())


FILLER = textwrap.dedent(
    """
    import asyncio, os, resource, signal, sys
    from lovia import SQLiteSession, StoreError, UserMessage

    path = sys.argv[1]

    async def main():
        session = SQLiteSession(path)
        await session.open()
        # Writes past this size fail with EFBIG, as on a full disk, instead of killing us.
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        limit = os.path.getsize(path) + 32 * 1024
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
        try:
            await session.append("u1", [UserMessage(text="y" * 4000) for _ in range(200)], run_id="huge")
        except StoreError as exc:
            print("STORE_ERROR", exc)
        else:
            print("NO_ERROR")
        # The store is still usable for what fits.
        await session.append("u1", [UserMessage(text="small after the failure")], run_id="small")
        await session.close()

    asyncio.run(main())
    """
)


@pytest.mark.skipif(sys.platform == "win32", reason="file-size limits are POSIX")
def test_a_full_disk_raises_a_clear_error_and_keeps_earlier_history(tmp_path):

    path = tmp_path / "chat.db"

    async def seed():
        async with SQLiteSession(path) as session:
            for i in range(20):
                await session.append("u1", [UserMessage(text=f"kept {i}")], run_id=f"r{i}")

    asyncio.run(seed())
    child = subprocess.run([sys.executable, "-c", FILLER, str(path)], capture_output=True, text=True, timeout=60)
    assert child.returncode == 0, child.stderr
    assert "STORE_ERROR" in child.stdout, child.stdout
    assert "disk is full or a file-size limit" in child.stdout
    assert "earlier data is intact" in child.stdout

    async def check():
        async with SQLiteSession(path) as session:
            texts = [e.text for e in await session.load("u1")]
            assert texts == [f"kept {i}" for i in range(20)] + ["small after the failure"]

    asyncio.run(check())


LEAVER = textwrap.dedent(
    """
    import asyncio, sys
    from lovia import SQLiteCheckpointer, SQLiteSession, UserMessage

    async def main():
        session = SQLiteSession(sys.argv[1], wal=True)
        checkpointer = SQLiteCheckpointer(sys.argv[1])
        await session.append("u1", [UserMessage(text="left open")])
        await checkpointer.load("nothing")
        print("done")  # and return without closing either store

    asyncio.run(main())
    """
)


def test_an_unclosed_store_does_not_hang_the_interpreter_at_exit(tmp_path):
    path = tmp_path / "chat.db"
    child = subprocess.run([sys.executable, "-c", LEAVER, str(path)], capture_output=True, text=True, timeout=30)
    assert child.returncode == 0, child.stderr
    assert child.stdout.strip() == "done"


    async def check():
        async with SQLiteSession(path, wal=True) as session:
            assert [e.text for e in await session.load("u1")] == ["left open"]

    asyncio.run(check())
