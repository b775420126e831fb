"""A worker that starts a run in a shared session at the same moment as others, for the alone-in-session race.

    python alone_child.py DB_OR_URL RUN GO RELEASE

It opens the stores (a SQLite file with WAL, or a PostgreSQL URL), prints ``READY``, waits until
the file GO exists, then runs RUN in session ``shared`` with ``alone_in_session=True``: a tool
call that waits until the file RELEASE exists (so the run is held while the others start), then
an answer. It prints ``RAN`` when the run completed, ``REFUSED <the error's message>`` when
another run of the session was executing.
"""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path

from lovia import Agent, CheckpointOptions, RunClaimedError, Runner, tool
from lovia.models import ScriptedModel, ScriptedTurn, call

TARGET, RUN, GO, RELEASE = sys.argv[1], sys.argv[2], Path(sys.argv[3]), Path(sys.argv[4])


async def wait_for_file(path: Path) -> None:
    # Another process makes the file: polling is the only way to notice it.
    while not os.path.exists(path):  # noqa: ASYNC110, ASYNC240
        await asyncio.sleep(0.005)


@tool
async def work() -> str:
    """Holds the run until the test lets it go."""
    await wait_for_file(RELEASE)
    return "worked"


def stores():
    if TARGET.startswith("postgresql://"):
        from lovia.stores.postgres import PostgresCheckpointer, PostgresSession

        return PostgresSession(TARGET), PostgresCheckpointer(TARGET)
    from lovia import SQLiteCheckpointer, SQLiteSession

    return SQLiteSession(TARGET, wal=True), SQLiteCheckpointer(TARGET, wal=True)


async def main() -> None:
    session, checkpointer = stores()
    async with session, checkpointer:
        await checkpointer.load("nothing")  # opened (and the file's tables made) before the start
        print("READY", flush=True)
        await wait_for_file(GO)
        agent = Agent(name="worker", tools=[work],
                      model=ScriptedModel([ScriptedTurn(tool_calls=[call("work", {})]), "done"]))
        try:
            await Runner.run(agent, f"question of {RUN}", session=session, session_id="shared",
                             checkpoint=CheckpointOptions(checkpointer, RUN, alone_in_session=True))
        except RunClaimedError as exc:
            print(f"REFUSED {exc}", flush=True)
            return
        print("RAN", flush=True)


asyncio.run(main())
