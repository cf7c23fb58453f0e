"""The correctness-gated speedup (:mod:`arbiter.judge.speedup`) on real C++ programs in the real sandbox.

Problem ("divisor sum"): given n, print ``sum_{i=1..n} floor(n / i)``. SLOW does n divisions, FAST uses the
O(sqrt n) block trick; expected outputs are computed here from the definition.
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from arbiter.judge.judge import judge
from arbiter.judge.speedup import (
    MeasureFailure,
    SpeedupOutcome,
    SpeedupSpec,
    gated_speedup,
)
from arbiter.judge.task import Task
from arbiter.judge.testsuite import StdioCase, TestSuite
from arbiter.judge.verdict import Outcome
from arbiter.sandbox.limits import Limits
from arbiter.timing.count_cache import CountCache
from arbiter.timing.instructions import valgrind_available
from test_pie_retime import FAST, SLOW, WRONG  # the PIE tests' program pair

needs_valgrind = pytest.mark.skipif(not valgrind_available(), reason="valgrind is not installed")

# FAST's answer computed in a forked child: correct natively, but its work would escape the measured figure
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


def divisor_sum(n: int) -> int:
    s, i = 0, 1
    while i <= n:
        q = n // i
        j = n // q
        s += q * (j - i + 1)
        i = j + 1
    return s


CASES = tuple(StdioCase(f"n{n}", f"{n}\n".encode(), (f"{divisor_sum(n)}\n".encode(),)) for n in (2_000_000, 7))
SPEC = SpeedupSpec(limits=Limits(cpu_seconds=10.0), repeats=2)


def test_no_cases_and_bad_method_are_refused():
    with pytest.raises(ValueError):
        gated_speedup(SLOW, FAST, (), SPEC)
    with pytest.raises(ValueError):
        gated_speedup(SLOW, FAST, CASES, SpeedupSpec(method="gem5"))  # type: ignore[arg-type]


def test_failure_classification_is_one_table():
    assert MeasureFailure("candidate", "c", "client_request").unmeasurable
    assert MeasureFailure("candidate", "c", "creates_processes").verdict is Outcome.SANDBOX_ERROR
    assert not MeasureFailure("candidate", "c", "creates_processes").ours
    assert MeasureFailure("source", "c", "no_count").ours
    assert MeasureFailure("candidate", "c", "time_limit").verdict is Outcome.TLE
    assert MeasureFailure("candidate", "c", "something new").ours


def test_wrong_candidate_is_never_measured():
    r = gated_speedup(SLOW, WRONG, CASES, SPEC)
    assert r.outcome is SpeedupOutcome.NOT_CORRECT and r.stage == "gate"
    assert r.verdict.outcome is Outcome.WA and r.comparison is None and r.speedup is None


def test_source_that_does_not_compile():
    r = gated_speedup("int main( {", FAST, CASES, SPEC)
    assert r.outcome is SpeedupOutcome.SOURCE_CE and r.comparison is None and r.reason


@needs_valgrind
def test_correct_faster_candidate_is_measured_in_cycles_by_default_with_a_source_cache(tmp_path):
    cache = CountCache(tmp_path)
    spec = SpeedupSpec(limits=Limits(cpu_seconds=10.0), cache=cache, names=("source", "answer"))
    assert spec.method == "cycles"  # the default measure
    r = gated_speedup(SLOW, FAST, CASES, spec)
    assert r.outcome is SpeedupOutcome.MEASURED and r.outcome == "MEASURED", r.reason
    assert r.verdict.outcome is Outcome.AC and r.failures == []
    assert r.comparison.method == r.comparison.unit == "cycles"
    assert (r.comparison.a_name, r.comparison.b_name) == ("source", "answer")
    # cycles charge the start-up both programs pay more than instructions do: a smaller ratio than their > 10
    assert r.speedup == pytest.approx(r.comparison.a_total / r.comparison.b_total) and r.speedup > 5
    assert r.cache_hits == 0 and "baseline_cache_hits" not in r.comparison.extra
    again = gated_speedup(SLOW, FAST, CASES, spec)
    assert again.cache_hits == len(CASES) and again.comparison.a_total == r.comparison.a_total  # deterministic
    # instructions on request: the same cache never hands cycles to it (the meter is in every key)
    ins = gated_speedup(SLOW, FAST, CASES, replace(spec, method="instructions"))
    assert ins.comparison.method == "instructions" and ins.cache_hits == 0 and ins.speedup > 10


@needs_valgrind
def test_a_passed_verdict_is_the_gate():
    """Cases the candidate already passed are not judged again; the measurement still happens."""
    v = judge(Task(language="cpp", source=FAST, suite=TestSuite(CASES), limits=SPEC.limits, checker=SPEC.checker,
                   scoring="all_or_nothing", compile=SPEC.compile))
    assert v.outcome is Outcome.AC
    r = gated_speedup(SLOW, FAST, CASES[:1], SPEC, passed=[v])
    assert r.outcome is SpeedupOutcome.MEASURED and r.verdict is None
    phases: list[str] = []

    import contextlib

    @contextlib.contextmanager
    def hold(phase: str):
        phases.append(phase)
        yield

    gated_speedup(SLOW, FAST, CASES[:1], SPEC, passed=[v], hold=hold)
    # the count, then the native cross-check (a measure phase of its own: it times the source natively)
    assert phases == ["compile", "compile", "measure", "measure"]


@needs_valgrind
@pytest.mark.parametrize("method", ["cycles", "instructions", "wall"])
def test_candidate_that_creates_processes_is_unmeasurable(method):
    spec = SpeedupSpec(limits=Limits(cpu_seconds=10.0), method=method, repeats=2)
    r = gated_speedup(SLOW, FAST_IN_CHILD, CASES, spec)
    assert r.outcome is SpeedupOutcome.UNMEASURABLE, (method, r.outcome, r.reason)
    assert r.verdict.outcome is Outcome.AC  # correct natively
    assert r.failures[0].program == "candidate" and r.failures[0].status == "creates_processes"
    assert r.speedup is None and r.comparison.method == method


def test_wall_method_measures_both_interleaved():
    spec = SpeedupSpec(limits=Limits(cpu_seconds=10.0), method="wall", repeats=2)
    r = gated_speedup(SLOW, FAST, CASES[:1], spec)
    assert r.outcome is SpeedupOutcome.MEASURED, r.reason
    assert r.comparison.method == "wall" and r.comparison.unit == "seconds" and r.cache_hits is None
    assert r.speedup > 1
