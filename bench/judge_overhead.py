"""Per-case and per-submission cost through ``judge()`` against the bare sandbox, side by side.

For a trivial Python program and a trivial C++ binary (compile cache warm before timing):

- bare sandbox: one :class:`Sandbox`, ``run_python`` / ``run`` per case (request sent ->
  Execution back), as ``bench/executor.py`` measures it;
- ``judge()``: one submission of N trivial cases; per case = the median gap between two
  consecutive ``on_case`` callbacks (run + classify + checker + CaseResult), and the whole
  submission's wall divided by N;
- per submission: ``judge()`` of a one-case task (build or cache hit, sandbox start, load, the
  case, close); for Python also ``compute_score`` of a one-case verl row (a trivial codegen
  response: the reward's extraction and suite parsing, then the same judge), five back to back
  each round, as verl's naive reward manager calls it.

- fork floor: no isolation at all, a warm interpreter (a fresh one, common modules imported)
  forking a child per case that runs the program (Python: ``exec`` of the compiled code; C++:
  ``execv`` of the binary) with stdin from a memfd and stdout into a pipe, as
  ``bench/workload.py``'s floor: what a case costs on this machine before any judge's work.

Rounds are interleaved (bare, judge, one-case, floor, bare, ...) so a busy machine hits all
alike; medians over rounds are printed with their ratio. Usage: ``python bench/judge_overhead.py [N] [rounds]``.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import statistics
import sys
import tempfile
import time

from arbiter.checkers.spec import CheckerSpec
from arbiter.judge.judge import judge
from arbiter.judge.task import Task
from arbiter.judge.testsuite import StdioCase, TestSuite
from arbiter.languages.cpp.compile import CompileSpec, compile_cpp
from arbiter.sandbox.limits import Limits
from arbiter.sandbox.sandbox import Sandbox

PY_SRC = "import sys\nprint(int(sys.stdin.readline()) + 1)\n"
CPP_SRC = "#include <cstdio>\nint main(){long x; if(scanf(\"%ld\",&x)!=1) return 1; printf(\"%ld\\n\", x+1);}\n"
SOURCES = {"python": PY_SRC, "cpp": CPP_SRC}


def suite(n: int) -> TestSuite:
    return TestSuite(tuple(StdioCase(str(i), f"{i}\n".encode(), (f"{i + 1}\n".encode(),)) for i in range(n)))


def bare(lang: str, n: int, binary: bytes) -> list[float]:
    """Seconds per case through the bare sandbox."""
    out = []
    files = {"main": binary} if lang == "cpp" else None
    with Sandbox(files=files, limits=Limits(cpu_seconds=2)) as sb:
        if lang == "python":
            assert sb.load_python(PY_SRC) is None
        for i in range(n):
            t = time.perf_counter()
            ex = sb.run_python(f"{i}\n".encode()) if lang == "python" else sb.run(["/prog/main"], f"{i}\n".encode())
            out.append(time.perf_counter() - t)
            assert ex.ok and ex.stdout == f"{i + 1}\n".encode(), ex
    return out


def judged(lang: str, n: int) -> tuple[list[float], float]:
    """(gaps between consecutive cases, whole judge() wall) for one N-case submission."""
    stamps: list[float] = []
    task = Task(lang, SOURCES[lang], suite(n), checker=CheckerSpec("tokens"))
    t = time.perf_counter()
    v = judge(task, on_case=lambda _: stamps.append(time.perf_counter()))
    wall = time.perf_counter() - t
    assert v.accepted, v.reason
    return [b - a for a, b in zip(stamps, stamps[1:])], wall


def one_case(lang: str) -> float:
    task = Task(lang, SOURCES[lang], suite(1), checker=CheckerSpec("tokens"))
    t = time.perf_counter()
    v = judge(task)
    assert v.accepted, v.reason
    return time.perf_counter() - t


def one_score() -> float:
    """Seconds of one ``compute_score`` call on a one-case Python row (a new program each call:
    a comment numbers it, so the step judge reuses no verdict)."""
    from arbiter.verl.reward import compute_score

    response = f"```python\n# response {next(_responses)}\n{PY_SRC}```"
    t = time.perf_counter()
    r = compute_score("codecontests", response, SCORE_TRUTH)
    assert r["score"] == 1.0, r
    return time.perf_counter() - t


_responses = iter(range(1 << 30))
SCORE_TRUTH = json.dumps({"inputs": ["1\n"], "outputs": ["2\n"]})


def floor(job: tuple[str, str, int]) -> list[float]:
    """In a warm worker: seconds per case of the unisolated fork floor (see the docstring)."""
    import workload  # bench/workload.py: the same floor

    lang, what, n = job
    run = workload._python_child(compile(what, "main.py", "exec")) if lang == "python" else workload._native_child(what)
    out = []
    for i in range(n):
        t = time.perf_counter()
        verdict = workload._floor_case(run, f"{i}\n".encode(), (f"{i + 1}\n".encode(),))
        out.append(time.perf_counter() - t)
        assert verdict == "AC", verdict
    return out


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 200
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    comp = compile_cpp(CPP_SRC, CompileSpec())
    assert comp.ok, comp.message
    for lang in SOURCES:
        one_case(lang)  # warm: compile cache, imports, root layout
    one_score()
    res: dict[str, dict[str, list[float]]] = {lang: {"bare": [], "gap": [], "judge": [], "sub": [], "floor": [],
                                                     "score": []} for lang in SOURCES}
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import workload

    with tempfile.TemporaryDirectory() as tmp, \
            multiprocessing.get_context("spawn").Pool(1, initializer=workload._warm) as pool:
        binary = os.path.join(tmp, "main")
        with open(binary, "wb") as f:
            f.write(comp.binary)
        os.chmod(binary, 0o755)
        jobs = {"python": ("python", PY_SRC, n), "cpp": ("cpp", binary, n)}
        for _ in range(rounds):
            for lang in SOURCES:
                r = res[lang]
                r["bare"].append(statistics.median(bare(lang, n, comp.binary)))
                gaps, wall = judged(lang, n)
                r["gap"].append(statistics.median(gaps))
                r["judge"].append(wall / n)
                r["sub"].append(statistics.median(one_case(lang) for _ in range(5)))
                if lang == "python":
                    r["score"].append(statistics.median(one_score() for _ in range(5)))
                r["floor"].append(statistics.median(pool.apply(floor, (jobs[lang],))))
    print(f"judge() overhead: {n} trivial cases per submission, {rounds} interleaved rounds, "
          f"{os.cpu_count()} cores, load {os.getloadavg()[0]:.2f}")
    print(f"{'program':<8} {'bare ms/case':>13} {'judge() ms/case':>16} {'judge() wall/N ms':>18} "
          f"{'ratio':>6} {'one-case judge() ms':>20} {'compute_score ms':>17} {'fork floor ms/case':>19} "
          f"{'judge/floor':>12}")
    med = lambda xs: statistics.median(xs) * 1e3  # noqa: E731
    for lang in SOURCES:
        r = res[lang]
        score = f"{med(r['score']):>17.1f}" if r["score"] else f"{'-':>17}"
        print(f"{lang:<8} {med(r['bare']):>13.2f} {med(r['gap']):>16.2f} {med(r['judge']):>18.2f} "
              f"{med(r['gap']) / med(r['bare']):>5.2f}x {med(r['sub']):>20.1f} {score} {med(r['floor']):>19.2f} "
              f"{med(r['gap']) / med(r['floor']):>11.2f}x")
    print("target: judge() ms/case <= 2 for both (cpp: a compile cache hit), at the fork floor (judge/floor <= 1); "
          "one-case compute_score <= 5 ms p50; the fork floor is what no judge that starts a process per case "
          "goes below here")


if __name__ == "__main__":
    main()
