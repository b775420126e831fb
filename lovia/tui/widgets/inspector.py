"""CheckpointInspector: the head, entries and dangling calls of one run."""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.widgets import Static

from lovia.checkpoint import RunSnapshot
from lovia.entries import AssistantMessage, Entry, Handoff, ToolCall, ToolResult
from lovia.transcript import dangling_tool_calls
from lovia.tui import format
from lovia.tui.backend import STATE_LABELS, TranscriptRun, run_state
from lovia.tui.widgets.run_header import header_parts, partial_label
from lovia.tui.widgets.runs_pane import copy_run_id

SUMMARY_CHARS = 200
"""How much of an entry's text the inspector shows (wrapped under its column)."""


class CheckpointInspector(VerticalScroll, can_focus=True):
    """Shows a :class:`RunSnapshot`, or a stored run without one (:meth:`show_run`);
    ``show(None)`` explains how to pick one. ``c`` copies the shown run's id."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("c", "copy_run_id", "Copy run id", id="inspector.copy_run_id")]

    DEFAULT_CSS = """
    CheckpointInspector { height: 1fr; padding: 0 1; }
    CheckpointInspector:focus { border-left: tall $accent; }
    CheckpointInspector .pane-title { color: $text-muted; text-style: bold; }
    CheckpointInspector .dangling { color: $warning; }
    """

    shown: RenderableType = ""
    run_id: str | None = None
    """The run shown, if any."""

    def compose(self) -> ComposeResult:
        yield Static("Checkpoint", classes="pane-title")
        yield Static(id="inspector-body")

    def _show(self, run_id: str | None, renderable: RenderableType) -> None:
        self.run_id = run_id
        self.shown = renderable
        self.query_one("#inspector-body", Static).update(renderable)

    def show(self, snapshot: RunSnapshot | None) -> None:
        """Show ``snapshot``'s head, entries and dangling calls (``None``: say how to pick a run)."""
        if snapshot is None:
            self._show(None, Text("Select a run in the runs list or a message in the conversation, or start "
                                  "one, to inspect its checkpoint.", style="dim"))
            return
        head = snapshot.head
        rows = [
            ("run", snapshot.run_id),
            ("status", STATE_LABELS.get(run_state(head), run_state(head))),
            ("agent", head.agent),
            ("turn", str(head.turn)),
            ("usage", format.usage(head.usage)),
            ("handoff", head.pending_handoff or "—"),
            ("started", format.when(head.started_at)),
            ("updated", format.when(head.updated_at)),
            ("ran", format.duration(head.active_seconds) if head.active_seconds else "—"),
            ("session", head.session_id or "—"),
            ("owner", f"pid {head.owner.pid} on {head.owner.host}" if head.owner else "—"),
        ]
        if head.lease_until is not None:
            rows.append(("lease", f"until {format.when(head.lease_until)}"))
        if head.error:
            rows.append(("error", head.error))
        dangling = dangling_tool_calls(snapshot.entries)
        dangling_ids = {c.call_id for c in dangling}
        calls = ", ".join(f"{c.name} ({c.call_id})" for c in dangling)
        if dangling and run_state(head) in ("running", "elsewhere"):  # executing now, not left behind
            note = Text.assemble((f"\n{format.count(len(dangling), 'tool call')} running now: ", "bold"), calls)
        elif dangling:
            note = Text.assemble((f"\n{format.count(len(dangling), 'dangling call')} — will run again on resume: ",
                                  "bold"), calls)
        else:
            note = Text("\nNo dangling tool calls.", style="dim")
        self._show(snapshot.run_id, Group(_facts(rows), _entries(snapshot.entries, dangling_ids), note))

    def show_run(self, run: TranscriptRun) -> None:
        """A run with no checkpoint (a stored segment): what its session records of it."""
        rows = [
            ("run", run.run_id),
            ("status", partial_label(run) if run.partial else STATE_LABELS.get(run.state, run.state)),
            ("header", " · ".join(header_parts(run))),
            ("started", format.when(run.started_at)),
            ("took", format.duration(run.duration)),
            ("ran", format.duration(run.active_seconds) if run.active_seconds else "—"),
        ]
        note = Text("\nIn the session; no checkpoint is kept for this run.", style="dim")
        self._show(run.run_id, Group(_facts(rows), _entries(run.entries, set()), note))

    def action_copy_run_id(self) -> None:
        if self.run_id is None:
            self.notify("No run is shown: select one first.", severity="warning")
        else:
            copy_run_id(self, self.run_id)


def _facts(rows: Sequence[tuple[str, str]]) -> Table:
    table = Table.grid(padding=(0, 1))
    table.add_column(style="dim", no_wrap=True)
    table.add_column(overflow="fold")
    for key, value in rows:
        table.add_row(key, Text(value))
    return table


def _entries(entries: Sequence[Entry], dangling_ids: set[str]) -> Table:
    """One row an entry: position, type, and its summary wrapped under its own column."""
    table = Table(title=format.count(len(entries), "entry", "entries"), title_justify="left", title_style="bold",
                  box=None, show_header=False, padding=(0, 1, 0, 0), expand=True)
    table.add_column(justify="right", style="dim", no_wrap=True)
    table.add_column(no_wrap=True)
    table.add_column(ratio=1, overflow="fold")
    for position, entry in enumerate(entries):
        style = "yellow" if isinstance(entry, ToolCall) and entry.call_id in dangling_ids else ""
        table.add_row(str(position), Text(entry.type, style=style), Text(_summary(entry), style=style))
    return table


def _summary(entry: Entry) -> str:
    """An entry in a few plain words: no markdown syntax, on one line."""
    if isinstance(entry, ToolCall):
        return format.one_line(f"{entry.name}({entry.arguments})", SUMMARY_CHARS)
    if isinstance(entry, ToolResult):
        return format.one_line(("✗ " if entry.is_error else "") + entry.output, SUMMARY_CHARS)
    if isinstance(entry, Handoff):
        return f"{entry.from_agent} → {entry.to_agent}"
    text = getattr(entry, "text", "")
    if isinstance(entry, AssistantMessage):
        text = format.plain_text(text)
    return format.one_line(text, SUMMARY_CHARS)
