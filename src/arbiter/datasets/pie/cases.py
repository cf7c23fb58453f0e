"""The test cases of a PIE row: loading its suite, the card's case index (``input.N``), the pool a row's
programs are checked on, and the source's costliest cases. See ``docs/pie.md`` ("Re-timing a candidate").
"""

from __future__ import annotations

import os
import random
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from arbiter.datasets.pie.card import select_cases
from arbiter.datasets.pie.source import PieSource
from arbiter.judge.encodings.pie import load_pie_tests
from arbiter.judge.testsuite import InvalidTestSuite, StdioCase, TestSuite
from arbiter.judge.verdict import CaseResult, Outcome


def bad_apple_limit(n_cases: int) -> float:
    """The card's bad-apple bound for ``n_cases`` cases: ``max(5, 5 % of n_cases)``; a program failing MORE cases
    than this is "treated as wrong/mislabeled" (card, "Filtering"). That is the card's screen before release;
    :func:`pie_reward` checks rows that already passed it, so any wrong result of a row's program there is a
    :data:`DATASET_DEFECT`."""
    return max(5.0, 0.05 * n_cases)


def case_number(name: str) -> int | None:
    """The card's case index of a case name: ``input.N`` or ``N`` → ``N``; other names → ``None``."""
    text = name[len("input."):] if name.startswith("input.") else name
    return int(text) if text.isdigit() else None


def _load_suite(tests: Any, problem_id: str) -> TestSuite:
    if isinstance(tests, TestSuite):
        return tests
    if isinstance(tests, (str, os.PathLike)):
        return load_pie_tests(tests, problem_id)
    if isinstance(tests, Mapping):
        if problem_id not in tests:
            raise InvalidTestSuite(f"row {problem_id!r}: tests: no suite for this problem")
        return tests[problem_id]
    if callable(tests):
        return tests(problem_id)
    raise TypeError(f"tests must be a PIE folder/archive path, a TestSuite, a mapping or a callable, "
                    f"got {type(tests).__name__}")


def _stdio_cases(suite: TestSuite, label: str) -> list[StdioCase]:
    cases = list(suite)
    if not cases:
        raise InvalidTestSuite(f"row {label!r}: tests: zero test cases; a suite without tests is never scored")
    bad = [c.name for c in cases if not isinstance(c, StdioCase)]
    if bad:
        raise InvalidTestSuite(f"row {label!r}: tests: case {bad[0]!r} is a function call; PIE programs use stdin")
    return cases


def _by_card_index(cases: list[StdioCase], ids: Sequence[int], label: str) -> dict[int, StdioCase]:
    index: dict[int, StdioCase] = {}
    for c in cases:
        n = case_number(c.name)
        if n is not None:
            index.setdefault(n, c)
    missing = [i for i in ids if i not in index]
    if missing:
        raise InvalidTestSuite(f"row {label!r}: usable_case_ids: case(s) {missing[:10]} have no test file "
                               f"(input.N.txt) among the {len(cases)} cases found")
    return index


def costliest_cases(src_cases: Sequence[CaseResult], n_largest: int, n_smallest: int = 0) -> list[str]:
    """Names of the source's ``n_largest`` costliest cases plus its ``n_smallest`` cheapest ones, in suite order.

    ``src_cases``: the source's native :class:`~arbiter.judge.verdict.CaseResult` per case (its correctness pass:
    ``Verdict.cases``); cost = ``cpu_seconds``, ties by suite order (both ends); only ``AC`` cases are eligible.
    Ranked by the source alone, so a candidate cannot choose which cases count. Used to bound valgrind's cost on
    suites with heavy inputs: the costliest cases carry the speedup, the cheap ones keep the start-up-dominated
    regime in view. Raises ``ValueError`` for negative counts.
    """
    if n_largest < 0 or n_smallest < 0:
        raise ValueError("n_largest and n_smallest must be >= 0")
    ok = [(i, c) for i, c in enumerate(src_cases) if c.outcome is Outcome.AC]
    by_cost = sorted(ok, key=lambda ic: (-ic[1].cpu_seconds, ic[0]))
    chosen = {i for i, _ in by_cost[:n_largest]}
    for i, _ in sorted(ok, key=lambda ic: (ic[1].cpu_seconds, ic[0])):  # cheapest first, ties by suite order
        if len(chosen) >= min(len(ok), n_largest + n_smallest):
            break
        chosen.add(i)
    return [c.name for i, c in ok if i in chosen]


def load_cases(tests: Any, problem_id: str, label: str) -> list[StdioCase]:
    """The stdin/stdout cases of ``problem_id`` from ``tests`` (a PIE folder or archive path, a ``TestSuite``, a
    mapping or a callable). Raises ``InvalidTestSuite`` for a missing or empty suite or a function-call case."""
    return _stdio_cases(_load_suite(tests, problem_id), label)


def select_pool(cases: list[StdioCase], src: PieSource, k: int, rng: random.Random | None,
                only_cases: Iterable[str] | None, label: str) -> list[StdioCase]:
    """The cases the row's programs are checked on: ``only_cases`` first, then the row's ``usable_case_ids``
    sampled with the card's K (rows without them: every case; K is applied after the source check). Raises
    ``InvalidTestSuite`` when nothing is left."""
    if only_cases is not None:
        wanted = set(only_cases)
        unknown = wanted - {c.name for c in cases}
        if unknown:
            raise InvalidTestSuite(f"row {label!r}: only_cases: unknown case(s) {sorted(unknown)[:10]}")
        cases = [c for c in cases if c.name in wanted]
    if src.usable_case_ids is not None:
        index = _by_card_index(cases, src.usable_case_ids, label)
        usable = [i for i in src.usable_case_ids if i in index]
        if only_cases is not None:
            usable = [i for i in usable if index[i].name in wanted]
        if not usable:
            raise InvalidTestSuite(f"row {label!r}: usable_case_ids: no usable case left to time")
        pool = [index[i] for i in select_cases(usable, k, rng, row=label)]
    else:
        pool = cases
    if not pool:
        raise InvalidTestSuite(f"row {label!r}: tests: no case selected")
    return pool
