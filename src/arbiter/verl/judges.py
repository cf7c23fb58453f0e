"""Where the reward-loop manager's tasks are judged: the node's shared judge pool, or this process.

:class:`Judges` is the small interface (``async judge(tasks) -> verdicts``, same order);
:func:`judges_for` picks the per-node judge-pool Ray actor when running inside Ray (every
reward-loop actor on a node shares it, so the node runs at most one judge per core), else
:class:`LocalJudges` (one judge per core of this process). See ``docs/verl.md`` ("One judge pool
per node").
"""

from __future__ import annotations

import asyncio
import logging
import os
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Protocol

from arbiter.judge.judge import default_workers, judge
from arbiter.judge.task import Task
from arbiter.judge.verdict import Verdict
from arbiter.sandbox.slots import judge_slots

log = logging.getLogger("arbiter.verl")
POOL_CHOICES = ("auto", "node", "process")


class Judges(Protocol):
    """Judges a batch of tasks; verdicts in the order of ``tasks``."""

    name: str

    async def judge(self, tasks: list[Task]) -> list[Verdict]: ...


class LocalJudges:
    """In this process: one thread per core (per process, recreated after a fork), each judge
    holding one of the process's judge slots (:func:`arbiter.sandbox.slots.judge_slots`)."""

    name = "process"
    _lock = threading.Lock()
    _executor: tuple[int, ThreadPoolExecutor] | None = None

    @classmethod
    def _pool(cls) -> ThreadPoolExecutor:
        with cls._lock:
            if cls._executor is None or cls._executor[0] != os.getpid():
                cls._executor = (os.getpid(), ThreadPoolExecutor(max_workers=default_workers(),
                                                                 thread_name_prefix="arbiter-verl-judge"))
            return cls._executor[1]

    async def judge(self, tasks: list[Task]) -> list[Verdict]:
        loop = asyncio.get_running_loop()
        return list(await asyncio.gather(*(loop.run_in_executor(self._pool(), _judge_in_slot, t) for t in tasks)))


def _judge_in_slot(task: Task) -> Verdict:
    """One judge, holding one of the process's judge slots (shared with ``compute_score``)."""
    with judge_slots():
        return judge(task)


class NodeJudges:
    """The node's shared judge-pool Ray actor (:func:`arbiter.cluster.pool.node_pool`): the
    batch's tasks go to it at once; it runs at most one judge per core of the node."""

    name = "node"

    def __init__(self, pool):
        self.pool = pool

    async def judge(self, tasks: list[Task]) -> list[Verdict]:
        return list(await asyncio.gather(*(self.pool.judge.remote(t) for t in tasks)))


def _in_ray() -> bool:
    try:
        import ray
    except ImportError:
        return False
    return ray.is_initialized()


def judges_for(choice: str = "auto") -> Judges:
    """``"node"``: the per-node Ray pool (an error outside Ray); ``"process"``: this process;
    ``"auto"``: the node pool when Ray is initialised here (a verl reward-loop actor), else this
    process."""
    if choice not in POOL_CHOICES:
        raise ValueError(f"arbiter pool must be one of {POOL_CHOICES}, got {choice!r}")
    if choice == "process" or (choice == "auto" and not _in_ray()):
        return LocalJudges()
    if not _in_ray():
        raise RuntimeError("arbiter pool='node' needs Ray: run inside verl's Ray reward-loop actors or ray.init() first")
    from arbiter.cluster.pool import node_pool  # lazy: arbiter works without Ray

    return NodeJudges(node_pool())


__all__ = ["Judges", "LocalJudges", "NodeJudges", "POOL_CHOICES", "judges_for"]
