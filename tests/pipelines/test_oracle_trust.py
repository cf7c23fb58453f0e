"""How far ``oracle verify``'s accepted rows can be trusted, on real programs in the real sandbox:

- a correct AVX-512 answer, which valgrind cannot run, is measured with interleaved wall/CPU time (never
  ``MEASURE_FAILED``) and the record says which method produced the figures and why;
- rows accepted on visible tests only, or without the speed gate, are counted and warned about in ``report.json``;
  so are seed tasks a partial hidden-tests file leaves uncovered;
- hidden tests are checked against the seed's ``source_code`` (correct by contract): cases it fails are dropped as
  bad data (counted, warned, noted in the rows), so correct answers are never rejected for them.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from arbiter.datasets.oracle import load_seeds
from arbiter.pipelines.oracle.verify import VerifyOptions, verify_returns
from arbiter.datasets.io import read_jsonl
from arbiter.timing.instructions import valgrind_available

pytestmark = pytest.mark.skipif(not valgrind_available(), reason="valgrind is not installed")

REPO = Path(__file__).resolve().parents[2]
DATA = REPO / "data/oracle"
SEEDS = load_seeds(DATA / "seeds.jsonl").by_id
DEMO = {r["demo_id"]: r for r in map(json.loads, (DATA / "returns.jsonl").read_text().splitlines())}
HIDDEN = json.loads((DATA / "hidden_tests.json").read_text())
T1, T2 = "dummy_pie_cpp_0001_sum_even", "dummy_pie_cpp_0002_prefix_queries"


def rows(path: Path) -> list[dict]:
    return list(read_jsonl(path)) if path.exists() else []


def write_returns(path: Path, demo_ids: list[str], extra: list[dict] = ()) -> Path:
    path.write_text("".join(json.dumps(DEMO[d]) + "\n" for d in demo_ids)
                    + "".join(json.dumps(r) + "\n" for r in extra))
    return path


def answer_row(task_id: str, code: str, demo_id: str) -> dict:
    msgs = [{"role": m.role, "content": m.content} for m in SEEDS[task_id].messages]
    content = f"<reasoning>One pass, vectorised.</reasoning>\n```cpp\n{code}```"
    claim = {"compile_ok": True, "all_visible_tests_pass": True, "all_hidden_tests_pass": None, "score": 1.0,
             "runtime_ms": None, "notes": "Verified locally by oracle writer."}
    return {"task_id": task_id, "messages": msgs + [{"role": "assistant", "content": content}],
            "verification": claim, "demo_id": demo_id}


def _cpu_flags() -> set[str]:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("flags"):
                    return set(line.split(":", 1)[1].split())
    except OSError:
        pass
    return set()


# a correct O(n) answer to task 0001 whose summing loop GCC vectorises with AVX-512 (EVEX, masked adds)
AVX512_SUM_EVEN = '''#pragma GCC target("avx512f,avx512bw,avx512vl")
#pragma GCC optimize("O3,unroll-loops")
#include <iostream>
#include <vector>
using namespace std;

int main() {
    ios::sync_with_stdio(false);
    cin.tie(nullptr);
    int n;
    cin >> n;
    vector<long long> a(n);
    for (auto &x : a) cin >> x;
    long long ans = 0;
    for (int i = 0; i < n; i++) ans += (a[i] % 2 == 0) ? a[i] : 0;
    cout << ans << "\\n";
    return 0;
}
'''
AVX2_SUM_EVEN = AVX512_SUM_EVEN.replace('target("avx512f,avx512bw,avx512vl")', 'target("avx2")')


@pytest.mark.skipif(not {"avx512f", "avx512bw", "avx512vl"} <= _cpu_flags(),
                    reason="this CPU lacks avx512f/avx512bw/avx512vl")
def test_avx512_answer_is_measured_with_wall_time_not_rejected(tmp_path):
    """valgrind 3.19 dies with SIGILL on AVX-512; the same binary passed every test natively. The row must be
    judged on figures from the wall/CPU-time method (source and answer interleaved), not rejected MEASURE_FAILED."""
    returns = tmp_path / "returns.jsonl"
    returns.write_text(json.dumps(answer_row(T1, AVX512_SUM_EVEN, "avx512")) + "\n"
                       + json.dumps(answer_row(T1, AVX2_SUM_EVEN, "avx2")) + "\n")
    out = tmp_path / "out"
    run = verify_returns(DATA / "seeds.jsonl", returns, out, hidden=DATA / "hidden_tests.json",
                         generators=DATA / "generators",
                         options=VerifyOptions(gen_plan="1:2,3:1", measure_cases=1, largest_fraction=1.0,
                                               wall_repeats=3, workers=1))
    assert run.report["counts"]["errors"] == 0
    by_demo = {r["demo_id"]: r for r in rows(out / "verified.jsonl")}
    rejected = {r["demo_id"]: r["reasons"] for r in rows(out / "rejected.jsonl")}
    assert set(by_demo) == {"avx512", "avx2"}, rejected
    v = by_demo["avx512"]["verification"]
    m = v["measurement"]
    assert (m["method"], m["unit"], m["requested_method"]) == ("wall", "seconds", "cycles")  # cycles: the default
    assert m["fallback_reason"] == "valgrind cannot decode the program's instructions (AVX-512)"
    assert m["extra"]["meter_failures"][0]["status"] == "unsupported_by_meter"
    assert "measured with wall/CPU time instead of cycles" in v["notes"]
    # the gate is computed from those figures: O(n^2) source vs O(n) answer on the large generated test
    assert v["speed_gate"] == "passed" and v["largest_speedup"] > 1 and v["cycles"] is None is v["instructions"]
    assert m["measured_cases"] == ["gen_s3_0"] and m["cases"][0]["a"] > m["cases"][0]["b"]
    # the same program for AVX2 is measured by valgrind (cycles) as before
    m2 = by_demo["avx2"]["verification"]["measurement"]
    assert m2["method"] == "cycles" and m2["fallback_reason"] is None
    assert run.report["counts"]["measure_fallbacks"] == 1
    assert any("wall/CPU time instead of cycles" in w for w in run.report["warnings"])
    row = next(r for r in run.report["rows"] if r["demo_id"] == "avx512")
    assert row["measure_fallback"] == m["fallback_reason"]
    # every speedup is reported with its unit, and the fallback's seconds are flagged, never mixed silently
    rep = run.report
    assert {r["demo_id"]: r["unit"] for r in rep["rows"]} == {"avx512": "seconds", "avx2": "cycles"}
    assert rep["counts"]["speedup_units"] == {"cycles": 1, "seconds": 1}
    best = rep["tasks"][T1]["best"]
    assert best["units"] == ["cycles", "seconds"] and best["unit"] in ("cycles", "seconds")
    assert rep["counts"]["tasks_best_across_units"] == 1
    assert any("measured in different units" in w and T1 in w for w in rep["warnings"]), rep["warnings"]
    from io import StringIO

    from rich.console import Console

    from arbiter.cli.oracle_cmd import print_report

    buf = StringIO()
    print_report(rep, Console(file=buf, width=250, color_system=None))
    text = buf.getvalue()
    line = next(ln for ln in text.splitlines() if "avx512" in ln and "ACCEPTED" in ln)
    assert "seconds*" in line  # the row table's unit column flags the fallback row
    assert "speedups in seconds (wall/CPU fallback: not comparable with cycles)" in text
    assert "(ranked across cycles and seconds)" in text  # the best-answer table


# a correct answer to task 0001 that does the work in a forked child, which the parent waits for without reaping
# it (so the child's CPU is never charged to the measured process)
FORK_SUM_EVEN = '''#include <iostream>
#include <unistd.h>
#include <sys/wait.h>
using namespace std;

int main() {
    pid_t p = fork();
    if (p == 0) {
        int n;
        cin >> n;
        long long ans = 0;
        for (int i = 0; i < n; i++) { long long x; cin >> x; if (x % 2 == 0) ans += x; }
        cout << ans << "\\n" << flush;
        _exit(0);
    }
    if (p > 0) { siginfo_t info; waitid(P_PID, p, &info, WEXITED | WNOWAIT); }
    return 0;
}
'''


def test_answer_that_creates_processes_is_rejected_as_unmeasurable_not_as_wrong(tmp_path):
    """The answer passes every test natively (its child prints the right sums), but measured runs refuse new
    processes: the row is rejected with measure:CREATES_PROCESSES and the reason, never a wrong-output failure
    and never a speedup."""
    returns = tmp_path / "returns.jsonl"
    returns.write_text(json.dumps(answer_row(T1, FORK_SUM_EVEN, "fork")) + "\n")
    out = tmp_path / "out"
    run = verify_returns(DATA / "seeds.jsonl", returns, out, hidden=DATA / "hidden_tests.json",
                         options=VerifyOptions(measure_cases=1, workers=1))
    assert run.report["counts"]["errors"] == 0 and rows(out / "verified.jsonl") == []
    (rec,) = [r for r in rows(out / "rejected.jsonl") if r["kind"] == "return"]
    v = rec["verification"]
    assert v["all_visible_tests_pass"] is True and v["all_hidden_tests_pass"] is True  # correct natively
    assert rec["stage"] == "measure" and [r["code"] for r in rec["reasons"]] == ["CREATES_PROCESSES"]
    assert "program creates processes; its cost cannot be measured" in rec["reasons"][0]["message"]
    assert v["speedup"] is None and v["largest_speedup"] is None and v["score"] == 0.0
    assert v["measurement"]["failures"][0]["status"] == "creates_processes"
    assert run.report["by_reason"] == {"measure:CREATES_PROCESSES": 1}


def test_visible_only_acceptances_are_counted_and_warned(tmp_path):
    """Without --hidden/--generators the card's verdicts stand (the known-wrong rows pass the visible tests and
    are accepted), but report.json says loudly how many rows rest on visible tests only and skipped the speed
    gate, and recommends --hidden/--generators."""
    picked = ["good-0001", "wa-0002-hidden-int-prefix", "wa-0003-hidden-int-overflow", "slow-0001"]
    out = tmp_path / "out"
    run = verify_returns(DATA / "seeds.jsonl", write_returns(tmp_path / "r.jsonl", picked), out,
                         options=VerifyOptions(measure_cases=1))
    rep = run.report
    assert rep["counts"]["accepted"] == 4  # verdicts unchanged: the card accepts what passes the visible tests
    assert rep["counts"]["accepted_visible_only"] == 4
    assert rep["counts"]["accepted_speed_gate_not_applied"] == 4
    assert sorted(r["line"] for r in rep["accepted_visible_only"]) == [1, 2, 3, 4]
    assert any(w.startswith("4 of 4 accepted row(s) were checked on the seed's visible tests only")
               and "--hidden" in w and "--generators" in w for w in rep["warnings"]), rep["warnings"]
    assert any(w.startswith("4 of 4 accepted row(s) skipped the speed gate") for w in rep["warnings"])
    assert all(r["visible_only"] for r in rep["rows"])
    assert rep["coverage"]["hidden_given"] is False and len(rep["coverage"]["tasks_visible_only"]) == 5
    on_disk = json.loads((out / "report.json").read_text())
    assert on_disk["warnings"] == rep["warnings"] and on_disk["counts"] == rep["counts"]


def test_partial_hidden_file_counts_the_tasks_it_leaves_uncovered(tmp_path):
    hidden = tmp_path / "hidden.json"
    hidden.write_text(json.dumps({T1: HIDDEN[T1]}))
    out = tmp_path / "out"
    run = verify_returns(DATA / "seeds.jsonl", write_returns(tmp_path / "r.jsonl", ["good-0001", "good-0002"]),
                         out, hidden=hidden, options=VerifyOptions(measure_cases=1))
    rep = run.report
    assert rep["counts"]["accepted"] == 2 and rep["counts"]["accepted_visible_only"] == 1  # good-0002: task 0002
    assert rep["coverage"]["tasks_without_hidden"] == sorted(set(SEEDS) - {T1})
    assert any(w.startswith("the hidden-tests file leaves 4 of 5 seed task(s) without (usable) hidden tests")
               for w in rep["warnings"]), rep["warnings"]
    assert any(w.startswith("4 of 5 seed task(s) have neither hidden nor generated tests") for w in rep["warnings"])


def test_hidden_cases_the_source_fails_are_dropped_not_blamed_on_answers(tmp_path):
    """A wrong expected output in a hidden test would reject every correct answer as tests:WA. The seed's source
    is correct by contract, so the hidden cases it fails are dropped (counted, warned, noted in the rows); a task
    whose hidden cases are all bad has no hidden suite. The check is cached per task and hidden cases."""
    bad = json.loads(json.dumps({T1: HIDDEN[T1], T2: HIDDEN[T2]}))
    bad[T1][1]["stdout"] = "999\n"  # hidden_2: a wrong expected output
    for case in bad[T2]:
        case["stdout"] = "0\n"  # every hidden case of task 0002 wrong
    hidden = tmp_path / "hidden.json"
    hidden.write_text(json.dumps(bad))
    cache = tmp_path / "cache"
    out = tmp_path / "out"
    run = verify_returns(DATA / "seeds.jsonl", write_returns(tmp_path / "r.jsonl", ["good-0001", "good-0002",
                                                                                   "wa-0002-hidden-int-prefix"]),
                         out, hidden=hidden, options=VerifyOptions(measure_cases=1, cache_dir=cache))
    rep = run.report
    accepted = {r["demo_id"]: r["verification"] for r in rows(out / "verified.jsonl")}
    assert set(accepted) >= {"good-0001", "good-0002"}, [r["reasons"] for r in rows(out / "rejected.jsonl")]
    v1 = accepted["good-0001"]
    assert v1["all_hidden_tests_pass"] is True and v1["hidden_tests_dropped"] == [HIDDEN[T1][1]["name"]]
    assert v1["tests"]["hidden"]["total"] == len(HIDDEN[T1]) - 1
    assert "hidden test(s) dropped as bad data" in v1["notes"]
    v2 = accepted["good-0002"]
    assert v2["all_hidden_tests_pass"] is None  # all bad: the hidden suite is treated as absent
    assert "treated as absent" in v2["notes"]
    h1, h2 = rep["hidden_checks"][T1], rep["hidden_checks"][T2]
    assert [d["name"] for d in h1["dropped"]] == [HIDDEN[T1][1]["name"]] and h1["dropped"][0]["outcome"] == "WA"
    assert h1["kept"] == len(HIDDEN[T1]) - 1 and not h1["all_bad"]
    assert h2["all_bad"] and h2["kept"] == 0 and len(h2["dropped"]) == len(HIDDEN[T2])
    n_bad = 1 + len(HIDDEN[T2])
    assert any(w.startswith(f"{n_bad} hidden test(s) of 2 task(s) dropped as bad data") for w in rep["warnings"])
    assert any(w.startswith("every hidden test of 1 task(s) is bad") and T2 in w for w in rep["warnings"])
    assert T2 in rep["coverage"]["tasks_without_hidden"]
    # cached per task + hidden cases: a second run (new output folder) reads the checks back
    again = verify_returns(DATA / "seeds.jsonl", write_returns(tmp_path / "r2.jsonl", ["good-0001"]),
                           tmp_path / "out2", hidden=hidden, options=VerifyOptions(measure_cases=1, cache_dir=cache))
    assert again.report["hidden_checks"][T1]["cached"] is True
    assert again.report["hidden_checks"][T1]["dropped"] == h1["dropped"]


def test_the_source_returned_unchanged_is_not_an_optimized_answer(tmp_path):
    """The seed's source_code returned as the answer was accepted at exactly 1.00x: the meter is deterministic
    and the default gate is "not slower" (red team, oracle). It is speed:UNCHANGED_SOURCE now, whitespace aside;
    the source with one real change is measured as before."""
    source = SEEDS[T1].source_code
    same = answer_row(T1, "\n".join(" ".join(line.split()) for line in source.splitlines()) + "\n", "unchanged")
    out = tmp_path / "out"
    run = verify_returns(DATA / "seeds.jsonl", write_returns(tmp_path / "r.jsonl", [], [same]), out,
                         hidden=DATA / "hidden_tests.json", options=VerifyOptions(measure_cases=1))
    assert run.report["counts"]["accepted"] == 0 and not rows(out / "sft.jsonl")
    (rec,) = rows(out / "rejected.jsonl")
    assert rec["stage"] == "speed" and [r["code"] for r in rec["reasons"]] == ["UNCHANGED_SOURCE"]
