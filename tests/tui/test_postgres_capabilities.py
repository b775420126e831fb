"""The app on PostgreSQL hides, by capability, what its session store lacks, and keeps working.

``CorePostgresSession`` is the real PostgreSQL session store without its extras (search, trash,
fork, rewind undo: :mod:`lovia.stores._postgres_extras`), on a real server: a store written to
lovia's protocols may offer as little. The full ``PostgresSession`` offers all of it.
"""

from __future__ import annotations

from lovia import Agent, ChangeTrackingSession
from lovia.models import DemoModel
from lovia.stores._postgres_db import PostgresSchema
from lovia.stores._postgres_session import _PostgresSessionCore, session_v1
from lovia.stores.postgres import PostgresCheckpointer, PostgresSession
from lovia.tui.app import LoviaApp
from lovia.tui.backend import ChatBackend
from lovia.tui.config import RememberedState
from lovia.tui.screens.confirm import ConfirmScreen
from lovia.tui.screens.search import SearchScreen
from lovia.tui.screens.trash import TrashScreen
from lovia.tui.widgets.assistant_message import AssistantMessageView
from lovia.tui.widgets.sessions_pane import SessionsPane
from tests.tui.conftest import settle, told, type_and_send, wait_for


class CorePostgresSession(_PostgresSessionCore):
    """The PostgreSQL session store with its core only: listing, rewind, trim, paging, change reports."""

    _schema = PostgresSchema("session", (session_v1,))


def app_on(session, url: str, tmp_path) -> LoviaApp:
    agent = Agent(name="assistant", model=DemoModel(delay=0))
    backend = ChatBackend(session, PostgresCheckpointer(url), agent)
    return LoviaApp(backend, model_label="demo (offline)", state=RememberedState(tmp_path / "state.json"))


async def test_a_postgres_store_without_search_trash_fork_or_undo_hides_them_and_still_chats(tmp_path, postgres_url):
    session = CorePostgresSession(postgres_url)
    app = app_on(session, postgres_url, tmp_path)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        backend = app.backend
        assert backend.can_list_sessions and backend.can_rewind and backend.can_trim and backend.can_list_runs
        assert not (backend.can_search or backend.can_trash or backend.can_fork or backend.can_undo_rewind)
        assert not isinstance(session, ChangeTrackingSession)  # its schema has no change log
        await app.main.refresh_lists()
        assert not [t for t in told(app) if "Could not" in t.message]

        await type_and_send(pilot, "what is 6 times 7")
        screen = app.main
        chat = screen.chat
        session_id = chat.session_id
        assert session_id is not None and len(await session.load(session_id)) >= 2
        first_answer = chat.transcript.query(AssistantMessageView).last().text

        # ctrl+f and f8 are not offered, and pressing them opens nothing
        assert not screen.check_action("search", ()) and not screen.check_action("trash", ())
        await pilot.press("ctrl+f")
        await pilot.press("f8")
        await settle(pilot)
        assert not isinstance(app.screen, (SearchScreen, TrashScreen))

        # regenerate rewinds (the store can), and afterwards no undo is offered; f on a message forks nothing
        await pilot.press("ctrl+g")
        await settle(pilot)
        assert chat.transcript.query(AssistantMessageView).last().text == first_answer
        chat.transcript.focus()
        await pilot.press("up")
        assert not chat.transcript.check_action("fork", ()) and not chat.transcript.check_action("undo_rewind", ())
        await pilot.press("f", "u")
        await settle(pilot)
        assert [info.session_id for info in await session.list_sessions()] == [session_id]

        titles = {command.title: command.help for command in app.get_system_commands(app.screen)}
        assert not {"Trash", "Fork from selected message", "Undo rewind"} & set(titles)
        assert titles["Delete session"] == "Delete the open session for good (delete in the sessions list)"

        # delete asks, then removes it for good (no trash to move it to)
        screen.query_one(SessionsPane).post_message(SessionsPane.Action("delete", session_id))
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen))
        assert "removed for good" in app.screen.question
        await pilot.press("y")
        await settle(pilot)
        assert await session.list_sessions() == [] and await session.load(session_id) == []


async def test_the_full_postgres_session_offers_search_trash_fork_and_undo(tmp_path, postgres_url):
    app = app_on(PostgresSession(postgres_url), postgres_url, tmp_path)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        backend = app.backend
        assert backend.can_search and backend.can_trash and backend.can_fork and backend.can_undo_rewind
        assert app.main.check_action("search", ()) and app.main.check_action("trash", ())
        await pilot.press("ctrl+f")
        await wait_for(pilot, lambda: isinstance(app.screen, SearchScreen))
