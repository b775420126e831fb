"""Runner cost with checkpoints, as ratios against its commit floor measured in the same run.

    python bench/runner.py [--runs 20] [--tool-turns 20] [--repeat 15]

Two runs are measured with ``ScriptedModel`` (so no model time), for each setting (a
``SQLiteCheckpointer`` alone, and with a ``SQLiteSession`` on the same file; rollback journal
and ``wal=True``):
- a one-turn run: text-only, timed over --runs runs of fresh run ids;
- a tool-call turn: a run of --tool-turns turns that each call a no-op tool, then answer;
  its time divided by --tool-turns.

The baseline, the *commit floor*, is the durable commits the spec asks of that run, done with
plain ``sqlite3`` (synchronously, no event loop, no thread) on a file of the same schema with
the same journal mode and sync setting, writing the same bytes: the claim storing the run's
input, one snapshot after each model turn and one after each tool result (each appends its
entries and replaces the head), the finalization (the head marked completed), and with a
session one commit storing the run's entries. The bytes are those lovia stored in this run
(entries and head as JSON, read back from lovia's file); the floor does no reads, no JSON
encoding and no checks, so a ratio is everything lovia adds to the commits: the loop itself,
encoding, the claim checks, the thread hop. The loop with no persistence at all is shown too.

Each figure is the median of --repeat repetitions with the lowest and highest in brackets;
a ratio is taken per repetition, lovia and its floor back to back (see ``_stats``).

The partial-answer journal's cost (``--journal``, or ``--journal-only`` for that part alone):
a streaming run (``ScriptedModel`` streaming --stream-chunks chunks of 4 characters, 2 ms
apart, as a fast local model does) on a ``SQLiteCheckpointer``, with the journal and without
it (the same store with ``journal_partial`` taken away, so the runner journals nothing), back
to back in alternating order, --stream-repeat times: the run's wall time, the process's CPU
time during it (the loop and the store's worker thread), and the journal writes it made.

An MCP call's overhead (``--mcp``, or ``--mcp-only``): a run of --tool-turns turns that each
call ``add`` (no persistence, so the figure is the call), where ``add`` is a plain in-process
async tool, the same tool on a local MCP server lovia started on stdio, and on one serving
streamable HTTP at 127.0.0.1 (``tests/mcp/tool_server.py``, written with the official SDK);
per turn, back to back in alternating order, the ratio against the in-process tool.
"""

from __future__ import annotations

import argparse
import asyncio
import sqlite3
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from _stats import Figure, ratios

from lovia import Agent, CheckpointOptions, Runner, SQLiteCheckpointer, SQLiteSession, tool
from lovia.models import ScriptedModel, ScriptedTurn, call
from lovia.runtime.journal import JOURNAL_INTERVAL_SECONDS


def session_of(run_id: str) -> str:
    """Each run in a session of its own: loading a growing history is a cost of reads, measured
    by ``bench/stores.py``, not of a run's commits."""
    return f"s-{run_id}"


@tool
async def noop(n: int) -> str:
    """Does nothing. Async: a plain function tool runs on a thread of its own per call, a cost of
    the tool (about 0.3 ms here), not of the turn's bookkeeping."""
    return "ok"


@dataclass(frozen=True, slots=True)
class Setting:
    label: str
    session: bool
    wal: bool


SETTINGS = (
    Setting("checkpointer", session=False, wal=False),
    Setting("checkpointer, wal=True", session=False, wal=True),
    Setting("checkpointer + session", session=True, wal=False),
    Setting("checkpointer + session, wal=True", session=True, wal=True),
)


# -- lovia ---------------------------------------------------------------------------------


class Lovia:
    """lovia's runs on open stores (none at all for the loop alone)."""

    def __init__(self, path: Path | None, setting: Setting) -> None:
        self.checkpointer = SQLiteCheckpointer(path, wal=setting.wal) if path else None
        self.session = SQLiteSession(path, wal=setting.wal) if path and setting.session else None

    async def open(self) -> None:
        for store in (self.checkpointer, self.session):
            if store is not None:
                await store.open()

    async def close(self) -> None:
        for store in (self.checkpointer, self.session):
            if store is not None:
                await store.close()

    def _options(self, run_id: str) -> CheckpointOptions | None:
        return CheckpointOptions(self.checkpointer, run_id) if self.checkpointer else None

    async def one_turn_runs(self, runs: int, tag: str) -> float:
        """Seconds per one-turn run."""
        agent = Agent(name="bot", model=ScriptedModel(["short answer"] * runs))
        start = time.perf_counter()
        for i in range(runs):
            run_id = f"{tag}-t{i}"
            await Runner.run(agent, "hi", checkpoint=self._options(run_id), session=self.session,
                             session_id=session_of(run_id) if self.session else None)
        return (time.perf_counter() - start) / runs

    async def tool_run(self, tool_turns: int, tag: str) -> float:
        """Seconds per tool-call turn of a run of ``tool_turns`` of them and a final answer."""
        turns: list[ScriptedTurn | str] = [ScriptedTurn(tool_calls=[call("noop", {"n": i})]) for i in range(tool_turns)]
        agent = Agent(name="bot", model=ScriptedModel([*turns, "done"]), tools=[noop])
        run_id = f"{tag}-tools"
        start = time.perf_counter()
        await Runner.run(agent, "go", checkpoint=self._options(run_id), session=self.session,
                         session_id=session_of(run_id) if self.session else None, max_turns=tool_turns + 1)
        return (time.perf_counter() - start) / tool_turns


# -- the commit floor ------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class StoredRun:
    """What lovia stored for one run: its entries (type, JSON) in order and its head's JSON."""

    entries: list[tuple[str, str]]
    head: str


def stored_run(path: Path, run_id: str) -> StoredRun:
    conn = sqlite3.connect(path)
    try:
        entries = conn.execute("SELECT type, data FROM lovia_run_entries WHERE run_id = ? ORDER BY position",
                               (run_id,)).fetchall()
        (head,) = conn.execute("SELECT head FROM lovia_runs WHERE run_id = ?", (run_id,)).fetchone()
    finally:
        conn.close()
    return StoredRun(entries, head)


async def floor_file(directory: Path, name: str, wal: bool) -> Path:
    """A file with lovia's checkpoint schema (created by lovia) and a table for whole segments."""
    path = directory / name
    async with SQLiteCheckpointer(path, wal=wal):
        pass
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("CREATE TABLE floor_segments (session_id TEXT NOT NULL, run_id TEXT NOT NULL, data TEXT NOT NULL, "
                 "PRIMARY KEY (session_id, run_id))")
    conn.close()
    return path


class Floor:
    """The durable commits of runs, with plain sqlite3 and the same journal and sync settings as lovia."""

    def __init__(self, path: Path, wal: bool) -> None:
        self.conn = sqlite3.connect(path, isolation_level=None, timeout=30)
        if wal:
            self.conn.execute("PRAGMA journal_mode = WAL")

    def commit(self, run_id: str, entries: list[tuple[int, str, str]], head: str) -> None:
        """Append ``entries`` (position, type, JSON) to the run and replace its head, in one transaction."""
        conn = self.conn
        conn.execute("BEGIN IMMEDIATE")
        conn.executemany("INSERT INTO lovia_run_entries (run_id, position, type, data) VALUES (?, ?, ?, ?)",
                         [(run_id, *entry) for entry in entries])
        conn.execute(
            "INSERT INTO lovia_runs (run_id, status, session_id, updated_at, entry_count, head) "
            "VALUES (?, 'running', NULL, ?, ?, ?) ON CONFLICT (run_id) DO UPDATE SET status = excluded.status, "
            "updated_at = excluded.updated_at, entry_count = excluded.entry_count, head = excluded.head",
            (run_id, time.time(), entries[-1][0] + 1 if entries else 0, head),
        )
        conn.execute("COMMIT")

    def append_segment(self, run_id: str, run: StoredRun) -> None:
        conn = self.conn
        conn.execute("BEGIN IMMEDIATE")
        conn.execute("INSERT INTO floor_segments (session_id, run_id, data) VALUES (?, ?, ?)",
                     (session_of(run_id), run_id, "[" + ",".join(data for _, data in run.entries) + "]"))
        conn.execute("COMMIT")

    def run(self, run_id: str, run: StoredRun, session: bool) -> None:
        """The commits the spec asks of ``run``: the claim with its input, a snapshot after each
        model turn (its message or tool calls) and each tool result, the finalization, the segment."""
        entries = [(position, kind, data) for position, (kind, data) in enumerate(run.entries)]
        first_output = next(i for i, (_, kind, _) in enumerate(entries) if kind != "user")
        self.commit(run_id, entries[:first_output], run.head)  # the claim stores the input
        for entry in entries[first_output:]:
            self.commit(run_id, [entry], run.head)
        self.commit(run_id, [], run.head)  # finalized
        if session:
            self.append_segment(run_id, run)

    def close(self) -> None:
        self.conn.close()


# -- the table --------------------------------------------------------------------------------


def ms(figure: Figure) -> str:
    """Milliseconds to two places (a tool-call turn is about one), with the spread."""
    return f"{figure.median * 1000:.2f} ({figure.low * 1000:.2f}-{figure.high * 1000:.2f})"


@dataclass(slots=True)
class Samples:
    lovia_run: list[float] = field(default_factory=list)
    floor_run: list[float] = field(default_factory=list)
    lovia_turn: list[float] = field(default_factory=list)
    floor_turn: list[float] = field(default_factory=list)


async def measure(setting: Setting, runs: int, tool_turns: int, repeat: int, directory: Path) -> Samples:
    """Repetitions of lovia and its floor back to back, in alternating order, on open files.

    The pairs are close in time on purpose: the cost of a durable commit on a shared disk
    swings by several times from one second to the next, and a ratio of a pair taken a
    moment apart sees the same disk.
    """
    lovia_path = directory / f"{setting.label}.db"
    floor_path = await floor_file(directory, f"{setting.label} floor.db", setting.wal)
    lovia = Lovia(lovia_path, setting)
    await lovia.open()
    floor = Floor(floor_path, setting.wal)
    samples = Samples()
    try:
        # An untimed first pass: the bytes the floor writes, and a warm start for both.
        await lovia.one_turn_runs(1, "h")
        await lovia.tool_run(tool_turns, "h")
        one_turn, tools = stored_run(lovia_path, "h-t0"), stored_run(lovia_path, "h-tools")
        for attempt in range(repeat):
            tag = f"r{attempt}"
            for who in (["lovia", "floor"] if attempt % 2 == 0 else ["floor", "lovia"]):
                if who == "lovia":
                    samples.lovia_run.append(await lovia.one_turn_runs(runs, tag))
                else:
                    start = time.perf_counter()
                    for i in range(runs):
                        floor.run(f"{tag}-t{i}", one_turn, setting.session)
                    samples.floor_run.append((time.perf_counter() - start) / runs)
            for who in (["lovia", "floor"] if attempt % 2 == 0 else ["floor", "lovia"]):
                if who == "lovia":
                    samples.lovia_turn.append(await lovia.tool_run(tool_turns, tag))
                else:
                    start = time.perf_counter()
                    floor.run(f"{tag}-tools", tools, setting.session)
                    samples.floor_turn.append((time.perf_counter() - start) / tool_turns)
    finally:
        floor.close()
        await lovia.close()
    return samples


async def loop_alone(runs: int, tool_turns: int, repeat: int) -> tuple[list[float], list[float]]:
    lovia = Lovia(None, SETTINGS[0])
    per_run = [await lovia.one_turn_runs(runs, "none") for _ in range(repeat)]
    per_turn = [await lovia.tool_run(tool_turns, "none") for _ in range(repeat)]
    return per_run, per_turn


# -- an MCP call's overhead ------------------------------------------------------------------

MCP_SERVER = Path(__file__).resolve().parent.parent / "tests" / "mcp" / "tool_server.py"


@tool(name="add")
async def add_here(a: int, b: int) -> str:
    """Add two whole numbers (in this process)."""
    return str(a + b)


async def add_turns(tool_turns: int, *, tools=(), mcp_servers=()) -> float:
    """Seconds per turn of a run of ``tool_turns`` turns each calling ``add``, then an answer."""
    turns = [ScriptedTurn(tool_calls=[call("add", {"a": i, "b": 1})]) for i in range(tool_turns)]
    agent = Agent(name="bot", tools=list(tools), mcp_servers=list(mcp_servers),
                  model=ScriptedModel([*turns, ScriptedTurn(text="done")]))
    started = time.perf_counter()
    await Runner.run(agent, "add")
    return (time.perf_counter() - started) / tool_turns


async def measure_mcp(tool_turns: int, repeat: int, url: str) -> dict[str, list[float]]:
    from lovia import MCPServer

    servers = {"stdio": MCPServer("stdio", command=sys.executable, args=[str(MCP_SERVER)]),
               "http": MCPServer("http", url=url)}
    samples: dict[str, list[float]] = {"here": [], "stdio": [], "http": []}
    try:
        for server in servers.values():
            await server.start()  # started once, as a chat's server stays up: the call is measured
            await add_turns(3, mcp_servers=[server])
        await add_turns(3, tools=[add_here])
        for attempt in range(repeat):
            order = ("here", "stdio", "http") if attempt % 2 == 0 else ("http", "stdio", "here")
            for kind in order:
                if kind == "here":
                    samples[kind].append(await add_turns(tool_turns, tools=[add_here]))
                else:
                    samples[kind].append(await add_turns(tool_turns, mcp_servers=[servers[kind]]))
    finally:
        for server in servers.values():
            await server.stop()
    return samples


def print_mcp_overhead(tool_turns: int, repeat: int) -> None:
    import os
    import socket
    import subprocess

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    http = subprocess.Popen([sys.executable, str(MCP_SERVER), "--http", str(port)], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, env=dict(os.environ))
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise SystemExit("the MCP test server did not start") from None
                time.sleep(0.05)
        s = asyncio.run(measure_mcp(tool_turns, repeat, f"http://127.0.0.1:{port}/mcp"))
    finally:
        http.terminate()
        http.wait(10)
    print(f"\nMCP call overhead: a run of {tool_turns} tool-call turns each calling add, no persistence; median "
          f"of {repeat} (lowest-highest), per turn\n")
    print("| the add tool | per turn, ms | ratio to the in-process tool |")
    print("|---|---|---|")
    print(f"| in-process async tool | {ms(Figure.of(s['here']))} | |")
    print(f"| MCP server on stdio | {ms(Figure.of(s['stdio']))} | {ratios(s['stdio'], s['here']).times()} |")
    print(f"| MCP server on streamable HTTP, 127.0.0.1 | {ms(Figure.of(s['http']))} "
          f"| {ratios(s['http'], s['here']).times()} |")


# -- the partial-answer journal's cost ---------------------------------------------------------


class WithoutJournal(SQLiteCheckpointer):
    """The SQLite checkpointer without the journal: a protocol member set to ``None`` is absent,
    so the runner's ``isinstance(..., JournalingCheckpointer)`` is false and it journals nothing."""

    journal_partial = None  # type: ignore[assignment]


class CountingJournal(SQLiteCheckpointer):
    """The SQLite checkpointer, counting the journal writes the runner makes."""

    writes = 0

    async def journal_partial(self, run_id, text, *, claim, step=None):  # type: ignore[no-untyped-def]
        self.writes += 1
        return await super().journal_partial(run_id, text, claim=claim, step=step)


STREAM_DELAY = 0.002


async def streaming_run(checkpointer: SQLiteCheckpointer, chunks: int, run_id: str) -> tuple[float, float]:
    """Wall and CPU seconds of one run streaming ``chunks`` chunks."""
    text = "".join(f"w{i % 100:02d} " for i in range(chunks))  # 4 characters a chunk
    agent = Agent(name="bot", model=ScriptedModel([ScriptedTurn(text=text, chunk_chars=4, delay=STREAM_DELAY)]))
    wall, cpu = time.perf_counter(), time.process_time()
    await Runner.run(agent, "tell me", checkpoint=CheckpointOptions(checkpointer, run_id))
    return time.perf_counter() - wall, time.process_time() - cpu


@dataclass(slots=True)
class JournalSamples:
    wall: dict[bool, list[float]] = field(default_factory=lambda: {True: [], False: []})
    cpu: dict[bool, list[float]] = field(default_factory=lambda: {True: [], False: []})
    writes: list[int] = field(default_factory=list)


async def measure_journal(wal: bool, chunks: int, repeat: int, directory: Path) -> JournalSamples:
    samples = JournalSamples()
    stores = {True: CountingJournal(directory / f"journal-{wal}.db", wal=wal),
              False: WithoutJournal(directory / f"no-journal-{wal}.db", wal=wal)}
    for store in stores.values():
        await store.open()
        await streaming_run(store, 50, "warm")  # untimed: a warm start for both
    try:
        for attempt in range(repeat):
            for journal in ((True, False) if attempt % 2 == 0 else (False, True)):
                before = stores[True].writes
                wall, cpu = await streaming_run(stores[journal], chunks, f"r{attempt}")
                samples.wall[journal].append(wall)
                samples.cpu[journal].append(cpu)
                if journal:
                    samples.writes.append(stores[True].writes - before)
    finally:
        for store in stores.values():
            await store.close()
    return samples


def print_journal_cost(chunks: int, repeat: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        table = [(wal, asyncio.run(measure_journal(wal, chunks, repeat, Path(tmp)))) for wal in (False, True)]
    print(f"\npartial-answer journal: a run streaming {chunks} chunks {STREAM_DELAY * 1000:g} ms apart, with and "
          f"without the journal (at most one write per {JOURNAL_INTERVAL_SECONDS:g} s); median of {repeat} "
          "(lowest-highest)\n")
    print("| checkpointer | run: without | with | ratio | CPU time: without | with | ratio | journal writes |")
    print("|---|---|---|---|---|---|---|---|")
    for wal, s in table:
        label = "wal=True" if wal else "default"
        writes = Figure.of([float(w) for w in s.writes])
        print(f"| {label} | {Figure.of(s.wall[False]).ms()} | {Figure.of(s.wall[True]).ms()} "
              f"| {ratios(s.wall[True], s.wall[False]).times()} | {Figure.of(s.cpu[False]).ms()} "
              f"| {Figure.of(s.cpu[True]).ms()} | {ratios(s.cpu[True], s.cpu[False]).times()} "
              f"| {writes.median:g} ({writes.low:g}-{writes.high:g}) for {chunks} chunks |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=20, help="one-turn runs per repetition (default 20)")
    parser.add_argument("--tool-turns", type=int, default=20, help="tool-call turns of the long run (default 20)")
    parser.add_argument("--repeat", type=int, default=15, help="repetitions (default 15)")
    parser.add_argument("--journal", action="store_true", help="also measure the partial-answer journal's cost")
    parser.add_argument("--journal-only", action="store_true", help="measure only the journal's cost")
    parser.add_argument("--stream-chunks", type=int, default=500, help="chunks of the streaming run (default 500)")
    parser.add_argument("--stream-repeat", type=int, default=9, help="repetitions of the journal's part (default 9)")
    parser.add_argument("--mcp", action="store_true", help="also measure an MCP call's overhead (needs the mcp extra)")
    parser.add_argument("--mcp-only", action="store_true", help="measure only an MCP call's overhead")
    args = parser.parse_args()
    if args.journal_only:
        print_journal_cost(args.stream_chunks, args.stream_repeat)
        return
    if args.mcp_only:
        print_mcp_overhead(args.tool_turns, args.repeat)
        return
    loop_run, loop_turn = asyncio.run(loop_alone(args.runs, args.tool_turns, args.repeat))
    with tempfile.TemporaryDirectory() as tmp:
        table = [(setting, asyncio.run(measure(setting, args.runs, args.tool_turns, args.repeat, Path(tmp))))
                 for setting in SETTINGS]
    print(f"lovia runner benchmark: {args.runs} one-turn runs, a run of {args.tool_turns} tool-call turns; "
          f"median of {args.repeat} (lowest-highest); ratios against the commit floor (raw sqlite3 doing the "
          "run's durable commits)")
    print("target: a tool-call turn within 1.3x its commit floor\n")
    print("| persistence | one-turn run, ms lovia | floor | ratio | tool-call turn, ms lovia | floor | ratio |")
    print("|---|---|---|---|---|---|---|")
    print(f"| none (the loop alone) | {ms(Figure.of(loop_run))} | | | {ms(Figure.of(loop_turn))} | | |")
    for setting, s in table:
        print(f"| {setting.label} | {ms(Figure.of(s.lovia_run))} | {ms(Figure.of(s.floor_run))} "
              f"| {ratios(s.lovia_run, s.floor_run).times()} | {ms(Figure.of(s.lovia_turn))} "
              f"| {ms(Figure.of(s.floor_turn))} | {ratios(s.lovia_turn, s.floor_turn).times()} |")
    if args.journal:
        print_journal_cost(args.stream_chunks, args.stream_repeat)
    if args.mcp:
        print_mcp_overhead(args.tool_turns, args.repeat)


if __name__ == "__main__":
    main()
