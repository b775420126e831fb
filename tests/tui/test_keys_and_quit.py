"""Quitting during a run, escape from any pane, the sessions filter, the command palette and
the help screen: every key does what it says, and only while it applies."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest

from lovia import Agent, RunHead, RunSnapshot, SQLiteCheckpointer, SQLiteSession, UserMessage, tool
from lovia.models import ScriptedModel, ScriptedTurn, call
from lovia.tui.app import QUIT_WAITS_FOR_SENDING
from lovia.tui.screens.choice import ChoiceScreen
from lovia.tui.screens.confirm import ConfirmScreen
from lovia.tui.screens.help import HelpScreen, key_table
from lovia.tui.screens.main import MainScreen
from lovia.tui.screens.prompt import PromptScreen
from lovia.tui.widgets.footer import LoviaFooter
from lovia.tui.widgets.runs_pane import RunsPane
from tests.tui.conftest import make_app, settle, type_and_send, wait_for
from tests.tui.test_new_user_pass import burst
from tests.tui.test_stop_and_continue import fail_first_message, failing_then, type_and_send_no_settle
from tests.tui.test_streaming_speed import painted


def gated_app(db, tool_turns: int = 1):
    """An app whose model calls a tool that waits until the test lets it go, ``tool_turns`` times
    (one per run that is stopped there), then answers: (app, started, release)."""
    started, release = asyncio.Event(), asyncio.Event()

    @tool
    async def step() -> str:
        """One slow step."""
        started.set()
        await release.wait()
        return "step done"

    model = ScriptedModel([*(ScriptedTurn(tool_calls=[call("step", {}, call_id=f"c{n}")]) for n in range(tool_turns)),
                           "All done."])
    return make_app(db, agent=Agent(name="assistant", model=model, tools=[step])), started, release


async def run_statuses(db) -> list[str]:
    async with SQLiteCheckpointer(db, wal=True) as checkpointer:
        return [summary.head.status
                for summary in await checkpointer.list_runs(statuses=("running", "interrupted", "failed"))]


def palette(app) -> set[str]:
    return {command.title for command in app.get_system_commands(app.screen)}


# -- quitting --------------------------------------------------------------------------------


async def test_quit_during_a_run_asks_and_stop_and_quit_keeps_the_run_resumable(tmp_path):
    db = tmp_path / "lovia.db"
    app, started, _ = gated_app(db)
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.press(*"go", "enter")
        await wait_for(pilot, started.is_set)
        await pilot.press("ctrl+q")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen))
        await pilot.press("n")  # stay
        await pilot.pause()
        assert isinstance(app.screen, MainScreen) and app.screen.chat.running and app.return_code is None

        await pilot.press("ctrl+q")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen))
        await pilot.press("y")  # stop and quit
        await wait_for(pilot, lambda: app.return_code is not None)
    assert app.return_code == 0
    assert await run_statuses(db) == ["interrupted"]  # stopped, kept, resumable


@pytest.mark.parametrize("size", [(80, 24), (160, 45)])
async def test_enter_and_the_quit_key_typed_together_send_the_message_then_ask(tmp_path, size):
    """A new user's trial: ``zebraword enter ctrl+q`` in one burst quit at once, and the message was
    in neither the session nor a run (the quit key ran before the message box had sent it)."""
    db = tmp_path / "lovia.db"
    app, started, _ = gated_app(db)
    async with app.run_test(size=size) as pilot:
        await settle(pilot)
        await pilot.press(*"zebraword")
        burst(app, "enter", "ctrl+q")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen) or app.return_code is not None)
        assert isinstance(app.screen, ConfirmScreen)  # the message was sent, its answer runs: asked
        await wait_for(pilot, lambda: any("still running" in str(q.render()) for q in app.screen.query("#question")))
        await wait_for(pilot, started.is_set)
        await pilot.press("y")  # stop and quit
        await wait_for(pilot, lambda: app.return_code is not None)
    assert app.return_code == 0
    assert await run_statuses(db) == ["interrupted"]  # the message's run, stopped, resumable
    async with SQLiteCheckpointer(db, wal=True) as checkpointer:
        [summary] = await checkpointer.list_runs(statuses=("interrupted",))
        snapshot = await checkpointer.load(summary.run_id)
    assert [entry.text for entry in snapshot.entries if isinstance(entry, UserMessage)] == ["zebraword"]


async def test_the_quit_question_does_not_wait_for_a_screen_busy_with_the_store(tmp_path):
    """A review: the quit key waited for the keys before it to be handled up to the screen, and so
    behind a handler of the main screen awaiting the store (as long as the store's timeout) before
    it asked whether to stop the answer."""
    db = tmp_path / "lovia.db"
    app, started, _ = gated_app(db)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press(*"go", "enter")
        await wait_for(pilot, started.is_set)
        app.main.call_later(asyncio.sleep, 5)  # the screen busy for five seconds, as on a locked file
        pressed = time.monotonic()
        burst(app, "ctrl+q")
        while not isinstance(app.screen, ConfirmScreen) and time.monotonic() - pressed < 8:
            await asyncio.sleep(0.02)  # not the pilot's pause: it waits for the busy screen too
        assert isinstance(app.screen, ConfirmScreen) and time.monotonic() - pressed < 3
        await pilot.press("n")


async def test_the_quit_key_on_the_question_before_a_message_quits_as_on_any_question(tmp_path):
    """A review: with the question about a failed run up (the message waits for its answer), the quit
    key waited ten seconds for the message to be stored, then asked over it whether to stop an answer
    that had "ended meanwhile" (none had run)."""
    app = make_app(tmp_path / "lovia.db", model=failing_then("second answer"))
    async with app.run_test(size=(80, 24)) as pilot:
        await fail_first_message(pilot)
        await type_and_send_no_settle(pilot, "next")
        await wait_for(pilot, lambda: isinstance(app.screen, ChoiceScreen))
        started = time.monotonic()
        burst(app, "ctrl+q")
        await wait_for(pilot, lambda: app.return_code is not None, give_up_after=QUIT_WAITS_FOR_SENDING + 3)
        assert time.monotonic() - started < 3
    assert app.return_code == 0


async def test_two_quit_keys_typed_together_ask_once(tmp_path):
    """A new user's trial: ``ctrl+q ctrl+q`` during an answer stacked two quit questions: ``n`` left one up."""
    db = tmp_path / "lovia.db"
    app, started, _ = gated_app(db)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press(*"go", "enter")
        await wait_for(pilot, started.is_set)
        burst(app, "ctrl+q", "ctrl+q")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen))
        await pilot.press("n")  # stay
        await pilot.pause(0.3)
        assert isinstance(app.screen, MainScreen) and app.main.chat.running and app.return_code is None


@pytest.mark.parametrize("size", [(80, 24), (160, 45)])
async def test_the_quit_question_changes_when_the_answer_ends_while_it_is_shown(tmp_path, size):
    # It went on saying "An answer is still running" after the answer had ended and was saved.
    db = tmp_path / "lovia.db"
    app, started, release = gated_app(db)
    async with app.run_test(size=size) as pilot:
        await pilot.press(*"go", "enter")
        await wait_for(pilot, started.is_set)
        await pilot.press("ctrl+q")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen))
        dialog = app.screen
        assert "still running" in str(dialog.query_one("#question").render())
        release.set()  # the answer ends while the question is shown
        await wait_for(pilot, lambda: not app.main.chat.running)
        await wait_for(pilot, lambda: "has ended" in str(dialog.query_one("#question").render()))
        assert "still running" not in str(dialog.query_one("#question").render())
        assert str(dialog.query_one("#yes").label).startswith("Quit (")
        session_id = app.main.chat.session_id
        await pilot.press("y")
        await wait_for(pilot, lambda: app.return_code is not None)
    assert app.return_code == 0
    assert await run_statuses(db) == []  # completed, not stopped
    async with SQLiteSession(db, wal=True) as session:
        assert [type(e).__name__ for e in (await session.load(session_id))][-1] == "AssistantMessage"


async def test_quit_with_nothing_running_does_not_ask(tmp_path):
    app = make_app(tmp_path / "lovia.db")
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        await pilot.press("ctrl+q")
        await wait_for(pilot, lambda: app.return_code is not None)
    assert app.return_code == 0


async def test_a_run_cut_off_by_the_app_closing_leaves_no_traceback(tmp_path):
    # Closing the app removes its screens and cancels the run's worker; the worker's clean-up
    # then ran against a panel with no screen (NoScreen / NoMatches, exit code 1).
    app, started, _ = gated_app(tmp_path / "lovia.db")
    async with app.run_test(size=(160, 45)) as pilot:
        await pilot.press(*"go", "enter")
        await wait_for(pilot, started.is_set)
        await app.pop_screen()  # what closing the app does to the main screen
        await pilot.pause()
    assert app.return_code in (None, 0)


# -- escape ----------------------------------------------------------------------------------


async def test_escape_stops_the_answer_from_any_pane(tmp_path):
    db = tmp_path / "lovia.db"
    app, started, release = gated_app(db, tool_turns=4)
    async with app.run_test(size=(160, 45)) as pilot:
        chat = app.screen.chat
        for pane in ("#session-list", "#run-list", "#session-filter"):
            started.clear()
            app.screen.query_one("#composer").focus()
            await pilot.press(*"go", "enter")
            await wait_for(pilot, started.is_set)
            app.screen.query_one(pane).focus()
            await pilot.pause()
            await pilot.press("escape")
            await wait_for(pilot, lambda: not chat.running)  # gives up (fails) if escape did nothing
            await settle(pilot)
        assert app.focused.id == "session-filter"

        # in a maximized pane too (escape would otherwise restore the pane and leave the answer running)
        started.clear()
        app.screen.query_one("#composer").focus()
        await pilot.press(*"go", "enter")
        await wait_for(pilot, started.is_set)
        await pilot.press("f10")
        await pilot.pause()
        assert app.screen.maximized is chat
        await pilot.press("escape")
        await wait_for(pilot, lambda: not chat.running)
        await settle(pilot)
        assert app.screen.maximized is chat
        release.set()


# -- the sessions filter ---------------------------------------------------------------------


async def test_the_sessions_filter_takes_every_key_typed_into_the_list(tmp_path):
    db = tmp_path / "lovia.db"
    async with SQLiteSession(db, wal=True) as session:
        await session.append("s-help", [UserMessage(text="help with taxes")])
        await session.append("s-other", [UserMessage(text="Groceries for the week")])
    app = make_app(db)
    async with app.run_test(size=(160, 45)) as pilot:
        await pilot.pause()
        pane = app.screen.query_one("SessionsPane")
        filter_box = app.screen.query_one("#session-filter")
        app.screen.query_one("#session-list").focus()
        await pilot.pause()
        await pilot.press(*"help")  # one burst: the first keys arrive before the filter has focus
        await wait_for(pilot, lambda: [s.session_id for s in pane.sessions] == ["s-help"])
        assert filter_box.value == "help"

        await pilot.press("f2")  # in the filter box, f2 renames the list's session
        await wait_for(pilot, lambda: isinstance(app.screen, PromptScreen))
        assert app.screen.query_one("#answer").value == "help with taxes"
        await pilot.press("escape")
        await settle(pilot)
        assert app.focused is filter_box and filter_box.value == "help"

        await pilot.press("down")  # down leaves the filter for the list
        assert app.focused.id == "session-list"
        await pilot.press("delete")  # acts on the list's session
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen))
        assert "help with taxes" in str(app.screen.query_one("#question").render())
        await pilot.press("n")
        await settle(pilot)

        filter_box.focus()
        await pilot.press(*"zzz")
        await wait_for(pilot, lambda: pane.sessions == [])
        shown = app.screen.query_one("#session-list").get_option_at_index(0).prompt
        assert "No session matches" in str(shown)

        await pilot.press("escape")  # clears the filter and returns to the list
        await wait_for(pilot, lambda: len(pane.sessions) == 2)
        assert filter_box.value == "" and app.focused.id == "session-list"


# -- the command palette -----------------------------------------------------------------------


async def test_the_palette_offers_each_action_only_while_it_applies(tmp_path):
    db = tmp_path / "lovia.db"
    app, started, release = gated_app(db)
    async with app.run_test(size=(160, 45)) as pilot:
        await pilot.pause()
        idle = palette(app)
        assert {"Send message", "New session", "Next pane", "Next theme", "Help", "Filter sessions",
                "Hide the sessions pane", "Hide the runs pane and inspector", "Maximize pane"} <= idle
        assert not {"Stop", "Resume", "Regenerate", "Rename session", "Delete session", "Copy message"} & idle

        await pilot.press(*"go", "enter")
        await wait_for(pilot, started.is_set)
        running = palette(app)
        assert "Stop" in running and "Copy run id" in running
        assert not {"Send message", "Resume", "Regenerate", "New session", "Delete session"} & running

        await pilot.press("escape")
        await wait_for(pilot, lambda: not app.screen.chat.running)
        await settle(pilot)
        stopped = palette(app)
        assert {"Resume", "Rename session", "Delete session", "Regenerate", "Edit last message"} <= stopped
        assert "Stop" not in stopped

        app.screen.query_one("#run-list").focus()
        await pilot.pause()
        assert {"Resume selected run", "Discard selected run", "Finalize selected run"} <= palette(app)

        resume = next(c for c in app.get_system_commands(app.screen) if c.title == "Resume")
        release.set()
        resume.callback()  # resumes from a worker: it may ask first
        await settle(pilot)
        assert await run_statuses(db) == []
        done = palette(app)
        assert "Resume" not in done and "Resume selected run" not in done

        app.screen.chat.transcript.focus()
        await pilot.press("end")  # the answer
        await pilot.pause()
        assert "Copy message" in palette(app) and "Expand or collapse tool call" not in palette(app)
        await pilot.press("up")  # the tool call before it
        await pilot.pause()
        assert "Expand or collapse tool call" in palette(app)

        hide = next(c for c in app.get_system_commands(app.screen) if c.title == "Hide the sessions pane")
        hide.callback()
        await pilot.pause()
        assert "Show the sessions pane" in palette(app)


async def test_a_resume_is_offered_only_for_the_open_sessions_runs(tmp_path):
    db = tmp_path / "lovia.db"
    async with SQLiteSession(db, wal=True) as session, SQLiteCheckpointer(db, wal=True) as checkpointer:
        await session.append("s-a", [UserMessage(text="first")], run_id="old")
        await session.append("s-b", [UserMessage(text="second")], run_id="older")
        head = RunHead(agent="assistant", status="interrupted", turn=1, session_id="s-a", first_input="do it")
        await checkpointer.save(RunSnapshot("run-a", head, [UserMessage(text="do it")]))
    app = make_app(db)
    async with app.run_test(size=(160, 45)) as pilot:
        await pilot.pause()
        await app.screen.open_session("s-b")
        assert "Resume" not in palette(app)
        await app.screen.open_session("s-a")
        assert "Resume" in palette(app)


def footer_keys(app) -> set[str]:
    """The keys the footer shows now (a binding whose check says no, or that its widget hides, left out)."""
    return {entry.key for entry in app.screen.query_one(LoviaFooter).entries if entry.enabled}


async def test_the_footer_offers_resume_regenerate_and_edit_only_while_they_apply(tmp_path):
    """The footer agrees with the palette: nothing to resume, regenerate or edit in an empty session."""
    db = tmp_path / "lovia.db"
    app, started, release = gated_app(db)
    async with app.run_test(size=(160, 45)) as pilot:
        await pilot.pause()
        assert not {"ctrl+r", "ctrl+g", "ctrl+l"} & footer_keys(app)

        await pilot.press(*"go", "enter")
        await wait_for(pilot, started.is_set)
        await pilot.press("escape")
        await wait_for(pilot, lambda: not app.screen.chat.running)
        await settle(pilot)
        assert {"ctrl+r", "ctrl+g", "ctrl+l"} <= footer_keys(app)

        release.set()
        await pilot.press("ctrl+r")
        await settle(pilot)
        assert await run_statuses(db) == []
        keys = footer_keys(app)
        assert "ctrl+r" not in keys and {"ctrl+g", "ctrl+l"} <= keys
        assert "Resume" not in palette(app)


async def test_discarding_a_run_just_stopped_in_this_window_removes_it_from_the_transcript(tmp_path):
    db = tmp_path / "lovia.db"
    app, started, _ = gated_app(db)
    async with app.run_test(size=(160, 45)) as pilot:
        await pilot.press(*"go", "enter")
        await wait_for(pilot, started.is_set)
        await pilot.press("escape")
        await settle(pilot)
        run_id = app.screen.query_one("RunsPane").runs[0].run_id
        assert run_id in app.screen.chat.transcript.run_ids
        app.screen.query_one("#run-list").focus()
        await pilot.press("x")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen))
        await pilot.press("y")
        await settle(pilot)
        assert await run_statuses(db) == []
        assert run_id not in app.screen.chat.transcript.run_ids  # not left on screen with "ctrl+r resumes it"
        assert not app.screen.chat.transcript.views


# -- help and the first screen -------------------------------------------------------------------


async def test_help_lists_the_new_keys_and_keys_outside_the_bindings():
    rows = [(row.keys, row.what) for _, group in key_table() for row in group]
    for key in ("ctrl+b", "ctrl+o", "f10", "escape", "down", "up"):
        assert any(key in keys.split(" / ") for keys, _ in rows), key
    assert any("empty composer" in what for keys, what in rows if keys == "up")


async def test_help_and_dialogs_fit_at_80x24(tmp_path):
    async with SQLiteSession(tmp_path / "lovia.db", wal=True) as session:
        await session.append("s-a", [UserMessage(text="Atlas launch plan")])
    app = make_app(tmp_path / "lovia.db")
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        await pilot.press("f1")
        await wait_for(pilot, lambda: isinstance(app.screen, HelpScreen))
        await pilot.pause()
        box = app.screen.query_one("VerticalScroll")
        assert box.region.right <= 80 and box.region.bottom <= 24 and box.region.width >= 70
        await pilot.press("escape")
        await pilot.pause()

        await pilot.press("ctrl+b", "delete")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen))
        await pilot.pause()
        box = app.screen.query_one("Vertical")
        assert box.region.right <= 80 and box.region.bottom <= 24
        assert app.screen.query_one("#yes").region.right <= 80
        await pilot.press("n")


async def test_the_empty_screen_says_how_to_start_and_where_help_is(tmp_path):
    app = make_app(tmp_path / "lovia.db")
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        welcome = app.screen.query_one("#welcome")
        assert welcome.display and welcome.region.height > 0
        assert "enter" in str(welcome.render()) and "f1" in str(welcome.render())
        await type_and_send(pilot, "hello")
        assert not welcome.display
        await pilot.press("ctrl+n")
        await pilot.pause()
        assert welcome.display


async def test_an_empty_runs_list_offers_no_run_action(tmp_path):
    app = make_app(tmp_path / "lovia.db")
    async with app.run_test(size=(160, 45)) as pilot:
        await settle(pilot)
        app.screen.query_one("#run-list").focus()
        await pilot.pause()
        assert not app.screen.query_one(RunsPane).runs
        assert not {"r", "x", "f", "c", "w"} & footer_keys(app), "nothing to resume, discard or finalize"


@pytest.mark.parametrize("size", [(80, 24), (160, 45)])
async def test_the_footer_is_hidden_under_another_screen_whose_keys_differ(tmp_path, size):
    from lovia.tui.screens.mcp_servers import ServersScreen
    from lovia.tui.widgets.footer import LoviaFooter

    app = make_app(tmp_path / "lovia.db")
    async with app.run_test(size=size) as pilot:
        await settle(pilot)
        main = app.screen
        footer = main.query_one(LoviaFooter)
        assert footer.visible
        await pilot.press("f5")
        await wait_for(pilot, lambda: isinstance(app.screen, ServersScreen))
        assert not footer.visible, "the main screen's keys do not work under the MCP servers screen"
        await pilot.press("escape")
        await wait_for(pilot, lambda: app.screen is main)
        assert footer.visible


@pytest.mark.parametrize("size", [(80, 24), (160, 45)])
async def test_tab_leaves_the_transcript_in_one_press_however_many_tool_calls_it_shows(tmp_path, size):
    """A tool call is selected by the cursor and expanded by enter; its title is no stop of tab
    (each one was: focus went where nothing showed it)."""
    from lovia import AssistantMessage, ToolCall, ToolResult

    db = tmp_path / "lovia.db"
    async with SQLiteSession(db, wal=True) as session:
        entries = [UserMessage(text="use the tools")]
        for n in range(3):
            entries += [ToolCall(call_id=f"c{n}", name="calculate", arguments='{"expression": "1+1"}'),
                        ToolResult(call_id=f"c{n}", output="2", name="calculate")]
        await session.append("s-tools", [*entries, AssistantMessage(text="Done.")], run_id="r-1")
    app = make_app(db)
    async with app.run_test(size=size) as pilot:
        await settle(pilot)
        await app.main.open_session("s-tools")
        await settle(pilot)
        transcript, composer = app.main.chat.transcript, app.main.query_one("#composer")
        transcript.focus()
        await settle(pilot)
        await pilot.press("tab")
        await settle(pilot)
        assert app.focused is composer
        await pilot.press("shift+tab")
        await settle(pilot)
        assert app.focused is transcript
        await pilot.press("up", "up")  # the last call
        await pilot.press("enter")
        await settle(pilot)
        assert not transcript.selected_view.query_one("Collapsible").collapsed


async def taxes_and_groceries(tmp_path) -> Path:
    """A file with two sessions, ``s-help`` ("help with taxes") and ``s-other``."""
    db = tmp_path / "lovia.db"
    async with SQLiteSession(db, wal=True) as session:
        await session.append("s-help", [UserMessage(text="help with taxes")])
        await session.append("s-other", [UserMessage(text="Groceries for the week")])
    return db


async def show_the_sessions_pane(pilot, size: tuple[int, int]) -> None:
    """Once the app settled: the sessions pane shown (over the conversation at 80 columns)."""
    await settle(pilot)
    if size[0] < 110:
        await pilot.press("ctrl+b")
        await settle(pilot)


@pytest.mark.parametrize("size", [(80, 24), (160, 45)])
async def test_backspace_in_the_list_widens_a_filter_that_matches_nothing_any_more(tmp_path, size):
    """The filter's one match deleted: the list is empty and has the focus, and only the filter box
    could change it (escape there, backspace there). Typing in the list edits the filter; so does erasing."""
    app = make_app(await taxes_and_groceries(tmp_path))
    async with app.run_test(size=size) as pilot:
        await show_the_sessions_pane(pilot, size)
        pane = app.screen.query_one("SessionsPane")
        filter_box = app.screen.query_one("#session-filter")
        app.screen.query_one("#session-list").focus()
        await pilot.press(*"taxes")
        await wait_for(pilot, lambda: [s.session_id for s in pane.sessions] == ["s-help"])
        await pilot.press("down", "delete")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen))
        await pilot.press("y")
        await wait_for(pilot, lambda: pane.sessions == [])
        app.screen.query_one("#session-list").focus()
        await settle(pilot)
        await pilot.press(*["backspace"] * 5)
        await wait_for(pilot, lambda: [s.session_id for s in pane.sessions] == ["s-other"])
        assert filter_box.value == ""


async def test_the_empty_sessions_lists_hint_is_read_whole_in_the_pane(tmp_path):
    # The list cuts each line at its width: "No session matches the filter: …" hid which key clears it.
    app = make_app(tmp_path / "lovia.db")
    async with app.run_test(size=(160, 45)) as pilot:
        await settle(pilot)
        sessions = app.screen.query_one("#session-list")
        for typed in ("", "zzz"):
            if typed:
                app.screen.query_one("SessionsPane Input").focus()
                await pilot.press(*typed)
                await wait_for(pilot, lambda: "matches" in str(sessions.get_option_at_index(0).prompt))
            await settle(pilot)
            rows = painted(app, sessions.content_region)
            hint = " ".join("".join(text for row in rows for text, _ in row).split())
            assert "…" not in hint
            assert hint.endswith(("f1 lists every key.", "escape clears it."))



@pytest.mark.parametrize("size", [(80, 24), (160, 45)])
async def test_escape_in_the_sessions_list_clears_the_filter_its_hint_names(tmp_path, size):
    # The empty list says "escape clears it" while the list has the focus; escape did nothing there.
    app = make_app(await taxes_and_groceries(tmp_path))
    async with app.run_test(size=size) as pilot:
        await show_the_sessions_pane(pilot, size)
        pane = app.screen.query_one("SessionsPane")
        session_list = app.screen.query_one("#session-list")
        session_list.focus()
        await pilot.press(*"zzz")
        await wait_for(pilot, lambda: pane.sessions == [])
        session_list.focus()
        await settle(pilot)
        assert "escape" in footer_keys(app)
        assert not {"f2", "delete"} & footer_keys(app)  # no session to rename or delete: not offered
        await pilot.press("escape")
        await wait_for(pilot, lambda: len(pane.sessions) == 2)
        assert app.screen.query_one("#session-filter").value == ""
        assert app.focused is session_list
        await wait_for(pilot, lambda: {"f2", "delete"} <= footer_keys(app))
        if size[0] >= 110:
            assert "escape" not in footer_keys(app)  # nothing left to clear
        else:
            assert app.screen.has_class("-sessions-open")
            await pilot.press("escape")  # with no filter, escape goes on to the screen: the pane folds
            await settle(pilot)
            assert not app.screen.has_class("-sessions-open")
