"""The @tool decorator: schemas from hints and docstrings, invocation, errors; and how a run
stops while a sync tool is blocked in its thread."""

from __future__ import annotations

import asyncio
import contextvars
import enum
import subprocess
import sys
import textwrap
import threading
from dataclasses import dataclass
from typing import Literal

import pytest

from lovia import (
    Agent,
    CheckpointOptions,
    RunContext,
    RunInterrupted,
    Runner,
    SQLiteCheckpointer,
    SQLiteSession,
    ToolContext,
    ToolResult,
    tool,
)
from lovia.models import ScriptedModel, ScriptedTurn, call
from lovia.tools import ToolArgumentsError
from lovia.transcript import dangling_tool_calls

CHILD_TIMEOUT = 120  # seconds; a child that hangs is the failure these tests look for


class Colour(enum.Enum):
    RED = "red"
    BLUE = "blue"


@dataclass
class Point:
    x: float
    y: float = 0.0


def ctx() -> ToolContext:
    return ToolContext(run_id="r", deps=None, agent="a", call_id="c")


def test_schema_from_hints_defaults_and_google_docstring():
    @tool
    def search(query: str, limit: int = 5, exact: bool = False, tags: list[str] | None = None,
               mode: Literal["fast", "deep"] = "fast", colour: Colour = Colour.RED, at: Point | None = None,
               weights: dict[str, float] | None = None) -> str:
        """Search the notes.

        Longer explanation that is not the summary.

        Args:
            query: words to look for,
                over two lines.
            limit: how many results.
        """
        return query

    assert search.name == "search" and search.description == "Search the notes."
    params = search.parameters
    assert params["required"] == ["query"] and params["additionalProperties"] is False
    props = params["properties"]
    assert props["query"] == {"type": "string", "description": "words to look for, over two lines."}
    assert props["limit"] == {"type": "integer", "description": "how many results.", "default": 5}
    assert props["exact"] == {"type": "boolean", "default": False}
    assert props["tags"] == {"anyOf": [{"type": "array", "items": {"type": "string"}}, {"type": "null"}],
                             "default": None}
    assert props["mode"] == {"enum": ["fast", "deep"], "default": "fast"}
    assert props["colour"] == {"enum": ["red", "blue"]}
    assert props["at"]["anyOf"][0] == {"type": "object",
                                       "properties": {"x": {"type": "number"}, "y": {"type": "number"}},
                                       "required": ["x"]}
    assert props["weights"]["anyOf"][0] == {"type": "object", "additionalProperties": {"type": "number"}}


def test_sphinx_docstrings_and_overrides():
    @tool(name="lookup", description="Find a thing.")
    def find(key: str) -> str:
        """:param key: the key to find"""
        return key

    assert (find.name, find.description) == ("lookup", "Find a thing.")
    assert find.parameters["properties"]["key"]["description"] == "the key to find"


def test_a_context_parameter_is_not_part_of_the_schema():
    @tool
    def who(ctx: RunContext, loud: bool = False) -> str:
        """Who runs."""
        return ctx.agent

    assert who.takes_context and list(who.parameters["properties"]) == ["loud"]


async def test_invoke_sync_and_async_and_non_string_results():
    @tool
    def add(a: int, b: int) -> dict:
        """Add."""
        return {"sum": a + b}

    @tool
    async def greet(ctx: ToolContext, name: str) -> str:
        """Greet."""
        return f"hi {name} from {ctx.call_id}"

    assert await add.invoke(ctx(), '{"a": 1, "b": 2}') == '{"sum": 3}'
    assert await greet.invoke(ctx(), '{"name": "Ada"}') == "hi Ada from c"


@pytest.mark.parametrize("arguments, message", [
    ("not json", "not valid JSON"), ("[1, 2]", "must be a JSON object"), ('{"a": 1}', "missing required b"),
    ('{"a": 1, "b": 2, "c": 3}', "unknown c"),
])
async def test_arguments_that_do_not_fit_are_reported(arguments, message):
    @tool
    def add(a: int, b: int) -> int:
        """Add."""
        return a + b

    with pytest.raises(ToolArgumentsError, match=message):
        await add.invoke(ctx(), arguments)


def test_unsupported_signatures_are_refused_at_definition():
    with pytest.raises(TypeError, match="cannot describe"):
        @tool
        def bad(x: object) -> str:
            """Bad."""
            return ""

    with pytest.raises(TypeError, match=r"\*args"):
        @tool
        def variadic(*items: str) -> str:
            """Bad."""
            return ""


async def until(predicate, what: str) -> None:
    """Let the event loop run until ``predicate()`` holds (a hang guard, not a timing check)."""
    for _ in range(6000):
        if predicate():
            return
        await asyncio.sleep(0.01)
    raise AssertionError(f"gave up waiting for {what}")


class Blocker:
    """A sync tool that blocks its thread until released, like a hung socket or a slow C call."""

    def __init__(self) -> None:
        self.started = threading.Event()
        self.release = threading.Event()
        self.thread: threading.Thread | None = None

        @tool
        def blocking() -> str:
            """Block until released."""
            self.thread = threading.current_thread()
            self.started.set()
            self.release.wait()
            return "the late result"

        self.tool = blocking

    def finished(self) -> bool:
        return self.thread is not None and not self.thread.is_alive()


@pytest.mark.parametrize("how", ["stream.stop()", "task.cancel()"])
async def test_a_run_stops_at_once_while_a_sync_tool_blocks_and_its_late_result_is_dropped(tmp_path, how):
    blocker = Blocker()
    model = ScriptedModel([ScriptedTurn(tool_calls=[call("blocking", call_id="c-block")]), "never asked"])
    agent = Agent(name="a", model=model, tools=[blocker.tool])
    db = tmp_path / "runs.db"
    try:
        async with SQLiteCheckpointer(db) as checkpointer, SQLiteSession(db) as session:
            run = {"session": session, "session_id": "s", "checkpoint": CheckpointOptions(checkpointer, "run-1")}
            if how == "stream.stop()":
                stream = Runner.stream(agent, "go", **run)
                events: list = []

                async def consume() -> None:
                    async for event in stream:
                        events.append(event)

                consumer = asyncio.ensure_future(consume())
                await until(blocker.started.is_set, "the tool to start")
                stream.stop()
                await consumer
                assert stream.stopped and stream.result is None and isinstance(events[-1], RunInterrupted)
            else:
                task = asyncio.ensure_future(Runner.run(agent, "go", **run))
                await until(blocker.started.is_set, "the tool to start")
                task.cancel()
                with pytest.raises(asyncio.CancelledError):
                    await task
            assert blocker.thread is not None and blocker.thread.is_alive()  # the stop did not wait for it

            def assert_interrupted_with_the_call_dangling(snapshot) -> None:
                assert snapshot.head.status == "interrupted"
                assert [e.type for e in snapshot.entries] == ["user", "tool_call"]
                assert [c.call_id for c in dangling_tool_calls(snapshot.entries)] == ["c-block"]

            assert_interrupted_with_the_call_dangling(await checkpointer.load("run-1"))

            blocker.release.set()  # the thread now returns its result to a run that has ended
            await until(blocker.finished, "the tool's thread to end")
            for _ in range(3):
                await asyncio.sleep(0)  # callbacks the thread scheduled on the loop have run
            assert_interrupted_with_the_call_dangling(await checkpointer.load("run-1"))
            assert await session.load("s") == []
        async with SQLiteCheckpointer(db) as fresh:  # what the file holds, read anew
            assert_interrupted_with_the_call_dangling(await fresh.load("run-1"))
        assert model.remaining == 1
    finally:
        blocker.release.set()


async def test_sync_tools_and_the_rendering_of_their_results_run_off_the_event_loop():
    loop_thread = threading.get_ident()
    request = contextvars.ContextVar("request", default="none")
    seen: dict[str, object] = {}

    class Rendered:
        def __str__(self) -> str:
            seen["rendered on"] = threading.get_ident()
            return "rendered"

    @tool
    def where() -> dict:
        """Where am I."""
        seen["called on"] = threading.get_ident()
        seen["request"] = request.get()
        return {"value": Rendered()}

    request.set("r-42")
    assert await where.invoke(ctx(), "{}") == '{"value": "rendered"}'
    assert seen["called on"] != loop_thread and seen["rendered on"] != loop_thread
    assert seen["request"] == "r-42"  # the caller's context variables, as with asyncio.to_thread


async def test_a_sync_tool_that_exits_is_an_error_result_not_the_end_of_the_app():
    @tool
    def quits() -> str:
        """Calls sys.exit."""
        sys.exit(3)

    model = ScriptedModel([ScriptedTurn(tool_calls=[call("quits")]), "it failed"])
    result = await Runner.run(Agent(name="a", model=model, tools=[quits]), "go")
    [output] = [e for e in result.new_entries if isinstance(e, ToolResult)]
    assert output.is_error and output.output == "RuntimeError: the tool raised SystemExit: 3"
    assert result.final_output == "it failed"


STUCK_CHILD = """
    import asyncio, sys, threading
    from lovia import Agent, Runner, ToolResult, tool
    from lovia.models import ScriptedModel, ScriptedTurn, call

    started, never = threading.Event(), threading.Event()

    @tool
    def stuck(i: int) -> str:
        \"\"\"Never returns.\"\"\"
        started.set()
        never.wait()
        return "unreachable"

    @tool
    def quick() -> str:
        \"\"\"Returns at once.\"\"\"
        return "quick answer"

    async def main(stuck_calls: int, then_another_run: bool) -> None:
        calls = [call("stuck", {"i": i}, call_id=f"c{i}") for i in range(stuck_calls)]
        agent = Agent(name="a", model=ScriptedModel([ScriptedTurn(tool_calls=calls)]), tools=[stuck])
        stream = Runner.stream(agent, "go")

        async def drain() -> None:
            async for _ in stream:
                pass

        consumer = asyncio.ensure_future(drain())
        while not started.is_set():
            await asyncio.sleep(0.01)
        stream.stop()
        await consumer
        print("stopped", flush=True)
        if then_another_run:
            model = ScriptedModel([ScriptedTurn(tool_calls=[call("quick")]), "done"])
            result = await Runner.run(Agent(name="b", model=model, tools=[quick]), "again")
            print([e.output for e in result.new_entries if isinstance(e, ToolResult)], flush=True)

    asyncio.run(main(int(sys.argv[1]), sys.argv[2] == "yes"))
    print("left the event loop", flush=True)
"""


def run_stuck_child(stuck_calls: int, then_another_run: bool) -> list[str]:
    child = subprocess.run([sys.executable, "-c", textwrap.dedent(STUCK_CHILD), str(stuck_calls),
                            "yes" if then_another_run else "no"], capture_output=True, text=True,
                           timeout=CHILD_TIMEOUT)
    assert child.returncode == 0, child.stderr
    return child.stdout.splitlines()


def test_a_stopped_sync_tool_that_never_returns_does_not_hold_up_the_exit():
    assert run_stuck_child(1, then_another_run=False) == ["stopped", "left the event loop"]


def test_stopped_sync_tools_that_never_return_leave_no_later_tool_waiting():
    # More stuck calls than the event loop's default executor has workers (at most 32).
    assert run_stuck_child(40, then_another_run=True) == ["stopped", "['quick answer']", "left the event loop"]
