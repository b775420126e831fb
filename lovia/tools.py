"""Tools an agent can call, and the context they run in.

``@tool`` turns a plain function (sync or async) into a :class:`Tool`: its JSON schema comes
from the type hints, its description and parameter notes from the docstring. A first
parameter annotated :class:`ToolContext` receives the run's context instead of a model
argument. A tool's exception becomes an error result the model sees, never a crash.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import dataclasses
import enum
import inspect
import json
import re
import threading
import types
import typing
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Generic, Literal, TypeVar, get_args, get_origin, get_type_hints

from lovia.usage import Usage

__all__ = ["RunContext", "Tool", "ToolContext", "ToolError", "ToolSpec", "tool"]

DepsT = TypeVar("DepsT")
T = TypeVar("T")


@dataclass
class RunContext(Generic[DepsT]):
    """What a run knows about itself, handed to instructions functions and guardrails.

    ``deps`` is whatever the caller passed to ``Runner.run``; it is never snapshotted, so
    a resumed run gets the ``deps`` of the call that resumed it.
    """

    run_id: str
    deps: DepsT
    agent: str
    session_id: str | None = None
    turn: int = 0
    usage: Usage = field(default_factory=Usage)


@dataclass
class ToolContext(RunContext[DepsT]):
    """A :class:`RunContext` plus the id of the tool call being executed.

    On resume a dangling call runs again with the same ``run_id`` and ``call_id``: key
    side effects on them to make a tool idempotent.
    """

    call_id: str = ""


@dataclass(frozen=True, slots=True)
class ToolSpec:
    """What a model is told about a tool: name, description and JSON schema of arguments."""

    name: str
    description: str
    parameters: dict[str, Any]


@dataclass(frozen=True)
class Tool:
    """A callable the model may invoke by name, with a JSON schema for its arguments."""

    name: str
    description: str
    parameters: dict[str, Any]
    function: Callable[..., Any]
    takes_context: bool = False

    @property
    def spec(self) -> ToolSpec:
        return ToolSpec(self.name, self.description, self.parameters)

    async def invoke(self, ctx: ToolContext[Any], arguments: str) -> str:
        """Run the tool on the model's JSON ``arguments`` and return its output as text.

        Raises :class:`ToolArgumentsError` when the arguments do not fit the schema; any
        exception of the tool itself propagates for the runner to turn into an error result.
        """
        kwargs = parse_arguments(arguments)
        properties = self.parameters.get("properties", {})
        unknown = sorted(set(kwargs) - set(properties))
        missing = [name for name in self.parameters.get("required", []) if name not in kwargs]
        if unknown or missing:
            problems = []
            if missing:
                problems.append(f"missing required {', '.join(missing)}")
            if unknown:
                problems.append(f"unknown {', '.join(unknown)}")
            raise ToolArgumentsError(f"{'; '.join(problems)} (expected: {', '.join(properties) or 'no arguments'})")
        args = (ctx,) if self.takes_context else ()
        if inspect.iscoroutinefunction(self.function):
            return _as_text(await self.function(*args, **kwargs))

        def call_and_render() -> Any:  # the tool's own code, its result's __str__ included, stays off the loop
            value = self.function(*args, **kwargs)
            return value if inspect.isawaitable(value) else _as_text(value)

        value = await _call_in_own_thread(call_and_render, thread_name=f"lovia-tool-{self.name}")
        return _as_text(await value) if inspect.isawaitable(value) else value


def parse_arguments(arguments: str) -> dict[str, Any]:
    """A call's JSON ``arguments`` as a dict (empty: none); :class:`ToolArgumentsError` when not an object."""
    try:
        parsed = json.loads(arguments) if arguments and arguments.strip() else {}
    except ValueError as exc:
        raise ToolArgumentsError(f"arguments are not valid JSON ({exc}); send a JSON object") from None
    if not isinstance(parsed, dict):
        raise ToolArgumentsError(f"arguments must be a JSON object, got {type(parsed).__name__}")
    return parsed


def _as_text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)


async def _call_in_own_thread(function: Callable[[], T], *, thread_name: str) -> T:
    """Call ``function`` on a new daemon thread and return its result (or raise its error).

    Cancelling the caller takes effect at once: the thread runs on to its end and its late
    result is dropped. A thread of its own, not the loop's shared executor, because a stopped
    call that never returns must neither take a worker from later calls nor hold up the
    process's exit (the executor's threads are joined at exit; a daemon thread is not).
    """
    loop = asyncio.get_running_loop()
    outcome: asyncio.Future[T] = loop.create_future()
    context = contextvars.copy_context()  # as asyncio.to_thread does: the caller's context vars

    def settle(value: T | None, error: BaseException | None) -> None:
        if outcome.done():  # cancelled: the run stopped and nobody wants this result
            return
        if error is not None:
            outcome.set_exception(error)
        else:
            outcome.set_result(value)  # type: ignore[arg-type]

    def work() -> None:
        value: T | None = None
        error: BaseException | None = None
        try:
            value = context.run(function)
        except Exception as exc:
            error = exc
        except BaseException as exc:
            # SystemExit or KeyboardInterrupt raised inside a tool would, delivered as they are,
            # escape the event loop and end the app; the tool failed, so report it as a failure.
            error = RuntimeError(f"the tool raised {type(exc).__name__}: {exc}")
        with contextlib.suppress(RuntimeError):  # the loop is closed: its run has long ended
            loop.call_soon_threadsafe(settle, value, error)

    threading.Thread(target=work, name=thread_name, daemon=True).start()
    return await outcome


class ToolArgumentsError(ValueError):
    """The model's arguments do not fit the tool's schema; reported back to the model."""


class ToolError(Exception):
    """Raise from a tool to give the model exactly this message as the call's error result.

    Any other exception is reported as ``TypeName: message``; this one as its message alone,
    for a tool that words its failure for the model (an MCP server's own error, say).
    """


def tool(
    function: Callable[..., Any] | None = None, *, name: str | None = None, description: str | None = None
) -> Any:
    """Make a :class:`Tool` of ``function``; use as ``@tool`` or ``@tool(name=...)``.

    Supported parameter types: ``str``, ``int``, ``float``, ``bool``, ``list[...]``,
    ``dict[str, ...]``, ``Literal[...]``, enums, ``X | None`` and dataclasses of these.
    Parameters with defaults are optional. Google-style ``Args:`` or ``:param x:`` lines
    in the docstring describe the parameters.
    """

    def build(fn: Callable[..., Any]) -> Tool:
        summary, notes = _parse_docstring(inspect.getdoc(fn) or "")
        signature = inspect.signature(fn)
        hints = get_type_hints(fn)
        parameters = list(signature.parameters.values())
        takes_context = bool(parameters) and _is_context(hints.get(parameters[0].name))
        if takes_context:
            parameters = parameters[1:]
        properties: dict[str, Any] = {}
        required: list[str] = []
        for param in parameters:
            if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
                raise TypeError(f"tool {fn.__name__}: *args and **kwargs cannot be described to a model")
            schema = _schema_for(hints.get(param.name, Any), f"{fn.__name__}({param.name})")
            if param.name in notes:
                schema["description"] = notes[param.name]
            if param.default is param.empty:
                required.append(param.name)
            elif param.default is None or isinstance(param.default, (str, int, float, bool)):
                schema["default"] = param.default
            properties[param.name] = schema
        schema = {"type": "object", "properties": properties, "required": required, "additionalProperties": False}
        return Tool(
            name=name or fn.__name__,
            description=description if description is not None else summary,
            parameters=schema,
            function=fn,
            takes_context=takes_context,
        )

    return build(function) if function is not None else build


def _is_context(hint: Any) -> bool:
    origin = get_origin(hint) or hint
    return isinstance(origin, type) and issubclass(origin, RunContext)


_SIMPLE: dict[Any, dict[str, Any]] = {
    str: {"type": "string"},
    int: {"type": "integer"},
    float: {"type": "number"},
    bool: {"type": "boolean"},
    type(None): {"type": "null"},
}


def _schema_for(hint: Any, where: str) -> dict[str, Any]:
    if hint in _SIMPLE:
        return dict(_SIMPLE[hint])
    if hint is Any:
        return {}
    origin, args = get_origin(hint), get_args(hint)
    if origin in (typing.Union, types.UnionType):
        options = [_schema_for(arg, where) for arg in args]
        return {"anyOf": options}
    if origin is Literal:
        return {"enum": list(args)}
    if origin in (list, tuple, set, frozenset) or hint in (list, tuple, set):
        item = _schema_for(args[0], where) if args else {}
        return {"type": "array", "items": item}
    if origin is dict or hint is dict:
        value = _schema_for(args[1], where) if len(args) == 2 else {}
        return {"type": "object", "additionalProperties": value}
    if isinstance(hint, type) and issubclass(hint, enum.Enum):
        return {"enum": [member.value for member in hint]}
    if dataclasses.is_dataclass(hint):
        fields = get_type_hints(hint)
        return {
            "type": "object",
            "properties": {f.name: _schema_for(fields[f.name], where) for f in dataclasses.fields(hint)},
            "required": [f.name for f in dataclasses.fields(hint)
                         if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING],
        }
    raise TypeError(f"tool {where}: cannot describe type {hint!r} to a model; use str, int, float, bool, "
                    "list, dict, Literal, an Enum or a dataclass")


_SECTION_ENDS = {"returns:", "raises:", "yields:", "examples:", "notes:", "note:"}
_ARGS_SECTIONS = {"args:", "arguments:", "parameters:"}
_SPHINX_PARAM = re.compile(r":param\s+(?:\w+\s+)?(\w+)\s*:\s*(.*)")
_GOOGLE_PARAM = re.compile(r"(\w+)\s*(?:\([^)]*\))?\s*:\s*(.*)")


def _parse_docstring(doc: str) -> tuple[str, dict[str, str]]:
    """The summary paragraph and per-parameter notes (Google or Sphinx style) of a docstring."""
    first = doc.split("\n\n", 1)[0].strip()
    starts_with_section = first.lower().startswith((":param", *_ARGS_SECTIONS))
    summary = "" if starts_with_section else " ".join(first.split())
    notes: dict[str, str] = {}
    in_args, current = False, None
    for line in doc.splitlines():
        stripped = line.strip()
        lowered = stripped.lower()
        if lowered in _ARGS_SECTIONS or lowered in _SECTION_ENDS:
            in_args, current = lowered in _ARGS_SECTIONS, None
            continue
        match = _SPHINX_PARAM.match(stripped) or (_GOOGLE_PARAM.match(stripped) if in_args else None)
        if match:
            current = match.group(1)
            notes[current] = match.group(2).strip()
        elif in_args and current and stripped:
            notes[current] += " " + stripped
    return summary, notes
