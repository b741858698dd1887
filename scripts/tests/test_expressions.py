"""The language claims and exercise checks share (pul.expressions): what it reads, what it refuses,
and how it evaluates with the caller's names."""

import ast
from types import SimpleNamespace

import pytest

from pul import expressions
from pul.expressions import ExpressionError


def value(text: str, names: dict):
    tree = expressions.read(text)
    expressions.check(tree, text, who="tests", strings=True)
    return expressions.evaluate(tree, names.__getitem__, lambda owner, attr, _node: getattr(owner, attr))


def test_arithmetic_names_attributes_and_functions_evaluate():
    names = {"rate": 200.0, "other": SimpleNamespace(rate=50.0)}
    assert value("2 * max(other.rate, 1) - -rate / 4", names) == 150.0


@pytest.mark.parametrize("text, says", [
    ("rate >", "cannot read"),
    ("rate[0] > 1", "uses Subscript, which tests do not allow"),
    ("__import__('os').system('x') > 1", "may only call"),
    ("max(rate, key=abs) > 1", "by keyword"),
    ("min() > 1", "with no value"),
    ("rate > True", "may only use numbers and strings"),
    ("(lambda: 1)() > 0", "may only call"),
    ("[rate][0] > 1", "Subscript|List"),
])
def test_what_the_language_does_not_have_is_refused_before_evaluation(text, says):
    with pytest.raises(ExpressionError, match=says):
        tree = expressions.read(text)
        expressions.check(tree, text, who="tests", strings=True)


def test_strings_are_refused_unless_the_caller_allows_them():
    tree = expressions.read('bound == "threads"')
    expressions.check(tree, "t", who="claims", strings=True)
    with pytest.raises(ExpressionError, match="may only use numbers"):
        expressions.check(tree, "t", who="checks")


def test_a_comparison_the_caller_does_not_allow_is_refused():
    tree = expressions.read("rate == 1")
    with pytest.raises(ExpressionError, match="uses Eq, which checks do not allow"):
        expressions.check(tree, "rate == 1", who="checks", comparisons=expressions.ORDERINGS)


def test_the_callers_error_for_a_missing_name_comes_through_unchanged():
    class Missing(Exception):
        pass

    def name(identifier):
        raise Missing(identifier)

    with pytest.raises(Missing, match="rate"):
        expressions.evaluate(expressions.read("rate + 1"), name, lambda *_: None)


@pytest.mark.parametrize("text, names, says", [
    ("rate / zero", {"rate": 1.0, "zero": 0}, "division by zero"),
    ("rate + bound", {"rate": 1.0, "bound": "threads"}, "unsupported operand"),
    ("-bound", {"bound": "threads"}, "negates 'threads', not a number"),
    ("min(rate)", {"rate": 1.0}, "not iterable"),
    ("abs(rate, rate)", {"rate": 1.0}, "abs"),
    ("max(rate, bound)", {"rate": 1.0, "bound": "threads"}, "not supported"),
])
def test_arithmetic_that_cannot_be_done_is_an_expression_error(text, names, says):
    with pytest.raises(ExpressionError, match=says):
        value(text, names)


def test_comparing_a_string_with_a_number_names_both():
    assert expressions.compare(">=", 2, 1, "a >= b")
    with pytest.raises(ExpressionError, match="'bound > 1' compares 'threads' with 1"):
        expressions.compare(">", "threads", 1, ast.parse("bound > 1", mode="eval").body)
