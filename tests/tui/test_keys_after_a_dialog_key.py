"""Keys typed right after a key that opens a dialog or a pane go to what it opened; those typed right
after a key that closes one go where focus comes back to.

A new user's trial: ``ctrl+f time down enter`` in one burst opened the search with an empty query
while "time" went into the message box and enter sent it to the open session (settling its stopped
run as a partial on the way); ``ctrl+s ctrl+u abc enter`` sent "abc" as a message and exported
nothing; ``f1 q`` typed ``q``; ``ctrl+b down enter`` moved nothing in the sessions list. The app
sends each key to the focus of the moment it reads it, and the dialog took focus a moment later.
"""

from __future__ import annotations

import asyncio
import time

import pytest

from lovia import SQLiteSession
from lovia.tui.app import KEYS_HELD_AT_MOST, KEYS_HELD_WHILE_WORKING
from lovia.tui.screens.confirm import ConfirmScreen
from lovia.tui.screens.help import HelpScreen
from lovia.tui.screens.mcp_servers import ServersScreen
from lovia.tui.screens.prompt import PromptScreen
from lovia.tui.screens.search import SearchScreen
from lovia.tui.screens.timeline import TimelineScreen
from lovia.tui.screens.trash import TrashScreen
from lovia.tui.widgets.inspector import DanglingCallList
from lovia.tui.widgets.runs_pane import RunList
from tests.tui.conftest import make_app, settle, wait_for
from tests.tui.test_closing_mid_flow import open_the_trash_on_a_deleted_session
from tests.tui.test_crash_resume import crash_a_run, highlight_run
from tests.tui.test_dangling_calls import open_runs
from tests.tui.test_new_user_pass import burst, stored_sessions


@pytest.mark.parametrize("size", [(80, 24), (160, 45)])
async def test_typing_right_after_ctrl_f_goes_into_the_search_not_the_message_box(tmp_path, size):
    db = tmp_path / "lovia.db"
    await stored_sessions(db, "Timing notes", "Other")
    app = make_app(db)
    async with app.run_test(size=size) as pilot:
        await settle(pilot)
        burst(app, "ctrl+f", "t", "i", "m", "e")
        await wait_for(pilot, lambda: isinstance(app.screen, SearchScreen))
        await wait_for(pilot, lambda: app.screen.query_one("#search-query").value == "time")
        await app.screen.dismiss(None)
        await settle(pilot)
        assert app.main.chat.composer.text == ""


async def _app_on_a_stored_session(tmp_path):
    """A database holding one stored session of two entries, its id, and an app on it."""
    db = tmp_path / "lovia.db"
    (session_id,) = await stored_sessions(db, "Exported")
    return db, session_id, make_app(db)


async def _slow_store_read(app, monkeypatch, seconds: float) -> None:
    """The export's read of the session answers after ``seconds`` (a store busy or far away)."""
    real = app.backend.has_stored_runs

    async def slow(session_id):
        await asyncio.sleep(seconds)
        return await real(session_id)

    monkeypatch.setattr(app.backend, "has_stored_runs", slow)


@pytest.mark.parametrize("store_answers_after", [0.0, 1.5])
async def test_enter_right_after_ctrl_s_answers_the_export_not_the_message_box(tmp_path, monkeypatch,
                                                                             store_answers_after):
    """And what comes after that enter, which closes the export's prompt, goes to the message box:
    it went to the closing prompt's box and was lost. The export reads the session before it asks
    where to: with a store slower than the half second the keys waited at most, the path went into
    the message box and enter sent it."""
    db, session_id, app = await _app_on_a_stored_session(tmp_path)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await app.main.open_session(session_id)
        await settle(pilot)
        app.main.chat.composer.focus()
        await settle(pilot)
        await _slow_store_read(app, monkeypatch, store_answers_after)
        target = tmp_path / "notes.md"
        burst(app, "ctrl+s", "ctrl+u", *str(target), "enter", "a", "b")
        await wait_for(pilot, target.exists)
        await settle(pilot)
        await wait_for(pilot, lambda: app.main.chat.composer.text == "ab")
        assert app.screen is app.main and app.focused is app.main.chat.composer
    async with SQLiteSession(db) as session:  # nothing was sent
        assert len(await session.load(session_id)) == 2


@pytest.mark.parametrize("keys", [("ctrl+s", "ctrl+q"), ("f1", "escape", "ctrl+s", "ctrl+q")])
async def test_the_quit_key_after_ctrl_s_does_not_wait_for_a_slow_store(tmp_path, monkeypatch, keys):
    """Also when it comes after a key that closed a dialog (the help), held on for ctrl+s's wait: it
    waited the 5 s that ctrl+s's own work may hold the keys."""
    _, session_id, app = await _app_on_a_stored_session(tmp_path)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await app.main.open_session(session_id)
        await settle(pilot)
        await _slow_store_read(app, monkeypatch, 30)
        burst(app, *keys)
        started = time.monotonic()
        await wait_for(pilot, lambda: app.return_code is not None, give_up_after=3)
        assert time.monotonic() - started < KEYS_HELD_WHILE_WORKING


async def test_a_key_right_after_f1_reaches_the_help(tmp_path):
    app = make_app(tmp_path / "lovia.db")
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        burst(app, "f1", "q")  # q closes the help
        await settle(pilot)
        await pilot.pause(0.6)
        assert not isinstance(app.screen, HelpScreen)
        assert app.main.chat.composer.text == ""


async def test_keys_right_after_ctrl_b_move_in_the_sessions_list(tmp_path):
    db = tmp_path / "lovia.db"
    await stored_sessions(db, "First", "Second", "Third")
    app = make_app(db)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        listing = app.screen.query_one("#session-list")
        before = listing.highlighted
        burst(app, "ctrl+b", "down")
        await settle(pilot)
        await pilot.pause(0.6)
        assert app.focused is listing
        assert listing.highlighted == (before or 0) + 1
        assert app.main.chat.composer.text == ""


@pytest.mark.parametrize("key,dialog", [("f8", TrashScreen), ("ctrl+f", SearchScreen), ("f1", HelpScreen),
                                        ("f5", ServersScreen)])
async def test_keys_right_after_escape_closes_a_dialog_go_to_the_message_box(tmp_path, key, dialog):
    """``f8 escape ab``: "ab" went to the trash as it closed, and was typed nowhere."""
    db = tmp_path / "lovia.db"
    await stored_sessions(db, "First", "Second")
    app = make_app(db)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        app.main.chat.composer.focus()
        await settle(pilot)
        await pilot.press(key)
        await wait_for(pilot, lambda: isinstance(app.screen, dialog) and app.focused is not None
                       and app.focused.screen is app.screen)
        await pilot.pause(0.3)  # its list read (a dialog waits on it: not settled)
        burst(app, "escape", "a", "b")
        await wait_for(pilot, lambda: app.main.chat.composer.text == "ab")
        assert app.screen is app.main and app.focused is app.main.chat.composer


async def test_keys_right_after_escape_folds_the_sessions_pane_go_to_the_message_box(tmp_path):
    db = tmp_path / "lovia.db"
    await stored_sessions(db, "First", "Second")
    app = make_app(db)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("ctrl+b")
        await settle(pilot)
        assert app.focused is app.screen.query_one("#session-list")
        burst(app, "escape", "a", "b")
        await settle(pilot)
        await wait_for(pilot, lambda: app.main.chat.composer.text == "ab")
        assert app.focused is app.main.chat.composer


async def _question_answered(pilot) -> None:
    """The question the burst's first key asks is up, then gone (not waited for by ``settle``: a question
    left up would hold it for good)."""
    app = pilot.app
    await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen))
    await wait_for(pilot, lambda: not isinstance(app.screen, ConfirmScreen),
                   describe=lambda: f"screens {app.screen_stack}, focus on {app.focused}, keys held "
                                    f"{[key.key for key in app._keys_held or ()]}, user flows "
                                    f"{[(w.group, w.state.name) for w in app.workers if w.group != 'keys held']}")
    await settle(pilot)


async def _on_a_crashed_run(tmp_path, pilot_size):
    """An app on a file holding one run crashed inside a tool call (a real process killed), shown in the runs list."""
    db = tmp_path / "lovia.db"
    crash_a_run(db)
    return db, make_app(db)


@pytest.mark.parametrize("size", [(80, 24), (160, 45)])
@pytest.mark.parametrize("key", ["x", "f"])
async def test_no_right_after_discard_or_finalize_in_the_runs_list_answers_the_question(tmp_path, size, key):
    """A new user's trial: ``x n`` in a burst left "Discard the run …?" up, the ``n`` read by the
    runs list before the question took focus. It answers the question now."""
    db, app = await _on_a_crashed_run(tmp_path, size)
    async with app.run_test(size=size) as pilot:
        await pilot.pause()
        await highlight_run(pilot, size, "run-crashed")
        burst(app, key, "n")
        await _question_answered(pilot)
        assert [run.run_id for run in app.screen.query_one("RunsPane").runs] == ["run-crashed"]


@pytest.mark.parametrize("size", [(80, 24), (160, 45)])
@pytest.mark.parametrize("key", ["o", "e"])
async def test_text_right_after_giving_a_dangling_calls_result_goes_into_the_prompt(tmp_path, size, key):
    db, app = await _on_a_crashed_run(tmp_path, size)
    async with app.run_test(size=size) as pilot:
        await pilot.pause()
        await open_runs(pilot, size)
        await pilot.press("f6")  # to the inspector's dangling calls
        await pilot.pause()
        assert isinstance(app.focused, DanglingCallList)
        burst(app, key, "4", "2")
        await wait_for(pilot, lambda: isinstance(app.screen, PromptScreen))
        await wait_for(pilot, lambda: app.screen.query_one("#answer").value == "42")


@pytest.mark.parametrize("size", [(80, 24), (160, 45)])
async def test_escape_right_after_w_closes_the_timeline_it_opened(tmp_path, monkeypatch, size):
    """``w`` reads the run before its timeline is shown: the escape typed meanwhile went to the
    transcript, and the timeline stayed up."""
    db, session_id, app = await _app_on_a_stored_session(tmp_path)
    opened = []
    push_screen = app.push_screen

    def recorded(screen, *args, **kwargs):
        opened.append(type(screen))
        return push_screen(screen, *args, **kwargs)

    monkeypatch.setattr(app, "push_screen", recorded)
    async with app.run_test(size=size) as pilot:
        await settle(pilot)
        app.screen.query_one("#transcript").focus()
        await pilot.pause()
        burst(app, "w", "escape")
        await settle(pilot)
        assert opened[1:] == [TimelineScreen]  # after the main screen
        assert app.screen is app.main


@pytest.mark.parametrize("size", [(80, 24), (160, 45)])
async def test_no_right_after_delete_in_the_sessions_list_answers_the_question(tmp_path, size):
    db = tmp_path / "lovia.db"
    ids = await stored_sessions(db, "Keep me", "Other")
    app = make_app(db)
    async with app.run_test(size=size) as pilot:
        await settle(pilot)
        await pilot.press("ctrl+b") if size == (80, 24) else app.screen.query_one("#session-list").focus()
        await wait_for(pilot, lambda: app.focused is app.screen.query_one("#session-list"))
        burst(app, "delete", "n")
        await _question_answered(pilot)
        assert app.screen.query_one("#session-filter").value == ""
    async with SQLiteSession(db, wal=True) as session:
        assert {info.session_id for info in await session.list_sessions()} == set(ids)


@pytest.mark.parametrize("size", [(80, 24), (160, 45)])
async def test_yes_right_after_resume_in_the_runs_list_answers_the_model_question(tmp_path, size):
    """In the trial's terminal ``r y`` left "This run ran on gpt-4o-mini; … Resume with demo?" up: the
    resume reads the run before it asks, and the ``y`` went to the runs list meanwhile."""
    from screenshots.demo_data import build, build_stopped_runs

    db = tmp_path / "lovia.db"
    await build(db)
    await build_stopped_runs(db)  # run-demo-tools ran on gpt-4o-mini; the app's model is the demo
    app = make_app(db)
    async with app.run_test(size=size) as pilot:
        await settle(pilot)
        await highlight_run(pilot, size, "run-demo-tools")
        burst(app, "r", "y")
        await _question_answered(pilot)
        assert "run-demo-tools" not in [run.run_id for run in app.screen.query_one("RunsPane").runs]


@pytest.mark.parametrize("size", [(80, 24), (160, 45)])
@pytest.mark.parametrize("where", ["list", "filter"])
async def test_text_right_after_enter_opens_a_session_goes_into_its_message_box(tmp_path, size, where):
    """A new user's trial: ``enter abc`` in one burst on another session in the sessions list left it
    unopened and "abc" in the filter (the letters reached the list before the session was open and
    the message box had focus); with 50 ms between them the session opened and "abc" was lost. The
    filter's enter ("Sec" typed, then enter) opens the highlighted match the same way."""
    db = tmp_path / "lovia.db"
    first, second = await stored_sessions(db, "First", "Second")
    app = make_app(db)
    async with app.run_test(size=size) as pilot:
        await settle(pilot)
        assert app.main.chat.session_id == first
        listing = app.screen.query_one("#session-list")
        await pilot.press("ctrl+b") if size == (80, 24) else listing.focus()
        await wait_for(pilot, lambda: app.focused is listing)
        await pilot.press(*(["down"] if where == "list" else ["S", "e", "c"]))
        await settle(pilot)
        burst(app, "enter", "a", "b", "c")
        await wait_for(pilot, lambda: app.main.chat.session_id == second)
        await wait_for(pilot, lambda: app.main.chat.composer.text == "abc")
        assert app.focused is app.main.chat.composer
        assert app.screen.query_one("#session-filter").value == ""


@pytest.mark.parametrize("size", [(80, 24), (160, 45)])
@pytest.mark.parametrize("key", ["x", "f"])
async def test_text_right_after_yes_to_discard_or_finalize_waits_for_it_to_be_done(tmp_path, size, key):
    """A new user's trial: ``f y hello`` in one burst finalized the run and lost "hello": the keys went
    to the runs list as the question closed, and only then did the finalize fold the runs pane over
    the conversation (at 80 columns) and give the message box focus; ``y next`` had the ``x`` try to
    discard the run being finalized. They wait for what the answer does now, then go where focus is:
    the message box at 80 columns, the runs list (emptied, so its letters do nothing) at full size."""
    _, app = await _on_a_crashed_run(tmp_path, size)
    async with app.run_test(size=size) as pilot:
        await pilot.pause()
        await highlight_run(pilot, size, "run-crashed")
        notices = []
        real_notify = app.notify
        app.notify = lambda message, **kwargs: (notices.append(message), real_notify(message, **kwargs))[1]
        burst(app, key, "y", "n", "e", "x", "t")
        await _question_answered(pilot)
        await wait_for(pilot, lambda: not app.main.query_one("RunsPane").runs)
        # Not settle: a second question left up (the x's discard) would keep its flow, and settle, waiting.
        await pilot.pause(KEYS_HELD_AT_MOST + 0.3)
        assert app.screen is app.main  # no other question came up
        assert not [said for said in notices if "already executing" in said or "no longer" in said]
        if size == (80, 24):
            assert app.focused is app.main.chat.composer
            assert app.main.chat.composer.text == "next"
        else:  # the emptied runs list kept focus, and took the letters
            assert app.focused is app.main.query_one(RunList)
            assert app.main.chat.composer.text == ""


@pytest.mark.parametrize("size", [(80, 24), (160, 45)])
async def test_text_right_after_resume_in_the_runs_list_goes_into_the_message_box(tmp_path, size):
    """A new user's trial: ``r hello`` resumed the run with focus on the conversation's messages,
    and "hello" ran their keys (``e`` asked which message to edit, ``l`` moved code sideways). A
    resume from the runs list gives the message box focus, as opening a session does."""
    _, app = await _on_a_crashed_run(tmp_path, size)
    async with app.run_test(size=size) as pilot:
        await pilot.pause()
        await highlight_run(pilot, size, "run-crashed")
        burst(app, "r", "h", "e", "l", "l", "o")
        await wait_for(pilot, lambda: app.main.chat.composer.text == "hello")
        assert app.focused is app.main.chat.composer
        await app.main.stop_run_and_wait()  # the resumed run ends before the app closes, not under its close
        await settle(pilot)


async def test_keys_after_no_to_a_purge_are_not_held_by_the_trash_showing(tmp_path):
    """The trash is shown by a flow that waits for it to close: answering its purge question must not
    hold the keys after the answer until that flow ends (``n r`` restored after five seconds)."""
    db = tmp_path / "lovia.db"
    await stored_sessions(db, "First", "Second")
    app = make_app(db)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await open_the_trash_on_a_deleted_session(pilot)
        await pilot.pause(0.3)
        await pilot.press("delete")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen))
        started = time.monotonic()
        burst(app, "n", "r")  # not purged; restored and opened instead
        await wait_for(pilot, lambda: app.screen is app.main, give_up_after=KEYS_HELD_WHILE_WORKING + 2)
        assert time.monotonic() - started < KEYS_HELD_WHILE_WORKING / 2
        await settle(pilot)  # the restored session is listed and opened (the app is not closed under that)
        assert app.focused is app.main.chat.composer
