"""Where the reward-loop manager's tasks are judged: the node's shared judge pool, or this process.

:class:`Judges` is the small interface (``async judge(tasks) -> verdicts``, same order);
:func:`judges_for` picks the per-node judge-pool Ray actor when running inside Ray (every
reward-loop actor on a node shares it, so the node runs at most one judge per core), else
:class:`LocalJudges` (this process's step judge: one judge per core). See ``docs/verl.md`` ("One judge pool
per node").
"""

from __future__ import annotations

import asyncio
import logging
from typing import Protocol

from arbiter.judge.step import ON, Settings, default_step_judge
from arbiter.judge.task import Task
from arbiter.judge.verdict import Verdict

log = logging.getLogger("arbiter.verl")
POOL_CHOICES = ("auto", "node", "process")


class Judges(Protocol):
    """Judges a batch of tasks; verdicts in the order of ``tasks``. ``hints``: each task's row's
    reference CPU seconds per case (or ``None``); ``settings``: how (docs/step.md)."""

    name: str

    async def judge(self, tasks: list[Task], hints: list[float | None] | None = None,
                    settings: Settings = ON) -> list[Verdict]: ...


class LocalJudges:
    """In this process: its step judge (:func:`default_step_judge`: one judge per core, each
    holding one of the process's judge slots, :func:`arbiter.sandbox.slots.judge_slots`, shared
    with ``compute_score``)."""

    name = "process"

    async def judge(self, tasks: list[Task], hints: list[float | None] | None = None,
                    settings: Settings = ON) -> list[Verdict]:
        judges = default_step_judge()
        futures = judges.submit_many(tasks, hints or None, settings)
        # (not asyncio.wrap_future: its callbacks would be added in this thread, the main one)
        return list(await asyncio.gather(*judges.intake.bridge(futures, asyncio.get_running_loop())))


class NodeJudges:
    """The node's shared judge-pool Ray actor (:func:`arbiter.cluster.pool.node_pool`): the
    batch goes to it in one call; it runs at most one judge per core of the node, longest first
    across every caller's batches, reusing verdicts between them."""

    name = "node"

    def __init__(self, pool):
        self.pool = pool

    async def judge(self, tasks: list[Task], hints: list[float | None] | None = None,
                    settings: Settings = ON) -> list[Verdict]:
        return list(await self.pool.judge_batch.remote(tasks, hints, settings))


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
