"""ToolCallView: one tool call with its result, compact and expandable."""

from __future__ import annotations

from rich.cells import cell_len
from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.content import Content
from textual.message import Message
from textual.widgets import Collapsible, Static
from textual.widgets.collapsible import CollapsibleTitle

from lovia.entries import ToolCall, ToolResult
from lovia.stores._search import SearchQuery, match_text
from lovia.tui.format import finish_note, one_line, size
from lovia.tui.widgets.message_view import MessageView, wrapped_match_row

RUNNING = "running…"
RUNNING_AGAIN = "running again…"
STOPPED = "stopped — will run again on resume"
WILL_RUN_AGAIN = "will run again on resume"
RUNNING_ELSEWHERE = "running elsewhere…"
GIVEN = "[given]"
"""Said before a result that was given (the inspector's ``o`` / ``e``) rather than received from the tool."""
PENDING_BY_RUN_STATE = {"running": RUNNING, "elsewhere": RUNNING_ELSEWHERE}
"""What a call without a result says in a reopened run, by the run's state; else :data:`WILL_RUN_AGAIN`."""


ARGUMENTS_AT_LEAST = 8
"""How far a call's arguments are cut, at most, to fit its result on the title's line."""
OUTPUT_AT_LEAST = 12
"""How far its output is cut, at most, after that (past it, the line is cut at the edge)."""


class ToolCallView(MessageView):
    """``⚙ calculate({"expression": "6*7"}) → 6*7 = 42``; enter expands arguments and output.

    A call its turn's end cut off says so: ``⚙ calculate({"expr…) [cut off: the model hit its
    token limit] ✗ …``. A call without a result says what becomes of it: ``running…`` while
    it executes, ``stopped — will run again on resume`` after a stop, ``will run again on
    resume`` in a run reopened from its checkpoint, ``running again…`` while a resume re-runs
    it. A result given in its place (the inspector's ``o`` / ``e``) says so: ``→ [given] sent``.
    Expanding a trimmed output asks (:class:`ArchiveRequested`) for the archived whole.
    """

    class ArchiveRequested(Message):
        """Expanding ``view`` wants the archived full output of its trimmed result."""

        def __init__(self, view: ToolCallView) -> None:
            super().__init__()
            self.view = view

    DEFAULT_CSS = """
    ToolCallView Collapsible { border: none; padding: 0; margin: 0; background: transparent; }
    ToolCallView Collapsible > Contents { padding: 0 0 0 2; }
    ToolCallView .label { color: $text-muted; }
    ToolCallView .output { color: $text; }
    ToolCallView.-error CollapsibleTitle { color: $error; }
    ToolCallView.-pending CollapsibleTitle { color: $accent; }
    """

    def __init__(self, call: ToolCall, result: ToolResult | None = None, *,
                 dangling_state: str = RUNNING, given: bool = False) -> None:
        super().__init__()
        self.call = call
        self.result = result
        self.dangling_state = dangling_state
        self.given = given
        """Whether the result was given (the inspector's ``o`` / ``e``), not received from the tool."""
        self.archived: str | None = None  # the full output, once fetched from the archive

    def compose(self) -> ComposeResult:
        # Titled once mounted, as plain text (see _show_title): a title given here is read as markup.
        with Collapsible(title="", collapsed=True):
            yield Static("arguments", classes="label")
            yield Static(Text(self.call.arguments or "{}"), classes="arguments")
            yield Static("output", classes="label")
            yield Static(Text(self.result.output if self.result else ""), classes="output")
        self._set_classes()

    def on_mount(self) -> None:
        # The transcript's cursor selects a call and enter expands it: its title taking focus made
        # tab stop on every call of the conversation, with nothing on screen to say where focus was.
        title = self.query_one_optional(CollapsibleTitle)
        if title is None:
            return  # removed before its parts were mounted (its session left, the app quit, as it loaded)
        title.can_focus = False
        self._show_title(title)

    def _show_title(self, title: CollapsibleTitle | None = None) -> None:
        """Show the call's title as plain text: the arguments and the output are the model's and the
        tool's, and Collapsible reads a title as markup (``[/]`` in an output raised, ending the app)."""
        title = title or self.query_one(CollapsibleTitle)
        # The room beside the title's ▶ (once laid out; before, the whole title). The title is as
        # wide as its text: the room is the collapsible's.
        width = self.query_one(Collapsible).content_size.width
        room = width - title.styles.gutter.width - cell_len(title.collapsed_symbol) - 1 if width else None
        title.label = Content(self._title(room))

    def on_resize(self) -> None:
        self._show_title()

    def _title(self, room: int | None = None) -> str:
        """The title, fitted to ``room`` cells: the arguments give way first (to a few characters),
        then the output. Cut at the view's edge, a call's result went unseen (``→ 6*7 =``)."""
        arguments, output = 40, 60
        text = self._title_with(arguments, output)
        if room is not None and (over := cell_len(text) - room) > 0:
            shown = cell_len(one_line(self.call.arguments or "", arguments))
            arguments = max(ARGUMENTS_AT_LEAST, shown - over)
            text = self._title_with(arguments, output)
            if self.result is not None and (over := cell_len(text) - room) > 0:
                output = max(OUTPUT_AT_LEAST, min(output, cell_len(one_line(self.result.output, output))) - over)
                text = self._title_with(arguments, output)
        return text

    def _title_with(self, arguments: int, output: int) -> str:
        head = f"⚙ {self.call.name}({one_line(self.call.arguments or '', arguments)})"
        if note := finish_note(self.call.finish_reason):
            head += f" [{note}]"
        if self.result is None:
            return f"{head} … {self.dangling_state}"
        mark = "✗" if self.result.is_error else "→"
        if self.given:  # before the output, which a narrow title cuts: typed in, it read as the tool's own
            mark += f" {GIVEN}"
        trimmed = f" [trimmed {size(self.result.trimmed_chars)}]" if self.result.trimmed_chars else ""
        return f"{head} {mark} {one_line(self.result.output, output)}{trimmed}"

    def _set_classes(self) -> None:
        self.set_class(self.result is None, "-pending")
        self.set_class(bool(self.result and self.result.is_error), "-error")

    def set_result(self, result: ToolResult) -> None:
        """The call's result arrived."""
        self.result = result
        self._show_title()
        self.query_one(".output", Static).update(Text(result.output))
        self._set_classes()

    def set_dangling_state(self, state: str) -> None:
        """What the call, still without a result, says now (one of this module's states)."""
        self.dangling_state = state
        if self.result is None:
            self._show_title()

    def show_archived(self, text: str | None, where: str | None = None) -> None:
        """Show the archived full output (``None``: there is none, say so under the trimmed one)."""
        output = self.query_one(".output", Static)
        if text is None:
            gone = (f"The full output is not in the archive ({where})." if where
                    else "Tool outputs are not archived, so the trimmed text is gone.")
            output.update(Text.assemble(self.result.output if self.result else "", ("\n" + gone, "dim")))
            return
        self.archived = text
        output.update(Text.assemble(text, ("\n(the full output, from the archive)", "dim")))

    @property
    def folds(self) -> bool:
        return True  # its arguments and output fold under its title

    @property
    def expanded(self) -> bool:
        return not self.query_one(Collapsible).collapsed

    def toggle(self) -> None:
        collapsible = self.query_one(Collapsible)
        collapsible.collapsed = not collapsible.collapsed

    @on(Collapsible.Expanded)
    def _expanded(self, event: Collapsible.Expanded) -> None:
        event.stop()
        self.refresh_bindings()  # enter folds it now: the footer says so (however it unfolded)
        if self.result is not None and self.result.trimmed_chars and self.archived is None:
            self.post_message(self.ArchiveRequested(self))

    @on(Collapsible.Collapsed)
    def _collapsed(self, event: Collapsible.Collapsed) -> None:
        event.stop()
        self.refresh_bindings()

    def reveal(self, query: SearchQuery) -> bool:
        """A match in the output unfolds the call (the search indexes outputs, not arguments)."""
        collapsible = self.query_one(Collapsible)
        if not collapsible.collapsed or self.result is None or not match_text(self.result.output, query):
            return False
        collapsible.collapsed = False
        return True

    def match_row(self, query: SearchQuery) -> int | None:
        """The output's row of the first match, once unfolded (see :meth:`reveal`)."""
        if self.result is None or self.query_one(Collapsible).collapsed:
            return None
        # The archived whole starts as the stored output does: the match is on the same row.
        return wrapped_match_row(self, self.query_one(".output", Static), self.result.output, query)

    def copy_text(self) -> str:
        if self.archived is not None:
            return self.archived
        return self.result.output if self.result else self.call.arguments

    def copy_what(self) -> str:
        return "tool output" if self.archived is not None or self.result else "tool call's arguments"
