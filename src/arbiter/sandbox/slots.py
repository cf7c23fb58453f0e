"""The one bound on judges running at once in a process: one per core it may use.

:func:`judge_slots` is the process's :class:`JudgeSlots` (a forked child gets its own); the
step judges that judge in this process's threads hold one slot per running judge: the process's
(:func:`arbiter.judge.step.default_step_judge`, which verl's ``compute_score``, batch and
reward-loop manager use) and the node's Ray judge pool (sized to its node's cores). More judges
than cores end no step sooner (docs/step.md, "No tail"): they burn more CPU, and a case starved of
its core past the run-queue allowance is run again after a pause (docs/sandbox.md,
"Starved cases"). The sandboxes themselves are the warm pool's
(:func:`arbiter.sandbox.pool.default_pool`). See docs/sandbox.md ("Warm pool").
"""

from __future__ import annotations

import os
import threading

_lock = threading.Lock()
_slots: "tuple[int, JudgeSlots] | None" = None  # (the pid it belongs to, the slots)


def cores() -> int:
    """The cores this process may use."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:
        return max(1, os.cpu_count() or 1)


class JudgeSlots:
    """``size`` judges at once (a context manager holds one slot); :meth:`resize` changes the
    bound for the judges that come next."""

    def __init__(self, size: int):
        self._cond = threading.Condition()
        self.size = max(1, int(size))
        self.busy = 0

    def resize(self, size: int) -> None:
        with self._cond:
            self.size = max(1, int(size))
            self._cond.notify_all()

    def __enter__(self) -> "JudgeSlots":
        with self._cond:
            self._cond.wait_for(lambda: self.busy < self.size)
            self.busy += 1
        return self

    def __exit__(self, *exc: object) -> None:
        with self._cond:
            self.busy -= 1
            self._cond.notify()


def judge_slots(size: int | None = None) -> JudgeSlots:
    """This process's judge slots (made with ``size``, default :func:`cores`, at the first call
    in the process; a later ``size`` resizes them)."""
    global _slots
    with _lock:
        if _slots is None or _slots[0] != os.getpid():
            _slots = (os.getpid(), JudgeSlots(size or cores()))
        elif size is not None:
            _slots[1].resize(size)
        return _slots[1]
