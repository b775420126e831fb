"""Cancelling a store operation at any await leaves it all-or-nothing and the store usable."""

from __future__ import annotations

import asyncio
import sqlite3
import threading
import time

import pytest

from lovia import AssistantMessage, RunHead, RunSnapshot, SQLiteSession, ToolCall, ToolResult, UserMessage

# Enough loop steps to cancel before, during and after every await of an operation.
CANCEL_POINTS = list(range(15)) + [20, 40]


async def cancel_after(make_operation, steps: int) -> bool:
    """Start the operation, let the loop run ``steps`` times, cancel; True if it was cancelled."""
    task = asyncio.ensure_future(make_operation())
    for _ in range(steps):
        await asyncio.sleep(0)
    task.cancel()
    try:
        await task
    except asyncio.CancelledError:
        return True
    return False


def run_entries(tag: str, size: int = 5) -> list:
    entries = [UserMessage(text=f"{tag}-q")]
    for i in range(size):
        entries += [ToolCall(call_id=f"{tag}-c{i}", name="t"), ToolResult(call_id=f"{tag}-c{i}", output="o" * 900)]
    return entries + [AssistantMessage(text=f"{tag}-a")]


async def assert_usable(session) -> None:
    marker = f"probe-{time.monotonic_ns()}"
    await session.append("probe", [UserMessage(text=marker)])
    assert (await session.load("probe"))[-1].text == marker


@pytest.mark.parametrize("steps", CANCEL_POINTS)
async def test_cancelled_append_is_all_or_nothing(session, steps):
    await session.append("u1", run_entries("base"), run_id="base")
    entries = run_entries("new")
    await cancel_after(lambda: session.append("u1", entries, run_id="new"), steps)
    segments = await session.segments("u1")
    assert [s.run_id for s in segments] in (["base"], ["base", "new"])
    assert [len(s.entries) for s in segments] in ([len(entries)], [len(entries), len(entries)])
    assert await session.load("u1") == [e for s in segments for e in s.entries]
    await assert_usable(session)
    await session.append("u1", entries, run_id="new")  # finishing the job works either way
    assert len(await session.load("u1")) == 2 * len(entries)


@pytest.mark.parametrize("steps", CANCEL_POINTS)
async def test_cancelled_rewind_is_all_or_nothing(session, steps):
    for tag in ("a", "b", "c"):
        await session.append("u1", run_entries(tag), run_id=tag)
    before = await session.load("u1")
    await cancel_after(lambda: session.rewind("u1", keep_entries=14), steps)
    after = await session.load("u1")
    assert after == before or len(after) == 13  # the cut at 14 leaves a dangling call, dropped
    await assert_usable(session)


@pytest.mark.parametrize("steps", CANCEL_POINTS)
async def test_cancelled_trim_is_all_or_nothing(session, steps):
    for tag in ("a", "b", "c"):
        await session.append("u1", run_entries(tag), run_id=tag)
    before = await session.load("u1")
    await cancel_after(lambda: session.trim_tool_results("u1", keep_chars=50, keep_runs=1), steps)
    after = await session.load("u1")
    trimmed = [e for e in after if isinstance(e, ToolResult) and e.trimmed_chars]
    assert after == before or len(trimmed) == 10
    await assert_usable(session)


@pytest.mark.parametrize("steps", CANCEL_POINTS)
async def test_cancelled_checkpoint_save_is_all_or_nothing(stores, steps):
    checkpointer = stores.checkpointer()
    snapshot = RunSnapshot("r1", RunHead(agent="bot", turn=1), run_entries("a"))
    await checkpointer.save(snapshot)
    snapshot.entries.extend(run_entries("b"))
    snapshot.head.turn = 2
    await cancel_after(lambda: checkpointer.save(snapshot), steps)
    loaded = await checkpointer.load("r1")
    assert (len(loaded.entries), loaded.head.turn) in ((12, 1), (24, 2))
    await checkpointer.save(snapshot)
    assert len((await checkpointer.load("r1")).entries) == 24


async def test_a_caller_cancelled_while_its_commit_is_pending_learns_the_real_outcome(tmp_path):
    """The cancellation surfaces only once the transaction really ended (here: committed)."""
    path = tmp_path / "chat.db"
    session = SQLiteSession(path)
    await session.append("u1", [UserMessage(text="first")], run_id="r1")

    blocker = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    blocker.execute("BEGIN IMMEDIATE")  # holds the write lock: our append waits in SQLite
    release = threading.Timer(0.4, lambda: blocker.execute("COMMIT"))
    release.start()
    try:
        task = asyncio.ensure_future(session.append("u1", [UserMessage(text="second")], run_id="r2"))
        await asyncio.sleep(0.1)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        # By the time the caller sees CancelledError, the outcome is settled and visible.
        with sqlite3.connect(path) as reader:
            texts = [row[0] for row in reader.execute(
                "SELECT json_extract(entries, '$[0].text') FROM lovia_segment_entries ORDER BY segment_seq")]
        assert texts == ["first", "second"]
    finally:
        release.join()
        blocker.close()
    await asyncio.wait_for(assert_usable(session), timeout=5)  # the lock was released
    await session.close()


async def test_a_caller_cancelled_while_waiting_for_the_store_lock_changes_nothing(tmp_path):
    session = SQLiteSession(tmp_path / "chat.db")
    await session.append("u1", [UserMessage(text="first")], run_id="r1")
    slow = asyncio.ensure_future(session.append("u1", run_entries("big", 200), run_id="big"))
    waiting = asyncio.ensure_future(session.append("u1", [UserMessage(text="never")], run_id="never"))
    await asyncio.sleep(0)
    waiting.cancel()
    await slow
    with pytest.raises(asyncio.CancelledError):
        await waiting
    assert [s.run_id for s in await session.segments("u1")] == ["r1", "big"]
    await assert_usable(session)
    await session.close()
