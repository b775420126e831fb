"""The UI's delete (to the trash), restore, purge and rewind undo, over real stores (memory and a SQLite file)."""

from __future__ import annotations

import sqlite3
import time
from collections.abc import AsyncIterator

import pytest

from lovia import (
    Agent,
    InMemoryCheckpointer,
    InMemorySession,
    ModelError,
    RunClaimedError,
    RunSnapshot,
    ScriptedModel,
    SQLiteCheckpointer,
    SQLiteSession,
    UserError,
    UserMessage,
)
from lovia.entries import entry_to_dict
from lovia.tui.backend import ChatBackend
from tests.tui.test_backend_run_actions import a_dead_owner, stored_head


@pytest.fixture(params=["memory", "sqlite"])
async def make_backend(request, tmp_path) -> AsyncIterator:
    opened: list = []

    def make(answers: list[str], **options) -> ChatBackend:
        if request.param == "memory":
            session, checkpointer = InMemorySession(), InMemoryCheckpointer()
        else:
            db = tmp_path / "lovia.db"
            session, checkpointer = SQLiteSession(db, wal=True), SQLiteCheckpointer(db, wal=True)
            opened.extend([session, checkpointer])
        return ChatBackend(session, checkpointer, Agent(name="bot", model=ScriptedModel(answers)), **options)

    yield make
    for store in opened:
        await store.close()


async def finish(started) -> None:
    async for _ in started.stream:
        pass


async def chat(backend: ChatBackend, session_id: str, *texts: str) -> None:
    for text in texts:
        await finish(await backend.send(session_id, text))


async def transcript(backend: ChatBackend, session_id: str) -> list:
    return [(s.run_id, [entry_to_dict(e) | {"created_at": 0} for e in s.entries])
            for s in await backend.session.segments(session_id)]


async def crashed_run(backend: ChatBackend, session_id: str, run_id: str, text: str) -> None:
    head = stored_head(session_id=session_id, owner=a_dead_owner(), status="running", claim=None, lease_until=None,
                       first_input=text, started_at=time.time(), updated_at=time.time())
    await backend.checkpointer.save(RunSnapshot(run_id, head, [UserMessage(text=text)]))


# -- trash --------------------------------------------------------------------------------------


async def test_delete_moves_the_session_to_the_trash_with_its_unfinished_runs_and_restore_brings_it_back(
        make_backend):
    backend = make_backend(["one", "two", "four"])
    await chat(backend, "s", "first", "second")
    await crashed_run(backend, "s", "crashed-run", "third, never answered")
    before = await transcript(backend, "s")

    item = await backend.delete_session("s")
    assert item is not None and item.session_id == "s" and item.title == "first"
    assert await backend.session.segments("s") == []
    assert [s.session_id for s in await backend.sessions()] == []
    assert await backend.checkpointer.list_runs() == []  # no start-up replays a run into a trashed session
    assert [t.trash_id for t in await backend.trash()] == [item.trash_id]
    assert backend.purges_at(item) == pytest.approx(item.deleted_at + 30 * 86400)

    assert await backend.restore_session(item.trash_id) == "s"
    after = await backend.session.segments("s")
    crashed = ("crashed-run", [entry_to_dict(after[-1].entries[0]) | {"created_at": 0}])
    assert await transcript(backend, "s") == [*before, crashed]
    assert after[-1].run_id == "crashed-run" and after[-1].meta["partial"] and after[-1].meta["ended"] == "crashed"
    assert await backend.trash() == []
    # The restored session goes on as before.
    await chat(backend, "s", "fourth")
    assert len(await backend.session.segments("s")) == 4


async def test_delete_keeps_a_completed_run_its_session_never_got(make_backend):
    # The spec's crash window: the run's checkpoint was finalized, its session append never
    # happened (here: the session lost it). Its checkpoint is all there is of its answer, so the
    # deletion puts it in the session (the spec's replay, no model call) before deleting it.
    backend = make_backend(["one", "two"])
    await chat(backend, "s", "first", "second")
    whole = await transcript(backend, "s")
    await backend.session.rewind("s", keep_entries=2)  # the second run's checkpoint stays, completed

    item = await backend.delete_session("s")
    assert item is not None and await backend.checkpointer.list_runs() == []
    await backend.restore_session(item.trash_id)
    assert await transcript(backend, "s") == whole


async def test_a_session_with_a_damaged_run_still_goes_to_the_trash(tmp_path):
    db = tmp_path / "lovia.db"
    async with SQLiteSession(db, wal=True) as session, SQLiteCheckpointer(db, wal=True) as checkpointer:
        backend = ChatBackend(session, checkpointer, Agent(name="bot", model=ScriptedModel(["one", "two"])))
        await chat(backend, "s", "first", "second")
        with sqlite3.connect(db) as conn:  # the second run's entries damaged in place
            conn.execute("UPDATE lovia_segment_entries SET entries = '[{' WHERE segment_seq = 2")
        conn.close()
        item = await backend.delete_session("s")
        assert item is not None and item.run_count == 2


async def test_expired_items_are_purged_when_listed_never_before(make_backend):
    backend = make_backend(["one", "two"], trash_days=1)
    await chat(backend, "old", "first")
    await chat(backend, "new", "second")
    old = await backend.delete_session("old")
    await backend.delete_session("new")
    assert len(await backend.trash()) == 2
    assert len(await backend.trash()) == 2  # listing again purges nothing younger than a day
    backend.trash_days = 0  # both are past their time now
    assert await backend.trash() == []
    with pytest.raises(UserError, match="restored or purged"):
        await backend.restore_session(old.trash_id)


async def test_the_first_session_listing_purges_the_expired_trash_once(make_backend):
    backend = make_backend(["one"], trash_days=0)
    await chat(backend, "s", "first")
    await backend.delete_session("s")
    assert await backend.sessions() == []  # the first listing purges
    assert await backend.trash() == []


async def test_purge_one_item_now(make_backend):
    backend = make_backend(["one", "two"])
    await chat(backend, "a", "first")
    await chat(backend, "b", "second")
    a = await backend.delete_session("a")
    b = await backend.delete_session("b")
    assert await backend.purge_trashed(a.trash_id) == 1
    assert [t.trash_id for t in await backend.trash()] == [b.trash_id]


async def test_restore_is_refused_while_a_new_conversation_holds_the_id(make_backend):
    backend = make_backend(["one", "two"])
    await chat(backend, "s", "first")
    item = await backend.delete_session("s")
    await crashed_run(backend, "s", "new-crashed", "a new start under the same id")
    with pytest.raises(UserError, match="cannot be restored") as refused:
        await backend.restore_session(item.trash_id)
    assert "new start" not in str(refused.value)
    await chat(backend, "t", "x")
    await backend.finalize("new-crashed")
    with pytest.raises(UserError, match="exists again"):
        await backend.restore_session(item.trash_id)
    assert len(await backend.trash()) == 1


# -- rewind undo --------------------------------------------------------------------------------


async def test_undo_after_a_regenerate_brings_the_transcript_back_and_drops_the_new_answer(make_backend):
    backend = make_backend(["one", "two", "two again"])
    await chat(backend, "s", "first", "second")
    before = await transcript(backend, "s")
    assert await backend.rewind_undo("s") is None

    started = await backend.regenerate("s")
    await finish(started)
    assert [e["text"] for _, entries in await transcript(backend, "s") for e in entries][-1] == "two again"
    undo = await backend.rewind_undo("s")
    assert undo is not None and undo.added_run_id == started.stream.run_id

    await backend.undo_rewind("s")
    assert await transcript(backend, "s") == before
    assert await backend.checkpointer.load(started.stream.run_id) is None  # its replay cache went too
    with pytest.raises(UserError, match="nothing to undo"):
        await backend.undo_rewind("s")


async def test_undo_after_editing_a_stopped_runs_message_brings_that_run_back_as_partial(make_backend):
    backend = make_backend(["one", "edited answer"])
    await chat(backend, "s", "first")
    await crashed_run(backend, "s", "stopped-run", "a question")
    target = await backend.last_message("s")
    assert target.run_id == "stopped-run"
    # A crashed run of the session before the edited one would need a decision; this one is the edited one.
    started = await backend.resend_edited("s", target.message, "a better question")
    await finish(started)
    assert [e["text"] for _, entries in await transcript(backend, "s") for e in entries if e["type"] == "user"] == \
        ["first", "a better question"]

    await backend.undo_rewind("s")
    runs = await backend.session.segments("s")
    assert [s.run_id for s in runs][-1] == "stopped-run" and runs[-1].meta["ended"] == "crashed"
    assert [e.text for e in runs[-1].entries] == ["a question"]


async def test_the_next_message_forgets_the_undo(make_backend):
    backend = make_backend(["one", "two", "two again", "three"])
    await chat(backend, "s", "first", "second")
    await finish(await backend.regenerate("s"))
    assert await backend.rewind_undo("s") is not None
    await chat(backend, "s", "third")
    assert await backend.rewind_undo("s") is None
    with pytest.raises(UserError, match="nothing to undo"):
        await backend.undo_rewind("s")


async def test_undo_is_refused_while_a_run_of_the_session_executes_and_drops_a_stopped_resend(make_backend):
    backend = make_backend(["one", "two"])
    await chat(backend, "s", "first", "second")
    before = await transcript(backend, "s")
    await backend.rewind("s", 2)  # as a resend does, before its run starts
    rewound_at = (await backend.rewind_undo("s")).rewound_at
    busy = stored_head(session_id="s", status="running", started_at=rewound_at + 1, updated_at=rewound_at + 1,
                       lease_until=time.time() + 600)
    await backend.checkpointer.save(RunSnapshot("resend", busy, [UserMessage(text="second")]))
    with pytest.raises(RunClaimedError, match="wait for its answer"):
        await backend.undo_rewind("s")
    assert await backend.rewind_undo("s") is not None

    await backend.checkpointer.delete("resend")  # as if it was stopped there: given back, no owner
    stopped = stored_head(session_id="s", status="interrupted", started_at=rewound_at + 1,
                          updated_at=rewound_at + 2, claim=None, lease_until=None)
    await backend.checkpointer.save(RunSnapshot("resend", stopped, [UserMessage(text="second")]))
    await backend.undo_rewind("s")
    assert await transcript(backend, "s") == before
    assert await backend.checkpointer.load("resend") is None


async def test_a_next_message_not_stored_yet_forgets_the_undo_and_is_never_discarded_by_one(make_backend):
    # The undo stayed on offer after the next message while that message's run was not stored
    # (stopped, crashed, failed); undoing then discarded that run with the resend's.
    backend = make_backend(["one", "two", "two again"])
    await chat(backend, "s", "first", "second")
    resend = await backend.regenerate("s")
    await finish(resend)
    rewound_at = (await backend.rewind_undo("s")).rewound_at
    stopped = stored_head(session_id="s", status="interrupted", started_at=rewound_at + 1,
                          updated_at=rewound_at + 2, claim=None, lease_until=None)
    await backend.checkpointer.save(RunSnapshot("next", stopped, [UserMessage(text="third")]))
    assert await backend.rewind_undo("s") is None
    with pytest.raises(UserError, match="nothing to undo"):
        await backend.undo_rewind("s")
    assert await backend.checkpointer.load("next") is not None
    assert [e["text"] for _, entries in await transcript(backend, "s") for e in entries][-1] == "two again"


async def test_a_next_message_after_a_resend_not_stored_yet_forgets_the_undo(make_backend):
    # The resend stopped (not stored), then the next message crashed (not stored either): two
    # runs after the rewind, the second a message of its own.
    backend = make_backend(["one", "two"])
    await chat(backend, "s", "first", "second")
    await backend.rewind("s", 2)  # as a resend does, before its run starts
    rewound_at = (await backend.rewind_undo("s")).rewound_at
    for run_id, text, started in (("resend", "second", rewound_at + 1), ("next", "third", rewound_at + 3)):
        head = stored_head(session_id="s", status="interrupted", started_at=started, updated_at=started + 1,
                           claim=None, lease_until=None)
        await backend.checkpointer.save(RunSnapshot(run_id, head, [UserMessage(text=text)]))
    assert await backend.rewind_undo("s") is None
    with pytest.raises(UserError, match="nothing to undo"):
        await backend.undo_rewind("s")
    assert await backend.checkpointer.load("resend") is not None and await backend.checkpointer.load("next") is not None


async def test_delete_forgets_the_undo(make_backend):
    backend = make_backend(["one", "two", "two again"])
    await chat(backend, "s", "first", "second")
    await finish(await backend.regenerate("s"))
    item = await backend.delete_session("s")
    await backend.restore_session(item.trash_id)
    assert await backend.rewind_undo("s") is None


async def test_a_message_sent_from_another_window_while_a_regenerate_rewinds_waits_and_the_undo_stays(tmp_path):
    """The regenerate rewound before its run claimed the session: a message another window sent in
    between was answered there, taken by the store as the resend, and the regenerate's own answer
    came after it, which forgot the undo: what the rewind dropped was gone for good. The rewind is
    made once the regenerate's run holds the session now; the other window is told a run executes."""
    db = tmp_path / "lovia.db"
    elsewhere: list[BaseException] = []

    class RewindSeenElsewhere(SQLiteSession):
        async def rewind_undoably(self, session_id: str, *, keep_entries: int) -> int:
            removed = await super().rewind_undoably(session_id, keep_entries=keep_entries)
            try:  # the other window sends right after the rewind
                await chat(other, session_id, "from the other window")
            except RunClaimedError as exc:
                elsewhere.append(exc)
            return removed

    stores = [RewindSeenElsewhere(db, wal=True), SQLiteCheckpointer(db, wal=True),
              SQLiteSession(db, wal=True), SQLiteCheckpointer(db, wal=True)]
    try:
        here = ChatBackend(stores[0], stores[1], Agent(name="bot", model=ScriptedModel(["one", "two", "two again"])))
        other = ChatBackend(stores[2], stores[3], Agent(name="bot", model=ScriptedModel(["answered elsewhere"])))
        await chat(here, "s", "first", "second")
        before = await transcript(here, "s")

        started = await here.regenerate("s")
        await finish(started)
        assert len(elsewhere) == 1 and "is being executed" in str(elsewhere[0])
        texts = [e["text"] for _, entries in await transcript(here, "s") for e in entries]
        assert texts == ["first", "one", "second", "two again"]
        undo = await here.rewind_undo("s")
        assert undo is not None and undo.added_run_id == started.stream.run_id
        await here.undo_rewind("s")
        assert await transcript(here, "s") == before
    finally:
        for store in stores:
            await store.close()


async def test_a_next_message_after_a_discarded_resend_forgets_the_undo(make_backend):
    # Counted, the one run after the rewind was taken for the resend's: with the resend's run
    # discarded, an undo discarded the next message's stopped run in its place.
    backend = make_backend(["one", "two"])
    await chat(backend, "s", "first", "second")
    resend = await backend.regenerate("s")  # the script has no third answer: it fails, not stored
    with pytest.raises(ModelError):
        await finish(resend)
    await backend.discard(resend.stream.run_id)  # as from the runs list
    undo = await backend.rewind_undo("s")
    assert undo is not None and undo.added_run_id is None
    stopped = stored_head(session_id="s", status="interrupted", started_at=undo.rewound_at + 5,
                          updated_at=undo.rewound_at + 6, claim=None, lease_until=None)
    await backend.checkpointer.save(RunSnapshot("next", stopped, [UserMessage(text="third")]))
    assert await backend.rewind_undo("s") is None
    with pytest.raises(UserError, match="nothing to undo"):
        await backend.undo_rewind("s")
    assert await backend.checkpointer.load("next") is not None


@pytest.mark.parametrize("here", [True, False])
async def test_undo_of_a_regenerate_that_failed_discards_its_run(make_backend, here):
    # The resend's run starts (its checkpoint made) before the rewind, which waits for its claim:
    # started before the rewind, it was not taken for the resend, and the undo kept it. The next
    # message then stored its question a second time, as a partial run.
    backend = make_backend(["one", "two"])  # the regenerate's model turn is not in the script: it fails
    await chat(backend, "s", "first", "second")
    before = await transcript(backend, "s")
    resend = await backend.regenerate("s")
    with pytest.raises(ModelError):
        await finish(resend)
    assert (await backend.checkpointer.load(resend.stream.run_id)).head.status == "failed"
    undoing = backend if here else ChatBackend(backend.session, backend.checkpointer,  # another window's
                                               Agent(name="bot", model=ScriptedModel([])))
    await undoing.undo_rewind("s")
    assert await transcript(backend, "s") == before
    assert await backend.checkpointer.load(resend.stream.run_id) is None
