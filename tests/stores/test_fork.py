"""ForkableSession over every bundled store: a copy of a session's start, recorded as such."""

from __future__ import annotations

import time

import pytest

from lovia import (
    AssistantMessage,
    ForkableSession,
    ForkOrigin,
    ToolCall,
    ToolResult,
    UserError,
    UserMessage,
)
from lovia.session import FORK_META_KEY


async def two_runs_with_a_tool(session) -> list[str]:
    """Run 1: user, call, result, answer (4 entries, with timing); run 2: user, answer (2 entries)."""
    first = await session.append("src", [
        UserMessage(text="what time is it?"),
        ToolCall(call_id="c1", name="current_time", arguments="{}"),
        ToolResult(call_id="c1", name="current_time", output="12:00"),
        AssistantMessage(text="It is noon.", agent="bot"),
    ], run_id="r1", meta={"timing": {"started_at": 10.0, "finished_at": 12.5}, "agent": "bot", "steps": [
        {"kind": "model", "agent": "bot", "started_at": 10.0, "finished_at": 11.0}]})
    second = await session.append("src", [UserMessage(text="thanks"), AssistantMessage(text="welcome", agent="bot")],
                                  run_id="r2", meta={"timing": {"started_at": 20.0, "finished_at": 21.0}})
    return [first, second]


def texts(entries) -> list[str]:
    return [getattr(e, "text", None) or getattr(e, "output", None) or getattr(e, "name", "") for e in entries]


async def test_both_stores_can_fork(session):
    assert isinstance(session, ForkableSession)


async def test_fork_copies_whole_runs_with_their_meta_under_new_run_ids(session):
    await two_runs_with_a_tool(session)
    before = time.time()
    copied = await session.fork("src", keep_entries=6, new_session_id="copy")
    assert copied == 6
    assert await session.load("copy") == await session.load("src")
    source, fork = await session.segments("src"), await session.segments("copy")
    assert [len(s.entries) for s in fork] == [4, 2]
    # New run ids: the original's checkpoints are keyed by run id and stay the original's alone.
    assert not {s.run_id for s in fork} & {s.run_id for s in source}
    assert fork[0].meta["timing"] == source[0].meta["timing"] and fork[0].meta["steps"] == source[0].meta["steps"]
    assert fork[1].meta == source[1].meta  # only the first run records the origin
    origin = ForkOrigin.from_meta(fork[0].meta)
    assert origin is not None and origin.session_id == "src" and origin.entries == 6
    assert origin.title == "what time is it?" and before <= origin.forked_at <= time.time()
    assert FORK_META_KEY not in source[0].meta  # the source is untouched
    assert (await session.session_info("copy")).run_count == 2


async def test_a_cut_inside_a_run_keeps_the_copy_tool_consistent(session):
    await two_runs_with_a_tool(session)
    # Up to and including the tool call: its result is past the cut, so the call goes too.
    copied = await session.fork("src", keep_entries=2, new_session_id="copy")
    assert copied == 1
    [segment] = await session.segments("copy")
    assert texts(segment.entries) == ["what time is it?"]
    assert "timing" not in segment.meta  # a truncated run loses its meta, as rewind's does
    assert ForkOrigin.from_meta(segment.meta) == ForkOrigin("src", 2, segment.meta[FORK_META_KEY]["at"],
                                                              "what time is it?")
    # Into the second run: the first is whole, the second truncated to its user message.
    await session.fork("src", keep_entries=5, new_session_id="copy2")
    assert texts(await session.load("copy2")) == [*texts((await session.load("src"))[:5])]
    assert [len(s.entries) for s in await session.segments("copy2")] == [4, 1]
    assert len(await session.load("src")) == 6


async def test_a_count_past_the_end_copies_everything(session):
    await two_runs_with_a_tool(session)
    assert await session.fork("src", keep_entries=99, new_session_id="copy") == 6
    [first, _] = await session.segments("copy")
    assert ForkOrigin.from_meta(first.meta).entries == 6


async def test_the_fork_keeps_a_title_given_to_the_source_and_lives_on_its_own(session):
    await two_runs_with_a_tool(session)
    await session.rename_session("src", "Clock questions")
    await session.fork("src", keep_entries=4, new_session_id="copy")
    assert (await session.session_info("copy")).title == "Clock questions"
    await session.append("copy", [UserMessage(text="and tomorrow?")])
    await session.rewind("copy", keep_entries=4)
    await session.clear("src")
    assert texts(await session.load("copy")) == ["what time is it?", "current_time", "12:00", "It is noon."]
    assert [i.session_id for i in await session.list_sessions()] == ["copy"]


@pytest.mark.parametrize("keep", [0, -1])
async def test_a_fork_of_nothing_is_refused(session, keep):
    await two_runs_with_a_tool(session)
    with pytest.raises(UserError, match=r"(1|0) or more"):
        await session.fork("src", keep_entries=keep, new_session_id="copy")
    with pytest.raises(UserError, match="no entries to fork"):
        await session.fork("unknown", keep_entries=3, new_session_id="copy")
    assert await session.segments("copy") == []


async def test_a_fork_into_an_existing_session_is_refused_and_changes_nothing(session):
    await two_runs_with_a_tool(session)
    await session.append("other", [UserMessage(text="mine")])
    with pytest.raises(UserError, match="already exists"):
        await session.fork("src", keep_entries=2, new_session_id="other")
    with pytest.raises(UserError, match="into itself"):
        await session.fork("src", keep_entries=2, new_session_id="src")
    assert texts(await session.load("other")) == ["mine"]


async def test_a_fork_survives_reopening_the_file(stores):
    if not stores.persistent:
        pytest.skip("an in-memory store does not outlive its object")
    session = stores.session()
    await two_runs_with_a_tool(session)
    await session.fork("src", keep_entries=4, new_session_id="copy")
    await session.close()
    reopened = stores.session()
    [segment] = await reopened.segments("copy")
    assert ForkOrigin.from_meta(segment.meta).session_id == "src"
    page = await reopened.read_page("copy", start=0, limit=1)
    assert ForkOrigin.from_meta(page.runs[0].meta).entries == 4
    # No schema change: the database is at the version the store had before forks.
    tables = stores.table_names()
    assert "lovia_segments" in tables
    assert not any("fork" in name for name in tables)


def test_origin_from_meta_is_lenient():
    assert ForkOrigin.from_meta(None) is None
    assert ForkOrigin.from_meta({}) is None
    assert ForkOrigin.from_meta({FORK_META_KEY: "x"}) is None
    assert ForkOrigin.from_meta({FORK_META_KEY: {"session_id": "a", "entries": True, "at": 1.0}}) is None
    origin = ForkOrigin("a", 3, 5.0, "t")
    assert ForkOrigin.from_meta({FORK_META_KEY: origin.to_meta()}) == origin
