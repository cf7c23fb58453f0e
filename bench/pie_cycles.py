"""The ``cycles`` part of ``bench/pie_report.py``: each measure side by side against PIE's published speedups.

Pairs of ``realdata/pie_purdue/val.jsonl`` (``--per-problem`` per problem, distinct ``src_id``), both sides AC on
the problem's public tests, each program measured once per case under the counting tool with cache and branch
simulation (Ir and misses from the same run: every cycle model is computed from it), pinned to one exclusive
core per worker, one worker per core; native CPU time (median of 5) beside. Then the memory-bound example.
"""

from __future__ import annotations

import math
import os
import statistics
from concurrent.futures import ThreadPoolExecutor

from arbiter.checkers.spec import CheckerSpec
from arbiter.judge.encodings import load_pie_tests
from arbiter.judge.judge import judge
from arbiter.judge.task import CompileSpec, Task
from arbiter.languages.cpp.compile import compile_cpp
from arbiter.pipelines.pie.stats import reversals, spearman
from arbiter.rewards.pie.options import DEFAULT_LIMITS
from arbiter.sandbox.limits import MiB, Limits
from arbiter.sandbox.sandbox import Sandbox
from arbiter.timing.cycles import DEFAULT_MODEL, CycleModel
from arbiter.timing.instructions import find_valgrind, measure_instructions
from arbiter.timing.measure import Program, compare
from arbiter.timing.wallclock import core_lease

#: The measures compared (Ir alone is the instruction meter's figure, from the same runs).
MODELS = {
    "Ir (instructions)": CycleModel("ir", 1.0, 0.0, 0.0, 0.0),
    "Ir + 10 L1m + 100 LLm": CycleModel("ir-l1-ll", 1.0, 10.0, 100.0, 0.0),
    "Ir + 12 L1m + 200 LLm + 16 Bm": CycleModel("skylake-1ipc", 1.0, 12.0, 200.0, 16.0),
    "0.25 Ir + 12 L1m + 200 LLm + 16 Bm": DEFAULT_MODEL,
}


def _native_cpu(binary: bytes, cases, limits: Limits, repeats: int = 5) -> float:
    with core_lease(), Sandbox(files={"main": binary}, limits=limits) as sb:
        return sum(statistics.median(sb.run(["/prog/main"], stdin, limits).cpu_seconds for _ in range(repeats))
                   for _, stdin, _ in cases)


def _measure_pair(pair, public) -> dict | None:
    suite = load_pie_tests(public, pair.problem_id)
    verdicts = [judge(Task(language="cpp", source=code, suite=suite, limits=DEFAULT_LIMITS, checker=CheckerSpec("pie"),
                           run_all=True, scoring="fraction", compile=CompileSpec())) for code in (pair.src_code, pair.tgt_code)]
    if not all(v.accepted for v in verdicts):
        return None
    cases = [(c.name, c.stdin, None) for c in suite.cases]
    vg = find_valgrind().with_cycles(DEFAULT_MODEL)
    rec = {"problem_id": pair.problem_id, "src_id": pair.src_id, "pie": pair.speedup, "cases": len(cases)}
    for side, code in (("src", pair.src_code), ("tgt", pair.tgt_code)):
        binary = compile_cpp(code, CompileSpec()).binary
        run = measure_instructions(binary, cases, limits=DEFAULT_LIMITS, valgrind=vg)
        if not run.ok:
            return None
        rec[side] = [(c.instructions, c.events) for c in run.counts]
        rec[f"{side}_seconds"] = sum(c.wall_seconds for c in run.counts)
        rec[f"{side}_cpu"] = _native_cpu(binary, cases, DEFAULT_LIMITS)
    return rec


def _speedup(rec: dict, model: CycleModel) -> float:
    return (sum(model.cost(ir, ev) for ir, ev in rec["src"]) / sum(model.cost(ir, ev) for ir, ev in rec["tgt"]))


def _log_pearson(x, y) -> float | None:
    lx, ly = [math.log(v) for v in x], [math.log(v) for v in y]
    mx, my = statistics.fmean(lx), statistics.fmean(ly)
    sxy = sum((a - mx) * (b - my) for a, b in zip(lx, ly))
    sxx, syy = sum((a - mx) ** 2 for a in lx), sum((b - my) ** 2 for b in ly)
    return sxy / math.sqrt(sxx * syy) if sxx and syy else None


def _row(name: str, measured: list[float], pie: list[float], ids: list[str]) -> str:
    rho = spearman(measured, pie)
    lp = _log_pearson(measured, pie)
    ratio = statistics.median(m / p for m, p in zip(measured, pie))
    rev = reversals(list(zip(ids, measured, pie)))
    return f"{name:36} {rho:>8.3f} {lp:>13.3f} {ratio:>12.2f} {len(rev):>9}"


def validation(pairs_by_problem: dict, public) -> dict:
    """Measure the pairs (in parallel, one exclusive core per run) and print the side-by-side table."""
    pairs = [p for ps in sorted(pairs_by_problem.items()) for p in ps[1]]
    with ThreadPoolExecutor(max_workers=max(1, len(os.sched_getaffinity(0)))) as pool:
        recs = [r for r in pool.map(lambda p: _measure_pair(p, public), pairs) if r is not None]
    ids = [f"{r['problem_id']}:{r['src_id']}" for r in recs]
    pie = [r["pie"] for r in recs]
    print(f"\n== cycles: {len(recs)} of {len(pairs)} val.jsonl pairs ({len(pairs_by_problem)} problems), both AC on "
          f"PIE's public tests, vs PIE's published speedup (gem5-free re-measure; no shared row carries gem5 ticks)")
    head = f"{'measure':36} {'Spearman':>8} {'Pearson(log)':>13} {'median ratio':>12} {'reversals':>9}"
    print(head + "\n" + "-" * len(head))
    out = {"pairs": recs, "measures": {}}
    for name, model in MODELS.items():
        xs = [_speedup(r, model) for r in recs]
        out["measures"][name] = xs
        print(_row(name, xs, pie, ids))
    cpu = [r["src_cpu"] / r["tgt_cpu"] if r["tgt_cpu"] > 0 else float("nan") for r in recs]
    ok = [i for i, v in enumerate(cpu) if v > 0 and math.isfinite(v)]
    print(_row("CPU time, median of 5 (native)", [cpu[i] for i in ok], [pie[i] for i in ok], [ids[i] for i in ok])
          + f"   (n={len(ok)}; not repeatable)")
    per_case = statistics.median((r["src_seconds"] + r["tgt_seconds"]) / (2 * r["cases"]) for r in recs)
    print(f"cost: {per_case:.2f} s per case and program with simulation (all models from one run)")
    return out


DP = r"""
#include <cstdio>
#include <vector>
int main() { long long n; if (scanf("%lld", &n) != 1) return 1; const unsigned N = 1u << 26;
  std::vector<int> dp(N); unsigned long long x = 1;
  for (long long i = 0; i < n; i++) { x = x * 6364136223846793005ULL + 1442695040888963407ULL;
    unsigned j = (x >> 21) & (N - 1); dp[j] = dp[(j * 40503u + 1) & (N - 1)] + 1; }
  long long s = 0; for (unsigned k = 0; k < N; k += 4096) s += dp[k]; printf("%lld\n", s); }
"""
COMPUTE = r"""
#include <cstdio>
int main() { long long n; if (scanf("%lld", &n) != 1) return 1; unsigned long long x = 1, s = 0;
  for (long long i = 0; i < 40 * n; i++) { x = x * 2862933555777941757ULL + 3037000493ULL; s += x >> 60; }
  printf("%llu\n", s); }
"""


def memory_bound_example(n: int = 2_000_000) -> dict:
    """A DP over a 256 MiB array with random access (a) against a compute-only loop (b): cost(a) / cost(b) by
    each measure (< 1: the DP is cheaper)."""
    lim = Limits(cpu_seconds=20, memory_bytes=768 * MiB)
    a, b = (Program.of(compile_cpp(code, CompileSpec()), name) for code, name in ((DP, "dp"), (COMPUTE, "compute")))
    cases = [("c", f"{n}\n".encode(), None)]
    ins = compare(a, b, cases, "instructions", limits=lim)
    cyc = compare(a, b, cases, "cycles", limits=lim)
    wall = compare(a, b, cases, "wall", limits=lim, repeats=3)
    print(f"\n== memory-bound example: DP over a 256 MiB array, {n:,} random updates (a) vs a compute-only loop (b);"
          " cost(a)/cost(b), < 1 means the DP is cheaper")
    out = {"instructions": ins.speedup, f"cycles ({DEFAULT_MODEL.name})": cyc.speedup, "native CPU": wall.speedup,
           "native wall": wall.extra.get("wall_speedup")}
    for k, v in out.items():
        print(f"  {k:28} {v:8.2f}" if v is not None else f"  {k:28}        -")
    return out
