"""The correctness-gated, re-timed speedup reward of a candidate rewrite of a PIE source program, as a list
of stages over one row and one response. The rules of every stage: ``docs/pie.md`` ("Re-timing a candidate").
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Literal

from arbiter.checkers.spec import CheckerSpec
from arbiter.datasets.pie.cases import load_cases, select_pool
from arbiter.datasets.pie.source import as_source
from arbiter.judge.task import CompileSpec
from arbiter.judge.testsuite import InvalidTestSuite
from arbiter.judge.verdict import Outcome
from arbiter.judge.build import ToolchainUnavailable, build_cpp
from arbiter.rewards.pie.measure import SrcCountCache, speedup
from arbiter.rewards.pie.options import DEFAULT_LIMITS, Method
from arbiter.rewards.pie.result import DATASET_DEFECT, PieRewardResult, RewardCall, Stop
from arbiter.rewards.pie.rowcheck import check_source, check_target, gate_row
from arbiter.rewards.pie.transforms import make_transform
from arbiter.sandbox.limits import Limits
from arbiter.sandbox.sandbox import SandboxError
from arbiter.timing.count_cache import CountCache
from arbiter.timing.comparison import DEFAULT_METHOD, unit_of


def pick_pool(c: RewardCall) -> Stop | None:
    """Steps 2-3: the row's test cases and the pool its programs are checked on (the card's K sample)."""
    try:
        c.pool = select_pool(load_cases(c.tests, c.src.problem_id, c.label), c.src, c.k, c.rng, c.only_cases,
                             c.label)
    except InvalidTestSuite as e:
        return Stop(Outcome.INVALID_TASK, str(e))
    return None


def compile_source(c: RewardCall) -> Stop | None:
    """Step 4a: the source compiles (else a dataset defect); its toolchain is the one reported."""
    try:
        c.src_comp = build_cpp(c.src.src_code, c.spec)
    except (SandboxError, ToolchainUnavailable) as e:
        return Stop(Outcome.SANDBOX_ERROR, f"compiling the source: {e}")
    c.res.fingerprint = c.src_comp.toolchain.fingerprint
    c.res.toolchain = c.src_comp.toolchain.to_dict()
    if not c.src_comp.ok:
        c.res.dataset_defects = [{"program": "source", "id": c.src.src_id, "case": None,
                                  "outcome": Outcome.CE.value, "detail": c.src_comp.message[:300]}]
        return Stop(DATASET_DEFECT, f"row {c.label}: dataset defect: the source ({c.src.src_id}) does not "
                                    f"compile: {c.src_comp.message[:300]}")
    c.res.n_pool = len(c.pool)
    return None


#: The stages of :func:`pie_reward`, in order; each returns None to go on or the :class:`Stop` that ends the call
#: (:func:`~arbiter.rewards.pie.measure.speedup` always stops: AC with the speedup, or a failure).
STAGES: tuple[Callable[[RewardCall], Stop | None], ...] = (
    pick_pool, compile_source, check_source, check_target, gate_row, speedup)


def pie_reward(row: Any, candidate: str, tests: Any, *, transform: str = "raw",
               transform_params: Mapping[str, float] | None = None, method: Method = DEFAULT_METHOD, k: int = -1,
               rng: random.Random | None = None, checker: str | CheckerSpec = "pie",
               compile_spec: CompileSpec | None = None, limits: Limits | None = None,
               only_cases: Iterable[str] | None = None, repeats: int = 5, warmup: int = 1,
               cache: CountCache | None | Literal[False] = None, with_floor: bool = True) -> PieRewardResult:
    """The correctness-gated, re-timed speedup reward of ``candidate`` (C++ text) against the row's source.

    ``row``: anything :func:`~arbiter.datasets.pie.source.as_source` accepts; ``tests``: a PIE folder or
    ``.tar.gz``, a ``TestSuite``, a mapping or a callable ``problem_id -> TestSuite``; ``transform``: a
    :func:`~arbiter.rewards.pie.transforms.make_transform` name; ``method``: ``cycles`` (default: model cycles,
    closest to the card's gem5 speedups), ``instructions`` or ``wall``;
    ``k``/``rng``: the card's K (-1 = all); ``only_cases``: restrict the pool first; ``cache``: the source-count
    cache (``False``: none); ``with_floor``: report the startup floor and ceiling. Every option and rule:
    ``docs/pie.md``. Returns a :class:`PieRewardResult` (``reward`` None for DATASET_DEFECT / INVALID_TASK /
    SANDBOX_ERROR). Raises ``ValueError`` for a bad transform, method or K, ``TypeError``/``PieRowError`` for an
    unusable ``row``, ``CompileCommandError`` for a bad ``compile_spec`` and ``ValgrindUnavailable`` when
    cycles or instructions are asked for without valgrind.
    """
    started = time.monotonic()
    tf = make_transform(transform, **dict(transform_params or {}))
    if method not in ("instructions", "cycles", "wall"):
        raise ValueError(f"method must be 'instructions', 'cycles' or 'wall', got {method!r}")
    if isinstance(k, bool) or not isinstance(k, int) or k == 0:
        raise ValueError(f"K must be a non-zero int (-1 = all cases), got {k!r}")
    if not isinstance(candidate, str):
        raise TypeError(f"candidate must be C++ source text, got {type(candidate).__name__}")
    src = as_source(row)
    res = PieRewardResult(outcome="", reward=None, speedup=None, reason="", problem_id=src.problem_id,
                          src_id=src.src_id, tgt_id=src.tgt_id, transform=tf.name, transform_params=dict(tf.params),
                          method=method, unit=unit_of(method),
                          requested_method=method, k=k)
    call = RewardCall(src=src, candidate=candidate, tests=tests, tf=tf, method=method, k=k, rng=rng,
                      chk=checker if isinstance(checker, CheckerSpec) else CheckerSpec(checker),
                      spec=compile_spec or CompileSpec(), lim=limits or DEFAULT_LIMITS,
                      cache=SrcCountCache.default() if cache is None else cache, only_cases=only_cases,
                      repeats=repeats, warmup=warmup, with_floor=with_floor, res=res)
    stop = None
    for stage in STAGES:
        stop = stage(call)
        if stop is not None:
            break
    assert stop is not None  # the last stage always stops
    res.outcome = stop.outcome.value if isinstance(stop.outcome, Outcome) else stop.outcome
    res.reason, res.speedup = stop.reason, stop.speedup
    res.reward = tf(stop.speedup) if stop.scored else None
    res.seconds = time.monotonic() - started
    return res
