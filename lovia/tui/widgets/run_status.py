"""RunStatus: one line above the composer while a run goes, saying what it waits on and for how long,
and, while what a run added lies below a reader scrolled up, that it does.

A local model can take a minute before its first token (the prompt is read first), and a server
that never answers keeps the client waiting for its timeout: the run header's "running…" is far
up the transcript and says neither. This line does ("Waiting for openai:local · 42 s"), so a
user can tell a slow model from a dead one, and stop it (escape) knowing which. An answer that
streams, or ends, below where the reader has scrolled is kept out of view on purpose (the reader is
not pulled away), so the line says it is there and which key shows it.
"""

from __future__ import annotations

import math
import time

from textual.reactive import reactive
from textual.timer import Timer
from textual.widget import Widget

from lovia.tui import format
from lovia.tui.keymap import keymap_of

TICK_SECONDS = 1.0
"""How often the time on the line moves on."""


class RunStatus(Widget):
    """Hidden while no run goes and nothing new is below the view. The chat panel tells it each step
    as a message is sent and the run's events come (:meth:`saving_message`, :meth:`waiting_for_model`,
    :meth:`asking_again`, :meth:`answering`, :meth:`running_tools`, :meth:`clear`), and sets
    :attr:`new_below` as the transcript tells it."""

    DEFAULT_CSS = """
    RunStatus {
        display: none; height: 1; padding: 0 1; color: $text-muted; text-wrap: nowrap; text-overflow: ellipsis;
    }
    RunStatus.-shown { display: block; }
    """

    step: reactive[str] = reactive("", init=False)
    """What the run does now, as the line says it ("Waiting for openai:local"); empty: no run goes."""

    new_below: reactive[bool] = reactive(False, init=False)
    """Whether what a run added lies below the conversation's view (see ``Transcript.new_below``)."""

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self._since = time.monotonic()
        self._tools: dict[str, str] = {}  # the calls running now: call id -> tool name
        self._again_at: float | None = None  # while a failed request waits to be sent again: when it is
        self._again_timer: Timer | None = None  # what says the model is waited for once it is
        self._ticker: Timer | None = None

    def saving_message(self) -> None:
        """A message is being sent: stored, its run claimed, before the model is asked. A database
        another program holds, or a server down, keeps it there for the store's timeout (30 s)."""
        self._tools.clear()
        self._set("Saving your message to the database")

    def waiting_for_model(self, model: str | None) -> None:
        """A model was asked, and nothing of its answer has come yet."""
        self._tools.clear()
        self._set(f"Waiting for {model or 'the model'}")

    def asking_again(self, model: str, reason: str, wait: float) -> None:
        """The model's request failed (``reason``) and is sent again in ``wait`` seconds: the line
        counts down to it, then waits for the model again. A rate limit looked like a slow model."""
        self._tools.clear()
        self._set(reason)
        self._again_at = time.monotonic() + wait
        self._again_timer = self.set_timer(wait, lambda: self._countdown_over(model), name="asked again")

    def _countdown_over(self, model: str) -> None:
        self._again_timer = None  # done: nothing to stop
        self.waiting_for_model(model)

    def answering(self, model: str | None) -> None:
        """The model's answer streams in (said once, at its first piece: the time counts from there)."""
        text = f"{model or 'The model'} is answering"
        if self.step != text:
            self._set(text)

    def running_tools(self, call_id: str, name: str) -> None:
        """A tool call started; the line names what runs until every one has its result."""
        self._tools[call_id] = name
        self._set(self._tools_text(), restart=len(self._tools) == 1)

    def tool_done(self, call_id: str, model: str | None) -> None:
        """A tool call has its result: with none left running, the model is asked again."""
        self._tools.pop(call_id, None)
        if self._tools:
            self._set(self._tools_text(), restart=False)
        else:
            self.waiting_for_model(model)

    def clear(self) -> None:
        """No run goes any more: the line goes."""
        self._tools.clear()
        self._stop_countdown()
        self.step = ""

    def _stop_countdown(self) -> None:
        self._again_at = None
        if self._again_timer is not None:
            self._again_timer.stop()
            self._again_timer = None

    def _tools_text(self) -> str:
        names = list(dict.fromkeys(self._tools.values()))
        more = len(self._tools) - 1
        return f"Running {names[0]}" + (f" and {format.count(more, 'more call', 'more calls')}" if more else "")

    def _set(self, step: str, *, restart: bool = True) -> None:
        self._stop_countdown()  # the run moved on
        if restart:
            self._since = time.monotonic()
            if self._ticker is not None:
                # Ticks keeping the phase of the step before lagged the seconds shown by up to one.
                self._tick_from_now()
        self.step = step
        self.refresh()  # the same step restarted: the time shown starts again

    def watch_step(self, step: str) -> None:
        self.set_class(bool(step or self.new_below), "-shown")
        if step and self._ticker is None:
            self._tick_from_now()
        elif not step and self._ticker is not None:
            self._ticker.stop()
            self._ticker = None

    def _tick_from_now(self) -> None:
        """Redraw the line every whole second from now on (the time it shows counts from now).
        Started anew, not ``Timer.reset``, which takes effect only at the tick under way."""
        if self._ticker is not None:
            self._ticker.stop()
        self._ticker = self.set_interval(TICK_SECONDS, self.refresh, name="run status")

    def watch_new_below(self, new_below: bool) -> None:
        self.set_class(bool(self.step or new_below), "-shown")

    def render(self) -> str:
        if not self.step:
            if not self.new_below:
                return ""
            key = keymap_of(self).first_key_text("transcript.last")
            return f"↓ New below: {key} in the conversation shows it"  # cut by the CSS at the line's end
        below = " · ↓ below" if self.new_below else ""
        if self._again_at is not None:  # a countdown to the request sent again
            tail = f" · asking again in {max(1, math.ceil(self._again_at - time.monotonic()))}s" + below
        else:
            waited = int(time.monotonic() - self._since)
            # Whole seconds, from the first: a quick step is not a flicker of "0s".
            shown = f"{waited}s" if waited < 60 else format.duration(waited)
            tail = (f" · {shown}" if waited >= 1 else "…") + below
        # The time is what the line is for: a long model name is cut, never the time
        room = self.content_region.width - len(tail)
        return (self.step if room <= 0 else format.one_line(self.step, room)) + tail
