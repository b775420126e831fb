"""Turns a model ends for an unusual reason: the reason is stored, and a call whose arguments
do not parse (one cut off by the token limit) is never acted on, by any path."""

from __future__ import annotations

from lovia import (
    Agent,
    AssistantMessage,
    CheckpointOptions,
    ContextPolicy,
    FileResultStore,
    Handoff,
    RunHead,
    Runner,
    RunSnapshot,
    SQLiteCheckpointer,
    ToolCall,
    ToolResult,
    UserMessage,
    tool,
)
from lovia.models import ScriptedModel, ScriptedTurn, call

RAN: list[str] = []


@tool
def note(text: str) -> str:
    """Note something."""
    RAN.append(text)
    return "noted"


def results(entries) -> list[ToolResult]:
    return [e for e in entries if isinstance(e, ToolResult)]


async def test_a_cut_off_handoff_does_not_hand_off():
    expert = Agent(name="expert", model=ScriptedModel(["Expert here."]))
    model = ScriptedModel([
        ScriptedTurn(tool_calls=[call("transfer_to_expert", '{"reason": "the user wa')], finish="length"),
        "I stay.",
    ])
    result = await Runner.run(Agent(name="triage", model=model, handoffs=[expert]), "help")
    assert result.last_agent == "triage" and result.final_output == "I stay."
    assert not [e for e in result.new_entries if isinstance(e, Handoff)]
    (refusal,) = results(result.new_entries)
    assert refusal.is_error and "cut off at the model's output token limit" in refusal.output


async def test_unparseable_arguments_reach_no_tool_recall_or_unknown_name(tmp_path):
    RAN.clear()
    policy = ContextPolicy(result_store=FileResultStore(tmp_path / "outputs"))
    model = ScriptedModel([
        ScriptedTurn(tool_calls=[call("note", '{"text": "half'), call("recall_tool_result", "{call_id"),
                                 call("no_such_tool", "[1, 2]"), call("note", {"text": "whole"})]),
        "done",
    ])
    result = await Runner.run(Agent(name="bot", model=model, tools=[note]), "go", context_policy=policy)
    assert RAN == ["whole"]  # only the call whose arguments parse was run
    outputs = [r.output for r in results(result.new_entries)]
    assert [r.is_error for r in results(result.new_entries)] == [True, True, True, False]
    assert "invalid arguments for note: arguments are not valid JSON" in outputs[0]
    assert "invalid arguments for recall_tool_result: arguments are not valid JSON" in outputs[1]
    assert "invalid arguments for no_such_tool: tool arguments must be a JSON object, got list" in outputs[2]


async def test_a_cut_off_call_left_dangling_is_not_run_on_resume(tmp_path):
    RAN.clear()
    checkpointer = SQLiteCheckpointer(tmp_path / "runs.db")
    cut = ToolCall(call_id="c1", name="note", arguments='{"text": "ha', finish_reason="length")
    await checkpointer.save(RunSnapshot("r1", RunHead(agent="bot", status="interrupted", turn=1),
                                        [UserMessage(text="go"), cut]))
    model = ScriptedModel(["done"])
    result = await Runner.run(Agent(name="bot", model=model, tools=[note]), [],
                              checkpoint=CheckpointOptions(checkpointer, "r1", if_run_exists="resume_only"))
    assert RAN == [] and result.final_output == "done"
    (refusal,) = results(result.new_entries)
    assert refusal.call_id == "c1" and "cut off" in refusal.output
    await checkpointer.close()


async def test_a_call_that_parses_is_run_even_when_the_turn_was_cut_after_it():
    RAN.clear()
    model = ScriptedModel([ScriptedTurn(tool_calls=[call("note", {"text": "complete"})], finish="length"), "ok"])
    result = await Runner.run(Agent(name="bot", model=model, tools=[note]), "go")
    assert RAN == ["complete"]
    assert [e.finish_reason for e in result.new_entries if isinstance(e, ToolCall)] == ["length"]


async def test_a_cut_off_answer_records_why_on_its_message():
    model = ScriptedModel([ScriptedTurn(text="The list: one, two, thr", finish="length")])
    result = await Runner.run(Agent(name="bot", model=model), "list")
    assert result.finish_reason == "length"
    assert result.new_entries[-1] == AssistantMessage(text="The list: one, two, thr", agent="bot",
                                                      finish_reason="length",
                                                      created_at=result.new_entries[-1].created_at)


async def test_a_turn_cut_off_before_any_output_leaves_an_empty_message_saying_so():
    result = await Runner.run(Agent(name="bot", model=ScriptedModel([ScriptedTurn(finish="length")])), "think")
    last = result.new_entries[-1]
    assert isinstance(last, AssistantMessage) and last.text == "" and last.finish_reason == "length"


async def test_usual_finishes_are_not_recorded():
    model = ScriptedModel([ScriptedTurn(text="Let me note.", tool_calls=[call("note", {"text": "x"})]), "Done."])
    result = await Runner.run(Agent(name="bot", model=model, tools=[note]), "go")
    assert [getattr(e, "finish_reason", None) for e in result.new_entries] == [None] * len(result.new_entries)
