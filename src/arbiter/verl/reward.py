"""The verl reward plug-in: ``compute_score`` (per sample), ``compute_score_batch`` (verl's
``batch`` reward manager) and ``compute_score_async`` (coroutine; verl awaits it).

Thin wrappers over :mod:`arbiter.rewards.codegen` (the reward of one response) and
:func:`arbiter.pipelines.codegen.stream.iter_scores` (many, in parallel). From a verl config::

    reward:                                  # verl >= 0.9 (<= 0.8: top level, see docs/verl.md)
      custom_reward_function:
        path: pkg://arbiter.verl.reward      # or the file path of this module
        name: compute_score                  # or compute_score_async
        reward_kwargs: {on_sandbox_error: raise, on_invalid: raise, parity: null}

The rules and result keys: ``docs/codegen.md`` ("The reward"); verl versions: ``docs/verl.md``.
"""

from __future__ import annotations

import asyncio
import functools
import os
import threading
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from arbiter.judge.judge import default_workers
from arbiter.judge.step import default_step_judge
from arbiter.judge.testsuite import InvalidTestSuite
from arbiter.judge.verdict import Outcome
from arbiter.pipelines.codegen.stream import iter_scores
from arbiter.rewards.codegen import (PARITY_MODES, RESULT_KEYS, InvalidTask, Prepared, RewardOptions, RewardResult,
                                     SandboxFailure, finish, load_suite, prepare, row_label, row_time_limit)
from arbiter.rewards.routes import route
from arbiter.verl.fileload import adopt

_executor: tuple[int, ThreadPoolExecutor] | None = None
_lock = threading.Lock()


def compute_score(data_source: Any, solution_str: Any, ground_truth: Any, extra_info: Any = None,
                  **kwargs: Any) -> RewardResult:
    """Score one response (verl ``custom_reward_function``; positional or keyword call shapes).
    ``**kwargs``: :class:`RewardOptions`, and ``url=`` (default ``ARBITER_URL``): score through
    that ``arbiter serve`` instead, with the same result and errors (docs/serve.md). Raises ``ValueError`` (non-code data_source, bad
    option), ``TypeError`` (unknown option), :class:`InvalidTask`, :class:`SandboxFailure`."""
    url = _remote_url(kwargs)
    if url:
        RewardOptions.from_kwargs(kwargs)  # a bad option fails here, as in-process
        from arbiter.client import shared_client  # httpx only when used (seconds of import on a busy node)

        return shared_client(url).score([(data_source, solution_str, ground_truth, extra_info)], kwargs)[0]
    opts = RewardOptions.from_kwargs(kwargs)
    prep = prepare(data_source, solution_str, ground_truth, extra_info, opts)
    verdict = None
    if prep.task is not None:  # the process's step judge: each judge holds one of its judge slots
        verdict = default_step_judge().judge(prep.task, hint=prep.hint, settings=opts.step)
    return finish(prep, verdict, opts)


def compute_score_float(data_source: Any, solution_str: Any, ground_truth: Any, extra_info: Any = None,
                        **kwargs: Any) -> float:
    """:func:`compute_score`'s ``score`` alone. Same arguments and errors."""
    return compute_score(data_source, solution_str, ground_truth, extra_info, **kwargs)["score"]


def _as_list(values: Any, name: str) -> list:
    if values is None:
        raise ValueError(f"{name} is required")
    if isinstance(values, (str, bytes, Mapping)):
        raise ValueError(f"{name} must be a sequence of per-response values, got a {type(values).__name__}")
    return list(values)


def _int_keys(data_source: Any) -> bool:
    """The route's :attr:`~arbiter.rewards.routes.Route.int_keys` (False for a non-code source:
    reported where it is judged)."""
    try:
        return route(data_source).int_keys
    except ValueError:
        return False


def _check_rows(sources: list, truths: list, extras: list, row_limits: bool) -> None:
    """Raise :class:`InvalidTask` for the first unusable row, before anything is judged."""
    for ds, gt, ei in zip(sources, truths, extras):
        label = row_label(ds, ei)
        try:
            load_suite(gt, label, _int_keys(ds))  # (as the judging decodes it: one decode, cached)
            if row_limits:
                row_time_limit(ei)
        except InvalidTestSuite as exc:
            raise InvalidTask(str(exc), row=label) from exc
        except ValueError as exc:  # extra_info.time_limit
            raise InvalidTask(f"row {label!r}: {exc}", row=label) from exc


def compute_score_batch(data_sources: Sequence[Any], solution_strs: Sequence[Any], ground_truths: Sequence[Any],
                        extra_infos: Sequence[Any] | None = None, **kwargs: Any) -> list[RewardResult]:
    """Score a batch on all cores (verl ``reward_manager=batch``), one result per response, in
    order. Raises ``ValueError`` (lengths differ, a non-code data_source: before judging),
    ``TypeError``, :class:`InvalidTask` (``on_invalid="raise"``: before judging),
    :class:`SandboxFailure` (``on_sandbox_error="raise"``: after the batch, ``.results`` all)."""
    url = _remote_url(kwargs)
    opts = RewardOptions.from_kwargs(kwargs)
    sources = _as_list(data_sources, "data_sources")
    solutions = _as_list(solution_strs, "solution_strs")
    truths = _as_list(ground_truths, "ground_truths")
    extras = [None] * len(sources) if extra_infos is None else _as_list(extra_infos, "extra_infos")
    lengths = {"data_sources": len(sources), "solution_strs": len(solutions), "ground_truths": len(truths),
               "extra_infos": len(extras)}
    if len(set(lengths.values())) != 1:
        raise ValueError(f"compute_score_batch: lengths differ: {lengths}")
    _check_sources(sources, extras)  # a non-code source fails the batch before any judging
    if opts.on_invalid == "raise":
        _check_rows(sources, truths, extras, row_limits=opts.time_limit is None)
    if url:  # the server reports every row; the batch's own raising rules apply below
        from arbiter.client import shared_client

        remote = dict(kwargs, on_sandbox_error="report", on_invalid="zero")
        results = shared_client(url).score(list(zip(sources, solutions, truths, extras)), remote)
    else:
        results = list(iter_scores(zip(sources, solutions, truths, extras), opts, raise_errors=False,
                                   lookahead=len(sources)))  # the whole batch, longest first
    failed = [i for i, r in enumerate(results) if r["verdict"] == Outcome.SANDBOX_ERROR.value]
    if opts.on_sandbox_error == "raise" and failed:
        i = failed[0]
        row = row_label(sources[i], extras[i])
        raise SandboxFailure(f"{len(failed)} of {len(results)} responses hit SANDBOX_ERROR after retries; first "
                             f"(item {i}, {row}): {results[i]['reason']}", row=row, reason=results[i]["reason"],
                             results=results)
    return results


def _check_sources(sources: list[Any], extras: list[Any]) -> None:
    """``ValueError`` naming the first item (index and row) whose data_source is not a code
    source; each distinct data_source is checked once."""
    first: dict[str, int] = {}
    for i, ds in enumerate(sources):
        first.setdefault(repr(ds), i)
    for i in first.values():
        try:
            route(sources[i])
        except ValueError as exc:
            raise ValueError(f"compute_score_batch: item {i} ({row_label(sources[i], extras[i])}): {exc}") from None


def _remote_url(kwargs: dict[str, Any]) -> str:
    """``url=`` (taken out of ``kwargs``) or ``ARBITER_URL``; ``""`` for in-process scoring."""
    return kwargs.pop("url", None) or os.environ.get("ARBITER_URL", "")


def _async_executor() -> ThreadPoolExecutor:
    """One thread per core, per process (recreated after a fork: verl's prime manager forks)."""
    global _executor
    with _lock:
        if _executor is None or _executor[0] != os.getpid():
            _executor = (os.getpid(), ThreadPoolExecutor(max_workers=default_workers(),
                                                         thread_name_prefix="arbiter-reward"))
        return _executor[1]


async def compute_score_async(data_source: Any, solution_str: Any, ground_truth: Any, extra_info: Any = None,
                              **kwargs: Any) -> RewardResult:
    """:func:`compute_score` as a coroutine, judged in a shared pool of one thread per core (the
    event loop never blocks). Same arguments, result and errors."""
    call = functools.partial(compute_score, data_source, solution_str, ground_truth, extra_info, **kwargs)
    return await asyncio.get_running_loop().run_in_executor(_async_executor(), call)


async def compute_score_batch_async(data_sources: Sequence[Any], solution_strs: Sequence[Any],
                                    ground_truths: Sequence[Any], extra_infos: Sequence[Any] | None = None,
                                    **kwargs: Any) -> list[RewardResult]:
    """:func:`compute_score_batch` as a coroutine (in a worker thread). Same arguments and errors."""
    call = functools.partial(compute_score_batch, data_sources, solution_strs, ground_truths, extra_infos, **kwargs)
    return await asyncio.get_running_loop().run_in_executor(None, call)


adopt(globals(), "arbiter.verl.reward")  # verl may load this file by path: docs/verl.md

__all__ = ["InvalidTask", "PARITY_MODES", "Prepared", "RESULT_KEYS", "RewardOptions", "RewardResult", "SandboxFailure",
           "compute_score", "compute_score_async", "compute_score_batch", "compute_score_batch_async",
           "compute_score_float", "iter_scores", "prepare", "row_label", "row_time_limit"]
