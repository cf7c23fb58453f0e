"""A step judge's queued work: :class:`Job` (one submission, or an opaque call) and :class:`SuiteJobs`
(one suite's longest-first jobs, one place in the queue). See docs/step.md ("No tail")."""

from __future__ import annotations

from collections import deque
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any, Callable

from arbiter.judge.step.settings import Settings
from arbiter.judge.task import Task


@dataclass
class Job:
    task: Task | None  # None for an opaque job (StepJudge.call)
    out: Future
    settings: Settings
    digest: str | None = None
    key: str | None = None  # set when this job owns the key's run (VerdictStore.claim)
    cost: float = 0.0
    order: list[int] = field(default_factory=list)
    call: tuple[Callable[[Any], Any], Any] | None = None  # an opaque job (StepJudge.call)
    inline: bool = False  # judged in the caller's thread (StepJudge.judge_here), not in a slot
    hint: float | None = None


@dataclass(eq=False)
class SuiteJobs:
    """The queued longest-first jobs of one suite, in submission order: one place in the queue,
    at the suite's prediction (:meth:`StepJudge._rerank` moves it when the suite is judged)."""

    digest: str
    cost: float
    entry: int  # the seq of its live heap entry (older ones are stale)
    jobs: deque = field(default_factory=deque)
