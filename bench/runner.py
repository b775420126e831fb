"""Runner overhead with ScriptedModel, as ratios against the same loop with no persistence.

    python bench/runner.py [--runs 200] [--tool-turns 50] [--repeat 3]

- per turn: a one-turn, text-only run;
- per tool call: a run of --tool-turns turns that each call a no-op tool.
Each is measured with no persistence (the baseline), with a SQLiteCheckpointer, with a
SQLiteCheckpointer and a SQLiteSession, and with both on wal=True. Best of --repeat.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from lovia import Agent, CheckpointOptions, Runner, SQLiteCheckpointer, SQLiteSession, tool  # noqa: E402
from lovia.models import ScriptedModel, ScriptedTurn, call  # noqa: E402


@tool
def noop(n: int) -> str:
    """Does nothing."""
    return "ok"


async def measure(setting: str, runs: int, tool_turns: int, directory: Path) -> tuple[float, float]:
    wal = setting.endswith("wal")
    checkpointer = SQLiteCheckpointer(directory / f"{setting}.db", wal=wal) if setting != "none" else None
    session = SQLiteSession(directory / f"{setting}.db", wal=wal) if "session" in setting else None

    def options(run_id: str):
        return CheckpointOptions(checkpointer, run_id) if checkpointer else None

    text_agent = Agent(name="bot", model=ScriptedModel(["short answer"] * runs))
    start = time.perf_counter()
    for i in range(runs):
        await Runner.run(text_agent, "hi", checkpoint=options(f"t{i}"), session=session,
                         session_id="s" if session else None)
    per_turn = (time.perf_counter() - start) / runs

    turns = [ScriptedTurn(tool_calls=[call("noop", {"n": i})]) for i in range(tool_turns)] + ["done"]
    tool_agent = Agent(name="bot", model=ScriptedModel(turns), tools=[noop])
    start = time.perf_counter()
    await Runner.run(tool_agent, "go", checkpoint=options("tools"), session=session,
                     session_id="s" if session else None, max_turns=tool_turns + 1)
    per_tool = (time.perf_counter() - start) / tool_turns
    for store in (checkpointer, session):
        if store is not None:
            await store.close()
    return per_turn, per_tool


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--tool-turns", type=int, default=50)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    settings = ["none", "checkpoint", "checkpoint+session", "checkpoint+session+wal"]
    best: dict[str, tuple[float, float]] = {}
    for _ in range(args.repeat):
        with tempfile.TemporaryDirectory() as tmp:
            for setting in settings:
                turn, tool_call = asyncio.run(measure(setting, args.runs, args.tool_turns, Path(tmp)))
                old = best.get(setting, (float("inf"), float("inf")))
                best[setting] = (min(old[0], turn), min(old[1], tool_call))
    base_turn, base_tool = best["none"]
    print(f"lovia runner benchmark: {args.runs} one-turn runs, a run of {args.tool_turns} tool-call turns; "
          f"best of {args.repeat}; ratios against no persistence\n")
    print("| persistence | ms per turn | ratio | ms per tool-call turn | ratio |")
    print("|---|---|---|---|---|")
    for setting in settings:
        turn, tool_call = best[setting]
        print(f"| {setting} | {turn * 1000:.3f} | {turn / base_turn:.2f}x | {tool_call * 1000:.3f} "
              f"| {tool_call / base_tool:.2f}x |")


if __name__ == "__main__":
    main()
