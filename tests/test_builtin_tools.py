"""The built-in tools; above all, calculate refuses work that would stall the app.

Expressions that the unbounded calculator would compute for minutes are run in a child
process: a regression fails on the child's generous timeout instead of hanging the suite.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

from lovia.builtin_tools import MAX_DIGITS, calculate

CHILD_TIMEOUT = 120  # seconds; the bounded calculator answers all of these in milliseconds

ISSUE_EXPRESSION = "((9^999)^999)^999"

REFUSED = {
    ISSUE_EXPRESSION: "the power would have about 952,336 digits",
    "10**4000": "the result would have about 4,001 digits",
    "10**4000 - 1": "the result would have about 4,001 digits",  # a step on the way is too large
    "9^999^999": "the power would have more than 10^15 digits",  # the exponent alone has 2997 digits
    "9**999*9**999*9**999*9**999*9**999": "the product would have about 4,767 digits",
    "(10**3999)*(10**3999)": "the product would have about 7,999 digits",
    "10**3999 + 9*10**3999": "the result would have about 4,001 digits",
    "round(5, -10**100)": "round's second argument must be a whole number from -4000 to 4000",
    "round(5, -5000)": "round's second argument must be a whole number from -4000 to 4000",
    "1" + "+1" * 600: "the expression has 1201 characters, more than 1000",
    "-" * 990 + "1": "the expression nests too deeply",
}


def run_in_child(code: str) -> str:
    child = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                           timeout=CHILD_TIMEOUT)
    assert child.returncode == 0, child.stderr
    return child.stdout


def test_the_expression_from_the_issue_is_an_error_result_of_a_real_run():
    code = f"""
        import asyncio, json
        from lovia import Agent, BUILTIN_TOOLS, Runner, ToolResult
        from lovia.models import ScriptedModel, ScriptedTurn, call

        model = ScriptedModel([ScriptedTurn(tool_calls=[call("calculate", {{"expression": {ISSUE_EXPRESSION!r}}})]),
                               "too big"])
        result = asyncio.run(Runner.run(Agent(name="a", model=model, tools=BUILTIN_TOOLS), "compute it"))
        [tool_result] = [e for e in result.new_entries if isinstance(e, ToolResult)]
        print(json.dumps({{"is_error": tool_result.is_error, "output": tool_result.output,
                          "final": result.final_output}}))
    """
    outcome = json.loads(run_in_child(code))
    assert outcome["is_error"] is True and outcome["final"] == "too big"
    assert outcome["output"].startswith("CalculationTooLarge: the power would have about 952,336 digits; "
                                        f"calculate works with integers of at most {MAX_DIGITS} digits")
    assert "logarithm" in outcome["output"]  # says what to do instead


def test_every_kind_of_growth_is_refused_before_the_work():
    code = f"""
        import json
        from lovia.builtin_tools import calculate

        answers = {{}}
        for expression in {list(REFUSED)!r}:
            try:
                answers[expression] = "no error: " + calculate.function(expression)[:80]
            except ValueError as exc:
                answers[expression] = str(exc)
        print(json.dumps(answers))
    """
    answers = json.loads(run_in_child(code))
    for expression, message in REFUSED.items():
        assert answers[expression].startswith(message), (expression, answers[expression])


@pytest.mark.parametrize("expression, answer", [
    ("6*7", "42"),
    ("2^10", "1024"),
    ("10**3999 // 10**3998", "10"),
    ("(-1)**(10**3000 + 1)", "-1"),  # a huge exponent of a base that cannot grow
    ("1**(10**3000)", "1"),
    ("2**-5000", "0"),
    ("round(2.567, 2)", "2.57"),
    ("round(123456, -3)", "123000"),
    ("round(log(10**3999, 10))", "3999"),
])
def test_large_but_bounded_calculations_are_exact(expression, answer):
    assert calculate.function(expression) == f"{expression} = {answer}"


def test_the_largest_allowed_integer_is_printed_whole():
    expression = "9*10**3999 + (10**3999 - 1)"
    assert calculate.function(expression) == f"{expression} = " + "9" * MAX_DIGITS


@pytest.mark.parametrize(("seconds", "said"), [(1, "waited 1 second"), (0, "waited 0 seconds"),
                                               (0.5, "waited 0.5 seconds")])
async def test_wait_says_how_long_in_plain_words(seconds, said):
    from lovia.builtin_tools import wait

    assert await wait.function(seconds) == said
