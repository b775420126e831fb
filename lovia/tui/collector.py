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
- after an answer, in the app: the thaw waits until the user is idle (:mod:`lovia.tui.idle`), and
  the full pass it calls for runs then, at once. Thawed as the answer ended, that pass came
  within the next few hundred milliseconds, while the end of the answer was being drawn, and
  scanned everything: 385-609 ms of the 540-760 ms the app stood still after a long answer
  (bench/tui_stream.py's mixed answer, 2026-12-04), just when the user reads, scrolls or copies.

The frozen set is the process's: an embedding program's own ``gc.freeze`` is thawed at an
answer's end too. When the app closes, what start-up froze is thawed.
"""

from __future__ import annotations

import gc
import time

from lovia.tui.idle import IDLE_WORK

REFREEZE_SECONDS = 1.0
"""While an answer streams, what survived this long is left out of the collector's full passes."""


class Collector:
    """The app's one owner of :mod:`gc` state; see the module docstring for what it does and why."""

    def __init__(self) -> None:
        self._paused_for_start = False
        self._froze_for_start = False
        self._streams = 0
        self._frozen_at = 0.0
        self._thaw_due = False

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
        if (self._froze_for_start or self._thaw_due) and not self._streams:
            self._thaw(collect=False)
        self._froze_for_start = False

    def stream_started(self) -> None:
        self._streams += 1
        self._thaw_due = False  # this answer's end thaws: until then, what is frozen stays so
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
        self._thaw_due = True
        IDLE_WORK.call(self._thaw_if_due)

    def _thaw_if_due(self) -> None:
        # An answer started since, or the app closed and thawed: nothing to do.
        if self._thaw_due and not self._streams:
            self._thaw(collect=IDLE_WORK.enabled)

    def _thaw(self, *, collect: bool) -> None:
        """Thaw everything; with ``collect``, run the full pass that calls for now, not at some later allocation."""
        self._thaw_due = False
        self._froze_for_start = False
        gc.unfreeze()
        if collect and gc.isenabled():
            gc.collect()


COLLECTOR = Collector()
