"""The meter's integrity defences: what they cost, how far honest pairs stay from the native margin, what the
cheats of ``tests/cheats/meter`` get. Every figure of a table is measured side by side in one run.

Part ``cost`` (``docs/measurement.md``, "The measured program is the program that runs"):

- valgrind's ``--smc-check=all`` against its default (``all-non-file``): per-run CPU seconds of the counting tool
  on the oracle's sum-even source and answer (n = 1,500 and 16,000) and on the PIE sum-of-divisors pair's tiny
  tests, both measures, interleaved, ``--reps`` times (medians); the counts must be equal;
- the native cross-check and 3 spot checks (the oracle's default), each timed on its own, next to the counted
  comparison they check (source counts cached), for a fast answer and for one as slow as the seed.

Part ``margin``: CodeScope GNU C++ rows (``realdata/codescope_codeopt``: two accepted programs per Codeforces
problem, real tests) as honest pairs, both ways round (each program as the candidate of the other): the counted
speedup (instructions, cycles) over the native CPU-time speedup on the source's ``--cases`` costliest tests, the
candidate's native time from its judge runs as in the product; quiet, then with ``--load`` CPU hogs per core.
The largest ratio is what :data:`arbiter.timing.crosscheck.NATIVE_MARGIN` must stay above.

Part ``cheats``: every program of ``tests/cheats/meter`` through the PIE reward against the sum-even seed, on
the oracle's hidden tests plus one n = 16,000 test, per measure: outcome, reward (raw), speedup. Run it on an
older checkout (``PYTHONPATH=<old>/src``) for the figures before the defences.

Usage: ``.venv/bin/python bench/meter_integrity.py [--part cost|margin|cheats|all] [--reps 3] [--cases 2]
[--load 1] [--rows 62,84]`` (``ARBITER_SHARED``: the shared folder, default ../shared; part margin only).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import random
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from arbiter.judge.judge import judge
from arbiter.judge.task import CompileSpec, Task
from arbiter.judge.testsuite import StdioCase, TestSuite
from arbiter.languages.cpp.compile import compile_cpp
from arbiter.rewards.pie.reward import pie_reward
from arbiter.datasets.pie.source import PieSource
from arbiter.sandbox.limits import Limits
from arbiter.sandbox.sandbox import Sandbox
from arbiter.timing.cycles import DEFAULT_MODEL
from arbiter.timing.instructions import count_instructions, find_valgrind, measure_instructions, valgrind_limits
from arbiter.timing.count_cache import CountCache
from arbiter.timing.measure import MeasuredProgram, compare
from arbiter.timing.wallclock import core_lease

REPO = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("ARBITER_SHARED", REPO.parent / "shared"))
CODESCOPE = SHARED / "realdata" / "codescope_codeopt" / "code_optimization_data.jsonl"
SEEDS = REPO / "data" / "oracle" / "seeds.jsonl"
HIDDEN = REPO / "data" / "oracle" / "hidden_tests.json"
RETURNS = REPO / "data" / "oracle" / "returns.jsonl"
CHEATS = REPO / "tests" / "cheats" / "meter"
PIE_PAIR = REPO / "bench" / "data" / "pie_sum_of_divisors"
TASK = "dummy_pie_cpp_0001_sum_even"
LIMITS = Limits(cpu_seconds=10.0)


def f(x, spec=".2f"):
    return "-" if x is None else format(x, spec)


def build(code: str, spec: CompileSpec = CompileSpec()) -> MeasuredProgram:
    res = compile_cpp(code, spec)
    if not res.ok:
        sys.exit(f"compile failed: {res.message[:500]}")
    return MeasuredProgram.of(res)


def sum_even_input(n: int, seed: int) -> bytes:
    r = random.Random(seed)
    return (f"{n}\n" + " ".join(str(r.randint(-10**12, 10**12)) for _ in range(n)) + "\n").encode()


def seed_source() -> str:
    return next(json.loads(line) for line in open(SEEDS) if json.loads(line)["task_id"] == TASK)["source_code"]


def good_answer() -> str:
    row = next(json.loads(line) for line in open(RETURNS) if json.loads(line).get("demo_id") == "good-0001")
    return row["messages"][-1]["content"].split("```cpp\n", 1)[1].rsplit("```", 1)[0]


def expected_of(prog: MeasuredProgram, stdins: list[bytes]) -> list[bytes]:
    with Sandbox(files={"main": prog.binary}, limits=LIMITS) as sb:
        return [sb.run(["/prog/main"], s, LIMITS).stdout for s in stdins]


def sum_even_cases() -> list[tuple[str, bytes, bytes]]:
    """The oracle's hidden sum-even tests plus one n = 16,000 test, expected outputs from the seed."""
    hidden = json.loads(HIDDEN.read_text())[TASK]
    stdins = [t["stdin"].encode() for t in hidden] + [sum_even_input(16000, 7)]
    outs = expected_of(build(seed_source()), stdins)
    return [(f"input.{i}", s, o) for i, (s, o) in enumerate(zip(stdins, outs))]


# ------------------------------------------------------------------------------------------------------ cost

def vg_cpu(prog: MeasuredProgram, stdin: bytes, vg, lim: Limits) -> tuple[float, int]:
    with Sandbox(files={"main": prog.binary}, limits=lim, mounts=vg.mounts) as sb:
        c = count_instructions(sb, stdin=stdin, limits=lim, valgrind=vg)
    assert c.ok, (c.status, c.detail)
    return c.cpu_seconds, c.cost


def smc_cost(reps: int) -> None:
    base = find_valgrind()
    default = dataclasses.replace(base, options=tuple(o for o in base.options if not o.startswith("--smc")))
    src, ans = build(seed_source()), build(good_answer())
    pie = [(build((PIE_PAIR / n).read_text(), CompileSpec(command="g++ -std=gnu++17 -O3 main.cpp -o main")),
            (PIE_PAIR / "tests" / "input.0.txt").read_bytes(), n) for n in ("slow.cpp", "fast.cpp")]
    rows = [(src, sum_even_input(1500, 1), "sum-even source n=1500"), (ans, sum_even_input(1500, 1), "answer n=1500"),
            (src, sum_even_input(16000, 7), "sum-even source n=16000"),
            (ans, sum_even_input(16000, 7), "answer n=16000")] + [(p, s, f"PIE divisors {n} (tiny)") for p, s, n in pie]
    lim = valgrind_limits(LIMITS)
    print(f"\n== cost of --smc-check=all (per valgrind run, CPU seconds, median of {reps}; load "
          f"{os.getloadavg()[0]:.2f})")
    head = f"{'program / input':<28} {'measure':<13} {'default':>9} {'smc=all':>9} {'ratio':>6}  counts equal"
    print(head + "\n" + "-" * len(head))
    with core_lease():
        for measure in ("instructions", "cycles"):
            d, a = ((default, base) if measure == "instructions"
                    else (default.with_cycles(DEFAULT_MODEL), base.with_cycles(DEFAULT_MODEL)))
            for prog, stdin, label in rows:
                cells = {"d": [], "a": []}
                counts = set()
                for _ in range(reps):
                    for key, vg in (("d", d), ("a", a)):
                        sec, cost = vg_cpu(prog, stdin, vg, lim)
                        cells[key].append(sec)
                        counts.add(cost)
                md, ma = statistics.median(cells["d"]), statistics.median(cells["a"])
                print(f"{label:<28} {measure:<13} {md:>9.3f} {ma:>9.3f} {ma / md:>6.2f}  {len(counts) == 1}",
                      flush=True)


def checks_cost(reps: int) -> None:
    """What the native cross-check and 3 spot checks add to one counted comparison (the source's counts cached),
    each part timed on its own, side by side."""
    from arbiter.judge.meter_checks import native_seconds
    from arbiter.timing.crosscheck import native_check

    cases = sum_even_cases()
    measured, spots = cases[-2:], cases[:3]
    src = build(seed_source())
    print(f"\n== cost of the native cross-check and 3 spot checks next to the comparison they check (the sum-even "
          f"source's counts cached; {len(measured)} measured tests, n = 1692 and 16,000; seconds, median of {reps}; "
          f"load {os.getloadavg()[0]:.2f})")
    head = (f"{'candidate':<22} {'measure':<13} {'compare':>8} {'native check':>13} {'3 spot checks':>14} "
            f"{'added':>7}  check")
    print(head + "\n" + "-" * len(head))
    for name, code in (("good answer (O(n))", good_answer()), ("seed itself (O(n^2))", seed_source())):
        cand = build(code)
        suite = TestSuite(tuple(StdioCase(n, s, (o,)) for n, s, o in measured))
        verdict = judge(Task(language="cpp", source=code, suite=suite, limits=LIMITS, run_all=True,
                             scoring="fraction"))
        for measure in ("instructions", "cycles"):
            vg = find_valgrind() if measure == "instructions" else find_valgrind().with_cycles(DEFAULT_MODEL)
            cache = CountCache()
            compare(src, cand, measured, measure, limits=LIMITS, baseline_cache=cache)  # warm: source counted
            t = {"compare": [], "native": [], "spots": []}
            status = ""
            for _ in range(reps):
                t0 = time.perf_counter()
                cmp = compare(src, cand, measured, measure, limits=LIMITS, baseline_cache=cache)
                t1 = time.perf_counter()
                chk = native_check(src, cmp, native_seconds([verdict]), measured, LIMITS)
                t2 = time.perf_counter()
                measure_instructions(cand.binary, spots, limits=LIMITS, valgrind=vg)
                t3 = time.perf_counter()
                t["compare"].append(t1 - t0)
                t["native"].append(t2 - t1)
                t["spots"].append(t3 - t2)
                status = chk.status
            m = {k: statistics.median(v) for k, v in t.items()}
            added = (m["native"] + m["spots"]) / m["compare"]
            print(f"{name:<22} {measure:<13} {m['compare']:>8.2f} {m['native']:>13.3f} {m['spots']:>14.2f} "
                  f"{100 * added:>6.0f}%  {status}", flush=True)


# ---------------------------------------------------------------------------------------------------- margin

class Hogs:
    """``n`` spinning processes per core while inside the ``with`` block."""

    def __init__(self, per_core: int):
        self.n, self.procs = per_core * (os.cpu_count() or 1), []

    def __enter__(self):
        self.procs = [subprocess.Popen([sys.executable, "-c", "while True: pass"], start_new_session=True)
                      for _ in range(self.n)]
        return self

    def __exit__(self, *exc):
        for p in self.procs:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()


def margin_rows(args) -> list[dict]:
    rows = [json.loads(line) for line in open(CODESCOPE, encoding="utf-8")]
    rows = [r for r in rows if r["lang"] == "GNU C++"]
    if args.rows:
        keep = {int(x) for x in args.rows.split(",")}
        rows = [r for r in rows if int(r["id"]) in keep]
    return rows


def margin(args) -> None:
    from arbiter.checkers.spec import CheckerSpec
    from arbiter.datasets.pie.cases import costliest_cases
    from arbiter.judge.encodings import codescope_row_to_suite
    from arbiter.judge.speedup import output_check_of
    from arbiter.timing.crosscheck import NATIVE_MIN_SECONDS, native_check
    from arbiter.judge.meter_checks import native_seconds

    spec = CompileSpec()
    print(f"\n== counted / native CPU-time speedup on honest pairs (CodeScope GNU C++, both ways round; the source's "
          f"{args.cases} costliest tests; load {os.getloadavg()[0]:.2f}; with load: {args.load} hog(s) per core)")
    head = (f"{'row':>4} {'dir':>3} {'cand s':>7} {'native x':>8} {'instr x':>8} {'ratio':>6} {'cycles x':>8} "
            f"{'ratio':>6} {'loaded native x':>15} {'ratio i/c':>10}")
    print(head + "\n" + "-" * len(head))
    ratios = {"instructions": [], "cycles": [], "instructions loaded": [], "cycles loaded": []}
    for row in margin_rows(args):
        suite = codescope_row_to_suite(row)
        codes = [row["time_baseline_source_code"], row["memory_baseline_source_code"]]
        verdicts = [judge(Task(language="cpp", source=c, suite=suite, limits=LIMITS, checker=CheckerSpec("tokens"),
                               run_all=True, scoring="fraction", compile=spec)) for c in codes]
        if not all(v.accepted for v in verdicts):
            continue
        progs = [build(c, spec) for c in codes]
        for s, c in ((0, 1), (1, 0)):
            chosen = set(costliest_cases(verdicts[s].cases, args.cases))
            cases = [(x.name, x.stdin, x.expected[0]) for x in suite if x.name in chosen]
            same = output_check_of(CheckerSpec("tokens"), [x for x in suite if x.name in chosen])
            cand_s = native_seconds([verdicts[c]])
            figs = {}
            for measure in ("instructions", "cycles"):
                cmp = compare(progs[s], progs[c], cases, measure, limits=LIMITS, same_output=same)
                if not cmp.ok:
                    continue
                chk = native_check(progs[s], cmp, cand_s, cases, LIMITS, same, margin=float("inf"), min_seconds=0)
                with Hogs(args.load):
                    loaded = native_check(progs[s], cmp, cand_s, cases, LIMITS, same, margin=float("inf"),
                                          min_seconds=0)
                figs[measure] = (cmp.speedup, chk, loaded)
                applies = chk.candidate_seconds is not None and chk.candidate_seconds >= NATIVE_MIN_SECONDS
                if chk.ratio is not None and applies:
                    ratios[measure].append(chk.ratio)
                    ratios[f"{measure} loaded"].append(loaded.ratio)
            if len(figs) < 2:
                continue
            (ix, ic, il), (cx, cc, cl) = figs["instructions"], figs["cycles"]
            print(f"{row['id']:>4} {'s>f' if s == 0 else 'f>s':>3} {f(ic.candidate_seconds, '.3f'):>7} "
                  f"{f(ic.native_speedup):>8} {f(ix):>8} {f(ic.ratio):>6} {f(cx):>8} {f(cc.ratio):>6} "
                  f"{f(il.native_speedup):>15} {f(il.ratio) + '/' + f(cl.ratio):>10}", flush=True)
    print(f"\nwhere the check applies (candidate's native time >= {NATIVE_MIN_SECONDS} s):")
    for k, v in ratios.items():
        if v:
            print(f"  {k:<20} n={len(v):>3}  largest ratio {max(v):.2f}  median {statistics.median(v):.2f}")


# ---------------------------------------------------------------------------------------------------- cheats

def pie_tests(cases: list[tuple[str, bytes, bytes]]) -> Path:
    root = Path(tempfile.mkdtemp(prefix="arbiter-cheats-"))
    (root / "psum").mkdir()
    for i, (_, stdin, out) in enumerate(cases):
        (root / "psum" / f"input.{i}.txt").write_bytes(stdin)
        (root / "psum" / f"output.{i}.txt").write_bytes(out)
    return root


def cheats(args) -> None:
    every = sum_even_cases()
    large = [c for c in every if int(c[1].split()[0]) >= 64]
    for cases, what in ((every, "every test (n = 1 to 16,000)"), (large, "only tests with n >= 64")):
        cheat_table(pie_tests(cases), f"{len(cases)} tests: {what}")


def cheat_table(root: Path, what: str) -> None:
    src = PieSource(problem_id="psum", src_id="seed", src_code=seed_source(), usable_case_ids=None)
    programs = sorted(CHEATS.glob("*.cpp")) + [None]
    print(f"\n== cheats through the PIE reward (source: the sum-even seed; {what}; raw transform; load "
          f"{os.getloadavg()[0]:.2f})")
    head = f"{'program':<22} {'instructions':<34} {'cycles':<34} {'wall':<30}"
    print(head + "\n" + "-" * len(head))
    for path in programs:
        code = path.read_text() if path else seed_source()
        cells = []
        for method in ("instructions", "cycles", "wall"):
            r = pie_reward(src, code, root, method=method, transform="raw", cache=False)
            check = ((r.comparison or {}).get("extra") or {}).get("native_check") or {}
            ratio = f" r={check['ratio']:.0f}" if check.get("ratio") else ""
            cells.append(f"{r.outcome} {f(r.reward)}{ratio}")
        print(f"{(path.stem if path else '(the seed itself)'):<22} {cells[0]:<34} {cells[1]:<34} {cells[2]:<30}",
              flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--part", default="all", choices=["cost", "margin", "cheats", "all"])
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--cases", type=int, default=2)
    ap.add_argument("--load", type=int, default=1)
    ap.add_argument("--rows", default="")
    args = ap.parse_args()
    vg = find_valgrind()
    print(f"valgrind {vg.version}; options {' '.join(vg.options)}; cpu {vg.cpu_model}; {os.cpu_count()} cores")
    if args.part in ("cost", "all"):
        smc_cost(args.reps)
        checks_cost(args.reps)
    if args.part in ("margin", "all"):
        margin(args)
    if args.part in ("cheats", "all"):
        cheats(args)


if __name__ == "__main__":
    main()
