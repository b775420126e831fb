"""RunHead.active_seconds: the time a run actually executed, kept across stops, kills and resumes."""

from __future__ import annotations

import asyncio
import json
import sqlite3

import pytest

from lovia import Agent, CheckpointOptions, RunHead, Runner, RunSnapshot, SQLiteCheckpointer, SQLiteSession, tool
from lovia.models import ScriptedModel, ScriptedTurn, call
from tests.runtime.helpers import consume_in_background
from tests.runtime.test_crash_recovery import crash_at, run_to_end


def test_a_head_round_trips_its_active_seconds():
    head = RunHead(agent="a", active_seconds=12.5)
    assert RunHead.from_dict(json.loads(json.dumps(head.to_dict()))).active_seconds == 12.5


def test_a_head_stored_before_active_seconds_existed_reads_zero():
    data = RunHead(agent="a").to_dict()
    del data["active_seconds"]
    assert RunHead.from_dict(data).active_seconds == 0.0


async def test_an_old_head_in_a_sqlite_file_loads_with_zero_active_seconds(tmp_path):
    db = tmp_path / "lovia.db"
    async with SQLiteCheckpointer(db) as checkpointer:
        await checkpointer.save(RunSnapshot("old-run", RunHead(agent="a", status="interrupted")))
    with sqlite3.connect(db) as conn:  # as an older lovia wrote it: no active_seconds in the head
        head = json.loads(conn.execute("SELECT head FROM lovia_runs WHERE run_id = 'old-run'").fetchone()[0])
        del head["active_seconds"]
        conn.execute("UPDATE lovia_runs SET head = ? WHERE run_id = 'old-run'", (json.dumps(head),))
    async with SQLiteCheckpointer(db) as checkpointer:
        snapshot = await checkpointer.load("old-run")
        assert snapshot is not None and snapshot.head.active_seconds == 0.0
        [summary] = await checkpointer.list_runs()
        assert summary.head.active_seconds == 0.0


async def test_a_stopped_and_resumed_run_sums_its_executions_into_the_segment(tmp_path):
    db = tmp_path / "lovia.db"
    started = asyncio.Event()
    release = asyncio.Event()

    @tool
    async def wait() -> str:
        """Waits until released (the first time: until stopped)."""
        started.set()
        await release.wait()
        return "waited"

    model = ScriptedModel([ScriptedTurn(tool_calls=[call("wait", call_id="c-1")]), "done"])
    agent = Agent(name="a", model=model, tools=[wait])
    async with SQLiteSession(db) as session, SQLiteCheckpointer(db) as checkpointer:
        stream = Runner.stream(agent, "go", session=session, session_id="s",
                               checkpoint=CheckpointOptions(checkpointer, "r1"))

        task = consume_in_background(stream)
        await started.wait()
        stream.stop()
        await task
        stopped = (await checkpointer.load("r1")).head
        assert stopped.status == "interrupted" and stopped.active_seconds > 0

        release.set()
        await Runner.run(agent, [], session=session, session_id="s",
                         checkpoint=CheckpointOptions(checkpointer, "r1", if_run_exists="resume_only"))
        completed = (await checkpointer.load("r1")).head
        assert completed.active_seconds > stopped.active_seconds  # the resume added its own time
        [segment] = await session.segments("s")
        # Counted to the append, as the wall time is; the checkpoint's to its final save.
        assert completed.active_seconds <= segment.meta["active_seconds"] < completed.active_seconds + 1
        assert set(segment.meta["timing"]) == {"started_at", "finished_at"}  # the spec's timing, unchanged


async def test_a_run_without_a_checkpoint_still_records_its_active_time(tmp_path):
    async with SQLiteSession(tmp_path / "lovia.db") as session:
        await Runner.run(Agent(name="a", model=ScriptedModel(["hi"])), "hello", session=session, session_id="s")
        [segment] = await session.segments("s")
        assert segment.meta["active_seconds"] > 0


@pytest.mark.parametrize("point", ["inside-tool"])
def test_a_killed_run_keeps_the_active_time_of_its_last_save(tmp_path, point):
    db, log = tmp_path / "lovia.db", tmp_path / "tools.log"
    crash_at(db, log, point)

    async def head() -> RunHead:
        async with SQLiteCheckpointer(db, wal=True) as checkpointer:
            snapshot = await checkpointer.load("crash-run")
            assert snapshot is not None
            return snapshot.head

    killed = asyncio.run(head())
    assert killed.status == "running" and killed.active_seconds > 0
    run_to_end(db, log)
    finished = asyncio.run(head())
    assert finished.active_seconds > killed.active_seconds

    async def segment_meta() -> dict:
        async with SQLiteSession(db, wal=True) as session:
            return next(s.meta for s in await session.segments("u1") if s.run_id == "crash-run")

    meta = asyncio.run(segment_meta())
    assert finished.active_seconds <= meta["active_seconds"] < finished.active_seconds + 1  # to the append
    # The kill and the second process's start lay between the executions: counted in the wall
    # time from the first start, not in the active time.
    timing = meta["timing"]
    assert meta["active_seconds"] < timing["finished_at"] - timing["started_at"]


CHILD = """
import asyncio, sys
import lovia.runtime.runner as runner
from lovia import Agent, CheckpointOptions, Runner, SQLiteCheckpointer, tool
from lovia.models import ScriptedModel, ScriptedTurn, call

runner.PROGRESS_SAVE_SECONDS = 0.5  # the mechanism under test, at a pace a test can wait for

@tool
async def long_step() -> str:
    \"\"\"A tool call that outlasts the test.\"\"\"
    await asyncio.sleep(3600)
    return "never"

async def main():
    agent = Agent(name="a", model=ScriptedModel([ScriptedTurn(tool_calls=[call("long_step", {}, call_id="c1")])]),
                  tools=[long_step])
    async with SQLiteCheckpointer(sys.argv[1], wal=True) as checkpointer:
        await Runner.run(agent, "go", checkpoint=CheckpointOptions(checkpointer, "long-run"))

asyncio.run(main())
"""


def test_a_run_killed_during_a_long_tool_call_keeps_its_time_up_to_shortly_before(tmp_path):
    """Saves come during a long tool call too, so a SIGKILL loses at most one interval of active time."""
    import os
    import signal
    import subprocess
    import sys
    import time

    db = tmp_path / "lovia.db"
    child = subprocess.Popen([sys.executable, "-c", CHILD, str(db)])
    try:
        def stored_active_seconds() -> float:
            try:
                with sqlite3.connect(db) as raw:
                    row = raw.execute("SELECT head FROM lovia_runs WHERE run_id = 'long-run'").fetchone()
            except sqlite3.Error:
                return 0.0
            return json.loads(row[0]).get("active_seconds", 0.0) if row else 0.0

        deadline = time.monotonic() + 15  # a hang guard (the lease renewal alone saves after 20 s)
        while stored_active_seconds() < 2.0:
            assert time.monotonic() < deadline, "no save came during the tool call"
            time.sleep(0.1)
        os.kill(child.pid, signal.SIGKILL)
    finally:
        child.kill()
        child.wait()

    async def head() -> RunHead:
        async with SQLiteCheckpointer(db, wal=True) as checkpointer:
            snapshot = await checkpointer.load("long-run")
            assert snapshot is not None
            return snapshot.head

    killed = asyncio.run(head())
    assert killed.status == "running" and killed.active_seconds >= 2.0


class SlowToLookUp(SQLiteCheckpointer):
    """A real SQLite checkpointer whose lookup of a stored run is slow (a busy or remote disk)."""

    async def load(self, run_id):
        await asyncio.sleep(0.3)
        return await super().load(run_id)


async def test_a_new_run_is_never_active_longer_than_its_wall_time(tmp_path):
    db = tmp_path / "lovia.db"
    async with SQLiteSession(db) as session, SlowToLookUp(db) as checkpointer:
        await Runner.run(Agent(name="a", model=ScriptedModel(["hi"])), "hello", session=session, session_id="s",
                         checkpoint=CheckpointOptions(checkpointer, "r1"))
        [segment] = await session.segments("s")
        assert 0 < segment.meta["active_seconds"] <= segment.duration


class SlowToFinalize(SQLiteCheckpointer):
    """A real SQLite checkpointer whose save of a completed run is slow (a durable commit on a busy disk)."""

    async def save(self, snapshot):
        if snapshot.head.status == "completed":
            await asyncio.sleep(0.3)
        return await super().save(snapshot)


async def test_a_run_that_went_straight_through_was_active_for_all_of_its_wall_time(tmp_path):
    # The final save's time was in the wall time (to the append, as the spec times it) and not in
    # the active time: the header read "5.3s · ran 5.2s", as if the run had been stopped.
    db = tmp_path / "lovia.db"
    async with SQLiteSession(db) as session, SlowToFinalize(db) as checkpointer:
        await Runner.run(Agent(name="a", model=ScriptedModel(["hi"])), "hello", session=session, session_id="s",
                         checkpoint=CheckpointOptions(checkpointer, "r1"))
        [segment] = await session.segments("s")
        assert segment.duration - 0.05 < segment.meta["active_seconds"] <= segment.duration
