"""Defects new users met: keys that said nothing while an answer ran, a resume that could not work
offered (and marking the run failed), and a stopped answer read as a crash.

The real app over a real SQLite file.
"""

from __future__ import annotations

import subprocess
from dataclasses import replace

import pytest

from lovia import Agent, AssistantMessage, SQLiteCheckpointer, ToolCall, UserMessage
from lovia.checkpoint import RunHead, RunOwner, RunSnapshot
from lovia.models import ScriptedModel, ScriptedTurn, call
from lovia.tui.screens.choice import ChoiceScreen
from lovia.tui.screens.main import MainScreen
from lovia.tui.widgets.assistant_message import AssistantMessageView
from tests.tui.conftest import make_app, settle, told, type_and_send, wait_for
from tests.tui.test_stop_and_continue import blocking_tool, type_and_send_no_settle

STOPPED_NOTE = "cut off: you stopped the run while this streamed"


# -- 1. every conversation key says why it does nothing while an answer runs ------------------------

@pytest.mark.parametrize("size", [(80, 24), (160, 45)])
async def test_conversation_keys_say_why_they_wait_while_an_answer_runs(tmp_path, size):
    slow, gate = blocking_tool()
    model = ScriptedModel(["first answer",
                           ScriptedTurn(text="Let me check.", tool_calls=[call("slow", {"seconds": 1}, call_id="c1")]),
                           "done"])
    app = make_app(tmp_path / "lovia.db", agent=Agent(name="assistant", tools=[slow], model=model))
    async with app.run_test(size=size) as pilot:
        await type_and_send(pilot, "hello")
        await type_and_send_no_settle(pilot, "go slow")
        await wait_for(pilot, gate.is_set)
        chat = app.screen.chat
        cases = [("composer", "ctrl+g", "then regenerate"), ("composer", "ctrl+l", "then edit"),
                 ("composer", "ctrl+r", "stop it (escape) first"), ("composer", "up", "then edit"),
                 ("transcript", "ctrl+g", "then regenerate"), ("transcript", "ctrl+l", "then edit"),
                 ("transcript", "ctrl+r", "stop it (escape) first"), ("transcript", "e", "then edit"),
                 ("transcript", "t", "then trim"), ("transcript", "u", "then undo"),
                 ("transcript", "f", "before forking")]
        for where, key, says in cases:
            app.screen.query_one(f"#{where}").focus()
            await pilot.pause()
            if where == "transcript":
                await pilot.press("home")  # on "hello", one of the user's messages: e edits it, f forks there
            told(app).clear()
            await pilot.press(key)
            await pilot.pause(0.2)
            assert isinstance(app.screen, MainScreen), (key, "asked something while the answer ran")
            notices = [t for t in told(app) if t.severity == "warning"]
            assert [says in t.message and "escape" in t.message for t in notices] == [True], (where, key, told(app))
            assert chat.running and not app.screen.query_one("#composer").has_class("-editing")
        await pilot.press("escape")
        await settle(pilot)
        told(app).clear()
        await pilot.press("ctrl+r")  # stopped: the key goes on with it again
        await settle(pilot)
        assert not any("escape" in t.message for t in told(app))


# -- 2. a run whose agent lovia does not have is refused before anything, and stays as it was ---------

def dead_owner() -> RunOwner:
    """This machine's owner of a process that has exited."""
    child = subprocess.Popen(["true"])
    child.wait()
    return replace(RunOwner.current(), pid=child.pid, started=1)


async def crashed_run_of_another_agent(db) -> RunHead:
    """What a worker's ``Agent(name="worker-B", model="openai:slow")`` leaves when killed inside a tool call."""
    async with SQLiteCheckpointer(db, wal=True) as checkpointer:
        head = RunHead(agent="worker-B", status="running", session_id="s-b", first_input="wait 10",
                       entry_agent="worker-B", model="openai:slow", owner=dead_owner(), claim="gone",
                       lease_until=1.0, started_at=1.0, updated_at=2.0, turn=1)
        entries = [UserMessage(text="wait 10"), AssistantMessage(text="Waiting."),
                   ToolCall(call_id="c1", name="sleepy", arguments='{"seconds": 10}')]
        await checkpointer.save(RunSnapshot("run-b", head, entries))
        stored = await checkpointer.load("run-b")
        assert stored is not None and stored.head.crashed
        return stored.head


async def head_of(db) -> RunHead:
    async with SQLiteCheckpointer(db, wal=True) as checkpointer:
        snapshot = await checkpointer.load("run-b")
        assert snapshot is not None
        return snapshot.head


def refusals(app) -> list[str]:
    return [t.message for t in told(app) if "'worker-B'" in t.message]


def assert_refused_once_and_untouched(app, before: RunHead, after: RunHead) -> None:
    [said] = refusals(app)
    assert "lovia --agent MODULE:ATTR" in said and "left as it is" in said
    assert "ctrl+r" not in said and not isinstance(app.screen, ChoiceScreen)
    assert after == before and after.crashed and after.error is None  # still crashed, not failed


@pytest.mark.parametrize("entry", ["runs list", "conversation", "inspector"])
async def test_a_run_of_an_agent_lovia_lacks_is_refused_before_the_model_question(tmp_path, entry):
    db = tmp_path / "lovia.db"
    before = await crashed_run_of_another_agent(db)
    app = make_app(db)  # the demo model, agent "assistant"
    async with app.run_test(size=(160, 45)) as pilot:
        await settle(pilot)
        if entry == "conversation":
            await app.screen.open_session("s-b")
            await settle(pilot)
            app.screen.query_one("#composer").focus()
            await pilot.press("ctrl+r")
        else:
            app.screen.query_one("#run-list").focus()
            await wait_for(pilot, lambda: app.screen.inspected == "run-b")
            if entry == "inspector":
                app.screen.query_one("CheckpointInspector").focus()
                await pilot.pause()
            await pilot.press("r")
        # Before: "Resume with demo?" first, then a failure that marked the run failed.
        await wait_for(pilot, lambda: refusals(app) or not isinstance(app.screen, MainScreen))
        assert isinstance(app.screen, MainScreen)  # no "Resume with demo?" first
        await settle(pilot)
        assert_refused_once_and_untouched(app, before, await head_of(db))
        assert not app.screen.chat.running


async def test_sending_after_a_run_of_an_agent_lovia_lacks_does_not_offer_to_resume_it(tmp_path):
    db = tmp_path / "lovia.db"
    before = await crashed_run_of_another_agent(db)
    app = make_app(db)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await app.screen.open_session("s-b")
        await settle(pilot)
        # Under the run, how to go on names the option, not the resume key that cannot work.
        notices = [f"{n.text} {n.hint}" for n in app.screen.query("NoticeView")]
        assert any("'worker-B'" in n and "lovia --agent MODULE:ATTR" in n and "ctrl+r" not in n for n in notices)
        await type_and_send_no_settle(pilot, "hi")
        await wait_for(pilot, lambda: isinstance(app.screen, ChoiceScreen))
        assert "choice-resume" not in [b.id for b in app.screen.query("Button")]
        question = str(app.screen.query_one("#question").render())
        assert "cannot be resumed here" in question and "lovia --agent MODULE:ATTR" in question
        await pilot.press("escape")
        await settle(pilot)
        assert await head_of(db) == before


# -- 3. an answer the user stopped says so, not what a crash says ------------------------------------

async def test_a_stopped_answer_says_the_user_stopped_it(tmp_path):
    streamed = ScriptedModel([ScriptedTurn(text="The answer begins " + "and goes on " * 400, delay=0.01)])
    db = tmp_path / "lovia.db"
    app = make_app(db, model=streamed)
    async with app.run_test(size=(80, 24)) as pilot:
        await type_and_send_no_settle(pilot, "talk")
        await wait_for(pilot, lambda: any(v.text for v in app.screen.query(AssistantMessageView)))
        await pilot.press("escape")
        await settle(pilot)

        def notes() -> list[str]:
            return [str(s.render()) for s in app.screen.query("AssistantMessageView .finish")]

        assert notes() == [STOPPED_NOTE]  # live, as the stop lands
        await app.screen.chat.open_session(app.screen.chat.session_id)  # reopened from its checkpoint
        await settle(pilot)
        assert notes() == [STOPPED_NOTE]
        await type_and_send(pilot, "next")  # the stopped run becomes a partial segment first
        await wait_for(pilot, lambda: not app.screen.chat.running)
        await app.screen.chat.open_session(app.screen.chat.session_id)
        await settle(pilot)
        assert notes() == [STOPPED_NOTE]
