"""The small language of the book's claims (pul.claims) and the exercises' checks (pul.exercises).

Both compare measured numbers: `requests_per_sec >= 0.7 * in_flight_limit` in an exercise,
`labNN.VARIANT.measured_over_predicted <= 1.10` in a claim. The text is read with Python's own
parser and evaluated here, never by eval(), and only these nodes are accepted: numbers (and
quoted strings where the caller allows them), names, name.attribute, + - * /, unary minus,
min/max/abs, and the comparisons the caller allows.

What a name and an attribute stand for is the caller's (a lab's committed run for a claim, the
variant's measured numbers for an exercise), and so are the errors it raises for a name with no
value. Text outside the language is an ExpressionError; each caller says where the text came from.
"""

from __future__ import annotations

import ast
import operator
from typing import Any, Callable

SYMBOLS = {ast.Eq: "==", ast.NotEq: "!=", ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">="}
OPERATORS = {"==": operator.eq, "!=": operator.ne, "<": operator.lt, "<=": operator.le,
             ">": operator.gt, ">=": operator.ge}
ORDERINGS = (ast.Lt, ast.LtE, ast.Gt, ast.GtE)
BINARY = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv}
FUNCTIONS = {"min": min, "max": max, "abs": abs}
_ARITHMETIC = (ast.Constant, ast.Name, ast.Attribute, ast.BinOp, ast.UnaryOp, ast.USub, ast.Call, ast.Load,
               *BINARY)


class ExpressionError(ValueError):
    """Text outside the language: unreadable, or using what the language does not have."""


def read(text: str) -> ast.expr:
    try:
        return ast.parse(text, mode="eval").body
    except SyntaxError as error:
        raise ExpressionError(f"cannot read {text!r}: {error.msg}") from None


def check(node: ast.AST, text: str, *, who: str, comparisons: tuple = tuple(SYMBOLS),
          strings: bool = False) -> None:
    """That NODE (from TEXT) uses only the language's nodes and the COMPARISONS given; WHO names
    the caller's kind of text in the message ("claims", "checks")."""
    allowed = (*_ARITHMETIC, ast.Compare, *comparisons)
    for child in ast.walk(node):
        if not isinstance(child, allowed):
            raise ExpressionError(f"{text!r} uses {type(child).__name__}, which {who} do not allow")
        if isinstance(child, ast.Call) and not (isinstance(child.func, ast.Name) and child.func.id in FUNCTIONS):
            raise ExpressionError(f"{text!r} may only call {', '.join(FUNCTIONS)}")
        if isinstance(child, ast.Call) and (child.keywords or not child.args):
            raise ExpressionError(f"{text!r} calls {child.func.id} with no value or by keyword")
        if isinstance(child, ast.Constant) and not _allowed_constant(child.value, strings):
            raise ExpressionError(f"{text!r} may only use numbers{' and strings' if strings else ''}")


def _allowed_constant(value: Any, strings: bool) -> bool:
    if isinstance(value, bool):
        return False
    return isinstance(value, (int, float)) or (strings and isinstance(value, str))


def evaluate(node: ast.expr, name: Callable[[str], Any], attribute: Callable[[Any, str, ast.Attribute], Any]) -> Any:
    """NODE's value: NAME(identifier) gives a name's, ATTRIBUTE(owner, attr, node) an attribute's
    (each raising the caller's error for one with no value)."""
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Name):
        return name(node.id)
    if isinstance(node, ast.Attribute):
        return attribute(evaluate(node.value, name, attribute), node.attr, node)
    if isinstance(node, ast.BinOp):
        left, right = evaluate(node.left, name, attribute), evaluate(node.right, name, attribute)
        try:
            return BINARY[type(node.op)](left, right)
        except (TypeError, ZeroDivisionError) as error:
            raise ExpressionError(f"{ast.unparse(node)!r}: {error} ({left!r}, {right!r})") from None
    if isinstance(node, ast.UnaryOp):
        value = evaluate(node.operand, name, attribute)
        if not isinstance(value, (int, float)):
            raise ExpressionError(f"{ast.unparse(node)!r} negates {value!r}, not a number")
        return -value
    if isinstance(node, ast.Call):
        args = [evaluate(arg, name, attribute) for arg in node.args]
        try:
            return FUNCTIONS[node.func.id](*args)
        except (TypeError, ValueError) as error:
            raise ExpressionError(f"{ast.unparse(node)!r}: {error} ({', '.join(map(repr, args))})") from None
    raise ExpressionError(f"cannot evaluate {ast.unparse(node)!r}")


def compare(symbol: str, left: Any, right: Any, where: ast.AST | str) -> bool:
    """LEFT SYMBOL RIGHT; WHERE (a node or text) names the comparison in an error."""
    try:
        return bool(OPERATORS[symbol](left, right))
    except TypeError:
        shown = ast.unparse(where) if isinstance(where, ast.AST) else where
        raise ExpressionError(f"{shown!r} compares {left!r} with {right!r}") from None
