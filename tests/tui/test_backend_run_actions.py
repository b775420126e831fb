"""The UI's run actions (finalize, discard) over real stores: a refused or failed action gives
the run back as it found it, and a run that completed meanwhile is not finalized as partial."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import AsyncIterator

import pytest

from lovia import (
    Agent,
    AssistantMessage,
    InMemoryCheckpointer,
    InMemorySession,
    RunHead,
    RunOwner,
    RunSnapshot,
    ScriptedModel,
    SQLiteCheckpointer,
    StoreError,
    ToolCall,
    UserError,
    UserMessage,
)
from lovia.tui.backend import ChatBackend, TranscriptRun, run_state

ENTRIES = [UserMessage(text="go"), ToolCall(call_id="c1", name="t", arguments="{}")]


class FailingAppends(InMemorySession):
    """A real in-memory session whose appends fail, as a full disk would make them."""

    async def append(self, session_id, entries, *, run_id=None, meta=None) -> str:
        raise StoreError("disk full")


@pytest.fixture(params=["memory", "sqlite"])
async def make_backend(request, tmp_path) -> AsyncIterator:
    opened: list = []

    def make(session=None) -> ChatBackend:
        if request.param == "memory":
            checkpointer = InMemoryCheckpointer()
        else:
            checkpointer = SQLiteCheckpointer(tmp_path / f"lovia-{len(opened)}.db", wal=True)
            opened.append(checkpointer)
        return ChatBackend(session or InMemorySession(), checkpointer, Agent(name="bot", model=ScriptedModel([])))

    yield make
    for store in opened:
        await store.close()


def a_dead_owner() -> RunOwner:
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    os.kill(child.pid, signal.SIGKILL)
    child.wait()
    return RunOwner(host=RunOwner.current().host, pid=child.pid, boot_id=RunOwner.current().boot_id,
                    pid_ns=RunOwner.current().pid_ns)


def stored_head(**fields) -> RunHead:
    values = {"agent": "bot", "first_input": "go", "started_at": 100.0, "updated_at": 200.0,
              "owner": RunOwner(host="other-host", pid=4242, started=7), "claim": "their-token",
              "lease_until": time.time() - 60}
    values.update(fields)
    return RunHead(**values)


def as_found(head: RunHead) -> tuple:
    return head.status, head.error, head.owner, head.updated_at, head.started_at


async def test_a_refused_finalize_gives_a_failed_run_back_failed_with_its_error(make_backend):
    backend = make_backend()
    failed = stored_head(status="failed", error="ModelError: the server said 500", session_id=None)
    await backend.checkpointer.save(RunSnapshot("r1", failed, ENTRIES))
    with pytest.raises(UserError, match="belongs to no session"):
        await backend.finalize("r1")
    after = (await backend.checkpointer.load("r1")).head
    assert as_found(after) == as_found(failed)
    assert after.lease_until is None and run_state(after) == "failed"
    assert (await backend.checkpointer.load("r1")).entries == ENTRIES


async def test_a_finalize_whose_append_fails_gives_the_run_back_as_it_was(make_backend):
    backend = make_backend(FailingAppends())
    dead = a_dead_owner()
    for run_id, head in [
        ("failed", stored_head(status="failed", error="ToolError: boom", session_id="u1")),
        ("interrupted", stored_head(status="interrupted", session_id="u1")),
        ("crashed", stored_head(status="running", owner=dead, claim="dead-token", session_id="u1")),
    ]:
        await backend.checkpointer.save(RunSnapshot(run_id, head, ENTRIES))
        before = run_state(head)
        with pytest.raises(StoreError, match="disk full"):
            await backend.finalize(run_id)
        after = (await backend.checkpointer.load(run_id)).head
        assert as_found(after) == as_found(head), run_id
        assert run_state(after) == before, run_id
        assert not after.is_held()
        resumable = {r.run_id for r in await backend.runs()}
        assert run_id in resumable  # still offered for resume, finalize or discard


async def test_finalize_refuses_a_run_that_completed_meanwhile(make_backend):
    session = InMemorySession()
    backend = make_backend(session)
    done = stored_head(status="completed", session_id="u1", lease_until=None)
    entries = [*ENTRIES, AssistantMessage(text="the whole answer")]
    await backend.checkpointer.save(RunSnapshot("r1", done, entries))
    with pytest.raises(UserError, match="completed meanwhile"):
        await backend.finalize("r1")
    assert await session.segments("u1") == []  # not appended as partial
    kept = await backend.checkpointer.load("r1")
    assert kept.head.status == "completed" and kept.entries == entries  # left for its replay


async def test_discard_refuses_a_run_that_completed_meanwhile(make_backend):
    """A stale runs list offers a run that completed since: its checkpoint is a replay cache, kept."""
    backend = make_backend(InMemorySession())
    done = stored_head(status="completed", session_id="u1", lease_until=None)
    entries = [*ENTRIES, AssistantMessage(text="the whole answer")]
    await backend.checkpointer.save(RunSnapshot("r1", done, entries))
    with pytest.raises(UserError, match="completed meanwhile"):
        await backend.discard("r1")
    kept = await backend.checkpointer.load("r1")
    assert kept.head.status == "completed" and kept.entries == entries and not kept.head.is_held()


async def test_a_failed_action_on_a_run_taken_gives_it_back_once_the_claim_is_released(make_backend):
    """After the failed action nothing holds the run: it can be resumed or discarded at once."""
    backend = make_backend(FailingAppends())
    await backend.checkpointer.save(RunSnapshot("r1", stored_head(status="interrupted", session_id="u1"), ENTRIES))
    with contextlib.suppress(StoreError):
        await backend.finalize("r1")
    await backend.discard("r1")
    assert await backend.checkpointer.load("r1") is None


class DeletesFailOnce:
    """Wraps a real checkpointer: its next delete fails, as a busy or full disk would make it."""

    def __init__(self, checkpointer) -> None:
        self.checkpointer = checkpointer
        self.fail_next_delete = True

    def __getattr__(self, name):
        return getattr(self.checkpointer, name)

    async def delete(self, run_id: str) -> None:
        if self.fail_next_delete:
            self.fail_next_delete = False
            raise StoreError("disk I/O error")
        await self.checkpointer.delete(run_id)


async def test_a_finalize_whose_delete_fails_never_leaves_the_run_resumable(make_backend):
    """Its session has the partial: resuming it again would answer twice and lose the new answer."""
    session = InMemorySession()
    backend = make_backend(session)
    await backend.checkpointer.save(RunSnapshot("r1", stored_head(status="interrupted", session_id="u1"), ENTRIES))
    real = backend.checkpointer
    backend.checkpointer = DeletesFailOnce(real)
    with pytest.raises(StoreError, match="disk I/O"):
        await backend.finalize("r1")
    backend.checkpointer = real
    assert [segment.run_id for segment in await session.segments("u1")] == ["r1"]
    assert "r1" not in {r.run_id for r in await backend.runs()}  # not offered to resume or finalize again
    left = await real.load("r1")
    assert left.head.status == "completed" and not left.head.is_held()  # a replay cache, like any finished run
    with pytest.raises(UserError, match="completed"):
        await backend.resume("r1")


async def test_a_failed_run_kept_as_partial_keeps_why_it_failed(make_backend):
    """Its checkpoint, which held the error, goes: the segment keeps its first line, and its header says it."""
    from lovia.tui.widgets.run_header import header_line

    backend = make_backend()
    failed = stored_head(status="failed", session_id="s1",
                         error="ModelError: cannot reach openai:x at http://127.0.0.1:9/v1\nTraceback (most recent...")
    await backend.checkpointer.save(RunSnapshot("r1", failed, [UserMessage(text="hello")]))
    await backend.finalize("r1")
    [segment] = await backend.session.segments("s1")
    assert segment.meta["ended"] == "failed"
    assert segment.meta["error"] == "ModelError: cannot reach openai:x at http://127.0.0.1:9/v1"
    line = header_line(TranscriptRun.of_segment(segment), None)
    assert "partial, failed · Cannot reach openai:x" in line


async def test_a_run_that_crashed_before_its_first_save_is_finalized_without_an_end_time(make_backend):
    # It was recorded as ending when it started: "0.0s" where how long it ran is not known.
    session = InMemorySession()
    backend = make_backend(session)
    dead = a_dead_owner()
    crashed_at_once = stored_head(status="running", owner=dead, claim="dead-token", session_id="u1",
                                  started_at=100.0, updated_at=100.0)
    crashed_later = stored_head(status="running", owner=dead, claim="dead-token", session_id="u2",
                                started_at=100.0, updated_at=104.0)
    stopped_at_once = stored_head(status="interrupted", session_id="u3", started_at=100.0, updated_at=100.0)
    for run_id, head in [("r1", crashed_at_once), ("r2", crashed_later), ("r3", stopped_at_once)]:
        await backend.checkpointer.save(RunSnapshot(run_id, head, ENTRIES[:1]))
        await backend.finalize(run_id)
    [first] = await session.segments("u1")
    assert first.meta["timing"] == {"started_at": 100.0} and first.duration is None
    [later] = await session.segments("u2")
    assert later.meta["timing"] == {"started_at": 100.0, "finished_at": 104.0}  # its last save: a lower bound
    [stopped] = await session.segments("u3")
    assert stopped.duration == 0.0  # a stop's time is when it stopped
    import io

    from lovia.export import export_session
    from lovia.tui.widgets.run_header import header_parts

    run = TranscriptRun.of_segment(first)
    assert run.duration is None and "0.0s" not in " ".join(header_parts(run))
    exported = io.StringIO()
    await export_session(session, "u1", exported)
    [heading] = [line for line in exported.getvalue().splitlines() if line.startswith("## Run 1")]
    assert "0.0s" not in heading
