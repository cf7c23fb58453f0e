"""The codegen reward over a stream of responses, judged in parallel, results in input order.

Used by ``arbiter score`` and verl's batch entry point. Consecutive responses that share one
ground truth reuse its parsed suite (verl repeats a prompt's row for its n responses). See
``docs/codegen.md`` ("Executor").
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterable, Iterator
from typing import Any

from arbiter.judge.encodings.verl import verl_ground_truth_to_suite
from arbiter.judge.judge import default_workers, judge
from arbiter.judge.testsuite import InvalidTestSuite, TestSuite
from arbiter.judge.verdict import Outcome
from arbiter.pipelines.executor import ordered_map
from arbiter.rewards.codegen import Prepared, RewardOptions, RewardResult, reward_result, finish, prepare, row_label
from arbiter.rewards.routes import route
Item = tuple[Any, Any, Any, Any]


class _Suites:
    """The last 8 parsed suites: JSON text keyed by value, decoded data by identity (the object is
    kept alive in the cache, so its id cannot be reused while the entry exists)."""

    def __init__(self) -> None:
        self._cache: dict[tuple, tuple[Any, TestSuite | Exception]] = {}

    def get(self, ground_truth: Any, label: str) -> TestSuite | Exception:
        key = (label, ground_truth) if isinstance(ground_truth, str) else (label, id(ground_truth))
        hit = self._cache.get(key)
        if hit is not None:
            return hit[1]
        try:
            suite: TestSuite | Exception = verl_ground_truth_to_suite(ground_truth, row=label)
        except InvalidTestSuite as exc:
            suite = exc
        if len(self._cache) >= 8:
            self._cache.pop(next(iter(self._cache)))
        self._cache[key] = (ground_truth, suite)
        return suite


def _prepared(items: Iterable[Item], opts: RewardOptions, raise_errors: bool) -> Iterator[Prepared]:
    suites = _Suites()
    for data_source, solution_str, ground_truth, extra_info in items:
        label = row_label(data_source, extra_info)
        try:
            r = route(data_source)
        except ValueError as exc:
            if raise_errors:
                raise
            now = time.monotonic()  # a stream (arbiter score) reports the row and goes on
            yield Prepared(label, now, result=reward_result(0.0, Outcome.INVALID_TASK.value, 0, 0, str(exc), now),
                           invalid_error=exc)
            continue
        yield prepare(data_source, solution_str, ground_truth, extra_info, opts,
                      suite=suites.get(ground_truth, label), route_=r)


def iter_scores(items: Iterable[Item], opts: RewardOptions, *, raise_errors: bool = True) -> Iterator[RewardResult]:
    """Score ``(data_source, solution_str, ground_truth, extra_info)`` items in parallel
    (``opts.workers`` sandboxes, default one per core), yielding results in input order.

    Items are consumed lazily; at most ``2 x workers`` (judged or not) are in flight, so memory
    stays bounded on long streams whatever the mix. ``raise_errors=False`` returns INVALID_TASK /
    SANDBOX_ERROR as results whatever ``on_invalid`` / ``on_sandbox_error`` say, and a non-code
    data_source as an INVALID_TASK result (with ``raise_errors`` it raises ``ValueError``)."""
    workers = int(opts.workers or default_workers())
    done = ordered_map(lambda prep: judge(prep.task), _prepared(items, opts, raise_errors), workers=workers,
                       name="arbiter-judge", submit_if=lambda prep: prep.task is not None)
    with contextlib.closing(done):  # an error or an early stop cancels the work in flight now
        for prep, verdict in done:
            yield finish(prep, verdict, opts, raise_errors=raise_errors)


__all__ = ["Item", "iter_scores"]
