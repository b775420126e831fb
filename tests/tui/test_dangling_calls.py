"""Decide before a side effect runs twice, from the keyboard; and the runs list says how each run stopped.

A real process is killed inside a tool call (SIGKILL), leaving the call dangling in a real
SQLite file. The inspector lists it as "may have run"; the user resumes (it runs again, as
the spec says) or gives its output or an error first (it never runs again). The tool counts
its executions.
"""

from __future__ import annotations

import asyncio
import io

import pytest
from rich.console import Console

from lovia import Agent, SQLiteCheckpointer, SQLiteSession, ToolResult, tool
from lovia.builtin_tools import calculate, current_time
from lovia.export import export_session
from lovia.models import DemoModel
from lovia.tui import format
from lovia.tui.screens.confirm import ConfirmScreen
from lovia.tui.screens.prompt import PromptScreen
from lovia.tui.widgets.inspector import DanglingCallList
from lovia.tui.widgets.tool_call_view import ToolCallView
from screenshots.demo_data import BASE_TIME, build, build_stopped_runs
from tests.tui.conftest import make_app, settle, told, wait_for
from tests.tui.test_crash_resume import crash_a_run

SIZES = {"80x24": (80, 24), "160x45": (160, 45)}


def plain(renderable, width: int = 200) -> str:
    console = Console(width=width, record=True, file=open("/dev/null", "w"))  # noqa: SIM115
    console.print(renderable)
    return console.export_text()


def counting_agent() -> tuple[Agent, list[float]]:
    """The demo agent with a ``wait`` that waits no time and records each execution."""
    executions: list[float] = []

    @tool(name="wait")
    async def counted_wait(seconds: float) -> str:
        """Waits no time at all in this test; counts its executions."""
        executions.append(seconds)
        return f"waited {seconds:g} seconds"

    return Agent(name="assistant", tools=[current_time, calculate, counted_wait], model=DemoModel(delay=0)), executions


async def open_runs(pilot, size: tuple[int, int]) -> None:
    """Show the runs list with focus in it: over the conversation at 80x24 (ctrl+o), in place when wide."""
    if size == (80, 24):
        await pilot.press("ctrl+o")
    else:
        pilot.app.screen.query_one("#run-list").focus()
    await wait_for(pilot, lambda: pilot.app.screen.inspected == "run-crashed")


def run_labels(app) -> dict[str, str]:
    options = app.screen.query_one("#run-list")
    return {options.get_option_at_index(i).id: plain(options.get_option_at_index(i).prompt)
            for i in range(options.option_count)}


async def stored(db) -> tuple[list, list]:
    async with SQLiteCheckpointer(db, wal=True) as checkpointer, SQLiteSession(db, wal=True) as session:
        snapshot = await checkpointer.load("run-crashed")
        return (list(snapshot.entries) if snapshot else []), await session.load("s-crash")


def keys_in_force(app) -> set[str]:
    """The actions the focused widget's keys do now, by their keymap names (what the footer offers)."""
    return {active.binding.id for active in app.screen.active_bindings.values() if active.enabled and active.binding.id}


async def give(pilot, key: str, text: str) -> None:
    """From the inspector's dangling-call row: ``key`` (o or e), type ``text``, enter."""
    await pilot.press(key)
    await wait_for(pilot, lambda: isinstance(pilot.app.screen, PromptScreen))
    assert "and press enter: it is stored as the call's result" in str(pilot.app.screen.question)  # how to give it
    await pilot.press(*text, "enter")
    await settle(pilot)


@pytest.mark.parametrize("size", SIZES)
async def test_a_dangling_call_given_its_output_is_never_run_again(tmp_path, size):
    db = tmp_path / "lovia.db"
    crash_a_run(db)
    agent, executions = counting_agent()
    app = make_app(db, agent=agent)
    async with app.run_test(size=SIZES[size]) as pilot:
        await pilot.pause()
        await open_runs(pilot, SIZES[size])
        assert "✗ crashed inside wait" in run_labels(app)["run-crashed"]
        await pilot.press("f6")  # to the inspector: focus goes to its dangling calls
        await pilot.pause()
        calls = app.screen.query_one(DanglingCallList)
        assert app.focused is calls and calls.option_count == 1
        row = plain(calls.get_option_at_index(0).prompt)
        assert "⚠ wait" in row and "may have run" in row and "reruns on resume" in row
        assert "may have run before the run was cut short" in plain(app.screen.query_one("CheckpointInspector").shown)
        inspector = app.screen.query_one("CheckpointInspector")
        await wait_for(pilot, lambda: inspector.region.contains_region(calls.region))  # scrolled into view

        await give(pilot, "o", "waited 60 seconds before the crash")

        entries, _ = await stored(db)
        assert isinstance(entries[-1], ToolResult) and entries[-1].output == "waited 60 seconds before the crash"
        assert not calls.display and app.focused is app.screen.query_one("CheckpointInspector")
        assert "crashed between turns" in run_labels(app)["run-crashed"]
        assert any("resuming will not run it again" in n.message for n in told(app))

        # The last call decided, its list goes: r in the inspector still resumes the run (it did nothing)
        assert "inspector.resume" in keys_in_force(app)
        await pilot.press("r")
        await settle(pilot)
        assert app.screen.chat.session_id == "s-crash"
        # The result typed in reads as given, not as the tool's own (it looked exactly like one).
        [view] = app.screen.chat.transcript.query(ToolCallView)
        assert "→ [given] waited 60 seconds before the crash" in view._title()
    assert executions == []  # the side effect was not run a second time
    _, session = await stored(db)
    assert [e.type for e in session] == ["user", "assistant", "tool_call", "tool_result", "assistant"]
    assert [e.output for e in session if isinstance(e, ToolResult)] == ["waited 60 seconds before the crash"]
    async with SQLiteSession(db, wal=True) as store:
        out = io.StringIO()
        await export_session(store, "s-crash", out)
    assert "**Result** of `wait` · given, not received from the tool" in out.getvalue()


@pytest.mark.parametrize("size", SIZES)
async def test_shift_tab_leaves_the_dangling_calls_for_the_runs_list(tmp_path, size):
    # It focused the inspector, which hands focus to its calls: focus never moved, and nothing said why.
    db = tmp_path / "lovia.db"
    crash_a_run(db)
    app = make_app(db)
    async with app.run_test(size=SIZES[size]) as pilot:
        await pilot.pause()
        await open_runs(pilot, SIZES[size])
        await pilot.press("tab")
        await pilot.pause()
        assert isinstance(app.focused, DanglingCallList)
        await pilot.press("shift+tab")
        await pilot.pause()
        assert app.focused is app.screen.query_one("#run-list")
        await pilot.press("tab")  # and back in: to the calls, as before
        await pilot.pause()
        assert isinstance(app.focused, DanglingCallList)


async def test_resumed_from_the_dangling_call_row_it_runs_again_as_the_spec_says(tmp_path):
    db = tmp_path / "lovia.db"
    crash_a_run(db)
    agent, executions = counting_agent()
    app = make_app(db, agent=agent)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        await open_runs(pilot, (80, 24))
        await pilot.press("f6")
        await pilot.pause()
        assert isinstance(app.focused, DanglingCallList)
        await pilot.press("r")
        await settle(pilot)
    assert executions == [60]
    _, session = await stored(db)
    assert [e.output for e in session if isinstance(e, ToolResult)] == ["waited 60 seconds"]


async def test_a_dangling_call_given_an_error_reaches_the_model_as_the_tools_failure(tmp_path):
    db = tmp_path / "lovia.db"
    crash_a_run(db)
    agent, executions = counting_agent()
    app = make_app(db, agent=agent)
    async with app.run_test(size=(160, 45)) as pilot:
        await pilot.pause()
        await open_runs(pilot, (160, 45))
        await pilot.press("f6")
        await pilot.pause()
        await give(pilot, "e", "interrupted: unknown how long it waited")
        app.screen.query_one("#run-list").focus()
        await pilot.pause()
        await pilot.press("r")
        await settle(pilot)
    assert executions == []
    _, session = await stored(db)
    [result] = [e for e in session if isinstance(e, ToolResult)]
    assert result.is_error and result.output == "interrupted: unknown how long it waited"


async def test_escape_at_the_prompt_leaves_the_call_to_run_again(tmp_path):
    db = tmp_path / "lovia.db"
    crash_a_run(db)
    agent, _ = counting_agent()
    app = make_app(db, agent=agent)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        await open_runs(pilot, (80, 24))
        await pilot.press("f6", "o")
        await wait_for(pilot, lambda: isinstance(app.screen, PromptScreen))
        await pilot.press(*"never mind", "escape")
        await settle(pilot)
        assert app.screen.query_one(DanglingCallList).option_count == 1
    entries, _ = await stored(db)
    assert [e.type for e in entries] == ["user", "assistant", "tool_call"]


async def test_an_empty_output_is_stored_only_once_confirmed(tmp_path):
    # o then enter with nothing typed stored an empty output at once: the call never ran again.
    db = tmp_path / "lovia.db"
    crash_a_run(db)
    agent, _ = counting_agent()
    app = make_app(db, agent=agent)

    async def give_nothing(typed: str = "") -> ConfirmScreen:
        await pilot.press("o")
        await wait_for(pilot, lambda: isinstance(app.screen, PromptScreen))
        await pilot.press(*typed, "enter")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen))
        return app.screen

    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        await open_runs(pilot, (80, 24))
        await pilot.press("f6")
        await pilot.pause()
        dialog = await give_nothing()
        assert "Store an empty output" in str(dialog.query_one("#question").render())
        await pilot.press("n")
        await settle(pilot)
        calls = app.screen.query_one(DanglingCallList)
        assert calls.option_count == 1
        entries, _ = await stored(db)
        assert [e.type for e in entries] == ["user", "assistant", "tool_call"]  # nothing stored

        calls.focus()
        await pilot.pause()
        await give_nothing("  ")  # spaces alone are nothing typed too
        await pilot.press("y")  # a tool that really printed nothing
        await settle(pilot)
    entries, _ = await stored(db)
    assert isinstance(entries[-1], ToolResult) and entries[-1].output == "" and not entries[-1].is_error


async def test_a_call_decided_elsewhere_meanwhile_is_refused_with_the_run_id(tmp_path):
    db = tmp_path / "lovia.db"
    crash_a_run(db)
    agent, _ = counting_agent()
    app = make_app(db, agent=agent)
    async with app.run_test(size=(160, 45)) as pilot:
        await pilot.pause()
        await open_runs(pilot, (160, 45))
        await pilot.press("f6", "o")
        await wait_for(pilot, lambda: isinstance(app.screen, PromptScreen))
        async with SQLiteCheckpointer(db, wal=True) as other_window:
            from lovia import complete_dangling_call

            [call] = [e for e in (await other_window.load("run-crashed")).entries if e.type == "tool_call"]
            await complete_dangling_call(other_window, "run-crashed", call.call_id, output="decided there")
        await pilot.press(*"decided here", "enter")
        await settle(pilot)
        assert any(f"Tool call {call.call_id!r} of run 'run-crashed' has a result already" in n.message
                   for n in told(app))
    entries, _ = await stored(db)
    assert [e.output for e in entries if isinstance(e, ToolResult)] == ["decided there"]


@pytest.mark.parametrize("size", SIZES)
async def test_the_runs_list_says_how_each_run_stopped(tmp_path, size, monkeypatch):
    monkeypatch.setattr(format, "clock", lambda: BASE_TIME + 600)  # ages read the same every day
    db = tmp_path / "demo.db"
    await build(db)
    await build_stopped_runs(db)
    app = make_app(db)
    async with app.run_test(size=SIZES[size]) as pilot:
        await pilot.pause()
        if size == "80x24":
            await pilot.press("ctrl+o")
            await pilot.pause()
        labels = run_labels(app)
        width = app.screen.query_one("#run-list").scrollable_content_region.width
        for label in labels.values():
            assert all(len(line.rstrip()) <= width for line in label.splitlines())  # no line wraps
        streaming = labels["run-demo-streaming"]
        assert "✗ crashed while streaming" in streaming and "“TOML has first-class dates" in streaming
        assert "ran 5.8s" in streaming and "in My project is called Atlas." in streaming
        failed = labels["run-demo-failed"]
        assert "! failed on a model error" in failed and "HTTP 502 Bad Gateway" in failed
        assert "retry later" not in failed and "ModelError" not in failed
        tools = labels["run-demo-tools"]
        assert "✗ crashed inside 2 tool calls" in tools and "send_report, pay_invoice" in tools
        elsewhere = labels["run-demo-elsewhere"]
        assert "⇄ running elsewhere" in elsewhere and "by pid 7311 on build-7" in elsewhere
        assert "⏸ stopped inside wait" in labels["run-demo-interrupted"]
        assert "2026-12-02 12:05:00 · 5 min ago" in labels["run-demo-interrupted"]  # started, to the second


async def test_the_model_is_shown_only_when_known(tmp_path):
    db = tmp_path / "demo.db"
    await build(db)
    await build_stopped_runs(db)
    async with SQLiteCheckpointer(db, wal=True) as checkpointer:
        snapshot = await checkpointer.load("run-demo-failed")
        snapshot.head.model = None
        await checkpointer.save(snapshot)
    app = make_app(db)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("ctrl+o")
        await pilot.pause()
        labels = run_labels(app)
        assert "\nran 5.8s · gpt-4o-mini\n" in labels["run-demo-streaming"]
        assert "gpt" not in labels["run-demo-failed"] and "None" not in labels["run-demo-failed"]
        assert "\nran 5.8s\n" in labels["run-demo-failed"]
        await wait_for(pilot, lambda: app.screen.inspected == "run-demo-elsewhere")
        assert "model   gpt-4o-mini" in plain(app.screen.query_one("CheckpointInspector").shown)


@pytest.mark.parametrize("size", SIZES)
async def test_a_run_killed_while_streaming_reads_so_with_its_partial_answer(tmp_path, size):
    """A real process killed mid-answer (SIGKILL, real SSE server): the journal's text is previewed on one line."""
    from tests.runtime.drip_server import PARTIAL, DripServer
    from tests.runtime.test_partial_journal import RUN, stream_then_kill

    db = tmp_path / "lovia.db"
    with DripServer() as server:
        await asyncio.to_thread(stream_then_kill, db, server)
    app = make_app(db)
    async with app.run_test(size=SIZES[size]) as pilot:
        await pilot.pause()
        if size == "80x24":
            await pilot.press("ctrl+o")
            await pilot.pause()
        await wait_for(pilot, lambda: RUN in run_labels(app))
        label = run_labels(app)[RUN].splitlines()
        assert label[0].strip() == "✗ crashed while streaming"
        preview = label[2].strip()
        assert preview.startswith("“") and preview.endswith("”")
        assert len(preview) > 10 and " ".join(PARTIAL.split()).startswith(preview.strip("“”").rstrip("…"))
        assert any(line.strip().endswith("openai:drip") for line in label[3:])


@pytest.mark.parametrize("size", SIZES)
async def test_discard_and_finalize_name_the_run_and_say_a_call_may_have_run(tmp_path, size):
    """They asked about "this run": at 80 columns the dialog hides the list, and which run was
    highlighted could not be told; nor did discard say that the crashed call may have done its work."""
    db = tmp_path / "lovia.db"
    crash_a_run(db)
    agent, executions = counting_agent()
    app = make_app(db, agent=agent)
    async with app.run_test(size=SIZES[size]) as pilot:
        await pilot.pause()
        await open_runs(pilot, SIZES[size])
        for key in ("x", "f"):
            await pilot.press(key)
            await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen))
            question = str(app.screen.question)
            assert "the run “wait 60” (started " in question, question
            assert "1 tool call without a result may have run already" in question
            if key == "f":  # it said only "Tool calls without results are dropped"
                assert "finalizing drops it from the transcript, so the model will not know what it did" in question
            await pilot.press("escape")
            await settle(pilot)
    assert executions == []
    entries, _ = await stored(db)
    assert entries  # nothing was discarded


@pytest.mark.parametrize("size", SIZES)
async def test_the_inspectors_keys_say_why_they_do_nothing_for_a_run_that_cannot_be_resumed(tmp_path, size):
    """r, o and e in the inspector of a completed run did nothing visible; r is left out of the footer there."""
    db = tmp_path / "lovia.db"
    crash_a_run(db)
    agent, _ = counting_agent()
    app = make_app(db, agent=agent)
    async with app.run_test(size=SIZES[size]) as pilot:
        await pilot.pause()
        await open_runs(pilot, SIZES[size])
        inspector = app.screen.query_one("CheckpointInspector")
        # A lease its killed owner took a moment ago has not run out: it holds nothing all the same.
        [lease] = [line for line in plain(inspector.shown).splitlines() if line.startswith("lease")]
        assert lease.endswith(", but its owner is gone"), lease
        await pilot.press("f6")
        await pilot.pause()
        await give(pilot, "o", "waited")
        assert app.focused is inspector and inspector.resumable
        await pilot.press("r")  # resumed: the run completes here
        await settle(pilot)
        await app.screen.inspect("run-crashed")
        await settle(pilot)
        assert "completed" in plain(inspector.shown)
        inspector.focus()
        await pilot.pause()
        assert inspector.hidden_in_footer("resume")
        for key, said in (("r", "This run has completed: there is nothing to resume."),
                          ("o", "The run shown has no tool call waiting for a result"),
                          ("e", "The run shown has no tool call waiting for a result")):
            before = len(told(app))
            await pilot.press(key)
            await settle(pilot)
            assert any(n.message.startswith(said) for n in told(app)[before:]), (key, told(app)[before:])
            assert not isinstance(app.screen, PromptScreen)


@pytest.mark.parametrize("size", SIZES)
async def test_the_resume_key_pressed_outside_the_conversation_says_where_it_works(tmp_path, size):
    """ctrl+r in the sessions list, the runs list or the inspector did nothing visible."""
    db = tmp_path / "lovia.db"
    crash_a_run(db)
    app = make_app(db)
    async with app.run_test(size=SIZES[size]) as pilot:
        await settle(pilot)
        if size == "80x24":
            await pilot.press("ctrl+b")  # the sessions pane over the conversation, focus in its list
        else:
            app.screen.query_one("#session-list").focus()
        await pilot.pause()
        assert app.focused is app.screen.query_one("#session-list")
        before = len(told(app))
        await pilot.press("ctrl+r")
        await settle(pilot)
        said = [n.message for n in told(app)[before:]]
        assert said == ["ctrl+r resumes the open session's run from the conversation; in the runs list, r / enter "
                        "resumes the run under the cursor."], said
        assert app.screen.chat.stream is None  # nothing resumed from here
        app.screen.chat.composer.focus()
        await pilot.pause()
        await pilot.press("ctrl+r")  # from the conversation it resumes, as ever
        await wait_for(pilot, lambda: app.screen.chat.stream is not None or app.screen.chat.running)


async def test_a_key_given_elsewhere_in_keys_is_left_to_its_binding_in_the_inspector(tmp_path):
    """The inspector answers o and e itself (no call waiting: it says so); one [keys] gave to the
    screen's export still exports from there."""
    db = tmp_path / "lovia.db"
    crash_a_run(db)
    agent, _ = counting_agent()
    app = make_app(db, agent=agent, keys={"main.export": ("o",)})
    async with app.run_test(size=(160, 45)) as pilot:
        await settle(pilot)
        await open_runs(pilot, (160, 45))
        await pilot.press("f6")
        await pilot.pause()
        await give(pilot, "e", "declined")  # the list goes: focus stays on the inspector
        inspector = app.screen.query_one("CheckpointInspector")
        assert app.focused is inspector
        before = len(told(app))
        await pilot.press("o")
        await settle(pilot)
        said = [n.message for n in told(app)[before:]]
        # The export ran (this session has nothing stored to export yet, and it says so).
        assert any(m.startswith("Nothing to export yet") for m in said), said
        assert not any("no tool call waiting" in m for m in said), said
