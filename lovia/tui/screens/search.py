"""SearchScreen (ctrl+f): find words across every session, and open one at the match.

Typing searches as it goes (a pause of :data:`TYPING_PAUSE` after the last key): the hits are
listed newest first (titles given to sessions first), each with its session's title, what
matched (your message, an answer, a tool call, a tool output, a title), when, and a snippet
with the match highlighted. ``enter`` opens the session with the cursor on the hit's entry;
``down`` goes from the query to the list, ``up`` at its top back; ``escape`` closes.

What the screen dismisses with, :class:`SearchResults`, is what ``n`` and ``N`` in the
transcript then step through (:class:`MatchNavigator`): the matches of the open session in
order, then the next (or previous) session of the results.
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass, field
from typing import ClassVar

from rich.cells import cell_len
from rich.text import Text
from textual import events, on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.timer import Timer
from textual.widgets import Input, OptionList, Static
from textual.widgets.option_list import Option

from lovia.errors import LoviaError, UserError
from lovia.session import SearchHit
from lovia.stores._search import ELLIPSIS, MARK_CLOSE, MARK_OPEN, SearchQuery, one_line, parse_query, unmark
from lovia.tui import format
from lovia.tui.backend import SEARCH_LIMIT, ChatBackend
from lovia.tui.keymap import keymap_of
from lovia.tui.widgets.lists import StoppingOptionList, replace_changed_prompts
from lovia.tui.widgets.text_input import TextInput

TYPING_PAUSE = 0.15
"""Seconds after the last key before the query is searched (each key does not cost a search)."""
SESSION_MATCHES = 1000
"""Matches of one session ``n`` and ``N`` step through."""
KINDS = {"user": "you", "assistant": "answer", "tool_call": "tool call", "tool_result": "tool output",
         "title": "title"}
"""How a hit's kind reads in the list."""
HINT = 'Words match in any case and without accents; "a phrase", prefix*, -leave_out.'
LABEL_WIDTH = 71
"""The cells a hit's label is fitted to before the list is laid out (what 80 columns give it with a scrollbar)."""


@dataclass(frozen=True)
class SearchResults:
    """A search the user opened a hit of: the query, its hits, and which one was opened."""

    query: str
    hits: tuple[SearchHit, ...]
    chosen: int

    @property
    def hit(self) -> SearchHit:
        return self.hits[self.chosen]


def hit_label(hit: SearchHit, width: int, now: float | None = None) -> Text:
    """Two lines of at most ``width`` cells (at least one): the session's title, what matched and when;
    then the snippet, the matches highlighted. A line wider than its option wraps, and can push the
    snippet out of it (the list measures an option's height once, not at every width)."""
    width = max(width, 1)
    head = Text(no_wrap=True, overflow="ellipsis")
    what = f"  {KINDS.get(hit.kind, hit.kind)}" + (f"  {format.ago(hit.at, now)}" if hit.at is not None else "")
    # The title is cut to leave what matched and when their room: a long one pushed them out of sight.
    head.append(format.one_line(hit.title or hit.session_id, max(width - cell_len(what), 12)), style="bold")
    head.append(what, style="dim")
    text, matches = in_view(*shown_snippet(hit), max(width - 2, 1))
    snippet = Text("  " + text, no_wrap=True, overflow="ellipsis")
    for start, end in matches:
        snippet.stylize("bold reverse", start + 2, end + 2)
    for line in (head, snippet):
        line.truncate(width, overflow="ellipsis")
    return Text("\n", no_wrap=True).join([head, snippet])


def in_view(text: str, matches: tuple[tuple[int, int], ...], room: int) -> tuple[str, tuple[tuple[int, int], ...]]:
    """``text`` cut on the left when its first match would end past ``room`` cells, so that the match
    shows with some words before it; the offsets moved with the text.

    A snippet is a dozen words around the match, whatever the width: a dozen long ones (paths,
    long identifiers) put the match past the right edge of an 80-column list, which cut it off."""
    if not matches or cell_len(text[:matches[0][1]]) < room:  # the last cell is the cut's ellipsis
        return text, matches
    start = matches[0][0]
    cut = start
    while cut > 0 and cell_len(text[cut - 1:start]) < room // 3:  # a third of the line before the match
        cut -= 1
    space = text.find(" ", cut, start)
    if space >= 0:  # from a word's start
        cut = space + 1
    shift = len(ELLIPSIS) - cut
    return ELLIPSIS + text[cut:], tuple((s + shift, e + shift) for s, e in matches if s >= cut)


def shown_snippet(hit: SearchHit) -> tuple[str, tuple[tuple[int, int], ...]]:
    """The hit's snippet and its matches' offsets as the transcript shows the entry: an answer's
    Markdown syntax left out (``**294**`` reads ``294``, a link its text), the other kinds as stored
    (a tool's output is shown as it came). The matches are marked before the syntax goes, so the
    offsets move with the text. A link whose address holds a match stays as written (the mark
    makes the address no address), and an image's alt text goes with the image. A line's list
    marker (``- ``, ``1. ``), heading's ``#`` and quote's ``>`` go too: the hit's ``breaks`` tell
    where the snippet's lines began (a `` - `` inside a line is a dash, and stays)."""
    if hit.kind != "assistant":
        return hit.snippet, hit.matches
    lines = _with_line_breaks(hit)
    marked: list[str] = []
    done = 0
    for start, end in hit.matches:
        marked += (lines[done:start], MARK_OPEN, lines[start:end], MARK_CLOSE)
        done = end
    marked.append(lines[done:])
    # The snippet is one line: a code block's fences are inline there, where Markdown keeps them.
    # The text is cut from the stored text: emphasis or a code span whose other half is outside
    # the cut is not Markdown there either, and its marks go (from text, not from code: ``2**10``
    # in a code span is a power, not emphasis).
    joined = "".join(marked)
    pieces = _FENCE.split(joined)
    begins_line = not hit.snippet.startswith(ELLIPSIS)  # the snippet's start is its entry's
    # A code span the cut went through leaves a backtick whose other half is outside: paired with
    # the next one, it made code of the text between ("the `current_time` tool" lost its spaces).
    if not begins_line:
        pieces[0] = _without_code_mark(pieces[0], pieces[0].find("`"), closing=True)
    if hit.snippet.endswith(ELLIPSIS):
        pieces[-1] = _without_code_mark(pieces[-1], pieces[-1].rfind("`"), closing=False)
    if len(pieces) > 1 and _starts_outside_code(hit.snippet):
        # The pieces between fences are in turn text and a code block's code, shown as written.
        plain = " ".join(
            one_line(piece) if in_code else
            format.plain_text(_without_line_marks(piece, begins_line and at == 0), text=_without_unpaired_marks)
            for at, (in_code, piece) in enumerate(zip(itertools.cycle((False, True)), pieces)))
    else:
        # No fence, or the cut may have begun inside a block: which piece is code cannot be told,
        # so all of it is read as text (a block's code then loses what reads as emphasis).
        plain = format.plain_text(_without_line_marks(" ".join(pieces), begins_line),
                                  text=_without_unpaired_marks)
    return unmark(_SPACES.sub(" ", plain.strip()))


def _without_code_mark(text: str, at: int, *, closing: bool) -> str:
    """``text`` without the backtick at ``at`` when it is a lone one that reads as a code span's end
    (``closing``: after a word, before a space or a stop) or start (before a word, after a space):
    the half of a span the snippet's cut went through."""
    if at < 0:
        return text
    before, after = _beside(text, at, -1), _beside(text, at, 1)
    if "`" in (before, after):
        return text
    if closing:
        lone = bool(before) and not before.isspace() and not (after.isalnum() or after == "_")
    else:
        lone = (not before or before.isspace() or before in "([{") and (after.isalnum() or after == "_")
    return text[:at] + text[at + 1:] if lone else text


def _beside(text: str, at: int, step: int) -> str:
    """The character next to ``text[at]`` in the direction ``step``, over the matches' marks ("" at an end)."""
    at += step
    while 0 <= at < len(text) and text[at] in (MARK_OPEN, MARK_CLOSE):
        at += step
    return text[at] if 0 <= at < len(text) else ""


def _with_line_breaks(hit: SearchHit) -> str:
    """The hit's snippet with its line breaks back where its ``breaks`` say (the same length)."""
    if not hit.breaks:
        return hit.snippet
    characters = list(hit.snippet)
    for at in hit.breaks:
        if 0 <= at < len(characters) and characters[at] == " ":
            characters[at] = "\n"
    return "".join(characters)


def _without_line_marks(text: str, begins_line: bool) -> str:
    """``text`` on one line without the list markers, headings' ``#`` and quotes' ``>`` that begin its
    lines (its start is a line's start when ``begins_line``): a snippet joins its lines, where Markdown
    reads those marks at a line's start only."""
    if "|" in text:
        text = _without_table_pipes(text)
    if begins_line:
        text = _LINE_MARKS.sub("", "\n" + text)[1:]
    elif "\n" in text:
        text = _LINE_MARKS.sub("", text)
    return one_line(text)


def _without_table_pipes(text: str) -> str:
    """``text`` with a table's rows as their cells' words and its rule under the header left out.

    A row is a line that begins and ends with a pipe, or one of them (the snippet may have cut it
    on either side) with a rule in the snippet or at least three pipes;
    a pipe inside a line of prose (``ls | grep``) is no table's, and an escaped one (``\\|``) is a
    cell's text, shown as ``|`` (in a code span too, as a table shows it)."""
    lines = text.split("\n")
    bare = [line.strip(" \t" + MARK_OPEN + MARK_CLOSE + ELLIPSIS) for line in lines]
    rules = {at for at, line in enumerate(bare) if "|" in line and _TABLE_RULE.fullmatch(line)}
    kept = []
    for at, (line, cells) in enumerate(zip(lines, bare, strict=True)):
        if at in rules:
            continue
        # Both ends a pipe; or one (the snippet cut the row) where a rule shows it is a table, or with
        # cells between: a code line the cut left outside its block (``|> Enum.map``, ``|x| x + 1``) is none.
        ends = (cells[:1] == "|") + (cells[-1:] == "|")
        row = ends == 2 or (ends == 1 and (bool(rules) or len(_CELL_PIPE.findall(cells)) >= 3))
        kept.append(_CELL_PIPE.sub(" ", line).replace("\\|", "|") if row else line)
    return "\n".join(kept)


def _starts_outside_code(snippet: str) -> bool:
    """Whether ``snippet`` begins outside a code block: at the start of its entry (not cut there), or
    with its first fence naming a language (only an opening fence does)."""
    first = _FENCE.search(snippet)
    return not snippet.startswith(ELLIPSIS) or (first is not None and bool(first.group().lstrip("`~")))


def _without_unpaired_marks(text: str) -> str:
    return _UNPAIRED.sub("", text)


_FENCE = re.compile(r"(?:`{3,}|~{3,})[\w+#.-]*")
"""A code block's fence and its language, as a one-line snippet holds them."""
_UNPAIRED = re.compile(r"`+|\*{2,}|_{2,}|~{2,}")
"""Markdown's code span and emphasis marks (a lone ``*`` or ``_`` is left: ``6*7``, ``snake_case``)."""
_SPACES = re.compile(" {2,}")

_TABLE_RULE = re.compile(r"\|?[ \t]*:?-+:?[ \t]*(?:\|[ \t]*:?-+:?[ \t]*)*\|?")
"""The line under a table's header: ``|---|:-:|``."""
_CELL_PIPE = re.compile(r"(?<!\\)\|")
"""A pipe between a table's cells (not an escaped one, which is a cell's text)."""
_LINE_MARKS = re.compile(r"(?<=\n)(?:[ \t]*(?:>[ \t]?|(?:[-*+]|\d{1,9}[.)])[ \t]+|#{1,6}[ \t]+))+")
"""What begins a Markdown line without being its text: quotes' ``>``, list markers (``-``, ``*``, ``+``,
``1.``, ``1)``) and a heading's ``#``, nested in any order (``> - item``)."""


class SearchScreen(ModalScreen[SearchResults | None]):
    """A query, and the hits across every session; dismisses with the hit opened, or ``None``."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "close", "Close", id="search.close"),
        Binding("down", "to_results", "Results", show=False, id="search.to_results"),
        Binding("up", "to_query", "Query", show=False, id="search.to_query"),
    ]

    DEFAULT_CSS = """
    SearchScreen { align: center top; }
    SearchScreen > Vertical {
        width: 110; max-width: 100%; height: 100%; max-height: 40;
        border: thick $accent; background: $surface; padding: 0 1;
    }
    SearchScreen #search-status { color: $text-muted; height: auto; }
    SearchScreen #search-results { height: 1fr; border: none; }
    SearchScreen #search-results > .option-list--option { padding: 0 0 1 0; }
    """

    def __init__(self, backend: ChatBackend, query: str = "") -> None:
        super().__init__()
        self.backend = backend
        self.query_text = query
        self.hits: list[SearchHit] = []
        self.searched: str | None = None  # the query the listed hits are for
        self._timer: Timer | None = None
        self._open_once_searched: str | None = None  # enter came before this query's hits: open its first
        self._labelled_width = 0  # the width the listed hits' labels were fitted to

    def compose(self) -> ComposeResult:
        query = TextInput(value=self.query_text, placeholder="Search every session", id="search-query",
                      select_on_focus=False)
        query.cursor_position = len(self.query_text)
        with Vertical():
            yield query
            yield Static(HINT, id="search-status", markup=False)
            yield StoppingOptionList(id="search-results")

    def on_mount(self) -> None:
        query = self.query_one_optional("#search-query", Input)
        if query is None:
            return  # closed before its parts were mounted: the app quit as this opened
        self.set_focus(query)
        # The last query, selected: typing replaces it (a new word was appended to it), and a cursor
        # key keeps it to refine. Once, not on every focus: back from the results, it is as left.
        query.select_all()
        if self.query_text.strip():
            self.run_search(self.query_text)

    @property
    def results(self) -> StoppingOptionList:
        return self.query_one("#search-results", StoppingOptionList)

    @on(Input.Changed, "#search-query")
    def _typed(self, event: Input.Changed) -> None:
        self.query_text = event.value  # the query as it stands, kept for the next search when this one closes
        if event.value != self._open_once_searched:
            self._open_once_searched = None  # typed on after enter: it was not the query meant
        if self._timer is not None:
            self._timer.stop()
        self._timer = self.set_timer(TYPING_PAUSE, lambda: self.run_search(event.value))

    @work(exclusive=True, group="search")
    async def run_search(self, query: str) -> None:
        """Search ``query`` and list its hits (a later search cancels this one)."""
        status = self.query_one("#search-status", Static)
        if not query.strip():
            self._forget_hits()
            status.update(HINT)
            return
        try:
            hits = await self.backend.search(query)
        except UserError as error:
            self._forget_hits()  # the last query's hits: they would read as this one's, and open
            status.update(str(error))
            return
        except LoviaError as error:
            self._forget_hits()
            status.update(f"The search failed: {error}")
            return
        self.hits, self.searched = hits, query
        results = self.results
        results.clear_options()
        self._labelled_width = width = self.label_width
        now = format.clock()  # every age of one listing counted from one moment
        results.add_options([Option(hit_label(hit, width, now), id=str(i)) for i, hit in enumerate(hits)])
        if hits:
            results.highlighted = 0
        more = "; more may exist, add a word to narrow it" if len(hits) >= SEARCH_LIMIT else ""
        found = format.count(len(hits), "match", "matches")
        close = keymap_of(self).first_key_text("search.close")  # enter is the list's own, not in the keymap
        status.update(f"{found}{more}. enter opens the highlighted one, {close} closes." if hits
                      else f"Nothing matches. {HINT}")
        if self._open_once_searched == query:
            self._open_once_searched = None
            self._open(0)

    @property
    def label_width(self) -> int:
        """The cells a hit's label has: the list's width less an option's padding and a cell that keeps
        the text off the edge, and less the scrollbar's room when the hits may not all fit its height
        (:data:`LABEL_WIDTH` before the list is laid out).

        The scrollbar comes with the hits, after their labels were cut: counted out of the list's
        width as it was, a long title's first line came out a cell too wide once the hits
        overflowed; it wrapped ("26 days" / "ago") and the snippet went out of its hit (80 columns).
        The most a hit can take, its two lines and its padding, is weighed against the height, so
        a scrollbar is never left out; a list without one keeps the two cells."""
        results = self.results
        region = results.content_region  # with the scrollbar's room, whether or not one shows now
        if not region:
            return LABEL_WIDTH
        padding = results.get_component_styles("option-list--option").padding
        width = region.width - padding.width - 1
        if len(self.hits) * (2 + padding.height) > region.height:
            width -= results.styles.scrollbar_size_vertical
        return max(1, width)

    def on_resize(self, event: events.Resize) -> None:
        self.call_after_refresh(self._relabel)  # once the list has its new width

    def _relabel(self) -> None:
        """Fit the listed hits' labels to the list's width again (a terminal resized); highlight and scroll stay."""
        width = self.label_width
        if width == self._labelled_width or not self.hits or self.results.option_count != len(self.hits):
            return
        self._labelled_width = width
        now = format.clock()
        replace_changed_prompts(self.results, (hit_label(hit, width, now) for hit in self.hits))

    def _forget_hits(self) -> None:
        self.hits, self.searched = [], None
        self.results.clear_options()

    @on(Input.Submitted, "#search-query")
    def _submitted(self, event: Input.Submitted) -> None:
        event.stop()
        if self.searched != event.value:  # typed faster than the pause: search it now, open its first hit
            self._open_once_searched = event.value
            self.run_search(event.value)
            return
        self._open(self.results.highlighted)

    @on(OptionList.OptionSelected, "#search-results")
    def _selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        self._open(event.option_index)

    def _open(self, index: int | None) -> None:
        # Only from the top of the stack: dismiss pops whatever screen is there (a dialog opened over
        # this one while a slow search went on would go in its place).
        if index is None or not 0 <= index < len(self.hits) or self.searched is None or self.app.screen is not self:
            return
        self.dismiss(SearchResults(self.searched, tuple(self.hits), index))

    def action_close(self) -> None:
        self.dismiss(None)

    def action_to_results(self) -> None:
        if self.focused is self.query_one("#search-query") and self.hits:
            self.set_focus(self.results)
        elif self.focused is self.results:
            self.results.action_cursor_down()

    def action_to_query(self) -> None:
        results = self.results
        if self.focused is results and not results.highlighted:
            self.set_focus(self.query_one("#search-query", Input))
        elif self.focused is results:
            results.action_cursor_up()


@dataclass
class MatchNavigator:
    """What ``n`` and ``N`` step through: the open session's matches in order, then the results' other sessions.

    A session's matches are read (once, when first stepped in) by a search within it, so every
    match of the session is reached, not only those among the results. Past its last match, ``n``
    opens the next session of the results (in their order) at its first match; ``N`` before the
    first opens the previous one at its last.
    """

    backend: ChatBackend
    results: SearchResults
    _positions: dict[str, list[int]] = field(default_factory=dict)
    _shown: tuple[str, int, int] | None = None  # see shown_at

    def shown_at(self, session_id: str, cursor: int | None, position: int) -> None:
        """The match at ``position`` was shown with the cursor at ``cursor``: a tool result's match puts it
        on the call, before the result, and the next step goes on from the result, not back to it."""
        self._shown = (session_id, cursor, position) if cursor is not None else None

    @property
    def match(self) -> SearchQuery:
        """The results' query, parsed: what a message shows as a match (the store parsed it the same way)."""
        return parse_query(self.results.query)

    @property
    def sessions(self) -> list[str]:
        """The results' sessions, in the order they first appear."""
        return list(dict.fromkeys(hit.session_id for hit in self.results.hits))

    async def positions(self, session_id: str) -> list[int]:
        """Where the query matches in ``session_id``, in order."""
        if session_id not in self._positions:
            hits = await self.backend.search(self.results.query, limit=SESSION_MATCHES, session_id=session_id)
            self._positions[session_id] = sorted({h.position for h in hits if h.position is not None})
        return self._positions[session_id]

    async def step(self, session_id: str | None, position: int | None, step: int) -> tuple[str, int | None] | None:
        """From ``position`` in ``session_id`` (``None``: none yet), the next (``step`` 1) or previous (-1) match:
        ``(session, position)``; ``None`` when there is none in that direction."""
        if self._shown is not None and self._shown[:2] == (session_id, position):
            position = self._shown[2]  # the cursor is where the last match shown put it
        if session_id is not None:
            here = await self.positions(session_id)
            if position is None:
                ahead = here if step > 0 else list(reversed(here))
            else:
                ahead = [p for p in here if p > position] if step > 0 else [p for p in reversed(here) if p < position]
            if ahead:
                return session_id, ahead[0]
        sessions = self.sessions
        index = sessions.index(session_id) if session_id in sessions else (-1 if step > 0 else len(sessions))
        if not 0 <= index + step < len(sessions):
            return None
        other = sessions[index + step]
        there = await self.positions(other)
        if not there:
            return other, None  # its title matched, none of its entries: the session, at its end
        return other, there[0] if step > 0 else there[-1]
