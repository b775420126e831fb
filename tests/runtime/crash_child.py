"""A process that runs one checkpointed agent run and can be made to stop at a chosen point.

    python crash_child.py DB LOG POINT

At POINT it prints ``AT POINT`` and blocks, so the test can kill it with SIGKILL right
there. POINT ``none`` runs to the end and prints the final output. Every tool execution
is logged to LOG (started / finished), with an fsync, so the test can count re-runs.
"""

from __future__ import annotations

import asyncio
import os
import sys
import time

from lovia import (
    Agent,
    CheckpointOptions,
    Runner,
    RunSnapshot,
    SQLiteCheckpointer,
    SQLiteSession,
    ToolResult,
    tool,
)
from lovia.models import ScriptedModel, ScriptedTurn, call

DB, LOG, POINT = sys.argv[1], sys.argv[2], sys.argv[3]


def stop_here(point: str) -> None:
    if point == POINT:
        print(f"AT {point}", flush=True)
        time.sleep(600)  # the test kills us here


def log(line: str) -> None:
    with open(LOG, "a") as file:
        file.write(line + "\n")
        file.flush()
        os.fsync(file.fileno())


@tool
async def step(name: str) -> str:
    """One step of the job."""
    log(f"started {name}")
    if name == "two":
        stop_here("inside-tool")
    log(f"finished {name}")
    return f"did {name}"


def next_turn(request) -> ScriptedTurn:
    """Decided from the transcript, so a resumed process continues where the crash left off.

    The worker runs two steps and hands off to the reporter, which gives the answer.
    """
    done = sum(isinstance(e, ToolResult) for e in request.messages)
    if done == 0:
        return ScriptedTurn(text="Starting.", tool_calls=[call("step", {"name": "one"}, call_id="c-one")])
    if done == 1:
        return ScriptedTurn(tool_calls=[call("step", {"name": "two"}, call_id="c-two")])
    if done == 2:
        return ScriptedTurn(tool_calls=[call("transfer_to_reporter", call_id="c-hand")])
    return ScriptedTurn(text="Both steps are done.")


class StoppingCheckpointer(SQLiteCheckpointer):
    async def save(self, snapshot: RunSnapshot) -> None:
        await super().save(snapshot)
        last = snapshot.entries[-1].type if snapshot.entries else None
        if snapshot.head.status == "running" and last == "tool_call":
            stop_here("after-model-turn")
        if snapshot.head.status == "running" and last == "tool_result" and not snapshot.head.pending_handoff:
            stop_here("after-tool-result")
        if snapshot.head.status == "running" and last == "tool_result" and snapshot.head.pending_handoff:
            stop_here("after-handoff-result")  # the transfer fired, the switch is not applied yet
        if snapshot.head.status == "running" and last == "assistant":
            stop_here("after-final-turn")  # the answer is saved, the run is not finalized yet


class StoppingSession(SQLiteSession):
    async def append(self, session_id, entries, *, run_id=None, meta=None):
        if run_id == "crash-run":
            stop_here("before-session-append")  # the checkpoint is already finalized
        return await super().append(session_id, entries, run_id=run_id, meta=meta)


async def main() -> None:
    session = StoppingSession(DB, wal=True)
    checkpointer = StoppingCheckpointer(DB, wal=True)
    if not await session.load("u1"):
        await session.append("u1", [], run_id="empty-start")
    reporter = Agent(name="reporter", model=ScriptedModel([next_turn] * 10))
    agent = Agent(name="worker", model=ScriptedModel([next_turn] * 10), tools=[step], handoffs=[reporter])
    result = await Runner.run(agent, "Run the job.", session=session, session_id="u1",
                              checkpoint=CheckpointOptions(checkpointer, "crash-run"))
    print(f"DONE replayed={result.replayed} output={result.final_output}", flush=True)
    await session.close()
    await checkpointer.close()


asyncio.run(main())
