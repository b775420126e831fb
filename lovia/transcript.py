"""Pure functions over lists of transcript entries.

Nothing here does I/O or keeps state, so the stores, the runner and the terminal UI share
one definition of what "tool-consistent", "dangling" and "trimmed" mean.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from lovia.entries import Entry, Handoff, ToolCall, ToolResult

__all__ = [
    "CallPair",
    "call_pairs",
    "dangling_tool_calls",
    "drop_dangling_tool_calls",
    "locate_cut",
    "pair_tool_calls",
    "trim_marker",
    "trim_output",
    "truncate_run",
    "untrimmed_body",
]


@dataclasses.dataclass(frozen=True, slots=True)
class CallPair:
    """A tool call at ``call_at`` in a list of entries, with its result at ``result_at`` (``None``: none yet)."""

    call_at: int
    call: ToolCall
    result_at: int | None = None
    result: ToolResult | None = None


def call_pairs(entries: Sequence[Entry]) -> list[CallPair]:
    """Each tool call in ``entries`` with its result, in the calls' order.

    A result answers the earliest call before it with its id that has no result yet. Ids are
    unique in what lovia stores now (the runner gives a repeated one a fresh id), but a model
    that repeated one ("call_1" every turn) left runs stored before that with several calls
    of one id, each followed by its own result.
    """
    pairs: list[CallPair] = []
    waiting: dict[str, list[int]] = {}  # call id -> places in ``pairs`` of its calls with no result yet
    for position, entry in enumerate(entries):
        if isinstance(entry, ToolCall):
            waiting.setdefault(entry.call_id, []).append(len(pairs))
            pairs.append(CallPair(position, entry))
        elif isinstance(entry, ToolResult) and waiting.get(entry.call_id):
            at = waiting[entry.call_id].pop(0)
            pairs[at] = dataclasses.replace(pairs[at], result_at=position, result=entry)
    return pairs


def pair_tool_calls(entries: Sequence[Entry]) -> dict[str, tuple[ToolCall, ToolResult | None]]:
    """Each tool call by ``call_id``, with its result or ``None`` if it has none yet (of calls
    sharing an id, the last; see :func:`call_pairs`)."""
    return {pair.call.call_id: (pair.call, pair.result) for pair in call_pairs(entries)}


def dangling_tool_calls(entries: Sequence[Entry]) -> list[ToolCall]:
    """Tool calls that have no result: the ones a resume would execute (again)."""
    return [pair.call for pair in call_pairs(entries) if pair.result is None]


def drop_dangling_tool_calls(entries: Sequence[Entry]) -> list[Entry]:
    """``entries`` made tool-consistent: every tool call has its result and vice versa.

    Tool calls without a result are dropped, as are results whose call is absent and
    handoffs that a dropped call triggered. Everything else keeps its order. Use it before
    recording an abandoned partial run as a finished segment.
    """
    pairs = call_pairs(entries)
    paired = {at for pair in pairs if pair.result_at is not None for at in (pair.call_at, pair.result_at)}
    answered = {pair.call.call_id for pair in pairs if pair.result is not None}
    dropped = {pair.call.call_id for pair in pairs if pair.result is None} - answered
    kept: list[Entry] = []
    for position, entry in enumerate(entries):
        if isinstance(entry, (ToolCall, ToolResult)) and position not in paired:
            continue
        if isinstance(entry, Handoff) and entry.call_id is not None and entry.call_id in dropped:
            continue
        kept.append(entry)
    return kept


def locate_cut(run_lengths: Sequence[int], keep_entries: int) -> tuple[int, int]:
    """Where a rewind to ``keep_entries`` (counted over the flat view) lands.

    Returns ``(whole, partial)``: the first ``whole`` runs are kept intact, and the first
    ``partial`` entries of run number ``whole`` are kept (``0`` when the cut falls on a run
    boundary); every later run goes. ``keep_entries`` at or past the end keeps everything.
    """
    if keep_entries < 0:
        raise ValueError(f"keep_entries must be 0 or more, got {keep_entries}")
    remaining = keep_entries
    for index, length in enumerate(run_lengths):
        if remaining < length:
            return index, remaining
        remaining -= length
    return len(run_lengths), 0


def truncate_run(entries: Sequence[Entry], keep: int) -> list[Entry]:
    """The first ``keep`` entries of one run, made tool-consistent.

    A tool call whose result fell past the cut is dropped with it.
    """
    return drop_dangling_tool_calls(list(entries[:keep]))


def trim_marker(trimmed_chars: int) -> str:
    """The visible note that ends a trimmed tool output."""
    return f"\n[… {trimmed_chars} characters trimmed by lovia]"


def untrimmed_body(result: ToolResult) -> str:
    """The part of ``result.output`` that came from the tool, without any trim marker."""
    if result.trimmed_chars:
        marker = trim_marker(result.trimmed_chars)
        if result.output.endswith(marker):
            return result.output[: -len(marker)]
    return result.output


def whole_output_of(result: ToolResult, archived: str) -> bool:
    """Whether ``archived``, an output the archive holds under ``result``'s call id, is that result's
    whole output: it begins with the part the session kept. Call ids a server repeated across runs
    (stored before lovia made them unique) found another run's output under the same id."""
    return archived.startswith(untrimmed_body(result))


def trim_output(result: ToolResult, keep_chars: int) -> ToolResult | None:
    """``result`` with its output cut to ``keep_chars`` characters plus a marker.

    Returns ``None`` when there is nothing worth cutting (no more than the marker's own
    length), so trimming twice with the same
    ``keep_chars`` changes nothing the second time. ``call_id``, name, error flag and time
    are kept, so pairing and order survive.
    """
    if keep_chars < 0:
        raise ValueError(f"keep_chars must be 0 or more, got {keep_chars}")
    body = untrimmed_body(result)
    total = result.trimmed_chars + len(body) - keep_chars
    if len(body) - keep_chars <= len(trim_marker(total)):
        return None  # cutting would save less than the marker costs
    return dataclasses.replace(result, output=body[:keep_chars] + trim_marker(total), trimmed_chars=total)
