"""Cost of measuring a PIE-style pair: instruction counts (valgrind) vs wall clock vs a plain native run.

Data: ``bench/data/pie_sum_of_divisors`` (a slow/fast C++ pair and 50 tiny PIE-layout tests, shipped here).
For 1, 5, 20 and 50 cases it runs, end to end as a pipeline would (fresh sandboxes included):

- ``native``  — each program once per case in its own sandbox (what the judge's correctness pass costs);
- ``instr``   — :func:`arbiter.timing.measure.compare` with ``method="instructions"`` (one valgrind run per
  case and program, valgrind start-up included);
- ``cycles``  — last: the cost ratio cycles / instructions per case (cache and branch simulation on), then what
  one reward-shaped measurement in cycles (the default measure) costs: the candidate's cases on one core against
  spread over every core, and the source measured once, then taken from the count cache;
- ``wall``    — ``compare(method="wall")`` with PIE's sample schedule shrunk to 1 warm-up + 5 repeats, ABBA
  (headline on the CPU clock, wall clock alongside).

Each configuration is repeated ``--reps`` times; the table shows medians: total seconds, and seconds per measured
case (one case of one program), side by side. Then the figures themselves at the largest size: instruction
speedup, wall and CPU speedups, the startup floor and the card's ceiling.

Usage: ``.venv/bin/python bench/pie.py [--sizes 1,5,20,50] [--reps 3]``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

from arbiter.languages.cpp.compile import CompileSpec, compile_cpp
from arbiter.sandbox.limits import Limits
from arbiter.sandbox.sandbox import Sandbox
from arbiter.timing.count_cache import CountCache
from arbiter.timing.measure import MeasuredProgram, compare, startup_floor
from arbiter.timing.cycles import DEFAULT_MODEL
from arbiter.timing.instructions import find_valgrind, measure_instructions
from arbiter.timing.wallclock import core_lease

DATA = Path(__file__).resolve().parent / "data" / "pie_sum_of_divisors"
#: PIE's gem5 harness compiles with ``g++ --std=c++17 -O3`` (reference/pie.md §1).
SPEC = CompileSpec(command="g++ -std=gnu++17 -O3 main.cpp -o main")
STATIC = CompileSpec(command="g++ -std=gnu++17 -O3 -static main.cpp -o main")


def build(path: Path, name: str) -> MeasuredProgram:
    result = compile_cpp(path.read_text(), SPEC)
    if not result.ok:
        sys.exit(f"compile of {path} failed: {result.message}")
    return MeasuredProgram.of(result, name)


def load_cases() -> list[tuple[str, bytes, bytes]]:
    cases = []
    i = 0
    while (DATA / "tests" / f"input.{i}.txt").exists():
        cases.append((str(i), (DATA / "tests" / f"input.{i}.txt").read_bytes(),
                      (DATA / "tests" / f"output.{i}.txt").read_bytes()))
        i += 1
    return cases


def native(a: MeasuredProgram, b: MeasuredProgram, cases, limits: Limits) -> None:
    with core_lease():
        for prog in (a, b):
            with Sandbox(files={"main": prog.binary}, limits=limits) as sb:
                for _, stdin, expected in cases:
                    ex = sb.run(["/prog/main"], stdin, limits)
                    assert ex.ok and ex.stdout.split() == expected.split(), ex


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="1,5,20,50")
    ap.add_argument("--reps", type=int, default=3)
    args = ap.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    vg = find_valgrind()
    slow, fast = build(DATA / "slow.cpp", "slow"), build(DATA / "fast.cpp", "fast")
    tc = slow.toolchain
    all_cases = load_cases()
    limits = Limits(cpu_seconds=5)
    print(f"valgrind {vg.version} ({Path(vg.tool).name}); {tc.compiler_version}; "
          f"flags {' '.join(tc.flags)}; {tc.link_mode}")
    print(f"{len(all_cases)} cases available; {args.reps} reps per cell; medians. "
          "per-case = seconds per measured case of one program, sandbox start-up included.\n")
    head = f"{'cases':>5} | {'native total':>12} {'per-case':>9} | {'instr total':>11} {'per-case':>9} | " \
           f"{'wall total':>10} {'per-case':>9} | {'instr/native':>12} {'wall/native':>11}"
    print(head)
    print("-" * len(head))
    last = {}
    for n in sizes:
        cases = all_cases[:n]
        cells = {"native": [], "instr": [], "wall": []}
        for _ in range(args.reps):
            t = time.perf_counter()
            native(slow, fast, cases, limits)
            cells["native"].append(time.perf_counter() - t)
            t = time.perf_counter()
            ci = compare(slow, fast, cases, "instructions", limits=limits, valgrind=vg)
            cells["instr"].append(time.perf_counter() - t)
            t = time.perf_counter()
            cw = compare(slow, fast, cases, "wall", limits=limits, repeats=5, warmup=1)
            cells["wall"].append(time.perf_counter() - t)
            assert ci.ok and cw.ok, (ci.failures, cw.failures)
            last = {"instr": ci, "wall": cw}
        med = {k: statistics.median(v) for k, v in cells.items()}
        runs = 2 * n
        print(f"{n:>5} | {med['native']:>11.3f}s {1e3 * med['native'] / runs:>7.1f}ms | "
              f"{med['instr']:>10.3f}s {1e3 * med['instr'] / runs:>7.1f}ms | "
              f"{med['wall']:>9.3f}s {1e3 * med['wall'] / runs:>7.1f}ms | "
              f"{med['instr'] / med['native']:>11.1f}x {med['wall'] / med['native']:>10.1f}x")

    # where the valgrind time goes: one run per case, as seen by the sandbox
    per_run = measure_instructions(slow.binary, all_cases[:max(sizes)], limits=limits, valgrind=vg)
    vg_wall = statistics.median(c.wall_seconds for c in per_run.counts)
    vg_cpu = statistics.median(c.cpu_seconds for c in per_run.counts)
    floor = startup_floor(SPEC)
    floor_io = startup_floor(SPEC, iostream=True)
    floor_static = startup_floor(STATIC)
    ci, cw = last["instr"], last["wall"]
    print(f"\nper valgrind run (slow program, median over {len(per_run.counts)} cases): "
          f"{vg_wall * 1e3:.0f} ms wall, {vg_cpu * 1e3:.0f} ms CPU")
    print(f"startup floor: {floor:,} instructions (empty main), {floor_io:,} (only <iostream>), "
          f"{floor_static:,} (empty main, -static)")
    print(f"\nfigures at {len(ci.cases)} cases (a = slow, b = fast; speedup = sum(a) / sum(b)):")
    print(f"  instructions: {ci.a_total:,} / {ci.b_total:,} = speedup {ci.speedup:.2f} "
          f"(largest {len(ci.largest_cases)} cases: {ci.largest_speedup:.2f}); "
          f"ceiling (mean slow case / floor) {ci.ceiling_speedup(floor):.2f}")
    print(f"  timed, {cw.clock} clock: {cw.a_total * 1e3:.1f} ms / {cw.b_total * 1e3:.1f} ms = speedup "
          f"{cw.speedup:.2f} (largest: {cw.largest_speedup:.2f}); per-round speedups "
          f"{min(cw.extra['round_speedups']):.2f}..{max(cw.extra['round_speedups']):.2f}; wall-clock: "
          f"{cw.extra['wall_a_total'] * 1e3:.1f} ms / {cw.extra['wall_b_total'] * 1e3:.1f} ms = speedup "
          f"{cw.extra['wall_speedup']:.2f}")
    for clock in ("wall", "cpu"):
        cvs = [c.a_spread[clock]["cv"] for c in cw.cases] + [c.b_spread[clock]["cv"] for c in cw.cases]
        print(f"  {clock}-clock per-case coefficient of variation (5 kept repeats): "
              f"median {statistics.median(cvs) * 100:.1f} %, max {max(cvs) * 100:.1f} %")
    print("  instruction counts: coefficient of variation 0 (deterministic; tests/test_timing.py)")
    cycles_cost(slow, fast, all_cases[:max(sizes)], limits, vg)


def cycles_cost(slow: MeasuredProgram, fast: MeasuredProgram, cases, limits: Limits, vg) -> None:
    """The cost ratio cycles / instructions per case (same programs, same cases, one valgrind run each)."""
    print(f"\ncost of the cycles measure (cache + branch simulation) per case, {len(cases)} cases per program:")
    print(f"{'program':>8} {'instr ms/case':>13} {'cycles ms/case':>14} {'ratio':>6} {'same Ir':>7}")
    for prog in (slow, fast):
        plain = measure_instructions(prog.binary, cases, limits=limits, valgrind=vg)
        sim = measure_instructions(prog.binary, cases, limits=limits, valgrind=vg.with_cycles(DEFAULT_MODEL))
        ti = statistics.median(c.wall_seconds for c in plain.counts)
        tc = statistics.median(c.wall_seconds for c in sim.counts)
        same = all(a.instructions == b.instructions for a, b in zip(plain.counts, sim.counts))
        print(f"{prog.name:>8} {ti * 1e3:>13.0f} {tc * 1e3:>14.0f} {tc / ti:>6.2f} {str(same):>7}")
    ci = compare(slow, fast, cases, "instructions", limits=limits, valgrind=vg)
    cc = compare(slow, fast, cases, "cycles", limits=limits, valgrind=vg)
    print(f"speedup at {len(cases)} cases: instructions {ci.speedup:.2f}, cycles ({DEFAULT_MODEL.name}) "
          f"{cc.speedup:.2f}")
    reward_cost(slow, fast, cases[:10], limits, vg)


def reward_cost(slow: MeasuredProgram, fast: MeasuredProgram, cases, limits: Limits, vg) -> None:
    """One reward in cycles: the candidate's cases on one core vs spread over the cores; the source measured once
    and then reused from the count cache (what a batch of candidates for one source pays)."""
    meter = vg.with_cycles(DEFAULT_MODEL)
    cores = len(os.sched_getaffinity(0))
    t = {}
    for workers in (1, cores):
        t0 = time.perf_counter()
        run = measure_instructions(fast.binary, cases, limits=limits, valgrind=meter, workers=workers)
        t[workers] = time.perf_counter() - t0
        assert run.ok
    cache = CountCache()
    t0 = time.perf_counter()
    first = compare(slow, fast, cases, "cycles", limits=limits, valgrind=vg, baseline_cache=cache)
    t_first = time.perf_counter() - t0
    t0 = time.perf_counter()
    again = compare(slow, fast, cases, "cycles", limits=limits, valgrind=vg, baseline_cache=cache)
    t_again = time.perf_counter() - t0
    assert first.speedup == again.speedup and again.extra["baseline_cache_hits"] == len(cases)
    print(f"\none reward in cycles, {len(cases)} cases: candidate on 1 core {t[1]:.2f}s, on {cores} cores "
          f"{t[cores]:.2f}s ({t[1] / t[cores]:.2f}x); source + candidate {t_first:.2f}s, then with the source's "
          f"counts cached {t_again:.2f}s ({t_first / t_again:.2f}x)")


if __name__ == "__main__":
    main()
