"""The checker table: every checker by name, one line each. Names everywhere derive from it.

A pure checker compares a program's stdout with one accepted answer (``(spec, output, answer) ->
CheckResult``); ``external`` has no function here: the judge runs the task's checker program in a
sandbox (:mod:`arbiter.judge.checker_program`). See ``docs/checkers.md``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable

from arbiter.checkers.lines import check_exact, check_pie, check_trailing_whitespace
from arbiter.checkers.result import CheckResult
from arbiter.checkers.tokens import check_tokens, check_tokens_float

if TYPE_CHECKING:
    from arbiter.checkers.spec import CheckerSpec

Compare = Callable[["CheckerSpec", bytes, bytes], CheckResult]


@dataclass(frozen=True)
class Checker:
    """One checker: its ``name``, its comparison (``None``: run by the judge) and a one-line
    ``summary`` for help texts."""

    name: str
    compare: Compare | None
    summary: str


CHECKERS: dict[str, Checker] = {c.name: c for c in (
    Checker("exact", lambda spec, got, want: check_exact(got, want), "bytes equal"),
    Checker("trailing_whitespace", lambda spec, got, want: check_trailing_whitespace(got, want),
            "equal after stripping trailing whitespace (the oracle seed's public_checker)"),
    Checker("pie", lambda spec, got, want: check_pie(got, want), "line-wise, floats within 1e-3 (PIE card)"),
    Checker("tokens", lambda spec, got, want: check_tokens(got, want),
            "whitespace-separated tokens (the Codeforces default)"),
    Checker("tokens_float", lambda spec, got, want: check_tokens_float(got, want, spec.abs_tol, spec.rel_tol),
            "tokens, numbers within abs_tol / rel_tol"),
    Checker("external", None, "a testlib checker program: checker input output answer, exit 0 accepts"),
)}

#: Every checker name, in table order.
CHECKER_NAMES: tuple[str, ...] = tuple(CHECKERS)
#: The checkers :func:`arbiter.checkers.compare.check_output` runs (no sandbox needed).
PURE_CHECKER_NAMES: tuple[str, ...] = tuple(n for n, c in CHECKERS.items() if c.compare is not None)
