"""Run claims at the edges: a claim committed as the run is cancelled, a run deleted under a
live execution, the UI's run actions against a resume, this process's own lapsed lease,
policies racing a run stored meanwhile, the lease timer's teardown, and where a resumed run
continues."""

from __future__ import annotations

import asyncio
import dataclasses
import sqlite3
import time
import warnings

import pytest

from lovia import (
    Agent,
    CheckpointOptions,
    InMemoryCheckpointer,
    InMemorySession,
    RunClaimedError,
    RunCompleted,
    RunHead,
    RunHooks,
    RunInterrupted,
    Runner,
    RunOwner,
    RunSnapshot,
    ScriptedModel,
    ScriptedTurn,
    SQLiteCheckpointer,
    SQLiteSession,
    ToolContext,
    UserError,
    UserMessage,
    tool,
)
from lovia.models import call
from lovia.tui.backend import ChatBackend, run_state
from tests.runtime.helpers import PlainCheckpointer, kinds


class ClaimWatchingCheckpointer(SQLiteCheckpointer):
    """The real SQLite checkpointer; it only says when a claim has been handed to the store."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.claiming = asyncio.Event()

    async def claim(self, *args, **kwargs):
        self.claiming.set()
        return await super().claim(*args, **kwargs)


async def test_a_claim_that_commits_as_the_run_is_cancelled_is_released(tmp_path):
    db = tmp_path / "lovia.db"
    async with SQLiteSession(db, wal=True) as session, ClaimWatchingCheckpointer(db, wal=True) as checkpointer:
        await checkpointer.load("r1")  # the file and its tables exist
        # Another connection holds the write lock, so the claim waits on the store's thread ...
        blocker = sqlite3.connect(db, isolation_level=None)
        blocker.execute("BEGIN IMMEDIATE")
        agent = Agent(name="bot", model=ScriptedModel(["never asked", "done"]))
        task = asyncio.ensure_future(Runner.run(agent, "go", session=session, session_id="u1",
                                                checkpoint=CheckpointOptions(checkpointer, "r1")))
        try:
            await asyncio.wait_for(checkpointer.claiming.wait(), 30)
            task.cancel()  # ... when the run is stopped (the UI: enter, then escape at once)
            await asyncio.sleep(0)
        finally:
            blocker.execute("COMMIT")  # the claim commits now, after the cancellation arrived
            blocker.close()
        with pytest.raises(asyncio.CancelledError):
            await asyncio.wait_for(task, 60)  # a hang guard

        head = (await checkpointer.load("r1")).head
        assert (head.status, head.lease_until) == ("interrupted", None)  # released, not held for a lease
        backend = ChatBackend(session, checkpointer, agent)
        assert [r.run_id for r in await backend.runs()] == ["r1"]  # offered to resume
        _, stream = await backend.resume("r1")
        async for _ in stream:
            pass
        assert stream.result.final_output == "never asked"


async def consume(stream) -> list[str]:
    return [type(event).__name__ async for event in stream]


class RecoveryGatedCheckpointer(ClaimWatchingCheckpointer):
    """The real SQLite checkpointer; a load after a claim was handed to it (the runner taking
    up a claim whose result a cancellation dropped) says so and waits for the test's go."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.recovering, self.go = asyncio.Event(), asyncio.Event()

    async def load(self, run_id):
        if self.claiming.is_set():
            self.recovering.set()
            await self.go.wait()
        return await super().load(run_id)


async def test_a_second_stop_while_the_claimed_run_is_taken_up_still_releases_it(tmp_path):
    db = tmp_path / "lovia.db"
    async with RecoveryGatedCheckpointer(db, wal=True) as checkpointer:
        await checkpointer.load("r1")  # the file and its tables exist
        blocker = sqlite3.connect(db, isolation_level=None)
        blocker.execute("BEGIN IMMEDIATE")  # the claim waits on the store's thread ...
        agent = Agent(name="bot", model=ScriptedModel(["never asked"]))
        stream = Runner.stream(agent, "go", checkpoint=CheckpointOptions(checkpointer, "r1"))
        events = asyncio.ensure_future(consume(stream))
        try:
            await asyncio.wait_for(checkpointer.claiming.wait(), 30)
            stream.stop()  # ... when the run is stopped
            await asyncio.sleep(0)
        finally:
            blocker.execute("COMMIT")  # the claim commits after the cancellation arrived
            blocker.close()
        await asyncio.wait_for(checkpointer.recovering.wait(), 30)
        stream.stop()  # stopped again (escape pressed twice) while the claimed run is loaded
        await asyncio.sleep(0)
        checkpointer.go.set()
        assert await asyncio.wait_for(events, 60) == ["RunInterrupted"]  # a hang guard
        assert stream.stopped
        head = (await checkpointer.load("r1")).head
        assert (head.status, head.lease_until) == ("interrupted", None)  # released, not held for a lease
        assert not head.is_held()


async def test_an_execution_whose_run_was_deleted_stops_instead_of_storing_it_again():
    checkpointer, session = InMemoryCheckpointer(), InMemorySession()

    @tool
    async def slow_step(ctx: ToolContext) -> str:
        """While it runs, the run is discarded elsewhere (its lease had lapsed there)."""
        await checkpointer.delete(ctx.run_id)
        return "done late"

    model = ScriptedModel([ScriptedTurn(tool_calls=[call("slow_step", call_id="c1")]), "never"])
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # nor a "could not mark" warning: the run is not ours to mark
        with pytest.raises(RunClaimedError, match="not stored any more"):
            await Runner.run(Agent(name="bot", model=model, tools=[slow_step]), "go", session=session,
                             session_id="u1", checkpoint=CheckpointOptions(checkpointer, "r1"))
    assert await checkpointer.load("r1") is None  # not stored again
    assert await session.load("u1") == []  # and nothing appended to the session it was cleared from


class ResumingSession(InMemorySession):
    """A session in which, right after the first append of run ``run_id``, that run is resumed
    through a second checkpointer on the same file (as another window would)."""

    def __init__(self, db, agent: Agent, run_id: str) -> None:
        super().__init__()
        self.db, self.agent, self.run_id = db, agent, run_id
        self.resume_outcome: BaseException | str | None = None

    async def append(self, session_id, entries, *, run_id=None, meta=None) -> str:
        stored = await super().append(session_id, entries, run_id=run_id, meta=meta)
        if run_id == self.run_id and self.resume_outcome is None:
            self.resume_outcome = "started"
            async with SQLiteCheckpointer(self.db, wal=True) as elsewhere:
                try:
                    result = await Runner.run(self.agent, [], session=self, session_id=session_id,
                                              checkpoint=CheckpointOptions(elsewhere, run_id))
                    self.resume_outcome = result.final_output
                except UserError as exc:
                    self.resume_outcome = exc
        return stored


async def test_finalize_holds_the_run_so_a_resume_meanwhile_is_refused(tmp_path):
    db = tmp_path / "lovia.db"
    agent = Agent(name="bot", model=ScriptedModel(["the resumed answer"]))
    session = ResumingSession(db, agent, "r1")
    async with SQLiteCheckpointer(db, wal=True) as checkpointer:
        interrupted = RunHead(agent="bot", status="interrupted", session_id="u1", first_input="go")
        await checkpointer.save(RunSnapshot("r1", interrupted, [UserMessage(text="go")]))
        backend = ChatBackend(session, checkpointer, agent)
        assert await backend.finalize("r1") == ("u1", 1)
        assert isinstance(session.resume_outcome, RunClaimedError), session.resume_outcome
        assert "already executing in this process" in str(session.resume_outcome)
        assert [s.run_id for s in await session.segments("u1")] == ["r1"]
        assert await checkpointer.load("r1") is None


async def test_discard_and_delete_session_refuse_a_run_held_elsewhere_and_take_the_rest():
    checkpointer, session = InMemoryCheckpointer(), InMemorySession()
    elsewhere = RunOwner(host="other-host", pid=4242, started=9)
    held = RunHead(agent="bot", status="running", session_id="u1", owner=elsewhere, claim="theirs",
                   lease_until=time.time() + 3600)
    await checkpointer.save(RunSnapshot("held", held, [UserMessage(text="go")]))
    await checkpointer.save(RunSnapshot("stopped", RunHead(agent="bot", status="interrupted", session_id="u1"),
                                        [UserMessage(text="go")]))
    await session.append("u1", [UserMessage(text="earlier")], run_id="old")
    backend = ChatBackend(session, checkpointer, Agent(name="bot", model=ScriptedModel([])))
    with pytest.raises(RunClaimedError, match="process 4242 on other-host"):
        await backend.delete_session("u1")
    with pytest.raises(RunClaimedError, match="process 4242 on other-host"):
        await backend.discard("held")
    assert await checkpointer.load("held") is not None and await checkpointer.load("stopped") is not None
    assert len(await session.load("u1")) == 1  # nothing deleted
    await backend.discard("stopped")
    assert await checkpointer.load("stopped") is None


async def test_a_run_executing_here_whose_lease_lapsed_is_neither_crashed_nor_taken_over(tmp_path):
    """Another checkpointer object on the same file (another window of this process): only the
    stored head tells it who holds the run, so RunHead.holder must know the live execution."""
    db = tmp_path / "lovia.db"
    seen: dict[str, object] = {}
    async with SQLiteCheckpointer(db, wal=True) as checkpointer, SQLiteCheckpointer(db, wal=True) as second:

        @tool
        async def long_step(ctx: ToolContext) -> str:
            """The machine was suspended: the lease (wall clock) lapsed under this live execution."""
            stored = await checkpointer.load(ctx.run_id)
            stored.head.lease_until = time.time() - 1
            await checkpointer.save(stored)
            seen["state"] = run_state((await second.load(ctx.run_id)).head)
            try:
                await Runner.run(Agent(name="bot", model=ScriptedModel(["a second execution"])), [],
                                 checkpoint=CheckpointOptions(second, ctx.run_id))
            except RunClaimedError as exc:
                seen["resume"] = str(exc)
            return "ok"

        model = ScriptedModel([ScriptedTurn(tool_calls=[call("long_step", call_id="c1")]), "done"])
        result = await Runner.run(Agent(name="bot", model=model, tools=[long_step]), "go",
                                  checkpoint=CheckpointOptions(checkpointer, "r1"))
        assert seen["state"] == "running"  # not "crashed"
        assert "already executing in this process" in str(seen.get("resume"))
        assert result.final_output == "done"
        assert kinds((await second.load("r1")).entries) == ["user", "tool_call", "tool_result", "assistant"]


async def test_a_plain_checkpointer_stores_the_taken_head_before_anything_else():
    checkpointer = PlainCheckpointer()
    lapsed = RunHead(agent="bot", status="running", session_id="u1", owner=RunOwner("other-host", 4242, 9),
                     claim="theirs", lease_until=time.time() - 1)
    await checkpointer.save(RunSnapshot("r1", lapsed, [UserMessage(text="go")]))
    owners_at_history_load: list[RunOwner | None] = []

    class WatchingSession(InMemorySession):
        async def segments(self, session_id):
            owners_at_history_load.append((await checkpointer.load("r1")).head.owner)
            return await super().segments(session_id)

    result = await Runner.run(Agent(name="bot", model=ScriptedModel(["done"])), [], session=WatchingSession(),
                              session_id="u1", checkpoint=CheckpointOptions(checkpointer, "r1"))
    assert result.final_output == "done"
    assert owners_at_history_load == [RunOwner.current()]  # the first await after the take found it stored


class RacedCheckpointer(InMemoryCheckpointer):
    """Another process stores ``run`` between the runner's load and its claim."""

    def __init__(self, run: RunSnapshot) -> None:
        super().__init__()
        self.run: RunSnapshot | None = run

    async def claim(self, run_id, owner, **kwargs):
        if self.run is not None:
            await self.save(self.run)
            self.run = None
        return await super().claim(run_id, owner, **kwargs)


def theirs() -> RunSnapshot:
    return RunSnapshot("r1", RunHead(agent="bot", status="interrupted", first_input="theirs"),
                       [UserMessage(text="theirs")])


async def test_fail_refuses_a_run_stored_between_its_check_and_its_claim():
    stored_meanwhile = theirs()
    checkpointer = RacedCheckpointer(stored_meanwhile)
    with pytest.raises(UserError, match="already exists"):
        await Runner.run(Agent(name="bot", model=ScriptedModel(["mine"])), "mine",
                         checkpoint=CheckpointOptions(checkpointer, "r1", if_run_exists="fail"))
    assert await checkpointer.load("r1") == stored_meanwhile  # left as it was, not taken


async def test_restart_starts_fresh_over_a_run_stored_between_its_check_and_its_claim():
    checkpointer = RacedCheckpointer(theirs())
    result = await Runner.run(Agent(name="bot", model=ScriptedModel(["mine"])), "mine",
                              checkpoint=CheckpointOptions(checkpointer, "r1", if_run_exists="restart"))
    assert [getattr(e, "text", None) for e in result.new_entries] == ["mine", "mine"]
    assert [e.text for e in (await checkpointer.load("r1")).entries] == ["mine", "mine"]


class CancelAtTheEnd(RunHooks):
    """Asks for the run to stop right after it completed, while its lease timer is torn down."""

    async def on_run_end(self, ctx, result) -> None:
        asyncio.get_running_loop().call_soon(asyncio.current_task().cancel)


async def test_a_cancellation_during_the_lease_timers_teardown_is_not_swallowed():
    checkpointer = InMemoryCheckpointer()
    agent = Agent(name="bot", model=ScriptedModel(["done"]), hooks=CancelAtTheEnd())
    stream = Runner.stream(agent, "go", checkpoint=CheckpointOptions(checkpointer, "r1"))
    events = [event async for event in stream]
    assert stream.stopped and stream.result is None  # the stop request was honoured
    assert type(events[-1]) is RunCompleted  # it had completed: no contradicting RunInterrupted after it
    assert RunInterrupted not in {type(e) for e in events}
    assert (await checkpointer.load("r1")).head.status == "completed"  # it had finished: nothing undone


async def test_a_resumed_run_continues_in_its_own_session_when_the_caller_names_another():
    checkpointer, session = InMemoryCheckpointer(), InMemorySession()
    await session.append("a", [UserMessage(text="history of a")], run_id="old")
    await session.append("b", [UserMessage(text="history of b")], run_id="other")
    head = RunHead(agent="bot", status="interrupted", session_id="a", first_input="go")
    await checkpointer.save(RunSnapshot("r1", head, [UserMessage(text="go")]))
    model = ScriptedModel(["answer"])
    with pytest.warns(RuntimeWarning, match="belongs to session 'a', not to session 'b'"):
        result = await Runner.run(Agent(name="bot", model=model), [], session=session, session_id="b",
                                  checkpoint=CheckpointOptions(checkpointer, "r1"))
    assert [m.text for m in model.requests[0].messages] == ["history of a", "go"]
    assert result.session_id == "a" and len(result.warnings) == 1 and "belongs to session 'a'" in result.warnings[0]
    assert [s.run_id for s in await session.segments("a")] == ["old", "r1"]
    assert kinds(await session.load("b")) == ["user"]  # left alone
    assert (await checkpointer.load("r1")).head.session_id == "a"


async def test_a_run_of_a_session_resumed_without_a_session_says_its_answer_will_not_reach_it():
    """The spec's "continue a known run by id" passes no session: a run that recorded one then lost
    its history and never reached its conversation (the app could not show it), with no word."""
    checkpointer, session = InMemoryCheckpointer(), InMemorySession()
    await session.append("a", [UserMessage(text="history of a")], run_id="old")
    head = RunHead(agent="bot", status="interrupted", session_id="a", first_input="go")
    await checkpointer.save(RunSnapshot("r1", head, [UserMessage(text="go")]))
    with pytest.warns(RuntimeWarning, match="belongs to session 'a', but no session was given") as caught:
        result = await Runner.run(Agent(name="bot", model=ScriptedModel(["answer"])), [],
                                  checkpoint=CheckpointOptions(checkpointer, "r1", if_run_exists="resume_only"))
    # Only lovia's warning: a ResourceWarning of another test's transport, collected meanwhile, may be caught too
    (said,) = [str(w.message) for w in caught if issubclass(w.category, RuntimeWarning)]
    assert "session_id='a'" in said  # what to pass instead
    assert result.final_output == "answer" and len(result.warnings) == 1
    assert [s.run_id for s in await session.segments("a")] == ["old"]  # as the warning said
    # A run that recorded no session resumes without one, as before: nothing to say.
    await checkpointer.save(RunSnapshot("r2", RunHead(agent="bot", status="interrupted", first_input="go"),
                                        [UserMessage(text="go")]))
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        quiet = await Runner.run(Agent(name="bot", model=ScriptedModel(["ok"])), [],
                                 checkpoint=CheckpointOptions(checkpointer, "r2", if_run_exists="resume_only"))
    assert quiet.warnings == []


def test_the_owner_is_this_process_with_its_boot_and_namespace():
    me = RunOwner.current()
    assert me.is_alive() is True
    assert dataclasses.replace(me, boot_id=None if me.boot_id else "x").is_alive() is None
