"""Stop and continue as chat apps do, and every session with a run listed (issue 8, items 2 and 4).

The real app over a real SQLite file; runs held by another process are held by a real one.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time

import pytest
from rich.console import Console

from lovia import (
    Agent,
    AssistantMessage,
    ModelError,
    RunHead,
    RunOwner,
    RunSnapshot,
    SQLiteCheckpointer,
    SQLiteSession,
    ToolCall,
    UserMessage,
    tool,
)
from lovia.errors import RunClaimedError
from lovia.models import DemoModel, ScriptedModel, ScriptedTurn, call
from lovia.tui.backend import ChatBackend, RunsNeedDecision, SessionListing
from lovia.tui.screens.choice import ChoiceScreen
from lovia.tui.widgets.footer import LoviaFooter
from lovia.tui.widgets.run_header import RunHeader
from tests.tui.conftest import make_app, settle, told, type_and_send, wait_for
from lovia.export import code_span_closer
from tests.tui.test_streaming_speed import painted


def plain(renderable) -> str:
    console = Console(width=200, record=True, file=open("/dev/null", "w"))  # noqa: SIM115
    console.print(renderable)
    return console.export_text()


def blocking_tool():
    """A tool that blocks the first time it runs (until the run is stopped), and the event it sets."""
    gate = asyncio.Event()

    @tool
    async def slow(seconds: float) -> str:
        """Slow."""
        if not gate.is_set():
            gate.set()
            await asyncio.sleep(3600)
        return "finished"

    return slow, gate


async def segments_of(db, session_id: str):
    async with SQLiteSession(db, wal=True) as session:
        return await session.segments(session_id)


async def stop_a_run(pilot, gate, text: str = "go slow") -> None:
    await type_and_send_no_settle(pilot, text)
    await wait_for(pilot, gate.is_set)
    await pilot.press("escape")
    await settle(pilot)


async def type_and_send_no_settle(pilot, text: str) -> None:
    pilot.app.screen.query_one("#composer").focus()
    await pilot.pause()
    await pilot.press(*text, "enter")


@pytest.mark.parametrize("size", [(160, 45), (80, 24)])
async def test_the_next_message_after_a_stop_first_records_the_stopped_run_as_partial(tmp_path, size):
    slow, gate = blocking_tool()
    model = ScriptedModel([ScriptedTurn(text="Let me check.", tool_calls=[call("slow", {"seconds": 1}, call_id="c1")]),
                           "the second answer"])
    db = tmp_path / "lovia.db"
    app = make_app(db, agent=Agent(name="assistant", model=model, tools=[slow]))
    async with app.run_test(size=size) as pilot:
        await stop_a_run(pilot, gate)
        chat = app.screen.chat
        assert [r.head.status for r in app.screen.query_one("RunsPane").runs] == ["interrupted"]

        await type_and_send(pilot, "and now?")
        stopped, new = await segments_of(db, chat.session_id)
        # The stopped run comes first, tool-consistent (the call without a result is dropped), marked.
        assert [e.type for e in stopped.entries] == ["user", "assistant"]
        assert stopped.entries[0].text == "go slow" and stopped.entries[1].text == "Let me check."
        assert stopped.meta["partial"] is True and stopped.meta["ended"] == "stopped"
        assert stopped.meta["agent"] == "assistant"
        assert set(stopped.meta["timing"]) == {"started_at", "finished_at"}
        assert [e.text for e in new.entries] == ["and now?", "the second answer"]
        # The model saw the stopped question and its partial answer, in order.
        assert [getattr(m, "text", None) for m in model.requests[1].messages] == [
            "go slow", "Let me check.", "and now?"]
        # Nothing is left to resume, and the transcript shows the partial marked as stopped.
        assert app.screen.query_one("RunsPane").runs == []
        headers = {h.run_id: plain(h.render()) for h in chat.transcript.query(RunHeader)}
        assert "stopped" in headers[stopped.run_id]
        data = await app.backend.transcript(chat.session_id)
        assert [(r.partial, r.ended) for r in data.runs] == [(True, "stopped"), (False, None)]
        assert chat.hidden_in_footer("resume")  # nothing to resume: ctrl+r is not offered
        assert "resume" not in {entry.action for entry in app.screen.query_one(LoviaFooter).entries}
        await pilot.press("ctrl+r")  # pressed all the same, it says so (it was silent)
        await settle(pilot)
        assert "This session has no interrupted run to resume." in [t.message for t in told(app)]
        assert len(await segments_of(db, chat.session_id)) == 2
        await pilot.press("ctrl+n")  # a new session, not stored yet: the same
        await settle(pilot)
        told(app).clear()
        app.clear_notifications()
        await pilot.press("ctrl+r")
        await settle(pilot)
        assert "This session has no interrupted run to resume." in [t.message for t in told(app)]


async def test_a_stopped_run_stays_resumable_until_the_next_message(tmp_path):
    slow, gate = blocking_tool()
    model = ScriptedModel([ScriptedTurn(tool_calls=[call("slow", {"seconds": 1}, call_id="c1")]), "done now"])
    db = tmp_path / "lovia.db"
    app = make_app(db, agent=Agent(name="assistant", model=model, tools=[slow]))
    async with app.run_test(size=(160, 45)) as pilot:
        await stop_a_run(pilot, gate)
        await pilot.press("ctrl+r")
        await settle(pilot)
        [segment] = await segments_of(db, app.screen.chat.session_id)
        assert "partial" not in segment.meta and segment.entries[-1].text == "done now"


def failing_then(*answers: str) -> ScriptedModel:
    return ScriptedModel([ScriptedTurn(text="half an ans", error=ModelError("endpoint died mid-stream"),
                                       fail_after=1), *answers])


async def fail_first_message(pilot, text: str = "hello") -> None:
    await type_and_send(pilot, text)
    assert [r.head.status for r in pilot.app.screen.query_one("RunsPane").runs] == ["failed"]


@pytest.mark.parametrize("size", [(160, 45), (80, 24)])
async def test_sending_after_a_failed_run_asks_and_keep_records_it_as_partial(tmp_path, size):
    db = tmp_path / "lovia.db"
    model = failing_then("second answer")
    app = make_app(db, model=model)
    async with app.run_test(size=size) as pilot:
        await fail_first_message(pilot)
        chat = app.screen.chat
        await type_and_send_no_settle(pilot, "next")
        await wait_for(pilot, lambda: isinstance(app.screen, ChoiceScreen))
        assert "failed" in str(app.screen.question) and "Keep as partial" in str(app.screen.question)
        await pilot.press("k")
        await settle(pilot)
        failed, new = await segments_of(db, chat.session_id)
        assert failed.meta["partial"] is True and failed.meta["ended"] == "failed"
        # What streamed before the endpoint died is kept, marked as cut off.
        assert [e.text for e in failed.entries] == ["hello", "half an "]
        assert failed.entries[-1].finish_reason == "cut_off"
        assert [e.text for e in new.entries] == ["next", "second answer"]
        assert chat.composer.text == ""
        assert app.screen.query_one("RunsPane").runs == []


async def test_sending_after_a_failed_run_can_discard_it_resume_it_or_do_nothing(tmp_path):
    db = tmp_path / "lovia.db"
    app = make_app(db, model=failing_then("the retried answer", "after discard"))
    async with app.run_test(size=(160, 45)) as pilot:
        await fail_first_message(pilot)
        chat = app.screen.chat
        # escape: nothing is sent, nothing changes, the message waits in the composer
        await type_and_send_no_settle(pilot, "next")
        await wait_for(pilot, lambda: isinstance(app.screen, ChoiceScreen))
        await pilot.press("escape")
        await settle(pilot)
        assert chat.composer.text == "next" and await segments_of(db, chat.session_id) == []
        assert [r.head.status for r in app.screen.query_one("RunsPane").runs] == ["failed"]
        # resume: the failed run goes on; the message still waits
        await pilot.press("enter")
        await wait_for(pilot, lambda: isinstance(app.screen, ChoiceScreen))
        await pilot.press("r")
        await settle(pilot)
        [resumed] = await segments_of(db, chat.session_id)
        assert [e.text for e in resumed.entries] == ["hello", "the retried answer"]
        assert chat.composer.text == "next"

    db2 = tmp_path / "other.db"
    app = make_app(db2, model=failing_then("after discard"))
    async with app.run_test(size=(160, 45)) as pilot:
        await fail_first_message(pilot)
        chat = app.screen.chat
        await type_and_send_no_settle(pilot, "next")
        await wait_for(pilot, lambda: isinstance(app.screen, ChoiceScreen))
        await pilot.press("d")
        await settle(pilot)
        [only] = await segments_of(db2, chat.session_id)
        assert [e.text for e in only.entries] == ["next", "after discard"]
        async with SQLiteCheckpointer(db2, wal=True) as checkpointer:
            assert [r.head.status for r in await checkpointer.list_runs()] == ["completed"]


def other_process() -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", "import time; time.sleep(3600)"])


def owner_of(pid: int) -> RunOwner:
    """The owner of a run executed by process ``pid`` on this machine."""
    here = RunOwner.current()
    return RunOwner(host=here.host, pid=pid, boot_id=here.boot_id, pid_ns=here.pid_ns)


def a_dead_owner() -> RunOwner:
    child = other_process()
    child.kill()
    child.wait()
    return owner_of(child.pid)


async def store_in_flight(db, run_id: str, session_id: str, text: str, *, status="interrupted",
                          owner: RunOwner | None = None, lease_until: float | None = None,
                          started_at: float | None = None) -> None:
    async with SQLiteCheckpointer(db, wal=True) as checkpointer:
        head = RunHead(agent="assistant", status=status, turn=1, session_id=session_id, first_input=text,
                       owner=owner, claim=f"token-{run_id}" if owner else None, lease_until=lease_until,
                       started_at=started_at or time.time(), updated_at=started_at or time.time())
        await checkpointer.save(RunSnapshot(run_id, head, [
            UserMessage(text=text), AssistantMessage(text="working on it"),
            ToolCall(call_id=f"c-{run_id}", name="wait", arguments='{"seconds": 60}')]))


async def test_a_run_executing_in_another_process_refuses_sending_with_who_runs_it(tmp_path):
    db = tmp_path / "lovia.db"
    process = other_process()
    try:
        owner = owner_of(process.pid)
        async with SQLiteSession(db, wal=True) as session:
            await session.append("s-a", [UserMessage(text="earlier"), AssistantMessage(text="ok")], run_id="old")
        await store_in_flight(db, "run-there", "s-a", "long job", status="running", owner=owner,
                              lease_until=time.time() + 3600)
        app = make_app(db, model=ScriptedModel(["never"]))
        async with app.run_test(size=(160, 45)) as pilot:
            await pilot.pause()
            assert app.screen.chat.session_id == "s-a"
            await type_and_send(pilot, "hurry up")
            assert any(f"being executed by process {process.pid}" in n.message and "wait for it to finish"
                       in n.message for n in told(app))
            assert app.screen.chat.composer.text == "hurry up"  # nothing was sent
            assert [s.run_id for s in await segments_of(db, "s-a")] == ["old"]
    finally:
        process.kill()
        process.wait()


async def test_backend_send_settles_oldest_first_and_refuses_before_changing_anything(tmp_path):
    db = tmp_path / "lovia.db"
    async with SQLiteSession(db, wal=True) as session, SQLiteCheckpointer(db, wal=True) as checkpointer:
        backend = ChatBackend(session, checkpointer, Agent(name="assistant", model=ScriptedModel(["fine"])))
        now = time.time()
        await store_in_flight(db, "run-stopped", "s-a", "first", started_at=now - 20)
        await store_in_flight(db, "run-dead", "s-a", "second", status="running",
                              owner=RunOwner(host="gone-host", pid=1, started=1), lease_until=now - 60,
                              started_at=now - 10)
        with pytest.raises(RunsNeedDecision) as refused:
            await backend.send("s-a", "third")
        assert [r.run_id for r in refused.value.runs] == ["run-dead"] and "crashed" in str(refused.value)
        assert await session.segments("s-a") == []  # the stopped one was not finalized either
        started = await backend.send("s-a", "third", settle="keep")
        assert started.settled == ("run-stopped", "run-dead")
        async for _ in started.stream:
            pass
        segments = await session.segments("s-a")
        assert [s.run_id for s in segments[:2]] == ["run-stopped", "run-dead"]
        assert [(s.meta["ended"], [e.type for e in s.entries]) for s in segments[:2]] == [
            ("stopped", ["user", "assistant"]), ("crashed", ["user", "assistant"])]
        assert await checkpointer.load("run-stopped") is None and await checkpointer.load("run-dead") is None


async def test_backend_finalize_takes_the_run_so_another_process_cannot_resume_it_meanwhile(tmp_path):
    """A run another process took (it resumes it) between the listing and the finalize is refused, not raced."""
    db = tmp_path / "lovia.db"
    process = other_process()
    try:
        async with SQLiteSession(db, wal=True) as session, SQLiteCheckpointer(db, wal=True) as checkpointer:
            backend = ChatBackend(session, checkpointer, Agent(name="assistant", model=DemoModel()))
            await store_in_flight(db, "run-x", "s-a", "first")
            listed = await backend._in_flight("s-a")
            await checkpointer.claim("run-x", owner_of(process.pid), token="theirs", lease_seconds=3600)
            with pytest.raises(RunClaimedError):
                await backend._settle(listed, None)
            assert await session.segments("s-a") == []
            assert (await checkpointer.load("run-x")).head.claim == "theirs"
    finally:
        process.kill()
        process.wait()


# -- item 4: every session with a run is listed -----------------------------------------------------------


async def test_a_session_whose_only_run_failed_is_listed_and_marked(tmp_path):
    db = tmp_path / "lovia.db"
    app = make_app(db, model=failing_then())
    async with app.run_test(size=(160, 45)) as pilot:
        await fail_first_message(pilot, "plan the launch")
        pane = app.screen.query_one("SessionsPane")
        [listed] = pane.sessions
        assert (listed.session_id, listed.title, listed.state) == (app.screen.chat.session_id, "plan the launch",
                                                                   "failed")
        options = app.screen.query_one("#session-list")
        assert "plan the launch" in plain(options.get_option_at_index(0).prompt)
        assert "failed" in plain(options.get_option_at_index(0).prompt)
        assert "no finished run yet" in plain(options.get_option_at_index(0).prompt)
        assert "0 entries" not in plain(options.get_option_at_index(0).prompt)
        # The filter applies to it too.
        app.screen.query_one("#session-filter").value = "launch"
        await settle(pilot)
        assert [s.title for s in pane.sessions] == ["plan the launch"]
        app.screen.query_one("#session-filter").value = "groceries"
        await settle(pilot)
        assert pane.sessions == []


async def test_sessions_lists_sessions_known_only_to_the_checkpointer_with_their_state(tmp_path):
    db = tmp_path / "lovia.db"
    process = other_process()
    try:
        now = time.time()
        async with SQLiteSession(db, wal=True) as session:
            await session.append("s-stored", [UserMessage(text="stored talk"), AssistantMessage(text="ok")])
        await store_in_flight(db, "run-stopped", "s-stopped", "stopped talk", started_at=now - 30)
        await store_in_flight(db, "run-crashed", "s-crashed", "crashed talk", status="running",
                              owner=a_dead_owner(),
                              lease_until=now + 3600, started_at=now - 20)
        await store_in_flight(db, "run-there", "s-there", "elsewhere talk", status="running",
                              owner=owner_of(process.pid),
                              lease_until=now + 3600, started_at=now - 10)
        await store_in_flight(db, "run-stored-stopped", "s-stored", "more", started_at=now - 5)
        async with SQLiteSession(db, wal=True) as session, SQLiteCheckpointer(db, wal=True) as checkpointer:
            backend = ChatBackend(session, checkpointer, Agent(name="assistant", model=DemoModel()))
            listed = await backend.sessions()
            assert all(isinstance(s, SessionListing) for s in listed)
            assert [(s.session_id, s.title, s.state) for s in listed] == [
                ("s-stored", "stored talk", "interrupted"), ("s-there", "elsewhere talk", "elsewhere"),
                ("s-crashed", "crashed talk", "crashed"), ("s-stopped", "stopped talk", "interrupted")]
            assert [s.session_id for s in await backend.sessions("TALK")] == [
                "s-stored", "s-there", "s-crashed", "s-stopped"]
            assert [s.session_id for s in await backend.sessions("crash")] == ["s-crashed"]
            # a stored session the query leaves out is not listed as unknown either
            assert [s.session_id for s in await backend.sessions("stopped")] == ["s-stopped"]
    finally:
        process.kill()
        process.wait()


async def test_resume_in_the_question_takes_the_oldest_unfinished_run_first(tmp_path):
    """Its answer then lands before the later run is settled, so the conversation keeps its order."""
    db = tmp_path / "lovia.db"
    now = time.time()
    dead = a_dead_owner()
    async with SQLiteSession(db, wal=True) as session:
        await session.append("s-x", [UserMessage(text="earlier"), AssistantMessage(text="ok")], run_id="old")
    async with SQLiteCheckpointer(db, wal=True) as checkpointer:
        for run_id, text, fields in [
            ("run-older", "first job", {"status": "running", "owner": dead, "claim": "t", "lease_until": now + 3600,
                                        "started_at": now - 20}),
            ("run-newer", "second job", {"status": "failed", "started_at": now - 10})]:
            head = RunHead(agent="assistant", session_id="s-x", first_input=text, **fields)
            await checkpointer.save(RunSnapshot(run_id, head, [UserMessage(text=text)]))
    app = make_app(db, model=ScriptedModel(["waited"]))
    async with app.run_test(size=(160, 45)) as pilot:
        await settle(pilot)
        await app.screen.open_session("s-x")
        await type_and_send_no_settle(pilot, "next")
        await wait_for(pilot, lambda: isinstance(app.screen, ChoiceScreen))
        await pilot.press("r")
        await settle(pilot)
        stored = [segment.run_id for segment in await segments_of(db, "s-x")]
        assert stored == ["old", "run-older"]
        assert [r.run_id for r in app.screen.query_one("RunsPane").runs] == ["run-newer"]


@pytest.mark.parametrize("size", [(160, 45), (80, 24)])
async def test_a_stop_mid_answer_keeps_the_text_that_streamed_when_the_next_message_is_sent(tmp_path, size):
    answer = "The first words of a long answer that the user stops before it ends, for good."
    model = ScriptedModel([ScriptedTurn(text=answer, chunk_chars=6, delay=0.1), "the second answer"])
    db = tmp_path / "lovia.db"
    app = make_app(db, agent=Agent(name="assistant", model=model))
    async with app.run_test(size=size) as pilot:
        from lovia.tui.widgets.assistant_message import AssistantMessageView

        chat = app.screen.chat
        await type_and_send_no_settle(pilot, "tell me")
        await wait_for(pilot, lambda: any(len(v.text) >= 12 for v in chat.transcript.query(AssistantMessageView)))
        await pilot.press("escape")
        await settle(pilot)
        [shown] = [v.text for v in chat.transcript.query(AssistantMessageView)]
        assert shown and answer.startswith(shown) and shown != answer

        await type_and_send(pilot, "and now?")
        stopped, new = await segments_of(db, chat.session_id)
        assert [e.type for e in stopped.entries] == ["user", "assistant"]
        kept = stopped.entries[1]
        assert kept.text == shown and kept.finish_reason == "cut_off"  # what the user saw, marked as cut off
        assert [getattr(m, "text", None) for m in model.requests[1].messages] == ["tell me", shown, "and now?"]
        views = list(chat.transcript.query(AssistantMessageView))
        assert [v.text for v in views] == [shown, "the second answer"]  # once, not twice
        assert views[0].finish_reason == "cut_off"
        assert "cut off" in plain(views[0].query_one(".finish").render())


async def test_a_stopped_answer_shows_cut_off_live_and_reopened_and_a_resume_shows_only_the_new_answer(tmp_path):
    answer = "The first words of a long answer that the user stops before it ends, for good."
    model = ScriptedModel([ScriptedTurn(text=answer, chunk_chars=6, delay=0.1), "Whole answer."])
    db = tmp_path / "lovia.db"
    app = make_app(db, agent=Agent(name="assistant", model=model))
    async with app.run_test(size=(160, 45)) as pilot:
        from lovia.tui.widgets.assistant_message import AssistantMessageView

        chat = app.screen.chat
        await type_and_send_no_settle(pilot, "tell me")
        await wait_for(pilot, lambda: any(len(v.text) >= 12 for v in chat.transcript.query(AssistantMessageView)))
        await pilot.press("escape")
        await settle(pilot)
        [live] = chat.transcript.query(AssistantMessageView)
        shown = live.text
        assert live.finish_reason == "cut_off"  # said at once, as the reopened transcript says it
        assert "cut off" in plain(live.query_one(".finish").render())
        await chat.open_session(chat.session_id)  # reopened: the stopped run comes from its checkpoint
        await settle(pilot)
        views = list(chat.transcript.query(AssistantMessageView))
        assert [(v.text, v.finish_reason) for v in views] == [(shown, "cut_off")]

        await pilot.press("ctrl+r")
        await wait_for(pilot, lambda: not chat.running and app.screen.query_one("RunsPane").runs == [])
        await settle(pilot)
        assert [v.text for v in chat.transcript.query(AssistantMessageView)] == ["Whole answer."]
        [segment] = await segments_of(db, chat.session_id)
        assert [e.text for e in segment.entries] == ["tell me", "Whole answer."]


@pytest.mark.parametrize("size", [(80, 24), (160, 45)])
async def test_an_answer_stopped_inside_inline_code_shows_the_code_without_a_stray_backtick(tmp_path, size):
    """A new user's trial: an answer cut off while it wrote inline code ended on its opening
    backtick, shown as text (``• `calculate (12 + 30) *``), live, reopened and in the export."""
    # The span is long: the stop lands inside it (two seconds of it stream after "calculate").
    answer = "Run `calculate_the_total_of_every_invoice_in_the_archive_since_the_year_began(12, 30, 8)` and more."
    model = ScriptedModel([ScriptedTurn(text=answer, chunk_chars=4, delay=0.1)])
    app = make_app(tmp_path / "lovia.db", agent=Agent(name="assistant", model=model))
    async with app.run_test(size=size) as pilot:
        from lovia.tui.widgets.assistant_message import AssistantMessageView

        chat = app.screen.chat
        await type_and_send_no_settle(pilot, "tell me")
        await wait_for(pilot, lambda: any("calculate" in v.text for v in chat.transcript.query(AssistantMessageView)))
        await pilot.press("escape")
        await settle(pilot)
        [live] = chat.transcript.query(AssistantMessageView)
        assert code_span_closer(live.text) == "`" and live.finish_reason == "cut_off"  # stopped inside the span

        def conversation() -> str:  # what the transcript shows (the runs pane quotes the answer's start as text)
            return "\n".join("".join(text for text, _ in row) for row in painted(app, chat.transcript.region))

        await wait_for(pilot, lambda: "calculate" in conversation())
        assert "`calculate" not in conversation()  # the code, as code
        await chat.open_session(chat.session_id)  # reopened: from the stopped run's checkpoint
        await settle(pilot)
        await wait_for(pilot, lambda: "calculate" in conversation())
        assert "`calculate" not in conversation()
        [view] = chat.transcript.query(AssistantMessageView)
        assert view.text == live.text and view.copy_text() == live.text  # kept and copied as the model wrote it


async def test_sending_with_two_runs_not_finished_asks_about_them_all_and_says_resume_takes_the_oldest(tmp_path):
    """It asked about "a run" (one start time, "Resume it") while keep and discard settle every run."""
    db = tmp_path / "lovia.db"
    app = make_app(db, model=failing_then("second answer"))
    async with app.run_test(size=(80, 24)) as pilot:
        await fail_first_message(pilot)
        chat = app.screen.chat
        async with SQLiteCheckpointer(db, wal=True) as checkpointer:  # a second one, failed later
            await checkpointer.save(RunSnapshot("r-later", RunHead(
                agent="assistant", status="failed", session_id=chat.session_id, first_input="later",
                started_at=time.time() + 1, error="ModelError: refused"), [UserMessage(text="later")]))
        await type_and_send_no_settle(pilot, "next")
        await wait_for(pilot, lambda: isinstance(app.screen, ChoiceScreen))
        question = str(app.screen.question)
        assert "2 runs that did not finish, the oldest started " in question
        assert "• Resume the oldest:" in question and "• Discard them:" in question
        await pilot.press("k")
        await settle(pilot)
        kept = await segments_of(db, chat.session_id)
        assert [s.meta.get("partial") for s in kept] == [True, True, None]  # each kept, then the message


@pytest.mark.parametrize("size", [(80, 24), (160, 45)])
async def test_the_question_before_sending_names_a_stopped_run_that_sending_keeps_too(tmp_path, size):
    """A new user's trial: a session with a stopped run and crashed ones asked about the crashed
    ones only; after "Keep as partial" the stopped run was in the conversation too, unannounced."""
    from screenshots.demo_data import build, build_stopped_runs

    db = tmp_path / "lovia.db"
    await build(db)
    await build_stopped_runs(db)  # s-atlas: a stopped run, then two crashed ones
    app = make_app(db)
    async with app.run_test(size=size) as pilot:
        await settle(pilot)
        await app.screen.open_session("s-atlas")
        await settle(pilot)
        await type_and_send_no_settle(pilot, "hi")
        await wait_for(pilot, lambda: isinstance(app.screen, ChoiceScreen))
        question = app.screen.question
        assert "2 runs that did not finish" in question
        assert "the stopped run started 2026-12-02 12:05" in question and "joins the conversation" in question
        await pilot.press("d")  # discard the crashed ones: the stopped one is kept, as said
        await settle(pilot)
    segments = await segments_of(db, "s-atlas")
    assert [(s.run_id, s.meta.get("ended")) for s in segments[-2:]][0] == ("run-demo-interrupted", "stopped")
    assert "run-demo-tools" not in {s.run_id for s in segments}  # discarded


@pytest.mark.parametrize("size", [(160, 45), (80, 24)])
async def test_a_run_stopped_from_the_runs_list_comes_under_its_cursor(tmp_path, size):
    """Focused while its run ran here, the list said "Nothing to resume."; once escape stopped the run,
    it was listed with no cursor: the footer lost the list's keys, as if nothing had focus."""
    slow, gate = blocking_tool()
    model = ScriptedModel([ScriptedTurn(text="Let me check.", tool_calls=[call("slow", {"seconds": 1}, call_id="c1")]),
                           "the answer"])
    app = make_app(tmp_path / "lovia.db", agent=Agent(name="assistant", model=model, tools=[slow]))
    async with app.run_test(size=size) as pilot:
        await type_and_send_no_settle(pilot, "go slow")
        await wait_for(pilot, gate.is_set)
        run_list = app.screen.query_one("#run-list")
        if size == (80, 24):
            await pilot.press("ctrl+o")
        else:
            run_list.focus()
        await pilot.pause()
        assert app.focused is run_list and run_list.highlighted is None  # nothing to resume while it runs
        await pilot.press("escape")
        await settle(pilot)
        await wait_for(pilot, lambda: run_list.option_count == 1 and run_list.get_option_at_index(0).id)
        assert app.focused is run_list and run_list.highlighted == 0
        shown = [entry.action for entry in app.screen.query_one(LoviaFooter).entries]
        assert "act('resume')" in shown, shown
