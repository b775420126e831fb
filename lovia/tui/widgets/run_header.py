"""RunHeader: the line above each run, with its start time and how long it took and ran."""

from __future__ import annotations

from dataclasses import replace

from textual.widgets import Static

from lovia.tui import format
from lovia.tui.backend import RunState, TranscriptRun

STATES = ("completed", "partial", "running", "elsewhere", "interrupted", "crashed", "failed")


class RunHeader(Static):
    """``── 2026-12-02 14:05:09 · 3.2s ──``, from the run as stored, live or reopened alike.

    A completed run shows its wall time from the first start (the spec's timing) and, when
    it differs, the time it actually ran: ``4m 05s · ran 3.2s`` (a run stopped and resumed
    later). An in-flight run says its state and how long it ran so far (``interrupted · ran
    3.2s``); a finalized partial is marked with how it ended (``partial, stopped · ran 3.2s``).
    """

    DEFAULT_CSS = """
    RunHeader {
        color: $text-muted;
        margin: 1 0 0 0;
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
        self.update(f"── {' · '.join(header_parts(run))} ──")

    def set_state(self, state: RunState) -> None:
        """The same run, now ``state`` (e.g. ``running`` again on a resume)."""
        self.show_run(replace(self.run, state=state))


def partial_label(run: TranscriptRun) -> str:
    """How a run recorded as partial reads: ``partial, stopped`` (how it ended, when known)."""
    return f"partial, {run.ended}" if run.ended else "partial"


def header_parts(run: TranscriptRun) -> list[str]:
    """What a run header says, part by part."""
    parts = [format.when(run.started_at)]
    ran = f"ran {format.duration(run.active_seconds)}" if run.active_seconds else ""
    if run.state == "completed" and run.partial:
        parts.append(partial_label(run))
        parts.append(ran)
    elif run.state == "completed":
        took = format.duration(run.duration)
        parts.append(took)
        if ran and format.duration(run.active_seconds) != took:
            parts.append(ran)
    elif run.state == "running":
        parts.append("running…")
    elif run.state == "elsewhere":
        parts.extend(["running elsewhere", run.owner or "in another process"])
    else:
        parts.extend([run.state, ran])
    return [part for part in parts if part]
