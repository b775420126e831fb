"""The run loop and its events."""

from lovia.runtime.events import (
    HandoffOccurred,
    MessageCompleted,
    ModelRetrying,
    RunCompleted,
    RunEvent,
    RunFailed,
    RunInterrupted,
    RunStarted,
    TextDelta,
    ToolCallStarted,
    ToolResultReceived,
    TurnFinished,
)
from lovia.runtime.result import RunResult
from lovia.runtime.runner import DEFAULT_MAX_TURNS, Runner, RunStream

__all__ = [
    "DEFAULT_MAX_TURNS",
    "HandoffOccurred",
    "MessageCompleted",
    "ModelRetrying",
    "RunCompleted",
    "RunEvent",
    "RunFailed",
    "RunInterrupted",
    "RunResult",
    "RunStarted",
    "RunStream",
    "Runner",
    "TextDelta",
    "ToolCallStarted",
    "ToolResultReceived",
    "TurnFinished",
]
