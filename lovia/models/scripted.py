"""ScriptedModel: a model that plays back scripted turns, for tests and benchmarks."""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from lovia.errors import ModelError
from lovia.models.base import FinishChunk, ModelChunk, ModelRequest, TextChunk, ToolCallChunk, UsageChunk
from lovia.usage import Usage

__all__ = ["ScriptedCall", "ScriptedModel", "ScriptedTurn", "call"]


@dataclass(frozen=True)
class ScriptedCall:
    """One tool call a scripted turn makes."""

    name: str
    arguments: dict[str, Any] | str = field(default_factory=dict)
    call_id: str | None = None


def call(name: str, arguments: dict[str, Any] | str | None = None, *, call_id: str | None = None) -> ScriptedCall:
    """A scripted tool call of ``name`` with ``arguments`` (a dict, or raw JSON text)."""
    return ScriptedCall(name, {} if arguments is None else arguments, call_id)


@dataclass(frozen=True)
class ScriptedTurn:
    """What one model turn streams.

    ``text`` is streamed in pieces of ``chunk_chars`` characters, ``delay`` seconds apart;
    then ``tool_calls`` (several make parallel calls). ``error`` is raised after
    ``fail_after`` chunks (0: before any), to simulate an endpoint that refuses or dies.
    ``finish`` is the finish reason reported (default ``tool_calls`` or ``stop``); ``length``
    plays a turn cut off by the token limit.
    """

    text: str = ""
    tool_calls: Sequence[ScriptedCall] = ()
    chunk_chars: int = 8
    delay: float = 0.0
    error: BaseException | None = None
    fail_after: int = 0
    usage: Usage | None = None
    finish: str | None = None


Script = ScriptedTurn | str | Callable[[ModelRequest], ScriptedTurn | str]


class ScriptedModel:
    """Plays back ``turns`` in order, one per model request, and records every request.

    A turn is a :class:`ScriptedTurn`, a plain string (a text-only reply) or a function of
    the request returning either. Running out of turns raises :class:`ModelError`, which a
    test sees as a failed run.
    """

    offline = True

    def __init__(self, turns: Sequence[Script] = (), *, name: str = "scripted") -> None:
        self.name = name
        self._turns = list(turns)
        self.requests: list[ModelRequest] = []

    def add(self, *turns: Script) -> None:
        """Append more turns to the script."""
        self._turns.extend(turns)

    @property
    def remaining(self) -> int:
        """Turns not played yet."""
        return len(self._turns) - len(self.requests)

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelChunk]:
        index = len(self.requests)
        self.requests.append(request)
        if index >= len(self._turns):
            raise ModelError(f"ScriptedModel {self.name!r} has no turn {index + 1}: the script has {len(self._turns)}")
        script = self._turns[index]
        turn = script(request) if callable(script) else script
        if isinstance(turn, str):
            turn = ScriptedTurn(text=turn)
        for number, chunk in enumerate(self._chunks(turn)):
            if turn.error is not None and number == turn.fail_after:
                raise turn.error
            if turn.delay:
                await asyncio.sleep(turn.delay)
            yield chunk
        if turn.error is not None:
            raise turn.error

    @staticmethod
    def _chunks(turn: ScriptedTurn) -> list[ModelChunk]:
        chunks: list[ModelChunk] = []
        size = max(1, turn.chunk_chars)
        chunks += [TextChunk(turn.text[i:i + size]) for i in range(0, len(turn.text), size)]
        for index, scripted in enumerate(turn.tool_calls):
            arguments = scripted.arguments if isinstance(scripted.arguments, str) else json.dumps(scripted.arguments)
            call_id = scripted.call_id or f"call_{uuid.uuid4().hex[:12]}"
            half = len(arguments) // 2  # arguments arrive in fragments, as from a real endpoint
            chunks.append(ToolCallChunk(index, call_id, scripted.name, arguments[:half]))
            chunks.append(ToolCallChunk(index, None, None, arguments[half:]))
        usage = turn.usage or Usage(requests=1, input_tokens=10, output_tokens=max(1, len(turn.text) // 4))
        chunks.append(UsageChunk(usage))
        chunks.append(FinishChunk(turn.finish or ("tool_calls" if turn.tool_calls else "stop")))
        return chunks
