"""The re-timing reward (:mod:`arbiter.rewards.pie`) on real C++ programs in the real sandbox, measured
with valgrind (instructions) and interleaved repeats (wall), plus the rank statistics of :mod:`pie_eval`.

Problem used throughout ("divisor sum", PIE layout ``<problem>/input.N.txt``): given n, print
``sum_{i=1..n} floor(n / i)``. SLOW does n divisions (O(n)); FAST uses the O(sqrt n) block trick. Expected outputs
are computed here in Python from the definition.
"""

from __future__ import annotations

import math
import random
import sys
from pathlib import Path

import pytest

from arbiter.checkers.spec import CheckerSpec
from arbiter.datasets.pie.errors import PieRowError
from arbiter.datasets.pie.rows import PiePair, parse_row
from arbiter.judge.judge import judge
from arbiter.judge.task import Task
from arbiter.judge.testsuite import StdioCase, TestSuite
from arbiter.judge.verdict import CaseResult, Outcome
from arbiter.pipelines.pie.stats import rankdata, reversals, spearman
from arbiter.datasets.pie.cases import bad_apple_limit, case_number, costliest_cases
from arbiter.datasets.pie.source import PieSource, as_source
from arbiter.rewards.pie.measure import SrcCountCache
from arbiter.rewards.pie.options import DEFAULT_LIMITS
from arbiter.rewards.pie.reward import pie_reward
from arbiter.rewards.pie.transforms import DEFAULT_LOG_FAILURE_PENALTY
from arbiter.sandbox.limits import Limits
from arbiter.timing.instructions import valgrind_available

from test_pie_rows import make_pairs_raw  # noqa: E402  (the card-shaped gem5 row builder)

needs_valgrind = pytest.mark.skipif(not valgrind_available(), reason="valgrind is not installed")

SLOW = r"""
#include <cstdio>
int main() {
    long long n; if (scanf("%lld", &n) != 1) return 1;
    long long s = 0;
    for (long long i = 1; i <= n; i++) s += n / i;
    printf("%lld\n", s);
}
"""
FAST = r"""
#include <cstdio>
int main() {
    long long n; if (scanf("%lld", &n) != 1) return 1;
    long long s = 0;
    for (long long i = 1; i <= n; ) { long long q = n / i, j = n / q; s += q * (j - i + 1); i = j + 1; }
    printf("%lld\n", s);
}
"""
WRONG = r"""
#include <cstdio>
int main() { long long n; scanf("%lld", &n); printf("%lld\n", n); }
"""
EXTRA_LINE = FAST.replace('printf("%lld\\n", s);', 'printf("%lld\\nextra\\n", s);')
NOT_CPP = "int main( {"
SPIN = r"""
#include <cstdio>
int main() { long long n; scanf("%lld", &n); volatile long long x = 0; while (true) x++; }
"""
# correct except it spins forever on large inputs: the source TLEs on those (PIE: "correct but too slow")
SLOW_TLE_BIG = SLOW.replace("long long s = 0;", "long long s = 0; if (n > 2000000) { volatile int x = 0; while (1) x++; }")
# wrong only on n == 10
SLOW_WRONG_ON_10 = SLOW.replace('printf("%lld\\n", s);', 'printf("%lld\\n", n == 10 ? s + 1 : s);')

NS = [3_000_000, 10, 123_456, 7, 999_999, 1]
P = "p09001"


def divisor_sum(n: int) -> int:
    s, i = 0, 1
    while i <= n:
        q = n // i
        j = n // q
        s += q * (j - i + 1)
        i = j + 1
    return s


def write_problem(root: Path, problem: str, ns: list[int]) -> Path:
    d = root / problem
    d.mkdir(parents=True, exist_ok=True)
    for i, n in enumerate(ns):
        (d / f"input.{i}.txt").write_text(f"{n}\n")
        (d / f"output.{i}.txt").write_text(f"{divisor_sum(n)}\n")
    return root


@pytest.fixture(scope="module")
def tests_root(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("pie_tests")
    write_problem(root, P, NS)
    write_problem(root, "p09003", list(range(1, 9)))  # 8 small cases for the bad-apple rule
    f = root / "p09002"  # float output: 1/n
    f.mkdir()
    (f / "input.0.txt").write_text("3\n")
    (f / "output.0.txt").write_text("0.333333\n")
    return root


def src(code: str = SLOW, problem: str = P, usable=None) -> PieSource:
    return PieSource(problem_id=problem, src_id="s1", src_code=code,
                     usable_case_ids=None if usable is None else tuple(usable))


# --------------------------------------------------------------------------------------------- pure helpers


def test_rankdata_averages_ties():
    assert rankdata([10, 20, 20, 5]) == [2.0, 3.5, 3.5, 1.0]
    assert rankdata([3, 3, 3]) == [2.0, 2.0, 2.0]
    with pytest.raises(ValueError):
        rankdata([1.0, math.nan])


def test_spearman_hand_computed_with_ties():
    # x ranks 1..5; y = [5, 6, 7, 8, 7] -> ranks [1, 2, 3.5, 5, 3.5]. Centred: dx = [-2,-1,0,1,2],
    # dy = [-2,-1,0.5,2,0.5]; sum dx*dy = 4+1+0+2+1 = 8; sum dx^2 = 10; sum dy^2 = 4+1+0.25+4+0.25 = 9.5
    # rho = 8 / sqrt(10 * 9.5) = 8 / sqrt(95)
    assert spearman([1, 2, 3, 4, 5], [5, 6, 7, 8, 7]) == pytest.approx(8 / math.sqrt(95))
    assert spearman([1, 2, 3], [30, 20, 10]) == pytest.approx(-1.0)
    assert spearman([1, 2, 3], [1.5, 9.0, 100.0]) == pytest.approx(1.0)  # ranks only: monotone is 1
    assert spearman([1, 2, 3], [4, 4, 4]) is None  # constant side: undefined
    assert spearman([1], [2]) is None
    with pytest.raises(ValueError):
        spearman([1, 2], [1])


def test_reversals_need_opposite_directions():
    pairs = [("a", 2.0, 3.0), ("b", 1.5, 0.8), ("c", 0.5, 1.2), ("d", 1.02, 0.99), ("e", 0.9, 0.95)]
    assert [n for n, _, _ in reversals(pairs)] == ["b", "c", "d"]
    assert [n for n, _, _ in reversals(pairs, margin=0.05)] == ["b", "c"]


def test_bad_apple_limit_and_case_number():
    assert bad_apple_limit(8) == 5 and bad_apple_limit(100) == 5 and bad_apple_limit(200) == 10  # max(5, 5 %)
    assert case_number("input.12") == 12 and case_number("7") == 7 and case_number("sample") is None


def test_costliest_cases_ranks_by_source_cost_only_ac_ties_by_order():
    rs = [CaseResult("a", Outcome.AC, cpu_seconds=0.1), CaseResult("b", Outcome.AC, cpu_seconds=0.5),
          CaseResult("c", Outcome.TLE, cpu_seconds=9.0), CaseResult("d", Outcome.AC, cpu_seconds=0.0),
          CaseResult("e", Outcome.AC, cpu_seconds=0.5), CaseResult("f", Outcome.AC, cpu_seconds=0.0)]
    assert costliest_cases(rs, 1) == ["b"]                 # tie b/e -> suite order; c is not AC
    assert costliest_cases(rs, 2, 1) == ["b", "d", "e"]    # + the cheapest (d before f), suite order kept
    assert costliest_cases(rs, 9, 9) == ["a", "b", "d", "e", "f"]
    with pytest.raises(ValueError):
        costliest_cases(rs, -1)


def test_as_source_accepts_rows_of_every_kind():
    pair = PiePair(problem_id="p1", src_id="s1", tgt_id="t1", src_code="a", tgt_code="b", speedup=2.0)
    s = as_source(pair)
    assert (s.problem_id, s.src_id, s.tgt_id, s.usable_case_ids, s.dataset_speedup) == ("p1", "s1", "t1", None, 2.0)
    assert s.tgt_code == "b"  # the target is checked for correctness (a dataset defect), never timed
    row = parse_row(make_pairs_raw())
    s = as_source(row)
    assert s.usable_case_ids == (0, 1, 2, 4) and s.dataset_speedup == pytest.approx(2200 / 600)
    assert s.tgt_code == row.tgt_code
    assert as_source(make_pairs_raw()).usable_case_ids == (0, 1, 2, 4)  # raw gem5 mapping
    s = as_source({"problem_id": "p9", "src_id": "s9", "src_code": "x", "usable_case_ids": "[3, 1]"})
    assert s.usable_case_ids == (3, 1) and s.tgt_code is None
    assert as_source({"problem_id": "p9", "src_id": "s9", "src_code": "x", "tgt_code": "y"}).tgt_code == "y"
    with pytest.raises(PieRowError) as e:
        as_source({"problem_id": "p9", "src_code": ""})
    assert "src_id" in str(e.value) and "src_code" in str(e.value)
    with pytest.raises(TypeError):
        as_source(42)


# --------------------------------------------------------------------------------------------- rewards


@needs_valgrind
def test_correct_faster_candidate_gets_its_measured_speedup(tests_root):
    cache = SrcCountCache()
    r = pie_reward(src(), FAST, tests_root, cache=cache)
    assert r.outcome == "AC" and r.correct and r.scored
    assert r.cases == [f"input.{i}" for i in range(len(NS))] and r.src_dropped == [] and r.n_pool == len(NS)
    assert r.unit == "cycles" and r.method == "cycles"  # the default measure
    per = {c["case"]: c for c in r.per_case}
    assert r.src_total == sum(c["src"] for c in r.per_case) and r.candidate_total == sum(c["candidate"] for c in r.per_case)
    assert r.speedup == pytest.approx(r.src_total / r.candidate_total) and r.reward == r.speedup  # raw
    assert r.speedup > 3  # 3M divisions against ~3.5k; the start-up of six runs weighs more in cycles
    assert per["input.0"]["src"] > 10 * per["input.3"]["src"]  # the big input carries the work
    # the card's ceiling: mean per-case src cycles / startup floor (cycles of int main() {}); no candidate beats it
    assert r.startup_floor and r.ceiling_speedup == pytest.approx(r.src_total / len(NS) / r.startup_floor)
    assert r.speedup <= r.ceiling_speedup and r.low_headroom is False
    assert r.fingerprint and r.toolchain["fingerprint"] == r.fingerprint and "-O2" in r.toolchain["flags"]
    assert r.meter["meter"] == "valgrind-arbiter-count-cycles" and r.verdict["outcome"] == "AC"
    assert r.meter["cycle_model"]["name"] == "gem5-skylake-se"
    # a second candidate for the same source reuses the source's counts, figures unchanged
    r2 = pie_reward(src(), FAST, tests_root, cache=cache, transform="log")
    assert r2.src_cache_hits == len(NS) and r.src_cache_hits == 0
    assert r2.per_case == r.per_case and r2.reward == pytest.approx(math.log(r.speedup))
    # instructions on request: another unit, another floor, and never the cached cycles of the source
    ri = pie_reward(src(), FAST, tests_root, cache=cache, method="instructions")
    assert (ri.method, ri.unit, ri.meter["meter"]) == ("instructions", "instructions", "valgrind-arbiter-count")
    assert ri.src_cache_hits == 0 and ri.startup_floor != r.startup_floor
    assert ri.speedup > 5 and ri.speedup > r.speedup  # instructions discount start-up against the work
    assert ri.ceiling_speedup == pytest.approx(ri.src_total / len(NS) / ri.startup_floor)


@needs_valgrind
def test_transforms_and_their_failure_rewards(tests_root):
    ok = pie_reward(src(), FAST, tests_root, transform="pie_floor")
    assert ok.reward == pytest.approx(max(ok.speedup, 1.0))
    assert pie_reward(src(), FAST, tests_root, transform="opt_indicator").reward == 1.0
    clipped = pie_reward(src(), FAST, tests_root, transform="clipped", transform_params={"lo": 0.5, "hi": 2.0})
    assert clipped.reward == 2.0 and clipped.transform_params == {"lo": 0.5, "hi": 2.0}
    # the source against itself: same executable, same counts -> exactly 1.0
    same = pie_reward(src(), SLOW, tests_root, transform="opt_indicator")
    assert same.speedup == 1.0 and same.reward == 0.0
    wrong = {t: pie_reward(src(), WRONG, tests_root, transform=t).reward
             for t in ("raw", "log", "pie_floor", "opt_indicator")}
    assert wrong == {"raw": 0.0, "log": DEFAULT_LOG_FAILURE_PENALTY, "pie_floor": 1.0, "opt_indicator": 0.0}
    w = pie_reward(src(), WRONG, tests_root, transform="clipped", transform_params={"lo": 0.25})
    assert (w.outcome, w.reward, w.speedup, w.per_case) == ("WA", 0.25, None, [])


@needs_valgrind
def test_failing_candidates_get_the_failure_reward_with_their_verdict(tests_root):
    ce = pie_reward(src(), NOT_CPP, tests_root)
    assert (ce.outcome, ce.reward, ce.speedup) == ("CE", 0.0, None)
    extra = pie_reward(src(), EXTRA_LINE, tests_root)  # extra lines fail (PIE's zip would ignore them)
    assert extra.outcome == "WA" and extra.reward == 0.0 and "line" in extra.reason
    tle = pie_reward(src(), SPIN, tests_root, limits=Limits(cpu_seconds=1.0), transform="log")
    assert tle.outcome == "TLE" and tle.reward == DEFAULT_LOG_FAILURE_PENALTY


@needs_valgrind
def test_pie_comparator_accepts_floats_within_1e3(tests_root):
    prog = '#include <cstdio>\nint main(){{int n; scanf("%d",&n); printf("{fmt}\\n", 1.0/n);}}'
    s = src(prog.format(fmt="%.6f"), problem="p09002")
    assert pie_reward(s, prog.format(fmt="%.4f"), tests_root).outcome == "AC"   # |0.3333-0.333333| < 1e-3
    assert pie_reward(s, prog.format(fmt="%.2f"), tests_root).outcome == "WA"   # |0.33-0.333333| > 1e-3


@needs_valgrind
def test_source_tle_cases_are_dropped_and_reported(tests_root):
    # the source spins on n > 2e6 (case input.0): "correct but too slow" is dropped like the card's wall filter
    r = pie_reward(src(SLOW_TLE_BIG), FAST, tests_root, limits=Limits(cpu_seconds=1.0))
    assert r.outcome == "AC"
    assert r.src_dropped == [{"case": "input.0", "outcome": "TLE", "detail": r.src_dropped[0]["detail"]}]
    assert r.cases == [f"input.{i}" for i in range(1, len(NS))] and r.n_pool == len(NS)


def test_source_wrong_results_are_dataset_defects_never_dropped(tests_root):
    # a row whose source is wrong on 1 of 6 cases: the row is broken, not the candidate, and no speedup is made
    one = pie_reward(src(SLOW_WRONG_ON_10), FAST, tests_root)
    assert one.outcome == "DATASET_DEFECT" and one.reward is None and one.speedup is None and one.verdict is None
    assert [(d["program"], d["id"], d["case"], d["outcome"]) for d in one.dataset_defects] == [
        ("source", "s1", "input.1", "WA")]
    assert one.src_dropped == [] and "the source (s1) fails 1 of the row's cases: input.1 WA" in one.reason
    # WRONG prints n: right only for n = 1, wrong on 7 of 8 (the card's bad apple)
    bad = pie_reward(src(WRONG, problem="p09003"), FAST, tests_root)
    assert bad.outcome == "DATASET_DEFECT" and bad.reward is None and len(bad.dataset_defects) == 7
    assert {d["outcome"] for d in bad.dataset_defects} == {"WA"} and "fails 7 of" in bad.reason
    nocompile = pie_reward(src(NOT_CPP), FAST, tests_root)
    assert nocompile.outcome == "DATASET_DEFECT" and nocompile.reward is None and "compile" in nocompile.reason
    assert [(d["program"], d["case"], d["outcome"]) for d in nocompile.dataset_defects] == [("source", None, "CE")]


# PIE p02753 (AtCoder abc158_a "Station and Bus": S of 3 letters A/B; "Yes" unless all three are equal), its real
# public tests (realdata/pie_public_tests). PIE's fast program s065571920 is WA from undefined behaviour: it reads S
# into `char S[3]` with %s, so the terminating NUL lands past the array. S_UB has that bug with a fixed layout (the
# byte after S is the first byte of "No"), so it is WA on the "No" case (BBB) on every build.
P02753_OK = r"""
#include <cstdio>
int main() { char S[8]; if (scanf("%7s", S) != 1) return 1; puts(S[0] != S[1] || S[1] != S[2] ? "Yes" : "No"); }
"""
P02753_UB = r"""
#include <cstdio>
static struct { char S[3]; char no[3]; } st = {"", "No"};
int main() {
    scanf("%s", st.S);  // undefined behaviour: "BBB" and its NUL are 4 bytes, S holds 3
    puts(st.S[0] != st.S[1] || st.S[1] != st.S[2] ? "Yes" : st.no);
}
"""
P02753_ALWAYS_YES = '#include <cstdio>\nint main() { puts("Yes"); }\n'


@pytest.fixture(scope="module")
def pie_public_tests(shared) -> Path:
    tar = shared / "realdata" / "pie_public_tests" / "public_test_cases.tar.gz"
    if not tar.is_file():
        pytest.skip(f"{tar} not found")
    return tar


def p02753_row(src_code: str, tgt_code: str, src_id: str = "s100", tgt_id: str = "s065571920") -> PiePair:
    """A PIE release row (val.jsonl shape): both programs Accepted per PIE, no case manifest."""
    return PiePair(problem_id="p02753", src_id=src_id, tgt_id=tgt_id, src_code=src_code, tgt_code=tgt_code,
                   speedup=1.5)


def test_row_whose_target_has_undefined_behaviour_is_a_dataset_defect_naming_the_target(pie_public_tests):
    r = pie_reward(p02753_row(P02753_OK, P02753_UB), P02753_OK, pie_public_tests)
    assert r.outcome == "DATASET_DEFECT" and r.reward is None and r.speedup is None
    assert r.verdict is None  # the candidate is not judged against a broken row, so never charged with a failure
    assert [(d["program"], d["id"], d["case"], d["outcome"]) for d in r.dataset_defects] == [
        ("target", "s065571920", "input.3", "WA")]
    assert "dataset defect: the target (s065571920) fails 1 of the row's cases: input.3 WA" in r.reason
    assert r.n_pool == 4 and r.src_dropped == []


def test_row_whose_source_fails_its_tests_is_a_dataset_defect_naming_the_source(pie_public_tests):
    r = pie_reward(p02753_row(P02753_UB, P02753_OK, src_id="s065571920", tgt_id="s200"), P02753_OK,
                   pie_public_tests)
    assert r.outcome == "DATASET_DEFECT" and r.reward is None and r.speedup is None and r.verdict is None
    assert [(d["program"], d["id"], d["case"], d["outcome"]) for d in r.dataset_defects] == [
        ("source", "s065571920", "input.3", "WA")]
    assert "the source (s065571920) fails 1 of the row's cases: input.3 WA" in r.reason
    both = pie_reward(p02753_row(P02753_UB, "int main( {"), P02753_OK, pie_public_tests)
    assert both.outcome == "DATASET_DEFECT"
    assert [(d["program"], d["case"], d["outcome"]) for d in both.dataset_defects] == [
        ("source", "input.3", "WA"), ("target", None, "CE")]
    assert "the target (s065571920) does not compile" in both.reason


def test_failing_candidate_on_a_healthy_row_is_still_the_candidates_failure(pie_public_tests):
    r = pie_reward(p02753_row(P02753_OK, P02753_OK), P02753_ALWAYS_YES, pie_public_tests, transform="log")
    assert r.outcome == "WA" and r.reward == DEFAULT_LOG_FAILURE_PENALTY and r.dataset_defects == []
    assert r.verdict is not None and r.verdict["outcome"] == "WA"
    # the candidate with the target's undefined behaviour is the candidate's failure too
    ub = pie_reward(p02753_row(P02753_OK, P02753_OK), P02753_UB, pie_public_tests)
    assert ub.outcome == "WA" and ub.reward == 0.0 and ub.dataset_defects == []


@needs_valgrind
def test_usable_case_ids_restrict_and_k_samples_exactly_as_the_card(tests_root):
    # a real pie-gem5 row (usable [0, 1, 2, 4]) with our programs; its dataset ticks are never used
    row = parse_row(make_pairs_raw(problem_id=P, src_code=SLOW, tgt_code=FAST))
    r = pie_reward(row, FAST, tests_root)
    assert r.outcome == "AC" and r.cases == ["input.0", "input.1", "input.2", "input.4"]
    assert r.n_pool == 4 and r.tgt_id == "s200"
    # K = 2 with a seeded rng picks what the card's snippet picks with the same seed
    want = random.Random(7).sample([0, 1, 2, 4], 2)
    r2 = pie_reward(row, FAST, tests_root, k=2, rng=random.Random(7))
    assert sorted(r2.cases) == sorted(f"input.{i}" for i in want) and r2.k == 2
    # K larger than usable is clamped, never padded
    assert pie_reward(row, FAST, tests_root, k=50, rng=random.Random(1)).n_pool == 4
    # rows without usable ids sample among the cases the source passes
    r3 = pie_reward(src(SLOW_TLE_BIG), FAST, tests_root, k=3, rng=random.Random(3), limits=Limits(cpu_seconds=1.0))
    assert len(r3.cases) == 3 and "input.0" not in r3.cases
    with pytest.raises(ValueError):
        pie_reward(row, FAST, tests_root, k=0)
    with pytest.raises(ValueError):
        pie_reward(row, FAST, tests_root, k=2)  # sampling needs a seeded rng
    with pytest.raises(ValueError):
        pie_reward(row, FAST, tests_root, transform="nope")
    with pytest.raises(ValueError):
        pie_reward(row, FAST, tests_root, method="gem5")


def test_unusable_tests_are_invalid_task_never_a_reward(tests_root, tmp_path):
    missing = pie_reward(src(problem="p09999"), FAST, tests_root)
    assert missing.outcome == "INVALID_TASK" and missing.reward is None and "p09999" in missing.reason
    no_file = pie_reward(src(usable=[0, 17]), FAST, tests_root)
    assert no_file.outcome == "INVALID_TASK" and "17" in no_file.reason
    call = TestSuite((StdioCase("0", b"1\n", (b"1\n",)),))
    r = pie_reward(src(), FAST, call, only_cases=["nope"])
    assert r.outcome == "INVALID_TASK" and "only_cases" in r.reason


@needs_valgrind
def test_source_counts_cache_on_disk_and_determinism(tests_root, tmp_path):
    d = tmp_path / "cache"
    a = pie_reward(src(), FAST, tests_root, cache=SrcCountCache(d))
    b = pie_reward(src(), FAST, tests_root, cache=SrcCountCache(d))  # a new process would see the same files
    assert a.src_cache_hits == 0 and b.src_cache_hits == len(NS) and len(list(d.glob("*.json"))) == len(NS)
    c = pie_reward(src(), FAST, tests_root, cache=False)  # re-measured from scratch: identical counts
    assert c.src_cache_hits == 0 and c.per_case == a.per_case == b.per_case


@needs_valgrind
def test_wall_method_interleaves_and_reports_both_clocks(tests_root):
    r = pie_reward(src(), FAST, tests_root, method="wall", repeats=3, only_cases=["input.0", "input.4"])
    assert r.outcome == "AC" and r.unit == "seconds" and r.cases == ["input.0", "input.4"]
    assert r.comparison["clock"] == "cpu" and r.comparison["extra"]["wall_speedup"] > 0
    assert r.meter["meter"] == "wall" and r.startup_floor is None
    assert r.speedup > 1  # 4M divisions against ~4k on these two cases: the gap dwarfs the clock's noise


@needs_valgrind
def test_costliest_cases_from_a_real_source_verdict(tests_root):
    from arbiter.judge.encodings import load_pie_tests

    suite = load_pie_tests(tests_root, P)
    v = judge(Task(language="cpp", source=SLOW, suite=suite, limits=DEFAULT_LIMITS, run_all=True, scoring="fraction",
                   checker=CheckerSpec("pie")))
    assert v.accepted
    chosen = costliest_cases(v.cases, 1, 1)
    assert "input.0" in chosen and len(chosen) == 2  # n = 3e6 is the costliest by far
    r = pie_reward(src(), FAST, tests_root, only_cases=chosen)
    assert r.outcome == "AC" and r.cases == chosen


# FAST's answer computed in a forked child that the parent waits for without reaping it (so the child's CPU is
# never charged to the measured process): correct natively, and a CPU figure that would miss all the work
FAST_IN_CHILD = r"""
#include <cstdio>
#include <unistd.h>
#include <sys/wait.h>
int main() {
    pid_t p = fork();
    if (p == 0) {
        long long n; if (scanf("%lld", &n) != 1) _exit(1);
        long long s = 0;
        for (long long i = 1; i <= n; ) { long long q = n / i, j = n / q; s += q * (j - i + 1); i = j + 1; }
        printf("%lld\n", s);
        fflush(stdout);
        _exit(0);
    }
    if (p > 0) { siginfo_t info; waitid(P_PID, p, &info, WEXITED | WNOWAIT); }
    return 0;
}
"""


@needs_valgrind
def test_candidate_that_creates_processes_is_unmeasurable_not_wa_not_fast(tests_root):
    """A candidate that passes every test natively by doing the work in a child process cannot be measured (its
    work escapes the figure). It gets outcome UNMEASURABLE with the reason, the failure reward and no speedup:
    never WA (it is not wrong) and never a speedup (with either method)."""
    from arbiter.pipelines.pie.summary import summarize_rewards
    from arbiter.rewards.pie.result import UNMEASURABLE
    from arbiter.timing.instructions import CREATES_PROCESSES_REASON

    for method in ("cycles", "instructions", "wall"):
        r = pie_reward(src(), FAST_IN_CHILD, tests_root, method=method, repeats=2, transform="log",
                       only_cases=["input.0", "input.4"])
        assert r.outcome == UNMEASURABLE == "UNMEASURABLE", (method, r.outcome, r.reason)
        assert r.verdict["outcome"] == "AC"  # correct on every used case natively (the judge allows processes)
        assert CREATES_PROCESSES_REASON in r.reason and "input.0" in r.reason
        assert r.speedup is None and r.src_total is None and r.reward == DEFAULT_LOG_FAILURE_PENALTY and r.scored
        assert r.comparison["failures"][0]["status"] == "creates_processes"
        assert r.comparison["failures"][0]["program"] == "b"
        s = summarize_rewards([r.to_dict()])
        assert s["by_outcome"] == {"UNMEASURABLE": 1} and s["n_correct"] == 0 and s["mean_speedup"] is None


# FAST_IN_CHILD's answer, computed by the program after it executed itself again (the contest idiom that raises
# the stack limit first): correct natively
FAST_REEXEC = r"""
#include <cstdio>
#include <cstdlib>
#include <unistd.h>
int main(int argc, char** argv) {
    if (!getenv("AGAIN")) { setenv("AGAIN", "1", 1); execv("/proc/self/exe", argv); return 1; }
    long long n; if (scanf("%lld", &n) != 1) return 1;
    long long s = 0;
    for (long long i = 1; i <= n; ) { long long q = n / i, j = n / q; s += q * (j - i + 1); i = j + 1; }
    printf("%lld\n", s);
}
"""


@needs_valgrind
def test_candidate_that_executes_itself_again_is_unmeasurable_not_a_crash(tests_root):
    """A red team's false fail: a correct candidate that calls execve (refused when measured: the new program
    would run uncounted) was RE, as if it had crashed. It cannot be measured: UNMEASURABLE, the failure reward."""
    from arbiter.rewards.pie.result import UNMEASURABLE

    for method in ("cycles", "instructions"):
        r = pie_reward(src(), FAST_REEXEC, tests_root, method=method, transform="log", only_cases=["input.0"])
        assert r.outcome == UNMEASURABLE, (method, r.outcome, r.reason)
        assert r.verdict["outcome"] == "AC" and "execve" in r.reason, r.reason
        assert r.speedup is None and r.reward == DEFAULT_LOG_FAILURE_PENALTY and r.scored


# ------------------------------------------------------------------------------------ meter fallback (AVX-512)


def _cpu_flags() -> set[str]:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("flags"):
                    return set(line.split(":", 1)[1].split())
    except OSError:
        pass
    return set()


needs_avx512 = pytest.mark.skipif(not {"avx512f", "avx512bw", "avx512vl"} <= _cpu_flags(),
                                  reason="this CPU lacks avx512f/avx512bw/avx512vl")

# FAST plus an AVX-512 vectorised pass over a table (EVEX vpxorq/vpmaxsq on zmm); same answers as FAST
FAST_AVX512 = '#pragma GCC target("avx512f,avx512bw,avx512vl")\n#pragma GCC optimize("O3,unroll-loops")\n' + r"""
#include <cstdio>
long long v[4096];
int main() {
    long long n; if (scanf("%lld", &n) != 1) return 1;
    for (int i = 0; i < 4096; i++) v[i] = n ^ i;
    long long mx = 0;
    for (int i = 0; i < 4096; i++) mx = mx > v[i] ? mx : v[i];
    long long s = 0;
    for (long long i = 1; i <= n; ) { long long q = n / i, j = n / q; s += q * (j - i + 1); i = j + 1; }
    if (mx < 0) s = -1;
    printf("%lld\n", s);
}
"""


@needs_valgrind
@needs_avx512
def test_avx512_candidate_is_measured_with_wall_time_not_failed(tests_root):
    """valgrind 3.19 cannot decode AVX-512 (SIGILL under valgrind) although the candidate is correct natively: the
    reward must come from the wall/CPU-time method (both programs interleaved), never RE 0.0, and say so."""
    from arbiter.languages.cpp.compile import compile_cpp
    from arbiter.timing.instructions import MeasureStatus, measure_instructions

    r = pie_reward(src(), FAST_AVX512, tests_root, transform="log", repeats=3, only_cases=["input.0", "input.4"])
    assert r.outcome == "AC", r.reason
    comp = compile_cpp(FAST_AVX512)
    assert measure_instructions(comp.binary, [("x", b"10\n", None)]).counts[0].status is \
        MeasureStatus.UNSUPPORTED_BY_METER  # the premise: valgrind cannot run it (natively it is AC, above)
    assert (r.method, r.unit, r.requested_method) == ("wall", "seconds", "cycles")
    assert r.fallback_reason == "valgrind cannot decode the program's instructions (AVX-512)"
    assert "wall fallback" in r.reason
    assert r.speedup == pytest.approx(r.src_total / r.candidate_total) and r.speedup > 1  # 4M divisions vs ~4k
    assert r.reward == pytest.approx(math.log(r.speedup))  # the same transform, of the wall speedup
    assert r.comparison["method"] == "wall" and r.comparison["fallback_reason"] == r.fallback_reason
    assert r.comparison["extra"]["meter_failures"][0]["program"] == "b"
    assert r.meter["meter"] == "wall" and r.startup_floor is None and r.ceiling_speedup is None
    # an ordinary candidate is still measured in cycles (the default)
    plain = pie_reward(src(), FAST, tests_root, only_cases=["input.0", "input.4"])
    assert (plain.method, plain.fallback_reason) == ("cycles", None)
    # the summary never averages the two units: headline figures in the requested unit, the fallback apart
    from arbiter.pipelines.pie.summary import summarize_rewards

    s = summarize_rewards([plain.to_dict(), r.to_dict()])
    kind = s["speedup_unit"]
    assert kind.startswith("cycles:gem5-skylake-se:") and s["speedup_units"] == {kind: 1, "seconds": 1}
    assert s["mean_speedup"] == s["min_speedup"] == s["max_speedup"] == pytest.approx(plain.speedup)
    assert s["speedups_by_unit"]["seconds"]["mean"] == pytest.approx(r.speedup) and s["n_other_unit"] == 1
    assert s["speedups_by_unit"][kind]["n"] == 1 and s["n_correct"] == 2
    assert s["n_method_fallbacks"] == 1 and s["methods"] == ["cycles", "wall"]


def test_summary_never_averages_speedups_of_two_cycle_models():
    """Speedups in cycles of two cycle models (other weights) are separate figure kinds: the headline stays
    empty instead of mixing them; one model gives the headline."""
    from arbiter.pipelines.pie.summary import summarize_rewards
    from arbiter.timing.cycles import DEFAULT_MODEL, CycleModel

    def record(speedup, model):
        meter = {"meter": "arbiter-count", "cycle_model": dict(model.fingerprint()["model"]),
                 "caches": model.fingerprint()["caches"]}
        return {"outcome": "AC", "reward": speedup, "speedup": speedup, "method": "cycles", "unit": "cycles",
                "requested_method": "cycles", "meter": meter}

    other = CycleModel(name="in-order", ir=1.0)
    one = summarize_rewards([record(2.0, DEFAULT_MODEL), record(8.0, DEFAULT_MODEL)])
    assert one["speedup_unit"].startswith("cycles:gem5-skylake-se:") and one["mean_speedup"] == 5.0
    mixed = summarize_rewards([record(2.0, DEFAULT_MODEL), record(8.0, other)])
    assert len(mixed["speedups_by_unit"]) == 2 and mixed["mean_speedup"] is None
    assert sorted(v["n"] for v in mixed["speedups_by_unit"].values()) == [1, 1]
