"""Run claims: one run id issued by several processes executes once; leases are renewed,
lapse and are taken over; an execution that lost its claim stops writing."""

from __future__ import annotations

import asyncio
import dataclasses
import os
import signal
import socket
import subprocess
import sys
import time
import warnings
from pathlib import Path

import pytest

from lovia import (
    Agent,
    CheckpointOptions,
    ClaimingCheckpointer,
    InMemoryCheckpointer,
    RunClaimedError,
    RunFailed,
    RunHead,
    RunInterrupted,
    Runner,
    RunOwner,
    RunSnapshot,
    ScriptedModel,
    ScriptedTurn,
    SQLiteCheckpointer,
    ToolContext,
    UserError,
    UserMessage,
    tool,
)
from lovia.models import call
from tests.runtime.helpers import PlainCheckpointer

CHILD = Path(__file__).with_name("claim_child.py")
ROOT = Path(__file__).resolve().parents[2]
ELSEWHERE = RunOwner(host="other-host", pid=4242, started=99)


# -- several real processes ---------------------------------------------------------------


class Race:
    """Child processes issuing the same run id on one SQLite file, started together."""

    def __init__(self, directory: Path) -> None:
        self.db, self.log = directory / "lovia.db", directory / "tools.log"
        self.go, self.release = directory / "go", directory / "release"
        self.children: list[subprocess.Popen] = []

    def spawn(self, count: int) -> list[subprocess.Popen]:
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        started = [
            subprocess.Popen([sys.executable, str(CHILD), str(self.db), str(self.log), str(self.go), str(self.release)],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
            for _ in range(count)
        ]
        self.children.extend(started)
        return started

    def lines(self) -> list[tuple[int, str, str]]:
        if not self.log.exists():
            return []
        return [(int(pid), what, call_id) for pid, what, call_id in
                (line.split() for line in self.log.read_text().splitlines())]

    def wait_until(self, predicate, what: str) -> None:
        deadline = time.monotonic() + 60  # a hang guard, not a timing assertion
        while not predicate():
            starters = {pid for pid, what_, _ in self.lines() if what_ == "started"}
            if len(starters) > 1 and not any(c.pid in starters and c.returncode == -signal.SIGKILL
                                             for c in self.children):
                raise AssertionError(f"several processes executed tools of one run: {self.lines()}")
            if time.monotonic() > deadline:
                raise AssertionError(f"timed out waiting until {what}; log: {self.lines()}")
            time.sleep(0.02)

    def finish(self, child: subprocess.Popen) -> str:
        out, err = child.communicate(timeout=60)
        assert child.returncode == 0, err
        return out.strip()

    def kill_all(self) -> None:
        for child in self.children:
            if child.poll() is None:
                child.kill()
                child.wait()


@pytest.fixture
def race(tmp_path):
    race = Race(tmp_path)
    yield race
    race.kill_all()


def test_a_run_issued_by_several_processes_at_once_executes_each_tool_call_once(race):
    children = race.spawn(5)
    race.go.touch()
    # The owner holds the run inside its first tool call until every other process gave up.
    race.wait_until(lambda: sum(c.poll() is not None for c in children) == 4, "four processes gave up")
    [owner] = [c for c in children if c.poll() is None]
    race.release.touch()
    outputs = {child.pid: race.finish(child) for child in children}
    assert outputs.pop(owner.pid) == "DONE replayed=False output=All done."
    host = socket.gethostname()
    for output in outputs.values():
        assert output.startswith("CLAIMED RunClaimedError: run 'shared-run' is being executed by "
                                 f"process {owner.pid} on {host}"), output
    assert race.lines() == [(owner.pid, "started", "c-one"), (owner.pid, "finished", "c-one"),
                            (owner.pid, "started", "c-two"), (owner.pid, "finished", "c-two")]
    # Issued again once it is done, the run is replayed, never executed again.
    [late] = race.spawn(1)
    assert race.finish(late) == "DONE replayed=True output=All done."
    assert len(race.lines()) == 4


def test_a_sigkilled_owners_run_is_taken_over_by_the_next_reissue(race):
    [first] = race.spawn(1)
    race.go.touch()
    race.wait_until(lambda: len(race.lines()) == 1, "the owner is inside its first tool call")
    os.kill(first.pid, signal.SIGKILL)
    first.wait(timeout=30)
    race.release.touch()
    [second] = race.spawn(1)  # its lease has not lapsed, but its owner is gone
    assert race.finish(second) == "DONE replayed=False output=All done."
    assert race.lines() == [(first.pid, "started", "c-one"),  # at-least-once: the dangling call runs again
                            (second.pid, "started", "c-one"), (second.pid, "finished", "c-one"),
                            (second.pid, "started", "c-two"), (second.pid, "finished", "c-two")]


# -- leases -------------------------------------------------------------------------------


def held_elsewhere(lease_until: float) -> RunHead:
    return RunHead(agent="bot", status="running", turn=0, first_input="go",
                   owner=ELSEWHERE, claim="their-token", lease_until=lease_until)


async def test_a_lease_held_on_another_host_is_taken_over_after_it_lapses_not_before(tmp_path):
    async with SQLiteCheckpointer(tmp_path / "lovia.db") as checkpointer:
        held = RunSnapshot("r1", held_elsewhere(time.time() + 3600), [UserMessage(text="go")])
        await checkpointer.save(held)
        agent = Agent(name="bot", model=ScriptedModel(["done"]))
        with pytest.raises(RunClaimedError, match="being executed by process 4242 on other-host") as refused:
            await Runner.run(agent, [], checkpoint=CheckpointOptions(checkpointer, "r1"))
        assert isinstance(refused.value, UserError)
        stored = await checkpointer.load("r1")
        assert (stored.head.status, stored.head.owner, stored.head.claim) == ("running", ELSEWHERE, "their-token")

        # The other host stopped renewing: once the lease has lapsed, the re-issued call takes over.
        await checkpointer.save(RunSnapshot("r1", held_elsewhere(time.time() - 1), [UserMessage(text="go")]))
        result = await Runner.run(agent, [], checkpoint=CheckpointOptions(checkpointer, "r1"))
        assert result.final_output == "done" and not result.replayed
        done = (await checkpointer.load("r1")).head
        assert (done.status, done.owner, done.lease_until) == ("completed", RunOwner.current(), None)
        assert done.claim not in (None, "their-token")


async def test_the_lease_is_renewed_during_a_long_tool_call(tmp_path):
    async with SQLiteCheckpointer(tmp_path / "lovia.db") as checkpointer:
        heads: list[RunHead] = []

        @tool
        async def long_job(ctx: ToolContext) -> str:
            """Runs until the lease was renewed at least once without a snapshot."""
            first = (await checkpointer.load(ctx.run_id)).head
            # The renewal happens in the store, where nothing signals it: poll.
            while (now := (await checkpointer.load(ctx.run_id)).head).lease_until <= first.lease_until:  # noqa: ASYNC110
                await asyncio.sleep(0.02)
            heads.extend([first, now])
            return "finished"

        # Nothing here depends on how fast the machine is: a late renewal is still seen, and
        # the run is not taken over meanwhile (no other process claims it).
        model = ScriptedModel([ScriptedTurn(tool_calls=[call("long_job", call_id="c1")]), "all done"])
        result = await asyncio.wait_for(  # a hang guard: without renewal the tool would wait forever
            Runner.run(Agent(name="bot", model=model, tools=[long_job]), "go",
                       checkpoint=CheckpointOptions(checkpointer, "r1", lease_seconds=3)), 120)
        first, renewed = heads
        assert result.final_output == "all done"
        assert renewed.lease_until == renewed.updated_at + 3 and renewed.updated_at > first.updated_at
        assert (renewed.claim, renewed.turn, renewed.status) == (first.claim, first.turn, "running")
        assert (await checkpointer.load("r1")).head.lease_until is None  # released on completion


async def take_over_from_elsewhere(checkpointer: InMemoryCheckpointer, run_id: str) -> None:
    """Leave the run as another host leaves it once it took it over (no awaits in between).

    A claim made in this process would be refused: the execution here is live, and this
    process knows it. Another host only sees the lease, so it is written as it writes it.
    """
    stored = await checkpointer.load(run_id)
    await checkpointer.delete(run_id)
    theirs = dataclasses.replace(stored.head, owner=ELSEWHERE, claim="their-token", lease_until=time.time() + 60)
    await checkpointer.save(RunSnapshot(run_id, theirs, stored.entries))


async def test_an_execution_whose_claim_was_taken_over_stops_writing():
    checkpointer = InMemoryCheckpointer()

    @tool
    async def slow_step(ctx: ToolContext) -> str:
        """Stalls long enough for another host to take the run over."""
        await take_over_from_elsewhere(checkpointer, ctx.run_id)
        return "done late"

    model = ScriptedModel([ScriptedTurn(tool_calls=[call("slow_step", call_id="c1")]), "never"])
    stream = Runner.stream(Agent(name="bot", model=model, tools=[slow_step]), "go",
                           checkpoint=CheckpointOptions(checkpointer, "r1"))
    events = []
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # nor a "could not mark" warning: the run is not ours to mark
        with pytest.raises(RunClaimedError, match="taken over by process 4242 on other-host"):
            async for event in stream:
                events.append(event)
    assert isinstance(events[-1], RunFailed)
    stored = await checkpointer.load("r1")
    assert [e.type for e in stored.entries] == ["user", "tool_call"]  # the late result was not appended
    assert (stored.head.status, stored.head.owner, stored.head.claim) == ("running", ELSEWHERE, "their-token")


async def test_a_renewal_that_finds_the_run_taken_over_stops_a_long_tool_call():
    checkpointer = InMemoryCheckpointer()
    started, cancelled = asyncio.Event(), asyncio.Event()

    @tool
    async def endless(ctx: ToolContext) -> str:
        """Never ends by itself."""
        started.set()
        try:
            await asyncio.Event().wait()
        finally:
            cancelled.set()
        return "never"

    model = ScriptedModel([ScriptedTurn(tool_calls=[call("endless", call_id="c1")])])
    task = asyncio.ensure_future(Runner.run(Agent(name="bot", model=model, tools=[endless]), "go",
                                            checkpoint=CheckpointOptions(checkpointer, "r1", lease_seconds=0.3)))
    await asyncio.wait_for(started.wait(), 30)
    await take_over_from_elsewhere(checkpointer, "r1")
    with pytest.raises(RunClaimedError, match="taken over"):
        await asyncio.wait_for(task, 30)  # a hang guard: the renewal must stop the run
    assert cancelled.is_set()
    assert (await checkpointer.load("r1")).head.claim == "their-token"


async def test_the_lease_is_dropped_when_a_run_is_interrupted_or_fails():
    checkpointer = InMemoryCheckpointer()
    started = asyncio.Event()

    @tool
    async def blocked() -> str:
        """Waits until stopped."""
        started.set()
        await asyncio.Event().wait()
        return "never"

    model = ScriptedModel([ScriptedTurn(tool_calls=[call("blocked")])])
    stream = Runner.stream(Agent(name="bot", model=model, tools=[blocked]), "go",
                           checkpoint=CheckpointOptions(checkpointer, "r1"))
    events = []
    async for event in stream:
        events.append(event)
        if len(events) == 1:
            await asyncio.wait_for(started.wait(), 30)
            assert (await checkpointer.load("r1")).head.is_held()
            stream.stop()
    assert isinstance(events[-1], RunInterrupted)
    interrupted = (await checkpointer.load("r1")).head
    assert (interrupted.status, interrupted.lease_until) == ("interrupted", None)
    assert not interrupted.is_held()

    from lovia import ModelError

    with pytest.raises(ModelError):
        await Runner.run(Agent(name="bot", model=ScriptedModel([ScriptedTurn(error=ModelError("down"))])), [],
                         checkpoint=CheckpointOptions(checkpointer, "r1"))
    failed = (await checkpointer.load("r1")).head
    assert (failed.status, failed.lease_until) == ("failed", None)


async def test_a_second_execution_in_the_same_process_is_refused():
    checkpointer = InMemoryCheckpointer()
    started, gate = asyncio.Event(), asyncio.Event()

    @tool
    async def wait_for_gate() -> str:
        """Holds the run."""
        started.set()
        await gate.wait()
        return "ok"

    model = ScriptedModel([ScriptedTurn(tool_calls=[call("wait_for_gate")]), "done"])
    first = asyncio.ensure_future(Runner.run(Agent(name="bot", model=model, tools=[wait_for_gate]), "go",
                                             checkpoint=CheckpointOptions(checkpointer, "r1")))
    await asyncio.wait_for(started.wait(), 30)
    with pytest.raises(RunClaimedError, match="already executing in this process"):
        await Runner.run(Agent(name="bot", model=ScriptedModel([])), [],
                         checkpoint=CheckpointOptions(checkpointer, "r1"))
    gate.set()
    assert (await first).final_output == "done"


# -- a checkpointer with only the spec's three methods -------------------------------------


async def test_a_plain_checkpointer_gets_the_best_effort_check():
    checkpointer = PlainCheckpointer()
    assert not isinstance(checkpointer, ClaimingCheckpointer)
    agent = Agent(name="bot", model=ScriptedModel(["done", "again"]))
    fresh = await Runner.run(agent, "go", checkpoint=CheckpointOptions(checkpointer, "fresh"))
    assert fresh.final_output == "done"
    assert (await checkpointer.load("fresh")).head.lease_until is None

    await checkpointer.save(RunSnapshot("r1", held_elsewhere(time.time() + 3600), [UserMessage(text="go")]))
    with pytest.raises(RunClaimedError, match="process 4242 on other-host"):
        await Runner.run(agent, [], checkpoint=CheckpointOptions(checkpointer, "r1"))
    await checkpointer.save(RunSnapshot("r1", held_elsewhere(time.time() - 1), [UserMessage(text="go")]))
    assert (await Runner.run(agent, [], checkpoint=CheckpointOptions(checkpointer, "r1"))).final_output == "again"


async def test_restart_refuses_to_discard_a_run_held_elsewhere():
    checkpointer = InMemoryCheckpointer()
    await checkpointer.save(RunSnapshot("r1", held_elsewhere(time.time() + 3600), [UserMessage(text="go")]))
    with pytest.raises(RunClaimedError, match="process 4242 on other-host"):
        await Runner.run(Agent(name="bot", model=ScriptedModel(["x"])), "new",
                         checkpoint=CheckpointOptions(checkpointer, "r1", if_run_exists="restart"))
    assert [e.text for e in (await checkpointer.load("r1")).entries] == ["go"]


def test_lease_seconds_must_be_positive():
    with pytest.raises(ValueError, match="lease_seconds"):
        CheckpointOptions(InMemoryCheckpointer(), "r1", lease_seconds=0)


def test_the_refusal_of_a_held_run_fits_every_action_that_meets_it():
    """Regenerate, delete and send meet it too, not only resume: it names the holder and asks for nothing else."""
    from lovia.checkpoint import claim_refused

    head = RunHead(agent="a", owner=RunOwner(host="build-7", pid=4242, started=1), claim="t",
                   lease_until=time.time() + 60)
    message = str(claim_refused("r1", head))
    assert "process 4242 on build-7" in message and "resume" not in message
