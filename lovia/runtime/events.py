"""Typed events that ``Runner.stream`` yields, in the order they happen."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from lovia.entries import AssistantMessage, ToolCall, ToolResult
from lovia.usage import Usage

if TYPE_CHECKING:
    from lovia.runtime.result import RunResult

__all__ = [
    "HandoffOccurred",
    "MessageCompleted",
    "ModelRetrying",
    "RunCompleted",
    "RunEvent",
    "RunFailed",
    "RunInterrupted",
    "RunStarted",
    "TextDelta",
    "ToolCallStarted",
    "ToolResultReceived",
    "TurnFinished",
]


@dataclass(frozen=True, slots=True)
class RunStarted:
    """A run began, or resumed from its checkpoint (``resumed``). Not emitted by a replay.

    ``resumed_from`` is the status a resumed run was taken up in: ``interrupted``, ``failed``, or
    ``running`` for one whose process died (``None`` for a fresh run, or when not known)."""

    run_id: str
    agent: str
    resumed: bool
    session_id: str | None
    model: str
    resumed_from: str | None = None


@dataclass(frozen=True, slots=True)
class TextDelta:
    """A piece of assistant text as the model streams it."""

    text: str
    agent: str


@dataclass(frozen=True, slots=True)
class ModelRetrying:
    """The model's request failed before anything of its answer came (``reason``, the first line
    of the error's message) and is asked again in ``wait`` seconds: a rate limit, a server busy
    or restarting."""

    agent: str
    model: str
    reason: str
    wait: float


@dataclass(frozen=True, slots=True)
class MessageCompleted:
    """The assistant finished a message (its whole text, as stored)."""

    message: AssistantMessage


@dataclass(frozen=True, slots=True)
class ToolCallStarted:
    """A tool call is about to execute (``rerun``: a dangling call re-executed on resume)."""

    call: ToolCall
    rerun: bool = False


@dataclass(frozen=True, slots=True)
class ToolResultReceived:
    """A tool call produced its result (``result.is_error`` for a failure)."""

    result: ToolResult


@dataclass(frozen=True, slots=True)
class HandoffOccurred:
    """Control passed from one agent to another."""

    from_agent: str
    to_agent: str


@dataclass(frozen=True, slots=True)
class TurnFinished:
    """A model turn and its tool calls are done and checkpointed."""

    turn: int
    agent: str
    usage: Usage


@dataclass(frozen=True, slots=True)
class RunCompleted:
    """The run finished and was persisted; also the only event of a replay."""

    result: RunResult


@dataclass(frozen=True, slots=True)
class RunFailed:
    """The run stopped on an error; its checkpoint (if any) says ``failed``.

    Except for a resume refused because an agent it needs is missing from the handoff graph
    (:class:`~lovia.errors.AgentResolutionError`): nothing of the run ran, and its checkpoint is
    left as the resume found it (stopped, crashed or failed), to resume once the agent is back.
    """

    run_id: str
    error: BaseException


@dataclass(frozen=True, slots=True)
class RunInterrupted:
    """The run was stopped or cancelled; its checkpoint (if any) says ``interrupted``."""

    run_id: str


RunEvent = (
    RunStarted | TextDelta | ModelRetrying | MessageCompleted | ToolCallStarted | ToolResultReceived | HandoffOccurred
    | TurnFinished | RunCompleted | RunFailed | RunInterrupted
)
