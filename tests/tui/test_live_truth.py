"""The screen tells the truth, live: inspector, tool lines, run headers, lists, stop and resume."""

from __future__ import annotations

import asyncio
import io
import re
import time

from rich.console import Console

from lovia import (
    Agent,
    AssistantMessage,
    RunHead,
    RunSnapshot,
    SQLiteCheckpointer,
    SQLiteSession,
    ToolCall,
    ToolResult,
    UserMessage,
    tool,
)
from lovia.context import ContextPolicy, FileResultStore
from lovia.models import ScriptedModel, ScriptedTurn, call
from lovia.models.base import FinishChunk, TextChunk, UsageChunk
from lovia.tui import format
from lovia.tui.app import LoviaApp
from lovia.tui.backend import ChatBackend
from lovia.tui.config import RememberedState
from lovia.tui.screens.confirm import ConfirmScreen
from lovia.tui.widgets.assistant_message import AssistantMessageView
from lovia.tui.widgets.run_header import RunHeader
from lovia.tui.widgets.tool_call_view import ToolCallView
from lovia.usage import Usage
from tests.tui.conftest import make_app, settle, told, type_and_send, wait_for
from tests.tui.test_app import _interrupted_run
from tests.tui.test_running_elsewhere import plain, store_runs

T = 1796212800.0  # 2026-12-02 12:00:00 UTC


def inspector_text(app) -> str:
    return plain(app.screen.query_one("CheckpointInspector").shown)


def headers(app) -> dict[str, str]:
    return {h.run_id: plain(h.render()).strip() for h in app.screen.chat.transcript.query(RunHeader)}


def tool_line(app, call_id: str) -> str:
    view = next(v for v in app.screen.chat.transcript.query(ToolCallView) if v.call.call_id == call_id)
    return view._title()


def gated_tool():
    """A tool whose first execution blocks until stopped and whose re-run waits for ``release``."""
    first, again, release = asyncio.Event(), asyncio.Event(), asyncio.Event()

    @tool
    async def slow() -> str:
        """Slow."""
        if not first.is_set():
            first.set()
            await asyncio.sleep(3600)
        again.set()
        await release.wait()
        return "finished"

    return slow, first, again, release


async def test_the_inspector_and_tool_lines_follow_a_run_through_stop_and_resume(tmp_path):
    slow, first, again, release = gated_tool()
    model = ScriptedModel([ScriptedTurn(tool_calls=[call("slow", call_id="c-slow")]), "done now"])
    app = make_app(tmp_path / "lovia.db", agent=Agent(name="assistant", model=model, tools=[slow]))
    async with app.run_test(size=(160, 45)) as pilot:
        await pilot.press(*"go slow", "enter")
        await wait_for(pilot, first.is_set)
        # While the tool runs: the model turn is saved, and the inspector says its call runs now.
        await wait_for(pilot, lambda: "1 tool call running now" in inspector_text(app))
        shown = inspector_text(app)
        assert "will run again" not in shown
        assert "turn     1" in shown or "turn 1" in " ".join(shown.split())
        assert "slow (c-slow)" in shown
        assert tool_line(app, "c-slow").endswith("running…")

        await pilot.press("escape")
        await settle(pilot)
        assert tool_line(app, "c-slow").endswith("stopped — will run again on resume")
        assert "1 dangling call — will run again on resume" in inspector_text(app)
        chat = app.screen.chat
        await chat.open_session(chat.session_id)  # reopened from its checkpoint
        await settle(pilot)
        assert tool_line(app, "c-slow").endswith("will run again on resume")
        assert "stopped" not in tool_line(app, "c-slow")

        await pilot.press("ctrl+r")
        await wait_for(pilot, again.is_set)
        await wait_for(pilot, lambda: tool_line(app, "c-slow").endswith("running again…"))
        release.set()
        await settle(pilot)
        assert "→ finished" in tool_line(app, "c-slow")


async def test_the_inspector_follows_the_message_selected_in_the_transcript(tmp_path):
    db = tmp_path / "lovia.db"
    await _interrupted_run(db, "run-x", "s-a")  # a stored run "old", then the in-flight run-x
    app = make_app(db)
    async with app.run_test(size=(160, 45)) as pilot:
        await pilot.pause()
        transcript = app.screen.chat.transcript
        transcript.focus()
        await pilot.press("home")  # the first message: of the stored run "old"
        await wait_for(pilot, lambda: app.screen.inspected == "old")
        assert "no checkpoint is kept" in inspector_text(app) and "earlier" in inspector_text(app)
        await pilot.press("end")  # the last message: of run-x, which has a checkpoint
        await wait_for(pilot, lambda: app.screen.inspected == "run-x")
        assert "1 dangling call" in inspector_text(app)
        await app.screen.refresh_lists()  # a refresh keeps it
        await settle(pilot)
        assert app.screen.inspected == "run-x"


async def test_a_refresh_keeps_the_highlighted_run_when_the_list_reorders(tmp_path):
    db = tmp_path / "lovia.db"
    await _interrupted_run(db, "run-x", "s-a")
    await _interrupted_run(db, "run-y", "s-b")
    app = make_app(db)
    async with app.run_test(size=(160, 45)) as pilot:
        await pilot.pause()
        options = app.screen.query_one("#run-list")
        options.focus()
        await pilot.pause()
        ids = [options.get_option_at_index(i).id for i in range(options.option_count)]
        target = ids[-1]
        options.highlighted = len(ids) - 1
        await wait_for(pilot, lambda: app.screen.inspected == target)
        other = ids[0]
        # Ours is updated (as by another window), so it moves to the top: the highlight follows it.
        async with SQLiteCheckpointer(db, wal=True) as checkpointer:
            snapshot = await checkpointer.load(target)
            snapshot.head.updated_at = time.time() + 60
            await checkpointer.save(snapshot)
        await app.screen.refresh_lists()
        await settle(pilot)
        assert [options.get_option_at_index(i).id for i in range(options.option_count)] == [target, other]
        assert options.get_option_at_index(options.highlighted).id == target
        assert app.screen.inspected == target and target in inspector_text(app).split("\n")[0]


async def test_run_headers_read_the_same_live_and_reopened(tmp_path):
    db = tmp_path / "lovia.db"
    async with SQLiteSession(db, wal=True) as session, SQLiteCheckpointer(db, wal=True) as checkpointer:
        await session.append("s-a", [UserMessage(text="earlier"), AssistantMessage(text="ok")], run_id="old")
        # Started an hour ago, ran 12 s, then stopped: the resume finishes it.
        head = RunHead(agent="assistant", status="interrupted", turn=0, session_id="s-a", first_input="do it",
                       started_at=time.time() - 3600, active_seconds=12.0)
        await checkpointer.save(RunSnapshot("run-x", head, [UserMessage(text="do it")]))
    app = make_app(db, model=ScriptedModel(["all done"]))
    async with app.run_test(size=(160, 45)) as pilot:
        await pilot.pause()
        chat = app.screen.chat
        assert "stopped · ran 12s" in headers(app)["run-x"]  # how long it ran, though stopped
        await pilot.press("ctrl+r")
        await settle(pilot)
        live = headers(app)["run-x"]
        # The wall time from the first start, and the time it ran: 12 s before, plus the resume's
        # own (a fraction of a second, more on a loaded machine).
        assert "1h 00m · ran 1" in live and int(re.search(r"ran (\d+)s", live).group(1)) in range(12, 20)
        await chat.open_session(chat.session_id)
        await settle(pilot)
        assert headers(app)["run-x"] == live


async def test_a_stopped_run_header_says_how_long_it_ran_and_a_finalized_partial_is_marked(tmp_path):
    slow, first, _, _ = gated_tool()
    db = tmp_path / "lovia.db"
    model = ScriptedModel([ScriptedTurn(tool_calls=[call("slow", call_id="c-slow")])])
    app = make_app(db, agent=Agent(name="assistant", model=model, tools=[slow]))
    async with app.run_test(size=(160, 45)) as pilot:
        await pilot.press(*"go slow", "enter")
        await wait_for(pilot, first.is_set)
        await pilot.press("escape")
        await settle(pilot)
        chat = app.screen.chat
        [run_id] = headers(app)
        live = headers(app)[run_id]
        assert "stopped · ran " in live and "interrupted" not in live
        await chat.open_session(chat.session_id)
        await settle(pilot)
        assert headers(app)[run_id] == live

        app.screen.query_one("#run-list").focus()
        await pilot.press("f")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen))
        await pilot.press("y")
        await settle(pilot)
        finalized = headers(app)[run_id]
        assert "partial" in finalized and "ran " in finalized
        assert app.screen.chat.transcript.query_one(RunHeader).has_class("-partial")
        # Selected in the transcript, the inspector says the same, not "completed".
        app.screen.chat.transcript.focus()
        await pilot.press("end")
        await wait_for(pilot, lambda: "partial, stopped" in inspector_text(app))
        assert "completed" not in inspector_text(app)


class StopAndGoModel:
    """Streams a partial answer and hangs (to be stopped) ``hangs`` times, then answers."""

    offline = True
    name = "stop-and-go"

    def __init__(self, hangs: int) -> None:
        self.hangs = hangs
        self.calls = 0
        self.streaming = asyncio.Event()

    async def stream(self, request):
        self.calls += 1
        if self.calls <= self.hangs:
            yield TextChunk("partial ")
            self.streaming.set()
            await asyncio.sleep(3600)
        yield TextChunk("final answer")
        yield UsageChunk(Usage(requests=1, input_tokens=1, output_tokens=1))
        yield FinishChunk("stop")


async def test_stop_resume_and_stop_again_never_shows_the_partial_answer_twice(tmp_path):
    model = StopAndGoModel(hangs=2)
    app = make_app(tmp_path / "lovia.db", model=model)
    async with app.run_test(size=(160, 45)) as pilot:
        texts = lambda: [v.text for v in app.screen.chat.transcript.query(AssistantMessageView)]  # noqa: E731
        await pilot.press(*"hello", "enter")
        await wait_for(pilot, model.streaming.is_set)
        await pilot.press("escape")
        await settle(pilot)
        model.streaming.clear()
        await pilot.press("ctrl+r")
        await wait_for(pilot, model.streaming.is_set)
        await wait_for(pilot, lambda: texts() == ["partial "])  # the stopped turn's text went, its rerun shows
        await pilot.press("escape")
        await settle(pilot)
        await pilot.press("ctrl+r")
        await settle(pilot)
        assert texts() == ["final answer"]
        assert len(headers(app)) == 1


async def test_discarding_a_run_removes_it_from_the_open_transcript(tmp_path):
    db = tmp_path / "lovia.db"
    await _interrupted_run(db, "run-x", "s-a")
    app = make_app(db)
    async with app.run_test(size=(160, 45)) as pilot:
        await pilot.pause()
        chat = app.screen.chat
        assert chat.session_id == "s-a" and "run-x" in chat.transcript.run_ids
        app.screen.query_one("#run-list").focus()
        await pilot.press("x")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen))
        await pilot.press("y")
        await settle(pilot)
        assert "run-x" not in chat.transcript.run_ids
        assert set(headers(app)) == {"old"}
        assert not any(v.call.call_id == "c2" for v in chat.transcript.query(ToolCallView))


async def test_actions_on_a_run_running_elsewhere_are_refused_at_once_and_focus_stays(tmp_path):
    db = tmp_path / "lovia.db"
    await store_runs(db)
    app = make_app(db)
    async with app.run_test(size=(160, 45)) as pilot:
        await pilot.pause()
        options = app.screen.query_one("#run-list")
        options.focus()
        await pilot.pause()
        ids = [options.get_option_at_index(i).id for i in range(options.option_count)]
        options.highlighted = ids.index("run-live")
        await pilot.pause()
        for key in ("x", "f"):
            told(app).clear()
            app.clear_notifications()  # the same refusal again: not stacked under one still shown
            await pilot.press(key)
            await settle(pilot)
            assert not isinstance(app.screen, ConfirmScreen)  # no question first
            assert any("being executed by process 4242 on build-7" in n.message for n in told(app))
        await pilot.press("r")
        await settle(pilot)
        assert app.focused is options  # a refused resume leaves the reader in the list


async def test_lists_show_times_to_the_second_and_their_age(tmp_path, monkeypatch):
    db = tmp_path / "lovia.db"
    async with SQLiteCheckpointer(db, wal=True) as checkpointer:
        head = RunHead(agent="assistant", status="interrupted", session_id="s-a", first_input="do it",
                       started_at=T + 9, updated_at=T + 10, active_seconds=3.2)
        await checkpointer.save(RunSnapshot("run-x", head, [UserMessage(text="do it")]))
    monkeypatch.setattr(format, "clock", lambda: T + 9 + 180)
    app = make_app(db)
    async with app.run_test(size=(160, 45)) as pilot:
        await pilot.pause()
        label = plain(app.screen.query_one("#run-list").get_option_at_index(0).prompt)
        assert "2026-12-02 12:00:09 · 3 min ago" in label
        assert "ran 3.2s" in label


async def test_the_inspector_wraps_entries_in_columns_without_markdown_and_copies_the_run_id(tmp_path):
    db = tmp_path / "lovia.db"
    long_text = "**Bold** start and `code` then " + " ".join(f"word{i}" for i in range(30))
    async with SQLiteCheckpointer(db, wal=True) as checkpointer:
        head = RunHead(agent="assistant", status="interrupted", session_id="s-a", first_input="q")
        await checkpointer.save(RunSnapshot("run-x", head, [
            UserMessage(text="q"), AssistantMessage(text=long_text),
            ToolCall(call_id="c1", name="calculate", arguments="{}")]))
    app = make_app(db)
    async with app.run_test(size=(160, 45)) as pilot:
        await pilot.pause()
        app.screen.query_one("#run-list").focus()
        await wait_for(pilot, lambda: "Bold" in inspector_text(app))
        console = Console(width=44, record=True, file=io.StringIO())  # as wide as the pane
        console.print(app.screen.query_one("CheckpointInspector").shown)
        console_text = console.export_text()
        assert "**" not in console_text and "`" not in console_text.split("calculate")[0]
        lines = console_text.split("\n")
        start = next(i for i, line in enumerate(lines) if "Bold start" in line)
        column = lines[start].index("Bold start")
        assert lines[start + 1][:column].strip() == ""  # the summary wraps under its own column
        assert lines[start + 1][column:].strip()

        app.screen.query_one("CheckpointInspector").focus()
        await pilot.press("c")
        await pilot.pause()
        assert any("Copied the run id run-x" in n.message for n in told(app))


async def test_trim_says_outputs_are_archived_and_a_trimmed_output_shows_whole_again(tmp_path):
    db = tmp_path / "lovia.db"

    @tool
    async def long_output() -> str:
        """A long output."""
        return "x" * 1000 + " END"

    model = ScriptedModel([ScriptedTurn(tool_calls=[call("long_output", call_id="c-long")]), "first", "second"])
    agent = Agent(name="assistant", model=model, tools=[long_output])
    backend = ChatBackend(SQLiteSession(db, wal=True), SQLiteCheckpointer(db, wal=True), agent,
                          context_policy=ContextPolicy(result_store=FileResultStore(tmp_path / "archive")))
    app = LoviaApp(backend, model_label="scripted", state=RememberedState(tmp_path / "state.json"))
    async with app.run_test(size=(160, 45)) as pilot:
        await type_and_send(pilot, "one")
        await type_and_send(pilot, "two")
        transcript = app.screen.chat.transcript
        transcript.focus()
        await pilot.press("t")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen))
        question = app.screen.question
        assert "Trim 1 old tool output " in question
        assert "archived" in question and "shows it whole again" in question
        await pilot.press("y")
        await settle(pilot)
        view = next(v for v in transcript.query(ToolCallView) if v.call.call_id == "c-long")
        assert view.result.trimmed_chars
        transcript.focus()
        transcript.selected = transcript.views.index(view)
        await pilot.press("enter")
        await wait_for(pilot, lambda: view.archived is not None)
        assert view.archived.endswith(" END") and view.copy_text() == view.archived


async def test_a_trimmed_output_whose_call_id_came_again_later_shows_its_own_whole_output(tmp_path):
    # A server that numbers every call "call_1" (stored before lovia gave repeated ids fresh ones): the
    # archive index gave the latest run's output for that id, so expanding the first run's result
    # showed the second run's output as its own. Each run's result is looked up in the index as it
    # stood after that run (the export's rule too).
    from lovia.transcript import trim_output

    db, archive = tmp_path / "lovia.db", FileResultStore(tmp_path / "archive")
    # Alike for longer than the part a trim keeps (the same listing, a little longer the second time)
    outputs = {"r-1": "same line\n" * 100 + "first", "r-2": "same line\n" * 100 + "second"}
    async with SQLiteSession(db, wal=True) as session:
        for run_id, output in outputs.items():
            key = FileResultStore.key_for(run_id, "call_1")
            await archive.put(key, output)
            result = trim_output(ToolResult(call_id="call_1", output=output, name="fetch"), 50)
            await session.append("s-a", [UserMessage(text=f"ask {run_id}"),
                                         ToolCall(call_id="call_1", name="fetch", arguments="{}"), result,
                                         AssistantMessage(text="done")],
                                 run_id=run_id, meta={"context": {"archived": {"call_1": key}}})
    backend = ChatBackend(SQLiteSession(db, wal=True), SQLiteCheckpointer(db, wal=True),
                          Agent(name="assistant", model=ScriptedModel(["ok"])),
                          context_policy=ContextPolicy(result_store=archive))
    app = LoviaApp(backend, model_label="scripted", state=RememberedState(tmp_path / "state.json"))
    async with app.run_test(size=(160, 45)) as pilot:
        await settle(pilot)
        transcript = app.screen.chat.transcript
        views = list(transcript.query(ToolCallView))
        assert len(views) == 2
        for view, output in zip(views, outputs.values(), strict=True):
            transcript.focus()
            transcript.selected = transcript.views.index(view)
            await pilot.press("enter")
            await wait_for(pilot, lambda view=view: view.archived is not None)
            assert view.archived == output


async def test_resuming_a_run_again_brings_the_inspector_back_to_it(tmp_path):
    blocked = asyncio.Event()

    @tool
    async def slow() -> str:
        """Blocks until stopped, every time."""
        blocked.set()
        await asyncio.sleep(3600)
        return "never"

    model = ScriptedModel(["hello", ScriptedTurn(tool_calls=[call("slow", call_id="c-slow")])])
    app = make_app(tmp_path / "lovia.db", agent=Agent(name="assistant", model=model, tools=[slow]))
    async with app.run_test(size=(160, 45)) as pilot:
        await type_and_send(pilot, "first")
        await pilot.press(*"go slow", "enter")
        await wait_for(pilot, blocked.is_set)
        live = app.screen.chat.stream.run_id
        await pilot.press("escape")
        await settle(pilot)
        transcript = app.screen.chat.transcript
        transcript.focus()
        await pilot.press("home")  # the first run's message: the reader looks at it
        await wait_for(pilot, lambda: app.screen.inspected not in (None, live))
        blocked.clear()
        await pilot.press("ctrl+r")  # the stopped run again, in a new execution
        await wait_for(pilot, blocked.is_set)
        await wait_for(pilot, lambda: app.screen.inspected == live and "1 tool call running now" in inspector_text(app))
        await pilot.press("escape")
        await settle(pilot)
