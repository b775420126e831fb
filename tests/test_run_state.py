"""how_run_stopped: the cause and the moment of every way a run can be left behind."""

from __future__ import annotations

import dataclasses

from lovia.checkpoint import RunHead, RunOwner, live_claim
from lovia.entries import AssistantMessage, ToolCall, ToolResult, UserMessage
from lovia.run_state import RunStop, first_line, how_run_stopped
from lovia.timing import ModelStep, ToolStep

NOW = 1_800_000_000.0
FAR = RunOwner(host="worker-far-away", pid=4242, started=1)
ASKED = [UserMessage(text="send the report, then charge the card")]
CALLS = [*ASKED, AssistantMessage(text="On it.", agent="a"),
         ToolCall(call_id="c1", name="send_mail", arguments="{}", agent="a"),
         ToolCall(call_id="c2", name="charge_card", arguments="{}", agent="a"),
         ToolCall(call_id="c3", name="lookup", arguments="{}", agent="a"),
         ToolResult(call_id="c3", name="lookup", output="found")]


def head(**changes) -> RunHead:
    return dataclasses.replace(RunHead(agent="a", status="interrupted", started_at=NOW - 60, updated_at=NOW - 30),
                               **changes)


def test_stopped_while_streaming_keeps_the_partial_text_whole():
    stop = how_run_stopped(head(cut_off_text="The capital of France\nis Par"), ASKED, NOW)
    assert stop == RunStop("stopped", "streaming", "The capital of France\nis Par")
    assert stop.headline == "stopped while streaming"


def test_stopped_inside_the_calls_without_results_only():
    stop = how_run_stopped(head(), CALLS, NOW)
    assert (stop.kind, stop.moment, stop.calls) == ("stopped", "tools", ("send_mail", "charge_card"))
    assert stop.headline == "stopped inside send_mail, charge_card"


def test_between_turns_and_after_the_answer():
    done = [*CALLS, ToolResult(call_id="c1", output="sent"), ToolResult(call_id="c2", output="charged")]
    assert how_run_stopped(head(), done, NOW).headline == "stopped between turns"
    answered = [*done, AssistantMessage(text="Done.", agent="a")]
    assert how_run_stopped(head(answered=True), answered, NOW).headline == "stopped after its answer"


def test_a_turn_cut_off_before_its_first_chunk_was_waiting_for_the_model():
    asked = ModelStep(agent="a", model="m", started_at=NOW - 40, finished_at=NOW - 30, cut_off=True)
    assert how_run_stopped(head(steps=[asked]), ASKED, NOW).headline == "stopped before the first token"
    # Whole in the runs list beside the conversation (34 cells from 150 columns), with its mark
    assert len("⏸ " + how_run_stopped(head(steps=[asked]), ASKED, NOW).headline) <= 34
    answering = dataclasses.replace(asked, first_token_at=NOW - 35)  # it had begun: not waiting any more
    assert how_run_stopped(head(steps=[answering]), ASKED, NOW).headline == "stopped between turns"
    called = ToolStep(call_id="c3", name="lookup", started_at=NOW - 40, finished_at=NOW - 39)
    assert how_run_stopped(head(steps=[called]), ASKED, NOW).headline == "stopped between turns"


def test_a_run_killed_waiting_for_the_model_was_waiting_not_between_turns():
    """Killed while the model had sent nothing: the runs list read "crashed between turns"."""
    gone = RunOwner(host=FAR.host, pid=4242, started=1)
    crashed = head(status="running", owner=gone)  # on another host its lease decides: lapsed here
    asked = ModelStep(agent="a", model="m", started_at=NOW - 40)  # never ended: its process died
    assert how_run_stopped(dataclasses.replace(crashed, steps=[asked]), ASKED, NOW).headline == \
        "crashed before the first token"
    # Killed in its first seconds, before the lease's first renewal saved a step: its input alone
    assert how_run_stopped(crashed, ASKED, NOW).headline == "crashed before the first token"
    streamed = dataclasses.replace(asked, first_token_at=NOW - 35)
    assert how_run_stopped(dataclasses.replace(crashed, steps=[streamed]), ASKED, NOW).moment == "between_turns"
    done = [*CALLS, ToolResult(call_id="c1", output="sent"), ToolResult(call_id="c2", output="charged")]
    assert how_run_stopped(dataclasses.replace(crashed, turn=1), done, NOW).moment == "between_turns"


def test_a_model_error_reads_its_first_line_without_the_type():
    error = "ModelError: HTTP 502 from https://api.example/v1\n\nTraceback (most recent call last):\n  ..."
    stop = how_run_stopped(head(status="failed", error=error, cut_off_text="Half an ans"), ASKED, NOW)
    assert stop == RunStop("failed", "streaming", "HTTP 502 from https://api.example/v1", (), model_error=True)
    assert stop.headline == "failed on a model error"


def test_lovia_s_other_errors_read_without_their_type_and_others_keep_it():
    """The runs list read "MaxTurnsExceeded: run 'lovia-ru…": the class and the run id, not the reason."""
    stop = how_run_stopped(head(status="failed", error="MaxTurnsExceeded: reached max_turns=2 without a final answer"),
                           CALLS, NOW)
    assert (stop.kind, stop.detail, stop.model_error) == ("failed", "reached max_turns=2 without a final answer",
                                                          False)
    assert stop.headline == "failed"
    hooked = how_run_stopped(head(status="failed", error="KeyError: 'user'"), CALLS, NOW)
    assert hooked.detail == "KeyError: 'user'"  # 'user' alone would say nothing


def test_held_elsewhere_under_a_live_lease_names_the_process():
    running = head(status="running", owner=FAR, claim="t-1", lease_until=NOW + 30)
    stop = how_run_stopped(running, CALLS, NOW)
    assert (stop.kind, stop.detail) == ("elsewhere", "pid 4242 on worker-far-away")
    assert stop.headline == "running elsewhere inside send_mail, charge_card"


def test_a_lapsed_lease_is_a_crash_with_what_the_journal_kept():
    lapsed = head(status="running", owner=FAR, claim="t-1", lease_until=NOW - 1, cut_off_text="Partial")
    assert how_run_stopped(lapsed, ASKED, NOW) == RunStop("crashed", "streaming", "Partial")
    assert how_run_stopped(dataclasses.replace(lapsed, cut_off_text=None), CALLS, NOW).headline == (
        "crashed inside send_mail, charge_card")


def test_running_here_while_its_execution_is_live_and_crashed_after():
    checkpointer = object()
    running = head(status="running", owner=RunOwner.current(), claim="t-here", lease_until=NOW + 60)
    with live_claim("t-here", checkpointer, "run-1"):
        assert how_run_stopped(running, ASKED, NOW).kind == "running"
    assert how_run_stopped(running, ASKED, NOW).kind == "crashed"


def test_completed():
    assert how_run_stopped(head(status="completed"), ASKED, NOW).headline == "completed"


def test_first_line_skips_blank_lines():
    assert first_line("\n  \n  boom  \nmore") == "boom"
    assert first_line("") == ""


def test_the_calls_can_be_named_shorter_where_they_do_not_fit():
    assert how_run_stopped(head(), CALLS, NOW).describe("2 tool calls") == "stopped inside 2 tool calls"
    running = head(status="running", owner=FAR, claim="t-1", lease_until=NOW + 30)
    assert how_run_stopped(running, CALLS, NOW).describe("2 tool calls") == "running elsewhere inside 2 tool calls"
    assert how_run_stopped(running, ASKED, NOW).describe("no calls") == "running elsewhere"
