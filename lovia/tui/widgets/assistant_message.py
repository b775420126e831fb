"""AssistantMessageView: the model's text as markdown, streamed as it arrives."""

from __future__ import annotations

import re

from textual.app import ComposeResult
from textual.widgets import Markdown, Static
from textual.widgets.markdown import MarkdownStream

from lovia.entries import AssistantMessage
from lovia.tui.format import finish_note
from lovia.tui.widgets.message_view import MessageView

_FENCE = re.compile(r"```[^\n]*\n(.*?)(?:```|\Z)", re.S)


class AssistantMessageView(MessageView):
    """Markdown with highlighted code blocks; ``write`` appends without re-rendering it all.

    A message whose turn ended for an unusual reason says so under it, e.g. "cut off: the
    model hit its token limit".
    """

    DEFAULT_CSS = """
    AssistantMessageView { margin: 1 0 0 0; }
    AssistantMessageView .who { color: $secondary; text-style: bold; }
    AssistantMessageView Markdown { margin: 0; padding: 0; background: transparent; }
    AssistantMessageView .finish { color: $warning; }
    """

    def __init__(self, text: str = "", agent: str | None = None, finish_reason: str | None = None) -> None:
        super().__init__()
        self.text = text
        self.agent = agent or "assistant"
        self.finish_reason = finish_reason
        self._stream: MarkdownStream | None = None

    def compose(self) -> ComposeResult:
        yield Static(self.agent, classes="who")
        yield Markdown(self.text)
        if note := finish_note(self.finish_reason):
            yield Static(note, classes="finish")

    async def write(self, fragment: str) -> None:
        """Append streamed text."""
        self.text += fragment
        if self._stream is None:
            self._stream = Markdown.get_stream(self.query_one(Markdown))
        await self._stream.write(fragment)

    async def finish(self, message: AssistantMessage | None = None) -> None:
        """The message is complete: flush what is pending; ``message`` as stored says how its turn ended."""
        if self._stream is not None:
            await self._stream.stop()
            self._stream = None
        if message is not None and not self.finish_reason and (note := finish_note(message.finish_reason)):
            self.finish_reason = message.finish_reason
            await self.mount(Static(note, classes="finish"))

    def copy_text(self) -> str:
        return self.text

    def code_blocks(self) -> list[str]:
        """The contents of the message's fenced code blocks."""
        return [block.rstrip("\n") for block in _FENCE.findall(self.text)]
