"""Run claims and leases on PostgreSQL: workers on several hosts share one database.

Real worker processes (``pg_claim_child.py``), each posing as a host of its own so that only
leases tell whether a run is held, issue runs against one real PostgreSQL database: a run id
issued by several executes its tools once, the runs list tells a live run on another host from
one whose worker died, and a worker killed mid-answer is resumed by another with what it had
streamed.
"""

from __future__ import annotations

import asyncio
import importlib
import inspect
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psycopg
import pytest

from lovia import RunClaimedError, RunHead, RunOwner, RunSnapshot, UserMessage
from lovia.run_state import how_run_stopped, run_state
from lovia.stores._postgres_checkpoint import PostgresCheckpointer
from lovia.timing import ModelStep
from lovia.tui.widgets.runs_pane import run_label
from tests.runtime.drip_server import PARTIAL, WHOLE, DripServer

CHILD = Path(__file__).with_name("pg_claim_child.py")
ROOT = Path(__file__).resolve().parents[2]
HANG_GUARD_SECONDS = 90.0  # how long a wait may take before the test calls it a hang (not a timing assertion)
LAPSING_LEASE = 2.0  # the lease of a worker the test kills: the run may be taken over once it lapses


class Workers:
    """Worker processes on one PostgreSQL database, each posing as a host of its own."""

    def __init__(self, directory: Path, url: str) -> None:
        self.url = url
        self.log, self.go, self.release = directory / "tools.log", directory / "go", directory / "release"
        self.children: list[subprocess.Popen] = []
        self.hosts: dict[int, str] = {}

    def spawn(self, host: str, run_id: str, *, lease: float = 60.0, base_url: str | None = None) -> subprocess.Popen:
        if base_url is None:
            args = ["tools", self.url, host, run_id, str(lease), str(self.log), str(self.go), str(self.release)]
        else:
            args = ["stream", self.url, host, run_id, str(lease), base_url]
        child = subprocess.Popen([sys.executable, str(CHILD), *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                 text=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
        self.children.append(child)
        self.hosts[child.pid] = host
        return child

    def lines(self) -> list[tuple[str, int, str, str]]:
        if not self.log.exists():
            return []
        return [(host, int(pid), what, call_id) for host, pid, what, call_id in
                (line.split() for line in self.log.read_text().splitlines())]

    def wait_until(self, predicate, what: str) -> None:
        deadline = time.monotonic() + HANG_GUARD_SECONDS
        while not predicate():
            if time.monotonic() > deadline:
                raise AssertionError(f"timed out waiting until {what}; log: {self.lines()}")
            time.sleep(0.02)

    def finish(self, child: subprocess.Popen) -> str:
        out, err = child.communicate(timeout=HANG_GUARD_SECONDS)
        assert child.returncode == 0, err
        return out.strip()

    def kill(self, child: subprocess.Popen) -> None:
        os.kill(child.pid, signal.SIGKILL)
        child.wait(timeout=HANG_GUARD_SECONDS)
        assert child.returncode == -signal.SIGKILL

    def kill_all(self) -> None:
        for child in self.children:
            if child.poll() is None:
                child.kill()
                child.wait()


@pytest.fixture
def workers(tmp_path, postgres_url):
    workers = Workers(tmp_path, postgres_url)
    yield workers
    workers.kill_all()


async def until_the_lease_lapsed(checkpointer: PostgresCheckpointer, run_id: str) -> RunHead:
    """The run's head, once the lease it holds now has lapsed (its worker is gone and renews no more)."""
    head = (await checkpointer.load(run_id)).head
    assert head.lease_until is not None
    deadline = time.monotonic() + HANG_GUARD_SECONDS
    while time.time() <= head.lease_until:
        assert time.monotonic() < deadline, "the lease never lapsed"
        await asyncio.sleep(0.05)
    return (await checkpointer.load(run_id)).head


# -- real worker processes ----------------------------------------------------------------


def test_workers_on_five_hosts_reissuing_one_run_execute_each_tool_call_once(workers):
    children = [workers.spawn(f"worker-{i}", "shared-run") for i in range(5)]
    workers.go.touch()
    # The owner holds the run inside its first tool call until every other worker gave up.
    workers.wait_until(lambda: sum(c.poll() is not None for c in children) == 4, "four workers gave up")
    [owner] = [c for c in children if c.poll() is None]
    host = workers.hosts[owner.pid]
    workers.release.touch()
    outputs = {child.pid: workers.finish(child) for child in children}
    assert outputs.pop(owner.pid) == "DONE replayed=False output=All done."
    for output in outputs.values():  # refused by its lease: the owner's pid means nothing on another host
        assert output.startswith("CLAIMED RunClaimedError: run 'shared-run' is being executed by "
                                 f"process {owner.pid} on {host} under a lease until "), output
    assert workers.lines() == [(host, owner.pid, "started", "c-one"), (host, owner.pid, "finished", "c-one"),
                               (host, owner.pid, "started", "c-two"), (host, owner.pid, "finished", "c-two")]
    # Issued again once it is done, the run is replayed, never executed again.
    late = workers.spawn("worker-5", "shared-run")
    assert workers.finish(late) == "DONE replayed=True output=All done."
    assert len(workers.lines()) == 4


async def test_the_runs_list_tells_a_live_run_on_another_host_from_one_whose_worker_died(workers):
    live = workers.spawn("host-live", "run-live")
    dying = workers.spawn("host-dead", "run-dead", lease=LAPSING_LEASE)
    workers.go.touch()
    await asyncio.to_thread(workers.wait_until, lambda: len(workers.lines()) == 2, "both workers are in their tool")
    workers.kill(dying)

    async with PostgresCheckpointer(workers.url) as checkpointer:
        await until_the_lease_lapsed(checkpointer, "run-dead")
        now = time.time()
        listed = {summary.run_id: summary for summary in await checkpointer.list_runs(statuses=["running"])}
        stops = {run_id: how_run_stopped(summary.head, (await checkpointer.load(run_id)).entries, now)
                 for run_id, summary in listed.items()}
        # Both are "running" on other hosts, whose processes nobody here can see: the lease tells them apart.
        assert run_state(listed["run-live"].head, now) == "elsewhere"
        assert stops["run-live"].headline == "running elsewhere inside step"
        assert stops["run-live"].detail == f"pid {live.pid} on host-live"
        assert f"by pid {live.pid} on host-live" in run_label(listed["run-live"], stops["run-live"], "", now).plain
        assert run_state(listed["run-dead"].head, now) == "crashed"
        assert stops["run-dead"].headline == "crashed inside step"

        # The live run is refused to anyone else; the dead one is taken over and finished by another host.
        intruder = workers.spawn("host-c", "run-live")
        assert workers.finish(intruder).startswith(
            f"CLAIMED RunClaimedError: run 'run-live' is being executed by process {live.pid} on host-live")
        workers.release.touch()
        assert workers.finish(live) == "DONE replayed=False output=All done."
        rescuer = workers.spawn("host-c", "run-dead")
        assert workers.finish(rescuer) == "DONE replayed=False output=All done."
        done = (await checkpointer.load("run-dead")).head
        assert (done.status, done.owner.host, done.owner.pid, done.lease_until) == ("completed", "host-c",
                                                                                    rescuer.pid, None)
    dead_lines = [(host, what, call_id) for host, _, what, call_id in workers.lines() if host != "host-live"]
    assert dead_lines == [("host-dead", "started", "c-one"),  # at-least-once: the dangling call runs again
                          ("host-c", "started", "c-one"), ("host-c", "finished", "c-one"),
                          ("host-c", "started", "c-two"), ("host-c", "finished", "c-two")]


def journalled(url: str, run_id: str) -> str | None:
    """The journal's text for ``run_id``, read straight from the database."""
    with psycopg.connect(url, autocommit=True) as conn:
        try:
            row = conn.execute("SELECT text FROM lovia_run_partials WHERE run_id = %s", (run_id,)).fetchone()
        except psycopg.errors.UndefinedTable:  # not created yet
            return None
    return json.loads(row[0]) if row else None


async def test_a_worker_killed_mid_answer_is_resumed_by_another_host_with_what_it_streamed(workers):
    with DripServer() as server:
        streaming = workers.spawn("host-a", "journal-run", lease=LAPSING_LEASE, base_url=server.base_url)
        assert await asyncio.to_thread(server.stalled.wait, HANG_GUARD_SECONDS), "the worker never asked for the answer"
        # The model stalls after its last word; the journal catches up within one interval.
        await asyncio.to_thread(workers.wait_until, lambda: journalled(workers.url, "journal-run") == PARTIAL,
                                "the journal holds every word streamed")
        workers.kill(streaming)

        async with PostgresCheckpointer(workers.url) as checkpointer:
            crashed = await until_the_lease_lapsed(checkpointer, "journal-run")
            assert crashed.crashed and crashed.owner.host == "host-a"
            assert crashed.cut_off_text == PARTIAL  # every word the user saw stream
            assert crashed.model == "openai:drip"
            [dying] = crashed.steps
            assert isinstance(dying, ModelStep) and dying.finished_at is None
            [listed] = await checkpointer.list_runs()
            stop = how_run_stopped(listed.head, [], time.time())
            assert (stop.headline, stop.detail) == ("crashed while streaming", PARTIAL)

            resumer = workers.spawn("host-b", "journal-run", base_url=server.base_url)
            assert workers.finish(resumer) == f"DONE replayed=False output={WHOLE}"
            # The spec's resume: the cut-off turn is asked for again, from the snapshot alone.
            assert [m["role"] for m in server.requests[-1]["messages"]] == ["user"]
            done = await checkpointer.load("journal-run")
            assert (done.head.status, done.head.owner.host, done.head.cut_off_text) == ("completed", "host-b", None)
            assert [e.type for e in done.entries] == ["user", "assistant"]
    assert journalled(workers.url, "journal-run") is None  # taken over, then the turn's snapshot landed


# -- several store objects in one process, as several processes ---------------------------


def other_host(number: int) -> RunOwner:
    return RunOwner(host=f"host-{number}", pid=1000 + number, started=1)


async def test_of_eight_claims_of_one_new_run_at_once_exactly_one_stores_it(postgres_url):
    stores = [PostgresCheckpointer(postgres_url) for _ in range(8)]
    try:
        for store in stores:  # connected, the tables made: what is raced is the claim alone
            await store.open()

        async def claim(number: int) -> RunSnapshot | RunClaimedError | None:
            start = RunSnapshot("r1", RunHead(agent="bot"), [UserMessage(text=f"from {number}")])
            try:
                return await stores[number].claim("r1", other_host(number), token=f"t{number}", lease_seconds=60,
                                                  start=start)
            except RunClaimedError as refused:
                return refused

        results = await asyncio.gather(*(claim(number) for number in range(8)))
        [winner] = [number for number, result in enumerate(results) if result is None]
        assert all(isinstance(result, RunClaimedError) for result in results if result is not None)
        stored = await stores[0].load("r1")
        assert (stored.head.claim, stored.head.owner) == (f"t{winner}", other_host(winner))
        assert [e.text for e in stored.entries] == [f"from {winner}"]
    finally:
        for store in stores:
            await store.close()


async def test_of_eight_claims_of_a_lapsed_run_at_once_exactly_one_takes_it(postgres_url):
    stores = [PostgresCheckpointer(postgres_url) for _ in range(8)]
    try:
        for store in stores:
            await store.open()
        lapsed = RunHead(agent="bot", owner=other_host(99), claim="gone", lease_until=time.time() - 1)
        await stores[0].save(RunSnapshot("r1", lapsed, [UserMessage(text="go")]))

        async def claim(number: int) -> RunSnapshot | RunClaimedError | None:
            try:
                return await stores[number].claim("r1", other_host(number), token=f"t{number}", lease_seconds=60)
            except RunClaimedError as refused:
                return refused

        results = await asyncio.gather(*(claim(number) for number in range(8)))
        taken = [result for result in results if isinstance(result, RunSnapshot)]
        assert len(taken) == 1 and len([r for r in results if isinstance(r, RunClaimedError)]) == 7
        assert taken[0].taken_from.claim == "gone"
        assert (await stores[0].load("r1")).head.claim == taken[0].head.claim
    finally:
        for store in stores:
            await store.close()


async def test_a_journal_written_through_another_store_is_cleared_by_the_claim_that_takes_the_run(postgres_url):
    async with PostgresCheckpointer(postgres_url) as first, PostgresCheckpointer(postgres_url) as second:
        head = RunHead(agent="a", claim="A", owner=other_host(1), lease_until=0.0)  # lapsed on another host
        await first.save(RunSnapshot("r1", head, [UserMessage(text="go")]))
        turn = ModelStep("a", "m", started_at=5.0, first_token_at=5.5, turn=1)
        assert await first.journal_partial("r1", "words so far", claim="A", step=turn)
        assert (await second.load("r1")).head.cut_off_text == "words so far"
        taken = await second.claim("r1", RunOwner.current(), token="B", lease_seconds=60)
        assert taken.taken_from.cut_off_text == "words so far" and taken.head.steps == [turn]
        assert journalled(postgres_url, "r1") is None
        assert not await first.journal_partial("r1", "too late", claim="A")  # the claim moved on
        assert journalled(postgres_url, "r1") is None


async def waiting_locks(conn) -> int:
    return (await (await conn.execute("SELECT count(*) FROM pg_locks WHERE NOT granted")).fetchone())[0]


async def until_waiting(conn, count: int, what: str) -> None:
    deadline = time.monotonic() + HANG_GUARD_SECONDS
    while await waiting_locks(conn) < count:
        assert time.monotonic() < deadline, f"never waited: {what}"
        await asyncio.sleep(0.01)


async def test_a_journal_write_racing_the_claim_that_takes_the_run_is_refused(postgres_url):
    """The execution losing its run journals while another host's claim is under way: the claim wins."""
    async with PostgresCheckpointer(postgres_url) as loser, PostgresCheckpointer(postgres_url) as taker, \
            await psycopg.AsyncConnection.connect(postgres_url, autocommit=True) as holder:
        head = RunHead(agent="a", claim="A", owner=other_host(1), lease_until=0.0)  # lapsed on another host
        await loser.save(RunSnapshot("r1", head, [UserMessage(text="go")]))
        assert await loser.journal_partial("r1", "words", claim="A")
        await taker.open()
        # Hold the journal's row, so the claim stops on it with the run's row taken and its new head written.
        await holder.execute("BEGIN")
        await holder.execute("SELECT 1 FROM lovia_run_partials WHERE run_id = 'r1' FOR UPDATE")
        claim = asyncio.ensure_future(taker.claim("r1", other_host(2), token="B", lease_seconds=60))
        try:
            await until_waiting(holder, 1, "the claim, on the journal's row")
            late = asyncio.ensure_future(loser.journal_partial("r1", "more words", claim="A"))
            await until_waiting(holder, 2, "the journal write, on the run's row")
        finally:
            await holder.execute("COMMIT")
        taken = await asyncio.wait_for(claim, HANG_GUARD_SECONDS)
        assert taken.head.claim == "B" and taken.taken_from.cut_off_text == "words"
        assert await asyncio.wait_for(late, HANG_GUARD_SECONDS) is False  # checked against the claim as committed
        assert journalled(postgres_url, "r1") is None


async def test_a_delete_racing_a_save_leaves_no_entry_of_the_run_behind(postgres_url):
    """The save's entries land after the delete began: the delete still takes them all."""
    async with PostgresCheckpointer(postgres_url) as saver, PostgresCheckpointer(postgres_url) as deleter, \
            await psycopg.AsyncConnection.connect(postgres_url, autocommit=True) as holder:
        head = RunHead(agent="a", claim="A", owner=other_host(1), lease_until=time.time() + 60)
        snapshot = RunSnapshot("r1", head, [UserMessage(text="go")])
        await saver.save(snapshot)
        await deleter.open()
        # An uncommitted row where the save's next entry goes: the save stops there, its head written.
        await holder.execute("BEGIN")
        await holder.execute("INSERT INTO lovia_run_entries (run_id, position, type, data) "
                             "VALUES ('r1', 1, 'user', '{}')")
        saving = asyncio.ensure_future(saver.save(RunSnapshot("r1", head, [*snapshot.entries, UserMessage(text="on")])))
        try:
            await until_waiting(holder, 1, "the save, on the entry's key")
            deleting = asyncio.ensure_future(deleter.delete("r1"))
            await until_waiting(holder, 2, "the delete, on the run's row")
        finally:
            await holder.execute("ROLLBACK")
        await asyncio.wait_for(saving, HANG_GUARD_SECONDS)
        assert await asyncio.wait_for(deleting, HANG_GUARD_SECONDS) is True
        count = await (await holder.execute("SELECT count(*) FROM lovia_run_entries WHERE run_id = 'r1'")).fetchone()
        assert count == (0,)  # nothing left to collide with a new run of that id
        fresh = RunSnapshot("r1", RunHead(agent="a"), [UserMessage(text="new"), UserMessage(text="run")])
        await deleter.save(fresh)
        assert (await saver.load("r1")).entries == fresh.entries


async def test_a_damaged_head_or_entry_is_refused_naming_the_run_and_the_database_never_its_text(postgres_url):
    from urllib.parse import urlsplit

    from lovia.errors import DamagedEntryError, DatabaseFileError

    password = urlsplit(postgres_url).password
    async with PostgresCheckpointer(postgres_url) as checkpointer, \
            await psycopg.AsyncConnection.connect(postgres_url, autocommit=True) as raw:
        await checkpointer.save(RunSnapshot("r1", RunHead(agent="a"), [UserMessage(text="go")]))
        await raw.execute("UPDATE lovia_run_entries SET data = '{\"type\": \"user\", \"text\": \"secret' "
                          "WHERE run_id = 'r1'")
        with pytest.raises(DamagedEntryError) as entry:
            await checkpointer.load("r1")
        await raw.execute("UPDATE lovia_run_entries SET data = '{\"type\": \"user\", \"text\": \"go\"}' "
                          "WHERE run_id = 'r1'")  # the entry whole again: the head alone is damaged now
        await raw.execute("UPDATE lovia_runs SET head = '[\"secret\"]' WHERE run_id = 'r1'")
        assert await checkpointer.list_runs() == []  # left out of the list (ListableCheckpointer), refused on load
        with pytest.raises(DatabaseFileError) as head:
            await checkpointer.load("r1")
        for refused in (entry.value, head.value):
            message = str(refused)
            assert "'r1'" in message and checkpointer.where in message
            assert "secret" not in message and password not in message
        assert "head of run 'r1'" in str(head.value) and "Delete the run" in str(head.value)


async def test_a_journalled_text_holding_a_nul_character_is_kept_whole(postgres_url):
    """PostgreSQL's text cannot hold NUL; a model may stream one, and the journal keeps it."""
    async with PostgresCheckpointer(postgres_url) as checkpointer:
        head = RunHead(agent="a", claim="A", owner=other_host(1), lease_until=0.0)
        await checkpointer.save(RunSnapshot("r1", head, [UserMessage(text="go\x00on")]))
        assert await checkpointer.journal_partial("r1", "before\x00after", claim="A")
        loaded = await checkpointer.load("r1")
        assert loaded.head.cut_off_text == "before\x00after" and loaded.entries[0].text == "go\x00on"


async def notifications_of(url: str, write) -> list[str]:
    """The payloads ``write`` notified on the checkpoint store's channel, in order.

    A notification the test sends after ``write`` marks the end: notifications arrive in commit order.
    """
    async with await psycopg.AsyncConnection.connect(url, autocommit=True) as listener:
        await listener.execute("LISTEN lovia_checkpoint")
        await write()
        async with await psycopg.AsyncConnection.connect(url, autocommit=True) as marker:
            await marker.execute("SELECT pg_notify('lovia_checkpoint', 'end')")
        payloads = []
        async for note in listener.notifies(timeout=HANG_GUARD_SECONDS):
            if note.payload == "end":
                return payloads
            payloads.append(note.payload)
    raise AssertionError(f"the end of the notifications never came; heard {payloads}")


async def test_every_write_notifies_once_and_another_store_hears_it(postgres_url):
    async with PostgresCheckpointer(postgres_url) as watcher, PostgresCheckpointer(postgres_url) as writer:
        await writer.open()
        before = await watcher.outside_change_token()  # starts listening
        head = RunHead(agent="a", claim="A", owner=other_host(1), lease_until=time.time() + 60)
        snapshot = RunSnapshot("r1", head, [UserMessage(text="go")])
        writes = [
            lambda: writer.save(snapshot),  # the full check: a run this store has not stored
            lambda: writer.save(RunSnapshot("r1", head, [*snapshot.entries, UserMessage(text="on")])),  # the usual
            lambda: writer.journal_partial("r1", "words", claim="A"),
            lambda: writer.claim("r2", other_host(2), token="B", lease_seconds=60,
                                 start=RunSnapshot("r2", RunHead(agent="a"), [])),
            lambda: writer.claim("r1", other_host(2), token="C", lease_seconds=60, if_stored="leave"),
            lambda: writer.journal_partial("r1", "refused", claim="not the claim"),
            lambda: writer.delete("r1"),
            lambda: writer.delete("r1"),  # nothing left to delete
        ]
        heard = [len(await notifications_of(postgres_url, write)) for write in writes]
        assert heard == [1, 1, 1, 1, 0, 0, 1, 0]  # one per write that changed something; none otherwise

        deadline = time.monotonic() + HANG_GUARD_SECONDS
        while await watcher.outside_change_token() == before:  # delivered to the watcher's own listener too
            assert time.monotonic() < deadline, "the watcher never heard of the writes"
            await asyncio.sleep(0.01)


async def test_a_run_cancelled_while_its_claim_waits_for_the_run_s_lock_is_left_free(postgres_url):
    """The UI's enter then escape at once, while another host's claim of the run holds its lock."""
    from lovia import Agent, CheckpointOptions, Runner, ScriptedModel
    from lovia.stores._postgres_checkpoint import _RUN_LOCKS

    async with PostgresCheckpointer(postgres_url) as checkpointer, \
            await psycopg.AsyncConnection.connect(postgres_url, autocommit=True) as other_host:
        await checkpointer.open()
        await other_host.execute("BEGIN")
        await other_host.execute("SELECT pg_advisory_xact_lock(%s, hashtext('r1'))", (_RUN_LOCKS,))
        agent = Agent(name="bot", model=ScriptedModel(["done"]))
        task = asyncio.ensure_future(Runner.run(agent, "go", checkpoint=CheckpointOptions(checkpointer, "r1")))
        try:
            deadline = time.monotonic() + HANG_GUARD_SECONDS
            waiting = "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted"
            while await (await other_host.execute(waiting)).fetchone() != (1,):
                assert time.monotonic() < deadline, "the claim never waited for the lock"
                await asyncio.sleep(0.01)
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await asyncio.wait_for(task, HANG_GUARD_SECONDS)  # a hang guard
        finally:
            await other_host.execute("COMMIT")
        # The claim's transaction was abandoned with its connection: nothing was stored, nothing is held.
        assert await checkpointer.load("r1") is None
        result = await Runner.run(agent, "go", checkpoint=CheckpointOptions(checkpointer, "r1"))
        assert result.final_output == "done"
        deadline = time.monotonic() + HANG_GUARD_SECONDS
        while (await (await other_host.execute(  # the abandoned server session ends once it gets the lock
                "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
                "AND state LIKE 'idle in transaction%'")).fetchone())[0]:
            assert time.monotonic() < deadline, "a transaction of the cancelled claim stayed open"
            await asyncio.sleep(0.05)


# -- the runtime's tests of SQLite files, run unchanged on PostgreSQL ------------------------

REUSED = [
    ("test_run_claims", "test_a_lease_held_on_another_host_is_taken_over_after_it_lapses_not_before"),
    ("test_run_claims", "test_the_lease_is_renewed_during_a_long_tool_call"),
    ("test_claim_races", "test_finalize_holds_the_run_so_a_resume_meanwhile_is_refused"),
    ("test_claim_races", "test_a_run_executing_here_whose_lease_lapsed_is_neither_crashed_nor_taken_over"),
    ("test_cut_off_text", "test_a_run_stopped_mid_answer_keeps_the_streamed_text_and_a_resume_runs_the_turn_anew"),
    ("test_cut_off_text", "test_a_run_that_fails_mid_answer_keeps_the_streamed_text"),
    ("test_cut_off_text", "test_a_run_stopped_between_turns_has_no_cut_off_text"),
    ("test_step_timing", "test_a_run_records_its_model_turns_and_tool_calls_in_the_head_and_the_segment"),
    ("test_step_timing", "test_a_resumed_run_keeps_the_steps_it_had_and_marks_the_one_a_stop_cut_off"),
    ("test_active_time", "test_a_stopped_and_resumed_run_sums_its_executions_into_the_segment"),
    ("test_partial_journal",
     "test_the_journal_is_written_only_under_the_stored_claim_and_cleared_by_the_next_snapshot"),
    ("test_partial_journal", "test_a_live_run_s_journal_is_not_shown_as_cut_off"),
    ("test_partial_journal", "test_a_stopped_run_keeps_its_cut_off_text_in_the_head_not_the_journal"),
]


@pytest.mark.parametrize(("module", "name"), REUSED, ids=[name for _, name in REUSED])
async def test_the_runtime_tests_of_sqlite_files_pass_on_postgres(module, name, tmp_path, postgres_url, monkeypatch):
    """Each test as it is, its module's ``SQLiteCheckpointer`` (and ``SQLiteSession``) making the
    PostgreSQL store on this test's database instead, whatever file it names."""
    from lovia.stores.postgres import PostgresSession

    tests = importlib.import_module(f"tests.runtime.{module}")
    opened: list = []

    def on_postgres(store_class):
        def make(path, *, wal: bool = False):
            store = store_class(postgres_url)
            opened.append(store)
            return store
        return make

    monkeypatch.setattr(tests, "SQLiteCheckpointer", on_postgres(PostgresCheckpointer))
    if hasattr(tests, "SQLiteSession"):
        monkeypatch.setattr(tests, "SQLiteSession", on_postgres(PostgresSession))
    test = getattr(tests, name)
    arguments = {"tmp_path": tmp_path, "kind": "sqlite"}  # "sqlite": the kind whose store is made by name
    try:
        await test(**{parameter: arguments[parameter] for parameter in inspect.signature(test).parameters})
        assert any(isinstance(store, PostgresCheckpointer) for store in opened)  # it ran on PostgreSQL
    finally:
        for store in opened:
            await store.close()
