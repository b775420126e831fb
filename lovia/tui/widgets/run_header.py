"""RunHeader: the line above each run, with its start time, how long it took and ran, and where the time went."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from rich.cells import cell_len
from textual.content import Content
from textual.geometry import Size
from textual.widgets import Static

from lovia._wording import NOT_TIMED, step_duration
from lovia.run_state import first_line
from lovia.timing import ModelStep, Step, ToolStep, streaming_seconds
from lovia.tui import format
from lovia.tui.backend import STATE_LABELS, RunState, TranscriptRun

STATES = ("completed", "partial", "running", "elsewhere", "interrupted", "crashed", "failed")


class RunHeader(Static):
    """``── 2026-12-02 14:05:09 · 3.2s ──``, from the run as stored, live or reopened alike.

    A completed run shows its wall time from the first start (the spec's timing) and, when
    it differs, the time it actually ran: ``4m 05s · ran 3.2s`` (a run stopped and resumed
    later). An in-flight run says its state and how long it ran so far (``stopped · ran
    3.2s``); a finalized partial is marked with how it ended (``partial, stopped · ran 3.2s``).

    A run with per-step timing (:attr:`TranscriptRun.steps`) adds where its time went:
    ``3 turns · first token 0.4s · 52 tok/s · tools 1.1s`` (see :class:`StepSummary`), folded
    to fewer words and then to fewer figures when the line would not fit the width (see
    :func:`timing_parts`). A run without steps reads as it always did.
    """

    DEFAULT_CSS = """
    RunHeader {
        color: $text-muted;
        margin: 1 0 0 1;  /* a column apart from the transcript's focus bar, as messages are */
        text-style: dim;
    }
    RunHeader.-interrupted, RunHeader.-crashed, RunHeader.-failed, RunHeader.-partial {
        color: $warning; text-style: none;
    }
    RunHeader.-running, RunHeader.-elsewhere { color: $accent; text-style: none; }
    """

    def __init__(self, run: TranscriptRun) -> None:
        super().__init__()
        self.run = run
        self._summary: StepSummary | None = None
        self._layout_width = 0  # the width the last layout gave it (0: not laid out yet)
        self.show_run(run)

    @property
    def run_id(self) -> str:
        return self.run.run_id

    def show_run(self, run: TranscriptRun) -> None:
        """Show ``run``'s figures (as the stores have them) and state."""
        self.run = run
        shown = "partial" if run.state == "completed" and run.partial else run.state
        for state in STATES:
            self.set_class(state == shown, f"-{state}")
        self._summary = StepSummary.of(run.steps, run.known_until) if run.steps else None
        self.refresh(layout=True)

    # The line is made for the width the header gets, when it is laid out and drawn: never drawn
    # for another width first and laid out again once it knows its own.

    def get_content_height(self, container: Size, viewport: Size, width: int) -> int:
        self._layout_width = width
        # Measured as Widget.get_content_height measures a visual (its styles serve as the rules map).
        return Content(self._line(width)).get_height(self.styles, width) if width else 0  # type: ignore[arg-type]

    def render(self) -> Content:
        return Content(self._line(self._layout_width or self.content_region.width))

    def _line(self, width: int) -> str:
        """The header line with as much timing detail as fits ``width`` (0: unknown, all of it)."""
        return header_line(self.run, self._summary, width)

    def set_state(self, state: RunState) -> None:
        """The same run, now ``state`` (e.g. ``running`` again on a resume)."""
        self.show_run(replace(self.run, state=state))


def partial_label(run: TranscriptRun) -> str:
    """How a run recorded as partial reads: ``partial, stopped`` (how it ended, when known)."""
    return f"partial, {run.ended}" if run.ended else "partial"


FAILURE_AT_LEAST = 16
"""Characters of a failed run's reason a header shows, if it shows it at all (it is cut to fit)."""


def failure(run: TranscriptRun) -> str:
    """Why a failed run failed (its error's first line): ``""`` when it did not, or it is not known."""
    failed = run.state == "failed" or (run.partial and run.ended == "failed")
    return format.stored_failure(first_line(run.error)) if failed and run.error else ""


def header_line(run: TranscriptRun, summary: StepSummary | None, width: int = 0) -> str:
    """``── when · took · … ──``, with the most detail of ``summary`` that fits ``width`` (0: no limit).

    A failed run's reason comes last, cut to what is left of the line after the timing (at
    least :data:`FAILURE_AT_LEAST` characters of it, else none: the runs list and the inspector
    show it whole while the run is in flight).
    """
    base = header_parts(run)
    lines = [[*base, *timing_parts(summary, detail)] for detail in DETAILS]
    if reason := failure(run):
        for detail, parts in zip(DETAILS, lines, strict=True):  # less timing, to make room for why it failed
            if detail == "one":
                continue  # a lone figure is not worth the words of the reason it would cut
            left = width - cell_len(f"── {' · '.join(parts)} ── · ") if width > 0 else len(reason)
            if left >= FAILURE_AT_LEAST:
                return f"── {' · '.join([*parts, format.one_line(reason, left)])} ──"
    for parts in lines:
        text = f"── {' · '.join(parts)} ──"
        if width <= 0 or cell_len(text) <= width:
            return text
    return f"── {' · '.join(base)} ──"


DETAILS = ("full", "short", "no rate", "least", "one", "none")
"""How much of the timing a header line says, most first: the header picks the first that fits."""


@dataclass(frozen=True)
class StepSummary:
    """Where a run's time went, from its steps (:mod:`lovia.timing`).

    ``turns`` counts the model turns that finished, as the inspector does: one a stop, an error
    or a crash cut off was an attempt the timeline draws, not a turn. ``first_token`` is the
    time to first token of the first turn that finished (an attempt cut short, then retried or
    resumed, is passed over), else of the first attempt anything arrived in: how long the model
    took to start the answer shown (``None`` when nothing arrived).
    ``tokens_per_second`` is the output tokens of the turns whose usage is known over the
    time they streamed (first token to end), leaving out a turn that came at once, as the
    timeline gives it no rate (:func:`~lovia.timing.streaming_seconds`); ``None`` when no turn
    is left.
    ``tool_seconds`` is the wall time during which at least one tool ran (calls run in
    parallel count once), over the ``tool_calls`` calls that ended, and those that never ended
    counted up to ``until`` when given (a crashed run's last known moment); ``None`` without
    calls. ``open_steps`` counts steps that never ended (a crash, or the step running now).
    """

    turns: int
    first_token: float | None
    tokens_per_second: float | None
    tool_calls: int
    tool_seconds: float | None
    open_steps: int

    @classmethod
    def of(cls, steps: Sequence[Step], until: float | None = None) -> StepSummary:
        models = [s for s in steps if isinstance(s, ModelStep)]
        tools = [s for s in steps if isinstance(s, ToolStep)]
        # The first turn that finished, as ``turns`` counts them; else the first attempt anything came
        # in. One cut short (stopped, failed, crashed; then asked again) is not the answer shown.
        first = next((m.time_to_first_token for m in models if m.time_to_first_token is not None
                      and m.finished_at is not None and not m.cut_off), None)
        if first is None:
            first = next((m.time_to_first_token for m in models if m.time_to_first_token is not None), None)
        timed = ((m.output_tokens, streaming_seconds(m)) for m in models)
        streamed = [(n, t) for n, t in timed if n is not None and t is not None]
        seconds = sum(t for _, t in streamed)
        rate = sum(n for n, _ in streamed) / seconds if streamed else None
        ended = [(t.started_at, end) for t in tools
                 if (end := t.finished_at if t.finished_at is not None else until) is not None and end > t.started_at]
        finished = sum(1 for m in models if m.finished_at is not None and not m.cut_off)
        return cls(finished, first, rate, len(tools), busy_seconds(ended) if tools else None,
                   sum(1 for s in steps if s.finished_at is None))


def busy_seconds(spans: Sequence[tuple[float, float]]) -> float:
    """How long at least one of ``spans`` (start, end) was under way: overlaps count once."""
    total, reach = 0.0, float("-inf")
    for start, end in sorted(spans):
        if end > reach:
            total += end - max(start, reach)
            reach = end
    return total


def timing_parts(summary: StepSummary | None, detail: str = "full") -> list[str]:
    """What a header says of ``summary`` at ``detail`` (see :data:`DETAILS`): unknown figures are left out.

    ``full``: ``3 turns · first token 420ms · 52 tok/s · tools 1.1s``; ``short``: ``3 turns ·
    ttft 420ms · 52 tok/s · tools 1.1s``; ``no rate``: ``3 turns · ttft 420ms · tools 1.1s``;
    ``least``: ``ttft 420ms · tools 1.1s``; ``one``: the tools' time, or with no tool call the time
    to first token (a partial run's longer header left room for one at 80 columns, and showed none);
    ``none``: nothing.
    """
    if summary is None or detail == "none":
        return []
    if detail == "one":
        if summary.tool_seconds is not None:
            return [f"tools {step_duration(summary.tool_seconds)}"]
        return [f"ttft {step_duration(summary.first_token)}"] if summary.first_token is not None else []
    parts = []
    if detail != "least" and summary.turns:
        parts.append(format.count(summary.turns, "turn"))
    if summary.first_token is not None:
        parts.append(f"{'first token' if detail == 'full' else 'ttft'} {step_duration(summary.first_token)}")
    if detail in ("full", "short") and summary.tokens_per_second is not None:
        parts.append(f"{summary.tokens_per_second:.0f} tok/s")
    if summary.tool_seconds is not None:
        parts.append(f"tools {step_duration(summary.tool_seconds)}")
    return parts


def header_parts(run: TranscriptRun) -> list[str]:
    """What a run header says, part by part; times not recorded (a run appended without the spec's
    ``timing``, by other code) are left out, and a run with none says so."""
    parts = [format.when(run.started_at) if run.started_at is not None else ""]
    ran = f"ran {format.duration(run.active_seconds)}" if run.active_seconds else ""
    if run.state == "completed" and run.partial:
        parts.append(partial_label(run))
        parts.append(ran)
    elif run.state == "completed":
        took = format.duration(run.duration) if run.duration is not None else ""
        parts.append(took)
        if ran and format.duration(run.active_seconds) != took:
            parts.append(ran)
    elif run.state == "running":
        parts.append("running…")
    elif run.state == "elsewhere":
        parts.extend(["running elsewhere", run.owner or "in another process"])
    else:
        parts.extend([STATE_LABELS.get(run.state, run.state), ran])
    return [part for part in parts if part] or [NOT_TIMED]
