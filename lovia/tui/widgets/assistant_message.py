"""AssistantMessageView: the model's text as markdown, streamed as it arrives."""

from __future__ import annotations

import asyncio
import contextlib
import time

from textual.app import ComposeResult
from textual.widgets import Markdown, Static
from textual.widgets.markdown import MarkdownBlock, MarkdownFence
from textual.worker import Worker

from lovia.entries import AssistantMessage
from lovia.export import code_span_closer
from lovia.stores._search import SearchQuery, match_to_show
from lovia.tui.collector import COLLECTOR
from lovia.tui.format import finish_note
from lovia.tui.widgets.message_view import MessageView, code_blocks, holds_code
from lovia.tui.widgets.stored_markdown import StoredMarkdown
from lovia.tui.widgets.streaming_markdown import StreamingMarkdown

DRAWN_WITHIN = 2.0
"""Seconds an ended answer waits for its end to be drawn before it shows its blocks as stored."""


class AssistantMessageView(MessageView):
    """Markdown with highlighted code blocks; ``write`` appends at model speed.

    A stored message (``text`` given) is a :class:`StoredMarkdown` (Textual's, its code coloured off the
    event loop when that is slow). A live one starts empty and is a
    :class:`StreamingMarkdown`: what arrives is applied as it comes, paced by what updates cost, and an update costs
    what it changes (see :mod:`lovia.tui.widgets.streaming_markdown`), so a 2,000-line code block
    streams as fast as a short one and keys are answered while it does. Once finished (and its
    code blocks highlighted whole, in the background), it paints as the stored message does.

    A message whose turn ended for an unusual reason says so under it, e.g. "cut off: the
    model hit its token limit"; one cut off as its run stopped says whether the user stopped it
    (``stopped``) or the run ended otherwise (a crash, an error).
    """

    DEFAULT_CSS = """
    AssistantMessageView { margin: 1 0 0 0; }
    AssistantMessageView .who { color: $secondary; text-style: bold; }
    AssistantMessageView Markdown { margin: 0; padding: 0; background: transparent; }
    AssistantMessageView .finish { color: $warning; }
    AssistantMessageView MarkdownFence { overflow-x: auto; scrollbar-size-horizontal: 1; }
    """

    def __init__(self, text: str = "", agent: str | None = None, finish_reason: str | None = None, *,
                 stopped: bool = False) -> None:
        super().__init__()
        self.stopped = stopped
        self._fragments = [text] if text else []
        self.agent = agent or "assistant"
        self.finish_reason = finish_reason
        self.shown_length = len(text)
        """How many characters of ``text`` the widgets show; the rest is applied at the next frame."""
        self._unshown: list[str] = []
        self._arrived = asyncio.Event()
        self._finishing = asyncio.Event()  # set by finish: the feeder's pause ends at once
        self._feeder: Worker[None] | None = None

    @property
    def text(self) -> str:
        """The message's text so far (fragments are joined when asked, not per fragment)."""
        if len(self._fragments) > 1:
            self._fragments = ["".join(self._fragments)]
        return self._fragments[0] if self._fragments else ""

    def compose(self) -> ComposeResult:
        yield Static(self.agent, classes="who", markup=False)
        note = finish_note(self.finish_reason, stopped=self.stopped)
        # Cut off while it wrote inline code: shown closed (see code_span_closer), stored as written.
        shown = self.text + code_span_closer(self.text) if note else self.text
        yield StoredMarkdown(shown) if shown else StreamingMarkdown()
        if note:
            yield Static(note, classes="finish", markup=False)

    async def write(self, fragment: str) -> None:
        """Append streamed text; it shows at the next frame. Never waits for the screen."""
        if not fragment:
            return
        self._fragments.append(fragment)
        self._unshown.append(fragment)
        self._arrived.set()
        if self._feeder is None:
            self._feeder = self.run_worker(self._feed(), group="stream")

    async def _feed(self) -> None:
        """Apply what arrived until ``finish``: as it comes, and at most two thirds of the time.

        An update costs Textual a layout of the whole screen, which grows with the number of
        widgets. The pause after an update is half of what the update and the drawing it caused
        took (the drawing shows as the pause running late), so the model's tokens, keys and
        everything else always get a third of the time. (bench/tui_stream.py, a long mixed
        answer: with no pause its tokens got through at ~450/s; pausing as long as the drawing
        took, ~900/s, at twice the display lag; half of it keeps ~900/s.) There is no other
        pause: Textual draws on its own 60 Hz clock, and text applied at once is drawn at the
        next tick, where text held for a frame missed it (display lag p95 at 200 tokens/s, mixed
        markdown, four runs each, interleaved: 46-52 ms against 56-61 ms with a frame's pause).
        """
        markdown = self.query_one(StreamingMarkdown)
        late = 0.0  # how late the last pause ended: the time the loop spent drawing
        COLLECTOR.stream_started()
        try:
            while True:
                await self._arrived.wait()
                self._arrived.clear()
                started = time.monotonic()
                if self._unshown:
                    batch = "".join(self._unshown)
                    self._unshown.clear()
                    await markdown.append(batch)
                    self.shown_length += len(batch)
                    COLLECTOR.stream_grew()
                if self._finishing.is_set() and not self._unshown:
                    return
                spent = time.monotonic() - started
                pause = (spent + late) / 2
                with contextlib.suppress(TimeoutError):  # a stopped answer shows its end without waiting
                    await asyncio.wait_for(self._finishing.wait(), pause)
                late = min(time.monotonic() - started - spent - pause, 1.0)
        finally:
            COLLECTOR.stream_ended()

    async def finish(self, message: AssistantMessage | None = None, *, stopped: bool = False) -> None:
        """The message is complete: show what is pending, at its own height (the room kept for it to
        grow into given back); ``message`` as stored says how its turn ended (``stopped``: its run
        was stopped by the user).

        Once that is drawn, its folded blocks are shown again as Textual shows a stored message when
        the user is idle (:mod:`lovia.tui.idle`); its code blocks are then highlighted whole in
        background workers the call does not wait for.
        """
        if self._feeder is not None:
            self._finishing.set()
            self._arrived.set()
            await self._feeder.wait()
            self._feeder = None
        note = "" if message is None or self.finish_reason else finish_note(message.finish_reason, stopped=stopped)
        for markdown in self.query(StreamingMarkdown):
            if note and (closer := code_span_closer(self.text)):
                await markdown.append(closer)  # cut off while it wrote inline code: shown closed, as when stored
            await markdown.flush()
            markdown.stop_growing()
            if markdown.folded:  # shown as Textual shows a stored message: the mouse selects and follows links again
                await self._drawn()  # the unfold lays out the whole answer: its end shows first
                markdown.unfold_when_idle()
            for fence in markdown.fences:
                if not fence.exact:
                    fence.exact_soon()
        if message is not None and note:
            self.finish_reason, self.stopped = message.finish_reason, stopped
            await self.mount(Static(note, classes="finish", markup=False))

    async def _drawn(self) -> None:
        """Wait until the screen was drawn once more; at most :data:`DRAWN_WITHIN`, since a view removed
        meanwhile (the app closing, the transcript rebuilt) is never drawn again."""
        if not self.is_attached:
            return
        self.refresh()  # a refresh to wait for, even when the end changed nothing on screen
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self.wait_for_refresh(), DRAWN_WITHIN)

    def copy_text(self) -> str:
        return self.text

    def code_blocks(self) -> list[str]:
        return code_blocks(self.text)

    def holds_code(self) -> bool:
        return holds_code(self.text)

    def scroll_code(self, direction: int) -> bool | None:
        """See :meth:`MessageView.scroll_code`: code is not wrapped, so a long line goes on past the
        view (a scrollbar under its block says so), and is read by moving the block sideways. Blocks
        folded into drawn rows while the answer streams are left as drawn."""
        wide = [fence for fence in self.query(MarkdownFence) if fence.max_scroll_x > 0]
        moved = False
        for fence in wide:
            step = max(1, fence.scrollable_content_region.width // 2)
            target = min(max(0, round(fence.scroll_x) + direction * step), fence.max_scroll_x)
            if target != round(fence.scroll_x):
                fence.scroll_to(x=target, animate=False, immediate=True)
                moved = True
        return moved if wide else None

    def match_row(self, query: SearchQuery) -> int | None:
        """The block of the match shown first (:func:`~lovia.stores._search.match_to_show`), found by its
        source line; in a code block, the match's own line
        (code is not wrapped). ``None`` while the answer is folded into its drawn rows (streamed here,
        not yet shown as stored): those rows keep no blocks to look in."""
        match = match_to_show(self.text, query)
        markdown = next(iter(self.query(Markdown)), None)
        if not match or markdown is None or (isinstance(markdown, StreamingMarkdown) and markdown.folded):
            return None
        line = self.text.count("\n", 0, match[0])
        # Depth first, a block before what it holds: the last that holds the line is the innermost.
        holding = [block for block in markdown.query(MarkdownBlock)
                   if block.source_range[0] <= line < block.source_range[1]]
        if not holding:
            return None
        block = holding[-1]
        top = block.content_region.y
        if isinstance(block, MarkdownFence) and block.children:
            # The code line; a fenced block's source starts with its opening line (an indented one's does not).
            opening = 1 if block.name == "fence" else 0
            top = block.children[0].content_region.y + max(0, line - block.source_range[0] - opening)
        return top - self.region.y
