"""The Session contract, as every bundled store must honour it."""

from __future__ import annotations

import asyncio
import inspect

import pytest

from lovia import (
    AssistantMessage,
    DescribableSession,
    Handoff,
    ListableSession,
    PagedSession,
    RenamableSession,
    RewindableSession,
    SearchableSession,
    Session,
    ToolCall,
    ToolResult,
    TrimmableSession,
    TrimPreview,
    TrimPreviewingSession,
    UserError,
    UserMessage,
)
from lovia.transcript import dangling_tool_calls, pair_tool_calls


def user(text: str) -> UserMessage:
    return UserMessage(text=text)


def reply(text: str) -> AssistantMessage:
    return AssistantMessage(text=text, agent="bot")


def call(call_id: str, name: str = "lookup") -> ToolCall:
    return ToolCall(call_id=call_id, name=name, arguments='{"q": 1}', agent="bot")


def result(call_id: str, output: str = "ok") -> ToolResult:
    return ToolResult(call_id=call_id, output=output, name="lookup")


CAPABILITIES = {
    RewindableSession: "rewind",
    TrimmableSession: "trim_tool_results",
    TrimPreviewingSession: "preview_trim_tool_results",
    ListableSession: "list_sessions",
    DescribableSession: "session_info",
    RenamableSession: "rename_session",
    PagedSession: "read_page",
}


async def test_store_satisfies_the_protocols(session):
    assert isinstance(session, Session)
    for protocol in CAPABILITIES:
        assert isinstance(session, protocol), protocol.__name__


@pytest.mark.parametrize("protocol", list(CAPABILITIES), ids=lambda p: p.__name__)
async def test_store_methods_have_exactly_the_protocol_signatures(session, protocol):
    """A caller that holds only the protocol calls these, so nothing more may be needed or offered."""
    for name in ("segments", "load", "append", "clear", CAPABILITIES[protocol]):
        assert inspect.signature(getattr(type(session), name)) == inspect.signature(getattr(protocol, name)), name


async def test_unknown_session_is_empty(session):
    assert await session.load("nobody") == []
    assert await session.segments("nobody") == []


async def test_append_keeps_runs_in_order_and_load_is_their_concatenation(session):
    first = [user("My project is called Atlas."), reply("Noted.")]
    second = [user("What is it called?"), call("c1"), result("c1"), reply("Atlas")]
    await session.append("u1", first, run_id="r1", meta={"timing": {"started_at": 1.0, "finished_at": 2.5}})
    await session.append("u1", second, run_id="r2")

    segments = await session.segments("u1")
    assert [s.run_id for s in segments] == ["r1", "r2"]
    assert list(segments[0].entries) == first
    assert list(segments[1].entries) == second
    assert segments[0].meta == {"timing": {"started_at": 1.0, "finished_at": 2.5}}
    assert segments[0].duration == 1.5
    assert segments[1].meta == {} and segments[1].duration is None
    assert await session.load("u1") == first + second


async def test_append_without_run_id_makes_a_fresh_one(session):
    a = await session.append("u1", [user("a")])
    b = await session.append("u1", [user("b")])
    assert a and b and a != b
    assert [s.run_id for s in await session.segments("u1")] == [a, b]


async def test_append_under_a_stored_run_id_is_a_no_op(session):
    await session.append("u1", [user("a"), reply("b")], run_id="r1", meta={"v": 1})
    returned = await session.append("u1", [user("different")], run_id="r1", meta={"v": 2})
    assert returned == "r1"
    segments = await session.segments("u1")
    assert len(segments) == 1
    assert [e.text for e in segments[0].entries] == ["a", "b"]
    assert segments[0].meta == {"v": 1}


async def test_run_ids_are_scoped_to_their_session(session):
    await session.append("u1", [user("a")], run_id="r1")
    await session.append("u2", [user("b")], run_id="r1")
    assert [e.text for e in await session.load("u2")] == ["b"]


async def test_many_tasks_appending_one_run_id_store_one_segment(session):
    entries = [user("once"), reply("only once")]
    await asyncio.gather(*(session.append("u1", entries, run_id="same") for _ in range(20)))
    segments = await session.segments("u1")
    assert len(segments) == 1 and list(segments[0].entries) == entries


async def test_meta_is_copied_and_must_be_json(session):
    meta = {"timing": {"started_at": 1.0, "finished_at": 2.0}, "context": {"summary": "x"}}
    await session.append("u1", [user("a")], run_id="r1", meta=meta)
    meta["context"]["summary"] = "changed later"
    assert (await session.segments("u1"))[0].meta["context"] == {"summary": "x"}
    with pytest.raises(UserError, match="JSON"):
        await session.append("u1", [user("b")], meta={"bad": object()})
    assert len(await session.segments("u1")) == 1


async def test_every_entry_type_round_trips(session):
    entries = [
        user("hi ☃"),
        reply("calling"),
        call("c1"),
        ToolResult(call_id="c1", output="boom", is_error=True, name="lookup"),
        Handoff(from_agent="bot", to_agent="expert", call_id="c2"),
    ]
    await session.append("u1", entries)
    assert await session.load("u1") == entries


async def test_clear_forgets_the_session_only(session):
    await session.append("u1", [user("a")])
    await session.append("u2", [user("b")])
    await session.clear("u1")
    assert await session.load("u1") == []
    assert [e.text for e in await session.load("u2")] == ["b"]
    assert [i.session_id for i in await session.list_sessions()] == ["u2"]
    await session.append("u1", [user("again")], run_id="r-after-clear")
    assert [e.text for e in await session.load("u1")] == ["again"]


async def test_sqlite_history_survives_reopening(stores):
    if not stores.persistent:
        pytest.skip("in-memory stores do not survive the process, by design")
    first = stores.session()
    await first.append("u1", [user("kept")], run_id="r1", meta={"k": [1, 2]})
    await first.close()
    second = stores.session()
    [segment] = await second.segments("u1")
    assert (segment.run_id, segment.meta) == ("r1", {"k": [1, 2]})
    assert [e.text for e in segment.entries] == ["kept"]


# -- rewind -------------------------------------------------------------------------------


async def _three_runs(session) -> None:
    await session.append("u1", [user("one"), reply("1")], run_id="r1", meta={"m": 1})
    await session.append(
        "u1", [user("two"), call("c1"), result("c1"), call("c2"), result("c2"), reply("2")], run_id="r2", meta={"m": 2}
    )
    await session.append("u1", [user("three"), reply("3")], run_id="r3", meta={"m": 3})


async def test_rewind_on_a_run_boundary_deletes_later_runs_whole(session):
    await _three_runs(session)
    removed = await session.rewind("u1", keep_entries=8)
    assert removed == 2
    segments = await session.segments("u1")
    assert [s.run_id for s in segments] == ["r1", "r2"]
    assert segments[1].meta == {"m": 2}  # not cut into: keeps its meta


async def test_rewind_inside_a_run_truncates_it_and_drops_its_meta(session):
    await _three_runs(session)
    removed = await session.rewind("u1", keep_entries=5)  # one, 1, two, c1, result c1
    assert removed == 5
    segments = await session.segments("u1")
    assert [s.run_id for s in segments] == ["r1", "r2"]
    assert segments[0].meta == {"m": 1}
    assert segments[1].meta == {}
    assert [type(e).__name__ for e in segments[1].entries] == ["UserMessage", "ToolCall", "ToolResult"]


async def test_rewind_drops_a_tool_call_whose_result_falls_past_the_cut(session):
    await _three_runs(session)
    removed = await session.rewind("u1", keep_entries=6)  # ... c1, result c1, c2 (dangling)
    loaded = await session.load("u1")
    assert removed == 5
    assert dangling_tool_calls(loaded) == []
    assert [e.call_id for e in loaded if isinstance(e, ToolCall)] == ["c1"]
    assert all(r is not None for _, r in pair_tool_calls(loaded).values())


async def test_rewind_drops_an_earlier_call_of_the_run_whose_result_was_cut():
    from lovia.transcript import truncate_run

    # Parallel calls: both results come after both calls; cutting between the results
    # leaves the second call dangling, so it goes too.
    entries = [user("u"), call("a"), call("b"), result("a"), result("b")]
    assert truncate_run(entries, 4) == [entries[0], entries[1], entries[3]]


async def test_rewind_to_zero_empties_and_past_the_end_is_a_no_op(session):
    await _three_runs(session)
    assert await session.rewind("u1", keep_entries=10) == 0
    assert await session.rewind("u1", keep_entries=99) == 0
    assert len(await session.load("u1")) == 10
    assert [s.meta for s in await session.segments("u1")] == [{"m": 1}, {"m": 2}, {"m": 3}]
    assert await session.rewind("u1", keep_entries=0) == 10
    assert await session.load("u1") == []
    assert await session.rewind("nobody", keep_entries=0) == 0


async def test_rewind_then_append_continues_the_conversation(session):
    await _three_runs(session)
    await session.rewind("u1", keep_entries=2)
    await session.append("u1", [user("edited two"), reply("2'")], run_id="r4")
    assert [e.text for e in await session.load("u1")] == ["one", "1", "edited two", "2'"]


async def test_rewind_cut_that_leaves_a_run_empty_removes_it(session):
    await session.append("u1", [user("one")], run_id="r1")
    await session.append("u1", [call("c1"), result("c1")], run_id="r2")
    assert await session.rewind("u1", keep_entries=2) == 2  # the lone dangling call goes too
    assert [s.run_id for s in await session.segments("u1")] == ["r1"]


async def test_rewind_rejects_a_negative_count(session):
    await _three_runs(session)
    with pytest.raises(UserError, match="keep_entries"):
        await session.rewind("u1", keep_entries=-1)
    assert len(await session.load("u1")) == 10


# -- trim -------------------------------------------------------------------------------


async def test_trim_cuts_old_outputs_and_keeps_structure(session):
    big = "x" * 5000
    await session.append("u1", [user("a"), call("c1"), result("c1", big), result("c1b", "short"), reply("a")], run_id="r1")
    await session.append("u1", [user("b"), call("c2"), result("c2", big), reply("b")], run_id="r2")
    before = await session.load("u1")

    preview = await session.preview_trim_tool_results("u1", keep_chars=400, keep_runs=1)
    trimmed = await session.trim_tool_results("u1", keep_chars=400, keep_runs=1)
    after = await session.load("u1")
    assert trimmed == 1 and type(trimmed) is int
    assert preview == TrimPreview(results=1, chars=len(big) - len(after[2].output))
    assert [type(e) for e in after] == [type(e) for e in before]
    assert [getattr(e, "call_id", None) for e in after] == [getattr(e, "call_id", None) for e in before]
    old = after[2]
    assert old.output.startswith("x" * 400) and "4600 characters trimmed" in old.output
    assert old.trimmed_chars == 4600 and old.is_error is False and old.created_at == before[2].created_at
    assert after[3].output == "short"
    assert after[7].output == big  # the last run is kept whole
    assert pair_tool_calls(after).keys() == pair_tool_calls(before).keys()


async def test_trim_is_idempotent(session):
    await session.append("u1", [call("c1"), result("c1", "y" * 3000)], run_id="r1")
    await session.append("u1", [user("later")], run_id="r2")
    first = await session.trim_tool_results("u1", keep_chars=100, keep_runs=1)
    once = await session.load("u1")
    assert await session.preview_trim_tool_results("u1", keep_chars=100, keep_runs=1) == TrimPreview(0, 0)
    second = await session.trim_tool_results("u1", keep_chars=100, keep_runs=1)
    assert (first, second) == (1, 0)  # a falsy 0: nothing was cut
    assert await session.load("u1") == once


async def test_trim_again_with_less_cuts_further_and_counts_everything(session):
    await session.append("u1", [call("c1"), result("c1", "z" * 3000)], run_id="r1")
    await session.trim_tool_results("u1", keep_chars=1000, keep_runs=0)
    await session.trim_tool_results("u1", keep_chars=100, keep_runs=0)
    entry = (await session.load("u1"))[1]
    assert entry.output.startswith("z" * 100) and not entry.output.startswith("z" * 101)
    assert entry.trimmed_chars == 2900 and "2900 characters trimmed" in entry.output


async def test_trim_preview_counts_without_changing(session):
    await session.append("u1", [call("c1"), result("c1", "y" * 3000), call("c2"), result("c2", "n" * 90)],
                         run_id="r1")
    await session.append("u1", [user("later")], run_id="r2")
    before = await session.load("u1")
    preview = await session.preview_trim_tool_results("u1", keep_chars=100, keep_runs=1)
    assert preview.results == 1 and preview.chars > 2800
    assert await session.load("u1") == before
    assert await session.trim_tool_results("u1", keep_chars=100, keep_runs=1) == preview.results
    assert sum(len(e.output) for e in before if isinstance(e, ToolResult)) - preview.chars == sum(
        len(e.output) for e in await session.load("u1") if isinstance(e, ToolResult))
    assert await session.preview_trim_tool_results("nobody") == TrimPreview(0, 0)


async def test_trim_keep_runs_covering_everything_changes_nothing(session):
    await session.append("u1", [call("c1"), result("c1", "y" * 3000)], run_id="r1")
    assert await session.trim_tool_results("u1", keep_runs=1) == 0
    assert await session.trim_tool_results("nobody") == 0
    with pytest.raises(UserError):
        await session.trim_tool_results("u1", keep_chars=-5)
    with pytest.raises(UserError):
        await session.preview_trim_tool_results("u1", keep_runs=-1)


# -- listing for the UI -------------------------------------------------------------------


async def test_list_sessions_reports_titles_counts_and_timings(session):
    await session.append("u1", [user("  Plan the\nAtlas launch "), reply("ok")], run_id="r1",
                         meta={"timing": {"started_at": 100.0, "finished_at": 102.5}})
    await session.append("u1", [user("more"), reply("ok")], run_id="r2",
                         meta={"timing": {"started_at": 200.0, "finished_at": 201.0}})
    await session.append("u1", [user("untimed")], run_id="r3")
    await asyncio.sleep(0.01)
    await session.append("u2", [reply("no user text yet")], run_id="r1")

    infos = await session.list_sessions()
    assert [i.session_id for i in infos] == ["u2", "u1"]  # most recent activity first
    u1 = infos[1]
    assert u1.title == "Plan the Atlas launch"
    assert (u1.entry_count, u1.run_count) == (5, 3)
    assert u1.total_run_seconds == pytest.approx(3.5)
    assert u1.created_at <= u1.last_activity
    assert infos[0].title == ""
    assert await session.session_info("u1") == u1
    assert await session.session_info("nobody") is None


async def test_an_untitled_sessions_title_is_its_first_user_message_wherever_it_is(session):
    # SQLite lists many sessions in one statement, reading their first messages from the search index:
    # each case here must give the title the one-session lookup gives.
    await session.append("lead", [reply("hello"), user("Second in its run")], run_id="r1")
    await session.append("late", [reply("no user here")], run_id="r1")
    await session.append("late", [user("From the second run"), reply("ok")], run_id="r2")
    await session.append("empty", [user(""), reply("ok")], run_id="r1")
    await session.append("empty", [user("a later message")], run_id="r2")
    await session.append("none", [reply("only answers")], run_id="r1")
    await session.append("named", [user("first words")], run_id="r1")
    await session.rename_session("named", "A name given")
    titles = {info.session_id: info.title for info in await session.list_sessions()}
    assert titles == {"lead": "Second in its run", "late": "From the second run", "empty": "",
                      "none": "", "named": "A name given"}
    for session_id, title in titles.items():
        info = await session.session_info(session_id)
        assert info is not None and info.title == title
    if isinstance(session, SearchableSession):
        hits = await session.search("second")
        assert {hit.session_id: hit.title for hit in hits} == {"lead": "Second in its run",
                                                              "late": "From the second run"}


async def test_a_sessions_total_run_time_counts_the_time_its_runs_were_active(session):
    # r1 lay stopped for most of its 100 s of wall time: it ran 4 s. r2 predates active time.
    await session.append("u1", [user("one")], run_id="r1",
                         meta={"timing": {"started_at": 100.0, "finished_at": 200.0}, "active_seconds": 4})
    await session.append("u1", [user("two")], run_id="r2", meta={"timing": {"started_at": 300.0, "finished_at": 301.5}})
    await session.append("u1", [user("three")], run_id="r3", meta={"active_seconds": True})  # not a number
    # Times that are not numbers (meta is the caller's) count for nothing.
    await session.append("u1", [user("four")], run_id="r4", meta={"timing": {"started_at": "noon", "finished_at": 9.0}})
    await session.append("u1", [user("five")], run_id="r5", meta={"timing": {"started_at": 1.0, "finished_at": True}})
    [info] = await session.list_sessions()
    assert info.total_run_seconds == pytest.approx(5.5)
    assert [s.run_seconds for s in await session.segments("u1")] == [4.0, 1.5, None, None, None]


async def test_huge_recorded_run_times_do_not_stop_the_listing(session):
    # meta is the caller's: two huge integers once overflowed SQLite's SUM and failed every listing.
    for run_id in ("r1", "r2"):
        await session.append("u1", [user("one")], run_id=run_id, meta={"active_seconds": 2 ** 62})
    [info] = await session.list_sessions()
    assert info.total_run_seconds == pytest.approx(2.0 ** 63)


async def test_list_sessions_filters_and_renames(session):
    await session.append("u1", [user("Atlas launch")])
    await session.append("u2", [user("Groceries")])
    assert [i.session_id for i in await session.list_sessions(query="atlas")] == ["u1"]
    assert [i.session_id for i in await session.list_sessions(query="U2")] == ["u2"]
    await session.rename_session("u2", "Weekly shop")
    assert (await session.session_info("u2")).title == "Weekly shop"
    assert [i.session_id for i in await session.list_sessions(query="weekly")] == ["u2"]
    await session.rename_session("u2", "")
    assert (await session.session_info("u2")).title == "Groceries"
    assert len(await session.list_sessions(limit=1)) == 1


async def test_listing_follows_rewind(session):
    await _three_runs(session)
    await session.rewind("u1", keep_entries=2)
    info = await session.session_info("u1")
    assert (info.entry_count, info.run_count) == (2, 1)


# -- paged reads -------------------------------------------------------------------------


async def test_read_page_gives_the_last_entries_with_the_runs_they_belong_to(session):
    await _three_runs(session)  # r1: 2 entries, r2: 6, r3: 2
    loaded = await session.load("u1")
    page = await session.read_page("u1", limit=4)
    assert (page.start, page.end, page.total) == (6, 10, 10)
    assert list(page.entries) == loaded[6:]
    assert [(r.run_id, r.start, r.count, r.meta) for r in page.runs] == [("r2", 2, 6, {"m": 2}), ("r3", 8, 2, {"m": 3})]


async def test_read_page_from_a_position_covers_every_entry_once(session):
    await _three_runs(session)
    loaded = await session.load("u1")
    seen = []
    start = 0
    while start < 10:
        page = await session.read_page("u1", start=start, limit=3)
        assert page.start == start and page.total == 10
        assert list(page.entries) == loaded[start:start + 3]
        assert all(r.start < page.end and r.end > page.start for r in page.runs)
        seen.extend(page.entries)
        start = page.end
    assert seen == loaded
    first = await session.read_page("u1", start=0, limit=1)
    assert [(r.run_id, r.start, r.count) for r in first.runs] == [("r1", 0, 2)]


async def test_read_page_past_the_end_or_of_an_unknown_session_is_empty(session):
    await _three_runs(session)
    page = await session.read_page("u1", start=50, limit=5)
    assert (page.start, page.entries, page.runs, page.total) == (10, (), (), 10)
    page = await session.read_page("u1", limit=50)
    assert (page.start, len(page.entries), page.total) == (0, 10, 10)
    nobody = await session.read_page("nobody")
    assert (nobody.start, nobody.entries, nobody.runs, nobody.total) == (0, (), (), 0)


async def test_read_page_follows_rewind_and_gives_private_meta(session):
    await _three_runs(session)
    await session.rewind("u1", keep_entries=5)
    page = await session.read_page("u1", limit=10)
    assert page.total == 5 and [(r.run_id, r.count, r.meta) for r in page.runs] == [("r1", 2, {"m": 1}), ("r2", 3, {})]
    page.runs[0].meta["m"] = 99
    assert (await session.read_page("u1", limit=10)).runs[0].meta == {"m": 1}


@pytest.mark.parametrize("arguments", [{"start": -1}, {"limit": 0}, {"limit": True}, {"start": 1.5}])
async def test_read_page_refuses_arguments_that_name_no_page(session, arguments):
    await _three_runs(session)
    with pytest.raises(UserError):
        await session.read_page("u1", **arguments)
