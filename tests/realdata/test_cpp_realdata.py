"""Issue 4, "Real data (must hold)": known-correct C++ programs compile with arbiter's toolchain
and are AC under the judge (``arbiter.judge.judge``) on their real tests.

- every GNU C++ row of ``realdata/codescope_codeopt``: both programs, every test, ``tokens``
  checker, ``-std=gnu++17 -O2 -DONLINE_JUDGE`` (row 83 only passes with ``-DONLINE_JUDGE``);
- ``realdata/pie_purdue/val.jsonl``: the first 5 pairs (issue: at least 3) of every problem (file order), ``src_code``
  and ``tgt_code``, on that problem's public tests from
  ``realdata/pie_public_tests/public_test_cases.tar.gz``, ``pie`` checker, default flags;
- the oracle seed rows (``seed/data/oracle_seed.jsonl``): their own compile command and limits,
  visible tests, ``trailing_whitespace`` checker (the seed's ``public_checker``).

Per-case limits here are generous (the programs are known correct; the machine is shared and
loaded): these tests check correctness, not speed. Compiles go through the compile cache, so a
rerun mostly runs tests. Judging is parallel (2 submissions at once).
"""

from __future__ import annotations

import json
import time
from collections import defaultdict

import pytest

from arbiter.checkers.spec import CheckerSpec
from arbiter.judge.encodings import codescope_row_to_suite, load_pie_tests, oracle_visible_suite
from arbiter.judge.judge import judge_many
from arbiter.judge.task import CompileSpec, Task
from arbiter.judge.verdict import Outcome
from arbiter.sandbox.limits import MiB, Limits

pytestmark = pytest.mark.slow
WORKERS = 2
PIE_PAIRS_PER_PROBLEM = 5
GENEROUS = Limits(cpu_seconds=10, wall_seconds=30, memory_bytes=1024 * MiB)


def judge_tasks(tasks: list[Task]) -> list[tuple[Task, object]]:
    started = time.monotonic()
    verdicts = list(judge_many(tasks, workers=WORKERS))
    print(f"\njudged {len(tasks)} submissions in {time.monotonic() - started:.1f} s")
    return list(zip(tasks, verdicts))


def failures(pairs) -> list[str]:
    out = []
    for task, v in pairs:
        if v.outcome is not Outcome.AC:
            out.append(f"{task.task_id}: {v.outcome.value} {v.reason} {v.compile_output[:300]}")
    return out


def test_codescope_cpp_rows_both_programs_ac(shared):
    rows = [json.loads(line) for line in
            (shared / "realdata" / "codescope_codeopt" / "code_optimization_data.jsonl").open()]
    cpp_rows = [r for r in rows if r["lang"] == "GNU C++"]
    assert cpp_rows
    tasks = []
    n_cases = 0
    for row in cpp_rows:
        suite = codescope_row_to_suite(row)
        n_cases += len(suite)
        for field in ("time_baseline_source_code", "memory_baseline_source_code"):
            tasks.append(Task(language="cpp", source=row[field], suite=suite, limits=GENEROUS,
                              checker=CheckerSpec(name="tokens"),
                              compile=CompileSpec(command="g++ -std=gnu++17 -O2 main.cpp -o main",
                                                  timeout_seconds=60, online_judge=True),
                              task_id=f"codescope:{row['id']}:{field}"))
    pairs = judge_tasks(tasks)
    bad = failures(pairs)
    cases_run = sum(v.total for _, v in pairs)
    print(f"codescope C++: {len(cpp_rows)} rows, {len(tasks)} programs, {cases_run} case runs "
          f"({n_cases} distinct tests), AC {len(tasks) - len(bad)}/{len(tasks)}")
    assert not bad, "\n".join(bad)
    for _, v in pairs:
        assert v.passed == v.total > 0
        assert v.toolchain and "-DONLINE_JUDGE" in v.toolchain["flags"]


def test_pie_val_pairs_ac_on_public_tests(shared):
    archive = shared / "realdata" / "pie_public_tests" / "public_test_cases.tar.gz"
    by_problem: dict[str, list[dict]] = defaultdict(list)
    available: dict[str, int] = defaultdict(int)
    with (shared / "realdata" / "pie_purdue" / "val.jsonl").open() as f:
        for line in f:
            row = json.loads(line)
            available[row["problem_id"]] += 1
            if len(by_problem[row["problem_id"]]) < PIE_PAIRS_PER_PROBLEM:
                by_problem[row["problem_id"]].append(row)
    # every pair when a problem has fewer than 5
    assert all(len(by_problem[p]) == min(PIE_PAIRS_PER_PROBLEM, n) for p, n in available.items())
    tasks = []
    for problem, rows in sorted(by_problem.items()):
        suite = load_pie_tests(archive, problem)
        assert len(suite) > 0
        for row in rows:
            for side in ("src", "tgt"):
                tasks.append(Task(language="cpp", source=row[f"{side}_code"], suite=suite, limits=GENEROUS,
                                  checker=CheckerSpec(name="pie"),
                                  compile=CompileSpec(command=None, timeout_seconds=60),
                                  task_id=f"pie:{problem}:{row[f'{side}_id']}:{side}"))
    pairs = judge_tasks(tasks)
    bad = failures(pairs)
    n_pairs = sum(len(r) for r in by_problem.values())
    print(f"PIE val: {len(by_problem)} problems, {n_pairs} pairs, {len(tasks)} programs, "
          f"AC {len(tasks) - len(bad)}/{len(tasks)}")
    assert not bad, "\n".join(bad)


def test_oracle_seed_rows_compile_with_their_command_and_pass_visible_tests(shared):
    rows = [json.loads(line) for line in (shared / "seed" / "data" / "oracle_seed.jsonl").open() if line.strip()]
    assert len(rows) == 5
    tasks = []
    for row in rows:
        comp, run = row["compile"], row["run"]
        tasks.append(Task(language="cpp", source=row["source_code"], suite=oracle_visible_suite(row),
                          limits=Limits(cpu_seconds=float(run["timeout_sec"]),
                                        memory_bytes=int(run["memory_mb"]) * MiB),
                          checker=CheckerSpec(name="trailing_whitespace"),
                          compile=CompileSpec(command=comp["command"], timeout_seconds=float(comp["timeout_sec"]),
                                              online_judge=False),  # the seed's exact command
                          task_id=row["task_id"]))
    pairs = judge_tasks(tasks)
    bad = failures(pairs)
    print(f"oracle seed: {len(rows)} rows, AC {len(rows) - len(bad)}/{len(rows)}")
    assert not bad, "\n".join(bad)
    for _, v in pairs:
        assert v.toolchain["flags"] == ["-std=c++20", "-O2", "-pipe"]
