"""Snapshots of every pane and screen, in more than one theme and at 80x24, 100x30 and 160x45,
on a demo database at fixed times."""

from __future__ import annotations

import asyncio

import pytest

from lovia.tui import format
from lovia.tui.widgets.stored_markdown import StoredFence
from screenshots.demo_data import BASE_TIME, build, build_stopped_runs
from tests.tui.conftest import make_app, settle, wait_for

SIZE = (160, 45)
SIZES = {"80x24": (80, 24), "100x30": (100, 30), "160x45": SIZE}
THEMES = ["lovia-dark", "lovia-light"]


@pytest.fixture
def demo_db(tmp_path, monkeypatch):
    path = tmp_path / "demo.db"
    asyncio.run(build(path))
    monkeypatch.setattr(format, "clock", lambda: BASE_TIME + 600)  # relative ages read the same every time
    return path


def app_on(demo_db, theme):
    return make_app(demo_db, theme=theme)


def steady(run_before=None, *, press=()):
    """A ``run_before`` for ``snap_compare`` that runs ``run_before`` (or presses ``press``), then
    stops every text cursor on screen from blinking: a blinking cursor is drawn or not depending on
    the half second the snapshot falls in, so it is held visible (Textual's public ``cursor_blink``,
    and a TextArea's ``blink_timer``);
    and waits for the code blocks to be coloured (the first of a language is, in a thread)."""

    async def run(pilot):
        if press:
            await pilot.press(*press)
        if run_before is not None:
            await run_before(pilot)
        for widget in pilot.app.screen.query("Input"):
            widget.cursor_blink = False
        for widget in pilot.app.screen.query("TextArea"):
            # A TextArea draws its cursor only while blinking, in the blink's shown half: turned off
            # in the hidden half (a slow machine: CI once), the cursor was not drawn. Restarted, the
            # blink shows it (on a focused one), and its timer stopped keeps it so.
            widget.cursor_blink = False
            widget.cursor_blink = True
            widget.blink_timer.pause()
        await wait_for(pilot, lambda: all(fence.coloured_with is not None for fence in pilot.app.screen.query(StoredFence)))
        await pilot.pause()

    return run


@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize("theme", THEMES)
def test_main_screen(snap_compare, demo_db, theme, size):
    assert snap_compare(app_on(demo_db, theme), terminal_size=SIZES[size], run_before=steady())


def test_main_screen_high_contrast(snap_compare, demo_db):
    assert snap_compare(app_on(demo_db, "lovia-high-contrast"), terminal_size=SIZE, run_before=steady())


@pytest.mark.parametrize("theme", THEMES)
def test_sessions_over_the_conversation_at_80x24(snap_compare, demo_db, theme):
    assert snap_compare(app_on(demo_db, theme), terminal_size=(80, 24), run_before=steady(press=["ctrl+b"]))


@pytest.mark.parametrize("theme", THEMES)
def test_runs_and_inspector_over_the_conversation_at_80x24(snap_compare, demo_db, theme):
    async def show_runs(pilot):
        await pilot.press("ctrl+o")
        await wait_for(pilot, lambda: pilot.app.screen.inspected == "run-demo-interrupted")
        await pilot.pause()

    assert snap_compare(app_on(demo_db, theme), terminal_size=(80, 24), run_before=steady(show_runs))


def test_a_maximized_inspector(snap_compare, demo_db):
    async def maximize(pilot):
        await pilot.press("ctrl+o")  # the runs pane, folded at this width, over the conversation
        await pilot.pause()
        pilot.app.screen.query_one("CheckpointInspector").focus()
        await pilot.pause()
        await pilot.press("f10")
        await pilot.pause()

    assert snap_compare(app_on(demo_db, "lovia-dark"), terminal_size=(100, 30), run_before=steady(maximize))


@pytest.mark.parametrize("theme", THEMES)
def test_the_first_screen_at_80x24(snap_compare, tmp_path, theme):
    assert snap_compare(make_app(tmp_path / "empty.db", theme=theme), terminal_size=(80, 24), run_before=steady())


@pytest.mark.parametrize("theme", THEMES)
def test_help_screen(snap_compare, demo_db, theme):
    assert snap_compare(app_on(demo_db, theme), terminal_size=SIZE, run_before=steady(press=["f1"]))


def test_help_screen_at_80x24(snap_compare, demo_db):
    assert snap_compare(app_on(demo_db, "lovia-dark"), terminal_size=(80, 24), run_before=steady(press=["f1"]))


@pytest.mark.parametrize("size", ["80x24", "160x45"])
def test_help_screen_with_keys_moved_in_the_config(snap_compare, demo_db, size):
    """Keys moved by the config file's [keys] table: the help shows them underlined in the accent
    colour, with their default; the footer shows them too."""
    app = make_app(demo_db, theme="lovia-dark", keys={"app.help": ("f1", "question_mark"),
                                                       "main.toggle_sessions": ("f4",)})
    assert snap_compare(app, terminal_size=SIZES[size], run_before=steady(press=["f1"]))


def test_delete_confirmation_at_80x24(snap_compare, demo_db):
    async def ask(pilot):
        await pilot.press("ctrl+b", "delete")
        await wait_for(pilot, lambda: type(pilot.app.screen).__name__ == "ConfirmScreen")
        await pilot.pause()

    assert snap_compare(app_on(demo_db, "lovia-dark"), terminal_size=(80, 24), run_before=steady(ask))


@pytest.mark.parametrize("theme", THEMES)
def test_runs_list_and_inspector(snap_compare, demo_db, theme):
    async def focus_runs(pilot):
        pilot.app.screen.query_one("#run-list").focus()
        await wait_for(pilot, lambda: pilot.app.screen.inspected == "run-demo-interrupted")
        await pilot.pause()

    assert snap_compare(app_on(demo_db, theme), terminal_size=SIZE, run_before=steady(focus_runs))


@pytest.mark.parametrize("theme", THEMES)
def test_transcript_with_an_expanded_tool_call(snap_compare, demo_db, theme):
    async def expand(pilot):
        from lovia.tui.widgets.tool_call_view import ToolCallView

        transcript = pilot.app.screen.chat.transcript
        transcript.focus()
        await pilot.press("end")
        for _ in range(20):  # up to the open session's last tool call (three keys missed it: enter did nothing)
            if isinstance(transcript.selected_view, ToolCallView):
                break
            await pilot.press("up")
        assert isinstance(transcript.selected_view, ToolCallView)
        await pilot.press("enter")
        await pilot.pause()

    assert snap_compare(app_on(demo_db, theme), terminal_size=SIZE, run_before=steady(expand))


@pytest.mark.parametrize("theme", THEMES)
def test_delete_confirmation(snap_compare, demo_db, theme):
    async def ask(pilot):
        pilot.app.screen.query_one("#session-list").focus()
        await pilot.press("delete")
        await wait_for(pilot, lambda: type(pilot.app.screen).__name__ == "ConfirmScreen")
        await pilot.pause()

    assert snap_compare(app_on(demo_db, theme), terminal_size=SIZE, run_before=steady(ask))


@pytest.mark.parametrize("theme", THEMES)
def test_rename_prompt(snap_compare, demo_db, theme):
    async def ask(pilot):
        pilot.app.screen.query_one("#session-list").focus()
        await pilot.press("f2")
        await wait_for(pilot, lambda: type(pilot.app.screen).__name__ == "PromptScreen")
        await pilot.pause()

    assert snap_compare(app_on(demo_db, theme), terminal_size=SIZE, run_before=steady(ask))


@pytest.mark.parametrize("theme", THEMES)
def test_editing_a_message(snap_compare, demo_db, theme):
    async def edit(pilot):
        await pilot.press("ctrl+l")
        await wait_for(pilot, lambda: pilot.app.screen.chat.has_class("-editing"))
        # The composer takes focus after the edit's text is in: its cursor line shows only then.
        await wait_for(pilot, lambda: pilot.app.focused is pilot.app.screen.query_one("#composer"))
        await pilot.pause()

    assert snap_compare(app_on(demo_db, theme), terminal_size=SIZE, run_before=steady(edit))


def on_run(run_id: str, *, then=("w",)):
    """A ``run_before`` that puts the transcript cursor on a message of ``run_id``, then presses ``then``."""

    async def run(pilot):
        transcript = pilot.app.screen.chat.transcript
        transcript.focus()
        await pilot.pause()
        views = transcript.views
        transcript.selected = next(i for i, view in enumerate(views) if transcript.header_above(view).run_id == run_id)
        await pilot.press(*then)
        if "w" in then:
            await wait_for(pilot, lambda: type(pilot.app.screen).__name__ == "TimelineScreen")
        await pilot.pause()

    return run


@pytest.mark.parametrize("size", ["80x24", "160x45"])
def test_timeline_of_a_run(snap_compare, demo_db, size):
    """A stored run's waterfall: two model turns around a tool call."""
    assert snap_compare(app_on(demo_db, "lovia-dark"), terminal_size=SIZES[size],
                        run_before=steady(on_run("s-atlas-run-1")))


def test_timeline_of_an_interrupted_run_from_the_runs_list_at_80x24(snap_compare, demo_db):
    async def show(pilot):
        await pilot.press("ctrl+o")
        await wait_for(pilot, lambda: pilot.app.screen.inspected == "run-demo-interrupted")
        await pilot.press("w")
        await wait_for(pilot, lambda: type(pilot.app.screen).__name__ == "TimelineScreen")
        await pilot.pause()

    assert snap_compare(app_on(demo_db, "lovia-light"), terminal_size=(80, 24), run_before=steady(show))


@pytest.mark.parametrize("size", ["80x24", "160x45"])
def test_run_headers_say_where_time_went(snap_compare, demo_db, size):
    assert snap_compare(app_on(demo_db, "lovia-dark"), terminal_size=SIZES[size],
                        run_before=steady(on_run("s-atlas-run-0", then=())))


def test_sessions_longest_first_at_80x24(snap_compare, demo_db):
    assert snap_compare(app_on(demo_db, "lovia-dark"), terminal_size=(80, 24),
                        run_before=steady(press=["ctrl+b", "f3", "f3", "f3"]))


@pytest.fixture
def stopped_runs_db(demo_db):
    """The demo database with a run left behind every way one can be (see build_stopped_runs)."""
    asyncio.run(build_stopped_runs(demo_db))
    return demo_db


@pytest.mark.parametrize("size", ["80x24", "160x45"])
def test_runs_list_says_how_each_run_stopped(snap_compare, stopped_runs_db, size):
    async def show_runs(pilot):
        if size == "80x24":
            await pilot.press("ctrl+o")
        else:
            pilot.app.screen.query_one("#run-list").focus()
        await wait_for(pilot, lambda: pilot.app.screen.inspected == "run-demo-elsewhere")
        await pilot.pause()

    assert snap_compare(app_on(stopped_runs_db, "lovia-dark"), terminal_size=SIZES[size],
                        run_before=steady(show_runs))


@pytest.mark.parametrize("size", ["80x24", "160x45"])
def test_dangling_calls_marked_may_have_run(snap_compare, stopped_runs_db, size):
    async def decide(pilot):
        if size == "80x24":
            await pilot.press("ctrl+o")
        else:
            pilot.app.screen.query_one("#run-list").focus()
        await pilot.press("down", "down")
        await wait_for(pilot, lambda: pilot.app.screen.inspected == "run-demo-tools")
        await pilot.press("f6")
        inspector = pilot.app.screen.query_one("CheckpointInspector")
        calls = inspector.query_one("#dangling-calls")
        await wait_for(pilot, lambda: pilot.app.focused is calls and inspector.region.contains_region(calls.region))
        await pilot.pause()

    assert snap_compare(app_on(stopped_runs_db, "lovia-dark"), terminal_size=SIZES[size], run_before=steady(decide))


@pytest.mark.parametrize("size", ["80x24", "160x45"])
def test_a_session_forked_from_a_message(snap_compare, demo_db, size):
    """f on the newest session's first answer: the fork (that exchange) is open, its origin beside its title."""
    from unittest import mock

    async def fork(pilot):
        pilot.app.screen.chat.transcript.focus()
        await pilot.press("home", "down")
        with mock.patch("time.time", return_value=BASE_TIME + 2 * 3600):  # the fork records when it was made
            await pilot.press("f")
            await wait_for(pilot, lambda: pilot.app.screen.chat.session_id != "s-atlas" and pilot.app.focused
                           is pilot.app.screen.chat.composer)
            await pilot.app.workers.wait_for_complete()
        pilot.app.clear_notifications()
        await settle(pilot)  # the fork opens at its end, once laid out (code highlighted, the view anchored)
        transcript = pilot.app.screen.chat.transcript
        await wait_for(pilot, lambda: transcript.max_scroll_y == 0 or transcript.scroll_y >= transcript.max_scroll_y)
        chat, lists = pilot.app.screen.chat, pilot.app.screen.query("#session-list")
        # Where the sessions list is shown, its highlight has moved on to the fork (the lists refresh after it opens).
        await wait_for(pilot, lambda: not lists or (lists.first().highlighted is not None and lists.first()
                       .get_option_at_index(lists.first().highlighted).id == chat.session_id))
        await pilot.pause()

    assert snap_compare(app_on(demo_db, "lovia-dark"), terminal_size=SIZES[size], run_before=steady(fork))


def test_export_prompt_at_80x24(snap_compare, demo_db, monkeypatch):
    """ctrl+s asks where to write the open session, suggesting a file in the current directory."""
    monkeypatch.chdir("/")
    assert snap_compare(app_on(demo_db, "lovia-light"), terminal_size=(80, 24), run_before=steady(press=["ctrl+s"]))


async def _search_atlas(pilot):
    await pilot.press("ctrl+f")
    await wait_for(pilot, lambda: pilot.app.screen.__class__.__name__ == "SearchScreen")
    await pilot.press(*"atlas")
    await wait_for(pilot, lambda: getattr(pilot.app.screen, "searched", None) == "atlas")
    await pilot.pause()


@pytest.mark.parametrize("size", ["80x24", "160x45"])
def test_search_screen(snap_compare, demo_db, size):
    assert snap_compare(app_on(demo_db, "lovia-dark"), terminal_size=SIZES[size], run_before=steady(_search_atlas))


def test_search_hit_opened_at_80x24(snap_compare, demo_db):
    async def open_hit(pilot):
        await _search_atlas(pilot)
        await pilot.press("down", "down", "enter")
        await wait_for(pilot, lambda: pilot.app.screen.__class__.__name__ == "MainScreen")
        await settle(pilot)

    assert snap_compare(app_on(demo_db, "lovia-dark"), terminal_size=(80, 24), run_before=steady(open_hit))


def trash_a_session(db, session_id: str = "s-groceries") -> None:
    """Move ``session_id`` of the demo file to the trash, deleted 5 minutes before the tests' clock."""
    import sqlite3

    from lovia import SQLiteSession

    async def trash():
        async with SQLiteSession(db, wal=True) as session:
            await session.trash_session(session_id)

    asyncio.run(trash())
    with sqlite3.connect(db) as conn:
        conn.execute("UPDATE lovia_trash SET deleted_at = ?", (BASE_TIME + 300,))
    conn.close()


@pytest.mark.parametrize("size", ["80x24", "160x45"])
def test_the_trash(snap_compare, demo_db, size):
    """f8: the deleted session with its title, when it was deleted, its size and when it is purged."""
    trash_a_session(demo_db)

    async def open_trash(pilot):
        await pilot.press("f8")
        await wait_for(pilot, lambda: type(pilot.app.screen).__name__ == "TrashScreen" and pilot.app.screen.items)
        await pilot.pause()

    assert snap_compare(app_on(demo_db, "lovia-dark"), terminal_size=SIZES[size], run_before=steady(open_trash))

