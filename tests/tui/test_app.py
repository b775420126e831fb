"""Every keyboard action of the app, driven by Textual's pilot against a real SQLite file."""

from __future__ import annotations

import asyncio
import io
import json

import pytest

from lovia import (
    Agent,
    AssistantMessage,
    ModelError,
    RunHead,
    RunSnapshot,
    SQLiteCheckpointer,
    SQLiteSession,
    ToolCall,
    ToolResult,
    UserMessage,
    tool,
)
from lovia.models import ScriptedModel, ScriptedTurn, call
from lovia.tui.screens.confirm import ConfirmScreen
from lovia.tui.screens.help import HelpScreen
from lovia.tui.screens.prompt import PromptScreen
from lovia.tui.widgets.assistant_message import AssistantMessageView
from lovia.tui.widgets.notice import NoticeView
from lovia.tui.widgets.run_header import RunHeader
from lovia.tui.widgets.tool_call_view import ToolCallView
from lovia.tui.widgets.transcript import MOUNTED_PAGES, PAGE
from lovia.tui.widgets.user_message import UserMessageView
from tests.tui.conftest import make_app, settle, told, type_and_send, wait_for


async def stored(db, session_id: str) -> list:
    async with SQLiteSession(db, wal=True) as session:
        return await session.load(session_id)


async def test_send_streams_an_answer_and_lists_the_session(tmp_path):
    app = make_app(tmp_path / "lovia.db")
    async with app.run_test(size=(160, 45)) as pilot:
        await type_and_send(pilot, "calculate 6*7")
        chat = app.screen.chat
        transcript = chat.transcript
        assert [type(w) for w in transcript.children] == [RunHeader, UserMessageView, ToolCallView,
                                                          AssistantMessageView]
        assert "42" in transcript.query_one(AssistantMessageView).text
        assert "6*7 = 42" in str(transcript.query_one(ToolCallView).result.output)
        header_classes = transcript.query_one(RunHeader).classes
        assert "completed" in header_classes or "-completed" in header_classes
        assert chat.composer.text == ""
        assert str(chat.query_one("#chat-title").render()) == "calculate 6*7"
        sessions = app.screen.query_one("SessionsPane").sessions
        assert [s.title for s in sessions] == ["calculate 6*7"]
        assert [e.type for e in await stored(tmp_path / "lovia.db", chat.session_id)] == [
            "user", "tool_call", "tool_result", "assistant"]


async def test_an_empty_message_is_not_sent(tmp_path):
    app = make_app(tmp_path / "lovia.db")
    async with app.run_test(size=(160, 45)) as pilot:
        await pilot.press("space", "space", "enter")
        await settle(pilot)
        assert not app.screen.chat.transcript.children
        assert any("empty message is not sent" in n.message for n in told(app))


async def test_stop_then_resume(tmp_path):
    gate = asyncio.Event()

    @tool
    async def slow(seconds: float) -> str:
        """Slow."""
        if not gate.is_set():
            gate.set()
            await asyncio.sleep(3600)
        return "finished"

    model = ScriptedModel([ScriptedTurn(tool_calls=[call("slow", {"seconds": 1}, call_id="c-slow")]), "done now"])
    app = make_app(tmp_path / "lovia.db", agent=Agent(name="assistant", model=model, tools=[slow]))
    async with app.run_test(size=(160, 45)) as pilot:
        await pilot.press(*"go slow", "enter")
        await wait_for(pilot, gate.is_set)
        chat = app.screen.chat
        await pilot.press("escape")
        await settle(pilot)
        assert not chat.running
        runs = app.screen.query_one("RunsPane").runs
        assert [r.head.status for r in runs] == ["interrupted"]
        assert any("Stopped" in n.text for n in chat.transcript.query(NoticeView))
        assert await stored(tmp_path / "lovia.db", chat.session_id) == []  # not in the session yet

        await pilot.press("ctrl+r")
        await settle(pilot)
        assert app.screen.query_one("RunsPane").runs == []
        entries = await stored(tmp_path / "lovia.db", chat.session_id)
        assert [e.type for e in entries] == ["user", "tool_call", "tool_result", "assistant"]
        assert entries[-1].text == "done now"
        assert chat.transcript.query_one(RunHeader).has_class("-completed")


async def test_a_model_that_dies_shows_the_error_and_can_be_retried(tmp_path):
    model = ScriptedModel([ScriptedTurn(text="half an ans", error=ModelError("endpoint died mid-stream"),
                                        fail_after=1), "full answer"])
    app = make_app(tmp_path / "lovia.db", model=model)
    async with app.run_test(size=(160, 45)) as pilot:
        await type_and_send(pilot, "hello")
        chat = app.screen.chat
        errors = [n for n in chat.transcript.query(NoticeView) if n.has_class("-error")]
        assert errors and "✗ Endpoint died mid-stream" in errors[0].text  # a sentence, as the UI shows errors
        assert [r.head.status for r in app.screen.query_one("RunsPane").runs] == ["failed"]
        await pilot.press("ctrl+r")
        await settle(pilot)
        assert [e.text for e in await stored(tmp_path / "lovia.db", chat.session_id)] == ["hello", "full answer"]


async def test_regenerate_replaces_the_last_answer(tmp_path):
    model = ScriptedModel(["first answer", "second answer"])
    app = make_app(tmp_path / "lovia.db", model=model)
    async with app.run_test(size=(160, 45)) as pilot:
        await type_and_send(pilot, "question")
        await pilot.press("ctrl+g")
        await settle(pilot)
        chat = app.screen.chat
        assert [getattr(e, "text", None) for e in await stored(tmp_path / "lovia.db", chat.session_id)] == [
            "question", "second answer"]
        assert [v.text for v in chat.transcript.query(AssistantMessageView)] == ["second answer"]
        assert model.requests[1].messages[-1].text == "question"


async def test_edit_and_resend_rewinds_from_the_selected_message(tmp_path):
    model = ScriptedModel(["one", "two", "edited reply"])
    app = make_app(tmp_path / "lovia.db", model=model)
    async with app.run_test(size=(160, 45)) as pilot:
        await type_and_send(pilot, "first")
        await type_and_send(pilot, "second")
        chat = app.screen.chat
        chat.transcript.focus()
        await pilot.press("end", "up")  # the cursor on "second"
        assert isinstance(chat.transcript.selected_view, UserMessageView)
        await pilot.press("e")
        await pilot.pause()
        assert chat.composer.text == "second" and chat.has_class("-editing")
        chat.composer.text = "second, edited"
        await pilot.press("enter")
        await settle(pilot)
        texts = [getattr(e, "text", None) for e in await stored(tmp_path / "lovia.db", chat.session_id)]
        assert texts == ["first", "one", "second, edited", "edited reply"]
        assert not chat.has_class("-editing")


async def test_edit_can_be_cancelled_without_losing_anything(tmp_path):
    app = make_app(tmp_path / "lovia.db", model=ScriptedModel(["one"]))
    async with app.run_test(size=(160, 45)) as pilot:
        await type_and_send(pilot, "first")
        await pilot.press("ctrl+l")
        await pilot.pause()
        chat = app.screen.chat
        assert chat.has_class("-editing") and chat.composer.text == "first"
        await pilot.press("escape")
        chat.composer.clear()
        await pilot.press("up")  # in an empty composer: edit the last message
        await pilot.pause()
        assert chat.has_class("-editing")
        await pilot.press("escape")
        await pilot.pause()
        assert not chat.has_class("-editing")
        assert len(await stored(tmp_path / "lovia.db", chat.session_id)) == 2


async def test_trim_confirms_how_much_it_reclaims(tmp_path):
    @tool
    def dump() -> str:
        """Big output."""
        return "x" * 5000

    model = ScriptedModel([ScriptedTurn(tool_calls=[call("dump")]), "dumped", "later"])
    app = make_app(tmp_path / "lovia.db", agent=Agent(name="assistant", model=model, tools=[dump]))
    async with app.run_test(size=(160, 45)) as pilot:
        await type_and_send(pilot, "dump it")
        await type_and_send(pilot, "something else")
        chat = app.screen.chat
        chat.transcript.focus()
        await pilot.press("t")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen))
        question = str(app.screen.question)
        assert "Trim 1 old tool output to 400 characters" in question and "4.6k chars" in question
        await pilot.press("y")
        await settle(pilot)
        assert any("Trimmed 1 tool output." in n.message for n in told(app))
        result = next(e for e in await stored(tmp_path / "lovia.db", chat.session_id) if isinstance(e, ToolResult))
        assert result.trimmed_chars == 4600 and len(result.output) < 500


async def test_copy_falls_back_to_the_terminal_clipboard(tmp_path):
    model = ScriptedModel(["Here:\n\n```python\nprint('hi')\n```\n"])
    app = make_app(tmp_path / "lovia.db", model=model)
    async with app.run_test(size=(160, 45)) as pilot:
        await type_and_send(pilot, "code please")
        transcript = app.screen.chat.transcript
        transcript.focus()
        await pilot.press("end")
        await pilot.press("y")
        await pilot.pause()
        assert app.clipboard == "print('hi')"
        await pilot.press("c")
        await pilot.pause()
        assert app.clipboard.startswith("Here:")
        assert any("OSC 52" in n.message for n in told(app))


async def test_expand_a_tool_call(tmp_path):
    app = make_app(tmp_path / "lovia.db")
    async with app.run_test(size=(160, 45)) as pilot:
        await type_and_send(pilot, "calculate 1+1")
        transcript = app.screen.chat.transcript
        transcript.focus()
        await pilot.press("end", "up")
        view = transcript.selected_view
        assert isinstance(view, ToolCallView)
        from textual.widgets import Collapsible

        assert view.query_one(Collapsible).collapsed
        await pilot.press("enter")
        await pilot.pause()
        assert not view.query_one(Collapsible).collapsed


async def test_new_session_switch_pane_theme_and_help(tmp_path):
    app = make_app(tmp_path / "lovia.db")
    async with app.run_test(size=(160, 45)) as pilot:
        await type_and_send(pilot, "hello")
        first = app.screen.chat.session_id
        await pilot.press("ctrl+n")
        await pilot.pause()
        assert app.screen.chat.session_id != first and not app.screen.chat.transcript.children
        assert app.focused.id == "composer"

        await pilot.press("f6")
        assert app.focused.id == "run-list"
        await pilot.press("f6")
        assert type(app.focused).__name__ == "CheckpointInspector"
        await pilot.press("f6")
        assert app.focused.id == "session-list"
        await pilot.press("shift+f6")
        assert type(app.focused).__name__ == "CheckpointInspector"

        assert app.theme == "lovia-dark"
        await pilot.press("ctrl+t")
        await pilot.pause()
        assert app.theme == "lovia-light"
        assert json.loads((tmp_path / "state.json").read_text())["theme"] == "lovia-light"

        await pilot.press("f1")
        await pilot.pause()
        assert isinstance(app.screen, HelpScreen)
        await pilot.press("escape")
        assert not isinstance(app.screen, HelpScreen)


async def test_the_theme_is_remembered(tmp_path):
    (tmp_path / "state.json").write_text(json.dumps({"theme": "lovia-high-contrast"}))
    app = make_app(tmp_path / "lovia.db")
    async with app.run_test(size=(160, 45)) as pilot:
        await pilot.pause()
        assert app.theme == "lovia-high-contrast"
    forced = make_app(tmp_path / "lovia.db", theme="lovia-light")
    async with forced.run_test(size=(160, 45)) as pilot:
        await pilot.pause()
        assert forced.theme == "lovia-light"


async def test_help_lists_every_key():
    from lovia.tui.screens.help import key_table

    keys = {row.keys for _, rows in key_table() for row in rows}
    for expected in ("enter", "escape", "ctrl+r", "ctrl+g", "ctrl+l", "c", "y", "e", "t", "r", "x", "f", "f2",
                     "delete", "ctrl+n", "f6", "ctrl+t", "f1", "ctrl+p", "ctrl+q"):
        assert any(expected in k.split(" / ") for k in keys), expected


async def test_sessions_filter_open_rename_and_delete(tmp_path):
    db = tmp_path / "lovia.db"
    async with SQLiteSession(db, wal=True) as session:
        await session.append("s-a", [UserMessage(text="Atlas launch plan")])
        await session.append("s-b", [UserMessage(text="Groceries for the week")])
    app = make_app(db)
    async with app.run_test(size=(160, 45)) as pilot:
        await pilot.pause()
        pane = app.screen.query_one("SessionsPane")
        app.screen.query_one("#session-list").focus()
        await pilot.press(*"atl")
        await wait_for(pilot, lambda: [s.session_id for s in pane.sessions] == ["s-a"])
        await pilot.press("enter")  # opens the highlighted session, the one match
        await settle(pilot)
        assert app.screen.chat.session_id == "s-a"
        assert app.focused.id == "composer"  # to go on with it: typing went to the filter
        await pilot.press(*"next")
        assert app.screen.chat.composer.text == "next" and pane.query_text == ""  # the filter found it: cleared

        app.screen.query_one("#session-list").focus()
        await pilot.press("f2")
        await wait_for(pilot, lambda: isinstance(app.screen, PromptScreen))
        app.screen.query_one("#answer").value = "Atlas: launch"
        await pilot.press("enter")
        await settle(pilot)
        async with SQLiteSession(db, wal=True) as session:
            assert (await session.session_info("s-a")).title == "Atlas: launch"

        await pilot.press("delete")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen))
        await pilot.press("y")
        await settle(pilot)
        async with SQLiteSession(db, wal=True) as session:
            assert await session.session_info("s-a") is None
        assert app.screen.chat.session_id != "s-a"
        assert app.screen.has_class("-empty"), "the open session deleted: a new one, with the welcome"


async def _interrupted_run(db, run_id="run-x", session_id="s-a") -> None:
    async with SQLiteSession(db, wal=True) as session, SQLiteCheckpointer(db, wal=True) as checkpointer:
        await session.append(session_id, [UserMessage(text="earlier"), AssistantMessage(text="ok")], run_id="old")
        head = RunHead(agent="assistant", status="interrupted", turn=1, session_id=session_id, first_input="do it")
        await checkpointer.save(RunSnapshot(run_id, head, [
            UserMessage(text="do it"), ToolCall(call_id="c1", name="calculate", arguments='{"expression": "1+1"}'),
            ToolResult(call_id="c1", output="1+1 = 2"), ToolCall(call_id="c2", name="calculate",
                                                                  arguments='{"expression": "2+2"}')]))


async def test_runs_list_inspect_discard_and_finalize(tmp_path):
    db = tmp_path / "lovia.db"
    await _interrupted_run(db, "run-x")
    await _interrupted_run(db, "run-y", "s-b")
    await _interrupted_run(db, "run-z", "s-c")
    app = make_app(db)
    async with app.run_test(size=(160, 45)) as pilot:
        await pilot.pause()
        runs = app.screen.query_one("RunsPane")
        assert {r.run_id for r in runs.runs} == {"run-x", "run-y", "run-z"}
        app.screen.query_one("#run-list").focus()
        await pilot.pause()
        inspector = app.screen.query_one("CheckpointInspector")
        from rich.console import Console

        console = Console(width=100, record=True, file=io.StringIO())
        console.print(inspector.shown)
        body = console.export_text()
        assert app.screen.inspected in ("run-x", "run-y", "run-z")
        assert "dangling" in body and "calculate (c2)" in body

        highlighted = app.screen.inspected
        await pilot.press("x")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen))
        await pilot.press("y")
        await settle(pilot)
        assert highlighted not in {r.run_id for r in runs.runs}
        assert app.screen.inspected == runs.highlighted_run_id is not None  # the run now in its place

        remaining = next(r for r in runs.runs if r.run_id == app.screen.inspected)
        await pilot.press("f")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen))
        await pilot.press("y")
        await settle(pilot)
        assert [r.run_id for r in runs.runs] != [remaining.run_id] and len(runs.runs) == 1
        # It said "select a run" under the one highlighted in the finalized run's place.
        assert app.screen.inspected == runs.highlighted_run_id == runs.runs[0].run_id
        entries = await stored(db, remaining.head.session_id)
        assert [e.type for e in entries] == ["user", "assistant", "user", "tool_call", "tool_result"]  # c2 dropped
        # Which session took the entries, when it is not the one open ("the session" read as the open one)
        finalized = next(n.message for n in told(app) if n.message.startswith("Finalized"))
        assert remaining.head.session_id != app.screen.chat.session_id
        assert finalized == f"Finalized: 3 entries added to “{entries[0].text}”."


async def test_resume_from_the_runs_list_reruns_only_dangling_calls(tmp_path):
    db = tmp_path / "lovia.db"
    await _interrupted_run(db)
    app = make_app(db)
    async with app.run_test(size=(160, 45)) as pilot:
        await pilot.pause()
        app.screen.query_one("#run-list").focus()
        await pilot.press("r")
        await settle(pilot)
        assert app.screen.chat.session_id == "s-a"
        entries = await stored(db, "s-a")
        assert [e.type for e in entries] == ["user", "assistant", "user", "tool_call", "tool_result", "tool_call",
                                             "tool_result", "assistant"]
        assert [e.output for e in entries if isinstance(e, ToolResult)] == ["1+1 = 2", "2+2 = 4"]


async def test_a_session_store_without_rewind_hides_edit_and_regenerate(tmp_path):
    class PlainSession:
        """Only the four protocol methods."""

        def __init__(self, inner):
            self.inner = inner

        async def segments(self, session_id):
            return await self.inner.segments(session_id)

        async def load(self, session_id):
            return await self.inner.load(session_id)

        async def append(self, session_id, entries, *, run_id=None, meta=None):
            return await self.inner.append(session_id, entries, run_id=run_id, meta=meta)

        async def clear(self, session_id):
            await self.inner.clear(session_id)

    from lovia import InMemorySession

    app = make_app(tmp_path / "lovia.db", session=PlainSession(InMemorySession()), model=ScriptedModel(["a", "b"]))
    async with app.run_test(size=(160, 45)) as pilot:
        await type_and_send(pilot, "hello")
        chat = app.screen.chat
        assert chat.check_action("regenerate", ()) is False and chat.check_action("edit_last", ()) is False
        assert chat.transcript.check_action("edit", ()) is False
        chat.transcript.focus()
        await pilot.press("end")  # a message selected: it can be copied
        commands = {c.title for c in app.get_system_commands(app.screen)}
        assert "Regenerate" not in commands and "Edit last message" not in commands and "Copy message" in commands
        assert not app.screen.query("SessionsPane")  # no listing capability: the pane is not shown
        await pilot.press("ctrl+g")
        await settle(pilot)
        assert [e.text for e in await app.backend.session.load(chat.session_id)] == ["hello", "a"]


async def test_a_long_session_opens_lazily_and_loads_older_entries(tmp_path):
    db = tmp_path / "lovia.db"
    async with SQLiteSession(db, wal=True) as session:
        for run in range(50):
            batch = []
            for i in range(100):
                batch += [UserMessage(text=f"q{run}-{i}"), AssistantMessage(text=f"a{run}-{i}")]
            await session.append("s-long", batch)
    app = make_app(db)
    async with app.run_test(size=(160, 45)) as pilot:
        await pilot.pause()
        transcript = app.screen.chat.transcript
        assert app.screen.chat.session_id == "s-long"
        # The newest page, and as many older ones as fill the screen twice; not the session.
        assert 0 < transcript.mounted_entries <= MOUNTED_PAGES * PAGE
        assert transcript.older_hidden == 10_000 - transcript.mounted_entries
        last = transcript.children[-1]
        assert isinstance(last, AssistantMessageView) and last.text == "a49-99"
        transcript.focus()
        await pilot.press("end")
        for _ in range(PAGE):
            await pilot.press("up")
        await pilot.pause()
        hidden = transcript.older_hidden
        assert hidden < 10_000 - PAGE  # older entries were mounted as the cursor went up
        transcript.scroll_home(animate=False)
        await pilot.pause(0.2)
        await settle(pilot)
        assert transcript.older_hidden < hidden


async def test_keys_arriving_in_one_burst_are_sent_whole(tmp_path):
    """A terminal delivers fast typing or a paste plus enter at once: enter must not overtake them."""
    from textual import events

    app = make_app(tmp_path / "lovia.db", model=ScriptedModel(["ok"]))
    async with app.run_test(size=(160, 45)) as pilot:
        await pilot.pause()
        for character in "wait 20":
            app.post_message(events.Key("space" if character == " " else character, character))
        app.post_message(events.Key("enter", "\r"))
        await settle(pilot)
        chat = app.screen.chat
        assert [e.text for e in await stored(tmp_path / "lovia.db", chat.session_id)] == ["wait 20", "ok"]


@pytest.mark.parametrize(("keys", "expected"), [
    (["backspace", "X"], "abcdeX"),
    (["backspace", "backspace", "backspace", "X", "Y", "Z"], "abcXYZ"),
    (["left", "X"], "abcdeXf"),
    (["home", "X", "ctrl+e", "Y"], "XabcdefY"),
    (["ctrl+w", "n", "e", "w"], "new"),
])
async def test_editing_keys_arriving_in_one_burst_keep_their_order(tmp_path, keys, expected):
    """Over a slow link fast typing comes in bursts: a backspace or an arrow took effect after the letters
    that followed it (Textual runs a widget's key bindings once the key has bubbled up to the app), so
    "backspace X" left the text as it was and a message was sent with what the user had deleted."""
    from textual import events

    app = make_app(tmp_path / "lovia.db")
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        composer = app.screen.chat.composer
        await pilot.press(*"abcdef")
        for key in keys:
            app.post_message(events.Key(key, key if len(key) == 1 else None))
        await settle(pilot)
        assert composer.text == expected


@pytest.mark.parametrize("box", ["search", "export path", "sessions filter"])
async def test_editing_keys_arriving_in_one_burst_keep_their_order_in_every_box(tmp_path, box):
    """The same as in the message box, in the one-line boxes: the search, a dialog's answer (the
    export's path, a new title) and the sessions filter."""
    from textual import events
    from textual.widgets import Input

    app = make_app(tmp_path / "lovia.db")
    async with app.run_test(size=(80, 24)) as pilot:
        await type_and_send(pilot, "hello")
        key = {"search": "ctrl+f", "export path": "ctrl+s", "sessions filter": "ctrl+b"}[box]
        await pilot.press(key)
        if box == "sessions filter":  # the list has focus: its filter takes it
            await pilot.pause()
            app.screen.query_one("#session-filter").focus()
        await wait_for(pilot, lambda: isinstance(app.focused, Input))
        field = app.focused
        field.value = ""
        await pilot.press(*"abcdef")
        for key in ["backspace", "X", "left", "Y", "home", "Z"]:
            app.post_message(events.Key(key, key if len(key) == 1 else None))
        await pilot.pause(0.3)
        assert field.value == "ZabcdeYX"


async def test_an_editing_key_that_does_not_apply_goes_on_to_the_next_binding(tmp_path):
    """ctrl+c in the composer with nothing selected: the message box's copy does not apply, and the key
    goes on to the app's (how to quit; or an action the [keys] table moved there), as before the
    composer ran its editing keys itself."""
    app = make_app(tmp_path / "lovia.db")
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press(*"typed", "ctrl+c")
        await pilot.pause()
        assert any("quit" in n.message for n in told(app))
        assert app.screen.chat.composer.text == "typed"
    app = make_app(tmp_path / "lovia.db", keys={"app.help": ("ctrl+c",)})
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press(*"typed", "ctrl+c")
        await wait_for(pilot, lambda: isinstance(app.screen, HelpScreen))


async def test_keys_on_a_message_say_to_select_one_and_y_copies_code_the_user_wrote_too(tmp_path):
    """With nothing selected, c, y and enter say so (c and enter did nothing); y finds a code
    block in the user's own message (it said there was none)."""
    from lovia import AssistantMessage, SQLiteSession, UserMessage

    async with SQLiteSession(tmp_path / "lovia.db", wal=True) as session:
        await session.append("s-code", [UserMessage(text="fix this:\n\n```python\nprint('hi')\n```"),
                                        AssistantMessage(text="Thanks.")], run_id="r-1")
    app = make_app(tmp_path / "lovia.db")
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await app.main.open_session("s-code")
        await settle(pilot)
        transcript = app.main.chat.transcript
        transcript.focus()
        await pilot.pause()
        transcript.selected = -1  # none under the cursor, as after a run rebuilt the message it was on
        await pilot.pause()
        for key, said in (("c", "Select a message to copy it (↑/↓)."),
                          ("enter", "Select a message to expand it (↑/↓)."),
                          ("y", "Select a message to copy its last code block (↑/↓).")):
            await pilot.press(key)
            await pilot.pause()
            assert told(app)[-1].message == said
        await pilot.press("up", "up")  # the question
        assert transcript.selected_view.code_blocks() == ["print('hi')"]
        await pilot.press("y")
        await pilot.pause()
        assert "code block" in told(app)[-1].message and "no code block" not in told(app)[-1].message


async def test_copy_code_takes_only_a_block_the_message_shows_as_code(tmp_path):
    # Three backticks inside a sentence (the demo model quotes what it was sent) open no code block:
    # a pattern over the text took the rest of the message for one.
    model = ScriptedModel(["You said: here is code: ```python def f(x): return x\n\nA second paragraph, no code.",
                           "- a list\n\n  ```sh\n  ls -l\n  ```\n\nThen:\n\n    indented = True\n"])
    app = make_app(tmp_path / "lovia.db", model=model)
    async with app.run_test(size=(80, 24)) as pilot:
        await type_and_send(pilot, "one")
        transcript = app.screen.chat.transcript
        transcript.focus()  # the cursor comes to the answer, in sight
        await pilot.press("y")
        await pilot.pause()
        assert told(app)[-1].message == "The selected message has no code block."
        await type_and_send(pilot, "two")
        transcript.focus()
        await pilot.press("end")
        view = transcript.selected_view
        assert view.code_blocks() == ["ls -l", "indented = True"]


@pytest.mark.parametrize("size", [(80, 24), (160, 45)])
async def test_a_new_sessions_title_is_its_first_message_while_the_first_answer_runs(tmp_path, size):
    # It read "New session" until the first run ended, while the sessions list already titled it.
    from tests.tui.test_keys_and_quit import gated_app

    app, started, release = gated_app(tmp_path / "lovia.db")
    async with app.run_test(size=size) as pilot:
        await pilot.pause()
        chat = app.screen.chat
        assert str(chat.query_one("#chat-title").render()) == "New session"
        await pilot.press(*"plan the trip", "enter")
        await wait_for(pilot, started.is_set)
        await wait_for(pilot, lambda: str(chat.query_one("#chat-title").render()) == "plan the trip",
                       give_up_after=3.0)
        assert chat.running
        release.set()
        await settle(pilot)
        assert str(chat.query_one("#chat-title").render()) == "plan the trip"
        await pilot.press("ctrl+n")
        await settle(pilot)
        assert str(chat.query_one("#chat-title").render()) == "New session"


async def test_a_notice_still_shown_is_not_stacked_again_and_an_error_reads_as_a_sentence(tmp_path):
    # `n` pressed twice before any search stacked two identical notices; an error from the
    # library (undo refused while a run executes) started in lower case.
    app = make_app(tmp_path / "lovia.db")
    async with app.run_test(size=(80, 24), notifications=True) as pilot:  # toasts shown, to click one
        await settle(pilot)
        app.screen.query_one("#transcript").focus()
        await pilot.press("n", "n")
        await settle(pilot)
        assert len(toasts_saying(app, "No search to step through")) == 1
        app.notify("a run of this session is executing", severity="error")
        app.notify("kept as written", severity="warning")
        await pilot.pause()
        assert [t.message for t in told(app)][-2:] == ["A run of this session is executing", "kept as written"]
        told(app).clear()
        await wait_for(pilot, lambda: any("kept as written" in str(t.render()) for t in app.screen.query("Toast")))
        [kept] = [t for t in app.screen.query("Toast") if "kept as written" in str(t.render())]
        await pilot.click(kept)  # one clicked away: the same one shows again at once
        await pilot.pause()
        app.notify("kept as written", severity="warning")
        app.notify("A run of this session is executing", severity="error")  # still shown: not again
        await settle(pilot)
        assert len(toasts_saying(app, "kept as written")) == 1
        assert len(toasts_saying(app, "A run of this session is executing")) == 1
        app.clear_notifications()  # none shown now: the same one shows again
        app.notify("kept as written", severity="warning")
        await settle(pilot)
        assert len(toasts_saying(app, "kept as written")) == 1


async def test_a_notice_given_again_while_shown_stays_its_whole_time_from_then(tmp_path):
    # The second `n` left the first notice to go at its own time: pressed just before it went,
    # the answer flashed and vanished.
    app = make_app(tmp_path / "lovia.db")
    async with app.run_test(size=(80, 24), notifications=True) as pilot:
        await settle(pilot)
        app.notify("Once more.", timeout=3)
        await wait_for(pilot, lambda: toasts_saying(app, "Once more."))
        await pilot.pause(2)
        app.notify("Once more.", timeout=3)
        await pilot.pause(1.5)  # past the first one's time, within the second's
        assert len(toasts_saying(app, "Once more.")) == 1


def toasts_saying(app, text: str) -> list:
    """The toasts on screen whose text holds ``text``."""
    return [toast for toast in app.screen.query("Toast") if text in str(toast.render())]


async def test_the_inspector_shows_a_new_run_from_its_head(tmp_path):
    """It kept the scroll of the run shown before: the next run opened in the middle of its entries,
    its id, status and times out of sight."""
    db = tmp_path / "lovia.db"
    async with SQLiteCheckpointer(db, wal=True) as checkpointer:
        for run_id, session_id in (("run-a", "s-a"), ("run-b", "s-b")):
            head = RunHead(agent="assistant", status="interrupted", turn=1, session_id=session_id, first_input="go")
            await checkpointer.save(RunSnapshot(run_id, head, [UserMessage(text=f"line {i}") for i in range(60)]))
    app = make_app(db)
    async with app.run_test(size=(160, 45)) as pilot:
        await settle(pilot)
        inspector = app.screen.query_one("CheckpointInspector")
        await app.screen.inspect("run-a")
        await settle(pilot)
        inspector.scroll_end(animate=False, immediate=True)
        await pilot.pause()
        assert inspector.scroll_y > 0
        await app.screen.inspect("run-b")
        await settle(pilot)
        assert inspector.run_id == "run-b" and inspector.scroll_y == 0
        inspector.scroll_end(animate=False, immediate=True)
        await pilot.pause()
        scrolled = inspector.scroll_y
        await app.screen.inspect("run-b")  # the same run shown again (a refresh): where the reader was
        await settle(pilot)
        assert inspector.scroll_y == scrolled


async def test_y_again_copies_the_code_block_before_so_every_block_of_a_message_can_be_copied(tmp_path):
    # Only the last block could be copied: the first of a two-block answer had to be selected by mouse.
    from lovia import AssistantMessage, SQLiteSession, UserMessage

    answer = "Install it:\n\n```sh\npip install x\n```\n\nThen run:\n\n```python\nimport x\n```\n\nDone."
    async with SQLiteSession(tmp_path / "lovia.db", wal=True) as session:
        await session.append("s-code", [UserMessage(text="how?"), AssistantMessage(text=answer),
                                        UserMessage(text="and?"), AssistantMessage(text="```\nmore\n```")],
                              run_id="r-1")
    app = make_app(tmp_path / "lovia.db")
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await app.main.open_session("s-code")
        await settle(pilot)
        transcript = app.main.chat.transcript
        transcript.focus()
        await pilot.press("end", "up", "up")  # the two-block answer
        assert transcript.selected_view.code_blocks() == ["pip install x", "import x"]

        async def copy() -> str:
            await pilot.press("y")
            await pilot.pause()
            return told(app)[-1].message

        # Each block told apart by its size: "import x" 8 characters, "pip install x" 13.
        said = await copy()
        assert said.startswith("Copied code block 2 of 2 (8 chars) ")
        assert said.endswith(" y again copies the one before.")
        assert (await copy()).startswith("Copied code block 1 of 2 (13 chars) ")
        assert (await copy()).startswith("Copied code block 2 of 2 (8 chars) ")  # round again
        await pilot.press("down", "down")  # a message with one block: its only one, said as before
        assert (await copy()).startswith("Copied the code block (4 chars) ")
        await pilot.press("up", "up")  # back: from its last again
        assert (await copy()).startswith("Copied code block 2 of 2 (8 chars) ")
