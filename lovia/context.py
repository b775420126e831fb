"""Context policy: keep large tool outputs out of the prompt without losing them.

With a :class:`FileResultStore`, :class:`ContextPolicy` archives every tool output longer
than ``archive_over_chars`` (so a later ``trim_tool_results`` at that size loses nothing)
and cuts outputs longer than ``max_result_chars`` in the transcript itself. The model gets
a ``recall_tool_result`` tool that brings an archived output back by call id.

The policy's carried state is which call ids of this conversation are archived under which
key. A run keeps its own part in ``RunHead.context_state`` while in flight and in its
segment's ``meta["context"]`` once done; a run's state is rebuilt from both. A rewind that
cuts into a run drops that run's meta, so recall forgets outputs that no longer exist.
"""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lovia._files import make_private_dirs, replace_file_privately
from lovia.entries import ToolResult
from lovia.session import Segment
from lovia.tools import Tool, ToolContext, tool
from lovia.transcript import whole_output_of

__all__ = ["RECALL_TOOL_NAME", "ContextPolicy", "FileResultStore"]

RECALL_TOOL_NAME = "recall_tool_result"


class FileResultStore:
    """Tool outputs kept as files in one directory, one file a key; the directory and any
    parents it creates are 0700 and the files 0600, whatever the umask."""

    def __init__(self, directory: str | os.PathLike[str]) -> None:
        self.directory = Path(directory)

    @staticmethod
    def key_for(run_id: str, call_id: str) -> str:
        """The key an output of ``call_id`` in ``run_id`` is archived under."""
        return hashlib.sha256(f"{run_id}\0{call_id}".encode()).hexdigest()

    def _path(self, key: str) -> Path:
        if not key or any(c not in "0123456789abcdef" for c in key):
            raise ValueError(f"not an archive key: {key!r}")
        return self.directory / f"{key}.txt"

    async def put(self, key: str, text: str) -> None:
        """Store ``text`` under ``key``, atomically (a crash leaves the old file or the new)."""
        await asyncio.to_thread(self._put, key, text)

    def _put(self, key: str, text: str) -> None:
        target = self._path(key)
        make_private_dirs(self.directory)
        replace_file_privately(target, text)

    async def get(self, key: str) -> str | None:
        """The text under ``key``, or ``None``."""
        path = self._path(key)
        try:
            return await asyncio.to_thread(path.read_text, encoding="utf-8")
        except FileNotFoundError:
            return None

    async def whole_output(self, archived: Mapping[str, str], result: ToolResult) -> str | None:
        """``result``'s whole output, archived under its call id in the index ``archived``; ``None``
        when it was not archived, is gone, or is another run's (see
        :func:`~lovia.transcript.whole_output_of`). An unreadable file raises as :meth:`get` does."""
        key = archived.get(result.call_id)
        text = await self.get(key) if key else None
        return text if text is not None and whole_output_of(result, text) else None


def archived_in(state: object) -> dict[str, str]:
    """One run's part of the archive index, from its context state (a segment's ``meta["context"]``,
    a head's ``context_state``): call id to archive key, the well-formed pairs only."""
    index = state.get("archived") if isinstance(state, dict) else None
    if not isinstance(index, dict):
        return {}
    return {call_id: key for call_id, key in index.items() if isinstance(call_id, str) and isinstance(key, str)}


@dataclass(frozen=True)
class ContextPolicy:
    """How tool outputs are archived and cut. See the module docstring."""

    result_store: FileResultStore | None = None
    archive_over_chars: int = 400
    max_result_chars: int = 8000

    def carried_state(self, segments: Iterable[Segment], head_state: dict[str, Any] | None = None) -> dict[str, Any]:
        """The conversation's archive index: every segment's part, then the in-flight run's."""
        archived: dict[str, str] = {}
        for segment in segments:
            archived.update(archived_in(segment.meta.get("context")))
        archived.update(archived_in(head_state))
        return {"archived": archived}

    async def process_result(self, result: ToolResult, *, run_id: str, run_state: dict[str, Any]) -> ToolResult:
        """Archive ``result`` if it is long, cut it if it is very long; record it in ``run_state``.

        A recalled output is a copy of an archived one and is passed through whole: cutting it
        would make recall useless for exactly the outputs it exists for.
        """
        if (self.result_store is None or len(result.output) <= self.archive_over_chars
                or result.name == RECALL_TOOL_NAME):
            return result
        key = FileResultStore.key_for(run_id, result.call_id)
        await self.result_store.put(key, result.output)
        run_state.setdefault("archived", {})[result.call_id] = key
        if len(result.output) <= self.max_result_chars:
            return result
        kept = result.output[: self.max_result_chars]
        note = (f"\n[… output cut at {self.max_result_chars} of {len(result.output)} characters; call "
                f"{RECALL_TOOL_NAME} with call_id={result.call_id!r} for all of it]")
        return dataclasses.replace(result, output=kept + note)

    def recall_tool(self, state: dict[str, Any]) -> Tool | None:
        """The ``recall_tool_result`` tool over ``state`` (the live archive index), if archiving."""
        store = self.result_store
        if store is None:
            return None

        @tool(name=RECALL_TOOL_NAME)
        async def recall_tool_result(ctx: ToolContext, call_id: str) -> str:
            """Bring back the full output of an earlier tool call that was archived or trimmed.

            Args:
                call_id: the call_id of the tool call whose output you need.
            """
            key = state.get("archived", {}).get(call_id)
            if key is None:
                raise LookupError(f"no archived output for call_id {call_id!r} in this conversation")
            text = await store.get(key)
            if text is None:
                raise LookupError(f"the archived output of {call_id!r} is gone from {store.directory}")
            return text

        return recall_tool_result
