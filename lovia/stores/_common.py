"""Rules every bundled store applies the same way."""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from lovia.checkpoint import RunHead, RunSummary, with_partial
from lovia.entries import Entry
from lovia.errors import DatabaseFileError, UserError
from lovia.session import EntryPage, RunSpan, SessionInfo
from lovia.transcript import locate_cut

TITLE_CHARS = 200


def new_run_id() -> str:
    """A fresh, globally unique run id."""
    return uuid.uuid4().hex


def check_page(start: int | None, limit: int) -> None:
    """Refuse ``read_page`` arguments that name no page."""
    if start is not None:
        check_keep("start", start)
    if not isinstance(limit, int) or isinstance(limit, bool) or limit < 1:
        raise UserError(f"limit must be a whole number of 1 or more, got {limit!r}")


def page_window(total: int, start: int | None, limit: int) -> tuple[int, int]:
    """The positions ``[first, end)`` that ``read_page(start=..., limit=...)`` covers in ``total`` entries."""
    check_page(start, limit)
    first = max(0, total - limit) if start is None else min(start, total)
    return first, min(total, first + limit)


def page_of(spans: Sequence[tuple[RunSpan, Sequence[Entry]]], total: int, start: int | None,
            limit: int) -> EntryPage:
    """The page of a transcript given as its runs, each with its entries, in order."""
    first, end = page_window(total, start, limit)
    entries: list[Entry] = []
    runs: list[RunSpan] = []
    for span, run_entries in spans:
        if span.end <= first or span.start >= end or not span.count:
            continue
        runs.append(span)
        entries.extend(run_entries[max(first, span.start) - span.start:min(end, span.end) - span.start])
    return EntryPage(first, tuple(entries), tuple(runs), total)


def clean_meta(meta: dict[str, Any] | None, *, what: str = "segment meta") -> dict[str, Any]:
    """A private copy of ``meta`` that is known to survive JSON, as every store needs.

    ``what`` names the dict in the error a value JSON cannot hold raises (a set, a date, NaN).
    """
    if meta is None:
        return {}
    if not isinstance(meta, dict):
        raise UserError(f"{what} must be a dict, got {type(meta).__name__}")
    try:
        return json.loads(json.dumps(meta, allow_nan=False))
    except (TypeError, ValueError) as exc:
        raise UserError(f"{what} must be JSON-serializable: {exc}") from None


def check_keep(name: str, value: int) -> None:
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise UserError(f"{name} must be a whole number of 0 or more, got {value!r}")


def rewind_cut(run_lengths: Sequence[int], keep_entries: int) -> tuple[int, int]:
    """Where ``rewind(keep_entries=...)`` cuts a session whose runs have these lengths.

    The one definition of which runs a rewind touches, shared by the bundled stores and
    :func:`lovia.rewind.rewind_with_checkpoints`. Returns ``(whole, partial)`` as
    :func:`~lovia.transcript.locate_cut` does: the runs from number ``whole`` on are
    touched (the first of them keeps its first ``partial`` entries, made tool-consistent,
    when ``partial`` is not 0; the rest are deleted), and none when ``whole`` is the number
    of runs. A negative or non-integer ``keep_entries`` is a :class:`UserError`.
    """
    check_keep("keep_entries", keep_entries)
    return locate_cut(run_lengths, keep_entries)


def check_fork(keep_entries: int, session_id: str, new_session_id: str) -> None:
    """Refuse a ``fork`` that can copy nothing, or whose new session id is the source's."""
    check_keep("keep_entries", keep_entries)
    if keep_entries == 0:
        raise UserError("keep_entries must be 1 or more: a fork copies at least one entry")
    if not isinstance(new_session_id, str) or not new_session_id:
        raise UserError(f"new_session_id must be a non-empty string, got {new_session_id!r}")
    if new_session_id == session_id:
        raise UserError(f"cannot fork session {session_id!r} into itself: give the fork a new session id")


def nothing_to_fork(session_id: str) -> UserError:
    """What a fork of a session with no entries (unknown, empty, or cut to nothing) raises."""
    return UserError(f"session {session_id!r} has no entries to fork (it is unknown or empty, or the cut keeps "
                     "none): pick a session and a message that exist")


def fork_target_taken(new_session_id: str) -> UserError:
    """What a fork into a session id that already holds a session raises."""
    return UserError(f"session {new_session_id!r} already exists: a fork goes into a new session id")


def title_from(text: str) -> str:
    """A one-line title made from a user message."""
    return " ".join(text.split())[:TITLE_CHARS]


def filter_sessions(infos: list[SessionInfo], query: str | None, limit: int | None) -> list[SessionInfo]:
    """Sessions whose id or title contains ``query`` (any case), at most ``limit`` of them."""
    if query:
        needle = query.casefold()
        infos = [i for i in infos if needle in i.title.casefold() or needle in i.session_id.casefold()]
    return infos[:limit] if limit is not None else infos


def check_purge(trash_id: int | None, deleted_before: float | None) -> None:
    """A purge names what it forgets: an item, or a time before which every item goes."""
    if trash_id is None and deleted_before is None:
        raise UserError("purge_trash needs trash_id or deleted_before: emptying the whole trash is never implied")


def restore_refused(session_id: str) -> UserError:
    """Why a trashed session cannot come back: its id names a live session again."""
    return UserError(
        f"session {session_id!r} cannot be restored: a session with that id exists again (started after the "
        "deletion). Move that one to the trash first, then restore this one; both stay in the trash until then"
    )


def nothing_to_undo(session_id: str) -> UserError:
    return UserError(
        f"nothing to undo in session {session_id!r}: no rewind since its last message (a message sent after a "
        "rewind, a plain rewind or a deletion forgets it)"
    )


def readable_run_summaries(
    rows: Iterable[tuple[str, Any, int, Any, Any]],
    decode_head: Callable[[Any, str], RunHead],
    partial: Callable[[Any, Any], Any],
) -> list[RunSummary]:
    """``list_runs``' summaries from rows of run id, stored head, entry count and journal (text, step).

    A run whose head is damaged (``decode_head`` raises :class:`~lovia.errors.DatabaseFileError`)
    is left out, not listed as something it may not be: see
    :class:`~lovia.checkpoint.ListableCheckpointer`.
    """
    summaries = []
    for run_id, head, count, text, step in rows:
        try:
            decoded = decode_head(head, run_id)
        except DatabaseFileError:
            continue
        summaries.append(RunSummary(run_id, with_partial(decoded, partial(text, step)), count))
    return summaries
