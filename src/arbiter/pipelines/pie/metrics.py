"""PIE's evaluation metrics over n generations per source program (what ``arbiter pie eval`` reports): best@k,
the floored speedup, %Opt and %Correct. Rules: ``docs/pie.md`` ("Metrics").
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field

__all__ = [
    "OPT_THRESHOLD",
    "REPORTED_THRESHOLDS",
    "PieMetricsAtK",
    "ProgramGenerations",
    "best_at_k",
    "floored_speedup",
    "format_metrics_table",
    "pie_eval_metrics",
]

#: %Opt threshold (pie.md §1: "%Opt = share of programs with speedup >= 1.10").
OPT_THRESHOLD = 1.10
#: The speedup thresholds PIE reports besides %Opt (pie.md §1: "Thresholds 1.25–10x are reported too").
REPORTED_THRESHOLDS: tuple[float, ...] = (1.25, 1.5, 2.0, 5.0, 10.0)


def _runtime(value: float | None, what: str) -> float:
    """A generation runtime: None / inf = failure (returned as inf); otherwise finite and > 0."""
    if value is None:
        return math.inf
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"{what}: runtime must be a number, None or inf (failure), got {value!r}")
    v = float(value)
    if v == math.inf:
        return v
    if not (math.isfinite(v) and v > 0):
        raise ValueError(f"{what}: runtime must be > 0 and finite (or None/inf for a failure), got {value!r}")
    return v


@dataclass(frozen=True)
class ProgramGenerations:
    """One source program and its n generations, in sampling order.

    ``src_runtime``: the source's runtime (finite, > 0). ``runtimes``: one entry per generation, a runtime in the
    same unit (finite, > 0) or ``None``/``math.inf`` for a generation that is not fully correct (incorrect, CE,
    TLE, RE). ``program_id`` only names the program in errors and per-program output.
    """

    src_runtime: float
    runtimes: Sequence[float | None]
    program_id: str = ""

    def __post_init__(self) -> None:
        what = f"program {self.program_id or '?'}"
        src = _runtime(self.src_runtime, f"{what} src_runtime")
        if src == math.inf:
            raise ValueError(f"{what}: src_runtime must be finite")
        object.__setattr__(self, "src_runtime", src)
        object.__setattr__(
            self, "runtimes", tuple(_runtime(r, f"{what} generation {i}") for i, r in enumerate(self.runtimes))
        )


def best_at_k(runtimes: Sequence[float | None], k: int) -> float:
    """Minimum runtime over the first ``k`` generations (``inf`` when none of them is correct).

    ``runtimes``: as in :class:`ProgramGenerations` (None/inf = failure). Raises ``ValueError`` when ``k < 1`` or
    ``k > len(runtimes)``. Source: pie.md §1, "best@k = minimum runtime over the first k samples".
    """
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise ValueError(f"k must be an int >= 1, got {k!r}")
    if k > len(runtimes):
        raise ValueError(f"k = {k} exceeds the {len(runtimes)} generations given")
    return min(_runtime(r, f"generation {i}") for i, r in enumerate(runtimes[:k]))


def floored_speedup(src_runtime: float, best_runtime: float | None) -> float:
    """``max(src_runtime / best_runtime, 1.0)``; a failed best (None/inf) gives 1.0. Source: PIE ``gem5_eval.py``
    (pie.md §1: speedup clipped below at 1.0, failures count as 1.0)."""
    src = _runtime(src_runtime, "src_runtime")
    best = _runtime(best_runtime, "best runtime")
    if src == math.inf:
        raise ValueError("src_runtime must be finite")
    if best == math.inf:
        return 1.0
    return max(src / best, 1.0)


@dataclass(frozen=True)
class PieMetricsAtK:
    """PIE's metrics at one k over ``n_programs`` programs.

    ``pct_opt``: % of programs with floored speedup >= 1.10. ``mean_speedup``: mean floored speedup (ratio).
    ``pct_correct``: % of programs with a correct generation among the first k. ``pct_speedup_at_least``:
    threshold → % of programs with floored speedup >= threshold (1.25, 1.5, 2, 5, 10 by default).
    ``speedups``: the per-program floored speedups, in input order.
    """

    k: int
    n_programs: int
    pct_opt: float
    mean_speedup: float
    pct_correct: float
    pct_speedup_at_least: dict[float, float] = field(default_factory=dict)
    speedups: tuple[float, ...] = ()

    def as_record(self) -> dict[str, float | int]:
        """A flat dict for JSONL/CSV output: ``k, n_programs, pct_opt, mean_speedup, pct_correct,
        pct_speedup_ge_<t>``, per-program speedups left out."""
        rec = {k: v for k, v in asdict(self).items() if k not in ("pct_speedup_at_least", "speedups")}
        for t, v in self.pct_speedup_at_least.items():
            rec[f"pct_speedup_ge_{t:g}"] = v
        return rec


def _as_program(p: ProgramGenerations | tuple, i: int) -> ProgramGenerations:
    if isinstance(p, ProgramGenerations):
        return p
    if isinstance(p, tuple) and len(p) in (2, 3):
        src, runs, *pid = p
        return ProgramGenerations(src, runs, pid[0] if pid else str(i))
    raise TypeError(
        f"program {i}: expected ProgramGenerations or (src_runtime, runtimes[, id]), got {type(p).__name__}"
    )


def pie_eval_metrics(
    programs: Iterable[ProgramGenerations | tuple],
    ks: Iterable[int] | None = None,
    *,
    thresholds: Sequence[float] = REPORTED_THRESHOLDS,
) -> list[PieMetricsAtK]:
    """PIE's %Opt, mean speedup, %Correct and threshold shares at each k, one :class:`PieMetricsAtK` per k.

    ``programs``: :class:`ProgramGenerations`, or ``(src_runtime, runtimes[, program_id])`` tuples. ``ks``: the
    k values (default 1..n, n = the smallest number of generations any program has); each must be in
    1..n. Raises ``ValueError`` for no programs, a program with no generations, a bad runtime (naming the program
    and generation) or a k out of range. Source: pie.md §1 "Aggregation" (PIE ``gem5_eval.py``).
    """
    progs = [_as_program(p, i) for i, p in enumerate(programs)]
    if not progs:
        raise ValueError("no programs to evaluate")
    for i, p in enumerate(progs):
        if not p.runtimes:
            raise ValueError(f"program {p.program_id or i} has no generations")
    n = min(len(p.runtimes) for p in progs)
    k_list = list(range(1, n + 1)) if ks is None else list(ks)
    for k in k_list:
        if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= n:
            raise ValueError(f"k = {k!r} is outside 1..{n} (n = fewest generations of any program)")
    out = []
    for k in k_list:
        best = [min(p.runtimes[:k]) for p in progs]
        sp = tuple(floored_speedup(p.src_runtime, b) for p, b in zip(progs, best))
        m = len(progs)
        out.append(
            PieMetricsAtK(
                k=k,
                n_programs=m,
                pct_opt=100.0 * sum(s >= OPT_THRESHOLD for s in sp) / m,
                mean_speedup=sum(sp) / m,
                pct_correct=100.0 * sum(b != math.inf for b in best) / m,
                pct_speedup_at_least={float(t): 100.0 * sum(s >= t for s in sp) / m for t in thresholds},
                speedups=sp,
            )
        )
    return out


def format_metrics_table(rows: Sequence[PieMetricsAtK]) -> str:
    """A plain-text table, one line per k: ``best@k  %Opt  speedup  %Correct  >=1.25x ...`` (percentages with two
    decimals, mean speedup with two decimals, as PIE prints them)."""
    if not rows:
        return ""
    ts = list(rows[0].pct_speedup_at_least)
    head = ["best@k", "%Opt", "speedup", "%Correct"] + [f">={t:g}x" for t in ts]
    lines = ["  ".join(f"{h:>9}" for h in head)]
    for r in rows:
        cells = [f"{r.k}", f"{r.pct_opt:.2f}", f"{r.mean_speedup:.2f}", f"{r.pct_correct:.2f}"]
        cells += [f"{r.pct_speedup_at_least.get(t, float('nan')):.2f}" for t in ts]
        lines.append("  ".join(f"{c:>9}" for c in cells))
    return "\n".join(lines)
