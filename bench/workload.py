"""A real workload against a floor: CodeScope's accepted Codeforces programs on all their cases.

Every Python 3 program of ``realdata/codescope_codeopt`` (both accepted programs of each row) on
every test case of its row, scored by ``compute_score_batch`` (verl's batch reward: one sandbox
per response, one worker per core, full isolation), against a FLOOR written here: no isolation at
all, 2 worker processes already warm (fresh interpreters, common modules imported), each
compiling a program once and forking a child per case that ``exec``s it with stdin from a memfd
and stdout into a pipe, compared with the same ``tokens`` checker. Rounds are interleaved (floor,
arbiter, floor, arbiter...); printed: cases/s of each, the median ratio, the verdict counts of
both (they must agree). Then the GNU C++ rows the same way: compiled before the timed part
(through the compile cache), ``judge_many`` with 2 workers against a floor that spawns the
binary per case.

Usage: ``python bench/workload.py [--rounds 3] [--skip-cpp]`` (``ARBITER_SHARED``: the shared
folder, default ``../shared``).
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import statistics
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

# (light imports only: the floor's workers are fresh interpreters that import this module; the
# judge's modules are imported where they are used)
from arbiter.checkers.compare import check_output
from arbiter.checkers.spec import CheckerSpec

REPO = Path(__file__).resolve().parent.parent
SHARED = Path(os.environ.get("ARBITER_SHARED", REPO.parent / "shared"))
DATA = SHARED / "realdata/codescope_codeopt/code_optimization_data.jsonl"
FIELDS = ("time_baseline_source_code", "memory_baseline_source_code")
TOKENS = CheckerSpec("tokens")
CPU_SECONDS = 10.0  # generous: these programs are known correct (SOURCES.md), the machine is shared
WORKERS = 2
CPP_COMMAND = "g++ -std=gnu++17 -O2 main.cpp -o main"


def load(lang: str) -> list[tuple[str, str, list[tuple[bytes, tuple[bytes, ...]]], object]]:
    """``(label, source, [(stdin, expected answers)], suite)`` for both programs of every ``lang`` row."""
    from arbiter.judge.encodings import codescope_row_to_suite

    out = []
    for line in DATA.open(encoding="utf-8"):
        row = json.loads(line)
        if row["lang"] != lang:
            continue
        suite = codescope_row_to_suite(row)
        cases = [(c.stdin, c.expected) for c in suite]
        for field in FIELDS:
            out.append((f"{row['id']}:{field}", row[field], cases, suite))
    return out


# ---- the floor ------------------------------------------------------------------------------
#: What the floor's workers import before the first case (as the sandbox's server warms itself).
WARM = ("bisect collections copy decimal fractions functools heapq io itertools json math operator random re "
        "statistics string struct sys time typing").split()


def _warm() -> None:
    import importlib
    for name in WARM:
        importlib.import_module(name)


def _floor_case(run_child, stdin: bytes, expected: tuple[bytes, ...]) -> str:
    """Fork one child for one case (``run_child(stdin fd, stdout fd)`` in the child); its verdict."""
    in_fd = os.memfd_create("stdin")
    os.write(in_fd, stdin)
    os.lseek(in_fd, 0, os.SEEK_SET)
    out_r, out_w = os.pipe()
    pid = os.fork()
    if pid == 0:
        status = 1
        try:
            os.close(out_r)
            status = run_child(in_fd, out_w)
        finally:
            os._exit(status)
    os.close(in_fd)
    os.close(out_w)
    chunks = []
    while chunk := os.read(out_r, 1 << 16):
        chunks.append(chunk)
    os.close(out_r)
    _, status = os.waitpid(pid, 0)
    if status != 0:
        return "RE"
    return "AC" if check_output(TOKENS, b"".join(chunks), expected).ok else "WA"


def _python_child(code):
    def run(in_fd: int, out_fd: int) -> int:
        import io
        os.dup2(in_fd, 0)
        os.dup2(out_fd, 1)
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, 2)
        sys.stdin = io.TextIOWrapper(io.BufferedReader(io.FileIO(0, "r", closefd=False)))
        sys.stdout = io.TextIOWrapper(io.BufferedWriter(io.FileIO(1, "w", closefd=False)))
        status = 0
        try:
            exec(code, {"__name__": "__main__", "__builtins__": __builtins__})
        except SystemExit as exc:
            status = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        except BaseException:
            status = 1
        sys.stdout.flush()
        return status
    return run


def _native_child(path: str):
    def run(in_fd: int, out_fd: int) -> int:
        os.dup2(in_fd, 0)
        os.dup2(out_fd, 1)
        os.dup2(os.open(os.devnull, os.O_WRONLY), 2)
        os.execv(path, [path])
        return 127
    return run


def floor_program(job: tuple[str, str, list]) -> list[str]:
    """In a warm worker: the program's per-case verdicts (all of them: they are all AC)."""
    kind, what, cases = job
    run = _python_child(compile(what, "main.py", "exec")) if kind == "python" else _native_child(what)
    return [_floor_case(run, stdin, expected) for stdin, expected in cases]


def run_floor(pool, jobs: list) -> tuple[float, list[list[str]]]:
    t = time.perf_counter()
    verdicts = list(pool.imap(floor_program, jobs, chunksize=1))
    return time.perf_counter() - t, verdicts


# ---- arbiter --------------------------------------------------------------------------------
def run_arbiter_python(programs: list) -> tuple[float, list[dict]]:
    from arbiter.verl.reward import compute_score_batch

    truths = [json.dumps({"inputs": [s.decode() for s, _ in cases], "outputs": [e[0].decode() for _, e in cases]})
              for _, _, cases, _ in programs]
    t = time.perf_counter()
    results = compute_score_batch(["codeforces"] * len(programs), [f"```python\n{src}\n```" for _, src, _, _ in programs],
                                  truths, [{"index": label} for label, _, _, _ in programs],
                                  checker="tokens", time_limit=CPU_SECONDS,
                                  reuse=False)  # (every round judges: no verdict of an earlier round reused)
    return time.perf_counter() - t, results


def run_arbiter_tasks(tasks: list) -> tuple[float, list]:
    from arbiter.judge.judge import judge_many

    t = time.perf_counter()
    verdicts = list(judge_many(tasks, workers=WORKERS))
    return time.perf_counter() - t, verdicts


# ---- report ---------------------------------------------------------------------------------
def program_verdict(case_verdicts: list[str]) -> str:
    return next((v for v in case_verdicts if v != "AC"), "AC")


def compare(name: str, n_cases: int, floor_walls: list[float], ours_walls: list[float],
            floor_counts: Counter, ours_counts: Counter) -> None:
    ratios = [f / o for f, o in zip(floor_walls, ours_walls)]
    print(f"== {name}: {n_cases} cases per round, {len(ratios)} interleaved rounds, load {os.getloadavg()[0]:.1f}")
    print(f"{'round':<6} {'floor cases/s':>14} {'arbiter cases/s':>16} {'arbiter/floor':>14}")
    for i, (f, o) in enumerate(zip(floor_walls, ours_walls)):
        print(f"{i + 1:<6} {n_cases / f:>14.0f} {n_cases / o:>16.0f} {f / o:>13.2f}x")
    print(f"median {n_cases / statistics.median(floor_walls):>14.0f} {n_cases / statistics.median(ours_walls):>16.0f} "
          f"{statistics.median(ratios):>13.2f}x")
    agree = "agree" if floor_counts == ours_counts else "DIFFER"
    print(f"program verdicts: floor {dict(floor_counts)}, arbiter {dict(ours_counts)} ({agree})")


def bench_python(pool, rounds: int) -> None:
    programs = load("Python 3")
    jobs = [("python", src, cases) for _, src, cases, _ in programs]
    n_cases = sum(len(c) for _, _, c, _ in programs)
    run_arbiter_python(programs[:2])  # warm-up: imports, the first sandboxes
    fw, ow, fc, oc = [], [], Counter(), Counter()
    for _ in range(rounds):
        wall, verdicts = run_floor(pool, jobs)
        fw.append(wall)
        fc = Counter(program_verdict(v) for v in verdicts)
        wall, results = run_arbiter_python(programs)
        ow.append(wall)
        oc = Counter(r["verdict"] for r in results)
    compare(f"Python 3 ({len(programs)} programs, compute_score_batch)", n_cases, fw, ow, fc, oc)


def bench_cpp(pool, rounds: int, tmp: str) -> None:
    from arbiter.judge.task import CompileSpec, Task
    from arbiter.languages.cpp.compile import compile_cpp
    from arbiter.sandbox.limits import Limits

    programs = load("GNU C++")
    spec = CompileSpec(command=CPP_COMMAND, timeout_seconds=60, online_judge=True)
    jobs, judged = [], []
    for i, (label, src, cases, suite) in enumerate(programs):  # compiled outside the timed part
        comp = compile_cpp(src, spec)  # (stored in the compile cache: the judge's build is a hit)
        assert comp.ok, (label, comp.message)
        path = os.path.join(tmp, f"p{i}")
        with open(path, "wb") as f:
            f.write(comp.binary)
        os.chmod(path, 0o755)
        jobs.append(("native", path, cases))
        judged.append(Task("cpp", src, suite, checker=TOKENS, compile=spec,
                           limits=Limits(cpu_seconds=CPU_SECONDS), task_id=label))
    n_cases = sum(len(c) for _, _, c, _ in programs)
    fw, ow, fc, oc = [], [], Counter(), Counter()
    for _ in range(rounds):
        wall, verdicts = run_floor(pool, jobs)
        fw.append(wall)
        fc = Counter(program_verdict(v) for v in verdicts)
        wall, results = run_arbiter_tasks(judged)
        ow.append(wall)
        oc = Counter(v.outcome.value for v in results)
    compare(f"GNU C++ ({len(programs)} programs, compiled, judge_many)", n_cases, fw, ow, fc, oc)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--skip-cpp", action="store_true")
    args = ap.parse_args()
    if not DATA.is_file():
        sys.exit(f"{DATA} not found (set ARBITER_SHARED)")
    # fresh interpreters (not forks of this one, whose heap grows with the judge's data)
    with multiprocessing.get_context("spawn").Pool(WORKERS, initializer=_warm) as pool:
        bench_python(pool, args.rounds)
        if not args.skip_cpp:
            with tempfile.TemporaryDirectory() as tmp:
                bench_cpp(pool, args.rounds, tmp)


if __name__ == "__main__":
    main()
