"""Long answers streaming in the running app, against a bare Textual app showing the same tokens.

A token is 4 characters of the answer. :class:`PacedModel` is a lovia model (the real runtime,
checkpoints and app all run) that streams an answer at a given rate, or as fast as the event loop
lets it (one token per loop turn); the baseline is a bare Textual app whose worker reads the same
model stream and writes each token to a ``Log``. After every screen refresh a sampler notes how
much of the answer the widgets hold (``AssistantMessageView.shown_length``; for the baseline,
what was written to the ``Log``), which gives:

- sustained tokens/s: the whole answer over the time from its first token to the refresh that
  shows its last, streamed as fast as the loop lets it, for mixed markdown and for a 2,000-line
  code block (``throughput``);
- display lag at 200 tokens/s: per token, from the model yielding it to the first refresh that
  shows it, on the last part of a long answer (the first part streams as fast as it can, so the
  answer is long when the paced part is measured), two ways: *steady*, the model waiting until
  the view shows everything so far before it paces, and the first second of the paced part not
  counted (so every measured token came at 200 tokens/s into a view that was keeping up with
  200 tokens/s, as with a model of that speed); and *after a burst*, the paced part following the
  fast one at once (its first tokens wait for the view to catch up with the burst) (``lag``);
- escape: in the middle of the 2,000-line code block at 200 tokens/s, from the key to the run
  being asked to stop and to the app showing the run stopped, in 60 Hz frames (the baseline
  app's escape binding sets a flag) (``escape``).

Run by ``bench/tui.py``.
"""

from __future__ import annotations

import asyncio
import statistics
import tempfile
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar

from _stats import Figure, ratios

TOKEN_CHARS = 4
FRAME = 1 / 60
LAG_RATE = 200.0
AFTER_END_SECONDS = 2.0
"""How long after a steady answer's end the app is watched for the longest stall of its event loop."""
STEADY_AFTER_SECONDS = 1.0
"""The steady lag counts the paced part from this long after it starts: the view settles into the pace."""
CODE_LINES = 2000


def code_answer(lines: int = CODE_LINES) -> str:
    """An answer that is one long Python code block."""
    body = "".join(f"    total += step({i}) * {i % 7}\n" for i in range(lines))
    return "Here it is:\n\n```python\ndef run(step):\n    total = 0\n" + body + "    return total\n```\n\nDone.\n"


def mixed_answer(sections: int = 50) -> str:
    """An answer of headings, paragraphs, lists, short code blocks and quotes."""
    out = []
    for i in range(sections):
        out.append(f"## Part {i}\n\nThis is **bold** and *italic* text with `inline code` and a "
                   f"[link](https://example.com/{i}). It goes on for a while, so that the paragraph wraps "
                   "across a couple of lines in the view.\n\n"
                   f"- first point {i}\n- second point with `code`\n- third point\n\n"
                   f"```python\ndef part_{i}(x):\n    return x + {i}\n```\n\n> a quote in part {i}\n\n")
    return "".join(out)


@dataclass
class PacedModel:
    """Streams ``text`` in tokens: the first ``fast_chars`` one per event-loop turn, the rest at ``rate`` tokens/s.

    ``rate`` 0: all of it one per loop turn. ``emitted`` holds when each token was yielded and
    how many characters had been by then. With ``steady``, the paced part first waits until
    ``caught_up`` (set by the trace) says the view shows everything yielded so far.
    """

    text: str
    rate: float = 0.0
    fast_chars: int = 0
    steady: bool = False
    caught_up: Callable[[], bool] = lambda: True
    name: str = "paced"
    offline: bool = True
    emitted: list[tuple[float, int]] = field(default_factory=list)
    finished: bool = False

    async def stream(self, request) -> AsyncIterator:
        try:
            async for chunk in self._chunks():
                yield chunk
        finally:
            self.finished = True

    async def _chunks(self) -> AsyncIterator:
        from lovia.models.base import FinishChunk, TextChunk, UsageChunk
        from lovia.usage import Usage

        start = None
        paced = 0
        for offset in range(0, len(self.text), TOKEN_CHARS):
            if self.rate and offset >= self.fast_chars:
                if start is None and self.steady:
                    await until(self.caught_up)
                start = start or time.perf_counter()
                delay = start + paced / self.rate - time.perf_counter()
                paced += 1
                await asyncio.sleep(max(delay, 0))  # late: it yields at once, as a socket holding several events
            else:
                await asyncio.sleep(0)
            token = self.text[offset:offset + TOKEN_CHARS]
            self.emitted.append((time.perf_counter(), offset + len(token)))
            yield TextChunk(token)
        yield UsageChunk(Usage(requests=1, input_tokens=10, output_tokens=len(self.text) // TOKEN_CHARS))
        yield FinishChunk("stop")


@dataclass
class Trace:
    """What one streamed answer gave: when each token was yielded, and what each refresh showed."""

    emitted: list[tuple[float, int]]
    painted: list[tuple[float, int]]
    stall_after_end: float = 0.0
    """For a steady stream: the longest the event loop did not answer in the seconds after the model's end."""

    def shown_at(self, chars: int) -> float:
        """When a refresh first showed ``chars`` characters."""
        for when, shown in self.painted:
            if shown >= chars:
                return when
        raise ValueError(f"no refresh showed {chars} characters")

    def tokens_per_second(self) -> float:
        first, total = self.emitted[0][0], self.emitted[-1][1]
        return len(self.emitted) / (self.shown_at(total) - first)

    def lags(self, after_chars: int = 0) -> list[float]:
        return [self.shown_at(chars) - when for when, chars in self.emitted if chars > after_chars]


async def until(done: Callable[[], bool]) -> None:
    """Poll ``done`` every half millisecond (what is measured has no event to wait on)."""
    while True:
        if done():
            return
        await asyncio.sleep(0.0005)


async def longest_stall_after(began: Callable[[], bool], window: float = AFTER_END_SECONDS) -> float:
    """The longest the event loop took to answer a 5 ms sleep, for ``window`` seconds from when ``began()`` holds."""
    longest, since = 0.0, None
    while since is None or time.perf_counter() - since < window:
        asked = time.perf_counter()
        await asyncio.sleep(0.005)
        if since is None and began():
            since = asked
        if since is not None:
            longest = max(longest, time.perf_counter() - asked - 0.005)
    return longest


async def sample_refreshes(app, shown: Callable[[], int], finished: Callable[[], bool]) -> list[tuple[float, int]]:
    """After every screen refresh, when it happened and how many characters ``shown`` says are shown."""
    painted: list[tuple[float, int]] = []
    while not finished():
        await app.screen.wait_for_refresh()
        painted.append((time.perf_counter(), shown()))
        await asyncio.sleep(0.001)  # an idle app answers at once: do not spin
    painted.append((time.perf_counter(), shown()))
    return painted


async def lovia_trace(model: PacedModel, escape_after_chars: int = 0) -> tuple[Trace, tuple[float, float] | None]:
    """Stream ``model``'s answer through the real app; optionally press escape once that much is shown.

    Returns the trace, and for an escape the seconds from the key to the stop being asked and to
    the app showing the run stopped.
    """
    from lovia import Agent, SQLiteCheckpointer, SQLiteSession
    from lovia.tui.app import LoviaApp
    from lovia.tui.backend import ChatBackend
    from lovia.tui.config import RememberedState
    from lovia.tui.widgets.assistant_message import AssistantMessageView

    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "stream.db"
        backend = ChatBackend(SQLiteSession(db, wal=True), SQLiteCheckpointer(db, wal=True),
                              Agent(name="assistant", model=model))
        app = LoviaApp(backend, model_label="paced", state=RememberedState(Path(tmp) / "state.json"))
        async with app.run_test(size=(160, 45)) as pilot:
            await pilot.pause()
            chat = app.main.chat
            chat.composer.focus()
            await pilot.press("h", "i")

            found: list[AssistantMessageView] = []

            def shown() -> int:  # the answer's view, looked up once: a query walks the whole transcript
                if not found:
                    found.extend(chat.transcript.query(AssistantMessageView))
                return found[-1].shown_length if found else 0

            model.caught_up = lambda: shown() >= model.fast_chars
            stall = asyncio.create_task(longest_stall_after(lambda: model.finished)) if model.steady else None
            sampler = asyncio.create_task(sample_refreshes(app, shown, lambda: model.finished and not chat.running))
            send = asyncio.create_task(pilot.press("enter"))  # the pilot waits for an idle app: not while streaming
            escape = None
            if escape_after_chars:
                await until(lambda: shown() >= escape_after_chars)
                stream = chat.stream
                pressed = time.perf_counter()
                press = asyncio.create_task(pilot.press("escape"))
                await until(lambda: stream.stopped)
                asked = time.perf_counter()
                await until(lambda: not chat.running)
                escape = (asked - pressed, time.perf_counter() - pressed)
                await press
            painted = await sampler
            await send
            await pilot.pause()
            stalled = await stall if stall else 0.0
    return Trace(model.emitted, painted, stalled), escape


async def baseline_trace(model: PacedModel, escape_after_chars: int = 0) -> tuple[Trace, tuple[float, float] | None]:
    """The same stream written token by token to a bare Textual app's ``Log``; escape sets a flag."""
    from textual.app import App, ComposeResult
    from textual.widgets import Log

    from lovia.models.base import ModelRequest, TextChunk

    class Bare(App[None]):
        BINDINGS: ClassVar = [("escape", "stop", "Stop")]

        def __init__(self) -> None:
            super().__init__()
            self.shown = 0
            self.done = False
            self.stopped = False

        def compose(self) -> ComposeResult:
            yield Log()

        def action_stop(self) -> None:
            self.stopped = True

        async def feed(self) -> None:
            log = self.query_one(Log)
            async for chunk in model.stream(ModelRequest(instructions="", messages=[])):
                if self.stopped:
                    break
                if isinstance(chunk, TextChunk):
                    log.write(chunk.text)
                    self.shown += len(chunk.text)
            self.done = True

    app = Bare()
    async with app.run_test(size=(160, 45)) as pilot:
        await pilot.pause()
        model.caught_up = lambda: app.shown >= model.fast_chars
        stall = asyncio.create_task(longest_stall_after(lambda: model.finished)) if model.steady else None
        app.run_worker(app.feed())
        sampler = asyncio.create_task(sample_refreshes(app, lambda: app.shown, lambda: app.done and model.finished))
        escape = None
        if escape_after_chars:
            await until(lambda: app.shown >= escape_after_chars)
            pressed = time.perf_counter()
            press = asyncio.create_task(pilot.press("escape"))
            await until(lambda: app.stopped)
            asked = time.perf_counter()
            await until(lambda: app.done)
            escape = (asked - pressed, time.perf_counter() - pressed)
            await press
        painted = await sampler
        stalled = await stall if stall else 0.0
    return Trace(model.emitted, painted, stalled), escape


def _rate(figure: Figure) -> str:
    return f"{figure.median:,.0f} tok/s ({figure.low:,.0f}-{figure.high:,.0f})"


def _frames(figure: Figure) -> str:
    return f"{figure.median / FRAME:.1f} frames ({figure.low / FRAME:.1f}-{figure.high / FRAME:.1f})"


def _p95(samples: list[float]) -> float:
    return statistics.quantiles(samples, n=20)[-1]


async def rows(repeat: int) -> list[tuple[str, str, str, str]]:
    """The streaming rows of the TUI table: measure, lovia, baseline, ratio."""
    table: list[tuple[str, str, str, str]] = []
    answers = {"mixed markdown": mixed_answer(), f"a {CODE_LINES:,}-line code block": code_answer()}
    for what, text in answers.items():
        ours, bare = [], []
        for _ in range(repeat):
            trace, _ = await lovia_trace(PacedModel(text))
            ours.append(trace.tokens_per_second())
            trace, _ = await baseline_trace(PacedModel(text))
            bare.append(trace.tokens_per_second())
        table.append((f"stream {what} ({len(text) // TOKEN_CHARS:,} tokens), sustained "
                      "(baseline: the same tokens to a bare Textual Log)",
                      _rate(Figure.of(ours)), _rate(Figure.of(bare)), ratios(ours, bare).times()))
    for steady in (True, False):
        for what, text, tail in (("mixed markdown", mixed_answer(), 5_000),
                                 (f"a {CODE_LINES:,}-line code block", code_answer(), 4_000)):
            fast = len(text) - tail
            counted_from = fast + (STEADY_AFTER_SECONDS * LAG_RATE * TOKEN_CHARS if steady else 0)
            ours, bare, our_stalls, bare_stalls = [], [], [], []
            for _ in range(repeat):
                for trace_of, samples, stalls in ((lovia_trace, ours, our_stalls), (baseline_trace, bare, bare_stalls)):
                    model = PacedModel(text, LAG_RATE, fast, steady=steady)
                    trace, _ = await trace_of(model)
                    samples.append(_p95(trace.lags(int(counted_from))))
                    stalls.append(trace.stall_after_end)
            how = "steady" if steady else "after a burst"
            table.append((f"display lag p95 at {LAG_RATE:.0f} tokens/s, {how}, end of {what} "
                          "(baseline: bare Textual Log)",
                          Figure.of(ours).ms(), Figure.of(bare).ms(), ratios(ours, bare).times()))
            if steady:
                table.append((f"longest stall of the app in the {AFTER_END_SECONDS:.0f} s after {what} ends "
                              "(steady; baseline: bare Textual Log)",
                              Figure.of(our_stalls).ms(), Figure.of(bare_stalls).ms(),
                              ratios(our_stalls, bare_stalls).times()))
    asked, stopped, bare_asked = [], [], []
    text = code_answer()
    half = len(text) // 2
    for _ in range(repeat):
        _, escape = await lovia_trace(PacedModel(text, LAG_RATE, half), escape_after_chars=half + 400)
        assert escape is not None
        asked.append(escape[0])
        stopped.append(escape[1])
        _, escape = await baseline_trace(PacedModel(text, LAG_RATE, half), escape_after_chars=half + 400)
        assert escape is not None
        bare_asked.append(escape[0])
    table.append((f"escape mid-way through a {CODE_LINES:,}-line code block: key handled "
                  "(baseline: a bare app's escape binding)",
                  _frames(Figure.of(asked)), _frames(Figure.of(bare_asked)), ratios(asked, bare_asked).times()))
    table.append(("escape: run stopped and shown stopped (baseline: as above)", _frames(Figure.of(stopped)),
                  _frames(Figure.of(bare_asked)), ratios(stopped, bare_asked).times()))
    return table


if __name__ == "__main__":  # a quick look at this part alone: python bench/tui_stream.py [repeat]
    import sys

    for row in asyncio.run(rows(int(sys.argv[1]) if len(sys.argv) > 1 else 1)):
        print(" | ".join(row))
