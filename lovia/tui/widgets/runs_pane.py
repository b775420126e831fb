"""RunsPane: interrupted, crashed and failed runs across sessions, and those running elsewhere, newest first."""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.message import Message
from textual.widgets import OptionList, Static
from textual.widgets.option_list import Option

from lovia.checkpoint import RunSummary
from lovia.tui import format
from lovia.tui.backend import STATE_LABELS, run_state

STATE_MARK = {"interrupted": "⏸", "crashed": "✗", "failed": "!", "running": "▶", "elsewhere": "⇄"}


class RunList(OptionList):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("r", "act('resume')", "Resume"),
        Binding("enter", "act('resume')", "Resume", show=False),
        Binding("x", "act('discard')", "Discard"),
        Binding("f", "act('finalize')", "Finalize"),
    ]

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


class RunsPane(Vertical):
    """Posts :class:`Highlighted` (for the inspector) and :class:`Action` messages up."""

    DEFAULT_CSS = """
    RunsPane { height: 1fr; }
    RunsPane .pane-title { color: $text-muted; padding: 0 1; text-style: bold; }
    RunsPane RunList { height: 1fr; border: none; }
    RunsPane RunList:focus { border-left: tall $accent; }
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

    def compose(self) -> ComposeResult:
        yield Static("Interrupted & crashed runs", classes="pane-title")
        yield RunList(id="run-list")

    def show(self, runs: list[RunSummary], titles: dict[str, str]) -> None:
        self.runs = runs
        options = self.query_one(RunList)
        highlighted = options.highlighted
        options.clear_options()
        if not runs:
            options.add_option(Option(Text("Nothing to resume.", style="dim"), disabled=True))
            return
        options.add_options([Option(_label(r, titles.get(r.head.session_id or "", "")), id=r.run_id) for r in runs])
        if highlighted is not None:
            options.highlighted = min(highlighted, len(runs) - 1)

    @on(OptionList.OptionHighlighted, "#run-list")
    def _highlighted(self, event: OptionList.OptionHighlighted) -> None:
        event.stop()
        if event.option.id:
            self.post_message(self.Highlighted(event.option.id))

    @on(OptionList.OptionSelected, "#run-list")
    def _selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()


def _label(summary: RunSummary, session_title: str) -> Text:
    head = summary.head
    state = run_state(head)
    text = Text(f"{STATE_MARK.get(state, '?')} {STATE_LABELS.get(state, state)} ", style="bold")
    text.append(format.one_line(head.first_input or "(no input)", 30))
    text.append(f"\n{format.when(head.started_at)} · turn {head.turn} · "
                f"{format.count(summary.entry_count, 'entry', 'entries')}", style="dim")
    if state == "elsewhere" and head.owner is not None:
        # Not resumable from here while that process holds it: say who does.
        text.append(f"\nby pid {head.owner.pid} on {format.one_line(head.owner.host, 24)}", style="dim")
    if session_title:
        text.append(f"\nin {format.one_line(session_title, 34)}", style="dim")
    return text
