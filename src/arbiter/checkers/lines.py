"""Line-oriented checkers: ``exact``, ``trailing_whitespace`` and ``pie``.

Each takes the program's stdout and one accepted answer as bytes (already case-folded when the
checker spec asks for it) and returns a :class:`~arbiter.checkers.result.CheckResult`. Lines are
compared in order with multiplicity: a missing, extra or swapped line always fails (unlike
PIE's and open-r1's ``zip``, which ignore extra lines, reference finding F). Both texts are split
a block at a time and compared pair by pair in C (:mod:`arbiter.checkers.pieces`), so the judge
never holds a list of all lines.
"""

from __future__ import annotations

import itertools
from typing import Callable, Iterator

from arbiter.checkers.diff import length_message, show
from arbiter.checkers.numbers import pie_lines_match
from arbiter.checkers.pieces import count, differences, line_blocks, rstrip_end, strip_bounds, stripped_line_blocks
from arbiter.checkers.result import ACCEPTED, CheckResult

Blocks = Callable[[bytes], Iterator[list[bytes]]]


def _lines(blocks: Blocks, data: bytes) -> Iterator[bytes]:
    return itertools.chain.from_iterable(blocks(data))


def _line_diff(blocks: Blocks, output: bytes, expected: bytes, i: int, got: bytes | None, want: bytes | None,
               note: str = "") -> CheckResult:
    """The diff at the first line ``i`` that fails (``None``: that output has ended); ``blocks``
    splits a text into the lines compared (to count them for a length diff)."""
    if got is not None and want is not None:
        msg = f"line {i + 1}: expected {show(want)}, got {show(got)}"
    elif got is None:
        msg = length_message("line", i, count(blocks(expected)), i, want)
    else:
        msg = length_message("line", count(blocks(output)), i, i, got)
    return CheckResult(False, msg + note)


def check_exact(output: bytes, expected: bytes) -> CheckResult:
    """``exact``: the bytes must be identical (no whitespace or newline normalisation at all).

    The diff names the first differing line, or explains a difference in line endings (CRLF vs
    LF) or in the final newline, which are invisible when the lines themselves are printed.
    """
    if output == expected:
        return ACCEPTED
    if (b"\r\n" in output or b"\r\n" in expected) and (
            output.replace(b"\r\n", b"\n") == expected.replace(b"\r\n", b"\n")):
        return CheckResult(False, "line endings differ (CRLF vs LF); otherwise identical")
    if len(output) + 1 == len(expected) and expected.startswith(output) and expected.endswith(b"\n"):
        return CheckResult(False, "missing lines: the output lacks the final newline; otherwise identical")
    if len(output) == len(expected) + 1 and output.startswith(expected) and output.endswith(b"\n"):
        return CheckResult(False, "extra output: a final newline the expected output does not have")
    first = next(differences(_lines(_exact_lines, output), _lines(_exact_lines, expected)), None)
    if first is None:  # pragma: no cover - only the final newline can differ, handled above
        return CheckResult(False, "outputs differ only in the final newline")
    i, (got, want) = first
    return _line_diff(_exact_lines, output, expected, i, got, want)


def _exact_lines(data: bytes) -> Iterator[list[bytes]]:
    """Lines split on LF, the empty piece after a final newline dropped (the text is not
    normalised: CR and trailing spaces stay part of the line); the empty text has none."""
    if data:
        yield from line_blocks(data, 0, len(data) - data.endswith(b"\n"))


def check_trailing_whitespace(output: bytes, expected: bytes) -> CheckResult:
    """``trailing_whitespace``: the oracle seed's ``public_checker``
    ``{"type": "exact_stdout", "strip_trailing_whitespace": true}``.

    The seed card's prompt words it as "exact stdout after trimming trailing whitespace". We
    trim trailing whitespace of every line *and* of the whole output (:func:`_trimmed_lines`):
    ``"1 \\n2\\n"`` equals ``"1\\n2"`` and CRLF equals LF, but leading whitespace and blank
    lines in the middle must match. An empty expected output accepts only whitespace-only output.
    """
    if output == expected:
        return ACCEPTED
    lines = _lines(_trimmed_lines, output), _lines(_trimmed_lines, expected)
    first = next(differences(*lines), None)
    if first is None:
        return ACCEPTED
    i, (got, want) = first
    return _line_diff(_trimmed_lines, output, expected, i, got, want, " (after trimming trailing whitespace)")


def _trimmed_lines(data: bytes) -> Iterator[list[bytes]]:
    """The lines of the ``trailing_whitespace`` normal form: the whole text without trailing
    whitespace (so without trailing blank lines and final newline), split on LF, each line without
    its trailing spaces / tabs / CR / VT / FF; leading whitespace and blank lines *between* lines
    are kept. So ``b"1 \\n2\\n\\n"`` and ``b"1\\n2"`` have the same lines, ``b"1\\n\\n2"`` does
    not; a whitespace-only text has none."""
    end = rstrip_end(data, 0, len(data))
    if end:
        yield from line_blocks(data, 0, end, rstrip=True)


def _pie_lines(data: bytes) -> Iterator[list[bytes]]:
    """PIE's line list: the whole text stripped, split into lines (LF, CRLF or CR), each stripped."""
    start, end = strip_bounds(data, 0, len(data))
    return stripped_line_blocks(data, start, end)


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
    for i, (got, want) in differences(_lines(_pie_lines, output), _lines(_pie_lines, expected)):
        if got is None or want is None:
            return _line_diff(_pie_lines, output, expected, i, got, want)
        if not pie_lines_match(got, want):
            return CheckResult(False, f"line {i + 1}: expected {show(want)}, got {show(got)} (after stripping)")
    return ACCEPTED
