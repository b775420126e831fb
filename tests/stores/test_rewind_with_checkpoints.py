"""lovia.rewind_with_checkpoints over every bundled store: the spec's rewind rule, in one call.

"If the rewound run has a live checkpoint, delete it too — a later resume would replay the
undone tail." The session cannot do that (it knows nothing of checkpoints); this helper does.
"""

from __future__ import annotations

from typing import Any

import pytest

from lovia import (
    Agent,
    CheckpointOptions,
    Entry,
    RunHead,
    Runner,
    RunSnapshot,
    Segment,
    StoreError,
    UserError,
    UserMessage,
    rewind_with_checkpoints,
)
from lovia.models import ScriptedModel
from lovia.stores._common import rewind_cut
from tests.stores.test_session_contract import _three_runs


def texts(entries: list[Entry]) -> list[str | None]:
    return [getattr(e, "text", None) for e in entries]


async def run(agent, session, checkpointer, run_id: str, text: str):
    return await Runner.run(agent, text, session=session, session_id="u1",
                            checkpoint=CheckpointOptions(checkpointer, run_id))


async def save_checkpoint(checkpointer, run_id: str, session_id: str, status: Any = "completed") -> None:
    head = RunHead(agent="bot", status=status, session_id=session_id)
    await checkpointer.save(RunSnapshot(run_id, head, [UserMessage(text=run_id)]))


async def test_rewind_cut_names_exactly_the_runs_the_store_touches(stores):
    """One definition of "which runs does keep_entries=N touch", and the stores honour it."""
    for keep in range(12):
        session = stores.session()
        await session.clear("u1")
        await _three_runs(session)
        before = await session.segments("u1")
        whole, _ = rewind_cut([len(s.entries) for s in before], keep)
        await session.rewind("u1", keep_entries=keep)
        after = {s.run_id: s for s in await session.segments("u1")}
        assert [s.run_id for s in before[whole:]] == [s.run_id for s in before if after.get(s.run_id) != s], keep


async def test_a_plain_session_rewind_lets_a_reissued_run_bring_its_undone_tail_back(stores):
    """Why the helper exists: the checkpoint outlives the rewind and its replay re-appends."""
    session, checkpointer = stores.session(), stores.checkpointer()
    agent = Agent(name="bot", model=ScriptedModel(["one", "two"]))
    await run(agent, session, checkpointer, "r1", "first")
    await run(agent, session, checkpointer, "r2", "second")
    await session.rewind("u1", keep_entries=2)
    replayed = await run(agent, session, checkpointer, "r2", "second")
    assert replayed.replayed
    assert texts(await session.load("u1")) == ["first", "one", "second", "two"]  # undone, and back


async def test_rewinding_with_checkpoints_keeps_the_undone_tail_undone(stores):
    session, checkpointer = stores.session(), stores.checkpointer()
    model = ScriptedModel(["one", "two", "three", "two again"])
    agent = Agent(name="bot", model=model)
    for run_id, text in (("r1", "first"), ("r2", "second"), ("r3", "third")):
        await run(agent, session, checkpointer, run_id, text)

    removed = await rewind_with_checkpoints(session, checkpointer, "u1", keep_entries=2)

    assert removed == 4
    assert texts(await session.load("u1")) == ["first", "one"]
    assert await checkpointer.load("r1") is not None  # untouched: still its replay cache
    assert await checkpointer.load("r2") is None and await checkpointer.load("r3") is None
    again = await run(agent, session, checkpointer, "r2", "second")  # a crashed worker re-issues it
    assert not again.replayed and again.final_output == "two again"
    assert texts(await session.load("u1")) == ["first", "one", "second", "two again"]


async def test_a_truncated_run_loses_its_checkpoint_and_others_are_left_alone(stores):
    session, checkpointer = stores.session(), stores.checkpointer()
    await _three_runs(session)
    for run_id in ("r1", "r2", "r3", "awaiting-heal"):
        await save_checkpoint(checkpointer, run_id, "u1")
    await save_checkpoint(checkpointer, "in-flight", "u1", status="interrupted")
    await save_checkpoint(checkpointer, "other", "u2")

    assert await rewind_with_checkpoints(session, checkpointer, "u1", keep_entries=5) == 5

    assert [s.run_id for s in await session.segments("u1")] == ["r1", "r2"]  # r2 truncated
    gone = [r for r in ("r1", "r2", "r3", "awaiting-heal", "in-flight", "other") if await checkpointer.load(r) is None]
    assert gone == ["r2", "r3"]
    assert await rewind_with_checkpoints(session, checkpointer, "u1", keep_entries=99) == 0
    assert await checkpointer.load("r1") is not None  # a no-op rewind forgets nothing


async def test_a_completed_run_awaiting_its_append_still_heals_after_a_rewind_that_met_another_writer(stores):
    """The run finished, its append did not happen; another writer's run lands before the
    rewind. The replay that heals the first run must survive, and the answer come back."""
    session, checkpointer = stores.session(), stores.checkpointer()
    model = ScriptedModel(["one", "two", "three"])
    agent = Agent(name="bot", model=model)
    await run(agent, session, checkpointer, "r1", "first")
    await run(agent, session, checkpointer, "r2", "second")
    with pytest.raises(StoreError):
        await run(agent, AppendFails(session, run_id="r3"), checkpointer, "r3", "third")
    assert (await checkpointer.load("r3")).head.status == "completed"
    racing = SessionWithAWriterBeforeRewind(session, late_run="late")

    assert await rewind_with_checkpoints(racing, checkpointer, "u1", keep_entries=2) == 2 + 1

    assert await checkpointer.load("r2") is None
    healed = await run(agent, session, checkpointer, "r3", "third")
    assert healed.replayed and healed.final_output == "three" and len(model.requests) == 3
    assert [s.run_id for s in await session.segments("u1")] == ["r1", "r3"]


async def test_runs_undone_by_another_rewind_meanwhile_are_found_by_the_diff(stores):
    session, checkpointer = stores.session(), stores.checkpointer()
    await _three_runs(session)
    for run_id in ("r1", "r2", "r3"):
        await save_checkpoint(checkpointer, run_id, "u1")
    racing = SessionWithARewindBeforeRewind(session, other_keep=5)  # truncates r2 first

    assert await rewind_with_checkpoints(racing, checkpointer, "u1", keep_entries=8) == 0  # nothing left past 8

    assert [len(s.entries) for s in await session.segments("u1")] == [2, 3]
    assert await checkpointer.load("r1") is not None
    assert await checkpointer.load("r2") is None  # unplanned, truncated: found after the rewind
    assert await checkpointer.load("r3") is None  # planned, gone


async def test_without_a_checkpointer_it_is_the_session_rewind(stores):
    session = stores.session()
    await _three_runs(session)
    assert await rewind_with_checkpoints(session, None, "u1", keep_entries=2) == 8
    assert [s.run_id for s in await session.segments("u1")] == ["r1"]


async def test_bad_arguments_change_nothing(stores):
    session, checkpointer = stores.session(), stores.checkpointer()
    await _three_runs(session)
    await save_checkpoint(checkpointer, "r3", "u1")
    with pytest.raises(UserError, match="keep_entries must be a whole number of 0 or more"):
        await rewind_with_checkpoints(session, checkpointer, "u1", keep_entries=-1)
    with pytest.raises(UserError, match="cannot rewind"):
        await rewind_with_checkpoints(FourMethods(session), checkpointer, "u1", keep_entries=0)  # type: ignore[arg-type]
    assert len(await session.load("u1")) == 10
    assert await checkpointer.load("r3") is not None


class FourMethods:
    """The spec's Session and nothing else, over a bundled store."""

    def __init__(self, inner) -> None:
        self.inner = inner

    async def segments(self, session_id: str) -> list[Segment]:
        return await self.inner.segments(session_id)

    async def load(self, session_id: str) -> list[Entry]:
        return await self.inner.load(session_id)

    async def append(self, session_id: str, entries, *, run_id: str | None = None,
                     meta: dict[str, Any] | None = None) -> str:
        return await self.inner.append(session_id, entries, run_id=run_id, meta=meta)

    async def clear(self, session_id: str) -> None:
        await self.inner.clear(session_id)


class AppendFails(FourMethods):
    """A bundled store whose append of one run fails, as a busy database or a full disk does."""

    def __init__(self, inner, *, run_id: str) -> None:
        super().__init__(inner)
        self.failing_run = run_id

    async def append(self, session_id: str, entries, *, run_id: str | None = None,
                     meta: dict[str, Any] | None = None) -> str:
        if run_id == self.failing_run:
            raise StoreError("the database is busy: try again")
        return await super().append(session_id, entries, run_id=run_id, meta=meta)


class SessionWithAWriterBeforeRewind(FourMethods):
    """A bundled store whose rewind meets a run another writer appended after the plan."""

    def __init__(self, inner, *, late_run: str) -> None:
        super().__init__(inner)
        self.late_run = late_run

    async def rewind(self, session_id: str, *, keep_entries: int) -> int:
        await self.inner.append(session_id, [UserMessage(text="late")], run_id=self.late_run)
        return await self.inner.rewind(session_id, keep_entries=keep_entries)


class SessionWithARewindBeforeRewind(FourMethods):
    """A bundled store that another writer rewinds further just before this rewind."""

    def __init__(self, inner, *, other_keep: int) -> None:
        super().__init__(inner)
        self.other_keep = other_keep

    async def rewind(self, session_id: str, *, keep_entries: int) -> int:
        await self.inner.rewind(session_id, keep_entries=self.other_keep)
        return await self.inner.rewind(session_id, keep_entries=keep_entries)
