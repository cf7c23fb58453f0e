"""Line-oriented checkers: ``exact``, ``trailing_whitespace`` and ``pie``.

Each takes the program's stdout and one accepted answer as bytes (already case-folded when the
checker spec asks for it) and returns a :class:`~arbiter.checkers.result.CheckResult`. Lines are
compared in order with multiplicity: a missing, extra or swapped line always fails (unlike
PIE's and open-r1's ``zip``, which ignore extra lines, reference finding F).
"""

from __future__ import annotations

from arbiter.checkers.diff import first_difference, length_message, show
from arbiter.checkers.normalize import strip_trailing_whitespace
from arbiter.checkers.numbers import pie_lines_match
from arbiter.checkers.result import ACCEPTED, CheckResult


def _split_lines(data: bytes) -> list[bytes]:
    """Lines of a normalised text; the empty text has no lines."""
    return data.split(b"\n") if data else []


def _line_diff(got: list[bytes], want: list[bytes], note: str = "") -> CheckResult:
    """The first differing line of two line lists that are not equal (1-based numbers)."""
    i = first_difference(got, want)
    if i < len(got) and i < len(want):
        msg = f"line {i + 1}: expected {show(want[i])}, got {show(got[i])}"
    else:
        msg = length_message("line", len(got), len(want), i, got, want)
    return CheckResult(False, msg + note)


def check_exact(output: bytes, expected: bytes) -> CheckResult:
    """``exact``: the bytes must be identical (no whitespace or newline normalisation at all).

    The diff names the first differing line, or explains a difference in line endings (CRLF vs
    LF) or in the final newline, which are invisible when the lines themselves are printed.
    """
    if output == expected:
        return ACCEPTED
    if output.replace(b"\r\n", b"\n") == expected.replace(b"\r\n", b"\n"):
        return CheckResult(False, "line endings differ (CRLF vs LF); otherwise identical")
    if output + b"\n" == expected:
        return CheckResult(False, "missing lines: the output lacks the final newline; otherwise identical")
    if output == expected + b"\n":
        return CheckResult(False, "extra output: a final newline the expected output does not have")
    got, want = _exact_lines(output), _exact_lines(expected)
    if got == want:  # pragma: no cover - only the final newline can differ, handled above
        return CheckResult(False, "outputs differ only in the final newline")
    return _line_diff(got, want)


def _exact_lines(data: bytes) -> list[bytes]:
    """Lines split on LF, the empty piece after a final newline dropped (the text is not
    normalised: CR and trailing spaces stay part of the line)."""
    lines = data.split(b"\n")
    if lines[-1] == b"":
        lines.pop()
    return lines


def check_trailing_whitespace(output: bytes, expected: bytes) -> CheckResult:
    """``trailing_whitespace``: the oracle seed's ``public_checker``
    ``{"type": "exact_stdout", "strip_trailing_whitespace": true}``.

    The seed card's prompt words it as "exact stdout after trimming trailing whitespace". We
    trim trailing whitespace of every line *and* of the whole output
    (:func:`~arbiter.checkers.normalize.strip_trailing_whitespace`): ``"1 \\n2\\n"`` equals
    ``"1\\n2"`` and CRLF equals LF, but leading whitespace and blank lines in the middle must
    match. An empty expected output accepts only whitespace-only output.
    """
    if output == expected:
        return ACCEPTED
    got = strip_trailing_whitespace(output)
    want = strip_trailing_whitespace(expected)
    if got == want:
        return ACCEPTED
    return _line_diff(_split_lines(got), _split_lines(want), " (after trimming trailing whitespace)")


def _pie_lines(data: bytes) -> list[bytes]:
    """PIE's line list: the whole text stripped, split into lines (LF, CRLF or CR), each stripped."""
    return [line.strip() for line in data.strip().splitlines()]


def check_pie(output: bytes, expected: bytes) -> CheckResult:
    """``pie``: the PIE card's correctness check (pie-perf / LearningOpt ``get_accuracy``), made
    strict about length.

    Both texts are stripped and split into lines, each line stripped. Line *i* matches when the
    strings are equal, or when both are numbers within an absolute 1e-3 (strictly less, as PIE;
    see :func:`~arbiter.checkers.numbers.pie_lines_match` for the number grammar and the exact
    rule for plain integers). Unlike PIE's ``zip`` (which scores a prefix as correct and ignores
    extra lines), the line counts must be equal: missing or extra lines fail. PIE's 1e-3 is
    fixed by the card; the spec's ``abs_tol`` / ``rel_tol`` do not apply.
    """
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
