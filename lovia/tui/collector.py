"""Keeping Python's cyclic garbage collector out of the way of the screen.

The app holds hundreds of thousands of objects (each widget is hundreds), and a full collection
scans every one of them: on this project's machine a pass took 130-180 ms on the way to the first
paint and 200-500 ms with a long answer mounted, a frozen screen each time. Python runs one
whenever the objects alive grew by a quarter, which starting the app and streaming a long answer
both do every second or two. Two moments are tuned, both here because the collector has one
frozen set and one switch for the whole process:

- start-up (the ``lovia`` command only): the objects alive when the app loads (modules,
  classes, the stores) are frozen, and collection is paused until shortly after the main screen's
  first paint, or until the app closes, whichever comes first;
- streaming: while any answer streams, what is alive is frozen at most every
  :data:`REFREEZE_SECONDS`, so a pass scans only what was made since; when the last answer ends,
  everything is thawed (start-up's frozen objects too: the collector cannot thaw part of its
  frozen set), and cycles that became garbage meanwhile are collected as usual from then on.
  Young garbage is collected (generations 0 and 1, which is cheap) before each freeze, so what
  the answer's updates threw away is not kept until the answer ends.
- after an answer, in the app (:attr:`Collector.thaw_when_idle`): the thaw waits until no key or
  click came for :data:`THAW_WHEN_IDLE_FOR`, or :data:`THAW_AT_THE_LATEST` after the end, and
  the full pass it calls for runs then, at once. Thawed as the answer ended, that pass came
  within the next few hundred milliseconds, while the end of the answer was being drawn, and
  scanned everything: 385-609 ms of the 540-760 ms the app stood still after a long answer
  (bench/tui_stream.py's mixed answer, 2026-12-04), just when the user reads, scrolls or copies.

The frozen set is the process's: an embedding program's own ``gc.freeze`` is thawed at an
answer's end too. When the app closes, what start-up froze is thawed.
"""

from __future__ import annotations

import asyncio
import gc
import time

REFREEZE_SECONDS = 1.0
"""While an answer streams, what survived this long is left out of the collector's full passes."""

THAW_WHEN_IDLE_FOR = 2.0
"""Seconds without a key or click after an answer before the app thaws and collects (see above)."""

THAW_AT_THE_LATEST = 30.0
"""Seconds after an answer by which the app thaws however busy the keyboard is: cycles that became
garbage are kept meanwhile, so the wait is bounded."""


class Collector:
    """The app's one owner of :mod:`gc` state; see the module docstring for what it does and why."""

    def __init__(self) -> None:
        self._paused_for_start = False
        self._froze_for_start = False
        self._streams = 0
        self._frozen_at = 0.0
        self.thaw_when_idle = False
        """Set by the app while it runs (it calls :meth:`input_seen`): an answer's end thaws once
        the user is idle. Otherwise it thaws at once."""
        self._thaw_due_since: float | None = None
        self._last_input = 0.0
        self._thaw_check: asyncio.TimerHandle | None = None

    def pause_for_start(self) -> None:
        """Freeze what is alive and pause collection, unless something else turned it off already."""
        if gc.isenabled() and not self._paused_for_start:
            gc.freeze()  # no collection first: even a young one cost start-up more than it freed
            gc.disable()
            self._paused_for_start = self._froze_for_start = True

    def resume_after_start(self) -> None:
        """Collect as usual again if :meth:`pause_for_start` paused it; harmless to call twice."""
        if self._paused_for_start:
            self._paused_for_start = False
            gc.enable()

    def app_closed(self) -> None:
        """Collect as usual, and thaw what start-up or an answer froze unless an answer still streams."""
        self.resume_after_start()
        self.thaw_when_idle = False
        if (self._froze_for_start or self._thaw_due_since is not None) and not self._streams:
            self._thaw(collect=False)
        self._froze_for_start = False

    def input_seen(self) -> None:
        """The user pressed a key or clicked: a thaw after an answer waits for them to be idle."""
        self._last_input = time.monotonic()

    def stream_started(self) -> None:
        self._streams += 1
        self._cancel_thaw_check()
        self._thaw_due_since = None  # this answer's end thaws: until then, what is frozen stays so
        self.stream_grew()

    def stream_grew(self) -> None:
        """An answer showed more text: freeze what is alive, at most every :data:`REFREEZE_SECONDS`."""
        if self._streams and time.monotonic() - self._frozen_at >= REFREEZE_SECONDS:
            gc.collect(1)
            gc.freeze()
            self._frozen_at = time.monotonic()

    def stream_ended(self) -> None:
        self._streams -= 1
        if self._streams:
            return
        self._frozen_at = 0.0
        if not self.thaw_when_idle:
            self._thaw(collect=False)
            return
        self._thaw_due_since = time.monotonic()
        self._check_thaw_after(THAW_WHEN_IDLE_FOR)

    def _check_thaw_after(self, seconds: float) -> None:
        self._cancel_thaw_check()
        self._thaw_check = asyncio.get_running_loop().call_later(seconds, self._thaw_if_idle)

    def _cancel_thaw_check(self) -> None:
        if self._thaw_check is not None:
            self._thaw_check.cancel()
            self._thaw_check = None

    def _thaw_if_idle(self) -> None:
        self._thaw_check = None
        due_since = self._thaw_due_since
        if due_since is None or self._streams:
            return
        now = time.monotonic()
        idle_from = max(due_since, self._last_input)
        if now - idle_from >= THAW_WHEN_IDLE_FOR or now - due_since >= THAW_AT_THE_LATEST:
            self._thaw(collect=True)
        else:
            self._check_thaw_after(min(idle_from + THAW_WHEN_IDLE_FOR, due_since + THAW_AT_THE_LATEST) - now)

    def _thaw(self, *, collect: bool) -> None:
        """Thaw everything; with ``collect``, run the full pass that calls for now, not at some later allocation."""
        self._cancel_thaw_check()
        self._thaw_due_since = None
        self._froze_for_start = False
        gc.unfreeze()
        if collect and gc.isenabled():
            gc.collect()


COLLECTOR = Collector()
