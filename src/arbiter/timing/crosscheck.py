"""The native cross-check of a counted speedup: the program that runs must be the program that was counted.

A speedup counted under valgrind (instructions or cycles) is compared with the native CPU-time speedup of the same
pair on the same cases: the candidate's native times are those of the runs that judged it correct, the source's
are measured here on an exclusive core. A counted speedup more than :data:`NATIVE_MARGIN` times the native one is
refused (:class:`NativeCheck`, ``contradicts``); the check applies only when the candidate's native CPU time on
those cases is at least :data:`NATIVE_MIN_SECONDS`. Why these figures: ``docs/measurement.md``, "Native cross-check".
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any, Callable, Mapping, Sequence

from arbiter.sandbox.limits import Limits
from arbiter.sandbox.sandbox import Sandbox
from arbiter.timing.comparison import Case, Comparison, MeasuredProgram
from arbiter.timing.status import MeasureStatus, run_status
from arbiter.timing.wallclock import core_lease

__all__ = ["NATIVE_MARGIN", "NATIVE_MIN_SECONDS", "CONFIRM_ROUNDS", "NativeCheck", "native_check",
           "source_native_seconds"]


#: A counted speedup larger than this many times the native CPU-time speedup is refused. Honest pairs stay below
#: it, quiet or loaded (``bench/meter_integrity.py``: at most 6.4 with instructions, where page faults are free, and
#: 4.5 with cycles, where a division costs what an addition costs); the cheats of tests/cheats/meter are above it.
NATIVE_MARGIN = 8.0
#: The check applies only when the candidate's native CPU seconds, summed over the measured cases, are at least
#: this: shorter runs are mostly process start-up, which instructions hardly see and CPU time mostly is.
NATIVE_MIN_SECONDS = 0.02
#: Extra native rounds of the source before a contradiction is declared (the slowest round of all is kept).
CONFIRM_ROUNDS = 2


@dataclass
class NativeCheck:
    """The outcome of :func:`native_check`.

    - ``status``: ``"consistent"``, ``"contradicts"`` (refuse the comparison), or ``"not_applied"`` (``reason``
      says why: the candidate's runs are too short to time, a figure is missing).
    - ``counted_speedup``: the comparison's speedup; ``native_speedup``: source / candidate native CPU seconds
      over ``cases``; ``ratio``: counted / native.
    - ``source_seconds`` / ``candidate_seconds``: the native CPU seconds summed over ``cases``; ``rounds``: native
      rounds of the source; ``margin`` / ``min_seconds``: the thresholds applied.
    """

    status: str
    reason: str
    counted_speedup: float | None = None
    native_speedup: float | None = None
    ratio: float | None = None
    source_seconds: float | None = None
    candidate_seconds: float | None = None
    cases: list[str] = field(default_factory=list)
    rounds: int = 0
    margin: float = NATIVE_MARGIN
    min_seconds: float = NATIVE_MIN_SECONDS

    @property
    def contradicts(self) -> bool:
        return self.status == "contradicts"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def source_native_seconds(source: MeasuredProgram, cases: Sequence[Case], limits: Limits,
                          same_output: Callable[[bytes, bytes], bool] | None = None,
                          rounds: int = 1) -> dict[str, float] | str:
    """The source's native CPU seconds per case (the slowest of ``rounds`` runs), run as the judge runs it, in one
    fresh sandbox on an exclusive core; or a string saying why a run failed (then nothing is compared)."""
    worst: dict[str, float] = {}
    with core_lease(), Sandbox(files={"main": source.binary}, limits=limits) as sb:
        for _ in range(rounds):
            for name, stdin, expected in cases:
                ex = sb.run(["/prog/main"], stdin, limits)
                status, detail = run_status(ex, expected, same_output)
                if status is not MeasureStatus.OK:
                    return f"the source's native run on {name} failed: {status.value} {detail}".strip()
                worst[name] = max(worst.get(name, 0.0), ex.cpu_seconds)
    return worst


def native_check(source: MeasuredProgram, counted: Comparison, candidate_seconds: Mapping[str, float],
                 cases: Sequence[Case], limits: Limits,
                 same_output: Callable[[bytes, bytes], bool] | None = None, *,
                 margin: float = NATIVE_MARGIN, min_seconds: float = NATIVE_MIN_SECONDS,
                 confirm_rounds: int = CONFIRM_ROUNDS) -> NativeCheck:
    """Cross-check a counted comparison (``counted``: source ``a`` against candidate ``b`` on ``cases``) with native
    CPU time. ``candidate_seconds``: the candidate's native CPU seconds per case name, from the runs that judged it.
    The source is run natively (:func:`source_native_seconds`) only when the candidate's time is long enough; a
    contradiction is confirmed with ``confirm_rounds`` more rounds of the source before it is declared."""
    names = [name for name, _, _ in cases]
    base = dict(counted_speedup=counted.speedup, cases=names, margin=margin, min_seconds=min_seconds)
    if counted.speedup is None or any(n not in candidate_seconds for n in names):
        return NativeCheck("not_applied", "no counted speedup, or no native time of the candidate on every "
                           "measured case", **base)
    cand = math.fsum(candidate_seconds[n] for n in names)
    if cand < min_seconds:
        return NativeCheck("not_applied", f"the candidate's native runs take {cand * 1000:.1f} ms on the measured "
                           f"cases, under {min_seconds * 1000:.0f} ms: too short to time", candidate_seconds=cand,
                           **base)
    check = _compare_native(source, counted.speedup, cand, cases, limits, same_output, 1, base)
    if check.contradicts and confirm_rounds > 0:
        check = _compare_native(source, counted.speedup, cand, cases, limits, same_output, 1 + confirm_rounds,
                                base)
    return check


def _compare_native(source: MeasuredProgram, counted: float, cand: float, cases: Sequence[Case], limits: Limits,
                    same_output: Callable[[bytes, bytes], bool] | None, rounds: int,
                    base: dict[str, Any]) -> NativeCheck:
    src = source_native_seconds(source, cases, limits, same_output, rounds)
    if isinstance(src, str):
        return NativeCheck("not_applied", src, candidate_seconds=cand, rounds=rounds, **base)
    total = math.fsum(src.values())
    native = total / cand
    ratio = counted / native
    figures = (f"counted speedup {counted:.3g}, native CPU-time speedup {native:.3g} (source {total:.3f} s, "
               f"candidate {cand:.3f} s on {len(cases)} case(s))")
    if ratio > base["margin"]:
        return NativeCheck("contradicts", f"{figures}: the counted speedup is {ratio:.3g} times the native one "
                           f"(more than {base['margin']:g}): the program that was counted is not the program "
                           "that runs natively", native_speedup=native, ratio=ratio, source_seconds=total,
                           candidate_seconds=cand, rounds=rounds, **base)
    return NativeCheck("consistent", figures, native_speedup=native, ratio=ratio, source_seconds=total,
                       candidate_seconds=cand, rounds=rounds, **base)
