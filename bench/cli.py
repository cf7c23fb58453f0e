"""``arbiter judge`` end to end: a C++ program already in the compile cache, two test cases.

Side by side, interleaved run by run: the console script (its sandbox asked for before the CLI
loads: ``cli/entry.py``), the same command through ``arbiter.cli.main:app`` (the sandbox started
only when the judge needs it), and a bare interpreter start for reference. Prints p50/p90 wall ms
of each. Target: the console script's p50 <= 300 ms.
Usage: ``python bench/cli.py [RUNS]`` (default 20).
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SOURCE = "#include <cstdio>\nint main(){long x; if(scanf(\"%ld\",&x)!=1) return 1; printf(\"%ld\\n\", x+1);}\n"
TESTS = '{"inputs": ["1\\n", "2\\n"], "outputs": ["2\\n", "3\\n"]}\n'
SCRIPT = Path(sys.executable).with_name("arbiter")


def wall_ms(argv: list[str], expect: int) -> float:
    t = time.perf_counter()
    out = subprocess.run(argv, capture_output=True, text=True, timeout=120)
    ms = (time.perf_counter() - t) * 1e3
    if out.returncode != expect:
        raise SystemExit(f"{argv[:3]}...: exit {out.returncode}\n{out.stdout}{out.stderr}")
    return ms


def main() -> None:
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 20
    with tempfile.TemporaryDirectory() as d:
        prog, tests = os.path.join(d, "a.cpp"), os.path.join(d, "tests.json")
        Path(prog).write_text(SOURCE)
        Path(tests).write_text(TESTS)
        args = ["judge", prog, "--lang", "cpp", "--tests", tests]
        modes = {
            "console script": ([str(SCRIPT), *args], 0),
            "app, no early sandbox": ([sys.executable, "-c", "from arbiter.cli.main import app; app()", *args], 0),
            "bare python start": ([sys.executable, "-c", "pass"], 0),
        }
        for argv, expect in modes.values():  # warm-up: the compile cache, the page cache
            wall_ms(argv, expect)
        times: dict[str, list[float]] = {name: [] for name in modes}
        for _ in range(runs):
            for name, (argv, expect) in modes.items():
                times[name].append(wall_ms(argv, expect))
    print(f"arbiter judge on a cached C++ program, 2 cases, {runs} runs each, load {os.getloadavg()[0]:.1f}")
    print(f"{'mode':<24} {'p50 ms':>8} {'p90 ms':>8}")
    for name, xs in times.items():
        print(f"{name:<24} {statistics.median(xs):>8.0f} {statistics.quantiles(xs, n=10)[-1]:>8.0f}")
    print("target: console script p50 <= 300 ms")


if __name__ == "__main__":
    main()
