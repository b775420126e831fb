"""Helpers for runner tests: real stores that also record what was done to them."""

from __future__ import annotations

import asyncio
from typing import Any

from lovia import InMemoryCheckpointer, InMemorySession, RunHead, RunSnapshot, tool
from lovia.entries import Entry


class RecordingCheckpointer(InMemoryCheckpointer):
    """An in-memory checkpointer that logs each claim and save (status and entry types) and delete."""

    def __init__(self, log: list | None = None) -> None:
        super().__init__()
        self.log: list[tuple[Any, ...]] = log if log is not None else []

    async def save(self, snapshot: RunSnapshot) -> None:
        await super().save(snapshot)
        self.log.append(("save", snapshot.head.status, [e.type for e in snapshot.entries]))

    async def claim(self, run_id: str, owner, *, token, lease_seconds, start=None, if_stored="take"):
        taken = await super().claim(run_id, owner, token=token, lease_seconds=lease_seconds, start=start,
                                    if_stored=if_stored)
        stored = await super().load(run_id)
        if stored is not None:
            self.log.append(("claim", stored.head.status, [e.type for e in stored.entries]))
        return taken

    async def delete(self, run_id: str) -> bool:
        self.log.append(("delete", run_id))
        return await super().delete(run_id)


class RecordingSession(InMemorySession):
    """An in-memory session that logs appends into a shared log, and can be told to fail."""

    def __init__(self, log: list | None = None) -> None:
        super().__init__()
        self.log: list[tuple[Any, ...]] = log if log is not None else []
        self.fail_appends: BaseException | None = None

    async def append(self, session_id: str, entries, *, run_id=None, meta=None) -> str:
        self.log.append(("append", session_id, run_id))
        if self.fail_appends is not None:
            raise self.fail_appends
        return await super().append(session_id, entries, run_id=run_id, meta=meta)


def kinds(entries: list[Entry]) -> list[str]:
    return [e.type for e in entries]


def comparable(entries: list[Entry]) -> list[tuple]:
    """Entries without their times, for comparing two runs (call ids are compared: give fixed ones)."""
    out = []
    for e in entries:
        data = {k: getattr(e, k) for k in e.__dataclass_fields__ if k != "created_at"}
        out.append((e.type, tuple(sorted(data.items()))))
    return out


class PlainCheckpointer:
    """A custom Checkpointer with the spec's save, load and delete, and no idea of claims."""

    def __init__(self) -> None:
        self._runs: dict[str, tuple[dict, list]] = {}

    async def save(self, snapshot: RunSnapshot) -> None:
        self._runs[snapshot.run_id] = (snapshot.head.to_dict(), list(snapshot.entries))

    async def load(self, run_id: str) -> RunSnapshot | None:
        if run_id not in self._runs:
            return None
        head, entries = self._runs[run_id]
        return RunSnapshot(run_id, RunHead.from_dict(head), list(entries))

    async def delete(self, run_id: str) -> bool:
        return self._runs.pop(run_id, None) is not None


executions: list[str] = []  # what ``step`` ran, in order; tests clear it first


@tool
async def step(name: str) -> str:
    """Record that a step ran."""
    executions.append(name)
    return f"did {name}"


def consume_in_background(stream) -> asyncio.Task:
    """Read every event of a run's ``stream`` in a task of its own (a test stops the run meanwhile)."""
    async def consume() -> None:
        async for _ in stream:
            pass

    return asyncio.ensure_future(consume())
