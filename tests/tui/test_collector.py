"""The app's one owner of the garbage collector's state: start-up pause and streaming freezes together."""

import gc
import weakref

import pytest

from lovia.tui.collector import Collector


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
