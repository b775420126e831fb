"""A process that issues one checkpointed run, for tests where several processes race for it.

    python claim_child.py DB LOG GO RELEASE

It waits until the file GO exists, then runs ``shared-run``: two tool calls, then an answer.
Each tool execution appends ``<pid> started|finished <call id>`` to LOG (O_APPEND, one
write per line) and, between the two, waits until the file RELEASE exists, so the test
decides how long the owner holds the run. It prints ``DONE replayed=... output=...`` or,
when another process holds the run, ``CLAIMED <the error's message>``.
"""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path

from lovia import (
    Agent,
    CheckpointOptions,
    Runner,
    SQLiteCheckpointer,
    ToolContext,
    ToolResult,
    UserError,
    tool,
)
from lovia.models import ScriptedModel, ScriptedTurn, call

DB, LOG, GO, RELEASE = sys.argv[1], sys.argv[2], Path(sys.argv[3]), Path(sys.argv[4])


def log(line: str) -> None:
    fd = os.open(LOG, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    try:
        os.write(fd, f"{os.getpid()} {line}\n".encode())
        os.fsync(fd)
    finally:
        os.close(fd)


async def wait_for_file(path: Path) -> None:
    # Another process makes the file: polling is the only way to notice it.
    while not os.path.exists(path):  # noqa: ASYNC110, ASYNC240
        await asyncio.sleep(0.01)


@tool
async def step(ctx: ToolContext, name: str) -> str:
    """One step of the job."""
    log(f"started {ctx.call_id}")
    await wait_for_file(RELEASE)
    log(f"finished {ctx.call_id}")
    return f"did {name}"


def next_turn(request) -> ScriptedTurn:
    """Decided from the transcript, so whoever takes the run over continues it."""
    done = sum(isinstance(e, ToolResult) for e in request.messages)
    if done == 0:
        return ScriptedTurn(tool_calls=[call("step", {"name": "one"}, call_id="c-one")])
    if done == 1:
        return ScriptedTurn(tool_calls=[call("step", {"name": "two"}, call_id="c-two")])
    return ScriptedTurn(text="All done.")


async def main() -> None:
    await wait_for_file(GO)
    agent = Agent(name="worker", model=ScriptedModel([next_turn] * 10), tools=[step])
    async with SQLiteCheckpointer(DB, wal=True) as checkpointer:
        try:
            result = await Runner.run(agent, "Run the job.", checkpoint=CheckpointOptions(checkpointer, "shared-run"))
        except UserError as exc:  # RunClaimedError, when the run is held elsewhere
            print(f"CLAIMED {type(exc).__name__}: {exc}", flush=True)
            return
    print(f"DONE replayed={result.replayed} output={result.final_output}", flush=True)


asyncio.run(main())
