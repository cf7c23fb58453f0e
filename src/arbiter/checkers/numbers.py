"""What counts as a number in program output, and when two numbers are close enough.

Number grammar (one token or one stripped line, ASCII bytes)::

    [+-]? ( digits [ "." digits? ] | "." digits ) ( [eE] [+-]? digits )?

Decisions (the spec left them open; each makes a false pass impossible rather than likely):

- ``nan``, ``inf``, ``-inf``, ``infinity``: **not numbers**. They are compared as plain strings,
  so ``nan`` matches ``nan`` and nothing else. (Python's ``float()`` parses them; a checker built
  on ``float()`` would let ``inf`` match ``1e500``.)
- ``1e500`` (and any literal that overflows a double): matches the grammar but is **not finite**,
  so under a tolerance it is compared as a plain string: ``1e500`` matches only ``1e500``
  (against an expected plain integer the comparison is exact in decimal, below, so ``1e500``
  equals the 501-digit ``10**500``: no double is involved).
- ``0x10``, ``1_000``, ``١٢`` (non-ASCII digits), ``1,5``: not numbers (``float()`` would take
  ``1_000``; C++ and most judges would not), compared as strings.
- Two *plain integers* (no ``.`` and no exponent) are never compared as floats:
  ``50000000000000000`` vs ``50000000000000001`` differ even though they are the same double
  (rllm/TACO's ``np.isclose`` accepts them, reference finding B). They are compared as exact
  integers of any length: sign and leading zeros are normalised (``007`` == ``7``, ``-0`` == ``0``,
  as testlib and PIE's ``float()`` comparison also accept), without ``int()`` (no 4300-digit
  limit, linear time).
- ``tokens_float``: when the **expected** token is a plain integer, the answer must be a number
  of *exactly* that value, decided in decimal (:class:`decimal.Decimal`, never through a double):
  ``6``, ``06``, ``6.0``, ``6.``, ``+6.000``, ``6e0`` pass for ``6``; ``6.0000001`` and
  ``6.000000000000000000000000001`` (the same double as 6) fail. An integer answer has no
  precision to lose, so a tolerance there only lets near-misses through (an off-by-rounding
  ``5.9999999`` for a count); LiveCodeBench compares tokens by exact ``Decimal`` equality too.
  The tolerance applies only when the expected token has a decimal point or an exponent
  (``6.0``, ``6e0``: the problem prints a real value). An answer whose exponent is beyond
  ``Decimal``'s range (``1e-999999999999999999999``) is not a match. (PIE keeps its own rule,
  :func:`pie_lines_match`: the PIE card's ``float()`` comparison within 1e-3.)

Tolerance (testlib's ``doubleCompare``, the Codeforces convention): ``got`` matches ``want`` when
``|got - want| <= abs_tol`` **or** ``|got - want| <= rel_tol * |want|``; relative to the
*expected* value, so inflating the answer does not widen the window. A slack of 1e-15 absorbs
the binary rounding of decimal inputs (testlib adds the same).
"""

from __future__ import annotations

import decimal
import math
import re

_NUMBER = re.compile(rb"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
_PLAIN_INT = re.compile(rb"[+-]?[0-9]+")

#: Slack added to every tolerance to absorb decimal-to-binary rounding (testlib uses 1e-15).
SLACK = 1e-15


def parse_number(token: bytes) -> float | None:
    """The finite value of ``token`` if it matches the number grammar above, else ``None``.

    ``token`` is ASCII bytes without surrounding whitespace. Never raises.
    """
    if not _NUMBER.fullmatch(token):
        return None
    value = float(token)
    if math.isinf(value):
        return None
    return value


def is_plain_integer(token: bytes) -> bool:
    """True when ``token`` is an optionally signed run of ASCII digits (no ``.``, no exponent)."""
    return _PLAIN_INT.fullmatch(token) is not None


def _canonical_integer(token: bytes) -> tuple[bool, bytes]:
    """(negative, digits without leading zeros) of a plain integer token; ``-0`` is ``(False, b"0")``."""
    digits = token.lstrip(b"+-").lstrip(b"0") or b"0"
    return (token[:1] == b"-" and digits != b"0", digits)


def plain_integers_equal(got: bytes, want: bytes) -> bool:
    """Exact integer equality of two plain-integer tokens (see :func:`is_plain_integer`)."""
    return _canonical_integer(got) == _canonical_integer(want)


def integer_equals_exactly(got: bytes, want: bytes) -> bool:
    """Whether ``got`` is a number (grammar above) whose exact decimal value is the plain integer
    ``want`` (``6.0``, ``6e0``, ``+06`` for ``6``; never ``6.0000001``). No float conversion; an
    exponent beyond :mod:`decimal`'s range is not a match. Never raises."""
    if is_plain_integer(got):
        return plain_integers_equal(got, want)
    if not _NUMBER.fullmatch(got):
        return False
    try:
        return decimal.Decimal(got.decode("ascii")) == decimal.Decimal(want.decode("ascii"))
    except (decimal.DecimalException, ValueError):
        return False


def close(got: float, want: float, abs_tol: float, rel_tol: float) -> bool:
    """True when ``|got - want| <= abs_tol`` or ``|got - want| <= rel_tol * |want|`` (plus slack).

    Both values are finite floats (callers filter inf/nan out).
    """
    delta = abs(got - want)
    return delta <= abs_tol + SLACK or delta <= rel_tol * abs(want) + SLACK


def tokens_match_numeric(got: bytes, want: bytes, abs_tol: float, rel_tol: float) -> bool:
    """Whether two *different* tokens still match under the ``tokens_float`` rule.

    An expected plain integer matches only a number of exactly its value
    (:func:`integer_equals_exactly`). Otherwise both must be finite numbers (grammar above)
    within tolerance. Callers test byte equality first.
    """
    if is_plain_integer(want):
        return integer_equals_exactly(got, want)
    g = parse_number(got)
    if g is None:
        return False
    w = parse_number(want)
    if w is None:
        return False
    return close(g, w, abs_tol, rel_tol)


#: PIE's absolute tolerance for numeric lines (PIE card; pie-perf ``get_accuracy``: ``< 1e-3``).
PIE_ABS_TOL = 1e-3


def pie_lines_match(got: bytes, want: bytes) -> bool:
    """Whether two *different* stripped lines match under the PIE rule.

    pie-perf's ``get_accuracy`` parses the whole line with ``float()`` and accepts
    ``abs(a - b) < 1e-3``. Here: two plain integers must be the same integer (no precision loss
    above 2**53); otherwise both lines must be finite numbers in the grammar above with
    ``|a - b| < 1e-3``. A line holding several numbers (``"1.0 2.0"``) is not a number, exactly
    as in PIE, so it must match as a string.
    """
    if is_plain_integer(got) and is_plain_integer(want):
        return plain_integers_equal(got, want)
    g = parse_number(got)
    if g is None:
        return False
    w = parse_number(want)
    if w is None:
        return False
    return abs(g - w) < PIE_ABS_TOL
