"""A worker process on a PostgreSQL database, posing as a host of its own, for the Postgres claim tests.

    python pg_claim_child.py tools URL HOST RUN LEASE LOG GO RELEASE
    python pg_claim_child.py stream URL HOST RUN LEASE BASE_URL

``HOST`` is the host name this process gives as its run owner (``RunOwner.host``), so that
several children on this machine stand for workers on several machines: a run they hold is
judged by its lease alone, as one held on another host is. ``LEASE`` is the run's
``lease_seconds``.

``tools`` waits until the file GO exists, then issues run RUN: two tool calls, then an answer
(decided from the transcript, so whoever takes the run over continues it). Each tool execution
appends ``<host> <pid> started|finished <call id>`` to LOG (O_APPEND, one write per line) and,
between the two, waits until the file RELEASE exists, so the test decides how long the owner
holds the run.

``stream`` asks the OpenAI-compatible server at BASE_URL (model ``drip``) for an answer, in
session ``s1``, with ``if_run_exists="resume"``: the first time, the server streams some words and
stalls (the test kills the process); run again, it resumes the run and the server answers whole.

Both print ``DONE replayed=... output=...`` when the run completes or, when another process
holds the run, ``CLAIMED <the error's message>``.
"""

from __future__ import annotations

import asyncio
import dataclasses
import os
import sys
from pathlib import Path

import lovia.checkpoint
from lovia import Agent, CheckpointOptions, Runner, RunOwner, ToolContext, ToolResult, UserError, tool
from lovia.models import ScriptedModel, ScriptedTurn, call
from lovia.models.openai_chat import OpenAIChatModel
from lovia.stores._postgres_checkpoint import PostgresCheckpointer

MODE, URL, HOST, RUN, LEASE = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], float(sys.argv[5])

# This process stands for a worker on machine HOST: the owner it records names that host, so no
# other process here judges it by its pid (RunOwner.is_alive says "unknowable"), only by its lease.
lovia.checkpoint._CURRENT = dataclasses.replace(RunOwner.current(), host=HOST)


def log(line: str) -> None:
    fd = os.open(sys.argv[6], os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    try:
        os.write(fd, f"{HOST} {os.getpid()} {line}\n".encode())
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
    await wait_for_file(Path(sys.argv[8]))
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
    if MODE == "tools":
        await wait_for_file(Path(sys.argv[7]))
        agent = Agent(name="worker", model=ScriptedModel([next_turn] * 10), tools=[step])
        task = "Run the job."
    else:
        model = OpenAIChatModel("drip", base_url=sys.argv[6], api_key="test-key", retries=0, timeout=600)
        agent = Agent(name="assistant", model=model)
        task = "tell me"
    async with PostgresCheckpointer(URL) as checkpointer:
        try:
            result = await Runner.run(agent, task, checkpoint=CheckpointOptions(checkpointer, RUN, lease_seconds=LEASE))
        except UserError as exc:  # RunClaimedError, when the run is held elsewhere
            print(f"CLAIMED {type(exc).__name__}: {exc}", flush=True)
            return
    print(f"DONE replayed={result.replayed} output={result.final_output}", flush=True)


asyncio.run(main())
