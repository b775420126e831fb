"""A session with a damaged run, in the app: opening it says so, and the app goes on.

A real SQLite file whose run's meta (or entries) was overwritten with text that is not JSON,
through SQLite itself; the real app through its pilot, at 80x24 and 160x45. Before, opening
such a session (picked in the list, at start-up as the newest, or reached by paging up) raised
out of the app and ended it with a traceback.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from lovia import AssistantMessage, RunHead, RunSnapshot, SQLiteCheckpointer, SQLiteSession, UserMessage
from lovia.tui.widgets.runs_pane import RunsPane
from lovia.tui.widgets.sessions_pane import SessionsPane
from lovia.tui.widgets.transcript import Transcript

from .conftest import make_app, settle, told, wait_for

SIZES = [(80, 24), (160, 45)]
SECRET = "quokka-marmalade"


async def build(path: Path, *, damaged_is_newest: bool, runs: int = 1) -> None:
    async with SQLiteSession(path, wal=True) as session:
        order = ["s-fine", "s-damaged"] if damaged_is_newest else ["s-damaged", "s-fine"]
        for session_id in order:
            for r in range(runs):
                await session.append(session_id, [UserMessage(text=f"{SECRET} {session_id} question {r}"),
                                                  AssistantMessage(text=f"answer {r}", agent="assistant")])
    with sqlite3.connect(path) as conn:  # the damaged session's first run
        conn.execute("UPDATE lovia_segments SET meta = '{\"cut' || ? WHERE seq = (SELECT MIN(seq) FROM "
                     "lovia_segments WHERE session_id = 's-damaged')", (SECRET,))


def was_told(app, words: str) -> bool:
    return any(words in n.message and SECRET not in n.message for n in told(app))


@pytest.mark.parametrize("size", SIZES)
async def test_opening_a_session_with_a_damaged_run_says_so_and_keeps_the_open_one(tmp_path, size):
    db = tmp_path / "lovia.db"
    await build(db, damaged_is_newest=False)
    app = make_app(db)
    async with app.run_test(size=size) as pilot:
        await settle(pilot)
        chat = app.screen.chat
        assert chat.session_id == "s-fine"
        if size == (80, 24):
            await pilot.press("ctrl+b")
        sessions = app.screen.query_one("#session-list")
        sessions.focus()
        await wait_for(pilot, lambda: sessions.highlighted == 0)
        await pilot.press("down", "enter")  # the older one: s-damaged
        await settle(pilot)
        assert app.is_running
        assert was_told(app, "Could not open that session") and was_told(app, "damaged")
        assert chat.session_id == "s-fine"  # what was open stays open, as it was
        assert "s-fine question 0" in chat.transcript.views[0].copy_text()
        # The app goes on: a message to the open session is answered and stored.
        await pilot.press("escape")
        chat.composer.focus()
        await pilot.press(*"hello again", "enter")
        await settle(pilot)
        async with SQLiteSession(db) as session:
            assert len(await session.load("s-fine")) > 2


@pytest.mark.parametrize("size", SIZES)
async def test_the_newest_session_damaged_at_start_up_opens_a_new_session_instead(tmp_path, size):
    db = tmp_path / "lovia.db"
    await build(db, damaged_is_newest=True)
    app = make_app(db)
    async with app.run_test(size=size) as pilot:
        await settle(pilot)
        assert app.is_running
        assert was_told(app, "Could not open that session")
        chat = app.screen.chat
        assert chat.session_id not in (None, "s-damaged", "s-fine")  # a new session, ready to send
        assert app.screen.has_class("-empty")  # the welcome of an empty session, as on any start
        # Every session is listed still, the damaged one too (its other runs may be read).
        assert {info.session_id for info in app.screen.query_one(SessionsPane).listed} >= {"s-fine", "s-damaged"}


async def test_paging_up_into_a_damaged_run_says_so_and_keeps_what_is_shown(tmp_path):
    db = tmp_path / "lovia.db"
    await build(db, damaged_is_newest=True, runs=40)  # the damaged run is the first of 40: pages away from the end
    app = make_app(db)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await app.screen.open_session("s-damaged")
        await settle(pilot)
        transcript = app.screen.chat.query_one(Transcript)
        assert app.screen.chat.session_id == "s-damaged" and transcript.older_hidden > 0
        # Its title is its own (read before its damaged first run was asked where it was forked from).
        assert "s-damaged question 0" in str(app.screen.chat.query_one("#chat-title").render())
        transcript.focus()
        await pilot.press("home")
        await settle(pilot)
        told_before = sum("Could not read that part of the session" in n.message for n in told(app))
        assert told_before >= 1
        # What was shown stays shown (home hid the window for a page it could not read: a blank transcript).
        assert transcript.views and transcript.mounted_entries > 0
        assert transcript.selected_view is not None and transcript.selected_view.display
        for _ in range(4):
            await pilot.press("pagedown", "pageup", "home")
            await settle(pilot)
            assert transcript.views and transcript.mounted_entries > 0
        assert app.is_running
        # Said once for the session shown, not again at every page the reader comes near.
        assert sum("Could not read that part of the session" in n.message for n in told(app)) == told_before


async def test_a_damaged_checkpoint_leaves_the_sessions_listed_and_opening_at_start_up(tmp_path):
    db = tmp_path / "lovia.db"
    await build(db, damaged_is_newest=False)
    async with SQLiteCheckpointer(db, wal=True) as checkpointer:
        await checkpointer.save(RunSnapshot("r-live", RunHead(agent="assistant", session_id="s-fine"),
                                            [UserMessage(text="go")]))
    with sqlite3.connect(db) as conn:
        conn.execute("UPDATE lovia_runs SET head = ? || '}' WHERE run_id = 'r-live'", (SECRET,))
    app = make_app(db)
    async with app.run_test(size=(160, 45)) as pilot:
        await settle(pilot)
        assert app.is_running
        # The damaged run is left out of the runs (the doctor names it); the rest opens as ever.
        assert [run.run_id for run in app.screen.query_one(RunsPane).runs] == []
        assert app.screen.chat.session_id == "s-fine"
        assert {info.session_id for info in app.screen.query_one(SessionsPane).listed} == {"s-fine", "s-damaged"}


async def test_resuming_a_run_of_a_session_that_cannot_be_read_streams_it_into_its_own_session(tmp_path):
    db = tmp_path / "lovia.db"
    await build(db, damaged_is_newest=False)  # s-fine opens at start; s-damaged cannot be read
    async with SQLiteCheckpointer(db, wal=True) as checkpointer:
        head = RunHead(agent="assistant", status="interrupted", turn=0, session_id="s-damaged",
                       first_input="what time is it", updated_at=0.0)
        await checkpointer.save(RunSnapshot("r-resume", head, [UserMessage(text="what time is it")]))
    app = make_app(db)
    async with app.run_test(size=(160, 45)) as pilot:
        await settle(pilot)
        chat = app.screen.chat
        assert chat.session_id == "s-fine"
        await chat.resume("r-resume")
        await settle(pilot)
        assert app.is_running and was_told(app, "Could not open that session")
        # The run went on in its own session, shown on its own (and failed there, saying why: the
        # runner reads the session's runs too); the one shown before is untouched.
        assert chat.session_id == "s-damaged"
        assert not any("s-fine question" in view.copy_text() for view in chat.transcript.views)
    async with SQLiteSession(db) as session:
        assert len(await session.load("s-fine")) == 2
    async with SQLiteCheckpointer(db) as checkpointer:
        stored = (await checkpointer.load("r-resume")).head
        assert stored.status == "failed" and "is damaged" in stored.error and SECRET not in stored.error
