"""Real-data report for the PIE re-timing reward (issue 7, "Real data"): prints the figures side by side.

Part 1 — ``realdata/pie_purdue/val.jsonl`` (real PIE C++ src/tgt pairs with the dataset's own ``speedup``) on the
public tests of ``realdata/pie_public_tests/public_test_cases.tar.gz``:

- per problem, up to ``--per-problem`` pairs (default 3; the first pairs in file order with distinct ``src_id``);
- both sides judged natively on every public test of the problem (checker ``pie``, the card's comparator);
- the startup floor (instructions of ``int main() {}`` under the same toolchain) and, for each pair, the measured
  instruction speedup (tgt as the candidate, :func:`arbiter.pipelines.pie_retime.pie_reward`), the ceiling
  (mean per-case src instructions / floor, the card's ``ceiling_speedup`` analogue), the CPU-time speedup
  (interleaved repeats), and the dataset's ``speedup`` column; Spearman between measured and dataset speedups.

Part 2 — ``realdata/codescope_codeopt`` ``GNU C++`` rows as PIE-style pairs (``time_baseline_source_code`` = slow
src, ``memory_baseline_source_code`` = candidate) with their Codeforces tests (checker ``tokens``, ``-DONLINE_JUDGE``):

- both programs judged natively on every test (their per-case CPU seconds rank the cases);
- measured cases: the src's ``--large`` costliest cases plus its ``--small`` cheapest ones
  (:func:`arbiter.pipelines.pie_retime.costliest_cases`), because valgrind is 20-50x slower than a native run;
- instruction speedup, CPU-clock and wall-clock speedups (``compare(method="wall")``: 1 warm-up + ``--repeats``
  interleaved ABBA rounds) on those cases, the native all-tests wall ratio from the correctness pass (process
  start included, as SOURCES.md §1 sums it) and SOURCES.md §1's own ratio where listed;
- Spearman correlations (ties averaged) and the pairs whose speedups disagree in direction (reversals).

Part ``cycles`` (``bench/pie_cycles.py``) — every measure (instructions, the previous and the default cycle model)
side by side against PIE's published speedups on every val.jsonl pair (``--cycles-per-problem``), tune and
held-out problems apart: Spearman, Kendall, log-Pearson, median ratio, Spearman inside / outside the start-up
cluster, without and with the card's wall; then the memory-bound example. Counts are cached on disk
(``$ARBITER_CACHE_DIR/bench_pie_cycles``): a rerun measures only what is new.

Usage: ``.venv/bin/python bench/pie_report.py [--part 1|2|cycles|all] [--rows 84,91] [--json out.json]``.
Parts 1 and 2 take ~10-20 min on a busy 2-core machine (valgrind on the heavy Codeforces cases dominates); part
``cycles`` ~20 min the first time (about 390 programs, three meters), seconds from its cache.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from collections import defaultdict
from pathlib import Path

from arbiter.checkers.spec import CheckerSpec
from arbiter.datasets.pie.read import load_pie_pairs
from arbiter.judge.encodings import codescope_row_to_suite, load_pie_tests
from arbiter.judge.judge import judge
from arbiter.judge.task import CompileSpec, Task
from arbiter.pipelines.pie.stats import reversals, spearman
from arbiter.datasets.pie.cases import costliest_cases
from arbiter.datasets.pie.source import PieSource
from arbiter.rewards.pie.measure import SrcCountCache
from arbiter.rewards.pie.options import DEFAULT_LIMITS
from arbiter.rewards.pie.reward import pie_reward
from arbiter.timing.measure import startup_floor

SHARED = Path(os.environ.get("ARBITER_SHARED", Path(__file__).resolve().parents[2] / "shared"))
VAL = SHARED / "realdata" / "pie_purdue" / "val.jsonl"
PUBLIC = SHARED / "realdata" / "pie_public_tests" / "public_test_cases.tar.gz"
CODESCOPE = SHARED / "realdata" / "codescope_codeopt" / "code_optimization_data.jsonl"
#: SOURCES.md §1: C++ rows whose summed wall time over all tests differs >= 2x (slow s / fast s).
SOURCES_2X = {62: (22.7, 5.6), 64: (0.27, 0.13), 66: (6.5, 1.5), 69: (4.6, 0.40), 70: (0.33, 0.13), 73: (15.5, 0.83),
              74: (5.1, 0.86), 76: (7.7, 0.17), 77: (7.2, 1.1), 84: (1.78, 0.08), 88: (2.78, 0.21), 90: (11.3, 0.59),
              91: (0.74, 0.11)}


def f(x, spec=".2f"):
    return "-" if x is None else format(x, spec)


def sample_pairs(per_problem: int):
    """Up to ``per_problem`` pairs per problem, the first in file order with distinct ``src_id``; every pair
    when ``per_problem`` is 0."""
    by = defaultdict(list)
    for p in load_pie_pairs(VAL):
        seen = {q.src_id for q in by[p.problem_id]}
        if per_problem == 0 or (len(by[p.problem_id]) < per_problem and p.src_id not in seen):
            by[p.problem_id].append(p)
    return by


def part1(args, cache) -> dict:
    spec = CompileSpec()
    floor = startup_floor(spec)
    by = sample_pairs(args.per_problem)
    print(f"\n== Part 1: val.jsonl pairs on PIE public tests; startup floor = {floor:,} instructions "
          f"(int main() {{}}, g++ -std=gnu++17 -O2 -DONLINE_JUDGE, dynamic)")
    head = (f"{'problem':8} {'src':11} {'tgt':11} {'cases':>5} {'both AC':>7} {'src instr/case':>14} "
            f"{'tgt instr/case':>14} {'instr x':>8} {'ceiling':>8} {'cpu x':>6} {'dataset x':>9}")
    print(head)
    print("-" * len(head))
    out = []
    for problem, pairs in sorted(by.items()):
        suite = load_pie_tests(PUBLIC, problem)
        for p in pairs:
            verdicts = [judge(Task(language="cpp", source=code, suite=suite, limits=DEFAULT_LIMITS,
                                   checker=CheckerSpec("pie"), run_all=True, scoring="fraction", compile=spec))
                        for code in (p.src_code, p.tgt_code)]
            both = all(v.accepted for v in verdicts)
            r = pie_reward(p, p.tgt_code, PUBLIC, method="instructions", cache=cache)
            w = pie_reward(p, p.tgt_code, PUBLIC, method="wall", repeats=args.repeats, cache=cache) if both else None
            n = len(r.cases) or 1
            rec = {"problem_id": problem, "src_id": p.src_id, "tgt_id": p.tgt_id, "cases": len(suite),
                   "src_ac": verdicts[0].accepted, "tgt_ac": verdicts[1].accepted, "outcome": r.outcome,
                   "src_per_case": (r.src_total or 0) / n, "tgt_per_case": (r.candidate_total or 0) / n,
                   "instr_speedup": r.speedup, "ceiling": r.ceiling_speedup,
                   "cpu_speedup": w.speedup if w is not None else None, "dataset_speedup": p.speedup,
                   "src_dropped": r.src_dropped, "reason": r.reason}
            out.append(rec)
            print(f"{problem:8} {p.src_id:11} {p.tgt_id:11} {len(suite):>5} {str(both):>7} "
                  f"{rec['src_per_case']:>14,.0f} {rec['tgt_per_case']:>14,.0f} {f(r.speedup):>8} "
                  f"{f(r.ceiling_speedup):>8} {f(rec['cpu_speedup']):>6} {p.speedup:>9.2f}", flush=True)
    ok = [r for r in out if r["instr_speedup"] is not None]
    rho = spearman([r["instr_speedup"] for r in ok], [r["dataset_speedup"] for r in ok])
    rho_cpu = spearman([r["cpu_speedup"] for r in ok if r["cpu_speedup"]],
                       [r["dataset_speedup"] for r in ok if r["cpu_speedup"]])
    above = sum(r["instr_speedup"] > r["ceiling"] * 1.0001 for r in ok if r["ceiling"])
    print(f"pairs: {len(out)} over {len(by)} problems; both sides AC on all public tests: "
          f"{sum(r['src_ac'] and r['tgt_ac'] for r in out)}/{len(out)}; measured: {len(ok)}")
    print(f"instr speedup: median {f(statistics.median([r['instr_speedup'] for r in ok]))}; "
          f"dataset speedup: median {f(statistics.median([r['dataset_speedup'] for r in ok]))}; "
          f"Spearman(instr, dataset) = {f(rho, '.3f')}; Spearman(cpu, dataset) = {f(rho_cpu, '.3f')}; "
          f"pairs above their ceiling: {above}")
    return {"startup_floor": floor, "pairs": out, "spearman_instr_dataset": rho, "spearman_cpu_dataset": rho_cpu}


def part2(args, cache) -> dict:
    rows = [json.loads(line) for line in open(CODESCOPE, encoding="utf-8")]
    rows = [r for r in rows if r["lang"] == "GNU C++"]
    if args.rows:
        keep = {int(x) for x in args.rows.split(",")}
        rows = [r for r in rows if int(r["id"]) in keep]
    spec = CompileSpec()
    print(f"\n== Part 2: CodeScope GNU C++ rows ({len(rows)}); measured cases = src's {args.large} costliest + "
          f"{args.small} cheapest (native CPU); wall: 1 warm-up + {args.repeats} ABBA rounds")
    head = (f"{'id':>3} {'tests':>5} {'AC':>5} {'meas':>4} {'instr x':>8} {'cpu x':>7} {'wall x':>7} "
            f"{'native all-tests wall x':>23} {'SOURCES x':>9}  instr/cpu")
    print(head)
    print("-" * len(head))
    out = []
    for row in rows:
        rid = int(row["id"])
        suite = codescope_row_to_suite(row)
        t0 = time.monotonic()
        vs = [judge(Task(language="cpp", source=row[k], suite=suite, limits=DEFAULT_LIMITS,
                         checker=CheckerSpec("tokens"), run_all=True, scoring="fraction", compile=spec))
              for k in ("time_baseline_source_code", "memory_baseline_source_code")]
        both = all(v.accepted for v in vs)
        chosen = costliest_cases(vs[0].cases, args.large, args.small)
        src = PieSource(problem_id=f"codescope-{rid}", src_id=f"{rid}:time_baseline",
                        src_code=row["time_baseline_source_code"], tgt_id=f"{rid}:memory_baseline")
        cand = row["memory_baseline_source_code"]
        ri = pie_reward(src, cand, suite, checker="tokens", only_cases=chosen, method="instructions", cache=cache)
        rw = pie_reward(src, cand, suite, checker="tokens", only_cases=chosen, method="wall", repeats=args.repeats,
                        cache=cache)
        wall_x = (rw.comparison or {}).get("extra", {}).get("wall_speedup")
        native_src = sum(c.wall_seconds for c in vs[0].cases)
        native_tgt = sum(c.wall_seconds for c in vs[1].cases)
        src_x = SOURCES_2X.get(rid)
        rec = {"id": rid, "tests": len(suite), "src_ac": vs[0].accepted, "tgt_ac": vs[1].accepted,
               "measured_cases": chosen, "instr_speedup": ri.speedup, "cpu_speedup": rw.speedup,
               "wall_speedup": wall_x, "native_wall_src_s": native_src, "native_wall_tgt_s": native_tgt,
               "native_wall_ratio": native_src / native_tgt if native_tgt else None,
               "sources_ratio": src_x[0] / src_x[1] if src_x else None,
               "instr_per_case": [(c["case"], c["src"], c["candidate"]) for c in ri.per_case],
               "outcomes": (ri.outcome, rw.outcome), "seconds": time.monotonic() - t0}
        out.append(rec)
        ratio = (ri.speedup / rw.speedup) if ri.speedup and rw.speedup else None
        print(f"{rid:>3} {len(suite):>5} {('yes' if both else 'NO'):>5} {len(chosen):>4} {f(ri.speedup):>8} "
              f"{f(rw.speedup):>7} {f(wall_x):>7} {f(rec['native_wall_ratio']):>23} {f(rec['sources_ratio']):>9}  "
              f"{f(ratio)}   ({rec['seconds']:.0f}s)", flush=True)
    ok = [r for r in out if r["instr_speedup"] and r["cpu_speedup"]]
    rho_cpu = spearman([r["instr_speedup"] for r in ok], [r["cpu_speedup"] for r in ok])
    okw = [r for r in ok if r["wall_speedup"]]
    rho_wall = spearman([r["instr_speedup"] for r in okw], [r["wall_speedup"] for r in okw])
    rho_native = spearman([r["instr_speedup"] for r in ok], [r["native_wall_ratio"] for r in ok])
    rev_cpu = reversals([(str(r["id"]), r["instr_speedup"], r["cpu_speedup"]) for r in ok])
    rev_wall = reversals([(str(r["id"]), r["instr_speedup"], r["wall_speedup"]) for r in okw])
    rev_cpu_5 = reversals([(str(r["id"]), r["instr_speedup"], r["cpu_speedup"]) for r in ok], margin=0.05)
    listed = [r for r in ok if r["sources_ratio"]]
    print(f"rows: {len(out)}; both AC on every test: {sum(r['src_ac'] and r['tgt_ac'] for r in out)}/{len(out)}")
    print(f"Spearman(instr, cpu) = {f(rho_cpu, '.3f')} (n={len(ok)}); Spearman(instr, wall) = {f(rho_wall, '.3f')}; "
          f"Spearman(instr, native all-tests wall) = {f(rho_native, '.3f')}")
    print(f"reversals instr vs cpu: {[(n, round(a, 3), round(b, 3)) for n, a, b in rev_cpu]}; "
          f"beyond a 5% margin: {[n for n, _, _ in rev_cpu_5]}; instr vs wall: "
          f"{[(n, round(a, 3), round(b, 3)) for n, a, b in rev_wall]}")
    print("SOURCES.md §1 >=2x rows present: " + ", ".join(
        f"{r['id']} (SOURCES {r['sources_ratio']:.1f}x, instr {r['instr_speedup']:.1f}x, cpu {r['cpu_speedup']:.1f}x)"
        for r in listed))
    return {"rows": out, "spearman_instr_cpu": rho_cpu, "spearman_instr_wall": rho_wall,
            "spearman_instr_native_wall": rho_native, "reversals_cpu": rev_cpu, "reversals_wall": rev_wall,
            "reversals_cpu_margin5": rev_cpu_5}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--part", default="all", choices=["1", "2", "cycles", "all"])
    ap.add_argument("--per-problem", type=int, default=3, help="part 1: pairs per problem")
    ap.add_argument("--cycles-per-problem", type=int, default=0, help="part cycles: pairs per problem (0: all)")
    ap.add_argument("--rows", default="", help="CodeScope row ids, comma-separated (default: all GNU C++ rows)")
    ap.add_argument("--large", type=int, default=3)
    ap.add_argument("--small", type=int, default=2)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--json", default="", help="write the figures to this JSON file")
    args = ap.parse_args()
    if not SHARED.is_dir():
        sys.exit(f"{SHARED} not found (set ARBITER_SHARED)")
    cache = SrcCountCache()  # in memory: every figure is measured by this run
    t0 = time.monotonic()
    report = {}
    if args.part in ("1", "all"):
        report["val"] = part1(args, cache)
    if args.part in ("2", "all"):
        report["codescope"] = part2(args, cache)
    if args.part in ("cycles", "all"):
        from pie_cycles import fit_report, memory_bound_example, validation

        fit_report()
        report["cycles"] = validation(sample_pairs(args.cycles_per_problem), PUBLIC)
        report["memory_bound"] = memory_bound_example()
    print(f"\ntotal {time.monotonic() - t0:.0f}s")
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=1, default=str) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
