"""MCP servers in the app: their tools used in a chat, the servers screen (f5), on and off per session,
stopped on exit, and a call in flight when the app is SIGKILLed resumed with the same ids.

The server is the test server written with the official SDK (``tests/mcp/tool_server.py``), a
real process the app starts on stdio; the app is the real one, through Textual's pilot, on a
real SQLite file.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from lovia import Agent, SQLiteSession, ToolCall, ToolResult, UserMessage
from lovia.models import ScriptedModel, ScriptedTurn, call
from lovia.tui.screens.mcp_servers import ServersScreen
from tests.mcp.servers import alive
from tests.mcp.test_mcp_servers import recorded, stdio_server
from tests.tui.conftest import make_app, settle, told, type_and_send, wait_for
from tests.tui.test_dangling_calls import plain

ROOT = Path(__file__).resolve().parents[2]
SIZES = {"80x24": (80, 24), "160x45": (160, 45)}


def decide(request) -> ScriptedTurn:
    """``note X`` calls the server's ``record``, ``add A B`` its ``add``, when offered; else says what is offered."""
    last = request.messages[-1]
    if isinstance(last, ToolResult):
        return ScriptedTurn(text=f"The tool said: {last.output}")
    offered = {spec.name for spec in request.tools}
    words = last.text.split() if isinstance(last, UserMessage) else []
    if words[:1] == ["note"] and "record" in offered:
        return ScriptedTurn(tool_calls=[call("record", {"note": " ".join(words[1:])})])
    if words[:1] == ["add"] and "add" in offered:
        return ScriptedTurn(tool_calls=[call("add", {"a": int(words[1]), "b": int(words[2])})])
    return ScriptedTurn(text="Offered: " + (", ".join(sorted(offered)) or "no tools"))


class NoteTakingModel(ScriptedModel):
    """A model that decides from the request (:func:`decide`), for as many turns as a test takes."""

    def __init__(self) -> None:
        super().__init__([decide] * 50, name="note-taker")


async def stored_entries(db: Path, session_id: str) -> list:
    async with SQLiteSession(db, wal=True) as session:
        return await session.load(session_id)


@pytest.mark.parametrize("size", SIZES)
async def test_a_servers_tool_is_used_in_a_chat_listed_on_f5_and_switched_off_for_the_session(tmp_path, size):
    db = tmp_path / "lovia.db"
    server = stdio_server(tmp_path)
    model = NoteTakingModel()
    app = make_app(db, agent=Agent("assistant", model=model), mcp_servers=[server])
    async with app.run_test(size=SIZES[size]) as pilot:
        await settle(pilot)
        assert server.state == "stopped"  # nothing started before a run needs it
        await type_and_send(pilot, "note on")
        await type_and_send(pilot, "add 2 40")
        session_id = app.screen.chat.session_id
        entries = await stored_entries(db, session_id)
        assert [e.output for e in entries if isinstance(e, ToolResult)] == ["noted: on", "42"]
        assert entries[-1].text == "The tool said: 42"
        shown = "\n".join(view.copy_text() for view in app.screen.chat.transcript.views)
        assert "add" in shown and "The tool said: 42" in shown

        await pilot.press("f5")
        await wait_for(pilot, lambda: isinstance(app.screen, ServersScreen))
        screen = app.screen
        listing = screen.query_one("#mcp-list")
        row = str(listing.get_option_at_index(0).prompt)
        assert "tools" in row and "● on" in row and "running · 7 tools · 1 left out" in row
        tools_line = str(screen.query_one("#mcp-tools").render())
        assert "Tools: add, whoami, record, fail, slow, die" in tools_line
        assert "Not offered: notes.read (models take only letters" in tools_line
        await pilot.press("space")
        await settle(pilot)
        assert "○ off" in str(listing.get_option_at_index(0).prompt)
        assert any("tools is off in this session" in n.message for n in told(app))
        await pilot.press("escape")
        await wait_for(pilot, lambda: not isinstance(app.screen, ServersScreen))

        await type_and_send(pilot, "note off")
        assert "record" not in {spec.name for spec in model.requests[-1].tools}
        assert (await stored_entries(db, session_id))[-1].text.startswith("Offered: ")
        (noted,) = recorded(tmp_path)  # "note on" only: nothing reached the server once it was off
        assert alive(noted["pid"])
    # The app closed: the server it started is stopped, its process gone.
    assert server.state == "stopped" and not alive(noted["pid"])


async def test_a_session_switched_off_stays_off_when_reopened_and_a_new_session_has_the_default(tmp_path):
    db = tmp_path / "lovia.db"
    server = stdio_server(tmp_path)
    app = make_app(db, agent=Agent("assistant", model=NoteTakingModel()), mcp_servers=[server])
    async with app.run_test(size=(160, 45)) as pilot:
        await settle(pilot)
        session_id = app.screen.chat.session_id
        await pilot.press("f5")
        await wait_for(pilot, lambda: isinstance(app.screen, ServersScreen))
        await pilot.press("space", "escape")
        await settle(pilot)
    # A new app on the same files: the session remembers its switch; a new one offers the server.
    server = stdio_server(tmp_path)
    app = make_app(db, agent=Agent("assistant", model=NoteTakingModel()), mcp_servers=[server])
    assert not app.backend.mcp.is_on(session_id, "tools")
    assert app.backend.mcp.is_on("some-new-session", "tools")


async def test_a_server_off_by_default_is_listed_and_can_be_switched_on(tmp_path):
    db = tmp_path / "lovia.db"
    server = stdio_server(tmp_path)
    model = NoteTakingModel()
    app = make_app(db, agent=Agent("assistant", model=model), mcp_servers=[server], mcp_on=set())
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await type_and_send(pilot, "note first")
        assert "record" not in {spec.name for spec in model.requests[-1].tools}
        await pilot.press("f5")
        await wait_for(pilot, lambda: isinstance(app.screen, ServersScreen))
        assert "○ off" in str(app.screen.query_one("#mcp-list").get_option_at_index(0).prompt)
        assert str(app.screen.query_one("#mcp-keys").render()) == "space/enter on or off here · s start now · escape close"
        await pilot.press("s")  # start it now, to see its tools
        await settle(pilot)
        assert "running · 7 tools · 1 left out" in str(app.screen.query_one("#mcp-list").get_option_at_index(0).prompt)
        await pilot.press("enter", "escape")
        await settle(pilot)
        await type_and_send(pilot, "note second")
    assert [c["note"] for c in recorded(tmp_path)] == ["second"]


async def test_a_server_that_cannot_start_is_shown_failed_and_the_chat_goes_on(tmp_path):
    from lovia import MCPServer

    db = tmp_path / "lovia.db"
    server = MCPServer("ghost", command=str(tmp_path / "missing-server"), env={"TOKEN": "hunter2-secret"})
    app = make_app(db, agent=Agent("assistant", model=NoteTakingModel()), mcp_servers=[server])
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await type_and_send(pilot, "note this")
        entries = await stored_entries(db, app.screen.chat.session_id)
        assert entries[-1].text.startswith("Offered: ")  # answered, without the server's tools
        notices = [n.copy_text() for n in app.screen.chat.transcript.query("NoticeView")]
        said = [n for n in notices if "MCP server ghost is not offered to the model: could not start" in n]
        assert len(said) == 1 and "hunter2" not in said[0] and "f5 lists the servers" in said[0]
        await type_and_send(pilot, "note again")  # the same failure is not said again
        notices = [n.copy_text() for n in app.screen.chat.transcript.query("NoticeView")]
        assert len([n for n in notices if "MCP server ghost" in n]) == 1
        await pilot.press("f5")
        await wait_for(pilot, lambda: isinstance(app.screen, ServersScreen))
        row = str(app.screen.query_one("#mcp-list").get_option_at_index(0).prompt)
        assert "failed: could not start: no program" in row and "hunter2" not in row


async def test_no_servers_the_screen_says_how_to_add_one(tmp_path):
    app = make_app(tmp_path / "lovia.db")
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("f5")
        await wait_for(pilot, lambda: isinstance(app.screen, ServersScreen))
        assert app.screen.has_class("-empty")
        said = str(app.screen.query_one("#mcp-empty").render())
        assert "[mcp.servers.files]" in said
        # The SDK is installed here: nothing to install. (Never "lovia[mcp]": lovia on PyPI is another project.)
        assert "Install" not in said and "lovia[" not in said


async def test_without_the_sdk_the_empty_screen_says_how_to_install_it(tmp_path, monkeypatch):
    monkeypatch.setattr("lovia.tui.screens.mcp_servers.sdk_installed", lambda: False)
    app = make_app(tmp_path / "lovia.db")
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("f5")
        await wait_for(pilot, lambda: isinstance(app.screen, ServersScreen))
        said = " ".join(str(app.screen.query_one("#mcp-empty").render()).split())
        assert "Install the SDK (pip install 'mcp>=2.0,<3' (lovia's mcp extra: pip install -e '.[mcp]'" in said


async def test_the_app_killed_during_an_mcp_call_lists_it_dangling_and_resumes_it_with_the_same_ids(tmp_path):
    db = tmp_path / "lovia.db"
    calls = tmp_path / "calls.jsonl"
    child = subprocess.Popen([sys.executable, "-m", "tests.tui.mcp_app_child", str(db), str(calls)], cwd=ROOT,
                             stdout=subprocess.PIPE, text=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
    try:
        assert child.stdout.readline().strip() == "IN CALL"
    finally:
        os.kill(child.pid, signal.SIGKILL)
        child.wait(timeout=30)
    (first,) = recorded(tmp_path)
    # No stray process: the server, its client gone, ends once its call is done.
    deadline = time.monotonic() + 30
    while alive(first["pid"]) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not alive(first["pid"])

    server = stdio_server(tmp_path)
    app = make_app(db, agent=Agent("assistant", model=NoteTakingModel()), mcp_servers=[server])
    async with app.run_test(size=(160, 45)) as pilot:
        await settle(pilot)
        runs = app.screen.query_one("RunsPane")
        [crashed] = runs.runs
        assert crashed.head.crashed
        app.screen.query_one("#run-list").focus()
        await wait_for(pilot, lambda: app.screen.inspected == crashed.run_id)
        inspector = app.screen.query_one("CheckpointInspector")
        assert [c.name for c in inspector.dangling] == ["record"]
        body = plain(inspector.shown)
        assert "record" in body and "→ tools" in body  # the call's entry names its server
        dangling_row = str(inspector.query_one("#dangling-calls").get_option_at_index(0).prompt)
        assert "on MCP server tools" in dangling_row
        await pilot.press("r")
        await settle(pilot)
        session_id = app.screen.chat.session_id
    second = recorded(tmp_path)[1:]
    assert [(c["run_id"], c["call_id"]) for c in second] == [(first["run_id"], first["call_id"])]
    assert first["run_id"] == crashed.run_id
    entries = await stored_entries(db, session_id)
    assert [e.type for e in entries] == ["user", "tool_call", "tool_result", "assistant"]
    assert isinstance(entries[1], ToolCall) and entries[2].output == "noted: this"
    assert not alive(second[0]["pid"])  # the app's exit stopped the server it started


async def test_with_no_server_the_dialog_offers_only_the_way_out(tmp_path):
    """It said "space/enter on or off here · s start now" over an empty list; those keys did nothing."""
    app = make_app(tmp_path / "lovia.db", mcp_servers=[])
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("f5")
        await wait_for(pilot, lambda: isinstance(app.screen, ServersScreen))
        await pilot.pause()
        assert "No MCP servers." in str(app.screen.query_one("#mcp-empty").render())
        assert str(app.screen.query_one("#mcp-keys").render()) == "escape close"
