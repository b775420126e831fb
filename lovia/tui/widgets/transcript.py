"""Transcript: the conversation, read and mounted a page at a time, with a message cursor.

A session opens with its newest page of stored entries (see :class:`TranscriptPages`);
older pages are read and mounted as the view or the cursor nears the top, newer ones as it
nears the bottom, and ``home`` and ``end`` jump to the first and last page. At most
``MOUNTED_PAGES`` pages are shown: the ones farthest from the view go, so scrolling through
a 100,000-entry session holds a few hundred widgets, not the session. The session's in-flight
runs, and what a live run adds, follow the last page; they are hidden while the view is on
an earlier one. Streaming appends to the last message; nothing above it re-renders.

The session's first and last ``KEPT_PAGES`` pages' worth of entries stay mounted, hidden,
while the view is elsewhere (the first ones are read in the background once a session opened):
``home`` and ``end`` then show what Textual has composed already instead of mounting new pages,
which is most of what a jump costs (see README "## Performance"). That is ``2 * KEPT_PAGES``
pages more than the window, and what a jump hid until the screen has drawn the jump.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, replace
from typing import ClassVar

from textual import events, on
from textual.binding import Binding, BindingType
from textual.message import Message
from textual.reactive import reactive
from textual.scrollbar import ScrollMessage
from textual.widget import Widget
from textual.worker import Worker

from lovia._async import shielded
from lovia._wording import PARTIAL_ENDS_STOPPED
from lovia.entries import AssistantMessage, Entry, Handoff, ToolCall, ToolResult, UserMessage
from lovia.errors import LoviaError
from lovia.stores._search import SearchQuery
from lovia.timing import given_results
from lovia.transcript import call_pairs
from lovia.tui.backend import (
    CUT_OFF,
    RunState,
    Transcript as TranscriptData,
    TranscriptPage,
    TranscriptPages,
    TranscriptRun,
)
from lovia.tui.keymap import keymap_of
from lovia.tui.widgets.assistant_message import AssistantMessageView
from lovia.tui.widgets.message_view import Expandable, MessageView
from lovia.tui.widgets.notice import NoticeView
from lovia.tui.widgets.run_header import RunHeader
from lovia.tui.widgets.steady_scroll import SteadyScroll
from lovia.tui.widgets.tool_call_view import (
    PENDING_BY_RUN_STATE,
    RUNNING,
    RUNNING_AGAIN,
    STOPPED,
    WILL_RUN_AGAIN,
    ToolCallView,
)
from lovia.tui.widgets.user_message import UserMessageView

TYPED_AHEAD_SECONDS = 0.25
"""After ``e`` or ``f`` on a message it cannot edit or fork from: how long what is typed is still taken
as meant for the composer (and dropped)."""
HOLDS_TYPED_AHEAD = ("edit", "fork", "trim")
"""The actions whose key holds what is typed right after it (see :meth:`Transcript.on_key`): an edit
and a fork hand the keys to the composer, trim's question drops them."""
PAGE = 24
"""The most stored entries read and mounted at a time (see :attr:`Transcript.page_size`)."""
MIN_PAGE = 8
"""The fewest: what a page holds before the transcript has a size."""
MOUNTED_PAGES = 6
"""Pages kept mounted; farther ones are unmounted (the window a reader scrolls through without waiting)."""
KEPT_PAGES = 2
"""Pages' worth of the session's first and of its last entries kept mounted, hidden, while the view is elsewhere.

``home`` shows the first screenful with the next one below it, so nothing is read and mounted
the moment it is drawn (the view would be at the edge of one page); ``end`` likewise.
"""


@dataclass(frozen=True)
class _Item:
    """One thing to show: a run header, or an entry of ``of_run`` (a tool call carries its result).

    ``position`` is a stored entry's place in the session's transcript (``None`` for a header
    or an in-flight run's entry).
    """

    run: TranscriptRun | None = None
    entry: Entry | None = None
    result: ToolResult | None = None
    of_run: TranscriptRun | None = None
    position: int | None = None


@dataclass
class _Page:
    """A mounted page: stored entries ``start`` to ``end`` and the widgets that show them.

    It is either in the window (shown) or kept hidden as the session's first or last page.
    """

    start: int
    end: int
    widgets: list[Widget]


MATCH_KEYS = Binding.Group("Match")
"""n and N, drawn as one footer entry."""


class Transcript(SteadyScroll, can_focus=True):
    """The live transcript pane."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("up,k", "cursor(-1)", "Previous", show=False, id="transcript.previous"),
        Binding("down,j", "cursor(1)", "Next", show=False, id="transcript.next"),
        # Code is not wrapped: a line wider than the view is read by moving its block sideways.
        Binding("right,l", "scroll_code(1)", "Code right", show=False, id="transcript.code_right",
                tooltip="Move the selected message's code blocks wider than the view half a view right"),
        Binding("left,h", "scroll_code(-1)", "Code left", show=False, id="transcript.code_left",
                tooltip="Move them back left"),
        Binding("home", "cursor_home", "First", show=False, id="transcript.first"),
        Binding("end", "to_end", "Last", show=False, id="transcript.last"),
        # First of the keys the footer shows, and one entry there ("n/N Match"): offered only after
        # a search, when stepping through its matches is what this pane is being used for.
        Binding("n", "match(1)", "Next match", id="transcript.next_match", group=MATCH_KEYS,
                tooltip="The next match of the search: further down this session, then the next session"),
        Binding("N", "match(-1)", "Previous match", id="transcript.previous_match", group=MATCH_KEYS,
                tooltip="The previous match of the search: further up this session, then the previous session"),
        # Offered only while the last edit-and-resend or regenerate can be undone (until the next
        # message): ahead of the keys that always apply, so a wider key moved by [keys] (^y for c)
        # leaves one of those to f1 Help, not the undo, whose time is short.
        Binding("u", "undo_rewind", "Undo rewind", id="transcript.undo_rewind",
                tooltip="Bring the transcript back as it was before the last edit-and-resend or regenerate"),
        Binding("enter", "expand", "Expand", id="transcript.expand"),
        Binding("c", "copy", "Copy", id="transcript.copy"),
        Binding("y", "copy_code", "Copy code", id="transcript.copy_code"),
        Binding("e", "edit", "Edit & resend", id="transcript.edit"),
        Binding("f", "fork", "Fork", id="transcript.fork",
                tooltip="Copy the session up to and including the message under the cursor into a new session"),
        Binding("w", "timeline", "Timeline", id="transcript.timeline",
                tooltip="Where the time went: the run under the cursor as a waterfall of its steps"),
        # Last of the cursor's keys: the footer keeps keys in this order while they fit, and at 80
        # columns trimming, an occasional clean-up, is the one left to f1 Help.
        Binding("t", "trim", "Trim outputs", id="transcript.trim"),
    ]

    DEFAULT_CSS = """
    /* The focus bar's column is always there, blank without focus: focus changes a colour only,
       so no message is laid out again (seconds in a long session) and the text never shifts. */
    Transcript { height: 1fr; padding: 0 1 0 0; border-left: blank; scrollbar-size-vertical: 1; }
    Transcript:focus { border-left: tall $accent; }
    """

    selected: reactive[int] = reactive(-1, init=False)

    new_below: reactive[bool] = reactive(False, init=False)
    """Whether what a run of this window added lies below the view, the reader having moved away from
    the end (the view is kept where the reader took it): told as :class:`NewBelow`, until the end shows."""

    class NewBelow(Message):
        """:attr:`Transcript.new_below` changed to ``new_below``."""

        def __init__(self, new_below: bool) -> None:
            super().__init__()
            self.new_below = new_below

    class TypingForTheComposer(Message):
        """A key typed while a search hit opened was text (see :attr:`Transcript.typing_goes_to_composer`):
        the composer is to take focus. What was typed comes as :class:`TypedAhead` once it has."""

    class EditRequested(Message):
        """The user wants to edit ``message`` and resend it; ``position`` is where it is stored, if known."""

        def __init__(self, message: UserMessage, position: int | None = None) -> None:
            super().__init__()
            self.message = message
            self.position = position

    class TypedAhead(Message):
        """``text`` was typed right after the key of ``action`` (one of :data:`HOLDS_TYPED_AHEAD`), and
        held until focus left (see :meth:`Transcript.on_key`)."""

        def __init__(self, text: str, action: str) -> None:
            super().__init__()
            self.text = text
            self.action = action

    class ForkRequested(Message):
        """The user wants a new session copied from this one up to and including a stored entry.

        ``position`` is where it is stored; for a message of a run this window showed live
        (stored since, but not read back), ``None``, and ``run_id`` with ``matches`` find it.
        """

        def __init__(self, position: int | None, run_id: str | None = None,
                     matches: Callable[[Entry], bool] | None = None) -> None:
            super().__init__()
            self.position = position
            self.run_id = run_id
            self.matches = matches

    class TrimRequested(Message):
        """The user asked to trim old tool outputs of this session."""

    class UndoRewindRequested(Message):
        """The user asked to undo the last rewind (edit-and-resend or regenerate) of this session."""

    class CopyRequested(Message):
        """Copy ``text``; the notice says "Copied ``what`` (its size) how.", then ``then``."""

        def __init__(self, text: str, what: str, then: str = "") -> None:
            super().__init__()
            self.text = text
            self.what = what
            self.then = then

    class TimelineRequested(Message):
        """The user asked for the timeline of ``run`` (as its header shows it)."""

        def __init__(self, run: TranscriptRun) -> None:
            super().__init__()
            self.run = run

    class MatchRequested(Message):
        """``n`` or ``N``: the user wants the next (``step`` 1) or previous (-1) match of the search shown."""

        def __init__(self, step: int) -> None:
            super().__init__()
            self.step = step

    class RunSelected(Message):
        """The cursor moved onto a message of another run (``run`` as its header shows it)."""

        def __init__(self, run: TranscriptRun) -> None:
            super().__init__()
            self.run = run

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self._pages: TranscriptPages | None = None  # the open session's stored transcript
        self._total = 0  # stored entries when it opened; what a live run adds is shown after them
        self._window: list[_Page] = []  # the pages shown, in order, contiguous
        # The session's first and last pages while the window does not hold them: mounted, hidden,
        # above and below the window's widgets (children stay in the order of the entries).
        self._first: _Page | None = None
        self._last: _Page | None = None
        self._dropping: list[Widget] = []  # hidden already; removed once the screen is drawn
        self._showing_rest = False  # a jump showed a kept page's screenful; the rest shows after the paint
        self._tail_shown = True  # the in-flight runs and live widgets after the last page
        self._paging = asyncio.Lock()
        self._shown = 0  # counts show() calls: a page read for what was shown before is dropped
        self._told_unreadable: str | None = None  # the session whose unreadable page was told: told once
        self._edge_load: Worker[None] | None = None  # the page being read because the view neared an edge
        self._first_load: Worker[None] | None = None  # the first page, read after a session opened
        self._item_of: dict[Widget, _Item] = {}  # what each mounted stored widget shows (the rest: the live part)
        # Where the runs lie that a page read held only part of, by id (no entries: it stays small).
        self._parts: dict[str, tuple[int, int]] = {}
        self._seen_runs: set[str] = set()
        self._selected_view: MessageView | None = None
        self._live_message: AssistantMessageView | None = None
        self._live_header: RunHeader | None = None
        self._tool_views: dict[str, ToolCallView] = {}
        self._selected_run: str | None = None  # the run of the selected message, as last reported
        self._code_copied: tuple[MessageView, int] | None = None  # the block y copied last, of which view
        self._scroll_to_selection = True  # whether selecting a message brings it into view
        # Rows page keys asked for past the pages mounted (negative: up), gone once the next page
        # is read (see page_cut_short); any other move forgets them.
        self._owed_rows = 0.0
        self._placed_for: MessageView | None = None  # the message the view was last brought to as it was selected
        self.can_edit = True  # the session store can rewind
        # While an edit, a fork or a trim asked for by key gets under way: the characters typed
        # meanwhile, and the action they are held for (see on_key).
        self._typed_ahead: list[str] | None = None
        self._typed_ahead_for = ""
        self.search_active = False  # a search's matches can be stepped through (n, N)
        # While a search hit opens, and until the keys typed meanwhile are in: a letter other than n
        # and N is text for the composer, not this widget's key (see on_key). Opening from the search
        # screen leaves focus here, for n and N; "enter great news" in one burst started an edit
        # (e) with the rest of the words in it, and "the result" trimmed (t).
        self.typing_goes_to_composer = False
        self.can_trim = True  # the session store can trim tool outputs
        self.can_fork = True  # the session store can fork
        self.can_undo = True  # the session store keeps what a rewind drops
        self.answering = False  # a run of this window executes (the chat panel keeps it current)
        self.undo_available = False  # the session's last rewind can be undone (the chat panel keeps it current)

    # -- showing a session -----------------------------------------------------------------

    async def show(self, transcript: TranscriptData | None) -> None:
        """Show ``transcript`` (``None``: an empty new session): its newest page, then its in-flight runs."""
        self._shown += 1
        self._owed_rows = 0.0
        for worker in (self._edge_load, self._first_load):
            if worker is not None:
                worker.cancel()
        self._edge_load = self._first_load = None
        async with self._paging:  # a page being mounted for what was shown before is done first
            # Nothing drawn until the new views are mounted: in between, frames showed the conversation
            # blank (the old views gone) or the new views laid out before their text (an undo flickered
            # blank, drawn, blank, drawn for a second).
            with self.app.batch_update():
                await self._show(transcript)
        self.refresh_bindings()  # trim applies to a session with tool calls (see applies)
        self.call_after_refresh(self._check_edges)
        self.call_after_refresh(self._read_first_page)
        self.call_after_refresh(self._cursor_back)

    async def _show(self, transcript: TranscriptData | None) -> None:
        await shielded(self.remove_children())
        self._tool_views.clear()
        self._item_of.clear()
        self._parts.clear()
        self._seen_runs.clear()
        self._window = []
        self._first = self._last = None
        self._dropping = []
        self._showing_rest = False
        self._tail_shown = True
        self.new_below = False
        self._live_message = self._live_header = None
        self._selected_run = None
        self._set_selected(None)
        self._pages = transcript.pages if transcript else None
        self._total = transcript.last_page.total if transcript else 0
        widgets: list[Widget] = []
        if transcript is not None:
            page = transcript.last_page
            self._window = [_Page(page.start, page.end, self._page_widgets(page))]
            widgets = [*self._window[0].widgets, *(self._widget(item) for item in _items(transcript.in_flight))]
            self._seen_runs.update(run.run_id for run in transcript.in_flight)
        await self.mount_all(widgets)
        self.anchor()  # stays at the bottom while markdown lays out and new content streams in

    @property
    def run_ids(self) -> set[str]:
        """The runs shown, by id: those of every page read since it opened, in-flight ones and those started here."""
        return self._seen_runs | {header.run_id for header in self._headers()}

    def _headers(self) -> list[RunHeader]:
        """The run headers mounted, in order. They are children of the transcript: a query would
        walk every widget of every message (the footer asks for ``run_ids`` at each key)."""
        return [child for child in self.children if isinstance(child, RunHeader)]

    @property
    def older_hidden(self) -> int:
        """How many stored entries lie above the mounted ones."""
        return self._window[0].start if self._window else 0

    @property
    def newer_hidden(self) -> int:
        """How many stored entries lie below the mounted ones (the live part is hidden while any do)."""
        return self._total - self._window[-1].end if self._window else 0

    @property
    def at_end(self) -> bool:
        """Whether the last page is mounted (and with it the in-flight runs and live part)."""
        return self.newer_hidden == 0

    @property
    def page_size(self) -> int:
        """Stored entries read and mounted at a time: about a screenful (a message takes three lines or more).

        Mounting is what a page costs (markdown is parsed and laid out), so a jump mounts no more
        than fills the screen; the pages around it are read after it is drawn.
        """
        # The height as last laid out: ``size`` finds the transcript on the screen, which lays the
        # whole screen out again when children were just shown or hidden (~10 ms a jump).
        return max(MIN_PAGE, min(PAGE, (self.outer_size.height - self.styles.gutter.height) // 3))

    @property
    def mounted_entries(self) -> int:
        """How many stored entries the window shows (at most ``MOUNTED_PAGES`` pages): the first and
        last pages kept hidden, and what a jump hid until the screen is drawn, are not counted."""
        return sum(page.end - page.start for page in self._window)

    def _page_widgets(self, page: TranscriptPage) -> list[Widget]:
        widgets = []
        for part in page.runs:
            self._seen_runs.add(part.run.run_id)
            if not part.whole:
                self._parts[part.run.run_id] = (part.start, part.count)
        for item in _page_items(page):
            widget = self._widget(item)
            self._item_of[widget] = item
            widgets.append(widget)
        return widgets

    async def _read(self, start: int, end: int) -> TranscriptPage | None:
        """Stored entries ``start`` to ``end`` (never past what was stored when the session opened).

        ``None`` when there are none, or when another session (or this one again) was shown
        while they were read.
        """
        end = min(end, self._total)
        if self._pages is None or start >= end:
            return None
        shown = self._shown
        page = await self._read_or_tell(self._pages, start, end - start)
        return page if page is not None and page.end > page.start and shown == self._shown else None

    async def _read_or_tell(self, pages: TranscriptPages, start: int, count: int) -> TranscriptPage | None:
        """``pages.read``; ``None`` when the store cannot give the page (a damaged run), said once for
        the session (the pages next to it are asked for again as the reader scrolls, and the
        session is shown again as it changes)."""
        try:
            return await pages.read(start, count)
        except LoviaError as exc:
            if self._told_unreadable != pages.session_id:
                self._told_unreadable = pages.session_id
                self.notify(f"Could not read that part of the session: {exc}", severity="error")
            return None

    def _tail(self) -> list[Widget]:
        """The live part: what follows the stored pages (in-flight runs, what a live run adds)."""
        return [child for child in self.children if child not in self._item_of]

    def _show_tail(self, shown: bool) -> None:
        if shown != self._tail_shown:
            self._tail_shown = shown
            for widget in self._tail():
                widget.display = shown

    async def load_older(self) -> bool:
        """Mount the page before the first mounted one; False if none is left (or one is being read)."""
        if self._paging.locked() or not self.older_hidden:
            return False
        async with self._paging:
            first, kept = self._window[0], self._first
            if kept is not None and kept.end == first.start:  # the first page is next: show it
                following = self._after_page_change()
                self._first = None
                await self._join(kept, to_first=True)
                following()
                return True
            page = await self._read(max(kept.end if kept else 0, first.start - self.page_size), first.start)
            if page is None:
                return False
            following = self._after_page_change()
            widgets = self._page_widgets(page)
            if widgets:
                await self.mount_all(widgets, before=next((w for p in self._window for w in p.widgets), None)
                                     or self._after_window())
            self._window.insert(0, _Page(page.start, page.end, widgets))
            await self._unmount_far(keep_first=True)
            self._reselect()
            following()
            return True

    async def load_newer(self) -> bool:
        """Mount the page after the last mounted one; False if none is left (or one is being read)."""
        if self._paging.locked() or self.at_end:
            return False
        async with self._paging:
            last, kept = self._window[-1], self._last
            if kept is not None and kept.start == last.end:  # the last page is next: show it
                self._last = None
                following = self._after_page_change()
                await self._join(kept, to_first=False)
                following()
                return True
            page = await self._read(last.end, min(last.end + self.page_size, kept.start if kept else self._total))
            if page is None:
                return False
            widgets = self._page_widgets(page)
            if widgets:
                await self.mount_all(widgets, before=self._after_window())
            self._window.append(_Page(page.start, page.end, widgets))
            following = self._after_page_change()
            await self._unmount_far(keep_first=False)
            if self.at_end:
                self._show_tail(True)
            self._reselect()
            following()
            return True

    def _after_page_change(self):
        """Note where the first widget shown now is; the returned call, once a page was mounted or
        joined, keeps it there when the layout changed, and brings the keys in the footer up to
        date (trim applies while a page not shown may hold a tool output)."""
        anchored_at_end = self.follows_end
        top = self._heading_to()
        keep = next((w for w in self.children if w.display and w.virtual_region.bottom > top), None)
        if anchored_at_end or keep is None:
            return self.refresh_bindings  # the anchor keeps the end in view
        y_before = keep.virtual_region.y

        def keep_place() -> None:
            # From where a page key's slide is heading, not where it has got to: scrolling stops
            # the slide, and a key that read a page mid-slide went 10 rows of 18.
            if keep.is_attached:
                self.scroll_to(y=self._heading_to() + keep.virtual_region.y - y_before, animate=False,
                               immediate=True)
                # The cursor keys placed was brought into sight on the new layout meanwhile (see
                # _selected_in_sight): moved again with the first widget, it went out of sight.
                if (selected := self.selected_view) is not None and selected is self._placed_for:
                    self._selected_in_sight(selected)

        def paged() -> None:
            self.refresh_bindings()
            self.call_after_refresh(keep_place)

        self.release_anchor()
        self.scroll_target_y = top  # which release_anchor takes back to where a slide has got to
        return paged

    def _heading_to(self) -> float:
        """Where the view shows from once its slide (if one goes) ends."""
        return self.scroll_target_y if self.app.animator.is_being_animated(self, "scroll_y") else self.scroll_y

    def _after_window(self) -> Widget | None:
        """The first widget after the window's: the hidden last page's, or the live part's."""
        if self._last is not None and self._last.widgets:
            return self._last.widgets[0]
        return next(iter(self._tail()), None)

    def _show_page(self, page: _Page, shown: bool) -> None:
        for widget in page.widgets:
            widget.display = shown

    async def _unmount_far(self, *, keep_first: bool) -> None:
        """Take the pages past ``MOUNTED_PAGES`` out of the window: the last after reading older, the first after newer.

        The session's first and last pages are kept, hidden; the others are unmounted.
        """
        while len(self._window) > MOUNTED_PAGES:
            page = self._window.pop(-1 if keep_first else 0)
            if keep_first:
                self._show_tail(False)
                self.anchor(False)  # the end is not here any more: nothing to follow
            if not self._keep(page):
                self._forget(page.widgets)
                await shielded(self.remove_children(page.widgets))

    def _keep(self, page: _Page) -> bool:
        """Hide ``page``, out of the window now; keep it if it is (or adjoins) what is kept of the session's ends.

        Up to ``KEPT_PAGES`` pages' worth of entries at each end: a page adjoining what is kept
        already joins it (pages leave the window one at a time, the nearest to an end first).
        """
        most = KEPT_PAGES * self.page_size
        first, last = self._first, self._last
        if first is None and page.start == 0:
            self._first = page
        elif first is not None and page.start == first.end and page.end <= most:
            self._first = _Page(0, page.end, first.widgets + page.widgets)
        elif last is None and page.end >= self._total:
            self._last = page
        elif last is not None and page.end == last.start and self._total - page.start <= most:
            self._last = _Page(page.start, last.end, page.widgets + last.widgets)
        else:
            return False
        self._show_page(page, False)
        return True

    def _forget(self, widgets: list[Widget]) -> None:
        for widget in widgets:
            self._item_of.pop(widget, None)
            if isinstance(widget, ToolCallView) and self._tool_views.get(widget.call.call_id) is widget:
                del self._tool_views[widget.call.call_id]

    async def _jump(self, to_first: bool) -> None:
        """Show the first page (or the last, with what follows it) in place of the window.

        A kept page is shown as it is; otherwise it is read and mounted. What the window showed
        is hidden at once and unmounted once the screen is drawn (the session's first and last
        pages are kept, hidden).
        """
        self._owed_rows = 0.0
        async with self._paging:
            kept = self._first if to_first else self._last
            page, page_size = None, self.page_size
            if kept is None:
                if to_first:
                    start, end = 0, min(self.page_size * KEPT_PAGES, self._last.start if self._last else self._total)
                else:
                    start, end = max(self._first.end if self._first else 0, self._total - self.page_size), self._total
                shown = self._shown
                page = await self._read(start, end)
                if page is None or shown != self._shown:
                    return  # unreadable (said) or another session shown meanwhile: what is shown stays
            if kept is not None:
                if to_first:
                    self._first = None
                else:
                    self._last = None
                if kept.end == self._window[0].start if to_first else kept.start == self._window[-1].end:
                    await self._join(kept, to_first)  # next to what is shown: nothing else changes
                    self.refresh_bindings()  # the keys that apply to what is shown (trim, timeline)
                    return
            dropped = self._hide_window()
            if kept is not None:
                self._show_screenful(kept, at_start=to_first, page_size=page_size)
                self._window = [kept]
            elif page is not None:
                # At the very top for the first page; for the last, after the hidden ones, before the live part.
                before = next(iter(self.children), None) if to_first else next(iter(self._tail()), None)
                widgets = self._page_widgets(page)
                if widgets:
                    await self.mount_all(widgets, before=before)
                self._window = [_Page(page.start, page.end, widgets)]
            self._show_tail(self.at_end)
            if not self.at_end:
                self.anchor(False)
            self._drop_later(dropped)
            self.refresh_bindings()

    def _show_screenful(self, kept: _Page, *, at_start: bool, page_size: int) -> None:
        """Show a page's first (or last) ``page_size`` entries now and the rest once the screen is drawn.

        Shown widgets are measured again when the screen is laid out (markdown wrapped to the
        width), which is most of what showing costs: the first frame measures only what it shows.
        """
        positions = [self._item_of[w].position if w in self._item_of else None for w in kept.widgets]
        for i in range(len(positions) - 2, -1, -1):  # a run header goes with its run's first entry, after it
            if positions[i] is None:
                positions[i] = positions[i + 1]
        edge = kept.start + page_size if at_start else kept.end - page_size
        rest = []
        for widget, position in zip(kept.widgets, positions, strict=True):
            if position is None or (position < edge) == at_start:
                widget.display = True
            else:
                rest.append(widget)
        if rest:
            self._showing_rest = True
            self.call_after_refresh(self._show_rest, kept, rest)

    def _show_rest(self, kept: _Page, rest: list[Widget]) -> None:
        self._showing_rest = False
        if any(page is kept for page in self._window):  # not hidden again meanwhile
            for widget in rest:
                widget.display = True
            self._reselect()  # shown above the cursor (after ``end``), they move its index
        self.call_after_refresh(self._check_edges)

    async def _join(self, kept: _Page, to_first: bool) -> None:
        """Show ``kept`` (the hidden first or last page) at its end of the window, which it adjoins."""
        self._show_page(kept, True)
        if to_first:
            self._window.insert(0, kept)
        else:
            self._window.append(kept)
        await self._unmount_far(keep_first=to_first)
        self._show_tail(self.at_end)
        self._reselect()

    async def _drop_hidden(self) -> None:
        """Unmount what a jump hid (after the screen showed the jump: the user does not wait for it).

        Paging waits for it, and the widgets are forgotten only once removed: until then they are
        stored items, not the live part, and no page is mounted before one of them.
        """
        async with self._paging:
            dropping, self._dropping = self._dropping, []
            dropping = [widget for widget in dropping if widget.parent is self]
            if dropping:
                await shielded(self.remove_children(dropping))
            self._forget(dropping)

    async def _to_end(self) -> None:
        """Make the last page (and the live part after it) shown, if the view is on an earlier one."""
        if not self.at_end:
            await self._jump(to_first=False)

    def _read_first_page(self) -> None:
        """Read and mount the session's first page, hidden, so ``home`` shows it at once."""
        if self._pages is not None and self._first is None and self.older_hidden and self.is_attached:
            self._first_load = self.run_worker(self._mount_first_page(self._shown), group="transcript-first")

    async def _mount_first_page(self, shown: int) -> None:
        async with self._paging:
            if shown != self._shown or self._first is not None or not self.older_hidden:
                return
            page = await self._read(0, min(self.page_size * KEPT_PAGES, self.older_hidden))
            if page is None or shown != self._shown:
                return
            widgets = self._page_widgets(page)
            for widget in widgets:
                widget.display = False
            if widgets:
                await self.mount_all(widgets, before=self.children[0] if self.children else None)
            self._first = _Page(page.start, page.end, widgets)

    def _check_edges(self) -> None:
        """Read the next page before the reader gets to the edge of what is mounted (within a screenful)."""
        if (self._pages is None or self._paging.locked() or self._edge_load is not None or self._showing_rest
                or not self.is_attached):
            return
        margin = max(self.size.height, 1)
        if self.older_hidden and self.scroll_y < margin:
            self._edge_load = self.run_worker(self._load_at_edge(self.load_older), group="transcript-pages")
        elif not self.at_end and self.scroll_y > self.max_scroll_y - margin:
            self._edge_load = self.run_worker(self._load_at_edge(self.load_newer), group="transcript-pages")

    async def _load_at_edge(self, load: Callable[[], Awaitable[bool]]) -> None:
        try:
            loaded = await load()
        finally:
            self._edge_load = None
        if loaded:
            self.call_after_refresh(self._go_owed_rows)  # once the page's place is kept
            self.call_after_refresh(self._check_edges)  # a short page may not have filled the screen

    def page_cut_short(self, rows: float) -> None:
        """Page keys went past the pages mounted while the next was still being read (a key held
        down, keys pressed together): the rows they could not go are owed, and the view goes them
        once it is read. Dropped, 40 pagedowns at once went 3 pages in a long session."""
        more = not self.at_end if rows > 0 else self.older_hidden > 0 if rows < 0 else False
        if not more:
            self._owed_rows = 0.0
        elif self._owed_rows * rows > 0:  # the same way as those owed already
            self._owed_rows += rows
        else:
            self._owed_rows = rows

    @on(events.MouseScrollUp)
    @on(events.MouseScrollDown)
    @on(ScrollMessage)  # the scrollbar's: clicked, dragged
    def _scrolled_by_mouse(self) -> None:
        # The reader's own move: the rows owed to page keys would undo it, and so would bringing
        # the cursor back into sight.
        self._owed_rows = 0.0
        self._placed_for = None

    def _go_owed_rows(self) -> None:
        owed, self._owed_rows = self._owed_rows, 0.0
        if owed:  # at once: the keys came faster than a slide
            asked = self.scroll_y + owed
            self.scroll_to(y=asked, animate=False, immediate=True)
            self.paged(1 if owed > 0 else -1, self.scroll_y)
            self.page_cut_short(asked - self.scroll_y)

    def watch_scroll_y(self, old: float, new: float) -> None:
        super().watch_scroll_y(old, new)
        if self.at_end and not self.is_anchored and new >= self.max_scroll_y > 0:
            # Back at the very end: follow new content again. Not from here: this may be a step of
            # the scroll animation, which anchoring stops (Textual then fails to remove it: KeyError).
            self.call_later(self._anchor_at_end)
        if round(old) != round(new):
            self.call_after_refresh(self._check_edges)  # after the view is drawn where it moved
        self._forget_new_below_once_seen()

    def _end_in_sight(self) -> bool:
        # A conversation shorter than the view is all in sight: the anchor then puts it at the view's
        # foot with a negative offset, and a view grown to hold it all (a resize) scrolls no more.
        return self.at_end and (self.max_scroll_y <= 0 or self.scroll_y >= self.max_scroll_y)

    def _forget_new_below_once_seen(self) -> None:
        if self.new_below and self._end_in_sight():
            self.new_below = False

    def _live_part_grew(self) -> None:
        """A live run added to the transcript: below a reader who moved away from the end, that is news."""
        if not self.new_below and not self.follows_end:
            self.call_after_refresh(self._check_new_below)  # once laid out: is the end still in sight?

    def _check_new_below(self) -> None:
        if not self.follows_end and not self._end_in_sight():
            self.new_below = True

    def watch_new_below(self, new_below: bool) -> None:
        self.post_message(self.NewBelow(new_below))

    @property
    def follows_end(self) -> bool:
        """Whether the anchor keeps the end in view: set, and not released by a move away from the end.

        Not whether the view is at the end this instant: a layout still to come (the message box
        taking focus, a row taller) leaves it a row short until the anchor brings it back, and a
        page read then took that for a reader scrolled up. Textual keeps the release in
        ``_anchor_released`` (guarded in tests/tui/test_textual_private_names.py).
        """
        return self.is_anchored and not self._anchor_released

    def release_anchor(self) -> None:
        """Let the view be scrolled away from the end; not while the conversation is shorter than
        the view. Textual's anchor shows it at the view's foot by a negative offset, which only the
        anchor keeps up to date: released (a cursor key, a page key), the offset stayed as it was,
        and what a message unfolded then went below the view, where no key reached it."""
        if self.scroll_y >= 0:
            super().release_anchor()

    def _anchor_at_end(self) -> None:
        if self.at_end and not self.is_anchored and self.scroll_y >= self.max_scroll_y > 0:
            self.anchor()

    def on_resize(self) -> None:
        self.call_after_refresh(self._check_edges)
        self.call_after_refresh(self._forget_new_below_once_seen)  # grown to show the end, it scrolls no more
        if (view := self.selected_view) is not None:
            # A smaller terminal keeps the view's top: a cursor near its foot went out of sight.
            self.call_after_refresh(self._selected_in_sight, view)

    def _widget(self, item: _Item) -> Widget:
        if item.run is not None:
            return RunHeader(item.run)
        entry = item.entry
        if isinstance(entry, UserMessage):
            return UserMessageView(entry)
        if isinstance(entry, AssistantMessage):
            return AssistantMessageView(entry.text, entry.agent, entry.finish_reason, stopped=_stopped(item.of_run))
        if isinstance(entry, ToolCall):
            state = item.of_run.state if item.of_run is not None else "interrupted"
            given = item.of_run is not None and entry.call_id in given_results(item.of_run.steps)
            view = ToolCallView(entry, item.result, dangling_state=PENDING_BY_RUN_STATE.get(state, WILL_RUN_AGAIN),
                                given=given)
            self._tool_views[entry.call_id] = view
            return view
        if isinstance(entry, Handoff):
            return NoticeView(f"⇢ handed from {entry.from_agent} to {entry.to_agent}", "handoff")
        if isinstance(entry, ToolResult):  # a result whose call is not shown
            return NoticeView(f"⚙ result of {entry.call_id}: {entry.output[:200]}")
        return NoticeView(f"({type(entry).__name__})")

    # -- live runs -------------------------------------------------------------------------

    async def begin_run(self, run_id: str, stored: TranscriptRun | None, *, resumed: bool) -> None:
        """A run started, or resumed; ``stored`` is it as the stores have it now (``None``: unknown).

        A resumed run's part of the transcript is rebuilt from its checkpoint: what a stop
        left on screen but not in the checkpoint (the partial text of the stopped turn, the
        notice under it) goes, so nothing shows twice when the resumed turn streams again.
        """
        self._live_message = None
        await self._to_end()  # a run of this window starts: its answer is followed at the end
        run = replace(stored or TranscriptRun(run_id, (), "running", time.time(), None), state="running")
        header = self._header_of(run_id) if resumed else None
        if header is None:
            self._live_header = RunHeader(run)
            await self._append(self._live_header)
            self.refresh_bindings()  # the first run of a session: the timeline applies now
            return
        self._live_header = header
        self._bring_to_end(header)
        if stored is None:
            header.set_state("running")  # its figures as shown; nothing to rebuild from
            return
        header.show_run(run)
        await self._rebuild_after(header, run)

    def _bring_to_end(self, header: RunHeader) -> None:
        """Move the run under ``header`` (its header and what is shown under it) below every other
        run shown: a resumed run goes on at the foot of the transcript, where the live part grows.
        Left where it was, with another stopped run shown after it, its answer was drawn under that
        run's question."""
        block = [header, *self._shown_under(header)]
        if block[-1] is self.children[-1]:
            return  # the last run shown already
        for widget in block:
            self.move_child(widget, after=self.children[-1])
        self._reselect()  # the cursor stays on its message, which may have moved

    def _header_of(self, run_id: str) -> RunHeader | None:
        return next((h for h in self._headers() if h.run_id == run_id and h.display), None)

    async def _rebuild_after(self, header: RunHeader, run: TranscriptRun) -> None:
        """Replace what is shown under ``header`` (up to the next run's) by ``run``'s entries."""
        stale = self._shown_under(header)
        self.selected = -1  # the views it counts are replaced
        for widget in stale:
            if isinstance(widget, ToolCallView):
                self._tool_views.pop(widget.call.call_id, None)
        with self.app.batch_update():  # one frame with the new entries in place of the old (see show)
            await shielded(self.remove_children(stale))
            widgets = [self._widget(item) for item in _items([run])][1:]  # its header is shown already
            if widgets:
                await self.mount_all(widgets, after=header)
        self.call_after_refresh(self._cursor_back)

    def follow_dangling_calls(self, state: str) -> None:
        """The live run's calls without a result now say ``state`` (e.g. after a stop)."""
        for view in self._live_tool_views():
            if view.result is None:
                view.set_dangling_state(state)

    def _live_tool_views(self) -> list[ToolCallView]:
        header = self._live_header
        if header is None:
            return []
        return [widget for widget in self._shown_under(header) if isinstance(widget, ToolCallView)]

    def _shown_under(self, header: RunHeader) -> list[Widget]:
        """What is shown under the run ``header`` heads, up to the next run's header (none once
        ``header`` is no longer shown)."""
        children = list(self.children)
        if header not in children:
            return []
        start = children.index(header) + 1
        end = next((i for i in range(start, len(children)) if isinstance(children[i], RunHeader)), len(children))
        return children[start:end]

    async def add_user(self, message: UserMessage) -> None:
        """The user sent ``message``: show it and follow the answer as it streams."""
        await self._to_end()
        self.selected = -1
        self.anchor()
        await self._append(UserMessageView(message))
        self.call_after_refresh(self._cursor_back)  # sent from here (a regenerate resends it): the cursor stays

    async def stream_text(self, text: str, agent: str) -> None:
        if self._live_message is None:
            self._live_message = AssistantMessageView("", agent)
            await self._append(self._live_message)
        await self._live_message.write(text)
        self._live_part_grew()

    async def end_message(self, message: AssistantMessage | None = None, *, stopped: bool = False) -> None:
        """The streamed message is over; ``message`` is it as stored, to show how its turn ended
        (``stopped``: its run was stopped by the user)."""
        if self._live_message is None and message is not None and message.finish_reason:
            # A turn cut off before any text streamed: its (empty) message still says why.
            self._live_message = AssistantMessageView("", message.agent)
            await self._append(self._live_message)
        if self._live_message is not None:
            await self._live_message.finish(message, stopped=stopped)
            self._live_message = None
            self._live_part_grew()  # laid out whole at its end: it may take more rows

    async def add_tool_call(self, call: ToolCall, *, rerun: bool = False) -> None:
        """``call`` starts executing (``rerun``: again, on a resume)."""
        await self.end_message()
        view = self._tool_views.get(call.call_id)
        if view is None:
            view = ToolCallView(call, dangling_state=RUNNING_AGAIN if rerun else RUNNING)
            self._tool_views[call.call_id] = view
            await self._append(view)
            if len(self._tool_views) == 1:
                self.refresh_bindings()  # the first tool call: trim applies now
        else:  # a re-run on resume keeps the view it had
            view.set_dangling_state(RUNNING_AGAIN if rerun else RUNNING)

    def add_tool_result(self, result: ToolResult) -> None:
        view = self._tool_views.get(result.call_id)
        if view is not None:
            view.set_result(result)
            self._live_part_grew()

    async def add_notice(self, text: str, kind: str = "info", *, hint: str = "") -> None:
        await self.end_message()
        await self._append(NoticeView(text, kind, hint=hint))

    async def end_run(self, state: RunState, stored: TranscriptRun | None = None) -> None:
        """The live run ended as ``state``; ``stored`` is it as the stores now have it (``None``: unknown).

        Its header then shows the stored figures, the same a reopened transcript shows; its
        calls left without a result say they were stopped and will run again; an answer it was
        streaming is marked cut off, as the stores keep it.
        """
        await self.end_message(_cut_off(stored) if self._live_message is not None and state != "completed" else None,
                               stopped=state == "interrupted")
        if state != "completed":
            self.follow_dangling_calls(STOPPED if state == "interrupted" else WILL_RUN_AGAIN)
        header = self._live_header
        if header is not None:
            if stored is not None and stored.run_id == header.run_id:
                header.show_run(replace(stored, state=state) if stored.state == "running" else stored)
            else:
                header.set_state(state)
        self._live_header = None

    async def _append(self, widget: Widget) -> None:
        widget.display = self._tail_shown  # the live part is hidden while an earlier page is shown
        await self.mount(widget)  # the anchor, unless released by the reader, keeps it in view
        self._live_part_grew()

    # -- the cursor ------------------------------------------------------------------------

    @property
    def views(self) -> list[MessageView]:
        """The selectable messages shown, in order (the mounted pages', then the live part's while shown)."""
        return [child for child in self.children if isinstance(child, MessageView) and child.display]

    @property
    def selected_view(self) -> MessageView | None:
        view = self._selected_view
        return view if view is not None and view.is_attached and view.display else None

    def _set_selected(self, view: MessageView | None) -> None:
        """Select ``view`` (``None``: nothing) without scrolling to it: what changing the pages needs."""
        if self._selected_view is not None and self._selected_view is not view:
            self._selected_view.select(False)
        views = self.views if view is not None else []
        if view not in views:
            view = None
        if view is not self._selected_view:
            self.refresh_bindings()  # the keys that apply to it (see hidden_in_footer)
        self._selected_view = view
        if view is None:
            self._selected_run = None
        self.set_reactive(Transcript.selected, views.index(view) if view is not None else -1)

    def _reselect(self) -> None:
        """Pages came or went: the selection stays on its message (or goes, with its page)."""
        self._set_selected(self.selected_view)

    def watch_has_focus(self, has_focus: bool) -> None:
        """Restyle the transcript alone when it gains or loses focus.

        Only its own border depends on its focus (no rule styles a message by it). Textual's
        default restyles every descendant too: a long session holds thousands of widgets, and
        moving focus into or out of the conversation took seconds.
        """
        self.app.stylesheet.update_nodes([self], animate=True)
        self._cursor_back()

    def _cursor_back(self, waits: int = 3) -> None:
        """With focus here and no message under the cursor (focus just came, or the messages were
        replaced: another session shown, an undo, a regenerate, a resumed run rebuilt), the last
        message in sight takes the cursor, where it is, so the keys for a message (copy, edit, fork)
        apply and show at once. The view stays put: a reader scrolled up is not sent to the end,
        and a streaming answer is still followed."""
        # The screen's focus, too: a focus moved elsewhere lands on this widget's has_focus a message later.
        if not self.has_focus or self.screen.focused is not self or self.selected_view is not None:
            return
        views = self.views
        if not views:
            return
        laid_out = any(view.virtual_region.height for view in views)
        if in_sight := self._in_sight(self.scroll_offset.y) if laid_out else []:
            self._select_where_it_is(in_sight[-1])
        elif waits:  # mounted, not laid out (or scrolled to their place) yet: asked again after a refresh
            self.call_after_refresh(self._cursor_back, waits - 1)
        elif self.is_anchored and self.at_end:
            # Still not known where each is, but show() anchored the view at the end: the last shows.
            self._select_where_it_is(len(views) - 1)

    def paged(self, direction: int, top: float, waits: int = 2) -> None:
        """A page key moved the view: a cursor left out of sight comes to the first message in sight
        going down (the last going up). Left behind, ``c`` copied a message no longer shown and the
        next ``down`` took the view back a page."""
        self._placed_for = None  # the view moved away from the cursor on purpose (see _selected_in_sight)
        in_sight = self._in_sight(top)
        if not in_sight and self.views and waits:
            # Messages just shown (after home, end, a jump) have no place yet: asked again once laid out.
            self.call_after_refresh(self.paged, direction, top, waits - 1)
            return
        selected = self.selected_view
        if not in_sight or (selected is not None and self.views.index(selected) in in_sight):
            return
        self._select_where_it_is(in_sight[0] if direction > 0 else in_sight[-1])

    def _in_sight(self, top: float) -> list[int]:
        """Which of :attr:`views` (by index) show, wholly or in part, with the view scrolled to ``top``."""
        return [i for i, view in enumerate(self.views) if self._shows(view, top)]

    def _shows(self, view: Widget, top: float) -> bool:
        """Whether ``view`` shows, wholly or in part, with the view scrolled to ``top``."""
        region = view.virtual_region
        return region.y < top + self.scrollable_content_region.height and region.bottom > top

    def _select_where_it_is(self, index: int) -> None:
        """The cursor to the message ``index`` of :attr:`views`, the view not moved to it."""
        self._scroll_to_selection = False
        try:
            self.selected = index
        finally:
            self._scroll_to_selection = True

    def watch_selected(self, old: int, new: int) -> None:
        self._code_copied = None  # y on the message selected next copies its last block first
        views = self.views
        if self._selected_view is not None:
            self._selected_view.select(False)
        if 0 <= new < len(views):
            view = self._selected_view = views[new]
            view.select()
            if self._scroll_to_selection:
                self.scroll_to_widget(view, animate=False)
                self._placed_for = view
                self.call_after_refresh(self._selected_in_sight, view)
            run = self.run_of(view)
            if run is not None and run.run_id != self._selected_run:
                self._selected_run = run.run_id
                # Once the cursor is drawn: the inspector's update (a table of the run) must not delay it.
                self.call_after_refresh(self._report_run, run)
        else:
            self._selected_view = None
            self._selected_run = None
        self.refresh_bindings()  # the keys that apply to it (see hidden_in_footer)

    def _selected_in_sight(self, view: MessageView, waits: int = 3) -> None:
        """Brought into view where it was placed as it was selected, ``view`` is still in sight once laid
        out, or brought in again. Keys that came together (a hundred ``up`` at once) each moved the
        cursor while pages were mounted above it and had no place yet: the view was left where the
        first of them went, the cursor far out of sight."""
        if view is not self.selected_view or view is not self._placed_for:
            return  # moved on, or the view was moved from it since (a page key, the wheel)
        if not view.virtual_region.height:  # shown this frame: no place yet (see _scroll_to_selected)
            if waits:
                self.call_after_refresh(self._selected_in_sight, view, waits - 1)
            return
        if not self._shows(view, self.scroll_y):
            self.scroll_to_widget(view, animate=False)

    def run_of(self, view: Widget) -> TranscriptRun | None:
        """The run ``view`` belongs to, as its header shows it (stored on a page, or live)."""
        item = self._item_of.get(view)
        if item is not None and item.of_run is not None:
            return item.of_run
        header = self.header_above(view)
        return header.run if header is not None else None

    def _report_run(self, run: TranscriptRun) -> None:
        if self._selected_run != run.run_id:
            return  # the cursor moved on before it was drawn
        span = self._parts.get(run.run_id)
        if span is None or self._pages is None:
            self.post_message(self.RunSelected(run))
        else:  # only part of it was read with its page: the inspector gets all of it
            self.run_worker(self._report_whole_run(run, span, self._pages), exclusive=True, group="transcript-run")

    async def _report_whole_run(self, run: TranscriptRun, span: tuple[int, int], pages: TranscriptPages) -> None:
        start, count = span
        page = await self._read_or_tell(pages, start, max(1, count))
        if page is None:
            return
        whole = next((part.run for part in page.runs if part.run.run_id == run.run_id), run)
        if self._selected_run == whole.run_id:
            self.post_message(self.RunSelected(whole))

    def header_above(self, view: Widget) -> RunHeader | None:
        """The header of the run ``view`` belongs to, when mounted."""
        header = None
        for widget in self.children:
            if widget is view:
                return header
            if isinstance(widget, RunHeader) and widget.display:  # not a hidden page's
                header = widget
        return None

    async def _settled(self) -> None:
        """Wait for a page being read to be mounted, so a key acts on what is shown."""
        async with self._paging:
            pass

    async def action_cursor(self, step: int) -> None:
        self._owed_rows = 0.0
        self.release_anchor()
        await self._settled()
        views = self.views
        if not views:
            return
        if self.selected < 0:
            self.selected = len(views) - 1
            return
        target = self.selected + step
        if target < 0:
            if await self.load_older():
                self.selected = max(0, self.selected - 1)
            return
        if target >= len(views):
            if await self.load_newer():
                self.selected = min(self.selected + 1, len(self.views) - 1)
            return
        self.selected = target

    async def action_cursor_home(self) -> None:
        """The cursor to the first message of the session: its first page replaces what is mounted."""
        self._owed_rows = 0.0
        self.release_anchor()
        await self._settled()
        if self.older_hidden:
            await self._jump(to_first=True)
        # Selected where it is: the view is put at the top below. Brought into view as it was selected,
        # from the view at the end, it was scrolled to afterwards, and the run's header above it hidden.
        self._select_where_it_is(0 if self.views else -1)
        # At once: deferred, the first frame after the jump would show the first page where the view was.
        self.scroll_home(animate=False, immediate=True)
        self.call_after_refresh(self._check_edges)

    @property
    def selected_position(self) -> int | None:
        """Where the stored entry under the cursor is in the session (``None``: none, or one of the live part)."""
        view = self.selected_view
        item = self._item_of.get(view) if view is not None else None
        return item.position if item is not None else None

    def shows_stored(self, position: int) -> bool:
        """Whether the stored entry at ``position`` was stored when the session was shown (what
        :meth:`show_entry` can reach); a run shown live and stored since is not, until shown again."""
        return self._pages is not None and 0 <= position < self._total

    async def show_entry(self, position: int, match: SearchQuery | None = None) -> bool:
        """Put the cursor on the stored entry at ``position``, read and mounted first when it is not shown.

        The view shows the entry's top, or, given the ``match`` of a search, the entry's first row
        that shows it when that row is further down than the view's height: a hit deep inside a
        long answer is shown, not only the answer's start.

        Its page, about a screenful around it, replaces the window as ``home`` and ``end`` replace
        it (what the window showed is hidden, then unmounted once drawn; the session's first and
        last pages stay kept), so an entry far up a long session costs one page read. A tool
        result is shown inside its call: the cursor goes to the call. False when the session
        held no entry there when it opened.
        """
        self._owed_rows = 0.0
        self.release_anchor()
        pages = self._pages
        if pages is None or not 0 <= position < self._total:
            return False
        # Read before settling: nothing may change the pages between the settling and the jump.
        shown_at = await self._shown_position(pages, position)
        await self._settled()
        if shown_at is None or pages is not self._pages:
            return False
        position = shown_at
        window = self._window
        if not window or not window[0].start <= position < window[-1].end:
            if self._first is not None and position < self._first.end:
                await self._jump(to_first=True)
            elif self._last is not None and position >= self._last.start:
                await self._jump(to_first=False)
            else:
                await self._jump_to(position)
        view = await self._view_at(position)
        if view is None:
            return False
        if not view.display:  # a kept page's rest, shown only after the jump's first frame
            for page in self._window:
                self._show_page(page, True)
        if not view.display:
            # Its page is kept but out of the window (under load, paging moved the window while this
            # waited): the index of a hidden view raised, ending the app. The window moves to it.
            await self._jump_to(position)
            view = await self._view_at(position)
            if view is not None and not view.display:
                for page in self._window:
                    self._show_page(page, True)
            if view is None or not view.display:
                return False
        self.selected = self.views.index(view)
        # Once laid out: the page was just mounted, and its widgets have no place yet; what reveal
        # unfolds is styled in that refresh and laid out in the next.
        if match is not None and view.reveal(match):
            self.call_after_refresh(self.call_after_refresh, self._scroll_to_selected, view, match)
        else:
            self.call_after_refresh(self._scroll_to_selected, view, match)
        self.call_after_refresh(self._check_edges)
        return True

    async def _jump_to(self, position: int) -> None:
        """Show a page around ``position`` (between the kept first and last pages) in place of the window."""
        async with self._paging:
            low = self._first.end if self._first is not None else 0
            high = self._last.start if self._last is not None else self._total
            size = self.page_size
            start = max(low, min(position - size // 3, high - size))
            page = await self._read(start, min(high, start + size))
            if page is None:
                return
            dropped = self._hide_window()
            widgets = self._page_widgets(page)
            if widgets:  # after the kept first page, before the kept last one and the live part
                await self.mount_all(widgets, before=self._after_window())
            self._window = [_Page(page.start, page.end, widgets)]
            self._show_tail(self.at_end)
            if not self.at_end:
                self.anchor(False)
            self._drop_later(dropped)
            self.refresh_bindings()

    def _hide_window(self) -> list[Widget]:
        """Take every page out of the window: the session's first and last pages are kept, hidden; the
        others are hidden and returned, for :meth:`_drop_later`."""
        old, self._window = self._window, []
        self._set_selected(None)
        dropped: list[Widget] = []
        for mounted in sorted(old, key=lambda page: min(page.start, self._total - page.end)):  # ends first
            if not self._keep(mounted):
                self._show_page(mounted, False)
                dropped += mounted.widgets
        return dropped

    def _drop_later(self, dropped: list[Widget]) -> None:
        if dropped:
            self._dropping += dropped
            self.call_after_refresh(self._drop_hidden)

    async def _view_at(self, position: int) -> MessageView | None:
        """The mounted message showing the stored entry at ``position``."""
        return next((view for view in self.children if isinstance(view, MessageView)
                     and (item := self._item_of.get(view)) is not None and item.position == position), None)

    async def _shown_position(self, pages: TranscriptPages, position: int) -> int | None:
        """Where the stored entry at ``position`` is shown: its own place, or, for a tool result, its
        call's (a result is shown inside its call, earlier in the same run, maybe on an earlier page).
        ``None`` when its page cannot be read."""
        page = await self._read_or_tell(pages, position, 1)
        if page is None or not page.runs or not page.runs[0].run.entries:
            return None
        run, entry = page.runs[0], page.runs[0].run.entries[0]
        if not isinstance(entry, ToolResult) or position == run.start:
            return position
        before = await self._read_or_tell(pages, run.start, position - run.start)
        if before is None:
            return None
        calls = [isinstance(e, ToolCall) and e.call_id == entry.call_id
                 for part in before.runs for e in part.run.entries]
        return next((run.start + i for i in range(len(calls) - 1, -1, -1) if calls[i]), position)

    def _scroll_to_selected(self, view: MessageView, match: SearchQuery | None = None, waits: int = 3) -> None:
        if view is not self.selected_view:
            return
        if not view.virtual_region.height and waits:
            # Shown this frame (a page a jump kept hidden until drawn, when n came right after it):
            # it has no place yet to scroll to, and scrolling to none does nothing.
            self.call_after_refresh(self._scroll_to_selected, view, match, waits - 1)
            return
        row = view.match_row(match) if match is not None else None
        height = self.scrollable_content_region.height
        if self.at_end and self.max_scroll_y == 0:
            # The whole session fits: it shows whole, at the bottom as ever. Scrolling releases
            # the anchor, which left the offset the anchor last set (Textual's, below 0 to put a
            # short session at the bottom) as it was before the messages took their height: the
            # last lines then hid behind the composer until the next session was opened.
            self.anchor()
            return
        if row is None or row < height - 1:  # shown with the view's top: the top stays in sight
            self.scroll_to_widget(view, animate=False, top=True)
        else:  # a third of the way down: what leads to it shows above
            self.scroll_to(y=view.virtual_region.y + row - height // 3, animate=False)

    def action_match(self, step: int) -> None:
        self.post_message(self.MatchRequested(step))

    @property
    def at_last_message(self) -> bool:
        """Whether the message cursor is on the last message of the session as shown (live part included)."""
        return self.at_end and self.selected >= 0 and self.selected == len(self.views) - 1

    async def action_to_end(self) -> None:
        """``end``: the last page (if an earlier one is shown), then the cursor to the last message."""
        await self._settled()
        await self._to_end()
        self.action_cursor_end()
        self.call_after_refresh(self._forget_new_below_once_seen)  # a view already at the end does not scroll

    def action_cursor_end(self) -> None:
        """The cursor to the last message, and the view to the very end (following new content again).

        With an earlier page shown, the last one is read first, in a worker.
        """
        self._owed_rows = 0.0
        if not self.at_end:
            self.run_worker(self.action_to_end(), exclusive=True, group="transcript-jump")
            return
        self.selected = len(self.views) - 1
        self.anchor()
        self.call_after_refresh(self._check_edges)

    def action_expand(self) -> None:
        view = self.selected_view
        if view is None:
            self.notify("Select a message to expand it (↑/↓)." if self.views else "Nothing to expand: no message yet.",
                        severity="warning")
        elif isinstance(view, Expandable) and view.folds:
            view.toggle()
        else:
            self.notify("Nothing to expand here: enter unfolds a tool call, or a notice with more lines.")

    def action_copy(self) -> None:
        view = self.selected_view
        if view is None:
            self.notify("Select a message to copy it (↑/↓).", severity="warning")
        else:
            self.post_message(self.CopyRequested(view.copy_text(), f"the {view.copy_what()}"))

    def action_copy_code(self) -> None:
        """Copy the selected message's last code block; again on the same message, the one before it
        (round to the last after the first): every block can be copied from the keyboard."""
        view = self.selected_view
        blocks = view.code_blocks() if view is not None else []
        if view is None:
            self.notify("Select a message to copy its last code block (↑/↓).", severity="warning")
        elif not blocks:
            self.notify("The selected message has no code block.", severity="warning")
        elif len(blocks) == 1:
            self.post_message(self.CopyRequested(blocks[0], "the code block"))
        else:
            copied = self._code_copied
            index = (copied[1] - 1) % len(blocks) if copied is not None and copied[0] is view else len(blocks) - 1
            self._code_copied = (view, index)
            key = keymap_of(self).first_key_text("transcript.copy_code")
            self.post_message(self.CopyRequested(blocks[index], f"code block {index + 1} of {len(blocks)}",
                                                 f" {key} again copies the one before."))

    def action_scroll_code(self, direction: int) -> None:
        view = self.selected_view
        if view is None:
            self.notify("Select a message to move its code sideways (↑/↓).", severity="warning")
        elif view.scroll_code(direction) is None:
            self.notify("No code block of the selected message is wider than the view.", severity="warning")

    def action_edit(self) -> None:
        view = self.selected_view
        if not isinstance(view, UserMessageView):
            self.notify("Select one of your messages to edit it (↑/↓).", severity="warning")
        else:
            item = self._item_of.get(view)
            self._hold_typed_ahead("edit")
            self.post_message(self.EditRequested(view.message, item.position if item is not None else None))

    def on_key(self, event: events.Key) -> None:
        """``e``, ``f`` and ``t`` act here, not through their bindings: keys typed right after one
        are held until focus leaves for the composer or a question (the message is found in the
        stores first, the fork is made, the trim's saving read). They reach this widget before the
        binding of the first would run (Textual runs a binding once its key has bubbled up to the
        app), and as bindings "e fix it" would fork (``f``) and trim (``t``), and a message typed
        right after a fork would edit, copy and fork again. Held (:meth:`take_typed_ahead`), an
        edit's keys go after the edited text and a fork's into the new session's composer; a trim's
        are dropped. So do the keys typed while a search hit opens, after a letter other than ``n``
        and ``N`` (:attr:`typing_goes_to_composer`): all into the composer, which takes focus.
        Backspace erases the last one held, and any other key is dropped (an ``enter`` in the burst
        would expand, arrows would move the cursor under the edit)."""
        if self._typed_ahead is not None:
            event.stop()
            event.prevent_default()
            if event.is_printable and event.character is not None:
                self._typed_ahead.append(event.character)
            elif event.key == "backspace" and self._typed_ahead:
                self._typed_ahead.pop()
            return
        keys = keymap_of(self)
        if (self.typing_goes_to_composer and event.is_printable and event.character is not None
                and event.key not in (*keys.keys_in_force("transcript.next_match"),
                                      *keys.keys_in_force("transcript.previous_match"))):
            event.stop()
            event.prevent_default()
            self._hold_typed_ahead("message")
            if self._typed_ahead is not None:
                self._typed_ahead.append(event.character)
            self.post_message(self.TypingForTheComposer())
            return
        action = next((action for action in HOLDS_TYPED_AHEAD
                       if event.key in keys.keys_in_force(f"transcript.{action}") and self.check_action(action, ())),
                      None)
        if action is None:
            return
        event.stop()
        event.prevent_default()
        getattr(self, f"action_{action}")()
        if self._typed_ahead is None:
            # Nothing starts (not a message it applies to: it said so). What was typed with the key
            # was meant for what it would have started all the same: dropped, not run as keys.
            self._hold_typed_ahead(action)
            self.set_timer(TYPED_AHEAD_SECONDS, lambda: self.take_typed_ahead(end=True))

    def _hold_typed_ahead(self, action: str) -> None:
        """What is typed from now on is held for ``action`` (see :meth:`on_key`), while this widget has
        focus: asked for otherwise (the command palette), the keys are not this widget's to hold, and
        a hold would outlast the action (it ends as focus leaves)."""
        if self.has_focus:
            self._typed_ahead, self._typed_ahead_for = [], action

    def take_typed_ahead(self, *, end: bool) -> str:
        """What was typed since the key of an edit, a fork or a trim (or since the last take). With
        ``end`` the keys are this widget's again at once; else they stay held until focus leaves it
        (for the composer or a dialog), and what came meanwhile is handed on then (:class:`TypedAhead`)."""
        typed = self._typed_ahead or []
        self._typed_ahead = None if end or not self.has_focus else []  # focus left meanwhile: nothing to hold
        return "".join(typed)

    def on_blur(self) -> None:
        if self._typed_ahead is not None:
            rest = self.take_typed_ahead(end=True)
            if rest:
                self.post_message(self.TypedAhead(rest, self._typed_ahead_for))

    def action_fork(self) -> None:
        """Fork from the message under the cursor: a stored one, or one of a run shown live (found once stored)."""
        view = self.selected_view
        item = self._item_of.get(view) if view is not None else None
        if view is None:
            self.notify("Select a message to fork from (↑/↓).", severity="warning")
        elif item is not None and item.position is not None:
            self._hold_typed_ahead("fork")
            self.post_message(self.ForkRequested(item.position))
        else:
            header = self.header_above(view)
            matches = _entry_matcher(view)
            if header is None or matches is None:
                self.notify("Only a message of the conversation can be forked from (↑/↓ to one).", severity="warning")
            else:
                self._hold_typed_ahead("fork")
                self.post_message(self.ForkRequested(None, header.run_id, matches))

    def action_trim(self) -> None:
        self._hold_typed_ahead("trim")
        self.post_message(self.TrimRequested())

    def action_undo_rewind(self) -> None:
        self.post_message(self.UndoRewindRequested())

    def action_timeline(self) -> None:
        """Ask for the timeline of the run under the cursor (the last run shown when no message is selected)."""
        view = self.selected_view
        if view is not None:
            run = self.run_of(view)
        else:
            header = next((h for h in reversed(self._headers()) if h.display), None)
            last = self.views[-1] if self.views else None  # a run begun on a page not shown has no header here
            run = header.run if header is not None else self.run_of(last) if last is not None else None
        if run is None:
            self.notify("No run to show: select a message of one (↑/↓)." if self.run_ids
                        else "No run to show: none has run in this session yet.", severity="warning")
            return
        self.post_message(self.TimelineRequested(run))

    @property
    def may_hold_tool_output(self) -> bool:
        """Whether the session may hold a tool output: one is shown, or not all of the session is."""
        return bool(self._tool_views) or self.older_hidden > 0 or self.newer_hidden > 0

    def applies(self, action: str) -> bool:
        """Whether ``action`` does something now: the cursor's for the message under it (edit: one of
        the user's; expand: what folds; copy code: one with a code block); trim while the session may
        hold a tool output (one is shown, or not all of it is); undo while the last rewind can be
        undone; the match keys while a search's matches can be stepped through; the timeline once the
        session shows a run. Trim, fork and undo wait while an answer runs here. Others always apply."""
        view = self.selected_view
        if action in ("trim", "fork", "undo_rewind") and self.answering:
            return False
        if action in ("copy", "fork"):
            return view is not None
        if action == "expand":
            return isinstance(view, Expandable) and view.folds
        if action == "edit":
            return isinstance(view, UserMessageView)
        if action == "copy_code":
            return view is not None and view.holds_code()
        if action == "trim":
            return self.may_hold_tool_output
        if action == "undo_rewind":
            return self.undo_available
        if action == "match":
            return self.search_active
        if action == "timeline":
            return bool(self.run_ids)
        return True

    def hidden_in_footer(self, action: str) -> bool:
        """The keys that do nothing now (see :meth:`applies` and
        :class:`~lovia.tui.widgets.footer.HidesInFooter`); the command palette leaves them out too.
        Pressed all the same, each says why it does nothing. ``action`` is as bound: ``match(1)``."""
        return not self.applies(action.partition("(")[0])

    def footer_description(self, action: str) -> str | None:
        """``enter`` on an unfolded message folds it (see :class:`~lovia.tui.widgets.footer.DescribesInFooter`)."""
        view = self.selected_view
        if action == "expand" and isinstance(view, Expandable) and view.folds and view.expanded:
            return "Collapse"
        return None

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "edit":
            return self.can_edit
        if action == "trim":
            return self.can_trim
        if action == "fork":
            return self.can_fork
        if action == "undo_rewind":
            return self.can_undo
        return True


def _entry_matcher(view: Widget) -> Callable[[Entry], bool] | None:
    """What tells the stored entry a live view shows (its run is stored since it was shown), if it shows one."""
    if isinstance(view, UserMessageView):
        message = view.message
        return lambda entry: entry == message
    if isinstance(view, ToolCallView):
        call_id = view.call.call_id
        return lambda entry: isinstance(entry, ToolCall) and entry.call_id == call_id
    if isinstance(view, AssistantMessageView):
        text = view.copy_text()
        return lambda entry: isinstance(entry, AssistantMessage) and entry.text == text
    return None


def _items(runs: Iterable[TranscriptRun]) -> Iterable[_Item]:
    """What whole runs show: each one's header, then its entries."""
    for run in runs:
        yield _Item(run=run)
        yield from _entry_items(run, None, {}, continued=False)


def _cut_off(run: TranscriptRun | None) -> AssistantMessage | None:
    """The message the stores keep of the answer ``run`` was streaming when it stopped, if any."""
    last = run.entries[-1] if run is not None and run.entries else None
    return last if isinstance(last, AssistantMessage) and last.finish_reason == CUT_OFF else None


def _stopped(run: TranscriptRun | None) -> bool:
    """Whether ``run`` ended because the user stopped it (escape, quit): in flight ``interrupted``,
    or finalized as a partial that ended so; a crash or an error cut an answer off otherwise."""
    return run is not None and (run.state == "interrupted" or (run.partial and run.ended in PARTIAL_ENDS_STOPPED))


def _page_items(page: TranscriptPage) -> Iterable[_Item]:
    """What a page of stored runs shows: a run's header goes with its first entry, so a run begun earlier has none."""
    for part in page.runs:
        if part.begins_here:
            yield _Item(run=part.run)
        yield from _entry_items(part.run, part.first, part.later_results, continued=not part.begins_here)


def _entry_items(run: TranscriptRun, first: int | None, later_results: Mapping[str, ToolResult], *,
                 continued: bool) -> Iterable[_Item]:
    """``run``'s entries, the stored ones numbered from ``first``; a tool call carries its result.

    A result is shown inside its call; one whose call is on an earlier page (``continued``:
    the run began there) was shown with it, as the page it was read with looked ahead for it.
    """
    pairs = call_pairs(run.entries)  # in order: calls a model gave one id (stored before ids were made unique)
    result_of = {pair.call_at: pair.result for pair in pairs}
    inside = {pair.result_at for pair in pairs if pair.result_at is not None}
    for offset, entry in enumerate(run.entries):
        if isinstance(entry, ToolResult) and (offset in inside or continued):
            continue  # shown inside its call
        result = (result_of.get(offset) or later_results.get(entry.call_id)) if isinstance(entry, ToolCall) else None
        yield _Item(entry=entry, result=result, of_run=run, position=None if first is None else first + offset)
