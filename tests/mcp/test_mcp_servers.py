"""MCP servers as an agent's tools, against a real server written with the official SDK.

The server (``tool_server.py``) runs as a real process: started by lovia on stdio, or on its
own on streamable HTTP at 127.0.0.1. Runs go through the real runner, with checkpoints and a
session in a real SQLite file.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import time
import warnings

import pytest

from lovia import (
    Agent,
    CheckpointOptions,
    MCPServer,
    MCPServerError,
    Runner,
    SQLiteCheckpointer,
    SQLiteSession,
    ToolCall,
    ToolCallStarted,
    ToolResult,
    UserError,
)
from lovia.models import ScriptedModel, ScriptedTurn, call
from lovia.timing import ToolStep, steps_from_meta

from .servers import alive, http_server, stdio_command

SECRET = "wombat-sorbet"


def stdio_server(tmp_path, **options) -> MCPServer:
    command, args = stdio_command()
    env = {"LOVIA_TEST_MCP_CALLS": str(tmp_path / "calls.jsonl"), **options.pop("env", {})}
    return MCPServer("tools", command=command, args=args, env=env, log=tmp_path / "tools.log", **options)


def recorded(tmp_path) -> list[dict]:
    path = tmp_path / "calls.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def model_calling(*calls, answer="Done.") -> ScriptedModel:
    """A model that makes ``calls`` (one turn each), then answers."""
    return ScriptedModel([ScriptedTurn(tool_calls=[c]) for c in calls] + [ScriptedTurn(text=answer)])


def results(result) -> list[ToolResult]:
    return [e for e in result.new_entries if isinstance(e, ToolResult)]


async def run(tmp_path, agent, text="go", run_id="run-1"):
    db = tmp_path / "lovia.db"
    async with SQLiteSession(db) as session, SQLiteCheckpointer(db) as checkpointer:
        return await Runner.run(agent, text, session=session, session_id="s",
                                checkpoint=CheckpointOptions(checkpointer, run_id))


async def leave_a_dangling_call(tmp_path, session, checkpointer, run_id: str, **offered) -> tuple[Agent, MCPServer]:
    """A run whose ``record`` call reached the server (which holds it) and was then stopped: dangling.

    The server is stopped after (as a killed process leaves it). ``offered``: ``on_agent=True`` gives
    the server to the agent, else the run is given it (``mcp_servers=``). Returns the agent and server.
    """
    server = stdio_server(tmp_path, env={"LOVIA_TEST_MCP_RECORD_PAUSE": "30"})
    on_agent = offered.get("on_agent", True)
    agent = Agent("assistant", mcp_servers=[server] if on_agent else [],
                  model=model_calling(call("record", {"note": "once"}, call_id="c-rec")))
    stream = Runner.stream(agent, "go", session=session, session_id="s", mcp_servers=[] if on_agent else [server],
                           checkpoint=CheckpointOptions(checkpointer, run_id))
    async for event in stream:
        if isinstance(event, ToolCallStarted):
            while not recorded(tmp_path):  # the call reached the server, which holds it
                await asyncio.sleep(0.02)
            stream.stop()
    await server.stop()
    snapshot = await checkpointer.load(run_id)
    assert snapshot is not None and isinstance(snapshot.entries[-1], ToolCall)
    server.env = {**(server.env or {}), "LOVIA_TEST_MCP_RECORD_PAUSE": "0"}  # it answers at once from now on
    return agent, server


def resuming(checkpointer, run_id: str) -> CheckpointOptions:
    return CheckpointOptions(checkpointer, run_id, if_run_exists="resume_only")


async def test_a_stdio_servers_tools_are_offered_with_their_schemas_and_called_with_the_run_and_call_ids(tmp_path):
    server = stdio_server(tmp_path)
    seen = []

    def turn(request):
        seen.append(request.tools)
        done = sum(isinstance(e, ToolResult) for e in request.messages)
        if done == 0:
            return ScriptedTurn(tool_calls=[call("add", {"a": 2, "b": 40}, call_id="c-add"),
                                            call("whoami", {}, call_id="c-who")])
        return ScriptedTurn(text="42")

    agent = Agent("assistant", mcp_servers=[server], model=ScriptedModel([turn, turn]))
    try:
        assert server.state == "stopped"  # made, not started: it starts at its first use
        result = await run(tmp_path, agent, run_id="run-mcp-1")
        offered = {spec.name: spec for spec in seen[0]}
        assert {"add", "whoami", "record", "fail", "slow", "die"} <= set(offered)
        assert "notes.read" not in offered and "letters, digits" in server.left_out["notes.read"]
        assert offered["add"].parameters["required"] == ["a", "b"]
        assert offered["add"].parameters["properties"]["a"]["type"] == "integer"
        assert offered["add"].description == "Add two whole numbers."
        by_call = {r.call_id: r for r in results(result)}
        assert by_call["c-add"].output == "42" and not by_call["c-add"].is_error
        assert json.loads(by_call["c-who"].output) == {"run_id": "run-mcp-1", "call_id": "c-who"}
        assert result.final_output == "42"
        # The stored steps say which server each call went to.
        async with SQLiteSession(tmp_path / "lovia.db") as session:
            segment = (await session.segments("s"))[-1]
        steps = [s for s in steps_from_meta(segment.meta) if isinstance(s, ToolStep)]
        assert {s.call_id: s.server for s in steps} == {"c-add": "tools", "c-who": "tools"}
        assert server.state == "running"
    finally:
        await server.stop()
    assert server.state == "stopped"


async def test_a_streamable_http_server_is_called_the_same_way(tmp_path):
    with http_server() as url:
        server = MCPServer("remote", url=url)
        agent = Agent("assistant", mcp_servers=[server],
                      model=model_calling(call("whoami", {}, call_id="c-1"), call("add", {"a": 1, "b": 2})))
        try:
            result = await run(tmp_path, agent, run_id="run-http")
        finally:
            await server.stop()
    outputs = [r.output for r in results(result)]
    assert json.loads(outputs[0]) == {"run_id": "run-http", "call_id": "c-1"} and outputs[1] == "3"
    assert all(not r.is_error for r in results(result))


async def test_headers_go_with_every_request_to_an_http_server(tmp_path):
    with http_server() as url:
        server = MCPServer("remote", url=url, headers={"Authorization": "Bearer header-secret"})
        try:
            assert await server.call("authorization", {}, run_id="r", call_id="c") == "Bearer header-secret"
        finally:
            await server.stop()
    assert "header-secret" not in repr(server)
    with pytest.raises(UserError, match="headers go with a url"):
        MCPServer("local", command="serve", headers={"Authorization": "x"})


async def test_a_tool_error_is_the_calls_error_result_in_the_servers_words(tmp_path):
    server = stdio_server(tmp_path)
    agent = Agent("assistant", mcp_servers=[server], model=model_calling(call("fail", {"reason": "no"})))
    try:
        result = await run(tmp_path, agent)
    finally:
        await server.stop()
    (failed,) = results(result)
    assert failed.is_error and "fail" in failed.output
    assert result.final_output == "Done."  # the model saw it and went on


async def test_a_call_that_outlasts_its_timeout_is_an_error_result_and_the_server_goes_on(tmp_path):
    server = stdio_server(tmp_path, call_timeout=0.5)
    agent = Agent("assistant", mcp_servers=[server],
                  model=model_calling(call("slow", {"seconds": 30}), call("add", {"a": 1, "b": 1})))
    started = time.monotonic()
    try:
        result = await run(tmp_path, agent)
    finally:
        await server.stop()
    assert time.monotonic() - started < 20
    slow, add = results(result)
    assert slow.is_error and "did not answer slow within 0.5 s" in slow.output and "'tools'" in slow.output
    assert add.output == "2" and not add.is_error


async def test_a_server_that_exits_mid_call_gives_an_error_result_and_starts_again_at_the_next_call(tmp_path):
    server = stdio_server(tmp_path)
    agent = Agent("assistant", mcp_servers=[server],
                  model=model_calling(call("die", {}), call("record", {"note": "after"})))
    try:
        result = await run(tmp_path, agent)
    finally:
        await server.stop()
    died, after = results(result)
    assert died.is_error and "exited during the call to die" in died.output
    assert str(tmp_path / "tools.log") in died.output  # where its own messages are
    assert after.output == "noted: after" and not after.is_error
    assert len(recorded(tmp_path)) == 1


async def test_a_server_that_cannot_start_is_told_and_the_run_goes_on_without_its_tools(tmp_path):
    server = MCPServer("ghost", command=str(tmp_path / "no-such-program"), env={"TOKEN": SECRET})
    agent = Agent("assistant", mcp_servers=[server], model=model_calling(call("record", {"note": "x"})))
    with warnings.catch_warnings(record=True):
        warnings.simplefilter("always")
        result = await run(tmp_path, agent)
    (unknown,) = results(result)
    assert unknown.is_error and "unknown tool 'record'" in unknown.output
    assert "'ghost' (could not start: no program" in unknown.output
    assert any("MCP server 'ghost' is not offered" in w for w in result.warnings)
    assert server.state == "failed" and SECRET not in (server.error or "") and SECRET not in unknown.output
    assert result.final_output == "Done."


async def test_an_http_server_nobody_answers_at_is_said_to_be_unreachable_there(tmp_path):
    import socket

    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = MCPServer("web", url=f"http://bob:{SECRET}@127.0.0.1:{port}/mcp?token={SECRET}")
    with pytest.raises(MCPServerError) as refused:
        await server.start()
    # It said "could not start: ConnectError: All connection attempts failed".
    assert str(refused.value).startswith(f"MCP server 'web' could not be reached at http://127.0.0.1:{port}/mcp (")
    assert "check its url and that the server is up and listening there" in str(refused.value)
    assert server.state == "failed" and SECRET not in str(refused.value) and SECRET not in (server.error or "")


async def test_a_server_that_does_not_speak_mcp_fails_to_start_within_its_timeout(tmp_path):
    server = MCPServer("mute", command="sleep", args=["60"], start_timeout=1.0, log=tmp_path / "mute.log")
    agent = Agent("assistant", mcp_servers=[server], model=model_calling())
    started = time.monotonic()
    with warnings.catch_warnings(record=True):
        warnings.simplefilter("always")
        result = await run(tmp_path, agent)
    assert time.monotonic() - started < 15
    assert result.final_output == "Done."
    assert server.state == "failed" and "did not answer within 1 s of starting" in (server.error or "")


async def test_stop_ends_a_stdio_servers_process(tmp_path):
    server = stdio_server(tmp_path)
    agent = Agent("assistant", mcp_servers=[server], model=model_calling(call("record", {"note": "pid"})))
    await run(tmp_path, agent)
    (entry,) = recorded(tmp_path)
    assert alive(entry["pid"])
    await server.stop()
    assert not alive(entry["pid"])


async def test_a_name_an_earlier_tool_has_is_left_out_and_named(tmp_path):
    from lovia import tool

    @tool
    def add(a: int, b: int) -> int:
        """The agent's own add."""
        return a - b  # tells the two apart

    server = stdio_server(tmp_path)
    agent = Agent("assistant", tools=[add], mcp_servers=[server], model=model_calling(call("add", {"a": 5, "b": 3})))
    try:
        result = await run(tmp_path, agent)
    finally:
        await server.stop()
    assert results(result)[0].output == "2"
    assert server.left_out["add"] == "an earlier tool has the name"


def test_a_server_needs_a_command_or_a_url_not_both():
    with pytest.raises(UserError, match="either a command"):
        MCPServer("x")
    with pytest.raises(UserError, match="either a command"):
        MCPServer("x", command="a", url="http://b")
    with pytest.raises(UserError, match="http"):
        MCPServer("x", url="ftp://b")


async def test_a_dangling_mcp_call_reaches_the_server_again_with_the_same_ids_on_resume(tmp_path):
    # The run stops (as a killed process would leave it) after the call was sent: on resume the
    # dangling-call rule re-runs it, with the same run_id and call_id, so the server can tell.
    db = tmp_path / "lovia.db"
    async with SQLiteSession(db) as session, SQLiteCheckpointer(db) as checkpointer:
        agent, server = await leave_a_dangling_call(tmp_path, session, checkpointer, "run-dangling")
        result = await Runner.run(agent, None, session=session, session_id="s",
                                  checkpoint=resuming(checkpointer, "run-dangling"))
    await server.stop()
    calls = recorded(tmp_path)
    assert [(c["run_id"], c["call_id"]) for c in calls] == [("run-dangling", "c-rec")] * 2
    assert [r.output for r in results(result)] == ["noted: once"]

async def test_stopping_a_server_during_a_call_says_so_and_leaves_it_stopped(tmp_path):
    from lovia import ToolError

    server = stdio_server(tmp_path)
    await server.start()
    pending = asyncio.ensure_future(server.call("slow", {"seconds": 30}, run_id="r", call_id="c"))
    await asyncio.sleep(0.3)
    started = time.monotonic()
    await server.stop()
    with pytest.raises(ToolError, match="was stopped during the call to slow"):
        await pending
    assert time.monotonic() - started < 15
    assert server.state == "stopped" and server.error is None
    # It starts again at its next call.
    assert await server.call("add", {"a": 1, "b": 2}, run_id="r", call_id="c2") == "3"
    await server.stop()


async def test_two_calls_that_see_the_server_exit_leave_one_new_server_running(tmp_path):
    server = stdio_server(tmp_path)
    from lovia import ToolError

    await server.start()
    first = asyncio.ensure_future(server.call("slow", {"seconds": 30}, run_id="r", call_id="c1"))
    await asyncio.sleep(0.2)
    with pytest.raises(ToolError, match="exited during the call to die"):
        await server.call("die", {}, run_id="r", call_id="c2")
    with pytest.raises(ToolError):
        await first
    assert await server.call("add", {"a": 2, "b": 2}, run_id="r", call_id="c3") == "4"
    assert server.state == "running"
    await server.stop()


async def test_a_dangling_mcp_call_given_its_result_is_not_sent_again_on_resume(tmp_path):
    from lovia import complete_dangling_call

    db = tmp_path / "lovia.db"
    async with SQLiteSession(db) as session, SQLiteCheckpointer(db) as checkpointer:
        agent, server = await leave_a_dangling_call(tmp_path, session, checkpointer, "run-given")
        await complete_dangling_call(checkpointer, "run-given", "c-rec", output="noted (seen on the server)")
        result = await Runner.run(agent, None, session=session, session_id="s",
                                  checkpoint=resuming(checkpointer, "run-given"))
    await server.stop()
    assert len(recorded(tmp_path)) == 1  # the call reached the server once: before the stop
    assert [r.output for r in results(result)] == ["noted (seen on the server)"]

async def test_a_server_that_never_answers_fails_once_and_is_not_waited_for_again_at_every_turn(tmp_path):
    server = MCPServer("mute", command="sleep", args=["60"], start_timeout=1.0, log=tmp_path / "mute.log")
    agent = Agent("assistant", mcp_servers=[server],
                  model=model_calling(call("nothing", {}), call("nothing", {}), call("nothing", {})))
    started = time.monotonic()
    with warnings.catch_warnings(record=True):
        warnings.simplefilter("always")
        result = await run(tmp_path, agent)
    # One start waited for (1 s, and its end), not one per turn and per call (4 turns, 3 calls).
    assert time.monotonic() - started < 8
    assert all("'mute' (did not answer within 1 s of starting)" in r.output for r in results(result))


async def test_stop_ends_a_start_under_way_at_once(tmp_path):
    server = MCPServer("mute", command="sleep", args=["60"], start_timeout=30.0)
    starting = asyncio.ensure_future(server.start())
    await asyncio.sleep(0.5)
    started = time.monotonic()
    await server.stop()
    with pytest.raises(MCPServerError, match="was stopped while it started"):
        await starting
    assert time.monotonic() - started < 5 and server.state == "stopped"


async def test_a_start_cancelled_with_its_caller_leaves_the_server_stopped(tmp_path):
    server = MCPServer("mute", command="sleep", args=["60"], start_timeout=30.0)
    starting = asyncio.ensure_future(server.start())
    await asyncio.sleep(0.5)
    starting.cancel()
    with pytest.raises(asyncio.CancelledError):
        await starting
    assert server.state == "stopped"


async def test_a_server_gone_while_idle_is_started_again_for_the_next_call(tmp_path, monkeypatch):
    import lovia.mcp

    monkeypatch.setattr(lovia.mcp, "IDLE_CHECK_AFTER", 0.2)
    server = stdio_server(tmp_path)
    try:
        assert await server.call("record", {"note": "one"}, run_id="r", call_id="c1") == "noted: one"
        os.kill(recorded(tmp_path)[0]["pid"], signal.SIGKILL)  # it dies between calls
        await asyncio.sleep(0.5)
        assert await server.call("record", {"note": "two"}, run_id="r", call_id="c2") == "noted: two"
        first, second = recorded(tmp_path)
        assert first["pid"] != second["pid"] and server.state == "running"
    finally:
        await server.stop()


def test_secrets_of_a_server_are_not_in_its_repr_nor_where_it_is_shown():
    from lovia.tui.config import MCPServerSettings

    server = MCPServer("web", url="https://me:pw-secret@mcp.example/mcp?token=tok-secret")
    assert server.where == "https://mcp.example/mcp" and "secret" not in repr(server)
    stdio = MCPServer("files", command="serve", env={"TOKEN": "env-secret"})
    assert "env-secret" not in repr(stdio)
    assert "env-secret" not in repr(MCPServerSettings("files", command="serve", env={"TOKEN": "env-secret"}))


async def test_a_dangling_mcp_call_is_not_sent_to_another_server_on_resume(tmp_path):
    db = tmp_path / "lovia.db"
    async with SQLiteSession(db) as session, SQLiteCheckpointer(db) as checkpointer:
        agent, server = await leave_a_dangling_call(tmp_path, session, checkpointer, "run-moved", on_agent=False)
        command, args = stdio_command()
        other = MCPServer("other", command=command, args=args, env={"LOVIA_TEST_MCP_CALLS": str(tmp_path / "o.jsonl")})
        for offered in ([other], []):  # a server with the same tools, then none
            with pytest.raises(UserError, match="went to MCP server 'tools', which this run does not offer now"):
                await Runner.run(agent, None, session=session, session_id="s", mcp_servers=offered,
                                 checkpoint=resuming(checkpointer, "run-moved"))
        await other.stop()
        assert not (tmp_path / "o.jsonl").exists()  # nothing reached the other server
        snapshot = await checkpointer.load("run-moved")
        assert isinstance(snapshot.entries[-1], ToolCall)  # still dangling, still resumable
        result = await Runner.run(agent, None, session=session, session_id="s", mcp_servers=[server],
                                  checkpoint=resuming(checkpointer, "run-moved"))
    await server.stop()
    assert [r.output for r in results(result)] == ["noted: once"] and len(recorded(tmp_path)) == 2
