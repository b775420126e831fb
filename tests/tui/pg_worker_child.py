"""A worker process on a PostgreSQL database: one checkpointed run of an agent, held open until told.

    python pg_worker_child.py URL SESSION_ID RUN_ID GATE

The run's first model turn calls the tool ``wait_for_gate``, which waits until the file GATE
exists (the test decides how long the run stays in flight, so the UI can see it running
elsewhere); then the model answers and the run completes into its session. Prints ``DONE`` and
exits 0 when it has.
"""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path

from lovia import Agent, CheckpointOptions, Runner, ToolContext, tool
from lovia.models import ScriptedModel, ScriptedTurn, call
from lovia.stores.postgres import PostgresCheckpointer, PostgresSession

URL, SESSION_ID, RUN_ID, GATE = sys.argv[1], sys.argv[2], sys.argv[3], Path(sys.argv[4])


@tool
async def wait_for_gate(ctx: ToolContext) -> str:
    """Wait until the test opens the gate."""
    # The test makes the file from another process: polling is the only way to notice it.
    while not os.path.exists(GATE):  # noqa: ASYNC110, ASYNC240
        await asyncio.sleep(0.02)
    return "the gate is open"


async def main() -> None:
    model = ScriptedModel([ScriptedTurn(text="Waiting for the gate.", tool_calls=[call("wait_for_gate", {})]),
                           f"Done with {SESSION_ID}."])
    agent = Agent(name="worker", tools=[wait_for_gate], model=model)
    session, checkpointer = PostgresSession(URL), PostgresCheckpointer(URL)
    try:
        await Runner.run(agent, f"job for {SESSION_ID}", session=session, session_id=SESSION_ID,
                         checkpoint=CheckpointOptions(checkpointer, RUN_ID))
    finally:
        await session.close()
        await checkpointer.close()
    print("DONE", flush=True)


asyncio.run(main())
