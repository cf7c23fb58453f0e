"""The measure and speed stages of a row: the answer against the seed's ``source_code`` on the largest tests,
through :func:`arbiter.judge.speedup.gated_speedup`, then the speed gate. See ``docs/oracle.md``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from arbiter.judge.speedup import SpeedupOutcome, SpeedupSpec, gated_speedup
from arbiter.pipelines.oracle.generated_tests import seed_compile_spec, seed_run_limits
from arbiter.pipelines.oracle.options import MAX_CASES_LISTED, InfraError, VerifyOptions, cache_subdir
from arbiter.pipelines.oracle.suites import Case, checker_of, largest_by_input
from arbiter.rewards.oracle import measurable, measure_reasons, reason, speed_gate, waiting_reason

if TYPE_CHECKING:
    from arbiter.datasets.oracle import SeedRow
    from arbiter.pipelines.oracle.context import VerifyContext
    from arbiter.pipelines.oracle.row import RowResult

#: The directory of the on-disk memo of source counts, under the cache root.
COUNT_CACHE_SUBDIR = "oracle_source_counts"


def _round(x: float | None) -> float | None:
    return None if x is None else round(float(x), 6)


def speedup_spec(seed: SeedRow, opts: VerifyOptions) -> SpeedupSpec:
    """How the oracle measures a row: the seed's command, limits and checker; the run's method and options."""
    from arbiter.timing.count_cache import CountCache

    cache = (CountCache.shared(cache_subdir(opts, COUNT_CACHE_SUBDIR), subdir=COUNT_CACHE_SUBDIR)
             if opts.use_cache and opts.measure != "wall" else None)
    return SpeedupSpec(compile=seed_compile_spec(seed), limits=seed_run_limits(seed), checker=checker_of(seed),
                       method=opts.measure, largest_fraction=opts.largest_fraction, repeats=int(opts.wall_repeats),
                       cache=cache, names=("source", "answer"), config=opts.config,
                       spot_checks=int(opts.spot_checks))


def trim_measurement(d: dict[str, Any], timing: dict[str, Any]) -> dict[str, Any]:
    """The comparison record kept in ``verification.measurement``: run order dropped; what is not deterministic
    moved to ``timing``: the leased core, the native cross-check (CPU times) and the spot checks (drawn at
    random)."""
    d = dict(d)
    d.pop("order", None)
    extra = dict(d.get("extra") or {})
    for key in ("native_check", "spot_checks"):
        if key in extra:
            timing[key] = extra.pop(key)
    d["extra"] = extra
    meter = dict(d.get("meter") or {})
    if "core" in meter:
        timing["measure_core"] = meter.pop("core")
    if "source_memo_hits" in meter:
        timing["source_memo_hits"] = meter.pop("source_memo_hits")
    d["meter"] = meter
    d.pop("toolchain", None)  # recorded once, in verification.toolchain
    return d


def blocked_record(cases: list[Any]) -> dict[str, Any]:
    """The answer's blocked time on its judged tests, for ``timing.blocked`` (seconds; not deterministic):
    the sum, and the test with the most of it with its wall and CPU time and run-queue delays."""
    worst = max(cases, key=lambda c: c.blocked_seconds, default=None)
    out: dict[str, Any] = {"total": round(sum(c.blocked_seconds for c in cases), 6), "largest": None}
    if worst is not None:
        out["largest"] = {"case": worst.name, "blocked": round(worst.blocked_seconds, 6),
                          "wall": round(worst.wall_seconds, 6), "cpu": round(worst.cpu_seconds, 6),
                          "run_delay": round(worst.run_delay_seconds, 6),
                          "server_delay": round(worst.server_delay_seconds, 6)}
    return out


def _speedup(seed: SeedRow, code: str, chosen: list[Case], all_cases: list[Case], passed: list[Any],
             ctx: VerifyContext, key: str) -> Any:
    """The gated speedup of the row (spot checks drawn from every test it passed); our failures raise."""
    from arbiter.judge.testsuite import StdioCase

    cases = [StdioCase(c.name, c.stdin, (c.stdout,)) for c in chosen]
    pool = [StdioCase(c.name, c.stdin, (c.stdout,)) for c in all_cases]
    got = gated_speedup(seed.source_code, code, cases, speedup_spec(seed, ctx.options), passed=passed,
                        hold=ctx.hold, task_id=key, spot_pool=pool)
    if got.error is not None:
        raise got.error
    if got.outcome in (SpeedupOutcome.NOT_CORRECT, SpeedupOutcome.INVALID_TASK):  # the tests stage passed them
        raise InfraError(f"measurement gate: {got.reason}")
    if got.outcome is SpeedupOutcome.SANDBOX_ERROR and (got.comparison is None or got.spot_checked):
        raise InfraError(f"measurement: {got.stage}: {got.reason}")
    if got.cache_hits is not None:  # the record this pipeline has always written
        meter = got.comparison.meter
        meter["limits"] = {k: v for k, v in meter["limits"].items() if k != "stack_bytes"}
        meter["source_memo_hits"] = got.cache_hits
    return got


def measure(seed: SeedRow, code: str, all_cases: list[Case], passed: list[Any], ctx: VerifyContext,
            res: RowResult, notes: list[str]) -> None:
    """Measure a correct answer and apply the speed gate; findings go to ``res``. Not measured: an answer whose
    program is the source's (whitespace aside), ``speed:UNCHANGED_SOURCE`` (its speedup is 1.00 by construction,
    which "not slower" would accept, and it optimizes nothing: the card's target), and one that spent significant
    time blocked on a test, ``speed:WAITS`` (:func:`~arbiter.rewards.oracle.waiting_reason`: its speedup, counted
    in computation, would not describe its wall time)."""
    unmeasured = []
    if "".join(code.split()) == "".join(seed.source_code.split()):
        unmeasured.append(reason("speed", "UNCHANGED_SOURCE", "the answer's program is the source's (whitespace "
                                 "aside): nothing is optimized (the card's target: optimize runtime)"))
    cases = [c for v in passed for c in v.cases]
    res.timing["blocked"] = blocked_record(cases)
    waits = waiting_reason(cases, MAX_CASES_LISTED)
    if waits is not None:
        unmeasured.append(waits)
    if unmeasured:
        res.reasons.extend(unmeasured)
        return
    ver = res.verification
    chosen = largest_by_input(all_cases, int(ctx.options.measure_cases))
    got = _speedup(seed, code, chosen, all_cases, passed, ctx, res.key)
    if got.outcome is SpeedupOutcome.SOURCE_CE:
        res.reasons.append(reason("task", "INVALID_TASK", "the seed's source_code does not compile with its own "
                                  f"command: {got.source.message[:500]}"))
        return
    cmp = got.comparison
    if cmp.fallback_reason is not None:
        notes.append(f"measured with wall/CPU time instead of {cmp.requested_method}: {cmp.fallback_reason}")
    if cmp.sandbox_error:
        raise InfraError("measurement: sandbox error: " + "; ".join(
            f"{f['program']}/{f['case']}: {f.get('detail', '')}" for f in cmp.failures))
    d = trim_measurement(cmp.to_dict(), res.timing)
    d["measured_cases"] = [c.name for c in chosen]
    ver["measurement"] = d
    if cmp.method == "wall":
        res.timing["wall"] = {"source_total": cmp.a_total, "answer_total": cmp.b_total}
    res.reasons.extend(measure_reasons(got.failures))
    if got.outcome is SpeedupOutcome.NATIVE_CONTRADICTS:
        check = got.native_check
        res.reasons.append(reason("measure", "NATIVE_CONTRADICTS", "the answer passed the tests, but its counted "
                                  f"speedup is more than {check.margin:g} times its native CPU-time speedup on the "
                                  "measured tests (timing.native_check): the measured program is not the program "
                                  "that runs; no speedup", cases=[c.name for c in chosen]))
    if not cmp.ok or got.outcome is not SpeedupOutcome.MEASURED:
        return
    _record_speedups(cmp, ver)
    _apply_gate(seed, cmp, d, ctx, res, notes)


def _record_speedups(cmp: Any, ver: dict[str, Any]) -> None:
    ver["speedup"] = _round(cmp.speedup)
    ver["largest_speedup"] = _round(cmp.largest_speedup)
    if cmp.method in ("instructions", "cycles"):  # the figures under their unit's name
        ver[cmp.method] = {"source": cmp.a_total, "answer": cmp.b_total,
                               "largest_cases": cmp.largest_cases,
                               "source_largest": sum(c.a for c in cmp.cases if c.case in cmp.largest_cases),
                               "answer_largest": sum(c.b for c in cmp.cases if c.case in cmp.largest_cases)}


def _apply_gate(seed: SeedRow, cmp: Any, d: dict[str, Any], ctx: VerifyContext, res: RowResult,
                notes: list[str]) -> None:
    """The speed stage: is the gate meaningful on these tests, and does the answer pass it?"""
    opts = ctx.options
    big = [c for c in cmp.cases if c.case in cmp.largest_cases]
    src_cost = sum(c.a for c in big)
    floor = ctx.startup_floor(seed, cmp.method) if cmp.method in ("instructions", "cycles") else None
    if floor is not None:
        d["startup_floor"] = floor
    shows = measurable(cmp.method, src_cost, len(big), floor)
    gate = res.verification["speed_gate"] = speed_gate(cmp.largest_speedup, opts.min_speedup, shows)
    if gate == "not_applied":
        notes.append("speed gate not applied: the largest tests are too small to show speed "
                     f"(source cost {src_cost} {cmp.unit} on {len(big)} case(s) is within start-up cost); "
                     "give generated tests (--generators) to measure speed")
        return
    if gate == "passed":
        return
    if not shows:
        notes.append("the largest tests are too small to show speed (within start-up cost); a speedup above "
                     f"{opts.min_speedup:g} cannot be demonstrated on them: give generated tests (--generators)")
    ls = cmp.largest_speedup
    res.reasons.append(reason(
        "speed", "SLOWER_THAN_SOURCE",
        f"largest-tests speedup {ls:.4f} < {opts.min_speedup:g} ({cmp.unit}: source "
        f"{src_cost} vs answer {sum(c.b for c in big)} on {', '.join(cmp.largest_cases)})",
        cases=list(cmp.largest_cases)))
