"""A resume goes on with the model lovia uses now: when the run ran on another, the user is asked first."""

from __future__ import annotations

import pytest

from lovia import SQLiteCheckpointer, SQLiteSession
from lovia.checkpoint import RunHead, RunSnapshot
from lovia.entries import AssistantMessage, UserMessage
from lovia.tui.screens.choice import ChoiceScreen
from lovia.tui.screens.confirm import ConfirmScreen
from tests.tui.conftest import make_app, settle, told, wait_for
from tests.tui.test_stop_and_continue import type_and_send_no_settle

SIZES = [(80, 24), (160, 45)]


async def interrupted(db, model: str | None, status: str = "interrupted") -> None:
    async with SQLiteSession(db, wal=True) as session, SQLiteCheckpointer(db, wal=True) as checkpointer:
        await session.append("s-a", [UserMessage(text="earlier"), AssistantMessage(text="ok")], run_id="old")
        head = RunHead(agent="assistant", status=status, session_id="s-a", first_input="go on", model=model)
        await checkpointer.save(RunSnapshot("run-x", head, [UserMessage(text="go on")]))


async def status_of(db) -> str | None:
    async with SQLiteCheckpointer(db, wal=True) as checkpointer:
        snapshot = await checkpointer.load("run-x")
        return None if snapshot is None else snapshot.head.status


@pytest.mark.parametrize("size", SIZES)
async def test_a_run_begun_on_another_model_is_resumed_only_if_the_user_agrees(tmp_path, size):
    """Begun against a local server, it went on with the offline demo at ctrl+r, without a word."""
    db = tmp_path / "lovia.db"
    await interrupted(db, "openai:local")
    app = make_app(db)  # the demo model
    async with app.run_test(size=size) as pilot:
        await settle(pilot)
        await app.screen.open_session("s-a")
        await settle(pilot)
        await pilot.press("ctrl+r")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen))
        question = str(app.screen.query_one("#question").render())
        assert "This run ran on openai:local; lovia uses demo now" in question
        assert app.screen.query_one("#question").region.right <= size[0]
        await pilot.press("escape")
        await settle(pilot)
        assert await status_of(db) == "interrupted"  # not resumed
        await pilot.press("ctrl+r")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen))
        await pilot.press("y")
        await settle(pilot)
        await wait_for(pilot, lambda: not app.screen.chat.running)
        assert await status_of(db) in (None, "completed")


@pytest.mark.parametrize("model", ["demo", None])
async def test_a_run_on_the_same_model_or_of_unknown_model_resumes_at_once(tmp_path, model):
    db = tmp_path / "lovia.db"
    await interrupted(db, model)
    app = make_app(db)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await app.screen.open_session("s-a")
        await settle(pilot)
        await pilot.press("ctrl+r")
        await settle(pilot)
        await wait_for(pilot, lambda: not app.screen.chat.running)
        assert not isinstance(app.screen, ConfirmScreen)
        assert await status_of(db) in (None, "completed")


async def test_saying_no_to_the_other_model_when_a_message_waits_keeps_it_without_a_promise(tmp_path):
    """Resume, asked before a message goes, then no to the other model: the notice still said "send
    it when the run is done", with no run going."""
    db = tmp_path / "lovia.db"
    await interrupted(db, "openai:local", status="failed")
    app = make_app(db)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await app.screen.open_session("s-a")
        await settle(pilot)
        await type_and_send_no_settle(pilot, "next")
        await wait_for(pilot, lambda: isinstance(app.screen, ChoiceScreen))
        await pilot.press("r")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen))
        await pilot.press("n")
        await settle(pilot)
        assert not app.screen.chat.running and app.screen.chat.composer.text == "next"
        assert not [t for t in told(app) if "send it when the run is done" in t.message]
        assert await status_of(db) == "failed"


async def test_a_run_held_elsewhere_is_refused_before_the_model_question(tmp_path):
    """It asked "Resume with demo?", then, answered yes, said another process executes the run."""
    import time

    from lovia.checkpoint import RunOwner

    db = tmp_path / "lovia.db"
    async with SQLiteSession(db, wal=True) as session, SQLiteCheckpointer(db, wal=True) as checkpointer:
        await session.append("s-a", [UserMessage(text="earlier"), AssistantMessage(text="ok")], run_id="old")
        head = RunHead(agent="assistant", status="running", session_id="s-a", first_input="go on",
                       model="openai:local", owner=RunOwner(host="build-7", pid=4242, started=99),
                       claim="token-x", lease_until=time.time() + 3600)
        await checkpointer.save(RunSnapshot("run-x", head, [UserMessage(text="go on")]))
    app = make_app(db)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await app.screen.open_session("s-a")
        await settle(pilot)
        await app.screen.chat.resume("run-x")
        await settle(pilot)
        assert not isinstance(app.screen, ConfirmScreen)
        assert any("build-7" in t.message for t in told(app))
