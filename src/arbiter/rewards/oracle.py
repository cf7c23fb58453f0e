"""The oracle's rules for one row: reason records, the speed gate, the measurement's reason codes and the full
mark (:func:`full_mark`, the one place that decides ``score = 1.0``). Pure functions of the findings; the
stages that produce them live in :mod:`arbiter.pipelines.oracle.row`. See ``docs/oracle.md``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from arbiter.judge.speedup import UNMEASURABLE_STATUSES, MeasureFailure

#: The stages of a row, in order (a rejected row's ``stage`` is the first failing one).
STAGES = ("load", "task", "messages", "format", "compile", "tests", "measure", "speed")
#: The speed gate applies only when the source's instructions on the largest tests are at least this many
#: times the start-up floor (per case): below it, the figures measure start-up, not the algorithm.
MEASURABLE_FACTOR = 2.0
#: Wall-time analogue of :data:`MEASURABLE_FACTOR`: seconds per case the source must take.
WALL_MEASURABLE_SECONDS = 0.01
#: Measured-run statuses of an answer that passed every test but cannot be measured, and their reason codes
#: (the status in capitals: one list, :data:`~arbiter.judge.speedup.UNMEASURABLE_STATUSES`).
UNMEASURABLE_CODES = {status: status.upper() for status in sorted(UNMEASURABLE_STATUSES)}
#: Speed-gate values that let a row pass.
GATE_PASSES = ("passed", "not_applied")
#: A test on which the answer spent more than this many seconds blocked (wall time neither on a CPU nor waiting
#: for one: asleep, waiting) and more than :data:`BLOCKED_SHARE` of its own time (wall time net of the run-queue
#: delays: CPU + blocked) makes it ``speed:WAITS``. Correct programs block under a few milliseconds, idle or
#: under load (docs/measurement.md, "Waiting: checked").
BLOCKED_MIN_SECONDS = 0.05
BLOCKED_SHARE = 0.25


def reason(stage: str, code: str, message: str, **extra: Any) -> dict[str, Any]:
    """A reason record: ``{"stage", "code", "message"}`` plus the extra fields that are not ``None``."""
    r = {"stage": stage, "code": code, "message": message}
    r.update({k: v for k, v in extra.items() if v is not None})
    return r


def full_mark(reasons: Sequence[Mapping[str, Any]], verification: Mapping[str, Any]) -> bool:
    """Score 1.0: no reason against the row, the answer compiled, and the speed gate passed (or did not apply)."""
    return not reasons and bool(verification.get("compile_ok")) and verification.get("speed_gate") in GATE_PASSES


def measure_reasons(failures: Sequence[MeasureFailure]) -> list[dict[str, Any]]:
    """One ``measure`` reason per failed measured run (the source's, the answer's, or unmeasurable); a wrong
    output of the answer when measured, although it passed that test natively, is ``MEASURE_MISMATCH``."""
    out = []
    for f in failures:
        if f.program == "candidate" and f.status in UNMEASURABLE_CODES:
            out.append(reason("measure", UNMEASURABLE_CODES[f.status], f"the answer passed the tests, but on "
                              f"{f.case}: {f.detail}".strip(), cases=[f.case]))
            continue
        if f.program == "candidate" and f.status == "wrong_output":
            out.append(reason("measure", "MEASURE_MISMATCH", f"the answer passed {f.case} natively but printed a "
                              "wrong output on it when measured: the measured program is not the program that "
                              "runs; no speedup", cases=[f.case]))
            continue
        who, code = ("source", "SOURCE_MEASURE_FAILED") if f.program == "source" else ("answer", "MEASURE_FAILED")
        out.append(reason("measure", code, f"the {who} failed a measured run on {f.case}: {f.status} {f.detail}"
                          .strip(), cases=[f.case]))
    return out


def blocked_too_long(case: Any) -> bool:
    """Whether a judged case (:class:`~arbiter.judge.verdict.CaseResult`) spent significant time blocked:
    over :data:`BLOCKED_MIN_SECONDS` and over :data:`BLOCKED_SHARE` of its own time (CPU + blocked)."""
    blocked = case.blocked_seconds
    return blocked > max(BLOCKED_MIN_SECONDS, BLOCKED_SHARE * (case.cpu_seconds + blocked))


def waiting_reason(cases: Sequence[Any], listed: int | None = None) -> dict[str, Any] | None:
    """``speed:WAITS`` when some of the answer's judged test runs (:class:`~arbiter.judge.verdict.CaseResult`)
    spent significant time blocked (:func:`blocked_too_long`): the measures count computation, never time spent
    asleep or waiting, so its speedup would not describe its wall time. ``None`` otherwise. ``listed``: how many
    of those tests the reason names (default: all)."""
    over = [c for c in cases if blocked_too_long(c)]
    if not over:
        return None
    worst = max(over, key=lambda c: c.blocked_seconds)
    names = [c.name for c in over][:listed]
    return reason("speed", "WAITS", f"the answer spent {worst.blocked_seconds:.2f} s of its {worst.wall_seconds:.2f} s "
                  f"wall time on {worst.name} blocked (asleep or waiting: neither on a CPU nor waiting for one; "
                  f"{len(over)} test(s) over {BLOCKED_MIN_SECONDS * 1000:g} ms and {BLOCKED_SHARE:.0%} of their own "
                  "time): the measures count computation only, so its speedup would not describe its wall time; "
                  "not measured", cases=names)


def measurable(method: str, source_cost: float, n_cases: int, floor: int | None) -> bool:
    """Whether the largest tests can show speed: the source's cost on them is above start-up noise."""
    if method in ("instructions", "cycles"):  # valgrind figures: the floor (instructions only) or none
        return floor is None or source_cost >= MEASURABLE_FACTOR * floor * n_cases
    return source_cost >= WALL_MEASURABLE_SECONDS * n_cases


def speed_gate(largest_speedup: float | None, min_speedup: float, shows_speed: bool) -> str:
    """``"not_applied"`` (tests too small to show speed and only "not slower" asked), ``"passed"`` or ``"failed"``."""
    if not shows_speed and min_speedup <= 1.0:
        return "not_applied"
    return "passed" if largest_speedup is not None and largest_speedup >= min_speedup else "failed"
