"""Where time went, in the UI: run headers with per-step timing, the timeline of a run, and the
sessions pane's time views; on real SQLite files, with the real app at 80x24 and full size.

The steps are written as the runner records them (:mod:`lovia.timing`): in a segment's
``meta["steps"]`` for a stored run, in the checkpoint head for a run not in its session yet.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from dataclasses import replace

import pytest
from rich.cells import cell_len

from lovia import Agent, AssistantMessage, SQLiteCheckpointer, SQLiteSession, ToolCall, ToolResult, UserMessage, tool
from lovia.checkpoint import RunHead, RunOwner, RunSnapshot
from lovia.models import DemoModel
from lovia.session import SessionInfo
from lovia.timing import ModelStep, ToolStep, step_from_dict, step_to_dict, steps_to_meta
from lovia.tui import format
from lovia.tui.backend import TranscriptRun
from lovia.tui.screens.timeline import (
    Columns,
    TimelineScreen,
    axis_of,
    draw_rows,
    joined_to_fit,
    step_figures,
    summary_parts,
)
from lovia.tui.widgets.run_header import RunHeader, StepSummary, busy_seconds, header_line, timing_parts
from lovia.tui.widgets.sessions_pane import PAGE, TIME_VIEWS, SessionsPane
from lovia.tui.widgets.tool_call_view import ToolCallView
from tests.tui.conftest import make_app, settle, type_and_send, wait_for
from tests.tui.counting import CountingSession, reset
from tests.tui.test_crash_resume import ROOT

SIZES = [(80, 24), (160, 45)]
T0 = 1796212800.0  # 2026-12-02 12:00 UTC, a Wednesday

TIMED_STEPS = (
    ModelStep("assistant", "gpt-test", T0 + 0.1, T0 + 0.5, T0 + 1.5, 400, 50, turn=1),
    ToolStep("call-1", "calculate", T0 + 1.6, T0 + 1.65),
    ToolStep("call-2", "fetch", T0 + 1.6, T0 + 2.6, error=True),
    ModelStep("assistant", "gpt-test", T0 + 2.7, T0 + 3.0, T0 + 4.0, 500, 50, turn=2),
)
TIMED_ENTRIES = [
    UserMessage(text="add and fetch"),
    ToolCall(call_id="call-1", name="calculate", arguments='{"expression": "1+1"}', agent="assistant"),
    ToolCall(call_id="call-2", name="fetch", arguments="{}", agent="assistant"),
    ToolResult(call_id="call-1", output="2", name="calculate"),
    ToolResult(call_id="call-2", output="no network", name="fetch", is_error=True),
    AssistantMessage(text="It is 2; the fetch failed.", agent="assistant"),
]


def plain(renderable) -> str:
    return getattr(renderable, "plain", str(renderable))


def dead_pid() -> int:
    """The pid of a process that has exited: a run it owned is held by nobody (crashed)."""
    child = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True,
                           check=True)
    return int(child.stdout)


async def timed_db(path, *, crashed: bool = False) -> None:
    """``s-timed``: a run stored with steps, then one stored before lovia recorded them (``s-old``);
    with ``crashed``, a run of ``s-timed`` whose process died inside a tool call."""
    async with SQLiteSession(path, wal=True) as session, SQLiteCheckpointer(path, wal=True) as checkpointer:
        await session.append("s-old", [UserMessage(text="an old question"), AssistantMessage(text="an old answer")],
                             run_id="run-old", meta={"timing": {"started_at": T0 - 60, "finished_at": T0 - 58}})
        await session.append("s-timed", TIMED_ENTRIES, run_id="run-timed",
                             meta={"timing": {"started_at": T0, "finished_at": T0 + 4.1},
                                   "steps": steps_to_meta(TIMED_STEPS)})
        if crashed:
            owner = replace(RunOwner.current(), pid=dead_pid())
            head = RunHead(agent="assistant", status="running", turn=1, started_at=T0 + 10, updated_at=T0 + 12,
                           session_id="s-timed", first_input="wait", owner=owner, steps=[
                               ModelStep("assistant", "gpt-test", T0 + 10, T0 + 10.4, T0 + 11, 90, 10, turn=1),
                               ToolStep("call-w", "wait", T0 + 11.1)])
            await checkpointer.save(RunSnapshot("run-crashed", head, [
                UserMessage(text="wait"), ToolCall(call_id="call-w", name="wait", arguments="{}", agent="assistant")]))


# -- the run header ---------------------------------------------------------------------------


def test_a_summary_counts_turns_first_token_rate_and_tool_time_once_for_parallel_calls():
    summary = StepSummary.of(TIMED_STEPS)
    assert summary.turns == 2 and summary.tool_calls == 2 and summary.open_steps == 0
    assert summary.first_token == pytest.approx(0.4)  # the first turn's: the wait before anything showed
    assert summary.tokens_per_second == pytest.approx(100 / 2.0)  # 50 + 50 tokens over 1.0 + 1.0 s of streaming
    assert summary.tool_seconds == pytest.approx(1.0)  # the two calls ran side by side: 1.6 to 2.6
    assert busy_seconds([(0, 1), (2, 3), (2.5, 4)]) == pytest.approx(3.0)
    # An attempt stopped before its first token, then resumed: the figure is the resumed turn's.
    retried = StepSummary.of([ModelStep("a", None, T0, None, T0 + 3, cut_off=True),
                              ModelStep("a", None, T0 + 5, T0 + 15, T0 + 16, turn=1)])
    assert retried.first_token == pytest.approx(10.0) and retried.turns == 1
    # Cut off by a crash after its first token, then resumed: the resumed turn's, as it is the one shown.
    crashed = StepSummary.of([ModelStep("a", None, T0, T0 + 0.142, T0 + 5.6, cut_off=True),
                              ModelStep("a", None, T0 + 40, T0 + 40.099, T0 + 120, turn=1)])
    assert crashed.first_token == pytest.approx(0.099)
    live = StepSummary.of([ModelStep("a", None, T0, T0 + 0.142, T0 + 5.6, cut_off=True),
                           ModelStep("a", None, T0 + 40, None, None, turn=1)])
    assert live.first_token == pytest.approx(0.142)  # nothing finished yet: what came first
    unknown = StepSummary.of([ModelStep("a", None, T0, None, None)])
    assert (unknown.first_token, unknown.tokens_per_second, unknown.tool_seconds, unknown.open_steps) == \
        (None, None, None, 1)


def test_a_summary_counts_finished_turns_not_attempts_a_stop_or_a_crash_cut_off():
    """Stopped while waiting, then resumed and answered: one turn, as the inspector counts them."""
    stopped = ModelStep("a", "m", T0, None, T0 + 5, cut_off=True, turn=1)
    crashed = ModelStep("a", "m", T0 + 6, T0 + 6.5, None, cut_off=True, turn=1)
    answered = ModelStep("a", "m", T0 + 9, T0 + 9.4, T0 + 10, 20, 10, turn=1)
    assert StepSummary.of([stopped, crashed, answered]).turns == 1
    assert StepSummary.of([stopped]).turns == 0
    assert "turn" not in " ".join(timing_parts(StepSummary.of([stopped])))


def test_a_turn_that_came_at_once_has_no_rate_in_the_timeline_and_adds_none_to_the_header():
    """A tool-call turn whose end came 30 µs after its first chunk (the demo model's) would read 33333 tok/s:
    its timeline row gives no rate, the header's rate is the streamed turns' alone, and none when it is alone."""
    burst = ModelStep("assistant", "demo", T0, T0 + 0.00001, T0 + 0.00004, 50, 1, turn=1)
    streamed = ModelStep("assistant", "demo", T0 + 0.1, T0 + 0.2, T0 + 1.2, 60, 50, turn=2)
    assert step_figures(burst, "completed") == "ttft 0ms · 50→1 tok"
    # A step the user stopped says so; one a crash cut off says that (a new user's trial: both read "cut off").
    assert step_figures(ToolStep("c1", "wait", T0, T0 + 6, cut_off=True, stopped=True), "completed") == "stopped"
    assert step_figures(ToolStep("c1", "wait", T0, T0 + 6, cut_off=True), "completed") == "cut off"
    # Its result given by hand (the inspector's o), not returned by the tool
    assert step_figures(ToolStep("c1", "wait", T0, T0 + 6, cut_off=True, given=True), "completed") == \
        "cut off · result given"
    assert "50 tok/s" in step_figures(streamed, "completed")
    assert StepSummary.of([burst, streamed]).tokens_per_second == pytest.approx(50.0)
    assert StepSummary.of([burst]).tokens_per_second is None


def test_a_header_folds_its_timing_to_fit_and_a_run_without_steps_reads_as_before():
    run = TranscriptRun("r", (), "completed", T0, 4.1, steps=TIMED_STEPS)
    summary = StepSummary.of(TIMED_STEPS)
    full = header_line(run, summary)
    assert full.endswith("4.1s · 2 turns · first token 400ms · 50 tok/s · tools 1.0s ──")
    widths = range(len(full), 20, -1)
    lines = [header_line(run, summary, width) for width in widths]
    # Every line with timing in it fits its width; below the shortest, the header as before.
    assert all(len(line) <= width for line, width in zip(lines, widths, strict=True) if "ttft" in line)
    assert any("2 turns · ttft 400ms · 50 tok/s" in line for line in lines)  # shorter words first
    assert any(line.endswith("2 turns · ttft 400ms · tools 1.0s ──") for line in lines)  # then fewer figures
    assert any(line.endswith("4.1s · ttft 400ms · tools 1.0s ──") for line in lines)
    assert any(line.endswith("4.1s · tools 1.0s ──") for line in lines)  # then the tools' time alone
    untooled = [step for step in TIMED_STEPS if not isinstance(step, ToolStep)]
    assert any(header_line(replace(run, steps=tuple(untooled)), StepSummary.of(untooled), width).endswith(
        "4.1s · ttft 400ms ──") for width in widths)  # or, with no tool call, the time to first token
    assert lines[-1] == header_line(replace(run, steps=()), None)  # then none: the header as before
    assert header_line(replace(run, steps=()), None, 200) == f"── {format.when(T0)} · 4.1s ──"


def test_a_run_stored_without_times_says_so_instead_of_placeholders():
    """A run appended by other code without the spec's ``timing`` (no start, no duration)."""
    untimed = TranscriptRun("r", (), "completed", None, None)
    assert header_line(untimed, None) == "── time not recorded ──"
    assert header_line(replace(untimed, started_at=T0), None) == f"── {format.when(T0)} ──"
    assert header_line(replace(untimed, duration=4.1), None) == "── 4.1s ──"


@pytest.mark.parametrize("size", SIZES)
async def test_run_headers_show_where_time_went_at_every_size(tmp_path, size):
    db = tmp_path / "lovia.db"
    await timed_db(db, crashed=True)
    app = make_app(db)
    async with app.run_test(size=size) as pilot:
        await settle(pilot)
        await app.screen.open_session("s-timed")
        await settle(pilot)
        headers = {h.run_id: h for h in app.screen.chat.transcript.query(RunHeader)}
        stored, crashed = plain(headers["run-timed"].render()), plain(headers["run-crashed"].render())
        width = headers["run-timed"].content_region.width
        assert len(stored) <= width and len(crashed) <= width  # one line each, folded to fit
        assert "tools 1.0s" in stored and "400ms" in stored  # first-token time and time in tools, at any width
        assert "crashed" in crashed and "400ms" in crashed  # an in-flight run's steps come from its head
        if size == (160, 45):
            assert "2 turns · first token 400ms · 50 tok/s · tools 1.0s" in stored or \
                "2 turns · ttft 400ms · 50 tok/s · tools 1.0s" in stored
        await app.screen.open_session("s-old")
        await settle(pilot)
        old = plain(app.screen.chat.transcript.query_one(RunHeader).render())
        assert old == f"── {format.when(T0 - 60)} · 2.0s ──"  # stored before steps: as it always read


# -- the timeline -----------------------------------------------------------------------------


def test_the_waterfall_places_each_step_on_the_runs_axis():
    run = TranscriptRun("r", (), "completed", T0, 4.0, steps=TIMED_STEPS)
    rows = plain(draw_rows(run, 80, T0 + 100)).splitlines()
    assert len(rows) == 1 + len(TIMED_STEPS)  # the axis, then a row per step
    assert rows[0].split()[-1] == "4.0s"  # the axis ends where the run ended
    first, calc, fetch, second = rows[1:]
    assert first.startswith("turn 1 · gpt-test") and "1.4s" in first  # its duration
    assert calc.startswith("  ⚙ calculate") and "50ms" in calc
    bar = first[first.index("░"):]
    assert bar.startswith("░" * 4) and "█" in bar  # shaded until its first token, solid after: ttft marked
    assert calc.index("▆") == fetch.index("▓")  # started together, side by side on the axis
    assert second.index("░") > fetch.index("▓")  # the second turn after the calls
    assert max(len(row) for row in rows) <= 80
    wide = plain(draw_rows(run, 160, T0 + 100)).splitlines()
    assert "ttft 400ms · 50 tok/s · 400→50 tok" in wide[1] and "+1.6s" in wide[2] and "error" in wide[3]


def test_a_wide_name_keeps_the_bars_in_line_with_the_other_rows():
    # A tool or model named in Chinese takes two cells a character: padding by characters moved its bar.
    steps = (ModelStep("assistant", "模型", T0, T0 + 0.2, T0 + 1.0, turn=1), ToolStep("c1", "天气", T0 + 1.0, T0 + 2.0),
             ToolStep("c2", "calc", T0 + 1.0, T0 + 2.0))
    run = TranscriptRun("r", (), "completed", T0, 2.0, steps=steps)
    for width in (80, 160):
        rows = plain(draw_rows(run, width, T0 + 100)).splitlines()
        wide_call, plain_call = rows[2], rows[3]
        assert cell_len(wide_call) == cell_len(plain_call) <= width
        assert cell_len(wide_call[:wide_call.index("▆")]) == cell_len(plain_call[:plain_call.index("▆")])


def test_a_turn_a_model_error_ended_is_drawn_as_an_error_not_as_waiting():
    failed = ModelStep("assistant", "gpt-test", T0, None, T0 + 3.0, cut_off=True, error=True, turn=1)
    run = TranscriptRun("r", (), "failed", T0, 3.0, steps=(failed,))
    narrow = plain(draw_rows(run, 80, T0 + 100)).splitlines()[1]
    assert narrow.startswith("turn 1 · error") and "▓" * 10 in narrow and "░" not in narrow
    wide = plain(draw_rows(run, 160, T0 + 100)).splitlines()[1]
    assert "no token · error" in wide and "cut off" not in wide


def test_an_attempt_the_model_sent_again_says_so_not_that_the_run_failed():
    # A 429, then the same turn asked again after the wait: its row read "no token · error", as a
    # turn that failed the run does, with nothing saying the next row is the same turn's request again.
    refused = ModelStep("assistant", "openai:m", T0, None, T0 + 0.1, cut_off=True, error=True, asked_again=True, turn=1)
    answered = ModelStep("assistant", "openai:m", T0 + 2.1, T0 + 2.4, T0 + 3.0, turn=1)
    run = TranscriptRun("r", (), "completed", T0, 3.0, steps=(refused, answered))
    narrow = plain(draw_rows(run, 80, T0 + 100)).splitlines()
    assert narrow[1].startswith("turn 1 · asked again ") and "▓" in narrow[1]  # red still: it failed
    assert narrow[2].startswith("turn 1 · openai:m ")
    wide = plain(draw_rows(run, 160, T0 + 100)).splitlines()
    assert "no token · failed, asked again" in wide[1] and "error" not in wide[1]
    assert step_from_dict(step_to_dict(refused)) == refused  # stored and read back


def test_a_long_model_name_never_hides_that_a_turn_was_cut_off():
    # "turn 1 · openai:slow-model · cut off" was cut to the name column, "turn 1 · openai:slo…":
    # nothing said the process died there.
    cut = ModelStep("assistant", "openai:slow-model", T0, T0 + 0.5, T0 + 3.0, cut_off=True, turn=1)
    failed = ModelStep("assistant", "openai:slow-model", T0 + 3.0, None, T0 + 4.0, cut_off=True, error=True, turn=2)
    run = TranscriptRun("r", (), "completed", T0, 4.0, steps=(cut, failed))
    for width in (80, 100):
        rows = plain(draw_rows(run, width, T0 + 100)).splitlines()
        assert rows[1].startswith("turn 1 · cut off ")  # the mark in place of the model's name
        assert rows[2].startswith("turn 2 · error ")
        assert max(cell_len(row) for row in rows) <= width


@pytest.mark.parametrize("span", [4.0, 2.8, 17.2, 0.21])
def test_the_axis_ticks_are_quarters_of_the_run(span):
    # A tick read the time at its column's start: "+1.0s +2.0s +2.9s" for a 4.0 s run. Under a
    # second, to a tenth of one, a quarter of 0.21 s read "+0.1s": in milliseconds now.
    from lovia._wording import step_duration

    run = TranscriptRun("r", (), "completed", T0, span, steps=(ModelStep("a", "m", T0, T0 + 0.01, T0 + span, turn=1),))
    duration = step_duration if span < 1 else format.duration
    for width in range(70, 200, 3):
        line = plain(draw_rows(run, width, T0 + 100)).splitlines()[0]
        columns = Columns.for_width(width)
        axis = axis_of(run, T0 + 100, max(8, width - columns.labels))
        quarters = {f"+{duration(axis.span * q / 4)}": q for q in (1, 2, 3)}
        ticks = line.split()[line.split().index("0s") + 1:]
        if span >= 1:
            assert ticks == [*quarters, duration(span)]
        else:  # wider labels: the last quarter gives way to the end's where they would touch
            assert ticks in ([*quarters, duration(span)], [*list(quarters)[:2], duration(span)])
        for label in ticks[:-1]:  # each stands where its time falls
            at = line.index(label) - columns.labels
            assert abs(axis.position(T0 + axis.span * quarters[label] / 4) - at) <= 0.5


def test_figures_wrap_between_figures():
    parts = ["2026-12-05 21:32:37", "37s", "ran 23s", "2 turns", "ttft 400ms", "tools 1ms", "1 tool call"]
    assert joined_to_fit(parts, 40).splitlines() == [
        "2026-12-05 21:32:37 · 37s · ran 23s", "2 turns · ttft 400ms · tools 1ms", "1 tool call"]
    assert joined_to_fit(parts, 200) == " · ".join(parts)
    assert joined_to_fit(["a much longer figure than the width"], 10) == "a much longer figure than the width"


def test_a_crashed_runs_open_tool_call_lasts_until_the_run_was_last_known_executing():
    # Killed 5.1 s into a long tool call: its lease kept active_seconds up to date, its steps never ended.
    steps = (ModelStep("assistant", "gpt-test", T0 + 0.01, T0 + 0.05, T0 + 0.06, 10, 5, turn=1),
             ToolStep("call-1", "wait", T0 + 0.07, None))
    run = TranscriptRun("r", (), "crashed", T0, None, active_seconds=5.1, steps=steps)
    assert run.known_until == pytest.approx(T0 + 5.1, abs=0.01)
    summary = StepSummary.of(steps, run.known_until)
    assert summary.tool_seconds == pytest.approx(5.03) and summary.open_steps == 1
    assert StepSummary.of(steps).tool_seconds == 0, "without a last known moment, an open call adds nothing"
    rows = plain(draw_rows(run, 80, T0 + 100)).splitlines()
    assert rows[0].split()[-1] == "5.1s", "the axis runs to the last known moment, not to the open call's start"
    call = rows[2]
    assert call.startswith("  ⚙ wait") and "…" in call  # its duration unknown
    assert call.count("╌") > 20, "dashed across the axis, to its end"
    assert TranscriptRun("r", (), "running", T0, None, active_seconds=5.1, steps=steps).known_until is None


def test_a_run_stopped_resumed_then_crashed_lasts_until_its_last_save():
    # Stopped 1.5 s into a wait, resumed 10 s later, killed 3 s into the call run again: its start
    # plus the 4.5 s it ran fell inside the pause, and the call run again got one dash at the
    # axis' end and no time in "tools".
    steps = (ModelStep("assistant", "demo", T0 + 0.01, T0 + 0.05, T0 + 0.1, turn=1),
             ToolStep("call-1", "wait", T0 + 0.1, T0 + 1.5, cut_off=True),
             ToolStep("call-1", "wait", T0 + 11.5, None))
    head = RunHead(agent="assistant", status="running", started_at=T0, updated_at=T0 + 14.5, active_seconds=4.5,
                   steps=list(steps), owner=replace(RunOwner.current(), pid=dead_pid()))
    run = TranscriptRun.of_snapshot(RunSnapshot("r", head, []))
    assert run.state == "crashed" and run.known_until == pytest.approx(T0 + 14.5, abs=0.01)
    assert StepSummary.of(steps, run.known_until).tool_seconds == pytest.approx(1.4 + 3.0)
    rows = plain(draw_rows(run, 80, T0 + 100)).splitlines()
    again = rows[3]
    assert again.startswith("  ⚙ wait") and again.count("╌") > 3, again


def test_a_run_stopped_briefly_resumed_then_crashed_lasts_until_its_last_save():
    # Stopped 3 s into a wait, resumed 2 s later, killed 6 s into the call run again (a new user's
    # trial): the pause was shorter than the resumed part, so no step began after its start plus
    # the 9 s it ran, the last save was not counted, and the call run again was drawn 2 s short.
    steps = (ModelStep("assistant", "demo", T0 + 0.01, T0 + 0.05, T0 + 0.1, turn=1),
             ToolStep("call-1", "wait", T0 + 0.1, T0 + 3.0, cut_off=True),
             ToolStep("call-1", "wait", T0 + 5.0, None))
    run = TranscriptRun("r", (), "crashed", T0, None, active_seconds=9.0, steps=steps, saved_at=T0 + 11.0)
    assert run.known_until == pytest.approx(T0 + 11.0, abs=0.01)
    assert StepSummary.of(steps, run.known_until).tool_seconds == pytest.approx(2.9 + 6.0)


def test_a_save_after_the_run_stopped_executing_does_not_lengthen_it():
    # A claim to resume the run (which failed before it took a step) saved the head later: with no
    # step after the pause, that save is not the run's own, and its open call did not run on.
    steps = (ModelStep("assistant", "demo", T0 + 0.01, T0 + 0.05, T0 + 0.1, turn=1),
             ToolStep("call-1", "wait", T0 + 0.1, None))
    run = TranscriptRun("r", (), "failed", T0, None, active_seconds=4.5, steps=steps, saved_at=T0 + 3600)
    assert run.known_until == pytest.approx(T0 + 4.5, abs=0.01)


def test_a_live_runs_step_an_earlier_execution_cut_off_stays_dashed():
    steps = (ToolStep("call-1", "wait", T0 + 0.1, None, cut_off=True), ToolStep("call-1", "wait", T0 + 11.5, None))
    rows = plain(draw_rows(TranscriptRun("r", (), "running", T0, None, steps=steps), 80, T0 + 14)).splitlines()
    assert "╌" in rows[1] and "╌" not in rows[2] and "▆" in rows[2]


def test_a_crashed_runs_turn_that_never_ended_is_dashed_and_a_live_ones_waits():
    # Killed 5.1 s into waiting for the model: it was drawn shaded, as if still waiting.
    asked = ModelStep("assistant", "gpt-test", T0 + 0.01)
    crashed = TranscriptRun("r", (), "crashed", T0, None, active_seconds=5.1, steps=(asked,))
    row = plain(draw_rows(crashed, 80, T0 + 100)).splitlines()[1]
    assert "░" not in row and row.count("╌") > 20
    live = TranscriptRun("r", (), "running", T0, None, steps=(asked,))
    row = plain(draw_rows(live, 80, T0 + 5.1)).splitlines()[1]
    assert "╌" not in row and row.count("░") > 20  # executing: still waiting, and it grows


def test_a_pause_between_a_stop_and_a_resume_is_folded_so_the_steps_stay_readable():
    steps = (ModelStep("assistant", "m", T0, T0 + 0.5, T0 + 2.0, turn=1),
             ToolStep("call-1", "wait", T0 + 2.0, T0 + 2.5, cut_off=True),  # stopped here; resumed an hour later
             ToolStep("call-1", "wait", T0 + 3600.0, T0 + 3601.0),
             ModelStep("assistant", "m", T0 + 3601.0, T0 + 3601.5, T0 + 3603.0, turn=2))
    run = TranscriptRun("r", (), "completed", T0, 3603.0, steps=steps)
    axis = axis_of(run, T0 + 9999, 60)
    assert axis.folds == ((T0 + 2.5, T0 + 3600.0),)
    for at in (T0, T0 + 1.0, T0 + 2.5, T0 + 1800.0, T0 + 3600.0, T0 + 3602.0):
        assert axis.offset_at(round(axis.position(at))) == pytest.approx(at - T0, abs=axis.span / 2)
    assert [axis.position(t) for t in (T0, T0 + 2.5, T0 + 3600, T0 + 3603)] == \
        sorted(axis.position(t) for t in (T0, T0 + 2.5, T0 + 3600, T0 + 3603))
    rows = plain(draw_rows(run, 80, T0 + 9999)).splitlines()
    assert "⋯" in rows[0] and rows[0].rstrip().endswith(" 1h 00m")  # the pause is marked; the run's length
    first_turn, last_turn = rows[1], rows[4]
    assert first_turn.count("█") >= 8 and last_turn.count("█") >= 8  # seconds of work still seconds wide
    stopped = replace(run, steps=steps[:2])  # the hour before it was recorded as partial is a pause too
    assert axis_of(stopped, T0, 60).folds == ((T0 + 2.5, T0 + 3603.0),)
    assert plain(draw_rows(stopped, 80, T0)).splitlines()[1].count("█") >= 8
    assert axis_of(replace(stopped, duration=2.5), T0, 60).folds == ()  # no pause: nothing folded


@pytest.mark.parametrize("size", SIZES)
async def test_w_in_the_transcript_shows_the_run_under_the_cursor_and_escape_closes(tmp_path, size):
    db = tmp_path / "lovia.db"
    await timed_db(db)
    app = make_app(db)
    async with app.run_test(size=size) as pilot:
        await settle(pilot)
        await app.screen.open_session("s-timed")
        await settle(pilot)
        app.screen.chat.transcript.focus()
        await pilot.press("up", "w")
        await wait_for(pilot, lambda: isinstance(app.screen, TimelineScreen))
        await pilot.pause()
        screen = app.screen
        assert screen.run.run_id == "run-timed"
        rows = plain(screen.query_one("#timeline-rows").render()).splitlines()
        assert [row.split()[0] for row in rows[1:]] == ["turn", "⚙", "⚙", "turn"]
        assert all(len(row) <= size[0] for row in rows)
        summary = plain(screen.query_one("#timeline-summary").render())
        assert "2 turns" in summary and "2 tool calls" in summary
        parts = summary_parts(screen.run)
        for line in summary.splitlines():  # wrapped between figures, never inside one ("tools" / "1ms")
            assert set(line.split(" · ")) <= set(parts) and len(line) <= size[0] - 4
        await pilot.press("escape")
        await pilot.pause()
        assert not isinstance(app.screen, TimelineScreen)


async def test_the_timeline_scrolls_with_keys_at_80x24(tmp_path):
    db = tmp_path / "lovia.db"
    steps = [ToolStep(f"call-{i}", f"tool_{i}", T0 + i, T0 + i + 0.5) for i in range(60)]
    async with SQLiteSession(db, wal=True) as session:
        await session.append("s-long", [UserMessage(text="many calls"), AssistantMessage(text="done")],
                             run_id="run-long", meta={"timing": {"started_at": T0, "finished_at": T0 + 61},
                                                      "steps": steps_to_meta(steps)})
    app = make_app(db)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        app.screen.chat.transcript.focus()
        await pilot.press("w")
        await wait_for(pilot, lambda: isinstance(app.screen, TimelineScreen))
        await pilot.pause()
        scroll = app.screen.query_one("#timeline-scroll")
        assert scroll.has_focus and scroll.max_scroll_y > 0
        await pilot.press("pagedown")
        await pilot.pause()
        assert scroll.scroll_y > 0
        await pilot.press("end")
        await pilot.pause()
        assert scroll.scroll_y == scroll.max_scroll_y
        await pilot.press("home")
        await pilot.pause()
        assert scroll.scroll_y == 0


@pytest.mark.parametrize("size", SIZES)
async def test_w_in_the_runs_pane_draws_a_crashed_run_from_its_head(tmp_path, size):
    db = tmp_path / "lovia.db"
    await timed_db(db, crashed=True)
    app = make_app(db)
    async with app.run_test(size=size) as pilot:
        await settle(pilot)
        if size == (80, 24):
            await pilot.press("ctrl+o")  # the runs pane comes over the conversation
        app.screen.query_one("#run-list").focus()
        await wait_for(pilot, lambda: app.screen.inspected == "run-crashed")
        await pilot.press("w")
        await wait_for(pilot, lambda: isinstance(app.screen, TimelineScreen))
        await pilot.pause()
        screen = app.screen
        assert screen.run.state == "crashed"
        rows = plain(screen.query_one("#timeline-rows").render()).splitlines()
        assert rows[1].startswith("turn 1 · gpt-test")
        wait_row = rows[2]
        assert wait_row.startswith("  ⚙ wait") and "…" in wait_row and "╌" in wait_row  # it never ended
        if size == (160, 45):
            assert "never ended" in wait_row
        await pilot.press("escape")
        await pilot.pause()
        assert app.screen.query_one("#run-list").has_focus


async def test_a_run_stored_without_steps_says_so_in_its_timeline(tmp_path):
    db = tmp_path / "lovia.db"
    await timed_db(db)
    app = make_app(db)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await app.screen.open_session("s-old")
        await settle(pilot)
        app.screen.chat.transcript.focus()
        await pilot.press("w")
        await wait_for(pilot, lambda: isinstance(app.screen, TimelineScreen))
        await pilot.pause()
        assert "no per-step timing" in plain(app.screen.query_one("#timeline-empty").render())


# -- the sessions pane's time views -----------------------------------------------------------


async def sessions_at(path, activity: dict[str, tuple[float, float]]) -> None:
    """A session of one run for each id: ``(last activity, run seconds)``, set as the store keeps them."""
    async with SQLiteSession(path, wal=True) as session:
        for session_id, (_, seconds) in activity.items():
            await session.append(session_id, [UserMessage(text=f"about {session_id}"), AssistantMessage(text="ok")],
                                 meta={"timing": {"started_at": T0, "finished_at": T0 + seconds}})
    with sqlite3.connect(path) as conn:
        for session_id, (at, _) in activity.items():
            conn.execute("UPDATE lovia_session_info SET last_activity = ? WHERE session_id = ?", (at, session_id))


def shown_ids(pane: SessionsPane) -> list[str]:
    return [info.session_id for info in pane.sessions]


@pytest.mark.parametrize("size", SIZES)
async def test_f3_cycles_today_this_week_and_longest_with_the_filter_and_the_title_says_which(
        tmp_path, monkeypatch, size):
    db = tmp_path / "lovia.db"
    now = T0 + 3600  # Wednesday 13:00 UTC
    await sessions_at(db, {
        "s-today-short": (now - 60, 2.0),
        "s-today-long": (now - 7200, 50.0),
        "s-monday": (now - 2 * 86400, 90.0),  # this week, not today
        "s-last-week": (now - 8 * 86400, 500.0),
    })
    monkeypatch.setattr(format, "clock", lambda: now)
    app = make_app(db)
    async with app.run_test(size=size) as pilot:
        await settle(pilot)
        if size == (80, 24):
            await pilot.press("ctrl+b")  # the sessions pane comes over the conversation
        pane = app.screen.query_one(SessionsPane)
        title = app.screen.query_one("#sessions-title")
        app.screen.query_one("#session-list").focus()
        assert shown_ids(pane) == ["s-today-short", "s-today-long", "s-monday", "s-last-week"]
        expected = {
            "today": ["s-today-short", "s-today-long"],
            "this week": ["s-today-short", "s-today-long", "s-monday"],
            "longest": ["s-last-week", "s-monday", "s-today-long", "s-today-short"],
            "recent": ["s-today-short", "s-today-long", "s-monday", "s-last-week"],
        }
        for name, ids in expected.items():
            await pilot.press("f3")
            await pilot.pause()
            assert pane.time_view.name == name
            assert shown_ids(pane) == ids
            assert plain(title.render()) == pane.time_view.title  # the choice is in the pane's title
        # From the filter box too (f3 types nothing), and with filter text: both apply.
        app.screen.query_one("#session-filter").focus()
        await pilot.press(*"long", "f3", "f3", "f3")
        await pilot.pause()
        assert pane.query_text == "long" and pane.time_view.name == "longest"
        assert shown_ids(pane) == ["s-today-long"]
        await pilot.press("f3", "f3")  # recent, then today
        await pilot.pause()
        assert shown_ids(pane) == ["s-today-long"]
        await pilot.press("ctrl+u", *"last")  # nothing today matches, a session of last week does: said so
        await pilot.pause()
        assert shown_ids(pane) == []
        options = app.screen.query_one("#session-list")
        assert "f3 changes the view" in " ".join(str(options.get_option_at_index(0).prompt).split())


async def test_a_time_view_keeps_its_order_when_a_session_changes(tmp_path, monkeypatch):
    db = tmp_path / "lovia.db"
    now = T0 + 3600
    await sessions_at(db, {"s-a": (now - 60, 5.0), "s-b": (now - 120, 30.0), "s-c": (now - 9 * 86400, 10.0)})
    monkeypatch.setattr(format, "clock", lambda: now)
    app = make_app(db)
    async with app.run_test(size=(160, 45)) as pilot:
        await settle(pilot)
        pane = app.screen.query_one(SessionsPane)
        pane.set_time_view(next(v for v in TIME_VIEWS if v.name == "longest"))
        assert shown_ids(pane) == ["s-b", "s-c", "s-a"]
        async with SQLiteSession(db, wal=True) as session:  # s-a runs long, in another connection
            await session.append("s-a", [UserMessage(text="more"), AssistantMessage(text="ok")],
                                 meta={"timing": {"started_at": now, "finished_at": now + 100.0}})
        await app.screen.refresh_session("s-a")
        await settle(pilot)
        assert shown_ids(pane) == ["s-a", "s-b", "s-c"]
        pane.set_time_view(next(v for v in TIME_VIEWS if v.name == "today"))
        assert shown_ids(pane) == ["s-a", "s-b"]


async def test_longest_over_many_sessions_reads_no_transcript_and_draws_a_page_at_a_time(tmp_path):
    db = tmp_path / "lovia.db"
    count = 3 * PAGE + 10
    async with SQLiteSession(db, wal=True) as session:
        for i in range(count):
            seconds = float((i * 37) % count)  # every run time once, in no order of activity
            await session.append(f"s-{i:04d}", [UserMessage(text=f"question {i}"), AssistantMessage(text="ok")],
                                 meta={"timing": {"started_at": T0 + i, "finished_at": T0 + i + seconds}})
    session = CountingSession(db, wal=True)
    app = make_app(db, session=session)
    async with app.run_test(size=(160, 45)) as pilot:
        await settle(pilot)
        pane = app.screen.query_one(SessionsPane)
        options = app.screen.query_one("#session-list")
        assert len(pane.listed) == count
        app.screen._change_timer.pause()  # the several-windows check is counted elsewhere
        await settle(pilot)
        reset(session)
        options.focus()
        await pilot.press("f3", "f3", "f3")
        await pilot.pause()
        assert pane.time_view.name == "longest"
        seconds = [info.total_run_seconds for info in pane.sessions]
        assert seconds == sorted(seconds, reverse=True) and len(seconds) == count
        # Sorted from what the listing holds: the store is not asked, and no transcript is read.
        assert {name: n for name, n in session.calls.items() if n} == {}
        assert options.option_count == PAGE + 1  # a page of options, and "N more"
        await pilot.press(*["down"] * (PAGE - PAGE // 4))
        await pilot.pause()
        assert options.option_count == 2 * PAGE + 1  # the next page as the cursor nears the end
        assert options.get_option_at_index(0).id == pane.sessions[0].session_id
        await pilot.press("end")  # the shortest, at once: the last page drawn alone
        await pilot.pause()
        assert options.get_option_at_index(options.highlighted).id == pane.sessions[-1].session_id


# -- real runs: the runner's own steps ----------------------------------------------------------


@pytest.mark.parametrize("size", SIZES)
async def test_a_run_sent_in_the_app_shows_its_steps_on_its_header(tmp_path, size):
    app = make_app(tmp_path / "lovia.db")
    async with app.run_test(size=size) as pilot:
        await settle(pilot)
        await type_and_send(pilot, "what time is it?")  # a turn that calls a tool, the tool, a turn that answers
        header = app.screen.chat.transcript.query_one(RunHeader)
        assert [step.kind for step in header.run.steps] == ["model", "tool", "model"]  # as the store has it
        text = plain(header.render())
        assert "ttft" in text or "first token" in text
        assert "tools" in text and len(text) <= header.content_region.width


@pytest.mark.parametrize("size", SIZES)
async def test_the_timeline_of_a_run_executing_here_follows_it_to_its_end(tmp_path, size):
    release = asyncio.Event()

    @tool(name="wait")
    async def held_wait(seconds: float) -> str:
        """Waits until the test lets it go."""
        await release.wait()
        return f"waited {seconds:g} seconds"

    agent = Agent(name="assistant", tools=[held_wait], model=DemoModel(delay=0))
    app = make_app(tmp_path / "lovia.db", agent=agent)
    async with app.run_test(size=size) as pilot:
        await settle(pilot)
        app.screen.query_one("#composer").focus()
        await pilot.press(*"wait 5", "enter")
        await wait_for(pilot, lambda: app.screen.chat.transcript.query(ToolCallView))  # the call is under way
        app.screen.chat.transcript.focus()
        await pilot.press("w")  # no message selected: the last run, the one executing
        await wait_for(pilot, lambda: isinstance(app.screen, TimelineScreen))
        screen = app.screen
        await wait_for(pilot, lambda: any(s.kind == "tool" for s in screen.run.steps))
        assert screen.run.state == "running"
        rows = plain(screen.query_one("#timeline-rows").render()).splitlines()
        # Under way: a tool's bar to now. Dashed, it read "never ended" by the legend under it.
        assert rows[-1].startswith("  ⚙ wait") and "▆" in rows[-1] and "╌" not in rows[-1]
        release.set()
        await wait_for(pilot, lambda: screen.run.state == "completed")  # followed to its end
        await pilot.pause()
        rows = plain(screen.query_one("#timeline-rows").render()).splitlines()
        assert [row.split()[0] for row in rows[1:]] == ["turn", "⚙", "turn"]
        assert "╌" not in "".join(rows)
        await pilot.press("escape")
        await settle(pilot)
        assert not isinstance(app.screen, TimelineScreen)


CHILD = textwrap.dedent(
    """
    import asyncio, sys
    from lovia import Agent, BUILTIN_TOOLS, CheckpointOptions, Runner, SQLiteCheckpointer, SQLiteSession
    from lovia.models import DemoModel

    async def main():
        db = sys.argv[1]
        agent = Agent(name="assistant", tools=BUILTIN_TOOLS, model=DemoModel(delay=0))
        # A short lease: renewed (the head saved) every 0.2 s while the tool runs.
        await Runner.run(agent, "wait 60", session=SQLiteSession(db, wal=True), session_id="s-crash",
                         checkpoint=CheckpointOptions(SQLiteCheckpointer(db, wal=True), "run-crashed",
                                                      lease_seconds=0.6))

    asyncio.run(main())
    """
)


async def kill_inside_its_tool_call(db) -> None:
    """Run ``wait 60`` in a real process and SIGKILL it once its head has recorded the call's step."""
    child = await asyncio.create_subprocess_exec(sys.executable, "-c", CHILD, str(db),
                                                 env={**os.environ, "PYTHONPATH": str(ROOT)})
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if db.exists():
                async with SQLiteCheckpointer(db, wal=True) as checkpointer:
                    snapshot = await checkpointer.load("run-crashed")
                if snapshot is not None and any(step.kind == "tool" for step in snapshot.head.steps):
                    break
            await asyncio.sleep(0.05)
        else:
            raise AssertionError("the child never recorded its tool call's step")
    finally:
        os.kill(child.pid, signal.SIGKILL)
        await asyncio.wait_for(child.wait(), 30)


async def test_a_run_killed_inside_a_tool_call_has_a_timeline_from_its_head(tmp_path):
    db = tmp_path / "lovia.db"
    await kill_inside_its_tool_call(db)
    app = make_app(db)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("ctrl+o")
        app.screen.query_one("#run-list").focus()
        await wait_for(pilot, lambda: app.screen.inspected == "run-crashed")
        await pilot.press("w")
        await wait_for(pilot, lambda: isinstance(app.screen, TimelineScreen))
        await pilot.pause()
        assert app.screen.run.state == "crashed"
        rows = plain(app.screen.query_one("#timeline-rows").render()).splitlines()
        assert rows[1].startswith("turn 1")
        assert rows[2].startswith("  ⚙ wait") and "…" in rows[2]  # it never ended


async def test_ten_thousand_sessions_sort_longest_first_from_their_listings_a_page_drawn(tmp_path, monkeypatch):
    monkeypatch.setattr(format, "clock", lambda: T0)
    count = 10_000
    listed = [SessionInfo(f"s-{i:05d}", f"session {i}", 2, 1, T0 - 60 * i, T0 - 60 * i, float((i * 7919) % count))
              for i in range(count)]  # newest first, a minute apart, every run time once
    app = make_app(tmp_path / "lovia.db")
    async with app.run_test(size=(160, 45)) as pilot:
        app.screen._change_timer.pause()  # nothing else lists the (empty) store meanwhile
        await settle(pilot)
        pane = app.screen.query_one(SessionsPane)
        pane.show(listed, None)
        pane.set_time_view(next(v for v in TIME_VIEWS if v.name == "longest"))
        await pilot.pause()
        assert [info.total_run_seconds for info in pane.sessions[:3]] == [count - 1, count - 2, count - 3]
        options = app.screen.query_one("#session-list")
        assert options.option_count == PAGE + 1 and options.highlighted == 0
        pane.set_time_view(next(v for v in TIME_VIEWS if v.name == "today"))  # T0 is a Wednesday, 12:00 UTC
        assert len(pane.sessions) == 12 * 60 + 1
        pane.set_time_view(next(v for v in TIME_VIEWS if v.name == "this week"))  # since Monday 00:00
        assert len(pane.sessions) == (2 * 24 + 12) * 60 + 1


async def test_the_command_palette_offers_the_timelines_and_the_next_time_view(tmp_path):
    db = tmp_path / "lovia.db"
    await timed_db(db, crashed=True)
    app = make_app(db)
    async with app.run_test(size=(160, 45)) as pilot:
        await settle(pilot)
        await app.screen.open_session("s-timed")
        await settle(pilot)
        run_list = app.screen.query_one("#run-list")
        run_list.focus()
        await wait_for(pilot, lambda: run_list.highlighted == 0)
        commands = {command.title: command for command in app.get_system_commands(app.screen)}
        assert {"Timeline of a run", "Timeline of selected run", "Next sessions time view"} <= set(commands)
        commands["Next sessions time view"].callback()
        assert app.screen.query_one(SessionsPane).time_view.name == "today"
        commands["Timeline of selected run"].callback()
        await wait_for(pilot, lambda: isinstance(app.screen, TimelineScreen))
        assert app.screen.run.run_id == "run-crashed"


async def test_the_next_time_view_from_the_palette_shows_the_folded_sessions_pane(tmp_path):
    # At 80 columns the pane is folded: the view changed out of sight, and nothing said so.
    db = tmp_path / "lovia.db"
    await timed_db(db, crashed=True)
    app = make_app(db)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        pane = app.screen.query_one(SessionsPane)
        assert not pane.display
        commands = {command.title: command for command in app.get_system_commands(app.screen)}
        assert "Now: Sessions." in commands["Next sessions time view"].help
        commands["Next sessions time view"].callback()
        await settle(pilot)
        assert pane.display and pane.time_view.name == "today"
        assert app.focused is app.screen.query_one("#session-list")
        assert "Sessions · today" in str(pane.query_one("#sessions-title").render())


def test_a_failed_runs_header_says_why_cut_to_what_the_line_has_left():
    run = TranscriptRun("r", (), "failed", T0, None, error="ModelError: HTTP 502 Bad Gateway from api.example.com\n"
                        "Traceback ...", active_seconds=5.8, steps=TIMED_STEPS)
    # Without the error's class, which took the room of the reason at 80 columns ("ModelError: cannot reach ope…").
    assert header_line(run, None, 0).endswith("· failed · ran 5.8s · HTTP 502 Bad Gateway from api.example.com ──")
    at_80 = header_line(run, StepSummary.of(TIMED_STEPS), 80)
    assert len(at_80) <= 80 and "· HTTP 502 Bad" in at_80 and at_80.endswith("… ──")
    assert "Traceback" not in header_line(run, None, 200)
    assert header_line(run, None, 60) == f"── {format.when(T0)} · failed · ran 5.8s ──"  # no room for it


def test_the_axis_of_a_short_run_has_one_start_and_no_tick_that_rounds_to_nothing():
    """A 0.1 s run: ``0s`` at the start and ``100ms`` at the end; a quarter tick read ``+0.0s``."""
    from lovia.tui.screens.timeline import Axis, Columns, _axis_line

    line = _axis_line(Axis(100.0, 100.1, 48), Columns.for_width(80)).plain
    assert "+0.0s" not in line and "+0ms" not in line and " 0s " in line and line.rstrip().endswith("100ms")
    line = _axis_line(Axis(100.0, 100.004, 48), Columns.for_width(80)).plain  # 4 ms: quarters of 1 ms
    assert "+0ms" not in line and line.rstrip().endswith("4ms")


async def test_the_ages_of_one_drawing_of_the_sessions_list_are_counted_from_one_moment(tmp_path, monkeypatch):
    """Sessions active at the same time read the same age, however long drawing the list takes:
    each label asked the clock for itself, and rows drawn a second apart disagreed."""
    db = tmp_path / "lovia.db"
    await sessions_at(db, {f"s-{n}": (T0, 1.0) for n in range(6)})
    ticks = iter(range(10**9))
    monkeypatch.setattr(format, "clock", lambda: T0 + 30 + next(ticks))  # a second passes at every look
    app = make_app(db)
    async with app.run_test(size=(160, 45)) as pilot:
        await settle(pilot)
        options = app.screen.query_one("#session-list")
        pane = app.screen.query_one(SessionsPane)

        def ages() -> set[str]:
            return {plain(options.get_option_at_index(i).prompt).splitlines()[2] for i in range(6)}

        assert len(ages()) == 1, ages()
        pane.refresh_ages()
        assert len(ages()) == 1, ages()


def test_a_step_days_after_its_run_began_keeps_its_start_whole():
    """A new user's trial: the demo's stopped run, resumed five days after it began, showed its call's
    start as ``+121h …`` at 160 columns: ``+121h 05m`` is wider than the start column. Days read as
    days, within the column."""
    later = T0 + 5 * 86400 + 3600 + 300
    steps = (ModelStep("assistant", "gpt-test", T0, T0 + 0.2, T0 + 1.0, turn=1),
             ToolStep("c1", "wait", later, later + 9.0))
    run = TranscriptRun("r", (), "completed", T0, later + 9.0 - T0, steps=steps)
    call = plain(draw_rows(run, 160, later + 100)).splitlines()[2]
    assert "+5d 01h" in call and "…" not in call
    assert [format.duration(s) for s in (86399, 86400, 9 * 86400 + 23 * 3600, 10 * 86400, 999 * 86400)] == \
        ["23h 59m", "1d 00h", "9d 23h", "10d", "999d"]
