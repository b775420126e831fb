"""A store that fails while the app only reads to refresh the screen: a notice, never a dead app."""

from __future__ import annotations

from lovia import BUILTIN_TOOLS, Agent, SQLiteCheckpointer, SQLiteSession, StoreError
from lovia.models import DemoModel
from lovia.tui.app import LoviaApp
from lovia.tui.backend import ChatBackend
from lovia.tui.config import RememberedState
from lovia.tui.widgets.chat_panel import ChatPanel
from lovia.tui.widgets.notice import NoticeView
from tests.tui.conftest import make_app, settle, told, type_and_send


async def test_a_failing_store_during_a_refresh_is_told_and_the_app_stays_up(tmp_path):
    app = make_app(tmp_path / "lovia.db")
    async with app.run_test(size=(160, 45)) as pilot:
        await type_and_send(pilot, "calculate 6*7")
        shown = [s.session_id for s in app.screen.query_one("SessionsPane").sessions]
        chat = app.screen.chat
        # The database goes away under the app (closed stores refuse every call with a StoreError).
        await app.backend.checkpointer.close()
        await app.backend.session.close()
        chat.post_message(ChatPanel.Changed(chat.session_id, chat.transcript.run_ids.pop() if chat.transcript.run_ids
                                            else None))
        await settle(pilot)
        await chat.refresh_title()
        chat.action_resume()  # from a worker: it may ask first
        await settle(pilot)
        assert app.is_running and app.return_code is None
        notices = [n.message for n in told(app)]
        assert any(m.startswith("Could not reload the lists:") and "closed" in m for m in notices)
        assert any(m.startswith("Could not read the session's title:") for m in notices)
        assert any(m.startswith("Could not list this session's runs:") for m in notices)
        assert [s.session_id for s in app.screen.query_one("SessionsPane").sessions] == shown  # the last view stays
        assert str(chat.query_one("#chat-title").render()) == "calculate 6*7"


class UnwritableCheckpoints:
    """A real SQLite checkpointer on a disk that has just filled up: nothing of a run can be written."""

    def __init__(self, checkpointer) -> None:
        self.checkpointer = checkpointer

    def __getattr__(self, name):
        return getattr(self.checkpointer, name)

    async def claim(self, *args, **kwargs):
        raise StoreError("database or disk is full")

    async def claim_alone(self, *args, **kwargs):  # the claim the app makes (one run per session)
        raise StoreError("database or disk is full")

    async def save(self, snapshot) -> None:
        raise StoreError("database or disk is full")


async def test_a_message_whose_run_could_not_be_stored_at_all_goes_back_to_the_composer(tmp_path):
    db = tmp_path / "lovia.db"
    agent = Agent(name="assistant", tools=BUILTIN_TOOLS, model=DemoModel(delay=0))
    backend = ChatBackend(SQLiteSession(db, wal=True), UnwritableCheckpoints(SQLiteCheckpointer(db, wal=True)), agent)
    app = LoviaApp(backend, model_label="demo", state=RememberedState(tmp_path / "state.json"))
    async with app.run_test(size=(160, 45)) as pilot:
        await type_and_send(pilot, "my long careful question")
        chat = app.screen.chat
        assert chat.composer.text == "my long careful question"  # its only copy was on screen
        notice = chat.transcript.query(NoticeView).last()
        assert "disk is full" in notice.text and "back in the composer" in notice.hint


async def test_a_message_whose_run_could_not_be_stored_comes_back_before_what_was_typed_after_it(tmp_path):
    """What is typed right after enter stays in the composer; the message that could not be stored
    came back only into an empty one, and was lost beside it."""
    from tests.tui.conftest import settle
    from tests.tui.test_new_user_pass import burst

    db = tmp_path / "lovia.db"
    agent = Agent(name="assistant", tools=BUILTIN_TOOLS, model=DemoModel(delay=0))
    backend = ChatBackend(SQLiteSession(db, wal=True), UnwritableCheckpoints(SQLiteCheckpointer(db, wal=True)), agent)
    app = LoviaApp(backend, model_label="demo", state=RememberedState(tmp_path / "state.json"))
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        chat = app.screen.chat
        chat.composer.focus()
        await pilot.pause()
        burst(app, *"question", "enter", *"next")
        await settle(pilot)
        assert chat.composer.text == "question\nnext"
