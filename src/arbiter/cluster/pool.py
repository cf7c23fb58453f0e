"""The per-node judge pool: one named Ray actor per node, shared by every process on that node.

:func:`node_pool` returns the pool of the calling process's node, creating it if needed
(``arbiter-judge-pool-<code version>-<node_id>`` in namespace ``arbiter``, pinned to its node,
detached so it outlives whichever worker created it; the code version keeps pools of another
arbiter from judging for this one). Its methods judge in this actor's process through the
judge layer with at most ``cores`` judges at once (the node's CPU resource), whatever the number
of callers; :meth:`JudgePool.stats` counts them. See ``docs/cluster.md`` ("The judge pool").
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

NAMESPACE = "arbiter"
NAME_PREFIX = "arbiter-judge-pool-"
#: Method calls served at once beyond the judge slots (stats(), callers waiting for their verdicts:
#: a call holds no slot while it waits, so many reward actors' batches can be queued at once).
EXTRA_CONCURRENCY = 64
#: Per-item functions kept by a pool (the latest runs').
FUNCTION_CACHE = 8


def code_version() -> str:
    """A digest of this arbiter's code (:func:`arbiter.judge.step.key.code_digest`: every source
    file of the package, by path and content), computed once per process: pools are named by it,
    so a detached pool left by another arbiter (an older release, another checkout) never judges
    for this one."""
    from arbiter.judge.step.key import code_digest

    return code_digest()[:16]


def pool_name(node_id: str) -> str:
    """The pool actor's name for ``node_id`` (hex, as ``ray.get_runtime_context().get_node_id()``)
    and this arbiter's :func:`code_version`."""
    return f"{NAME_PREFIX}{code_version()}-{node_id}"


def node_cores(node_id: str) -> int:
    """The node's ``CPU`` resource as Ray knows it (a simulated node has its own), at most this
    machine's cores and at least 1."""
    import ray

    from arbiter.judge.judge import default_workers

    for node in ray.nodes():
        if node.get("NodeID") == node_id and node.get("Alive"):
            cpus = int(node.get("Resources", {}).get("CPU", 0))
            return max(1, min(cpus or default_workers(), default_workers()))
    raise LookupError(f"no live Ray node {node_id}")


class JudgePool:
    """The body of the pool actor (a threaded Ray actor; ``cores`` judges at once, through one
    :class:`~arbiter.judge.step.StepJudge`: longest predicted first across every caller, identical
    submissions judged once, failures first; docs/step.md).

    - ``judge(task) -> Verdict`` (:func:`arbiter.judge.judge.judge`, through the step judge);
    - ``judge_batch(tasks, hints=None, settings=None) -> [Verdict]``: a reward-loop batch at once;
    - ``score(data_source, solution_str, ground_truth, extra_info=None, **reward_options)
      -> RewardResult``: the codegen reward, as ``arbiter.verl.reward.compute_score``;
    - ``score_batch(data_sources, solution_strs, ground_truths, extra_infos=None, **opts)``: a
      list of those, in order, judged ``cores`` at once; INVALID_TASK / SANDBOX_ERROR are results
      (as ``compute_score_batch`` with ``raise_errors=False``), never raised;
    - ``run(fn, arg)``: ``fn(arg)`` holding one judge slot (the batch jobs' per-item functions);
    - ``stats() -> {"node_id", "cores", "busy", "max_busy", "done", "hits", "joined", "pid", "version",
      "code_version"}``;
    - ``doctor()``, ``toolchain(compiler, flags)``: this node's isolation and pinned toolchain.
    """

    def __init__(self, node_id: str, cores: int):
        from arbiter.judge.step import StepJudge
        from arbiter.sandbox.slots import judge_slots

        self.node_id, self.cores = node_id, cores
        # the actor's process judges for the whole node: its judge slots are the node's cores
        self.step = StepJudge(cores, slots=judge_slots(cores))
        self._lock = threading.Lock()
        self._fns: dict[str, Callable[[Any], Any]] = {}

    def run(self, fn: Any, arg: Any) -> Any:
        """``fn(arg)`` in one judge slot. ``fn``: a function, or ``[ObjectRef]`` of one (a batch
        job's per-item function with its shared context: fetched once and kept, so the items
        of a run on this node share one copy, as the threads of a local run do)."""
        if isinstance(fn, list):
            fn = self._function(fn[0])
        return self.step.call(fn, arg).result()

    def _function(self, ref: Any) -> Callable[[Any], Any]:
        import ray

        key = ref.hex()
        with self._lock:
            hit = self._fns.get(key)
        if hit is None:
            hit = ray.get(ref)
            with self._lock:
                hit = self._fns.setdefault(key, hit)
                while len(self._fns) > FUNCTION_CACHE:
                    self._fns.pop(next(iter(self._fns)))
        return hit

    def judge(self, task: Any) -> Any:
        return self.step.judge(task)

    def judge_batch(self, tasks: Sequence[Any], hints: Sequence[Any] | None = None, settings: Any = None) -> list[Any]:
        from arbiter.judge.step import ON

        futures = self.step.submit_many(list(tasks), list(hints) if hints is not None else None, settings or ON)
        return [f.result() for f in futures]

    def score(self, data_source: Any, solution_str: Any, ground_truth: Any, extra_info: Any = None,
              **kwargs: Any) -> Any:
        from arbiter.rewards.codegen import RewardOptions

        return self._score((data_source, solution_str, ground_truth, extra_info), RewardOptions.from_kwargs(kwargs))

    def _prepare(self, item: tuple[Any, Any, Any, Any], opts: Any, raise_errors: bool) -> Any:
        from arbiter.judge.verdict import Outcome
        from arbiter.rewards.codegen import prepare, reward_result

        try:
            return prepare(*item, opts)
        except ValueError as exc:  # a non-code data_source or a bad override
            if raise_errors:
                raise
            return reward_result(0.0, Outcome.INVALID_TASK.value, 0, 0, str(exc), time.monotonic())

    def _score(self, item: tuple[Any, Any, Any, Any], opts: Any, raise_errors: bool = True) -> Any:
        from arbiter.rewards.codegen import finish

        prep = self._prepare(item, opts, raise_errors)
        if isinstance(prep, dict):
            return prep
        verdict = self.step.judge(prep.task, hint=prep.hint, settings=opts.step) if prep.task is not None else None
        return finish(prep, verdict, opts, raise_errors=raise_errors)

    def score_batch(self, data_sources: Sequence[Any], solution_strs: Sequence[Any], ground_truths: Sequence[Any],
                    extra_infos: Sequence[Any] | None = None, **kwargs: Any) -> list[Any]:
        from arbiter.rewards.codegen import RewardOptions, finish

        opts = RewardOptions.from_kwargs(kwargs)
        extras = list(extra_infos) if extra_infos is not None else [None] * len(data_sources)
        preps = [self._prepare(item, opts, False) for item in zip(data_sources, solution_strs, ground_truths, extras)]
        judged = [i for i, p in enumerate(preps) if not isinstance(p, dict) and p.task is not None]
        futures = dict(zip(judged, self.step.submit_many([preps[i].task for i in judged],
                                                         [preps[i].hint for i in judged], opts.step)))
        return [p if isinstance(p, dict) else finish(p, futures[i].result() if i in futures else None, opts,
                                                     raise_errors=False)
                for i, p in enumerate(preps)]

    def stats(self) -> dict[str, Any]:
        import arbiter

        st = self.step.stats()
        return {"node_id": self.node_id, "cores": self.cores, "busy": st["running"], "max_busy": st["max_running"],
                "done": st["done"], "hits": st["hits"], "joined": st["joined"], "pid": os.getpid(),
                "version": getattr(arbiter, "__version__", ""), "code_version": code_version()}

    def reset_stats(self) -> None:
        self.step.reset_counts()

    def doctor(self) -> dict[str, Any]:
        from arbiter.sandbox.doctor import diagnose

        d = diagnose()
        return {"isolated": d.isolated, "failed": [f"{c.name}: {c.detail}" for c in d.checks if c.ok is False]}

    def toolchain(self, compiler: str = "g++", flags: Sequence[str] = ()) -> dict[str, Any] | None:
        from arbiter.languages.cpp.toolchain import probe_toolchain

        try:
            return probe_toolchain(compiler, tuple(flags)).to_dict()
        except (OSError, RuntimeError, ValueError):
            return None


def pool_on(node_id: str, *, cores: int | None = None) -> Any:
    """The pool actor of ``node_id`` (created if it does not exist; Ray must be initialised)."""
    import ray
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    n = cores or node_cores(node_id)
    actor = ray.remote(JudgePool).options(
        name=pool_name(node_id), namespace=NAMESPACE, get_if_exists=True, lifetime="detached",
        num_cpus=0, max_concurrency=n + EXTRA_CONCURRENCY, max_restarts=0,
        scheduling_strategy=NodeAffinitySchedulingStrategy(node_id=node_id, soft=False))
    return actor.remote(node_id, n)


def node_pool() -> Any:
    """The judge pool of the calling process's node (a Ray actor handle), created if needed.
    Call from a Ray driver, task or actor (``ray.init`` done)."""
    import ray

    return pool_on(ray.get_runtime_context().get_node_id())


__all__ = ["JudgePool", "NAMESPACE", "NAME_PREFIX", "code_version", "node_cores", "node_pool", "pool_name", "pool_on"]
