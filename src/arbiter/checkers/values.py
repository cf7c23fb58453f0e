"""Comparison of function-call results (JSON-decoded values) with the expected return value.

Both sides are plain JSON data (no untrusted ``__eq__``); ``bool`` is not ``int`` unless
``strict_bool=False``; ints exact at any size; floats within tolerance; containers in order.
The rules: ``docs/checkers.md``.
"""

from __future__ import annotations

import json
import math
from typing import Any

from arbiter.checkers.bigint import int_to_decimal
from arbiter.checkers.diff import plural, show_value
from arbiter.checkers.numbers import close
from arbiter.checkers.result import ACCEPTED, CheckResult


def _json_key(key: Any) -> Any:
    """The string ``json.dumps`` writes for a dict key (keys that JSON rejects are kept as is)."""
    if isinstance(key, str):
        return key
    if key is True:
        return "true"
    if key is False:
        return "false"
    if key is None:
        return "null"
    if isinstance(key, int):
        try:
            return int_to_decimal(key)  # no 4300-digit limit
        except ValueError:
            return key
    if isinstance(key, float):
        return json.dumps(key)
    return key


def _path(parent: str, step: Any) -> str:
    return f"{parent}[{step!r}]"


def _numbers_match(actual: int | float, expected: int | float, abs_tol: float, rel_tol: float) -> bool:
    """Integers are exact: an expected integer needs a numerically equal answer (``3`` or ``3.0``,
    never ``3.0000001``); the tolerance only applies when the expected value is a float. (A JSON
    value carries its type, unlike a text token: docs/checkers.md.)"""
    if isinstance(expected, int):
        if isinstance(actual, int):
            return actual == expected
        return math.isfinite(actual) and float(actual).is_integer() and int(actual) == expected
    try:
        a = float(actual)
        e = float(expected)
    except OverflowError:  # an int beyond the double range vs a float
        return False
    if math.isnan(a) or math.isnan(e):
        return math.isnan(a) and math.isnan(e)
    if math.isinf(a) or math.isinf(e):
        return a == e
    return close(a, e, abs_tol, rel_tol)


def _fast_equal(actual: Any, expected: Any) -> bool:
    """True when both have the same canonical JSON text, which implies a match under every rule
    above (``true`` vs ``1`` and ``1`` vs ``1.0`` print differently). Runs in C."""
    try:
        return json.dumps(actual, sort_keys=True) == json.dumps(expected, sort_keys=True)
    except (TypeError, ValueError, RecursionError):
        return False


def compare_values(actual: Any, expected: Any, abs_tol: float = 1e-6, rel_tol: float = 1e-6, *,
                   strict_bool: bool = True) -> CheckResult:
    """Compare a function's JSON-decoded return value with one expected value.

    ``abs_tol`` / ``rel_tol`` are unitless tolerances for floats; ``strict_bool`` whether a
    ``bool`` equals only a ``bool`` (see the module rules; a judge passes its
    :class:`~arbiter.checkers.spec.CheckerSpec`'s fields). The diff
    names the first difference in depth-first order as a path: ``$`` is the whole value, then
    ``[3]`` for list items and ``['key']`` for dict values, e.g.
    ``at $[2]: expected 5 (int), got 6 (int)``. Never raises; iterative, so deep nesting is fine
    (a container too deep for ``repr`` is shown to a bounded depth in the diff).
    """
    if _fast_equal(actual, expected):
        return ACCEPTED
    stack: list[tuple[str, Any, Any]] = [("$", actual, expected)]
    while stack:
        path, a, e = stack.pop()
        if isinstance(a, bool) or isinstance(e, bool):
            if isinstance(a, bool) and isinstance(e, bool):
                if a == e:
                    continue
            elif not strict_bool and isinstance(a, (int, float)) and isinstance(e, (int, float)):
                if _numbers_match(int(a) if isinstance(a, bool) else a, int(e) if isinstance(e, bool) else e,
                                  abs_tol, rel_tol):
                    continue
            return CheckResult(False, f"at {path}: expected {show_value(e)}, got {show_value(a)}")
        if a is None or e is None:
            if a is None and e is None:
                continue
            return CheckResult(False, f"at {path}: expected {show_value(e)}, got {show_value(a)}")
        if isinstance(a, (int, float)) and isinstance(e, (int, float)):
            if _numbers_match(a, e, abs_tol, rel_tol):
                continue
            return CheckResult(False, f"at {path}: expected {show_value(e)}, got {show_value(a)}")
        if isinstance(a, str) and isinstance(e, str):
            if a == e:
                continue
            return CheckResult(False, f"at {path}: expected {show_value(e)}, got {show_value(a)}")
        if isinstance(a, (list, tuple)) and isinstance(e, (list, tuple)):
            if len(a) != len(e):
                n = min(len(a), len(e))
                if len(a) < len(e):
                    return CheckResult(
                        False,
                        f"at {path}: missing items: expected {plural(len(e), 'item')}, got {len(a)}; "
                        f"first missing {path}[{n}]: expected {show_value(e[n])}",
                    )
                return CheckResult(
                    False,
                    f"at {path}: extra output: expected {plural(len(e), 'item')}, got {len(a)}; "
                    f"first extra {path}[{n}]: got {show_value(a[n])}",
                )
            for i in range(len(e) - 1, -1, -1):
                stack.append((f"{path}[{i}]", a[i], e[i]))
            continue
        if isinstance(a, dict) and isinstance(e, dict):
            a_by_key = {_json_key(k): v for k, v in a.items()}
            e_by_key = {_json_key(k): v for k, v in e.items()}
            if a_by_key.keys() != e_by_key.keys():
                missing = [k for k in e_by_key if k not in a_by_key]
                extra = [k for k in a_by_key if k not in e_by_key]
                parts = []
                if missing:
                    parts.append(f"missing keys {show_value(missing)}")
                if extra:
                    parts.append(f"unexpected keys {show_value(extra)}")
                return CheckResult(False, f"at {path}: dict keys differ: " + "; ".join(parts))
            for k in reversed(list(e_by_key)):
                stack.append((_path(path, k), a_by_key[k], e_by_key[k]))
            continue
        return CheckResult(False, f"at {path}: expected {show_value(e)}, got {show_value(a)}")
    return ACCEPTED
