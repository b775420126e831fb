"""ToolCallView: one tool call with its result, compact and expandable."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.widgets import Collapsible, Static

from lovia.entries import ToolCall, ToolResult
from lovia.tui.format import finish_note, one_line, size
from lovia.tui.widgets.message_view import MessageView


class ToolCallView(MessageView):
    """``⚙ calculate({"expression": "6*7"}) → 6*7 = 42``; enter expands arguments and output.

    A call its turn's end cut off says so: ``⚙ calculate({"expr…) [cut off: the model hit its
    token limit] ✗ …``.
    """

    DEFAULT_CSS = """
    ToolCallView Collapsible { border: none; padding: 0; margin: 0; background: transparent; }
    ToolCallView Collapsible > Contents { padding: 0 0 0 2; }
    ToolCallView .label { color: $text-muted; }
    ToolCallView .output { color: $text; }
    ToolCallView.-error CollapsibleTitle { color: $error; }
    ToolCallView.-pending CollapsibleTitle { color: $accent; }
    """

    def __init__(self, call: ToolCall, result: ToolResult | None = None, *,
                 dangling_state: str = "running…") -> None:
        super().__init__()
        self.call = call
        self.result = result
        self.dangling_state = dangling_state

    def compose(self) -> ComposeResult:
        with Collapsible(title=self._title(), collapsed=True):
            yield Static("arguments", classes="label")
            yield Static(Text(self.call.arguments or "{}"), classes="arguments")
            yield Static("output", classes="label")
            yield Static(Text(self.result.output if self.result else ""), classes="output")
        self._set_classes()

    def _title(self) -> str:
        head = f"⚙ {self.call.name}({one_line(self.call.arguments or '', 40)})"
        if note := finish_note(self.call.finish_reason):
            head += f" [{note}]"
        if self.result is None:
            return f"{head} … {self.dangling_state}"
        mark = "✗" if self.result.is_error else "→"
        trimmed = f" [trimmed {size(self.result.trimmed_chars)}]" if self.result.trimmed_chars else ""
        return f"{head} {mark} {one_line(self.result.output, 60)}{trimmed}"

    def _set_classes(self) -> None:
        self.set_class(self.result is None, "-pending")
        self.set_class(bool(self.result and self.result.is_error), "-error")

    def set_result(self, result: ToolResult) -> None:
        """The call's result arrived."""
        self.result = result
        collapsible = self.query_one(Collapsible)
        collapsible.title = self._title()
        self.query_one(".output", Static).update(Text(result.output))
        self._set_classes()

    def toggle(self) -> None:
        collapsible = self.query_one(Collapsible)
        collapsible.collapsed = not collapsible.collapsed

    def copy_text(self) -> str:
        return self.result.output if self.result else self.call.arguments
