"""Measure two compiled programs on the same cases and report the speedup: the reusable entry point.

Used by the oracle verifier (issue 5, step 5: "measure the answer against source_code on the same tests ...
record both programs' figures and the speedup, with the toolchain fingerprint") and the PIE re-timing reward
(issue 7). :func:`compare` takes the baseline ``a`` (the source; PIE's ``src``) and the candidate ``b`` (the
answer; PIE's ``tgt``) and returns a :class:`Comparison`:

- ``method="instructions"`` (default; DESIGN.md "Speed"): exact guest-instruction counts under valgrind
  (:mod:`arbiter.timing.instructions`), one run per case and program, deterministic.
- ``method="wall"``: interleaved repeats with warm-up dropped, medians per case (:mod:`arbiter.timing.wallclock`);
  headline figures on the CPU clock by default, wall-clock figures alongside.
- **Speedup** = ``sum(a) / sum(b)`` over the same cases, the PIE card's rule ("speedup = sum(src ticks) /
  sum(tgt ticks)"; "src over tgt"): above 1 means ``b`` is faster. Per-case figures, both sums and the speedup
  are reported; ``None`` when any measured run failed.
- **Largest cases**: the oracle issue asks that the answer be "not slower than the source on the largest tests".
  :attr:`Comparison.largest_speedup` is the same ratio restricted to the ``largest_fraction`` (default 20 %, at
  least one case) of cases where the baseline ``a`` costs most (ranked by ``a`` only, so the candidate cannot
  choose which cases count; ties by case order).
- **Toolchain**: every measurement records the toolchain fingerprint (DESIGN.md "Speed"); the card warns that
  figures from different toolchains are not comparable ("pin your toolchain"), so :func:`compare` refuses two
  programs whose fingerprints differ (:class:`FingerprintMismatch`) before running anything.
- **Startup floor** (:func:`startup_floor`): the instructions of an empty ``int main() {}`` under the same
  toolchain, the analogue of the card's 192M-tick gem5 startup floor behind ``ceiling_speedup``
  (:meth:`Comparison.ceiling_speedup`).
- Correctness is the judge's job; a measured run that crashes, hits a limit, or prints something other than the
  case's expected output is a failed measurement (:attr:`Comparison.failures`), never a number.
- **One process**: both methods refuse new processes and threads in measured runs (``RLIMIT_NPROC = 1``), since a
  child's or a thread's work would escape the figure (a parent that never reaps its child is not charged its CPU;
  valgrind counts each process separately). A program that fails only because of that fails with status
  ``creates_processes`` and the reason "program creates processes; its cost cannot be measured"
  (:func:`arbiter.timing.instructions.process_probe`): never a wrong answer, never a speedup, and no meter
  fallback (the wall method refuses them too).
- **Meter fallback**: valgrind cannot run every correct program (valgrind 3.19 has no AVX-512 decoder; a run
  that dies of it while the native run succeeds is ``unsupported_by_meter``, :mod:`arbiter.timing.instructions`).
  That is the meter's limitation, never the program's fault: with ``on_unsupported="wall"`` :func:`compare`
  measures the same pair again with the wall method (both programs, interleaved, same cases) and returns that
  comparison, marked ``requested_method="instructions"``, ``fallback_reason`` (e.g. "valgrind cannot decode the
  program's instructions (AVX-512)") and ``extra["meter_failures"]`` (the runs valgrind could not do).
  :func:`meter_fallback_reason` tells a caller that runs the fallback itself (the oracle verifier, which pauses
  its other work for wall measurements) whether a comparison needs one; :func:`mark_fallback` marks it.
- **Baseline cache** (instructions only): a baseline compared with many candidates (the oracle's ``source_code``,
  PIE's ``src``) needs measuring once per case, since a count is a pure function of the executable, its input, the
  toolchain and the meter. ``compare(a, b, cases, baseline_cache=cache)`` looks ``a``'s counts up in a
  :class:`~arbiter.timing.count_cache.CountCache`, measures only the misses (single flight per executable) and
  stores them; ``b`` is always measured afresh. Same figures, sums and rules as without a cache.
"""

from __future__ import annotations

import contextlib
import json
import math
import threading
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator, Literal, Mapping, Sequence

from arbiter.languages.toolchain import ToolchainMismatch
from arbiter.sandbox.limits import Limits
from arbiter.sandbox.sandbox import Sandbox
from arbiter.timing.count_cache import CountCache, count_key, sha256_hex
from arbiter.timing.instructions import (
    CaseCount,
    MeasureStatus,
    Valgrind,
    count_instructions,
    cpu_identity,
    find_valgrind,
    measure_instructions,
    measuring_sandbox_limits,
    meter_reason,
    valgrind_limits,
)
from arbiter.timing.wallclock import Clock, Pattern, core_lease, measure_wall

__all__ = [
    "EMPTY_PROGRAM",
    "IOSTREAM_PROGRAM",
    "Case",
    "CaseFigures",
    "Comparison",
    "FingerprintMismatch",
    "Method",
    "Program",
    "check_comparable",
    "compare",
    "fingerprint_of",
    "largest_cases",
    "mark_fallback",
    "meter_fallback_reason",
    "startup_floor",
]

Method = Literal["instructions", "wall"]
#: One test case: ``(name, stdin bytes, expected stdout bytes or None)``.
Case = tuple[str, bytes, "bytes | None"]
#: The programs whose instruction counts are the startup floor (the card's "startup floor" analogue).
EMPTY_PROGRAM = "int main() {}\n"
IOSTREAM_PROGRAM = "#include <iostream>\nint main() {}\n"
#: Default share of cases, ranked by the baseline's cost, that make up the "largest cases".
LARGEST_FRACTION = 0.2


class FingerprintMismatch(ToolchainMismatch):
    """The two programs were built by different toolchains (compiler, flags, libc, link mode): their figures are
    not comparable (card: "Caveat — pin your toolchain"). A :class:`~arbiter.languages.toolchain.ToolchainMismatch`
    (catch either); ``.a`` / ``.b`` are the two fingerprints, ``.differences`` maps each differing field to
    ``(a, b)`` when both toolchains are structured."""

    def __init__(self, a: str, b: str, detail: str = "",
                 differences: Mapping[str, tuple[Any, Any]] | None = None):
        self.a, self.b = a, b
        super().__init__("toolchain fingerprints differ; figures from different toolchains are not comparable"
                         + (f": {detail}" if detail else f": {a!r} != {b!r}"), differences or {})


def fingerprint_of(toolchain: Any) -> str:
    """The comparable identity of a toolchain: its ``.fingerprint`` (a :class:`~arbiter.languages.toolchain.Toolchain`),
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
class Program:
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
    def of(cls, obj: Any, name: str = "") -> "Program":
        """Accept a :class:`Program`, a ``(binary, toolchain)`` pair, or a compile result with ``.binary`` and
        ``.toolchain`` (``arbiter.languages.cpp.CompileResult``). Raises ValueError when there is no binary (a
        failed compile) and TypeError for anything else."""
        if isinstance(obj, Program):
            return obj if not name or obj.name == name else Program(obj.binary, obj.toolchain, name)
        if isinstance(obj, tuple) and len(obj) == 2 and isinstance(obj[0], (bytes, bytearray)):
            return cls(bytes(obj[0]), obj[1], name)
        if hasattr(obj, "binary") and hasattr(obj, "toolchain"):
            if not obj.binary:
                why = getattr(obj, "error", None) or getattr(obj, "message", None) or "no binary"
                raise ValueError(f"program {name or '?'} did not compile: {why}")
            return cls(bytes(obj.binary), obj.toolchain, name or getattr(obj, "name", "") or "")
        raise TypeError(f"cannot measure a {type(obj).__name__}: give a Program, (binary, toolchain) or a "
                        "compile result with .binary and .toolchain")


def check_comparable(a: Any, b: Any) -> None:
    """Refuse to compare figures of two different toolchains (card: "Caveat — pin your toolchain"; DESIGN.md
    "Speed": every measurement records its toolchain fingerprint). The one fingerprint check of the timing layer:
    :func:`compare` runs it before measuring anything, for both methods.

    ``a`` / ``b``: a :class:`Program` (or a compile result with ``.binary`` and ``.toolchain``), or a toolchain as
    :func:`fingerprint_of` accepts it (``Toolchain``, its ``to_dict()`` mapping, a fingerprint string). Returns
    ``None`` when the fingerprints are equal. Raises :class:`FingerprintMismatch` (a
    :class:`~arbiter.languages.toolchain.ToolchainMismatch`) naming every differing field of structured toolchains
    (``include_dirs`` / ``exec_path`` ignored, as :func:`~arbiter.languages.toolchain.assert_comparable` does);
    ValueError / TypeError as :func:`fingerprint_of`."""
    ta = a.toolchain if isinstance(a, Program) or hasattr(a, "binary") else a
    tb = b.toolchain if isinstance(b, Program) or hasattr(b, "binary") else b
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


def _check_cases(cases: Sequence[Any]) -> list[Case]:
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


def largest_cases(costs: Sequence[tuple[str, float]], fraction: float = LARGEST_FRACTION) -> list[str]:
    """Names of the ``ceil(fraction * n)`` (at least 1) costliest cases of ``[(name, cost), ...]``, costliest
    first, ties by input order. Raises ValueError unless ``0 < fraction <= 1``."""
    if not 0 < fraction <= 1:
        raise ValueError(f"largest_fraction must be in (0, 1], got {fraction}")
    k = max(1, math.ceil(fraction * len(costs) - 1e-9))
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
    """The result of :func:`compare` (see the module docstring for the rules).

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
      docstring, "Meter fallback"): then ``method`` is the method that produced them (``wall``),
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


@contextlib.contextmanager
def _lease(pin: bool) -> Iterator[int | None]:
    if not pin:
        yield None
        return
    with core_lease() as core:
        yield core


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


def mark_fallback(fallback: Comparison, attempt: Comparison, reason: str) -> Comparison:
    """Mark ``fallback`` (the comparison that produced the figures) as standing in for ``attempt`` (the one asked
    for, which the meter could not do): ``requested_method``, ``fallback_reason`` and ``extra["meter_failures"]``
    (``attempt``'s failures). Returns ``fallback``."""
    fallback.requested_method = attempt.method
    fallback.fallback_reason = reason
    fallback.extra["meter_failures"] = [dict(f) for f in attempt.failures]
    return fallback


def compare(a: Any, b: Any, cases: Sequence[Case], method: Method = "instructions", *,
            limits: Limits | None = None, same_output: Callable[[bytes, bytes], bool] | None = None,
            largest_fraction: float = LARGEST_FRACTION, repeats: int = 5, warmup: int = 1,
            pattern: Pattern = "ABBA", clock: Clock = "cpu", pin: bool = True, stop_on_failure: bool = True,
            valgrind: Valgrind | None = None, baseline_cache: CountCache | None = None,
            output_check: str | Mapping[str, str] = "",
            on_unsupported: Literal["fail", "wall"] = "fail") -> Comparison:
    """Measure baseline ``a`` and candidate ``b`` on the same ``cases``; return a :class:`Comparison`.

    - ``a`` / ``b``: :class:`Program`, ``(binary, toolchain)`` or a compile result (see :meth:`Program.of`).
    - ``cases``: ``(name, stdin bytes, expected stdout bytes or None)``; names unique; at least one.
    - ``method``: ``"instructions"`` (valgrind, one run per case and program, limits scaled by
      :func:`~arbiter.timing.instructions.valgrind_limits`) or ``"wall"`` (``warmup + repeats`` interleaved
      rounds in ``pattern`` order; figures on ``clock``, seconds). ``clock`` defaults to ``"cpu"`` (the run's
      CPU seconds): on this shared host under load the per-case spread of wall time was 10x that of CPU time
      (``bench/pie.py``: median coefficient of variation 52 % vs 5.4 %); the other clock's totals and speedup
      are always in ``extra``.
    - ``limits``: the programs' native per-run limits (default :class:`Limits`).
    - ``same_output(actual, expected)``: the output check for cases with an expected output (default: trailing
      whitespace ignored); pass the judge's checker for tolerant comparisons.
    - ``pin``: hold an exclusive core (:func:`~arbiter.timing.wallclock.core_lease`) for the whole measurement.
    - ``stop_on_failure``: stop at the first failed run (the speedup is then ``None`` anyway).
    - ``baseline_cache`` (instructions only): a :class:`~arbiter.timing.count_cache.CountCache` for ``a``'s counts
      (``CountCache.disabled()``: the same order of runs, nothing kept). Keys:
      :func:`~arbiter.timing.count_cache.count_key` of (``a``'s executable sha256, its toolchain fingerprint, each
      case's stdin and expected output, ``output_check``, the valgrind meter fingerprint, the valgrind limits). Under the cache's single-flight
      lock for ``a``'s executable, every case is looked up first (a remembered failure counts as that failed run,
      when the cache remembers failures); the misses are measured in one sandbox and their counts stored (failed
      runs remembered, except ``sandbox_error``: ours, never kept). Then ``b`` is measured on every case — unless
      ``a`` failed and ``stop_on_failure``. So ``order`` lists ``a``'s measured runs, then ``b``'s (cache hits are
      not runs); ``extra["baseline_cache_hits"]`` says how many of ``a``'s figures came from the cache; ``meter``
      and every figure are as without a cache (``meter["core"]``: the core of the last measurement).
    - ``output_check``: the identity of ``same_output`` in the cache keys (e.g. the checker's name and options),
      one string for every case or ``{case name: string}``; ``""`` when one fixed check is used with this cache.
    - ``on_unsupported`` (instructions only): ``"fail"`` (default) reports a run valgrind cannot do as an
      ``unsupported_by_meter`` failure; ``"wall"`` then measures the pair again with the wall method (``repeats``,
      ``warmup``, ``pattern``, ``clock``) and returns that comparison, marked (:func:`mark_fallback`).

    Each program runs in its own sandbox (one sandbox per submission). A ``sandbox_error`` run is retried once in
    a fresh sandbox. Raises :class:`FingerprintMismatch` (a ``ToolchainMismatch``, :func:`check_comparable`) when
    the toolchain fingerprints differ, before running anything; ValueError for bad cases or options (also a
    ``baseline_cache`` with the wall method: wall figures are only comparable when interleaved);
    :class:`~arbiter.timing.instructions.ValgrindUnavailable` when the instruction method has no valgrind; and
    :class:`~arbiter.sandbox.sandbox.SandboxError` when no sandbox starts (our fault: report ``SANDBOX_ERROR``).
    """
    pa, pb = Program.of(a, getattr(a, "name", "") or "a"), Program.of(b, getattr(b, "name", "") or "b")
    check_comparable(pa, pb)
    checked = _check_cases(cases)
    if method not in ("instructions", "wall"):
        raise ValueError(f"method must be 'instructions' or 'wall', got {method!r}")
    if baseline_cache is not None and method != "instructions":
        raise ValueError("baseline_cache applies to instruction counts only: wall figures are comparable only when "
                         "both programs' runs are interleaved")
    if clock not in ("wall", "cpu"):
        raise ValueError(f"clock must be 'wall' or 'cpu', got {clock!r}")
    if on_unsupported not in ("fail", "wall"):
        raise ValueError(f"on_unsupported must be 'fail' or 'wall', got {on_unsupported!r}")
    if not 0 < largest_fraction <= 1:
        raise ValueError(f"largest_fraction must be in (0, 1], got {largest_fraction}")
    native = limits or Limits()
    if method == "instructions":
        if baseline_cache is not None:
            got = _compare_cached(pa, pb, checked, native, same_output, largest_fraction, pin, stop_on_failure,
                                  valgrind or find_valgrind(), baseline_cache, output_check)
        else:
            got = _compare_instructions(pa, pb, checked, native, same_output, largest_fraction, pin,
                                        stop_on_failure, valgrind or find_valgrind())
        reason = meter_fallback_reason(got) if on_unsupported == "wall" else None
        if reason is None:
            return got
        wall = _compare_wall(pa, pb, checked, native, same_output, largest_fraction, repeats, warmup, pattern,
                             clock, pin, stop_on_failure)
        return mark_fallback(wall, got, reason)
    return _compare_wall(pa, pb, checked, native, same_output, largest_fraction, repeats, warmup, pattern, clock,
                         pin, stop_on_failure)


def _compare_instructions(pa: Program, pb: Program, cases: list[Case], native: Limits,
                          same_output: Callable[[bytes, bytes], bool] | None, fraction: float, pin: bool,
                          stop: bool, vg: Valgrind) -> Comparison:
    vlim = valgrind_limits(native)
    progs = {"a": pa, "b": pb}
    figures = [CaseFigures(case=name, a=None, b=None) for name, _, _ in cases]
    failures: list[dict[str, Any]] = []
    order: list[dict[str, Any]] = []
    with _lease(pin) as core:
        sbs: dict[str, Sandbox] = {}
        try:
            for k, p in progs.items():
                sbs[k] = Sandbox(files={"main": p.binary}, limits=measuring_sandbox_limits(vlim, native),
                                 mounts=vg.mounts)
            for fig, (name, stdin, expected) in zip(figures, cases):
                for key in ("a", "b"):
                    c = _count_with_retry(sbs, key, progs[key], vlim, vg, name, stdin, expected, same_output,
                                          native)
                    order.append({"case": name, "program": key})
                    setattr(fig, key, c.instructions if c.ok else None)
                    setattr(fig, f"{key}_status", c.status.value)
                    if not c.ok:
                        failures.append({"program": key, "case": name, "status": c.status.value,
                                         "detail": c.detail})
                        if stop:
                            break
                if failures and stop:
                    break
        finally:
            for sb in sbs.values():
                sb.close()
    return _finish(pa, pb, "instructions", "instructions", None, _instruction_meter(vg, core, vlim), figures,
                   failures, order, fraction, {})


def _instruction_meter(vg: Valgrind, core: int | None, vlim: Limits) -> dict[str, Any]:
    return dict(vg.fingerprint(), core=core, limits={"cpu_seconds": vlim.cpu_seconds,
                                                     "memory_bytes": vlim.memory_bytes, "stack_bytes": vlim.stack})


def _compare_cached(pa: Program, pb: Program, cases: list[Case], native: Limits,
                    same_output: Callable[[bytes, bytes], bool] | None, fraction: float, pin: bool, stop: bool,
                    vg: Valgrind, cache: CountCache, output_check: str | Mapping[str, str]) -> Comparison:
    """The instruction method with ``a``'s counts from ``cache`` (see :func:`compare`, ``baseline_cache``)."""
    vlim = valgrind_limits(native)
    meter_fp = vg.fingerprint()
    exe = sha256_hex(pa.binary)
    keys = {name: count_key(exe, stdin, expected, toolchain=pa.fingerprint, meter=meter_fp, limits=vlim,
                            output_check=output_check if isinstance(output_check, str)
                            else output_check.get(name, ""))
            for name, stdin, expected in cases}
    figs = {name: CaseFigures(case=name, a=None, b=None) for name, _, _ in cases}
    failures: list[dict[str, Any]] = []
    order: list[dict[str, Any]] = []
    hits = 0
    core: int | None = None

    def measure(key: str, prog: Program, todo: list[Case]) -> None:
        nonlocal core
        with _lease(pin) as core:
            run = measure_instructions(prog.binary, todo, limits=native, same_output=same_output,
                                       stop_on_failure=stop, valgrind=vg, pin=False)
        for c in run.counts:
            order.append({"case": c.case, "program": key})
            setattr(figs[c.case], key, c.instructions if c.ok else None)
            setattr(figs[c.case], f"{key}_status", c.status.value)
            if key == "a" and c.ok:
                cache.put(keys[c.case], int(c.instructions), c.case)  # type: ignore[arg-type]
            elif not c.ok:
                if key == "a" and c.status is not MeasureStatus.SANDBOX_ERROR:
                    cache.put_failure(keys[c.case], c.status.value, c.detail)
                failures.append({"program": key, "case": c.case, "status": c.status.value, "detail": c.detail})

    with cache.flight(exe):
        todo: list[Case] = []
        for case in cases:
            name = case[0]
            n = cache.get(keys[name])
            fail = cache.failure(keys[name]) if n is None else None
            if n is not None:
                figs[name].a, figs[name].a_status = n, MeasureStatus.OK.value
                hits += 1
            elif fail is not None:
                figs[name].a_status = fail[0]
                failures.append({"program": "a", "case": name, "status": fail[0], "detail": fail[1]})
                if stop:
                    break
            else:
                todo.append(case)
        if todo and not (failures and stop):
            measure("a", pa, todo)
    if not (failures and stop):
        measure("b", pb, cases)
    return _finish(pa, pb, "instructions", "instructions", None, _instruction_meter(vg, core, vlim),
                   [figs[name] for name, _, _ in cases], failures, order, fraction, {"baseline_cache_hits": hits})


def _count_with_retry(sbs: dict[str, Sandbox], key: str, prog: Program, vlim: Limits, vg: Valgrind, name: str,
                      stdin: bytes, expected: bytes | None,
                      same_output: Callable[[bytes, bytes], bool] | None, native: Limits) -> CaseCount:
    c = count_instructions(sbs[key], ("/prog/main",), stdin, limits=vlim, expected=expected,
                           same_output=same_output, case=name, valgrind=vg, native_limits=native)
    if c.status is MeasureStatus.SANDBOX_ERROR:
        sbs[key].close()
        sbs[key] = Sandbox(files={"main": prog.binary}, limits=measuring_sandbox_limits(vlim, native),
                           mounts=vg.mounts)
        c = count_instructions(sbs[key], ("/prog/main",), stdin, limits=vlim, expected=expected,
                               same_output=same_output, case=name, valgrind=vg, native_limits=native)
    return c


def _compare_wall(pa: Program, pb: Program, cases: list[Case], native: Limits,
                  same_output: Callable[[bytes, bytes], bool] | None, fraction: float, repeats: int, warmup: int,
                  pattern: Pattern, clock: Clock, pin: bool, stop: bool) -> Comparison:
    for attempt in range(2):
        with _lease(pin) as core:
            sbs: dict[str, Sandbox] = {}
            try:
                sbs["a"] = Sandbox(files={"main": pa.binary}, limits=native)
                sbs["b"] = Sandbox(files={"main": pb.binary}, limits=native)
                run = measure_wall(sbs, cases, limits=native, repeats=repeats, warmup=warmup, pattern=pattern,
                                   same_output=same_output, stop_on_failure=stop)
            finally:
                for sb in sbs.values():
                    sb.close()
        ours = [f for f in run.failures if f["status"] == MeasureStatus.SANDBOX_ERROR.value]
        if not ours or attempt:
            break
    other: Clock = "cpu" if clock == "wall" else "wall"
    times = {k: {t.case: t for t in run.times.get(k, [])} for k in ("a", "b")}
    failed = {(f["program"], f["case"]): f["status"] for f in run.failures}
    figures = []
    for name, _, _ in cases:
        fig = CaseFigures(case=name, a=None, b=None)
        for key in ("a", "b"):
            t = times[key].get(name)
            if t is not None:
                setattr(fig, key, t.on(clock).median)
                setattr(fig, f"{key}_spread", {"wall": vars(t.wall), "cpu": vars(t.cpu)})
                setattr(fig, f"{key}_status", MeasureStatus.OK.value)
            elif (key, name) in failed:
                setattr(fig, f"{key}_status", failed[(key, name)])
        figures.append(fig)
    extra: dict[str, Any] = {}
    if run.ok:
        ta, tb = run.total("a", other), run.total("b", other)
        extra = {f"{other}_a_total": ta, f"{other}_b_total": tb,
                 f"{other}_speedup": (ta / tb if ta is not None and tb else None),
                 "round_speedups": run.round_speedups("a", "b", clock)}
    meter = {"meter": "wall", "clock": clock, "repeats": repeats, "warmup": warmup, "pattern": pattern,
             "core": core, "cpu_model": find_cpu_model(), "single_process": True}
    order = [s.to_dict() for s in run.order]
    return _finish(pa, pb, "wall", "seconds", clock, meter, figures, run.failures, order, fraction, extra)


def find_cpu_model() -> str:
    """The host CPU model name (recorded with wall-clock figures)."""
    return cpu_identity()[0]


def _finish(pa: Program, pb: Program, method: str, unit: str, clock: str | None, meter: dict[str, Any],
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


# ---------------------------------------------------------------------------------------------------------------
# startup floor
# ---------------------------------------------------------------------------------------------------------------

_floors: dict[tuple[str, bool, str], int] = {}
_floors_lock = threading.Lock()


def startup_floor(compiler: Any = None, *, iostream: bool = False, limits: Limits | None = None,
                  valgrind: Valgrind | None = None) -> int:
    """Instructions executed by an empty program (``int main() {}``; with ``iostream=True``, one that only
    includes ``<iostream>``) under the given toolchain and flags: the instruction-count analogue of the PIE card's
    gem5 startup floor (192M ticks; card, ``ceiling_speedup``), which "depends on the compiler/glibc/link mode".

    ``compiler``: a :class:`~arbiter.languages.cpp.CompileSpec` (or ``None``: the default spec) passed to
    :func:`arbiter.languages.cpp.compile_cpp`, or a callable ``source -> compiled program`` (anything
    :meth:`Program.of` accepts; its toolchain fingerprint must describe the same compiler, flags, libc and link
    mode as the programs measured). Cached per (toolchain fingerprint,
    iostream, meter) for the life of the process. Returns instructions (an int > 0). Raises RuntimeError when
    the empty program does not compile or cannot be measured, ValgrindUnavailable without valgrind.
    """
    vg = valgrind or find_valgrind()
    source = IOSTREAM_PROGRAM if iostream else EMPTY_PROGRAM
    if callable(compiler):
        compiled = compiler(source)
    else:
        from arbiter.languages.cpp import compile_cpp
        compiled = compile_cpp(source, compiler)
    try:
        prog = Program.of(compiled, "startup")
    except (TypeError, ValueError) as exc:
        raise RuntimeError(f"startup floor: the empty program did not compile: {exc}") from exc
    key = (prog.fingerprint, iostream, json.dumps(vg.fingerprint(), sort_keys=True))
    with _floors_lock:
        if key in _floors:
            return _floors[key]
    run = measure_instructions(prog.binary, [("startup", b"", None)], limits=limits, valgrind=vg)
    if not run.ok or run.total is None:
        c = run.counts[0] if run.counts else None
        raise RuntimeError(f"startup floor: the empty program could not be measured: "
                           f"{c.status.value if c else '?'} {c.detail if c else ''}")
    with _floors_lock:
        _floors[key] = run.total
    return run.total
