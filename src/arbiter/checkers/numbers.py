"""What counts as a number in program output, and when two numbers are close enough.

A strict ASCII number grammar (``nan``, ``inf``, ``0x10``, ``1_000`` are strings); plain integers
compare exactly in decimal, never as doubles; the tolerance is testlib's, relative to the expected
value. The decisions and why: ``docs/checkers.md``.
"""

from __future__ import annotations

import decimal
import math
import re

_NUMBER = re.compile(rb"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
_PLAIN_INT = re.compile(rb"[+-]?[0-9]+")
_WHOLE = re.compile(rb"[0-9]+")  # a number's integer part
_HEX_LIKE = re.compile(rb"[0-9]+[eE][0-9]+")  # a number only in shape: no float printer writes it

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


#: Every integer up to this size is a double exactly (2**53); beyond it no tolerance applies to an integer.
_EXACT_IN_A_DOUBLE = 2**53


def float_near_integer(got: bytes, want: bytes, abs_tol: float, rel_tol: float) -> bool:
    """Whether ``got``, a number written as a float (with a ``.`` or an exponent), is within tolerance
    of the plain integer ``want`` and rounds to it (``|got - want| < 0.5``): ``239.99999999999997``
    for ``240``, never ``1000001.0`` for ``1000000`` (another integer). ``want`` beyond 2**53 takes
    no tolerance (a double there is a lost integer: ``n * (n - 1) / 2``). Never raises."""
    if is_plain_integer(got) or len(want.lstrip(b"+-")) > 16:
        return False
    g = parse_number(got)
    w = int(want)
    if g is None or abs(w) > _EXACT_IN_A_DOUBLE:
        return False
    return abs(g - w) < 0.5 and close(g, float(w), abs_tol, rel_tol)


def close(got: float, want: float, abs_tol: float, rel_tol: float) -> bool:
    """True when ``|got - want| <= abs_tol`` or ``|got - want| <= rel_tol * |want|`` (plus slack).

    Both values are finite floats (callers filter inf/nan out).
    """
    delta = abs(got - want)
    return delta <= abs_tol + SLACK or delta <= rel_tol * abs(want) + SLACK


def written_as_text(token: bytes) -> bool:
    """Whether a number token is written in a form only text has: a leading zero in its integer
    part (``0011``, ``000``, ``-05``, ``00.000000``), ``-0``, a ``+`` sign on an integer (``+5``),
    or digits, ``e``, digits (``1e5``, ``49e2``: a hexadecimal string; C, C++, Python, Java,
    JavaScript and Go write an exponent with a sign or a point, ``1e+05``, ``1.0E5``). Such an
    expected token is a string (a zero-padded ID, a binary or hex string, a clock's field), so only
    the same bytes match it."""
    digits = token[1:] if token[:1] in (b"+", b"-") else token
    whole = _WHOLE.match(digits)
    padded = whole is not None and len(whole.group()) > 1 and digits[:1] == b"0"
    return (padded or token == b"-0" or (token[:1] == b"+" and is_plain_integer(token))
            or _HEX_LIKE.fullmatch(token) is not None)


def tokens_match_numeric(got: bytes, want: bytes, abs_tol: float, rel_tol: float) -> bool:
    """Whether two *different* tokens still match under the ``tokens_float`` rule.

    An expected token written as text (:func:`written_as_text`) matches nothing else. An expected
    plain integer matches a number of exactly its value (:func:`integer_equals_exactly`), or one
    written as a float within tolerance that rounds to it (:func:`float_near_integer`). Otherwise
    both must be finite numbers (grammar above) within tolerance. Callers test byte equality first.
    """
    if written_as_text(want):
        return False
    if is_plain_integer(want):
        return integer_equals_exactly(got, want) or float_near_integer(got, want, abs_tol, rel_tol)
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
