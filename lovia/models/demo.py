"""DemoModel: the offline default, so ``lovia`` works with no network and no key.

It is not a language model. It follows a few plain rules, says that it is a demo in its
help text, and calls the tools it is offered (the built-ins: ``current_time``,
``calculate``, ``wait``; any ``transfer_to_*`` handoff), so that tool calls, checkpoints,
stop and resume can all be tried offline. It also remembers facts stated earlier in the
conversation ("my project is called Atlas"), so sessions visibly carry history.
"""

from __future__ import annotations

import asyncio
import json
import re
import uuid
from collections.abc import AsyncIterator, Sequence

from lovia.entries import Entry, Handoff, ToolCall, ToolResult, UserMessage
from lovia.models.base import FinishChunk, ModelChunk, ModelRequest, TextChunk, ToolCallChunk, UsageChunk
from lovia.usage import Usage

__all__ = ["DemoModel"]

HELP = """I'm **lovia's offline demo model**: no network, no API key, a few fixed rules.

Try:
- `what time is it?`: calls the `current_time` tool
- `calculate (12 + 30) * 7`: calls `calculate`
- `wait 20`: a slow tool; press **escape** to stop it, then **ctrl+r** (or the runs list) resumes it
- `my project is called Atlas`, then later `what is my project called?`

For a real model, start lovia with `--model ollama:qwen2.5`, `--model openai:gpt-4.1-mini`,
or set `LOVIA_MODEL`."""

_FACT = re.compile(r"\bmy (\w[\w ]{0,30}?) (?:is|are) (?:called |named )?(.+?)[.!]*$", re.IGNORECASE)
_QUESTION = re.compile(r"\bwhat(?:'s| is| are) my (\w[\w ]{0,30}?)(?: called| named)?\s*\??$", re.IGNORECASE)
_WAIT = re.compile(r"\b(?:wait|sleep|slow)\D*(\d+(?:\.\d+)?)?", re.IGNORECASE)
_TIME = re.compile(r"\b(time|date|today|clock)\b", re.IGNORECASE)
_GREETING = re.compile(r"^\s*(hi|hello|hey|good (morning|afternoon|evening))\b", re.IGNORECASE)
_HANDOFF = re.compile(r"\b(?:transfer|hand ?off|talk to|switch to)\b(?: (?:me )?to)? (\w+)", re.IGNORECASE)


class DemoModel:
    """The offline rule-following model. ``delay`` is the pause between streamed words."""

    name = "demo"
    offline = True

    def __init__(self, *, delay: float = 0.02) -> None:
        self.delay = delay

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelChunk]:
        text, calls = self._respond(request)
        words = re.findall(r"\S+\s*|\s+", text)
        for word in words:
            if self.delay:
                await asyncio.sleep(self.delay)
            yield TextChunk(word)
        for index, (name, arguments) in enumerate(calls):
            yield ToolCallChunk(index, f"call_{uuid.uuid4().hex[:12]}", name, json.dumps(arguments))
        prompt = sum(len(getattr(e, "text", "") or getattr(e, "output", "")) for e in request.messages) // 4
        yield UsageChunk(Usage(requests=1, input_tokens=prompt + len(request.instructions) // 4,
                               output_tokens=max(1, len(words))))
        yield FinishChunk("tool_calls" if calls else "stop")

    def _respond(self, request: ModelRequest) -> tuple[str, list[tuple[str, dict]]]:
        messages = list(request.messages)
        tools = {spec.name for spec in request.tools}
        pending = _trailing_results(messages)
        if pending:
            return _summarize(pending), []
        last = next((e for e in reversed(messages) if isinstance(e, UserMessage)), None)
        said = (last.text if last else "").strip()
        if not said:
            return "Say something and I'll answer. Type `help` to see what the demo can do.", []
        if said.lower().strip("?! .") in ("help", "what can you do", "who are you"):
            return HELP, []

        handoff = _HANDOFF.search(said)
        if handoff:
            target = f"transfer_to_{handoff.group(1).lower()}"
            if target in tools:
                return "", [(target, {})]
        question = _QUESTION.search(said)
        if question:
            return _recall(question.group(1), messages[:-1]), []
        fact = _FACT.search(said)
        if fact and not said.endswith("?"):
            return f"Got it: your {fact.group(1).lower()} is **{fact.group(2).strip()}**. I'll remember that.", []
        wait = _WAIT.search(said)
        if wait and "wait" in tools:
            seconds = float(wait.group(1) or 10)
            unit = "second" if seconds == 1 else "seconds"  # "a 8-second step" read wrong
            return f"Starting a step of {seconds:g} {unit}.\n", [("wait", {"seconds": seconds})]
        if _TIME.search(said) and "current_time" in tools:
            return "", [("current_time", {})]
        expression = _math_expression(said)
        if expression and "calculate" in tools:
            return "", [("calculate", {"expression": expression})]
        if _GREETING.match(said):
            return "Hello! I'm the offline demo model. Type `help` to see what I can do.", []
        return (
            f"You said: {_quoted(said)}.\n\nI'm the offline **demo** model, so I only follow a few rules. "
            "Type `help` for them, or connect a real model with `--model`."
        ), []


def _quoted(said: str, width: int | None = 60) -> str:
    """``said`` on one line as a Markdown code span, so fences, stars or links in it show as typed; cut
    to ``width`` characters unless it is ``None``."""
    flat = " ".join(said.split())
    flat = flat if width is None or len(flat) <= width else flat[: width - 1] + "…"
    longest = max((len(run) for run in re.findall(r"`+", flat)), default=0)
    ticks = "`" * (longest + 1)
    pad = " " if flat.startswith("`") or flat.endswith("`") else ""  # else the ticks would join the span's own
    return f"{ticks}{pad}{flat}{pad}{ticks}"


def _trailing_results(messages: Sequence[Entry]) -> list[tuple[ToolCall | None, ToolResult]]:
    """The tool results at the end of the transcript, with their calls: what to report on."""
    calls: dict[str, ToolCall] = {}
    results: list[ToolResult] = []
    for entry in reversed(messages):
        if isinstance(entry, ToolResult):
            results.append(entry)
        elif isinstance(entry, ToolCall):
            calls[entry.call_id] = entry
        elif not isinstance(entry, Handoff):
            break
    return [(calls.get(result.call_id), result) for result in reversed(results)]


def _math_expression(said: str) -> str | None:
    """The arithmetic in ``said``, if that is all it asks for."""
    expression = re.sub(r"^(?:please\s+)?(?:calculate|compute|evaluate|what is|what's)\s*", "", said.strip(),
                        flags=re.IGNORECASE).rstrip("?!. ").strip()
    if re.fullmatch(r"(?:[-+*/%^().\d\s]|sqrt|pi|abs|round)+", expression) and re.search(r"\d", expression):
        return expression
    return None


def _summarize(pairs: list[tuple[ToolCall | None, ToolResult]]) -> str:
    lines = []
    for tool_call, result in pairs:
        name = tool_call.name if tool_call else result.name or "tool"
        if result.is_error:
            lines.append(f"The `{name}` tool failed: {result.output}")
        elif name == "current_time":
            lines.append(f"It is **{result.output}**.")
        elif name == "calculate":
            lines.append(_quoted(result.output, width=None))  # as a code span: `2**10` is no bold
        elif name.startswith("transfer_to_"):
            lines.append(f"{result.output} How can I help?")
        else:
            lines.append(f"Done: {result.output}.")
    return "\n".join(lines)


def _recall(subject: str, history: Sequence[Entry]) -> str:
    subject = subject.strip().lower()
    for entry in reversed(history):
        if isinstance(entry, UserMessage):
            fact = _FACT.search(entry.text.strip())
            if fact and fact.group(1).strip().lower() == subject:
                return f"Your {subject} is called **{fact.group(2).strip()}**."
    return f"I don't know your {subject} yet. Tell me: “my {subject} is called …”."
