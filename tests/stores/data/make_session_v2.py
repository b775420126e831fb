"""Makes ``session-v2.db`` and ``session-v2.json``: a session file as lovia's schema 2 wrote it.

Run once with the lovia of schema 2 (commit 86ace60) importable as ``lovia``, e.g. from a
checkout of that commit with no other lovia installed:
``PYTHONPATH=<that checkout> python tests/stores/data/make_session_v2.py``.
The database is what that code wrote; the JSON is what that code read back from it (every
session's entries, segments, listing figures and a page), so the migration test compares a
newer lovia's reading of the migrated file with the older one's reading of the original.
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
import sys
from pathlib import Path

from lovia import (
    AssistantMessage,
    Handoff,
    RunHead,
    RunSnapshot,
    SQLiteCheckpointer,
    SQLiteSession,
    ToolCall,
    ToolResult,
    UserMessage,
)
from lovia.entries import entry_to_dict

HERE = Path(__file__).resolve().parent


def turn(n: int, tools: int, output_chars: int) -> list:
    t = 1_700_000_000.0 + n * 100
    entries: list = [UserMessage(text=f"question {n}: what is ü{n}?", created_at=t)]
    for k in range(tools):
        entries.append(ToolCall(call_id=f"c{n}-{k}", name="search", arguments=json.dumps({"q": n}),
                                agent="bot", created_at=t + 1 + k))
        entries.append(ToolResult(call_id=f"c{n}-{k}", output="o" * output_chars, name="search",
                                  is_error=k == 1, created_at=t + 2 + k))
    entries.append(AssistantMessage(text=f"answer {n}", agent="bot",
                                    finish_reason="length" if n % 3 == 2 else None, created_at=t + 50))
    return entries


def meta(n: int) -> dict:
    t = 1_700_000_000.0 + n * 100
    return {"timing": {"started_at": t, "finished_at": t + 60}, "active_seconds": 40 + n, "agent": "bot"}


async def write(path: Path) -> None:
    async with SQLiteSession(path) as session, SQLiteCheckpointer(path) as checkpointer:
        for n in range(6):
            await session.append("chat", turn(n, n % 3, 50), run_id=f"chat-{n}", meta=meta(n))
        await session.append("chat", [], run_id="chat-empty", meta={"note": "no entries"})
        await session.append("chat", [Handoff(from_agent="bot", to_agent="expert", call_id=None, created_at=5.0),
                                      AssistantMessage(text="expert here", agent="expert", created_at=6.0)],
                             run_id="chat-handoff")
        await session.append("renamed", turn(10, 1, 20), run_id="renamed-0", meta=meta(10))
        await session.rename_session("renamed", "A title of its own")
        for n in range(3):
            await session.append("rewound", turn(20 + n, 2, 30), run_id=f"rewound-{n}", meta=meta(20 + n))
        await session.rewind("rewound", keep_entries=len(turn(20, 2, 30)) + 2)  # inside the second run
        for n in range(4):
            await session.append("trimmed", turn(30 + n, 2, 2000), run_id=f"trimmed-{n}", meta=meta(30 + n))
        await session.trim_tool_results("trimmed", keep_chars=100, keep_runs=1)
        await session.append("untitled", [AssistantMessage(text="no user here", created_at=7.0)], run_id="u-0")
        for n in range(3):  # two sessions whose runs alternate in the file
            await session.append("woven-a", turn(40 + n, 1, 10), run_id=f"woven-a-{n}")
            await session.append("woven-b", turn(50 + n, n, 10), run_id=f"woven-b-{n}")
        await checkpointer.save(RunSnapshot("live", RunHead(agent="bot", session_id="chat"),
                                            [UserMessage(text="in flight", created_at=8.0)]))
    # A field written by a newer lovia: it must survive the migration and be ignored on load.
    with sqlite3.connect(path) as conn:
        conn.execute("UPDATE lovia_entries SET data = json_set(data, '$.mood', 'cheerful') WHERE seq = 2")


async def read(path: Path) -> dict:
    out: dict = {"sessions": {}}
    async with SQLiteSession(path) as session:
        for info in await session.list_sessions():
            sid = info.session_id
            page = await session.read_page(sid, start=3, limit=5)
            out["sessions"][sid] = {
                "info": [info.title, info.entry_count, info.run_count, info.created_at, info.last_activity,
                         info.total_run_seconds],
                "load": [entry_to_dict(e) for e in await session.load(sid)],
                "segments": [[s.run_id, [entry_to_dict(e) for e in s.entries], s.meta]
                             for s in await session.segments(sid)],
                "page": [page.start, [entry_to_dict(e) for e in page.entries],
                         [[r.run_id, r.start, r.count, r.meta] for r in page.runs], page.total],
            }
    return out


def main() -> None:
    db, golden = HERE / "session-v2.db", HERE / "session-v2.json"
    db.unlink(missing_ok=True)
    asyncio.run(write(db))
    with sqlite3.connect(db) as conn:
        assert dict(conn.execute("SELECT store, version FROM lovia_schema"))["session"] == 2
    golden.write_text(json.dumps(asyncio.run(read(db)), indent=1, ensure_ascii=False) + "\n")
    print(f"wrote {db} and {golden}", file=sys.stderr)


if __name__ == "__main__":
    main()
