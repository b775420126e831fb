"""A finished run lets go of the conversation it read.

The app keeps each run's stream after its end (its worker lives in the context of the widgets
the run mounted), and a stream held its run, which held the whole session's history: one more
copy with every message, 144 MB a message in a session of 100,000 entries, never freed.
"""

from __future__ import annotations

import gc

import pytest

from lovia import Agent, CheckpointOptions, InMemoryCheckpointer, Runner, SQLiteSession, UserMessage
from lovia.entries import AssistantMessage
from lovia.models import ScriptedModel, ScriptedTurn, call as tool_call
from lovia.tools import tool

HISTORY = 300


def old_entries_alive() -> int:
    """The history's entries still alive (each read of the session decodes its own)."""
    gc.collect()
    return sum(1 for o in gc.get_objects() if isinstance(o, UserMessage | AssistantMessage) and o.text.startswith("old "))


@tool
async def echo(text: str) -> str:
    """Says it back."""
    return text


@pytest.mark.parametrize("ending", ["completed", "stopped", "failed"])
async def test_a_stream_kept_after_its_run_ended_holds_none_of_the_history(tmp_path, ending):
    async with SQLiteSession(tmp_path / "lovia.db", wal=True) as session:
        for i in range(HISTORY):
            await session.append("s", [UserMessage(text=f"old question {i}"), AssistantMessage(text=f"old answer {i}")])
        turns = {"completed": ["done"],
                 "stopped": [ScriptedTurn(tool_calls=[tool_call("echo", {"text": "x"}, call_id="c1")]), "never"],
                 "failed": [ScriptedTurn(text="half", error=RuntimeError("endpoint died"), fail_after=1)]}[ending]
        agent = Agent(name="bot", model=ScriptedModel(turns), tools=[echo])
        stream = Runner.stream(agent, "new question", session=session, session_id="s",
                               checkpoint=CheckpointOptions(InMemoryCheckpointer(), f"r-{ending}"))
        events = []
        try:
            async for event in stream:
                events.append(event)
                if ending == "stopped" and type(event).__name__ == "ToolResultReceived":
                    stream.stop()
        except RuntimeError:
            assert ending == "failed"
        assert events, "the run ran"
        del events, event  # the test's own hold on what the run emitted (an error's traceback)
        agent.model.requests.clear()  # the scripted model's record of each request, history and all
        for turn in turns:  # a scripted error is raised as the very object the script holds
            if isinstance(turn, ScriptedTurn) and turn.error is not None:
                turn.error.__traceback__ = None
        assert old_entries_alive() == 0  # with the stream still held
        assert stream.stopped is (ending == "stopped")
        if ending == "completed":
            assert stream.result is not None and stream.result.final_output == "done"
