"""How lovia words a turn's unusual ending, in plain text, wherever it is shown.

One definition for the terminal UI (:mod:`lovia.tui.format` re-exports it for its widgets) and
for ``lovia export``. Nothing here imports Textual or draws anything, so the export, run from the
shell, loads none of the UI.
"""

from __future__ import annotations

__all__ = ["finish_note"]

_FINISH_NOTES = {
    "length": "cut off: the model hit its token limit",
    "content_filter": "cut off by the endpoint's content filter",
    "cut_off": "cut off: the run stopped while this streamed",
}


def finish_note(reason: str | None) -> str:
    """What a transcript says under a turn that ended for an unusual ``reason``; "" for none."""
    if not reason:
        return ""
    return _FINISH_NOTES.get(reason, f"the model stopped early ({reason})")
