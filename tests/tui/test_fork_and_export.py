"""Fork (f in the transcript) and export (ctrl+s) in the real app on a real SQLite file, at 80x24 and full size."""

from __future__ import annotations

import asyncio
import json

import pytest

from lovia import Agent, AssistantMessage, ForkOrigin, SQLiteSession, ToolCall, ToolResult, UserMessage
from lovia.models import ScriptedModel, ScriptedTurn, call
from lovia.tui.screens.prompt import PromptScreen
from lovia.tui.widgets.chat_panel import ChatPanel
from lovia.tui.widgets.sessions_pane import SessionsPane
from tests.tui.conftest import make_app, settle, told, type_and_send, wait_for
from tests.tui.test_stop_and_continue import blocking_tool, stop_a_run
from tests.tui.test_streaming_speed import painted

SIZES = [(80, 24), (160, 45)]


async def two_runs(db) -> None:
    async with SQLiteSession(db, wal=True) as store:
        await store.append("s-source", [
            UserMessage(text="what time is it?"),
            ToolCall(call_id="c1", name="current_time", arguments="{}"),
            ToolResult(call_id="c1", name="current_time", output="12:00"),
            AssistantMessage(text="It is noon.", agent="assistant"),
        ], meta={"timing": {"started_at": 1000.0, "finished_at": 1002.0}})
        await store.append("s-source", [UserMessage(text="and in Tokyo?"),
                                        AssistantMessage(text="Nine in the evening.", agent="assistant")])


def notices(app) -> list[str]:
    return [n.message for n in told(app)]


async def select(pilot, ups: int) -> None:
    """The cursor ``ups`` messages up from the last message (focus puts it there)."""
    pilot.app.screen.query_one("#transcript").focus()
    await pilot.pause()
    for _ in range(ups):
        await pilot.press("up")
    await settle(pilot)


@pytest.mark.parametrize("size", SIZES)
async def test_f_forks_up_to_and_including_the_message_under_the_cursor(tmp_path, size, monkeypatch):
    db = tmp_path / "lovia.db"
    await two_runs(db)
    app = make_app(db)
    open_session = ChatPanel.open_session

    async def laid_out_before_it_returns(self, session_id):  # as a fork of a long session may be
        opened = await open_session(self, session_id)
        for _ in range(100):
            await asyncio.sleep(0.01)
            if any(view.virtual_region.height for view in self.transcript.views):
                break
        await asyncio.sleep(0.05)
        return opened

    monkeypatch.setattr(ChatPanel, "open_session", laid_out_before_it_returns)
    async with app.run_test(size=size) as pilot:
        await settle(pilot)
        chat = app.screen.query_one(ChatPanel)
        assert chat.session_id == "s-source"
        await select(pilot, 2)  # "It is noon.": the end of the first run
        await pilot.press("f")
        await settle(pilot)
        fork_id = chat.session_id
        assert fork_id != "s-source"
        assert app.focused is chat.composer  # ready to go on from there
        # No message under the transcript's cursor while the composer has focus: the fork's laying out
        # once raced focus leaving for the composer, and then selected its last message, or not.
        assert chat.transcript.selected_view is None
        chat.transcript.focus()
        await settle(pilot)
        assert chat.transcript.selected_view is chat.transcript.views[-1]  # focus back: the last message takes it
        title = str(chat.query_one("#chat-title").render())
        assert title.startswith("⑂ what time is it?") and "forked from “what time is it?” at entry 4" in title
        assert any("Forked: a new session with 4 entries" in n for n in notices(app))
        assert len(chat.transcript.views) == 3  # the user message, the tool call (with its result), the answer
        if size[0] >= 110:  # the sessions pane is shown beside the conversation: the fork is listed, marked
            pane = app.screen.query_one(SessionsPane)
            assert any(info.session_id == fork_id and info.title.startswith("⑂ ") for info in pane.listed)
    async with SQLiteSession(db) as store:
        fork = await store.segments(fork_id)
        assert [len(s.entries) for s in fork] == [4]
        origin = ForkOrigin.from_meta(fork[0].meta)
        assert origin is not None and (origin.session_id, origin.entries) == ("s-source", 4)
        assert fork[0].meta["timing"] == {"started_at": 1000.0, "finished_at": 1002.0}
        assert len(await store.load("s-source")) == 6  # the original is unchanged


async def test_forking_a_tool_call_takes_its_result_along(tmp_path):
    db = tmp_path / "lovia.db"
    await two_runs(db)
    app = make_app(db)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await select(pilot, 3)  # the tool call
        await pilot.press("f")
        await settle(pilot)
        fork_id = app.screen.query_one(ChatPanel).session_id
    async with SQLiteSession(db) as store:
        assert [e.type for e in await store.load(fork_id)] == ["user", "tool_call", "tool_result"]


async def test_a_message_this_window_streamed_is_forked_once_stored(tmp_path):
    db = tmp_path / "lovia.db"
    app = make_app(db)
    async with app.run_test(size=(80, 24)) as pilot:
        await type_and_send(pilot, "hello")
        await type_and_send(pilot, "what time is it")
        chat = app.screen.query_one(ChatPanel)
        source = chat.session_id
        await select(pilot, 3)  # the first answer (under the second message and its tool call), shown live
        await pilot.press("f")
        await settle(pilot)
        assert chat.session_id != source
        fork_id = chat.session_id
        # The fork goes on on its own: a message sent there does not reach the source.
        await type_and_send(pilot, "in the fork")
    async with SQLiteSession(db) as store:
        assert [getattr(e, "text", None) for e in await store.load(fork_id)][:3] == [
            "hello", (await store.load(source))[1].text, "in the fork"]
        assert len(await store.load(source)) > 3


async def test_f_on_nothing_selected_says_what_to_do(tmp_path):
    db = tmp_path / "lovia.db"
    await two_runs(db)
    app = make_app(db)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        transcript = app.screen.query_one("#transcript")
        transcript.focus()
        await pilot.pause()
        transcript.selected = -1  # none under the cursor, as after a run rebuilt the message it was on
        await pilot.press("f")
        await settle(pilot)
        assert app.screen.query_one(ChatPanel).session_id == "s-source"
        assert any("Select a message to fork from" in n for n in notices(app))


@pytest.mark.parametrize("size", SIZES)
async def test_f_on_a_stopped_runs_message_says_how_to_get_it_stored(tmp_path, size):
    """A stopped run is not in the session until it is resumed to its end or finalized: fork says
    so, and with which keys, rather than only "once its run is stored"."""
    slow, gate = blocking_tool()
    model = ScriptedModel([ScriptedTurn(text="Let me check.", tool_calls=[call("slow", {"seconds": 1}, call_id="c1")]),
                           ScriptedTurn(text="Done.")])
    db = tmp_path / "lovia.db"
    app = make_app(db, agent=Agent(name="assistant", tools=[slow], model=model))
    async with app.run_test(size=size, notifications=True) as pilot:
        await stop_a_run(pilot, gate)
        chat = app.screen.query_one(ChatPanel)
        source = chat.session_id
        await select(pilot, 2)  # the stopped run's answer (above its tool call and the stop notice)
        await pilot.press("f")
        await settle(pilot)
        assert chat.session_id == source
        said = " ".join(notices(app))
        assert "not in the session yet" in said and "resumed (ctrl+r)" in said and "finalized (f" in said, said


@pytest.mark.parametrize("size", SIZES)
async def test_ctrl_s_exports_the_open_session_to_the_file_named(tmp_path, monkeypatch, size):
    db = tmp_path / "lovia.db"
    await two_runs(db)
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    app = make_app(db)
    async with app.run_test(size=size, notifications=True) as pilot:
        await settle(pilot)
        await pilot.press("ctrl+s")
        await wait_for(pilot, lambda: isinstance(app.screen, PromptScreen))
        answer = app.screen.query_one("#answer")
        assert answer.value == str(work / "lovia-s-source.md")  # the current directory, named after the session
        await pilot.press("enter")
        await settle(pilot)
        assert (work / "lovia-s-source.md").read_text().startswith("# what time is it?")
        assert "Exported 2 runs (6 entries) to\n./lovia-s-source.md" in notices(app)
        # The path on a line of its own, whole: spelled out from / it was folded mid-name at 80 columns.
        await wait_for(pilot, lambda: bool(app.screen.query("Toast")))
        toast = app.screen.query("Toast").last()
        assert any("./lovia-s-source.md" in "".join(text for text, _ in row) for row in painted(app, toast.region))
        # Another name, typed: a .jsonl one writes JSON lines.
        await pilot.press("ctrl+s")
        await wait_for(pilot, lambda: isinstance(app.screen, PromptScreen))
        await pilot.press("ctrl+u", *"out.jsonl", "enter")
        await settle(pilot)
        lines = (work / "out.jsonl").read_text().splitlines()
        assert json.loads(lines[0])["record"] == "session" and len(lines) == 1 + 2 + 6
        # A directory that is not there: said, nothing written, the app stays.
        await pilot.press("ctrl+s")
        await wait_for(pilot, lambda: isinstance(app.screen, PromptScreen))
        await pilot.press("ctrl+u", *"nowhere/x.md", "enter")
        await settle(pilot)
        assert any("does not exist" in n for n in notices(app))
        assert sorted(p.name for p in work.iterdir()) == ["lovia-s-source.md", "out.jsonl"]


async def test_ctrl_s_on_a_new_session_says_there_is_nothing_yet(tmp_path):
    app = make_app(tmp_path / "lovia.db")
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("ctrl+s")
        await settle(pilot)
        assert not isinstance(app.screen, PromptScreen)
        assert any("Nothing to export yet" in n for n in notices(app))


async def test_fork_and_export_are_in_the_command_palette(tmp_path):
    db = tmp_path / "lovia.db"
    await two_runs(db)
    app = make_app(db)
    async with app.run_test(size=(160, 45)) as pilot:
        await settle(pilot)
        await select(pilot, 1)
        titles = [command.title for command in app.get_system_commands(app.screen)]
        assert "Fork from selected message" in titles and "Export session" in titles


async def test_a_store_without_fork_hides_it_and_export_still_works(tmp_path, monkeypatch):
    """The four methods of the spec only: f does nothing and the palette offers no fork; ctrl+s exports."""
    from tests.tui.test_custom_sessions import FourMethodSession

    store = FourMethodSession()
    await store.append("s-plain", [UserMessage(text="hi"), AssistantMessage(text="hello", agent="assistant")])
    monkeypatch.chdir(tmp_path)
    app = make_app(tmp_path / "lovia.db", session=store)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        chat = app.screen.query_one(ChatPanel)
        await chat.open_session("s-plain")
        await select(pilot, 1)
        assert not chat.transcript.check_action("fork", ())
        await pilot.press("f")
        await settle(pilot)
        assert chat.session_id == "s-plain" and list(store.stored) == ["s-plain"]
        assert "Fork from selected message" not in [c.title for c in app.get_system_commands(app.screen)]
        await pilot.press("ctrl+s")
        await wait_for(pilot, lambda: isinstance(app.screen, PromptScreen))
        await pilot.press("enter")
        await settle(pilot)
        text = (tmp_path / "lovia-s-plain.md").read_text()
        assert "\nhi\n" in text and "\nhello\n" in text


async def test_a_fork_at_your_message_says_how_to_get_it_answered(tmp_path):
    db = tmp_path / "lovia.db"
    await two_runs(db)
    app = make_app(db)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await select(pilot, 1)  # "and in Tokyo?"
        await pilot.press("f")
        await settle(pilot)
        chat = app.screen.query_one(ChatPanel)
        fork_id = chat.session_id
        assert any("It ends with your message: ctrl+g gets it an answer." in n for n in notices(app))
        await pilot.press("ctrl+g")
        await settle(pilot)
    async with SQLiteSession(db) as store:
        entries = await store.load(fork_id)
        assert [e.type for e in entries] == ["user", "tool_call", "tool_result", "assistant", "user", "assistant"]
        assert entries[4].text == "and in Tokyo?"
        assert len(await store.load("s-source")) == 6


async def test_exporting_a_session_whose_only_run_did_not_finish_says_what_to_do_first(tmp_path):
    """It asked for a file name, then said "no session 's-…' in this store", of a session listed and open."""
    from lovia import SQLiteCheckpointer
    from lovia.checkpoint import RunHead, RunSnapshot

    db = tmp_path / "lovia.db"
    async with SQLiteCheckpointer(db, wal=True) as checkpointer:
        head = RunHead(agent="assistant", status="interrupted", session_id="s-only", first_input="go")
        await checkpointer.save(RunSnapshot("run-only", head, [UserMessage(text="go")]))
    app = make_app(db)
    async with app.run_test(size=(80, 24), notifications=True) as pilot:
        await settle(pilot)
        await app.screen.open_session("s-only")
        await settle(pilot)
        assert app.screen.chat.transcript.run_ids == {"run-only"}
        await pilot.press("ctrl+s")
        await settle(pilot)
        assert not isinstance(app.screen, PromptScreen)
        assert ("Nothing to export yet: this session's run did not finish, and only what is stored is exported. "
                "Resume it (ctrl+r) or finalize it in the runs list (f) first.") in [t.message for t in told(app)]


async def test_exporting_while_a_new_sessions_first_answer_runs_says_to_wait_for_it(tmp_path):
    """It said the run "did not finish" and to resume it: resume refuses a run that is running."""
    from tests.tui.test_run_status import HeldModel

    model = HeldModel(["hi"])
    app = make_app(tmp_path / "lovia.db", model=model)
    async with app.run_test(size=(80, 24), notifications=True) as pilot:
        await settle(pilot)
        app.screen.query_one("#composer").focus()
        await pilot.press(*"hello", "enter")
        await wait_for(pilot, lambda: app.screen.chat.running)
        await pilot.press("ctrl+s")
        await wait_for(pilot, lambda: any("still running" in t.message for t in told(app)))
        assert not isinstance(app.screen, PromptScreen)
        model.go.set()
        await wait_for(pilot, lambda: not app.screen.chat.running)
