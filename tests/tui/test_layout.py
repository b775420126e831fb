"""Every terminal size from 80x24 up: the conversation gets most of the width, side panes fold
away below a width and come back by key, any pane can be maximized, and a resize mid-answer is safe."""

from __future__ import annotations

import asyncio

import pytest

from lovia import Agent, SQLiteSession, UserMessage, tool
from lovia.models import ScriptedModel, ScriptedTurn, call
from lovia.tui.screens.main import MEDIUM, WIDE
from lovia.tui.widgets.chat_panel import ChatPanel
from lovia.tui.widgets.run_header import RunHeader
from tests.tui.conftest import make_app, settle, told, wait_for


async def two_sessions(db) -> None:
    async with SQLiteSession(db, wal=True) as session:
        await session.append("s-a", [UserMessage(text="Atlas launch plan")])
        await session.append("s-b", [UserMessage(text="Groceries for the week")])


def shown(app, selector: str) -> bool:
    """Is the widget on screen (displayed, with its ancestors, and given room)?"""
    widget = app.screen.query_one(selector)
    return widget.display and all(a.display for a in widget.ancestors if hasattr(a, "display")) \
        and widget.region.width > 0


@pytest.mark.parametrize("size", [(80, 24), (88, 24), (100, 30), (120, 30), (160, 45), (220, 60)])
async def test_every_size_starts_and_the_conversation_gets_most_of_the_width(tmp_path, size):
    await two_sessions(tmp_path / "lovia.db")
    app = make_app(tmp_path / "lovia.db")
    async with app.run_test(size=size) as pilot:
        await pilot.pause()
        chat = app.screen.query_one(ChatPanel)
        width = size[0]
        assert chat.region.width > width / 2
        assert chat.composer.content_size.width > 0 and app.focused is chat.composer
        assert shown(app, "SessionsPane") == (width >= MEDIUM)
        assert shown(app, "#side") == (width >= WIDE)


async def test_at_80_columns_the_sessions_and_runs_come_back_as_overlays(tmp_path):
    db = tmp_path / "lovia.db"
    await two_sessions(db)
    app = make_app(db)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)  # the start-up check of finished runs reloads the lists: before the keys
        chat = app.screen.chat
        assert not shown(app, "SessionsPane") and not shown(app, "#side")

        await pilot.press("ctrl+b")
        await pilot.pause()
        assert shown(app, "SessionsPane") and app.focused.id == "session-list"
        assert chat.region.width == 80  # over the conversation, not beside it
        sessions = app.screen.query_one("#session-list")
        await wait_for(pilot, lambda: sessions.highlighted == 0)  # the open session, once the list has loaded
        await pilot.press("down", "enter")  # the second session
        await settle(pilot)
        assert chat.session_id == "s-a"
        assert not shown(app, "SessionsPane") and app.focused is chat.composer  # folded again

        await pilot.press("ctrl+o")
        await pilot.pause()
        assert shown(app, "#side") and app.focused.id == "run-list"
        await pilot.press("ctrl+b")  # one overlay at a time
        await pilot.pause()
        assert shown(app, "SessionsPane") and not shown(app, "#side") and app.focused.id == "session-list"
        await pilot.press("escape")
        await pilot.pause()
        assert not shown(app, "SessionsPane") and app.focused is chat.composer

        await pilot.press("ctrl+o")
        await pilot.pause()
        await pilot.press("f6")  # the inspector, in the same overlay
        await pilot.pause()
        assert shown(app, "#side") and type(app.focused).__name__ == "CheckpointInspector"
        await pilot.press("f6")  # on to the conversation (the folded sessions pane skipped): the overlay folds
        await pilot.pause()
        assert not shown(app, "#side") and app.focused is chat.transcript


async def test_f6_moves_only_between_panes_on_screen(tmp_path):
    app = make_app(tmp_path / "lovia.db")
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        seen = []
        for _ in range(4):
            await pilot.press("f6")
            seen.append(app.focused.id)
        assert seen == ["composer", "transcript", "composer", "transcript"] or \
            seen == ["transcript", "composer", "transcript", "composer"]
        await pilot.press("shift+f6")
        assert app.focused.id in ("transcript", "composer")


async def test_on_a_wide_screen_the_same_keys_hide_and_show_the_side_panes(tmp_path):
    await two_sessions(tmp_path / "lovia.db")
    app = make_app(tmp_path / "lovia.db")
    async with app.run_test(size=(160, 45)) as pilot:
        await pilot.pause()
        chat = app.screen.chat
        width = chat.region.width
        app.screen.query_one("#session-list").focus()
        await pilot.press("ctrl+b")
        await pilot.pause()
        assert not shown(app, "SessionsPane") and chat.region.width > width
        assert app.focused is chat.composer  # focus left the pane that went away
        await pilot.press("ctrl+o")
        await pilot.pause()
        assert not shown(app, "#side") and chat.region.width == 160
        await pilot.press("ctrl+b", "ctrl+o")
        await pilot.pause()
        assert shown(app, "SessionsPane") and shown(app, "#side") and chat.region.width == width


@pytest.mark.parametrize("size", [(80, 24), (160, 45)])
async def test_the_focused_pane_can_be_maximized_and_restored(tmp_path, size):
    await two_sessions(tmp_path / "lovia.db")
    app = make_app(tmp_path / "lovia.db")
    async with app.run_test(size=size, notifications=True) as pilot:
        await pilot.pause()
        screen = app.screen
        await pilot.press("f10")
        await pilot.pause()
        if size == (80, 24):  # nothing beside the conversation: f10 says so (it seemed to do nothing)
            assert screen.maximized is None
            assert any("fills the window already" in n.message for n in told(app))
        else:
            assert screen.maximized is screen.chat and screen.chat.region.width == size[0]
            await pilot.press("f10")
            await pilot.pause()
            assert screen.maximized is None

        if screen.folded("sessions"):
            await pilot.press("ctrl+b")  # the sessions pane as an overlay, maximized
        else:
            screen.query_one("#session-list").focus()
        await pilot.pause()
        await pilot.press("f10")
        await pilot.pause()
        sessions = screen.query_one("SessionsPane")
        assert screen.maximized is sessions and sessions.region.width == size[0]
        assert not screen.chat.region.width  # nothing else is on screen
        await pilot.press("escape")  # nothing running: escape restores, as in Textual
        await pilot.pause()
        assert screen.maximized is None


async def test_resizing_to_80_columns_while_an_answer_streams(tmp_path):
    # The composer is empty while an answer streams, so it shows its placeholder: at 80
    # columns beside fixed side panes that left it no width at all, and wrapping there raised.
    started, release = asyncio.Event(), asyncio.Event()

    @tool
    async def step() -> str:
        """One slow step."""
        started.set()
        await release.wait()
        return "step done"

    model = ScriptedModel([ScriptedTurn(text="Working on it. ", tool_calls=[call("step", {}, call_id="c1")]),
                           "All done."])
    app = make_app(tmp_path / "lovia.db", agent=Agent(name="assistant", model=model, tools=[step]))
    async with app.run_test(size=(160, 45)) as pilot:
        chat = app.screen.chat
        await pilot.press(*"go", "enter")
        await wait_for(pilot, started.is_set)
        await pilot.resize_terminal(80, 24)
        await pilot.pause()
        assert chat.running and chat.region.width == 80 and chat.composer.content_size.width > 0
        await pilot.resize_terminal(100, 30)
        await pilot.pause()
        await pilot.resize_terminal(60, 20)  # below what lovia promises: still no crash
        await pilot.pause()
        release.set()
        await settle(pilot)
        assert not chat.running
        assert chat.transcript.query_one(RunHeader).has_class("-completed")


async def test_an_overlay_open_when_the_terminal_widens_takes_its_place_beside_the_conversation(tmp_path):
    await two_sessions(tmp_path / "lovia.db")
    app = make_app(tmp_path / "lovia.db")
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        await pilot.press("ctrl+b")
        await pilot.pause()
        await pilot.resize_terminal(160, 45)
        await pilot.pause()
        sessions, chat = app.screen.query_one("SessionsPane"), app.screen.chat
        assert shown(app, "SessionsPane") and sessions.region.right <= chat.region.x  # beside, not over
        await pilot.resize_terminal(80, 24)
        await pilot.pause()
        assert chat.region.width == 80


@pytest.mark.parametrize("size", [(80, 24), (160, 45)])
async def test_a_long_title_stays_on_one_line_cut_with_an_ellipsis(tmp_path, size):
    # At 80 columns a long first message titled the chat on two lines, the second holding a word.
    db = tmp_path / "lovia.db"
    long = "This is a very long first message that should become the title of the session " * 3
    async with SQLiteSession(db, wal=True) as session:
        await session.append("s-long", [UserMessage(text=long)])
    app = make_app(db)
    async with app.run_test(size=size) as pilot:
        await settle(pilot)
        title = app.screen.query_one("#chat-title")
        assert app.screen.chat.session_id == "s-long"
        assert title.region.height == 1
        shown = "".join(segment.text for segment in title.render_line(0)).rstrip()
        assert shown.endswith("…") and shown.strip().startswith("This is a very long")


@pytest.mark.parametrize("title", [
    "A very long session title about the quarterly infrastructure migration plan for the platform team, "
    "with notes on rollout.",
    "東京の天気を調べて、明日の予定を立ててください。できれば詳しく、週末の予定も一緒に考えてください。"
    "関西の天気も調べて、旅行の計画も立ててください。",
])
async def test_a_long_title_is_cut_to_the_width_it_has_and_again_on_resize(tmp_path, title):
    # It was cut at 80 characters whatever the width: at 200 columns, or maximized (f10), a
    # 121-character title ended in "plan for…" with most of the line empty.
    from rich.cells import cell_len

    db = tmp_path / "lovia.db"
    async with SQLiteSession(db, wal=True) as session:
        await session.append("s-long", [UserMessage(text="hello")])
        await session.rename_session("s-long", title)
    assert cell_len(title) > 120
    app = make_app(db)

    def shown() -> tuple[str, int]:
        line = app.screen.query_one("#chat-title")
        return "".join(segment.text for segment in line.render_line(0)).strip(), line.content_region.width

    def cut_to_its_width() -> str:
        text, width = shown()
        if cell_len(title) <= width:
            assert text == title
        else:  # as much as fits, and the ellipsis (a double-width character may leave a cell free)
            assert text.endswith("…") and width - 1 <= cell_len(text) <= width, (text, width)
            assert title.startswith(text[:-1].rstrip())
        return text

    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        assert app.screen.chat.session_id == "s-long"
        assert cell_len(cut_to_its_width()) < 80
        await pilot.resize_terminal(200, 50)
        await wait_for(pilot, lambda: shown()[1] > 120)
        await settle(pilot)
        assert cell_len(cut_to_its_width()) > 110  # more than the 80 it was cut at
        await pilot.press("f10")  # the conversation maximized
        await wait_for(pilot, lambda: shown()[1] > 190)
        await settle(pilot)
        assert cut_to_its_width() == title  # all of it fits now
        await pilot.resize_terminal(80, 24)
        await wait_for(pilot, lambda: shown()[1] < 80)
        await settle(pilot)
        assert cell_len(cut_to_its_width()) < 80


async def test_at_80_columns_every_listed_session_takes_its_three_lines(tmp_path):
    # A line too long for the pane wrapped: the open session's "▶ " pushed its title's … onto a
    # line of its own, "· 1 min ago" its "ago", so entries took 3 or 4 lines as it happened.
    from lovia import AssistantMessage

    db = tmp_path / "lovia.db"
    async with SQLiteSession(db, wal=True) as session:
        for i in range(8):
            await session.append(f"s-{i}", [UserMessage(text=f"Write me a long markdown doc number {i}"),
                                            AssistantMessage(text="ok")])
    app = make_app(db)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("ctrl+b")
        await settle(pilot)
        listed = app.screen.query_one("#session-list")
        lines = ["".join(segment.text for segment in listed.render_line(y)).strip()
                 for y in range(listed.size.height)]
        assert [line.split(" ")[1] for line in lines[1::3]] == ["entries"] * len(lines[1::3]), lines
        assert lines[0].startswith("▶ Write me a long") and lines[0].endswith("…")


async def test_keys_typed_fast_into_the_sessions_list_all_reach_the_filter(tmp_path):
    # Keys that reach the list before the filter has focus go to the filter in order; a space
    # among them was dropped ("shared sess" filtered for "sharedsess": nothing matched).
    from textual import events

    db = tmp_path / "lovia.db"
    async with SQLiteSession(db, wal=True) as session:
        await session.append("s-shared", [UserMessage(text="a shared session")])
        await session.append("s-other", [UserMessage(text="another one")])
    app = make_app(db)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("ctrl+b")
        await pilot.pause()
        listed = app.screen.query_one("#session-list")
        listed.focus()
        await pilot.pause()
        for character in "shared sess":  # all at once, before any of them is handled
            listed.post_message(events.Key("space" if character == " " else character, character))
        await settle(pilot)
        assert app.screen.query_one("#session-filter").value == "shared sess"
        assert [s.session_id for s in app.screen.query_one("SessionsPane").sessions] == ["s-shared"]


@pytest.mark.parametrize("size", [(80, 24), (160, 45)])
async def test_a_title_in_chinese_or_japanese_is_cut_to_the_lists_width_in_cells(tmp_path, size):
    """Cut at the list's width in characters, a line of double-width characters took twice the room:
    the runs list wrapped it, "in" alone on a line and the session's title on the next two."""
    from rich.cells import cell_len

    from lovia import RunHead, RunSnapshot, SQLiteCheckpointer
    from lovia.tui import format

    db = tmp_path / "lovia.db"
    asked = "東京の天気を調べて、明日の予定を立ててください。できれば詳しく"
    async with SQLiteCheckpointer(db, wal=True) as checkpointer:
        head = RunHead(agent="assistant", status="interrupted", session_id="s-jp", first_input=asked)
        await checkpointer.save(RunSnapshot("run-jp", head, [UserMessage(text=asked)]))
    app = make_app(db)
    async with app.run_test(size=size) as pilot:
        await settle(pilot)
        if size[0] < 150:
            await pilot.press("ctrl+o")  # the runs pane, over the conversation
            await settle(pilot)
        runs = app.screen.query_one("#run-list")
        width = runs.scrollable_content_region.width - 2
        lines = runs.get_option_at_index(0).prompt.plain.splitlines()
        assert lines[1].startswith("東京の天気") and lines[1].endswith("…")
        assert all(cell_len(line) <= width for line in lines), lines
    assert format.one_line(asked, 10) == "東京の天…"  # 9 cells: a fifth would straddle the cut and format.one_line("Tokyo weather", 10) == "Tokyo wea…"


@pytest.mark.parametrize("size", [(80, 24), (160, 45)])
@pytest.mark.parametrize(("key", "pane", "list_id"), [("ctrl+b", "SessionsPane", "session-list"),
                                                      ("ctrl+o", "RunsPane", "run-list")])
async def test_a_pane_key_with_a_pane_maximized_restores_the_layout_and_shows_that_pane(tmp_path, size, key, pane,
                                                                                        list_id):
    """ctrl+b with the conversation maximized hid the sessions pane behind it: nothing changed on
    screen, and after f10 the pane was gone."""
    await two_sessions(tmp_path / "lovia.db")
    app = make_app(tmp_path / "lovia.db")
    async with app.run_test(size=size) as pilot:
        await pilot.pause()
        screen = app.screen
        if size == (80, 24):  # f10 leaves a conversation alone on screen as it is: maximized when wider, say
            screen.maximized = screen.chat
        else:
            await pilot.press("f10")
        await pilot.pause()
        assert screen.maximized is screen.chat
        await pilot.press(key)
        await pilot.pause()
        shown = screen.query_one(pane)
        assert screen.maximized is None and shown.region.width > 0 and app.focused.id == list_id


@pytest.mark.parametrize("size", [(80, 24), (160, 45)])
async def test_opening_a_session_from_the_maximized_list_restores_the_layout(tmp_path, size):
    """Focus went to the message box, hidden behind the maximized list: typed words went there unseen."""
    await two_sessions(tmp_path / "lovia.db")
    app = make_app(tmp_path / "lovia.db")
    async with app.run_test(size=size) as pilot:
        await pilot.pause()
        screen = app.screen
        if screen.folded("sessions"):
            await pilot.press("ctrl+b")
        else:
            screen.query_one("#session-list").focus()
        await pilot.pause()
        await pilot.press("f10")
        await pilot.pause()
        assert screen.maximized is screen.query_one("SessionsPane")
        await pilot.press("down", "enter")
        await settle(pilot)
        assert screen.maximized is None and app.focused.id == "composer" and app.focused.region.width > 0


async def test_a_dangling_calls_yellow_reads_on_the_light_theme(tmp_path):
    """Rich's yellow (a dangling call's row, its entry in the inspector) was drawn #CB9000 on
    lovia-light's #FAFAF7 background: 2.7:1, below the 4.5:1 text needs."""
    from rich.color import Color

    def luminance(rgb) -> float:
        def channel(value: int) -> float:
            v = value / 255
            return v / 12.92 if v <= 0.03928 else ((v + 0.055) / 1.055) ** 2.4
        red, green, blue = rgb
        return 0.2126 * channel(red) + 0.7152 * channel(green) + 0.0722 * channel(blue)

    app = make_app(tmp_path / "lovia.db", theme="lovia-light")
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        yellow = Color.parse("yellow").get_truecolor(app.ansi_theme)
        background = Color.parse(app.current_theme.background).get_truecolor()
        lighter, darker = sorted([luminance(yellow), luminance(background)], reverse=True)
        assert (lighter + 0.05) / (darker + 0.05) >= 4.5
        await pilot.press("ctrl+t")  # to the next theme and back: still so
        app.theme = "lovia-light"
        await settle(pilot)
        assert Color.parse("yellow").get_truecolor(app.ansi_theme) == yellow


@pytest.mark.parametrize("size", [(80, 24), (200, 50)])
async def test_a_notice_leaves_the_message_box_and_what_is_typed_in_sight(tmp_path, size):
    # At the bottom right, Textual's place for notices, one covered the message box's right half at
    # 80x24: what was typed there was hidden for the notice's five seconds.
    await two_sessions(tmp_path / "lovia.db")
    app = make_app(tmp_path / "lovia.db")
    async with app.run_test(size=size, notifications=True) as pilot:
        await settle(pilot)
        composer = app.screen.chat.composer
        await pilot.press(*"a message typed while a notice shows, long enough to reach the right")
        await pilot.press("ctrl+r")  # nothing to resume here: a notice says so
        await wait_for(pilot, lambda: bool(app.screen.query("Toast")))
        toast = app.screen.query_one("Toast")
        assert not toast.region.overlaps(composer.region)
        assert toast.region.y > 0  # under the header: the app's title stays in sight


@pytest.mark.parametrize(("size", "keys", "close"), [
    ((80, 24), ["ctrl+o"], "escape"), ((80, 24), ["ctrl+b"], "escape"),
    ((200, 50), ["ctrl+b", "ctrl+b"], "ctrl+b"),  # shown beside: hidden, then shown with focus, hidden
])
async def test_a_pane_closed_gives_focus_back_where_it_was(tmp_path, size, keys, close):
    # From the conversation's message cursor, a look at the runs or the sessions and back: focus went to
    # the message box, and the cursor's place in the conversation was left behind.
    await two_sessions(tmp_path / "lovia.db")
    app = make_app(tmp_path / "lovia.db")
    async with app.run_test(size=size) as pilot:
        await settle(pilot)
        transcript = app.screen.chat.transcript
        transcript.focus()
        await pilot.pause()
        await pilot.press(*keys)
        await pilot.pause()
        assert app.focused is not transcript  # the pane's list has it
        await pilot.press(close)
        await pilot.pause()
        assert app.focused is transcript


async def test_four_notices_at_once_leave_the_message_box_in_sight_at_80x24(tmp_path):
    await two_sessions(tmp_path / "lovia.db")
    app = make_app(tmp_path / "lovia.db")
    async with app.run_test(size=(80, 24), notifications=True) as pilot:
        await settle(pilot)
        for n in range(4):
            app.notify(f"Notice {n}: a sentence long enough to take two lines of a notice at 80 columns.")
        await wait_for(pilot, lambda: len(app.screen.query("Toast")) == 4)
        await pilot.pause()
        composer = app.screen.chat.composer
        assert not any(toast.region.overlaps(composer.region) for toast in app.screen.query("Toast"))


@pytest.mark.parametrize("size", [(80, 24), (160, 45)])
async def test_a_notice_shows_its_last_line(tmp_path, size):
    """A new user's trial: at 80 columns a notice whose first line just filled the width lost its last
    line ("Forked: … The original is" without "unchanged."). Textual's notice rack keeps room for a
    scrollbar: its height was worked out at its full width, its notices wrapped two cells narrower."""
    from tests.tui.test_streaming_speed import painted

    app = make_app(tmp_path / "lovia.db")
    async with app.run_test(size=size, notifications=True) as pilot:
        await settle(pilot)
        for message in ("Forked: a new session with 13 entries of this one, open to go on from there. The "
                        "original is unchanged.",
                        "A run of this session (lovia-run-31b7) is being executed here; its answer would land "
                        "after your message: wait for it to finish, or stop it there, then send."):
            app.clear_notifications()
            app.notify(message)
            await wait_for(pilot, lambda: bool(app.screen.query("Toast")))
            await pilot.pause()
            toast = app.screen.query("Toast").last()
            rows = ["".join(text for text, _ in row) for row in painted(app, toast.region)]
            assert message.rsplit(" ", 1)[-1] in rows[-1], rows


@pytest.mark.parametrize("size", [(80, 24), (200, 50)])
async def test_notices_given_before_a_dialog_opens_leave_it_and_an_error_stays_clear_of_its_keys(tmp_path, size):
    # A trial exported (ctrl+s, enter), then searched at once (ctrl+f): "Exported 1 run … to" covered
    # the end of what was typed in the search box for its five seconds, and so over the help screen
    # and the export's own dialog. Placed apart on the main screen only, a notice given just before
    # a dialog opened once showed twice, there and at the dialog's bottom right over its keys.
    from lovia.tui.screens.prompt import PromptScreen
    from tests.tui.conftest import type_and_send
    from tests.tui.test_streaming_speed import painted

    app = make_app(tmp_path / "lovia.db")
    async with app.run_test(size=size, notifications=True) as pilot:
        await type_and_send(pilot, "hello")
        app.notify("Exported 1 run (2 entries) to ./lovia-s-1.md")
        app.notify("The model refused: an error given just before the dialog opens.", severity="error")
        await wait_for(pilot, lambda: len(app.screen.query("Toast")) == 2)
        await pilot.press("ctrl+s")
        await wait_for(pilot, lambda: isinstance(app.screen, PromptScreen))
        await pilot.pause()
        await pilot.pause()
        dialog_toasts = app.screen.query("Toast")
        assert [toast.render().plain for toast in dialog_toasts] == [
            "The model refused: an error given just before the dialog opens."]
        # Seen once: the screen under the dialog shows through it, and shows none
        assert not [screen for screen in app.screen_stack[:-1] for rack in screen.query("ToastRack") if rack.display]
        shown = "\n".join("".join(text for text, _ in row) for row in painted(app, app.screen.region))
        assert shown.count("The model refused") == 1 and "Exported" not in shown
        answer = app.screen.query_one("#answer")
        hint_row = max(w.region.bottom for w in app.screen.query("Static") if "escape" in str(w.render()))
        assert not any(toast.region.overlaps(answer.region) or toast.region.y <= hint_row <= toast.region.bottom
                       for toast in dialog_toasts)
        await pilot.press("escape")
        await wait_for(pilot, lambda: not isinstance(app.screen, PromptScreen))
        await pilot.pause()
        assert [toast.render().plain for toast in app.screen.query("Toast")] == [
            "The model refused: an error given just before the dialog opens."]  # back with its screen
