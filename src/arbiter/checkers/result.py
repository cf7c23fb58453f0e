"""The outcome of one comparison: accepted or not, plus a short human-readable diff."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class CheckResult:
    """The result of comparing a program's output (or return value) with the expected one.

    - ``ok``: True when the output is accepted.
    - ``diff``: empty when ``ok``; otherwise one short line a human can act on: where the first
      difference is (line / token number, or a path such as ``$[3]['k']`` for values), the
      expected and the actual piece (each truncated to about 80 characters), and
      ``missing lines`` / ``missing tokens`` / ``extra output`` when the lengths differ.
      It ends up in :attr:`arbiter.judge.verdict.CaseResult.diff`.
    """

    ok: bool
    diff: str = ""

    def __bool__(self) -> bool:
        return self.ok


ACCEPTED = CheckResult(True, "")
