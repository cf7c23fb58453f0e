"""Token checkers: ``tokens`` (the Codeforces default) and ``tokens_float``.

Tokens are maximal runs of non-whitespace bytes (space, tab, LF, CR, VT, FF; docs/checkers.md),
the items of ``bytes.split()``. They are compared in order with multiplicity and the counts must
be equal: printing nothing, only the first answers, extra answers or answers in another order all
fail. Line structure is ignored, as in testlib's ``wcmp``: ``"1 2\\n3"`` equals ``"1\\n2 3"``.
Both outputs are split a block at a time and compared pair by pair in C
(:mod:`arbiter.checkers.pieces`), so the judge never holds a list of all tokens.
"""

from __future__ import annotations

import itertools
import re

from arbiter.checkers.diff import length_message, show
from arbiter.checkers.numbers import tokens_match_numeric
from arbiter.checkers.pieces import count, differences, token_blocks, token_spans, tokens
from arbiter.checkers.result import ACCEPTED, CheckResult

_TOKEN = re.compile(rb"\S+")


def _line_of_token(data: bytes, index: int) -> int | None:
    """1-based line number of the ``index``-th token of ``data`` (diff messages only)."""
    for start, end in token_spans(data):
        here = len(data[start:end].split())
        if index < here:
            match = next(itertools.islice(_TOKEN.finditer(data, start, end), index, None))
            return data.count(b"\n", 0, match.start()) + 1
        index -= here
    return None


def _token_diff(output: bytes, expected: bytes, i: int, got: bytes | None, want: bytes | None) -> CheckResult:
    """The diff at the first token ``i`` that fails (``None``: that output has ended)."""
    if got is not None and want is not None:
        line = _line_of_token(output, i)
        where = f" (output line {line})" if line is not None else ""
        return CheckResult(False, f"token {i + 1}{where}: expected {show(want)}, got {show(got)}")
    if got is None:
        return CheckResult(False, length_message("token", i, count(token_blocks(expected)), i, want))
    return CheckResult(False, length_message("token", count(token_blocks(output)), i, i, got))


def check_tokens(output: bytes, expected: bytes) -> CheckResult:
    """``tokens``: the whitespace-separated token sequences must be equal, byte for byte.

    The Codeforces default (testlib ``wcmp``). An empty expected output accepts only empty or
    whitespace-only output. Fixes rllm/TACO's comparison, which accepted a mismatched non-numeric
    token such as ``NO`` for ``YES`` (reference finding A) and ignored order and blank lines
    (finding B).
    """
    if output == expected:
        return ACCEPTED
    first = next(differences(tokens(output), tokens(expected)), None)
    if first is None:
        return ACCEPTED
    i, (got, want) = first
    return _token_diff(output, expected, i, got, want)


def check_tokens_float(output: bytes, expected: bytes, abs_tol: float = 1e-6, rel_tol: float = 1e-6) -> CheckResult:
    """``tokens_float``: tokens as in :func:`check_tokens`, but numbers may differ by a tolerance.

    Two different tokens match when both are finite numbers, the *expected* one has a decimal
    point or an exponent, and ``|got - want| <= abs_tol`` or ``|got - want| <= rel_tol * |want|``;
    an expected plain integer takes a number of exactly that value (``6``, ``6.0``, ``06`` for
    ``6``; compared in decimal) or a float within tolerance that rounds to it (``5.9999999``),
    never another integer; anything else must be byte-equal. The grammar and
    the decisions for ``nan``, ``inf``, ``1e500``, ``0x10``, ``1_000`` are in
    :mod:`arbiter.checkers.numbers`. Tolerances are absolute/relative amounts (unitless),
    default 1e-6 (LiveCodeBench issue 133, NeMo-Gym PR 2956).
    """
    if output == expected:
        return ACCEPTED
    for i, (got, want) in differences(tokens(output), tokens(expected)):
        if got is None or want is None or not tokens_match_numeric(got, want, abs_tol, rel_tol):
            return _token_diff(output, expected, i, got, want)
    return ACCEPTED
