"""lovia: an async agent runner whose sessions and in-flight runs survive crashes.

Everything the documentation's snippets import lives here.
"""

__version__ = "0.1.0"

from lovia.checkpoint import (
    CheckpointOptions,
    Checkpointer,
    ListableCheckpointer,
    RunHead,
    RunOwner,
    RunSnapshot,
    RunSummary,
)
from lovia.entries import AssistantMessage, Entry, Handoff, ToolCall, ToolResult, UserMessage
from lovia.errors import (
    DatabaseFileError,
    EntryDecodeError,
    LoviaError,
    ModelError,
    SchemaError,
    StoreError,
    UserError,
)
from lovia.session import RewindableSession, Segment, Session, SessionInfo, TrimResult
from lovia.stores import InMemoryCheckpointer, InMemorySession, SQLiteCheckpointer, SQLiteSession
from lovia.transcript import drop_dangling_tool_calls
from lovia.usage import Usage

__all__ = [
    "AssistantMessage",
    "CheckpointOptions",
    "Checkpointer",
    "DatabaseFileError",
    "Entry",
    "EntryDecodeError",
    "Handoff",
    "InMemoryCheckpointer",
    "InMemorySession",
    "ListableCheckpointer",
    "LoviaError",
    "ModelError",
    "RewindableSession",
    "RunHead",
    "RunOwner",
    "RunSnapshot",
    "RunSummary",
    "SQLiteCheckpointer",
    "SQLiteSession",
    "SchemaError",
    "Segment",
    "Session",
    "SessionInfo",
    "StoreError",
    "ToolCall",
    "ToolResult",
    "TrimResult",
    "Usage",
    "UserError",
    "UserMessage",
    "drop_dangling_tool_calls",
]
