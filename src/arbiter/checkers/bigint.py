"""Integers of any length as decimal text, without lifting CPython's int/str digit limit.

CPython (3.11+, CVE-2020-10735) refuses ``int(text)`` and ``str(value)`` beyond
``sys.get_int_max_str_digits()`` digits (4300 by default) with ``ValueError: Exceeds the limit
(4300 digits) for integer string conversion``. The sandbox lifts that limit for programs
(DESIGN.md standing rule), so a program may print or return 2**20000, and test data may hold
such numbers. The judge process must read and show them too, but must **not** lift the limit
globally (``sys.set_int_max_str_digits`` is process-wide and not thread-safe: the judge runs
submissions in threads). These helpers convert in chunks below the limit instead, with a cap of
:data:`MAX_INT_DIGITS` digits so hostile data cannot make a conversion run for minutes.

Pure functions, no I/O.
"""

from __future__ import annotations

import math
import sys

#: Largest integer, in decimal digits, that :func:`int_from_decimal` converts (about 0.5 s).
MAX_INT_DIGITS = 1_000_000
#: Digits converted by one built-in ``int()`` / ``str()`` call; always below the interpreter's limit.
_CHUNK = 4000


class IntegerTooLong(ValueError):
    """A decimal integer with more than :data:`MAX_INT_DIGITS` digits (the message gives the count)."""


def _chunk() -> int:
    """Digits one built-in conversion may handle: the interpreter's limit (at least 640 when set)
    or :data:`_CHUNK`, whichever is smaller."""
    limit = sys.get_int_max_str_digits() if hasattr(sys, "get_int_max_str_digits") else 0
    return min(_CHUNK, limit) if limit else _CHUNK


def int_from_decimal(text: str | bytes) -> int:
    """The ``int`` written as ``text``: an optional sign and ASCII digits (JSON's integer grammar
    plus a leading ``+``; underscores are not accepted).

    Any length up to :data:`MAX_INT_DIGITS` digits, whatever ``sys.get_int_max_str_digits()``
    says; divide and conquer, so 1,000,000 digits take about half a second. Usable as
    ``json.loads(..., parse_int=int_from_decimal)``.

    Raises :class:`IntegerTooLong` (a ``ValueError``) beyond :data:`MAX_INT_DIGITS` digits and
    ``ValueError`` for text that is not a decimal integer.
    """
    if isinstance(text, bytes):
        text = text.decode("ascii", "replace")
    chunk = _chunk()
    if len(text) <= chunk:
        return int(text)
    sign = text[:1]
    digits = text[1:] if sign in ("-", "+") else text
    if not (digits.isascii() and digits.isdigit()):
        raise ValueError(f"not a decimal integer: {text[:40]!r}...")
    if len(digits) > MAX_INT_DIGITS:
        raise IntegerTooLong(f"integer with {len(digits)} digits is over the {MAX_INT_DIGITS:,}-digit cap")
    powers: dict[int, int] = {}

    def convert(d: str) -> int:
        if len(d) <= chunk:
            return int(d)
        k = len(d) // 2
        p = powers.get(k)
        if p is None:
            p = powers[k] = 10**k
        return convert(d[:-k]) * p + convert(d[-k:])

    value = convert(digits)
    return -value if sign == "-" else value


def decimal_digits(value: int) -> int:
    """The number of decimal digits of ``abs(value)`` (``1`` for ``0``), exact, without ``str()``."""
    n = abs(value)
    if n < 10:
        return 1
    est = int((n.bit_length() - 1) * math.log10(2)) + 1  # exact or one too small
    return est + 1 if n >= 10**est else est


def int_to_decimal(value: int, *, max_digits: int = MAX_INT_DIGITS) -> str:
    """``str(value)`` for an ``int`` of any length up to ``max_digits`` digits, whatever
    ``sys.get_int_max_str_digits()`` says (divide and conquer by powers of ten; quadratic
    division, so meant for keys and messages, a few tens of thousands of digits at most in
    practice). Raises :class:`IntegerTooLong` beyond ``max_digits`` digits."""
    chunk = _chunk()
    n = abs(value)
    if n.bit_length() <= chunk * 3:  # < 10**(chunk*0.9): safely under the limit
        return str(value)
    digits = decimal_digits(n)
    if digits > max_digits:
        raise IntegerTooLong(f"integer with {digits} digits is over the {max_digits:,}-digit cap")

    def convert(m: int, width: int) -> str:
        """``m`` as exactly ``width`` digits (zero-padded); ``m < 10**width``."""
        if width <= chunk:
            return str(m).zfill(width)
        k = width // 2
        hi, lo = divmod(m, 10**k)
        return convert(hi, width - k) + convert(lo, k)

    text = convert(n, digits)
    return "-" + text if value < 0 else text


def show_int(value: int, limit: int = 80) -> str:
    """A short rendering of an ``int`` for diffs: all digits when they fit in ``limit``
    characters, else the leading and trailing digits and the digit count, e.g.
    ``1995063116...8196709376 (6021 digits)``. Never raises; no ``str()`` of a long int."""
    n = abs(value)
    sign = "-" if value < 0 else ""
    if n.bit_length() < 3 * min(limit, 200):  # short enough to print outright
        text = str(value)
        if len(text) <= limit:
            return text
    digits = decimal_digits(n)
    if digits + len(sign) <= limit:
        return sign + int_to_decimal(n, max_digits=limit)
    keep = max(1, (limit - len(sign) - 20) // 2)
    head = n // 10 ** (digits - keep)
    tail = str(n % 10**keep).zfill(keep)
    return f"{sign}{head}...{tail} ({digits} digits)"
