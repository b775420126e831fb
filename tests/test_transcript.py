"""The pure helpers over entry lists."""

from __future__ import annotations

import pytest
from hypothesis import given, strategies as st

from lovia.entries import AssistantMessage, Handoff, ToolCall, ToolResult, UserMessage
from lovia.transcript import (
    call_pairs,
    dangling_tool_calls,
    drop_dangling_tool_calls,
    locate_cut,
    pair_tool_calls,
    trim_output,
    truncate_run,
    untrimmed_body,
)


def call(cid):
    return ToolCall(call_id=cid, name="t")


def result(cid, output="ok"):
    return ToolResult(call_id=cid, output=output)


def test_dangling_calls_are_those_without_results():
    entries = [UserMessage(text="q"), call("a"), call("b"), result("a")]
    assert [c.call_id for c in dangling_tool_calls(entries)] == ["b"]
    assert pair_tool_calls(entries)["a"][1] == entries[3]


def test_drop_dangling_keeps_order_and_drops_orphans_both_ways():
    entries = [UserMessage(text="q"), call("a"), call("b"), result("a"), result("ghost"),
               Handoff(from_agent="x", to_agent="y", call_id="b"), AssistantMessage(text="done")]
    assert drop_dangling_tool_calls(entries) == [entries[0], entries[1], entries[3], entries[6]]


def test_calls_that_share_an_id_each_pair_with_the_next_result_of_it():
    """Runs stored before the runner made ids unique: a model gave "call_1" every turn. A dangling
    last call counted as answered (its id had a result), and a partial kept it without one."""
    entries = [UserMessage(text="q"), call("call_1"), result("call_1", "one"), call("call_1"),
               result("call_1", "two"), call("call_1")]
    assert dangling_tool_calls(entries) == [entries[5]]
    assert drop_dangling_tool_calls(entries) == entries[:5]
    assert [(p.call_at, p.result_at) for p in call_pairs(entries)] == [(1, 2), (3, 4), (5, None)]
    assert pair_tool_calls(entries)["call_1"] == (entries[5], None)  # the last of them


@given(st.lists(st.sampled_from(["u", "call", "result"]), max_size=30), st.data())
def test_drop_dangling_always_yields_a_consistent_transcript(kinds, data):
    entries, open_ids, counter = [], [], 0
    for kind in kinds:
        if kind == "u":
            entries.append(UserMessage(text="x"))
        elif kind == "call":
            counter += 1
            open_ids.append(f"c{counter}")
            entries.append(call(f"c{counter}"))
        elif open_ids:
            entries.append(result(open_ids.pop(data.draw(st.integers(0, len(open_ids) - 1)))))
    consistent = drop_dangling_tool_calls(entries)
    assert dangling_tool_calls(consistent) == []
    assert drop_dangling_tool_calls(consistent) == consistent
    assert all(e in entries for e in consistent)


@pytest.mark.parametrize("keep, expected", [(0, (0, 0)), (1, (0, 1)), (2, (1, 0)), (4, (1, 2)), (5, (2, 0)),
                                           (6, (3, 0)), (99, (3, 0))])
def test_locate_cut(keep, expected):
    assert locate_cut([2, 3, 1], keep) == expected


def test_locate_cut_rejects_negative_counts():
    with pytest.raises(ValueError):
        locate_cut([1], -1)


def test_truncate_run_drops_calls_whose_results_fell_past_the_cut():
    entries = [UserMessage(text="q"), call("a"), result("a"), call("b"), result("b")]
    assert truncate_run(entries, 4) == entries[:3]


def test_trim_output_keeps_a_prefix_and_a_marker_and_is_idempotent():
    original = result("a", "0123456789" * 100)
    once = trim_output(original, 50)
    assert once.output.startswith("0123456789" * 5) and "950 characters trimmed" in once.output
    assert (once.call_id, once.trimmed_chars) == ("a", 950)
    assert untrimmed_body(once) == "0123456789" * 5
    assert trim_output(once, 50) is None
    assert trim_output(result("a", "short"), 50) is None
    assert trim_output(result("a", "x" * 60), 50) is None  # cutting 10 would cost more than the marker
