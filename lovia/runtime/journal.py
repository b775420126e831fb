"""The partial-answer journal's writer: what a model has streamed, kept a few times a second.

While a model turn streams, :class:`PartialAnswerJournal` writes the text so far to a
:class:`~lovia.checkpoint.JournalingCheckpointer`, so a process killed mid-answer leaves the
words the user saw. It is paced by time, never by tokens: at most one write per
``interval`` (``JOURNAL_INTERVAL_SECONDS``), and none while the previous one is still under
way. The stream never waits for it: writes run in a task of their own and the next chunk is
handled at once. The journal is apart from the run's snapshots, so resume is unchanged.
"""

from __future__ import annotations

import asyncio
import time
import warnings
from collections.abc import Awaitable, Callable, Sequence

from lovia._async import wait_out

__all__ = ["JOURNAL_INTERVAL_SECONDS", "PartialAnswerJournal"]

JOURNAL_INTERVAL_SECONDS = 0.25
"""At most one journal write per this many seconds while a model streams."""


class PartialAnswerJournal:
    """Paces the journal writes of one run's streaming turns.

    ``write(text)`` stores the text so far and says whether it was stored; a ``False`` (the
    run's claim was lost, or the run deleted or stopped) ends journalling for this execution.
    A write that raises is warned about once and journalling goes on: the journal is a
    safety net, never a reason for a run to fail. With ``write=None`` every method does
    nothing. ``clock`` (monotonic seconds) and ``sleep`` may be a test's own.

    One pacing task at a time does the writing: started by the first chunk after a write,
    it waits until the next write is due (one ``interval`` after the previous one, or after
    the turn began), writes the text as it is then, and ends unless more arrived meanwhile.
    So the text of a model that pauses mid-answer is journalled up to its last chunk.
    """

    def __init__(
        self,
        write: Callable[[str], Awaitable[bool]] | None,
        *,
        interval: float = JOURNAL_INTERVAL_SECONDS,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], Awaitable[object]] = asyncio.sleep,
    ) -> None:
        self._write = write
        self._interval = interval
        self._clock = clock
        self._sleep = sleep
        self._due = 0.0
        self._parts: Sequence[str] = ()
        self._fresh = False  # text arrived since the last write
        self._task: asyncio.Task[None] | None = None
        self._writing = False
        self._refused = False
        self._warned = False
        self.writes = 0
        """How many writes this journal made (for tests and the benchmark)."""

    def turn_started(self) -> None:
        """A model turn began streaming: its first write is due one interval from now."""
        self._due = self._clock() + self._interval
        self._parts, self._fresh = (), False

    def streamed(self, parts: Sequence[str]) -> None:
        """The turn's text is now ``"".join(parts)`` (``parts`` may grow in place); returns at once."""
        if self._write is None or self._refused:
            return
        self._parts, self._fresh = parts, True
        if self._task is None or self._task.done():
            self._task = asyncio.ensure_future(self._pace())

    async def settle(self) -> None:
        """The turn ended: a write under way is waited for (the turn's snapshot, which clears the
        journal, must land after it); one only waiting for its time is dropped."""
        task, self._task = self._task, None
        self._fresh = False
        if task is None:
            return
        if not self._writing:
            task.cancel()
        await wait_out(task)

    def abandon(self) -> None:
        """The execution ends: pacing stops (a write under way ends on its own in the store)."""
        if self._task is not None and not self._task.done():
            self._task.cancel()
        self._task = None

    async def _pace(self) -> None:
        while self._fresh and not self._refused:
            wait = self._due - self._clock()
            if wait > 0:
                await self._sleep(wait)
            self._fresh = False
            self._due = self._clock() + self._interval
            self.writes += 1
            self._writing = True
            try:
                await self._store("".join(self._parts))
            finally:
                self._writing = False

    async def _store(self, text: str) -> None:
        assert self._write is not None
        try:
            if not await self._write(text):
                self._refused = True  # lost the claim, or the run is gone or stopped: stop writing
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            if not self._warned:
                self._warned = True
                warnings.warn(f"could not journal the streaming answer (it goes on, unjournalled): {exc}",
                              RuntimeWarning, stacklevel=2)
