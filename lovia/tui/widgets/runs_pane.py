"""RunsPane: interrupted, crashed and failed runs across sessions, and those running elsewhere, newest first."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import ClassVar

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.message import Message
from textual.widget import Widget
from textual.widgets import OptionList, Static
from textual.widgets.option_list import Option

from lovia.checkpoint import RunSummary
from lovia.entries import Entry
from lovia.run_state import RunStop, how_run_stopped
from lovia.tui import format
from lovia.tui.clipboard import copy_text
from lovia.tui.widgets import lists
from lovia.tui.widgets.lists import StoppingOptionList

STATE_MARK = {"interrupted": "⏸", "stopped": "⏸", "crashed": "✗", "failed": "!", "running": "▶", "elsewhere": "⇄"}
"""The mark of each way a run stopped (:class:`~lovia.run_state.RunStop` kinds, and the UI's run states)."""
LABEL_WIDTH = 38
"""How wide a run's lines are cut before the list is laid out (its width at 80x24)."""


REFUSED_WHILE_HELD = frozenset({"act('resume')", "act('discard')", "act('finalize')"})
"""The run list's actions (as bound) that a run held by an execution refuses."""


class RunList(StoppingOptionList):
    """The runs; up and down stop at its ends."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("r,enter", "act('resume')", "Resume", id="runs.resume"),  # one action, so one [keys] entry
        Binding("x", "act('discard')", "Discard", id="runs.discard"),
        Binding("f", "act('finalize')", "Finalize", id="runs.finalize"),
        # "Copy id" in the footer (the run is what the list holds): with "Copy run id", Timeline
        # did not fit an 80-column footer by two cells.
        Binding("c", "copy_run_id", "Copy id", id="runs.copy_run_id", tooltip="Copy run id"),
        Binding("w", "act('timeline')", "Timeline", id="runs.timeline",
                tooltip="Where the time went: the run as a waterfall of its steps"),
    ]

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action in ("act", "copy_run_id"):  # on the run under the cursor: none in an empty list
            return self.highlighted is not None and bool(self.get_option_at_index(self.highlighted).id)
        return True

    def hidden_in_footer(self, action: str) -> bool:
        """Resume, discard and finalize of a run an execution holds (another process, another
        window): the footer leaves them out (see :class:`~lovia.tui.widgets.footer.HidesInFooter`);
        pressed, each says who holds the run."""
        if action not in REFUSED_WHILE_HELD:
            return False
        pane = self.query_ancestor(RunsPane)
        run_id = pane.highlighted_run_id
        return any(run.run_id == run_id and run.head.is_held() for run in pane.runs)

    def watch_highlighted(self, highlighted: int | None) -> None:
        super().watch_highlighted(highlighted)
        self.refresh_bindings()  # the footer offers the run actions once a run is under the cursor

    def on_focus(self) -> None:
        # Entering the list inspects the run under the cursor at once.
        if self.highlighted is None and self.option_count and not self.get_option_at_index(0).disabled:
            self.highlighted = 0
        elif self.highlighted is not None:
            run_id = self.get_option_at_index(self.highlighted).id
            if run_id:
                self.post_message(RunsPane.Highlighted(run_id))

    def action_act(self, action: str) -> None:
        if self.highlighted is not None:
            run_id = self.get_option_at_index(self.highlighted).id
            if run_id:
                self.post_message(RunsPane.Action(action, run_id))

    def action_copy_run_id(self) -> None:
        if self.highlighted is not None and (run_id := self.get_option_at_index(self.highlighted).id):
            copy_run_id(self, run_id)


class RunsPane(Vertical):
    """Posts :class:`Highlighted` (for the inspector) and :class:`Action` messages up."""

    DEFAULT_CSS = """
    RunsPane { height: 1fr; }
    RunsPane .pane-title { color: $text-muted; padding: 0 1; text-style: bold; }
    /* The focus bar's column is kept, blank without focus: the list does not shift as focus moves. */
    RunsPane RunList { height: 1fr; border: none; border-left: blank; }
    RunsPane RunList:focus { border: none; border-left: tall $accent; }
    """

    class Highlighted(Message):
        def __init__(self, run_id: str) -> None:
            super().__init__()
            self.run_id = run_id

    class Action(Message):
        def __init__(self, action: str, run_id: str) -> None:
            super().__init__()
            self.action = action
            self.run_id = run_id

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self.runs: list[RunSummary] = []
        self._titles: dict[str, str] = {}  # session titles, as the last show() had them
        self._dangling: Mapping[str, Sequence[Entry]] = {}  # each run's calls without a result, as show() had them

    def on_mount(self) -> None:
        self.set_interval(lists.AGES_REFRESH_SECONDS, self.refresh_ages, name="run ages")

    def on_resize(self) -> None:
        self.refresh_ages()  # each line is cut to the list's width

    def refresh_ages(self) -> None:
        """Re-render the listed runs' ages (and lines, to the list's width) from what the list holds;
        highlight and scroll stay."""
        if not self.is_on_screen:
            return  # folded away (80 columns): see lists.AGES_REFRESH_SECONDS
        now = format.clock()
        run_list = self.query_one(RunList)
        lists.replace_changed_prompts(run_list, (self._label(run, now) for run in self.runs))
        run_list.refresh_bindings()  # a lease lapsed since: the run's actions apply now (see hidden_in_footer)

    def _label(self, run: RunSummary, now: float) -> Text:
        width = self.query_one(RunList).option_text_width
        width = width if width > 6 else LABEL_WIDTH  # not laid out yet
        stop = how_run_stopped(run.head, self._dangling.get(run.run_id, ()), now)
        return run_label(run, stop, self._titles.get(run.head.session_id or "", ""), now, width)

    def compose(self) -> ComposeResult:
        yield Static("Interrupted & crashed runs", classes="pane-title")
        yield RunList(id="run-list")

    def show(self, runs: list[RunSummary], titles: dict[str, str], now: float | None = None, *,
             dangling: Mapping[str, Sequence[Entry]] | None = None) -> None:
        """List ``runs``; the run highlighted before stays highlighted (by id) while it is listed.

        When the highlighted run is gone (discarded, finalized, resumed here) the highlight
        goes to the run now in its place. Neither posts :class:`Highlighted`: a refresh must
        not move the inspector to another run (a resumed run is followed live, say). ``now``
        is what the ages are measured from. ``dangling`` holds each run's tool calls without a
        result (by run id; see ``ChatBackend.dangling_calls``): a run stopped inside them says so.
        """
        self.runs = runs
        self._titles = titles
        self._dangling = dangling if dangling is not None else {}
        options = self.query_one(RunList)
        options.refresh_bindings()  # a run held may be held no more (its lease lapsed), or the other way
        before = options.highlighted
        highlighted_id = options.get_option_at_index(before).id if before is not None else None
        ids = [r.run_id for r in runs]
        with options.prevent(OptionList.OptionHighlighted):
            options.clear_options()
            if not runs:
                options.add_option(Option(Text("Nothing to resume.", style="dim"), disabled=True))
                return
            now = format.clock() if now is None else now
            options.add_options([Option(self._label(r, now), id=r.run_id) for r in runs])
            if highlighted_id in ids:
                options.highlighted = ids.index(highlighted_id)
            elif before is not None:
                options.highlighted = min(before, len(runs) - 1)
            elif options.has_focus:
                # Focused while it listed nothing (or a run of this window's only starting): the cursor
                # comes to the first run, as on entering the list, else its keys are gone from the footer
                # and the list seems to have no focus.
                options.highlighted = 0

    @property
    def highlighted_run_id(self) -> str | None:
        """The run under the list's cursor, if any."""
        options = self.query_one(RunList)
        return options.get_option_at_index(options.highlighted).id if options.highlighted is not None else None

    @on(OptionList.OptionHighlighted, "#run-list")
    def _highlighted(self, event: OptionList.OptionHighlighted) -> None:
        event.stop()
        if event.option.id:
            self.post_message(self.Highlighted(event.option.id))

    @on(OptionList.OptionSelected, "#run-list")
    def _selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()


def copy_run_id(widget: Widget, run_id: str) -> None:
    """Copy ``run_id`` and say how (a run id names the run in logs, scripts and ``resume_only``)."""
    how = copy_text(widget.app, run_id)
    widget.notify(f"Copied the run id {run_id} {how}.")


def run_label(summary: RunSummary, stop: RunStop, session_title: str, now: float, width: int = LABEL_WIDTH) -> Text:
    """A run as the list shows it, each line cut to ``width``: how it stopped (and inside which calls),
    its first input, the detail (the partial answer's start, the error's first line, or who runs it),
    when it started (to the second, with its age), how long it actually ran and its model, and its
    session."""
    head = summary.head
    mark = STATE_MARK.get(stop.kind, "?")
    headline = f"{mark} {stop.headline}"
    names = ""
    if len(headline) > width and stop.calls:  # the calls' names go on a line of their own
        headline = f"{mark} {stop.describe(format.count(len(stop.calls), 'tool call'))}"
        names = ", ".join(stop.calls)
    lines = Text(format.one_line(headline, width), style="bold")
    if names:
        lines.append("\n" + format.one_line(names, width), style="bold")
    lines.append("\n" + format.one_line(head.first_input or "(no input)", width))
    if stop.kind == "failed" and stop.detail:
        lines.append("\n" + format.one_line(format.sentence(stop.detail), width), style="red")
    elif stop.moment == "streaming" and stop.detail:
        # Its words, as the transcript shows them: "**lovia's demo**" read with its stars.
        lines.append("\n" + f"“{format.one_line(format.plain_text(stop.detail), width - 2)}”", style="italic dim")
    elif stop.kind == "elsewhere" and stop.detail:
        # Not resumable from here while that process holds it: say who does.
        lines.append("\n" + format.one_line(f"by {stop.detail}", width), style="dim")
    lines.append("\n" + format.when_ago(head.started_at, now, width), style="dim")
    facts = []
    if head.active_seconds:
        facts.append(f"ran {format.duration(head.active_seconds)}")
    if head.model:  # the model of its last turn; unknown before its first, and for runs stored before lovia kept it
        facts.append(head.model)
    if facts:
        lines.append("\n" + format.one_line(" · ".join(facts), width), style="dim")
    if session_title:
        lines.append("\n" + format.one_line(f"in {session_title}", width), style="dim")
    return lines
