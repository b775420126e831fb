"""SessionsPane: every session with title, size, last activity and total run time.

The pane holds every session's listing, but options (what the list draws, wrapping each one)
only for the first :data:`PAGE` of those the filter matches; more are added a page at a time
as the cursor or the scroll nears the end, so ten thousand sessions draw like a hundred. ``end``
draws the last page alone, a marker above it saying how many more are up there, and pages are
added above as the cursor or the scroll nears its top (see :meth:`SessionsPane.show_last`).

``f3`` cycles the pane's time view (:data:`TIME_VIEWS`): every session by last activity, those
active today, those active this week, or every session longest first (by total run time). A
view sorts and filters the listings the pane holds (:class:`~lovia.session.SessionInfo` has the
counts and timings), so no transcript is read and no store is asked.
"""

from __future__ import annotations

import bisect
import contextlib
import datetime
import textwrap
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import ClassVar, Literal

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.message import Message
from textual.reactive import reactive
from textual.widgets import Input, OptionList, Static
from textual.widgets.option_list import Option

from lovia.session import SessionInfo
from lovia.tui import format
from lovia.tui.backend import STATE_LABELS, SessionListing
from lovia.tui.keymap import keymap_of
from lovia.tui.screens.prompt import PromptScreen
from lovia.tui.widgets import lists
from lovia.tui.widgets.lists import StoppingOptionList
from lovia.tui.widgets.text_input import TextInput

CLEAR_FILTER_BINDING = Binding(
    # One id for the list and the filter box, as f2: the empty list's hint names this key while the
    # list has the focus, so it must clear the filter there too.
    "escape", "clear_filter", "Clear filter", id="sessions-filter.clear")

TIME_VIEW_BINDING = Binding(
    # Not a letter: letters typed in the list or the filter filter by title. One id for both, as f2.
    "f3", "time_view", "Time view", id="sessions.time_view",
    tooltip="Next time view: by last activity, active today, active this week, longest first")


class SessionList(StoppingOptionList):
    """The list itself: typing a letter starts filtering (backspace erases from the filter); up and down
    stop at its ends."""

    BINDINGS: ClassVar[list[BindingType]] = [
        # priority: the prompt must open (and take focus) before the keys typed after f2 are
        # handed to anyone, or a fast typist's keys land in this list and its filter
        Binding("f2", "rename", "Rename", priority=True, id="sessions.rename"),
        Binding("delete", "delete", "Delete", id="sessions.delete"),
        Binding("slash", "filter", "Filter", show=False, id="sessions.filter"),
        CLEAR_FILTER_BINDING,
        TIME_VIEW_BINDING,
    ]

    def __init__(self, *, can_rename: bool = True, **kwargs) -> None:
        super().__init__(**kwargs)
        self.can_rename = can_rename  # the session store keeps titles given by a user

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action in ("rename", "delete") and self._current() is None:
            return False  # no session highlighted (the filter matches none): out of the footer
        if action == "rename":
            return self.can_rename
        if action == "clear_filter":
            # With no filter escape goes on to the screen (at 80 columns it folds this pane)
            return bool(self._filter_box().value)
        return True

    async def action_rename(self) -> None:
        session_id = self._current()
        if session_id is not None:
            await self.query_ancestor(SessionsPane).ask_new_title(session_id)

    def action_delete(self) -> None:
        self.post_message(SessionsPane.Action("delete", self._current()))

    def action_filter(self) -> None:
        self._filter_box().focus()

    def action_clear_filter(self) -> None:
        self.query_ancestor(SessionsPane).clear_filter()

    def _filter_box(self) -> Input:
        return self.screen.query_one("#session-filter", Input)

    def action_time_view(self) -> None:
        self.query_ancestor(SessionsPane).next_time_view()

    def _current(self) -> str | None:
        if self.highlighted is None:
            return None
        return self.get_option_at_index(self.highlighted).id

    def watch_scroll_y(self, old_value: float, new_value: float) -> None:
        super().watch_scroll_y(old_value, new_value)
        if new_value >= self.max_scroll_y - self.scrollable_content_region.height:
            self.query_ancestor(SessionsPane).show_more()
        if new_value <= self.scrollable_content_region.height:
            self.query_ancestor(SessionsPane).show_earlier()

    def action_first(self) -> None:
        """``home``: the first session of the list, drawn again first when the list begins below it."""
        self.query_ancestor(SessionsPane).show_first()
        super().action_first()

    def action_last(self) -> None:
        """``end``: the last session of the list, drawn first when it has no option yet (Textual's own went
        to the last option drawn so far, a page down)."""
        self.query_ancestor(SessionsPane).show_last()
        super().action_last()

    async def _on_key(self, event) -> None:
        filter_input = self._filter_box()
        # A space starts nothing, but once typing began it is part of what is typed: a fast
        # typist's "shared sess" reached this list before the filter had focus, and lost its space.
        if event.character and event.character.isprintable() and event.key not in ("slash",) \
                and (not event.character.isspace() or filter_input.value):
            # Typed here, in order: the keys that follow may still reach this list before the
            # filter has focus, and go the same way.
            event.stop()
            filter_input.focus()
            filter_input.insert_text_at_cursor(event.character)
            return
        if event.key == "backspace" and filter_input.value:
            # Typing here edits the filter, so erasing does too: a filter that matches nothing any
            # more (its one match deleted) left an empty list that no key here could widen.
            event.stop()
            filter_input.focus()
            filter_input.cursor_position = len(filter_input.value)
            filter_input.action_delete_left()
            return
        await super()._on_key(event)


class SessionFilter(TextInput):
    """The filter box: typing filters the list; enter opens the session highlighted there (the first
    match, or the open one if it matches), down goes to the list, escape clears."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("down", "to_list", "To the list", show=False, id="sessions-filter.to_list"),
        CLEAR_FILTER_BINDING,
        TIME_VIEW_BINDING,
        # The same id as the list's: one action, so one [keys] entry moves both
        Binding("f2", "rename", "Rename", priority=True, tooltip="Rename the session highlighted in the list",
                id="sessions.rename"),
    ]

    def __init__(self, **kwargs) -> None:
        # Not selecting all on focus: the list hands over the first typed key already inserted,
        # and selected, it would be replaced by the second.
        super().__init__(placeholder="type to filter…", select_on_focus=False, **kwargs)

    async def action_rename(self) -> None:
        await self.screen.query_one(SessionList).action_rename()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "rename":
            return self.screen.query_one(SessionList).check_action(action, parameters)
        return True

    def action_to_list(self) -> None:
        self.screen.set_focus(self.screen.query_one(SessionList))

    def action_time_view(self) -> None:
        self.query_ancestor(SessionsPane).next_time_view()

    def action_clear_filter(self) -> None:
        self.query_ancestor(SessionsPane).clear_filter()
        self.action_to_list()


EMPTY_HINT_WIDTH = 30
"""Columns the empty list's hint is wrapped to, and its options' times fit: the list's own in the
pane's 36 (its borders, padding and scrollbar; SessionsPane's CSS width: change both together)."""


class SessionsPane(Vertical):
    """Filter box and list; posts :class:`Selected` and :class:`Action` messages up."""

    DEFAULT_CSS = """
    SessionsPane { width: 36; border-right: solid $panel; }  /* EMPTY_HINT_WIDTH follows it */
    SessionsPane .pane-title { color: $text-muted; padding: 0 1; text-style: bold; }
    SessionsPane.-time-view .pane-title { color: $accent; }
    SessionsPane Input { margin: 0 0 1 0; }
    /* The focus bar's column is kept, blank without focus: the list does not shift as focus moves. */
    SessionsPane SessionList {  /* a line of an entry too long for the pane is cut with …, not wrapped */
        height: 1fr; border: none; border-left: blank; text-wrap: nowrap; text-overflow: ellipsis;
    }
    SessionsPane SessionList:focus { border: none; border-left: tall $accent; }
    """

    class Selected(Message):
        def __init__(self, session_id: str) -> None:
            super().__init__()
            self.session_id = session_id

    class Action(Message):
        def __init__(self, action: str, session_id: str | None) -> None:
            super().__init__()
            self.action = action
            self.session_id = session_id

    class Renamed(Message):
        """The user gave ``session_id`` the title ``title`` in the rename prompt (not stored yet)."""

        def __init__(self, session_id: str, title: str) -> None:
            super().__init__()
            self.session_id = session_id
            self.title = title

    def __init__(self, *, can_rename: bool = True, **kwargs) -> None:
        super().__init__(**kwargs)
        self.listed: list[SessionInfo] = []  # every session, newest first, as the last show() or update had them
        self.sessions: list[SessionInfo] = []  # those of them the filter matches
        self._drawn = range(0)  # the indices in self.sessions of those with an option in the list
        self._filling = False  # while the list is filled anew: its scroll moves, and must not add pages then
        self._current: str | None = None  # the open session, as the last show() marked it
        self._can_rename = can_rename
        self.time_view: TimeView = TIME_VIEWS[0]
        self._since: float | None = None  # where the time view's window begins, as the last filter computed it
        self._labelled_width = EMPTY_HINT_WIDTH  # the width the options' texts were last fitted to

    answering: reactive[bool] = reactive(False, init=False)
    """Whether an answer runs in the chat: escape stops it then, and the empty list's hint says another key."""

    def on_mount(self) -> None:
        self.set_interval(lists.AGES_REFRESH_SECONDS, self.refresh_ages, name="session ages")

    def watch_answering(self) -> None:
        if self.query_text and not self.sessions:  # the hint names the key that clears the filter now
            self._draw(0, keep_highlight=False)

    def compose(self) -> ComposeResult:
        yield Static(self.time_view.title, classes="pane-title", id="sessions-title")
        yield SessionFilter(id="session-filter")
        yield SessionList(id="session-list", can_rename=self._can_rename)

    def show(self, sessions: Sequence[SessionInfo], current: str | None) -> None:
        """Show those of ``sessions`` the filter matches (see :func:`matches`); ``current`` is the open one.

        ``sessions`` are every session, newest first; options are drawn for the first
        :data:`PAGE` matches (or for those drawn before, from the last page after ``end``, or down
        to ``current``). The session highlighted stays so while the open one is the same (the
        lists are read again in the background: the cursor of a user picking a session must not
        move under them); ``current`` is highlighted when it changed; when the highlighted one is
        gone (deleted), the session now in its place is.
        """
        # The open session listed for the first time (its first message went) takes the cursor, as
        # when it was opened: until then the cursor was on another session, for enter to open. Not
        # while the filter hides it: the cursor would go to a match the user did not pick.
        opened = next((info for info in sessions if info.session_id == current), None)
        newly_listed = (opened is not None and bool(self._shown_of([opened]))
                        and not any(info.session_id == current for info in self.listed))
        # A new session is not listed until its first message: the highlight stays put.
        keep_highlight = (current == self._current or opened is None) and not newly_listed
        self.listed = list(sessions)
        self._current = current
        self._filter(keep_options=True, keep_highlight=keep_highlight)

    def update_session(self, session_id: str, listing: SessionListing | None, current: str | None) -> None:
        """Put one session's new listing in its place by activity (``None``: it is gone); ``current`` is the open one.

        Only that session's option is redrawn when it stays where it was; when it moves (or the
        open session changed), the options drawn so far are redrawn, never the whole list. The
        highlight stays where it was, or goes to ``current`` when the open session changed (as
        in :meth:`show`).
        """
        before = self._index_of(session_id)
        was_listed = session_id != current or any(info.session_id == session_id for info in self.listed)
        self.listed = [info for info in self.listed if info.session_id != session_id]
        if listing is not None:
            keys = [-_activity(info) for info in self.listed]
            self.listed.insert(bisect.bisect_left(keys, -_activity(listing)), listing)
        matched = self._shown_of(self.listed)
        after = next((i for i, info in enumerate(matched) if info.session_id == session_id), None)
        # The open session listed for the first time, and shown, takes the cursor (see show).
        current_listed = any(info.session_id == current for info in self.listed)
        opened_another = (current != self._current and current_listed) or (not was_listed and after is not None)
        same_place = before is not None and before == after and not opened_another
        self.sessions, self._current = matched, current
        if same_place and after is not None and after in self._drawn:
            self.query_one(SessionList).replace_option_prompt_at_index(
                self._option_index(after), _label(matched[after], session_id == current, self._label_width))
        elif same_place:
            pass  # outside the options drawn: nothing on screen changes
        else:
            self._draw(self._drawn.stop, first=self._drawn.start, keep_highlight=not opened_another)

    @property
    def current(self) -> str | None:
        """The open session, as the list marks it."""
        return self._current

    def _index_of(self, session_id: str) -> int | None:
        return next((i for i, info in enumerate(self.sessions) if info.session_id == session_id), None)

    def _filter(self, *, keep_options: bool, keep_highlight: bool = False, from_top: bool = False) -> None:
        self._since = self.time_view.since(format.clock())
        self.sessions = self._shown_of(self.listed)
        kept = self._drawn if keep_options else range(0)
        self._draw(kept.stop, first=kept.start, keep_highlight=keep_highlight, from_top=from_top)

    def _shown_of(self, listed: list[SessionInfo]) -> list[SessionInfo]:
        """Those of ``listed`` (newest first) the filter and the time view let through, in the view's order."""
        query = self.query_text
        shown = [info for info in listed if matches(info, query)] if query.strip() else listed
        return self.time_view.apply(shown, self._since)

    def clear_filter(self) -> None:
        """Empty the filter box: every session shows again (the time view stays), the open one highlighted.

        Done when a session is opened from the list: the filter has found it, and kept, it showed
        the list cut down when the user came back to it, and the next letters typed there were
        added to the old filter instead of starting a new one."""
        self.query_one("#session-filter", Input).value = ""

    def next_time_view(self) -> None:
        """Show the next time view (see :data:`TIME_VIEWS`); the filter text stays."""
        self.set_time_view(TIME_VIEWS[(TIME_VIEWS.index(self.time_view) + 1) % len(TIME_VIEWS)])

    def set_time_view(self, view: TimeView) -> None:
        """Sort and filter by ``view``; the title says which view is shown. The cursor goes to the top of it."""
        self.time_view = view
        self.query_one("#sessions-title", Static).update(view.title)
        self.set_class(view is not TIME_VIEWS[0], "-time-view")
        self._filter(keep_options=False, from_top=True)

    def _draw(self, at_least: int, *, keep_highlight: bool, from_top: bool = False, first: int = 0) -> None:
        """Redraw the options: for the sessions from ``first`` to ``at_least`` (a page at least), and
        down to the open one.

        The highlighted session kept (``keep_highlight``) is drawn, ``first`` moving up to it. When
        the session to highlight is the open one and it is above ``first``, the options are drawn
        from the top down to it, as if ``first`` were 0. ``from_top``: from the top, not down to
        the open one, and the first session highlighted.
        """
        sessions, current = self.sessions, self._current
        options = self.query_one(SessionList)
        before = options.highlighted
        before_id = options.get_option_at_index(before).id if before is not None else None
        was_at = self._highlighted_session()  # in the list as drawn until now
        index = {info.session_id: i for i, info in enumerate(sessions)}
        kept = index.get(before_id or "") if keep_highlight else None
        if sessions and was_at is not None and before_id not in index and (keep_highlight or current is None):
            # The highlighted session is gone (deleted): the one now in its place, as a file list
            # does. The cursor went to the open session, or to the top, away from where it was.
            kept = min(was_at, len(sessions) - 1)
        opened = None if from_top else index.get(current or "")
        # A page at least while more are listed: the list may have shrunk under the last page (a new day)
        first = min(first, max(0, len(sessions) - PAGE))
        if kept is not None and kept < first:
            # Moved up (sessions gone above it, or its own activity put it first): the drawn range
            # moves with it rather than stretching down to where it ended, which drew every session
            # when the last one, opened after end, went to the top with a message.
            first, at_least = kept, min(at_least, kept + MOST_DRAWN)
        elif opened is not None and opened < first:
            first, at_least = 0, 0  # the open session takes the cursor: from the top down to it, as ever
        reach = [first + PAGE, at_least, -1 if kept is None else kept + 1]  # and down to the one kept
        if opened is not None and opened >= first:
            reach.append(opened + 1)
        self._fill(options, range(first, min(len(sessions), max(reach))))
        if sessions:  # the open session if it is listed, else the first match, so enter opens something
            wanted = kept if kept is not None else index.get(current or "", first)
            options.highlighted = 0 if from_top else self._option_index(wanted if wanted in self._drawn else first)
        else:
            # Wrapped here: the list cuts every line at its width (a session's), and the hint's key went.
            hint = textwrap.fill(self._empty_hint(), EMPTY_HINT_WIDTH)
            options.add_option(Option(Text(hint, style="dim"), disabled=True))

    def _empty_hint(self) -> str:
        """Why the list is empty and which key to press, naming keys the config file's [keys] moved
        (lovia's defaults are written out, so that nothing is looked up on the first screen)."""
        keymap = keymap_of(self)

        def key(name: str, default: str) -> str:
            return keymap.key_text(name) if keymap.rebound else default

        view_key = key("sessions.time_view", "f3")
        query = self.query_text
        if query.strip() and self.time_view.window is not None and any(matches(info, query) for info in self.listed):
            # The filter matches sessions the time view leaves out: clearing the filter would not show them
            return (f"The view ({self.time_view.name}) hides the sessions the filter matches: "
                    f"{view_key} changes the view.")
        if query and self.answering:  # escape stops the answer first (a priority key)
            return "No session matches the filter: ctrl+u clears it (escape stops the answer)."
        if query:
            return f"No session matches the filter: {key('sessions-filter.clear', 'escape')} clears it."
        if self.time_view.window is not None and self.listed:
            return f"The view ({self.time_view.name}) has no session: {view_key} changes the view."
        # The welcome's two promises, each left out when a clash gave its key to another action too
        send, help_key = ("enter", "f1") if not keymap.rebound else (
            keymap.sure_key_text("composer.send"), keymap.sure_key_text("app.help"))
        start = f"write a message and press {send} to start one" if send else "write a message to start one"
        return f"No sessions yet: {start}; {help_key} lists every key." if help_key else f"No sessions yet: {start}."

    def _fill(self, options: OptionList, drawn: range) -> None:
        """Give the list options for the sessions ``drawn`` (indices in :attr:`sessions`) and no other,
        a marker above and below them saying how many more there are; nothing is highlighted."""
        self._drawn = drawn
        with self._filling_in():
            options.clear_options()  # its scroll goes to the top, and the "more" marker away
            if drawn.start:
                options.add_option(Option(Text(f"{drawn.start:,} more: scroll up", style="dim"), disabled=True))
            self._add_options(options, drawn)
            self._more_marker(options)

    @contextlib.contextmanager
    def _filling_in(self) -> Iterator[None]:
        """While the list is filled anew: the scroll it moves adds no page (:meth:`show_more`,
        :meth:`show_earlier`), which would find it half filled."""
        filling, self._filling = self._filling, True
        try:
            yield
        finally:
            self._filling = filling

    def _add_options(self, options: OptionList, drawn: range) -> None:
        width = self._labelled_width = self._label_width
        now = format.clock()  # every age of one drawing counted from one moment
        options.add_options([Option(_label(info, info.session_id == self._current, width, now), id=info.session_id)
                             for info in self.sessions[drawn.start:drawn.stop]])

    @property
    def _above(self) -> int:
        """How many options come before the first drawn session's: the marker above, when there is one."""
        return 1 if self._drawn.start else 0

    def _highlighted_session(self) -> int | None:
        """The index in :attr:`sessions` of the session highlighted in the list, if one is."""
        highlighted = self.query_one(SessionList).highlighted
        if highlighted is None or not self._above <= highlighted < self._option_index(self._drawn.stop):
            return None  # nothing, or a marker
        return highlighted - self._above + self._drawn.start

    def _option_index(self, session_index: int) -> int:
        """The index in the list of the option of ``self.sessions[session_index]`` (a drawn one)."""
        return session_index - self._drawn.start + self._above

    def _more_marker(self, options: OptionList) -> None:
        left = len(self.sessions) - self._drawn.stop
        if left > 0:
            options.add_option(Option(Text(f"{left:,} more: scroll down", style="dim"), disabled=True))

    def show_more(self) -> None:
        """Draw options for the next :data:`PAGE` sessions below those drawn, if some have none yet."""
        if self._filling or self._drawn.stop >= len(self.sessions):
            return
        options = self.query_one(SessionList)
        options.remove_option_at_index(options.option_count - 1)  # the "more" marker
        start, stop = self._drawn.stop, min(len(self.sessions), self._drawn.stop + PAGE)
        self._drawn = range(self._drawn.start, stop)
        self._add_options(options, range(start, stop))
        self._more_marker(options)

    def show_earlier(self) -> None:
        """Draw options for the :data:`PAGE` sessions above those drawn (after ``end``), if some have none.

        The list has no way to add options at its top: it is filled again, the view kept where it
        was. The sessions more than :data:`MOST_DRAWN` below the new first are let go (a cursor
        among them comes to the last one kept), so that going up from the last of ten thousand
        fills a few pages at a time, not a growing list (each filling draws every option again).
        """
        if self._filling or not self._drawn.start:
            return
        options = self.query_one(SessionList)
        highlighted = self._highlighted_session()
        scroll_y, old_first = options.scroll_y, self._drawn.start
        first = max(0, old_first - PAGE)
        stop = first + MOST_DRAWN
        if highlighted is not None and highlighted >= stop:
            # Scrolled up (the wheel moves the view, not the cursor): the cursor comes along to the
            # last session kept, or each page above would keep every one down to it, a list growing
            # with every page.
            highlighted = min(stop, self._drawn.stop) - 1
        with self._filling_in():
            self._fill(options, range(first, min(self._drawn.stop, stop)))
            if highlighted is not None:  # first: the list scrolls to it, and the view is put back below
                options.highlighted = self._option_index(highlighted)
            # The view shows what it showed: down by the rows added above the sessions drawn before,
            # less the marker that was there.
            added = options.options[:self._option_index(old_first)]
            options.scroll_to(y=scroll_y + sum(_rows(option) for option in added) - 1, animate=False, immediate=True)

    def show_first(self) -> None:
        """Draw the options from the first session, if the list begins below it (after ``end``)."""
        if self._drawn.start:
            self._draw(0, keep_highlight=False, from_top=True)

    def show_last(self) -> None:
        """Draw an option for the last session, if it has none.

        The sessions left below those drawn are drawn when a page or less, else the last
        :data:`PAGE` alone (pages are added above it as the cursor goes up: :meth:`show_earlier`).
        Drawing every one left costs too much with ten thousand. Measured with 10,000 sessions
        (80x24 and 160x45): their labels took 0.3 s and ``add_options`` 0.8 to 1.8 s more (Textual
        works out every option's height), and after that each refresh of the ages, every second
        (:meth:`refresh_ages`), 0.2 to 0.3 s, and about 1.5 s more when an age changed (each
        height is worked out again). Drawing them in chunks spreads that, and keeps the refreshes.
        The last page alone takes 10 to 40 ms, as the first paint does, and its ages a few ms.
        """
        left = len(self.sessions) - self._drawn.stop
        if left > PAGE:
            self._fill(self.query_one(SessionList), range(len(self.sessions) - PAGE, len(self.sessions)))
        elif left > 0:
            self.show_more()

    def refresh_ages(self) -> None:
        """Re-render the drawn sessions' ages from what the list holds; highlight and scroll stay.

        When a new day (or week) began since the time view was applied, the view is applied anew.
        """
        if not self.is_on_screen:
            return  # folded away (80 columns): see lists.AGES_REFRESH_SECONDS
        if self.time_view.since(format.clock()) != self._since:
            self._filter(keep_options=True)
            return
        self._relabel()

    def _relabel(self) -> None:
        width, now = self._label_width, format.clock()
        self._labelled_width = width
        drawn = self.sessions[self._drawn.start:self._drawn.stop]
        lists.replace_changed_prompts(self.query_one(SessionList), (
            _label(info, info.session_id == self._current, width, now) for info in drawn), start=self._above)

    @property
    def _label_width(self) -> int:
        """The cells an option's text has: the list's width less an option's padding (the pane's
        own before it is laid out). Maximized (f10), the times show their seconds again."""
        return max(EMPTY_HINT_WIDTH, self.query_one(SessionList).option_text_width)

    def on_resize(self) -> None:
        if self._labelled_width != self._label_width and self.is_on_screen:
            self._relabel()

    async def ask_new_title(self, session_id: str) -> None:
        """Open the rename prompt for ``session_id``; its answer comes as :class:`Renamed`.

        The prompt is mounted and its input focused, holding the title as listed with the
        cursor at its end, before this returns: run from a priority binding, that is before the
        app hands on the next key, so keys typed right after f2 all go into the prompt.
        """
        info = next((info for info in self.sessions if info.session_id == session_id), None)
        prompt = PromptScreen("New title for this session:", info.title if info and info.title else "")

        def answered(title: str | None) -> None:
            if title is not None:
                self.post_message(self.Renamed(session_id, title))

        await self.app.push_screen(prompt, answered)
        prompt.focus_answer()

    def filter_hides(self, session_id: str) -> bool:
        """Whether ``session_id`` is listed but the filter typed does not let it through (as after a
        rename away from the filter)."""
        info = next((info for info in self.listed if info.session_id == session_id), None)
        return info is not None and not matches(info, self.query_text)

    @property
    def query_text(self) -> str:
        return self.query_one("#session-filter", Input).value

    @on(OptionList.OptionSelected, "#session-list")
    def _selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        if event.option.id:
            self.post_message(self.Selected(event.option.id))

    @on(OptionList.OptionHighlighted, "#session-list")
    def _highlighted(self, event: OptionList.OptionHighlighted) -> None:
        event.stop()
        # Where the cursor is now, not where the message says: the list may have been filled again since.
        highlighted = self._highlighted_session()
        if highlighted is not None and highlighted >= self._drawn.stop - PAGE // 4:
            self.show_more()
        if highlighted is not None and highlighted < self._drawn.start + PAGE // 4:
            self.show_earlier()

    @on(Input.Changed, "#session-filter")
    def _filter_changed(self, event: Input.Changed) -> None:
        """Filter what the pane holds: no store is asked."""
        event.stop()
        # Cleared, the highlighted session stays so (it went to the open one); while typing, the
        # first match (or the open one) is highlighted, for enter to open.
        self._filter(keep_options=False, keep_highlight=not self.query_text)
        self.screen.refresh_bindings()  # escape clears a filter from the list only while there is one

    @on(Input.Submitted, "#session-filter")
    def _filter_done(self, event: Input.Submitted) -> None:
        """Open the session highlighted, as a picker does: typed "atl", enter opens Atlas. It went to
        the list, and a second enter opened it. With no match, the list (and its hint) takes focus."""
        event.stop()
        options = self.query_one(SessionList)
        option = options.highlighted_option
        if self.query_text.strip() and option is not None and option.id:
            self.post_message(self.Selected(option.id))
        else:  # no filter typed (the open session is highlighted), or no match
            options.focus()


PAGE = 30
"""How many sessions get options at a time: three screens of them at 45 rows (each option wraps
its lines, so a hundred cost a first paint a tenth more)."""

MOST_DRAWN = 4 * PAGE
"""How many sessions keep their options as pages are added above (after ``end``): the rest, below, are
let go. Adding a page above draws every option again, so the cost of each stays that of a few pages."""

ID_MATCH_CHARS = 4
"""How much of a session id a filter must give for the id to match (the start of it needs one less)."""


def matches(info: SessionInfo, query: str) -> bool:
    """Whether the filter ``query`` matches ``info``: by what the list shows, its title (any case).

    Ids are not shown, so one matches only when the query looks like one: at least
    ``ID_MATCH_CHARS`` characters of it, or the start of it from ``ID_MATCH_CHARS - 1`` (``s-4``).
    A single letter never matches an id's hex digits.
    """
    needle = query.strip().casefold()
    if not needle:
        return True
    if needle in _title(info).casefold():
        return True
    session_id = info.session_id.casefold()
    return needle in session_id and (len(needle) >= ID_MATCH_CHARS or
                                     (len(needle) >= ID_MATCH_CHARS - 1 and session_id.startswith(needle)))


@dataclass(frozen=True)
class TimeView:
    """How the sessions pane sorts and filters by time.

    ``window`` is how far back it reaches, in local time: ``day`` from today's midnight,
    ``week`` from this week's Monday at midnight, ``None`` no limit. ``longest`` sorts by total
    run time, longest first (ties by last activity); the others keep the order of last
    activity. A session's time is its last activity, its unstored runs' included (as the list
    orders it).
    """

    name: str
    title: str
    window: Literal["day", "week"] | None = None
    longest: bool = False

    def since(self, now: float) -> float | None:
        """Where the view's window begins for ``now`` (local midnight), or ``None`` when it has none."""
        if self.window is None:
            return None
        today = datetime.datetime.fromtimestamp(now).date()
        first = today - datetime.timedelta(days=today.weekday()) if self.window == "week" else today
        return datetime.datetime.combine(first, datetime.time()).timestamp()

    def apply(self, sessions: list[SessionInfo], since: float | None) -> list[SessionInfo]:
        """``sessions`` (newest first) as the view shows them: those active from ``since``, in its order."""
        if since is not None:
            sessions = [info for info in sessions if _activity(info) >= since]
        if self.longest:  # stable: equal run times stay newest first
            sessions = sorted(sessions, key=lambda info: info.total_run_seconds, reverse=True)
        return sessions


TIME_VIEWS: tuple[TimeView, ...] = (
    TimeView("recent", "Sessions"),
    TimeView("today", "Sessions · today", window="day"),
    TimeView("this week", "Sessions · this week", window="week"),
    TimeView("longest", "Sessions · longest first", longest=True),
)
"""What ``f3`` cycles through, in order; the first is the default (every session, by last activity)."""


def _activity(info: SessionInfo) -> float:
    return info.activity if isinstance(info, SessionListing) else info.last_activity or 0.0


def _rows(option: Option) -> int:
    """The rows ``option`` takes in the list: one a line (the list cuts lines, never wraps them)."""
    return str(option.prompt).count("\n") + 1


def _title(info: SessionInfo) -> str:
    return format.session_title(info.title)


def _label(info: SessionInfo, current: bool, width: int = EMPTY_HINT_WIDTH, now: float | None = None) -> Text:
    """``info`` as the list shows it, in ``width`` cells (the list's, less an option's padding), its age
    counted to ``now`` (the clock's time when ``None``)."""
    title = format.one_line(_title(info), width)
    text = Text(("▶ " if current else "") + title, style="bold" if current else "")
    if info.run_count:
        text.append(f"\n{format.count(info.entry_count, 'entry', 'entries')} · "
                    f"{format.count(info.run_count, 'run')} · {format.duration(info.total_run_seconds)}", style="dim")
    else:  # known only by a run not in it yet: "0 entries · 0 runs · —" would say it is empty
        text.append("\nno finished run yet", style="dim")
    # The time the list is ordered by: a run not stored yet counts (its last save), or a session
    # with an interrupted run newer than its others was listed above them under an older time.
    last = info.activity if isinstance(info, SessionListing) and info.activity else info.last_activity
    text.append(f"\n{format.when_ago(last, now, width)}", style="dim")
    state = info.state if isinstance(info, SessionListing) else None
    if state is not None:  # a run of it is not in it yet: say how that run stands, on a line of its own
        text.append(f"\n{STATE_LABELS.get(state, state)}", style="bold")
    return text
