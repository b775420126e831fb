"""The @tool decorator: schemas from hints and docstrings, invocation, errors."""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Literal

import pytest

from lovia import RunContext, ToolContext, tool
from lovia.tools import ToolArgumentsError


class Colour(enum.Enum):
    RED = "red"
    BLUE = "blue"


@dataclass
class Point:
    x: float
    y: float = 0.0


def ctx() -> ToolContext:
    return ToolContext(run_id="r", deps=None, agent="a", call_id="c")


def test_schema_from_hints_defaults_and_google_docstring():
    @tool
    def search(query: str, limit: int = 5, exact: bool = False, tags: list[str] | None = None,
               mode: Literal["fast", "deep"] = "fast", colour: Colour = Colour.RED, at: Point | None = None,
               weights: dict[str, float] | None = None) -> str:
        """Search the notes.

        Longer explanation that is not the summary.

        Args:
            query: words to look for,
                over two lines.
            limit: how many results.
        """
        return query

    assert search.name == "search" and search.description == "Search the notes."
    params = search.parameters
    assert params["required"] == ["query"] and params["additionalProperties"] is False
    props = params["properties"]
    assert props["query"] == {"type": "string", "description": "words to look for, over two lines."}
    assert props["limit"] == {"type": "integer", "description": "how many results.", "default": 5}
    assert props["exact"] == {"type": "boolean", "default": False}
    assert props["tags"] == {"anyOf": [{"type": "array", "items": {"type": "string"}}, {"type": "null"}], "default": None}
    assert props["mode"] == {"enum": ["fast", "deep"], "default": "fast"}
    assert props["colour"] == {"enum": ["red", "blue"]}
    assert props["at"]["anyOf"][0] == {"type": "object", "properties": {"x": {"type": "number"}, "y": {"type": "number"}},
                                       "required": ["x"]}
    assert props["weights"]["anyOf"][0] == {"type": "object", "additionalProperties": {"type": "number"}}


def test_sphinx_docstrings_and_overrides():
    @tool(name="lookup", description="Find a thing.")
    def find(key: str) -> str:
        """:param key: the key to find"""
        return key

    assert (find.name, find.description) == ("lookup", "Find a thing.")
    assert find.parameters["properties"]["key"]["description"] == "the key to find"


def test_a_context_parameter_is_not_part_of_the_schema():
    @tool
    def who(ctx: RunContext, loud: bool = False) -> str:
        """Who runs."""
        return ctx.agent

    assert who.takes_context and list(who.parameters["properties"]) == ["loud"]


async def test_invoke_sync_and_async_and_non_string_results():
    @tool
    def add(a: int, b: int) -> dict:
        """Add."""
        return {"sum": a + b}

    @tool
    async def greet(ctx: ToolContext, name: str) -> str:
        """Greet."""
        return f"hi {name} from {ctx.call_id}"

    assert await add.invoke(ctx(), '{"a": 1, "b": 2}') == '{"sum": 3}'
    assert await greet.invoke(ctx(), '{"name": "Ada"}') == "hi Ada from c"


@pytest.mark.parametrize("arguments, message", [
    ("not json", "not valid JSON"), ("[1, 2]", "must be a JSON object"), ('{"a": 1}', "missing required b"),
    ('{"a": 1, "b": 2, "c": 3}', "unknown c"),
])
async def test_arguments_that_do_not_fit_are_reported(arguments, message):
    @tool
    def add(a: int, b: int) -> int:
        """Add."""
        return a + b

    with pytest.raises(ToolArgumentsError, match=message):
        await add.invoke(ctx(), arguments)


def test_unsupported_signatures_are_refused_at_definition():
    with pytest.raises(TypeError, match="cannot describe"):
        @tool
        def bad(x: object) -> str:
            """Bad."""
            return ""

    with pytest.raises(TypeError, match=r"\*args"):
        @tool
        def variadic(*items: str) -> str:
            """Bad."""
            return ""
