"""``lovia export`` of a long session: Markdown against JSON lines of the same session, in the same run.

    python bench/export.py [--entries 20000] [--repeat 3] [--profile]

One SQLite file holds one session of ``--entries`` entries (runs of 4: a question holding a fenced
block, a tool call whose arguments hold one, its result with runs of backticks in it, an answer
whose code block is sometimes left open, as a cut-off answer leaves it), about 1.1 KB of Markdown
an entry, as a long working session has. Each repetition exports it with ``write_export`` to a
file, as ``lovia export SESSION -o FILE`` does: Markdown and JSON lines back to back, the order
alternating. The JSON lines export is the baseline: it reads the same pages and writes about as
much, so the ratio is what making Markdown costs beyond reading and writing.

Figures are the median of ``--repeat`` repetitions with the lowest and highest (bench/_stats.py);
wall time and this process's CPU time. ``--profile`` then prints the top of a cProfile of one
Markdown export.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import pstats
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._stats import Figure, print_table, ratios
from lovia import AssistantMessage, SQLiteSession, ToolCall, ToolResult, UserMessage
from lovia.export import ExportFormat, write_export

SESSION = "s-bench-export"
RUN_SIZE = 4


def run_entries(index: int) -> list:
    """One run's four entries, each holding code, backticks or a fence, as a coding session's do."""
    code = "\n".join(f"    value_{index}_{line} = compute(`x`, {line})  # step {line}" for line in range(8))
    left_open = index % 5 == 0  # an answer cut off inside its code block
    answer = (f"Here is the change for item {index}:\n\n```python\n{code}\n"
              + ("" if left_open else "```\n\nThat should do it; run ``pytest`` again."))
    return [
        UserMessage(text=f"Please fix item {index}:\n\n```python\n{code}\n```\n\nIt fails with `KeyError`."),
        ToolCall(call_id=f"c{index}", name="edit_file",
                 arguments=f'{{"path": "src/item_{index}.py", "patch": "```diff\\n-old\\n+new\\n```"}}'),
        ToolResult(call_id=f"c{index}", name="edit_file",
                   output=f"patched src/item_{index}.py\n" + "ok ` `` ``` ```` " * 20 + f"\n{code}\n" * 8),
        AssistantMessage(text=answer, agent="coder"),
    ]


async def build(path: Path, entries: int) -> None:
    async with SQLiteSession(path) as store:
        for index in range(entries // RUN_SIZE):
            await store.append(SESSION, run_entries(index), run_id=f"r{index}")


def export_once(path: Path, out: Path, fmt: ExportFormat) -> tuple[float, float]:
    """Wall and CPU seconds of one export of the session to ``out``, store opening included."""
    async def export() -> None:
        async with SQLiteSession(path, wal=False) as store:
            await write_export(store, SESSION, out, fmt=fmt)

    wall, cpu = time.perf_counter(), time.process_time()
    asyncio.run(export())
    return time.perf_counter() - wall, time.process_time() - cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--entries", type=int, default=20_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--profile", action="store_true", help="then profile one Markdown export")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "lovia.db"
        started = time.perf_counter()
        asyncio.run(build(path, args.entries))
        print(f"built {args.entries:,} entries in {time.perf_counter() - started:.1f}s", file=sys.stderr)
        samples: dict[str, list[tuple[float, float]]] = {"md": [], "jsonl": []}
        for repetition in range(args.repeat):
            order: list[ExportFormat] = ["md", "jsonl"] if repetition % 2 == 0 else ["jsonl", "md"]
            for fmt in order:
                samples[fmt].append(export_once(path, Path(tmp) / f"out.{fmt}", fmt))
        sizes = {fmt: (Path(tmp) / f"out.{fmt}").stat().st_size for fmt in samples}
        rows = []
        for fmt in ("md", "jsonl"):
            wall = Figure.of([w for w, _ in samples[fmt]])
            cpu = Figure.of([c for _, c in samples[fmt]])
            rows.append([f"export {fmt} ({sizes[fmt] / 1e6:.1f} MB)", f"{wall.median:.2f} s ({wall.low:.2f}-"
                         f"{wall.high:.2f})", f"{cpu.median:.2f} s", "—" if fmt == "jsonl" else
                         ratios([w for w, _ in samples["md"]], [w for w, _ in samples["jsonl"]]).times()])
        print_table(("measure", "wall", "cpu", "md / jsonl"), rows)
        if args.profile:
            profile = cProfile.Profile()
            profile.runcall(export_once, path, Path(tmp) / "profiled.md", "md")
            pstats.Stats(profile).sort_stats("tottime").print_stats(12)


if __name__ == "__main__":
    main()
