"""Tools that ship with lovia: the default agent has them, so tools, checkpoints and resume
can be seen with no model configured."""

from __future__ import annotations

import ast
import asyncio
import datetime
import math
import operator
from collections.abc import Callable
from typing import Any

from lovia.tools import Tool, tool

__all__ = ["BUILTIN_TOOLS", "calculate", "current_time", "wait"]

MAX_WAIT_SECONDS = 120.0


@tool
def current_time() -> str:
    """The current local date and time, ISO 8601, with the UTC offset."""
    return datetime.datetime.now().astimezone().isoformat(timespec="seconds")


_OPERATORS: dict[type[ast.AST], Callable[..., Any]] = {
    ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod, ast.Pow: operator.pow,
    ast.USub: operator.neg, ast.UAdd: operator.pos,
}
_FUNCTIONS: dict[str, Callable[..., Any]] = {
    "sqrt": math.sqrt, "abs": abs, "round": round, "log": math.log, "sin": math.sin, "cos": math.cos,
}
_CONSTANTS = {"pi": math.pi, "e": math.e}

MAX_DIGITS = 4000
"""The most digits an integer in a calculation may have, its result or any step on the way."""
MAX_EXPRESSION_CHARS = 1000

_TOO_LARGE_ADVICE = (f"calculate works with integers of at most {MAX_DIGITS} digits: to reason about a number "
                     "that large, calculate its logarithm instead (log(9**999) is 999*log(9))")


class CalculationTooLarge(ValueError):
    """A step of the expression would make an integer too large to compute quickly."""


_SMALLEST_TOO_LARGE = 10**MAX_DIGITS


def _too_large(estimated_digits: float, what: str) -> CalculationTooLarge:
    size = f"about {estimated_digits:,.0f}" if estimated_digits < 1e15 else "more than 10^15"
    return CalculationTooLarge(f"{what} would have {size} digits; {_TOO_LARGE_ADVICE}")


def _refuse_before(estimated_digits: float, what: str) -> None:
    # CPython holds the GIL through one big-integer operation, so an enormous power would stall
    # every thread of the process, the event loop included: refuse it before computing it. The
    # estimate comes from floating-point logarithms, so it gets a digit of slack; the result's
    # own check below is exact, and a step within the slack is cheap.
    if estimated_digits > MAX_DIGITS + 1:
        raise _too_large(estimated_digits, what)


def _binary(op: ast.operator, left: float, right: float) -> float:
    """``left op right``, refusing integer powers and products too large to compute."""
    if isinstance(left, int) and isinstance(right, int):
        if isinstance(op, ast.Pow) and right > 0 and abs(left) > 1:
            # An exponent may itself have thousands of digits: too large for a float estimate.
            digits = right * math.log10(abs(left)) + 1 if right < 10**15 else math.inf
            _refuse_before(digits, "the power")
        elif isinstance(op, ast.Mult) and left and right:
            _refuse_before(math.log10(abs(left)) + math.log10(abs(right)) + 1, "the product")
    return _OPERATORS[type(op)](left, right)


def _call(name: str, args: list[float]) -> float:
    if name == "round" and len(args) == 2:
        ndigits = args[1]
        # round(x, -n) computes 10**n: a huge n is a huge power in disguise.
        if not isinstance(ndigits, int) or abs(ndigits) > MAX_DIGITS:
            raise ValueError(f"round's second argument must be a whole number from -{MAX_DIGITS} to {MAX_DIGITS}")
    return _FUNCTIONS[name](*args)


def _evaluate(node: ast.AST) -> float:
    """The value of ``node``; every integer on the way has at most MAX_DIGITS digits."""
    value = _evaluate_node(node)
    if isinstance(value, int) and abs(value) >= _SMALLEST_TOO_LARGE:
        raise _too_large(math.log10(abs(value)) + 1, "the result")
    return value


def _evaluate_node(node: ast.AST) -> float:
    if isinstance(node, ast.Expression):
        return _evaluate(node.body)
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) and not isinstance(node.value, bool):
        return node.value
    if isinstance(node, ast.Name) and node.id in _CONSTANTS:
        return _CONSTANTS[node.id]
    if isinstance(node, ast.BinOp) and type(node.op) in _OPERATORS:
        return _binary(node.op, _evaluate(node.left), _evaluate(node.right))
    if isinstance(node, ast.UnaryOp) and type(node.op) in _OPERATORS:
        return _OPERATORS[type(node.op)](_evaluate(node.operand))
    if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in _FUNCTIONS
            and not node.keywords):
        return _call(node.func.id, [_evaluate(arg) for arg in node.args])
    raise ValueError(f"unsupported expression: {ast.unparse(node)}")


@tool
def calculate(expression: str) -> str:
    """Evaluate an arithmetic expression exactly as written.

    Integers are exact up to 4000 digits; an expression whose result or any step would be
    larger is refused with an error before the work is done, so it cannot stall the app.

    Args:
        expression: numbers with + - * / // % ** (or ^) and parentheses; sqrt, abs, round, log, sin, cos, pi, e.
    """
    if len(expression) > MAX_EXPRESSION_CHARS:
        raise ValueError(f"the expression has {len(expression)} characters, more than {MAX_EXPRESSION_CHARS}; "
                         "split it into smaller calculations")
    try:
        tree = ast.parse(expression.replace("^", "**"), mode="eval")
        value = _evaluate(tree)
    except RecursionError:
        raise ValueError("the expression nests too deeply; split it into smaller calculations") from None
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
    return f"waited {seconds:g} second{'' if seconds == 1 else 's'}"


BUILTIN_TOOLS: list[Tool] = [current_time, calculate, wait]
