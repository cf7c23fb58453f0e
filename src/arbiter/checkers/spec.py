"""Which checker compares a program's output with the expected one, and its options."""

from __future__ import annotations

from dataclasses import dataclass

from arbiter.checkers.table import CHECKER_NAMES  # the names come from the checker table

__all__ = ["CHECKER_NAMES", "CheckerSpec"]


@dataclass(frozen=True)
class CheckerSpec:
    """A checker choice (DESIGN.md, "Checkers").

    - ``name``: one of :data:`~arbiter.checkers.table.CHECKER_NAMES`: ``exact`` (bytes equal); ``trailing_whitespace`` (the oracle seed's
      ``public_checker``: equal after stripping trailing whitespace); ``pie`` (PIE card: line-wise,
      floats within 1e-3); ``tokens`` (whitespace-separated tokens, the Codeforces default);
      ``tokens_float`` (tokens, numbers within ``abs_tol`` / ``rel_tol``); ``external`` (a testlib
      checker program run in the sandbox as ``checker input output answer``, exit 0 accepts).
    - ``case_insensitive``: compare letters without case.
    - ``abs_tol`` / ``rel_tol``: float tolerance for ``tokens_float`` and function-call results.
    - ``strict_bool``: function-call results only (:func:`arbiter.checkers.values.compare_values`).
      ``True`` (default): a ``bool`` equals only a ``bool`` (LeetCode's judge and LiveCodeBench
      tell ``true`` from ``1``). ``False``: ``True``/``False`` equal ``1``/``0`` as in Python's
      ``==``, which is how APPS/TACO ``testing_util``, rllm and verl ``prime_code`` compare call
      results; the verl routes for those sources set it (:mod:`arbiter.rewards.routes`).
    - ``program``: for ``external``, the checker's source code; ``program_language`` its language.
    """

    name: str = "tokens"
    case_insensitive: bool = False
    abs_tol: float = 1e-6
    rel_tol: float = 1e-6
    program: str | None = None
    program_language: str = "cpp"
    strict_bool: bool = True

    def __post_init__(self) -> None:
        if self.name not in CHECKER_NAMES:
            raise ValueError(f"unknown checker {self.name!r}; known: {', '.join(CHECKER_NAMES)}")
        if self.name == "external" and not self.program:
            raise ValueError("checker 'external' needs the checker program's source")
