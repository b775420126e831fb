"""The app's one owner of the garbage collector's state: start-up pause and streaming freezes together."""

import asyncio
import gc
import weakref

import pytest

from lovia.tui.collector import Collector
from lovia.tui.idle import IDLE_WORK


@pytest.fixture
def collector():
    was_enabled = gc.isenabled()
    yield Collector()
    gc.unfreeze()
    if was_enabled:
        gc.enable()


def test_an_answer_ending_during_start_up_leaves_the_collector_paused_until_start_up_resumes_it(collector):
    gc.enable()
    collector.pause_for_start()
    assert not gc.isenabled() and gc.get_freeze_count()
    collector.stream_started()
    collector.stream_ended()
    assert gc.get_freeze_count() == 0, "the last answer's end thaws everything"
    assert not gc.isenabled(), "but collection stays paused for start-up"
    collector.resume_after_start()
    collector.resume_after_start()
    assert gc.isenabled()


def test_a_collector_the_embedding_program_turned_off_stays_off(collector):
    gc.disable()
    collector.pause_for_start()
    collector.resume_after_start()
    assert not gc.isenabled()
    assert gc.get_freeze_count() == 0


def test_objects_stay_frozen_until_the_last_of_two_answers_ends(collector):
    collector.stream_started()
    collector.stream_started()
    collector.stream_ended()
    assert gc.get_freeze_count()
    collector.stream_ended()
    assert gc.get_freeze_count() == 0


class _Node:
    pass


def test_garbage_made_before_a_freeze_while_streaming_is_collected_not_frozen(collector):
    gc.enable()
    node = _Node()
    node.itself = node  # a cycle: only the collector frees it
    gone = weakref.ref(node)
    del node
    collector.stream_started()  # freezes what is alive
    assert gone() is None, "the young cycle was collected, not kept frozen until the answer ends"
    collector.stream_ended()


def test_what_start_up_froze_is_thawed_when_the_app_closes(collector):
    gc.enable()
    collector.pause_for_start()
    assert gc.get_freeze_count()
    collector.app_closed()
    assert gc.isenabled() and gc.get_freeze_count() == 0


@pytest.fixture
def collector_in_app(collector, monkeypatch):
    """A collector as the app runs it: an answer's end thaws once the user is idle (shortened here)."""
    monkeypatch.setattr("lovia.tui.idle.IDLE_FOR", 0.2)
    monkeypatch.setattr("lovia.tui.idle.AT_THE_LATEST", 1.0)
    gc.enable()
    IDLE_WORK.enabled = True
    yield collector
    IDLE_WORK.drop()
    collector.app_closed()


def _cycle() -> weakref.ref:
    node = _Node()
    node.itself = node  # only a full pass frees it once it is frozen
    return weakref.ref(node)


async def test_in_the_app_an_answers_end_thaws_and_collects_once_the_user_is_idle(collector_in_app, monkeypatch):
    monkeypatch.setattr("lovia.tui.collector.REFREEZE_SECONDS", 0.0)
    collector_in_app.stream_started()
    gone = _cycle()
    collector_in_app.stream_grew()  # the answer grew: what is alive is frozen again, the cycle with it
    collector_in_app.stream_ended()
    assert gc.get_freeze_count(), "still frozen right after the answer: no full pass while its end is drawn"
    await asyncio.sleep(0.35)
    assert gc.get_freeze_count() == 0
    assert gone() is None, "the cycle that died while frozen was collected at the thaw"


class _Clock:
    """The idle queue's clock, moved on by the test alone: a loop held up (a full collection of the whole
    test process took over a second in CI) must not count as the user being idle or waiting."""

    def __init__(self) -> None:
        self.now = 1000.0

    def monotonic(self) -> float:
        return self.now


async def test_keys_put_the_thaw_off_but_not_past_the_latest(collector_in_app, monkeypatch):
    clock = _Clock()
    monkeypatch.setattr("lovia.tui.idle.time", clock)
    thawed_at: list[float] = []
    thaw = collector_in_app._thaw

    def timed_thaw(*, collect: bool) -> None:
        thawed_at.append(clock.now)
        thaw(collect=collect)

    async def until_thawed() -> None:
        for _ in range(400):  # the queue's timer runs on the loop's own clock: let it
            if not gc.get_freeze_count():
                return
            await asyncio.sleep(0.025)
        raise AssertionError("never thawed")

    monkeypatch.setattr(collector_in_app, "_thaw", timed_thaw)
    collector_in_app.stream_started()
    collector_in_app.stream_ended()
    for _ in range(5):  # typing for 0.5 s: the thaw waits
        clock.now += 0.1
        IDLE_WORK.input_seen()
        await asyncio.sleep(0.1)
        assert gc.get_freeze_count()
    clock.now += 0.25
    await until_thawed()
    assert thawed_at[-1] - clock.now == 0, "thawed once 0.2 s passed after the last key"

    collector_in_app.stream_started()
    collector_in_app.stream_ended()
    started = clock.now
    while gc.get_freeze_count():  # keys never stop: thawed at the latest after 1 s
        clock.now += 0.05
        IDLE_WORK.input_seen()
        await asyncio.sleep(0.05)
        assert clock.now - started < 3, "keys kept putting the thaw off"
    assert 1.0 <= thawed_at[-1] - started <= 1.25


async def test_an_answer_starting_before_the_thaw_keeps_everything_frozen_until_its_own_end(collector_in_app):
    collector_in_app.stream_started()
    collector_in_app.stream_ended()
    collector_in_app.stream_started()
    await asyncio.sleep(0.35)
    assert gc.get_freeze_count(), "an answer streams: nothing is thawed under it"
    collector_in_app.stream_ended()
    await asyncio.sleep(0.35)
    assert gc.get_freeze_count() == 0


async def test_the_app_closing_thaws_at_once(collector_in_app):
    collector_in_app.stream_started()
    collector_in_app.stream_ended()
    IDLE_WORK.drop()
    collector_in_app.app_closed()
    assert gc.get_freeze_count() == 0
