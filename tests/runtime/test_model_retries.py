"""A model that asks again after a refusal (``RetryChunk``): each attempt timed as sent, the wait nobody's.

The attempt after the wait was recorded at once, starting when the wait would end: a stop during the
wait left a step that ended before it began (a negative span the timeline and the pause sums took in).
"""

from __future__ import annotations

import asyncio

import pytest

from lovia import Agent, CheckpointOptions, ModelError, ModelRetrying, Runner, SQLiteCheckpointer
from lovia.models import FinishChunk, RetryChunk, TextChunk
from lovia.timing import ModelStep
from tests.runtime.helpers import consume_in_background


class RefusedThenAnswers:
    """Refused once: says it asks again in ``wait`` seconds, waits, then answers (or fails, with ``then``)."""

    name = "refusing-model"
    offline = True

    def __init__(self, wait: float, then: Exception | None = None) -> None:
        self.wait, self.then = wait, then
        self.waiting = asyncio.Event()

    async def stream(self, request):
        yield RetryChunk("refusing-model is rate limiting requests (429)\nmore of the body", self.wait)
        self.waiting.set()
        await asyncio.sleep(self.wait)
        if self.then is not None:
            raise self.then
        yield TextChunk("hello")
        yield FinishChunk("stop")


def model_steps(head) -> list[ModelStep]:
    return [step for step in head.steps if isinstance(step, ModelStep)]


async def test_the_attempt_sent_again_is_timed_from_its_sending(tmp_path):
    model = RefusedThenAnswers(0.3)
    async with SQLiteCheckpointer(tmp_path / "c.db") as checkpointer:
        stream = Runner.stream(Agent(name="a", model=model), "hi", checkpoint=CheckpointOptions(checkpointer, "r1"))
        events = [event async for event in stream]
        refused, answered = model_steps((await checkpointer.load("r1")).head)
    [retrying] = [e for e in events if isinstance(e, ModelRetrying)]
    assert retrying == ModelRetrying("a", "refusing-model", "refusing-model is rate limiting requests (429)", 0.3)
    assert refused.error and refused.cut_off and refused.finished_at <= answered.started_at
    # Stored as asked again, which the timeline says (it read "no token · error", as of a failed run)
    assert refused.asked_again and not answered.asked_again
    assert answered.started_at - refused.finished_at == pytest.approx(0.3, abs=0.1)
    assert answered.time_to_first_token < 0.1 and not answered.cut_off


async def test_a_stop_during_the_wait_leaves_no_step_that_ends_before_it_begins(tmp_path):
    model = RefusedThenAnswers(5.0)
    async with SQLiteCheckpointer(tmp_path / "c.db") as checkpointer:
        stream = Runner.stream(Agent(name="a", model=model), "hi", checkpoint=CheckpointOptions(checkpointer, "r1"))

        task = consume_in_background(stream)
        await model.waiting.wait()
        stream.stop()
        await task
        head = (await checkpointer.load("r1")).head
    assert head.status == "interrupted"
    [refused] = model_steps(head)  # the attempt never sent has no step
    assert refused.error and refused.finished_at is not None and refused.finished_at >= refused.started_at


async def test_an_attempt_sent_again_that_fails_is_its_own_step(tmp_path):
    model = RefusedThenAnswers(0.2, then=ModelError("refusing-model answered 500"))
    async with SQLiteCheckpointer(tmp_path / "c.db") as checkpointer:
        with pytest.raises(ModelError):
            await Runner.run(Agent(name="a", model=model), "hi", checkpoint=CheckpointOptions(checkpointer, "r1"))
        first, second = model_steps((await checkpointer.load("r1")).head)
    assert first.error and second.error and second.started_at >= first.finished_at + 0.15
    assert first.asked_again and not second.asked_again  # the second failed the run: not asked again
    assert second.finished_at >= second.started_at


async def test_run_started_says_what_a_resumed_run_was_taken_up_from(tmp_path):
    from lovia import CheckpointOptions, RunStarted
    from lovia.models import ScriptedModel, ScriptedTurn

    model = ScriptedModel([ScriptedTurn(error=ModelError("down")), "ok"])
    async with SQLiteCheckpointer(tmp_path / "c.db") as checkpointer:
        options = CheckpointOptions(checkpointer, "r1")
        first = Runner.stream(Agent(name="a", model=model), "hi", checkpoint=options)
        with pytest.raises(ModelError):
            [event async for event in first]
        again = Runner.stream(Agent(name="a", model=model), [],
                              checkpoint=CheckpointOptions(checkpointer, "r1", if_run_exists="resume_only"))
        started = [event async for event in again if isinstance(event, RunStarted)]
    assert [(e.resumed, e.resumed_from) for e in started] == [(True, "failed")]
