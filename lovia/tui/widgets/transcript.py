"""Transcript: the conversation, rendered lazily, with a message cursor.

Only the newest ``PAGE`` items are mounted when a session opens; older ones are mounted a
page at a time when the view is scrolled (or the cursor moves) to the top, so a 10,000-entry
session opens at once. Streaming appends to the last message; nothing above it re-renders.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import ClassVar

from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.message import Message
from textual.reactive import reactive
from textual.widget import Widget

from lovia.entries import AssistantMessage, Entry, Handoff, ToolCall, ToolResult, UserMessage
from lovia.tui.backend import RunState, Transcript as TranscriptData, TranscriptRun
from lovia.tui.widgets.assistant_message import AssistantMessageView
from lovia.tui.widgets.message_view import Expandable, MessageView
from lovia.tui.widgets.notice import NoticeView
from lovia.tui.widgets.run_header import RunHeader
from lovia.tui.widgets.tool_call_view import (
    PENDING_BY_RUN_STATE,
    RUNNING,
    RUNNING_AGAIN,
    STOPPED,
    WILL_RUN_AGAIN,
    ToolCallView,
)
from lovia.tui.widgets.user_message import UserMessageView

PAGE = 25  # enough to fill a tall terminal; older pages mount as the reader scrolls up


@dataclass(frozen=True)
class _Item:
    """One thing to show: a run header, or an entry of ``of_run`` (a tool call carries its result)."""

    run: TranscriptRun | None = None
    entry: Entry | None = None
    result: ToolResult | None = None
    of_run: TranscriptRun | None = None


class Transcript(VerticalScroll, can_focus=True):
    """The live transcript pane."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("up,k", "cursor(-1)", "Previous", show=False),
        Binding("down,j", "cursor(1)", "Next", show=False),
        Binding("home", "cursor_home", "First", show=False),
        Binding("end", "cursor_end", "Last", show=False),
        Binding("enter", "expand", "Expand"),
        Binding("c", "copy", "Copy"),
        Binding("y", "copy_code", "Copy code"),
        Binding("e", "edit", "Edit & resend"),
        Binding("t", "trim", "Trim outputs"),
    ]

    DEFAULT_CSS = """
    Transcript { height: 1fr; padding: 0 1; scrollbar-size-vertical: 1; }
    Transcript:focus { border-left: tall $accent; }
    """

    selected: reactive[int] = reactive(-1, init=False)

    class EditRequested(Message):
        """The user wants to edit ``message`` and resend it."""

        def __init__(self, message: UserMessage) -> None:
            super().__init__()
            self.message = message

    class TrimRequested(Message):
        """The user asked to trim old tool outputs of this session."""

    class CopyRequested(Message):
        def __init__(self, text: str, what: str) -> None:
            super().__init__()
            self.text = text
            self.what = what

    class RunSelected(Message):
        """The cursor moved onto a message of another run (``run`` as its header shows it)."""

        def __init__(self, run: TranscriptRun) -> None:
            super().__init__()
            self.run = run

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self._items: list[_Item] = []
        self._first_mounted = 0
        self._loading_older = False
        self._live_message: AssistantMessageView | None = None
        self._live_header: RunHeader | None = None
        self._tool_views: dict[str, ToolCallView] = {}
        self._selected_header: RunHeader | None = None  # the run of the selected message, as last reported
        self.can_edit = True  # the session store can rewind
        self.can_trim = True  # the session store can trim tool outputs

    # -- showing a session -----------------------------------------------------------------

    async def show(self, transcript: TranscriptData | None) -> None:
        """Replace what is shown with ``transcript`` (``None``: an empty new session)."""
        await self.remove_children()
        self._items = list(_items(transcript.runs)) if transcript else []
        self._tool_views.clear()
        self._live_message = self._live_header = self._selected_header = None
        self._first_mounted = max(0, len(self._items) - PAGE)
        await self.mount_all([self._widget(item) for item in self._items[self._first_mounted:]])
        self.selected = -1
        self.anchor()  # stays at the bottom while markdown lays out and new content streams in

    @property
    def run_ids(self) -> set[str]:
        """The runs shown (mounted or not yet, and those started here since it opened), by id."""
        opened = {item.run.run_id for item in self._items if item.run is not None}
        return opened | {header.run_id for header in self.query(RunHeader)}

    @property
    def older_hidden(self) -> int:
        """How many items are not mounted yet."""
        return self._first_mounted

    async def load_older(self) -> bool:
        """Mount the page of items before the first mounted one; False if none are left."""
        if self._first_mounted == 0 or self._loading_older:
            return False
        self._loading_older = True
        self.release_anchor()  # content goes in above: keep the reader's place instead
        try:
            start = max(0, self._first_mounted - PAGE)
            widgets = [self._widget(item) for item in self._items[start:self._first_mounted]]
            first = self.children[0] if self.children else None
            height_before = self.virtual_size.height
            await self.mount_all(widgets, before=first) if first else await self.mount_all(widgets)
            self._first_mounted = start
            if self.selected >= 0:
                self.selected += len([w for w in widgets if isinstance(w, MessageView)])
            self.call_after_refresh(self._keep_place, height_before)
            return True
        finally:
            self._loading_older = False

    def _keep_place(self, height_before: int) -> None:
        self.scroll_to(y=self.scroll_y + self.virtual_size.height - height_before, animate=False)

    def watch_scroll_y(self, old: float, new: float) -> None:
        super().watch_scroll_y(old, new)
        if new <= 0 < old and self._first_mounted:
            self.run_worker(self.load_older(), exclusive=True, group="older")

    def _widget(self, item: _Item) -> Widget:
        if item.run is not None:
            return RunHeader(item.run)
        entry = item.entry
        if isinstance(entry, UserMessage):
            return UserMessageView(entry)
        if isinstance(entry, AssistantMessage):
            return AssistantMessageView(entry.text, entry.agent, entry.finish_reason)
        if isinstance(entry, ToolCall):
            state = item.of_run.state if item.of_run is not None else "interrupted"
            view = ToolCallView(entry, item.result, dangling_state=PENDING_BY_RUN_STATE.get(state, WILL_RUN_AGAIN))
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
        run = replace(stored or TranscriptRun(run_id, (), "running", time.time(), None), state="running")
        header = self._header_of(run_id) if resumed else None
        if header is None:
            self._live_header = RunHeader(run)
            await self._append(self._live_header)
            return
        self._live_header = header
        if stored is None:
            header.set_state("running")  # its figures as shown; nothing to rebuild from
            return
        header.show_run(run)
        await self._rebuild_after(header, run)

    def _header_of(self, run_id: str) -> RunHeader | None:
        return next((h for h in self.query(RunHeader) if h.run_id == run_id), None)

    async def _rebuild_after(self, header: RunHeader, run: TranscriptRun) -> None:
        """Replace what is shown under ``header`` (up to the next run's) by ``run``'s entries."""
        children = list(self.children)
        start = children.index(header) + 1
        end = next((i for i in range(start, len(children)) if isinstance(children[i], RunHeader)), len(children))
        stale = children[start:end]
        self.selected = -1  # the views it counts are replaced
        for widget in stale:
            if isinstance(widget, ToolCallView):
                self._tool_views.pop(widget.call.call_id, None)
        await self.remove_children(stale)
        widgets = [self._widget(item) for item in _items([run])][1:]  # its header is shown already
        if widgets:
            await self.mount_all(widgets, after=header)

    def follow_dangling_calls(self, state: str) -> None:
        """The live run's calls without a result now say ``state`` (e.g. after a stop)."""
        for view in self._live_tool_views():
            if view.result is None:
                view.set_dangling_state(state)

    def _live_tool_views(self) -> list[ToolCallView]:
        header = self._live_header
        if header is None:
            return []
        children = list(self.children)
        start = children.index(header) + 1 if header in children else len(children)
        views: list[ToolCallView] = []
        for widget in children[start:]:
            if isinstance(widget, RunHeader):
                break
            if isinstance(widget, ToolCallView):
                views.append(widget)
        return views

    async def add_user(self, message: UserMessage) -> None:
        """The user sent ``message``: show it and follow the answer as it streams."""
        self.selected = -1
        self.anchor()
        await self._append(UserMessageView(message))

    async def stream_text(self, text: str, agent: str) -> None:
        if self._live_message is None:
            self._live_message = AssistantMessageView("", agent)
            await self._append(self._live_message)
        await self._live_message.write(text)

    async def end_message(self, message: AssistantMessage | None = None) -> None:
        """The streamed message is over; ``message`` is it as stored, to show how its turn ended."""
        if self._live_message is None and message is not None and message.finish_reason:
            # A turn cut off before any text streamed: its (empty) message still says why.
            self._live_message = AssistantMessageView("", message.agent)
            await self._append(self._live_message)
        if self._live_message is not None:
            await self._live_message.finish(message)
            self._live_message = None

    async def add_tool_call(self, call: ToolCall, *, rerun: bool = False) -> None:
        """``call`` starts executing (``rerun``: again, on a resume)."""
        await self.end_message()
        view = self._tool_views.get(call.call_id)
        if view is None:
            view = ToolCallView(call, dangling_state=RUNNING_AGAIN if rerun else RUNNING)
            self._tool_views[call.call_id] = view
            await self._append(view)
        else:  # a re-run on resume keeps the view it had
            view.set_dangling_state(RUNNING_AGAIN if rerun else RUNNING)

    def add_tool_result(self, result: ToolResult) -> None:
        view = self._tool_views.get(result.call_id)
        if view is not None:
            view.set_result(result)

    async def add_notice(self, text: str, kind: str = "info", *, hint: str = "") -> None:
        await self.end_message()
        await self._append(NoticeView(text, kind, hint=hint))

    async def end_run(self, state: RunState, stored: TranscriptRun | None = None) -> None:
        """The live run ended as ``state``; ``stored`` is it as the stores now have it (``None``: unknown).

        Its header then shows the stored figures, the same a reopened transcript shows; its
        calls left without a result say they were stopped and will run again.
        """
        await self.end_message()
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
        await self.mount(widget)  # the anchor, unless released by the reader, keeps it in view

    # -- the cursor ------------------------------------------------------------------------

    @property
    def views(self) -> list[MessageView]:
        return list(self.query(MessageView))

    @property
    def selected_view(self) -> MessageView | None:
        views = self.views
        return views[self.selected] if 0 <= self.selected < len(views) else None

    def watch_selected(self, old: int, new: int) -> None:
        views = self.views
        if 0 <= old < len(views):
            views[old].remove_class("-selected")
        if 0 <= new < len(views):
            views[new].add_class("-selected")
            self.scroll_to_widget(views[new], animate=False)
            header = self.header_above(views[new])
            if header is not None and header is not self._selected_header:
                self._selected_header = header
                self.post_message(self.RunSelected(header.run))
        else:
            self._selected_header = None

    def header_above(self, view: Widget) -> RunHeader | None:
        """The header of the run ``view`` belongs to."""
        header = None
        for widget in self.children:
            if widget is view:
                return header
            if isinstance(widget, RunHeader):
                header = widget
        return None

    async def action_cursor(self, step: int) -> None:
        self.release_anchor()
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
        self.selected = min(target, len(views) - 1)

    async def action_cursor_home(self) -> None:
        self.release_anchor()
        while await self.load_older():
            pass
        self.selected = 0

    @property
    def at_last_message(self) -> bool:
        """Whether the message cursor is on the last message shown."""
        return self.selected >= 0 and self.selected == len(self.views) - 1

    def action_cursor_end(self) -> None:
        """The cursor to the last message, and the view to the very end (following new content again)."""
        self.selected = len(self.views) - 1
        self.anchor()

    def action_expand(self) -> None:
        view = self.selected_view
        if isinstance(view, Expandable):
            view.toggle()

    def action_copy(self) -> None:
        view = self.selected_view
        if view is not None:
            self.post_message(self.CopyRequested(view.copy_text(), "message"))

    def action_copy_code(self) -> None:
        view = self.selected_view
        blocks = view.code_blocks() if isinstance(view, AssistantMessageView) else []
        if blocks:
            self.post_message(self.CopyRequested(blocks[-1], "code block"))
        else:
            self.notify("The selected message has no code block.", severity="warning")

    def action_edit(self) -> None:
        view = self.selected_view
        if not isinstance(view, UserMessageView):
            self.notify("Select one of your messages to edit it (↑/↓).", severity="warning")
        else:
            self.post_message(self.EditRequested(view.message))

    def action_trim(self) -> None:
        self.post_message(self.TrimRequested())

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "edit":
            return self.can_edit
        if action == "trim":
            return self.can_trim
        return True


def _items(runs: Iterable[TranscriptRun]) -> Iterable[_Item]:
    for run in runs:
        yield _Item(run=run)
        results = {e.call_id: e for e in run.entries if isinstance(e, ToolResult)}
        called = {e.call_id for e in run.entries if isinstance(e, ToolCall)}
        for entry in run.entries:
            if isinstance(entry, ToolResult) and entry.call_id in called:
                continue  # shown inside its call
            yield _Item(entry=entry, result=results.get(entry.call_id) if isinstance(entry, ToolCall) else None,
                        of_run=run)
