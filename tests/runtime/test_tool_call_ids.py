"""Tool call ids a model repeats: each call keeps a pair of its own.

Results are paired with calls by id: in the transcript, on resume (which calls dangle), in each
call's timing. Some servers give every call the same id ("call_1" turn after turn); the live
transcript then showed one call for 25, and a resume took a later call for answered.
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from lovia import Agent, CheckpointOptions, Runner, SQLiteCheckpointer, SQLiteSession, ToolCall, ToolResult, tool
from lovia.models import FinishChunk, ScriptedModel, ScriptedTurn, ToolCallChunk, call
from lovia.timing import ToolStep, steps_from_meta


@tool
def echo(word: str) -> str:
    """Say ``word`` back."""
    return word.upper()


def looping_model() -> ScriptedModel:
    return ScriptedModel([
        ScriptedTurn(tool_calls=[call("echo", {"word": "one"}, call_id="call_1")]),
        ScriptedTurn(tool_calls=[call("echo", {"word": "two"}, call_id="call_1")]),
        ScriptedTurn(tool_calls=[call("echo", {"word": "three"}, call_id="call_1"),
                                 call("echo", {"word": "four"}, call_id="call_1")]),
        "done",
    ])


async def test_a_repeated_id_gets_a_fresh_one_and_each_result_stays_with_its_call(tmp_path):
    model = looping_model()
    db = tmp_path / "lovia.db"
    async with SQLiteSession(db) as session, SQLiteCheckpointer(db) as checkpointer:
        agent = Agent(name="bot", model=model, tools=[echo])
        result = await Runner.run(agent, "go", session=session, session_id="s",
                                  checkpoint=CheckpointOptions(checkpointer, "r1"))
        [segment] = await session.segments("s")
    calls = [e for e in segment.entries if isinstance(e, ToolCall)]
    results = {e.call_id: e.output for e in segment.entries if isinstance(e, ToolResult)}
    assert result.final_output == "done"
    assert calls[0].call_id == "call_1" and len({c.call_id for c in calls}) == 4
    assert [results[c.call_id] for c in calls] == ["ONE", "TWO", "THREE", "FOUR"]
    tool_steps = [s for s in steps_from_meta(segment.meta) if isinstance(s, ToolStep)]
    assert sorted(s.call_id for s in tool_steps) == sorted(c.call_id for c in calls)  # each call timed on its own
    # The model was sent each call and its result under the id it has now, as stored.
    def pairs(entries):
        return [(type(e).__name__, e.call_id) for e in entries if isinstance(e, (ToolCall, ToolResult))]

    assert pairs(model.requests[-1].messages) == pairs(segment.entries)


async def test_an_id_used_in_an_earlier_run_of_the_session_is_not_taken_again(tmp_path):
    db = tmp_path / "lovia.db"
    async with SQLiteSession(db) as session:
        for word in ("first", "second"):
            model = ScriptedModel([ScriptedTurn(tool_calls=[call("echo", {"word": word}, call_id="call_0")]), "ok"])
            await Runner.run(Agent(name="bot", model=model, tools=[echo]), word, session=session, session_id="s")
        entries = await session.load("s")
    ids = [e.call_id for e in entries if isinstance(e, ToolCall)]
    assert ids[0] == "call_0" and len(set(ids)) == 2
    outputs = {e.call_id: e.output for e in entries if isinstance(e, ToolResult)}
    assert outputs == dict(zip(ids, ["FIRST", "SECOND"], strict=True))


class IdlessModel(ScriptedModel):
    """A scripted model whose tool calls come with the id ``given`` (none, or an empty one)."""

    def __init__(self, turns, given: str | None) -> None:
        super().__init__(turns)
        self.given = given

    def _chunks(self, turn):
        return [replace(c, call_id=self.given) if isinstance(c, ToolCallChunk) and c.call_id else c
                for c in ScriptedModel._chunks(turn)]


@pytest.mark.parametrize("given", [None, ""])
async def test_calls_without_an_id_get_one_each(given):
    model = IdlessModel([ScriptedTurn(tool_calls=[call("echo", {"word": "a"}), call("echo", {"word": "b"})]), "ok"],
                        given)
    result = await Runner.run(Agent(name="bot", model=model, tools=[echo]), "go")
    ids = [e.call_id for e in result.new_entries if isinstance(e, ToolCall)]
    assert all(ids) and len(set(ids)) == 2
    assert sorted(e.output for e in result.new_entries if isinstance(e, ToolResult)) == ["A", "B"]


class ChunkedModel(ScriptedModel):
    """A model streaming the tool-call fragments given, then answering "ok" on the next turn."""

    def __init__(self, fragments) -> None:
        super().__init__([ScriptedTurn(tool_calls=[call("echo", {"word": "x"})]), "ok"])
        self.fragments = fragments

    def _chunks(self, turn):
        if turn.tool_calls:
            return [*self.fragments, FinishChunk("tool_calls")]
        return ScriptedModel._chunks(turn)


async def test_calls_without_ids_all_numbered_0_are_told_apart_by_their_names():
    """Each whole in one fragment, all at index 0, no id: they were one call of joined arguments."""
    model = ChunkedModel([ToolCallChunk(0, None, "echo", '{"word": "a"}'),
                          ToolCallChunk(0, None, "echo", '{"word": "b"}')])
    result = await Runner.run(Agent(name="bot", model=model, tools=[echo]), "go")
    assert sorted(e.output for e in result.new_entries if isinstance(e, ToolResult)) == ["A", "B"]


async def test_a_name_repeated_in_each_fragment_of_one_call_keeps_it_one():
    model = ChunkedModel([ToolCallChunk(0, None, "echo", '{"word":'), ToolCallChunk(0, None, "echo", ' "c"}')])
    result = await Runner.run(Agent(name="bot", model=model, tools=[echo]), "go")
    assert [e.output for e in result.new_entries if isinstance(e, ToolResult)] == ["C"]
