"""A process that holds lovia's SQLite stores the way the app does, driven by its parent.

    python sqlite_child.py PATH serve        # commands on stdin, one line each, "ok ..." on stdout
    python sqlite_child.py PATH hammer N ID GO  # N appends at once with the other hammers, acks on stdout

``serve`` understands ``open`` (what ``lovia --db PATH`` does before its UI: open the app's session
store and checkpoint store on it, with ``wal=True``), ``append SESSION RUN TEXT``,
``save RUN TEXT`` (a checkpoint), ``peek`` (a short-lived extra store opened and closed, as a
second window or a script would), ``close`` and ``exit``. Every reply is printed only once the
operation was acknowledged by the store, so the parent knows what must survive a SIGKILL.

``hammer`` opens the stores, prints ``opened`` and waits until the file GO exists: the parent
makes it once every hammer has opened, so the appends of all of them overlap whatever their
start-up times.
"""

from __future__ import annotations

import asyncio
import sys
from dataclasses import dataclass
from pathlib import Path

from lovia import AssistantMessage, RunHead, RunSnapshot, SQLiteCheckpointer, SQLiteSession, UserMessage
from lovia.cli import open_stores


@dataclass
class AppStores:
    """The two stores ``lovia.cli.build_app`` opens on one file, opened the same way."""

    path: Path
    session: SQLiteSession
    checkpointer: SQLiteCheckpointer

    @classmethod
    async def open(cls, path: Path) -> AppStores:
        return cls(path, *await open_stores(path))

    async def peek(self) -> None:
        async with SQLiteSession(self.path, wal=True) as other:
            await other.list_sessions()

    async def close(self) -> None:
        await self.session.close()
        await self.checkpointer.close()


def reply(text: str) -> None:
    sys.stdout.write(text + "\n")
    sys.stdout.flush()


async def serve(path: Path) -> None:
    stores: AppStores | None = None
    loop = asyncio.get_running_loop()
    while line := await loop.run_in_executor(None, sys.stdin.readline):
        command, *args = line.split()
        if command == "open":
            stores = await AppStores.open(path)
        elif command == "exit":
            pass
        elif stores is None:
            reply(f"{command} before open")
            continue
        elif command == "append":
            session_id, run_id, text = args
            await stores.session.append(session_id, [UserMessage(text=text), AssistantMessage(text="ok")],
                                        run_id=run_id)
        elif command == "save":
            run_id, text = args
            await stores.checkpointer.save(RunSnapshot(run_id, RunHead(agent="bot"), [UserMessage(text=text)]))
        elif command == "peek":
            await stores.peek()
        elif command == "close":
            await stores.close()
        reply(f"ok {line.strip()}")
        if command == "exit":
            return


async def wait_for_file(path: Path) -> None:
    # The parent makes the file: polling is the only way to notice it.
    while not path.exists():  # noqa: ASYNC110, ASYNC240
        await asyncio.sleep(0.01)


async def hammer(path: Path, appends: int, worker: str, go: Path) -> None:
    stores = await AppStores.open(path)
    reply("opened")
    await wait_for_file(go)
    for i in range(appends):
        run_id = f"{worker}-{i}"
        await stores.session.append("shared", [UserMessage(text=f"{worker} #{i}")], run_id=run_id)
        await stores.checkpointer.save(RunSnapshot(run_id, RunHead(agent="bot"), [UserMessage(text=run_id)]))
        reply(f"acked {run_id}")
        if i % 10 == 9:
            await stores.peek()  # others come and go while this process keeps writing
    reply("done")
    await asyncio.Event().wait()  # hold the stores open until the parent kills us


if __name__ == "__main__":
    db, mode = Path(sys.argv[1]), sys.argv[2]
    if mode == "serve":
        asyncio.run(serve(db))
    else:
        asyncio.run(hammer(db, int(sys.argv[3]), sys.argv[4], Path(sys.argv[5])))
