"""Steps 5-8 of the PIE reward: the candidate through :func:`arbiter.judge.speedup.gated_speedup` (correct first,
then measured against the source: model cycles (default) or instruction counts with a cached source baseline and
the wall fallback, or wall), its outcome mapped to PIE's record, and the headroom.
See ``docs/pie.md`` ("Re-timing a candidate", "Outcome codes").
"""

from __future__ import annotations

import os

from arbiter.datasets.pie.card import LOW_HEADROOM_THRESHOLD
from arbiter.judge.speedup import SpeedupOutcome, SpeedupResult, SpeedupSpec, gated_speedup
from arbiter.judge.verdict import Outcome
from arbiter.languages.cpp.toolchain import ToolchainMismatch
from arbiter.rewards.pie.options import checker_key
from arbiter.rewards.pie.result import MEASURE_MISMATCH, NATIVE_CONTRADICTS, UNMEASURABLE, RewardCall, Stop
from arbiter.timing.measure import Comparison, startup_floor
from arbiter.timing.count_cache import CountCache
from arbiter.timing.count_cache import sha256_hex as _sha


#: The directory of the on-disk source-count cache under the cache root (key versions:
#: :data:`arbiter.timing.count_cache.COUNT_KEY_VERSION`).
SRC_CACHE_SUBDIR = "pie_src_counts"


class SrcCountCache(CountCache):
    """Per-case instruction counts of source programs, so many candidates for one source measure it once: an
    :class:`arbiter.timing.count_cache.CountCache` that also remembers failed source runs.

    Keys: :func:`arbiter.timing.count_cache.count_key` as :func:`arbiter.timing.measure.compare` computes them for
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


def speedup(c: RewardCall) -> Stop:
    """Steps 5-8: gate and measure the candidate against the source on the used cases; the AC stop carries the
    speedup (then the headroom is added), any other stop the candidate's failure or ours."""
    checks = {case.name: ":".join([checker_key(c.chk), *(_sha(e) for e in case.expected)]) for case in c.used}
    cache = (c.cache if c.cache is not False else CountCache.disabled()) if c.method != "wall" else None
    spec = SpeedupSpec(compile=c.spec, limits=c.lim, checker=c.chk, method=c.method, repeats=c.repeats,
                       warmup=c.warmup, cache=cache, output_check=checks if c.method != "wall" else "",
                       names=("src", "candidate"))
    r = gated_speedup(c.src.src_code, c.candidate, c.used, spec, task_id=f"{c.label}:candidate")
    if r.verdict is not None:
        c.res.verdict = r.verdict.to_dict()
    if r.stage in ("source_compile", "gate"):
        return _gate_stop(r)
    if r.stage == "candidate_compile":
        reason = f"compiling the candidate for measurement: {r.error}" if r.error is not None else r.reason
        return Stop(Outcome.SANDBOX_ERROR, reason)
    if r.error is not None:
        if isinstance(r.error, ToolchainMismatch):
            return Stop(Outcome.SANDBOX_ERROR, f"toolchains differ between source and candidate: {r.error}")
        return Stop(Outcome.SANDBOX_ERROR, f"measurement sandbox: {r.error}")
    _record(c, r)
    return _measured_stop(c, r)


def _gate_stop(r: SpeedupResult) -> Stop:
    """The stop of a candidate that was not measured: its verdict is not AC, or the gate could not judge it."""
    if r.outcome is SpeedupOutcome.SOURCE_CE or r.verdict is None:  # compiled and judged before: not expected here
        return Stop(Outcome.SANDBOX_ERROR, f"judging the candidate: {r.reason}")
    v = r.verdict
    if v.outcome in (Outcome.SANDBOX_ERROR, Outcome.INVALID_TASK):
        return Stop(v.outcome, f"judging the candidate: {v.reason}")
    return Stop(v.outcome, f"candidate {v.outcome.value}: {v.reason}", None, scored=True)


def _record(c: RewardCall, r: SpeedupResult) -> None:
    """The comparison's figures into the record: method (after a meter fallback), meter, per-case figures."""
    res, comp = c.res, r.comparison
    if r.cache_hits is not None:
        # this reward's record: hits as src_cache_hits, no leased core, meter limits without the stack
        res.src_cache_hits = r.cache_hits
        comp.meter.pop("core", None)
        comp.meter["limits"] = {k: v for k, v in comp.meter["limits"].items() if k != "stack_bytes"}
        comp.meter["src_cache_hits"] = res.src_cache_hits
    elif comp.fallback_reason:  # valgrind could not run one of the programs: measured with the wall method
        res.method, res.unit, res.fallback_reason = comp.method, comp.unit, comp.fallback_reason
    cd = comp.to_dict()
    cd.pop("order", None)
    res.comparison, res.meter = cd, comp.meter
    res.per_case = [{"case": x.case, "src": x.a, "candidate": x.b, "speedup": x.speedup} for x in comp.cases]


def _measured_stop(c: RewardCall, r: SpeedupResult) -> Stop:
    """PIE's outcome for a measurement: AC with the speedup, or who failed (the source: the row is unusable)."""
    f = r.failures[0] if r.failures else None
    if f is not None:
        what = f"on case {f.case}: {f.status} {f.detail}".strip()
        if r.outcome is SpeedupOutcome.SANDBOX_ERROR:
            return Stop(Outcome.SANDBOX_ERROR, f"measurement of {'a' if f.program == 'source' else 'b'} {what}")
        if r.outcome is SpeedupOutcome.SOURCE_FAILED:
            return Stop(Outcome.INVALID_TASK, f"row {c.label}: the source failed under measurement {what}")
        if r.outcome is SpeedupOutcome.UNMEASURABLE:
            return Stop(UNMEASURABLE, f"candidate on case {f.case}: {f.detail}".strip(), None, scored=True)
        if r.outcome is SpeedupOutcome.MEASURE_MISMATCH:
            return Stop(MEASURE_MISMATCH, r.reason, None, scored=True)
        return Stop(f.verdict, f"candidate failed under measurement {what}", None, scored=True)
    if r.outcome is SpeedupOutcome.NATIVE_CONTRADICTS:
        return Stop(NATIVE_CONTRADICTS, f"candidate: {r.reason}", None, scored=True)
    if r.outcome is not SpeedupOutcome.MEASURED:
        return Stop(Outcome.SANDBOX_ERROR, r.reason)
    res, comp = c.res, r.comparison
    res.src_total, res.candidate_total = comp.a_total, comp.b_total
    res.largest_speedup = comp.largest_speedup
    if res.method in ("instructions", "cycles") and c.with_floor:
        _headroom(c, comp)
    how = f" ({res.unit}; {res.method} fallback: {res.fallback_reason})" if res.fallback_reason else f" ({res.unit})"
    return Stop(Outcome.AC, f"correct on {len(c.used)} case(s); speedup {comp.speedup:.4g}{how}", comp.speedup,
                scored=True)


def _headroom(c: RewardCall, comp: Comparison) -> None:
    """The startup floor (the cost of an empty program, same toolchain, same measure) and the card's ceiling."""
    res = c.res
    try:
        res.startup_floor = startup_floor(c.spec, method=res.method)  # type: ignore[arg-type]
    except RuntimeError:
        res.startup_floor = None
    if res.startup_floor:
        res.ceiling_speedup = comp.ceiling_speedup(res.startup_floor)
        if res.ceiling_speedup is not None:
            res.low_headroom = res.ceiling_speedup < LOW_HEADROOM_THRESHOLD
