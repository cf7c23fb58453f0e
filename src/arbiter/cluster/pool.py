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
from concurrent.futures import ThreadPoolExecutor
from typing import Any

NAMESPACE = "arbiter"
NAME_PREFIX = "arbiter-judge-pool-"
#: Method calls served at once beyond the judge slots (stats(), callers waiting for a slot).
EXTRA_CONCURRENCY = 4
#: Per-item functions kept by a pool (the latest runs').
FUNCTION_CACHE = 8


_code: str | None = None


def code_version() -> str:
    """A digest of this arbiter's code (every ``.py`` file of the package, by path and content),
    computed once per process: pools are named by it, so a detached pool left by another arbiter
    (an older release, another checkout) never judges for this one."""
    global _code
    if _code is None:
        import hashlib
        from pathlib import Path

        import arbiter

        root = Path(arbiter.__file__).parent
        digest = hashlib.sha256()
        for path in sorted(root.rglob("*.py")):
            digest.update(str(path.relative_to(root)).encode() + b"\0" + path.read_bytes() + b"\0")
        _code = digest.hexdigest()[:16]
    return _code


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
    """The body of the pool actor (a threaded Ray actor; ``cores`` judges at once).

    - ``judge(task) -> Verdict`` (:func:`arbiter.judge.judge.judge`);
    - ``score(data_source, solution_str, ground_truth, extra_info=None, **reward_options)
      -> RewardResult``: the codegen reward, as ``arbiter.verl.reward.compute_score``;
    - ``score_batch(data_sources, solution_strs, ground_truths, extra_infos=None, **opts)``: a
      list of those, in order, judged ``cores`` at once; INVALID_TASK / SANDBOX_ERROR are results
      (as ``compute_score_batch`` with ``raise_errors=False``), never raised;
    - ``run(fn, arg)``: ``fn(arg)`` holding one judge slot (the batch jobs' per-item functions);
    - ``stats() -> {"node_id", "cores", "busy", "max_busy", "done", "pid", "version", "code_version"}``;
    - ``doctor()``, ``toolchain(compiler, flags)``: this node's isolation and pinned toolchain.
    """

    def __init__(self, node_id: str, cores: int):
        from arbiter.sandbox.slots import judge_slots

        self.node_id, self.cores = node_id, cores
        self._slots = judge_slots(cores)  # (the actor's process judges for the whole node)
        self._lock = threading.Lock()
        self._busy = self._max_busy = self._done = 0
        self._fns: dict[str, Callable[[Any], Any]] = {}
        self._batch = ThreadPoolExecutor(max_workers=cores, thread_name_prefix="arbiter-pool")

    def _held(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        with self._slots:
            with self._lock:
                self._busy += 1
                self._max_busy = max(self._max_busy, self._busy)
            try:
                return fn(*args, **kwargs)
            finally:
                with self._lock:
                    self._busy -= 1
                    self._done += 1

    def run(self, fn: Any, arg: Any) -> Any:
        """``fn(arg)`` in one judge slot. ``fn``: a function, or ``[ObjectRef]`` of one (a batch
        job's per-item function with its shared context: fetched once and kept, so the items
        of a run on this node share one copy, as the threads of a local run do)."""
        if isinstance(fn, list):
            fn = self._function(fn[0])
        return self._held(fn, arg)

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
        from arbiter.judge.judge import judge

        return self._held(judge, task)

    def score(self, data_source: Any, solution_str: Any, ground_truth: Any, extra_info: Any = None,
              **kwargs: Any) -> Any:
        from arbiter.rewards.codegen import RewardOptions

        return self._score((data_source, solution_str, ground_truth, extra_info), RewardOptions.from_kwargs(kwargs))

    def _score(self, item: tuple[Any, Any, Any, Any], opts: Any, raise_errors: bool = True) -> Any:
        from arbiter.judge.judge import judge
        from arbiter.judge.verdict import Outcome
        from arbiter.rewards.codegen import reward_result, finish, prepare

        try:
            prep = prepare(*item, opts)
        except ValueError as exc:  # a non-code data_source or a bad override
            if raise_errors:
                raise
            return reward_result(0.0, Outcome.INVALID_TASK.value, 0, 0, str(exc), time.monotonic())
        verdict = self._held(judge, prep.task) if prep.task is not None else None
        return finish(prep, verdict, opts, raise_errors=raise_errors)

    def score_batch(self, data_sources: Sequence[Any], solution_strs: Sequence[Any], ground_truths: Sequence[Any],
                    extra_infos: Sequence[Any] | None = None, **kwargs: Any) -> list[Any]:
        from arbiter.rewards.codegen import RewardOptions

        opts = RewardOptions.from_kwargs(kwargs)
        extras = list(extra_infos) if extra_infos is not None else [None] * len(data_sources)
        items = zip(data_sources, solution_strs, ground_truths, extras)
        return list(self._batch.map(lambda item: self._score(item, opts, raise_errors=False), items))

    def stats(self) -> dict[str, Any]:
        import arbiter

        with self._lock:
            return {"node_id": self.node_id, "cores": self.cores, "busy": self._busy, "max_busy": self._max_busy,
                    "done": self._done, "pid": os.getpid(), "version": getattr(arbiter, "__version__", ""),
                    "code_version": code_version()}

    def reset_stats(self) -> None:
        with self._lock:
            self._max_busy, self._done = self._busy, 0

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
