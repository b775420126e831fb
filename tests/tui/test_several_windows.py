"""Several windows on one file: what another process stores shows up here without a key press."""

from __future__ import annotations

import asyncio
import signal
import sys
import textwrap
import time

import pytest

from lovia import AssistantMessage, SQLiteCheckpointer, SQLiteSession, UserMessage
from lovia.tui.screens.main import MainScreen
from tests.tui.conftest import make_app, settle, told, type_and_send, wait_for

OTHER_WINDOW = textwrap.dedent(
    """
    import asyncio, sys
    from lovia import Agent, CheckpointOptions, DemoModel, Runner, SQLiteCheckpointer, SQLiteSession

    async def main(path, session_id, run_id, text):
        async with SQLiteSession(path, wal=True) as session, SQLiteCheckpointer(path, wal=True) as checkpointer:
            agent = Agent(name="assistant", model=DemoModel(delay=0))
            await Runner.run(agent, text, session=session, session_id=session_id,
                             checkpoint=CheckpointOptions(checkpointer, run_id))

    asyncio.run(main(*sys.argv[1:]))
    """
)


async def run_in_another_process(db, session_id: str, run_id: str, text: str) -> None:
    """A complete run of the demo agent by a separate process on the same file (as a second window's)."""
    child = await asyncio.create_subprocess_exec(sys.executable, "-c", OTHER_WINDOW, str(db), session_id, run_id,
                                                 text, stderr=asyncio.subprocess.PIPE)
    _, err = await child.communicate()
    assert child.returncode == 0, err.decode()


async def stored_session(db, session_id: str) -> None:
    """A file with both stores' tables (as ``lovia`` leaves it) and one completed run in ``session_id``."""
    async with SQLiteSession(db, wal=True) as session, SQLiteCheckpointer(db, wal=True):
        await session.append(session_id, [UserMessage(text="hello"), AssistantMessage(text="hi there")],
                             run_id="first")


async def test_a_run_stored_by_another_process_shows_in_the_lists_and_the_open_transcript(tmp_path):
    db = tmp_path / "lovia.db"
    await stored_session(db, "s-shared")
    app = make_app(db)
    async with app.run_test(size=(160, 45)) as pilot:
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, MainScreen)
        chat = screen.chat
        assert chat.session_id == "s-shared" and chat.transcript.run_ids == {"first"}

        await run_in_another_process(db, "s-shared", "run-in-the-open-session", "what did the other window say?")
        await run_in_another_process(db, "s-new", "run-in-a-new-session", "a session started elsewhere")

        # No key is pressed: the watcher's own timer notices both.
        sessions = screen.query_one("SessionsPane")
        await wait_for(pilot, lambda: {"s-shared", "s-new"} <= {info.session_id for info in sessions.sessions})
        await wait_for(pilot, lambda: chat.transcript.run_ids == {"first", "run-in-the-open-session"})
        assert chat.session_id == "s-shared"
        shown = [view.message.text for view in chat.transcript.query("UserMessageView")]
        assert shown == ["hello", "what did the other window say?"]


async def refresh_count(screen: MainScreen, monkeypatch) -> list[int]:
    """Count the lists' updates a check of ``screen`` makes (``refresh_changed``; each still runs)."""
    calls = [0]
    real = screen.refresh_changed

    async def counted() -> None:
        calls[0] += 1
        await real()

    monkeypatch.setattr(screen, "refresh_changed", counted)
    return calls


async def test_checks_reload_nothing_once_nobody_writes_even_after_this_windows_own_run(tmp_path, monkeypatch):
    db = tmp_path / "lovia.db"
    await stored_session(db, "s-shared")
    app = make_app(db)
    async with app.run_test(size=(160, 45)) as pilot:
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, MainScreen)
        screen._change_timer.pause()  # the checks are driven here, one at a time
        await settle(pilot)
        reopened = [0]
        real_open = screen.chat.open_session

        async def counted_open(session_id):
            reopened[0] += 1
            await real_open(session_id)

        monkeypatch.setattr(screen.chat, "open_session", counted_open)
        calls = await refresh_count(screen, monkeypatch)

        # Nobody writes: no check reloads anything.
        assert [await screen.check_other_windows() for _ in range(5)] == [False] * 5
        assert calls[0] == 0

        # A run of this window writes through both stores, each of which sees the other's commits:
        # that is at most one reload of the lists, then none, and never a reload of the transcript.
        await type_and_send(pilot, "hello again")
        await settle(pilot)
        calls[0] = 0
        checks = [await screen.check_other_windows() for _ in range(5)]
        assert checks[1:] == [False] * 4
        assert calls[0] == (1 if checks[0] else 0)
        assert reopened[0] == 0
        assert "hello again" in [view.message.text for view in screen.chat.transcript.query("UserMessageView")]

        # Another process's run is news, once.
        await run_in_another_process(db, "s-elsewhere", "run-elsewhere", "elsewhere")
        calls[0] = 0
        assert [await screen.check_other_windows() for _ in range(4)] == [True, False, False, False]
        assert calls[0] == 1
        assert reopened[0] == 0  # it is another session: the open transcript stays as it is


async def test_the_open_transcript_waits_for_a_reader_who_scrolled_up_or_holds_the_cursor(tmp_path):
    db = tmp_path / "lovia.db"
    await stored_session(db, "s-shared")
    app = make_app(db)
    async with app.run_test(size=(160, 45)) as pilot:
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, MainScreen)
        screen._change_timer.pause()
        await settle(pilot)
        transcript = screen.chat.transcript
        transcript.focus()
        await pilot.press("up", "up")  # the message cursor is on a message above the last
        await settle(pilot)
        assert transcript.selected == 0

        await run_in_another_process(db, "s-shared", "run-elsewhere", "from another window")
        assert await screen.check_other_windows()
        assert transcript.run_ids == {"first"}  # not yanked from the message being read
        assert transcript.selected >= 0
        await pilot.pause()
        assert any("changed in another window" in n.message for n in told(app))

        # Once the reader is back in the composer, the next check shows the new run.
        screen.query_one("#composer").focus()
        await settle(pilot)
        assert not await screen.check_other_windows()
        assert transcript.run_ids == {"first", "run-elsewhere"}


async def test_the_watcher_stops_with_the_app_without_an_error(tmp_path):
    db = tmp_path / "lovia.db"
    await stored_session(db, "s-shared")
    app = make_app(db)
    async with app.run_test(size=(160, 45)) as pilot:
        await settle(pilot)
        screen = app.screen
        await run_in_another_process(db, "s-shared", "run-elsewhere", "from another window")
        # A check or two run by the timer itself, then the app quits while the timer is live.
        await wait_for(pilot, lambda: "run-elsewhere" in screen.chat.transcript.run_ids)
        await pilot.press("ctrl+q")
    assert app.return_code in (0, None)
    assert app._exception is None


async def test_the_open_transcript_waits_while_a_message_is_being_edited(tmp_path):
    db = tmp_path / "lovia.db"
    await stored_session(db, "s-shared")
    app = make_app(db)
    async with app.run_test(size=(160, 45)) as pilot:
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, MainScreen)
        screen._change_timer.pause()
        await settle(pilot)
        chat = screen.chat
        await chat.action_edit_last()
        await settle(pilot)
        assert chat.has_class("-editing") and chat.composer.text == "hello"

        await run_in_another_process(db, "s-shared", "run-elsewhere", "from another window")
        assert await screen.check_other_windows()
        # The edit goes on undisturbed; the new run shows once it is over.
        assert chat.has_class("-editing") and chat.composer.text == "hello"
        assert chat.transcript.run_ids == {"first"}

        await pilot.press("escape")  # the edit is cancelled
        await settle(pilot)
        assert not chat.has_class("-editing")
        assert not await screen.check_other_windows()
        assert chat.transcript.run_ids == {"first", "run-elsewhere"}


@pytest.mark.parametrize("size", [(80, 24), (160, 45)])
async def test_a_resend_after_another_window_went_on_with_the_session_says_what_it_drops_first(tmp_path, size):
    """A new user's trial: editing in one window ("dropping its answer"), a message sent and answered
    in another, then enter: the resend dropped the other window's run too, unannounced (undo brought
    it back). The first enter is now refused, saying so, and the editing line says what enter drops
    now; the next enter resends."""
    db = tmp_path / "lovia.db"
    await stored_session(db, "s-shared")
    app = make_app(db)
    async with app.run_test(size=size) as pilot:
        await settle(pilot)
        screen = app.screen
        chat = screen.chat
        await pilot.press("ctrl+l")
        await wait_for(pilot, lambda: chat.has_class("-editing"))
        line = str(chat.query_one("#editing").render())
        assert "dropping its answer;" in line
        await pilot.press(*" edited")

        await run_in_another_process(db, "s-shared", "run-elsewhere", "from another window")
        await pilot.press("enter")
        await settle(pilot)
        said = [n.message for n in told(app)]
        assert any("1 run joined the session after this message since you began the edit" in m for m in said), said
        assert chat.has_class("-editing") and chat.composer.text == "hello edited"
        assert "dropping its answer and the 1 run after it" in str(chat.query_one("#editing").render())
        async with SQLiteSession(db, wal=True) as session:  # nothing changed
            assert [s.run_id for s in await session.segments("s-shared")] == ["first", "run-elsewhere"]

        await pilot.press("enter")  # told, the user resends all the same
        await settle(pilot)
        await wait_for(pilot, lambda: not chat.running and not chat.has_class("-editing"))
    async with SQLiteSession(db, wal=True) as session:
        segments = await session.segments("s-shared")
    assert [entry.text for s in segments for entry in s.entries][:1] == ["hello edited"]
    assert "run-elsewhere" not in [s.run_id for s in segments]


async def test_the_open_transcript_waits_for_a_reader_who_scrolled_up(tmp_path):
    db = tmp_path / "lovia.db"
    async with SQLiteSession(db, wal=True) as session, SQLiteCheckpointer(db, wal=True):
        for i in range(30):  # taller than the view
            await session.append("s-long", [UserMessage(text=f"question {i}"), AssistantMessage(text="answer")],
                                 run_id=f"run-{i}")
    app = make_app(db)
    async with app.run_test(size=(160, 45)) as pilot:
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, MainScreen)
        screen._change_timer.pause()
        await settle(pilot)
        transcript = screen.chat.transcript
        assert transcript.max_scroll_y > 0
        transcript.scroll_to(y=0, animate=False)
        await settle(pilot)

        await run_in_another_process(db, "s-long", "run-elsewhere", "from another window")
        assert await screen.check_other_windows()
        assert "run-elsewhere" not in transcript.run_ids  # the reader's place is kept
        assert not await screen.check_other_windows()
        assert "run-elsewhere" not in transcript.run_ids

        transcript.scroll_end(animate=False)
        await settle(pilot)
        await screen.check_other_windows()
        assert "run-elsewhere" in transcript.run_ids


HOLDER = textwrap.dedent(
    """
    import asyncio, sys, time
    from lovia import RunHead, RunOwner, RunSnapshot, SQLiteCheckpointer, UserMessage

    async def main(path):
        async with SQLiteCheckpointer(path, wal=True) as checkpointer:
            head = RunHead(agent="assistant", status="running", session_id="s-shared", first_input="long job",
                           owner=RunOwner.current(), claim="token-held", lease_until=time.time() + 3600)
            await checkpointer.save(RunSnapshot("run-held", head, [UserMessage(text="long job")]))
        print("saved", flush=True)
        await asyncio.sleep(3600)

    asyncio.run(main(sys.argv[1]))
    """
)


async def test_a_run_whose_process_died_reads_crashed_though_nothing_was_written(tmp_path):
    db = tmp_path / "lovia.db"
    await stored_session(db, "s-shared")
    holder = await asyncio.create_subprocess_exec(sys.executable, "-c", HOLDER, str(db),
                                                  stdout=asyncio.subprocess.PIPE)
    try:
        assert (await holder.stdout.readline()).strip() == b"saved"
        app = make_app(db)
        async with app.run_test(size=(160, 45)) as pilot:
            await settle(pilot)
            screen = app.screen
            assert isinstance(screen, MainScreen)
            screen._change_timer.pause()
            await settle(pilot)
            runs = screen.query_one("RunsPane")
            header = next(h for h in screen.chat.transcript.query("RunHeader") if h.run_id == "run-held")
            assert header.has_class("-elsewhere")
            assert not await screen.check_other_windows()

            holder.send_signal(signal.SIGKILL)
            await holder.wait()
            # The dead process wrote nothing, yet the next check sees its run is held no more.
            assert await screen.check_other_windows()
            assert [r.run_id for r in runs.runs] == ["run-held"]
            header = next(h for h in screen.chat.transcript.query("RunHeader") if h.run_id == "run-held")
            assert header.has_class("-crashed")
            assert not await screen.check_other_windows()
    finally:
        if holder.returncode is None:
            holder.kill()
            await holder.wait()


async def test_a_run_landing_while_the_open_transcript_reloads_is_shown_at_the_next_check(tmp_path, monkeypatch):
    # A worker elsewhere completes its checkpoint, then appends to the session: a check can reload
    # the transcript between the two. The check must remember what the stores said before its
    # reload, not after: a mark taken after it held the append the reload missed, so no later
    # check saw a change and the answer never showed (CI, PostgreSQL: the worker's "Done").
    db = tmp_path / "lovia.db"
    await stored_session(db, "s-shared")
    app = make_app(db)
    async with app.run_test(size=(160, 45)) as pilot:
        await settle(pilot)
        screen = app.screen
        screen._change_timer.pause()  # the checks are driven here, one at a time
        await settle(pilot)
        chat = screen.chat
        real_open = chat.open_session
        landed = []

        async def open_then_a_run_lands(session_id, *args, **kwargs):
            opened = await real_open(session_id, *args, **kwargs)
            if not landed:  # right after the reload read the session: the other process appends
                landed.append(True)
                async with SQLiteSession(db, wal=True) as other:
                    await other.append("s-shared", [UserMessage(text="late question"),
                                                    AssistantMessage(text="landed while reloading")], run_id="late")
            return opened

        monkeypatch.setattr(chat, "open_session", open_then_a_run_lands)
        async with SQLiteSession(db, wal=True) as other:
            await other.append("s-shared", [UserMessage(text="question"), AssistantMessage(text="answered elsewhere")],
                               run_id="second")
        assert await screen.check_other_windows()
        await settle(pilot)
        assert landed and chat.transcript.run_ids == {"first", "second"}
        await screen.check_other_windows()
        await settle(pilot)
        assert chat.transcript.run_ids == {"first", "second", "late"}


async def test_a_session_this_window_opened_itself_is_not_taken_for_a_change_elsewhere(tmp_path):
    """A fork opens its new session from the chat, not through the screen: the next check, which
    sees this window's own writes, read the new session against the old one's mark and told a
    reader whose cursor was up the transcript that another window had changed it."""
    db = tmp_path / "lovia.db"
    async with SQLiteSession(db, wal=True) as session, SQLiteCheckpointer(db, wal=True):
        for session_id in ("s-a", "s-b"):
            for n in range(3):
                await session.append(session_id, [UserMessage(text=f"question {n}"),
                                                  AssistantMessage(text=f"answer {n}")], run_id=f"{session_id}-{n}")
    app = make_app(db)
    async with app.run_test(size=(160, 45)) as pilot:
        await settle(pilot)
        screen: MainScreen = app.main
        screen._change_timer.pause()  # the checks are driven here, one at a time
        await screen.open_session("s-a")
        await settle(pilot)
        await screen.check_other_windows()
        await screen.chat.open_session("s-b")  # as a fork opens the session it made
        transcript = screen.chat.transcript
        transcript.focus()
        await pilot.press("up", "up", "up")  # the reader is up the transcript
        await settle(pilot)
        async with SQLiteSession(db, wal=True) as session:  # a write: the check reads the stores again
            await session.append("s-c", [UserMessage(text="elsewhere")], run_id="s-c-0")
        told(app).clear()
        assert await screen.check_other_windows() is True
        assert not [n for n in told(app) if "changed in another window" in n.message]

        # The control: a change to the session now open, while the reader is up it, is told.
        async with SQLiteSession(db, wal=True) as session:
            await session.append("s-b", [UserMessage(text="from elsewhere")], run_id="s-b-3")
        assert await screen.check_other_windows() is True
        assert [n for n in told(app) if "changed in another window" in n.message]


class OtherWindowStartsMeanwhile(SQLiteCheckpointer):
    """The file as another window starts a run in ``s-shared`` just before each claim of this one's."""

    async def claim_alone(self, run_id, owner, **kwargs):
        from lovia import RunHead, RunOwner, RunSnapshot

        other_window = RunOwner(host="laptop-2", pid=777, started=1)
        await self.save(RunSnapshot("run-of-the-other-window", RunHead(
            agent="assistant", session_id="s-shared", first_input="theirs", owner=other_window,
            claim="their-claim", lease_until=time.time() + 600), [UserMessage(text="theirs")]))
        return await super().claim_alone(run_id, owner, **kwargs)


async def app_where_another_window_starts_a_run(db):
    """The app on ``db`` (one run stored in ``s-shared``), its checkpointer an :class:`OtherWindowStartsMeanwhile`."""
    from lovia import Agent, DemoModel
    from lovia.tui.app import LoviaApp
    from lovia.tui.backend import ChatBackend
    from lovia.tui.config import RememberedState
    from lovia.tui.session_servers import SessionServers

    await stored_session(db, "s-shared")
    state = RememberedState(db.parent / "state.json")
    checkpointer = OtherWindowStartsMeanwhile(db, wal=True)
    backend = ChatBackend(SQLiteSession(db, wal=True), checkpointer,
                          Agent(name="assistant", model=DemoModel(delay=0)), mcp=SessionServers((), state=state))
    return LoviaApp(backend, model_label="demo (offline)", state=state), checkpointer


async def test_a_message_sent_as_another_window_starts_a_run_in_the_session_is_refused_and_kept(tmp_path):
    # Two windows sending at the same moment both ran: each looked for a running run of the session
    # before the other's had started. Here the other window's run starts in exactly that moment
    # (after this window looked, before its run's claim); the claim itself now refuses.
    from lovia.tui.widgets.notice import NoticeView

    db = tmp_path / "lovia.db"
    app, _ = await app_where_another_window_starts_a_run(db)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        chat = app.screen.chat
        assert chat.session_id == "s-shared"
        await type_and_send(pilot, "mine")
        await settle(pilot)
        errors = [n.text for n in chat.transcript.query(NoticeView) if n.has_class("-error")]
        assert any("Run 'run-of-the-other-window' of session 's-shared' is being executed by process 777 on "
                   "laptop-2" in text for text in errors), errors
        assert chat.composer.text == "mine"  # nothing of it was stored: the message is back to send again
    async with SQLiteSession(db, wal=True) as session, SQLiteCheckpointer(db, wal=True) as checkpointer:
        assert [s.run_id for s in await session.segments("s-shared")] == ["first"]
        assert [r.run_id for r in await checkpointer.list_runs()] == ["run-of-the-other-window"]


@pytest.mark.parametrize("size", [(80, 24), (160, 45)])
async def test_a_resend_or_regenerate_refused_as_another_window_starts_a_run_keeps_the_edit_and_says_why(
        tmp_path, size):
    """Refused at its run's claim, an edit was shown as a failed new message after the other
    window's, with six lines of run ids, then gone; the composer held its text out of edit mode
    (enter sent it as a new message), and after a regenerate the old message, never typed. The
    resend is now told in a notice and the edit taken up again; nothing of it is shown or kept."""
    from lovia.tui.widgets.notice import NoticeView

    db = tmp_path / "lovia.db"
    app, checkpointer = await app_where_another_window_starts_a_run(db)
    async with app.run_test(size=size) as pilot:
        await settle(pilot)
        chat = app.screen.chat
        await pilot.press("ctrl+l")
        await wait_for(pilot, lambda: chat.has_class("-editing"))
        await pilot.press(*" again", "enter")
        await settle(pilot)
        said = [n.message for n in told(app)]
        assert ("Not resent: another run of this session is being executed: wait for its answer, then press enter "
                "to resend.") in said
        assert chat.has_class("-editing") and chat.composer.text == "hello again"  # enter tries again
        assert not [n for n in chat.transcript.query(NoticeView) if n.has_class("-error")]
        assert "hello again" not in [view.message.text for view in chat.transcript.views if hasattr(view, "message")]

        await checkpointer.delete("run-of-the-other-window")  # it ended there
        await pilot.press("escape")
        await settle(pilot)
        told(app).clear()
        await pilot.press("ctrl+g")
        await settle(pilot)
        said = [n.message for n in told(app)]
        assert ("Not regenerated: another run of this session is being executed: wait for its answer, then ctrl+g to "
                "regenerate.") in said
        assert chat.composer.text == ""  # not the message regenerate asked again, which nobody typed
    async with SQLiteSession(db, wal=True) as session:
        assert [s.run_id for s in await session.segments("s-shared")] == ["first"]  # nothing rewound


async def test_a_change_elsewhere_reads_only_the_sessions_it_changed(tmp_path):
    """With many sessions a full listing holds the app a tenth of a second; another window's write
    to one session reads that session alone (the store's change log names it), and what the list
    shows is what a full listing would show: a new session, a rename, a deletion, a run in flight."""
    from lovia.tui.widgets.sessions_pane import SessionsPane
    from tests.tui.counting import CountingSession, listing_calls, reset

    db = tmp_path / "lovia.db"
    async with SQLiteSession(db, wal=True) as session, SQLiteCheckpointer(db, wal=True):
        for i in range(40):
            await session.append(f"s-{i:02d}", [UserMessage(text=f"question {i}"), AssistantMessage(text="answer")])
    store = CountingSession(db, wal=True)
    app = make_app(db, session=store)
    async with app.run_test(size=(160, 45)) as pilot:
        await settle(pilot)
        screen = app.screen
        screen._change_timer.pause()  # the checks are driven here, one at a time
        await wait_for(pilot, lambda: len(screen.query_one(SessionsPane).listed) == 40)  # every session listed
        await settle(pilot)
        assert await screen.check_other_windows() is False

        async def check_once() -> dict[str, int]:
            """The listing calls of one check; one ``session_info`` of them is the open session's mark."""
            reset(store)
            assert await screen.check_other_windows() is True
            return listing_calls(store)

        def listed() -> list[tuple[str, str]]:
            return [(info.session_id, info.title) for info in screen.query_one(SessionsPane).listed]

        await run_in_another_process(db, "s-05", "run-in-an-old-session", "back to five")
        assert await check_once() == {"session_info": 1 + 1}
        assert listed()[0] == ("s-05", "question 5")

        await run_in_another_process(db, "s-new", "run-in-a-new-session", "something new")
        assert await check_once() == {"session_info": 1 + 1}
        assert listed()[0] == ("s-new", "something new")

        async with SQLiteSession(db, wal=True) as other:
            await other.rename_session("s-10", "Renamed elsewhere")
            await other.trash_session("s-20")
        assert await check_once() == {"session_info": 2 + 1}
        assert ("s-10", "Renamed elsewhere") in listed() and "s-20" not in dict(listed())

        async with SQLiteSession(db, wal=True) as full:
            assert listed() == [(info.session_id, info.title) for info in await app.screen.backend.sessions()]
            assert len(await full.list_sessions()) == 40


async def test_this_windows_own_rename_and_delete_read_only_that_session(tmp_path):
    """Renaming or deleting a session here is a write the change log names too: the lists read that
    session alone, not every session again."""
    from lovia.tui.screens.confirm import ConfirmScreen
    from lovia.tui.screens.prompt import PromptScreen
    from lovia.tui.widgets.sessions_pane import SessionsPane
    from tests.tui.counting import CountingSession, listing_calls, reset

    db = tmp_path / "lovia.db"
    async with SQLiteSession(db, wal=True) as session, SQLiteCheckpointer(db, wal=True):
        for i in range(40):
            await session.append(f"s-{i:02d}", [UserMessage(text=f"question {i}"), AssistantMessage(text="answer")])
    store = CountingSession(db, wal=True)
    app = make_app(db, session=store)
    async with app.run_test(size=(160, 45)) as pilot:
        await settle(pilot)
        screen = app.screen
        screen._change_timer.pause()
        pane = screen.query_one(SessionsPane)
        await wait_for(pilot, lambda: len(pane.listed) == 40)
        await settle(pilot)
        screen.query_one("#session-list").focus()
        await pilot.press("down")  # s-38, below the open s-39
        await settle(pilot)
        reset(store)
        await pilot.press("f2")
        await wait_for(pilot, lambda: isinstance(app.screen, PromptScreen))
        app.screen.query_one("#answer").value = "Thirty-eight"
        await pilot.press("enter")
        await settle(pilot)
        assert ("s-38", "Thirty-eight") in [(info.session_id, info.title) for info in pane.listed]
        assert "list_sessions" not in listing_calls(store)
        reset(store)
        await pilot.press("delete")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen))
        await pilot.press("y")
        await settle(pilot)
        assert "s-38" not in [info.session_id for info in pane.listed] and len(pane.listed) == 39
        assert "list_sessions" not in listing_calls(store)


async def test_a_run_elsewhere_in_a_new_session_is_listed_whatever_this_window_did_meanwhile(tmp_path):
    """Runs not stored yet are compared with what the sessions list was last brought up to date
    with, not with what another update (this window's own run, opening a session) read since: a
    stopped run elsewhere in a new session was never listed, one discarded stayed listed."""
    from lovia import RunHead, RunSnapshot
    from lovia.tui.widgets.sessions_pane import SessionsPane

    db = tmp_path / "lovia.db"
    await stored_session(db, "s-a")
    app = make_app(db)
    async with app.run_test(size=(160, 45)) as pilot:
        await settle(pilot)
        screen = app.screen
        screen._change_timer.pause()
        await screen.refresh_lists()
        await settle(pilot)
        pane = screen.query_one(SessionsPane)

        async def listed_after_checks() -> list[str]:
            for _ in range(2):
                await screen.check_other_windows()
                await settle(pilot)
            return sorted(info.session_id for info in pane.listed)

        async with SQLiteCheckpointer(db, wal=True) as other:
            head = RunHead(agent="assistant", status="interrupted", turn=1, session_id="s-new",
                           first_input="from elsewhere")
            await other.save(RunSnapshot("run-elsewhere", head, [UserMessage(text="from elsewhere")]))
        await type_and_send(pilot, "meanwhile here")  # this window's run reads the runs again
        assert await listed_after_checks() == ["s-a", "s-new"]

        async with SQLiteCheckpointer(db, wal=True) as other:
            await other.delete("run-elsewhere")
        await screen.open_session("s-a")  # reads the runs again too
        assert await listed_after_checks() == ["s-a"]
        assert sorted(info.session_id for info in await screen.backend.sessions()) == ["s-a"]
