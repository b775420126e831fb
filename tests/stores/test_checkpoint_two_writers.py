"""A save checks the stored run as it is now, whoever wrote it since this store's last save.

The SQLite checkpointer folds a save's claim check into its head write, using the entry count it
stored last; these guard that a run changed meanwhile through another store object (another
connection, as another process would) still gets the full check.
"""

from __future__ import annotations

import asyncio

import pytest

from lovia import AssistantMessage, RunClaimedError, RunHead, RunOwner, RunSnapshot, UserError, UserMessage


def answers(count: int) -> list[AssistantMessage]:
    return [AssistantMessage(text=f"answer {i}") for i in range(count)]


async def claimed_by_first(stores) -> tuple[object, object, RunSnapshot]:
    first, second = stores.checkpointer(), stores.checkpointer()
    start = RunSnapshot("r1", RunHead(agent="bot"), [UserMessage(text="go")])
    claimed = await first.claim("r1", RunOwner.current(), token="first", lease_seconds=30, start=start)
    assert claimed is None  # stored fresh
    mine = await first.load("r1")
    mine.entries.extend(answers(2))
    await first.save(mine)  # the first store has now seen 3 entries stored
    return first, second, mine


async def test_a_save_after_another_store_appended_under_the_same_claim_sees_its_entries(stores):
    first, second, mine = await claimed_by_first(stores)
    theirs = await second.load("r1")
    theirs.entries.extend(answers(2))
    await second.save(theirs)  # 5 entries, same claim

    with pytest.raises(UserError, match="holds 5 entries but the snapshot has 4"):
        await first.save(RunSnapshot("r1", mine.head, [*mine.entries, AssistantMessage(text="late")]))
    assert len((await first.load("r1")).entries) == 5

    grown = await first.load("r1")
    grown.entries.append(AssistantMessage(text="next"))
    await first.save(grown)
    assert (await second.load("r1")).entries == grown.entries


async def test_a_save_after_another_store_took_the_run_is_refused(stores):
    first, second, mine = await claimed_by_first(stores)
    taken = await second.claim("r1", RunOwner.current(), token="second", lease_seconds=30)
    assert taken is not None and taken.head.claim == "second"

    mine.entries.append(AssistantMessage(text="late"))
    with pytest.raises(RunClaimedError):
        await first.save(mine)
    stored = await second.load("r1")
    assert stored.head.claim == "second" and len(stored.entries) == 3


async def test_saves_of_one_run_queued_together_each_store_their_entries(stores):
    """Concurrent saves (tool results landing together) each append past what the one before stored."""
    first, _, mine = await claimed_by_first(stores)
    more = answers(3)
    snapshots = [RunSnapshot("r1", mine.head, [*mine.entries, *more[:n]]) for n in (1, 2, 3)]
    await asyncio.gather(*(first.save(snapshot) for snapshot in snapshots))
    assert (await first.load("r1")).entries == snapshots[-1].entries
