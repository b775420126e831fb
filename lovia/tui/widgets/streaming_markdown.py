"""Markdown that grows at model speed: an append costs what it changes, not the size of the answer.

Textual's ``Markdown.append`` re-parses the document's last top-level block and rebuilds it.
For a long fenced code block that is the whole block, on every append: markdown-it parses it,
``MarkdownFence`` highlights all of it, and its one ``Label`` renders every line again. A
2,000-line block then streams at a few lines a second and the app answers keys late.

Here a code block is one :class:`~lovia.tui.widgets.code_lines.CodeLines`, highlighted in chunks
of :data:`CHUNK_LINES` lines (:class:`StreamedFence`): a growing block re-highlights its last
chunk and renders the lines that changed. While the answer ends inside an open top-level fence,
:class:`StreamingMarkdown` does not parse at all: new lines go straight to the fence, until a
closing fence line (or the end of the answer) hands the text to Textual's own ``append`` once.
Streaming highlights each chunk on its own, so a construct that spans two chunks (a long
docstring) may be coloured differently for a moment; once a block is complete,
:meth:`StreamedFence.make_exact` highlights it whole, off the event loop, and shows the lines that
differ: the finished block paints exactly as Textual's ``MarkdownFence`` paints the same code.

Lists and quotes grow in place (:class:`GrowsInPlace`): Textual rebuilds them whole on every
append, which made an update inside a list cost a mount of it.

While it streams, the answer keeps blank rows below its end to grow into, as a streamed code
block does (:data:`~lovia.tui.widgets.code_lines.ROOM_LINES`, the room counting the code block's
own). A row more in a paragraph then changes the answer's height once per that many rows, and
with it the transcript's: each change scrolled the transcript, which Textual answers by
rendering every row of it and of the containers behind the answer again. At the end the answer
takes its own height.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Sequence
from dataclasses import dataclass

from markdown_it import MarkdownIt
from markdown_it.token import Token
from textual.await_complete import AwaitComplete
from textual.containers import Horizontal, Vertical
from textual.content import Content
from textual.geometry import Size
from textual.widget import Widget
from textual.widgets import Markdown

# Private module: the list and quote blocks are not exported (guarded in tests/tui/test_textual_private_names.py).
from textual.widgets._markdown import (
    MarkdownBlockQuote,
    MarkdownBullet,
    MarkdownBulletList,
    MarkdownListItem,
    MarkdownOrderedList,
    MarkdownParagraph,
    MarkdownTable,
)
from textual.widgets.markdown import MarkdownBlock, MarkdownFence

from lovia._async import shielded
from lovia.tui.colouring import coloured, palette_of
from lovia.tui.idle import IDLE_WORK
from lovia.tui.widgets.code_lines import CodeLines, kept_height, room_for, same_paint
from lovia.tui.widgets.settled_lines import FoldsSettled

CHUNK_LINES = 32
"""Lines of a code block highlighted together while it streams (its last line is highlighted alone)."""

_LIST_ITEM = re.compile(r" {0,3}([-+*]|\d{1,9}[.)])(?=[ \t]|$)( *)")
"""A list item's first line: its marker, then the spaces before its text."""
_OPENING_FENCE = re.compile(r"(`{3,}|~{3,})[^\n]*\n?")  # at column 0: the only openers streamed without parsing


def code_chunks(code: str) -> list[tuple[int, str]]:
    """``code`` cut into chunks, each with the index of its first line: runs of :data:`CHUNK_LINES`
    lines, then the last line alone (the one a streamed block is growing), so that an update
    inside the last line highlights that line only. Empty code is one empty chunk."""
    lines = code.splitlines() or [""]  # as textual.highlight splits, so a chunk's lines are the highlighted lines
    last = len(lines) - 1
    return [*((start, "\n".join(lines[start:min(start + CHUNK_LINES, last)])) for start in range(0, last, CHUNK_LINES)),
            (last, lines[last])]


def _highlighted_lines(code: str, language: str, ansi: bool, dark: bool) -> list[Content]:
    """``code`` highlighted whole, as ``MarkdownFence`` does, cut into lines (run in a thread)."""
    return coloured(code, language, ansi, dark).split("\n", allow_blank=True)


class StreamedFence(MarkdownFence):
    """A fenced code block drawn by one :class:`CodeLines`, highlighted :data:`CHUNK_LINES` lines at a time.

    Promises: :meth:`show` highlights again only the chunks whose lines changed, and the lines
    render again only where they changed; after :meth:`make_exact`, the block paints exactly as
    ``MarkdownFence`` paints ``code``.

    Its lines are not folded (:mod:`lovia.tui.widgets.settled_lines`) while it grows: it is one
    widget, cheap to lay out, and capturing what it paints is not (bench/tui_stream.py, the
    2,000-line block, when it was labels: folding them measured a lag p95 of 710 and 1,108 ms
    against 278 and 289 ms without, the first part streamed as fast as it goes arriving as one
    batch of ~1,400 lines to capture).
    """

    # MarkdownFence pads its label 1 2 (1 0 with ANSI colours): the lines take the label's place.
    DEFAULT_CSS = """
    StreamedFence {
        & > CodeLines { padding: 1 2; }
        &:ansi > CodeLines { padding: 1 0; }
    }
    """

    def __init__(self, markdown: Markdown, token: Token, code: str) -> None:
        # Not MarkdownFence.__init__: it highlights the whole code, which is what must not happen per append.
        MarkdownBlock.__init__(self, markdown, token)
        self.code = code
        self.lexer = token.info
        self.auto_links = False  # no links in code, as MarkdownFence
        self.exact = False
        """Whether the lines hold ``code`` highlighted whole (else chunk by chunk, as it streamed)."""
        self._chunks: list[tuple[int, str]] = []
        self._highlighted_with: tuple[bool, bool] | None = None
        self._exact_asked = False  # exact_soon waits for a refresh to start make_exact
        self._exact_for: tuple[str, tuple[bool, bool]] | None = None  # the code and palette make_exact is at
        self._lines = CodeLines()

    @property
    def chunks(self) -> int:
        """How many chunks the code was highlighted in, as it streamed."""
        return len(self._chunks)

    @property
    def lines(self) -> CodeLines:
        return self._lines

    def compose(self):
        self._chunks = code_chunks(self.code)
        self._lines.show([line for _, chunk in self._chunks for line in self._highlight_chunk(chunk)])
        yield self._lines

    def _highlight_chunk(self, chunk: str) -> list[Content]:
        """The chunk's lines, highlighted on their own: as many as it holds."""
        # An unlabelled block would be guessed at from each chunk alone, costly and unstable while it
        # streams: it streams plain, and make_exact guesses once from the whole block, as MarkdownFence does.
        self._highlighted_with = ansi, dark = palette_of(self.app)
        lines = self.highlight(chunk, self.lexer or "text", ansi=ansi, dark=dark).split("\n", allow_blank=True)
        # Highlighting drops a chunk's trailing empty line (a blank line before the line being
        # written): the lines after it would be shown a line too high.
        held = chunk.count("\n") + 1
        return [*lines[:held], *[Content("")] * (held - len(lines))]

    def show(self, code: str, *, growing: bool = False) -> None:
        """Show ``code``: only the chunks whose lines changed are highlighted again, the lines that changed rendered.

        ``growing``: more code is coming (see :meth:`CodeLines.show`).
        """
        self.code = code
        self.exact = False
        chunks = code_chunks(code)
        first_changed = next((index for index, (old, new) in enumerate(zip(self._chunks, chunks, strict=False))
                              if old != new), min(len(self._chunks), len(chunks)))
        # From the first chunk that changed; when none did, after the last line (lines dropped, or the
        # room kept for growing changes).
        start = chunks[first_changed][0] if first_changed < len(chunks) else chunks[-1][0] + 1
        lines = [line for _, chunk in chunks[first_changed:] for line in self._highlight_chunk(chunk)]
        self._lines.show(lines, start=start, growing=growing)
        self._chunks = chunks

    async def make_exact(self) -> None:
        """Highlight the whole block off the event loop and show the lines that differ.

        A no-op if the code changed meanwhile (the change calls for another pass) or the block left.
        """
        code = self.code
        self._highlighted_with = ansi, dark = palette_of(self.app)
        self._exact_for = pass_for = (code, (ansi, dark))
        try:
            lines = await asyncio.to_thread(_highlighted_lines, code, self.lexer, ansi, dark)
        finally:
            if self._exact_for == pass_for:
                self._exact_for = None
        if code != self.code or not self.is_attached:
            return
        self._lines.show(lines)
        self.exact = True

    @property
    def exact_pending(self) -> bool:
        """Whether the block is to be coloured whole again: asked for, or under way."""
        return not self.exact or self._exact_asked or self._exact_for is not None

    def exact_soon(self) -> None:
        """Run :meth:`make_exact` in a worker once the screen has been drawn again.

        The whole-block highlight holds the GIL in its thread for tens of milliseconds: started at
        once, it slowed the drawing of what called for it (a stopped answer's end and its notice).
        """
        under_way = self._exact_for is not None and self._exact_for == (self.code, palette_of(self.app))
        if self.is_attached and not self._exact_asked and not under_way:
            self._exact_asked = True  # asked twice before the refresh (the fence closed, the answer ended): once
            self.call_after_refresh(self._start_exact)

    def _start_exact(self) -> None:
        self._exact_asked = False
        if self._exact_for is not None and self._exact_for == (self.code, palette_of(self.app)):
            return  # under way since it was asked: started again, the pass would be thrown away
        if self.is_attached:
            self.run_worker(self.make_exact(), group="highlight", exclusive=True)

    async def _update_from_block(self, block: MarkdownBlock) -> None:
        # Markdown.append rebuilt the document's last block from its source: take its code, keep the lines.
        if isinstance(block, StreamedFence):
            if block.lexer != self.lexer:
                self.lexer = block.lexer
                self._chunks = []  # highlighted for another language: every chunk again
            self.show(block.code)
        else:
            await MarkdownBlock._update_from_block(self, block)

    def notify_style_update(self) -> None:
        # MarkdownFence highlights its whole code again on every style update (hover included); the
        # lines only need it when the palette changed, and get it in make_exact, off the event loop.
        MarkdownBlock.notify_style_update(self)
        if self._chunks and palette_of(self.app) != self._highlighted_with:
            self.exact = False
            self.exact_soon()


async def _grow(shown: MarkdownBlock, rebuilt: MarkdownBlock) -> None:
    """Make ``shown`` (a block inside a list or quote) show ``rebuilt``, its source parsed again.

    A paragraph or a code block is updated in place, and only when it changed (the items above the
    growing one do not change); a nested list or quote grows as its parent does; any other block
    (a heading, a table, a rule), or a block of another kind, is replaced by the one rebuilt.
    """
    if type(shown) is type(rebuilt):
        if isinstance(shown, StreamedFence):
            assert isinstance(rebuilt, StreamedFence)
            if (shown.code, shown.lexer) != (rebuilt.code, rebuilt.lexer):
                await shown._update_from_block(rebuilt)
            return
        if isinstance(shown, MarkdownParagraph):
            if same_paint(shown._content, rebuilt._content):
                shown._copy_context(rebuilt)
            else:
                await shown._update_from_block(rebuilt)
            return
        if isinstance(shown, GrowsInPlace):
            await shown._update_from_block(rebuilt)
            return
    parent = shown.parent
    assert isinstance(parent, Widget)
    await parent.mount(rebuilt, before=shown)
    await shielded(shown.remove())


async def _grow_blocks(container: Widget, blocks: list[MarkdownBlock]) -> None:
    """Make ``container``'s blocks (mounted) those of ``blocks`` (parsed, not mounted), changing what differs."""
    shown = list(container.children)
    if len(shown) > len(blocks):
        await shielded(container.remove_children(shown[len(blocks):]))
    for old, new in zip(shown, blocks, strict=False):
        await _grow(old, new)  # type: ignore[arg-type]  # a block holds blocks only
    if len(blocks) > len(shown):
        await container.mount_all(blocks[len(shown):])


class GrowsInPlace(MarkdownBlock):
    """A block that an append grows in place, where Textual builds it again.

    Textual's ``Markdown.append`` re-parses the document's last block and, unless it is a
    paragraph, a table or a fence, removes it and mounts the new one: every item, bullet and
    paragraph of a list, on every update while an item streams (bench/tui_stream.py, mixed
    markdown: an update inside a three-item list took 7-28 ms against 1 ms in a paragraph, and
    the display lag's worst tokens were those). A block that grows in place keeps the widgets it
    shows and changes what differs (see :func:`_grow`); a heading, table or rule inside it is still
    built again at each update, as Textual does.

    Promise: it paints as the block Textual builds from the same source at each update.
    """

    async def _update_from_block(self, block: MarkdownBlock) -> None:
        if type(block) is type(self):
            self._copy_context(block)
            await self.grow(block)
        else:
            await MarkdownBlock._update_from_block(self, block)

    async def grow(self, rebuilt: MarkdownBlock) -> None:
        """Show ``rebuilt``'s blocks (parsed, not mounted): by default, the blocks it holds (a quote's)."""
        await _grow_blocks(self, rebuilt._blocks)


class GrowingList(GrowsInPlace):
    """A list that grows in place: the rows shown keep their widgets, new items are mounted."""

    async def grow(self, rebuilt: MarkdownBlock) -> None:
        """Show ``rebuilt``'s items: the rows as the list's ``compose`` makes them, bullet then blocks."""
        items = [block for block in rebuilt._blocks if isinstance(block, MarkdownListItem)]
        rows = list(self.children)
        if len(rows) > len(items):
            await shielded(self.remove_children(rows[len(items):]))
        added: list[Horizontal] = []
        for index, (item, symbol) in enumerate(zip(items, self.symbols(items), strict=True)):
            if index >= len(rows):
                bullet = MarkdownBullet()
                bullet.symbol = symbol
                added.append(Horizontal(bullet, Vertical(*item._blocks)))
                continue
            shown_bullet, blocks = rows[index].children
            assert isinstance(shown_bullet, MarkdownBullet)
            if shown_bullet.symbol != symbol:
                resized = len(shown_bullet.symbol) != len(symbol)
                shown_bullet.symbol = symbol
                if resized:  # the bullet's width is its symbol's (``width: auto``); the reactive repaints only
                    shown_bullet.refresh(layout=True)
            await _grow_blocks(blocks, item._blocks)
        if added:
            await self.mount_all(added)

    def symbols(self, items: list[MarkdownListItem]) -> list[str]:
        """The items' bullet symbols, as this kind of list's ``compose`` draws them."""
        return [item.bullet for item in items]


# Textual's class first: a widget takes the default CSS of its first base's line only (the
# rows' ``height: auto`` is MarkdownBulletList's), and the growing classes add none.
class GrowingBulletList(MarkdownBulletList, GrowingList):
    """A bullet list that grows in place (see :class:`GrowsInPlace`)."""


class GrowingOrderedList(MarkdownOrderedList, GrowingList):
    """A numbered list that grows in place (see :class:`GrowsInPlace`)."""

    def symbols(self, items: list[MarkdownListItem]) -> list[str]:
        # As MarkdownOrderedList.compose: numbered from the first item's number, right-aligned together.
        try:
            start = int(items[0].bullet) if items else 1
        except ValueError:
            start = 1
        numbers = [f"{number}. " for number in range(start, start + len(items))]
        width = max((len(number) for number in numbers), default=0)
        return [number.rjust(width + 1) for number in numbers]


class GrowingBlockQuote(MarkdownBlockQuote, GrowsInPlace):
    """A quote that grows in place (see :class:`GrowsInPlace`)."""


class StreamedTable(MarkdownTable):
    """A table whose last row an append may take back: built again then, where Textual's update raised.

    A line after a table's rows is a row until it is seen to start another block ("| 1 | 2 |\n1"
    then ")": a numbered item), and the table rebuilt from the source has a row fewer. Textual's
    update adds the rows past those shown, and with none it raised (``UnboundLocalError`` out of
    ``MarkdownTableContent._update_rows``) out of the answer's update.
    """

    async def _update_from_block(self, block: MarkdownBlock) -> None:
        if isinstance(block, MarkdownTable) and len(block._get_headers_and_rows()[1]) < len(self._rows):
            await MarkdownBlock._update_from_block(self, block)
        else:
            await super()._update_from_block(block)


@dataclass
class _OpenFence:
    """The answer ends inside this top-level fence opened by ``marker`` at column 0; ``body`` follows that line."""

    fence: StreamedFence
    marker: str
    body: str

    def closes(self, text: str) -> bool:
        """Whether ``text``, appended to the body, holds a closing fence line (even one not ended yet)."""
        start = self.body.rfind("\n") + 1  # the body's last line may be completed by ``text``
        lines = (self.body[start:] + text).split("\n")
        return any(_closes(line, self.marker) for line in lines)


def _closes(line: str, marker: str) -> bool:
    """CommonMark: up to three spaces, at least as many of the opening character, then only blanks."""
    stripped = line.rstrip(" \t\r")
    bare = stripped.lstrip(" ")
    return len(stripped) - len(bare) <= 3 and len(bare) >= len(marker) and bare == marker[0] * len(bare)


class StreamingMarkdown(Markdown, FoldsSettled):
    """Markdown appended to as an answer streams; code blocks are :class:`StreamedFence`.

    Textual's ``append`` changes only the document's last block: the blocks before it, once laid
    out, are folded (see :mod:`lovia.tui.widgets.settled_lines`), so an update lays out the last
    block alone however long the answer is.

    Promise: after :meth:`flush`, the blocks are those Textual's ``append`` builds for the same
    text, and after :meth:`unfold_all` they are all shown as Textual shows them.
    """

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self._held = ""  # appended while the answer ended inside an open fence: not parsed yet
        self._open: _OpenFence | None = None
        self.growing = True
        """Whether more is coming: the answer keeps room below its end (see the module's docstring)."""
        self._kept_height = 0
        self.init_folding()

    def get_content_height(self, container: Size, viewport: Size, width: int) -> int:
        needed = super().get_content_height(container, viewport, width)
        if not self.growing:
            return needed
        last = self.children[-1] if self.children else None
        own = last.lines.room if isinstance(last, StreamedFence) else 0  # a growing code block keeps room itself
        screen_rows = self.screen.size.height if self.is_attached else 0  # none: no room
        room = max(room_for(needed, screen_rows) - own, 0)
        self._kept_height = kept_height(needed, self._kept_height, room)
        return self._kept_height

    def stop_growing(self) -> None:
        """The answer is complete: it takes its own height, without the room kept for growing."""
        if self.growing:
            self.growing = False
            self.refresh(layout=True)

    def compose(self):
        yield self.settled

    @property
    def blocks(self) -> list[MarkdownBlock]:
        return [child for child in self.children if isinstance(child, MarkdownBlock)]

    def unfold_all(self) -> None:
        """Show every block as Textual lays them out and paints them (nothing to do once it left the screen)."""
        if self.is_attached:
            self.unfold()

    def unfold_when_idle(self) -> None:
        """The answer ended: show every block as Textual does once the user is idle, or at once
        when the mouse comes over the folded lines (see :mod:`lovia.tui.idle`)."""
        self.unfold_on_pointer = True
        IDLE_WORK.call(self.unfold_all)

    def get_block_class(self, block_name: str) -> type[MarkdownBlock]:
        return _STREAMED_BLOCKS.get(block_name) or super().get_block_class(block_name)

    @property
    def fences(self) -> Sequence[StreamedFence]:
        return list(self.query(StreamedFence))

    def append(self, markdown: str) -> AwaitComplete:
        """Append ``markdown``; inside an open top-level fence, only the fence's last label changes."""
        return AwaitComplete(self._append(markdown))

    async def _append(self, markdown: str) -> None:
        blocks = self.blocks
        opened = self._open
        if opened is not None and not opened.closes(markdown):
            self.fold_settled(self._settled(blocks[len(self.folded):-1]))  # only the last block, the fence, changes
            opened.body += markdown
            self._held += markdown
            # What markdown-it and MarkdownFence would make of it; more is coming.
            opened.fence.show(opened.body.rstrip(), growing=True)
            return
        markdown = self._held + markdown
        joined = self._list_joined_by(markdown)
        # Only the last block changes (Textual rebuilds it), and a list before it that it joins.
        self.fold_settled(self._settled(blocks[len(self.folded):-2 if joined else -1]))
        await self._parse(markdown, joined)

    @staticmethod
    def _settled(blocks: list[MarkdownBlock]) -> list[MarkdownBlock]:
        """The leading ``blocks`` (complete, in order) that will not change again: those to fold.

        A complete code block still changes once: its colours, when it is highlighted whole. Folded
        before that, its captured chunk-by-chunk colours were shown until the fold's end (seconds,
        at the user's next idle moment). Blocks are settled up to the first that holds a code block
        not yet highlighted whole. Every such highlight is asked for at once (a block in a list, or
        parsed whole in one update, gets it here): asked one at a time, folding fell behind a fast
        stream by one highlight per code block, and each update laid out what piled up.
        """
        settled = len(blocks)
        for index, block in enumerate(blocks):
            fences = [block] if isinstance(block, StreamedFence) else block.query(StreamedFence)
            for fence in fences:
                if fence.exact_pending:
                    fence.exact_soon()
                    settled = min(settled, index)
        return blocks[:settled]

    async def flush(self) -> None:
        """Parse what was held back: the blocks become exactly those of Textual's ``append``."""
        if self._held:
            await self._parse(self._held, self._list_joined_by(self._held))

    async def _parse(self, markdown: str, joined: MarkdownBlock | None) -> None:
        """Hand ``markdown`` to Textual's ``append``; from the list ``joined`` when the last block may join it."""
        closing, self._open, self._held = self._open, None, ""
        if markdown:
            if joined is not None:
                # Textual's append parses from the last block on: parsed from the list instead, the
                # list grows in place by what joins it, as markdown-it parses the whole answer.
                await shielded(self.blocks[-1].remove())
                self._last_parsed_line = joined.source_range[0]
            last = self.blocks[-1] if self.blocks else None
            # Shielded: Textual's append replaces blocks (a heading, a table) by awaiting their
            # removal, and a cancelled feeder would cancel the removed blocks' own message loops.
            await shielded(super().append(markdown))
            await self._follow_html_blocks(last)
        self._open = self._open_fence()
        if closing is not None and (self._open is None or self._open.fence is not closing.fence):
            closing.fence.exact_soon()  # complete now: coloured as a whole, in the background

    async def _follow_html_blocks(self, last: MarkdownBlock | None) -> None:
        """After Textual's ``append``: blocks as it shows an HTML block, which is none at all.

        Its ``append`` parses from the last block's line and updates the last block with the first
        block parsed: when that line turned out to start an HTML block ("<d", a paragraph, became
        "<div>"), nothing replaces the paragraph, and it stayed; when the HTML block is the last
        block parsed, the next append parsed from it and updated the block before it with what
        follows (a list shown as the paragraph after the HTML). The paragraph goes, and parsing goes
        on from the last block shown.
        """
        # (A paragraph's text as shown, a cheap first check, begins as its source: literal "<d".)
        if (last is not None and last.is_attached and isinstance(last, MarkdownParagraph)
                and last._content.plain.startswith("<")
                and _first_block_type(self._source_from(last.source_range[0])) == "html_block"):
            await shielded(last.remove())
        blocks = self.blocks
        if blocks and self._last_parsed_line > blocks[-1].source_range[0]:
            self._last_parsed_line = blocks[-1].source_range[0]

    def _source_from(self, number: int) -> str:
        """The source from line ``number`` on."""
        return "".join(self.source.splitlines(keepends=True)[number:])

    def _list_joined_by(self, markdown: str) -> MarkdownBlock | None:
        """The list before the last block, when that block, with ``markdown`` appended, may belong to it.

        Textual's ``append`` never parses again before the last top-level block, but a list's next
        item or indented paragraph after a blank line is parsed alone first, as a block of its own:
        "1. a\n\n2. b" streamed became two lists with a blank row between, where the whole text is
        one (a loose list, as models often write them). The last block may join the list when its
        first line is indented as far as the list's items' text, or starts an item with the list's
        own marker (or may still, being a number alone), or, right below the list with no blank line
        between, while its first line is still coming (it may yet continue the last item's
        paragraph). Only then: a block parsed from the list that does not join it is mounted again,
        at every append while it is the last.
        """
        blocks = self.blocks
        if len(blocks) < 2 or not isinstance(blocks[-2], MarkdownBulletList | MarkdownOrderedList):
            return None
        if blocks[-2] in self.folded[-1:]:  # shown as captured lines: it has settled
            return None
        text = self.source + markdown
        lines = text.splitlines()
        listed, start = blocks[-2].source_range[0], blocks[-1].source_range[0]
        item = _LIST_ITEM.match(lines[listed]) if listed < len(lines) else None
        if item is None or start >= len(lines):
            return None
        if (start == len(lines) - 1 and not text.endswith(("\n", "\r")) and blocks[-2].source_range[1] == start
                and lines[start - 1].strip()):
            # Right below the list, its only line still coming: it may yet be a lazy continuation
            # of the last item's paragraph ("- item\n*" is a bullet, "- item\n*Note*" is not).
            return blocks[-2]
        line = lines[start].expandtabs(4)
        spaces = len(item.group(2))
        text_column = item.end(1) + (spaces if 1 <= spaces <= 4 else 1)  # CommonMark: more is indented code
        if len(line) - len(line.lstrip(" ")) >= text_column:
            return blocks[-2]  # indented as the items' text: inside the last item
        marker, other = item.group(1), _LIST_ITEM.match(line)
        if other is not None:  # an item: of this list when its marker is of the same kind
            joins = other.group(1) == marker if marker in "-+*" else other.group(1)[-1] == marker[-1]
        else:  # a number alone may still become one
            joins = marker[-1] in ".)" and line.isdigit() and len(line) <= 9
        return blocks[-2] if joins else None

    def _open_fence(self) -> _OpenFence | None:
        """The fence the document ends inside, if it is a top-level one opened at column 0."""
        last = self.children[-1] if self.children else None
        if not isinstance(last, StreamedFence):
            return None
        start = last.source_range[0]
        lines = self.source.splitlines(keepends=True)[start:]
        opening = _OPENING_FENCE.fullmatch(lines[0]) if lines else None
        if opening is None or not lines[0].endswith("\n"):  # an opening line still coming may change its info
            return None
        marker = opening.group(1)
        body = "".join(lines[1:])
        if any(_closes(line, marker) for line in body.split("\n")):
            return None
        return _OpenFence(last, marker, body)


def _first_block_type(markdown: str) -> str | None:
    """The type of the first top-level block markdown-it parses ``markdown`` into, as Textual's ``Markdown`` parses."""
    return next((token.type for token in MarkdownIt("gfm-like").parse(markdown) if token.level == 0 and token.map),
                None)


_STREAMED_BLOCKS: dict[str, type[MarkdownBlock]] = {
    "fence": StreamedFence,
    "code_block": StreamedFence,
    "bullet_list_open": GrowingBulletList,
    "ordered_list_open": GrowingOrderedList,
    "blockquote_open": GrowingBlockQuote,
    "table_open": StreamedTable,
}
"""The blocks a streaming answer builds instead of Textual's: each updates in place as the answer grows."""
