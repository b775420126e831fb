"""The run loop: results, events, tools, instructions, guardrails, hooks, limits."""

from __future__ import annotations

import asyncio

import pytest

from lovia import (
    Agent,
    AssistantMessage,
    DemoModel,
    GuardrailTripped,
    HandoffOccurred,
    InMemorySession,
    MaxTurnsExceeded,
    MessageCompleted,
    RunCompleted,
    RunContext,
    RunFailed,
    RunHooks,
    Runner,
    RunStarted,
    ScriptedModel,
    ScriptedTurn,
    TextDelta,
    ToolCallStarted,
    ToolContext,
    ToolResult,
    ToolResultReceived,
    TurnFinished,
    UserError,
    UserMessage,
    tool,
)
from lovia.models import OpenAIChatModel, call
from tests.runtime.helpers import kinds


@tool
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


@tool
async def explode(reason: str) -> str:
    """Always fails."""
    raise RuntimeError(f"kaboom: {reason}")


async def test_a_text_only_run_returns_its_result():
    model = ScriptedModel(["Hello there!"])
    result = await Runner.run(Agent(name="bot", model=model), "hi")
    assert result.final_output == "Hello there!" and str(result) == "Hello there!"
    assert kinds(result.new_entries) == ["user", "assistant"]
    assert result.new_entries[1].agent == "bot"
    assert result.last_agent == "bot" and result.finish_reason == "stop" and result.run_id
    assert result.usage.requests == 1 and result.usage.output_tokens > 0
    assert not result.replayed


async def test_events_arrive_in_order_around_a_tool_call():
    model = ScriptedModel([ScriptedTurn(text="Let me add.", tool_calls=[call("add", {"a": 2, "b": 3})]), "It is 5."])
    stream = Runner.stream(Agent(name="bot", model=model, tools=[add]), "2+3?")
    events = [event async for event in stream]
    names = [type(e).__name__ for e in events]
    assert names[0] == "RunStarted" and names[-1] == "RunCompleted"
    first_turn = names[1:names.index("TurnFinished") + 1]
    assert first_turn[:-1].count("TextDelta") >= 1
    assert [n for n in first_turn if n != "TextDelta"] == ["MessageCompleted", "ToolCallStarted", "ToolResultReceived",
                                                            "TurnFinished"]
    result_event = next(e for e in events if isinstance(e, ToolResultReceived))
    assert result_event.result.output == "5" and not result_event.result.is_error
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == "Let me add.It is 5."
    assert stream.result.final_output == "It is 5."
    assert isinstance(events[0], RunStarted) and events[0].resumed is False and events[0].model == "scripted"


async def test_tool_errors_become_results_the_model_sees():
    model = ScriptedModel([
        ScriptedTurn(tool_calls=[call("explode", {"reason": "test"})]),
        ScriptedTurn(tool_calls=[call("add", {"a": 1})]),
        ScriptedTurn(tool_calls=[call("add", "{not json")]),
        ScriptedTurn(tool_calls=[call("nonexistent", {})]),
        "I give up.",
    ])
    result = await Runner.run(Agent(name="bot", model=model, tools=[add, explode]), "go")
    errors = [e for e in result.new_entries if isinstance(e, ToolResult)]
    assert all(e.is_error for e in errors)
    assert "RuntimeError: kaboom: test" in errors[0].output
    assert "missing required b" in errors[1].output
    assert "not valid JSON" in errors[2].output
    assert "unknown tool 'nonexistent'" in errors[3].output and "add" in errors[3].output
    # The model saw each error in its next request.
    assert model.requests[1].messages[-1] == errors[0]
    assert result.final_output == "I give up."


async def test_tools_get_their_context_and_sync_tools_work():
    seen = []

    @tool
    def whoami(ctx: ToolContext[dict], greeting: str = "hi") -> str:
        """Report the context."""
        seen.append((ctx.run_id, ctx.deps, ctx.agent, ctx.call_id, ctx.turn, greeting))
        return "ok"

    model = ScriptedModel([ScriptedTurn(tool_calls=[call("whoami", {}, call_id="c-1")]), "done"])
    result = await Runner.run(Agent(name="bot", model=model, tools=[whoami]), "x", deps={"user": 7})
    assert seen == [(result.run_id, {"user": 7}, "bot", "c-1", 1, "hi")]


async def test_parallel_tool_calls_run_concurrently():
    both_started = asyncio.Event()
    started = []

    @tool
    async def meet(name: str) -> str:
        """Wait until both calls are running."""
        started.append(name)
        if len(started) == 2:
            both_started.set()
        await asyncio.wait_for(both_started.wait(), timeout=5)
        return f"met {name}"

    model = ScriptedModel([ScriptedTurn(tool_calls=[call("meet", {"name": "a"}), call("meet", {"name": "b"})]), "done"])
    result = await Runner.run(Agent(name="bot", model=model, tools=[meet]), "x")
    outputs = sorted(e.output for e in result.new_entries if isinstance(e, ToolResult))
    assert outputs == ["met a", "met b"]
    assert kinds(result.new_entries) == ["user", "tool_call", "tool_call", "tool_result", "tool_result", "assistant"]


async def test_instructions_are_rendered_from_the_run_context():
    async def instructions(ctx: RunContext[str]) -> str:
        return f"You help {ctx.deps} in run {ctx.run_id}."

    model = ScriptedModel(["ok"])
    result = await Runner.run(Agent(name="bot", model=model, instructions=instructions), "x", deps="Ada")
    assert model.requests[0].instructions == f"You help Ada in run {result.run_id}."
    assert model.requests[0].tools == []


async def test_max_turns_stops_a_looping_agent():
    model = ScriptedModel([ScriptedTurn(tool_calls=[call("add", {"a": 1, "b": 1})])] * 5)
    with pytest.raises(MaxTurnsExceeded, match="max_turns=3"):
        await Runner.run(Agent(name="bot", model=model, tools=[add]), "loop", max_turns=3)
    assert len(model.requests) == 3
    with pytest.raises(UserError):
        await Runner.run(Agent(name="bot", model=model), "x", max_turns=0)


async def test_input_guardrail_stops_the_run_before_the_model():
    def no_secrets(ctx, text):
        return "mentions a password" if "password" in text else None

    model = ScriptedModel(["never"])
    agent = Agent(name="bot", model=model, input_guardrails=[no_secrets])
    with pytest.raises(GuardrailTripped, match="no_secrets.*mentions a password"):
        await Runner.run(agent, "my password is hunter2")
    assert model.requests == []
    assert (await Runner.run(agent, "hello")).final_output == "never"


async def test_output_guardrail_fails_the_run_and_nothing_is_appended():
    async def polite(ctx, text):
        return "rude" if "stupid" in text else None

    session = InMemorySession()
    agent = Agent(name="bot", model=ScriptedModel(["that is stupid"]), output_guardrails=[polite])
    events = []
    with pytest.raises(GuardrailTripped):
        async for event in Runner.stream(agent, "x", session=session, session_id="u1"):
            events.append(event)
    assert isinstance(events[-1], RunFailed) and isinstance(events[-1].error, GuardrailTripped)
    assert await session.load("u1") == []


async def test_hooks_are_called_around_the_run():
    calls = []

    class Recorder(RunHooks):
        async def on_run_start(self, ctx, agent):
            calls.append(("start", agent.name))

        async def on_tool_start(self, ctx, tool_call):
            calls.append(("tool", tool_call.name))

        async def on_tool_end(self, ctx, tool_call, result):
            calls.append(("tool_end", result.output))

        async def on_run_end(self, ctx, result):
            calls.append(("end", result.final_output))

    model = ScriptedModel([ScriptedTurn(tool_calls=[call("add", {"a": 1, "b": 2})]), "3"])
    await Runner.run(Agent(name="bot", model=model, tools=[add], hooks=Recorder()), "x")
    assert calls == [("start", "bot"), ("tool", "add"), ("tool_end", "3"), ("end", "3")]


async def test_a_model_error_fails_the_run_with_that_error():
    from lovia import ModelError

    model = ScriptedModel([ScriptedTurn(text="partial answer", error=ModelError("endpoint died"), fail_after=1)])
    stream = Runner.stream(Agent(name="bot", model=model), "x")
    events = []
    with pytest.raises(ModelError, match="endpoint died"):
        async for event in stream:
            events.append(event)
    assert [type(e) for e in events] == [RunStarted, TextDelta, RunFailed]


async def test_an_agent_without_a_model_uses_the_configured_default(monkeypatch):
    monkeypatch.delenv("LOVIA_MODEL", raising=False)
    stream = Runner.stream(Agent(name="bot"), "hello")
    events = [e async for e in stream]
    assert events[0].model == "demo"
    assert "demo" in stream.result.final_output

    monkeypatch.setenv("LOVIA_MODEL", "ollama:qwen2.5")
    from lovia.runtime.runner import _Run

    run = _Run(Agent(name="bot"), "x", session=None, session_id=None, checkpoint=None, deps=None,
               max_turns=3, context_policy=None)
    model = run._model(run.agent)
    assert isinstance(model, OpenAIChatModel) and model.name == "ollama:qwen2.5"
    assert model.base_url == "http://127.0.0.1:11434/v1"


async def test_a_session_needs_a_session_id():
    with pytest.raises(UserError, match="session_id"):
        await Runner.run(Agent(name="bot", model=ScriptedModel(["x"])), "x", session=InMemorySession())


async def test_input_may_be_entries_or_strings():
    model = ScriptedModel(["ok"])
    await Runner.run(Agent(name="bot", model=model), ["first", UserMessage(text="second")])
    assert [e.text for e in model.requests[0].messages] == ["first", "second"]


async def test_demo_model_runs_the_builtin_tools_offline():
    from lovia import BUILTIN_TOOLS

    agent = Agent(name="bot", model=DemoModel(delay=0), tools=BUILTIN_TOOLS)
    result = await Runner.run(agent, "calculate (12 + 30) * 7")
    assert "294" in result.final_output
    assert kinds(result.new_entries) == ["user", "tool_call", "tool_result", "assistant"]
    timed = await Runner.run(agent, "what time is it?")
    assert timed.new_entries[1].name == "current_time"
    assert "demo" in (await Runner.run(agent, "help")).final_output


async def test_stream_can_only_be_iterated_once():
    stream = Runner.stream(Agent(name="bot", model=ScriptedModel(["x"])), "x")
    [e async for e in stream]
    with pytest.raises(UserError):
        [e async for e in stream]


async def test_handoff_events_and_entries():
    expert = Agent(name="expert", model=ScriptedModel(["Expert here."]), handoff_description="knows everything")
    triage = Agent(name="triage", model=ScriptedModel([ScriptedTurn(tool_calls=[call("transfer_to_expert")])]),
                   handoffs=[expert])
    stream = Runner.stream(triage, "I need an expert")
    events = [e async for e in stream]
    assert any(isinstance(e, HandoffOccurred) and (e.from_agent, e.to_agent) == ("triage", "expert") for e in events)
    result = stream.result
    assert kinds(result.new_entries) == ["user", "tool_call", "tool_result", "handoff", "assistant"]
    assert result.last_agent == "expert" and result.final_output == "Expert here."
    assert result.new_entries[-1] == AssistantMessage(text="Expert here.", agent="expert",
                                                      created_at=result.new_entries[-1].created_at)
    spec = next(s for s in triage.tool_specs() if s.name == "transfer_to_expert")
    assert "knows everything" in spec.description
    assert isinstance(events[-1], RunCompleted) and any(isinstance(e, MessageCompleted) for e in events)
    assert any(isinstance(e, ToolCallStarted) for e in events) and any(isinstance(e, TurnFinished) for e in events)
