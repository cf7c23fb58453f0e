"""Failures found first: the order in which an all-or-nothing submission's cases are run.

Per suite (by digest), what earlier submissions did on each case: how often it ran, failed, and
what it cost. Cases that failed before come first, cheapest expected cost per failure first;
then the others in the suite's order (measured better than by input size: docs/step.md).
:func:`permute` gives the task to judge and :func:`restore` puts its case results back in the
suite's order.
"""

from __future__ import annotations

import threading
from array import array
from collections import OrderedDict
from dataclasses import replace

from arbiter.judge.task import Task
from arbiter.judge.testsuite import TestSuite
from arbiter.judge.verdict import Outcome, Verdict

#: Seconds a case costs beyond its CPU time (the fork, the reply): keeps costs above zero.
CASE_OVERHEAD = 0.003
_FAILED = (Outcome.WA, Outcome.TLE, Outcome.MLE, Outcome.RE, Outcome.OLE)


class _SuiteStats:
    """Runs, failures and CPU seconds of each case of one suite (arrays: 24 bytes a case)."""

    def __init__(self, cases: int):
        self.cases = cases
        self.runs, self.fails = array("q", [0]) * cases, array("q", [0]) * cases
        self.seconds = array("d", [0.0]) * cases

    def order(self) -> list[int]:
        def cost_per_failure(i: int) -> tuple[float, int]:
            return ((self.seconds[i] / self.runs[i] + CASE_OVERHEAD) * self.runs[i] / self.fails[i], i)

        failed = sorted((i for i in range(self.cases) if self.fails[i]), key=cost_per_failure)
        return failed + [i for i in range(self.cases) if not self.fails[i]]


class CaseOrder:
    """What the submissions of each suite did on each case: the latest suites, at most
    ``max_suites`` of them and ``max_cases`` cases in all (the least recently used go first);
    a suite is kept once a submission of it was judged. Thread-safe."""

    def __init__(self, max_suites: int = 4096, max_cases: int = 1_000_000):
        self.max_suites, self.max_cases = max_suites, max_cases
        self._lock = threading.Lock()
        self._suites: OrderedDict[str, _SuiteStats] = OrderedDict()
        self._cases = 0  # cases of the suites kept

    def _stats(self, digest: str, suite: TestSuite, create: bool) -> _SuiteStats | None:
        stats = self._suites.get(digest)
        if stats is not None and stats.cases != len(suite.cases):
            self._cases -= self._suites.pop(digest).cases
            stats = None
        if stats is None:
            if not create or len(suite.cases) > self.max_cases:
                return None
            stats = self._suites[digest] = _SuiteStats(len(suite.cases))
            self._cases += stats.cases
            while len(self._suites) > self.max_suites or self._cases > self.max_cases:
                self._cases -= self._suites.popitem(last=False)[1].cases
        self._suites.move_to_end(digest)
        return stats

    def order(self, digest: str, suite: TestSuite) -> list[int]:
        """The positions of ``suite``'s cases in the order to run them."""
        with self._lock:
            stats = self._stats(digest, suite, create=False)
            return stats.order() if stats is not None else list(range(len(suite.cases)))

    def learn(self, digest: str, suite: TestSuite, verdict: Verdict) -> None:
        """Count a judged submission's cases (``verdict.cases`` in suite order, one per case)."""
        if len(verdict.cases) != len(suite.cases):
            return  # ended early (a sandbox failure, a broken task): nothing to learn
        with self._lock:
            stats = self._stats(digest, suite, create=True)
            if stats is None:
                return  # a suite larger than everything kept
            for i, c in enumerate(verdict.cases):
                if c.outcome is Outcome.SKIPPED:
                    continue
                stats.runs[i] += 1
                stats.seconds[i] += c.cpu_seconds
                stats.fails[i] += c.outcome in _FAILED

    def __len__(self) -> int:
        with self._lock:
            return len(self._suites)

    @property
    def cases_kept(self) -> int:
        """Cases of the suites kept (each costs 24 bytes)."""
        with self._lock:
            return self._cases


def permute(task: Task, order: list[int]) -> Task:
    """``task`` with its cases in ``order`` (positions of the suite)."""
    if order == list(range(len(order))):
        return task
    cases = task.suite.cases
    return replace(task, suite=TestSuite(tuple(cases[i] for i in order), origin=task.suite.origin))


def restore(verdict: Verdict, order: list[int]) -> Verdict:
    """``verdict`` of a permuted task with its case results back in the suite's order (a verdict
    that ended before every case has only those run, in suite order)."""
    if order == list(range(len(order))) or not verdict.cases:
        return verdict
    placed = sorted(zip(order, verdict.cases), key=lambda pair: pair[0])
    return replace(verdict, cases=[c for _, c in placed])


__all__ = ["CASE_OVERHEAD", "CaseOrder", "permute", "restore"]
