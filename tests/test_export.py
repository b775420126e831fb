"""lovia.export: a session as Markdown and as JSON lines, from both stores, a page at a time; the command."""

from __future__ import annotations

import asyncio
import datetime
import io
import itertools
import json
import os
import random
import sqlite3
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from lovia import (
    AssistantMessage,
    Handoff,
    InMemorySession,
    SQLiteCheckpointer,
    SQLiteSession,
    ToolCall,
    ToolResult,
    UserError,
    UserMessage,
)
from lovia.export import code_span_closer, export_session, format_for, resolve_session_id, write_export

STEPS = [
    {"kind": "model", "agent": "bot", "model": "demo-1", "started_at": 1000.0, "first_token_at": 1000.5,
     "finished_at": 1002.0, "output_tokens": 30},
    {"kind": "tool", "call_id": "c1", "name": "current_time", "started_at": 1002.0, "finished_at": 1002.25},
]


async def fill(session) -> None:
    """Session ``s-export-1``: a run with a tool call, a handoff and timing; a second run of two entries."""
    await session.append("s-export-1", [
        UserMessage(text="what time is it?", created_at=999.0),
        ToolCall(call_id="c1", name="current_time", arguments='{"tz": "UTC"}', created_at=1000.0),
        ToolResult(call_id="c1", name="current_time", output="12:00 ``` not a fence end", created_at=1001.0),
        Handoff(from_agent="bot", to_agent="clock", created_at=1001.5),
        AssistantMessage(text="It is **noon**.", agent="clock", created_at=1002.0),
    ], run_id="r1", meta={"timing": {"started_at": 999.0, "finished_at": 1003.0}, "steps": STEPS})
    await session.append("s-export-1", [UserMessage(text="thanks", created_at=2000.0),
                                        AssistantMessage(text="welcome", agent="clock", created_at=2001.0)],
                         run_id="r2")


@pytest.fixture(params=["memory", "sqlite"])
async def session(request, tmp_path):
    if request.param == "memory":
        yield InMemorySession()
        return
    async with SQLiteSession(tmp_path / "lovia.db") as store:
        yield store


class SegmentsOnly:
    """A store with nothing but the spec's four methods: no pages, no listing (the export reads it whole)."""

    def __init__(self, inner) -> None:
        self.inner = inner

    async def segments(self, session_id):
        return await self.inner.segments(session_id)

    async def load(self, session_id):
        return await self.inner.load(session_id)

    async def append(self, session_id, entries, *, run_id=None, meta=None):
        return await self.inner.append(session_id, entries, run_id=run_id, meta=meta)

    async def clear(self, session_id):
        await self.inner.clear(session_id)


async def export_text(session, fmt: str, **kwargs) -> str:
    out = io.StringIO()
    await export_session(session, "s-export-1", out, fmt=fmt, now=5000.0, **kwargs)
    return out.getvalue()


async def test_jsonl_has_a_session_record_then_each_run_before_its_entries(session):
    await fill(session)
    records = [json.loads(line) for line in (await export_text(session, "jsonl")).splitlines()]
    assert [r["record"] for r in records] == ["session", "run", *["entry"] * 5, "run", "entry", "entry"]
    head = records[0]
    assert head["version"] == 1 and head["session_id"] == "s-export-1" and head["title"] == "what time is it?"
    assert head["entry_count"] == 7 and head["run_count"] == 2 and head["forked_from"] is None
    assert head["exported_at"] == 5000.0
    run = records[1]
    assert run["run_id"] == "r1" and run["index"] == 1 and run["start"] == 0 and run["count"] == 5
    assert (run["started_at"], run["finished_at"], run["duration"]) == (999.0, 1003.0, 4.0)
    assert run["steps"] == STEPS and run["meta"]["timing"] == {"started_at": 999.0, "finished_at": 1003.0}
    entries = [r for r in records if r["record"] == "entry"]
    assert [e["position"] for e in entries] == list(range(7))
    assert [e["created_at"] for e in entries] == [999.0, 1000.0, 1001.0, 1001.5, 1002.0, 2000.0, 2001.0]
    assert entries[1]["entry"]["type"] == "tool_call" and entries[1]["run_id"] == "r1"
    assert records[7]["run_id"] == "r2" and records[7]["steps"] == [] and records[7]["started_at"] is None


async def test_markdown_reads_as_a_conversation(session):
    await fill(session)
    text = await export_text(session, "md")
    assert text.startswith("# what time is it?\n")
    assert "- Session: `s-export-1`" in text
    assert "## Run 1 · 1970-01-01 00:16:39 UTC · 4.0s" in text
    assert "demo-1 2.0s (first token 500ms, 20 tok/s), current_time 250ms" in text
    assert "**You** · 1970-01-01 00:16:39 UTC\n\nwhat time is it?" in text
    assert '**Tool call** `current_time` (`c1`)\n\n```json\n{\n  "tz": "UTC"\n}\n```' in text
    # An output holding a fence is fenced with a longer one, so it cannot close the block early.
    assert "````text\n12:00 ``` not a fence end\n````" in text
    assert "> ⇢ handed from **bot** to **clock**" in text
    assert "**clock** · 1970-01-01 00:16:42 UTC\n\nIt is **noon**." in text
    assert "## Run 2 · time not recorded\n" in text  # stored without the spec's timing
    assert "- 2 runs, 7 entries, " in text


async def test_a_run_resumed_later_reads_as_in_the_app_from_start_to_end_then_how_long_it_ran(session):
    """It read "· 23s", the time it ran, where the app's header reads "37s · ran 23s"."""
    await session.append("s-export-1", [UserMessage(text="wait 20", created_at=999.0)], run_id="r-1",
                         meta={"timing": {"started_at": 999.0, "finished_at": 1036.0}, "active_seconds": 23.2})
    await session.append("s-export-1", [UserMessage(text="again", created_at=2000.0)], run_id="r-2",
                         meta={"timing": {"started_at": 2000.0, "finished_at": 2004.0}, "active_seconds": 4.01})
    text = await export_text(session, "md")
    assert "## Run 1 · 1970-01-01 00:16:39 UTC · 37s · ran 23s\n" in text
    assert "## Run 2 · 1970-01-01 00:33:20 UTC · 4.0s\n" in text  # ran as long as it took: said once


async def test_a_session_whose_first_run_was_stored_after_it_began_is_dated_from_that_run(session):
    """A crashed first run kept later: "Created" read later than "## Run 1" under it."""
    began = time.time() - 3600
    await session.append("s-export-1", [UserMessage(text="wait", created_at=began)], run_id="r-1",
                         meta={"timing": {"started_at": began, "finished_at": began + 5}, "partial": True})
    stored = (await session.session_info("s-export-1")).created_at
    assert stored > began + 5  # what the store keeps: when the session was first written
    text = await export_text(session, "md")
    when = datetime.datetime.fromtimestamp(began, datetime.UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
    assert f"- Created: {when}; " in text and f"## Run 1 · {when} · 5.0s" in text
    record = json.loads((await export_text(session, "jsonl")).splitlines()[0])
    assert record["created_at"] == began


async def test_a_message_that_leaves_a_code_block_open_has_it_closed_where_it_ends(session):
    """An answer cut off inside a code block, or a closing fence with words after it (no closing
    fence in Markdown), held every later message of the export inside that block."""
    await session.append("s-export-1", [
        UserMessage(text="fix this:\n```python\nx = 1\n``` edited", created_at=999.0),
        AssistantMessage(text="Here:\n~~~~\nprint(1)\n~~~\nstill code", agent="bot", created_at=1000.0),
        UserMessage(text="```\nclosed\n```\nand ``` inline", created_at=1001.0),
    ], run_id="r-1")
    await session.append("s-export-1", [
        AssistantMessage(text="1. Install:\n   ```bash\n   pip install x", agent="bot", created_at=1002.0),
        AssistantMessage(text="> quoted:\n> ```\n> code", agent="bot", created_at=1003.0),
        AssistantMessage(text="- a\n  ~~~\n  b", agent="bot", created_at=1004.0),
        AssistantMessage(text="- ```python\n  x = 1\n  ```\n\nafter", agent="bot", created_at=1005.0),
    ], run_id="r-2")
    text = await export_text(session, "md")
    assert "``` edited\n```\n" in text
    assert "~~~\nstill code\n~~~~\n" in text
    # One in a list item or a quote ends with it, in Markdown: left as written (a fence added at the
    # margin would open a block, not close one).
    assert "   pip install x\n\n" in text and "> code\n\n" in text and "  b\n\n" in text
    assert text.endswith("  ```\n\nafter\n")  # closed already: as written
    # Every message heading stays a heading: none of them ends up inside a code block.
    from markdown_it import MarkdownIt

    rendered = MarkdownIt("commonmark").render(text)
    assert rendered.count("<strong>bot</strong>") == 5 and rendered.count("<strong>You</strong>") == 2



async def test_a_code_block_left_open_after_a_line_separator_is_closed_at_its_own_indent(session):
    """Markdown ends lines at ``\\n`` and ``\\r`` only; Python's ``splitlines`` at ``\\u2028``, form
    feeds and more. The opening fence was looked for among Python's lines, so text with such a
    character before it took another line's indent for the fence's: four spaces, which close
    nothing, and every later message of the export was held inside the block."""
    await session.append("s-export-1", [
        AssistantMessage(text="see\u2028    below\n```python\nx = 1", agent="bot", created_at=1000.0),
        AssistantMessage(text="a page\x0c    break\n  ~~~\ny = 2", agent="bot", created_at=1001.0),
        UserMessage(text="thanks", created_at=1002.0),
    ], run_id="r-1")
    text = await export_text(session, "md")
    assert "```python\nx = 1\n```\n" in text and "  ~~~\ny = 2\n  ~~~\n" in text
    from markdown_it import MarkdownIt

    rendered = MarkdownIt("commonmark").render(text)
    assert rendered.count("<strong>bot</strong>") == 2 and rendered.count("<strong>You</strong>") == 1

# Fences as the export has always chosen and closed them. FENCED_EXPORT is what the export wrote for
# these entries when it still counted backticks one character at a time and made a parser per
# message; finding them faster must not change a byte of it.
FENCED_MESSAGES = [
    "```python\nnever closed",
    "~~~~\ntildes\n~~~\nshorter tilde fence: still open",
    "````markdown\n```python\nx = 1\n```\nouter never closed",
    "````markdown\n```python\nx = 1\n```\n````\nnested, all closed",
    "```\nclosed\n```\n``` opened again with ``` in its info string",
    "   ```\nindented three: left open",
    "    ```\nindented four: code, not a fence",
    "```` \ncode\n``` too short to close",
    "~~~py\nmixed ``` inside\n~~~",
    "``inline`` and ``` inline ```, no fence",
    "> ```\n> in a quote",
    "text\n```\nopen at the end\n\n\n",
]
FENCED_OUTPUTS = ["", "no backticks at all", "`", "``", "```", "a ` b `` c ```` d ``` e", "``````````",
                  "ends in two``", "```starts with three", "`x`\n``y``\n```\nz\n```", "~~~\ntildes only\n~~~",
                  "````` five then `` two\n" * 3]
FENCED_EXPORT = (
    "## Run 1 · time not recorded\n\n_run `r-1`_\n"
    "\n**You** · 1970-01-01 00:16:40 UTC\n\n```python\nnever closed\n```\n"
    "\n**You** · 1970-01-01 00:16:41 UTC\n\n~~~~\ntildes\n~~~\nshorter tilde fence: still open\n~~~~\n"
    "\n**You** · 1970-01-01 00:16:42 UTC\n\n````markdown\n```python\nx = 1\n```\nouter never closed\n````\n"
    "\n**You** · 1970-01-01 00:16:43 UTC\n\n````markdown\n```python\nx = 1\n```\n````\nnested, all closed\n"
    "\n**You** · 1970-01-01 00:16:44 UTC\n\n```\nclosed\n```\n``` opened again with ``` in its info string\n"
    "\n**You** · 1970-01-01 00:16:45 UTC\n\n   ```\nindented three: left open\n   ```\n"
    "\n**You** · 1970-01-01 00:16:46 UTC\n\n    ```\nindented four: code, not a fence\n"
    "\n**You** · 1970-01-01 00:16:47 UTC\n\n```` \ncode\n``` too short to close\n````\n"
    "\n**You** · 1970-01-01 00:16:48 UTC\n\n~~~py\nmixed ``` inside\n~~~\n"
    "\n**You** · 1970-01-01 00:16:49 UTC\n\n``inline`` and ``` inline ```, no fence\n"
    "\n**You** · 1970-01-01 00:16:50 UTC\n\n> ```\n> in a quote\n"
    "\n**You** · 1970-01-01 00:16:51 UTC\n\ntext\n```\nopen at the end\n\n\n\n```\n"
    "\n**Result** of `echo`\n\n```text\n\n```\n"
    "\n**Result** of `echo`\n\n```text\nno backticks at all\n```\n"
    "\n**Result** of `echo`\n\n```text\n`\n```\n"
    "\n**Result** of `echo`\n\n```text\n``\n```\n"
    "\n**Result** of `echo`\n\n````text\n```\n````\n"
    "\n**Result** of `echo`\n\n`````text\na ` b `` c ```` d ``` e\n`````\n"
    "\n**Result** of `echo`\n\n```````````text\n``````````\n```````````\n"
    "\n**Result** of `echo`\n\n```text\nends in two``\n```\n"
    "\n**Result** of `echo`\n\n````text\n```starts with three\n````\n"
    "\n**Result** of `echo`\n\n````text\n`x`\n``y``\n```\nz\n```\n````\n"
    "\n**Result** of `echo`\n\n```text\n~~~\ntildes only\n~~~\n```\n"
    "\n**Result** of `echo`\n\n``````text\n````` five then `` two\n````` five then `` two\n"
    "````` five then `` two\n\n``````\n"
    "\n**Tool call** `run` (`c-json`)\n\n`````json\n{\n  \"code\": \"```py\\nx\\n````\"\n}\n`````\n"
    "\n**Tool call** `run` (`c-raw`)\n\n``````json\nnot json ````` here\n``````\n"
    "\n**bot** · 1970-01-01 00:50:02 UTC\n\n~~~\ncut off\n~~~\n"
)


async def test_fences_are_chosen_and_closed_byte_for_byte_as_before(session):
    await session.append("s-export-1", [
        *(UserMessage(text=text, created_at=1000.0 + n) for n, text in enumerate(FENCED_MESSAGES)),
        *(ToolResult(call_id=f"c{n}", name="echo", output=output, created_at=2000.0)
          for n, output in enumerate(FENCED_OUTPUTS)),
        ToolCall(call_id="c-json", name="run", arguments='{"code": "```py\\nx\\n````"}', created_at=3000.0),
        ToolCall(call_id="c-raw", name="run", arguments="not json ````` here", created_at=3001.0),
        AssistantMessage(text="~~~\ncut off", agent="bot", created_at=3002.0),
    ], run_id="r-1")
    text = await export_text(session, "md")
    assert text[text.index("## Run 1"):] == FENCED_EXPORT  # the heading above it holds today's date


def test_a_fence_is_longer_than_every_run_of_backticks_it_holds_and_three_at_the_least():
    from lovia.export import _fence

    rng = random.Random(20261206)
    for _ in range(2000):
        text = "".join(rng.choice(["`", "``", "```", "````", "a", " ", "\n", "~~~"]) for _ in range(rng.randint(0, 40)))
        longest = max((len(list(run)) for char, run in itertools.groupby(text) if char == "`"), default=0)
        fence = "`" * max(3, longest + 1)
        assert _fence(text, "text") == f"{fence}text\n{text}\n{fence}\n", text


async def test_one_commonmark_parser_serves_every_message_of_every_export(session, monkeypatch):
    """A parser made per message held a fence took most of a long Markdown export's time."""
    from markdown_it import MarkdownIt

    import lovia.export

    made: list[MarkdownIt] = []

    class Counted(MarkdownIt):
        def __init__(self, *args, **kwargs) -> None:
            super().__init__(*args, **kwargs)
            made.append(self)

    monkeypatch.setattr(lovia.export, "MarkdownIt", Counted)
    lovia.export._commonmark.cache_clear()
    try:
        await session.append("s-export-1", [UserMessage(text=text, created_at=1000.0) for text in FENCED_MESSAGES],
                             run_id="r-1")
        first = await export_text(session, "md")
        assert first == await export_text(session, "md")
    finally:
        lovia.export._commonmark.cache_clear()  # the next export makes an uncounted one
    assert len(made) == 1


async def test_one_run_and_one_entry_are_counted_in_the_singular(session):
    await session.append("s-export-1", [UserMessage(text="hi", created_at=999.0)], run_id="r-1")
    text = await export_text(session, "md")
    assert "- 1 run, 1 entry, " in text


async def test_an_answer_that_ended_early_says_why_in_the_transcript_s_words(session):
    """The heading of an answer cut off says what the app's transcript says under it, never the stored reason."""
    await session.append("s-export-1", [
        UserMessage(text="write a long story", created_at=999.0),
        AssistantMessage(text="Once upon a", agent="bot", finish_reason="cut_off", created_at=1000.0),
    ], run_id="r-stopped")
    await session.append("s-export-1", [
        UserMessage(text="and another", created_at=2000.0),
        AssistantMessage(text="There was", agent="bot", finish_reason="length", created_at=2001.0),
    ], run_id="r-limit")
    text = await export_text(session, "md")
    assert "**bot** · 1970-01-01 00:16:40 UTC · cut off: the run ended while this streamed\n\nOnce upon a" in text
    assert "**bot** · 1970-01-01 00:33:21 UTC · cut off: the model hit its token limit\n\nThere was" in text
    assert "cut_off" not in text and "(cut off: length)" not in text


@pytest.mark.parametrize(("text", "closer"), [
    ("• `calculate (12 + 30) *", "`"),  # a new user's trial: the export kept the stray backtick
    ("a `b` c", ""),
    ("x ``y` z", "``"),  # a run is closed by one of exactly as many
    ("no code", ""),
    ("an escaped \\`x", ""),
    ("a backslash, then \\\\`code", "`"),  # the backslash is escaped, not the backtick
    ("```py\nprint(1", ""),  # a code block left open: its fence is closed elsewhere (_fences_closed)
    ("para `x`\n\nnext `open", "`"),
    ("para `open\n\nnext ok", ""),  # a span never crosses blocks
    ("list\n\n- item `open", "`"),
    # A review: cut right after the backticks, or after a blank line, or inside a span ending in a backtick.
    ("Run `x` and `", ""),
    ("x `abc\n\n", ""),
    ("Use ``foo`", " ``"),
])
def test_the_code_span_a_cut_off_answer_leaves_open_is_found(text, closer):
    assert code_span_closer(text) == closer


async def test_an_answer_cut_off_inside_inline_code_is_written_with_the_span_closed(session):
    await session.append("s-export-1", [
        UserMessage(text="what do I run?", created_at=999.0),
        AssistantMessage(text="Run `calculate (12 + 30) *", agent="bot", finish_reason="cut_off", created_at=1000.0),
        UserMessage(text="and then?", created_at=1001.0),
        AssistantMessage(text="A lone ` stays as written", agent="bot", created_at=1002.0),  # ended as it meant to
    ])
    text = await export_text(session, "md")
    assert "\n\nRun `calculate (12 + 30) *`\n" in text
    assert "\n\nA lone ` stays as written\n" in text


async def test_an_answer_the_user_stopped_says_so_as_in_the_transcript(session):
    """A partial finalized after the user stopped its run: the transcript says "you stopped the run",
    and the export said "the run ended while this streamed", a crash's words."""
    await session.append("s-export-1", [
        UserMessage(text="write a long story", created_at=999.0),
        AssistantMessage(text="Once upon a", agent="bot", finish_reason="cut_off", created_at=1000.0),
    ], run_id="r-stopped", meta={"partial": True, "ended": "stopped"})
    await session.append("s-export-1", [
        UserMessage(text="and another", created_at=2000.0),
        AssistantMessage(text="There was", agent="bot", finish_reason="cut_off", created_at=2001.0),
    ], run_id="r-crashed", meta={"partial": True, "ended": "crashed"})
    text = await export_text(session, "md")
    assert "UTC · cut off: you stopped the run while this streamed\n\nOnce upon a" in text
    assert "UTC · cut off: the run ended while this streamed\n\nThere was" in text


async def test_step_times_under_a_second_read_in_milliseconds_as_in_the_app(session):
    """A first token after 24 ms reads ``24ms``, not ``0.0 s``; a tool call of 40 ms reads ``40ms``."""
    steps = [
        {"kind": "model", "agent": "bot", "model": "demo-1", "started_at": 1000.0, "first_token_at": 1000.024,
         "finished_at": 1003.0, "output_tokens": 60},
        {"kind": "tool", "call_id": "c1", "name": "current_time", "started_at": 1003.0, "finished_at": 1003.04},
    ]
    await session.append("s-export-1", [UserMessage(text="what time is it?", created_at=999.0)], run_id="r1",
                         meta={"timing": {"started_at": 999.0, "finished_at": 1003.5}, "steps": steps})
    text = await export_text(session, "md")
    assert "demo-1 3.0s (first token 24ms, 20 tok/s), current_time 40ms" in text
    assert "0.0 s" not in text


def test_the_export_loads_none_of_the_ui():
    """``lovia export`` words things as the app does without importing Textual or the app's modules."""
    loaded = subprocess.run([sys.executable, "-c", "import sys, lovia.export; print(sorted(m for m in sys.modules "
                             "if m.startswith(('textual', 'lovia.tui'))))"], capture_output=True, text=True,
                            check=True, timeout=120)
    assert loaded.stdout.strip() == "[]"


async def test_a_turn_that_came_all_at_once_shows_no_tokens_per_second(session):
    """A tool-call turn whose chunks all arrived within microseconds has no rate to show (its 1 token over
    30 µs would read 33333 tok/s); a turn that streamed keeps its rate, and the JSON lines keep the raw times."""
    steps = [
        {"kind": "model", "agent": "bot", "model": "demo", "started_at": 1000.0, "first_token_at": 1000.00001,
         "finished_at": 1000.00004, "output_tokens": 1, "turn": 1},
        {"kind": "tool", "call_id": "c1", "name": "current_time", "started_at": 1000.001, "finished_at": 1000.002},
        {"kind": "model", "agent": "bot", "model": "demo", "started_at": 1000.003, "first_token_at": 1000.023,
         "finished_at": 1000.523, "output_tokens": 10, "turn": 2},
    ]
    await session.append("s-export-1", [UserMessage(text="what time is it?", created_at=999.0)], run_id="r1",
                         meta={"steps": steps})
    [steps_line] = [line for line in (await export_text(session, "md")).splitlines() if "steps: " in line]
    first_turn, rest = steps_line.split("current_time")
    assert "tok/s" not in first_turn and "20 tok/s" in rest
    run = json.loads((await export_text(session, "jsonl")).splitlines()[1])
    assert run["steps"] == steps

async def test_steps_that_did_not_end_by_themselves_say_how_they_ended_as_the_timeline_does(session):
    """A crash's cut-off turn read as a whole one ("demo 503ms"); so did a stopped tool call."""
    steps = [
        {"kind": "model", "agent": "bot", "model": "demo", "started_at": 1000.0, "first_token_at": 1000.05,
         "finished_at": 1000.5, "turn": 1, "cut_off": True},
        {"kind": "model", "agent": "bot", "model": "demo", "started_at": 1001.0, "finished_at": 1001.2, "turn": 2,
         "error": "HTTP 503", "cut_off": True, "asked_again": True},
        {"kind": "tool", "call_id": "c1", "name": "wait", "started_at": 1002.0, "finished_at": 1004.0,
         "cut_off": True, "stopped": True},
        {"kind": "tool", "call_id": "c2", "name": "calculate", "started_at": 1005.0, "finished_at": 1005.1,
         "error": True},
        {"kind": "model", "agent": "bot", "model": "demo", "started_at": 1006.0, "first_token_at": 1006.1,
         "finished_at": 1006.6, "turn": 3},
    ]
    await session.append("s-export-1", [UserMessage(text="wait 20", created_at=999.0)], run_id="r1",
                         meta={"steps": steps})
    [steps_line] = [line for line in (await export_text(session, "md")).splitlines() if "steps: " in line]
    assert steps_line.endswith("steps: demo 500ms (first token 50ms, cut off), demo 200ms (failed, asked again), "
                               "wait 2.0s (stopped), calculate 100ms (error), demo 600ms (first token 100ms)_")


async def test_a_result_given_rather_than_received_from_its_tool_says_so(session):
    """complete_dangling_call's result (the app's o / e) read as the tool's own in both formats."""
    steps = [{"kind": "tool", "call_id": "c1", "name": "charge", "started_at": 1000.0, "finished_at": 1002.0,
              "cut_off": True, "given": True},
             {"kind": "tool", "call_id": "c2", "name": "charge", "started_at": 1003.0, "finished_at": 1003.5}]
    await session.append("s-export-1", [
        UserMessage(text="charge twice", created_at=999.0),
        ToolCall(call_id="c1", name="charge", arguments="{}"), ToolResult(call_id="c1", name="charge", output="done"),
        ToolCall(call_id="c2", name="charge", arguments="{}"), ToolResult(call_id="c2", name="charge", output="ok"),
    ], run_id="r1", meta={"steps": steps})
    text = await export_text(session, "md")
    assert text.count("given, not received from the tool") == 1
    assert "**Result** of `charge` · given, not received from the tool\n\n```text\ndone" in text
    assert "steps: charge 2.0s (cut off, result given), charge 500ms_" in text
    records = [json.loads(line) for line in (await export_text(session, "jsonl")).splitlines()]
    results = [r for r in records if r["record"] == "entry" and r["entry"]["type"] == "tool_result"]
    assert [r.get("given") for r in results] == [True, None]


async def test_page_by_page_gives_what_a_whole_read_gives(session):
    await fill(session)
    for fmt in ("md", "jsonl"):
        paged = await export_text(session, fmt, page=2)
        assert paged == await export_text(session, fmt)
        # A store that cannot read pages is read whole: the runs and entries come out the same (its
        # header says less: it cannot describe the session).
        whole = await export_text(SegmentsOnly(session), fmt)
        assert _body(whole, fmt) == _body(paged, fmt)


def _body(text: str, fmt: str) -> str:
    return text.split("\n", 1)[1] if fmt == "jsonl" else text[text.index("\n## Run 1"):]


async def test_page_by_page_for_jsonl_equals_a_whole_read(session):
    await fill(session)
    assert await export_text(session, "jsonl", page=1) == await export_text(session, "jsonl", page=500)


async def test_a_fork_says_where_it_came_from(session):
    await fill(session)
    await session.fork("s-export-1", keep_entries=5, new_session_id="s-fork")
    out = io.StringIO()
    await export_session(session, "s-fork", out, fmt="jsonl")
    head = json.loads(out.getvalue().splitlines()[0])
    assert head["forked_from"]["session_id"] == "s-export-1" and head["forked_from"]["entries"] == 5
    out = io.StringIO()
    await export_session(session, "s-fork", out, fmt="md")
    assert "- Forked from “what time is it?” (`s-export-1`) at entry 5" in out.getvalue()


async def test_unknown_sessions_and_formats_are_refused(session):
    await fill(session)
    with pytest.raises(UserError, match="no session 'nope'"):
        await export_session(session, "nope", io.StringIO())
    with pytest.raises(UserError, match="unknown export format"):
        await export_session(session, "s-export-1", io.StringIO(), fmt="html")  # type: ignore[arg-type]


async def test_a_prefix_names_a_session_when_only_one_starts_with_it(session):
    await fill(session)
    await session.append("s-export-2", [UserMessage(text="other")])
    assert await resolve_session_id(session, "s-export-1") == "s-export-1"
    with pytest.raises(UserError, match="2 sessions start with 's-ex'"):
        await resolve_session_id(session, "s-ex")
    await session.append("s-other", [UserMessage(text="x")])
    assert await resolve_session_id(session, "s-oth") == "s-other"
    with pytest.raises(UserError, match="part of an id needs 4 characters"):
        await resolve_session_id(session, "s-o")
    # Any part of an id, as the app's sessions filter finds it: "2c8f" names "s-2c8f…"
    assert await resolve_session_id(session, "ther") == "s-other"
    with pytest.raises(UserError, match="2 sessions hold 'port'"):
        await resolve_session_id(session, "port")
    with pytest.raises(UserError, match="no session 'zzzz'"):
        await resolve_session_id(session, "zzzz")
    for blank in ("", "   "):  # it said "no session '' in this store ... (part of an id needs 4 characters)"
        with pytest.raises(UserError, match="^no session id was given: give a session's id, or 4 or more"):
            await resolve_session_id(session, blank)
    # One in the trash is not a typo: it says so, and what to do.
    await session.trash_session("s-other")
    with pytest.raises(UserError, match="'s-other' is in the trash: restore it"):
        await resolve_session_id(session, "s-other")


async def test_write_export_writes_a_private_file_whole_and_picks_the_format_by_name(session, tmp_path):
    await fill(session)
    summary = await write_export(session, "s-export-1", tmp_path / "out.jsonl")
    assert (summary.runs, summary.entries, summary.path) == (2, 7, str(tmp_path / "out.jsonl"))
    assert json.loads((tmp_path / "out.jsonl").read_text().splitlines()[0])["record"] == "session"
    assert stat.S_IMODE(os.stat(tmp_path / "out.jsonl").st_mode) == 0o600
    await write_export(session, "s-export-1", tmp_path / "out.md")
    assert (tmp_path / "out.md").read_text().startswith("# what time is it?")
    assert format_for("a.NDJSON") == "jsonl" and format_for("a.txt") == "md"
    with pytest.raises(UserError, match="does not exist"):
        await write_export(session, "s-export-1", tmp_path / "missing" / "out.md")
    with pytest.raises(UserError, match="no session"):
        await write_export(session, "nope", tmp_path / "nope.md")
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith("out") or p.name.startswith(".")) == [
        "out.jsonl", "out.md"]  # no temporary file left behind, none made for the refused export
    assert not (tmp_path / "nope.md").exists()


# -- the command, as a real process ----------------------------------------------------------


def lovia(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "lovia.cli", *args], capture_output=True, text=True, cwd=cwd,
                          env={**os.environ, "LOVIA_DATA_DIR": str(cwd / "data")}, timeout=120)


@pytest.fixture
async def db(tmp_path) -> Path:
    path = tmp_path / "lovia.db"
    async with SQLiteSession(path, wal=True) as store:
        await fill(store)
    return path


def test_the_command_writes_markdown_to_stdout_by_default(db, tmp_path):
    done = lovia("export", "s-export-1", "--db", str(db), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("# what time is it?\n") and "It is **noon**." in done.stdout
    assert done.stderr == ""


def test_the_command_writes_jsonl_to_a_file_by_prefix(db, tmp_path):
    done = lovia("export", "s-export", "--db", str(db), "--format", "jsonl", "-o", str(tmp_path / "x.out"),
                 cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "" and "wrote 2 runs, 7 entries of s-export-1" in done.stderr
    lines = (tmp_path / "x.out").read_text().splitlines()
    assert len(lines) == 10 and json.loads(lines[0])["session_id"] == "s-export-1"


def test_the_command_uses_the_data_directory_without_db(db, tmp_path):
    (tmp_path / "data").mkdir()
    db.rename(tmp_path / "data" / "lovia.db")
    done = lovia("export", "s-export-1", cwd=tmp_path)
    assert done.returncode == 0, done.stderr


@pytest.mark.parametrize(("args", "message"), [
    (["nope"], "no session 'nope'"),
    (["s-e"], "part of an id needs 4 characters"),
    (["s-export-1", "--db", "missing.db"], "no lovia data file at missing.db"),
])
def test_the_command_refuses_with_exit_2_and_a_clear_message(db, tmp_path, args, message):
    if "--db" not in args:
        args = [*args, "--db", str(db)]
    done = lovia("export", *args, cwd=tmp_path)
    assert done.returncode == 2
    assert done.stderr.startswith("lovia export: ") and message in done.stderr
    assert done.stdout == ""
    assert not (tmp_path / "missing.db").exists()  # never creates a file


@pytest.mark.parametrize(("kind", "message"), [
    ("empty", "is empty (0 bytes)"),
    ("no tables", "no lovia sessions in"),
    ("runs only", "no lovia sessions in"),
])
async def test_the_command_leaves_a_file_without_sessions_as_it_was(tmp_path, kind, message):
    # An export only reads: it turned an empty file into a lovia database (114,688 bytes).
    path = tmp_path / "other.db"
    if kind == "empty":
        path.touch()
    elif kind == "no tables":
        with sqlite3.connect(path) as conn:
            conn.execute("PRAGMA user_version = 7")  # a SQLite file with a header and no table
        conn.close()
    else:
        async with SQLiteCheckpointer(path):
            pass
    before = path.read_bytes()
    done = lovia("export", "s-export-1", "--db", str(path), cwd=tmp_path)
    assert done.returncode == 2
    assert done.stderr.startswith("lovia export: ") and message in done.stderr, done.stderr
    assert path.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["other.db"]


async def test_the_command_leaves_the_file_s_journal_mode_as_it_was(tmp_path):
    path = tmp_path / "plain.db"
    async with SQLiteSession(path) as store:  # rollback-journal mode, as a library user may keep it
        await fill(store)
    done = lovia("export", "s-export-1", "--db", str(path), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    with sqlite3.connect(path) as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "delete"


def test_the_command_is_in_the_help(tmp_path):
    done = lovia("--help", cwd=tmp_path)
    assert "lovia export SESSION_ID" in done.stdout
    usage = done.stdout.split("\n\n")[0]  # the commands are in the usage lines, not only in the last ones
    assert usage.startswith("usage: lovia [options]")
    assert all(f"lovia {command}" in usage for command in ("export SESSION_ID", "doctor", "keys"))


async def test_a_long_session_is_read_a_page_at_a_time(tmp_path):
    """1,000 entries in 100 runs, exported with pages of 200: no read asks for more than a page."""
    asked: list[tuple[int | None, int]] = []

    class Counting(SQLiteSession):
        async def read_page(self, session_id, *, start=None, limit=200):
            asked.append((start, limit))
            return await super().read_page(session_id, start=start, limit=limit)

        async def segments(self, session_id):
            raise AssertionError("a paged store is never read whole")

    async with Counting(tmp_path / "long.db") as store:
        for run in range(100):
            await store.append("s-long", [UserMessage(text=f"q{run}.{i}") for i in range(10)])
        out = io.StringIO()
        summary = await export_session(store, "s-long", out, fmt="jsonl", page=200)
    assert (summary.runs, summary.entries) == (100, 1000)
    assert asked == [(0, 200), (200, 200), (400, 200), (600, 200), (800, 200), (1000, 200)]
    positions = [json.loads(line)["position"] for line in out.getvalue().splitlines()
                 if json.loads(line)["record"] == "entry"]
    assert positions == list(range(1000))


@pytest.fixture
async def long_db(tmp_path) -> Path:
    path = tmp_path / "long.db"
    async with SQLiteSession(path) as store:
        for n in range(200):  # about 800 KB of Markdown: far past a pipe's buffer
            await store.append("s-long", [UserMessage(text=f"question {n} " + "word " * 400),
                                          AssistantMessage(text="answer")], run_id=f"r{n}")
    return path


def test_a_reader_that_quits_early_ends_the_command_quietly(long_db, tmp_path):
    """``lovia export ID | head``: the pipe closes mid-export; no traceback, exit 1 (not all was read)."""
    path = long_db
    process = subprocess.Popen([sys.executable, "-m", "lovia.cli", "export", "s-long", "--db", str(path)],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=tmp_path)
    assert process.stdout is not None and process.stderr is not None
    assert process.stdout.read(100).startswith(b"# question 0")
    process.stdout.close()
    stderr = process.stderr.read().decode()
    assert process.wait(timeout=120) == 1
    assert "Traceback" not in stderr and "Exception ignored" not in stderr, stderr


# -- trimmed tool outputs, whole again from the archive ---------------------------------------


async def archived_and_trimmed(session, archive_dir: Path, *, runs: int = 1) -> list[str]:
    """Session ``s-export-1``: ``runs`` runs each with a long output of call ``c1`` (a call id a later
    run repeats), archived as the context policy does, then all trimmed; their whole outputs."""
    from lovia.context import FileResultStore

    archive = FileResultStore(archive_dir)
    outputs = []
    for index in range(runs):
        run_id = f"r{index + 1}"
        output = f"run {index + 1}: " + "y" * 1000 + f" END {index + 1}"
        key = FileResultStore.key_for(run_id, "c1")
        await archive.put(key, output)
        await session.append("s-export-1", [
            UserMessage(text=f"go {index + 1}"),
            ToolCall(call_id="c1", name="long", arguments="{}"),
            ToolResult(call_id="c1", name="long", output=output),
            AssistantMessage(text="done", agent="bot"),
        ], run_id=run_id, meta={"context": {"archived": {"c1": key}}})
        outputs.append(output)
    await session.append("s-export-1", [UserMessage(text="last"), AssistantMessage(text="ok", agent="bot")])
    assert await session.trim_tool_results("s-export-1", keep_chars=50, keep_runs=1) == runs
    return outputs


async def test_a_trimmed_output_the_archive_holds_is_exported_whole(session, tmp_path):
    from lovia.context import FileResultStore

    outputs = await archived_and_trimmed(session, tmp_path / "archive", runs=2)
    archive = FileResultStore(tmp_path / "archive")
    text = await export_text(session, "md", archive=archive)
    for output in outputs:  # each run's own output, though both calls are c1
        assert f"```text\n{output}\n```" in text
    assert "trimmed by lovia" not in text
    assert text.count("**Result** of `long` · whole, from the tool-output archive\n") == 2
    records = [json.loads(line) for line in (await export_text(session, "jsonl", archive=archive)).splitlines()]
    results = [r for r in records if r["record"] == "entry" and r["entry"]["type"] == "tool_result"]
    assert [r["entry"]["output"] for r in results] == outputs
    assert all(r["entry"]["trimmed_chars"] == 0 and r["output_from_archive"] is True for r in results)
    # Without the archive, as stored: trimmed, marked, and no field added.
    plain = [json.loads(line) for line in (await export_text(session, "jsonl")).splitlines()]
    assert all("output_from_archive" not in r for r in plain)
    assert "trimmed by lovia]" in await export_text(session, "md")


async def test_an_archived_output_that_is_not_the_trimmed_ones_is_not_taken(session, tmp_path):
    """Gone from the archive, or an archived text that does not begin as the kept part: written as stored."""
    from lovia.context import FileResultStore

    await archived_and_trimmed(session, tmp_path / "archive", runs=2)
    archive = FileResultStore(tmp_path / "archive")
    (tmp_path / "archive" / f"{FileResultStore.key_for('r1', 'c1')}.txt").unlink()
    await archive.put(FileResultStore.key_for("r2", "c1"), "something else entirely")
    text = await export_text(session, "md", archive=archive)
    assert text.count("characters trimmed by lovia]") == 2
    assert "from the tool-output archive" not in text and "something else" not in text


def test_the_command_exports_trimmed_outputs_whole_from_the_archive_beside_the_file(tmp_path):
    async def setup() -> list[str]:
        async with SQLiteSession(tmp_path / "lovia.db") as store:
            return await archived_and_trimmed(store, tmp_path / "tool-outputs")

    [output] = asyncio.run(setup())
    done = lovia("export", "s-export-1", "--db", str(tmp_path / "lovia.db"), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert f"```text\n{output}\n```" in done.stdout and "trimmed by lovia" not in done.stdout
