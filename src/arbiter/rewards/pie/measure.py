"""Step 6 of the PIE reward: measuring the source and a correct candidate with :mod:`arbiter.timing` (instruction
counts with a cached source baseline and the wall fallback, or wall). See ``docs/pie.md`` ("Measurement").
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Mapping
from typing import Any

from arbiter.checkers.compare import check_output
from arbiter.checkers.spec import CheckerSpec
from arbiter.datasets.pie.card import LOW_HEADROOM_THRESHOLD
from arbiter.judge.judge import judge
from arbiter.judge.verdict import Outcome
from arbiter.languages.cpp import ToolchainUnavailable, compile_cpp
from arbiter.languages.toolchain import ToolchainMismatch
from arbiter.rewards.pie.options import _checker_key
from arbiter.rewards.pie.result import UNMEASURABLE, UNMEASURABLE_STATUSES, RewardCall, Stop
from arbiter.sandbox.sandbox import SandboxError
from arbiter.timing.compare import Comparison, Program, compare, startup_floor
from arbiter.timing.count_cache import CountCache
from arbiter.timing.count_cache import sha256_hex as _sha


#: The directory of the on-disk source-count cache under the cache root (key versions:
#: :data:`arbiter.timing.count_cache.COUNT_KEY_VERSION`).
SRC_CACHE_SUBDIR = "pie_src_counts"


class SrcCountCache(CountCache):
    """Per-case instruction counts of source programs, so many candidates for one source measure it once: an
    :class:`arbiter.timing.count_cache.CountCache` that also remembers failed source runs.

    Keys: :func:`arbiter.timing.count_cache.count_key` as :func:`arbiter.timing.compare.compare` computes them for
    its baseline (executable, toolchain fingerprint, case input and expected output, the valgrind meter and
    limits), with the checker and every accepted output as the output check (:func:`pie_reward`) — at case
    granularity, so two candidates sampling overlapping cases share counts.

    Successful counts (instructions, int > 0) are kept in memory and, when ``directory`` is given, as one small
    JSON file per key (written atomically; unreadable files are ignored). Failed source runs are remembered in
    memory only (a TLE is not re-run for every candidate in one process; ``sandbox_error`` never). Thread-safe;
    single flight per source executable (:meth:`~arbiter.timing.count_cache.CountCache.flight`).
    """

    def __init__(self, directory: str | os.PathLike | None = None):
        super().__init__(directory, remember_failures=True)

    @classmethod
    def default(cls) -> "SrcCountCache":
        """The process-wide cache, on disk under ``<cache root>/pie_src_counts`` (``$ARBITER_CACHE_DIR``, default
        ``~/.cache/arbiter``, as the compile cache)."""
        return cls.shared(subdir=SRC_CACHE_SUBDIR)  # type: ignore[return-value]


def _pie_same_output(checker: CheckerSpec, answers: Mapping[bytes, tuple[bytes, ...]]) -> Callable[[bytes, bytes], bool]:
    """``same_output(actual, expected)`` for the timing module: the task's checker against every accepted answer
    of the case whose first answer is ``expected`` (the timing module's cases carry one expected output)."""

    def same(actual: bytes, expected: bytes) -> bool:
        return check_output(checker, actual, answers.get(expected, (expected,))).ok

    return same


_MEASURE_OUTCOME = {
    "time_limit": Outcome.TLE,
    "memory_limit": Outcome.MLE,
    "runtime_error": Outcome.RE,
    "output_limit": Outcome.OLE,
    "wrong_output": Outcome.WA,
    "exec_refused": Outcome.RE,
    "no_count": Outcome.SANDBOX_ERROR,
    "sandbox_error": Outcome.SANDBOX_ERROR,
    "unsupported_by_meter": Outcome.SANDBOX_ERROR,  # the meter's limit, never the program's (normally: fallback)
}


def judge_candidate(c: RewardCall) -> Stop | None:
    """Correctness first: the candidate on every used case, all-or-nothing; anything but AC is its failure."""
    verdict = judge(c.task(c.candidate, c.used, "all_or_nothing", "candidate"))
    c.res.verdict = verdict.to_dict()
    if verdict.outcome is Outcome.SANDBOX_ERROR:
        return Stop(Outcome.SANDBOX_ERROR, f"judging the candidate: {verdict.reason}")
    if verdict.outcome is Outcome.INVALID_TASK:
        return Stop(Outcome.INVALID_TASK, f"judging the candidate: {verdict.reason}")
    if verdict.outcome is not Outcome.AC:
        return Stop(verdict.outcome, f"candidate {verdict.outcome.value}: {verdict.reason}", None, scored=True)
    return None


def _compare(c: RewardCall, a: Program, b: Program) -> Comparison:
    """Source ``a`` against candidate ``b`` on the used cases with the call's method (instructions: the source
    from the cache, the wall method when valgrind cannot run a program)."""
    used = c.used
    same = _pie_same_output(c.chk, {case.expected[0]: case.expected for case in used})
    timing_cases = [(case.name, case.stdin, case.expected[0]) for case in used]
    if c.method != "instructions":
        return compare(a, b, timing_cases, "wall", limits=c.lim, same_output=same, repeats=c.repeats,
                       warmup=c.warmup)
    checks = {case.name: ":".join([_checker_key(c.chk), *(_sha(e) for e in case.expected)]) for case in used}
    comp = compare(a, b, timing_cases, "instructions", limits=c.lim, same_output=same, output_check=checks,
                   baseline_cache=c.cache if c.cache is not False else CountCache.disabled(),
                   on_unsupported="wall", repeats=c.repeats, warmup=c.warmup)
    res = c.res
    if comp.method == "instructions":
        # this reward's record: hits as src_cache_hits, no leased core, meter limits without the stack
        res.src_cache_hits = comp.extra.pop("baseline_cache_hits")
        comp.meter.pop("core", None)
        comp.meter["limits"] = {k: v for k, v in comp.meter["limits"].items() if k != "stack_bytes"}
        comp.meter["src_cache_hits"] = res.src_cache_hits
    else:  # valgrind could not run one of the programs: measured with the wall method instead
        res.method, res.unit, res.fallback_reason = comp.method, comp.unit, comp.fallback_reason
    return comp


def _failure(c: RewardCall, f: Mapping[str, Any]) -> Stop:
    """The stop for the first failed measured run ``f`` (program ``a`` is the source)."""
    unmeasurable = f["status"] in UNMEASURABLE_STATUSES
    oc = _MEASURE_OUTCOME.get(f["status"], Outcome.SANDBOX_ERROR)
    if oc is Outcome.SANDBOX_ERROR and not unmeasurable:
        return Stop(Outcome.SANDBOX_ERROR, f"measurement of {f['program']} on case {f['case']}: "
                                           f"{f['status']} {f.get('detail', '')}".strip())
    if f["program"] == "a":
        return Stop(Outcome.INVALID_TASK, f"row {c.label}: the source failed under measurement on case "
                                          f"{f['case']}: {f['status']} {f.get('detail', '')}".strip())
    if unmeasurable:
        return Stop(UNMEASURABLE, f"candidate on case {f['case']}: {f.get('detail', '')}".strip(), None,
                    scored=True)
    return Stop(oc, f"candidate failed under measurement on case {f['case']}: {f['status']} "
                    f"{f.get('detail', '')}".strip(), None, scored=True)


def measure(c: RewardCall) -> Stop:
    """Measure source and candidate; the AC stop carries the speedup (then the headroom is added)."""
    try:
        cand_comp = compile_cpp(c.candidate, c.spec)
    except (SandboxError, ToolchainUnavailable) as e:
        return Stop(Outcome.SANDBOX_ERROR, f"compiling the candidate for measurement: {e}")
    if not cand_comp.ok:  # compiled a moment ago for the judge; only a vanished cache entry gets here
        return Stop(Outcome.SANDBOX_ERROR, f"the candidate no longer compiles: {cand_comp.message[:200]}")
    a = Program(c.src_comp.binary, c.src_comp.toolchain, "src")
    b = Program(cand_comp.binary, cand_comp.toolchain, "candidate")
    try:
        comp = _compare(c, a, b)
    except ToolchainMismatch as e:
        return Stop(Outcome.SANDBOX_ERROR, f"toolchains differ between source and candidate: {e}")
    except SandboxError as e:
        return Stop(Outcome.SANDBOX_ERROR, f"measurement sandbox: {e}")
    res = c.res
    cd = comp.to_dict()
    cd.pop("order", None)
    res.comparison, res.meter = cd, comp.meter
    res.per_case = [{"case": x.case, "src": x.a, "candidate": x.b, "speedup": x.speedup} for x in comp.cases]
    if comp.failures:
        return _failure(c, comp.failures[0])
    if comp.speedup is None or not (math.isfinite(comp.speedup) and comp.speedup > 0):
        return Stop(Outcome.SANDBOX_ERROR, f"measurement gave no speedup (totals {comp.a_total} / {comp.b_total})")
    res.src_total, res.candidate_total = comp.a_total, comp.b_total
    res.largest_speedup = comp.largest_speedup
    if res.method == "instructions" and c.with_floor:
        _headroom(c, comp)
    how = f" ({res.unit}; {res.method} fallback: {res.fallback_reason})" if res.fallback_reason else f" ({res.unit})"
    return Stop(Outcome.AC, f"correct on {len(c.used)} case(s); speedup {comp.speedup:.4g}{how}", comp.speedup,
                scored=True)


def _headroom(c: RewardCall, comp: Comparison) -> None:
    """The startup floor (instructions of an empty program, same toolchain) and the card's ceiling."""
    res = c.res
    try:
        res.startup_floor = startup_floor(c.spec)
    except RuntimeError:
        res.startup_floor = None
    if res.startup_floor:
        res.ceiling_speedup = comp.ceiling_speedup(res.startup_floor)
        if res.ceiling_speedup is not None:
            res.low_headroom = res.ceiling_speedup < LOW_HEADROOM_THRESHOLD
