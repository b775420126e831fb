"""How lovia words durations, a turn's unusual ending and a config value's kind, in plain text, wherever shown.

One definition for the terminal UI (:mod:`lovia.tui.format` re-exports :func:`duration` and
:func:`finish_note` for its widgets) and for ``lovia export``. Nothing here imports Textual or
draws anything, so the export, run from the shell, loads none of the UI.
"""

from __future__ import annotations

__all__ = ["NOT_TIMED", "count", "duration", "finish_note", "step_duration", "toml_kind"]

NOT_TIMED = "time not recorded"
"""What a run stored without the spec's ``timing`` (appended by other code) says in place of its times."""


def count(number: int, singular: str, plural: str | None = None) -> str:
    """``1 run``, ``3 runs``."""
    return f"{number} {singular if number == 1 else (plural or singular + 's')}"


def duration(seconds: float | None) -> str:
    """``0.4s``, ``12s``, ``4m 05s``, ``2h 03m``, ``5d 01h``, ``12d``; ``—`` when unknown.

    Never wider than 7 cells below 1,000 days: a timeline's columns and the lists keep that room (a
    run resumed five days after it started read ``+121h 05m``, cut in the timeline's start column)."""
    if seconds is None:
        return "—"
    if seconds < 10:
        return f"{seconds:.1f}s"
    if seconds < 60:
        return f"{seconds:.0f}s"
    minutes, secs = divmod(int(seconds), 60)
    if minutes < 60:
        return f"{minutes}m {secs:02d}s"
    hours, minutes = divmod(minutes, 60)
    if hours < 24:
        return f"{hours}h {minutes:02d}m"
    days, hours = divmod(hours, 24)
    return f"{days}d {hours:02d}h" if days < 10 else f"{days}d"


def step_duration(seconds: float | None) -> str:
    """How long a step took: ``40ms`` under a second (tool calls and first tokens often are), else as
    durations read (``1.3s``, ``4m 05s``); ``…`` when it never ended."""
    if seconds is None:
        return "…"
    return f"{seconds * 1000:.0f}ms" if seconds < 1 else duration(seconds)


_FINISH_NOTES = {
    "length": "cut off: the model hit its token limit",
    "content_filter": "cut off by the endpoint's content filter",
    "cut_off": "cut off: the run ended while this streamed",
}


STOPPED_NOTE = "cut off: you stopped the run while this streamed"
"""Under an answer cut off because the user stopped its run (escape, quit), not because it crashed or failed."""

PARTIAL_ENDS_STOPPED = frozenset({"stopped", "interrupted"})
"""A finalized partial's ``meta["ended"]`` when its run was stopped by the user (see :func:`finish_note`)."""


def finish_note(reason: str | None, *, stopped: bool = False) -> str:
    """What a transcript says under a turn that ended for an unusual ``reason``; "" for none.

    ``stopped``: the turn's run was stopped by the user, which the reason alone does not tell (a
    cut-off answer's is the same whether the user stopped the run or it crashed)."""
    if not reason:
        return ""
    if stopped and reason == "cut_off":
        return STOPPED_NOTE
    return _FINISH_NOTES.get(reason, f"the model stopped early ({reason})")


def toml_kind(value: object) -> str:
    """What a TOML value is, in the words of the file (not Python's): for an error naming a wrong kind."""
    if isinstance(value, bool):
        return "true or false"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "text"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "a table"
    return "a date or time"
