"""Failures found first: the order in which an all-or-nothing submission's cases are run.

Per suite (by digest), what earlier submissions did on each case: how often it ran, failed, and
what it cost. Cases that failed before come first, cheapest expected cost per failure first;
then the others by input size, smallest first. :func:`permute` gives the task to judge and
:func:`restore` puts its case results back in the suite's order. See ``docs/step.md``.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass, field, replace

from arbiter.judge import jsonvalues
from arbiter.judge.task import Task
from arbiter.judge.testsuite import CallCase, TestSuite
from arbiter.judge.verdict import Outcome, Verdict

#: Seconds a case costs beyond its CPU time (the fork, the reply): keeps costs above zero.
CASE_OVERHEAD = 0.003
_FAILED = (Outcome.WA, Outcome.TLE, Outcome.MLE, Outcome.RE, Outcome.OLE)


def input_size(case) -> int:
    """Bytes of a case's input: stdin, or a call's arguments as JSON."""
    if isinstance(case, CallCase):
        try:
            return len(jsonvalues.dumps([list(case.args), case.kwargs]))
        except (TypeError, ValueError, RecursionError):
            return 1 << 30
    return len(case.stdin)


@dataclass
class _SuiteStats:
    sizes: list[int]
    runs: list[int] = field(default_factory=list)
    fails: list[int] = field(default_factory=list)
    seconds: list[float] = field(default_factory=list)

    def __post_init__(self) -> None:
        n = len(self.sizes)
        self.runs, self.fails, self.seconds = [0] * n, [0] * n, [0.0] * n

    def order(self) -> list[int]:
        n = len(self.sizes)

        def failed_key(i: int) -> tuple[float, int]:
            cost = self.seconds[i] / self.runs[i] + CASE_OVERHEAD
            return (cost * self.runs[i] / self.fails[i], i)  # expected cost per failure found

        failed = sorted((i for i in range(n) if self.fails[i]), key=failed_key)
        rest = sorted((i for i in range(n) if not self.fails[i]), key=lambda i: (self.sizes[i], i))
        return failed + rest


class CaseOrder:
    """What the submissions of each suite did on each case (the ``max_suites`` latest suites);
    thread-safe."""

    def __init__(self, max_suites: int = 4096):
        self.max_suites = max_suites
        self._lock = threading.Lock()
        self._suites: OrderedDict[str, _SuiteStats] = OrderedDict()

    def _stats(self, digest: str, suite: TestSuite) -> _SuiteStats:
        stats = self._suites.get(digest)
        if stats is None or len(stats.sizes) != len(suite.cases):
            stats = self._suites[digest] = _SuiteStats([input_size(c) for c in suite.cases])
            while len(self._suites) > self.max_suites:
                self._suites.popitem(last=False)
        self._suites.move_to_end(digest)
        return stats

    def order(self, digest: str, suite: TestSuite) -> list[int]:
        """The positions of ``suite``'s cases in the order to run them."""
        with self._lock:
            return self._stats(digest, suite).order()

    def learn(self, digest: str, suite: TestSuite, verdict: Verdict) -> None:
        """Count a judged submission's cases (``verdict.cases`` in suite order, one per case)."""
        if len(verdict.cases) != len(suite.cases):
            return  # ended early (a sandbox failure, a broken task): nothing to learn
        with self._lock:
            stats = self._stats(digest, suite)
            for i, c in enumerate(verdict.cases):
                if c.outcome is Outcome.SKIPPED:
                    continue
                stats.runs[i] += 1
                stats.seconds[i] += c.cpu_seconds
                stats.fails[i] += c.outcome in _FAILED

    def __len__(self) -> int:
        with self._lock:
            return len(self._suites)


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


__all__ = ["CASE_OVERHEAD", "CaseOrder", "input_size", "permute", "restore"]
