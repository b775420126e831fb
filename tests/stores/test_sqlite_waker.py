"""How the stores' worker threads hand results back to event loops, whatever else uses the loop.

These run their own event loops (``asyncio.run`` in plain tests), as an app or script that uses a
store across several loops does.
"""

from __future__ import annotations

import asyncio
import gc
import os
import socket
import threading
from pathlib import Path

import pytest

from lovia import RunHead, RunSnapshot, SQLiteCheckpointer, SQLiteSession, UserMessage


def open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="counts descriptors in /proc")
def test_a_store_used_in_many_loops_leaves_no_descriptors_behind(tmp_path):
    checkpointer = SQLiteCheckpointer(tmp_path / "runs.db", wal=True)

    async def save(turn: int) -> None:
        await checkpointer.save(RunSnapshot("r1", RunHead(agent="bot", turn=turn), [UserMessage(text="go")]))

    asyncio.run(save(0))  # opens the file: its descriptors stay while the store is open
    gc.collect()
    before = open_fds()
    for turn in range(1, 30):
        asyncio.run(save(turn))
    gc.collect()
    assert open_fds() <= before  # nothing is left behind per loop

    async def check_and_close() -> int:
        loaded = await checkpointer.load("r1")
        await checkpointer.close()
        assert loaded is not None
        return loaded.head.turn

    assert asyncio.run(check_and_close()) == 29


def test_stores_used_from_loops_in_several_threads_at_once_each_get_their_results(tmp_path):
    path = tmp_path / "shared.db"
    errors: list[BaseException] = []

    async def work(index: int) -> None:
        async with SQLiteCheckpointer(path, wal=True) as checkpointer, SQLiteSession(path, wal=True) as session:
            entries: list[UserMessage] = []
            for turn in range(20):
                entries.append(UserMessage(text=f"{index}-{turn}"))
                await checkpointer.save(RunSnapshot(f"r{index}", RunHead(agent="bot", turn=turn), entries))
                loaded = await checkpointer.load(f"r{index}")
                assert loaded is not None and loaded.head.turn == turn and loaded.entries == entries
            await session.append(f"s{index}", [UserMessage(text=str(index))])
            assert [e.text for e in await session.load(f"s{index}")] == [str(index)]

    def run(index: int) -> None:
        try:
            asyncio.run(work(index))
        except BaseException as exc:  # reported below, in the test's thread
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert not errors, errors
    assert not any(thread.is_alive() for thread in threads)


async def test_many_calls_in_flight_at_once_all_come_back(tmp_path):
    """Results finished while the loop is busy all come back."""
    async with SQLiteSession(tmp_path / "s.db") as session:
        await asyncio.gather(*(session.append(f"s{i % 7}", [UserMessage(text=str(i))]) for i in range(300)))
        counts = [len(await session.load(f"s{i}")) for i in range(7)]
    assert sum(counts) == 300


def test_a_descriptor_closed_under_the_loop_by_other_code_does_not_strand_a_store_call(tmp_path):
    """Other code closes a descriptor its loop still watches (a library closing a socket under its
    transport): the loop's map keeps the number, the kernel forgets it. A pipe lovia opened next got
    that number, and its wake-ups never reached the loop: the call never came back, and no timeout
    ended it (a cancelled call waits for its end). CI hung once so. Run in a thread, so a hang fails
    the test instead of stopping the suite."""
    outcome: list[object] = []

    async def use() -> None:
        loop = asyncio.get_running_loop()
        left, right = socket.socketpair()
        loop.add_reader(left.fileno(), lambda: None)
        os.close(left.detach())  # the lowest free number again, still in the loop's map
        right.close()
        async with SQLiteSession(tmp_path / "s.db") as session:
            await session.append("s1", [UserMessage(text="through")])
            outcome.append([e.text for e in await session.load("s1")])

    def run() -> None:
        try:
            asyncio.run(use())
        except BaseException as exc:  # handed to the test
            outcome.append(exc)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(timeout=30)  # a hang guard; the calls take milliseconds
    assert not thread.is_alive(), "a store call never came back"
    assert outcome == [["through"]]


async def test_a_call_raising_stop_iteration_fails_alone_and_the_calls_handed_back_with_it_still_come_back():
    """A future cannot hold StopIteration: it comes back as a RuntimeError, and the outcomes settled in
    the same wake-up after it are not stranded."""
    from lovia.stores._sqlite_db import _Worker

    worker = _Worker("test-worker")

    def stop() -> int:
        raise StopIteration

    calls = [worker.run(stop), *(worker.run(lambda i=i: i) for i in range(20))]
    outcomes = await asyncio.wait_for(asyncio.gather(*calls, return_exceptions=True), timeout=10)
    assert isinstance(outcomes[0], RuntimeError) and isinstance(outcomes[0].__cause__, StopIteration)
    assert outcomes[1:] == list(range(20))
    worker.stop()
