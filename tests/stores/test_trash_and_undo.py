"""The trash and the rewind undo (lovia.session.TrashingSession, UndoableRewindSession), on every bundled store.

SQLite ones on a real file, reopened where it matters, so what is kept survives the process.
"""

from __future__ import annotations

import time

import pytest

from lovia import AssistantMessage, ToolCall, ToolResult, UserError, UserMessage
from lovia.entries import entry_to_dict
from lovia.session import TrashingSession, UndoableRewindSession


def exchange(n: int) -> list:
    return [UserMessage(text=f"question {n}"), AssistantMessage(text=f"answer {n}")]


def with_tool(n: int) -> list:
    return [UserMessage(text=f"question {n}"), ToolCall(call_id=f"c{n}", name="t", arguments="{}"),
            ToolResult(call_id=f"c{n}", output=f"out {n}"), AssistantMessage(text=f"answer {n}")]


async def fill(session, session_id: str = "s", runs: int = 3) -> None:
    for n in range(runs):
        await session.append(session_id, with_tool(n) if n == 1 else exchange(n), run_id=f"r{n}",
                             meta={"n": n, "timing": {"started_at": 1.0, "finished_at": 2.0}})


def shape(segments) -> list:
    return [(s.run_id, [entry_to_dict(e) for e in s.entries], s.meta) for s in segments]


async def reopened(stores, session):
    """The same store, reopened from its file when it has one."""
    if not stores.persistent:
        return session
    await session.close()
    return stores.session()


async def test_both_bundled_stores_have_the_capabilities(session):
    assert isinstance(session, TrashingSession)
    assert isinstance(session, UndoableRewindSession)


# -- trash -------------------------------------------------------------------------------------


async def test_a_trashed_session_is_gone_from_every_view_and_comes_back_as_it_was(stores, session):
    await fill(session)
    await session.rename_session("s", "my title")
    await fill(session, "other", 1)
    before = shape(await session.segments("s"))
    info_before = await session.session_info("s")

    listed = await session.trash_session("s")
    assert listed is not None
    assert (listed.session_id, listed.title, listed.entry_count, listed.run_count) == ("s", "my title", 8, 3)
    assert await session.segments("s") == [] and await session.load("s") == []
    assert await session.session_info("s") is None
    assert [i.session_id for i in await session.list_sessions()] == ["other"]
    assert (await session.read_page("s")).total == 0

    session = await reopened(stores, session)
    [item] = await session.list_trash()
    assert item == listed
    assert await session.restore_session(item.trash_id) == "s"
    assert shape(await session.segments("s")) == before
    info = await session.session_info("s")
    assert (info.title, info.entry_count, info.run_count, info.created_at) == \
        ("my title", 8, 3, info_before.created_at)
    page = await session.read_page("s", start=2, limit=4)
    assert [span.run_id for span in page.runs] == ["r1"]
    assert await session.list_trash() == []
    # Appending goes on after it, and is idempotent by run id as before.
    await session.append("s", exchange(9), run_id="r1")
    await session.append("s", exchange(9), run_id="r9")
    assert [s.run_id for s in await session.segments("s")] == ["r0", "r1", "r2", "r9"]


async def test_trashing_an_unknown_session_changes_nothing(session):
    assert await session.trash_session("nobody") is None
    assert await session.list_trash() == []


async def test_a_taken_id_refuses_the_restore_and_both_stay(session):
    await fill(session, runs=2)
    first = await session.trash_session("s")
    await session.append("s", exchange(7), run_id="new")
    with pytest.raises(UserError, match="exists again") as refused:
        await session.restore_session(first.trash_id)
    assert "question" not in str(refused.value)
    assert [s.run_id for s in await session.segments("s")] == ["new"]
    second = await session.trash_session("s")
    assert [t.trash_id for t in await session.list_trash()] == [second.trash_id, first.trash_id]
    await session.restore_session(first.trash_id)
    assert [s.run_id for s in await session.segments("s")] == ["r0", "r1"]
    with pytest.raises(UserError, match="restored or purged"):
        await session.restore_session(first.trash_id)


async def test_purge_forgets_for_good_by_item_or_age(stores, session):
    for name in ("a", "b", "c"):
        await fill(session, name, 1)
    a = await session.trash_session("a")
    b = await session.trash_session("b")
    with pytest.raises(UserError, match="needs trash_id or deleted_before"):
        await session.purge_trash()
    assert await session.purge_trash(trash_id=a.trash_id) == 1
    assert [t.session_id for t in await session.list_trash()] == ["b"]
    assert await session.purge_trash(deleted_before=b.deleted_at) == 0  # strictly before
    c = await session.trash_session("c")
    assert await session.purge_trash(deleted_before=c.deleted_at) == 1
    session = await reopened(stores, session)
    assert [t.session_id for t in await session.list_trash()] == ["c"]
    with pytest.raises(UserError):
        await session.restore_session(b.trash_id)
    if stores.persistent:
        # nothing of a purged item is left in the database
        assert stores.query("SELECT COUNT(*) FROM lovia_trash_runs") == [(1,)]


async def test_clear_keeps_the_spec_meaning_gone_with_its_trashed_copies(session):
    await fill(session, runs=1)
    await session.trash_session("s")
    await session.append("s", exchange(5), run_id="again")
    await session.clear("s")
    assert await session.load("s") == []
    assert await session.list_trash() == []


# -- rewind undo --------------------------------------------------------------------------------


async def test_undo_brings_back_what_a_rewind_dropped_and_drops_the_resend(stores, session):
    await fill(session)
    before = shape(await session.segments("s"))
    # Cut inside r1 (after its user message): r1 truncated, r2 deleted.
    removed = await session.rewind_undoably("s", keep_entries=3)
    assert removed == 5
    assert [s.run_id for s in await session.segments("s")] == ["r0", "r1"]
    undo = await session.rewind_undo("s")
    assert (undo.keep_entries, undo.removed, undo.run_ids, undo.added_run_id) == (3, 5, ("r1", "r2"), None)
    await session.append("s", exchange(8), run_id="resend")
    session = await reopened(stores, session)
    assert (await session.rewind_undo("s")).added_run_id == "resend"

    done = await session.undo_rewind("s")
    assert done.added_run_id == "resend"
    assert shape(await session.segments("s")) == before
    assert (await session.read_page("s")).total == 8
    assert await session.rewind_undo("s") is None
    with pytest.raises(UserError, match="nothing to undo"):
        await session.undo_rewind("s")
    # The next append goes after the restored runs.
    await session.append("s", exchange(9), run_id="next")
    page = await session.read_page("s", start=8, limit=5)
    assert [(span.run_id, span.start) for span in page.runs] == [("next", 8)]


async def test_undo_of_a_rewind_to_nothing(session):
    await fill(session, runs=2)
    before = shape(await session.segments("s"))
    await session.rewind_undoably("s", keep_entries=0)
    assert await session.load("s") == []
    await session.undo_rewind("s")
    assert shape(await session.segments("s")) == before


async def test_the_next_message_forgets_the_undo(session):
    await fill(session)
    await session.rewind_undoably("s", keep_entries=2)
    await session.append("s", exchange(8), run_id="resend")
    await session.append("s", exchange(8), run_id="resend")  # a replay of the resend: still the resend
    assert await session.rewind_undo("s") is not None
    await session.append("s", exchange(9), run_id="next")
    assert await session.rewind_undo("s") is None
    with pytest.raises(UserError, match="nothing to undo"):
        await session.undo_rewind("s")


async def test_a_plain_rewind_clear_and_trash_forget_the_undo_and_a_no_op_keeps_it(session):
    await fill(session)
    await session.rewind_undoably("s", keep_entries=6)
    assert await session.rewind_undoably("s", keep_entries=100) == 0  # drops nothing: changes nothing
    assert (await session.rewind_undo("s")).keep_entries == 6
    await session.rewind("s", keep_entries=4)
    assert await session.rewind_undo("s") is None
    await session.rewind_undoably("s", keep_entries=2)
    listed = await session.trash_session("s")
    await session.restore_session(listed.trash_id)
    assert await session.rewind_undo("s") is None
    await session.rewind_undoably("s", keep_entries=0)
    await session.clear("s")
    assert await session.rewind_undo("s") is None
    await session.append("s", exchange(1), run_id="fresh")
    assert await session.rewind_undo("s") is None


async def test_a_second_undoable_rewind_replaces_the_first(session):
    await fill(session)
    await session.rewind_undoably("s", keep_entries=6)  # drops r2
    await session.rewind_undoably("s", keep_entries=2)  # drops r1
    await session.undo_rewind("s")
    assert [s.run_id for s in await session.segments("s")] == ["r0", "r1"]


async def test_undo_survives_a_trim_of_the_kept_runs(session):
    await session.append("s", [UserMessage(text="q"), ToolCall(call_id="c", name="t", arguments="{}"),
                               ToolResult(call_id="c", output="x" * 2000), AssistantMessage(text="a")], run_id="big")
    await session.append("s", with_tool(1), run_id="r1")
    original = shape(await session.segments("s"))[1]
    await session.rewind_undoably("s", keep_entries=6)  # r1 truncated to its first two entries
    assert await session.trim_tool_results("s", keep_chars=10, keep_runs=1) == 1  # big's output
    await session.undo_rewind("s")
    big, r1 = await session.segments("s")
    assert big.entries[2].trimmed_chars and shape([r1])[0] == original


async def test_undo_keeps_the_sessions_own_listing_right(session):
    await fill(session)
    started = time.time()
    await session.rewind_undoably("s", keep_entries=2)
    info = await session.session_info("s")
    assert (info.entry_count, info.run_count) == (2, 1)
    await session.undo_rewind("s")
    info = await session.session_info("s")
    assert (info.entry_count, info.run_count, info.title) == (8, 3, "question 0")
    assert info.last_activity >= started


async def test_undo_after_a_run_of_no_entries_brings_back_each_entry_once(session):
    # A run of no entries before the cut is kept whole, as any run before it is (the spec: only
    # later runs go), so the undo's count of kept runs still names the runs it kept.
    await session.append("s", [], run_id="empty")
    await fill(session, runs=2)
    before = shape(await session.segments("s"))
    await session.rewind_undoably("s", keep_entries=3)  # inside r1
    assert [s.run_id for s in await session.segments("s")] == ["empty", "r0", "r1"]
    await session.append("s", exchange(8), run_id="resend")
    await session.undo_rewind("s")
    assert shape(await session.segments("s")) == before
