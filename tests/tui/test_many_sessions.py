"""Many sessions: the list draws a page at a time, and the lists read one session after a turn, not all.

Queries are counted by stores that count their calls (``tests/tui/counting.py``), never timed.
"""

from __future__ import annotations

import asyncio

import pytest

from lovia import BUILTIN_TOOLS, Agent, AssistantMessage, SQLiteCheckpointer, SQLiteSession, UserMessage
from lovia.models import DemoModel
from lovia.tui.app import LoviaApp
from lovia.tui.backend import ChatBackend
from lovia.tui.config import RememberedState
from lovia.tui.widgets.sessions_pane import PAGE
from tests.tui.conftest import settle, type_and_send, wait_for
from tests.tui.counting import CountingCheckpointer, CountingSession, reset


async def many_sessions(db, count: int) -> None:
    """``count`` sessions of one run each; the newest is ``s-{count - 1:04d}``."""
    async with SQLiteSession(db, wal=True) as session, SQLiteCheckpointer(db, wal=True):
        for i in range(count):
            await session.append(f"s-{i:04d}", [UserMessage(text=f"question {i}"), AssistantMessage(text="ok")])


def counted_app(db):
    session, checkpointer = CountingSession(db, wal=True), CountingCheckpointer(db, wal=True)
    agent = Agent(name="assistant", tools=BUILTIN_TOOLS, model=DemoModel(delay=0))
    app = LoviaApp(ChatBackend(session, checkpointer, agent), model_label="demo (offline)",
                   state=RememberedState(db.parent / "state.json"))
    return app, session, checkpointer


async def test_the_sessions_list_draws_a_page_and_more_as_the_cursor_goes_down(tmp_path):
    db = tmp_path / "lovia.db"
    count = 2 * PAGE + 50
    await many_sessions(db, count)
    app, session, checkpointer = counted_app(db)
    async with app.run_test(size=(160, 45)) as pilot:
        await settle(pilot)
        pane = app.screen.query_one("SessionsPane")
        options = app.screen.query_one("#session-list")
        assert app.screen.chat.session_id == f"s-{count - 1:04d}"  # the newest opens
        assert len(pane.listed) == count  # every session is held (listed after the first paint)...
        assert options.option_count == PAGE + 1  # ...but options are drawn for a page, and "N more"
        assert f"{PAGE + 50:,} more" in str(options.get_option_at_index(PAGE).prompt)

        options.focus()
        await pilot.press(*["down"] * (PAGE - PAGE // 4))  # near the last drawn session: the next page is drawn
        await pilot.pause()
        assert options.option_count == 2 * PAGE + 1
        await pilot.press("end")  # the oldest, at once: the last page is drawn alone, under a marker
        await pilot.pause()
        assert options.get_option_at_index(options.highlighted).id == "s-0000"
        assert options.option_count == 1 + PAGE
        assert f"{count - PAGE:,} more: scroll up" in str(options.get_option_at_index(0).prompt)

        # The filter narrows what the pane holds: no store is asked.
        reset(session, checkpointer)
        app.screen.query_one("#session-filter").value = "question 3"
        await settle(pilot)
        assert {info.session_id for info in pane.sessions} == {"s-0003", *(f"s-{i:04d}" for i in range(30, 40))}
        assert session.calls["list_sessions"] == 0


async def test_a_turn_reads_its_own_session_not_the_whole_list(tmp_path):
    db = tmp_path / "lovia.db"
    await many_sessions(db, 30)
    app, session, checkpointer = counted_app(db)
    async with app.run_test(size=(160, 45)) as pilot:
        await settle(pilot)
        screen = app.screen
        screen._change_timer.pause()  # the several-windows check is counted elsewhere
        await settle(pilot)
        await screen.open_session(None)  # a new session: it joins the list with its first run
        reset(session, checkpointer)
        await type_and_send(pilot, "what time is it?")  # a tool call, its result, then the answer: two turns
        await settle(pilot)
        assert session.calls["list_sessions"] == 0
        # one session_info a refresh (the run's start, its tool result, each turn, its end), and the
        # chat's title read once at the end
        assert session.calls["session_info"] <= 6
        pane = screen.query_one("SessionsPane")
        top = pane.sessions[0]
        assert top.session_id == screen.chat.session_id and top.run_count == 1 and top.title == "what time is it?"
        assert len(pane.sessions) == 31
        assert str(screen.query_one("#session-list").get_option_at_index(0).prompt).startswith("▶ what time is it?")


async def test_a_session_changed_below_the_drawn_page_moves_to_the_top(tmp_path):
    db = tmp_path / "lovia.db"
    await many_sessions(db, PAGE + 20)
    app, session, checkpointer = counted_app(db)
    async with app.run_test(size=(160, 45)) as pilot:
        await settle(pilot)
        screen = app.screen
        await screen.open_session("s-0000")  # the oldest: below the drawn page until opened
        await settle(pilot)
        options = screen.query_one("#session-list")
        assert options.get_option_at_index(options.highlighted).id == "s-0000"
        await type_and_send(pilot, "hello again")
        await settle(pilot)
        assert options.get_option_at_index(0).id == "s-0000"
        assert screen.query_one("SessionsPane").sessions[0].run_count == 2


async def test_the_store_lists_a_page_as_the_start_of_the_whole_list(tmp_path):
    # The first paint asks for a page only; the SQLite store reads (and titles) that page alone.
    db = tmp_path / "lovia.db"
    await many_sessions(db, 40)
    async with SQLiteSession(db, wal=True) as session:
        await session.rename_session("s-0005", "a title of its own")
        await session.append("s-0003", [UserMessage(text="back again")])  # now the most recent
        every = await session.list_sessions()
        assert await session.list_sessions(limit=10) == every[:10]
        assert every[0].session_id == "s-0003" and every[0].run_count == 2
        assert await session.list_sessions(query="title of", limit=1) == [await session.session_info("s-0005")]


@pytest.mark.parametrize("size", [(80, 24), (160, 45)])
async def test_the_lists_read_again_leave_the_cursor_where_the_user_put_it(tmp_path, size):
    # The lists are read again in the background (after the first paint with a page of sessions or more,
    # when another window wrote, after a run): each moved the list's cursor back to the open session, so
    # enter, pressed just after, opened that one instead of the session the user had picked.
    db = tmp_path / "lovia.db"
    await many_sessions(db, PAGE + 5)
    app, _, _ = counted_app(db)
    async with app.run_test(size=size) as pilot:
        await settle(pilot)
        if size == (80, 24):
            await pilot.press("ctrl+b")
        options = app.screen.query_one("#session-list")
        options.focus()
        await pilot.press("down", "down", "down")
        picked = options.get_option_at_index(options.highlighted).id
        assert picked == f"s-{PAGE + 1:04d}"
        await app.screen.refresh_lists()
        await pilot.pause()
        assert options.get_option_at_index(options.highlighted).id == picked
        await pilot.press("enter")
        await settle(pilot)
        assert app.screen.chat.session_id == picked
        # Opening another session moves the cursor to it, as before.
        await app.screen.open_session(f"s-{PAGE + 4:04d}")
        await settle(pilot)
        assert options.get_option_at_index(options.highlighted).id == f"s-{PAGE + 4:04d}"


@pytest.mark.parametrize("size", [(80, 24), (160, 45)])
async def test_a_new_sessions_first_message_puts_the_lists_cursor_on_it(tmp_path, size):
    """ctrl+n, then a message: the new session is the open one, and the list's cursor is on it, so
    F2 and delete there act on it (the cursor stayed on the session open before)."""
    from lovia.tui.widgets.sessions_pane import SessionList, SessionsPane
    from tests.tui.conftest import make_app

    app = make_app(tmp_path / "lovia.db")
    async with app.run_test(size=size) as pilot:
        await type_and_send(pilot, "first session")
        await pilot.press("ctrl+n")
        await settle(pilot)
        await type_and_send(pilot, "second session")
        await settle(pilot)
        pane = app.screen.query_one(SessionsPane)
        options = pane.query_one(SessionList)
        await wait_for(pilot, lambda: len(pane.sessions) == 2)
        assert pane.sessions[0].session_id == app.screen.chat.session_id
        assert options.get_option_at_index(options.highlighted).id == app.screen.chat.session_id
        await app.screen.refresh_lists()  # a full listing keeps it there
        assert options.get_option_at_index(options.highlighted).id == app.screen.chat.session_id


async def test_a_new_sessions_first_message_leaves_the_cursor_alone_when_the_filter_hides_it(tmp_path):
    """The cursor goes to the new session only where the list shows it: with a filter that hides it,
    the cursor stays on the match the user picked (it jumped to the first match)."""
    from lovia.tui.widgets.sessions_pane import SessionList, SessionsPane
    from tests.tui.conftest import make_app

    db = tmp_path / "lovia.db"
    async with SQLiteSession(db, wal=True) as session:
        for session_id, text in (("s-1", "alpha one"), ("s-2", "alpha two"), ("s-3", "alpha three"), ("s-4", "beta")):
            await session.append(session_id, [UserMessage(text=text), AssistantMessage(text="ok")])
    app = make_app(db)
    async with app.run_test(size=(160, 45)) as pilot:
        await settle(pilot)
        pane = app.screen.query_one(SessionsPane)
        options = pane.query_one(SessionList)
        options.focus()
        await pilot.press(*"alpha")
        await settle(pilot)
        await pilot.press("ctrl+n")
        await settle(pilot)
        options.focus()
        await pilot.press("down", "down")
        await settle(pilot)
        picked = options.get_option_at_index(options.highlighted).id
        assert picked == "s-1"
        await type_and_send(pilot, "gamma")  # a new session the filter "alpha" hides
        await settle(pilot)
        assert options.get_option_at_index(options.highlighted).id == picked


async def test_a_slow_listing_started_first_never_overwrites_a_newer_one(tmp_path):
    # Two refreshes racing: a full listing held up in its read applied what it read after a later,
    # quicker refresh of one session had shown that session as it is now; its old row stayed.
    db = tmp_path / "lovia.db"
    await many_sessions(db, 3)
    app, _, _ = counted_app(db)
    async with app.run_test(size=(160, 45)) as pilot:
        await settle(pilot)
        screen, pane = app.screen, app.screen.query_one("SessionsPane")
        backend, gate, held = screen.backend, asyncio.Event(), asyncio.Event()
        listed_before = backend.sessions

        async def slow_sessions(*args, **kwargs):
            listing = await listed_before(*args, **kwargs)  # read before the rename below
            held.set()
            await gate.wait()
            return listing

        backend.sessions = slow_sessions
        slow = asyncio.create_task(screen.refresh_lists())
        await wait_for(pilot, held.is_set)
        backend.sessions = listed_before
        async with SQLiteSession(db, wal=True) as elsewhere:
            await elsewhere.rename_session("s-0001", "renamed elsewhere")
        quick = asyncio.create_task(screen.refresh_session("s-0001"))
        await pilot.pause(0.1)
        gate.set()
        await asyncio.gather(slow, quick)
        await settle(pilot)
        assert {info.session_id: info.title for info in pane.listed}["s-0001"] == "renamed elsewhere"


def test_a_session_is_listed_under_the_time_it_is_ordered_by():
    """Ordered by its interrupted run's last save, it showed its older stored activity: listed above
    a session "3 min ago" while reading "5 min ago"."""
    from lovia.tui import format
    from lovia.tui.backend import SessionListing
    from lovia.tui.widgets.sessions_pane import _label

    stored, run_saved = 1_796_212_800.0, 1_796_212_800.0 + 600
    listing = SessionListing("s-1", "Garden", 2, 1, stored, stored, 1.0, state="interrupted", activity=run_saved)
    assert format.when_ago(run_saved, width=30).split(" · ")[0] in _label(listing, False).plain
    assert format.when_ago(stored, width=30).split(" · ")[0] not in _label(listing, False).plain


@pytest.mark.parametrize("size", [(80, 24), (160, 45)])
async def test_end_goes_to_the_last_session_and_home_to_the_first(tmp_path, size):
    # end went to the last session drawn so far, a page down: a user with 10,001 sessions pressed it 43
    # times without reaching the oldest.
    db = tmp_path / "lovia.db"
    count = 200
    await many_sessions(db, count)
    app, _, _ = counted_app(db)
    async with app.run_test(size=size) as pilot:
        await settle(pilot)
        if size == (80, 24):
            await pilot.press("ctrl+b")
        options = app.screen.query_one("#session-list")
        options.focus()

        def highlighted() -> str:
            option = options.highlighted_option
            assert option is not None and option.id is not None  # a session, not a marker
            return option.id

        await pilot.press("end")
        await pilot.pause()
        assert highlighted() == "s-0000"  # the oldest
        assert options.highlighted == options.option_count - 1  # no "more" marker below it
        await pilot.press("up", "up")
        async with SQLiteSession(db, wal=True) as elsewhere:  # deleted in another window
            await elsewhere.trash_session("s-0002")
        await app.screen.refresh_lists()
        await pilot.pause()
        assert highlighted() == "s-0001"  # the one now in its place
        await pilot.press(*["up"] * (PAGE + 10))  # up from there goes through every session, in order
        await pilot.pause()
        assert highlighted() == f"s-{PAGE + 12:04d}"  # s-0002 is gone
        await pilot.press("home")
        await pilot.pause()
        assert options.highlighted == 0 and highlighted() == f"s-{count - 1:04d}"  # the newest
        for _ in range(8):  # pagedown keeps drawing as it nears the end of what is drawn
            await pilot.press("pagedown")
            await pilot.pause()
            highlighted()  # on a session each time, never on the "more" marker (where it was lost)
        assert int(highlighted().removeprefix("s-")) < count - 1 - PAGE

        # Filtered, end goes to the last match
        app.screen.query_one("#session-filter").value = "question 1"  # 1, 10-19 and 100-199
        await settle(pilot)
        options.focus()
        await pilot.press("end")
        await pilot.pause()
        assert highlighted() == "s-0001" and options.highlighted == options.option_count - 1
        await pilot.press("home")
        await pilot.pause()
        assert options.highlighted == 0 and highlighted() == "s-0199"


async def test_after_end_the_drawn_range_stays_a_few_pages_however_the_cursor_or_the_view_moves(tmp_path):
    """Two ways that drew every session, the cost end was made to avoid: the last session, opened
    after end, moved to the top with a message, and the list stretched from it down to the end;
    and the wheel scrolling up from the end kept every session down to the cursor left there."""
    from lovia.tui.widgets.sessions_pane import MOST_DRAWN

    db = tmp_path / "lovia.db"
    count = 400
    await many_sessions(db, count)
    app, _, _ = counted_app(db)
    async with app.run_test(size=(160, 45)) as pilot:
        await settle(pilot)
        options = app.screen.query_one("#session-list")
        options.focus()
        await pilot.press("end")
        await pilot.pause()
        pane = app.screen.query_one("SessionsPane")
        for _ in range(12):  # the wheel over the list: the view goes up, the cursor stays
            options.scroll_to(y=0, animate=False, immediate=True)
            pane.show_earlier()
            await pilot.pause()
            # A few pages (a page may come below the cursor brought along), and the two markers
            assert options.option_count <= MOST_DRAWN + PAGE + 2, options.option_count
        await pilot.press("end", "enter")  # the oldest opened: it goes to the top with a message
        await settle(pilot)
        await type_and_send(pilot, "hello")
        assert app.screen.chat.session_id == "s-0000"
        assert options.option_count <= MOST_DRAWN + 2, options.option_count
        assert options.get_option_at_index(0).id == "s-0000"
