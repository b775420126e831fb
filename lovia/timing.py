"""Per-step timing of a run: every model turn and every tool call, with when it started and ended.

The runner records one :class:`ModelStep` per model turn and one :class:`ToolStep` per tool
call, in the order they started. While the run is in flight they are carried in its
checkpoint head (``RunHead.steps``), so a crashed or stopped run has them too, and a resumed
run keeps the steps its earlier executions recorded. When the run completes they are
written into its session segment's ``meta["steps"]``, beside the spec's ``meta["timing"]``,
as plain JSON (:func:`steps_to_meta`); :func:`steps_from_meta` reads them back.

Times are epoch seconds (``time.time()``), comparable across the processes that executed
one run and with ``meta["timing"]``. A step that never ended (its process was killed, or the
run is executing it now) has ``finished_at = None``; one that a stop or an error cut short
is ended at that moment with ``cut_off = True`` (and ``stopped = True`` when the user stopped the
run: escape, quit), and so is one a kill cut short once the run is resumed: at the last moment
the run was known to execute (its last save or journal write), or with no end when even that is
not known.

Reading is lenient: a segment or head written before lovia recorded steps has none, and a
step whose stored form this version cannot make sense of is skipped, never an error.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

__all__ = [
    "MIN_STREAMING_SECONDS",
    "ModelStep",
    "Step",
    "ToolStep",
    "given_results",
    "step_ending",
    "step_from_dict",
    "step_to_dict",
    "steps_from_list",
    "steps_from_meta",
    "steps_to_meta",
    "streaming_seconds",
    "tokens_per_second",
]

MIN_STREAMING_SECONDS = 0.02
"""A turn that streamed for less time than this has no tokens per second: its chunks came at once
(a tool call often arrives whole, its end microseconds after its first chunk), and a rate over so
little time says how the endpoint batched its chunks, not how fast it writes (1 token in 30 µs
would read 33333 tok/s)."""


@dataclass(frozen=True, slots=True)
class ModelStep:
    """One model turn: asked at ``started_at``, first text or tool call at ``first_token_at``, done at ``finished_at``.

    ``model`` is the model's name (``None`` when unknown); ``turn`` the run's turn number (1
    for the first). ``first_token_at`` is ``None`` when nothing arrived (the turn failed or
    was cut off before its first chunk). ``input_tokens`` / ``output_tokens`` are what the
    server reported, ``None`` when it reported no usage for this turn. ``streamed_until`` is
    set only on a turn that never ended (its process was killed while it streamed): when the
    partial-answer journal last wrote its text, the last moment it was known to be streaming,
    so a crashed run's timeline can draw the turn that far. ``error`` is set on a turn the model
    endpoint ended with an error (it refused, or died mid-stream); such a turn is also
    ``cut_off``, ended when the error came. ``asked_again`` is set on such a turn whose request
    the model sent again after a wait (its own retry, on a rate limit or a server's failure):
    the next step is that attempt of the same turn. ``stopped`` is set on a turn ``cut_off``
    because the user stopped the run (escape, quit), not by an error or a crash.
    """

    agent: str
    model: str | None
    started_at: float
    first_token_at: float | None = None
    finished_at: float | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    turn: int | None = None
    cut_off: bool = False
    streamed_until: float | None = None
    error: bool = False
    asked_again: bool = False
    stopped: bool = False
    kind: Literal["model"] = "model"

    @property
    def time_to_first_token(self) -> float | None:
        """Seconds from the request to its first chunk; ``None`` when nothing arrived."""
        return None if self.first_token_at is None else max(0.0, self.first_token_at - self.started_at)

    @property
    def duration(self) -> float | None:
        """Seconds from the request to the turn's end; ``None`` for a turn that never ended."""
        return None if self.finished_at is None else max(0.0, self.finished_at - self.started_at)


@dataclass(frozen=True, slots=True)
class ToolStep:
    """One tool call (or handoff), by its ``call_id`` and tool ``name``; ``error`` when its result is an error.

    ``server`` names the MCP server the call went to; ``None`` for the agent's own tools.
    ``cut_off``: the call never ended by itself (a stop, a crash); ``stopped``: the user stopped it.
    ``given``: its result was given by :func:`lovia.complete_dangling_call` (by a user, or a
    program), not received from the tool; a call with no step of its own gets one then, taking no time.
    """

    call_id: str
    name: str
    started_at: float
    finished_at: float | None = None
    error: bool = False
    cut_off: bool = False
    server: str | None = None
    stopped: bool = False
    given: bool = False
    kind: Literal["tool"] = "tool"

    @property
    def duration(self) -> float | None:
        """Seconds the call took; ``None`` for a call that never ended."""
        return None if self.finished_at is None else max(0.0, self.finished_at - self.started_at)


Step = ModelStep | ToolStep
"""A step of a run; tell them apart with ``isinstance`` or ``step.kind``."""


def streaming_seconds(step: ModelStep) -> float | None:
    """Seconds the turn streamed, from its first chunk to its end, when that can give a rate.

    ``None`` when the turn has no first chunk or no end, or streamed for less than
    :data:`MIN_STREAMING_SECONDS` (everything arrived at once: a rate would be meaningless).
    """
    if step.first_token_at is None or step.finished_at is None:
        return None
    streaming = step.finished_at - step.first_token_at
    return streaming if streaming >= MIN_STREAMING_SECONDS else None


def tokens_per_second(step: ModelStep) -> float | None:
    """Output tokens per second of streaming, from the first chunk to the turn's end.

    ``None`` when the server reported no usage, or the turn has no time of streaming to measure
    (see :func:`streaming_seconds`). The figures behind it are stored as they were measured.
    """
    streaming = streaming_seconds(step)
    if step.output_tokens is None or streaming is None:
        return None
    return step.output_tokens / streaming


def step_ending(step: Step) -> str:
    """How a step ended when it did not end by itself, in the words the timeline and the export use:
    ``"error"``, ``"stopped"`` (by the user), ``"cut off"`` (a crash, a failed run); ``""`` otherwise."""
    if step.error:
        return "error"  # says more than "cut off", which an error's end also is
    if step.cut_off:
        return "stopped" if step.stopped else "cut off"
    return ""


def given_results(steps: Iterable[Step]) -> set[str]:
    """The ids of the calls whose result was given rather than received from the tool (``ToolStep.given``)."""
    return {step.call_id for step in steps if isinstance(step, ToolStep) and step.given}


def step_to_dict(step: Step) -> dict[str, Any]:
    """A JSON-ready dict of ``step``; ``None`` and false fields are left out, to keep heads small."""
    data: dict[str, Any] = {"kind": step.kind}
    for name in _FIELDS[step.kind]:
        value = getattr(step, name)
        if value is not None and value is not False:
            data[name] = value
    return data


def step_from_dict(data: Mapping[str, Any]) -> Step | None:
    """Rebuild a step from :func:`step_to_dict` output; ``None`` when it is not one this version reads."""
    try:
        if data.get("kind") == "model":
            return ModelStep(
                agent=str(data["agent"]), model=_str(data.get("model")), started_at=float(data["started_at"]),
                first_token_at=_float(data.get("first_token_at")), finished_at=_float(data.get("finished_at")),
                input_tokens=_int(data.get("input_tokens")), output_tokens=_int(data.get("output_tokens")),
                turn=_int(data.get("turn")), cut_off=bool(data.get("cut_off", False)),
                streamed_until=_float(data.get("streamed_until")), error=bool(data.get("error", False)),
                asked_again=bool(data.get("asked_again", False)), stopped=bool(data.get("stopped", False)),
            )
        if data.get("kind") == "tool":
            return ToolStep(
                call_id=str(data["call_id"]), name=str(data["name"]), started_at=float(data["started_at"]),
                finished_at=_float(data.get("finished_at")), error=bool(data.get("error", False)),
                cut_off=bool(data.get("cut_off", False)), server=_str(data.get("server")),
                stopped=bool(data.get("stopped", False)), given=bool(data.get("given", False)),
            )
    except (KeyError, TypeError, ValueError):
        pass
    return None


def steps_to_meta(steps: Iterable[Step]) -> list[dict[str, Any]]:
    """``steps`` as the JSON list stored in ``meta["steps"]`` (and in a head)."""
    return [step_to_dict(step) for step in steps]


def shared_step_dicts(steps: Sequence[Step]) -> list[dict[str, Any]]:
    """:func:`steps_to_meta` for a head's encoding at every snapshot: each step's dict is made once.

    A run's head is encoded at every save and carries all its steps so far, so building every
    dict again made a save of a 20-turn run cost 113 us more than one with none (measured);
    a step is frozen, so its dict is kept (by identity, a bounded cache) and handed out again.
    The dicts are shared: read them, never change them.
    """
    cache = _STEP_DICTS
    if len(cache) > _STEP_DICTS_LIMIT:
        cache.clear()
    dicts = []
    for step in steps:
        known = cache.get(id(step))
        if known is None or known[0] is not step:  # the cache holds the step, so its id is not reused meanwhile
            known = cache[id(step)] = (step, step_to_dict(step))
        dicts.append(known[1])
    return dicts


_STEP_DICTS: dict[int, tuple[Step, dict[str, Any]]] = {}
_STEP_DICTS_LIMIT = 4096  # steps of the runs in flight in one process, with room to spare


def steps_from_list(data: object) -> list[Step]:
    """The steps of a stored list (:func:`steps_to_meta` output); what cannot be read is skipped."""
    if not isinstance(data, Sequence) or isinstance(data, (str, bytes)):
        return []
    steps = (step_from_dict(item) for item in data if isinstance(item, Mapping))
    return [step for step in steps if step is not None]


def steps_from_meta(meta: Mapping[str, Any] | None) -> list[Step]:
    """The steps a segment's ``meta`` records (``meta["steps"]``); empty when it has none."""
    return steps_from_list(meta.get("steps")) if meta else []


_FIELDS: dict[str, tuple[str, ...]] = {
    "model": ("agent", "model", "started_at", "first_token_at", "finished_at", "input_tokens", "output_tokens",
              "turn", "cut_off", "streamed_until", "error", "asked_again", "stopped"),
    "tool": ("call_id", "name", "started_at", "finished_at", "error", "cut_off", "server", "stopped", "given"),
}


def _float(value: object) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _int(value: object) -> int | None:
    return int(value) if isinstance(value, int) and not isinstance(value, bool) else None


def _str(value: object) -> str | None:
    return value if isinstance(value, str) else None
