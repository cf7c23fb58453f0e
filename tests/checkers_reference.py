"""Reference implementations for the stdout-checker fuzz tests (``tests/test_checkers.py``).

The text checkers as they were before their judge-side memory was bounded (issue 19, item 3): the
same rules, written the simple way (``bytes.split()`` and line lists of the whole output). They
expand a many-token output about 20x in memory, so the tests feed them only small outputs and
check that the streaming checkers in :mod:`arbiter.checkers` give exactly the same results
(verdict and diff).
"""

from __future__ import annotations

import itertools
import re
from typing import Any, Sequence

from arbiter.checkers.diff import plural, show
from arbiter.checkers.numbers import pie_lines_match, tokens_match_numeric
from arbiter.checkers.result import ACCEPTED, CheckResult

_LINE_END_WHITESPACE = (b" \n", b"\t\n", b"\r\n", b"\x0b\n", b"\x0c\n")
_TOKEN = re.compile(rb"\S+")


def fold_case(data: bytes) -> bytes:
    if data.isascii():
        return data.lower()
    return data.decode("utf-8", "surrogateescape").lower().encode("utf-8", "surrogateescape")


def strip_trailing_whitespace(data: bytes) -> bytes:
    data = data.rstrip()
    if any(marker in data for marker in _LINE_END_WHITESPACE):
        data = b"\n".join(map(bytes.rstrip, data.split(b"\n")))
    return data


def first_difference(got: Sequence[Any], want: Sequence[Any]) -> int:
    for i, (g, w) in enumerate(zip(got, want)):
        if g != w:
            return i
    return min(len(got), len(want))


def length_message(unit: str, got_n: int, want_n: int, index: int, got: Sequence[bytes], want: Sequence[bytes]) -> str:
    if got_n < want_n:
        what = "empty output" if got_n == 0 else f"output ended after {unit} {got_n}"
        return (
            f"missing {unit}s: expected {plural(want_n, unit)}, got {got_n} ({what}); "
            f"first missing {unit} {index + 1}: expected {show(want[index])}"
        )
    return (
        f"extra output: expected {plural(want_n, unit)}, got {got_n}; "
        f"first extra {unit} {index + 1}: got {show(got[index])}"
    )


# --- lines.py ---------------------------------------------------------------------------------

def _split_lines(data: bytes) -> list[bytes]:
    return data.split(b"\n") if data else []


def _line_diff(got: list[bytes], want: list[bytes], note: str = "") -> CheckResult:
    i = first_difference(got, want)
    if i < len(got) and i < len(want):
        msg = f"line {i + 1}: expected {show(want[i])}, got {show(got[i])}"
    else:
        msg = length_message("line", len(got), len(want), i, got, want)
    return CheckResult(False, msg + note)


def _exact_lines(data: bytes) -> list[bytes]:
    lines = data.split(b"\n")
    if lines[-1] == b"":
        lines.pop()
    return lines


def check_exact(output: bytes, expected: bytes) -> CheckResult:
    if output == expected:
        return ACCEPTED
    if output.replace(b"\r\n", b"\n") == expected.replace(b"\r\n", b"\n"):
        return CheckResult(False, "line endings differ (CRLF vs LF); otherwise identical")
    if output + b"\n" == expected:
        return CheckResult(False, "missing lines: the output lacks the final newline; otherwise identical")
    if output == expected + b"\n":
        return CheckResult(False, "extra output: a final newline the expected output does not have")
    got, want = _exact_lines(output), _exact_lines(expected)
    if got == want:  # pragma: no cover
        return CheckResult(False, "outputs differ only in the final newline")
    return _line_diff(got, want)


def check_trailing_whitespace(output: bytes, expected: bytes) -> CheckResult:
    if output == expected:
        return ACCEPTED
    got = strip_trailing_whitespace(output)
    want = strip_trailing_whitespace(expected)
    if got == want:
        return ACCEPTED
    return _line_diff(_split_lines(got), _split_lines(want), " (after trimming trailing whitespace)")


def _pie_lines(data: bytes) -> list[bytes]:
    return [line.strip() for line in data.strip().splitlines()]


def check_pie(output: bytes, expected: bytes) -> CheckResult:
    if output == expected:
        return ACCEPTED
    got = _pie_lines(output)
    want = _pie_lines(expected)
    if got == want:
        return ACCEPTED
    for i, (g, w) in enumerate(zip(got, want)):
        if g != w and not pie_lines_match(g, w):
            return CheckResult(False, f"line {i + 1}: expected {show(w)}, got {show(g)} (after stripping)")
    if len(got) == len(want):
        return ACCEPTED
    n = min(len(got), len(want))
    return CheckResult(False, length_message("line", len(got), len(want), n, got, want))


# --- tokens.py --------------------------------------------------------------------------------

def _line_of_token(data: bytes, index: int) -> int | None:
    match = next(itertools.islice(_TOKEN.finditer(data), index, None), None)
    if match is None:
        return None
    return data.count(b"\n", 0, match.start()) + 1


def _token_diff(output: bytes, got: list[bytes], want: list[bytes], i: int) -> CheckResult:
    line = _line_of_token(output, i)
    where = f" (output line {line})" if line is not None else ""
    return CheckResult(False, f"token {i + 1}{where}: expected {show(want[i])}, got {show(got[i])}")


def check_tokens(output: bytes, expected: bytes) -> CheckResult:
    if output == expected:
        return ACCEPTED
    got = output.split()
    want = expected.split()
    if got == want:
        return ACCEPTED
    i = first_difference(got, want)
    if i < len(got) and i < len(want):
        return _token_diff(output, got, want, i)
    return CheckResult(False, length_message("token", len(got), len(want), i, got, want))


def check_tokens_float(output: bytes, expected: bytes, abs_tol: float = 1e-6, rel_tol: float = 1e-6) -> CheckResult:
    if output == expected:
        return ACCEPTED
    got = output.split()
    want = expected.split()
    if got == want:
        return ACCEPTED
    for i, (g, w) in enumerate(zip(got, want)):
        if g != w and not tokens_match_numeric(g, w, abs_tol, rel_tol):
            return _token_diff(output, got, want, i)
    if len(got) == len(want):
        return ACCEPTED
    n = min(len(got), len(want))
    return CheckResult(False, length_message("token", len(got), len(want), n, got, want))


TEXT_CHECKERS = {
    "exact": check_exact,
    "trailing_whitespace": check_trailing_whitespace,
    "pie": check_pie,
    "tokens": check_tokens,
    "tokens_float": check_tokens_float,
}
