"""The partial-answer journal's writer: what a model has streamed, kept a few times a second.

While a model turn streams, :class:`PartialAnswerJournal` writes the text so far to a
:class:`~lovia.checkpoint.JournalingCheckpointer`, so a process killed mid-answer leaves the
words the user saw. It is paced by time, never by tokens: at most one write per
``interval`` (``JOURNAL_INTERVAL_SECONDS``), and none while the previous one is still under
way. The stream never waits for it: a write is started as a task and the next chunk is
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
    safety net, never a reason for a run to fail. ``clock`` is monotonic seconds (a test may
    pass its own). With ``write=None`` every method does nothing.
    """

    def __init__(
        self,
        write: Callable[[str], Awaitable[bool]] | None,
        *,
        interval: float = JOURNAL_INTERVAL_SECONDS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._write = write
        self._interval = interval
        self._clock = clock
        self._due = 0.0
        self._task: asyncio.Task[None] | None = None
        self._refused = False
        self._warned = False
        self.writes = 0
        """How many writes this journal started (for tests and the benchmark)."""

    def turn_started(self) -> None:
        """A model turn began streaming: its first write is due one interval from now."""
        self._due = self._clock() + self._interval

    def streamed(self, parts: Sequence[str]) -> None:
        """The turn's text is now ``"".join(parts)``: write it if a write is due and none is under way.

        Returns at once; the write runs as a task of its own.
        """
        if self._write is None or self._refused:
            return
        now = self._clock()
        if now < self._due or (self._task is not None and not self._task.done()):
            return
        self._due = now + self._interval
        self.writes += 1
        self._task = asyncio.ensure_future(self._store("".join(parts)))

    async def settle(self) -> None:
        """Wait for a write under way to end, so that the turn's snapshot (which clears the journal) lands after it."""
        if self._task is not None:
            await wait_out(self._task)
            self._task = None

    def abandon(self) -> None:
        """The execution ends: a write not yet under way is dropped (one under way ends on its own)."""
        if self._task is not None and not self._task.done():
            self._task.cancel()
        self._task = None

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
