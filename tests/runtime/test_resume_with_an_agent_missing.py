"""A resume refused because the run's agent is not in the handoff graph leaves the run as it was.

The spec makes it a hard error for the resume ("Renaming or removing an agent breaks resume for its
in-flight runs"), not a failure of the run: a crashed run stays crashed, a stopped one stopped, and
each resumes once the agent is back.
"""

from __future__ import annotations

import subprocess
from dataclasses import replace

import pytest

from lovia import (
    Agent,
    AgentResolutionError,
    AssistantMessage,
    CheckpointOptions,
    Runner,
    SQLiteCheckpointer,
    ToolCall,
    UserMessage,
)
from lovia.checkpoint import RunHead, RunOwner, RunSnapshot
from lovia.models import ScriptedModel
from lovia.runtime import RunFailed


def dead_owner() -> RunOwner:
    child = subprocess.Popen(["true"])
    child.wait()
    return replace(RunOwner.current(), pid=child.pid, started=1)


ENTRIES = [UserMessage(text="wait 10"), AssistantMessage(text="Waiting."),
           ToolCall(call_id="c1", name="sleepy", arguments='{"seconds": 10}')]


@pytest.mark.parametrize("policy", ["resume", "resume_only"])
@pytest.mark.parametrize("status", ["crashed", "interrupted", "failed"])
async def test_a_resume_refused_for_a_missing_agent_leaves_the_run_as_it_was(tmp_path, policy, status):
    async with SQLiteCheckpointer(tmp_path / "runs.db", wal=True) as checkpointer:
        crashed = status == "crashed"
        head = RunHead(agent="worker-B", status="running" if crashed else status,
                       owner=dead_owner() if crashed else None, claim="gone" if crashed else None,
                       lease_until=1.0 if crashed else None, error="ModelError: boom" if status == "failed" else None,
                       started_at=1.0, updated_at=2.0, turn=1, model="openai:slow")
        await checkpointer.save(RunSnapshot("run-b", head, list(ENTRIES)))
        before = await checkpointer.load("run-b")
        assert before is not None
        app_agent = Agent(name="assistant", model=ScriptedModel([]))
        with pytest.raises(AgentResolutionError, match=r"'worker-B'.*not in the handoff graph"):
            await Runner.run(app_agent, [], checkpoint=CheckpointOptions(checkpointer, "run-b", if_run_exists=policy))
        after = await checkpointer.load("run-b")
        assert after is not None and after.entries == ENTRIES
        assert (after.head.status, after.head.error, after.head.crashed) == (before.head.status, before.head.error,
                                                                               before.head.crashed)
        assert after.head.owner == before.head.owner and not after.head.is_held()
        events = []
        with pytest.raises(AgentResolutionError):
            async for event in Runner.stream(app_agent, [], checkpoint=CheckpointOptions(checkpointer, "run-b",
                                                                                        if_run_exists=policy)):
                events.append(event)
        assert [type(e) for e in events] == [RunFailed]  # reported to a stream, still nothing marked
        assert (await checkpointer.load("run-b")).head.status == before.head.status
        # The agent back, it resumes.
        worker = Agent(name="worker-B", model=ScriptedModel(["done"]))
        result = await Runner.run(worker, [], checkpoint=CheckpointOptions(checkpointer, "run-b",
                                                                          if_run_exists=policy))
        assert result.final_output == "done"


async def test_a_stop_while_a_refused_resume_gives_the_run_back_marks_nothing(tmp_path):
    """With ``alone_in_session`` the claim takes the run before its agent is looked for, then gives it
    back; a cancellation landing in that save went on to mark the run interrupted, its error gone."""
    import asyncio

    released, saving = asyncio.Event(), asyncio.Event()
    armed = False

    class HeldSave(SQLiteCheckpointer):
        async def save(self, snapshot):
            if armed and not snapshot.head.is_held():  # the give-back
                saving.set()
                await released.wait()
            return await super().save(snapshot)

    async with HeldSave(tmp_path / "runs.db", wal=True) as checkpointer:
        head = RunHead(agent="worker-B", status="failed", error="ModelError: boom", session_id="s-b",
                       started_at=1.0, updated_at=2.0, turn=1, model="openai:slow")
        await checkpointer.save(RunSnapshot("run-b", head, list(ENTRIES)))
        armed = True
        app_agent = Agent(name="assistant", model=ScriptedModel([]))
        run = asyncio.create_task(Runner.run(
            app_agent, [], session_id="s-b",
            checkpoint=CheckpointOptions(checkpointer, "run-b", if_run_exists="resume", alone_in_session=True)))
        await asyncio.wait_for(saving.wait(), 10)
        run.cancel()
        await asyncio.sleep(0.05)
        released.set()
        with pytest.raises(asyncio.CancelledError):
            await run
        after = await checkpointer.load("run-b")
        assert after is not None and (after.head.status, after.head.error) == ("failed", "ModelError: boom")
        assert not after.head.is_held()
