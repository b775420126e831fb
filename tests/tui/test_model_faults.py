"""What the app shows when a real model server misbehaves: a traceback folded to its first line,
a turn cut off by the token limit, usage the server never reported. Driven with Textual's
pilot against a real SQLite file and the real SSE server on 127.0.0.1."""

from __future__ import annotations

import io
import socket

from rich.console import Console
from textual.widgets import Static

from lovia import Agent, RunHead, RunSnapshot, SQLiteCheckpointer, SQLiteSession, UserMessage, tool
from lovia.models import OpenAIChatModel, ScriptedModel, ScriptedTurn
from lovia.tui import format
from lovia.tui.widgets.assistant_message import AssistantMessageView
from lovia.tui.widgets.notice import NoticeView
from lovia.tui.widgets.tool_call_view import ToolCallView
from lovia.usage import Usage
from tests.models.sse_server import TRACEBACK, SSEServer
from tests.models.test_openai_chat import SECRET, Playlist
from tests.tui.conftest import make_app, settle, type_and_send, wait_for

CUT_OFF = "cut off: the model hit its token limit"


def shown(widget) -> str:
    console = Console(width=200, record=True, file=io.StringIO())
    console.print(widget.render())
    return console.export_text()


@tool
def add(a: int, b: int) -> int:
    """Add."""
    return a + b


async def test_a_server_traceback_shows_its_first_line_and_the_rest_on_enter(tmp_path):
    with SSEServer() as server:
        model = OpenAIChatModel("traceback", base_url=server.base_url, api_key=SECRET, retries=0, timeout=10)
        app = make_app(tmp_path / "lovia.db", agent=Agent(name="assistant", model=model))
        async with app.run_test(size=(160, 45)) as pilot:
            await type_and_send(pilot, "hello")
            transcript = app.screen.chat.transcript
            (notice,) = [n for n in transcript.query(NoticeView) if n.has_class("-error")]
            body = shown(notice.query_one(".body", Static))
            assert "answered 500: Traceback (most recent call last):" in body and "3 more lines" in body
            assert "TypeError" not in body
            assert "ctrl+r retries" in shown(notice.query_one(".hint", Static))  # the advice stays in view

            transcript.focus()
            transcript.selected = transcript.views.index(notice)
            await pilot.press("enter")
            await pilot.pause()
            body = shown(notice.query_one(".body", Static))
            assert TRACEBACK.splitlines()[-1] in body and "more lines" not in body
            await pilot.press("enter")
            await pilot.pause()
            assert "TypeError" not in shown(notice.query_one(".body", Static))


async def test_a_cut_off_tool_call_and_answer_say_so_live_and_when_reopened(tmp_path):
    db = tmp_path / "lovia.db"
    with SSEServer() as server:
        agent = Agent(name="assistant", model=Playlist(server, "cut", "text"), tools=[add])
        app = make_app(db, agent=agent)
        async with app.run_test(size=(160, 45)) as pilot:
            await type_and_send(pilot, "add")
            transcript = app.screen.chat.transcript
            (view,) = transcript.query(ToolCallView)
            assert CUT_OFF in shown(view.query_one("CollapsibleTitle"))
            assert view.result is not None and view.result.is_error
            session_id = app.screen.chat.session_id
            await app.screen.chat.open_session(session_id)  # drawn again from what was stored
            await pilot.pause()
            (view,) = transcript.query(ToolCallView)
            assert CUT_OFF in shown(view.query_one("CollapsibleTitle"))

    model = ScriptedModel([ScriptedTurn(text="one, two, thr", finish="length"), ScriptedTurn(finish="length")])
    app = make_app(tmp_path / "other.db", model=model)
    async with app.run_test(size=(160, 45)) as pilot:
        await type_and_send(pilot, "count")
        await type_and_send(pilot, "think")  # cut off before it said anything
        transcript = app.screen.chat.transcript
        notes = [[shown(s) for s in v.query(".finish")] for v in transcript.query(AssistantMessageView)]
        assert [[CUT_OFF in n for n in found] for found in notes] == [[True], [True]]
        await app.screen.chat.open_session(app.screen.chat.session_id)
        await settle(pilot)
        notes = [[shown(s) for s in v.query(".finish")] for v in transcript.query(AssistantMessageView)]
        assert [[CUT_OFF in n for n in found] for found in notes] == [[True], [True]]


async def test_the_inspector_says_usage_unknown_not_zero(tmp_path):
    db = tmp_path / "lovia.db"
    async with SQLiteSession(db, wal=True), SQLiteCheckpointer(db, wal=True) as checkpointer:
        head = RunHead(agent="assistant", status="interrupted", turn=1, session_id="s-a", first_input="hi",
                       usage=Usage(requests=1, unreported_requests=1))
        await checkpointer.save(RunSnapshot("run-x", head, [UserMessage(text="hi")]))
    app = make_app(db)
    async with app.run_test(size=(160, 45)) as pilot:
        app.screen.query_one("#run-list").focus()
        await pilot.pause()
        inspector = app.screen.query_one("CheckpointInspector")
        console = Console(width=120, record=True, file=io.StringIO())
        console.print(inspector.shown)
        usage_line = next(line for line in console.export_text().splitlines() if line.startswith("usage"))
        assert "1 request · usage unknown" in usage_line and "0 in" not in usage_line


async def test_an_endpoint_nobody_listens_on_is_said_in_sentences(tmp_path):
    # The model's error ("cannot reach openai:local at …") started the transcript's notice and the
    # runs list's line in lower case; a name first (openai:local refused …) stays as written.
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]  # closed again: nothing listens there
    model = OpenAIChatModel("local", base_url=f"http://127.0.0.1:{port}/v1", api_key=SECRET, retries=0, timeout=10)
    app = make_app(tmp_path / "lovia.db", agent=Agent(name="assistant", model=model))
    async with app.run_test(size=(160, 45)) as pilot:
        await type_and_send(pilot, "hello there")
        (notice,) = [n for n in app.screen.chat.transcript.query(NoticeView) if n.has_class("-error")]
        assert shown(notice.query_one(".body", Static)).startswith(f"✗ Cannot reach openai:local at http://127.0.0.1:{port}")
        runs = app.screen.query_one("RunsPane")
        await wait_for(pilot, lambda: len(runs.runs) == 1)
        await settle(pilot)
        listed = app.screen.query_one("#run-list").get_option_at_index(0).prompt.plain
        assert "\nCannot reach openai:local" in listed
    assert format.sentence("openai:local refused the request") == "openai:local refused the request"
    assert format.sentence("gpt-4o-mini cannot use tools") == "gpt-4o-mini cannot use tools"
    assert format.sentence("nothing to undo") == "Nothing to undo"


async def test_a_retry_that_fails_again_says_so(tmp_path):
    """ctrl+r on a run the server refused, refused again: the screen was as before, as if the key did nothing."""
    with SSEServer() as server:
        model = OpenAIChatModel("auth", base_url=server.base_url, api_key=SECRET, retries=0, timeout=10)
        app = make_app(tmp_path / "lovia.db", agent=Agent(name="assistant", model=model))
        async with app.run_test(size=(80, 24)) as pilot:
            chat = app.screen.chat
            await type_and_send(pilot, "hello")
            [first] = [n.text for n in chat.transcript.query(NoticeView)]
            assert first.startswith("✗ openai:auth refused the request (401)")
            await pilot.press("ctrl+r")
            await settle(pilot)
            assert len(server.requests) == 2
            [again] = [n.text for n in chat.transcript.query(NoticeView)]  # in place of the first
            assert again == f"✗ Failed again: {first.removeprefix('✗ ')}"


async def test_a_stopped_run_that_fails_on_its_resume_did_not_fail_again(tmp_path):
    """ "Failed again" was said of every resume that failed: a stopped or crashed run had never failed."""
    from lovia import ModelError
    from tests.tui.test_run_status import HeldModel, send_and_hold

    model = HeldModel([ScriptedTurn(error=ModelError("the endpoint answered 500: down"))])
    app = make_app(tmp_path / "lovia.db", agent=Agent(name="assistant", model=model))
    async with app.run_test(size=(80, 24)) as pilot:
        chat = app.screen.chat
        await send_and_hold(pilot, model)
        await pilot.press("escape")
        await wait_for(pilot, lambda: not chat.running)
        model.go.set()
        await pilot.press("ctrl+r")
        await settle(pilot)
        [notice] = [n.text for n in chat.transcript.query(NoticeView) if n.text.startswith("✗")]
        assert notice == "✗ The endpoint answered 500: down"


async def test_a_run_out_of_turns_says_a_retry_needs_more_of_them(tmp_path):
    """It offered "ctrl+r retries the run from its checkpoint", and the retry failed at once, sending nothing."""
    from lovia.models import call

    model = ScriptedModel([ScriptedTurn(tool_calls=[call("add", {"a": 1, "b": 1})])] * 4)
    app = make_app(tmp_path / "lovia.db", agent=Agent(name="assistant", model=model, tools=[add]))
    app.backend.max_turns = 2
    async with app.run_test(size=(80, 24)) as pilot:
        chat = app.screen.chat
        await type_and_send(pilot, "loop")
        [live] = [n for n in chat.transcript.query(NoticeView) if n.text.startswith("✗")]
        assert live.text.startswith("✗ Reached max_turns=2 without a final answer")
        assert live.hint.startswith("What was stored is kept: ctrl+r goes on with it once max_turns is raised in "
                                    "the config file and lovia started again; ")
        await chat.open_session(chat.session_id)
        await settle(pilot)
        [reopened] = [n for n in chat.transcript.query(NoticeView) if n.text.startswith("✗")]
        assert "ctrl+r goes on with it once max_turns is raised" in reopened.hint
