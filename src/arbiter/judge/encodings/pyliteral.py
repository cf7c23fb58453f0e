"""A safe evaluator for the Python-literal expressions found in test data (never ``eval``).

Allows constants, lists/tuples/dicts, unary and binary arithmetic, ``inf``/``null``/``true``/
``false``, and list/str ``+`` and ``*`` within a budget per literal; anything else raises
:class:`UnsafeLiteral`. The allowed constructs and why: ``docs/encodings.md``, "Python literals".
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


class _Budget:
    """The items and characters the operations of one literal may still build."""

    def __init__(self) -> None:
        self.left = MAX_ITEMS

    def spend(self, n: int) -> None:
        self.left -= n
        if self.left < 0:
            raise UnsafeLiteral(f"the literal's operations build more than {MAX_ITEMS} items")


def _items(value: Any, limit: int) -> int:
    """Items and characters in ``value``, nested ones included (counting stops past ``limit``)."""
    total, stack = 0, [value]
    while stack and total <= limit:
        v = stack.pop()
        if isinstance(v, str):
            total += len(v)
        elif isinstance(v, list):
            total += len(v)
            stack.extend(x for x in v if isinstance(x, (list, dict, str)))
        elif isinstance(v, dict):
            total += len(v)
            stack.extend(x for x in v.values() if isinstance(x, (list, dict, str)))
    return total


def evaluate(node: ast.AST, budget: _Budget | None = None) -> Any:
    """Evaluate one expression node (rules: docs/encodings.md; recursion depth is bounded by
    Python's parser, which refuses deeper nesting). ``budget``: shared by the nodes of one
    literal (a fresh one when omitted)."""
    if budget is None:
        budget = _Budget()
    if isinstance(node, ast.Expression):
        return evaluate(node.body, budget)
    if isinstance(node, ast.Constant):
        if isinstance(node.value, (str, int, float, bool)) or node.value is None:
            if isinstance(node.value, complex):  # pragma: no cover - complex is not int/float
                raise UnsafeLiteral("complex number")
            return node.value
        raise UnsafeLiteral(f"constant of type {type(node.value).__name__}")
    if isinstance(node, (ast.List, ast.Tuple)):
        return [evaluate(e, budget) for e in node.elts]
    if isinstance(node, ast.Dict):
        out = {}
        for key, value in zip(node.keys, node.values):
            if key is None:
                raise UnsafeLiteral("'**' in a dict")
            k = evaluate(key, budget)
            if isinstance(k, (list, dict)):
                raise UnsafeLiteral("unhashable dict key")
            out[k] = evaluate(value, budget)
        return out
    if isinstance(node, ast.Name):
        if node.id in _NAMES:
            return _NAMES[node.id]
        raise UnsafeLiteral(f"name {node.id!r}")
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        value = evaluate(node.operand, budget)
        if not _number(value):
            raise UnsafeLiteral("unary sign on a non-number")
        return -value if isinstance(node.op, ast.USub) else +value
    if isinstance(node, ast.BinOp):
        return _binop(node, budget)
    raise UnsafeLiteral(f"{type(node).__name__} expression")


def _binop(node: ast.BinOp, budget: _Budget) -> Any:
    """A left-deep chain ``a + b - c * ...`` (as ``ast`` nests it), iteratively: no recursion
    per term, and a run of list/str ``+`` is built once (linear, not a copy per term)."""
    chain: list[tuple[ast.operator, ast.expr]] = []
    while isinstance(node, ast.BinOp):
        chain.append((node.op, node.right))
        node = node.left
    acc = evaluate(node, budget)
    pending: list[Any] = []  # list/str operands still to be appended to acc
    size = 0
    for op, right_node in reversed(chain):
        right = evaluate(right_node, budget)
        if isinstance(op, ast.Add) and isinstance(acc, (list, str)) and type(right) is type(acc):
            size = (size or len(acc)) + len(right)
            if size > MAX_ITEMS:
                raise UnsafeLiteral(f"result longer than {MAX_ITEMS} items")
            pending.append(right)
            continue
        acc, pending, size = _concat(acc, pending, budget), [], 0
        acc = _apply(op, acc, right, budget)
    return _concat(acc, pending, budget)


def _concat(acc: Any, pending: list[Any], budget: _Budget) -> Any:
    if not pending:
        return acc
    if isinstance(acc, str):
        out: Any = acc + "".join(pending)
    else:
        out = list(acc)
        for part in pending:
            out.extend(part)
    budget.spend(len(out))
    return out


def _apply(op: ast.operator, left: Any, right: Any, budget: _Budget) -> Any:
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
        budget.spend(len(left) + len(right))
        return left + right
    if isinstance(op, ast.Mult):
        seq, times = (left, right) if isinstance(left, (list, str)) else (right, left)
        if isinstance(seq, (list, str)) and isinstance(times, int) and not isinstance(times, bool):
            if times > 0 and len(seq) * times > MAX_ITEMS:
                raise UnsafeLiteral(f"result longer than {MAX_ITEMS} items")
            times = max(times, 0)
            if isinstance(seq, list) and any(isinstance(x, (list, dict)) for x in seq):
                # [[0]] * 3 would alias one inner list three times; copy to keep values plain.
                if times:
                    budget.spend(len(seq) * times + times * _items(
                        [x for x in seq if isinstance(x, (list, dict))], budget.left // times + 1))
                return [copy.deepcopy(x) for _ in range(times) for x in seq]
            budget.spend(len(seq) * times)
            return seq * times
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
    return evaluate(tree, _Budget())


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
    budget = _Budget()
    args = []
    for arg in call.args:
        if isinstance(arg, ast.Starred):
            raise UnsafeLiteral("'*' argument")
        args.append(evaluate(arg, budget))
    kwargs: dict[str, Any] = {}
    for keyword in call.keywords:
        if keyword.arg is None:
            raise UnsafeLiteral("'**' argument")
        kwargs[keyword.arg] = evaluate(keyword.value, budget)
    return args, kwargs
