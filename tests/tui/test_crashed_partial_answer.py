"""A run killed mid-answer (SIGKILL, real process, real SSE server) shows what streamed, cut off, and keeps it.

The partial-answer journal (issue 10, item 1) gives the crashed run's head its ``cut_off_text``,
so the runs list, the transcript and finalizing treat it as they treat a stopped answer.
"""

from __future__ import annotations

import asyncio

import pytest
from rich.console import Console

from lovia import SQLiteSession
from lovia.models import ScriptedModel
from lovia.timing import steps_from_meta
from lovia.tui.screens.choice import ChoiceScreen
from lovia.tui.screens.confirm import ConfirmScreen
from lovia.tui.widgets.assistant_message import AssistantMessageView
from lovia.tui.widgets.notice import NoticeView
from tests.runtime.drip_server import PARTIAL, DripServer
from tests.runtime.test_partial_journal import RUN, stream_then_kill
from tests.tui.conftest import make_app, settle, wait_for


def plain(renderable) -> str:
    console = Console(width=200, record=True, file=open("/dev/null", "w"))  # noqa: SIM115
    console.print(renderable)
    return console.export_text()


@pytest.mark.parametrize("size", [(160, 45), (80, 24)])
async def test_a_crashed_run_shows_its_streamed_text_cut_off_and_finalize_keeps_it(tmp_path, size):
    db = tmp_path / "lovia.db"
    with DripServer() as server:
        await asyncio.to_thread(stream_then_kill, db, server)
    app = make_app(db)
    async with app.run_test(size=size) as pilot:
        await pilot.pause()
        runs = app.screen.query_one("RunsPane")
        await wait_for(pilot, lambda: len(runs.runs) == 1)
        [crashed] = runs.runs
        assert crashed.run_id == RUN and crashed.head.crashed and crashed.head.cut_off_text == PARTIAL

        chat = app.screen.chat
        await chat.open_session("s1")
        await settle(pilot)
        views = list(chat.transcript.query(AssistantMessageView))
        assert [(v.text, v.finish_reason) for v in views] == [(PARTIAL, "cut_off")]
        note = plain(views[0].query_one(".finish").render())
        assert "cut off" in note and "stopped" not in note  # it crashed: nobody stopped it

        if size == (80, 24):
            await pilot.press("ctrl+o")  # the runs pane, folded away at this size
            await settle(pilot)
        app.screen.query_one("#run-list").focus()
        await wait_for(pilot, lambda: app.screen.inspected == RUN)
        shown = plain(app.screen.query_one("CheckpointInspector").shown)
        # Killed in its first answer: no turn and no request finished (it read "turn 0", "0 requests").
        assert "none finished" in shown and "no request finished" in shown and "0 requests" not in shown
        await pilot.press("f")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen))
        await pilot.press("y")
        await settle(pilot)
        await wait_for(pilot, lambda: runs.runs == [])
        views = list(chat.transcript.query(AssistantMessageView))
        assert [(v.text, v.finish_reason) for v in views] == [(PARTIAL, "cut_off")]  # now from the session
    async with SQLiteSession(db, wal=True) as session:
        [segment] = await session.segments("s1")
    assert segment.meta["partial"] is True and segment.meta["ended"] == "crashed"
    assert [(e.type, e.text) for e in segment.entries] == [("user", "tell me"), ("assistant", PARTIAL)]
    assert segment.entries[-1].finish_reason == "cut_off"
    [turn] = steps_from_meta(segment.meta)  # the turn it died in, from the journal: its timeline is kept
    assert turn.kind == "model" and turn.finished_at is None
    # Timed until the journal's last write, when it was last known to run, not until the finalize:
    # the seconds the app was closed were counted as its run time.
    assert segment.finished_at == turn.streamed_until
    assert segment.meta["active_seconds"] == pytest.approx(turn.streamed_until - segment.started_at, abs=0.5)


async def test_sending_after_a_crashed_run_keeps_its_streamed_text_as_a_partial_before_the_new_message(tmp_path):
    db = tmp_path / "lovia.db"
    with DripServer() as server:
        await asyncio.to_thread(stream_then_kill, db, server)
    app = make_app(db, model=ScriptedModel(["the next answer"]))
    async with app.run_test(size=(80, 24)) as pilot:
        chat = app.screen.chat
        await chat.open_session("s1")
        await settle(pilot)
        chat.composer.focus()
        await pilot.pause()
        await pilot.press(*"and then?", "enter")
        # "Notice" under the run and the question said it "goes on where it stopped": the answer is asked anew.
        notices = [str(n.text) for n in chat.transcript.query(NoticeView)]
        assert any("resumes it from its last saved step (the answer it was writing when cut off is asked for again)"
                   in n for n in notices), notices
        await wait_for(pilot, lambda: isinstance(app.screen, ChoiceScreen))
        assert "crashed" in str(app.screen.question) and "Keep as partial" in str(app.screen.question)
        assert "from its last saved step (the answer it was writing when cut off is asked for again)" in str(
            app.screen.question)
        await pilot.press("k")
        await settle(pilot)
        await wait_for(pilot, lambda: not chat.running)
        views = list(chat.transcript.query(AssistantMessageView))
        assert [(v.text, v.finish_reason) for v in views] == [(PARTIAL, "cut_off"), ("the next answer", None)]
    async with SQLiteSession(db, wal=True) as session:
        crashed, new = await session.segments("s1")
    assert crashed.meta["ended"] == "crashed"
    assert [(e.text, getattr(e, "finish_reason", None)) for e in crashed.entries] == [
        ("tell me", None), (PARTIAL, "cut_off")]
    assert [e.text for e in new.entries] == ["and then?", "the next answer"]
