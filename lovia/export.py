"""Export a session: Markdown to read, JSON lines to process.

``lovia export SESSION_ID [--format md|jsonl] [--db PATH|URL] [-o FILE]`` writes one session of
the data file, or of a PostgreSQL database (``--db postgresql://...``), to standard output (or
``FILE``, replaced if it is there, as ``>`` would; the app's ``ctrl+s`` asks first); the terminal
UI's ``ctrl+s`` writes the open session to a file with the same code
(:func:`write_export`), whatever the store: it reads through the Session protocols only. A session id may be given by a
prefix of 4 characters or more when exactly one session starts with it.

A session is read a page at a time (:data:`EXPORT_PAGE` entries) when its store offers
:class:`~lovia.session.PagedSession`, so a huge session is never held whole; any other store's
session is read at once.

**Markdown** (``md``): the session's title, id, dates and, for a fork, where it came from;
then a ``## Run N`` heading per stored run with its start time (UTC) and duration, how long
each of its steps took when they were recorded, then its entries: what the user wrote, the
answers, each tool call and its result as fenced blocks, handoffs as quotes. Durations, and why
an answer ended early, read as the app's run headers and transcript say them (``4.0s``, ``250ms``;
``cut off: the model hit its token limit``).

**Trimmed tool outputs** (``trim_tool_results``, ``t`` in the app) are written whole when the
tool-output archive (``archive``, a :class:`~lovia.context.FileResultStore`) still holds them, as
the app shows them: found through the archive index the runs carry in ``meta["context"]`` up to the
run holding the result, and taken only when the archived text begins with the part the session
kept. The Markdown's result heading then says ``whole, from the tool-output archive``; an output the
archive lacks is written as stored, its trim marker included.

**JSON lines** (``jsonl``): one JSON object a line, told apart by ``"record"``:

* ``session``, first: ``version`` (:data:`JSONL_VERSION`), ``session_id``, ``title``,
  ``created_at``, ``last_activity``, ``entry_count``, ``run_count``, ``forked_from`` (the
  :class:`~lovia.session.ForkOrigin` as stored, or ``null``), ``exported_at``;
* ``run``, before the run's entries: ``run_id``, ``index`` (from 1), ``start`` (its first
  entry's position), ``count``, ``started_at``, ``finished_at``, ``duration``,
  ``active_seconds`` (each ``null`` when not recorded), ``steps`` (per model turn and tool
  call, as :mod:`lovia.timing` stores them; ``[]`` when none were recorded) and ``meta`` (the
  run's meta as stored);
* ``entry``: ``position`` (from 0 over the session, as rewind and fork count), ``run_id``,
  ``created_at`` and ``entry`` (the entry as :func:`lovia.entries.entry_to_dict` writes it); a
  trimmed tool output written whole from the archive has ``"output_from_archive": true`` beside
  them, and its ``entry`` holds the whole output with ``trimmed_chars`` 0; a tool result that was
  given (:func:`lovia.complete_dangling_call`, the app's ``o`` / ``e``) rather than received from
  the tool has ``"given": true``.

Times are epoch seconds; durations seconds. Fields are only ever added, never renamed: a
reader should ignore what it does not know.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime
import functools
import json
import os
import re
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Literal, TextIO, cast

from markdown_it import MarkdownIt
from markdown_it.token import Token

from lovia._wording import NOT_TIMED, PARTIAL_ENDS_STOPPED, count, duration, finish_note, step_duration
from lovia.context import FileResultStore, archived_in
from lovia.db_location import DbLocation, PostgresLocation, chosen_db, db_argument, postgres_store_classes
from lovia.entries import AssistantMessage, Entry, Handoff, ToolCall, ToolResult, UserMessage, entry_to_dict
from lovia.errors import LoviaError, UserError
from lovia.session import (
    DescribableSession,
    ForkOrigin,
    ListableSession,
    PagedSession,
    RunSpan,
    Segment,
    Session,
    SessionInfo,
    TrashingSession,
)
from lovia.timing import (
    ModelStep,
    ToolStep,
    given_results,
    step_ending,
    steps_from_meta,
    steps_to_meta,
    tokens_per_second,
)

__all__ = ["EXPORT_PAGE", "FORMATS", "JSONL_VERSION", "ExportFormat", "ExportSummary", "export_session",
           "main", "resolve_session_id", "write_export"]

ExportFormat = Literal["md", "jsonl"]
FORMATS: tuple[ExportFormat, ...] = ("md", "jsonl")
EXPORT_PAGE = 200
"""How many entries are read at a time from a store that reads pages."""
JSONL_VERSION = 1
"""The ``version`` of the JSON lines layout; it changes only if a field changes meaning."""
MIN_PREFIX = 4
"""The fewest characters of a session id that name it by prefix."""


@dataclass(frozen=True, slots=True)
class ExportSummary:
    """What an export wrote: how many runs and entries, the session's title, and the file (absolute), if any."""

    session_id: str
    title: str
    runs: int
    entries: int
    path: str | None = None


# -- reading ---------------------------------------------------------------------------------


async def _runs(session: Session, session_id: str, page: int) -> AsyncIterator[tuple[RunSpan, int, list[Entry]]]:
    """Each stored run that has entries, in order, with the position of its first entry given and those entries.

    Read a page at a time from a :class:`~lovia.session.PagedSession`: a run longer than a page
    comes in parts (the same span, consecutive entries). Runs without entries are left out, as
    a page leaves them out.
    """
    if isinstance(session, PagedSession):
        start = 0
        while True:
            read = await session.read_page(session_id, start=start, limit=page)
            if not read.entries:
                return
            offset = 0
            for span in read.runs:
                first = max(span.start, read.start)
                taken = min(span.end, read.end) - first
                yield span, first, list(read.entries[offset:offset + taken])
                offset += taken
            start = read.end
    position = 0
    for segment in await session.segments(session_id):
        if segment.entries:
            span = RunSpan(segment.run_id, position, len(segment.entries), segment.meta)
            yield span, position, list(segment.entries)
            position += len(segment.entries)


async def resolve_session_id(session: Session, wanted: str) -> str:
    """``wanted`` itself when the store has that session; else the one session whose id starts with it,
    or, when none does, the one whose id holds it (as the app's sessions filter finds ``2c8f`` in
    ``s-2c8f…``).

    Part of an id needs :data:`MIN_PREFIX` characters and a store that lists sessions. A
    :class:`~lovia.errors.UserError` when no session, or more than one, matches.
    """
    if not wanted.strip():
        raise UserError(f"no session id was given: give a session's id, or {MIN_PREFIX} or more characters of it")
    if isinstance(session, DescribableSession):
        if await session.session_info(wanted) is not None:
            return wanted
    elif await session.segments(wanted):
        return wanted
    if len(wanted) >= MIN_PREFIX and isinstance(session, ListableSession):
        ids = [info.session_id for info in await session.list_sessions()]
        matches = [found for found in ids if found.startswith(wanted)]
        how = "start with"
        if not matches:
            matches, how = [found for found in ids if wanted in found], "hold"
        if len(matches) == 1:
            return matches[0]
        if matches:
            shown = ", ".join(matches[:5]) + (", …" if len(matches) > 5 else "")
            raise UserError(f"{len(matches)} sessions {how} {wanted!r} ({shown}): give more of the id")
    if isinstance(session, TrashingSession) and any(item.session_id == wanted for item in await session.list_trash()):
        raise UserError(f"session {wanted!r} is in the trash: restore it in the app's trash first, then export it")
    hint = "" if len(wanted) >= MIN_PREFIX else f" (part of an id needs {MIN_PREFIX} characters or more)"
    raise UserError(f"no session {wanted!r} in this store{hint}: check the id (the sessions filter finds a "
                    "session by its title or id). A session whose runs never completed has nothing stored "
                    "yet: resume or finalize its run in the app first.")


# -- writing ---------------------------------------------------------------------------------


async def export_session(session: Session, session_id: str, out: TextIO, *, fmt: ExportFormat = "md",
                         page: int = EXPORT_PAGE, now: float | None = None,
                         archive: FileResultStore | None = None) -> ExportSummary:
    """Write ``session_id`` to ``out`` as ``fmt`` (see the module docstring); return what was written.

    ``archive``: where the context policy archived long tool outputs; a trimmed output it holds is
    written whole. A :class:`~lovia.errors.UserError` for an unknown session (nothing is written) or format.
    """
    if fmt not in FORMATS:
        raise UserError(f"unknown export format {fmt!r}: use one of {', '.join(FORMATS)}")
    info = await session.session_info(session_id) if isinstance(session, DescribableSession) else None
    runs = _runs(session, session_id, page)
    first = await anext(runs, None)
    if first is None and info is None:
        raise UserError(f"no session {session_id!r} in this store: nothing to export")
    writer = _Markdown(out) if fmt == "md" else _JsonLines(out)
    origin = ForkOrigin.from_meta(first[0].meta) if first is not None else None
    began = Segment(first[0].run_id, (), first[0].meta).started_at if first is not None else None
    if info is not None and began is not None and (info.created_at is None or began < info.created_at):
        # A store dates a session from its first write: a first run finalized later (kept after
        # a crash, resumed) began before that. The session began with it.
        info = replace(info, created_at=began)
    writer.session(session_id, info, origin, time.time() if now is None else now)
    run_count = entries = 0
    current: str | None = None
    archived: dict[str, str] = {}  # the archive index up to this run: call id -> key (see lovia.context)
    part = first
    while part is not None:
        span, start, run_entries = part
        if span.run_id != current:
            current = span.run_id
            run_count += 1
            writer.run(span, run_count)
            if archive is not None:
                archived.update(archived_in(span.meta.get("context")))
        for offset, entry in enumerate(run_entries):
            whole = None
            if archive is not None and isinstance(entry, ToolResult) and entry.trimmed_chars:
                whole = await _archived_whole(entry, archived, archive)
            if whole is not None:
                writer.entry(start + offset, span.run_id, whole, from_archive=True)
            else:
                writer.entry(start + offset, span.run_id, entry)
        entries += len(run_entries)
        part = await anext(runs, None)
    writer.end()
    title = info.title if info is not None else ""
    return ExportSummary(session_id, title, run_count, entries)


async def _archived_whole(result: ToolResult, archived: dict[str, str], archive: FileResultStore) -> ToolResult | None:
    """``result`` with its whole output from ``archive``; ``None`` when the archive lacks it (gone, never
    archived, unreadable) or holds an output that does not begin with the part the session kept."""
    try:
        text = await archive.whole_output(archived, result)
    except (OSError, ValueError):  # unreadable, not UTF-8, a damaged key: the trimmed output is written
        return None
    return None if text is None else replace(result, output=text, trimmed_chars=0)


async def write_export(session: Session, session_id: str, path: str | os.PathLike[str], *,
                       fmt: ExportFormat | None = None, page: int = EXPORT_PAGE,
                       archive: FileResultStore | None = None) -> ExportSummary:
    """Export ``session_id`` to the file ``path``; ``fmt`` ``None``: from its suffix (``.jsonl``, else Markdown).

    The file is written beside its final name and renamed into place once complete (a failed
    export leaves no half file, and never half-replaces an older one), readable by its owner
    only: it holds the conversation. A missing directory, one that cannot be written, or a
    directory as ``path`` is a :class:`~lovia.errors.UserError` saying which.
    """
    target, fd, temp = _temp_beside(path)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as file:
            summary = await export_session(session, session_id, file, fmt=fmt or format_for(target), page=page,
                                           archive=archive)
        os.replace(temp, target)
    except BaseException:
        _remove(temp)
        raise
    return replace(summary, path=str(target))


def export_target(path: str | os.PathLike[str]) -> Path:
    """The file an export to ``path`` writes: ``~`` expanded, made absolute (not resolved)."""
    return Path(path).expanduser().absolute()


def _temp_beside(path: str | os.PathLike[str]) -> tuple[Path, int, str]:
    """The export's final path, and an open temporary file beside it (mode 0600) with its name."""
    target = export_target(path)
    if target.is_dir():  # the rename into place would fail after the whole export was written
        raise UserError(f"cannot export to {target}: it is a directory; give the name of a file in it")
    if not target.parent.is_dir():
        raise UserError(f"cannot export to {target}: the directory {target.parent} does not exist")
    try:
        fd, temp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    except OSError as exc:
        raise UserError(f"cannot export to {target}: {exc.strerror}") from None
    return target, fd, temp


def _remove(path: str) -> None:
    Path(path).unlink(missing_ok=True)


def format_for(path: str | os.PathLike[str]) -> ExportFormat:
    """The format a file name asks for: ``jsonl`` for ``.jsonl`` / ``.ndjson``, else ``md``."""
    return "jsonl" if Path(path).suffix.lower() in (".jsonl", ".ndjson") else "md"


def default_file_name(session_id: str, fmt: ExportFormat = "md") -> str:
    """``lovia-<session id>.md`` (or ``.jsonl``), with characters a file name cannot hold replaced."""
    safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in session_id)
    return f"lovia-{safe}.{fmt}"


def _utc(timestamp: float | None) -> str:
    if timestamp is None:
        return "—"
    return datetime.datetime.fromtimestamp(timestamp, datetime.UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


_BACKTICK_RUN = re.compile("`+")
_MARKDOWN_LINE_END = re.compile(r"\r\n?|\n")


def _fence(text: str, language: str = "") -> str:
    """``text`` in a fenced block whose fence is longer than any run of backticks inside it, and
    three backticks at the least."""
    # Found by the regex engine, not a loop in Python over each character: a tool output can
    # be megabytes, and most hold no run of three, which one substring search tells.
    longest = max(map(len, _BACKTICK_RUN.findall(text)), default=0) if "```" in text else 0
    fence = "`" * max(3, longest + 1)
    return f"{fence}{language}\n{text}\n{fence}\n"


_PAST_THE_END = "lovia-export-past-the-end"


def _fences_closed(text: str) -> str:
    """``text``, with a code block it leaves open closed at its end.

    A message is written as the Markdown it is, and a fence it opens and never closes (an answer
    cut off inside a code block, a closing fence with words after it, which is no closing fence)
    would hold every later message of the export inside its block. Whether one is left open is
    asked of a CommonMark parser: one in a list item or a quote ends with it, and only a fence at
    the margin (up to three spaces in) holds what follows. It is closed with its own fence, as
    far in as it was opened.
    """
    if "```" not in text and "~~~" not in text:
        return text
    left_open = _fence_left_open(text)
    if left_open is None or left_open.map is None:
        return text
    # The parser's line numbers count its own line ends (\n, \r\n, \r), not every one
    # ``splitlines`` knows (\u2028, a form feed): another line's indent would close nothing.
    opener = _MARKDOWN_LINE_END.split(text)[left_open.map[0]]
    indent = opener[:len(opener) - len(opener.lstrip(" "))]
    closed = f"{text}\n{indent}{left_open.markup}"
    return closed if _fence_left_open(closed) is None else text  # a shape it cannot close: left as written


_BACKTICKS = re.compile(r"`+")


def code_span_closer(text: str) -> str:
    """The backticks that close the code span ``text`` leaves open at its end, or "" when it leaves none.

    For an answer cut off while it wrote inline code (a stop, a crash, the token limit): CommonMark
    shows a code span never closed as its literal backticks, and the answer's last line read
    ``• `calculate (12 + 30) *``. Shown (and exported) with the closer, it reads as the code it
    was; the stored text is left as the model wrote it. A span with nothing in it yet is left as
    it is (closed, it would read as two backticks). Only the text's last block is looked at,
    as the parser of :func:`_fences_closed` finds it (a span never crosses blocks), by CommonMark's
    rule: a run of backticks opens a span that the next run of exactly as many closes, and a
    backslash before a run makes its first backtick a plain one.
    """
    if "`" not in text:
        return ""
    tokens = _commonmark().parse(text)
    last = max((i for i, token in enumerate(tokens) if token.type == "inline"), default=None)
    if last is None or any(not token.type.endswith("_close") for token in tokens[last + 1:]):
        return ""  # the text ends in a code block (or another block without inline text)
    inline = tokens[last].content
    at = 0
    while (opener := _BACKTICKS.search(inline, at)) is not None:
        run, start = opener.group(), opener.start()
        backslashes = len(inline[:start]) - len(inline[:start].rstrip("\\"))
        if backslashes % 2:  # an escaped backtick: plain, and the rest of the run may still open
            run, start = run[1:], start + 1
            if not run:
                at = opener.end()
                continue
        closer = re.compile(rf"(?<!`){run}(?!`)").search(inline, start + len(run))
        if closer is None:
            if not inline[start + len(run):].strip() or _ENDS_WITH_BLANK_LINE.search(text):
                return ""  # nothing in it yet to show as code; or a closer would begin a block of its own
            return f" {run}" if text.endswith("`") else run  # a closer right after a backtick would join its run
        at = closer.end()
    return ""


_ENDS_WITH_BLANK_LINE = re.compile(r"\n[ \t]*\n\s*\Z")


@functools.cache
def _commonmark() -> MarkdownIt:
    """The one CommonMark parser every message of every export is asked of, for its blocks only.

    Made on first use, not on import: the app imports this module at start-up and may never
    export. Making one costs more than parsing a short message (its rule lists, a linkify
    matcher), and ``parse`` keeps nothing between calls (each parse has a state of its own), so
    one serves them all. It parses once before it is handed out: markdown-it compiles its rule
    lists on the first parse, and two threads must not do that at once on a shared parser.

    Its inline rule is off: where a fence opens and closes is block structure, which CommonMark
    settles before it reads the text inside a block, and reading the emphasis, links and code
    spans of every paragraph took most of a parse's time.
    """
    parser = MarkdownIt("commonmark").disable("inline")
    parser.parse("x")
    return parser


def _fence_left_open(text: str) -> Token | None:
    """The code block ``text`` leaves open, if any: the one what comes after it would land in."""
    tokens = _commonmark().parse(f"{text}\n\n{_PAST_THE_END}")
    return next((t for t in tokens if t.type == "fence" and _PAST_THE_END in t.content), None)


class _Markdown:
    def __init__(self, out: TextIO) -> None:
        self.write: Callable[[str], Any] = out.write
        self._stopped = False  # the run being written was stopped by the user (a partial that ended so)
        self._given: set[str] = set()  # the run's calls whose result was given, not received from the tool

    def session(self, session_id: str, info: SessionInfo | None, origin: ForkOrigin | None, now: float) -> None:
        title = (info.title if info is not None else "") or "Untitled session"
        self.write(f"# {_one_line(title)}\n\n- Session: `{session_id}`\n")
        if info is not None:
            self.write(f"- Created: {_utc(info.created_at)}; last activity: {_utc(info.last_activity)}\n"
                       f"- {count(info.run_count, 'run')}, {count(info.entry_count, 'entry', 'entries')}, "
                       f"{duration(info.total_run_seconds)} of run time\n")
        if origin is not None:
            self.write(f"- Forked from “{_one_line(origin.title) or origin.session_id}” (`{origin.session_id}`) "
                       f"at entry {origin.entries}, {_utc(origin.forked_at)}\n")
        self.write(f"- Exported: {_utc(now)} by lovia\n")

    def run(self, span: RunSpan, index: int) -> None:
        segment = Segment(span.run_id, (), span.meta)
        # As the transcript's run header says it: from start to end, then how long it ran when
        # that differs (a run stopped and resumed later lay waiting in between).
        took = duration(segment.duration) if segment.duration is not None else ""
        ran = duration(segment.run_seconds) if segment.run_seconds is not None else ""
        times = [_utc(segment.started_at) if segment.started_at is not None else "", took,
                 f"ran {ran}" if ran and ran != took else ""]
        self.write(f"\n## Run {index} · {' · '.join(part for part in times if part) or NOT_TIMED}\n\n")
        notes = [f"run `{span.run_id}`"]
        # A partial the user stopped: its cut-off answer says so, as the transcript does.
        self._stopped = bool(span.meta.get("partial")) and span.meta.get("ended") in PARTIAL_ENDS_STOPPED
        steps = steps_from_meta(span.meta)
        self._given = given_results(steps)
        if span.meta.get("partial"):
            notes.append(f"did not complete ({span.meta.get('ended') or 'partial'})")
        if steps:
            notes.append("steps: " + ", ".join(_step(step) for step in steps))
        self.write(f"_{'; '.join(notes)}_\n")

    def entry(self, position: int, run_id: str, entry: Entry, *, from_archive: bool = False) -> None:
        if isinstance(entry, UserMessage):
            self.write(f"\n**You** · {_utc(entry.created_at)}\n\n{_fences_closed(entry.text)}\n")
        elif isinstance(entry, AssistantMessage):
            note = finish_note(entry.finish_reason, stopped=self._stopped)  # as the transcript says it under the answer
            ended = f" · {note}" if note else ""
            who = entry.agent or "assistant"
            text = entry.text + code_span_closer(entry.text) if note else entry.text  # as the transcript shows it
            self.write(f"\n**{who}** · {_utc(entry.created_at)}{ended}\n\n{_fences_closed(text)}\n")
        elif isinstance(entry, ToolCall):
            self.write(f"\n**Tool call** `{entry.name}` (`{entry.call_id}`)\n\n" + _fence(_pretty(entry.arguments),
                                                                                          "json"))
        elif isinstance(entry, ToolResult):
            error = " (error)" if entry.is_error else ""
            whole = " · whole, from the tool-output archive" if from_archive else ""
            given = " · given, not received from the tool" if entry.call_id in self._given else ""
            self.write(f"\n**Result** of `{entry.name or entry.call_id}`{error}{given}{whole}\n\n"
                       + _fence(entry.output, "text"))
        elif isinstance(entry, Handoff):
            self.write(f"\n> ⇢ handed from **{entry.from_agent}** to **{entry.to_agent}**\n")

    def end(self) -> None:
        pass


def _step(step: Any) -> str:
    """A step as the export's steps line says it: ``demo 2.1s (first token 59ms, 40 tok/s)``, ``wait 2s (cut off)``."""
    notes = []
    if isinstance(step, ModelStep):
        name = step.model or step.agent
        if step.time_to_first_token is not None:
            notes.append(f"first token {step_duration(step.time_to_first_token)}")
            rate = tokens_per_second(step)
            if rate is not None:
                notes.append(f"{rate:.0f} tok/s")
        if step.asked_again:
            notes.append("failed, asked again")  # as the timeline says it
    else:
        name = step.name
    # How it ended when not by itself, as the timeline says it (a crash's cut-off steps read as whole ones).
    if (ending := step_ending(step)) and not (isinstance(step, ModelStep) and step.asked_again):
        notes.append(ending)
    if isinstance(step, ToolStep) and step.given:
        notes.append("result given")
    return f"{name} {step_duration(step.duration)}" + (f" ({', '.join(notes)})" if notes else "")


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _pretty(arguments: str) -> str:
    try:
        return json.dumps(json.loads(arguments), indent=2, ensure_ascii=False)
    except ValueError:
        return arguments


class _JsonLines:
    def __init__(self, out: TextIO) -> None:
        self.out = out
        self._given: set[str] = set()  # the run's calls whose result was given, not received from the tool

    def _line(self, record: dict[str, Any]) -> None:
        self.out.write(json.dumps(record, ensure_ascii=False, separators=(",", ":")) + "\n")

    def session(self, session_id: str, info: SessionInfo | None, origin: ForkOrigin | None, now: float) -> None:
        self._line({
            "record": "session", "version": JSONL_VERSION, "session_id": session_id,
            "title": info.title if info is not None else "",
            "created_at": info.created_at if info is not None else None,
            "last_activity": info.last_activity if info is not None else None,
            "entry_count": info.entry_count if info is not None else None,
            "run_count": info.run_count if info is not None else None,
            "forked_from": origin.to_meta() if origin is not None else None,
            "exported_at": now,
        })

    def run(self, span: RunSpan, index: int) -> None:
        segment = Segment(span.run_id, (), span.meta)
        steps = steps_from_meta(span.meta)
        active = span.meta.get("active_seconds")
        self._line({
            "record": "run", "run_id": span.run_id, "index": index, "start": span.start, "count": span.count,
            "started_at": segment.started_at, "finished_at": segment.finished_at, "duration": segment.duration,
            "active_seconds": active if isinstance(active, (int, float)) and not isinstance(active, bool) else None,
            "steps": steps_to_meta(steps), "meta": span.meta,
        })
        self._given = given_results(steps)

    def entry(self, position: int, run_id: str, entry: Entry, *, from_archive: bool = False) -> None:
        record = {"record": "entry", "position": position, "run_id": run_id, "created_at": entry.created_at,
                  "entry": entry_to_dict(entry)}
        if from_archive:
            record["output_from_archive"] = True
        if isinstance(entry, ToolResult) and entry.call_id in self._given:
            record["given"] = True
        self._line(record)

    def end(self) -> None:
        pass


# -- the command -----------------------------------------------------------------------------


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="lovia export",
        description="Write one session of lovia's data file as Markdown (to read) or JSON lines (to process).",
        epilog="Exit status: 0 written; 1 standard output was closed before the end (a pager or head quit); "
               "2 unknown or ambiguous session, bad arguments, or an unreadable file.",
    )
    parser.add_argument("session_id", metavar="SESSION_ID",
                        help=f"the session's id, or a prefix of it ({MIN_PREFIX} characters or more)")
    parser.add_argument("--format", choices=FORMATS, default=None,
                        help="md (default) or jsonl; with -o, a .jsonl file name picks jsonl")
    parser.add_argument("--db", type=db_argument, metavar="PATH|URL",
                        help="the SQLite file or a postgresql:// URL (default: the config file's db, else lovia.db "
                             "in your user data directory)")
    parser.add_argument("-o", "--output", type=Path, metavar="FILE", help="write to FILE (default: standard output)")
    return parser


def main(argv: list[str]) -> int:
    """``lovia export``: the exit status (0 written, 2 refused with a message on standard error; a reader
    that closes standard output before the end is ``lovia.cli.main``'s, as for every command)."""
    args = build_parser().parse_args(argv)
    try:
        return asyncio.run(_command(args))
    except LoviaError as exc:
        print(f"lovia export: {exc}", file=sys.stderr)
        return 2


def _session_store(db: DbLocation) -> AbstractAsyncContextManager[Session]:
    """The session store to export from (unopened: ``async with`` opens and closes it)."""
    if isinstance(db, PostgresLocation):
        session_class, _ = postgres_store_classes()
        return cast("AbstractAsyncContextManager[Session]", session_class(db.url))
    from lovia.stores import SQLiteSession

    if not db.is_file():
        raise UserError(f"no lovia data file at {db}: give one with --db")
    _check_sqlite_holds_sessions(db)
    # wal=False leaves the file's journal mode as it is (a WAL file stays WAL): an export only reads.
    return cast("AbstractAsyncContextManager[Session]", SQLiteSession(db, wal=False))


def _check_sqlite_holds_sessions(path: Path) -> None:
    """Refuse a SQLite file holding no lovia sessions (empty, or with no session tables), as a
    missing file is refused.

    Looked at read-only before the store opens: opening it would make the file a lovia database,
    and an export only reads. A file that is not SQLite's, or is damaged, is left to the store,
    whose error says what it is.
    """
    import sqlite3

    from lovia.stores._sqlite_db import _schema_version

    if path.stat().st_size == 0:
        raise UserError(f"{path} is empty (0 bytes): it holds no sessions to export; give lovia's database with --db")
    try:
        conn = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
    except sqlite3.Error:
        return
    try:
        version = _schema_version(conn, "session")
    except sqlite3.Error:
        return
    finally:
        conn.close()
    if version == 0:
        raise UserError(f"no lovia sessions in {path} (no lovia session tables there): give lovia's database "
                        "with --db")


async def _check_postgres_holds_sessions(where: PostgresLocation) -> None:
    """Refuse a PostgreSQL database holding no lovia sessions, as a missing SQLite file is refused.

    Looked at on a connection of its own, before the store opens: opening it would create lovia's
    tables in whatever database the URL names, and an export only reads.
    """
    import psycopg

    from lovia.stores._postgres_db import _schema_version, translate_error

    try:
        async with await psycopg.AsyncConnection.connect(where.url, autocommit=True, connect_timeout=10) as conn:
            version = await _schema_version(conn, "session")
    except psycopg.Error as exc:
        raise translate_error(exc, where.where, "looking for its sessions") from None
    if version == 0:
        raise UserError(f"no lovia sessions in {where} (no lovia session tables there): give lovia's database "
                        "with --db")


async def _command(args: argparse.Namespace) -> int:
    db = chosen_db(args.db)
    if isinstance(db, PostgresLocation):
        postgres_store_classes()  # says to install the extra when the driver is missing
        await _check_postgres_holds_sessions(db)
    from lovia.cli import archive_dir

    archive = FileResultStore(archive_dir(db))  # the app's, beside the data file: read only
    async with _session_store(db) as session:
        session_id = await resolve_session_id(session, args.session_id)
        if args.output is None:
            await export_session(session, session_id, sys.stdout, fmt=args.format or "md", archive=archive)
            sys.stdout.flush()
        else:
            summary = await write_export(session, session_id, args.output, fmt=args.format, archive=archive)
            print(f"lovia export: wrote {count(summary.runs, 'run')}, {count(summary.entries, 'entry', 'entries')} "
                  f"of {session_id} "
                  f"to {args.output}", file=sys.stderr)
    return 0
