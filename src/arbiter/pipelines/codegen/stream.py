"""The codegen reward over a stream of responses, judged in parallel, results in input order.

Used by ``arbiter score`` and verl's batch entry point, through a step judge (``docs/step.md``).
Consecutive responses that share one ground truth reuse its parsed suite (verl repeats a
prompt's row for its n responses). See ``docs/codegen.md`` ("Executor").
"""

from __future__ import annotations

import os
import time
import threading
from collections import deque
from collections.abc import Iterable, Iterator
from concurrent.futures import Future
from typing import Any

from arbiter.judge.encodings.verl import verl_ground_truth_to_suite
from arbiter.judge.judge import default_workers
from arbiter.judge.step import StepJudge, default_step_judge
from arbiter.judge.step.store import DiskStore, VerdictStore
from arbiter.judge.testsuite import InvalidTestSuite, TestSuite
from arbiter.judge.verdict import Outcome
from arbiter.pipelines.executor import current_backend
from arbiter.rewards.codegen import Prepared, RewardOptions, RewardResult, finish, prepare, reward_result, row_label
from arbiter.rewards.routes import route
Item = tuple[Any, Any, Any, Any]


class _Suites:
    """The last 8 parsed suites: JSON text keyed by value, decoded data by identity (the object is
    kept alive in the cache, so its id cannot be reused while the entry exists)."""

    def __init__(self) -> None:
        self._cache: dict[tuple, tuple[Any, TestSuite | Exception]] = {}

    def get(self, ground_truth: Any, label: str, int_keys: bool) -> TestSuite | Exception:
        key = (label, int_keys, ground_truth if isinstance(ground_truth, str) else id(ground_truth))
        hit = self._cache.get(key)
        if hit is not None:
            return hit[1]
        try:
            suite: TestSuite | Exception = verl_ground_truth_to_suite(ground_truth, row=label, int_keys=int_keys)
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
                      suite=suites.get(ground_truth, label, r.int_keys), route_=r)


#: Responses a stream (``arbiter score``) takes ahead of the one it writes next, so the longest of
#: them start first (docs/step.md); their tasks (and their rows' suites) are held in memory.
LOOKAHEAD = 256


def _judges(opts: RewardOptions, verdict_cache: str | os.PathLike | None) -> tuple[StepJudge, bool]:
    """The step judge of a stream and whether it is this stream's own: the process's, or one with
    ``opts.workers`` threads, a Ray backend, or a verdict folder (sharing the process's memory of
    verdicts, case orders and costs unless a folder is given). One with the process's number of
    workers holds the process's judge slots; an explicit other ``workers`` is its own bound."""
    base = default_step_judge()
    backend = current_backend()
    workers = None if backend is not None else int(opts.workers or default_workers())
    if backend is None and workers == base.workers and verdict_cache is None:
        return base, False
    store = VerdictStore(disk=DiskStore(verdict_cache)) if verdict_cache is not None else base.store
    slots = base.slots if backend is None and workers == base.workers else None
    return StepJudge(workers, executor=backend, store=store, order=base.order, costs=base.costs, slots=slots), True


def iter_scores(items: Iterable[Item], opts: RewardOptions, *, raise_errors: bool = True,
                lookahead: int | None = None, verdict_cache: str | os.PathLike | None = None) -> Iterator[RewardResult]:
    """Score ``(data_source, solution_str, ground_truth, extra_info)`` items in parallel
    (``opts.workers`` sandboxes, default one per core), yielding results in input order.

    Items are consumed lazily; at most ``lookahead`` (default :data:`LOOKAHEAD`, at least
    ``2 x workers``) are in flight, judged longest predicted first, identical programs once
    (docs/step.md); ``verdict_cache``: a folder of verdicts kept between runs. ``raise_errors=False``
    returns INVALID_TASK / SANDBOX_ERROR as results whatever ``on_invalid`` / ``on_sandbox_error``
    say, and a non-code data_source as an INVALID_TASK result (with ``raise_errors`` it raises
    ``ValueError``)."""
    judges, owned = _judges(opts, verdict_cache)
    bound = max(lookahead or LOOKAHEAD, 2 * judges.workers)
    window: deque[tuple[Prepared, Future | None]] = deque()
    settings = opts.step
    # From the main thread a future is touched only in the judge's intake thread: an interrupt
    # (Ctrl-C, a SIGALRM timeout) in the future's own lock would leave it held, and the worker
    # that completes it waiting forever (docs/step.md). So there, results are taken in order as
    # the window fills, without asking a future whether it is done.
    ask_done = threading.current_thread() is not threading.main_thread()
    try:
        for prep in _prepared(items, opts, raise_errors):
            fut = judges.submit(prep.task, hint=prep.hint, settings=settings) if prep.task is not None else None
            window.append((prep, fut))
            while window and (window[0][1] is None or len(window) > bound or (ask_done and window[0][1].done())):
                prep, fut = window.popleft()
                yield finish(prep, judges.intake.wait(fut) if fut is not None else None, opts, raise_errors=raise_errors)
        while window:
            prep, fut = window.popleft()
            yield finish(prep, judges.intake.wait(fut) if fut is not None else None, opts, raise_errors=raise_errors)
    finally:  # an error or an early stop drops the work not started
        for _, fut in window:
            if fut is not None:
                fut.cancel()
        if owned:
            judges.close()


__all__ = ["Item", "LOOKAHEAD", "iter_scores"]
