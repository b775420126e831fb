"""Handoffs across resume, and the context policy with FileResultStore and recall."""

from __future__ import annotations

import os
import stat
import warnings

import pytest

from lovia import (
    Agent,
    AgentResolutionError,
    CheckpointOptions,
    ContextPolicy,
    FileResultStore,
    Handoff,
    InMemoryCheckpointer,
    InMemorySession,
    RunHead,
    Runner,
    RunSnapshot,
    ScriptedModel,
    ScriptedTurn,
    SQLiteSession,
    ToolCall,
    ToolResult,
    UserMessage,
    tool,
)
from lovia.models import call
from tests.runtime.helpers import kinds


def graph(expert_model=None, triage_model=None):
    expert = Agent(name="expert", model=expert_model or ScriptedModel(["expert answer"]))
    triage = Agent(name="triage", model=triage_model or ScriptedModel([]), handoffs=[expert])
    return triage, expert


async def test_resume_finds_the_active_agent_by_name():
    checkpointer = InMemoryCheckpointer()
    entries = [UserMessage(text="q"), ToolCall(call_id="h", name="transfer_to_expert", agent="triage"),
               ToolResult(call_id="h", output="Transferred to expert.", name="transfer_to_expert"),
               Handoff(from_agent="triage", to_agent="expert", call_id="h")]
    await checkpointer.save(RunSnapshot("r1", RunHead(agent="expert", status="interrupted", turn=1,
                                                      entry_agent="triage"), entries))
    expert_model = ScriptedModel(["expert answer"])
    triage, _ = graph(expert_model)
    result = await Runner.run(triage, [], checkpoint=CheckpointOptions(checkpointer, "r1"))
    assert result.last_agent == "expert" and result.final_output == "expert answer"
    assert len(expert_model.requests) == 1


async def test_a_pending_handoff_is_completed_before_the_targets_first_turn():
    checkpointer = InMemoryCheckpointer()
    # Crash after the transfer's result was saved, before the switch was applied.
    entries = [UserMessage(text="q"), ToolCall(call_id="h", name="transfer_to_expert", agent="triage"),
               ToolResult(call_id="h", output="Transferred to expert.", name="transfer_to_expert")]
    await checkpointer.save(RunSnapshot("r1", RunHead(agent="triage", status="interrupted", turn=1,
                                                      pending_handoff="expert"), entries))
    expert_model = ScriptedModel(["expert answer"])
    triage, _ = graph(expert_model)
    result = await Runner.run(triage, [], checkpoint=CheckpointOptions(checkpointer, "r1"))
    assert kinds(result.new_entries) == ["user", "tool_call", "tool_result", "handoff", "assistant"]
    assert kinds(expert_model.requests[0].messages) == ["user", "tool_call", "tool_result", "handoff"]
    assert result.last_agent == "expert"
    stored = await checkpointer.load("r1")
    assert stored.head.pending_handoff is None and stored.head.agent == "expert"


async def test_a_dangling_transfer_call_is_executed_on_resume():
    checkpointer = InMemoryCheckpointer()
    entries = [UserMessage(text="q"), ToolCall(call_id="h", name="transfer_to_expert", agent="triage")]
    await checkpointer.save(RunSnapshot("r1", RunHead(agent="triage", status="interrupted", turn=1), entries))
    triage, _ = graph()
    result = await Runner.run(triage, [], checkpoint=CheckpointOptions(checkpointer, "r1"))
    assert kinds(result.new_entries) == ["user", "tool_call", "tool_result", "handoff", "assistant"]


async def test_duplicate_agent_names_in_the_graph_are_a_hard_error_on_resume():
    checkpointer = InMemoryCheckpointer()
    await checkpointer.save(RunSnapshot("r1", RunHead(agent="expert", status="interrupted"), [UserMessage(text="q")]))
    twin_a, twin_b = Agent(name="expert"), Agent(name="expert")
    triage = Agent(name="triage", handoffs=[twin_a, Agent(name="other", handoffs=[twin_b])])
    with pytest.raises(AgentResolutionError, match="two different agents are both named 'expert'"):
        await Runner.run(triage, [], checkpoint=CheckpointOptions(checkpointer, "r1"))


async def test_a_renamed_agent_breaks_resume_of_in_flight_runs():
    checkpointer = InMemoryCheckpointer()
    await checkpointer.save(RunSnapshot("r1", RunHead(agent="old-expert", status="interrupted"),
                                        [UserMessage(text="q")]))
    triage, _ = graph()
    with pytest.raises(AgentResolutionError, match="'old-expert'.*renamed or removed"):
        await Runner.run(triage, [], checkpoint=CheckpointOptions(checkpointer, "r1"))
    assert (await checkpointer.load("r1")).head.agent == "old-expert"  # still there to resume later


async def test_a_renamed_agent_degrades_a_completed_replay_with_a_warning():
    checkpointer = InMemoryCheckpointer()
    await checkpointer.save(RunSnapshot("r1", RunHead(agent="old-expert", status="completed"),
                                        [UserMessage(text="q"), ToolCall(call_id="x", name="t"),
                                         ToolResult(call_id="x", output="y"), UserMessage(text="z")]))
    triage, _ = graph()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = await Runner.run(triage, [], checkpoint=CheckpointOptions(checkpointer, "r1"))
    assert result.replayed and result.last_agent == "triage"
    assert any("old-expert" in str(w.message) for w in caught) and result.warnings


# -- context policy -----------------------------------------------------------------------


@tool
def big_report(size: int) -> str:
    """A large output."""
    return "".join(f"line {i}\n" for i in range(size))


async def test_large_outputs_are_archived_cut_and_recalled(tmp_path):
    store = FileResultStore(tmp_path / "archive")
    policy = ContextPolicy(result_store=store, archive_over_chars=100, max_result_chars=200)
    session = InMemorySession()
    model = ScriptedModel([
        ScriptedTurn(tool_calls=[call("big_report", {"size": 500}, call_id="c-big")]),
        ScriptedTurn(tool_calls=[call("recall_tool_result", {"call_id": "c-big"}, call_id="c-recall")]),
        "done",
    ])
    agent = Agent(name="bot", model=model, tools=[big_report])
    result = await Runner.run(agent, "report", session=session, session_id="u1", context_policy=policy)
    report, recalled = [e for e in result.new_entries if isinstance(e, ToolResult)]
    assert len(report.output) < 400 and "recall_tool_result" in report.output and "c-big" in report.output
    assert recalled.output == big_report.function(500) and not recalled.is_error  # whole, never cut
    assert "recall_tool_result" in [spec.name for spec in model.requests[0].tools]
    meta = (await session.segments("u1"))[0].meta
    assert set(meta["context"]["archived"]) == {"c-big"}
    files = list((tmp_path / "archive").iterdir())
    assert files and all(stat.S_IMODE(os.stat(f).st_mode) == 0o600 for f in files)
    assert stat.S_IMODE(os.stat(tmp_path / "archive").st_mode) == 0o700


async def test_recall_works_in_a_later_run_after_trim_and_forgets_after_rewind(tmp_path):
    policy = ContextPolicy(result_store=FileResultStore(tmp_path / "archive"), archive_over_chars=50)
    session = SQLiteSession(tmp_path / "chat.db")
    first = ScriptedModel([ScriptedTurn(tool_calls=[call("big_report", {"size": 80}, call_id="c-old")]), "ok"])
    await Runner.run(Agent(name="bot", model=first, tools=[big_report]), "report", session=session,
                     session_id="u1", context_policy=policy)
    await session.append("u1", [UserMessage(text="later")], run_id="later")
    trimmed = await session.trim_tool_results("u1", keep_chars=20, keep_runs=1)
    assert trimmed == 1

    second = ScriptedModel([ScriptedTurn(tool_calls=[call("recall_tool_result", {"call_id": "c-old"})]), "ok"])
    result = await Runner.run(Agent(name="bot", model=second, tools=[big_report]), "recall it", session=session,
                              session_id="u1", context_policy=policy)
    recalled = next(e for e in result.new_entries if isinstance(e, ToolResult))
    assert recalled.output == big_report.function(80) and not recalled.is_error

    await session.rewind("u1", keep_entries=2)  # cuts into the first run: its meta goes
    third = ScriptedModel([ScriptedTurn(tool_calls=[call("recall_tool_result", {"call_id": "c-old"})]), "ok"])
    result = await Runner.run(Agent(name="bot", model=third, tools=[big_report]), "again", session=session,
                              session_id="u1", context_policy=policy)
    failed = next(e for e in result.new_entries if isinstance(e, ToolResult))
    assert failed.is_error and "no archived output for call_id 'c-old'" in failed.output
    await session.close()


async def test_carried_state_lives_in_the_head_while_in_flight(tmp_path):
    policy = ContextPolicy(result_store=FileResultStore(tmp_path / "a"), archive_over_chars=10)
    checkpointer = InMemoryCheckpointer()
    model = ScriptedModel([ScriptedTurn(tool_calls=[call("big_report", {"size": 10}, call_id="c1")]),
                           ScriptedTurn(error=RuntimeError("crash"))])
    with pytest.raises(RuntimeError):
        await Runner.run(Agent(name="bot", model=model, tools=[big_report]), "x",
                         checkpoint=CheckpointOptions(checkpointer, "r1"), context_policy=policy)
    head = (await checkpointer.load("r1")).head
    assert list(head.context_state["archived"]) == ["c1"]


class RemembersASet(ContextPolicy):
    """A policy whose run state holds a set, which no store can keep as it is."""

    async def process_result(self, result, *, run_id, run_state):
        run_state["seen"] = {result.call_id}
        return result


@pytest.mark.parametrize("store", ["memory", "sqlite"])
async def test_a_context_state_that_cannot_survive_json_is_refused_when_made_in_every_store(tmp_path, store):
    # A set came back from the SQLite store as a list (and a date as a string), while memory kept
    # it: a resumed run saw other state than it left. It is refused where the policy makes it.
    from lovia import SQLiteCheckpointer, UserError

    checkpointer = InMemoryCheckpointer() if store == "memory" else SQLiteCheckpointer(tmp_path / "c.db")
    model = ScriptedModel([ScriptedTurn(tool_calls=[call("big_report", {"size": 10}, call_id="c1")]), "done"])
    with pytest.raises(UserError, match="context policy's run state must be JSON-serializable"):
        await Runner.run(Agent(name="bot", model=model, tools=[big_report]), "x",
                         checkpoint=CheckpointOptions(checkpointer, "r1"), context_policy=RemembersASet())
    head = (await checkpointer.load("r1")).head
    assert head.status == "failed" and "seen" not in head.context_state
    if store == "sqlite":
        await checkpointer.close()
