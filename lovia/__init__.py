"""lovia: an async agent runner whose sessions and in-flight runs survive crashes.

Everything the documentation's snippets import lives here.
"""

__version__ = "0.1.0"

from lovia.agent import Agent, RunHooks
from lovia.builtin_tools import BUILTIN_TOOLS
from lovia.checkpoint import (
    ChangeReportingCheckpointer,
    Checkpointer,
    CheckpointOptions,
    ClaimingCheckpointer,
    JournalingCheckpointer,
    ListableCheckpointer,
    RunHead,
    RunOwner,
    RunSnapshot,
    RunSummary,
    SessionExclusiveCheckpointer,
)
from lovia.context import ContextPolicy, FileResultStore
from lovia.dangling import complete_dangling_call
from lovia.entries import AssistantMessage, Entry, Handoff, ToolCall, ToolResult, UserMessage
from lovia.errors import (
    AgentResolutionError,
    DatabaseFileError,
    EntryDecodeError,
    GuardrailTripped,
    LoviaError,
    MaxTurnsExceeded,
    ModelError,
    RunClaimedError,
    SchemaError,
    StoreError,
    UnknownEntryTypeError,
    UserError,
)
from lovia.mcp import MCPServer, MCPServerError
from lovia.models import DemoModel, Model, ScriptedModel, ScriptedTurn, resolve_model
from lovia.rewind import rewind_with_checkpoints
from lovia.runtime import (
    HandoffOccurred,
    MessageCompleted,
    ModelRetrying,
    RunCompleted,
    RunEvent,
    RunFailed,
    RunInterrupted,
    Runner,
    RunResult,
    RunStarted,
    RunStream,
    TextDelta,
    ToolCallStarted,
    ToolResultReceived,
    TurnFinished,
)
from lovia.session import (
    ChangeReportingSession,
    ChangeTrackingSession,
    DescribableSession,
    EntryPage,
    ForkableSession,
    ForkOrigin,
    ListableSession,
    PagedSession,
    RenamableSession,
    RewindableSession,
    RewindUndo,
    RunSpan,
    SearchableSession,
    SearchHit,
    Segment,
    Session,
    SessionChanges,
    SessionInfo,
    TrashedSession,
    TrashingSession,
    TrimmableSession,
    TrimPreview,
    TrimPreviewingSession,
    UndoableRewindSession,
)
from lovia.stores import InMemoryCheckpointer, InMemorySession, SQLiteCheckpointer, SQLiteSession
from lovia.tools import RunContext, Tool, ToolContext, ToolError, tool
from lovia.transcript import drop_dangling_tool_calls
from lovia.usage import Usage


def __getattr__(name: str):
    if name == "OpenAIChatModel":  # imported on first use: see lovia.models
        from lovia.models.openai_chat import OpenAIChatModel

        return OpenAIChatModel
    if name in ("PostgresCheckpointer", "PostgresSession"):  # imported on first use: see lovia.stores
        from lovia.stores import postgres_store

        return postgres_store(name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "BUILTIN_TOOLS",
    "Agent",
    "AgentResolutionError",
    "AssistantMessage",
    "ChangeReportingCheckpointer",
    "ChangeReportingSession",
    "ChangeTrackingSession",
    "CheckpointOptions",
    "Checkpointer",
    "ClaimingCheckpointer",
    "ContextPolicy",
    "DatabaseFileError",
    "DemoModel",
    "DescribableSession",
    "Entry",
    "EntryDecodeError",
    "EntryPage",
    "FileResultStore",
    "ForkOrigin",
    "ForkableSession",
    "GuardrailTripped",
    "Handoff",
    "HandoffOccurred",
    "InMemoryCheckpointer",
    "InMemorySession",
    "JournalingCheckpointer",
    "ListableCheckpointer",
    "ListableSession",
    "LoviaError",
    "MCPServer",
    "MCPServerError",
    "MaxTurnsExceeded",
    "MessageCompleted",
    "Model",
    "ModelError",
    "ModelRetrying",
    "OpenAIChatModel",
    "PagedSession",
    "RenamableSession",
    "RewindUndo",
    "RewindableSession",
    "RunClaimedError",
    "RunCompleted",
    "RunContext",
    "RunEvent",
    "RunFailed",
    "RunHead",
    "RunHooks",
    "RunInterrupted",
    "RunOwner",
    "RunResult",
    "RunSnapshot",
    "RunSpan",
    "RunStarted",
    "RunStream",
    "RunSummary",
    "Runner",
    "SQLiteCheckpointer",
    "SQLiteSession",
    "SchemaError",
    "ScriptedModel",
    "ScriptedTurn",
    "SearchHit",
    "SearchableSession",
    "Segment",
    "Session",
    "SessionChanges",
    "SessionExclusiveCheckpointer",
    "SessionInfo",
    "StoreError",
    "TextDelta",
    "Tool",
    "ToolCall",
    "ToolCallStarted",
    "ToolContext",
    "ToolError",
    "ToolResult",
    "ToolResultReceived",
    "TrashedSession",
    "TrashingSession",
    "TrimPreview",
    "TrimPreviewingSession",
    "TrimmableSession",
    "TurnFinished",
    "UndoableRewindSession",
    "UnknownEntryTypeError",
    "Usage",
    "UserError",
    "UserMessage",
    "complete_dangling_call",
    "drop_dangling_tool_calls",
    "resolve_model",
    "rewind_with_checkpoints",
    "tool",
]
