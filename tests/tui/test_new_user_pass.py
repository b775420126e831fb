"""Defects a new user met in a real terminal (80x24 and wider), each pinned by the pilot."""

from __future__ import annotations

from pathlib import Path

import pytest
from textual import events

from lovia import AssistantMessage, RunHead, RunSnapshot, SQLiteCheckpointer, SQLiteSession, UserMessage
from lovia.tui import format
from lovia.tui.screens.main import MainScreen
from lovia.tui.widgets import lists
from lovia.tui.widgets.notice import NoticeView
from tests.tui.conftest import make_app, settle, told, type_and_send, wait_for
from tests.tui.test_app import _interrupted_run
from tests.tui.test_running_elsewhere import plain
from tests.tui.test_several_windows import run_in_another_process, stored_session

T = 1796212800.0  # 2026-12-02 12:00:00 UTC


def burst(app, *keys: str) -> None:
    """Queue ``keys`` all at once, as a terminal delivers a fast typist's keys in one read
    (the pilot's press lets the app go idle between keys, so a key never overtakes a dialog)."""
    for key in keys:
        character = key if len(key) == 1 else ("\r" if key == "enter" else None)
        app.post_message(events.Key("space" if key == " " else key, character))


async def stored_sessions(db, *titles: str, at: float = T) -> list[str]:
    """One stored session per title (the first given is the most recent), each with one run; their ids."""
    ids = []
    async with SQLiteSession(db, wal=True) as session, SQLiteCheckpointer(db, wal=True):
        for i, title in enumerate(reversed(titles)):
            session_id = f"s-{i:012x}"
            await session.append(session_id, [UserMessage(text=title), AssistantMessage(text="ok")],
                                 run_id=f"run-{i}")
            await session.rename_session(session_id, title)
            ids.append(session_id)
    return list(reversed(ids))


async def questions_and_answers(tmp_path: Path, *, runs: int, lines: int) -> Path:
    """A file holding session ``s-long``: ``runs`` runs of a question and an answer of ``lines`` paragraphs."""
    db = tmp_path / "lovia.db"
    async with SQLiteSession(db, wal=True) as session:
        for i in range(runs):
            answer = "\n\n".join(f"line {j} of answer {i}" for j in range(lines))
            await session.append("s-long", [UserMessage(text=f"question {i}"), AssistantMessage(text=answer)])
    return db


async def one_interrupted_run_and_a_held_clock(tmp_path, monkeypatch) -> tuple[Path, list[float]]:
    """A file holding one interrupted run (session ``s-a``) stopped at ``T``, and the lists' clock
    held at ``T + 1``: the test moves it by setting the list's one item."""
    db = tmp_path / "lovia.db"
    async with SQLiteCheckpointer(db, wal=True) as checkpointer:
        head = RunHead(agent="assistant", status="interrupted", session_id="s-a", first_input="do it",
                       started_at=T, updated_at=T)
        await checkpointer.save(RunSnapshot("run-x", head, [UserMessage(text="do it")]))
    now = [T + 1]
    monkeypatch.setattr(format, "clock", lambda: now[0])
    return db, now


async def test_ages_in_the_lists_move_on_while_nobody_writes(tmp_path, monkeypatch):
    db, now = await one_interrupted_run_and_a_held_clock(tmp_path, monkeypatch)
    monkeypatch.setattr(lists, "AGES_REFRESH_SECONDS", 0.05)
    app = make_app(db)
    async with app.run_test(size=(160, 45)) as pilot:
        await settle(pilot)
        sessions = app.screen.query_one("#session-list")
        runs = app.screen.query_one("#run-list")
        assert "just now" in plain(sessions.get_option_at_index(0).prompt)
        assert "just now" in plain(runs.get_option_at_index(0).prompt)
        now[0] = T + 180  # nothing is written: only the clock moves
        await wait_for(pilot, lambda: "3 min ago" in plain(sessions.get_option_at_index(0).prompt))
        await wait_for(pilot, lambda: "3 min ago" in plain(runs.get_option_at_index(0).prompt))


async def test_ages_in_the_lists_read_true_to_the_second_and_unchanged_lines_are_left_alone(tmp_path, monkeypatch):
    # Ages were worked out again every 30 s: "42 s ago" could mean 71.
    db, now = await one_interrupted_run_and_a_held_clock(tmp_path, monkeypatch)
    app = make_app(db)
    async with app.run_test(size=(160, 45)) as pilot:
        await settle(pilot)
        sessions = app.screen.query_one("#session-list")
        runs = app.screen.query_one("#run-list")
        shown = sessions.get_option_at_index(0).prompt, runs.get_option_at_index(0).prompt
        await pilot.pause(lists.AGES_REFRESH_SECONDS * 2.5)  # ticks that change nothing draw nothing
        assert (sessions.get_option_at_index(0).prompt, runs.get_option_at_index(0).prompt) == shown
        assert sessions.get_option_at_index(0).prompt is shown[0] and runs.get_option_at_index(0).prompt is shown[1]
        now[0] = T + 42
        await wait_for(pilot, lambda: "42 s ago" in plain(sessions.get_option_at_index(0).prompt)
                       and "42 s ago" in plain(runs.get_option_at_index(0).prompt), give_up_after=5)


async def test_lists_folded_away_are_not_redrawn_and_read_true_once_shown(tmp_path, monkeypatch):
    # At 80 columns both lists are folded away, yet their ages were redrawn every second: in
    # Textual, a list laid out while hidden in the same frame as a toast going (a notice timing
    # out) left that toast painted on the terminal until the next layout (seen in tmux; not in
    # a pilot's screenshot, which paints everything afresh).
    db, now = await one_interrupted_run_and_a_held_clock(tmp_path, monkeypatch)
    app = make_app(db)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        sessions = app.screen.query_one("#session-list")
        runs = app.screen.query_one("#run-list")
        shown = sessions.get_option_at_index(0).prompt, runs.get_option_at_index(0).prompt
        now[0] = T + 42
        await pilot.pause(lists.AGES_REFRESH_SECONDS * 2.5)
        assert sessions.get_option_at_index(0).prompt is shown[0] and runs.get_option_at_index(0).prompt is shown[1]
        for key, options in (("ctrl+b", sessions), ("ctrl+o", runs)):
            await pilot.press(key)
            await wait_for(pilot, lambda options=options: "42 s ago" in plain(options.get_option_at_index(0).prompt),
                           give_up_after=5)


async def test_up_and_down_stop_at_the_ends_of_the_sessions_list(tmp_path):
    db = tmp_path / "lovia.db"
    await stored_sessions(db, "newest", "middle", "oldest")
    app = make_app(db)
    async with app.run_test(size=(160, 45)) as pilot:
        await settle(pilot)
        options = app.screen.query_one("#session-list")
        options.focus()
        await pilot.pause()
        assert options.highlighted == 0
        await pilot.press("up")
        assert options.highlighted == 0  # not wrapped round to the oldest
        await pilot.press("down", "down", "down", "down")
        assert options.highlighted == 2  # nor back to the newest


async def test_the_cursor_on_the_last_message_counts_as_back_at_the_end(tmp_path):
    db = tmp_path / "lovia.db"
    await stored_session(db, "s-shared")
    app = make_app(db)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, MainScreen)
        screen._change_timer.pause()
        transcript = screen.chat.transcript
        transcript.focus()
        await pilot.press("up", "up")  # reading the first message
        await settle(pilot)
        assert transcript.selected == 0

        await run_in_another_process(db, "s-shared", "run-elsewhere", "from another window")
        assert await screen.check_other_windows()
        assert transcript.run_ids == {"first"}  # the reader is away: it waits

        await pilot.press("end")  # back at the end, with the cursor still in the transcript
        await settle(pilot)
        await screen.check_other_windows()
        assert transcript.run_ids == {"first", "run-elsewhere"}
        assert transcript.has_focus and transcript.at_last_message  # the cursor follows the end


async def test_the_sessions_filter_matches_titles_and_an_id_only_when_the_query_looks_like_one(tmp_path):
    db = tmp_path / "lovia.db"
    ids = await stored_sessions(db, "groceries", "launch plan")
    app = make_app(db)
    async with app.run_test(size=(160, 45)) as pilot:
        await settle(pilot)
        pane = app.screen.query_one("SessionsPane")
        filter_box = app.screen.query_one("#session-filter")

        async def listed(query: str) -> set[str]:
            filter_box.value = query
            await settle(pilot)
            return {info.session_id for info in pane.sessions}

        # Every id is s-000000000000 or s-000000000001: a single letter or digit is in both ids.
        assert await listed("l") == {ids[1]}  # in "launch plan" only (and in neither id)
        assert await listed("0") == set()  # in both ids, in neither title
        assert await listed("s") == {ids[0]}  # "groceries"; every id starts with s
        assert await listed("s-0") == set(ids)  # the start of an id
        assert await listed(ids[0][-4:]) == {ids[0]}  # 4 characters of one id ("0001")
        assert await listed("LAUNCH") == {ids[1]}


async def test_keys_typed_into_the_rename_prompt_at_once_extend_the_old_title(tmp_path):
    db = tmp_path / "lovia.db"
    await stored_sessions(db, "launch plan")
    app = make_app(db)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        app.screen.query_one("#session-list").focus()
        await pilot.pause()
        burst(app, "f2", "end", " ", "v", "2", "enter")  # in one read, as a fast typist's keys arrive
        pane = app.screen.query_one("SessionsPane")
        await wait_for(pilot, lambda: [info.title for info in pane.sessions] == ["launch plan v2"])
        assert isinstance(app.screen, MainScreen) and pane.query_text == ""  # no key went astray


async def test_the_open_session_deleted_in_another_window_is_said_and_the_welcome_shows(tmp_path):
    db = tmp_path / "lovia.db"
    await stored_session(db, "s-shared")
    app = make_app(db)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, MainScreen)
        screen._change_timer.pause()
        assert screen.chat.session_id == "s-shared" and not screen.has_class("-empty")
        screen.chat.transcript.focus()  # reading it
        await pilot.pause()

        async with SQLiteSession(db, wal=True) as other_window:
            await other_window.clear("s-shared")
        await screen.check_other_windows()
        await settle(pilot)
        assert any(n.message == "This session was deleted in another window." for n in told(app))
        assert screen.chat.session_id != "s-shared" and screen.has_class("-empty")  # a new session, with the welcome
        assert app.focused is screen.query_one("#composer")


async def test_a_reopened_session_says_under_its_stopped_or_failed_run_how_to_go_on_as_the_stop_did(tmp_path):
    # The quit question promises "ctrl+r resumes it the next time you open this session"; the session
    # opened with the run's header alone, and no word of ctrl+r.
    db = tmp_path / "lovia.db"
    await _interrupted_run(db, "run-x")
    async with SQLiteCheckpointer(db, wal=True) as checkpointer:
        head = RunHead(agent="assistant", status="failed", session_id="s-b", first_input="try",
                       error="ModelError: HTTP 502")
        await checkpointer.save(RunSnapshot("run-f", head, [UserMessage(text="try")]))
    app = make_app(db)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        chat = app.screen.chat
        await app.screen.open_session("s-a")
        await settle(pilot)
        last = chat.transcript.children[-1]
        assert isinstance(last, NoticeView) and last.text.startswith("Stopped. ctrl+r resumes it")
        await app.screen.open_session("s-b")
        await settle(pilot)
        last = chat.transcript.children[-1]
        # Its error, as it read live, and how to go on under it.
        assert isinstance(last, NoticeView) and last.text == "✗ HTTP 502" and last.hint.startswith(
            "This run failed and is not in the conversation yet: ctrl+r retries it")
        await pilot.press("ctrl+r")  # resumed: the run goes on, and the line under it goes with what it said
        await settle(pilot)
        assert not any(n.hint.startswith("This run failed") for n in chat.transcript.query(NoticeView))


async def test_a_discarded_run_leaves_the_inspector_for_the_run_now_selected(tmp_path):
    db = tmp_path / "lovia.db"
    await _interrupted_run(db, "run-x")
    await _interrupted_run(db, "run-y", "s-b")  # the newest: its session opens, it is listed first
    app = make_app(db)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        screen = app.screen
        assert screen.chat.session_id == "s-b"
        inspector = screen.query_one("CheckpointInspector")
        screen.chat.transcript.focus()
        await pilot.press("up")  # the cursor on run-y's last message: the inspector shows run-y
        await settle(pilot)
        assert inspector.run_id == "run-y"
        await pilot.press("ctrl+o")  # the runs list, run-y highlighted
        await settle(pilot)
        run_list = screen.query_one("#run-list")
        assert app.focused is run_list and run_list.get_option_at_index(run_list.highlighted).id == "run-y"

        await pilot.press("x")
        await wait_for(pilot, lambda: type(app.screen).__name__ == "ConfirmScreen")
        await pilot.press("y")
        await settle(pilot)
        assert [r.run_id for r in screen.query_one("RunsPane").runs] == ["run-x"]
        assert inspector.run_id == "run-x"  # what the list now has selected, not the run that is gone


async def test_the_palette_lists_lovias_actions_without_textuals_keys_panel(tmp_path):
    db = tmp_path / "lovia.db"
    await stored_sessions(db, "launch plan")
    app = make_app(db)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        titles = [command.title for command in app.get_system_commands(app.screen)]
        assert not {"Keys", "Theme", "Screenshot", "Maximize", "Minimize"} & set(titles)
        assert {"Quit", "Next theme", "Help", "Maximize pane"} <= set(titles)
        assert len(titles) == len(set(titles))  # each once


def footer_label(screen, key: str) -> str | None:
    """What the footer says ``key`` does now (the binding it shows for it), if it shows one."""
    active = screen.active_bindings.get(key)
    return active.binding.description if active is not None and active.binding.show and active.enabled else None


async def test_f10_reads_restore_while_a_pane_is_maximized_and_the_sessions_title_stays(tmp_path):
    db = tmp_path / "lovia.db"
    await stored_sessions(db, "launch plan")
    app = make_app(db)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        screen = app.screen
        assert footer_label(screen, "f10") == "Maximize"
        await pilot.press("ctrl+b", "f10")  # the sessions pane, over the conversation, then maximized
        await settle(pilot)
        pane = screen.query_one("SessionsPane")
        assert screen.maximized is pane
        assert footer_label(screen, "f10") == "Restore"
        header, title = screen.query_one("Header"), pane.query_one(".pane-title")
        assert title.region.height == 1 and title.region.y >= header.region.bottom  # not under the header
        await pilot.press("f10")
        await settle(pilot)
        assert screen.maximized is None and footer_label(screen, "f10") == "Maximize"


async def test_the_footer_at_80_columns_shows_whole_entries_and_f1_help(tmp_path):
    db = tmp_path / "lovia.db"
    await stored_sessions(db, "launch plan")
    app = make_app(db)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        for pane in ("#composer", "#session-list", "#run-list", "#transcript"):
            app.screen.query_one(pane).focus()
            await settle(pilot)
            *entries, (palette, palette_start, _) = app.screen.query_one("LoviaFooter").spans()
            assert "help" in [entry.action for entry, _, _ in entries], pane
            assert all(start < end <= palette_start - 1 for _, start, end in entries), pane  # whole, left of its line
            assert palette.action == "command_palette"
        await pilot.press("f1")
        await settle(pilot)
        assert type(app.screen).__name__ == "HelpScreen"


async def test_focus_into_the_transcript_puts_the_cursor_on_the_last_message_in_sight(tmp_path):
    # Focus came in with no message selected: the footer offered no copy or edit until `up`.
    from lovia.tui.widgets.footer import LoviaFooter

    db = tmp_path / "lovia.db"
    async with SQLiteSession(db, wal=True) as session, SQLiteCheckpointer(db, wal=True):
        for i in range(12):
            await session.append("s-long", [UserMessage(text=f"question {i}"),
                                            AssistantMessage(text=f"answer {i}\n\n" + "a line\n\n" * 6)],
                                 run_id=f"run-{i}")
    app = make_app(db)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        transcript = app.screen.chat.transcript
        footer = app.screen.query_one(LoviaFooter)
        assert transcript.selected_view is None
        await pilot.press("shift+tab")  # from the composer, back into the conversation
        await settle(pilot)
        assert transcript.has_focus
        last = transcript.views[-1]
        assert transcript.selected_view is last
        assert {"copy", "fork"} <= {entry.action for entry in footer.entries}
        await pilot.press("up")  # and the cursor goes on from there
        assert transcript.selected_view is transcript.views[-2]

        # A reader scrolled up is not sent back to the end: a message in sight takes the cursor.
        await pilot.press("tab")
        transcript._selected_view.select(False)
        transcript._set_selected(None)
        transcript.scroll_to(y=transcript.max_scroll_y // 2, animate=False, immediate=True)
        await settle(pilot)
        at = transcript.scroll_offset.y
        await pilot.press("shift+tab")
        await settle(pilot)
        assert transcript.has_focus and transcript.scroll_offset.y == at
        view = transcript.selected_view
        assert view is not None and view is not last
        region = view.virtual_region
        assert region.y < at + transcript.scrollable_content_region.height and region.bottom > at


async def test_opening_a_session_from_a_filtered_list_clears_the_filter(tmp_path):
    # The filter stayed: back in the list, it showed only the matches, and letters typed there
    # were added to the old filter ("launchg" matched nothing).
    db = tmp_path / "lovia.db"
    ids = await stored_sessions(db, "groceries", "launch plan", "garden")
    app = make_app(db)
    async with app.run_test(size=(160, 45)) as pilot:
        await settle(pilot)
        pane = app.screen.query_one("SessionsPane")
        filter_box = app.screen.query_one("#session-filter")
        app.screen.query_one("#session-list").focus()
        await pilot.press("l", "a", "u")
        await settle(pilot)
        assert [info.session_id for info in pane.sessions] == [ids[1]]
        await pilot.press("enter")  # in the filter: opens the one match
        await settle(pilot)
        assert app.screen.chat.session_id == ids[1] and app.focused is app.screen.chat.composer
        assert filter_box.value == ""
        assert [info.session_id for info in pane.sessions] == ids  # all of them again
        session_list = app.screen.query_one("#session-list")
        assert session_list.get_option_at_index(session_list.highlighted).id == ids[1]  # the open one
        session_list.focus()
        await pilot.press("g", "a", "r")  # a new filter, not "laugar"
        await settle(pilot)
        assert [info.session_id for info in pane.sessions] == [ids[2]]


async def test_pagedown_pressed_fast_goes_as_far_as_pressed_slowly(tmp_path):
    # Each key counted from where the last page's slide had got to, so fast presses fell short.
    db = await questions_and_answers(tmp_path, runs=5, lines=15)
    app = make_app(db)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        transcript = app.screen.chat.transcript
        transcript.focus()
        await pilot.press("home")
        await settle(pilot)
        page = transcript.scrollable_content_region.height
        assert transcript.scroll_y == 0 and transcript.max_scroll_y > 3 * page
        assert transcript.selected == 0
        burst(app, "pagedown", "pagedown", "pagedown")
        await pilot.pause()
        await pilot.wait_for_animation()
        await pilot.pause()
        assert transcript.scroll_y == 3 * page

        # The cursor goes along: left behind, c copied a message out of sight, and down went back to it.
        def in_sight(view) -> bool:
            region = view.virtual_region
            return region.y < transcript.scroll_y + page and region.bottom > transcript.scroll_y

        down_at = transcript.selected
        assert down_at > 0 and in_sight(transcript.selected_view)
        burst(app, "pageup", "pageup")
        await pilot.pause()
        await pilot.wait_for_animation()
        await pilot.pause()
        assert transcript.scroll_y == page
        assert transcript.selected < down_at and in_sight(transcript.selected_view)


@pytest.mark.parametrize("pane", ["#session-list", "#run-list", "CheckpointInspector"])
async def test_a_resize_that_folds_the_pane_with_focus_gives_the_message_box_focus(tmp_path, pane):
    # Focus stayed in the folded pane: no pane looked focused, and letters typed went into the
    # sessions filter, seen only when the pane came back.
    db = tmp_path / "lovia.db"
    await stored_sessions(db, "groceries", "launch plan")
    app = make_app(db)
    async with app.run_test(size=(160, 45)) as pilot:
        await settle(pilot)
        app.screen.query_one(pane).focus()
        await settle(pilot)
        await pilot.resize_terminal(80, 24)
        await settle(pilot)
        assert app.focused is app.screen.chat.composer
        await pilot.press("z", "e", "b")
        assert app.screen.chat.composer.text == "zeb"
        assert app.screen.query_one("#session-filter").value == ""

    app = make_app(db)
    async with app.run_test(size=(160, 45)) as pilot:  # the transcript stays in sight: it keeps focus
        await settle(pilot)
        app.screen.chat.transcript.focus()
        await settle(pilot)
        await pilot.resize_terminal(80, 24)
        await settle(pilot)
        assert app.focused is app.screen.chat.transcript


async def test_a_maximized_pane_keeps_focus_through_a_resize(tmp_path):
    db = tmp_path / "lovia.db"
    await stored_sessions(db, "groceries")
    app = make_app(db)
    async with app.run_test(size=(160, 45)) as pilot:
        await settle(pilot)
        app.screen.query_one("#run-list").focus()
        await pilot.press("f10")
        await settle(pilot)
        await pilot.resize_terminal(80, 24)
        await settle(pilot)
        assert app.screen.maximized is not None and app.focused is app.screen.query_one("#run-list")


@pytest.mark.parametrize("size", [(80, 24), (160, 45)])
async def test_the_cursor_comes_back_to_a_message_after_a_regenerate_and_its_undo(tmp_path, size):
    # The messages under the cursor were replaced and none took it: the footer lost copy, and c
    # said "Select a message to copy it".
    from lovia.tui.screens.confirm import ConfirmScreen
    from tests.tui.test_footer import footer_of

    app = make_app(tmp_path / "lovia.db")
    async with app.run_test(size=size) as pilot:
        await type_and_send(pilot, "hello")
        await type_and_send(pilot, "what can you do")
        transcript = app.screen.chat.transcript
        transcript.focus()
        await settle(pilot)
        assert transcript.selected_view is not None
        for key in ("ctrl+g", "u"):  # regenerate the last answer, then undo it
            await pilot.press(key)
            if key == "u":  # it asks first
                await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen))
                await pilot.press("y")
            await settle(pilot)
            assert transcript.has_focus, key
            assert transcript.selected_view is not None, key
            assert "copy" in {entry.action for entry in footer_of(app).entries}, key
        assert "Undone" in told(app)[-1].message


@pytest.mark.parametrize("size", [(80, 24), (160, 45)])
async def test_enter_in_the_sessions_filter_opens_the_first_match(tmp_path, size):
    # It went to the list; a second enter opened the session.
    db = tmp_path / "lovia.db"
    ids = await stored_sessions(db, "groceries", "banana bread", "launch plan")
    app = make_app(db)
    async with app.run_test(size=size) as pilot:
        await settle(pilot)
        if size[0] < 110:
            await pilot.press("ctrl+b")  # the sessions pane, over the conversation at this width
            await settle(pilot)
        app.screen.query_one("#session-list").focus()
        await pilot.press("b", "a", "n")
        await settle(pilot)
        assert app.focused is app.screen.query_one("#session-filter")
        await pilot.press("enter")
        await settle(pilot)
        assert app.screen.chat.session_id == ids[1]
        assert app.focused is app.screen.chat.composer

        if size[0] < 110:
            await pilot.press("ctrl+b")
            await settle(pilot)
        app.screen.query_one("#session-list").focus()
        await pilot.press("z", "z", "z")  # matches nothing: enter goes to the list and its hint
        await settle(pilot)
        await pilot.press("enter")
        await settle(pilot)
        assert app.screen.chat.session_id == ids[1] and app.focused is app.screen.query_one("#session-list")


async def test_the_runs_list_shows_a_stopped_answer_without_its_markdown(tmp_path, monkeypatch):
    # It read “I'm **lovia's offline demo model**:…”, stars and all.
    db, _ = await one_interrupted_run_and_a_held_clock(tmp_path, monkeypatch)
    async with SQLiteCheckpointer(db, wal=True) as checkpointer:
        head = RunHead(agent="assistant", status="interrupted", session_id="s-b", first_input="who are you",
                       started_at=T, updated_at=T, cut_off_text="I'm **lovia's offline demo model**: `help` lists")
        await checkpointer.save(RunSnapshot("run-md", head, [UserMessage(text="who are you")]))
    app = make_app(db)
    async with app.run_test(size=(160, 45)) as pilot:
        await settle(pilot)
        runs = app.screen.query_one("#run-list")
        shown = [plain(runs.get_option_at_index(i).prompt) for i in range(runs.option_count)]
        line = next(text for text in shown if "who are you" in text)
        assert "“I'm lovia's offline demo model:" in line and "**" not in line


async def test_restoring_from_the_trash_with_no_sessions_pane_opens_the_session(tmp_path, monkeypatch):
    # Clearing the sessions filter after the restore looked for a pane a store that cannot list
    # sessions never has: the worker failed, and the app with it.
    from lovia.tui.backend import ChatBackend
    from lovia.tui.screens.trash import TrashScreen

    monkeypatch.setattr(ChatBackend, "can_list_sessions", property(lambda self: False))
    db = tmp_path / "lovia.db"
    async with SQLiteSession(db, wal=True) as session:
        await session.append("s-a", [UserMessage(text="hi"), AssistantMessage(text="yo")])
        await session.trash_session("s-a")
    app = make_app(db)
    async with app.run_test(size=(160, 45)) as pilot:
        await settle(pilot)
        await pilot.press("f8")
        await wait_for(pilot, lambda: isinstance(app.screen, TrashScreen) and app.screen.items)
        await pilot.press("enter")
        await settle(pilot)
        assert app.screen.chat.session_id == "s-a" and app.focused is app.screen.chat.composer


async def test_a_resize_under_a_dialog_leaves_focus_to_the_dialog_until_it_closes(tmp_path):
    db = tmp_path / "lovia.db"
    await stored_sessions(db, "groceries", "launch plan")
    app = make_app(db)
    async with app.run_test(size=(160, 45)) as pilot:
        await settle(pilot)
        main = app.screen
        main.query_one("#session-list").focus()
        await settle(pilot)
        await pilot.press("f2")  # the rename prompt
        await settle(pilot)
        prompt = app.screen
        await pilot.resize_terminal(80, 24)
        await settle(pilot)
        assert app.screen is prompt and not main.chat.composer.has_focus
        await pilot.press("escape")
        await settle(pilot)
        assert app.screen is main and app.focused is main.chat.composer  # the list folded meanwhile


async def test_enter_in_an_empty_sessions_filter_goes_to_the_list(tmp_path):
    # With nothing typed the open session is highlighted: enter opened it again.
    db = tmp_path / "lovia.db"
    await stored_sessions(db, "groceries", "launch plan")
    app = make_app(db)
    async with app.run_test(size=(160, 45)) as pilot:
        await settle(pilot)
        app.screen.query_one("#session-filter").focus()
        await settle(pilot)
        await pilot.press("enter")
        await settle(pilot)
        assert app.focused is app.screen.query_one("#session-list")


async def test_page_keys_right_after_home_bring_the_cursor_along(tmp_path):
    # The messages home showed had no place yet when the page keys came: the cursor stayed on
    # the first message, out of sight.
    db = await questions_and_answers(tmp_path, runs=60, lines=4)
    app = make_app(db)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        transcript = app.screen.chat.transcript
        transcript.focus()
        await settle(pilot)
        burst(app, "home", "pagedown", "pagedown")
        await pilot.pause()
        await pilot.wait_for_animation()
        await settle(pilot)
        region = transcript.selected_view.virtual_region
        top = transcript.scroll_y
        assert top > 0 and region.y < top + transcript.scrollable_content_region.height and region.bottom > top


@pytest.mark.parametrize("action", ["f", "x"])
async def test_the_runs_overlay_folds_once_its_last_run_is_finalized_or_discarded(tmp_path, monkeypatch, action):
    # At 80 columns it stayed over the conversation, focused on "Nothing to resume.", hiding the
    # finalized answer it had just added to the session.
    db, _ = await one_interrupted_run_and_a_held_clock(tmp_path, monkeypatch)
    app = make_app(db)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("ctrl+o")
        await wait_for(pilot, lambda: app.focused is not None and app.focused.id == "run-list")
        await pilot.press(action)
        await wait_for(pilot, lambda: type(app.screen).__name__ == "ConfirmScreen")
        await pilot.press("y")
        await wait_for(pilot, lambda: not app.screen.query_one("RunsPane").runs)
        await settle(pilot)
        assert not app.screen.pane_shown("runs")
        assert app.focused is not None and app.focused.id == "composer"


async def test_the_runs_overlay_stays_while_runs_are_left_to_act_on(tmp_path, monkeypatch):
    db, _ = await one_interrupted_run_and_a_held_clock(tmp_path, monkeypatch)
    async with SQLiteCheckpointer(db, wal=True) as checkpointer:
        head = RunHead(agent="assistant", status="interrupted", session_id="s-b", first_input="and this",
                       started_at=T, updated_at=T)
        await checkpointer.save(RunSnapshot("run-y", head, [UserMessage(text="and this")]))
    app = make_app(db)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("ctrl+o")
        await wait_for(pilot, lambda: app.focused is not None and app.focused.id == "run-list")
        runs = app.screen.query_one("RunsPane")
        count = len(runs.runs)
        assert count == 2
        await pilot.press("x")
        await wait_for(pilot, lambda: type(app.screen).__name__ == "ConfirmScreen")
        await pilot.press("y")
        await wait_for(pilot, lambda: len(runs.runs) == count - 1)
        await settle(pilot)
        assert app.screen.pane_shown("runs") and app.focused is not None and app.focused.id == "run-list"


@pytest.mark.parametrize("size", [(80, 24), (160, 45)])
async def test_a_failed_run_reads_the_same_reopened_as_it_did_live(tmp_path, size):
    # Reopened, its error was only in the header, cut to one line, under a note that said it failed.
    from lovia import ModelError
    from lovia.models import ScriptedModel, ScriptedTurn

    db = tmp_path / "lovia.db"
    error = "the endpoint answered 500: backend exploded\nline two of its body\nline three"
    model = ScriptedModel([ScriptedTurn(text="half", error=ModelError(error), fail_after=1)])
    app = make_app(db, model=model)

    def errors_of(app) -> list[NoticeView]:
        return [n for n in app.screen.chat.transcript.query(NoticeView) if n.has_class("-error")]

    async with app.run_test(size=size) as pilot:
        await type_and_send(pilot, "hello")
        live = [n.text for n in errors_of(app)]
    assert len(live) == 1 and live[0].startswith("✗ The endpoint answered 500: backend exploded")
    app = make_app(db)
    async with app.run_test(size=size) as pilot:
        await settle(pilot)
        reopened = errors_of(app)
        assert [n.text for n in reopened] == live
        assert "ctrl+r" in reopened[0].hint


@pytest.mark.parametrize("size", [(80, 24), (100, 30)])
async def test_a_notice_unfolded_after_moving_the_cursor_in_a_short_conversation_shows_whole(tmp_path, size):
    # A conversation shorter than the view sits at its foot (Textual's anchor scrolls it by a
    # negative offset). The cursor keys released the anchor and left that offset as it was: the
    # lines the notice unfolded went below the view, where end and the page keys did not reach.
    from lovia import ModelError
    from lovia.models import ScriptedModel, ScriptedTurn

    db = tmp_path / "lovia.db"
    error = "the endpoint answered 500: backend exploded\nline two\n\nthe server's log: failed\nlast line"
    app = make_app(db, model=ScriptedModel([ScriptedTurn(text="half", error=ModelError(error), fail_after=1)]))
    async with app.run_test(size=size) as pilot:
        await type_and_send(pilot, "hello")
        transcript = app.screen.chat.transcript
        for key in ("shift+tab", "up", "down", "enter"):
            await pilot.press(key)
            await settle(pilot)
        notice = transcript.selected_view
        assert isinstance(notice, NoticeView) and notice.expanded
        assert notice.region.height == notice.virtual_region.height >= 5  # the whole of it in sight
        assert transcript.region.contains_region(notice.region)


@pytest.mark.parametrize("deleted", ["another", "the open one"])
async def test_after_a_delete_the_session_in_its_place_is_highlighted(tmp_path, deleted):
    # The highlight went to the open session (or to the top), away from where the user was.
    db = tmp_path / "lovia.db"
    ids = await stored_sessions(db, "alpha", "bravo", "charlie", "delta", "echo")
    app = make_app(db)
    async with app.run_test(size=(160, 45)) as pilot:
        await settle(pilot)
        if deleted == "the open one":
            await app.screen.open_session(ids[2])
            await settle(pilot)
        listed = app.screen.query_one("#session-list")
        listed.focus()
        listed.highlighted = 2  # charlie
        await settle(pilot)
        await pilot.press("delete")
        await wait_for(pilot, lambda: type(app.screen).__name__ == "ConfirmScreen")
        await pilot.press("y")
        await wait_for(pilot, lambda: listed.option_count == 4)
        await settle(pilot)
        assert listed.get_option_at_index(listed.highlighted).id == ids[3]  # delta, now where charlie was


async def test_clearing_the_sessions_filter_keeps_the_highlighted_session(tmp_path):
    db = tmp_path / "lovia.db"
    ids = await stored_sessions(db, "plan a", "other", "plan b", "plan c")
    app = make_app(db)
    async with app.run_test(size=(160, 45)) as pilot:
        await settle(pilot)
        await pilot.press("ctrl+b")  # the sessions pane is shown: ctrl+b hides it, again shows it
        await pilot.press("ctrl+b")
        await settle(pilot)
        listed = app.screen.query_one("#session-list")
        listed.focus()
        await pilot.press("p", "l", "a", "n")
        await settle(pilot)
        await pilot.press("down")  # from the filter to the list
        await pilot.press("down", "down")
        await settle(pilot)
        picked = listed.get_option_at_index(listed.highlighted).id
        assert picked in (ids[2], ids[3])  # a match below the first, not the open session
        await pilot.press("escape")
        await settle(pilot)
        assert app.screen.query_one("SessionsPane").query_text == ""
        assert listed.get_option_at_index(listed.highlighted).id == picked


async def test_clearing_the_filter_keeps_the_highlight_on_a_session_past_the_first_page(tmp_path):
    # Past the first 30 options the kept session was not drawn, and the highlight went to the open one.
    db = tmp_path / "lovia.db"
    ids = await stored_sessions(db, *[f"topic {i}" for i in range(40)], "needle in the past")
    app = make_app(db)
    async with app.run_test(size=(160, 45)) as pilot:
        await settle(pilot)
        listed = app.screen.query_one("#session-list")
        listed.focus()
        await pilot.press(*"needle")
        await pilot.press("down")
        await settle(pilot)
        assert listed.get_option_at_index(listed.highlighted).id == ids[-1]
        await pilot.press("escape")
        await settle(pilot)
        assert listed.get_option_at_index(listed.highlighted).id == ids[-1]


@pytest.mark.parametrize("size", [(80, 24), (160, 45)])
async def test_a_rename_away_from_the_filter_says_where_the_session_went(tmp_path, size):
    # Renamed to a title the filter does not match, the session vanished from the list silently.
    db = tmp_path / "lovia.db"
    await stored_sessions(db, "alpha", "beta")
    app = make_app(db)
    async with app.run_test(size=size) as pilot:
        await settle(pilot)
        if size[0] < 110:
            await pilot.press("ctrl+b")  # the sessions list, folded at 80 columns
        app.screen.query_one("#session-list").focus()
        await settle(pilot)
        await pilot.press(*"bet")
        await settle(pilot)
        await pilot.press("f2")
        await settle(pilot)
        await pilot.press("ctrl+u", *"gamma", "enter")
        await settle(pilot)
        assert any("does not match the sessions filter" in n.message for n in told(app))
