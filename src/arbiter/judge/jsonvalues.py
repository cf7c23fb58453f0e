"""Decoding JSON values and Python literals in the judge process, whatever their integers' size
and their nesting depth.

:func:`loads` decodes integers past CPython's 4300-digit limit (up to
:data:`~arbiter.checkers.bigint.MAX_INT_DIGITS`) and turns too-deep nesting into
:class:`JsonTooDeep`; :func:`rewrite_long_int_literals` does the same for Python-literal text.
Why: ``docs/encodings.md``, "JSON values and long integers".
"""

from __future__ import annotations

import io
import json
import re
import sys
import tokenize
import uuid
from typing import Any

from arbiter.checkers.bigint import MAX_INT_DIGITS, IntegerTooLong, int_from_decimal, int_to_decimal

__all__ = ["IntegerTooLong", "JsonTooDeep", "MAX_INT_DIGITS", "dumps", "loads", "rewrite_long_int_literals"]

_DIGIT_LIMIT_MESSAGE = "integer string conversion"


class JsonTooDeep(ValueError):
    """JSON text nested deeper than the judge process can decode (``RecursionError`` inside
    ``json.loads``); valid JSON, but too deep to be compared."""


def _too_deep_message() -> str:
    return (f"JSON nested deeper than the judge process can decode "
            f"(its recursion limit is {sys.getrecursionlimit()} levels)")


def _is_digit_limit_error(exc: ValueError) -> bool:
    return not isinstance(exc, json.JSONDecodeError) and _DIGIT_LIMIT_MESSAGE in str(exc)


def loads(text: str | bytes | bytearray) -> Any:
    """``json.loads(text)`` (same values, same ``NaN``/``Infinity`` extensions), plus:

    - integers of any length up to :data:`~arbiter.checkers.bigint.MAX_INT_DIGITS` digits,
      whatever ``sys.get_int_max_str_digits()`` is (the fast C path is tried first; only text
      holding a longer integer pays for the hook);
    - nesting too deep to decode raises :class:`JsonTooDeep`.

    Raises ``ValueError`` for invalid JSON (``json.JSONDecodeError``), :class:`JsonTooDeep`, or
    :class:`~arbiter.checkers.bigint.IntegerTooLong` (an integer over the cap). Both are
    ``ValueError`` subclasses.
    """
    try:
        return json.loads(text)
    except RecursionError:
        raise JsonTooDeep(_too_deep_message()) from None
    except ValueError as exc:
        if not _is_digit_limit_error(exc):
            raise
    try:
        return json.loads(text, parse_int=int_from_decimal)
    except RecursionError:
        raise JsonTooDeep(_too_deep_message()) from None


def dumps(value: Any, **kwargs: Any) -> str:
    """``json.dumps(value, **kwargs)``, plus integers longer than the interpreter's int/str digit
    limit (written in full, converted in chunks by
    :func:`~arbiter.checkers.bigint.int_to_decimal`), so what :func:`loads` reads can be written
    back (a converted ground truth expecting ``10**4999``, say).

    The fast C encoder is tried first; only a value holding a long integer pays for a walk that
    swaps each long integer for a unique placeholder string and splices the digits into the text.
    Raises what ``json.dumps`` raises (``TypeError``, ``ValueError``, ``RecursionError``) and
    :class:`~arbiter.checkers.bigint.IntegerTooLong` over
    :data:`~arbiter.checkers.bigint.MAX_INT_DIGITS` digits.
    """
    try:
        return json.dumps(value, **kwargs)
    except ValueError as exc:
        if not _is_digit_limit_error(exc):
            raise
    marker = "\x00arbiter-int-%s\x00" % uuid.uuid4().hex
    longs: list[int] = []

    def swap(v: Any) -> Any:
        if isinstance(v, int) and not isinstance(v, bool):
            try:
                repr(v)
                return v
            except ValueError:
                longs.append(v)
                return f"{marker}{len(longs) - 1}"
        if isinstance(v, dict):
            return {k: swap(x) for k, x in v.items()}
        if isinstance(v, (list, tuple)):
            return [swap(x) for x in v]
        return v

    text = json.dumps(swap(value), **kwargs)
    quoted = re.compile(re.escape(json.dumps(marker, **{k: v for k, v in kwargs.items()
                                                         if k == "ensure_ascii"})[:-1]) + r'(\d+)"')
    return quoted.sub(lambda m: int_to_decimal(longs[int(m.group(1))]), text)


_INT_TOKEN = re.compile(r"[0-9](?:_?[0-9])*")
_DIGIT_RUN = re.compile(r"[0-9_]+")


def rewrite_long_int_literals(source: str) -> str:
    """``source`` (Python expression text) with every decimal integer literal longer than the
    interpreter's int/str digit limit rewritten as the equal hexadecimal literal, which
    ``ast.parse`` reads at any length; everything else (strings included) is left as is.

    Linear in ``source``; cheap when there is nothing to do (one scan of its digit runs). Text
    that does not tokenize is returned unchanged, for the parser to report. Raises
    :class:`~arbiter.checkers.bigint.IntegerTooLong` for a literal over
    :data:`~arbiter.checkers.bigint.MAX_INT_DIGITS` digits.
    """
    limit = sys.get_int_max_str_digits() if hasattr(sys, "get_int_max_str_digits") else 0
    # maximal runs, each matched once (a search for ``[0-9_]{limit+1}`` retries at every digit
    # of a shorter run: limit x n steps)
    if not limit or all(m.end() - m.start() <= limit for m in _DIGIT_RUN.finditer(source)):
        return source
    line_starts = [0]
    for line in io.StringIO(source):
        line_starts.append(line_starts[-1] + len(line))
    edits: list[tuple[int, int, str]] = []
    try:
        for tok in tokenize.generate_tokens(io.StringIO(source).readline):
            if tok.type != tokenize.NUMBER or not _INT_TOKEN.fullmatch(tok.string):
                continue
            digits = tok.string.replace("_", "")
            if len(digits) <= limit or digits[0] == "0":  # "0123" stays an error for the parser
                continue
            start = line_starts[tok.start[0] - 1] + tok.start[1]
            end = line_starts[tok.end[0] - 1] + tok.end[1]
            edits.append((start, end, hex(int_from_decimal(digits))))
    except (tokenize.TokenError, SyntaxError):
        return source
    parts, last = [], 0
    for start, end, text in edits:
        parts += (source[last:start], text)
        last = end
    parts.append(source[last:])
    return "".join(parts)
