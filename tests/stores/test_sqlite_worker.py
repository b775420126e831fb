"""The store's worker thread: a cancelled caller waits for its transaction's real end, however often cancelled."""

from __future__ import annotations

import asyncio
import sqlite3
import threading

import pytest

from lovia import RunHead, RunSnapshot, SQLiteCheckpointer, UserMessage


async def test_a_caller_cancelled_again_and_again_still_waits_for_its_commit(tmp_path):
    path = tmp_path / "runs.db"
    checkpointer = SQLiteCheckpointer(path)
    await checkpointer.save(RunSnapshot("r1", RunHead(agent="bot"), [UserMessage(text="first")]))

    blocker = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    blocker.execute("BEGIN IMMEDIATE")  # holds the write lock: the save waits in SQLite's busy handler
    committed = threading.Event()

    def release() -> None:
        blocker.execute("COMMIT")
        committed.set()

    timer = threading.Timer(0.5, release)
    timer.start()
    try:
        snapshot = RunSnapshot("r1", RunHead(agent="bot", turn=1), [UserMessage(text="first"), UserMessage(text="second")])
        task = asyncio.ensure_future(checkpointer.save(snapshot))
        for _ in range(3):  # each cancellation lands while the transaction is still waiting for the lock
            await asyncio.sleep(0.05)
            assert not committed.is_set()
            task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        # The cancellation surfaced only after the transaction ended: here, committed.
        assert committed.is_set()
        with sqlite3.connect(path) as reader:
            (count,) = reader.execute("SELECT entry_count FROM lovia_runs WHERE run_id = 'r1'").fetchone()
        assert count == 2
    finally:
        timer.join()
        blocker.close()
    loaded = await asyncio.wait_for(checkpointer.load("r1"), timeout=5)  # the store is usable
    assert loaded is not None and loaded.head.turn == 1
    await checkpointer.close()


async def test_a_result_arriving_after_the_caller_was_cancelled_is_dropped_and_the_store_goes_on(tmp_path):
    checkpointer = SQLiteCheckpointer(tmp_path / "runs.db")
    await checkpointer.open()
    for steps in range(6):  # cancel at every point of a save's round trip to the worker
        task = asyncio.ensure_future(
            checkpointer.save(RunSnapshot(f"r{steps}", RunHead(agent="bot"), [UserMessage(text="x")])))
        for _ in range(steps):
            await asyncio.sleep(0)
        task.cancel()
        try:
            await task
        except asyncio.CancelledError:
            pass
        stored = await checkpointer.load(f"r{steps}")
        assert stored is None or [e.text for e in stored.entries] == ["x"]
    await checkpointer.close()
