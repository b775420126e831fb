"""Colouring code off the event loop, one block at a time.

A block is coloured whole in a worker thread (a stored answer's block in a language new to the
process, a streamed block once complete): pygments is pure Python and holds the GIL while it
works. Several threads colouring at once (a session of many code blocks) would each take a turn
at the GIL as often as the event loop does, and keys and drawing would wait behind all of them;
one at a time, the loop gets every other turn.
"""

from __future__ import annotations

import threading

from textual.app import App
from textual.content import Content
from textual.widgets.markdown import MarkdownFence

_ONE_AT_A_TIME = threading.Lock()


def coloured(code: str, language: str, ansi: bool, dark: bool) -> Content:
    """``code`` coloured as ``MarkdownFence`` colours it; call it in a worker thread, never on the loop."""
    with _ONE_AT_A_TIME:
        return MarkdownFence.highlight(code, language, ansi=ansi, dark=dark)


def palette_of(app: App) -> tuple[bool, bool]:
    """What colouring depends on besides the code: ANSI colours, a dark theme."""
    return app.native_ansi_color, app.current_theme.dark
