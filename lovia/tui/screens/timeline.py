"""TimelineScreen: a run drawn as a waterfall of its steps, to see where its time went.

One row per model turn and per tool call (:mod:`lovia.timing`), in the order they started,
each a bar placed on the run's time axis: a model turn is shaded while it waits for its first
token and solid while it streams (where the shade turns solid is its time to first token), a
tool call is a bar of its own colour; a tool call whose result is an error, and a model turn
that the endpoint's error ended, are red. A step that never ended (its process died) reaches
the end of the axis, dashed; one running now reaches it in its own marks, growing as it runs.
Labels give each step's duration; from :data:`WIDE` columns also its start on the axis and its
figures (time to first token, tokens per second, tokens in and out).

It draws a stored run (its segment's ``meta["steps"]``) and a run not in its session yet,
in flight, stopped or crashed (its checkpoint head's steps). Given a way to read the run again,
the screen follows a run that is executing, once a second.
"""

from __future__ import annotations

import math
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import ClassVar

from rich.cells import cell_len
from textual import events
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.content import Content
from textual.screen import ModalScreen
from textual.timer import Timer
from textual.widgets import Static

from lovia._async import shielded
from lovia._wording import step_duration
from lovia.timing import ModelStep, Step, ToolStep, step_ending, tokens_per_second
from lovia.tui import format
from lovia.tui.backend import LIVE_STATES, ChatBackend, TranscriptRun
from lovia.tui.keymap import keymap_of
from lovia.tui.store_errors import told_on
from lovia.tui.widgets.run_header import StepSummary, header_parts, timing_parts
from lovia.tui.widgets.steady_scroll import SteadyScroll

WIDE = 110
"""From this many columns of rows, each row also says when its step started and its figures."""
FOLLOW_SECONDS = 1.0
"""How often the screen reads an executing run again."""

WAITING, STREAMING, TOOL, FAILED, OPEN = "░", "█", "▆", "▓", "╌"
STYLES = {"waiting": "$accent 60%", "streaming": "$accent", "tool": "$success", "error": "$error",
          "open": "$warning", "label": "", "muted": "$text-muted"}


FOLD_SECONDS = 30.0
"""A pause with no step under way longer than this, and than all the steps' time together, is
folded to :data:`FOLD_COLUMNS` (a run stopped and resumed an hour later still shows its steps)."""
FOLD_COLUMNS = 3
FOLD = "⋯"


@dataclass(frozen=True)
class Axis:
    """The run's time axis: ``start`` to ``end`` (epoch seconds) over ``width`` columns.

    Each of ``folds`` (a pause, from and to) takes :data:`FOLD_COLUMNS` columns whatever its
    length; the rest of the time is spread evenly over the other columns.
    """

    start: float
    end: float
    width: int
    folds: tuple[tuple[float, float], ...] = ()

    @property
    def span(self) -> float:
        return max(self.end - self.start, 1e-9)

    @property
    def _seconds_per_column(self) -> float:
        unfolded = self.span - sum(to - since for since, to in self.folds)
        return max(unfolded, 1e-9) / max(1, self.width - FOLD_COLUMNS * len(self.folds))

    def position(self, at: float) -> float:
        """Where ``at`` falls on the axis, in columns from its start (not rounded)."""
        column, since = 0.0, self.start
        for fold_start, fold_end in self.folds:
            if at <= fold_start:
                break
            if at < fold_end:
                return column + (fold_start - since) / self._seconds_per_column + \
                    (at - fold_start) / (fold_end - fold_start) * FOLD_COLUMNS
            column += (fold_start - since) / self._seconds_per_column + FOLD_COLUMNS
            since = fold_end
        return column + (at - since) / self._seconds_per_column

    def offset_at(self, column: int) -> float:
        """Seconds from the axis' start at the start of ``column`` (the inverse of :meth:`position`)."""
        seconds, since, left = 0.0, self.start, float(column)
        for fold_start, fold_end in self.folds:
            before = (fold_start - since) / self._seconds_per_column
            if left <= before:
                break
            left -= before + FOLD_COLUMNS
            seconds += fold_end - since
            since = fold_end
            if left < 0:
                return seconds + left / FOLD_COLUMNS * (fold_end - fold_start)
        return seconds + left * self._seconds_per_column

    def column(self, at: float) -> int:
        """The column ``at`` falls in, within ``0 .. width``."""
        return min(self.width, max(0, math.floor(self.position(at))))

    def bar(self, start: float, end: float) -> tuple[int, int]:
        """The columns a step from ``start`` to ``end`` covers: at least one, within the axis."""
        first = min(self.column(start), self.width - 1)
        last = max(first + 1, min(self.width, math.ceil(self.position(end))))
        return first, last


def axis_of(run: TranscriptRun, now: float, width: int) -> Axis:
    """The axis a run's steps are drawn on: from its first start to its last known moment.

    Its last moment is the latest a step ended or started, or the run's last known moment
    (:attr:`~lovia.tui.backend.TranscriptRun.known_until`: its end when stored, the time a
    crashed run was last known executing); an executing run's is ``now``, so a step under way
    grows as it runs.
    """
    steps = run.steps
    starts = [s.started_at for s in steps]
    start = min([*starts, *([run.started_at] if run.started_at is not None else [])], default=now)
    ends = [*starts, *(s.finished_at for s in steps if s.finished_at is not None)]
    if run.known_until is not None:
        ends.append(run.known_until)
    if run.state in LIVE_STATES:
        ends.append(now)
    end = max(ends, default=start)
    width = max(1, width)
    return Axis(start, end, width, pauses(run, start, end) if width >= 4 * FOLD_COLUMNS * 2 else ())


def pauses(run: TranscriptRun, start: float, end: float) -> tuple[tuple[float, float], ...]:
    """The pauses of a run worth folding (see :data:`FOLD_SECONDS`): from ``start`` to ``end``, the
    stretches when no step was under way (one that never ended is under way to ``end``)."""
    busy: list[list[float]] = []
    for since, until in sorted((s.started_at, s.finished_at if s.finished_at is not None else end) for s in run.steps):
        if busy and since <= busy[-1][1]:
            busy[-1][1] = max(busy[-1][1], until)
        else:
            busy.append([since, until])
    working = sum(until - since for since, until in busy)
    edges = [start, *(edge for span in busy for edge in span), end]
    gaps = zip(edges[0::2], edges[1::2], strict=True)
    return tuple((since, until) for since, until in gaps if until - since > max(FOLD_SECONDS, working))


def step_name(step: Step, *, model: bool = True) -> str:
    """``turn 2 · gpt-4o`` for a model turn (``turn 2`` without its ``model``), ``⚙ calculate`` for a tool call."""
    if isinstance(step, ModelStep):
        turn = f"turn {step.turn}" if step.turn is not None else "turn"
        return f"{turn} · {step.model or step.agent}" if model else turn
    return f"  ⚙ {step.name}"


def step_figures(step: Step, state: str) -> str:
    """A step's figures: ``ttft 0.4s · 52 tok/s · 120→45 tok`` for a turn, ``error`` for a failed call or turn."""
    parts = []
    if isinstance(step, ModelStep):
        ttft = step.time_to_first_token
        parts.append(f"ttft {step_duration(ttft)}" if ttft is not None else "no token")
        rate = tokens_per_second(step)
        if rate is not None:
            parts.append(f"{rate:.0f} tok/s")
        if step.input_tokens is not None or step.output_tokens is not None:
            parts.append(f"{_tokens(step.input_tokens)}→{_tokens(step.output_tokens)} tok")
    if isinstance(step, ModelStep) and step.asked_again:
        parts.append("failed, asked again")  # a rate limit or a server's failure, then the wait (the gap)
    elif ending := step_ending(step):
        parts.append(ending)
    if isinstance(step, ToolStep) and step.given:
        parts.append("result given")  # by the inspector's o / e: the tool did not return it
    if step.finished_at is None:
        parts.append("running" if state in LIVE_STATES else "never ended")
    return " · ".join(parts)


def _tokens(count: int | None) -> str:
    return "?" if count is None else f"{count:,}"


@dataclass(frozen=True)
class Columns:
    """How wide each label column of a row is, for a width of rows; the bar takes the rest."""

    name: int
    took: int
    start: int
    figures: int

    @classmethod
    def for_width(cls, width: int) -> Columns:
        if width >= WIDE:
            return cls(name=22, took=7, start=7, figures=34)
        return cls(name=min(20, max(8, width // 4)), took=6, start=0, figures=0)

    @property
    def labels(self) -> int:
        """Columns taken by the labels, with the gaps after each."""
        return sum(width + 1 for width in (self.name, self.took, self.start, self.figures) if width)


def draw_rows(run: TranscriptRun, width: int, now: float) -> Content:
    """The waterfall of ``run`` for ``width`` columns: an axis line, then one line per step."""
    columns = Columns.for_width(width)
    axis = axis_of(run, now, max(8, width - columns.labels))
    lines = [_axis_line(axis, columns)]
    lines += [_step_line(step, axis, columns, run.state) for step in run.steps]
    return Content("\n").join(lines)


def _cell(text: str, width: int, *, right: bool = False) -> str:
    if not width:
        return ""
    indent = text[:len(text) - len(text.lstrip(" "))]  # a tool call's, under its turn
    text = indent + format.one_line(text, width - len(indent))
    return format.padded(text, width, right=right) + " "


def _axis_line(axis: Axis, columns: Columns) -> Content:
    """``step  took  0s      0.8s      1.6s      2.4s   3.2s``: the axis' ticks, every quarter."""
    head = _cell("step", columns.name) + _cell("took", columns.took, right=True) + \
        _cell("start", columns.start, right=True) + _cell("figures", columns.figures)
    ticks = [" "] * axis.width

    def place(at: int, label: str) -> None:
        """Put ``label`` at column ``at`` if it fits there with a space either side of it."""
        if at + len(label) <= axis.width and all(c == " " for c in ticks[max(0, at - 1):at + len(label) + 1]):
            ticks[at:at + len(label)] = label

    # Under a second, in milliseconds: to a tenth of a second, a quarter of 0.21 s read "+0.1s",
    # twice its time, at a column that stood for 0.05 s.
    duration = step_duration if axis.span < 1 else format.duration
    total = duration(axis.span)
    place(axis.width - len(total), total)  # the run's length, at the end
    for fold_start, _ in axis.folds:  # a pause folded: its columns say so
        place(min(axis.column(fold_start), axis.width - FOLD_COLUMNS) + 1, FOLD)
    shown = {total, duration(0.0)}  # a tick that rounds to nothing would read as a second start
    for quarter in range(4):
        if axis.folds:  # the columns are not evenly timed: each tick says the time where it stands
            at = axis.width * quarter // 4
            offset = axis.offset_at(at)
        else:  # a quarter of the run, where it falls (a column's start read "+2.9s" for 3.0 s of 4.0)
            offset = axis.span * quarter / 4
            at = min(axis.width, round(axis.position(axis.start + offset)))  # the nearest column, not the one before
        label = "0s" if quarter == 0 else f"+{duration(offset)}"
        if label.lstrip("+") not in shown:
            shown.add(label.lstrip("+"))
            place(at, label)
    return Content.assemble((head, STYLES["muted"]), ("".join(ticks), STYLES["muted"]))


def _step_line(step: Step, axis: Axis, columns: Columns, state: str) -> Content:
    name_style = STYLES["error"] if step.error else STYLES["label"]
    start = f"+{format.duration(step.started_at - axis.start)}"
    name = step_name(step)
    if step.cut_off and not columns.figures:  # said among the figures when they are shown
        mark = f" · {'asked again' if isinstance(step, ModelStep) and step.asked_again else step_ending(step)}"
        if isinstance(step, ModelStep) and cell_len(name + mark) > columns.name:
            # The mark over the model's name: cut to the column, the name hid that the turn ended there.
            name = step_name(step, model=False)
        name += mark
    parts: list[str | tuple[str, str]] = [
        (_cell(name, columns.name), name_style),
        _cell(step_duration(step.duration), columns.took, right=True),
        (_cell(start, columns.start, right=True), STYLES["muted"]),
        (_cell(step_figures(step, state), columns.figures), STYLES["muted"]),
    ]
    first, last = axis.bar(step.started_at, step.finished_at if step.finished_at is not None else axis.end)
    parts.append(" " * first)
    if step.error:  # a tool call whose result is an error, or a model turn the endpoint's error ended
        fill, style = FAILED, STYLES["error"]
    elif isinstance(step, ModelStep):
        # Shaded until the first token, solid while it streams: the change is the time to first token.
        # A turn of a run no longer live that never ended with no token: how long it waited is not
        # known (its process died), so it is dashed as a tool call is, not shaded as still waiting.
        open_ended = step.finished_at is None and state not in LIVE_STATES
        streams_from = axis.column(step.first_token_at) if step.first_token_at is not None else \
            first if open_ended else last
        streams_from = min(max(streams_from, first), last)
        parts.append((WAITING * (streams_from - first), STYLES["waiting"]))
        fill, style = STREAMING, STYLES["streaming"]
        first = streams_from
    else:
        fill, style = TOOL, STYLES["tool"]
    # Never ended: dashed to the end of the axis. In a live run the step under way is not, but one
    # an earlier execution left cut off is.
    if step.finished_at is None and (state not in LIVE_STATES or step.cut_off):
        parts.append((OPEN * (last - first), STYLES["open"]))
    else:
        parts.append((fill * (last - first), style))
    return Content.assemble(*parts)


def legend(close_key: str = "esc") -> Content:
    """What the bars' marks mean, and the key that closes the timeline."""
    return Content.assemble(
        (WAITING, STYLES["waiting"]), " waiting  ", (STREAMING, STYLES["streaming"]), " streaming  ",
        (TOOL, STYLES["tool"]), " tool  ", (FAILED, STYLES["error"]), " error  ",
        (OPEN, STYLES["open"]), f" never ended  {FOLD} pause · {close_key} closes",
    )


def summary_parts(run: TranscriptRun) -> list[str]:
    """The run's figures: as its header says them, and where its time went."""
    summary = StepSummary.of(run.steps, run.known_until) if run.steps else None
    parts = [*header_parts(run), *timing_parts(summary)]
    if summary is not None and summary.tool_calls:
        parts.append(format.count(summary.tool_calls, "tool call"))
    return parts


def joined_to_fit(parts: list[str], width: int) -> str:
    """``parts`` joined by `` · ``, a new line begun between two of them rather than inside one
    (``tools`` / ``1ms`` read as two figures at 80 columns)."""
    lines: list[str] = []
    for part in parts:
        joined = f"{lines[-1]} · {part}" if lines else part
        if lines and cell_len(joined) <= width:
            lines[-1] = joined
        else:
            lines.append(part)
    return "\n".join(lines)


class FiguresLine(Static):
    """A run's figures, wrapped between figures for the width it gets (a resize wraps them again)."""

    def __init__(self, parts: list[str], **kwargs) -> None:
        super().__init__(**kwargs)
        self.parts = parts

    def show(self, parts: list[str]) -> None:
        self.parts = parts
        self._wrap()

    def on_resize(self, event: events.Resize) -> None:
        self._wrap()

    def _wrap(self) -> None:
        width = self.content_region.width
        self.update(joined_to_fit(self.parts, width) if width > 0 else " · ".join(self.parts))


class Waterfall(Static):
    """The rows, drawn for the width they get (a resize draws them again)."""

    def __init__(self, run: TranscriptRun, **kwargs) -> None:
        super().__init__(**kwargs)
        self.run = run
        self._drawn: tuple[str, int] | None = None

    def show_run(self, run: TranscriptRun) -> None:
        self.run = run
        self._draw()

    def on_resize(self, event: events.Resize) -> None:
        self._draw()

    def _draw(self) -> None:
        width = self.content_region.width
        if not width:
            return
        content = draw_rows(self.run, width, format.clock())
        if self._drawn != (content.plain, width) or self.run.state in LIVE_STATES:
            self._drawn = (content.plain, width)
            self.update(content)


RunReader = Callable[[], Awaitable["TranscriptRun | None"]]
"""Reads the run again (``None``: it is gone); given, an executing run is followed."""


class TimelineScreen(ModalScreen[None]):
    """A run's waterfall (see the module), over the screen it was opened from; ``escape`` closes."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "dismiss", "Close", id="timeline.close"),
    ]

    DEFAULT_CSS = """
    TimelineScreen { align: center middle; }
    TimelineScreen > Vertical {
        width: 100%; height: auto; max-height: 100%;
        border: round $accent; background: $surface; padding: 0 1;
    }
    TimelineScreen #timeline-title { text-style: bold; }
    TimelineScreen #timeline-summary { color: $text-muted; }
    TimelineScreen VerticalScroll { height: auto; max-height: 60vh; margin: 1 0 0 0; scrollbar-size-vertical: 1; }
    TimelineScreen #timeline-legend { color: $text-muted; margin: 1 0 0 0; }
    """

    def __init__(self, run: TranscriptRun, *, title: str = "", reread: RunReader | None = None) -> None:
        super().__init__()
        self.run = run
        self.title_text = title
        self._reread = reread
        self._follow: Timer | None = None

    def compose(self) -> ComposeResult:
        with Vertical():
            title = f"Timeline of run {self.run.run_id}" + (f" · {self.title_text}" if self.title_text else "")
            yield Static(title, id="timeline-title", markup=False)
            yield FiguresLine(summary_parts(self.run), id="timeline-summary", markup=False)
            with SteadyScroll(id="timeline-scroll"):
                if self.run.steps:
                    yield Waterfall(self.run, id="timeline-rows")
                else:
                    yield Static("This run recorded no per-step timing: it was stored before lovia recorded "
                                 "steps, or it has not taken its first step yet.", id="timeline-empty")
            close_key = keymap_of(self).first_key_text("timeline.close")
            # "esc", not "escape": the legend fits 80 columns
            yield Static(legend("esc" if close_key == "escape" else close_key), id="timeline-legend")

    def on_mount(self) -> None:
        scroll = self.query_one_optional("#timeline-scroll")
        if scroll is None:
            return  # closed before its parts were mounted: the app quit as this opened
        scroll.focus()
        if self._reread is not None and self.run.state in LIVE_STATES:
            self._follow = self.set_interval(FOLLOW_SECONDS, self.follow, name="timeline follow")

    async def follow(self) -> None:
        """Read the executing run again and draw what it did since; stops once it no longer executes,
        or is gone (discarded, finalized: what was drawn last stays), or its store fails (said once)."""
        done = True
        with told_on(self, "follow the run's timeline"):  # a timer's exception would end the app
            run = await self._reread() if self._reread is not None else None
            if run is not None:
                await self.show_run(run)
            done = run is None or run.state not in LIVE_STATES
        if done and self._follow is not None:
            self._follow.stop()
            self._follow = None

    async def show_run(self, run: TranscriptRun) -> None:
        """Draw ``run`` (the same run, as it stands now)."""
        self.run = run
        self.query_one("#timeline-summary", FiguresLine).show(summary_parts(run))
        rows = self.query("#timeline-rows")
        if rows:
            rows.first(Waterfall).show_run(run)
        elif run.steps:
            scroll = self.query_one("#timeline-scroll")
            await shielded(scroll.remove_children())
            await scroll.mount(Waterfall(run, id="timeline-rows"))


async def run_for_timeline(backend: ChatBackend, run_id: str, shown: TranscriptRun | None) -> TranscriptRun | None:
    """``run_id`` as a timeline draws it: from its checkpoint while it is not in its session, else ``shown``.

    ``shown`` is the run as the transcript shows it (a stored segment); a run whose checkpoint
    is completed is in its session, so that is read from the transcript too.
    """
    snapshot = await backend.snapshot(run_id)
    if snapshot is not None and (snapshot.head.status != "completed" or shown is None):
        return TranscriptRun.of_snapshot(snapshot)
    return shown

