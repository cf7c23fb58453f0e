"""Output comparison: the entry points the judge calls.

- :func:`check_output`: a program's stdout against one or several accepted answers, with the
  checker named by a :class:`~arbiter.checkers.spec.CheckerSpec`.
- :func:`compare_values`: a function's JSON-decoded return value against an expected value
  (re-exported from :mod:`arbiter.checkers.values`).

Pure functions: no processes, no I/O. The ``external`` checker (a testlib program) runs in the
sandbox and is driven by the judge, not here.
"""

from __future__ import annotations

from arbiter.checkers.normalize import fold_case
from arbiter.checkers.result import ACCEPTED, CheckResult
from arbiter.checkers.spec import CheckerSpec
from arbiter.checkers.table import CHECKERS
from arbiter.checkers.values import compare_values

__all__ = ["CheckResult", "check_output", "compare_values"]


def check_output(spec: CheckerSpec, output: bytes, expected: tuple[bytes, ...]) -> CheckResult:
    """Compare a program's stdout with the accepted answers of one test case.

    - ``spec``: which checker (a pure one of :data:`~arbiter.checkers.table.CHECKERS`) and its options: ``case_insensitive`` (applies to every checker here,
      ``exact`` included; see :func:`~arbiter.checkers.normalize.fold_case`), ``abs_tol`` /
      ``rel_tol`` (``tokens_float`` only; ``pie`` uses PIE's fixed 1e-3).
    - ``output``: the program's stdout, raw bytes (invalid UTF-8 is fine: everything is compared
      as bytes, never decoded strictly).
    - ``expected``: one or more accepted answers (bytes); the output is accepted when **any** of
      them matches (CodeScope / xCodeEval lists of accepted outputs). When none matches, the diff
      is against the first answer.

    Returns a :class:`CheckResult`. Raises ``ValueError`` for the ``external`` checker (it needs
    the sandbox; the judge runs it) and for an empty ``expected`` (a case always has an answer:
    :class:`~arbiter.judge.testsuite.StdioCase` enforces it).

    Rules per checker are in :mod:`arbiter.checkers.lines` and :mod:`arbiter.checkers.tokens`;
    all compare in order with multiplicity (no sets, no ``zip`` that ignores extra or missing
    lines), and empty output never matches a non-empty answer.
    """
    entry = CHECKERS.get(spec.name)
    if entry is None or entry.compare is None:
        raise ValueError(f"checker {spec.name!r} is not a pure output comparison; the judge runs it")
    compare = entry.compare
    if not expected:
        raise ValueError("check_output needs at least one expected answer")
    if spec.case_insensitive:
        output = fold_case(output)
    first: CheckResult | None = None
    for answer in expected:
        if spec.case_insensitive:
            answer = fold_case(answer)
        result = compare(spec, output, answer)
        if result.ok:
            return ACCEPTED
        if first is None:
            first = result
    assert first is not None
    if len(expected) == 1:
        return first
    return CheckResult(False, f"{first.diff} (none of {len(expected)} accepted answers matched; diff against the first)")
