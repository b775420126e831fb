"""A process that streams one checkpointed answer from a real OpenAI-compatible server.

    python journal_child.py DB BASE_URL MODEL

It runs the agent on "tell me" in session ``s1`` as run ``journal-run`` and prints ``DONE``
and the answer when the run completes; the test kills it with SIGKILL while it streams.
"""

from __future__ import annotations

import asyncio
import sys

from lovia import Agent, CheckpointOptions, Runner, SQLiteCheckpointer, SQLiteSession
from lovia.models.openai_chat import OpenAIChatModel

DB, BASE_URL, MODEL = sys.argv[1], sys.argv[2], sys.argv[3]


async def main() -> None:
    model = OpenAIChatModel(MODEL, base_url=BASE_URL, api_key="test-key", retries=0, timeout=600)
    async with SQLiteSession(DB, wal=True) as session, SQLiteCheckpointer(DB, wal=True) as checkpointer:
        result = await Runner.run(Agent(name="assistant", model=model), "tell me", session=session, session_id="s1",
                                  checkpoint=CheckpointOptions(checkpointer, "journal-run"))
    print(f"DONE {result.final_output}", flush=True)


asyncio.run(main())
