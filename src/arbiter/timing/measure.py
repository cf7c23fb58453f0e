"""Measure two compiled programs on the same cases and report the speedup (:func:`compare`), and the startup
floor of a toolchain (:func:`startup_floor`).

``method="instructions"`` (default) counts instructions under valgrind (:mod:`arbiter.timing.instructions`);
``method="wall"`` times interleaved repeats (:mod:`arbiter.timing.wallclock`). The result and its rules live in
:mod:`arbiter.timing.comparison` (its names are importable from here). The measurement story, the baseline
cache and the meter fallback: ``docs/measurement.md``.
"""

from __future__ import annotations

import contextlib
import json
import threading
from typing import Any, Callable, Iterator, Literal, Mapping, Sequence

from arbiter.sandbox.limits import Limits
from arbiter.sandbox.sandbox import Sandbox
from arbiter.timing.comparison import (
    LARGEST_FRACTION, METHODS, Case, CaseFigures, Comparison, FingerprintMismatch, Method, MeasuredProgram, build_comparison,
    check_cases, check_comparable, fingerprint_of, largest_cases, mark_fallback, meter_fallback_reason,
)
from arbiter.timing.cycles import DEFAULT_MODEL, CycleModel
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
    "MeasuredProgram",
    "check_comparable",
    "compare",
    "fingerprint_of",
    "largest_cases",
    "mark_fallback",
    "meter_fallback_reason",
    "startup_floor",
]


#: The programs whose instruction counts are the startup floor (the card's "startup floor" analogue).
EMPTY_PROGRAM = "int main() {}\n"


IOSTREAM_PROGRAM = "#include <iostream>\nint main() {}\n"


@contextlib.contextmanager
def _lease(pin: bool) -> Iterator[int | None]:
    if not pin:
        yield None
        return
    with core_lease() as core:
        yield core


def compare(a: Any, b: Any, cases: Sequence[Case], method: Method = "instructions", *,
            limits: Limits | None = None, same_output: Callable[[bytes, bytes], bool] | None = None,
            largest_fraction: float = LARGEST_FRACTION, repeats: int = 5, warmup: int = 1,
            pattern: Pattern = "ABBA", clock: Clock = "cpu", pin: bool = True, stop_on_failure: bool = True,
            valgrind: Valgrind | None = None, baseline_cache: CountCache | None = None,
            output_check: str | Mapping[str, str] = "",
            on_unsupported: Literal["fail", "wall"] = "fail", cycle_model: CycleModel = DEFAULT_MODEL) -> Comparison:
    """Measure baseline ``a`` and candidate ``b`` on the same ``cases``; return a :class:`Comparison`.

    - ``a`` / ``b``: :class:`MeasuredProgram`, ``(binary, toolchain)`` or a compile result (see :meth:`MeasuredProgram.of`).
    - ``cases``: ``(name, stdin bytes, expected stdout bytes or None)``; names unique; at least one.
    - ``method``: ``"instructions"`` (valgrind, limits scaled by
      :func:`~arbiter.timing.instructions.valgrind_limits`) or ``"wall"`` (``warmup + repeats`` interleaved
      rounds in ``pattern`` order; headline figures on ``clock``, the other clock in ``extra``) or ``"cycles"``
      (one valgrind run per case with cache and branch simulation, figures from ``cycle_model``).
    - ``limits``: the programs' native per-run limits (default :class:`Limits`).
    - ``same_output(actual, expected)``: the output check (default: trailing whitespace ignored).
    - ``pin``: hold an exclusive core (:func:`~arbiter.timing.wallclock.core_lease`) for the whole measurement.
    - ``stop_on_failure``: stop at the first failed run (the speedup is then ``None`` anyway).
    - ``baseline_cache`` (instructions only): a :class:`~arbiter.timing.count_cache.CountCache` for ``a``'s
      counts; ``output_check``: the identity of ``same_output`` in its keys (one string, or one per case name).
    - ``on_unsupported`` (instructions only): ``"wall"`` measures the pair again with the wall method when
      valgrind cannot run a program, and returns that comparison, marked (:func:`mark_fallback`).

    The rules (speedup, largest cases, retries, cache, fallback) are in ``docs/measurement.md``. Raises
    :class:`FingerprintMismatch` when the toolchain fingerprints differ, before running anything; ValueError for
    bad cases or options; :class:`~arbiter.timing.instructions.ValgrindUnavailable` when the instruction method
    has no valgrind; :class:`~arbiter.sandbox.sandbox.SandboxError` when no sandbox starts.
    """
    pa, pb = MeasuredProgram.of(a, getattr(a, "name", "") or "a"), MeasuredProgram.of(b, getattr(b, "name", "") or "b")
    check_comparable(pa, pb)
    checked = check_cases(cases)
    _check_options(method, baseline_cache, clock, on_unsupported, largest_fraction)
    native = limits or Limits()

    def wall() -> Comparison:
        return _compare_wall(pa, pb, checked, native, same_output, largest_fraction, repeats, warmup, pattern,
                             clock, pin, stop_on_failure)

    if method == "wall":
        return wall()
    vg = valgrind or find_valgrind()
    if method == "cycles":
        vg = vg.with_cycles(cycle_model)
    if baseline_cache is not None:
        got = _compare_cached(pa, pb, checked, native, same_output, largest_fraction, pin, stop_on_failure,
                              vg, baseline_cache, output_check)
    else:
        got = _compare_instructions(pa, pb, checked, native, same_output, largest_fraction, pin,
                                    stop_on_failure, vg)
    reason = meter_fallback_reason(got) if on_unsupported == "wall" else None
    return got if reason is None else mark_fallback(wall(), got, reason)


def _check_options(method: str, baseline_cache: CountCache | None, clock: str, on_unsupported: str,
                   largest_fraction: float) -> None:
    if method not in METHODS:
        raise ValueError(f"method must be one of {', '.join(METHODS)}, got {method!r}")
    if baseline_cache is not None and method == "wall":
        raise ValueError("baseline_cache applies to instruction counts only (and cycles): wall figures are "
                         "comparable only when "
                         "both programs' runs are interleaved")
    if clock not in ("wall", "cpu"):
        raise ValueError(f"clock must be 'wall' or 'cpu', got {clock!r}")
    if on_unsupported not in ("fail", "wall"):
        raise ValueError(f"on_unsupported must be 'fail' or 'wall', got {on_unsupported!r}")
    if not 0 < largest_fraction <= 1:
        raise ValueError(f"largest_fraction must be in (0, 1], got {largest_fraction}")


def _compare_instructions(pa: MeasuredProgram, pb: MeasuredProgram, cases: list[Case], native: Limits,
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
                    setattr(fig, key, c.cost if c.ok else None)
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
    label = _label(vg)
    return build_comparison(pa, pb, label, label, None, _instruction_meter(vg, core, vlim), figures,
                   failures, order, fraction, {})


def _label(vg: Valgrind) -> str:
    """The method and unit of a valgrind meter's figures."""
    return "instructions" if vg.cycle_model is None else "cycles"


def _instruction_meter(vg: Valgrind, core: int | None, vlim: Limits) -> dict[str, Any]:
    return dict(vg.fingerprint(), core=core, limits={"cpu_seconds": vlim.cpu_seconds,
                                                     "memory_bytes": vlim.memory_bytes, "stack_bytes": vlim.stack})


def _compare_cached(pa: MeasuredProgram, pb: MeasuredProgram, cases: list[Case], native: Limits,
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

    def measure(key: str, prog: MeasuredProgram, todo: list[Case]) -> None:
        nonlocal core
        run = measure_instructions(prog.binary, todo, limits=native, same_output=same_output,
                                   stop_on_failure=stop, valgrind=vg, pin=pin)
        core = run.cores[0] if run.cores else core
        for c in run.counts:
            order.append({"case": c.case, "program": key})
            setattr(figs[c.case], key, c.cost if c.ok else None)
            setattr(figs[c.case], f"{key}_status", c.status.value)
            if key == "a" and c.ok:
                cache.put(keys[c.case], int(c.cost), c.case)  # type: ignore[arg-type]
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
    return build_comparison(pa, pb, _label(vg), _label(vg), None, _instruction_meter(vg, core, vlim),
                   [figs[name] for name, _, _ in cases], failures, order, fraction, {"baseline_cache_hits": hits})


def _count_with_retry(sbs: dict[str, Sandbox], key: str, prog: MeasuredProgram, vlim: Limits, vg: Valgrind, name: str,
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


def _compare_wall(pa: MeasuredProgram, pb: MeasuredProgram, cases: list[Case], native: Limits,
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
    return build_comparison(pa, pb, "wall", "seconds", clock, meter, figures, run.failures, order, fraction, extra)


def find_cpu_model() -> str:
    """The host CPU model name (recorded with wall-clock figures)."""
    return cpu_identity()[0]


_floors: dict[tuple[str, bool, str], int] = {}


_floors_lock = threading.Lock()


def startup_floor(compiler: Any = None, *, iostream: bool = False, limits: Limits | None = None,
                  valgrind: Valgrind | None = None, method: Method = "instructions",
                  cycle_model: CycleModel = DEFAULT_MODEL) -> int:
    """The cost of an empty program (``int main() {}``; with ``iostream=True``, one that only includes
    ``<iostream>``) under the given toolchain and flags, in ``method``'s unit: instructions, or model cycles
    (``method="cycles"``, ``cycle_model``). The analogue of the PIE card's gem5 startup floor (192M ticks; card,
    ``ceiling_speedup``), which "depends on the compiler/glibc/link mode"; in cycles of the default model it is
    that floor's order of magnitude (``docs/measurement.md``, "Cycles").

    ``compiler``: a :class:`~arbiter.languages.cpp.CompileSpec` (or ``None``: the default spec) passed to
    :func:`arbiter.languages.cpp.compile_cpp`, or a callable ``source -> compiled program`` (anything
    :meth:`MeasuredProgram.of` accepts; its toolchain fingerprint must describe the same compiler, flags, libc and link
    mode as the programs measured). Cached per (toolchain fingerprint, iostream, meter incl. cycle model) for the
    life of the process. Returns an int > 0. Raises RuntimeError when the empty program does not compile or cannot
    be measured, ValgrindUnavailable without valgrind, ValueError for the wall method (no floor).
    """
    if method not in ("instructions", "cycles"):
        raise ValueError(f"the startup floor is measured in instructions or cycles, not {method!r}")
    vg = valgrind or find_valgrind()
    if method == "cycles" and vg.cycle_model is None:
        vg = vg.with_cycles(cycle_model)
    source = IOSTREAM_PROGRAM if iostream else EMPTY_PROGRAM
    if callable(compiler):
        compiled = compiler(source)
    else:
        from arbiter.languages.cpp.compile import compile_cpp
        compiled = compile_cpp(source, compiler)
    try:
        prog = MeasuredProgram.of(compiled, "startup")
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
