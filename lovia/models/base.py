"""The Model protocol: one streamed model turn.

A model receives a :class:`ModelRequest` (instructions, the transcript so far, the tools on
offer) and yields chunks: text, fragments of tool calls, usage and a finish reason. The
runner assembles the chunks into entries; a model never touches a store.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

from lovia.entries import Entry
from lovia.tools import ToolSpec
from lovia.usage import Usage

__all__ = [
    "DEFAULT_MODEL_TIMEOUT",
    "FinishChunk",
    "Model",
    "ModelChunk",
    "ModelRequest",
    "TextChunk",
    "ToolCallChunk",
    "UsageChunk",
]


DEFAULT_MODEL_TIMEOUT = 120.0
"""Seconds a model server may send nothing (before its first chunk, or between two) before a request fails."""


@dataclass(frozen=True, slots=True)
class ModelRequest:
    """One model turn's input."""

    instructions: str
    messages: Sequence[Entry]
    tools: Sequence[ToolSpec] = ()
    agent: str = ""


@dataclass(frozen=True, slots=True)
class TextChunk:
    """A piece of the assistant's text."""

    text: str


@dataclass(frozen=True, slots=True)
class ToolCallChunk:
    """A fragment of tool call number ``index`` of this turn.

    ``call_id`` and ``name`` arrive in some fragment (usually the first); ``arguments``
    fragments are concatenated in order.
    """

    index: int
    call_id: str | None = None
    name: str | None = None
    arguments: str = ""


@dataclass(frozen=True, slots=True)
class UsageChunk:
    """Tokens the endpoint reported for this turn."""

    usage: Usage = field(default_factory=Usage)


@dataclass(frozen=True, slots=True)
class FinishChunk:
    """The turn is over; ``reason`` as the endpoint gave it (``stop``, ``tool_calls``, ...)."""

    reason: str | None = None


@dataclass(frozen=True, slots=True)
class RetryChunk:
    """The request failed before anything of the answer came, in a way worth asking again
    (``reason``: the error's message, safe to show), and the model asks again ``wait``
    seconds from now. A model that retries on its own says so with this chunk, so the wait
    is shown for what it is and not counted as the model's time to its first token."""

    reason: str
    wait: float


ModelChunk = TextChunk | ToolCallChunk | UsageChunk | FinishChunk | RetryChunk


@runtime_checkable
class Model(Protocol):
    """Something that streams one model turn.

    ``name`` is how the UI labels it; ``offline`` is true for models that need no network.
    ``stream`` raises :class:`~lovia.errors.ModelError` when the endpoint refuses or dies.
    """

    name: str
    offline: bool

    def stream(self, request: ModelRequest) -> AsyncIterator[ModelChunk]:
        ...
