"""CheckpointInspector: the head, entries and dangling calls of one run."""

from __future__ import annotations

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.widgets import Static

from lovia.checkpoint import RunSnapshot
from lovia.entries import ToolCall, ToolResult
from lovia.transcript import dangling_tool_calls
from lovia.tui import format
from lovia.tui.backend import STATE_LABELS, run_state


class CheckpointInspector(VerticalScroll, can_focus=True):
    """Shows a :class:`RunSnapshot`; ``show(None)`` explains how to pick one."""

    DEFAULT_CSS = """
    CheckpointInspector { height: 1fr; padding: 0 1; }
    CheckpointInspector:focus { border-left: tall $accent; }
    CheckpointInspector .pane-title { color: $text-muted; text-style: bold; }
    CheckpointInspector .dangling { color: $warning; }
    """

    shown: RenderableType = ""

    def compose(self) -> ComposeResult:
        yield Static("Checkpoint", classes="pane-title")
        yield Static(id="inspector-body")

    def show(self, snapshot: RunSnapshot | None) -> None:
        body = self.query_one("#inspector-body", Static)
        if snapshot is None:
            self.shown = Text("Select a run in the runs list, or start one, to inspect its checkpoint.", style="dim")
            body.update(self.shown)
            return
        head = snapshot.head
        table = Table.grid(padding=(0, 1))
        table.add_column(style="dim", no_wrap=True)
        table.add_column()
        rows = [
            ("run", snapshot.run_id),
            ("status", STATE_LABELS.get(run_state(head), run_state(head))),
            ("agent", head.agent),
            ("turn", str(head.turn)),
            ("usage", format.usage(head.usage)),
            ("handoff", head.pending_handoff or "—"),
            ("started", format.when(head.started_at)),
            ("updated", format.when(head.updated_at)),
            ("session", head.session_id or "—"),
            ("owner", f"pid {head.owner.pid} on {head.owner.host}" if head.owner else "—"),
        ]
        if head.lease_until is not None:
            rows.append(("lease", f"until {format.when(head.lease_until)}"))
        if head.error:
            rows.append(("error", head.error))
        for key, value in rows:
            table.add_row(key, Text(value))
        dangling = dangling_tool_calls(snapshot.entries)
        lines = Text()
        lines.append(f"\n{format.count(len(snapshot.entries), 'entry', 'entries')}\n", style="bold")
        dangling_ids = {c.call_id for c in dangling}
        for position, entry in enumerate(snapshot.entries):
            summary = _summary(entry)
            style = "yellow" if isinstance(entry, ToolCall) and entry.call_id in dangling_ids else ""
            lines.append(f"{position:>3} {entry.type:<11} {summary}\n", style=style)
        if dangling:
            lines.append(f"\n{len(dangling)} dangling — will run again on resume: ", style="bold")
            lines.append(", ".join(f"{c.name} ({c.call_id})" for c in dangling))
        else:
            lines.append("\nNo dangling tool calls.", style="dim")
        self.shown = Group(table, lines)
        body.update(self.shown)


def _summary(entry) -> str:
    if isinstance(entry, ToolCall):
        return format.one_line(f"{entry.name}({entry.arguments})", 50)
    if isinstance(entry, ToolResult):
        return format.one_line(("✗ " if entry.is_error else "") + entry.output, 50)
    text = getattr(entry, "text", None)
    if text is not None:
        return format.one_line(text, 50)
    return format.one_line(f"{getattr(entry, 'from_agent', '')} → {getattr(entry, 'to_agent', '')}", 50)
