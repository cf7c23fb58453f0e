"""After a counted comparison: is the program that was counted the program that runs natively?

Two checks on a candidate already judged correct and measured under valgrind (:func:`check_meter`, called by
:func:`arbiter.judge.speedup.gated_speedup`): the native cross-check (:mod:`arbiter.timing.crosscheck`: the
counted speedup against the native CPU-time speedup, the candidate's times from the runs that judged it), then
spot checks (the candidate run under the same meter on a few other cases it passed natively, drawn at random,
its output checked). Rules and what remains possible: ``docs/measurement.md``, "The measured program is the
program that runs".
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, ContextManager

from arbiter.judge.testsuite import StdioCase
from arbiter.judge.verdict import Outcome, Verdict

if TYPE_CHECKING:
    from arbiter.judge.speedup import SpeedupResult, SpeedupSpec

__all__ = ["check_meter", "native_seconds", "spot_sample"]

#: Draws the spot-checked cases: unpredictable to the program (not derived from its text or the run).
_RNG = random.SystemRandom()


def native_seconds(verdicts: Sequence[Verdict]) -> dict[str, float]:
    """The candidate's native CPU seconds per case, from the AC case results of the verdicts that judged it."""
    out: dict[str, float] = {}
    for v in verdicts:
        for c in v.cases:
            if c.outcome is Outcome.AC:
                out[c.name] = c.cpu_seconds
    return out


def spot_sample(pool: Sequence[StdioCase], measured: Sequence[StdioCase], k: int,
                rng: random.Random | None = None) -> list[StdioCase]:
    """``k`` cases of ``pool`` that were not measured, drawn at random (all of them when fewer)."""
    names = {c.name for c in measured}
    rest = [c for c in pool if c.name not in names]
    return list(rest) if len(rest) <= k else (rng or _RNG).sample(rest, k)


def check_meter(res: SpeedupResult, cases: Sequence[StdioCase], spec: SpeedupSpec, verdicts: Sequence[Verdict],
                spot_pool: Sequence[StdioCase], hold: Callable[[str], ContextManager[Any]]) -> None:
    """Run the native cross-check, then the spot checks (counted measures only), on a ``MEASURED`` result; the
    first that fails sets its outcome (``NATIVE_CONTRADICTS``, or the spot check's failure), and both are recorded
    in the comparison's ``extra`` (``native_check``, ``spot_checks``). A wall-time comparison is cross-checked too:
    its timed runs are not the judged runs (they hold a pinned core and repeat each case in one session, which a
    program can see), so they are held to the judged runs' CPU times."""
    from arbiter.judge.speedup import SpeedupOutcome

    cmp = res.comparison
    if spec.native_check:
        with hold("measure"):
            check = _native_check(res, cases, spec, verdicts)
        res.native_check = check
        cmp.extra["native_check"] = check.to_dict()
        if check.contradicts:
            res.outcome, res.reason = SpeedupOutcome.NATIVE_CONTRADICTS, check.reason
            return
    if cmp.method == "wall":
        return
    sample = spot_sample(spot_pool, cases, spec.spot_checks) if spec.spot_checks > 0 else []
    if not sample:
        return
    with hold("measure"):
        runs = _spot_runs(res, sample, spec, cmp.method)
    res.spot_checked = [c.name for c in sample]
    cmp.extra["spot_checks"] = [{"case": c.case, "status": c.status.value, "detail": c.detail} for c in runs]
    _classify_spots(res, runs)


def _native_check(res: SpeedupResult, cases: Sequence[StdioCase], spec: SpeedupSpec,
                  verdicts: Sequence[Verdict]) -> Any:
    from arbiter.judge.speedup import output_check_of
    from arbiter.timing.crosscheck import native_check
    from arbiter.timing.measure import MeasuredProgram

    src = MeasuredProgram(res.source.binary, res.source.toolchain, spec.names[0])
    timing_cases = [(c.name, c.stdin, c.expected[0]) for c in cases]
    return native_check(src, res.comparison, native_seconds(verdicts), timing_cases, spec.limits,
                        output_check_of(spec.checker, cases))


def _spot_runs(res: SpeedupResult, sample: Sequence[StdioCase], spec: SpeedupSpec, method: str) -> list[Any]:
    """The candidate on ``sample`` under the meter of the comparison (every case run, outputs checked)."""
    from arbiter.judge.speedup import output_check_of
    from arbiter.timing.cycles import DEFAULT_MODEL
    from arbiter.timing.instructions import find_valgrind, measure_instructions

    vg = find_valgrind()
    if method == "cycles":
        vg = vg.with_cycles(DEFAULT_MODEL)
    run = measure_instructions(res.candidate.binary, [(c.name, c.stdin, c.expected[0]) for c in sample],
                               limits=spec.limits, same_output=output_check_of(spec.checker, sample),
                               stop_on_failure=True, valgrind=vg)
    return run.counts


def _classify_spots(res: SpeedupResult, runs: Sequence[Any]) -> None:
    """The first failed spot check decides the outcome (as a failed measured run would)."""
    from arbiter.judge.speedup import MeasureFailure, classify

    failed = [MeasureFailure("candidate", c.case, c.status.value, c.detail) for c in runs if not c.ok]
    if not failed:
        return
    res.failures = failed
    res.outcome, res.reason = classify(res.comparison, failed)
    res.reason = f"spot check: {res.reason}"
