"""A process that opens lovia's PostgreSQL stores at the same moment as its siblings.

    python postgres_child.py migrate URL GO          # open a fresh database (the stores and COUNTED)
    python postgres_child.py append URL WORKER GO    # append runs to one shared session

Each prints ``ready`` once imported, then waits until the file GO exists: the parent makes it once
every child is ready, so their work overlaps whatever their start-up times. ``migrate`` opens the
session store, the checkpointer and a database whose schema (:data:`COUNTED`) records every run of
its migration, slowly, so that migrations that were not serialised would overlap. ``append`` stores
runs ``same-0`` .. ``same-N`` (what every child appends, alike) and runs of its own, interleaved.
"""

from __future__ import annotations

import asyncio
import sys
import time
from pathlib import Path
from typing import Any

from lovia import AssistantMessage, PostgresCheckpointer, PostgresSession, UserMessage
from lovia.stores._postgres_db import PostgresDatabase, PostgresSchema

RUNS = 25


async def _counted_v1(conn: Any) -> None:
    # IF NOT EXISTS: were migrations not serialised, each overlapping run would be counted, not fail.
    await conn.execute("CREATE TABLE IF NOT EXISTS counted_migrations (pid INTEGER NOT NULL)")
    await conn.execute("INSERT INTO counted_migrations VALUES (pg_backend_pid())")
    await conn.execute("SELECT pg_sleep(0.2)")  # long enough for unserialised siblings to overlap
    await conn.execute("CREATE TABLE counted_things (id INTEGER PRIMARY KEY)")


COUNTED = PostgresSchema("counted", (_counted_v1,))


def wait_for(go: Path) -> None:
    sys.stdout.write("ready\n")
    sys.stdout.flush()
    while not go.exists():
        time.sleep(0.002)


async def migrate(url: str) -> None:
    counted = PostgresDatabase(url, schema=COUNTED)
    session, checkpointer = PostgresSession(url), PostgresCheckpointer(url)
    try:
        await asyncio.gather(counted.open(), session.open(), checkpointer.open())
    finally:
        await asyncio.gather(counted.close(), session.close(), checkpointer.close())


async def append(url: str, worker: int) -> None:
    async with PostgresSession(url) as session:
        for i in range(RUNS):
            await session.append("shared", [UserMessage(text=f"same #{i}"), AssistantMessage(text="ok")],
                                 run_id=f"same-{i}")
            await session.append("shared", [UserMessage(text=f"w{worker} #{i}")], run_id=f"w{worker}-{i}")


def main() -> None:
    command, url, *rest = sys.argv[1:]
    wait_for(Path(rest[-1]))
    if command == "migrate":
        asyncio.run(migrate(url))
    elif command == "append":
        asyncio.run(append(url, int(rest[0])))
    sys.stdout.write("done\n")


if __name__ == "__main__":
    main()
