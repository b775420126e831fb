"""Usage: sums stay honest when some servers report tokens and others do not."""

from __future__ import annotations

from lovia.entries import AssistantMessage, ToolCall, entry_from_json
from lovia.usage import Usage


def test_known_and_unknown_turns_add_up():
    total = Usage()
    total += Usage(requests=1, input_tokens=11, output_tokens=7)
    assert total.known and not total.unknown
    total += Usage(requests=1, unreported_requests=1)
    assert (total.requests, total.input_tokens, total.output_tokens, total.unreported_requests) == (2, 11, 7, 1)
    assert not total.known and not total.unknown  # partly known: the counts are a lower bound
    only_unknown = Usage(requests=2, unreported_requests=2)
    assert only_unknown.unknown and not only_unknown.known
    assert Usage().known and not Usage().unknown  # no requests: nothing is missing


def test_usage_round_trips_and_reads_what_older_lovia_wrote():
    usage = Usage(requests=3, input_tokens=5, output_tokens=2, unreported_requests=1)
    assert Usage.from_dict(usage.to_dict()) == usage
    assert "unreported_requests" not in Usage(requests=1).to_dict()  # a fully known usage is written as before
    assert Usage.from_dict({"requests": 1, "input_tokens": 4, "output_tokens": 2}).known


def test_entries_written_before_finish_reasons_were_recorded_still_load():
    old_message = entry_from_json('{"type": "assistant", "text": "hi", "agent": "bot", "created_at": 1.0}')
    old_call = entry_from_json('{"type": "tool_call", "call_id": "c", "name": "t", "arguments": "{}", '
                               '"agent": null, "created_at": 1.0}')
    assert isinstance(old_message, AssistantMessage) and old_message.finish_reason is None
    assert isinstance(old_call, ToolCall) and old_call.finish_reason is None
