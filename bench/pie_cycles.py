"""The ``cycles`` part of ``bench/pie_report.py``: every measure side by side against PIE's published speedups.

Pairs: ``realdata/pie_purdue/val.jsonl`` (all of them, or ``--per-problem`` per problem), each pair's own target
as the candidate, on PIE's public tests of the problem; both programs AC there (checker ``pie``). Every distinct
program is measured once per meter on every public case (programs in parallel, one exclusive core each; raw
counts and events cached on disk, so a rerun only measures what is new), and each pair's speedup is
``sum(src) / sum(tgt)`` over the cases, as the card computes it.

Splits, fixed before any weight was chosen: the **held-out** problems (:data:`HELD_OUT`) were never looked at
while the cycle model's weights were picked; the **tune** problems are the rest. Figures per measure and split:
Spearman, Kendall, Pearson of the logs, median ratio measure/PIE, and Spearman inside / outside the start-up
cluster (PIE 4.5-6.0x where instructions say 10x or more: iostream source vs cstdio target on tiny inputs).
A second table drops, as the card does, the cases a program of the pair takes over the card's 2-minute wall
(1.4e10 gem5 ticks, here in model cycles at 3.5 GHz): PIE could not time such cases and left them out.
Then the memory-bound example.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import statistics
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Callable

from arbiter.checkers.spec import CheckerSpec
from arbiter.judge.encodings import load_pie_tests
from arbiter.judge.judge import judge
from arbiter.judge.task import CompileSpec, Task
from arbiter.languages.cpp.compile import compile_cpp
from arbiter.pipelines.pie.stats import spearman
from arbiter.rewards.pie.options import DEFAULT_LIMITS
from arbiter.sandbox.limits import MiB, Limits
from arbiter.timing.cycles import DEFAULT_MODEL, NOMINAL_HZ, SKYLAKE_4IPC, CycleModel
from arbiter.timing.instructions import find_valgrind, measure_instructions
from arbiter.timing.measure import MeasuredProgram, compare

#: Problems held out from every choice of weights (fixed before the first fit; 491 of the 1,174 pairs).
HELD_OUT = frozenset({"p02687", "p02608", "p00653", "p03500"})
#: The start-up cluster: PIE puts these pairs at 4.5-6.0x, instruction counts at 10x or more.
CLUSTER_PIE = (4.5, 6.0)
CLUSTER_INSTR = 10.0
#: The card's wall ("cases above 1.4e10 ticks dropped from usable"), in cycles of a 3.5 GHz clock.
WALL_CYCLES = 1.4e10 * NOMINAL_HZ / 1e12
#: The meters: each measures every program once; the measures are figures computed from one meter's runs.
METERS = {"instructions": None, "cycles-skylake-4ipc": SKYLAKE_4IPC, "cycles": DEFAULT_MODEL}
MEASURES: dict[str, tuple[str, Callable[[dict[str, Any]], float]]] = {
    "instructions": ("instructions", lambda c: c["Ir"]),
    f"cycles {SKYLAKE_4IPC.name} (previous default)": ("cycles-skylake-4ipc", lambda c: SKYLAKE_4IPC.cost(c["Ir"], c)),
    f"cycles {DEFAULT_MODEL.name} (default)": ("cycles", lambda c: DEFAULT_MODEL.cost(c["Ir"], c)),
}
CACHE_DIR = Path(os.environ.get("ARBITER_CACHE_DIR", Path.home() / ".cache" / "arbiter")) / "bench_pie_cycles"


def _meter(name: str):
    vg = find_valgrind()
    model = METERS[name]
    return vg if model is None else vg.with_cycles(model)


def _programs(pairs) -> dict[tuple[str, str], str]:
    progs: dict[tuple[str, str], str] = {}
    for p in pairs:
        progs.setdefault((p.problem_id, p.src_id), p.src_code)
        progs.setdefault((p.problem_id, p.tgt_id), p.tgt_code)
    return progs


class ProgramCounts:
    """Each program's per-case counts under each meter, measured once and kept in a JSON Lines file per meter
    fingerprint without the cycle model's weights (the events do not depend on them: two cycle models share one
    set of runs), keyed by problem and submission."""

    def __init__(self, public: Any, directory: Path = CACHE_DIR):
        self.public, self.directory = public, directory
        self.suites: dict[str, Any] = {}
        self.seconds: dict[str, list[float]] = {}

    def _file(self, meter: str) -> Path:
        # the events do not depend on the model's weights: one file per tool, options, environment and CPU
        fp = {k: v for k, v in _meter(meter).fingerprint().items() if k != "cycle_model"}
        digest = hashlib.sha256(json.dumps(fp, sort_keys=True).encode()).hexdigest()[:12]
        return self.directory / f"{fp['meter']}-{digest}.jsonl"

    def load(self, meter: str) -> dict[tuple[str, str], dict[str, Any]]:
        path = self._file(meter)
        if not path.exists():
            return {}
        recs = (json.loads(line) for line in path.read_text().splitlines() if line.strip())
        return {(r["problem_id"], r["id"]): r for r in recs}

    def measure(self, meter: str, progs: dict[tuple[str, str], str], workers: int) -> dict[tuple[str, str], Any]:
        have = self.load(meter)
        todo = [k for k in sorted(progs) if k not in have]
        path = self._file(meter)
        path.parent.mkdir(parents=True, exist_ok=True)
        vg = _meter(meter)
        with ThreadPoolExecutor(max_workers=workers) as pool, path.open("a") as out:
            for rec in pool.map(lambda k: self._one(k, progs[k], vg, meter), todo):
                have[(rec["problem_id"], rec["id"])] = rec
                out.write(json.dumps(rec) + "\n")
                out.flush()
        return have

    def _suite(self, problem: str):
        if problem not in self.suites:
            self.suites[problem] = load_pie_tests(self.public, problem)
        return self.suites[problem]

    def _one(self, key: tuple[str, str], code: str, vg: Any, meter: str) -> dict[str, Any]:
        suite = self._suite(key[0])
        rec: dict[str, Any] = {"problem_id": key[0], "id": key[1], "ok": False, "cases": {}}
        v = judge(Task(language="cpp", source=code, suite=suite, limits=DEFAULT_LIMITS, checker=CheckerSpec("pie"),
                       run_all=True, scoring="fraction", compile=CompileSpec()))
        if not v.accepted:
            rec["why"] = f"not AC natively: {v.outcome}"
            return rec
        t0 = time.monotonic()
        run = measure_instructions(compile_cpp(code, CompileSpec()).binary,
                                   [(c.name, c.stdin, None) for c in suite.cases], limits=DEFAULT_LIMITS,
                                   valgrind=vg, workers=1)
        per_case = (time.monotonic() - t0) / max(1, len(suite.cases))
        self.seconds.setdefault(vg.fingerprint()["meter"], []).append(per_case)
        rec["ok"] = run.ok
        rec["cases"] = {c.case: {"Ir": c.instructions, **(c.events or {})} for c in run.counts if c.ok}
        if not run.ok:
            rec["why"] = "; ".join(f"{c.case}: {c.status.value}" for c in run.counts if not c.ok)
        return rec


def _log_pearson(x: list[float], y: list[float]) -> float | None:
    lx, ly = [math.log(v) for v in x], [math.log(v) for v in y]
    mx, my = statistics.fmean(lx), statistics.fmean(ly)
    sxy = sum((a - mx) * (b - my) for a, b in zip(lx, ly))
    sxx, syy = sum((a - mx) ** 2 for a in lx), sum((b - my) ** 2 for b in ly)
    return sxy / math.sqrt(sxx * syy) if sxx and syy else None


def _sign(v: float) -> int:
    return (v > 0) - (v < 0)


def _kendall(x: list[float], y: list[float]) -> float | None:
    """Kendall's tau-a: (concordant - discordant) / all pairs."""
    n = len(x)
    s = sum(_sign(x[i] - x[j]) * _sign(y[i] - y[j]) for i in range(n) for j in range(i + 1, n))
    return s / (n * (n - 1) / 2) if n > 1 else None


def figures(measured: list[float], pie: list[float], cluster: list[bool]) -> dict[str, Any]:
    """Rank and scale agreement of measured speedups with PIE's, overall and inside / outside the cluster."""
    def sp(want: bool) -> float | None:
        idx = [i for i, c in enumerate(cluster) if c == want]
        return spearman([measured[i] for i in idx], [pie[i] for i in idx]) if len(idx) > 2 else None

    return {"n": len(pie), "spearman": spearman(measured, pie), "kendall": _kendall(measured, pie),
            "log_pearson": _log_pearson(measured, pie),
            "median_ratio": statistics.median(m / p for m, p in zip(measured, pie)),
            "n_cluster": sum(cluster), "spearman_cluster": sp(True), "spearman_outside": sp(False)}


def _pair_speedup(src: dict, tgt: dict, cost: Callable[[dict], float], keep: list[str]) -> float:
    return sum(cost(src[c]) for c in keep) / sum(cost(tgt[c]) for c in keep)


def _table(title: str, rows: list[tuple[str, str, dict[str, Any]]]) -> None:
    f = lambda x, spec=".3f": "-" if x is None else format(x, spec)  # noqa: E731
    head = (f"{'measure':44} {'split':9} {'pairs':>5} {'Spearman':>8} {'Kendall':>7} {'logPearson':>10} "
            f"{'med ratio':>9} {'cluster':>7} {'Sp in':>6} {'Sp out':>6}")
    print(f"\n{title}\n{head}\n{'-' * len(head)}")
    for name, split, d in rows:
        print(f"{name:44} {split:9} {d['n']:>5} {f(d['spearman']):>8} {f(d['kendall']):>7} {f(d['log_pearson']):>10} "
              f"{f(d['median_ratio']):>9} {d['n_cluster']:>7} {f(d['spearman_cluster']):>6} "
              f"{f(d['spearman_outside']):>6}")


def validation(pairs_by_problem: dict, public: Any, workers: int | None = None) -> dict[str, Any]:
    """Measure every program once per meter, then print each measure's figures on the tune and held-out splits,
    without and with the card's wall."""
    pairs = [p for _, ps in sorted(pairs_by_problem.items()) for p in ps]
    progs = _programs(pairs)
    workers = workers or max(1, len(os.sched_getaffinity(0)))
    counts = ProgramCounts(public)
    t0 = time.monotonic()
    runs = {m: counts.measure(m, progs, workers) for m in METERS}
    ok = [p for p in pairs if all(runs[m].get((p.problem_id, s), {}).get("ok")
                                  for m in METERS for s in (p.src_id, p.tgt_id))]
    print(f"\n== cycles: {len(ok)} of {len(pairs)} val.jsonl pairs ({len(pairs_by_problem)} problems, "
          f"{len(progs)} programs) measured by every meter, both programs AC on PIE's public tests; "
          f"{time.monotonic() - t0:.0f}s")
    out: dict[str, Any] = {"pairs": len(ok), "held_out": sorted(HELD_OUT), "tables": {}}
    default_cost = MEASURES[f"cycles {DEFAULT_MODEL.name} (default)"][1]
    for wall in (False, True):
        rows = []
        for name, (meter, cost) in MEASURES.items():
            for split, members in (("tune", [p for p in ok if p.problem_id not in HELD_OUT]),
                                   ("held-out", [p for p in ok if p.problem_id in HELD_OUT])):
                rows.append((name, split, _split_figures(members, runs, meter, cost, wall, default_cost)))
        _table("all public cases" if not wall else
               f"the card's wall: cases over {WALL_CYCLES / 1e6:.0f}M default-model cycles (1.4e10 ticks at "
               f"{NOMINAL_HZ / 1e9:.1f} GHz) for either program dropped from the pair", rows)
        out["tables"]["wall" if wall else "all"] = [{"measure": n, "split": s, **d} for n, s, d in rows]
    for meter, secs in counts.seconds.items():
        print(f"cost ({meter}): {statistics.median(secs):.2f} s per case and program (median; "
              f"{len(secs)} programs measured now)")
    return out


def _split_figures(members, runs, meter, cost, wall: bool, default_cost) -> dict[str, Any]:
    measured, pie, cluster = [], [], []
    for p in members:
        key_s, key_t = (p.problem_id, p.src_id), (p.problem_id, p.tgt_id)
        src, tgt = runs[meter][key_s]["cases"], runs[meter][key_t]["cases"]
        ref_s, ref_t = runs["cycles"][key_s]["cases"], runs["cycles"][key_t]["cases"]
        keep = [c for c in src if not wall or max(default_cost(ref_s[c]), default_cost(ref_t[c])) <= WALL_CYCLES]
        keep = keep or list(src)
        isrc, itgt = runs["instructions"][key_s]["cases"], runs["instructions"][key_t]["cases"]
        instr = _pair_speedup(isrc, itgt, lambda c: c["Ir"], list(isrc))
        measured.append(_pair_speedup(src, tgt, cost, keep))
        pie.append(p.speedup)
        cluster.append(CLUSTER_PIE[0] <= p.speedup <= CLUSTER_PIE[1] and instr >= CLUSTER_INSTR)
    return figures(measured, pie, cluster) if members else {"n": 0}


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
    a, b = (MeasuredProgram.of(compile_cpp(code, CompileSpec()), name) for code, name in ((DP, "dp"), (COMPUTE, "compute")))
    cases = [("c", f"{n}\n".encode(), None)]
    out = {"instructions": compare(a, b, cases, "instructions", limits=lim).speedup}
    for model in (SKYLAKE_4IPC, DEFAULT_MODEL):
        out[f"cycles ({model.name})"] = compare(a, b, cases, "cycles", limits=lim, cycle_model=model).speedup
    wall = compare(a, b, cases, "wall", limits=lim, repeats=3)
    out.update({"native CPU": wall.speedup, "native wall": wall.extra.get("wall_speedup")})
    print(f"\n== memory-bound example: DP over a 256 MiB array, {n:,} random updates (a) vs a compute-only loop (b);"
          " cost(a)/cost(b), < 1 means the DP is cheaper")
    for k, v in out.items():
        print(f"  {k:32} {v:8.2f}" if v is not None else f"  {k:32}        -")
    return out


def fit_report(model: CycleModel = DEFAULT_MODEL) -> None:
    """The default model's weights, printed with the table (what the figures above were computed with)."""
    print(f"default model {model.name}: {model.ir} Ir + {model.l1_miss} L1m + {model.ll_miss} LLm + "
          f"{model.mispredict} Bm + {model.trap} (Sys + Pg)")
