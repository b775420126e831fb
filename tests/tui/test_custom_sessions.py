"""The app over session stores that have only what the spec's protocols promise.

A custom Session written to the spec has four methods, and maybe ``rewind(session_id, *,
keep_entries)``. The app must drive it through exactly those signatures, and the checkpoints
of rewound runs are deleted by the backend, which holds the checkpointer.
"""

from __future__ import annotations

from typing import Any

import pytest

from lovia import (
    Agent,
    CheckpointOptions,
    Entry,
    RunHead,
    Runner,
    RunSnapshot,
    Segment,
    SQLiteCheckpointer,
    SQLiteSession,
    StoreError,
    ToolResult,
    UserMessage,
)
from lovia.models import ScriptedModel, ScriptedTurn, call
from lovia.transcript import locate_cut, trim_output, truncate_run
from lovia.tui.backend import ChatBackend
from lovia.tui.screens.confirm import ConfirmScreen
from lovia.tui.widgets.assistant_message import AssistantMessageView
from tests.stores.test_session_contract import _three_runs
from tests.tui.conftest import make_app, settle, told, type_and_send, wait_for


class FourMethodSession:
    """The spec's Session protocol and nothing else, in a dict."""

    def __init__(self) -> None:
        self.stored: dict[str, list[Segment]] = {}

    async def segments(self, session_id: str) -> list[Segment]:
        return list(self.stored.get(session_id, []))

    async def load(self, session_id: str) -> list[Entry]:
        return [entry for segment in await self.segments(session_id) for entry in segment.entries]

    async def append(self, session_id: str, entries: list[Entry], *, run_id: str | None = None,
                     meta: dict[str, Any] | None = None) -> str:
        segments = self.stored.setdefault(session_id, [])
        run_id = run_id or f"custom-{len(segments)}"
        if all(segment.run_id != run_id for segment in segments):
            segments.append(Segment(run_id, tuple(entries), dict(meta or {})))
        return run_id

    async def clear(self, session_id: str) -> None:
        self.stored.pop(session_id, None)


class SpecSession(FourMethodSession):
    """The spec's four methods plus its optional ``rewind(session_id, *, keep_entries)``."""

    async def rewind(self, session_id: str, *, keep_entries: int) -> int:
        segments = self.stored.get(session_id, [])
        before = sum(len(s.entries) for s in segments)
        whole, partial = locate_cut([len(s.entries) for s in segments], keep_entries)
        kept = segments[:whole]
        if partial:
            cut = segments[whole]
            kept.append(Segment(cut.run_id, tuple(truncate_run(cut.entries, partial)), {}))
        self.stored[session_id] = [s for s in kept if s.entries]
        return before - sum(len(s.entries) for s in self.stored[session_id])


class TrimOnlySession(FourMethodSession):
    """Trims tool outputs, but cannot say beforehand how much that reclaims."""

    async def trim_tool_results(self, session_id: str, *, keep_chars: int = 400, keep_runs: int = 1) -> int:
        segments = self.stored.get(session_id, [])
        cut = 0
        for index, segment in enumerate(segments[: max(0, len(segments) - keep_runs)]):
            entries = list(segment.entries)
            for position, entry in enumerate(entries):
                trimmed = trim_output(entry, keep_chars) if isinstance(entry, ToolResult) else None
                if trimmed is not None:
                    entries[position], cut = trimmed, cut + 1
            segments[index] = Segment(segment.run_id, tuple(entries), segment.meta)
        return cut


def texts(entries: list[Entry]) -> list[str | None]:
    return [getattr(e, "text", None) for e in entries]


async def test_a_spec_session_with_rewind_regenerates_and_edits(tmp_path):
    session = SpecSession()
    model = ScriptedModel(["first answer", "second answer", "edited answer"])
    app = make_app(tmp_path / "lovia.db", session=session, model=model)
    async with app.run_test(size=(160, 45)) as pilot:
        await type_and_send(pilot, "question")
        chat = app.screen.chat
        checkpointer = app.backend.checkpointer
        [first] = await session.segments(chat.session_id)
        assert await checkpointer.load(first.run_id) is not None  # kept as the run's replay cache

        await pilot.press("ctrl+g")
        await settle(pilot)
        assert texts(await session.load(chat.session_id)) == ["question", "second answer"]
        assert [v.text for v in chat.transcript.query(AssistantMessageView)] == ["second answer"]
        assert await checkpointer.load(first.run_id) is None  # a replay would bring back the undone answer
        [second] = await session.segments(chat.session_id)
        assert await checkpointer.load(second.run_id) is not None

        await pilot.press("ctrl+l")
        await pilot.pause()
        assert chat.composer.text == "question" and chat.has_class("-editing")
        chat.composer.text = "edited question"
        await pilot.press("enter")
        await settle(pilot)
        assert texts(await session.load(chat.session_id)) == ["edited question", "edited answer"]
        assert await checkpointer.load(second.run_id) is None
        assert chat.transcript.check_action("trim", ()) is False  # no trim_tool_results: not offered
        assert "Trim tool outputs" not in {c.title for c in app.get_system_commands(app.screen)}
    # Leaving run_test re-raises any error that brought the app down (the TypeError of old).


async def test_editing_an_earlier_message_asks_first_where_the_store_cannot_undo_the_resend(tmp_path):
    session = SpecSession()  # rewind, and no undo of it: the runs a resend drops go for good
    app = make_app(tmp_path / "lovia.db", session=session, model=ScriptedModel(["one", "two"]))
    async with app.run_test(size=(80, 24)) as pilot:
        await type_and_send(pilot, "first")
        await type_and_send(pilot, "second")
        chat = app.screen.chat
        chat.transcript.focus()
        await pilot.press("home", "e")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen))
        assert "its answer and the 1 run after it" in app.screen.question
        await pilot.press("n")
        await settle(pilot)
        assert not chat.has_class("-editing") and len(await session.segments(chat.session_id)) == 2


async def test_a_session_with_only_the_four_methods_hides_rewind_and_trim_and_still_chats(tmp_path):
    session = FourMethodSession()
    app = make_app(tmp_path / "lovia.db", session=session, model=ScriptedModel(["an answer"]))
    async with app.run_test(size=(160, 45)) as pilot:
        await type_and_send(pilot, "hello")
        chat = app.screen.chat
        assert texts(await session.load(chat.session_id)) == ["hello", "an answer"]
        assert [v.text for v in chat.transcript.query(AssistantMessageView)] == ["an answer"]
        assert not app.backend.can_rewind and not app.backend.can_trim
        assert chat.check_action("regenerate", ()) is False and chat.check_action("edit_last", ()) is False
        assert chat.transcript.check_action("edit", ()) is False
        assert chat.transcript.check_action("trim", ()) is False
        commands = {c.title for c in app.get_system_commands(app.screen)}
        assert not commands & {"Regenerate", "Edit last message", "Edit selected message", "Trim tool outputs"}
        chat.transcript.focus()
        await pilot.press("t", "e", "ctrl+g", "ctrl+l")
        await settle(pilot)
        assert texts(await session.load(chat.session_id)) == ["hello", "an answer"]
        assert not chat.has_class("-editing")


async def test_a_session_that_trims_without_a_preview_asks_without_figures(tmp_path):
    session = TrimOnlySession()
    model = ScriptedModel([ScriptedTurn(tool_calls=[call("calculate", {"expression": "7**2000"})]), "big", "later"])
    app = make_app(tmp_path / "lovia.db", session=session, model=model)
    async with app.run_test(size=(160, 45)) as pilot:
        await type_and_send(pilot, "a big number")
        await type_and_send(pilot, "something else")
        chat = app.screen.chat
        assert app.backend.can_trim and not app.backend.can_rewind
        chat.transcript.focus()
        await pilot.press("t")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen))
        question = str(app.screen.question)
        assert question.startswith("Trim old tool outputs to 400 characters each?") and "chars" not in question
        await pilot.press("y")
        await settle(pilot)
        [result] = [e for e in await session.load(chat.session_id) if isinstance(e, ToolResult)]
        assert result.trimmed_chars > 0 and len(result.output) < 500
        assert any("Trimmed 1 tool output." in n.message for n in told(app))


# -- the backend's rewind, over the bundled stores ------------------------------------------


async def completed_checkpoint(checkpointer, run_id: str, session_id: str | None, status="completed") -> None:
    head = RunHead(agent="bot", status=status, session_id=session_id)
    await checkpointer.save(RunSnapshot(run_id, head, [UserMessage(text=run_id)]))


async def test_backend_rewind_deletes_exactly_the_checkpoints_of_rewound_runs(tmp_path):
    db = tmp_path / "lovia.db"
    async with SQLiteSession(db) as session, SQLiteCheckpointer(db) as checkpointer:
        backend = ChatBackend(session, checkpointer, Agent(name="bot", model=ScriptedModel([])))
        await _three_runs(session)
        for run_id in ("r1", "r2", "r3", "elsewhere"):
            await completed_checkpoint(checkpointer, run_id, "u1")
        assert await backend.rewind("u1", keep_entries=5) == 5
        assert await checkpointer.load("r1") is not None
        assert await checkpointer.load("r2") is None  # truncated: a resume would replay the undone tail
        assert await checkpointer.load("r3") is None
        assert await checkpointer.load("elsewhere") is not None  # a completed run not in the session is not ours
        assert await backend.rewind("u1", keep_entries=99) == 0
        assert await checkpointer.load("r1") is not None  # a no-op rewind touches nothing


class RacedSQLiteSession(SQLiteSession):
    """A session whose rewind lets another process's run land just before it (a real second writer)."""

    def __init__(self, path, checkpointer) -> None:
        super().__init__(path, wal=True)
        self.other_writer = SQLiteSession(path, wal=True)
        self.checkpointer = checkpointer
        self.gone_before_rewind: list[str] = []

    async def rewind(self, session_id: str, *, keep_entries: int) -> int:
        await self._race(session_id)
        return await super().rewind(session_id, keep_entries=keep_entries)

    async def rewind_undoably(self, session_id: str, *, keep_entries: int) -> int:
        """The backend's rewind (undoable), raced the same way."""
        await self._race(session_id)
        return await super().rewind_undoably(session_id, keep_entries=keep_entries)

    async def _race(self, session_id: str) -> None:
        for run_id in ("r2", "r3"):
            if await self.checkpointer.load(run_id) is None:
                self.gone_before_rewind.append(run_id)
        await completed_checkpoint(self.checkpointer, "late", session_id)  # finalized, then appended
        await self.other_writer.append(session_id, [UserMessage(text="late"), UserMessage(text="run")], run_id="late")

    async def close(self) -> None:
        await self.other_writer.close()
        await super().close()


async def test_backend_rewind_deletes_planned_checkpoints_first_and_no_others(tmp_path):
    db = tmp_path / "lovia.db"
    async with SQLiteCheckpointer(db, wal=True) as checkpointer:
        session = RacedSQLiteSession(db, checkpointer)
        backend = ChatBackend(session, checkpointer, Agent(name="bot", model=ScriptedModel([])))
        await _three_runs(session)
        for run_id in ("r1", "r2", "r3"):
            await completed_checkpoint(checkpointer, run_id, "u1")
        await completed_checkpoint(checkpointer, "other-session", "u2")
        await completed_checkpoint(checkpointer, "in-flight", "u1", status="interrupted")

        removed = await backend.rewind("u1", keep_entries=5)

        assert removed == 5 + 2  # the late run went too
        assert session.gone_before_rewind == ["r2", "r3"]  # deleted before the session was rewound
        assert [s.run_id for s in await session.segments("u1")] == ["r1", "r2"]
        # Unplanned: nothing tells it from a run awaiting its heal, so re-issuing it restores it.
        assert await checkpointer.load("late") is not None
        assert await checkpointer.load("r1") is not None
        assert await checkpointer.load("other-session") is not None
        assert await checkpointer.load("in-flight") is not None  # still resumable: never touched
        await session.close()


# -- a run whose session append failed keeps the checkpoint that heals it ------------------


class AppendFailsOnceSQLiteSession(SQLiteSession):
    """A SQLite session whose append of one run id fails once, as a busy or full disk does.

    Its ``rewind`` lets another writer append a run first, when told to (a real second store).
    """

    def __init__(self, path, *, failing_run: str) -> None:
        super().__init__(path, wal=True)
        self.failing_run: str | None = failing_run
        self.other_writer = SQLiteSession(path, wal=True)
        self.append_before_rewind: str | None = None

    async def append(self, session_id: str, entries, *, run_id: str | None = None,
                     meta: dict[str, Any] | None = None) -> str:
        if run_id is not None and run_id == self.failing_run:
            self.failing_run = None
            raise StoreError("the database is busy: try again")
        return await super().append(session_id, entries, run_id=run_id, meta=meta)

    async def rewind(self, session_id: str, *, keep_entries: int) -> int:
        await self._race(session_id)
        return await super().rewind(session_id, keep_entries=keep_entries)

    async def rewind_undoably(self, session_id: str, *, keep_entries: int) -> int:
        """The backend's rewind (undoable), raced the same way."""
        await self._race(session_id)
        return await super().rewind_undoably(session_id, keep_entries=keep_entries)

    async def _race(self, session_id: str) -> None:
        if self.append_before_rewind is not None:
            await self.other_writer.append(session_id, [UserMessage(text="late")], run_id=self.append_before_rewind)

    async def close(self) -> None:
        await self.other_writer.close()
        await super().close()


async def run_once(agent, session, checkpointer, run_id: str, text: str):
    return await Runner.run(agent, text, session=session, session_id="u1",
                            checkpoint=CheckpointOptions(checkpointer, run_id))


async def test_a_rewind_keeps_the_checkpoint_that_heals_a_failed_append(tmp_path):
    """The run completed, its session append failed: the next replay heals the session. A
    rewind that meets another writer's run must not take that replay away (the answer would
    be lost and the run would execute again)."""
    db = tmp_path / "lovia.db"
    model = ScriptedModel(["one", "two", "three"])
    agent = Agent(name="bot", model=model)
    async with SQLiteCheckpointer(db, wal=True) as checkpointer:
        session = AppendFailsOnceSQLiteSession(db, failing_run="r3")
        backend = ChatBackend(session, checkpointer, agent)
        await run_once(agent, session, checkpointer, "r1", "first")
        await run_once(agent, session, checkpointer, "r2", "second")
        with pytest.raises(StoreError):
            await run_once(agent, session, checkpointer, "r3", "third")
        assert (await checkpointer.load("r3")).head.status == "completed"

        session.append_before_rewind = "late"
        assert await backend.rewind("u1", keep_entries=2) == 2 + 1  # r2, and the late run
        assert await checkpointer.load("r2") is None
        assert await checkpointer.load("r3") is not None

        healed = await run_once(agent, session, checkpointer, "r3", "third")
        assert healed.replayed and healed.final_output == "three" and len(model.requests) == 3
        assert [s.run_id for s in await session.segments("u1")] == ["r1", "r3"]
        await session.close()


class NaiveCountSession(SpecSession):
    """The spec's rewind, counting what went as ``before - keep_entries``: off by the dangling
    tool call a cut drops, which the count need not promise to a caller that only rewinds."""

    async def rewind(self, session_id: str, *, keep_entries: int) -> int:
        before = len(await self.load(session_id))
        await super().rewind(session_id, keep_entries=keep_entries)
        return max(0, before - keep_entries)


async def test_a_custom_rewind_counting_differently_deletes_no_unplanned_checkpoint(tmp_path):
    session = NaiveCountSession()
    async with SQLiteCheckpointer(tmp_path / "lovia.db") as checkpointer:
        backend = ChatBackend(session, checkpointer, Agent(name="bot", model=ScriptedModel([])))
        await _three_runs(session)
        for run_id in ("r1", "r2", "r3", "awaiting-heal"):
            await completed_checkpoint(checkpointer, run_id, "u1")
        await backend.rewind("u1", keep_entries=6)  # one, 1, two, c1, result c1, c2 (dangling: dropped)
        assert [s.run_id for s in await session.segments("u1")] == ["r1", "r2"]
        assert await checkpointer.load("r1") is not None
        assert await checkpointer.load("r2") is None and await checkpointer.load("r3") is None
        assert await checkpointer.load("awaiting-heal") is not None  # completed, not yet appended: not ours
