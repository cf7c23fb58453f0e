"""What a comparison of two programs is: the programs (:class:`MeasuredProgram`, their toolchain fingerprints and
:func:`check_comparable`), the per-case figures (:class:`CaseFigures`) and the result (:class:`Comparison`:
speedup = sum of the baseline's figures / sum of the candidate's, the largest cases, failures, meter fallback).

Pure data and rules; :mod:`arbiter.timing.measure` runs the programs. The rules: ``docs/measurement.md``.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from typing import Any, Literal, Mapping, Sequence

from arbiter.languages.cpp.toolchain import ToolchainMismatch
from arbiter.timing.cycles import ModelMismatch, check_same_model
from arbiter.timing.status import MeasureStatus
from arbiter.timing.valgrind_log import meter_reason

__all__ = [
    "Case",
    "CaseFigures",
    "Comparison",
    "FingerprintMismatch",
    "LARGEST_FRACTION",
    "Method",
    "MeasuredProgram",
    "build_comparison",
    "check_cases",
    "check_comparable",
    "fingerprint_of",
    "largest_cases",
    "largest_count",
    "mark_fallback",
    "meter_fallback_reason",
    "METHODS",
    "unit_of",
    "comparable_speedups",
    "DEFAULT_METHOD",
]


Method = Literal["instructions", "cycles", "wall"]
#: Every measure ``compare`` knows.
METHODS: tuple[str, ...] = ("instructions", "cycles", "wall")
#: The measure of the speedups users get by default (the PIE reward and eval, the oracle speed gate): model cycles,
#: deterministic like instruction counts and, unlike them, close to PIE's gem5 speedups (``docs/measurement.md``,
#: "Cycles"). :func:`~arbiter.timing.measure.compare` itself still defaults to instructions.
DEFAULT_METHOD: Method = "cycles"


def unit_of(method: str | None) -> str:
    """The unit of a measure's figures: ``seconds`` for wall, else the measure's own name."""
    return "seconds" if method == "wall" else str(method or "instructions")


#: One test case: ``(name, stdin bytes, expected stdout bytes or None)``.
Case = tuple[str, bytes, "bytes | None"]


#: Default share of cases, ranked by the baseline's cost, that make up the "largest cases".
LARGEST_FRACTION = 0.2


class FingerprintMismatch(ToolchainMismatch):
    """The two programs were built by different toolchains (compiler, flags, libc, link mode): their figures are
    not comparable (card: "Caveat — pin your toolchain"). A :class:`~arbiter.languages.cpp.toolchain.ToolchainMismatch`
    (catch either); ``.a`` / ``.b`` are the two fingerprints, ``.differences`` maps each differing field to
    ``(a, b)`` when both toolchains are structured."""

    def __init__(self, a: str, b: str, detail: str = "",
                 differences: Mapping[str, tuple[Any, Any]] | None = None):
        self.a, self.b = a, b
        super().__init__("toolchain fingerprints differ; figures from different toolchains are not comparable"
                         + (f": {detail}" if detail else f": {a!r} != {b!r}"), differences or {})


def fingerprint_of(toolchain: Any) -> str:
    """The comparable identity of a toolchain: its ``.fingerprint`` (a :class:`~arbiter.languages.cpp.toolchain.Toolchain`),
    the ``"fingerprint"`` entry of a mapping (``Toolchain.to_dict()`` as stored in results), any other mapping as
    canonical JSON (sorted keys), or a string as is. Raises ValueError for ``None`` (every measurement records a
    fingerprint, DESIGN.md) and TypeError otherwise."""
    if toolchain is None:
        raise ValueError("a toolchain fingerprint is required: every measurement records one (DESIGN.md 'Speed')")
    fp = getattr(toolchain, "fingerprint", None)
    if fp is not None and not callable(fp):
        toolchain = fp
    if isinstance(toolchain, str):
        return toolchain
    if isinstance(toolchain, Mapping):
        if isinstance(toolchain.get("fingerprint"), str) and toolchain["fingerprint"]:
            return toolchain["fingerprint"]
        return json.dumps(toolchain, sort_keys=True, separators=(",", ":"), default=str)
    raise TypeError(f"toolchain must be a str, a mapping or have .fingerprint, got {type(toolchain).__name__}")


def _toolchain_record(toolchain: Any) -> Any:
    to_dict = getattr(toolchain, "to_dict", None)
    if callable(to_dict):
        return to_dict()
    if isinstance(toolchain, Mapping):
        return dict(toolchain)
    return fingerprint_of(toolchain)


@dataclass(frozen=True)
class MeasuredProgram:
    """A compiled program to measure: ``binary`` (the executable's bytes, run as ``/prog/main``), ``toolchain``
    (a fingerprint: str, mapping, or an object with ``.fingerprint`` and ``to_dict()``) and a display ``name``."""

    binary: bytes
    toolchain: Any
    name: str = ""

    @property
    def fingerprint(self) -> str:
        """See :func:`fingerprint_of`."""
        return fingerprint_of(self.toolchain)

    @classmethod
    def of(cls, obj: Any, name: str = "") -> "MeasuredProgram":
        """Accept a :class:`MeasuredProgram`, a ``(binary, toolchain)`` pair, or a compile result with ``.binary`` and
        ``.toolchain`` (``arbiter.languages.cpp.CompileResult``). Raises ValueError when there is no binary (a
        failed compile) and TypeError for anything else."""
        if isinstance(obj, MeasuredProgram):
            return obj if not name or obj.name == name else MeasuredProgram(obj.binary, obj.toolchain, name)
        if isinstance(obj, tuple) and len(obj) == 2 and isinstance(obj[0], (bytes, bytearray)):
            return cls(bytes(obj[0]), obj[1], name)
        if hasattr(obj, "binary") and hasattr(obj, "toolchain"):
            if not obj.binary:
                why = getattr(obj, "error", None) or getattr(obj, "message", None) or "no binary"
                raise ValueError(f"program {name or '?'} did not compile: {why}")
            return cls(bytes(obj.binary), obj.toolchain, name or getattr(obj, "name", "") or "")
        raise TypeError(f"cannot measure a {type(obj).__name__}: give a MeasuredProgram, (binary, toolchain) or a "
                        "compile result with .binary and .toolchain")


def check_comparable(a: Any, b: Any) -> None:
    """Refuse to compare figures of two different toolchains (card: "Caveat — pin your toolchain"; DESIGN.md
    "Speed": every measurement records its toolchain fingerprint). The one fingerprint check of the timing layer:
    :func:`compare` runs it before measuring anything, for both methods.

    ``a`` / ``b``: a :class:`MeasuredProgram` (or a compile result with ``.binary`` and ``.toolchain``), or a toolchain as
    :func:`fingerprint_of` accepts it (``Toolchain``, its ``to_dict()`` mapping, a fingerprint string). Returns
    ``None`` when the fingerprints are equal. Raises :class:`FingerprintMismatch` (a
    :class:`~arbiter.languages.cpp.toolchain.ToolchainMismatch`) naming every differing field of structured toolchains
    (``include_dirs`` / ``exec_path`` ignored, as :func:`~arbiter.languages.cpp.toolchain.assert_comparable` does);
    ValueError / TypeError as :func:`fingerprint_of`."""
    ta = a.toolchain if isinstance(a, MeasuredProgram) or hasattr(a, "binary") else a
    tb = b.toolchain if isinstance(b, MeasuredProgram) or hasattr(b, "binary") else b
    fa, fb = fingerprint_of(ta), fingerprint_of(tb)
    if fa == fb:
        return
    ra, rb = _toolchain_record(ta), _toolchain_record(tb)
    diffs: dict[str, tuple[Any, Any]] = {}
    if isinstance(ra, dict) and isinstance(rb, dict):
        diffs = {k: (ra.get(k), rb.get(k)) for k in sorted(set(ra) | set(rb))
                 if k not in ("fingerprint", "include_dirs", "exec_path") and ra.get(k) != rb.get(k)}
    detail = "; ".join(f"{k}: {va!r} != {vb!r}" for k, (va, vb) in diffs.items())
    raise FingerprintMismatch(fa, fb, detail, diffs)


def check_cases(cases: Sequence[Any]) -> list[Case]:
    if not cases:
        raise ValueError("no cases to measure (zero tests is INVALID_TASK, never a measurement: DESIGN.md)")
    out, seen = [], set()
    for i, c in enumerate(cases):
        if not isinstance(c, (tuple, list)) or len(c) != 3:
            raise ValueError(f"case {i}: expected (name, stdin bytes, expected bytes or None), got {c!r:.80}")
        name, stdin, expected = c
        if not isinstance(name, str) or not name:
            raise ValueError(f"case {i}: field 'name' must be a non-empty str, got {name!r:.80}")
        if name in seen:
            raise ValueError(f"case {i}: duplicate name {name!r}")
        seen.add(name)
        if not isinstance(stdin, (bytes, bytearray)):
            raise ValueError(f"case {name!r}: field 'stdin' must be bytes, got {type(stdin).__name__}")
        if expected is not None and not isinstance(expected, (bytes, bytearray)):
            raise ValueError(f"case {name!r}: field 'expected' must be bytes or None, got {type(expected).__name__}")
        out.append((name, bytes(stdin), None if expected is None else bytes(expected)))
    return out


def largest_count(n: int, fraction: float = LARGEST_FRACTION) -> int:
    """How many of ``n`` measured cases are "the largest": ``ceil(fraction * n)``, at least 1. Raises
    ValueError unless ``0 < fraction <= 1``."""
    if not 0 < fraction <= 1:
        raise ValueError(f"largest_fraction must be in (0, 1], got {fraction}")
    return max(1, math.ceil(fraction * n - 1e-9))


def largest_cases(costs: Sequence[tuple[str, float]], fraction: float = LARGEST_FRACTION) -> list[str]:
    """Names of the :func:`largest_count` costliest cases of ``[(name, cost), ...]``, costliest first, ties
    by input order. Raises ValueError unless ``0 < fraction <= 1``."""
    k = largest_count(len(costs), fraction)
    ranked = sorted(range(len(costs)), key=lambda i: (-costs[i][1], i))
    return [costs[i][0] for i in ranked[:k]]


@dataclass
class CaseFigures:
    """One case: the figures of ``a`` and ``b`` (instructions, or seconds on the chosen clock; ``None`` when that
    run failed or was not reached), their statuses, and for wall time each side's spread
    (``{"wall": Spread, "cpu": Spread}`` as dicts)."""

    case: str
    a: float | int | None
    b: float | int | None
    a_status: str = "not_run"
    b_status: str = "not_run"
    a_spread: dict[str, Any] | None = None
    b_spread: dict[str, Any] | None = None

    @property
    def speedup(self) -> float | None:
        """``a / b`` on this case, ``None`` unless both figures exist."""
        if self.a is None or self.b is None or self.b <= 0:
            return None
        return self.a / self.b


@dataclass
class Comparison:
    """The result of :func:`~arbiter.timing.measure.compare` (rules: ``docs/measurement.md``).

    - ``method`` (``instructions`` | ``wall``), ``unit`` (``instructions`` | ``seconds``), ``clock`` (wall method:
      ``wall`` | ``cpu``, the clock of the headline figures).
    - ``a_name`` / ``b_name``; ``fingerprint`` (the shared toolchain fingerprint) and ``toolchain`` (its record);
      ``meter``: what else the figures depend on (valgrind version, options, CPU; or the wall schedule and core).
    - ``cases``: :class:`CaseFigures` in case order. ``a_total`` / ``b_total``: sums; ``speedup``:
      ``a_total / b_total``; ``largest_cases`` / ``largest_speedup``: the same over the costliest cases of ``a``.
      Totals and speedups are ``None`` when any run failed.
    - ``failures``: ``{"program", "case", "status", "detail"}`` per failed run; ``order``: the runs in the order they
      happened; ``extra``: wall method: the other clock's totals and speedup, per-round speedups; with a baseline
      cache: ``baseline_cache_hits`` (how many of ``a``'s figures came from the cache); after a meter fallback:
      ``meter_failures`` (the runs the requested meter could not do).
    - ``requested_method`` / ``fallback_reason``: ``None`` unless the figures come from a fallback (module
      ``docs/measurement.md``, "Meter fallback"): then ``method`` is the method that produced them (``wall``),
      ``requested_method`` the one asked for (``instructions``) and ``fallback_reason`` why.
    """

    method: str
    unit: str
    a_name: str
    b_name: str
    fingerprint: str
    toolchain: Any
    meter: dict[str, Any]
    cases: list[CaseFigures]
    a_total: float | int | None
    b_total: float | int | None
    speedup: float | None
    largest_fraction: float
    largest_cases: list[str]
    largest_speedup: float | None
    failures: list[dict[str, Any]] = field(default_factory=list)
    order: list[dict[str, Any]] = field(default_factory=list)
    clock: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    requested_method: str | None = None
    fallback_reason: str | None = None

    @property
    def ok(self) -> bool:
        """True when every run of both programs succeeded (then ``speedup`` is a number)."""
        return not self.failures and self.speedup is not None

    @property
    def sandbox_error(self) -> bool:
        """True when a failure was ours (``sandbox_error``), not the program's: retry and report, never reward 0
        silently (DESIGN.md standing rules)."""
        return any(f["status"] == MeasureStatus.SANDBOX_ERROR.value for f in self.failures)

    def failed(self, program: str) -> bool:
        """True when ``program`` (``"a"`` or ``"b"``) failed a run."""
        return any(f["program"] == program for f in self.failures)

    def ceiling_speedup(self, floor: float) -> float | None:
        """Mean per-case cost of ``a`` / ``floor`` (the startup floor in the same unit): the largest speedup a
        candidate could reach if only start-up remained (card: ``ceiling_speedup`` = "mean per-case src ticks /
        startup floor"). ``None`` when ``a`` failed. Raises ValueError for ``floor <= 0``."""
        if floor <= 0:
            raise ValueError(f"floor must be positive, got {floor}")
        figs = [c.a for c in self.cases]
        if self.failed("a") or not figs or any(f is None for f in figs):
            return None
        return math.fsum(figs) / len(figs) / floor  # type: ignore[arg-type]

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (every field, per-case speedups included)."""
        return {
            "method": self.method, "unit": self.unit, "clock": self.clock,
            "a_name": self.a_name, "b_name": self.b_name,
            "fingerprint": self.fingerprint, "toolchain": self.toolchain, "meter": self.meter,
            "cases": [{"case": c.case, "a": c.a, "b": c.b, "speedup": c.speedup, "a_status": c.a_status,
                       "b_status": c.b_status, "a_spread": c.a_spread, "b_spread": c.b_spread}
                      for c in self.cases],
            "a_total": self.a_total, "b_total": self.b_total, "speedup": self.speedup,
            "largest_fraction": self.largest_fraction, "largest_cases": self.largest_cases,
            "largest_speedup": self.largest_speedup, "ok": self.ok, "failures": self.failures,
            "order": self.order, "extra": self.extra,
            "requested_method": self.requested_method, "fallback_reason": self.fallback_reason,
        }


def _sums(cases: list[CaseFigures], names: Sequence[str] | None = None) -> tuple[Any, Any, float | None]:
    pick = [c for c in cases if names is None or c.case in names]
    if not pick or any(c.a is None or c.b is None for c in pick):
        return None, None, None
    if all(isinstance(c.a, int) and isinstance(c.b, int) for c in pick):
        sa, sb = sum(c.a for c in pick), sum(c.b for c in pick)  # type: ignore[misc]
    else:
        sa, sb = math.fsum(c.a for c in pick), math.fsum(c.b for c in pick)  # type: ignore[misc]
    return sa, sb, (sa / sb if sb > 0 else None)


def meter_fallback_reason(cmp: Comparison) -> str | None:
    """Why ``cmp`` (an instruction comparison) must be measured with another method, or ``None``: the short reason
    (:func:`~arbiter.timing.instructions.meter_reason`) of its first ``unsupported_by_meter`` failure, e.g.
    ``"valgrind cannot decode the program's instructions (AVX-512)"``. ``None`` when no run failed that way, or when
    a failure was ours (``sandbox_error``: retried and reported, never papered over by another meter)."""
    if cmp.sandbox_error:
        return None
    for f in cmp.failures:
        if f["status"] == MeasureStatus.UNSUPPORTED_BY_METER.value:
            return meter_reason(str(f.get("detail") or "")) or "the meter cannot run the program"
    return None


def comparable_speedups(comparisons: Sequence["Comparison"]) -> list[float | None]:
    """The speedups of ``comparisons``, after checking that they all come from one measure, cycle model and cache
    geometry (:func:`~arbiter.timing.cycles.check_same_model`; raises
    :class:`~arbiter.timing.cycles.ModelMismatch`): the one door for comparing or averaging speedups."""
    for c in comparisons[1:]:
        if c.method != comparisons[0].method:
            raise ModelMismatch(f"speedups of different measures are not comparable: {comparisons[0].method} vs "
                                f"{c.method}")
        check_same_model(comparisons[0].meter, c.meter)
    return [c.speedup for c in comparisons]


def mark_fallback(fallback: Comparison, attempt: Comparison, reason: str) -> Comparison:
    """Mark ``fallback`` (the comparison that produced the figures) as standing in for ``attempt`` (the one asked
    for, which the meter could not do): ``requested_method``, ``fallback_reason`` and ``extra["meter_failures"]``
    (``attempt``'s failures). Returns ``fallback``."""
    fallback.requested_method = attempt.method
    fallback.fallback_reason = reason
    fallback.extra["meter_failures"] = [dict(f) for f in attempt.failures]
    return fallback


def build_comparison(pa: MeasuredProgram, pb: MeasuredProgram, method: str, unit: str, clock: str | None, meter: dict[str, Any],
            figures: list[CaseFigures], failures: list[dict[str, Any]], order: list[dict[str, Any]],
            fraction: float, extra: dict[str, Any]) -> Comparison:
    sa, sb, speedup = _sums(figures) if not failures else (None, None, None)
    big: list[str] = []
    big_speedup = None
    if all(f.a is not None for f in figures):
        big = largest_cases([(f.case, f.a) for f in figures], fraction)  # type: ignore[misc]
        if not failures:
            big_speedup = _sums(figures, big)[2]
    return Comparison(method=method, unit=unit, a_name=pa.name or "a", b_name=pb.name or "b",
                      fingerprint=pa.fingerprint, toolchain=_toolchain_record(pa.toolchain), meter=meter,
                      cases=figures, a_total=sa, b_total=sb, speedup=speedup, largest_fraction=fraction,
                      largest_cases=big, largest_speedup=big_speedup, failures=list(failures), order=order,
                      clock=clock, extra=extra)
