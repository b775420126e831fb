"""The partial-answer journal: what a model streamed survives a SIGKILL, at a bounded write rate.

A real child process streams from a real SSE server into a real SQLite file and is killed
mid-answer; the stores' journal is checked for both bundled checkpointers.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from lovia import (
    Agent,
    CheckpointOptions,
    InMemoryCheckpointer,
    RunHead,
    Runner,
    RunOwner,
    RunSnapshot,
    SQLiteCheckpointer,
    SQLiteSession,
    StoreError,
    UserMessage,
)
from lovia.checkpoint import JournalingCheckpointer
from lovia.models import ScriptedModel, ScriptedTurn
from lovia.models.openai_chat import OpenAIChatModel
from lovia.runtime.journal import JOURNAL_INTERVAL_SECONDS, PartialAnswerJournal
from lovia.stores._sqlite_db import SQLiteDatabase, StoreSchema
from lovia.stores.sqlite import CHECKPOINT_SCHEMA
from lovia.timing import ModelStep, steps_from_meta
from tests.runtime.drip_server import PARTIAL, WHOLE, WORD_COUNT, DripServer

CHILD = Path(__file__).with_name("journal_child.py")
ROOT = Path(__file__).resolve().parents[2]
RUN = "journal-run"


def journalled(db: Path) -> str | None:
    """The journal's text for the child's run, read straight from the file."""
    with sqlite3.connect(db) as conn:
        try:
            row = conn.execute("SELECT text FROM lovia_run_partials WHERE run_id = ?", (RUN,)).fetchone()
        except sqlite3.OperationalError:  # not created yet
            return None
    return row[0] if row else None


def stream_then_kill(db: Path, server: DripServer) -> None:
    """Start the child, let it stream every word of the stalled answer into the journal, SIGKILL it."""
    child = subprocess.Popen([sys.executable, str(CHILD), str(db), server.base_url, "drip"],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             env={**os.environ, "PYTHONPATH": str(ROOT)})
    try:
        assert server.stalled.wait(60), "the child never asked for the answer"
        # The model stalls after its last word; the journal catches up within one interval.
        deadline = time.monotonic() + 30
        while journalled(db) != PARTIAL:
            assert time.monotonic() < deadline, f"the journal never caught up: {journalled(db)!r}"
            time.sleep(0.02)
    finally:
        os.kill(child.pid, signal.SIGKILL)
        child.wait(timeout=30)
    assert child.returncode == -signal.SIGKILL


async def test_a_run_killed_mid_answer_keeps_what_streamed_and_a_resume_asks_for_the_turn_again(tmp_path):
    db = tmp_path / "lovia.db"
    with DripServer() as server:
        await asyncio.to_thread(stream_then_kill, db, server)

        async with SQLiteCheckpointer(db, wal=True) as checkpointer:
            crashed = await checkpointer.load(RUN)
            assert crashed.head.crashed and crashed.head.status == "running"
            assert crashed.head.cut_off_text == PARTIAL  # every word the user saw stream
            assert [e.type for e in crashed.entries] == ["user"]  # not an entry: the snapshot is as before
            [listed] = await checkpointer.list_runs()
            assert listed.head.cut_off_text == PARTIAL
            assert crashed.head.model == "openai:drip"
            # The turn it died in is in its timeline, unended, from the journal (no snapshot was taken meanwhile).
            [dying] = crashed.head.steps
            assert isinstance(dying, ModelStep) and dying.model == "openai:drip" and dying.turn == 1
            assert dying.first_token_at is not None and dying.finished_at is None
            assert dying.first_token_at <= dying.streamed_until  # the journal's last write: streaming until then

            model = OpenAIChatModel("drip", base_url=server.base_url, api_key="test-key", retries=0, timeout=60)
            async with SQLiteSession(db, wal=True) as session:
                result = await Runner.run(Agent(name="assistant", model=model), [], session=session, session_id="s1",
                                          checkpoint=CheckpointOptions(checkpointer, RUN, if_run_exists="resume_only"))
                # The spec's resume: the cut-off turn is asked for again, from the snapshot alone.
                assert result.final_output == WHOLE
                assert [m["role"] for m in server.requests[-1]["messages"]] == ["user"]
                assert [e.text for e in await session.load("s1")] == ["tell me", WHOLE]
                [segment] = await session.segments("s1")
            done = await checkpointer.load(RUN)
            assert done.head.status == "completed" and done.head.cut_off_text is None
        assert journalled(db) is None  # the turn's snapshot cleared it
        # The resumed run's timeline: the turn the kill cut off, then the one asked again.
        cut, step = steps_from_meta(segment.meta)
        assert cut.started_at == dying.started_at and cut.cut_off
        assert cut.finished_at == dying.streamed_until  # cut off when it was last known to stream
        assert isinstance(step, ModelStep) and (step.input_tokens, step.output_tokens) == (11, 7)
        assert step.turn == 1 and not step.cut_off


def make_checkpointer(kind: str, tmp_path: Path):
    return InMemoryCheckpointer() if kind == "memory" else SQLiteCheckpointer(tmp_path / "lovia.db")


def head(claim: str | None, *, status: str = "running", turn: int = 0) -> RunHead:
    return RunHead(agent="a", status=status, turn=turn, claim=claim, owner=RunOwner("gone-host", 1),
                   lease_until=0.0)  # held by nobody: its lease lapsed on another host


@pytest.mark.parametrize("kind", ["memory", "sqlite"])
async def test_the_journal_is_written_only_under_the_stored_claim_and_cleared_by_the_next_snapshot(tmp_path, kind):
    checkpointer = make_checkpointer(kind, tmp_path)
    assert isinstance(checkpointer, JournalingCheckpointer)
    entries = [UserMessage(text="go")]
    assert not await checkpointer.journal_partial("r1", "no run yet", claim="A")
    await checkpointer.save(RunSnapshot("r1", head("A"), entries))
    assert not await checkpointer.journal_partial("r1", "from another execution", claim="B")
    assert (await checkpointer.load("r1")).head.cut_off_text is None
    assert await checkpointer.journal_partial("r1", "first words", claim="A")
    turn = ModelStep("a", "m", started_at=5.0, first_token_at=5.5, turn=1)
    assert await checkpointer.journal_partial("r1", "first words, more", claim="A", step=turn)
    crashed = (await checkpointer.load("r1")).head
    assert crashed.cut_off_text == "first words, more" and crashed.steps == [turn] and crashed.model == "m"
    # A lease renewal mid-stream (same claim, same turn) keeps it.
    await checkpointer.save(RunSnapshot("r1", head("A"), entries))
    assert (await checkpointer.load("r1")).head.cut_off_text == "first words, more"

    # Another execution takes the run over: the one that lost it cannot write any more.
    taken = await checkpointer.claim("r1", RunOwner.current(), token="B", lease_seconds=60)
    assert taken.taken_from.cut_off_text == "first words, more"  # what a finalize keeps
    assert taken.head.steps == [turn] and taken.head.cut_off_text is None  # the taker's timeline keeps the turn
    assert not await checkpointer.journal_partial("r1", "overwritten by the loser", claim="A")
    await checkpointer.save(RunSnapshot("r1", head("B"), entries))  # the new owner's save clears it
    assert (await checkpointer.load("r1")).head.cut_off_text is None

    # The turn's snapshot clears it; so does the delete of the run.
    assert await checkpointer.journal_partial("r1", "turn one", claim="B")
    await checkpointer.save(RunSnapshot("r1", head("B", turn=1), entries))
    assert (await checkpointer.load("r1")).head.cut_off_text is None
    assert await checkpointer.journal_partial("r1", "turn two", claim="B")
    await checkpointer.delete("r1")
    await checkpointer.save(RunSnapshot("r1", head("B", turn=1), entries))
    assert (await checkpointer.load("r1")).head.cut_off_text is None

    # A stopped run is not written to (its cut-off text is in its head already).
    await checkpointer.save(RunSnapshot("r1", head("B", status="interrupted", turn=1), entries))
    assert not await checkpointer.journal_partial("r1", "late", claim="B")
    await checkpointer.close()


@pytest.mark.parametrize("kind", ["memory", "sqlite"])
async def test_a_crashed_run_executed_until_its_journal_s_last_write(tmp_path, kind):
    # Killed 3 s into its answer, with no save since 0.5 s in: it read as having run 0.5 s (or
    # none at all), and a finalize timed it until whenever the user got to it.
    checkpointer = make_checkpointer(kind, tmp_path)
    crashed = head("A")
    crashed.started_at, crashed.updated_at, crashed.active_seconds = 1000.0, 1000.5, 0.5
    await checkpointer.save(RunSnapshot("r1", crashed, [UserMessage(text="go")]))
    turn = ModelStep("a", "m", started_at=1000.5, first_token_at=1000.6, turn=0, streamed_until=1003.0)
    assert await checkpointer.journal_partial("r1", "so far", claim="A", step=turn)

    loaded = (await checkpointer.load("r1")).head
    [listed] = await checkpointer.list_runs()
    for read in (loaded, listed.head):
        assert (read.updated_at, read.active_seconds) == (1003.0, pytest.approx(3.0))
    taken = await checkpointer.claim("r1", RunOwner.current(), token="B", lease_seconds=60)
    assert (taken.taken_from.updated_at, taken.taken_from.active_seconds) == (1003.0, pytest.approx(3.0))
    assert taken.head.active_seconds == pytest.approx(3.0)  # a resume counts on from there
    assert (await checkpointer.load("r1")).head.active_seconds == pytest.approx(3.0)
    await checkpointer.close()


@pytest.mark.parametrize("kind", ["memory", "sqlite"])
async def test_a_live_run_s_journal_is_not_shown_as_cut_off(tmp_path, kind):
    checkpointer = make_checkpointer(kind, tmp_path)
    live = RunHead(agent="a", claim="A", owner=RunOwner.current(), lease_until=time.time() + 600)
    live.owner = RunOwner("another-host", 1)  # held elsewhere, under a lease that has not lapsed
    await checkpointer.save(RunSnapshot("r1", live, [UserMessage(text="go")]))
    assert await checkpointer.journal_partial("r1", "still streaming", claim="A")
    assert (await checkpointer.load("r1")).head.cut_off_text is None
    [summary] = await checkpointer.list_runs()
    assert summary.head.cut_off_text is None
    await checkpointer.close()


async def test_a_version_1_checkpoint_file_migrates_to_the_journal_and_keeps_its_runs(tmp_path):
    path = tmp_path / "old.db"
    old = SQLiteDatabase(path, wal=False, schema=StoreSchema("checkpoint", CHECKPOINT_SCHEMA.steps[:1]))
    await old.read(lambda conn: None, "creating")
    await old.close()
    async with SQLiteCheckpointer(path) as checkpointer:  # a v1 file, then a save through v2
        await checkpointer.save(RunSnapshot("r1", head("A"), [UserMessage(text="go")]))
        assert await checkpointer.journal_partial("r1", "words", claim="A")
        assert (await checkpointer.load("r1")).head.cut_off_text == "words"
    with sqlite3.connect(path) as conn:
        assert dict(conn.execute("SELECT store, version FROM lovia_schema")) == {"checkpoint": 2}


class FakeClock:
    """Monotonic time that moves only when the test moves it; its sleep waits until it has."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        until = self.now + seconds
        while self.now < until:  # noqa: ASYNC110 (the test's loop moves the time)
            await asyncio.sleep(0)


async def test_journal_writes_are_paced_by_time_not_by_tokens():
    written: list[str] = []

    async def write(text: str) -> bool:
        written.append(text)
        await asyncio.sleep(0)
        return True

    clock = FakeClock()
    journal = PartialAnswerJournal(write, clock=clock, sleep=clock.sleep)
    journal.turn_started()
    parts: list[str] = []
    tokens = 2000
    for i in range(tokens):  # 2,000 tokens over 2 s of (fake) time: 1 ms apart
        parts.append(f"t{i} ")
        journal.streamed(parts)
        clock.now += 0.001
        await asyncio.sleep(0)
    for _ in range(10):  # the model pauses: the pacer writes what it has when due
        clock.now += 0.1
        await asyncio.sleep(0)
    seconds = tokens * 0.001 + 1.0
    assert journal.writes == len(written)
    assert len(written) <= seconds / JOURNAL_INTERVAL_SECONDS + 1  # a few a second, whatever the tokens
    assert len(written) >= 2
    assert written[-1] == "".join(parts)  # the tail is journalled too, once due
    await journal.settle()


async def test_a_journal_refused_once_stops_writing():
    calls: list[str] = []

    async def write(text: str) -> bool:
        calls.append(text)
        return False  # the claim was lost

    clock = FakeClock()
    journal = PartialAnswerJournal(write, clock=clock, sleep=clock.sleep)
    journal.turn_started()
    for i in range(50):
        journal.streamed([f"{i}"])
        clock.now += 0.3
        await asyncio.sleep(0)
        await asyncio.sleep(0)
    assert len(calls) == 1
    await journal.settle()


class CountingCheckpointer(SQLiteCheckpointer):
    def __init__(self, path) -> None:
        super().__init__(path)
        self.journal_writes: list[str] = []

    async def journal_partial(self, run_id: str, text: str, *, claim: str | None, step=None) -> bool:
        self.journal_writes.append(text)
        return await super().journal_partial(run_id, text, claim=claim, step=step)


async def test_a_streaming_run_journals_a_few_times_a_second_and_clears_the_journal_when_the_turn_lands(tmp_path):
    text = "".join(f"token{i} " for i in range(300))
    model = ScriptedModel([ScriptedTurn(text=text, chunk_chars=7, delay=0.004)])
    async with CountingCheckpointer(tmp_path / "lovia.db") as checkpointer:
        started = time.monotonic()
        result = await Runner.run(Agent(name="a", model=model), "go", checkpoint=CheckpointOptions(checkpointer, "r1"))
        elapsed = time.monotonic() - started
        chunks = -(-len(text) // 7)
        writes = checkpointer.journal_writes
        assert result.final_output == text
        assert 1 <= len(writes) <= elapsed / JOURNAL_INTERVAL_SECONDS + 1  # bounded by time ...
        assert len(writes) < chunks / 10  # ... never by tokens
        assert all(text.startswith(w) for w in writes)  # each a prefix of the answer
        assert journalled_in(tmp_path / "lovia.db", "r1") is None  # cleared when the turn's snapshot landed


def journalled_in(db: Path, run_id: str) -> str | None:
    with sqlite3.connect(db) as conn:
        row = conn.execute("SELECT text FROM lovia_run_partials WHERE run_id = ?", (run_id,)).fetchone()
    return row[0] if row else None


async def test_a_stopped_run_keeps_its_cut_off_text_in_the_head_not_the_journal(tmp_path):
    answer = "".join(f"w{i} " for i in range(WORD_COUNT))
    model = ScriptedModel([ScriptedTurn(text=answer, chunk_chars=3, delay=0.03), "Again."])
    async with SQLiteCheckpointer(tmp_path / "lovia.db") as checkpointer:
        stream = Runner.stream(Agent(name="a", model=model), "go", checkpoint=CheckpointOptions(checkpointer, "r1"))
        seen = 0
        async for event in stream:
            seen += getattr(event, "text", None) is not None
            if seen == 20:
                stream.stop()
        stopped = (await checkpointer.load("r1")).head
        assert stopped.status == "interrupted" and answer.startswith(stopped.cut_off_text)
        assert len(stopped.cut_off_text) == 20 * 3


async def test_a_journal_written_through_another_store_is_cleared_by_the_claim_that_takes_the_run(tmp_path):
    """As two processes on one file: the one taking the run over reads the journal in its claim, then drops it."""
    db = tmp_path / "lovia.db"
    async with SQLiteCheckpointer(db, wal=True) as first, SQLiteCheckpointer(db, wal=True) as second:
        await first.save(RunSnapshot("r1", head("A"), [UserMessage(text="go")]))
        turn = ModelStep("a", "m", started_at=5.0, first_token_at=5.5, turn=1)
        assert await first.journal_partial("r1", "words so far", claim="A", step=turn)
        assert (await second.load("r1")).head.cut_off_text == "words so far"
        taken = await second.claim("r1", RunOwner.current(), token="B", lease_seconds=60)
        assert taken.taken_from.cut_off_text == "words so far" and taken.head.steps == [turn]
        assert journalled_in(db, "r1") is None
        assert not await first.journal_partial("r1", "too late", claim="A")  # the claim moved on
        assert journalled_in(db, "r1") is None
        await second.save(RunSnapshot("r1", taken.head, [UserMessage(text="go")]))  # nothing of it journalled here
        assert (await second.load("r1")).head.steps == [turn]


class FailingJournal(SQLiteCheckpointer):
    """A store whose journal writes fail (a full disk, say), while its snapshots work."""

    attempts = 0

    async def journal_partial(self, run_id: str, text: str, *, claim: str | None, step=None) -> bool:
        self.attempts += 1
        raise StoreError("disk full")


async def test_a_failing_journal_is_warned_about_once_and_never_fails_the_run(tmp_path):
    text = "".join(f"token{i} " for i in range(120))
    model = ScriptedModel([ScriptedTurn(text=text, chunk_chars=7, delay=0.01)])
    async with FailingJournal(tmp_path / "lovia.db") as checkpointer:
        with pytest.warns(RuntimeWarning, match="could not journal the streaming answer") as caught:
            result = await Runner.run(Agent(name="a", model=model), "go",
                                      checkpoint=CheckpointOptions(checkpointer, "r1"))
        assert result.final_output == text
        assert checkpointer.attempts >= 2  # it went on trying, a few times a second
        assert len([w for w in caught if "journal" in str(w.message)]) == 1
        assert "disk full" in str(caught[0].message)
        assert (await checkpointer.load("r1")).head.status == "completed"
