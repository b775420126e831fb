"""How times, durations and sizes read in the UI: absolute and unambiguous."""

from __future__ import annotations

import datetime


def when(timestamp: float | None) -> str:
    """``2026-12-02 14:05`` in local time; ``—`` when unknown."""
    if timestamp is None:
        return "—"
    return datetime.datetime.fromtimestamp(timestamp).strftime("%Y-%m-%d %H:%M")


def duration(seconds: float | None) -> str:
    """``0.4s``, ``12s``, ``4m 05s``, ``2h 03m``; ``—`` when unknown."""
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
    return f"{hours}h {minutes:02d}m"


def size(chars: int) -> str:
    """A character count as ``812 chars``, ``12.3k chars``, ``4.1M chars``."""
    if chars < 1000:
        return f"{chars} chars"
    if chars < 1_000_000:
        return f"{chars / 1000:.1f}k chars"
    return f"{chars / 1_000_000:.1f}M chars"


def one_line(text: str, width: int = 60) -> str:
    """``text`` on one line, cut to ``width`` with an ellipsis."""
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


def count(number: int, singular: str, plural: str | None = None) -> str:
    """``1 run``, ``3 runs``."""
    return f"{number} {singular if number == 1 else (plural or singular + 's')}"
