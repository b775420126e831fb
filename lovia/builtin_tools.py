"""Tools that ship with lovia: the default agent has them, so tools, checkpoints and resume
can be seen with no model configured."""

from __future__ import annotations

import ast
import asyncio
import datetime
import math
import operator

from lovia.tools import Tool, tool

__all__ = ["BUILTIN_TOOLS", "calculate", "current_time", "wait"]

MAX_WAIT_SECONDS = 120.0


@tool
def current_time() -> str:
    """The current local date and time, ISO 8601, with the UTC offset."""
    return datetime.datetime.now().astimezone().isoformat(timespec="seconds")


_OPERATORS = {
    ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod, ast.Pow: operator.pow,
    ast.USub: operator.neg, ast.UAdd: operator.pos,
}
_FUNCTIONS = {"sqrt": math.sqrt, "abs": abs, "round": round, "log": math.log, "sin": math.sin, "cos": math.cos}
_CONSTANTS = {"pi": math.pi, "e": math.e}


def _evaluate(node: ast.AST) -> float:
    if isinstance(node, ast.Expression):
        return _evaluate(node.body)
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) and not isinstance(node.value, bool):
        return node.value
    if isinstance(node, ast.Name) and node.id in _CONSTANTS:
        return _CONSTANTS[node.id]
    if isinstance(node, ast.BinOp) and type(node.op) in _OPERATORS:
        left, right = _evaluate(node.left), _evaluate(node.right)
        if isinstance(node.op, ast.Pow) and abs(right) > 1000:
            raise ValueError("exponent too large")
        return _OPERATORS[type(node.op)](left, right)
    if isinstance(node, ast.UnaryOp) and type(node.op) in _OPERATORS:
        return _OPERATORS[type(node.op)](_evaluate(node.operand))
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in _FUNCTIONS and not node.keywords:
        return _FUNCTIONS[node.func.id](*(_evaluate(arg) for arg in node.args))
    raise ValueError(f"unsupported expression: {ast.unparse(node) if hasattr(ast, 'unparse') else node!r}")


@tool
def calculate(expression: str) -> str:
    """Evaluate an arithmetic expression exactly as written.

    Args:
        expression: numbers with + - * / // % ** and parentheses; sqrt, abs, round, log, sin, cos, pi, e.
    """
    tree = ast.parse(expression.replace("^", "**"), mode="eval")
    value = _evaluate(tree)
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e15:
        value = int(value)
    return f"{expression} = {value}"


@tool
async def wait(seconds: float) -> str:
    """Wait for a number of seconds, then say so: a slow step to stop, crash and resume.

    Args:
        seconds: how long to wait, at most 120.
    """
    seconds = max(0.0, min(float(seconds), MAX_WAIT_SECONDS))
    await asyncio.sleep(seconds)
    return f"waited {seconds:g} seconds"


BUILTIN_TOOLS: list[Tool] = [current_time, calculate, wait]
