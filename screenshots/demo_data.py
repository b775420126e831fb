"""A demo database: a few sessions and an interrupted run, at fixed times.

    python screenshots/demo_data.py PATH [--entries N]

Used to take the README's screenshots, by the snapshot tests (fixed times make them
repeatable) and by the TUI benchmark (``--entries`` adds one long session).
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import sqlite3
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from lovia.checkpoint import RunHead, RunOwner, RunSnapshot
from lovia.entries import AssistantMessage, Entry, ToolCall, ToolResult, UserMessage
from lovia.stores import SQLiteCheckpointer, SQLiteSession
from lovia.timing import ModelStep, Step, ToolStep, steps_to_meta
from lovia.usage import Usage

BASE_TIME = 1796212800.0  # 2026-12-02 12:00 UTC
LONG_SESSION = "s-long-history"


def _at(entries: list[Entry], start: float) -> list[Entry]:
    return [dataclasses.replace(e, created_at=start + i) for i, e in enumerate(entries)]


CONVERSATIONS: list[tuple[str, list[tuple[list[Entry], float, float]]]] = [
    ("s-atlas", [
        ([UserMessage(text="My project is called Atlas."),
          AssistantMessage(text="Got it: your project is **Atlas**. I'll remember that.", agent="assistant")],
         0.0, 1.2),
        ([UserMessage(text="calculate (12 + 30) * 7"),
          ToolCall(call_id="call-demo-1", name="calculate", arguments='{"expression": "(12 + 30) * 7"}',
                   agent="assistant"),
          ToolResult(call_id="call-demo-1", output="(12 + 30) * 7 = 294", name="calculate"),
          AssistantMessage(text="**(12 + 30) * 7 = 294**", agent="assistant")], 60.0, 2.4),
        ([UserMessage(text="Show me how to read the Atlas config in Python."),
          AssistantMessage(text="Use `tomllib` from the standard library:\n\n```python\nimport tomllib\n\n"
                                "with open(\"atlas.toml\", \"rb\") as f:\n    config = tomllib.load(f)\n"
                                "print(config[\"name\"])\n```\n\nIt reads TOML into plain dicts.",
                           agent="assistant")], 120.0, 3.1),
    ]),
    ("s-groceries", [
        ([UserMessage(text="What time is it?"),
          ToolCall(call_id="call-demo-2", name="current_time", arguments="{}", agent="assistant"),
          ToolResult(call_id="call-demo-2", output="2026-12-02T11:02:13+00:00", name="current_time"),
          AssistantMessage(text="It is **2026-12-02T11:02:13+00:00**.", agent="assistant")], -3600.0, 0.8),
    ]),
]


def _demo_steps(session_id: str, number: int, start: float) -> list[Step]:
    """The per-step timing of a demo run (s-atlas's runs have it; the older session was stored without)."""
    model = "demo"
    if session_id != "s-atlas":
        return []
    if number == 0:
        return [ModelStep("assistant", model, start + 0.05, start + 0.45, start + 1.15, 310, 18, turn=1)]
    if number == 1:
        return [ModelStep("assistant", model, start + 0.05, start + 0.4, start + 0.9, 402, 24, turn=1),
                ToolStep("call-demo-1", "calculate", start + 0.92, start + 0.97),
                ModelStep("assistant", model, start + 1.0, start + 1.55, start + 2.35, 455, 31, turn=2)]
    return [ModelStep("assistant", model, start + 0.05, start + 0.62, start + 3.05, 420, 96, turn=1)]


async def build(path: Path, *, long_entries: int = 0) -> None:
    """Write the demo sessions (and a long one of ``long_entries``) and an interrupted run."""
    session = SQLiteSession(path, wal=True)
    checkpointer = SQLiteCheckpointer(path, wal=True)
    for session_id, runs in CONVERSATIONS:
        for number, (entries, offset, seconds) in enumerate(runs):
            start = BASE_TIME + offset
            meta: dict[str, object] = {"timing": {"started_at": start, "finished_at": start + seconds}}
            if steps := _demo_steps(session_id, number, start):
                meta["steps"] = steps_to_meta(steps)
            await session.append(session_id, _at(entries, start), run_id=f"{session_id}-run-{number}", meta=meta)
    if long_entries:
        batch = []
        for i in range(long_entries // 2):
            batch += [UserMessage(text=f"Question number {i}: what changed in step {i}?", created_at=BASE_TIME + i),
                      AssistantMessage(text=f"Step {i} changed **{i % 7} files**; nothing else moved.",
                                       agent="assistant", created_at=BASE_TIME + i)]
            if len(batch) >= 200:
                await session.append(LONG_SESSION, batch, meta={"timing": {"started_at": BASE_TIME + i,
                                                                           "finished_at": BASE_TIME + i + 1}})
                batch = []
        if batch:
            await session.append(LONG_SESSION, batch)
    head = RunHead(agent="assistant", status="interrupted", turn=1, usage=Usage(1, 120, 14),
                   started_at=BASE_TIME + 300, updated_at=BASE_TIME + 304, session_id="s-atlas",
                   first_input="wait 30, then tell me the time", owner=RunOwner(host="worker-1", pid=4242),
                   entry_agent="assistant", model="demo", active_seconds=3.9, steps=[
                       ModelStep("assistant", "demo", BASE_TIME + 300.1, BASE_TIME + 300.5, BASE_TIME + 301.0,
                                 120, 14, turn=1),
                       ToolStep("call-demo-3", "wait", BASE_TIME + 301.05, BASE_TIME + 304.0, cut_off=True)])
    await checkpointer.save(RunSnapshot("run-demo-interrupted", head, _at([
        UserMessage(text="wait 30, then tell me the time"),
        AssistantMessage(text="Starting a 30-second step.", agent="assistant"),
        ToolCall(call_id="call-demo-3", name="wait", arguments='{"seconds": 30}', agent="assistant"),
    ], BASE_TIME + 300)))
    await session.close()
    await checkpointer.close()
    # Fix the times the stores stamp themselves, so every build looks the same.
    with sqlite3.connect(path) as conn:
        conn.execute("UPDATE lovia_segments SET appended_at = ? + seq", (BASE_TIME,))
        for session_id, offset in (("s-atlas", 123.1), ("s-groceries", -3599.2), (LONG_SESSION, -7200.0)):
            conn.execute("UPDATE lovia_session_info SET created_at = ?, last_activity = ? WHERE session_id = ?",
                         (BASE_TIME + min(offset, 0.0), BASE_TIME + offset, session_id))


STOPPED_RUNS_HOST = RunOwner(host="worker-1", pid=4243, started=1)


async def build_stopped_runs(path: Path) -> None:
    """Add runs left behind every way a run can be (to a database :func:`build` wrote): crashed
    while streaming, failed on a model error, crashed inside two tool calls, running elsewhere."""
    checkpointer = SQLiteCheckpointer(path, wal=True)

    def head(first_input: str, session_id: str, start: float, **changes) -> RunHead:
        return RunHead(agent="assistant", turn=1, usage=Usage(1, 180, 40), started_at=BASE_TIME + start,
                       updated_at=BASE_TIME + start + 6, session_id=session_id, first_input=first_input,
                       entry_agent="assistant", model="gpt-4o-mini", active_seconds=5.8, **changes)

    lapsed = {"status": "running", "owner": STOPPED_RUNS_HOST, "claim": "t-demo", "lease_until": BASE_TIME + 10}
    runs = [
        ("run-demo-streaming", head("Why is TOML's datetime type useful?", "s-atlas", 400,
                                    cut_off_text="TOML has first-class dates, so `2026-12-02T12:00:00Z` reads "
                                                 "as a datetime, not a string, and", **lapsed), []),
        ("run-demo-failed", head("Plan the groceries for a week", "s-groceries", 200, status="failed",
                                 error="ModelError: HTTP 502 Bad Gateway from api.example.com\nretry later"), []),
        ("run-demo-tools", head("Email the report, then pay the invoice", "s-atlas", 350, **lapsed), [
            AssistantMessage(text="Sending the report and paying.", agent="assistant"),
            ToolCall(call_id="call-demo-mail", name="send_report", arguments='{"to": "ops@example.com"}',
                     agent="assistant"),
            ToolCall(call_id="call-demo-pay", name="pay_invoice", arguments='{"invoice": "INV-7"}',
                     agent="assistant"),
        ]),
        ("run-demo-elsewhere", head("Summarize the changelog", "s-groceries", 500, status="running",
                                    owner=RunOwner(host="build-7", pid=7311, started=1), claim="t-far",
                                    lease_until=4_000_000_000.0), []),
    ]
    for run_id, run_head, rest in runs:
        entries = [UserMessage(text=run_head.first_input), *rest]
        await checkpointer.save(RunSnapshot(run_id, run_head, _at(entries, run_head.started_at)))
    await checkpointer.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("path", type=Path)
    parser.add_argument("--entries", type=int, default=0, help="also add a session of this many entries")
    args = parser.parse_args()
    if args.path.exists():
        parser.error(f"{args.path} exists; give a new path")
    asyncio.run(build(args.path, long_entries=args.entries))
    print(f"wrote {args.path}")


if __name__ == "__main__":
    main()
