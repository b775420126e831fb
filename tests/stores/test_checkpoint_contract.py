"""The Checkpointer contract, as every bundled store must honour it."""

from __future__ import annotations

import dataclasses
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from lovia import (
    AssistantMessage,
    Checkpointer,
    ClaimingCheckpointer,
    DatabaseFileError,
    InMemoryCheckpointer,
    ListableCheckpointer,
    RunClaimedError,
    RunHead,
    RunOwner,
    RunSnapshot,
    SessionExclusiveCheckpointer,
    ToolCall,
    Usage,
    UserError,
    UserMessage,
)
from lovia.checkpoint import live_claim

ELSEWHERE = RunOwner(host="other-host", pid=4242, started=7)


def head(**overrides) -> RunHead:
    values = {"agent": "bot", "session_id": "u1", "first_input": "hello", "owner": RunOwner.current()}
    values.update(overrides)
    return RunHead(**values)


async def test_store_satisfies_the_protocols(checkpointer):
    assert isinstance(checkpointer, Checkpointer)
    assert isinstance(checkpointer, ListableCheckpointer)
    assert isinstance(checkpointer, ClaimingCheckpointer)


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
        handoff_call_id="call-7",
        answered=True,
        claim="token-1",
        lease_until=1060.0,
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
        snapshot = RunSnapshot(run_id, head(status=status, updated_at=updated), [UserMessage(text=run_id)])
        await checkpointer.save(snapshot)
    assert [r.run_id for r in await checkpointer.list_runs()] == ["e", "d", "b", "c", "a"]
    resumable = await checkpointer.list_runs(statuses=["interrupted", "running"])
    assert [(r.run_id, r.head.status, r.entry_count) for r in resumable] == [
        ("d", "interrupted", 1), ("b", "interrupted", 1), ("a", "running", 1)]
    assert [r.run_id for r in await checkpointer.list_runs(limit=2)] == ["e", "d"]
    assert await checkpointer.list_runs(statuses=[]) == []
    assert resumable[0].head.first_input == "hello" and resumable[0].head.session_id == "u1"


@pytest.mark.parametrize("damage", ["'{\"cut'", "'[1, 2]'"])
async def test_a_run_whose_head_is_damaged_is_left_out_of_the_list_and_refused_when_loaded(stores, damage):
    # One damaged checkpoint made every listing fail, and with it opening any session in the app.
    if not stores.persistent:
        pytest.skip("an in-memory store holds no stored text to damage")
    checkpointer = stores.checkpointer()
    for run_id, updated in [("a", 1.0), ("b", 2.0), ("c", 3.0)]:
        await checkpointer.save(RunSnapshot(run_id, head(status="interrupted", updated_at=updated),
                                            [UserMessage(text=run_id)]))
    assert stores.query(f"UPDATE lovia_runs SET head = {damage} WHERE run_id = 'b' RETURNING run_id") == [("b",)]
    assert [r.run_id for r in await checkpointer.list_runs()] == ["c", "a"]
    assert [r.run_id for r in await checkpointer.list_runs(statuses=["interrupted"])] == ["c", "a"]
    with pytest.raises(DatabaseFileError):
        await checkpointer.load("b")


async def test_a_run_left_running_by_a_dead_process_shows_as_crashed(checkpointer):
    here = RunOwner.current()
    dead = a_dead_owner_on_this_host()
    later, earlier = time.time() + 3600, time.time() - 1
    for run_id, stored in [
        ("mine", head(owner=here, claim="t-mine", lease_until=later)),
        ("mine-gone", head(owner=here, claim="t-gone", lease_until=later)),  # no execution here has that token
        ("orphan", head(owner=dead)),
        ("orphan-leased", head(owner=dead, claim="t", lease_until=later)),
        ("remote", head(owner=ELSEWHERE, claim="t", lease_until=later)),
        ("remote-lapsed", head(owner=ELSEWHERE, claim="t", lease_until=earlier)),
        ("remote-unleased", head(owner=ELSEWHERE)),
        ("stopped", head(owner=dead, status="interrupted")),
    ]:
        await checkpointer.save(RunSnapshot(run_id, stored, []))
    with live_claim("t-mine", checkpointer, "mine"):  # as the runner registers an execution it runs
        runs = {r.run_id: r.head for r in await checkpointer.list_runs()}
        assert runs["mine"].crashed is False and runs["mine"].holder() == "here"
    assert runs["mine"].crashed is True  # ended without a word (its mark was lost): nothing holds it
    assert runs["mine-gone"].crashed is True
    assert runs["orphan"].crashed is True
    assert runs["orphan-leased"].crashed is True  # a dead owner on this host lets go before its lease ends
    assert runs["remote"].crashed is False and runs["remote"].holder() == "elsewhere"  # lease not lapsed
    assert runs["remote-lapsed"].crashed is True
    assert runs["remote-unleased"].crashed is True  # nothing shows it alive (an older lovia's head)
    assert runs["stopped"].crashed is False  # interrupted, not crashed


def test_a_reused_pid_is_not_mistaken_for_the_owner():
    me = RunOwner.current()
    if me.started is None:
        pytest.skip("process start times are only readable on Linux")
    assert me.is_alive() is True
    assert dataclasses.replace(me, started=me.started + 1).is_alive() is False


def test_a_killed_owner_not_yet_reaped_is_dead():
    """A SIGKILLed owner whose parent has not reaped it is a zombie: kill(pid, 0) still succeeds."""
    if RunOwner.current().started is None:
        pytest.skip("process states are only readable on Linux")
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    stat = Path(f"/proc/{child.pid}/stat")
    try:
        owner = dataclasses.replace(RunOwner.current(), pid=child.pid,
                                    started=int(stat.read_bytes().rsplit(b")", 1)[1].split()[19]))
        assert owner.is_alive() is True
        os.kill(child.pid, signal.SIGKILL)
        deadline = time.monotonic() + 30  # a bound on waiting for the kernel, not a measurement
        while b") Z" not in stat.read_bytes() and time.monotonic() < deadline:
            time.sleep(0.01)
        assert owner.is_alive() is False  # not reaped yet: still a zombie
        head = RunHead(agent="a", status="running", owner=owner, claim="theirs", lease_until=time.time() + 3600)
        assert head.crashed and head.holder() is None  # taken over at once, lease or not
    finally:
        child.kill()
        child.wait()


def test_head_from_a_newer_lovia_loads_leniently():
    data = head(status="completed").to_dict()
    data["a_field_from_the_future"] = {"x": 1}
    assert RunHead.from_dict(data).status == "completed"
    data["status"] = "paused-by-future-lovia"
    assert RunHead.from_dict(data).status == "interrupted"


def test_a_head_with_an_unknown_status_is_refused_when_built():
    with pytest.raises(ValueError, match="status"):
        RunHead(agent="a", status="sleeping")  # type: ignore[arg-type]


# -- claims -------------------------------------------------------------------------------


def held_elsewhere(**overrides) -> RunHead:
    values = {"owner": ELSEWHERE, "claim": "their-token", "lease_until": time.time() + 3600}
    values.update(overrides)
    return head(**values)


async def test_claiming_a_missing_run_stores_the_start_snapshot_under_the_claim(checkpointer):
    me = RunOwner.current()
    assert await checkpointer.claim("r1", me, token="mine", lease_seconds=30) is None
    assert await checkpointer.load("r1") is None  # nothing to claim, nothing stored
    start = RunSnapshot("r1", head(owner=None, claim=None), [UserMessage(text="go")])
    before = time.time()
    assert await checkpointer.claim("r1", me, token="mine", lease_seconds=30, start=start) is None
    stored = await checkpointer.load("r1")
    assert [e.text for e in stored.entries] == ["go"]
    assert (stored.head.status, stored.head.owner, stored.head.claim) == ("running", me, "mine")
    assert before + 30 <= stored.head.lease_until <= time.time() + 30


async def test_a_run_held_by_another_execution_is_refused_naming_its_owner(checkpointer):
    await checkpointer.save(RunSnapshot("r1", held_elsewhere(), [UserMessage(text="the secret plan")]))
    with pytest.raises(RunClaimedError, match="process 4242 on other-host") as caught:
        await checkpointer.claim("r1", RunOwner.current(), token="mine", lease_seconds=30)
    assert isinstance(caught.value, UserError)
    assert "secret" not in str(caught.value)  # never quotes the conversation
    stored = await checkpointer.load("r1")
    assert (stored.head.owner, stored.head.claim) == (ELSEWHERE, "their-token")  # untouched
    start = RunSnapshot("r1", head(), [UserMessage(text="other")])
    with pytest.raises(RunClaimedError):
        await checkpointer.claim("r1", RunOwner.current(), token="mine", lease_seconds=30, start=start)
    assert [e.text for e in (await checkpointer.load("r1")).entries] == ["the secret plan"]


async def test_a_lapsed_lease_or_a_stopped_run_is_taken_over(checkpointer):
    me = RunOwner.current()
    entries = [UserMessage(text="go"), ToolCall(call_id="c1", name="t")]
    await checkpointer.save(RunSnapshot("lapsed", held_elsewhere(lease_until=time.time() - 1), entries))
    await checkpointer.save(RunSnapshot("failed", head(owner=ELSEWHERE, status="failed", error="boom"), entries))
    for run_id in ("lapsed", "failed"):
        before = (await checkpointer.load(run_id)).head
        taken = await checkpointer.claim(run_id, me, token="mine", lease_seconds=30)
        assert taken.taken_from == before  # what the claim took, so that it can be given back
        assert taken.entries == entries
        assert (taken.head.status, taken.head.owner, taken.head.claim) == ("running", me, "mine")
        assert taken.head.error is None
        assert (await checkpointer.load(run_id)).head == taken.head


def a_dead_owner_on_this_host() -> RunOwner:
    """A process of this machine that is gone, with its start time where readable, so that
    a new process reusing its pid does not pass for it."""
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        owner = dataclasses.replace(RunOwner.current(), pid=child.pid, started=None)
        with open(f"/proc/{child.pid}/stat", "rb") as stat:  # Linux: the start time, field 22
            owner = dataclasses.replace(owner, started=int(stat.read().rsplit(b")", 1)[1].split()[19]))
    except OSError:
        pass
    finally:
        os.kill(child.pid, signal.SIGKILL)
        child.wait()
    return owner


async def test_a_dead_owner_on_this_host_is_taken_over_before_its_lease_ends(checkpointer):
    dead = a_dead_owner_on_this_host()
    await checkpointer.save(
        RunSnapshot("r1", head(owner=dead, claim="theirs", lease_until=time.time() + 3600), []))
    taken = await checkpointer.claim("r1", RunOwner.current(), token="mine", lease_seconds=30)
    assert taken.head.claim == "mine"


async def test_a_completed_run_is_returned_unclaimed(checkpointer):
    done = head(status="completed", owner=ELSEWHERE, claim="theirs")
    await checkpointer.save(RunSnapshot("r1", done, [UserMessage(text="go")]))
    returned = await checkpointer.claim("r1", RunOwner.current(), token="mine", lease_seconds=30)
    assert returned.head == done and (await checkpointer.load("r1")).head == done
    assert returned.taken_from is None  # not taken


async def test_a_save_by_an_execution_that_lost_its_claim_is_refused(checkpointer):
    mine = head(claim="old-token", lease_until=time.time() - 1)  # lapsed ...
    await checkpointer.save(RunSnapshot("r1", mine, [UserMessage(text="go")]))
    await checkpointer.claim("r1", ELSEWHERE, token="new-token", lease_seconds=30)  # ... and taken over
    stale = RunSnapshot("r1", head(claim="old-token"), [UserMessage(text="go"), AssistantMessage(text="late")])
    with pytest.raises(RunClaimedError, match="taken over by process 4242 on other-host"):
        await checkpointer.save(stale)
    stored = await checkpointer.load("r1")
    assert len(stored.entries) == 1 and stored.head.claim == "new-token"
    stored.entries.append(AssistantMessage(text="theirs"))
    await checkpointer.save(stored)  # the holder of the claim saves as before
    assert len((await checkpointer.load("r1")).entries) == 2


async def test_a_head_without_a_claim_can_be_saved_over_by_anyone(checkpointer):
    await checkpointer.save(RunSnapshot("r1", head(), [UserMessage(text="go")]))
    await checkpointer.save(RunSnapshot("r1", head(claim="t1"), [UserMessage(text="go")]))
    assert (await checkpointer.load("r1")).head.claim == "t1"


async def test_a_save_by_a_live_execution_whose_run_was_deleted_is_refused(checkpointer):
    me = RunOwner.current()
    start = RunSnapshot("r1", head(), [UserMessage(text="go")])
    with live_claim("mine", checkpointer, "r1"):  # as the runner registers the execution it runs
        await checkpointer.claim("r1", me, token="mine", lease_seconds=30, start=start)
        claimed = await checkpointer.load("r1")
        await checkpointer.delete("r1")  # discarded, restarted or its session deleted meanwhile
        claimed.entries.append(AssistantMessage(text="late"))
        with pytest.raises(RunClaimedError, match="not stored any more"):
            await checkpointer.save(claimed)
        assert await checkpointer.load("r1") is None  # not recreated


async def test_a_loaded_run_saves_into_another_checkpointer_claim_and_all(checkpointer):
    """Copying a run (backup, migration) is the spec's load then save, also once it was claimed."""
    source = InMemoryCheckpointer()
    start = RunSnapshot("r1", head(), [UserMessage(text="go"), AssistantMessage(text="done")])
    with live_claim("their-token", source, "r1"):  # executed and stopped, as the runner does it
        await source.claim("r1", RunOwner.current(), token="their-token", lease_seconds=30, start=start)
        stopped = await source.load("r1")
        stopped.head.status, stopped.head.lease_until = "interrupted", None
        await source.save(stopped)
    copied = await source.load("r1")
    assert copied.head.claim == "their-token"
    await checkpointer.save(copied)
    assert await checkpointer.load("r1") == copied
    copied.entries.append(AssistantMessage(text="more"))
    await checkpointer.save(copied)  # and it goes on saving under the claim it carries
    assert len((await checkpointer.load("r1")).entries) == 3


async def test_a_claim_can_leave_or_replace_a_stored_run(checkpointer):
    me = RunOwner.current()
    stored = RunSnapshot("r1", head(owner=ELSEWHERE, status="failed", error="boom"), [UserMessage(text="old")])
    await checkpointer.save(stored)
    start = RunSnapshot("r1", head(owner=None), [UserMessage(text="new")])
    left = await checkpointer.claim("r1", me, token="mine", lease_seconds=30, start=start, if_stored="leave")
    assert left == stored and await checkpointer.load("r1") == stored  # returned as it is, not taken
    assert await checkpointer.claim("r1", me, token="mine", lease_seconds=30, start=start,
                                    if_stored="replace") is None
    replaced = await checkpointer.load("r1")
    assert [e.text for e in replaced.entries] == ["new"]
    assert (replaced.head.status, replaced.head.owner, replaced.head.claim) == ("running", me, "mine")

    await checkpointer.save(RunSnapshot("r2", held_elsewhere(), [UserMessage(text="theirs")]))
    with pytest.raises(RunClaimedError, match="process 4242 on other-host"):
        await checkpointer.claim("r2", me, token="mine", lease_seconds=30, start=start, if_stored="replace")
    assert [e.text for e in (await checkpointer.load("r2")).entries] == ["theirs"]


def test_a_pid_of_another_boot_or_pid_namespace_is_not_judged_here():
    """Two containers that share a hostname: the owner's pid means nothing here, its lease decides."""
    dead = a_dead_owner_on_this_host()
    assert dead.is_alive() is False
    for elsewhere in (dataclasses.replace(dead, boot_id="another-boot"), dataclasses.replace(dead, pid_ns=1)):
        assert elsewhere.is_alive() is None
        leased = head(owner=elsewhere, claim="theirs", lease_until=time.time() + 3600)
        assert leased.holder() == "elsewhere" and not leased.crashed
        assert head(owner=elsewhere, claim="theirs", lease_until=time.time() - 1).crashed


def test_an_owner_written_by_an_older_lovia_loads():
    owner = RunOwner.from_dict({"host": "h", "pid": 7, "started": 9})
    assert owner == RunOwner(host="h", pid=7, started=9) and (owner.boot_id, owner.pid_ns) == (None, None)
    assert RunOwner.from_dict(owner.to_dict()) == owner


async def test_a_run_executing_in_this_process_is_held_even_when_its_lease_lapsed(checkpointer):
    """A suspended machine: the lease (wall clock) lapsed while the execution here is live."""
    me = RunOwner.current()
    start = RunSnapshot("r1", head(), [UserMessage(text="go")])
    with live_claim("live-token", checkpointer, "r1"):
        await checkpointer.claim("r1", me, token="live-token", lease_seconds=30, start=start)
        lapsed = await checkpointer.load("r1")
        lapsed.head.lease_until = time.time() - 1
        await checkpointer.save(lapsed)
        stored = (await checkpointer.load("r1")).head
        assert stored.holder() == "here" and not stored.crashed
        with pytest.raises(RunClaimedError, match="already executing in this process"):
            await checkpointer.claim("r1", me, token="another", lease_seconds=30)
    assert stored.crashed  # once it ended without marking the run, nothing holds it
    assert (await checkpointer.claim("r1", me, token="another", lease_seconds=30)).head.claim == "another"


# -- a claim that runs alone in its session ---------------------------------------------------


async def test_claim_alone_is_refused_while_another_run_of_the_session_executes(checkpointer):
    assert isinstance(checkpointer, SessionExclusiveCheckpointer)
    me = RunOwner.current()
    await checkpointer.save(RunSnapshot("theirs", held_elsewhere(session_id="s1"), [UserMessage(text="the plan")]))
    start = RunSnapshot("mine", head(session_id="s1", owner=None), [UserMessage(text="my question")])
    with pytest.raises(RunClaimedError, match="'theirs' of session 's1' is being executed by process 4242") as caught:
        await checkpointer.claim_alone("mine", me, token="t", lease_seconds=30, start=start)
    assert "plan" not in str(caught.value) and "question" not in str(caught.value)
    assert await checkpointer.load("mine") is None  # nothing of it stored
    # A stored run of the session is not taken either (a resume), and stays as it was.
    await checkpointer.save(RunSnapshot("stopped", head(session_id="s1", status="interrupted"), []))
    with pytest.raises(RunClaimedError, match="'theirs'"):
        await checkpointer.claim_alone("stopped", me, token="t", lease_seconds=30)
    assert (await checkpointer.load("stopped")).head.status == "interrupted"
    # Another session, or a plain claim (the spec lets runs of a session run side by side): taken.
    other = RunSnapshot("elsewhere", head(session_id="s2", owner=None), [UserMessage(text="q")])
    assert await checkpointer.claim_alone("elsewhere", me, token="t", lease_seconds=30, start=other) is None
    assert await checkpointer.claim("mine", me, token="t", lease_seconds=30, start=start) is None
    assert (await checkpointer.load("mine")).head.claim == "t"


async def test_claim_alone_goes_ahead_beside_runs_that_no_execution_holds(checkpointer):
    me = RunOwner.current()
    entries = [UserMessage(text="go")]
    lapsed = held_elsewhere(session_id="s1", lease_until=time.time() - 1)
    await checkpointer.save(RunSnapshot("lapsed", lapsed, entries))
    await checkpointer.save(RunSnapshot("failed", head(session_id="s1", status="failed", owner=ELSEWHERE), entries))
    await checkpointer.save(RunSnapshot("done", head(session_id="s1", status="completed", owner=ELSEWHERE), entries))
    start = RunSnapshot("mine", head(session_id="s1", owner=None), entries)
    assert await checkpointer.claim_alone("mine", me, token="t", lease_seconds=30, start=start) is None
    # Its own stored run held elsewhere is refused as claim refuses it, naming that run.
    await checkpointer.save(RunSnapshot("held", held_elsewhere(session_id="s3"), entries))
    with pytest.raises(RunClaimedError, match="run 'held' is being executed"):
        await checkpointer.claim_alone("held", me, token="t", lease_seconds=30)
