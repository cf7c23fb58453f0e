"""How long a submission is predicted to take, to start the long ones first (docs/step.md).

Before any submission of a suite has been judged: its size (cases and input bytes), when the row
gives one its reference solution's measured CPU seconds per case (``hint``), and the risk of a
time limit (the share of submissions seen that ran into one, times the task's CPU limit). After:
the mean judge seconds of the suite's submissions seen so far in this run or pool.
"""

from __future__ import annotations

import math
import threading
from collections import OrderedDict

from arbiter.judge.task import Task

#: Prior judge seconds per case and per input byte (a warm fork-per-case Python run).
CASE_SECONDS = 0.01
BYTE_SECONDS = 2e-8
#: Prior fraction of a reference's per-case CPU seconds a submission spends per case.
HINT_SHARE = 0.5


def prior_seconds(task: Task, hint: float | None = None) -> float:
    """The prediction for a suite never judged: ``CASE_SECONDS`` per case, ``BYTE_SECONDS``
    per input byte, plus ``HINT_SHARE x hint`` per case (``hint``: the row's
    ``reference_cpu_seconds``)."""
    cases = task.suite.cases
    size = sum(len(getattr(c, "stdin", b"")) for c in cases)
    per_case = CASE_SECONDS + HINT_SHARE * hint_seconds(hint)
    return len(cases) * per_case + size * BYTE_SECONDS


def hint_seconds(hint: object) -> float:
    """``hint`` as seconds: a positive finite number, else 0 (an unusable hint, such as the text
    ``"0.5"``, is no hint: it must not raise once the task's key is claimed)."""
    if isinstance(hint, bool) or not isinstance(hint, (int, float)) or not math.isfinite(hint) or hint <= 0:
        return 0.0
    return float(hint)


class CostModel:
    """Judge seconds seen per suite digest (the ``max_suites`` latest); thread-safe."""

    def __init__(self, max_suites: int = 4096):
        self.max_suites = max_suites
        self._lock = threading.Lock()
        self._seen: OrderedDict[str, tuple[int, float]] = OrderedDict()
        self._judged = self._timed_out = 0

    def predict(self, digest: str | None, task: Task, hint: float | None = None) -> float:
        """Predicted judge seconds of ``task`` (whose suite has ``digest``)."""
        if digest is not None:
            with self._lock:
                seen = self._seen.get(digest)
            if seen is not None:
                return seen[1] / seen[0]
        with self._lock:
            risk = self._timed_out / self._judged if self._judged else 0.0
        return prior_seconds(task, hint) + risk * task.limits.cpu_seconds

    def observe(self, digest: str, seconds: float, timed_out: bool = False) -> None:
        """A judged submission of the suite ``digest``: its judge seconds, whether it hit a time limit."""
        with self._lock:
            self._judged += 1
            self._timed_out += bool(timed_out)
            n, total = self._seen.pop(digest, (0, 0.0))
            self._seen[digest] = (n + 1, total + max(0.0, seconds))
            while len(self._seen) > self.max_suites:
                self._seen.popitem(last=False)


__all__ = ["BYTE_SECONDS", "CASE_SECONDS", "CostModel", "HINT_SHARE", "prior_seconds"]
