"""A model that gives every tool call the same id: the live transcript shows each call, as a reopened one does.

Live, the calls were kept by id, so each new "call_1" went into the view of the first: one line
for 25 calls, while the reopened session showed 25.
"""

from __future__ import annotations

import pytest

from lovia import Agent, AssistantMessage, SQLiteSession, ToolCall, ToolResult, UserMessage, tool
from lovia.models import ScriptedModel, ScriptedTurn, call
from lovia.tui.widgets.tool_call_view import ToolCallView
from tests.tui.conftest import make_app, settle, type_and_send


@tool
def echo(word: str) -> str:
    """Say ``word`` back."""
    return word.upper()


@pytest.mark.parametrize("size", [(80, 24), (160, 45)])
async def test_each_call_shows_with_its_own_result_live_and_reopened(tmp_path, size):
    words = ["one", "two", "three"]
    model = ScriptedModel([*(ScriptedTurn(tool_calls=[call("echo", {"word": w}, call_id="call_1")]) for w in words),
                           "done"])
    app = make_app(tmp_path / "lovia.db", agent=Agent(name="assistant", model=model, tools=[echo]))
    async with app.run_test(size=size) as pilot:
        chat = app.screen.chat
        await type_and_send(pilot, "go")
        live = [(v.call.arguments, v.result.output if v.result else None) for v in chat.transcript.query(ToolCallView)]
        assert live == [(f'{{"word": "{w}"}}', w.upper()) for w in words]
        await chat.open_session(chat.session_id)
        await settle(pilot)
        reopened = [(v.call.arguments, v.result.output if v.result else None)
                    for v in chat.transcript.query(ToolCallView)]
        assert reopened == live


async def test_a_run_stored_with_one_id_for_every_call_shows_each_call_with_its_own_result(tmp_path):
    """Stored before the runner made ids unique: each call showed the last result of its id."""
    db = tmp_path / "lovia.db"
    entries = [UserMessage(text="go")]
    for word in ("one", "two", "three"):
        entries += [ToolCall(call_id="call_1", name="echo", arguments=f'{{"word": "{word}"}}'),
                    ToolResult(call_id="call_1", name="echo", output=word.upper())]
    async with SQLiteSession(db, wal=True) as session:
        await session.append("s-old", [*entries, AssistantMessage(text="done")], run_id="r-old")
    app = make_app(db)
    async with app.run_test(size=(80, 24)) as pilot:
        await app.screen.open_session("s-old")
        await settle(pilot)
        shown = [(v.call.arguments, v.result.output if v.result else None)
                 for v in app.screen.chat.transcript.query(ToolCallView)]
        assert shown == [('{"word": "one"}', "ONE"), ('{"word": "two"}', "TWO"), ('{"word": "three"}', "THREE")]
