"""The UI's delete (to the trash), restore, purge and rewind undo over the PostgreSQL stores.

The same tests as test_trash_and_undo_backend.py (imported here, so they run with this module's
``make_backend``): the backend's flows, which pair the session store's trash and undo with the
checkpointer, on ``PostgresSession`` and ``PostgresCheckpointer`` sharing a fresh database. The one
test there that damages a SQLite file in place stays SQLite's.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from lovia import Agent, ScriptedModel
from lovia.stores.postgres import PostgresCheckpointer, PostgresSession
from lovia.tui.backend import ChatBackend
from tests.tui.test_trash_and_undo_backend import (  # noqa: F401  (collected here, with this module's fixture)
    test_delete_forgets_the_undo,
    test_delete_keeps_a_completed_run_its_session_never_got,
    test_delete_moves_the_session_to_the_trash_with_its_unfinished_runs_and_restore_brings_it_back,
    test_expired_items_are_purged_when_listed_never_before,
    test_purge_one_item_now,
    test_restore_is_refused_while_a_new_conversation_holds_the_id,
    test_the_first_session_listing_purges_the_expired_trash_once,
    test_the_next_message_forgets_the_undo,
    test_undo_after_a_regenerate_brings_the_transcript_back_and_drops_the_new_answer,
    test_undo_after_editing_a_stopped_runs_message_brings_that_run_back_as_partial,
    test_undo_is_refused_while_a_run_of_the_session_executes_and_drops_a_stopped_resend,
)


@pytest.fixture
async def make_backend(postgres_url) -> AsyncIterator:
    opened: list = []

    def make(answers: list[str], **options) -> ChatBackend:
        session, checkpointer = PostgresSession(postgres_url), PostgresCheckpointer(postgres_url)
        opened.extend([session, checkpointer])
        return ChatBackend(session, checkpointer, Agent(name="bot", model=ScriptedModel(answers)), **options)

    yield make
    for store in opened:
        await store.close()
