"""Options of the PIE reward: defaults, their validation before a batch, and the keys under which the
checker, limits and cases enter caches and run fingerprints.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from arbiter.checkers.spec import CheckerSpec
from arbiter.judge.testsuite import StdioCase
from arbiter.rewards.pie.transforms import make_transform
from arbiter.sandbox.limits import Limits
from arbiter.timing.comparison import DEFAULT_METHOD
from arbiter.timing.count_cache import sha256_hex as _sha


#: Native per-case limits of the correctness runs: PIE's harness runs the native binary with a 10 s timeout before
#: timing it (LearningOpt/pie ``gem5/benchmarking.py``). Valgrind runs scale these
#: (:func:`arbiter.timing.instructions.valgrind_limits`).
DEFAULT_LIMITS = Limits(cpu_seconds=10.0)


#: The most timed (or warm-up) rounds a batch accepts per case and program for the wall method: PIE's harness
#: uses 25; beyond a thousand a run is a typo, not a measurement plan.
MAX_REPEATS = 1000


Method = Literal["instructions", "cycles", "wall"]


def check_reward_options(reward_kw: Mapping[str, Any], *, need_meter: bool = True) -> None:
    """Validate :func:`pie_reward` keyword options once, before a batch: the transform and its parameters, the
    method, K (-1 or >= 1: a batch is stricter than :func:`pie_reward`, which takes any K < 0 as "all" like the
    card's snippet), ``repeats`` (1 .. :data:`MAX_REPEATS`) and ``warmup`` (0 .. :data:`MAX_REPEATS`; both are used
    by the wall method and by a meter fallback). Raises ``ValueError`` naming the option;
    :class:`~arbiter.timing.instructions.ValgrindUnavailable` when cycles or instructions (the method defaults to
    :data:`~arbiter.timing.comparison.DEFAULT_METHOD`, cycles) are asked for without valgrind
    (``need_meter=False`` skips that check: options checked before it is known whether anything is measured).
    A ``compile_spec`` whose command :func:`~arbiter.languages.cpp.command.parse_compile_command` refuses (not a
    g++/clang++ command, a flag outside the allowlist, no source file) raises its
    :class:`~arbiter.languages.cpp.command.CompileCommandError` (a ``ValueError``) here, before anything runs,
    instead of making every candidate a SANDBOX_ERROR."""
    make_transform(reward_kw.get("transform", "raw"), **dict(reward_kw.get("transform_params") or {}))
    method = reward_kw.get("method", DEFAULT_METHOD)
    if method not in ("instructions", "cycles", "wall"):
        raise ValueError(f"method must be 'instructions', 'cycles' or 'wall', got {method!r}")
    k = reward_kw.get("k", -1)
    if isinstance(k, bool) or not isinstance(k, int) or k == 0 or k < -1:
        raise ValueError(f"K must be -1 (all cases, the card's K = -1) or a positive number of cases, got {k!r}")
    repeats, warmup = reward_kw.get("repeats", 5), reward_kw.get("warmup", 1)
    if isinstance(repeats, bool) or not isinstance(repeats, int) or not 1 <= repeats <= MAX_REPEATS:
        raise ValueError(f"repeats must be a whole number of timed rounds from 1 to {MAX_REPEATS}, got {repeats!r}")
    if isinstance(warmup, bool) or not isinstance(warmup, int) or not 0 <= warmup <= MAX_REPEATS:
        raise ValueError(f"warmup must be a whole number of dropped rounds from 0 to {MAX_REPEATS}, got {warmup!r}")
    spec = reward_kw.get("compile_spec")
    if spec is not None and spec.command is not None and spec.command.strip():
        from arbiter.languages.cpp.command import parse_compile_command

        parse_compile_command(spec.command, online_judge=spec.online_judge)
    if method != "wall" and need_meter:
        from arbiter.timing.instructions import find_valgrind

        find_valgrind()


def limits_key(lim: Limits) -> list[Any]:
    return [lim.cpu_seconds, lim.wall_seconds, lim.memory_bytes, lim.output_bytes, lim.stack_bytes]


def checker_key(chk: CheckerSpec) -> str:
    return f"{chk.name}:{chk.case_insensitive}:{chk.abs_tol}:{chk.rel_tol}:{_sha(chk.program)[:16]}"


def case_key(c: StdioCase) -> list[str]:
    return [c.name, _sha(c.stdin), *(_sha(e) for e in c.expected)]
