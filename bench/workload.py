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

CPU per round is counted by cgroup (cpuacct groups of the bench's own, as ``bench/score.py``):
the floor's workers and every child they forked; the judge's process; its sandboxes (every
session, forker and case). ``--split K`` judges each Python program's cases as K submissions
(the same cases, K times the sessions): the change in CPU per added submission is the cost of
a session, what is left the cost of the cases.

Usage: ``python bench/workload.py [--rounds 3] [--skip-cpp] [--split 1]`` (``ARBITER_SHARED``:
the shared folder, default ``../shared``).
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


def split(programs: list, k: int) -> list:
    """Each program's cases as ``k`` submissions of about equal size (the same cases in all)."""
    out = []
    for label, src, cases, suite in programs:
        size = max(1, -(-len(cases) // k))
        out += [(f"{label}#{i}", src, cases[i:i + size], suite) for i in range(0, len(cases), size)]
    return out


# ---- CPU by cgroup --------------------------------------------------------------------------
class Cpu:
    """CPU seconds by cgroup: ``floor`` (the floor's workers, moved into it), ``judge`` (this
    process, moved into it, and the sandboxes made under it) and ``sandboxes`` (those alone).
    Zeros where there is no cpuacct hierarchy of our own (then ``how`` says why)."""

    def __init__(self, workers: list[int]):
        from score import _own_cpuacct  # (bench/score.py: this process's cpuacct group)

        self.name = f"workload-{os.getpid()}"
        own = _own_cpuacct()
        self.own = own
        root = own / self.name if own is not None else None
        try:
            if root is None:
                raise OSError("no cgroup v1 cpuacct hierarchy of its own")
            self.judge, self.floor = root / "judge", root / "floor"
            for group in (root, self.judge, self.floor):
                group.mkdir(exist_ok=True)
            (self.judge / "cgroup.procs").write_text("0")  # before any sandbox: theirs are made in it
            for pid in workers:
                (self.floor / "cgroup.procs").write_text(str(pid))
            self.how = f"cpuacct groups {self.name}/{{floor,judge}}"
        except OSError as exc:
            self.judge = self.floor = None
            self.how = f"no CPU by cgroup ({exc})"

    def seconds(self) -> dict[str, float]:
        if self.floor is None:
            return {"floor": 0.0, "judge": 0.0, "sandboxes": 0.0}
        return {"floor": _usage(self.floor), "judge": _usage(self.judge),
                "sandboxes": _usage(self.judge / "arbiter")}

    def close(self) -> None:
        from score import remove_group

        from arbiter.sandbox.pool import default_pool

        default_pool().close()  # (its sandboxes' groups are in ours)
        if self.judge is not None:
            (self.own / "cgroup.procs").write_text("0")  # back out, so the groups can go
            remove_group(self.name)


def _usage(group: Path) -> float:
    return int((group / "cpuacct.usage").read_text()) / 1e9 if group.is_dir() else 0.0


def spent(cpu: Cpu, before: dict[str, float]) -> dict[str, float]:
    return {k: v - before[k] for k, v in cpu.seconds().items()}


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
            floor_counts: Counter, ours_counts: Counter, cpus: list[dict[str, float]] | None = None) -> None:
    ratios = [f / o for f, o in zip(floor_walls, ours_walls)]
    print(f"== {name}: {n_cases} cases per round, {len(ratios)} interleaved rounds, load {os.getloadavg()[0]:.1f}")
    print(f"{'round':<6} {'floor cases/s':>14} {'arbiter cases/s':>16} {'arbiter/floor':>14}")
    for i, (f, o) in enumerate(zip(floor_walls, ours_walls)):
        print(f"{i + 1:<6} {n_cases / f:>14.0f} {n_cases / o:>16.0f} {f / o:>13.2f}x")
    print(f"median {n_cases / statistics.median(floor_walls):>14.0f} {n_cases / statistics.median(ours_walls):>16.0f} "
          f"{statistics.median(ratios):>13.2f}x")
    if cpus:
        med = {k: statistics.median(c[k] for c in cpus) for k in cpus[0]}
        print(f"CPU s per round (median): floor {med['floor']:.2f}, arbiter {med['judge']:.2f} (sandboxes "
              f"{med['sandboxes']:.2f}, judge process {med['judge'] - med['sandboxes']:.2f}), "
              f"floor/arbiter {med['floor'] / max(med['judge'], 1e-9):.2f}x")
    agree = "agree" if floor_counts == ours_counts else "DIFFER"
    print(f"program verdicts: floor {dict(floor_counts)}, arbiter {dict(ours_counts)} ({agree})")


def bench_python(pool, rounds: int, cpu: Cpu, k: int) -> None:
    programs = split(load("Python 3"), k)
    jobs = [("python", src, cases) for _, src, cases, _ in programs]
    n_cases = sum(len(c) for _, _, c, _ in programs)
    run_arbiter_python(programs[:2])  # warm-up: imports, the first sandboxes
    fw, ow, fc, oc, cpus = [], [], Counter(), Counter(), []
    for _ in range(rounds):
        before = cpu.seconds()
        wall, verdicts = run_floor(pool, jobs)
        fw.append(wall)
        fc = Counter(program_verdict(v) for v in verdicts)
        between = cpu.seconds()
        wall, results = run_arbiter_python(programs)
        ow.append(wall)
        oc = Counter(r["verdict"] for r in results)
        cpus.append(dict(spent(cpu, between), floor=between["floor"] - before["floor"]))
    subs = f"{len(programs)} programs" if k == 1 else f"{len(programs)} submissions: {k} per program"
    compare(f"Python 3 ({subs}, compute_score_batch)", n_cases, fw, ow, fc, oc, cpus)


def bench_cpp(pool, rounds: int, tmp: str, cpu: Cpu) -> None:
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
    fw, ow, fc, oc, cpus = [], [], Counter(), Counter(), []
    for _ in range(rounds):
        before = cpu.seconds()
        wall, verdicts = run_floor(pool, jobs)
        fw.append(wall)
        fc = Counter(program_verdict(v) for v in verdicts)
        between = cpu.seconds()
        wall, results = run_arbiter_tasks(judged)
        ow.append(wall)
        oc = Counter(v.outcome.value for v in results)
        cpus.append(dict(spent(cpu, between), floor=between["floor"] - before["floor"]))
    compare(f"GNU C++ ({len(programs)} programs, compiled, judge_many)", n_cases, fw, ow, fc, oc, cpus)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--skip-cpp", action="store_true")
    ap.add_argument("--split", type=int, default=1, help="each Python program's cases as this many submissions")
    args = ap.parse_args()
    if not DATA.is_file():
        sys.exit(f"{DATA} not found (set ARBITER_SHARED)")
    # fresh interpreters (not forks of this one, whose heap grows with the judge's data)
    with multiprocessing.get_context("spawn").Pool(WORKERS, initializer=_warm) as pool:
        cpu = Cpu([p.pid for p in pool._pool])  # before any sandbox starts: theirs are made in its group
        print(f"CPU counted by {cpu.how}")
        try:
            bench_python(pool, args.rounds, cpu, max(1, args.split))
            if not args.skip_cpp:
                with tempfile.TemporaryDirectory() as tmp:
                    bench_cpp(pool, args.rounds, tmp, cpu)
        finally:
            pool.terminate()
            pool.join()
            cpu.close()


if __name__ == "__main__":
    main()
