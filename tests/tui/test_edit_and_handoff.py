"""Editing and regenerating act on the right message; handoffs carry over (issue 8, items 5 and 7).

The real app over a real SQLite file, driven by Textual's pilot.
"""

from __future__ import annotations

import pytest
from textual import events

from lovia import Agent, AssistantMessage, RunHead, RunSnapshot, SQLiteCheckpointer, SQLiteSession, ToolCall, ToolResult, UserMessage
from lovia.models import ScriptedModel, ScriptedTurn, call
from lovia.tui.backend import ChatBackend
from lovia.tui.screens.confirm import ConfirmScreen
from lovia.tui.widgets.user_message import UserMessageView
from tests.tui.conftest import burst, make_app, settle, type_and_send, wait_for
from tests.tui.test_stop_and_continue import blocking_tool, fail_first_message, failing_then, stop_a_run


async def send_first_and_second(pilot) -> None:
    """The two messages most tests here start from, each sent and answered."""
    await type_and_send(pilot, "first")
    await type_and_send(pilot, "second")


async def stored_texts(db, session_id: str) -> list[str | None]:
    async with SQLiteSession(db, wal=True) as session:
        return [getattr(e, "text", None) for e in await session.load(session_id)]


def footer_keys(app) -> dict[str, str]:
    return {key: active.binding.description for key, active in app.screen.active_bindings.items()}


@pytest.mark.parametrize("size", [(160, 45), (80, 24)])
async def test_edit_last_puts_the_cursor_at_the_end_and_escape_gives_the_draft_back(tmp_path, size):
    db = tmp_path / "lovia.db"
    app = make_app(db, model=ScriptedModel(["one", "never asked"]))
    async with app.run_test(size=size) as pilot:
        await type_and_send(pilot, "first question")
        chat = app.screen.chat
        await pilot.press(*"half a draft")
        await pilot.press("ctrl+l")
        await pilot.pause()
        composer = chat.composer
        assert chat.has_class("-editing") and composer.text == "first question"
        assert composer.cursor_location == composer.document.end
        keys = footer_keys(app)
        assert keys["enter"] == "Resend" and keys["escape"] == "Cancel edit"
        await pilot.press("escape")
        await pilot.pause()
        assert not chat.has_class("-editing")
        assert composer.text == "half a draft" and composer.cursor_location == composer.document.end
        keys = footer_keys(app)
        assert keys["enter"] == "Send" and keys.get("escape") != "Stop"
        # enter now sends the draft as a new message, not the old text again
        await pilot.press("enter")
        await settle(pilot)
        assert await stored_texts(db, chat.session_id) == ["first question", "one", "half a draft", "never asked"]


async def test_a_draft_comes_back_after_the_edit_is_sent(tmp_path):
    db = tmp_path / "lovia.db"
    app = make_app(db, model=ScriptedModel(["one", "edited reply"]))
    async with app.run_test(size=(160, 45)) as pilot:
        await type_and_send(pilot, "first")
        chat = app.screen.chat
        await pilot.press(*"my draft")
        await pilot.press("ctrl+l")
        await pilot.pause()
        await pilot.press(*", edited", "enter")  # typed at the end, where the cursor is
        await settle(pilot)
        assert await stored_texts(db, chat.session_id) == ["first, edited", "edited reply"]
        assert chat.composer.text == "my draft" and not chat.has_class("-editing")


@pytest.mark.parametrize("size", [(80, 24), (160, 45)])
async def test_editing_an_older_message_starts_at_once_says_what_it_drops_and_u_undoes_it(tmp_path, size):
    """A new user's trial: ``e`` on an earlier message asked first ("Edit this earlier message?"),
    and the letters typed right after it answered the question (the n of "only" cancelled) and ran
    as the conversation's keys. Where the resend can be undone, the edit starts at once, as
    regenerate does, with the keys typed after ``e`` in it; its line says what enter drops."""
    db = tmp_path / "lovia.db"
    app = make_app(db, model=ScriptedModel(["one", "two", "three", "edited reply"]))
    async with app.run_test(size=size) as pilot:
        for text in ("first", "second", "third"):
            await type_and_send(pilot, text)
        chat = app.screen.chat
        chat.transcript.focus()
        await pilot.press("home")  # the cursor on "first"
        assert isinstance(chat.transcript.selected_view, UserMessageView)
        burst(app, "e only this")
        await wait_for(pilot, lambda: chat.has_class("-editing") and chat.composer.text == "first only this")
        assert not isinstance(app.screen, ConfirmScreen)
        line = str(chat.query_one("#editing").render())
        assert "its answer and the 2 runs after it (u in the conversation undoes that)" in line
        await pilot.press("enter")
        await settle(pilot)
        assert await stored_texts(db, chat.session_id) == ["first only this", "edited reply"]
        chat.transcript.focus()
        await pilot.press("u")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen))
        await pilot.press("y")
        await settle(pilot)
        assert await stored_texts(db, chat.session_id) == ["first", "one", "second", "two", "third", "three"]


async def test_the_last_message_needs_no_confirmation(tmp_path):
    app = make_app(tmp_path / "lovia.db", model=ScriptedModel(["one", "two"]))
    async with app.run_test(size=(160, 45)) as pilot:
        await send_first_and_second(pilot)
        chat = app.screen.chat
        chat.transcript.focus()
        await pilot.press("end", "up", "e")
        await pilot.pause()
        assert chat.has_class("-editing") and chat.composer.text == "second"


async def test_a_first_message_that_failed_can_be_edited_and_retried(tmp_path):
    db = tmp_path / "lovia.db"
    app = make_app(db, model=failing_then("the answer"))
    async with app.run_test(size=(160, 45)) as pilot:
        await fail_first_message(pilot, "helo")
        chat = app.screen.chat
        await pilot.press("up")  # in the empty composer: edit the last message, the failed run's
        await pilot.pause()
        assert chat.has_class("-editing") and chat.composer.text == "helo"
        await pilot.press("left", "l", "enter")
        await settle(pilot)
        assert await stored_texts(db, chat.session_id) == ["hello", "the answer"]
        assert app.screen.query_one("RunsPane").runs == []  # the failed run was discarded
        async with SQLiteCheckpointer(db, wal=True) as checkpointer:
            assert [r.head.status for r in await checkpointer.list_runs()] == ["completed"]


async def test_regenerate_after_a_stop_asks_the_stopped_runs_question_again(tmp_path):
    slow, gate = blocking_tool()
    model = ScriptedModel(["one", ScriptedTurn(text="Let me", tool_calls=[call("slow", {"seconds": 1})]),
                           "fresh answer"])
    db = tmp_path / "lovia.db"
    app = make_app(db, agent=Agent(name="assistant", model=model, tools=[slow]))
    async with app.run_test(size=(160, 45)) as pilot:
        await type_and_send(pilot, "first")
        await stop_a_run(pilot, gate, "second")
        chat = app.screen.chat
        await pilot.press("ctrl+g")
        await settle(pilot)
        assert await stored_texts(db, chat.session_id) == ["first", "one", "second", "fresh answer"]
        assert model.requests[-1].messages[-1].text == "second"
        assert app.screen.query_one("RunsPane").runs == []


# -- item 7: handoffs carry over --------------------------------------------------------------------------


def two_agents() -> tuple[Agent, ScriptedModel, ScriptedModel]:
    expert_model = ScriptedModel(["the expert answers", "the expert again"], name="expert-model")
    expert = Agent(name="expert", model=expert_model, handoff_description="knows the details")
    triage_model = ScriptedModel([ScriptedTurn(tool_calls=[call("transfer_to_expert")]), "triage again"],
                                 name="triage-model")
    triage = Agent(name="triage", model=triage_model, handoffs=[expert])
    return triage, triage_model, expert_model


async def test_the_next_message_goes_on_with_the_agent_a_handoff_chose(tmp_path):
    db = tmp_path / "lovia.db"
    triage, triage_model, expert_model = two_agents()
    app = make_app(db, agent=triage)
    async with app.run_test(size=(160, 45)) as pilot:
        await type_and_send(pilot, "a hard question")
        await type_and_send(pilot, "and a follow-up")
        chat = app.screen.chat
        async with SQLiteSession(db, wal=True) as session:
            first, second = await session.segments(chat.session_id)
        assert first.meta["agent"] == "expert" and second.meta["agent"] == "expert"
        assert [e.agent for e in second.entries if e.type == "assistant"] == ["expert"]
        assert len(triage_model.requests) == 1 and len(expert_model.requests) == 2
        assert expert_model.requests[1].messages[-1].text == "and a follow-up"


async def test_backend_starts_with_the_last_agent_only_when_the_app_agent_reaches_it(tmp_path):
    db = tmp_path / "lovia.db"
    async with SQLiteSession(db, wal=True) as session, SQLiteCheckpointer(db, wal=True) as checkpointer:
        triage, _, _ = two_agents()
        backend = ChatBackend(session, checkpointer, triage)
        async def send(session_id: str, text: str) -> str:
            started = await backend.send(session_id, text)
            async for _ in started.stream:
                pass
            return started.agent

        assert await send("s-a", "hello") == "triage"
        assert await send("s-a", "more") == "expert"
        # A session whose last run ended with an agent the app cannot reach any more goes on with the app's.
        await session.append("s-b", [], run_id="r-gone", meta={"agent": "retired"})
        assert await send("s-b", "hi") == "triage"


async def test_a_run_that_went_on_with_the_handed_to_agent_resumes_after_a_stop(tmp_path):
    slow, gate = blocking_tool()
    expert_model = ScriptedModel(["the expert answers", ScriptedTurn(tool_calls=[call("slow", {"seconds": 1})]),
                                  "the expert finished"], name="expert-model")
    expert = Agent(name="expert", model=expert_model, tools=[slow])
    triage = Agent(name="triage", model=ScriptedModel([ScriptedTurn(tool_calls=[call("transfer_to_expert")])]),
                   handoffs=[expert])
    db = tmp_path / "lovia.db"
    app = make_app(db, agent=triage)
    async with app.run_test(size=(160, 45)) as pilot:
        await type_and_send(pilot, "a hard question")
        await stop_a_run(pilot, gate, "go on")
        [stopped] = app.screen.query_one("RunsPane").runs
        assert (stopped.head.entry_agent, stopped.head.agent) == ("expert", "expert")
        await pilot.press("ctrl+r")
        await settle(pilot)
        async with SQLiteSession(db, wal=True) as session:
            last = (await session.segments(app.screen.chat.session_id))[-1]
        assert last.meta["agent"] == "expert" and last.entries[-1].text == "the expert finished"


async def test_backend_finalize_records_how_the_run_ended_and_the_agent_a_pending_handoff_names(tmp_path):
    db = tmp_path / "lovia.db"
    async with SQLiteSession(db, wal=True) as session, SQLiteCheckpointer(db, wal=True) as checkpointer:
        triage, _, _ = two_agents()
        backend = ChatBackend(session, checkpointer, triage)
        head = RunHead(agent="triage", status="interrupted", turn=1, session_id="s-a", first_input="help",
                       pending_handoff="expert", handoff_call_id="c1")
        await checkpointer.save(RunSnapshot("r1", head, [
            UserMessage(text="help"), ToolCall(call_id="c1", name="transfer_to_expert", arguments="{}"),
            ToolResult(call_id="c1", output="Transferred to expert.", name="transfer_to_expert")]))
        assert await backend.finalize("r1") == ("s-a", 3)
        [segment] = await session.segments("s-a")
        assert (segment.meta["partial"], segment.meta["ended"], segment.meta["agent"]) == (True, "stopped",
                                                                                           "expert")


@pytest.mark.parametrize("size", [(80, 24), (160, 45)])
async def test_keys_typed_right_after_e_go_into_the_edit_not_to_the_transcripts_keys(tmp_path, size):
    """``e`` then typing at once: the edit starts after a store read, and the keys that came meanwhile
    went to the transcript, where ``f`` forks, ``t`` trims and ``u`` undoes. They belong to the edit."""
    db = tmp_path / "lovia.db"
    app = make_app(db, model=ScriptedModel(["one", "two"]))
    async with app.run_test(size=size) as pilot:
        await send_first_and_second(pilot)
        chat = app.screen.chat
        chat.transcript.focus()
        await pilot.press("end", "up")
        assert isinstance(chat.transcript.selected_view, UserMessageView)
        main = app.screen
        burst(app, "e fix it")
        await wait_for(pilot, lambda: chat.has_class("-editing"))
        await pilot.pause()
        assert app.screen is main  # no fork question, no trim question
        assert chat.composer.text == "second fix it"
        assert chat.composer.cursor_location == chat.composer.document.end
        await pilot.press("escape")
        await pilot.pause()
        assert chat.composer.text == ""  # the draft held nothing: the typed keys were the edit's


@pytest.mark.parametrize("size", [(80, 24), (160, 45)])
async def test_keys_typed_right_after_ctrl_l_in_the_transcript_go_into_the_edit(tmp_path, size):
    """``ctrl+l`` with the transcript focused, then typing at once (a new user's trial): the edit
    starts after a store read, and "fine" went to the transcript meanwhile, where ``f`` forked the
    session and the rest was lost. The keys wait for the composer the edit focuses."""
    db = tmp_path / "lovia.db"
    app = make_app(db, model=ScriptedModel(["one", "two"]))
    async with app.run_test(size=size) as pilot:
        await send_first_and_second(pilot)
        chat = app.screen.chat
        source = chat.session_id
        chat.transcript.focus()
        await pilot.pause()
        app.post_message(events.Key("ctrl+l", None))
        burst(app, "fine")
        await wait_for(pilot, lambda: chat.has_class("-editing"))
        await settle(pilot)
        assert chat.session_id == source  # not forked
        assert chat.composer.text == "secondfine"
        assert chat.composer.has_focus


async def test_keys_typed_right_after_up_in_the_composer_go_into_the_edit_not_the_draft(tmp_path):
    db = tmp_path / "lovia.db"
    app = make_app(db, model=ScriptedModel(["one", "edited reply"]))
    async with app.run_test(size=(80, 24)) as pilot:
        await type_and_send(pilot, "first")
        chat = app.screen.chat
        assert chat.composer.text == ""
        app.post_message(events.Key("up", None))  # up in the empty composer edits the last message
        burst(app, " again")
        await wait_for(pilot, lambda: chat.has_class("-editing"))
        await pilot.pause()
        assert chat.composer.text == "first again"
        await pilot.press("enter")
        await settle(pilot)
        assert await stored_texts(db, chat.session_id) == ["first again", "edited reply"]
        assert chat.composer.text == ""


async def test_keys_typed_right_after_e_on_an_answer_are_not_run_as_keys(tmp_path):
    """``e`` on an answer starts no edit (it says so); the text typed with it was meant for one and
    is dropped, not run: the ``f`` of "fix" forked the session."""
    from lovia.tui.widgets.assistant_message import AssistantMessageView
    from tests.tui.conftest import told

    db = tmp_path / "lovia.db"
    app = make_app(db, model=ScriptedModel(["one"]))
    async with app.run_test(size=(80, 24)) as pilot:
        await type_and_send(pilot, "first")
        chat = app.screen.chat
        chat.transcript.focus()
        await pilot.press("end")
        await settle(pilot)
        assert isinstance(chat.transcript.selected_view, AssistantMessageView)
        session_id, main = chat.session_id, app.screen
        burst(app, "e fix the typo")
        await settle(pilot)
        await pilot.pause(0.4)
        assert app.screen is main and chat.session_id == session_id  # not forked, nothing asked
        assert "Select one of your messages to edit it (↑/↓)." in [t.message for t in told(app)]
        assert not chat.has_class("-editing")
        await pilot.press("c")  # the keys are the transcript's again
        await wait_for(pilot, lambda: app.clipboard == "one")


async def test_backspace_typed_right_after_e_erases_and_other_keys_do_nothing_meanwhile(tmp_path):
    """In the burst after ``e``, backspace erases what was typed (it reached the transcript, which
    ignored it: "fixx" stayed), and enter or an arrow does nothing (they expanded a message and
    moved the cursor under the edit)."""
    db = tmp_path / "lovia.db"
    app = make_app(db, model=ScriptedModel(["one", "two"]))
    async with app.run_test(size=(80, 24)) as pilot:
        await send_first_and_second(pilot)
        chat = app.screen.chat
        chat.transcript.focus()
        await pilot.press("end", "up")
        selected = chat.transcript.selected_view
        assert isinstance(selected, UserMessageView)
        burst(app, "e fixx")
        app.post_message(events.Key("backspace", None))
        app.post_message(events.Key("up", None))
        app.post_message(events.Key("enter", None))
        burst(app, " it")
        await wait_for(pilot, lambda: chat.has_class("-editing"))
        await settle(pilot)
        assert chat.composer.text == "second fix it"
        assert chat.transcript.selected_view is selected


@pytest.mark.parametrize("size", [(80, 24), (160, 45)])
async def test_a_message_typed_right_after_f_goes_into_the_fork_not_to_the_transcripts_keys(tmp_path, size):
    """``f`` then the next message at once: the fork is made after a store write, and the keys that
    came meanwhile went to the transcript, where ``e`` edits, ``c`` copies and ``f`` forks again."""
    db = tmp_path / "lovia.db"
    app = make_app(db, model=ScriptedModel(["one", "two"]))
    async with app.run_test(size=size) as pilot:
        await send_first_and_second(pilot)
        chat = app.screen.chat
        original = chat.session_id
        chat.transcript.focus()
        await pilot.press("end", "up", "up")  # the first answer
        clipboard = app.clipboard
        burst(app, "f and ecfte then")
        await wait_for(pilot, lambda: chat.session_id != original and chat.composer.has_focus)
        await pilot.pause(0.3)  # (not settle: the code before this fix left a question open, waiting)
        assert chat.composer.text == "and ecfte then"  # the space after f was not meant for the message
        assert app.clipboard == clipboard and not chat.has_class("-editing")
        async with SQLiteSession(db) as session:
            assert len(await session.list_sessions()) == 2  # one fork, not three


async def test_keys_typed_right_after_t_are_dropped_not_run(tmp_path):
    """``t`` reads what a trim would save before it asks; "t" then "fe" forked and edited meanwhile."""
    from tests.tui.conftest import told

    db = tmp_path / "lovia.db"
    app = make_app(db, model=ScriptedModel([ScriptedTurn(tool_calls=[call("calculate", {"expression": "6*7"})]),
                                            "It is 42.", "two"]))
    async with app.run_test(size=(80, 24)) as pilot:
        await type_and_send(pilot, "what is 6*7?")
        await type_and_send(pilot, "thanks")
        chat = app.screen.chat
        session_id, main = chat.session_id, app.screen
        chat.transcript.focus()
        await pilot.press("home")
        burst(app, "tfe")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen)
                       or any("long enough to trim" in t.message for t in told(app)))
        await pilot.pause(0.3)
        assert app.screen is main and chat.session_id == session_id and not chat.has_class("-editing")


class RewindFails(SQLiteSession):
    """A store whose rewind fails (the disk, say) once the resend's run holds the session."""

    async def rewind_undoably(self, session_id, *, keep_entries):
        from lovia.errors import StoreError

        raise StoreError("disk I/O error")


class RewindTakesASecond(SQLiteSession):
    """A store whose rewind takes a second: time to press escape while a resend makes it."""

    started = None

    async def rewind_undoably(self, session_id, *, keep_entries):
        import asyncio

        self.started.set()
        await asyncio.sleep(1.0)
        return await super().rewind_undoably(session_id, keep_entries=keep_entries)


@pytest.mark.parametrize("how", ["fails", "stopped"])
async def test_a_resend_that_ends_before_its_run_starts_keeps_the_edit_and_the_draft(tmp_path, how):
    """Once the rewind moved into the resend's run, its failure (or an escape while it ran) came as
    the run's: the edited message was shown as a failed run stored nowhere and the text was lost
    behind the draft (a failure), or nothing was said and the text was gone (a stop)."""
    import asyncio

    from lovia.tui.widgets.notice import NoticeView
    from tests.tui.conftest import told

    db = tmp_path / "lovia.db"
    session = RewindFails(db, wal=True) if how == "fails" else RewindTakesASecond(db, wal=True)
    if how == "stopped":
        session.started = asyncio.Event()
    app = make_app(db, model=ScriptedModel(["one", "two", "never"]), session=session)
    async with app.run_test(size=(80, 24)) as pilot:
        await send_first_and_second(pilot)
        chat = app.screen.chat
        await pilot.press(*"my draft", "ctrl+l")
        await wait_for(pilot, lambda: chat.has_class("-editing"))
        await pilot.press(*", edited", "enter")
        if how == "stopped":
            await wait_for(pilot, session.started.is_set)
            await pilot.press("escape")
        await settle(pilot)
        said = "Not resent: disk I/O error." if how == "fails" else "Not resent: stopped before it started."
        assert said in [t.message for t in told(app)]
        assert chat.has_class("-editing") and chat.composer.text == "second, edited"
        assert not chat.transcript.query(NoticeView)
        assert [v.message.text for v in chat.transcript.query(UserMessageView)] == ["first", "second"]
        await pilot.press("escape")  # the edit ends: the draft comes back
        await pilot.pause()
        assert chat.composer.text == "my draft"
        assert await chat.backend.runs(session_id=chat.session_id) == []
    assert await stored_texts(db, chat.session_id) == ["first", "one", "second", "two"]


async def test_a_fork_from_the_command_palette_leaves_the_transcripts_keys_alone(tmp_path):
    """Asked for from the palette with the composer focused, the fork held what the transcript was
    typed from then on until it lost focus: its cursor keys did nothing, and a later key went into
    the composer."""
    db = tmp_path / "lovia.db"
    app = make_app(db, model=ScriptedModel(["one", "two"]))
    async with app.run_test(size=(160, 45)) as pilot:
        await send_first_and_second(pilot)
        chat = app.screen.chat
        transcript = chat.transcript
        transcript.focus()
        await pilot.press("home")
        chat.composer.focus()
        original = chat.session_id
        await pilot.press("ctrl+p")
        await pilot.pause(0.3)
        await pilot.press(*"fork from")
        await pilot.pause(0.5)
        await pilot.press("enter")
        await wait_for(pilot, lambda: chat.session_id != original)
        await settle(pilot)
        transcript.focus()
        await pilot.press("end", "up")
        await pilot.pause()
        assert transcript.selected_view is not None  # the keys moved the cursor
        chat.composer.focus()
        await pilot.pause()
        assert chat.composer.text == ""


@pytest.mark.parametrize("size", [(80, 24), (160, 45)])
async def test_regenerate_is_refused_while_a_message_is_edited_and_the_edit_still_resends(tmp_path, size):
    """A new user's trial: ctrl+l, a few keys, then ctrl+g (the footer offered it) regenerated the old
    message's answer under the edit, and enter then refused: "That message is not in this session any
    more"; only escape got out of the edit."""
    from lovia.tui.widgets.footer import LoviaFooter
    from tests.tui.conftest import told

    db = tmp_path / "lovia.db"
    app = make_app(db, model=ScriptedModel(["one", "edited reply", "never asked"]))
    async with app.run_test(size=size) as pilot:
        await type_and_send(pilot, "first")
        chat = app.screen.chat
        await pilot.press("ctrl+l", *" XX")
        await pilot.pause()
        assert "regenerate" not in {entry.action for entry in app.screen.query_one(LoviaFooter).entries}
        assert "Regenerate" not in {command.title for command in app.get_system_commands(app.screen)}
        await pilot.press("ctrl+g")
        await settle(pilot)
        assert any(n.message.startswith("A message is being edited: enter resends it, escape cancels")
                   for n in told(app))
        assert chat.has_class("-editing") and chat.composer.text == "first XX"
        await pilot.press("enter")
        await settle(pilot)
        assert await stored_texts(db, chat.session_id) == ["first XX", "edited reply"]
        assert not chat.has_class("-editing")


@pytest.mark.parametrize("size", [(80, 24), (160, 45)])
async def test_editing_a_message_never_answered_does_not_say_it_drops_an_answer(tmp_path, size):
    """A new user's trial: ``ctrl+l`` in a fork that ends with an unanswered message said "enter
    resends it, dropping its answer", and there was none. It says what resending drops, if anything."""
    db = tmp_path / "lovia.db"
    async with SQLiteSession(db, wal=True) as session:
        await session.append("s-open", [UserMessage(text="first"), AssistantMessage(text="one")])
        await session.append("s-open", [UserMessage(text="never answered")])
    app = make_app(db, model=ScriptedModel(["two"]))
    async with app.run_test(size=size) as pilot:
        await settle(pilot)
        chat = app.screen.chat
        assert chat.session_id == "s-open"
        chat.composer.focus()
        await pilot.press("ctrl+l")
        await wait_for(pilot, lambda: chat.has_class("-editing"))
        line = str(chat.query_one("#editing").render())
        assert "Editing: enter resends it; escape gives your draft back." in line, line
        await pilot.press("escape")
        chat.transcript.focus()
        await pilot.press("home")  # "first", which was answered, with a run after it
        await settle(pilot)
        await pilot.press("e")
        await wait_for(pilot, lambda: chat.has_class("-editing"))
        line = str(chat.query_one("#editing").render())
        assert "dropping its answer and the 1 run after it" in line, line


async def test_a_run_cut_off_as_it_streamed_has_an_answer_to_drop(tmp_path):
    """Its cut-off answer is journalled, not in its entries: editing its message still says that
    resending drops it (it did not: only the entries were looked at)."""
    from screenshots.demo_data import build, build_stopped_runs

    db = tmp_path / "lovia.db"
    await build(db)
    await build_stopped_runs(db)  # s-atlas's newest run, run-demo-streaming, crashed while streaming
    async with SQLiteSession(db, wal=True) as session, SQLiteCheckpointer(db, wal=True) as checkpointer:
        backend = ChatBackend(session, checkpointer, Agent(name="assistant", model=ScriptedModel(["x"])))
        last = await backend.last_message("s-atlas")
        assert last is not None and last.run_id == "run-demo-streaming" and last.answered
        located = await backend.locate("s-atlas", last.message)
        assert located is not None and located.answered
