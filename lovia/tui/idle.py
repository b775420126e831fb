"""Work the app puts off until the user is idle: no key or click for :data:`IDLE_FOR` seconds.

When an answer ends, two costly things are due that nobody is waiting for: showing its folded
blocks again as Textual lays out a stored message (a layout of every block: ~150 ms for a long
answer here), and the garbage collector's full pass over what streaming kept frozen (400-600 ms).
Done at the end, they froze the app just when the user reads, scrolls or copies the answer
(bench/tui_stream.py, "longest stall ... after ... ends"). Queued here, they run once the
keyboard and mouse have been still for a moment, or :data:`AT_THE_LATEST` after they were asked
for (the collector keeps cycles that became garbage meanwhile: the wait must end).

Outside the app (a program driving the widgets itself, or no event loop), nothing is queued:
:meth:`IdleWork.call` runs the work at once, as before.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

IDLE_FOR = 2.0
"""Seconds without a key or click after which queued work runs."""

AT_THE_LATEST = 30.0
"""Seconds after it was queued by which work runs however busy the keyboard is."""


class IdleWork:
    """One queue for the process (the app tells it of keys and clicks); see the module docstring."""

    def __init__(self) -> None:
        self.enabled = False
        """Set by the app while it runs and reports input through :meth:`input_seen`."""
        self._queued: list[tuple[float, Callable[[], object]]] = []
        self._last_input = 0.0
        self._check: asyncio.TimerHandle | None = None

    def input_seen(self) -> None:
        """The user pressed a key or clicked: queued work waits for them to be idle again."""
        self._last_input = time.monotonic()

    def call(self, work: Callable[[], object]) -> None:
        """Run ``work`` once the user is idle; at once when no app queues work. It must check
        that what it acts on is still there: a widget may have left meanwhile."""
        if not self.enabled:
            work()
            return
        self._queued.append((time.monotonic(), work))
        if self._check is None:
            self._check_after(IDLE_FOR)

    def drop(self) -> None:
        """Forget the queued work and stop queueing (the app closes: nothing is left to show)."""
        self.enabled = False
        self._queued.clear()
        self._last_input = 0.0  # the closing app's keys: the next app in this process starts idle
        if self._check is not None:
            self._check.cancel()
            self._check = None

    def _check_after(self, seconds: float) -> None:
        self._check = asyncio.get_running_loop().call_later(seconds, self._run_if_idle)

    def _run_if_idle(self) -> None:
        self._check = None
        if not self._queued:
            return
        now = time.monotonic()
        oldest = self._queued[0][0]
        idle_from = max(self._last_input, self._queued[-1][0])
        if now - idle_from < IDLE_FOR and now - oldest < AT_THE_LATEST:
            self._check_after(min(idle_from + IDLE_FOR, oldest + AT_THE_LATEST) - now)
            return
        queued, self._queued = self._queued, []
        for _, work in queued:
            work()


IDLE_WORK = IdleWork()
