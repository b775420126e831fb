"""A stored answer's markdown: Textual's, with code blocks that never hold up the screen to be coloured.

Colouring a code block is quick once pygments is ready for its language, and slow before: the
first block of a language in a process compiles that language's lexer (Python ~20 ms, SQL ~18 ms
on the 2-core machine the benchmarks run on), and a block that names no language is guessed at
by every lexer pygments has (~200 ms the first time, ~3 ms each time after). Textual's
``MarkdownFence`` does it while the block is built, on the event loop: opening a session of such
answers, and the app's first paint, waited for it. A :class:`StoredFence` in a language not
coloured before in this process is shown plain, then coloured by a worker thread.
"""

from __future__ import annotations

import asyncio

from markdown_it.token import Token
from textual.content import Content
from textual.widgets import Markdown
from textual.widgets.markdown import MarkdownBlock, MarkdownFence

from lovia.tui.colouring import coloured, palette_of

_COLOURED_LANGUAGES: set[str] = set()
"""Languages a :class:`StoredFence` has coloured in this process: their lexers are ready."""


class StoredFence(MarkdownFence):
    """Textual's code block, coloured off the event loop when colouring is slow.

    Promises: a block whose language was coloured before in this process is coloured at once, as
    ``MarkdownFence`` does; any other block (its language new, or none named) shows its code plain
    in the same cells, and coloured as ``MarkdownFence`` colours it once a worker thread has
    highlighted it (after the next refresh, so it does not slow the drawing that shows the block).
    A style update colours it again only when the palette changed (a theme change), not on hover.
    """

    def __init__(self, markdown: Markdown, token: Token, code: str) -> None:
        self.coloured_with: tuple[bool, bool] | None = None
        """The palette (ANSI colours, a dark theme) the code was coloured for; ``None`` while it is plain."""
        self._colouring_asked = False  # _colour_soon waits for a refresh to start the worker
        if token.info and token.info in _COLOURED_LANGUAGES:
            super().__init__(markdown, token, code)
            self.coloured_with = palette_of(self.app)
            return
        # Not MarkdownFence.__init__: it colours the code here, which is what must not happen.
        MarkdownBlock.__init__(self, markdown, token)
        self.code = code
        self.lexer = token.info
        self.auto_links = False  # no links in code, as MarkdownFence
        # As textual.highlight lays the code out before colouring it: the same lines, the same cells.
        self._highlighted_code = Content("\n".join(code.splitlines()).expandtabs(8))

    def on_mount(self) -> None:
        if self.coloured_with is None:
            self._colour_soon()

    def _colour_soon(self) -> None:
        """Colour the code in a worker thread, once the screen has been drawn again."""
        if not self._colouring_asked:
            self._colouring_asked = True
            self.call_after_refresh(self._start_colouring)

    def _start_colouring(self) -> None:
        if not self.is_attached:
            return
        if not self.screen.is_mounted:
            # The screen's first load is going on (the app starting): after its first paint, not
            # holding the GIL in the thread while it is made.
            self.call_after_refresh(self._start_colouring)
            return
        self._colouring_asked = False
        self.run_worker(self._colour(), group="highlight", exclusive=True)

    async def _colour(self) -> None:
        palette = palette_of(self.app)
        code = self.code
        code_coloured = await asyncio.to_thread(coloured, code, self.lexer, *palette)
        if self.lexer:
            _COLOURED_LANGUAGES.add(self.lexer)
        if not self.is_attached:
            return
        if (code, palette) != (self.code, palette_of(self.app)):
            self._colour_soon()  # the code or the theme changed meanwhile: coloured again for them
            return
        self.coloured_with = palette
        self._highlighted_code = code_coloured
        self.set_content(code_coloured)

    def notify_style_update(self) -> None:
        # MarkdownFence colours its whole code again on every style update (hover and focus
        # included); only a new palette (a theme change) needs it.
        MarkdownBlock.notify_style_update(self)
        palette = palette_of(self.app)
        if self.coloured_with is None or self.coloured_with == palette:
            return  # plain: the worker colours it for the palette in force when it runs
        if self.lexer in _COLOURED_LANGUAGES:
            self.coloured_with = palette
            ansi, dark = palette
            self._highlighted_code = self.highlight(self.code, self.lexer, ansi=ansi, dark=dark)
            self.set_content(self._highlighted_code)
        else:
            self.coloured_with = None  # shown in the old colours until the worker has the new ones
            self._colour_soon()


class StoredMarkdown(Markdown):
    """Textual's ``Markdown`` for a stored answer, its code blocks :class:`StoredFence`."""

    def get_block_class(self, block_name: str) -> type[MarkdownBlock]:
        if block_name in ("fence", "code_block"):
            return StoredFence
        return super().get_block_class(block_name)
