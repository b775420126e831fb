"""What is typed in a session and not sent stays with that session, in the real app on a real SQLite file,
and comes back in it the next time lovia starts (real apps one after another on one file and one
``state.json``, as ``lovia`` run again is: a message typed, then a quit while the question about the
session's crashed run was up, was lost)."""

from __future__ import annotations

import json

import pytest

from lovia import UserMessage
from lovia.tui.screens.choice import ChoiceScreen
from tests.tui.conftest import make_app, settle, told, type_and_send, wait_for
from tests.tui.test_crash_resume import crash_a_run
from tests.tui.test_new_user_pass import burst, stored_sessions

SIZES = [(80, 24), (160, 45)]


def composer_text(app) -> str:
    return app.screen.chat.composer.text


async def open_and_type(pilot, session_id: str | None, text: str = "") -> None:
    app = pilot.app
    if session_id is None:
        await pilot.press("ctrl+n")
        await settle(pilot)
    else:
        await app.screen.open_session(session_id)
        await settle(pilot)
        assert app.screen.chat.session_id == session_id
    app.screen.chat.composer.focus()
    await pilot.pause()
    await pilot.press(*text)
    await settle(pilot)


@pytest.mark.parametrize("size", SIZES)
async def test_text_typed_and_not_sent_stays_with_its_session(tmp_path, size):
    # The composer kept its text from one session to the next: a message begun in one
    # conversation was sent in the next one opened.
    db = tmp_path / "lovia.db"
    alpha, beta = await stored_sessions(db, "alpha", "beta")
    app = make_app(db)
    async with app.run_test(size=size) as pilot:
        await settle(pilot)
        await open_and_type(pilot, alpha, "half a thought")
        await open_and_type(pilot, beta)
        assert composer_text(app) == ""
        await open_and_type(pilot, beta, "for beta")  # opened again: kept, typed after
        assert composer_text(app) == "for beta"
        await open_and_type(pilot, None)  # a new session starts empty
        assert composer_text(app) == ""
        await open_and_type(pilot, None, "new one")
        await open_and_type(pilot, alpha)
        assert composer_text(app) == "half a thought"
        await open_and_type(pilot, beta)
        assert composer_text(app) == "for beta"
        await open_and_type(pilot, None)  # the new session's text, kept as it was never stored
        assert composer_text(app) == "new one"
        await pilot.press("enter")  # sent: the session is stored, the composer empty
        await settle(pilot)
        new = app.screen.chat.session_id
        await wait_for(pilot, lambda: not app.screen.chat.running)
        await open_and_type(pilot, new, "more")
        await open_and_type(pilot, None)
        assert composer_text(app) == ""
        await open_and_type(pilot, new)
        assert composer_text(app) == "more"


async def test_a_fork_takes_what_is_typed_after_f_and_leaves_the_source_its_own(tmp_path):
    db = tmp_path / "lovia.db"
    alpha, _ = await stored_sessions(db, "alpha", "beta")
    app = make_app(db)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await open_and_type(pilot, alpha, "half a thought")
        app.screen.chat.transcript.focus()
        await settle(pilot)
        burst(app, "f", *" and then")  # typed on at once, as the README says: the fork's first words
        await settle(pilot)
        fork = app.screen.chat.session_id
        assert fork != alpha
        assert composer_text(app) == "and then"
        await open_and_type(pilot, alpha)
        assert composer_text(app) == "half a thought"
        await open_and_type(pilot, fork)
        assert composer_text(app) == "and then"


async def test_an_edit_left_by_opening_another_session_gives_back_the_text_it_set_aside(tmp_path):
    db = tmp_path / "lovia.db"
    alpha, beta = await stored_sessions(db, "alpha", "beta")
    app = make_app(db)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await open_and_type(pilot, alpha, "half a thought")
        await pilot.press("ctrl+l")  # edit the last message: the composer holds it meanwhile
        await settle(pilot)
        assert composer_text(app) == "alpha"
        await open_and_type(pilot, beta)
        assert composer_text(app) == ""
        await open_and_type(pilot, alpha)
        assert composer_text(app) == "half a thought"



async def test_a_reload_of_the_open_session_leaves_the_composer_as_it_is(tmp_path):
    # A new session with nothing stored, reloaded (an outside change: its stopped run discarded
    # from the runs pane), put the text under "new session" and emptied the composer.
    app = make_app(tmp_path / "lovia.db")
    async with app.run_test(size=(80, 24)) as pilot:
        await open_and_type(pilot, None, "draft")
        chat = app.screen.chat
        await chat.open_session(chat.session_id)
        await settle(pilot)
        assert composer_text(app) == "draft"


def user_texts(app) -> list[str]:
    from lovia.tui.widgets.user_message import UserMessageView

    return [view.message.text for view in app.screen.query(UserMessageView)]


@pytest.mark.parametrize("size", SIZES)
async def test_what_is_typed_right_after_enter_stays_for_the_next_message(tmp_path, size):
    """A new user's trial (``hello`` enter ``abc`` in one burst): "abc" was wiped with the message
    once its run started, the composer being cleared then rather than as enter was read."""
    app = make_app(tmp_path / "lovia.db")
    async with app.run_test(size=size) as pilot:
        await settle(pilot)
        app.screen.chat.composer.focus()
        await pilot.pause()
        burst(app, *"hello", "enter", *"abc")
        await settle(pilot)
        assert user_texts(app) == ["hello"]
        assert composer_text(app) == "abc"


@pytest.mark.parametrize("size", SIZES)
async def test_a_second_enter_while_the_first_message_is_sent_is_refused_and_keeps_the_second(tmp_path, size):
    """``hello`` enter ``second`` enter in one burst sent "hellosecond" (the first message was still
    in the composer, the second enter not refused) and left "hello" as a run stopped at 0.0 s."""

    db = tmp_path / "lovia.db"
    app = make_app(db)
    async with app.run_test(size=size) as pilot:
        await settle(pilot)
        app.screen.chat.composer.focus()
        await pilot.pause()
        burst(app, *"hello", "enter", *"second", "enter")
        await settle(pilot)
        assert user_texts(app) == ["hello"]
        assert composer_text(app) == "second"
        assert any(n.message.startswith("Wait for the answer") for n in told(app))
        # The first message's run completed; no other was begun (nor left stopped at 0.0 s).
        assert [run.head.status for run in await app.backend.checkpointer.list_runs()] == ["completed"]
        stored = await app.backend.session.load(app.screen.chat.session_id)
        assert [entry.text for entry in stored if isinstance(entry, UserMessage)] == ["hello"]


async def test_escape_while_an_edit_is_being_resent_is_refused_and_the_draft_comes_back_once(tmp_path, monkeypatch):
    """Escape read after enter and before the resend's run began (its store read slow) cancelled the
    edit, its draft coming back, while the resend went on; once it began, the draft came back again."""
    import asyncio

    db = tmp_path / "lovia.db"
    app = make_app(db)
    async with app.run_test(size=(80, 24)) as pilot:
        await type_and_send(pilot, "first")
        chat = app.screen.chat
        await pilot.press(*"mydraft", "ctrl+l")
        await settle(pilot)
        await pilot.press(*" XX")
        store_answers = asyncio.Event()
        resend_edited = app.backend.resend_edited

        async def slow_resend(*args, **kwargs):
            await store_answers.wait()  # a store slow to answer the resend's reads
            return await resend_edited(*args, **kwargs)

        monkeypatch.setattr(app.backend, "resend_edited", slow_resend)
        await pilot.press("enter")
        await wait_for(pilot, lambda: chat.sending)
        await pilot.press("escape", *"abc")
        assert any(n.message.startswith("The edited message is being sent") for n in told(app))
        store_answers.set()
        await settle(pilot)
        assert composer_text(app) == "mydraft\nabc"
        assert not chat.has_class("-editing")
        stored = await app.backend.session.load(chat.session_id)
        assert [entry.text for entry in stored if isinstance(entry, UserMessage)] == ["first XX"]


async def crashed_run_in(db, session_id: str) -> None:
    from lovia import AssistantMessage, RunHead, RunOwner, RunSnapshot, SQLiteCheckpointer, SQLiteSession

    async with SQLiteSession(db, wal=True) as session, SQLiteCheckpointer(db, wal=True) as checkpointer:
        await session.append(session_id, [UserMessage(text="earlier"), AssistantMessage(text="ok")], run_id="old")
        head = RunHead(agent="assistant", status="running", turn=1, session_id=session_id, first_input="job",
                       owner=RunOwner(host="gone-host", pid=4242, started=1), claim="token", lease_until=1.0)
        await checkpointer.save(RunSnapshot("run-crashed", head, [UserMessage(text="job")]))


@pytest.mark.parametrize(("answer", "composer"), [("r", "helloabc"), ("escape", "helloabc"), ("d", "abc")])
async def test_keys_typed_right_after_answering_the_question_before_a_message_go_to_the_composer(
        tmp_path, answer, composer):
    """The question's answer keys are not bindings: "r abc" in one burst went to the question as it
    closed, and "abc" was lost."""
    from lovia.tui.screens.choice import ChoiceScreen

    db = tmp_path / "lovia.db"
    await crashed_run_in(db, "s-a")
    app = make_app(db)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        assert app.screen.chat.session_id == "s-a"
        app.screen.chat.composer.focus()
        await pilot.press(*"hello", "enter")
        await wait_for(pilot, lambda: isinstance(app.screen, ChoiceScreen))
        await pilot.pause(0.2)
        burst(app, answer, *"abc")
        await settle(pilot)
        await pilot.pause(0.5)
        assert composer_text(app) == composer


async def test_a_message_changed_with_the_enter_that_sent_it_leaves_the_composer_whole(tmp_path):
    """``hello`` enter backspace in one burst: the backspace reached the composer before the panel read
    the message, "hell" no longer began with what was sent, and stayed there to be sent again."""
    app = make_app(tmp_path / "lovia.db")
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        app.screen.chat.composer.focus()
        await pilot.pause()
        burst(app, *"hello", "enter", "backspace")
        await settle(pilot)
        assert user_texts(app) == ["hello"]
        assert composer_text(app) == ""


async def composer_text_at_start(db) -> tuple[str, str | None]:
    app = make_app(db)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        return app.screen.chat.composer.text, app.screen.chat.session_id


@pytest.mark.parametrize("size", SIZES)
async def test_a_message_typed_when_the_crashed_run_question_was_up_comes_back_after_a_quit(tmp_path, size):
    db = tmp_path / "lovia.db"
    crash_a_run(db)
    app = make_app(db)
    async with app.run_test(size=size) as pilot:
        await settle(pilot)
        assert app.screen.chat.session_id == "s-crash"
        app.screen.query_one("#composer").focus()
        await pilot.press(*"is it done?", "enter")
        await wait_for(pilot, lambda: isinstance(app.screen, ChoiceScreen))  # resume, keep or discard the run
        await pilot.press("ctrl+q")
        await wait_for(pilot, lambda: app.return_code is not None)
    assert await composer_text_at_start(db) == ("is it done?", "s-crash")


async def test_each_sessions_unsent_text_comes_back_in_it_and_a_sent_one_does_not(tmp_path):
    db = tmp_path / "lovia.db"
    app = make_app(db)
    async with app.run_test(size=(160, 45)) as pilot:
        await settle(pilot)
        await type_and_send(pilot, "first session")
        first = app.screen.chat.session_id
        await pilot.press(*"a second thought")
        await pilot.press("ctrl+n")  # a new session: the text stays with the first
        await settle(pilot)
        await type_and_send(pilot, "second session")
        second = app.screen.chat.session_id
        await pilot.press(*"half a line")
        await pilot.press("ctrl+q")
        await wait_for(pilot, lambda: app.return_code is not None)
    unsent = json.loads((tmp_path / "state.json").read_text())["unsent"]
    assert unsent == {first: "a second thought", second: "half a line"}

    app = make_app(db)
    async with app.run_test(size=(160, 45)) as pilot:
        await settle(pilot)
        chat = app.screen.chat
        assert chat.session_id == second and chat.composer.text == "half a line"
        await app.screen.open_session(first)
        await settle(pilot)
        assert chat.composer.text == "a second thought"
        chat.composer.focus()
        await pilot.press("enter")  # sent now
        await settle(pilot)
        await pilot.press("ctrl+q")
        await wait_for(pilot, lambda: app.return_code is not None)
    # Sent, it does not come back; the other session's text left there stays.
    assert json.loads((tmp_path / "state.json").read_text())["unsent"] == {second: "half a line"}


async def test_a_window_quitting_leaves_another_windows_text_and_one_changed_since_it_started(tmp_path):
    """Two windows on one data directory: each takes out of state.json only what it took in, as it found it."""
    db = tmp_path / "lovia.db"
    [alpha] = await stored_sessions(db, "alpha")
    state = tmp_path / "state.json"
    state.write_text(json.dumps({"unsent": {alpha: "from the last run", "s-elsewhere": "other window's"}}))
    app = make_app(db)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        assert composer_text(app) == "from the last run"
        app.screen.chat.composer.text = ""  # cleared here: this window lets it go
        # Meanwhile another window, which took the same text at its start, changed it and quit.
        state.write_text(json.dumps({"unsent": {alpha: "from the last run, and more", "s-elsewhere": "other window's",
                                                "s-third": "a third"}}))
        await pilot.press("ctrl+q")
        await wait_for(pilot, lambda: app.return_code is not None)
    assert json.loads(state.read_text())["unsent"] == {
        alpha: "from the last run, and more", "s-elsewhere": "other window's", "s-third": "a third"}
