"""Executor benchmark (issue 2): per-case overhead of the sandbox, side by side with a baseline.

For a trivial Python program and a trivial C++ binary, over N cases (default 200):

- arbiter: one sandbox per submission, every case a fresh process inside it (Python: forked by
  the forker, a warm child of the sandbox's fork-server; C++: posix_spawn inside the sandbox),
  measured end to end from the judge
  process (request sent -> verdict-ready Execution back), and through ``judge()`` (checker
  included);
- baseline: a fresh isolated process per case, one ``bwrap`` (same namespaces and mounts) +
  ``python3 file.py`` (or ``./binary``) per case, as a per-run sandbox such as SandboxFusion or
  isolate does.

Also times a sandbox's start-up (``Sandbox()`` + ``load_python`` + close).
Prints medians (ms), cases/s and the ratios. Targets (2-core machine): median per-case overhead
<= 3 ms for both; Python cases/s >= 5x the baseline. Usage: ``python bench/executor.py [N]``.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time

from arbiter.checkers.spec import CheckerSpec
from arbiter.judge.judge import judge
from arbiter.judge.task import Task
from arbiter.judge.testsuite import StdioCase, TestSuite
from arbiter.languages.cpp.compile import CompileSpec, compile_cpp
from arbiter.sandbox.config import SandboxConfig
from arbiter.sandbox.limits import Limits
from arbiter.sandbox.bwrap import root_layout_args
from arbiter.sandbox.sandbox import Sandbox

PY_SRC = "import sys\nprint(int(sys.stdin.readline()) + 1)\n"
CPP_SRC = "#include <cstdio>\nint main(){long x; if(scanf(\"%ld\",&x)!=1) return 1; printf(\"%ld\\n\", x+1);}\n"


def median_ms(xs: list[float]) -> float:
    return statistics.median(xs) * 1e3


def bench_sandbox(n: int, binary: bytes) -> dict[str, list[float]]:
    out: dict[str, list[float]] = {"python": [], "cpp": []}
    with Sandbox(limits=Limits(cpu_seconds=2)) as sb:
        assert sb.load_python(PY_SRC) is None
        for i in range(n):
            t = time.perf_counter()
            ex = sb.run_python(f"{i}\n".encode())
            out["python"].append(time.perf_counter() - t)
            assert ex.ok and ex.stdout == f"{i + 1}\n".encode(), ex
    with Sandbox(files={"main": binary}, limits=Limits(cpu_seconds=2)) as sb:
        for i in range(n):
            t = time.perf_counter()
            ex = sb.run(["/prog/main"], f"{i}\n".encode())
            out["cpp"].append(time.perf_counter() - t)
            assert ex.ok and ex.stdout == f"{i + 1}\n".encode(), ex
    return out


def bench_start(n: int) -> list[float]:
    """Seconds from ``Sandbox()`` to a loaded program and back (start, ``load_python``, close)."""
    out = []
    for _ in range(n):
        t = time.perf_counter()
        with Sandbox(limits=Limits(cpu_seconds=2)) as sb:
            assert sb.load_python(PY_SRC) is None
        out.append(time.perf_counter() - t)
    return out


def bench_judge(n: int) -> dict[str, float]:
    suite = TestSuite(tuple(StdioCase(str(i), f"{i}\n".encode(), (f"{i + 1}\n".encode(),)) for i in range(n)))
    res = {}
    for lang, src in (("python", PY_SRC), ("cpp", CPP_SRC)):
        task = Task(lang, src, suite, checker=CheckerSpec("tokens"))
        judge(task)  # warm the compile cache
        t = time.perf_counter()
        v = judge(task)
        res[lang] = time.perf_counter() - t
        assert v.accepted, v.reason
    return res


def bench_baseline(n: int, binary: bytes) -> dict[str, list[float]]:
    cfg = SandboxConfig()
    out: dict[str, list[float]] = {"python": [], "cpp": []}
    with tempfile.TemporaryDirectory() as d:
        os.chmod(d, 0o755)
        with open(os.path.join(d, "main.py"), "w") as f:
            f.write(PY_SRC)
        with open(os.path.join(d, "main"), "wb") as f:
            f.write(binary)
        os.chmod(os.path.join(d, "main"), 0o755)
        bwrap = [cfg.bwrap, "--unshare-all", "--unshare-user", "--die-with-parent", "--new-session",
                 *root_layout_args(), "--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp",
                 "--ro-bind", d, "/prog", "--chdir", "/tmp"]
        kw = dict(user=cfg.uid, group=cfg.gid, extra_groups=[]) if os.geteuid() == 0 else {}
        for lang, argv in (("python", [cfg.python, "-I", "-S", "/prog/main.py"]), ("cpp", ["/prog/main"])):
            for i in range(n):
                t = time.perf_counter()
                r = subprocess.run(bwrap + argv, input=f"{i}\n".encode(), capture_output=True, timeout=30, **kw)
                out[lang].append(time.perf_counter() - t)
                assert r.returncode == 0 and r.stdout == f"{i + 1}\n".encode(), r
    return out


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 200
    comp = compile_cpp(CPP_SRC, CompileSpec())
    assert comp.ok, comp.message
    binary = comp.binary
    ours = bench_sandbox(n, binary)
    base = bench_baseline(n, binary)
    judged = bench_judge(n)
    started = bench_start(max(10, n // 10))
    print(f"executor benchmark: {n} cases per program, {os.cpu_count()} cores, load {os.getloadavg()[0]:.2f}")
    print(f"{'program':<8} {'arbiter median ms':>18} {'p90 ms':>8} {'cases/s':>9} {'judge() cases/s':>16} "
          f"{'baseline median ms':>19} {'baseline cases/s':>17} {'speedup':>8}")
    for lang in ("python", "cpp"):
        m = median_ms(ours[lang])
        p90 = statistics.quantiles(ours[lang], n=10)[-1] * 1e3
        cps = n / sum(ours[lang])
        jcps = n / judged[lang]
        bm = median_ms(base[lang])
        bcps = n / sum(base[lang])
        print(f"{lang:<8} {m:>18.2f} {p90:>8.2f} {cps:>9.0f} {jcps:>16.0f} {bm:>19.2f} {bcps:>17.0f} {cps / bcps:>7.1f}x")
    print(f"sandbox start + load_python + close: median {median_ms(started):.1f} ms, "
          f"min {min(started) * 1e3:.1f} ms over {len(started)}")
    print("targets: median per-case overhead <= 3 ms (python and cpp); python cases/s >= 5x baseline")


if __name__ == "__main__":
    main()
