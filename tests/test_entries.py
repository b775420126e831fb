"""The entry types and their JSON codec."""

from __future__ import annotations

import dataclasses
import json

import pytest
from hypothesis import given, strategies as st

from lovia.entries import (
    ENTRY_TYPES,
    AssistantMessage,
    Handoff,
    ToolCall,
    ToolResult,
    UserMessage,
    entries_from_json,
    entry_from_dict,
    entry_from_json,
    entry_to_dict,
    entry_to_json,
)
from lovia.errors import EntryDecodeError

text = st.text()
times = st.floats(min_value=0, max_value=4e9, allow_nan=False)
names = st.text(min_size=1, max_size=40)
maybe_name = st.none() | names

entries = st.one_of(
    st.builds(UserMessage, text=text, created_at=times),
    st.builds(AssistantMessage, text=text, agent=maybe_name, finish_reason=maybe_name, created_at=times),
    st.builds(ToolCall, call_id=names, name=names, arguments=text, agent=maybe_name, finish_reason=maybe_name,
              created_at=times),
    st.builds(ToolResult, call_id=names, output=text, name=maybe_name, is_error=st.booleans(),
              trimmed_chars=st.integers(0, 10**9), created_at=times),
    st.builds(Handoff, from_agent=names, to_agent=names, call_id=maybe_name, created_at=times),
)


@given(entries)
def test_every_entry_round_trips_through_json(entry):
    assert entry_from_json(entry_to_json(entry)) == entry
    assert entry_from_dict(json.loads(json.dumps(entry_to_dict(entry)))) == entry


@given(entries, st.dictionaries(st.text(min_size=1).filter(lambda k: k not in {"type"}), st.integers()))
def test_unknown_fields_are_ignored(entry, extra):
    data = entry_to_dict(entry)
    known = set(data)
    data.update({k: v for k, v in extra.items() if k not in known})
    assert entry_from_dict(data) == entry


def test_entries_are_immutable_and_typed():
    message = UserMessage(text="hi")
    with pytest.raises(dataclasses.FrozenInstanceError):
        message.text = "changed"  # type: ignore[misc]
    assert set(ENTRY_TYPES) == {"user", "assistant", "tool_call", "tool_result", "handoff"}
    assert entry_to_dict(message)["type"] == "user"
    assert message.created_at > 0


def test_an_unknown_type_is_an_error_naming_it_and_where():
    with pytest.raises(EntryDecodeError, match=r"unknown transcript entry type 'hologram' in session 'u1'.*upgrade lovia"):
        entry_from_dict({"type": "hologram"}, where="session 'u1'")
    with pytest.raises(EntryDecodeError, match="no valid type"):
        entry_from_dict({"text": "no type"})


def test_bulk_decoding_names_the_position_of_the_bad_entry():
    rows = [entry_to_json(UserMessage(text="a")), json.dumps({"type": "hologram"})]
    with pytest.raises(EntryDecodeError, match=r"run 'r1', entry #1"):
        entries_from_json(rows, where="run 'r1'")


@pytest.mark.parametrize("row, message", [
    ("{not json", "not valid JSON"),
    ('["a list"]', "a list, not an entry object"),
    ('{"type": "tool_call", "name": "t"}', "missing call_id"),
])
def test_malformed_rows_are_clear_errors(row, message):
    with pytest.raises(EntryDecodeError, match=message):
        entry_from_json(row)


def test_tool_call_arguments_parse_only_as_an_object():
    assert ToolCall(call_id="c", name="t", arguments='{"a": 1}').parsed_arguments() == {"a": 1}
    assert ToolCall(call_id="c", name="t", arguments="").parsed_arguments() == {}
    with pytest.raises(ValueError, match="JSON object"):
        ToolCall(call_id="c", name="t", arguments="[1]").parsed_arguments()
