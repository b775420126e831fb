"""Transcript entries and their JSON codec.

An entry is one immutable item of a transcript: a user message, an assistant message, a
tool call, a tool result or a handoff. Each is a frozen dataclass with a ``type`` tag and a
``created_at`` time (epoch seconds).

The codec is lenient where it can be and strict where it must be: fields this version does
not know are ignored on read, so rows written by a newer lovia still load; an unknown
``type`` is an :class:`~lovia.errors.UnknownEntryTypeError` that names the type and where it was
found, because guessing at an entry's meaning would corrupt the conversation.

A run's entries are also kept as one JSON array with a list of their type tags beside it
(:func:`entries_to_json_array`, :func:`entries_from_json_array`), as the SQLite session store
keeps them. That decoder is msgspec's: a first pass reads the entries' type tags, and a
decoder made once per sequence of tags builds the entry dataclasses straight from the JSON
text, in about half the time ``json.loads`` alone takes to make dicts of them (10,000
entries; see ``bench/stores.py``). Anything it does not expect goes through the same careful
decoder as a single entry, so the rules above hold for arrays too.

This module imports nothing of lovia but its errors.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import re
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

import msgspec

from lovia.errors import DamagedEntryError, EntryDecodeError, UnknownEntryTypeError

__all__ = [
    "ENTRY_TYPES",
    "USUAL_FINISH_REASONS",
    "AssistantMessage",
    "Entry",
    "Handoff",
    "ToolCall",
    "ToolResult",
    "UserMessage",
    "entries_from_json",
    "entries_from_json_array",
    "entries_to_json_array",
    "entry_from_dict",
    "entry_from_json",
    "entry_kinds",
    "entry_to_dict",
    "entry_to_json",
]


USUAL_FINISH_REASONS = frozenset({None, "stop", "tool_calls"})
"""Finish reasons of a turn that ended as it should; entries record only the others."""


def _now() -> float:
    return time.time()


@dataclass(frozen=True, slots=True, kw_only=True)
class UserMessage:
    """What the user said."""

    type: ClassVar[str] = "user"
    text: str
    created_at: float = field(default_factory=_now)


@dataclass(frozen=True, slots=True, kw_only=True)
class AssistantMessage:
    """Text the model produced, attributed to the agent that was active.

    ``finish_reason`` is set on the last entry of a model turn that ended for an unusual
    reason: ``length`` (the output token limit cut it off), ``content_filter``, ``cut_off``
    (the run stopped while it streamed, and the terminal UI kept it when recording the run
    as a partial segment), ... It is
    ``None`` for the usual ones (see :data:`USUAL_FINISH_REASONS`), on the turn's other
    entries, and on entries from before lovia recorded it.
    """

    type: ClassVar[str] = "assistant"
    text: str
    agent: str | None = None
    finish_reason: str | None = None
    created_at: float = field(default_factory=_now)


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolCall:
    """A request by the model to run a tool.

    ``arguments`` is the JSON text the model produced, kept verbatim: it may not even be
    valid JSON (a call cut off by the token limit is not), and nothing stored is lost. Such
    a call is never executed, and it is sent back to an endpoint with ``{}`` instead.
    ``finish_reason`` is as on :class:`AssistantMessage`: ``length`` on the last call of a
    turn means that call was cut off.
    """

    type: ClassVar[str] = "tool_call"
    call_id: str
    name: str
    arguments: str = "{}"
    agent: str | None = None
    finish_reason: str | None = None
    created_at: float = field(default_factory=_now)

    def parsed_arguments(self) -> dict[str, Any]:
        """The arguments as a dict; raises ``ValueError`` if they are not a JSON object."""
        value = json.loads(self.arguments or "{}")
        if not isinstance(value, dict):
            raise ValueError(f"tool arguments must be a JSON object, got {type(value).__name__}")
        return value


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolResult:
    """The outcome of one tool call, paired to it by ``call_id``.

    ``trimmed_chars`` counts characters cut from ``output`` by ``trim_tool_results``; the
    output then ends with a visible marker saying so (see :func:`lovia.transcript.trim_output`).
    """

    type: ClassVar[str] = "tool_result"
    call_id: str
    output: str
    name: str | None = None
    is_error: bool = False
    trimmed_chars: int = 0
    created_at: float = field(default_factory=_now)


@dataclass(frozen=True, slots=True, kw_only=True)
class Handoff:
    """Control passed from one agent to another."""

    type: ClassVar[str] = "handoff"
    from_agent: str
    to_agent: str
    call_id: str | None = None
    created_at: float = field(default_factory=_now)


Entry = UserMessage | AssistantMessage | ToolCall | ToolResult | Handoff

ENTRY_TYPES: dict[str, type] = {
    cls.type: cls for cls in (UserMessage, AssistantMessage, ToolCall, ToolResult, Handoff)
}

# Per type: the field names it accepts, and the ones it cannot do without.
_FIELDS: dict[str, frozenset[str]] = {
    name: frozenset(f.name for f in dataclasses.fields(cls)) for name, cls in ENTRY_TYPES.items()
}
_REQUIRED: dict[str, tuple[str, ...]] = {
    name: tuple(
        f.name
        for f in dataclasses.fields(cls)
        if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
    )
    for name, cls in ENTRY_TYPES.items()
}


_TYPE_TAG = re.compile(r"[a-z][a-z0-9_]{0,39}")


def entry_to_dict(entry: Entry) -> dict[str, Any]:
    """A JSON-ready dict of ``entry``, with its ``type`` tag first."""
    data: dict[str, Any] = {"type": entry.type}
    for name in _FIELDS[entry.type]:
        data[name] = getattr(entry, name)
    return data


def entry_from_dict(data: dict[str, Any], *, where: str = "") -> Entry:
    """Rebuild an entry from :func:`entry_to_dict` output.

    Unknown fields are ignored. An unknown or missing ``type``, a missing required field,
    or something that is not a dict raises :class:`EntryDecodeError` naming ``where``.
    """
    return _decode(dict(data) if isinstance(data, dict) else data, where)


def _decode(data: Any, where: str) -> Entry:
    """Like :func:`entry_from_dict`, but may consume ``data`` (the caller's own copy)."""
    # Fast path, taken by every row this version wrote: the fields match exactly.
    if type(data) is dict and type(type_name := data.pop("type", None)) is str:
        cls = ENTRY_TYPES.get(type_name)
        if cls is not None:
            try:
                return cls(**data)
            except TypeError:
                pass  # unknown or missing fields: the careful path below says which
        data["type"] = type_name
    return _decode_carefully(data, where)


def _decode_carefully(data: Any, where: str) -> Entry:
    at = f" in {where}" if where else ""
    if not isinstance(data, dict):
        raise DamagedEntryError(
            f"transcript entry{at} is damaged: it is a {type(data).__name__}, not an entry object. "
            "Restore the file from a backup."
        )
    type_name = data.get("type")
    if not isinstance(type_name, str):
        type_name = ""  # not a tag at all: refused as damaged below
    cls = ENTRY_TYPES.get(type_name)
    if cls is None and not _TYPE_TAG.fullmatch(type_name):
        # Only something shaped like a type tag is named: anything else may be damaged
        # stored text, and an error never quotes stored text.
        raise DamagedEntryError(
            f"transcript entry{at} is damaged: it has no valid type. Restore the file from a backup."
        )
    if cls is None:
        known = ", ".join(sorted(ENTRY_TYPES))
        raise UnknownEntryTypeError(
            f"unknown transcript entry type {type_name!r}{at}: this lovia knows {known}. "
            "It was probably written by a newer lovia; upgrade lovia to read it."
        )
    known_fields = _FIELDS[type_name]
    kwargs = {k: v for k, v in data.items() if k in known_fields}
    missing = [name for name in _REQUIRED[type_name] if name not in kwargs]
    if missing:
        raise EntryDecodeError(
            f"transcript entry of type {type_name!r}{at} is missing {', '.join(missing)}"
        )
    return cls(**kwargs)


def entry_to_json(entry: Entry) -> str:
    """``entry`` as compact JSON text."""
    return json.dumps(entry_to_dict(entry), ensure_ascii=False, separators=(",", ":"))


def entry_from_json(text: str, *, where: str = "") -> Entry:
    """Parse JSON text written by :func:`entry_to_json` (or a newer lovia)."""
    try:
        data = json.loads(text)
    except (TypeError, ValueError):
        # The decoder's message is not shown: it may quote part of the damaged text.
        at = f" in {where}" if where else ""
        raise DamagedEntryError(
            f"transcript entry{at} is damaged: it is not valid JSON. Restore the file from a backup."
        ) from None
    return _decode(data, where)


def entries_from_json(rows: Iterable[str], *, where: str = "") -> list[Entry]:
    """Decode many JSON entries; errors name ``where`` and the entry's position in it."""
    rows = list(rows)
    # The common case: the rows joined are one array for the fast decoder. The count tells a
    # row that was not one JSON value (such a row may even join into a valid array).
    try:
        fast = _fast_array("[" + ",".join(rows) + "]")
    except Exception:
        fast = None
    if fast is not None and len(fast) == len(rows):
        return list(fast)
    # Anything odd goes row by row, the long way, to decode it or name the damaged entry.
    entries: list[Entry] = []
    append, loads, types = entries.append, json.loads, ENTRY_TYPES
    for position, text in enumerate(rows):
        try:
            data = loads(text)
            append(types[data.pop("type")](**data))
        except Exception:
            label = f"{where}, entry #{position}" if where else f"entry #{position}"
            append(entry_from_json(text, where=label))  # decodes, or raises the precise error
    return entries


# -- a run's entries as one JSON array ---------------------------------------------------------

_encode_json = msgspec.json.Encoder().encode


def entries_to_json_array(entries: Sequence[Entry]) -> str:
    """``entries`` as one compact JSON array, each item as :func:`entry_to_json` writes it."""
    return _encode_json([entry_to_dict(entry) for entry in entries]).decode()


def entry_kinds(entries: Sequence[Entry]) -> str:
    """The type tags of ``entries`` in order, separated by single spaces (``""`` for none).

    What a store may keep beside :func:`entries_to_json_array` to find runs holding some kind
    of entry without reading them; decoding never relies on it.
    """
    return " ".join(entry.type for entry in entries)


def entries_from_json_array(text: Any, *, where: str = "", first: int = 0) -> tuple[Entry, ...]:
    """Decode an array written by :func:`entries_to_json_array`.

    The same rules as :func:`entry_from_json`: unknown fields are ignored, an unknown type is
    an :class:`~lovia.errors.UnknownEntryTypeError` and anything else damaged a :class:`DamagedEntryError`, never
    quoting stored text. Errors name ``where`` and the entry's position, counted from ``first``.
    """
    try:
        fast = _fast_array(text)
    except Exception:
        fast = None  # anything unexpected: the careful path decodes it, or says what is wrong without quoting it
    return fast if fast is not None else _decode_array_carefully(text, where, first)


def _fast_array(text: Any) -> tuple[Entry, ...] | None:
    """The entries of a JSON array of known types, or ``None``; raises on anything else unexpected."""
    # Two passes over the text, both in msgspec's C code: the entries' own type tags first,
    # which pick the decoder that builds exactly those entry classes.
    kinds = tuple([item.type for item in _read_tags(text)])
    if not _KNOWN_TYPES.issuperset(kinds):
        return None
    if len(kinds) <= _LONGEST_SHAPE:
        return _array_decoder(kinds).decode(text)
    # A long array (a checkpoint's whole run, a run of many tool calls) would make a decoder
    # used once: its items are decoded one by one instead, about as fast as ``json.loads``.
    return tuple([_ENTRY_DECODERS[kind](item) for kind, item in zip(kinds, _read_items(text), strict=True)])


class _Tagged(msgspec.Struct):
    type: str


_read_tags = msgspec.json.Decoder(list[_Tagged]).decode
_read_items = msgspec.json.Decoder(list[msgspec.Raw]).decode
_KNOWN_TYPES = frozenset(ENTRY_TYPES)
_ENTRY_DECODERS: dict[str, Callable[[Any], Entry]] = {
    name: msgspec.json.Decoder(cls).decode for name, cls in ENTRY_TYPES.items()
}
# Arrays up to this long get a decoder of their own shape, kept for the next of that shape.
_LONGEST_SHAPE = 256


@functools.lru_cache(maxsize=512)
def _array_decoder(kinds: tuple[str, ...]) -> msgspec.json.Decoder[tuple[Entry, ...]]:
    """A decoder of exactly this sequence of entry types, known ones only.

    Runs repeat a few shapes (a question, some tool calls and results, an answer), so few
    decoders serve a whole session; making one costs about as much as decoding ten entries.
    """
    return msgspec.json.Decoder(tuple.__class_getitem__(tuple(ENTRY_TYPES[kind] for kind in kinds)))


def _decode_array_carefully(text: Any, where: str, first: int) -> tuple[Entry, ...]:
    at = f" in {where}" if where else ""
    try:
        items = json.loads(text)
    except (TypeError, ValueError):
        # The decoder's message is not shown: it may quote part of the damaged text.
        raise DamagedEntryError(
            f"transcript entries{at} are damaged: they are not valid JSON. Restore the file from a backup."
        ) from None
    if type(items) is not list:
        raise DamagedEntryError(
            f"transcript entries{at} are damaged: they are a {type(items).__name__}, not a list of entries. "
            "Restore the file from a backup."
        )
    label = f"{where}, entry #" if where else "entry #"
    return tuple(_decode(item, f"{label}{first + position}") for position, item in enumerate(items))
