"""How times, durations and sizes read in the UI: absolute and unambiguous.

Relative ages ("3 min ago") are measured against ``now``, passed in; where a caller has
none, :data:`clock` is asked, so tests freeze it in one place.
"""

from __future__ import annotations

import datetime
import os
import time
from collections.abc import Callable
from pathlib import Path

from markdown_it import MarkdownIt
from rich.cells import cell_len, set_cell_size

# Durations and a turn's ending read the same in the export (lovia.export), which loads no UI.
from lovia._wording import count as count, duration as duration, finish_note as finish_note
from lovia.run_state import error_reason
from lovia.usage import Usage

clock: Callable[[], float] = time.time
"""What "now" is for relative ages when no ``now`` is passed in."""


def when(timestamp: float | None) -> str:
    """``2026-12-02 14:05:09`` in local time, to the second; ``—`` when unknown."""
    if timestamp is None:
        return "—"
    return datetime.datetime.fromtimestamp(timestamp).strftime("%Y-%m-%d %H:%M:%S")


def ago(timestamp: float, now: float | None = None) -> str:
    """How long before ``now`` ``timestamp`` was: ``just now``, ``42 s ago``, ``3 min ago``,
    ``5 h ago``, ``2 days ago``; a time after ``now`` reads ``in 3 min``. Whole units, rounded down."""
    delta = (clock() if now is None else now) - timestamp
    future = delta < 0
    seconds = int(abs(delta))
    if seconds < 5:
        return "just now"
    if seconds < 60:
        amount = f"{seconds} s"
    elif seconds < 3600:
        amount = f"{seconds // 60} min"
    elif seconds < 86400:
        amount = f"{seconds // 3600} h"
    else:
        amount = count(seconds // 86400, "day")
    return f"in {amount}" if future else f"{amount} ago"


def when_ago(timestamp: float | None, now: float | None = None, width: int | None = None) -> str:
    """``2026-12-02 14:05:09 · 3 min ago``, as lists show a time; ``—`` when unknown.

    Within ``width`` cells, if given: without the seconds (``2026-12-02 14:05 · 3 min ago``), then
    without the age, rather than cut mid-word (``4 min a…`` at 80 columns); cut only when the
    time alone does not fit."""
    if timestamp is None:
        return "—"
    at, age = when(timestamp), ago(timestamp, now)
    if width is None or len(at) + 3 + len(age) <= width:
        return f"{at} · {age}"
    to_the_minute = at[:-3]
    if len(to_the_minute) + 3 + len(age) <= width:
        return f"{to_the_minute} · {age}"
    return to_the_minute if len(to_the_minute) <= width else one_line(to_the_minute, max(width, 1))


def size(chars: int) -> str:
    """A character count as ``812 chars``, ``12.3k chars``, ``4.1M chars``."""
    if chars < 1000:
        return count(chars, "char")
    if chars < 1_000_000:
        return f"{chars / 1000:.1f}k chars"
    return f"{chars / 1_000_000:.1f}M chars"


def file_path(path: str | os.PathLike[str]) -> str:
    """``path`` as short as it is unambiguous: ``./notes.md`` under the current directory,
    ``~/notes.md`` under the home directory, else absolute. A notice is 38 columns wide at 80: a
    path spelled out from ``/`` there was folded mid-name."""
    absolute = Path(path).expanduser().absolute()
    for base, shown in ((Path.cwd(), "."), (Path.home(), "~")):
        if absolute.is_relative_to(base):
            return f"{shown}{os.sep}{absolute.relative_to(base)}" if absolute != base else shown
    return str(absolute)


UNTITLED = "(untitled)"


def session_title(title: str) -> str:
    """A session's title as a list shows it: :data:`UNTITLED` for one with none (no title given, no
    message of the user's to take it from)."""
    return title or UNTITLED


def one_line(text: str, width: int = 60) -> str:
    """``text`` on one line, cut to ``width`` terminal cells with an ellipsis.

    Cells, not characters: a Chinese or Japanese character and most emoji take two, so a title
    cut at ``width`` characters took up to twice the room and wrapped, the runs list's lines
    running into each other."""
    flat = " ".join(text.split())
    if flat.isascii():  # one cell a character: the common case, without measuring
        return flat if len(flat) <= width else flat[: width - 1] + "…"
    if cell_len(flat) <= width:
        return flat
    # A wide character that would straddle the cut is left out (set_cell_size pads its place)
    return set_cell_size(flat, width - 1).rstrip() + "…"


def padded(text: str, width: int, *, right: bool = False) -> str:
    """``text`` with spaces added to take ``width`` terminal cells (before it when ``right``), as
    ``str.ljust`` and ``str.rjust`` do by characters: a wide character takes two of them."""
    room = width - (len(text) if text.isascii() else cell_len(text))
    if room <= 0:
        return text
    return " " * room + text if right else text + " " * room


def stored_failure(error: str) -> str:
    """A failed run's error as its checkpoint holds it (``ModelError: openai:x answered 500 …``, the
    runner writes the exception's class first) as the UI showed it live: ``openai:x answered 500 …``
    (see :func:`~lovia.run_state.error_reason`)."""
    return sentence(error_reason(error))


def sentence(text: str) -> str:
    """An error's text as the UI shows it, starting in capitals: ``cannot reach …`` reads ``Cannot reach …``.

    Errors start in lower case, as Python's do. A first word holding more than letters
    (``openai:local refused``, ``gpt-4o``, a path, ``can't``) is left as written; a name of letters
    alone (``ollama is down``) is capitalized, as a sentence's first word is.
    """
    first = text.split(maxsplit=1)[0] if text.strip() else ""
    if first.isalpha() and first.islower():
        return text[0].upper() + text[1:]
    return text


def plain_text(markdown: str, text: Callable[[str], str] | None = None) -> str:
    """The words of ``markdown`` without its syntax: ``**bold** `x`, [link](u)`` reads ``bold x, link``.

    ``text``, given, is applied to what is text there, not code (a code span's, a code block's)."""
    words: list[str] = []
    for token in _MARKDOWN.parse(markdown):
        if token.type == "inline":
            for child in token.children or ():
                if child.type == "text":
                    words.append(text(child.content) if text else child.content)
                elif child.type == "code_inline":
                    words.append(child.content)
                elif child.type in ("softbreak", "hardbreak"):
                    words.append(" ")
            words.append(" ")
        elif token.type in ("fence", "code_block"):
            words.extend([token.content, " "])
    return "".join(words).strip()


_MARKDOWN = MarkdownIt("commonmark").enable("table").enable("strikethrough")


def usage(used: Usage) -> str:
    """``2 requests · 120 in · 45 out``; ``usage unknown`` for tokens no server reported.

    When only some requests reported tokens, the counts are theirs and say so:
    ``3 requests · 120 in · 45 out (1 request unreported)``.
    """
    requests = count(used.requests, "request")
    if used.unknown:
        return f"{requests} · usage unknown"
    tokens = f"{requests} · {used.input_tokens} in · {used.output_tokens} out"
    if not used.known:
        tokens += f" ({count(used.unreported_requests, 'request')} unreported)"
    return tokens
