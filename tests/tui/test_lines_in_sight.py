"""What a line must show stays in sight: the composer's cursor past its height, a tool call's result at 80 columns."""

from __future__ import annotations

import pytest

from tests.tui.conftest import make_app, settle

SIZES = [(80, 24), (160, 45)]


@pytest.mark.parametrize("size", SIZES)
async def test_a_new_line_past_the_composers_height_shows_the_cursor(tmp_path, size):
    # At its full height the composer scrolled to the line before the new one: the cursor was out
    # of sight until the next character was typed.
    app = make_app(tmp_path / "lovia.db")
    async with app.run_test(size=size) as pilot:
        await settle(pilot)
        composer = app.screen.chat.composer
        composer.focus()
        for line in range(14):
            await pilot.press(*f"line {line}", "ctrl+j")
            await settle(pilot)
            assert composer.content_region.contains(*composer.cursor_screen_offset), line


@pytest.mark.parametrize("size", SIZES)
async def test_a_tool_calls_title_keeps_its_result_in_sight(tmp_path, size):
    # At 80 columns the title was cut at the view's edge: "→ (12 + 30) * 7 + 1 =", its result unseen.
    from textual.widgets.collapsible import CollapsibleTitle

    from lovia.tui.widgets.tool_call_view import ToolCallView
    from tests.tui.conftest import type_and_send

    app = make_app(tmp_path / "lovia.db")
    async with app.run_test(size=size) as pilot:
        await type_and_send(pilot, "calculate (12 + 30) * 7 + 1")
        view = app.screen.query_one(ToolCallView)
        title = view.query_one(CollapsibleTitle)
        text = str(title.label)
        assert text.endswith("= 295"), text
        assert title.region.right <= view.region.right and title.size.height == 1
        await pilot.resize_terminal(56, 24)  # narrower: fitted again
        await settle(pilot)
        assert str(title.label).endswith("= 295") and title.region.right <= view.region.right


async def test_a_maximized_sessions_pane_shows_the_seconds_again(tmp_path, monkeypatch):
    # The options' times were fitted to the pane's usual 36 columns whatever its width: maximized
    # (f10), it still dropped the seconds.
    import re
    import time

    from lovia.tui import format
    from tests.tui.test_new_user_pass import stored_sessions

    db = tmp_path / "lovia.db"
    await stored_sessions(db, "alpha", "beta")
    later = time.time() + 90  # "1 min ago": with the seconds, the time no longer fits 30 columns
    monkeypatch.setattr(format, "clock", lambda: later)
    app = make_app(db)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("ctrl+b")
        await settle(pilot)
        options = app.screen.query_one("#session-list")
        with_seconds = re.compile(r"\d\d:\d\d:\d\d · 1 min ago")
        assert not with_seconds.search(str(options.get_option_at_index(0).prompt))
        await pilot.press("f10")
        await settle(pilot)
        assert with_seconds.search(str(options.get_option_at_index(0).prompt))
        await pilot.press("f10")  # restored: fitted to the pane again
        await settle(pilot)
        assert not with_seconds.search(str(options.get_option_at_index(0).prompt))


async def test_a_message_is_sent_without_the_empty_lines_after_it(tmp_path):
    # "hello" then ctrl+j twice was stored and shown with its two empty lines under it.
    from lovia import SQLiteSession

    db = tmp_path / "lovia.db"
    app = make_app(db)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        app.screen.chat.composer.focus()
        await pilot.pause()
        await pilot.press(*"hello  ", "ctrl+j", "ctrl+j", "enter")
        await settle(pilot)
        session_id = app.screen.chat.session_id
    async with SQLiteSession(db) as session:
        assert (await session.load(session_id))[0].text == "hello"


async def test_the_message_cursor_stays_in_sight_when_the_terminal_shrinks(tmp_path):
    """From 200x50 to 80x24 with the cursor on a message near the view's foot: the view kept its
    top, and the cursor's message went below it."""
    from lovia import SQLiteSession
    from lovia.entries import AssistantMessage, UserMessage

    async with SQLiteSession(tmp_path / "lovia.db", wal=True) as session:
        for n in range(12):
            await session.append("s-long", [UserMessage(text=f"question {n}"),
                                            AssistantMessage(text=f"answer {n}", agent="assistant")])
    app = make_app(tmp_path / "lovia.db")
    async with app.run_test(size=(200, 50)) as pilot:
        await settle(pilot)
        transcript = app.screen.chat.transcript
        transcript.focus()
        await pilot.press("home")
        await settle(pilot)
        for _ in range(10):  # down the view, to a message near its foot
            await pilot.press("down")
        await settle(pilot)
        assert transcript._shows(transcript.selected_view, transcript.scroll_y)
        await pilot.resize_terminal(80, 24)
        await settle(pilot)
        await pilot.pause(0.1)
        view = transcript.selected_view
        assert view is not None and transcript._shows(view, transcript.scroll_y)


@pytest.mark.parametrize("runs", [6, 300])
async def test_home_shows_the_first_runs_header(tmp_path, runs):
    """At 200x50, ``home`` from the end left the view two rows down: the first message, brought into
    view as it was selected from the end, was scrolled to after the view went to the top."""
    from lovia import SQLiteSession
    from lovia.entries import AssistantMessage, UserMessage

    async with SQLiteSession(tmp_path / "lovia.db", wal=True) as session:
        for r in range(runs):
            await session.append("s", [UserMessage(text=f"q {r}"), AssistantMessage(text=f"a {r}", agent="a")])
    app = make_app(tmp_path / "lovia.db")
    async with app.run_test(size=(200, 50)) as pilot:
        await settle(pilot)
        transcript = app.screen.chat.transcript
        transcript.focus()
        await settle(pilot)
        await pilot.press("home")
        await settle(pilot)
        await pilot.pause(0.2)
        assert transcript.scroll_y == 0 and transcript.selected == 0
