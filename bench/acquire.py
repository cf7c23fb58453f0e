"""Per-submission overhead: from the ``judge()`` call to the first case starting, warm pool vs cold.

The case itself records when it starts (its first statement prints ``time.time_ns()``; the C++
binary prints ``clock_gettime(CLOCK_REALTIME)``, the same clock as the judge's ``time.time_ns()``
taken just before ``judge()``), read back from the verdict's diff (the expected output is ``x``).
Modes, interleaved round by round, back to back as an RL scorer sends them:

- warm: a pool per language (as a scorer of one dataset has: a pooled sandbox forks its Python
  forker ahead of a session when its last session was Python), spares on;
- cold: a pool that keeps nothing (``ARBITER_POOL=0``): every submission starts its sandbox.

Languages: Python, and C++ with its binary already in the compile cache. Prints p50/p90 (ms)
side by side and the whole ``judge()`` time. Target: warm p50 <= 5 ms.
Usage: ``python bench/acquire.py [ROUNDS]`` (default 40).
"""

from __future__ import annotations

import re
import statistics
import sys
import time

from arbiter.judge.judge import judge
from arbiter.judge.task import Task
from arbiter.judge.testsuite import StdioCase, TestSuite
from arbiter.sandbox import pool as pool_module
from arbiter.sandbox.pool import SandboxPool

SOURCES = {
    "python": "import time\nprint(time.time_ns())\n",
    "cpp": "#include <cstdio>\n#include <ctime>\nint main() { timespec t; clock_gettime(CLOCK_REALTIME, &t);"
           " printf(\"%lld\\n\", (long long)t.tv_sec * 1000000000LL + t.tv_nsec); return 0; }\n",
}
SUITE = TestSuite((StdioCase("first", b"", (b"x\n",)),))
GOT = re.compile(r"got '(\d+)'")


def one(language: str) -> tuple[float, float]:
    """``(ms to the first case, ms of the whole judge() call)``."""
    task = Task(language, SOURCES[language], SUITE)
    t0 = time.time_ns()
    p0 = time.perf_counter()
    v = judge(task)
    total = (time.perf_counter() - p0) * 1e3
    m = GOT.search(v.cases[0].diff if v.cases else "")
    if m is None:
        raise SystemExit(f"{language}: no timestamp in the verdict: {v.outcome} {v.reason}")
    return (int(m.group(1)) - t0) / 1e6, total


def pct(xs: list[float], q: float) -> float:
    return statistics.quantiles(xs, n=100, method="inclusive")[int(q) - 1] if len(xs) > 1 else xs[0]


def main() -> None:
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 40
    pools = {"warm": {lang: SandboxPool() for lang in SOURCES}, "cold": SandboxPool(max_sandboxes=0)}

    def use(mode: str, language: str) -> None:
        pool = pools[mode]
        pool_module._default = pool[language] if isinstance(pool, dict) else pool

    results: dict[tuple[str, str], list[tuple[float, float]]] = {}
    for mode in pools:  # warm-up: compile cache, first sandboxes, spares
        for language in SOURCES:
            use(mode, language)
            for _ in range(3):
                one(language)
    time.sleep(1.0)
    for _ in range(rounds):
        for mode in pools:
            for language in SOURCES:
                use(mode, language)
                results.setdefault((mode, language), []).append(one(language))
    print(f"judge() call -> first case starting, {rounds} submissions each (ms)")
    print(f"{'language':<8} {'mode':<5} {'p50':>8} {'p90':>8} {'judge p50':>10}")
    for language in SOURCES:
        for mode in pools:
            first = [r[0] for r in results[(mode, language)]]
            whole = [r[1] for r in results[(mode, language)]]
            print(f"{language:<8} {mode:<5} {pct(first, 50):8.2f} {pct(first, 90):8.2f} {pct(whole, 50):10.2f}")
        warm = pct([r[0] for r in results[("warm", language)]], 50)
        cold = pct([r[0] for r in results[("cold", language)]], 50)
        print(f"{language:<8} cold/warm p50: {cold / warm:.1f}x")
    for language, pool in pools["warm"].items():
        print(f"warm pool ({language}):", pool.stats())
        pool.close()
    pools["cold"].close()


if __name__ == "__main__":
    main()
