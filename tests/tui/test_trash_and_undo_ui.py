"""The trash (f8) and the rewind undo (u) from the keyboard, in the real app on a real SQLite file,
at 80x24 and full size."""

from __future__ import annotations

import sqlite3

import pytest

from lovia import SQLiteSession
from lovia.tui.screens.confirm import ConfirmScreen
from lovia.tui.screens.trash import TrashScreen, purge_text
from tests.tui.conftest import make_app, settle, told, type_and_send, wait_for
from tests.tui.test_stop_and_continue import type_and_send_no_settle

SIZES = [(80, 24), (160, 45)]


def texts(app) -> list[str]:
    """The user and assistant texts the transcript shows, in order."""
    return [view.copy_text() for view in app.screen.chat.transcript.views]


def trash_rows(db) -> int:
    with sqlite3.connect(db) as conn:
        count = conn.execute("SELECT COUNT(*) FROM lovia_trash").fetchone()[0]
    conn.close()
    return count


async def trash_settled(pilot) -> None:
    """Wait until the trash screen's own work is done (``settle`` would wait for the flow that shows it too)."""
    await pilot.pause()
    await wait_for(pilot, lambda: all(w.is_finished for w in pilot.app.workers if isinstance(w.node, TrashScreen)))
    await pilot.pause()


async def delete_open_session(pilot) -> None:
    """ctrl+b, delete on the highlighted (open) session, y."""
    await pilot.press("ctrl+b")
    await pilot.pause()
    pilot.app.screen.query_one("#session-list").focus()
    await pilot.pause()
    await pilot.press("delete")
    await wait_for(pilot, lambda: isinstance(pilot.app.screen, ConfirmScreen))
    question = str(pilot.app.screen.query_one("#question").render())
    assert "moves to the trash" in question and "f8 restores it for 30 days" in question
    await pilot.press("y")
    await settle(pilot)


async def hello_sent_then_deleted(pilot) -> str:
    """Send "hello" in a new session, then delete that session; its id."""
    await type_and_send(pilot, "hello")
    session_id = pilot.app.screen.chat.session_id
    await delete_open_session(pilot)
    return session_id


@pytest.mark.parametrize("size", SIZES)
async def test_a_deleted_session_is_restored_from_the_trash(tmp_path, size):
    db = tmp_path / "lovia.db"
    app = make_app(db)
    async with app.run_test(size=size) as pilot:
        await type_and_send(pilot, "hello")
        session_id = app.screen.chat.session_id
        shown = texts(app)
        await delete_open_session(pilot)
        assert app.screen.chat.session_id != session_id
        assert session_id not in [s.session_id for s in app.screen.query_one("SessionsPane").sessions]
        assert trash_rows(db) == 1

        await pilot.press("f8")
        await wait_for(pilot, lambda: isinstance(app.screen, TrashScreen) and app.screen.items)
        trash = app.screen
        [item] = trash.items
        assert item.session_id == session_id and item.title == "hello"
        await pilot.press("enter")
        await settle(pilot)
        assert not isinstance(app.screen, TrashScreen)
        assert app.screen.chat.session_id == session_id
        assert texts(app) == shown
        assert session_id in [s.session_id for s in app.screen.query_one("SessionsPane").sessions]
        assert trash_rows(db) == 0
        # Deleted from the sessions pane shown over the conversation (80x24), restored: back to the conversation
        assert not app.screen.has_class("-sessions-open")


@pytest.mark.parametrize("key", ["r", "enter"])
async def test_keys_typed_right_after_a_restore_go_into_the_restored_sessions_message_box(tmp_path, key):
    """A new user's trial: ``f8``, ``r`` and "xyz" at once restored the session without "xyz": the keys
    went where focus came back to, the message box of the session open before, while the restored
    one was being opened (its draft took the box's place)."""
    from tests.tui.test_new_user_pass import burst as burst_keys

    db = tmp_path / "lovia.db"
    app = make_app(db)
    async with app.run_test(size=(80, 24)) as pilot:
        session_id = await hello_sent_then_deleted(pilot)
        await pilot.press("f8")
        await wait_for(pilot, lambda: isinstance(app.screen, TrashScreen) and app.screen.items)
        await trash_settled(pilot)
        burst_keys(app, key, "x", "y", "z")
        await wait_for(pilot, lambda: app.main.chat.session_id == session_id)
        await settle(pilot)
        await wait_for(pilot, lambda: app.main.chat.composer.text == "xyz")
        assert app.screen is app.main


@pytest.mark.parametrize("size", SIZES)
async def test_purge_from_the_trash_asks_first(tmp_path, size):
    db = tmp_path / "lovia.db"
    app = make_app(db)
    async with app.run_test(size=size) as pilot:
        await type_and_send(pilot, "hello")
        await delete_open_session(pilot)
        await pilot.press("f8")
        await wait_for(pilot, lambda: isinstance(app.screen, TrashScreen) and app.screen.items)
        await pilot.press("delete")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen))
        await pilot.press("n")  # changed its mind: nothing happens
        await trash_settled(pilot)
        assert trash_rows(db) == 1
        await pilot.press("delete")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen))
        assert "cannot be undone" in str(app.screen.query_one("#question").render())
        await pilot.press("y")
        await trash_settled(pilot)
        assert isinstance(app.screen, TrashScreen) and app.screen.items == []
        assert app.screen.has_class("-empty")
        assert trash_rows(db) == 0
        assert any(n.message == "Purged “hello”: it is gone for good." for n in told(app))  # said, not only shown
        await pilot.press("escape")
        await settle(pilot)
        assert not isinstance(app.screen, TrashScreen)


async def test_restore_refused_says_why_and_keeps_the_item(tmp_path):
    db = tmp_path / "lovia.db"
    app = make_app(db)
    async with app.run_test(size=(80, 24)) as pilot:
        session_id = await hello_sent_then_deleted(pilot)
        async with SQLiteSession(db, wal=True) as other:  # another window starts a session under that id
            await other.append(session_id, [], run_id="elsewhere")
        await pilot.press("f8")
        await wait_for(pilot, lambda: isinstance(app.screen, TrashScreen) and app.screen.items)
        await pilot.press("r")
        await trash_settled(pilot)
        assert isinstance(app.screen, TrashScreen) and len(app.screen.items) == 1
        assert any("exists again" in n.message for n in told(app))
        assert trash_rows(db) == 1


async def test_the_trash_from_the_command_palette(tmp_path):
    db = tmp_path / "lovia.db"
    app = make_app(db)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("ctrl+p")
        await pilot.pause()
        await pilot.press(*"Trash")
        await pilot.pause(0.3)
        await pilot.press("enter")
        await wait_for(pilot, lambda: isinstance(app.screen, TrashScreen))
        await trash_settled(pilot)
        assert app.screen.has_class("-empty")


def test_purge_countdown_rounds_days_up():
    assert purge_text(100 + 7 * 86400, 160) == "purged in 7 days"
    assert purge_text(100 + 3600 * 5, 100) == "purged in 5 h"
    assert purge_text(100, 200) == "purged at the next listing"


# -- undo ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("size", SIZES)
async def test_u_undoes_a_regenerate_until_the_next_message(tmp_path, size):
    db = tmp_path / "lovia.db"
    app = make_app(db)
    async with app.run_test(size=size) as pilot:
        await type_and_send(pilot, "hello")
        await type_and_send(pilot, "second question")
        before = texts(app)
        transcript = app.screen.chat.transcript
        assert not transcript.undo_available

        await pilot.press("ctrl+g")
        await settle(pilot)
        assert transcript.undo_available
        transcript.focus()
        await pilot.pause()
        await pilot.press("u")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen))
        assert "What it dropped comes back (2 entries of 1 run)" in " ".join(str(app.screen.query_one("#question").render()).split())
        await pilot.press("y")
        await settle(pilot)
        assert texts(app) == before
        assert not app.screen.chat.transcript.undo_available

        # A regenerate then the next message: nothing to undo any more.
        await pilot.press("ctrl+g")
        await settle(pilot)
        assert app.screen.chat.transcript.undo_available
        await type_and_send(pilot, "third")
        assert not app.screen.chat.transcript.undo_available
        app.screen.chat.transcript.focus()
        await pilot.press("u")
        await settle(pilot)
        assert not isinstance(app.screen, ConfirmScreen)


@pytest.mark.parametrize("size", SIZES)
async def test_a_stopped_next_message_ends_the_undo_and_an_undo_never_takes_it(tmp_path, size):
    # u stayed on offer after the next message while its run was stopped (not stored yet), and
    # undoing then discarded that run with the regenerate's: what it held was lost.
    db = tmp_path / "lovia.db"
    app = make_app(db)
    async with app.run_test(size=size) as pilot:
        await type_and_send(pilot, "hello")
        await pilot.press("ctrl+g")
        await settle(pilot)
        transcript = app.screen.chat.transcript
        assert transcript.undo_available
        await type_and_send_no_settle(pilot, "wait 30")
        await wait_for(pilot, lambda: app.screen.chat.running)
        await pilot.pause(0.3)
        await pilot.press("escape")
        await wait_for(pilot, lambda: not app.screen.chat.running)
        await settle(pilot)
        stopped = [r for r in await app.backend.checkpointer.list_runs() if r.head.status == "interrupted"]
        assert len(stopped) == 1
        assert not transcript.undo_available
        transcript.focus()
        await pilot.press("u")
        await settle(pilot)
        assert not isinstance(app.screen, ConfirmScreen)
        assert any(n.message.startswith("Nothing to undo") for n in told(app))
        assert await app.backend.checkpointer.load(stopped[0].run_id) is not None


async def test_undo_an_edit_from_the_command_palette(tmp_path):
    db = tmp_path / "lovia.db"
    app = make_app(db)
    async with app.run_test(size=(80, 24)) as pilot:
        await type_and_send(pilot, "hello")
        await type_and_send(pilot, "second question")
        before = texts(app)
        await pilot.press("ctrl+l")  # edit the last message, and resend it changed
        await pilot.pause()
        await pilot.press("end", *" please", "enter")
        await settle(pilot)
        assert texts(app)[-2] == "second question please"
        await pilot.press("ctrl+p")
        await pilot.pause()
        await pilot.press(*"Undo rewind")
        await pilot.pause(0.3)
        await pilot.press("enter")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen))
        await pilot.press("y")
        await settle(pilot)
        assert texts(app) == before


async def test_the_trash_keeps_a_deleted_session_across_a_restart(tmp_path):
    db = tmp_path / "lovia.db"
    app = make_app(db)
    async with app.run_test(size=(80, 24)) as pilot:
        await type_and_send(pilot, "hello")
        await delete_open_session(pilot)
    app = make_app(db)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("f8")
        await wait_for(pilot, lambda: isinstance(app.screen, TrashScreen) and app.screen.items)
        assert [item.title for item in app.screen.items] == ["hello"]


async def test_deleting_a_session_with_no_completed_run_names_it_as_the_list_does(tmp_path):
    # It was named by its id, "with its 0 entries": the list titles it by its first run's input.
    from lovia import RunHead, RunSnapshot, SQLiteCheckpointer, UserMessage

    db = tmp_path / "lovia.db"
    async with SQLiteCheckpointer(db, wal=True) as checkpointer:
        await checkpointer.save(RunSnapshot("run-unfinished", RunHead(
            agent="assistant", status="interrupted", session_id="s-unfinished", first_input="zebra question"),
            [UserMessage(text="zebra question")]))
    app = make_app(db)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("ctrl+b")
        await pilot.pause()
        app.screen.query_one("#session-list").focus()
        await pilot.pause()
        await pilot.press("delete")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen))
        question = str(app.screen.query_one("#question").render())
        assert "“zebra question”" in question and "s-unfinished" not in question
        assert "with its unfinished runs" in question and "0 entries" not in question
        await pilot.press("n")
        await settle(pilot)


async def test_a_trashed_session_with_no_title_reads_untitled_as_in_the_list_not_its_id_twice(tmp_path):
    from lovia import AssistantMessage

    db = tmp_path / "lovia.db"
    async with SQLiteSession(db, wal=True) as session:
        await session.append("s-no-words", [AssistantMessage(text="an answer with no question")])
        await session.trash_session("s-no-words")
    app = make_app(db)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("f8")
        await wait_for(pilot, lambda: isinstance(app.screen, TrashScreen) and app.screen.items)
        shown = str(app.screen.query_one("#trash-list").get_option_at_index(0).prompt).splitlines()
        assert shown[0] == "(untitled)" and shown[1].startswith("s-no-words · deleted")


async def test_the_80_column_footer_offers_the_undo_when_a_moved_key_takes_more_room(tmp_path):
    # With copy moved to ctrl+y (^y, one cell wider than c), "u Undo rewind" no longer fitted, while
    # "t Trim outputs", which applies all the time, kept its place; u worked unseen.
    from lovia.tui.widgets.footer import LoviaFooter

    app = make_app(tmp_path / "lovia.db", keys={"transcript.copy": ("ctrl+y",)})
    async with app.run_test(size=(80, 24)) as pilot:
        await type_and_send(pilot, "what time is it?")  # a tool call: t applies in this session
        await pilot.press("ctrl+g")
        await settle(pilot)
        transcript = app.screen.chat.transcript
        transcript.focus()
        await pilot.pause()
        shown = [entry.action for entry, _, _ in app.screen.query_one(LoviaFooter).spans()]
        assert "undo_rewind" in shown and "copy" in shown, shown
