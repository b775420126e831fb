"""The offline demo model's rules."""

from __future__ import annotations

import pytest

from lovia import BUILTIN_TOOLS, ToolCall, ToolResult, UserMessage
from lovia.builtin_tools import calculate
from lovia.models import DemoModel, ModelRequest, TextChunk, ToolCallChunk


async def respond(*messages, tools=BUILTIN_TOOLS):
    request = ModelRequest("", list(messages), [t.spec for t in tools])
    chunks = [c async for c in DemoModel(delay=0).stream(request)]
    text = "".join(c.text for c in chunks if isinstance(c, TextChunk))
    calls = [(c.name, c.arguments) for c in chunks if isinstance(c, ToolCallChunk)]
    return text, calls


@pytest.mark.parametrize("said, tool_name", [
    ("what time is it?", "current_time"), ("calculate (12 + 30) * 7", "calculate"), ("what is 2+2?", "calculate"),
    ("wait 3", "wait"),
])
async def test_it_calls_the_builtin_tools(said, tool_name):
    _, calls = await respond(UserMessage(text=said))
    assert [name for name, _ in calls] == [tool_name]


async def test_it_reports_tool_results():
    text, calls = await respond(UserMessage(text="calculate 6*7"), ToolCall(call_id="c", name="calculate"),
                                ToolResult(call_id="c", output="6*7 = 42"))
    assert calls == [] and "42" in text


async def test_a_result_with_markdown_marks_shows_as_the_tool_gave_it():
    # `**` in the expression closed the bold the answer put around it: "2**10 = 1024" showed as "210 = 1024**".
    from markdown_it import MarkdownIt

    text, _ = await respond(UserMessage(text="calculate 2**10"), ToolCall(call_id="c", name="calculate"),
                            ToolResult(call_id="c", output="2**10 = 1024"))
    tokens = [t for t in MarkdownIt().parseInline(text) for t in t.children or ()]
    assert [t.content for t in tokens if t.type == "code_inline"] == ["2**10 = 1024"]


async def test_it_remembers_facts_from_history():
    text, _ = await respond(UserMessage(text="My project is called Atlas."),
                            UserMessage(text="What is my project called?"))
    assert "Atlas" in text
    text, _ = await respond(UserMessage(text="What is my dog called?"))
    assert "don't know" in text


async def test_it_says_it_is_a_demo_and_how_to_connect_a_model():
    text, _ = await respond(UserMessage(text="help"))
    assert "offline demo model" in text and "--model" in text
    text, _ = await respond(UserMessage(text="tell me a story"))
    assert "demo" in text


async def test_it_only_calls_tools_it_is_offered():
    text, calls = await respond(UserMessage(text="what time is it?"), tools=[])
    assert calls == [] and text


def test_calculate_is_safe_arithmetic():
    assert calculate.function("2 ** 10") == "2 ** 10 = 1024"
    assert calculate.function("sqrt(16) + pi") .startswith("sqrt(16) + pi = 7.14")
    with pytest.raises(ValueError):
        calculate.function("__import__('os').system('true')")
    with pytest.raises(ValueError, match="digits"):
        calculate.function("9 ** 99999")


async def test_an_echoed_message_keeps_its_markdown_as_typed():
    """A pasted code fence or emphasis is echoed on one line inside a code span, not rendered into the answer."""
    said = "look at this:\n```python\nprint('x')\n```\nand **this** `too`"
    text, _ = await respond(UserMessage(text=said))
    first_line = text.split("\n")[0]
    assert first_line == "You said: ```` look at this: ```python print('x') ``` and **this** `too` ````."
