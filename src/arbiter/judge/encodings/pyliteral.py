"""A safe evaluator for the Python-literal expressions found in test data (never ``eval``).

``ast.literal_eval`` is too narrow for LeetCode-style test strings (``-inf``, ``[0] * 5``) and
``eval`` is out of the question for untrusted data, so this walks the ``ast`` itself and allows
only:

- constants: ``str``, ``int``, ``float``, ``bool``, ``None`` (not bytes, not complex);
- lists and tuples (both become lists: values are JSON-compatible), dicts with literal keys;
- unary ``+``/``-`` on numbers;
- the names ``inf`` (LeetCodeDataset's preamble defines ``inf = float('inf')``) and
  ``null``/``true``/``false`` (LeetCode's own notation, e.g. ``root = [1,null,2]``);
- ``+``, ``-``, ``*`` on numbers, ``**`` with an integer exponent up to 4096 bits of result,
  list/str concatenation with ``+`` and repetition with ``*`` by an integer, with results capped
  at 10,000,000 items/characters.

Anything else (calls, comprehensions, attribute access, other names, ``sets``) raises
:class:`UnsafeLiteral` naming the construct.
"""

from __future__ import annotations

import ast
import copy
import math
from typing import Any

from arbiter.judge.jsonvalues import IntegerTooLong, rewrite_long_int_literals

#: Largest list/string a repetition or concatenation may build, in items/characters.
MAX_ITEMS = 10_000_000
#: Largest integer a ``**`` may build, in bits.
MAX_POW_BITS = 4096

_NAMES = {"inf": math.inf, "null": None, "true": True, "false": False, "None": None, "True": True, "False": False}


class UnsafeLiteral(ValueError):
    """The text is not a literal this evaluator accepts (the message names the construct)."""


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _size_ok(value: Any) -> Any:
    if isinstance(value, (list, str)) and len(value) > MAX_ITEMS:
        raise UnsafeLiteral(f"result longer than {MAX_ITEMS} items")
    return value


def evaluate(node: ast.AST) -> Any:
    """Evaluate one expression node under the rules above (recursion depth is bounded by
    Python's parser, which refuses deeper nesting)."""
    if isinstance(node, ast.Expression):
        return evaluate(node.body)
    if isinstance(node, ast.Constant):
        if isinstance(node.value, (str, int, float, bool)) or node.value is None:
            if isinstance(node.value, complex):  # pragma: no cover - complex is not int/float
                raise UnsafeLiteral("complex number")
            return node.value
        raise UnsafeLiteral(f"constant of type {type(node.value).__name__}")
    if isinstance(node, (ast.List, ast.Tuple)):
        return [evaluate(e) for e in node.elts]
    if isinstance(node, ast.Dict):
        out = {}
        for key, value in zip(node.keys, node.values):
            if key is None:
                raise UnsafeLiteral("'**' in a dict")
            k = evaluate(key)
            if isinstance(k, (list, dict)):
                raise UnsafeLiteral("unhashable dict key")
            out[k] = evaluate(value)
        return out
    if isinstance(node, ast.Name):
        if node.id in _NAMES:
            return _NAMES[node.id]
        raise UnsafeLiteral(f"name {node.id!r}")
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        value = evaluate(node.operand)
        if not _number(value):
            raise UnsafeLiteral("unary sign on a non-number")
        return -value if isinstance(node.op, ast.USub) else +value
    if isinstance(node, ast.BinOp):
        return _binop(node)
    raise UnsafeLiteral(f"{type(node).__name__} expression")


def _binop(node: ast.BinOp) -> Any:
    left, right = evaluate(node.left), evaluate(node.right)
    op = node.op
    if _number(left) and _number(right):
        if isinstance(op, ast.Add):
            return left + right
        if isinstance(op, ast.Sub):
            return left - right
        if isinstance(op, ast.Mult):
            return left * right
        if isinstance(op, ast.Pow) and isinstance(right, int) and isinstance(left, int) and right >= 0:
            if abs(left) > 1 and right * max(abs(left), 2).bit_length() > MAX_POW_BITS:
                raise UnsafeLiteral(f"power larger than {MAX_POW_BITS} bits")
            return left**right
        raise UnsafeLiteral(f"operator {type(op).__name__} on numbers")
    if isinstance(op, ast.Add) and type(left) is type(right) and isinstance(left, (list, str)):
        if len(left) + len(right) > MAX_ITEMS:
            raise UnsafeLiteral(f"result longer than {MAX_ITEMS} items")
        return left + right
    if isinstance(op, ast.Mult):
        seq, times = (left, right) if isinstance(left, (list, str)) else (right, left)
        if isinstance(seq, (list, str)) and isinstance(times, int) and not isinstance(times, bool):
            if times > 0 and len(seq) * times > MAX_ITEMS:
                raise UnsafeLiteral(f"result longer than {MAX_ITEMS} items")
            if isinstance(seq, list) and any(isinstance(x, (list, dict)) for x in seq):
                # [[0]] * 3 would alias one inner list three times; copy to keep values plain.
                return [copy.deepcopy(x) for _ in range(max(times, 0)) for x in seq]
            return _size_ok(seq * times)
    raise UnsafeLiteral(f"operator {type(op).__name__} on {type(left).__name__} and {type(right).__name__}")


def _long_ints_as_hex(text: str) -> str:
    """``text`` with decimal integer literals over the interpreter's 4300-digit limit written in
    hexadecimal (``ast.parse`` reads those at any length); see
    :func:`arbiter.judge.jsonvalues.rewrite_long_int_literals`."""
    try:
        return rewrite_long_int_literals(text)
    except IntegerTooLong as exc:
        raise UnsafeLiteral(str(exc)) from None


def parse_literal(text: str) -> Any:
    """Evaluate ``text`` as one safe literal expression; raises :class:`UnsafeLiteral`.

    Integer literals of any length up to 1,000,000 digits are read exactly (no 4300-digit
    limit; the ``**`` cap above still applies to computed powers)."""
    try:
        tree = ast.parse(_long_ints_as_hex(text.strip()), mode="eval")
    except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
        raise UnsafeLiteral(f"not a Python expression ({exc.__class__.__name__}: {exc})") from None
    return evaluate(tree)


def parse_call_arguments(text: str) -> tuple[list[Any], dict[str, Any]]:
    """Parse ``"n = 7, queries = [[0, 5]]"`` as the arguments of a call: ``ast.parse("f(" + text
    + ")")``, each argument evaluated with :func:`evaluate`. Returns (positional, keyword)
    arguments; ``*args`` / ``**kwargs`` are refused; integer literals of any length up to
    1,000,000 digits are read exactly. Raises :class:`UnsafeLiteral`."""
    try:
        tree = ast.parse("f(" + _long_ints_as_hex(text) + ")", mode="eval")
    except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
        raise UnsafeLiteral(f"not a keyword-argument list ({exc.__class__.__name__}: {exc})") from None
    call = tree.body
    if not isinstance(call, ast.Call) or not isinstance(call.func, ast.Name) or call.func.id != "f":
        raise UnsafeLiteral("not a plain argument list")
    args = []
    for arg in call.args:
        if isinstance(arg, ast.Starred):
            raise UnsafeLiteral("'*' argument")
        args.append(evaluate(arg))
    kwargs: dict[str, Any] = {}
    for keyword in call.keywords:
        if keyword.arg is None:
            raise UnsafeLiteral("'**' argument")
        kwargs[keyword.arg] = evaluate(keyword.value)
    return args, kwargs
