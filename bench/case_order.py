"""Which case order finds a wrong program's failure soonest, on real rows (docs/step.md, "2").

Every distinct failing candidate of bench/data/grpo is judged once on all its cases (``run_all``,
1 CPU s per case, so a TLE costs a second), which gives its pass/fail and CPU seconds per case.
Then the programs of each suite are replayed in random orders (``--rounds`` shuffles) under each
strategy, the learned ones learning from every program before, as a step judge does with one
worker: the suite's order; input size, smallest first; learned failures first (cheapest expected
cost per failure) then the suite's order (arbiter's); learned then input size. Printed side by
side: cases run and CPU seconds per failing program until its first failure.

Usage: .venv/bin/python bench/case_order.py [--rounds 20]
"""

from __future__ import annotations

import argparse
import os
import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import grpo_shapes  # noqa: E402

from arbiter.judge import jsonvalues  # noqa: E402
from arbiter.judge.step import OFF, StepJudge  # noqa: E402
from arbiter.judge.step.order import CASE_OVERHEAD  # noqa: E402
from arbiter.judge.testsuite import CallCase  # noqa: E402
from arbiter.rewards.codegen import RewardOptions, prepare  # noqa: E402

STRATEGIES = ("suite order", "input size", "learned, then suite order", "learned, then input size")


def size(case) -> int:
    return len(jsonvalues.dumps([list(case.args), case.kwargs])) if isinstance(case, CallCase) else len(case.stdin)


def profiles() -> dict[str, list[dict]]:
    """Per suite: each failing program's ``fail`` and ``cpu`` per case, and the cases' sizes."""
    rows, cands = grpo_shapes.load()
    opts = RewardOptions(run_all=True, time_limit=1.0)
    judges, jobs = StepJudge(), []
    for c in cands:
        r = rows[c["key"]]
        for resp in {resp for resp, v in zip(c["responses"], c["verdicts"]) if v not in ("AC", "CE")}:
            p = prepare(r["data_source"], resp, r["reward_model"]["ground_truth"], r["extra_info"], opts)
            if p.task is not None:
                jobs.append((c["key"], p.task, judges.submit(p.task, settings=OFF)))
    out: dict[str, list[dict]] = {}
    for key, task, fut in jobs:
        v = fut.result()
        if len(v.cases) == len(task.suite.cases) and any(c.outcome.value != "AC" for c in v.cases):
            out.setdefault(key, []).append({"fail": [c.outcome.value != "AC" for c in v.cases],
                                            "cpu": [c.cpu_seconds + CASE_OVERHEAD for c in v.cases],
                                            "size": [size(c) for c in task.suite.cases]})
    judges.close()
    return out


def order(strategy: str, sizes: list[int], runs: list[int], fails: list[int], secs: list[float]) -> list[int]:
    n = len(sizes)
    by_size = sorted(range(n), key=lambda i: (sizes[i], i))
    if not strategy.startswith("learned"):
        return by_size if strategy == "input size" else list(range(n))
    failed = sorted((i for i in range(n) if fails[i]), key=lambda i: (secs[i] / fails[i], i))
    rest = by_size if strategy.endswith("input size") else range(n)
    return failed + [i for i in rest if not fails[i]]


def replay(progs: list[list[dict]], rounds: int) -> dict[str, tuple[float, float]]:
    totals = {s: [0, 0.0] for s in STRATEGIES}
    count = 0
    for rnd in range(rounds):
        rng = random.Random(rnd)
        for suite in progs:
            n, seq = len(suite[0]["fail"]), rng.sample(suite, len(suite))
            count += len(seq)
            for s in STRATEGIES:
                runs, fails, secs = [0] * n, [0] * n, [0.0] * n
                for p in seq:
                    o = order(s, p["size"], runs, fails, secs)
                    k = next(j for j, i in enumerate(o) if p["fail"][i]) + 1
                    totals[s][0] += k
                    for i in o[:k]:
                        runs[i], fails[i], secs[i] = runs[i] + 1, fails[i] + p["fail"][i], secs[i] + p["cpu"][i]
                        totals[s][1] += p["cpu"][i]
    return {s: (k / count, c / count) for s, (k, c) in totals.items()}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=20)
    args = ap.parse_args()
    progs = profiles()
    got = replay(list(progs.values()), args.rounds)
    n = sum(len(p) for p in progs.values())
    print(f"== {n} failing programs of {len(progs)} suites (bench/data/grpo), {args.rounds} shuffles; load average "
          f"{' '.join(f'{x:.1f}' for x in os.getloadavg())}")
    base = got["suite order"][0]
    for s, (cases, cpu) in got.items():
        print(f"{s:28s} {cases:5.2f} cases/failing program ({cases / base:.2f}x the suite order), "
              f"{cpu * 1000:6.1f} CPU ms")


if __name__ == "__main__":
    main()
