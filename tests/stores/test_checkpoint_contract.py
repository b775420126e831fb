"""The Checkpointer contract, as every bundled store must honour it."""

from __future__ import annotations

import subprocess
import sys

import pytest

from lovia import (
    AssistantMessage,
    Checkpointer,
    ListableCheckpointer,
    RunHead,
    RunOwner,
    RunSnapshot,
    ToolCall,
    Usage,
    UserError,
    UserMessage,
)


def head(**overrides) -> RunHead:
    values = dict(agent="bot", session_id="u1", first_input="hello", owner=RunOwner.current())
    values.update(overrides)
    return RunHead(**values)


async def test_store_satisfies_the_protocols(checkpointer):
    assert isinstance(checkpointer, Checkpointer)
    assert isinstance(checkpointer, ListableCheckpointer)


async def test_unknown_run_loads_as_none_and_deletes_as_false(checkpointer):
    assert await checkpointer.load("nope") is None
    assert await checkpointer.delete("nope") is False


async def test_save_and_load_round_trip_entries_and_every_head_field(checkpointer):
    full = RunHead(
        agent="expert",
        status="interrupted",
        turn=3,
        usage=Usage(requests=3, input_tokens=120, output_tokens=45),
        context_state={"summary": "so far", "archived": ["c1"]},
        pending_handoff="billing",
        started_at=1000.0,
        updated_at=1005.5,
        session_id="u1",
        first_input="Migrate the report format.",
        owner=RunOwner(host="elsewhere", pid=42, started=7),
        entry_agent="triage",
        error=None,
    )
    entries = [UserMessage(text="go"), ToolCall(call_id="c1", name="t", arguments="{}")]
    await checkpointer.save(RunSnapshot("r1", full, entries))
    loaded = await checkpointer.load("r1")
    assert loaded == RunSnapshot("r1", full, entries)


async def test_save_is_incremental_and_the_head_is_replaced(checkpointer):
    snapshot = RunSnapshot("r1", head(), [UserMessage(text="go")])
    await checkpointer.save(snapshot)
    snapshot.entries.append(AssistantMessage(text="step 1"))
    snapshot.head.turn = 1
    await checkpointer.save(snapshot)
    snapshot.entries.append(AssistantMessage(text="step 2"))
    snapshot.head.turn = 2
    snapshot.head.status = "completed"
    await checkpointer.save(snapshot)
    await checkpointer.save(snapshot)  # saving again unchanged adds nothing
    loaded = await checkpointer.load("r1")
    assert [e.text for e in loaded.entries] == ["go", "step 1", "step 2"]
    assert (loaded.head.turn, loaded.head.status) == (2, "completed")


async def test_a_snapshot_with_fewer_entries_than_stored_is_refused(checkpointer):
    await checkpointer.save(RunSnapshot("r1", head(), [UserMessage(text="a"), UserMessage(text="b")]))
    with pytest.raises(UserError, match="append-only"):
        await checkpointer.save(RunSnapshot("r1", head(turn=9), [UserMessage(text="a")]))
    loaded = await checkpointer.load("r1")
    assert len(loaded.entries) == 2 and loaded.head.turn == 0


async def test_loaded_snapshot_is_a_private_copy(checkpointer):
    snapshot = RunSnapshot("r1", head(), [UserMessage(text="a")])
    await checkpointer.save(snapshot)
    loaded = await checkpointer.load("r1")
    loaded.entries.append(UserMessage(text="not saved"))
    loaded.head.turn = 99
    again = await checkpointer.load("r1")
    assert len(again.entries) == 1 and again.head.turn == 0


async def test_delete_forgets_the_run_and_a_new_one_can_start(checkpointer):
    await checkpointer.save(RunSnapshot("r1", head(), [UserMessage(text="a"), UserMessage(text="b")]))
    assert await checkpointer.delete("r1") is True
    assert await checkpointer.load("r1") is None
    await checkpointer.save(RunSnapshot("r1", head(), [UserMessage(text="fresh")]))
    assert [e.text for e in (await checkpointer.load("r1")).entries] == ["fresh"]


async def test_list_runs_by_status_newest_first(checkpointer):
    for run_id, status, updated in [("a", "running", 1.0), ("b", "interrupted", 3.0),
                                    ("c", "completed", 2.0), ("d", "interrupted", 4.0), ("e", "failed", 5.0)]:
        await checkpointer.save(RunSnapshot(run_id, head(status=status, updated_at=updated), [UserMessage(text=run_id)]))
    assert [r.run_id for r in await checkpointer.list_runs()] == ["e", "d", "b", "c", "a"]
    resumable = await checkpointer.list_runs(statuses=["interrupted", "running"])
    assert [(r.run_id, r.head.status, r.entry_count) for r in resumable] == [
        ("d", "interrupted", 1), ("b", "interrupted", 1), ("a", "running", 1)]
    assert [r.run_id for r in await checkpointer.list_runs(limit=2)] == ["e", "d"]
    assert await checkpointer.list_runs(statuses=[]) == []
    assert resumable[0].head.first_input == "hello" and resumable[0].head.session_id == "u1"


async def test_a_run_left_running_by_a_dead_process_shows_as_crashed(checkpointer):
    here = RunOwner.current()
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    dead = RunOwner(host=here.host, pid=child.pid)
    child.kill()
    child.wait()
    await checkpointer.save(RunSnapshot("mine", head(owner=here), []))
    await checkpointer.save(RunSnapshot("orphan", head(owner=dead), []))
    await checkpointer.save(RunSnapshot("remote", head(owner=RunOwner(host="other-host", pid=1)), []))
    await checkpointer.save(RunSnapshot("stopped", head(owner=dead, status="interrupted"), []))
    runs = {r.run_id: r.head for r in await checkpointer.list_runs()}
    assert runs["orphan"].crashed is True
    assert runs["mine"].crashed is False
    assert runs["remote"].crashed is False  # cannot be known from here: not offered as crashed
    assert runs["stopped"].crashed is False  # interrupted, not crashed


def test_a_reused_pid_is_not_mistaken_for_the_owner():
    me = RunOwner.current()
    if me.started is None:
        pytest.skip("process start times are only readable on Linux")
    assert me.is_alive() is True
    assert RunOwner(host=me.host, pid=me.pid, started=me.started + 1).is_alive() is False


def test_head_from_a_newer_lovia_loads_leniently():
    data = head(status="completed").to_dict()
    data["a_field_from_the_future"] = {"x": 1}
    assert RunHead.from_dict(data).status == "completed"
    data["status"] = "paused-by-future-lovia"
    assert RunHead.from_dict(data).status == "interrupted"


def test_a_head_with_an_unknown_status_is_refused_when_built():
    with pytest.raises(ValueError, match="status"):
        RunHead(agent="a", status="sleeping")  # type: ignore[arg-type]
