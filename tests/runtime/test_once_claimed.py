"""``CheckpointOptions.once_claimed``: a change to the session made while the run holds it, before
it reads its history (an edit's rewind). Real SQLite files; the model is a scripted one that records
what it was asked."""

from __future__ import annotations

import asyncio

import pytest

from lovia import (
    Agent,
    CheckpointOptions,
    RunClaimedError,
    Runner,
    SQLiteCheckpointer,
    SQLiteSession,
    UserError,
    UserMessage,
)
from lovia.entries import AssistantMessage
from lovia.models import ScriptedModel
from lovia.runtime.events import RunFailed, RunStarted


class AskedModel(ScriptedModel):
    """A scripted model that keeps the texts of every request's messages."""

    def __init__(self, turns) -> None:
        super().__init__(turns)
        self.asked: list[list[str]] = []

    async def stream(self, request):
        self.asked.append([getattr(entry, "text", "") for entry in request.messages])
        async for event in super().stream(request):
            yield event


async def stores(tmp_path):
    session = SQLiteSession(tmp_path / "lovia.db", wal=True)
    checkpointer = SQLiteCheckpointer(tmp_path / "lovia.db", wal=True)
    await session.append("s", [UserMessage(text="first"), AssistantMessage(text="one", agent="bot")])
    await session.append("s", [UserMessage(text="second"), AssistantMessage(text="two", agent="bot")])
    return session, checkpointer


async def test_the_run_reads_the_history_its_once_claimed_left_and_no_other_run_of_the_session_starts_meanwhile(
        tmp_path):
    session, checkpointer = await stores(tmp_path)
    model = AskedModel(["edited answer"])
    refused: list[str] = []

    async def rewind_then_try_another_start() -> None:
        await session.rewind("s", keep_entries=2)
        # another window sending in this session now: the run holds it, so that one is refused
        try:
            await Runner.run(Agent(name="bot", model=ScriptedModel(["never"])), "elsewhere", session=session,
                             session_id="s", checkpoint=CheckpointOptions(checkpointer, "other",
                                                                          alone_in_session=True))
        except RunClaimedError as exc:
            refused.append(str(exc))

    result = await Runner.run(Agent(name="bot", model=model), "second, edited", session=session, session_id="s",
                              checkpoint=CheckpointOptions(checkpointer, "resend", alone_in_session=True,
                                                           once_claimed=rewind_then_try_another_start))
    assert result.final_output == "edited answer"
    assert model.asked == [["first", "one", "second, edited"]]
    assert len(refused) == 1 and "is being executed" in refused[0]
    assert [e.text for e in await session.load("s")] == ["first", "one", "second, edited", "edited answer"]
    assert await checkpointer.load("other") is None


@pytest.mark.parametrize("cancelled", [False, True])
async def test_a_once_claimed_that_fails_leaves_no_run_and_changes_nothing_more(tmp_path, cancelled):
    session, checkpointer = await stores(tmp_path)
    model = AskedModel(["never"])

    async def refuse() -> None:
        if cancelled:
            raise asyncio.CancelledError
        raise UserError("that message is not in this session any more")

    stream = Runner.stream(Agent(name="bot", model=model), "again", session=session, session_id="s",
                           checkpoint=CheckpointOptions(checkpointer, "resend", alone_in_session=True,
                                                        once_claimed=refuse))
    events = []
    if cancelled:  # as a stop: the stream ends
        events = [event async for event in stream]
        assert stream.stopped and stream.result is None
    else:
        with pytest.raises(UserError):
            async for event in stream:
                events.append(event)
    assert not [e for e in events if isinstance(e, RunStarted)]
    assert [type(e) for e in events] == ([] if cancelled else [RunFailed])  # failed before it started
    assert model.asked == []
    assert await checkpointer.load("resend") is None  # nothing of it stored: not a failed run to settle
    assert len(await session.load("s")) == 4
    # and the session is free: the next run starts
    result = await Runner.run(Agent(name="bot", model=ScriptedModel(["ok"])), "next", session=session,
                              session_id="s", checkpoint=CheckpointOptions(checkpointer, "next",
                                                                           alone_in_session=True))
    assert result.final_output == "ok"


async def test_a_stored_run_whose_once_claimed_fails_is_released_interrupted(tmp_path):
    from lovia import RunHead, RunSnapshot

    session, checkpointer = await stores(tmp_path)
    head = RunHead(agent="bot", status="interrupted", started_at=1.0, updated_at=1.0, session_id="s")
    await checkpointer.save(RunSnapshot("stopped", head, [UserMessage(text="third")]))

    async def refuse() -> None:
        raise UserError("no")

    with pytest.raises(UserError):
        await Runner.run(Agent(name="bot", model=ScriptedModel(["never"])), None, session=session, session_id="s",
                         checkpoint=CheckpointOptions(checkpointer, "stopped", if_run_exists="resume_only",
                                                      alone_in_session=True, once_claimed=refuse))
    stored = await checkpointer.load("stopped")
    assert stored is not None and stored.head.status == "interrupted" and not stored.head.is_held()
    assert [e.text for e in stored.entries] == ["third"]


async def test_the_lease_is_renewed_while_once_claimed_runs(tmp_path):
    """Run before the renewals started, a slow once_claimed let the lease lapse: another process then
    saw the run crashed and could start one of the session beside it."""
    import time

    session, checkpointer = await stores(tmp_path)
    held: list[bool] = []

    async def slow() -> None:
        await asyncio.sleep(2.0)
        stored = await checkpointer.load("resend")
        held.append(stored is not None and stored.head.lease_until is not None and stored.head.lease_until > time.time())

    await Runner.run(Agent(name="bot", model=ScriptedModel(["ok"])), "again", session=session, session_id="s",
                     checkpoint=CheckpointOptions(checkpointer, "resend", alone_in_session=True, lease_seconds=1.0,
                                                  once_claimed=slow))
    assert held == [True]


async def test_a_subclass_overriding_claim_is_called_with_alone_in_session_and_the_session_still_checked(tmp_path):
    # The runner called claim_alone for alone_in_session: a subclass's own claim (one that logs,
    # or refuses some runs) was never called.
    class LoggingCheckpointer(SQLiteCheckpointer):
        claimed: list[str] = []

        async def claim(self, run_id, owner, **kwargs):
            self.claimed.append(run_id)
            return await super().claim(run_id, owner, **kwargs)

    session, _ = await stores(tmp_path)
    checkpointer = LoggingCheckpointer(tmp_path / "lovia.db", wal=True)
    refused: list[str] = []

    async def try_another_start() -> None:  # another window sending in this session while the run holds it
        try:
            await Runner.run(Agent(name="bot", model=ScriptedModel(["never"])), "elsewhere", session=session,
                             session_id="s", checkpoint=CheckpointOptions(checkpointer, "other", alone_in_session=True))
        except RunClaimedError as exc:
            refused.append(str(exc))

    result = await Runner.run(Agent(name="bot", model=ScriptedModel(["three"])), "third", session=session,
                              session_id="s", checkpoint=CheckpointOptions(checkpointer, "mine", alone_in_session=True,
                                                                           once_claimed=try_another_start))
    assert result.final_output == "three"
    assert checkpointer.claimed == ["mine"]  # "other" refused before its claim: the session was looked at first
    assert len(refused) == 1 and "is being executed" in refused[0]
    assert await checkpointer.load("other") is None


def test_a_checkpointer_whose_subclass_overrides_claim_alone_too_claims_alone():
    from lovia.checkpoint import claims_alone

    class Both(SQLiteCheckpointer):
        async def claim(self, *args, **kwargs):
            return await super().claim(*args, **kwargs)

        async def claim_alone(self, *args, **kwargs):
            return await super().claim_alone(*args, **kwargs)

    class ClaimOnly(SQLiteCheckpointer):
        async def claim(self, *args, **kwargs):
            return await super().claim(*args, **kwargs)

    assert claims_alone(SQLiteCheckpointer(":memory:"))
    assert claims_alone(Both(":memory:"))
    assert not claims_alone(ClaimOnly(":memory:"))
    assert not claims_alone(object())
