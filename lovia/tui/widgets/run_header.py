"""RunHeader: the line above each run, with its start time and duration."""

from __future__ import annotations

from textual.widgets import Static

from lovia.tui import format


class RunHeader(Static):
    """``── 2026-12-02 14:05 · 3.2s ──`` (or ``running…``, ``interrupted``, ``crashed``)."""

    DEFAULT_CSS = """
    RunHeader {
        color: $text-muted;
        margin: 1 0 0 0;
        text-style: dim;
    }
    RunHeader.-interrupted, RunHeader.-crashed, RunHeader.-failed { color: $warning; text-style: none; }
    RunHeader.-running, RunHeader.-elsewhere { color: $accent; text-style: none; }
    """

    def __init__(self, run_id: str, started_at: float | None, state: str, seconds: float | None = None,
                 owner: str | None = None) -> None:
        super().__init__()
        self.run_id = run_id
        self.started_at = started_at
        self.owner = owner  # who runs it, for a run running elsewhere
        self.set_state(state, seconds)

    def set_state(self, state: str, seconds: float | None = None) -> None:
        """Show the run as ``state`` (completed, running, interrupted, crashed, failed)."""
        for old in ("completed", "running", "elsewhere", "interrupted", "crashed", "failed"):
            self.remove_class(f"-{old}")
        self.add_class(f"-{state}")
        parts = [format.when(self.started_at)]
        if state == "completed":
            parts.append(format.duration(seconds))
        elif state == "running":
            parts.append("running…")
        elif state == "elsewhere":
            parts.extend(["running elsewhere", self.owner or "in another process"])
        else:
            parts.append(state)
        self.update(f"── {' · '.join(parts)} ──")
