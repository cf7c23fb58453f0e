"""Waiting is not free: an oracle answer that sleeps on its tests is ``speed:WAITS``, on the shipped demo data,
in the real sandbox, with real compiles and real valgrind counts (docs/measurement.md, "Waiting").

The measures count computation: an answer that slept 1.8 s on every test was accepted at 136x while 6x slower in
wall time (red team, December 2026). The tests stage now records each test's run-queue delays, and time neither
on a CPU nor waiting for one (blocked: asleep, waiting) is the answer's own, whatever the host's load. The same
answer without its sleep is accepted; a correct answer is accepted with every core busy (two spinning processes
per core and a spinning sandbox per core, as other judges' cases would be): a busy host must never change a
verdict. No assertion on time: only on verdicts and reason codes.
"""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path

import pytest

from arbiter.datasets.io import read_jsonl
from arbiter.datasets.oracle import load_seeds
from arbiter.judge.verdict import CaseResult, Outcome
from arbiter.pipelines.oracle.verify import VerifyOptions, verify_returns
from arbiter.rewards.oracle import BLOCKED_MIN_SECONDS, BLOCKED_SHARE, blocked_too_long
from arbiter.sandbox.limits import Limits
from arbiter.sandbox.sandbox import Sandbox
from arbiter.timing.instructions import valgrind_available
from test_under_load import hogs  # noqa: F401  (the fixture: two spinning processes per core)

pytestmark = pytest.mark.skipif(not valgrind_available(), reason="valgrind is not installed")

REPO = Path(__file__).resolve().parents[2]
DATA = REPO / "data/oracle"
SEEDS = load_seeds(DATA / "seeds.jsonl").by_id
DEMO = {r["demo_id"]: r for r in map(json.loads, (DATA / "returns.jsonl").read_text().splitlines())}
T1 = "dummy_pie_cpp_0001_sum_even"

#: good-0001's program (one pass, O(n)), with ``{wait}`` before it prints its answer.
PROGRAM = '''#include <iostream>
#include <chrono>
#include <thread>
#include <unistd.h>
using namespace std;

int main() {
    ios::sync_with_stdio(false);
    cin.tie(nullptr);
    int n;
    cin >> n;
    long long ans = 0;
    for (int i = 0; i < n; i++) {
        long long x;
        cin >> x;
        if (x % 2 == 0) ans += x;
    }
    {wait}
    cout << ans << "\\n";
    return 0;
}
'''
#: The red team's answer, shortened: it sleeps on every test (std::this_thread::sleep_for: clock_nanosleep).
SLEEPS_ALWAYS = "this_thread::sleep_for(chrono::milliseconds(200));"
#: Sleeps on the largest tests only (usleep: nanosleep), the ones a speed gate measures.
SLEEPS_WHEN_LARGE = "if (n >= 10000) usleep(300000);"
AWAKE = "// (nothing)"


def rows(path: Path) -> list[dict]:
    return list(read_jsonl(path)) if path.exists() else []


def answer_row(wait: str, demo_id: str) -> dict:
    msgs = [{"role": m.role, "content": m.content} for m in SEEDS[T1].messages]
    content = f"<reasoning>Read each value once and add the even ones: O(n).</reasoning>\n```cpp\n" \
              f"{PROGRAM.replace('{wait}', wait)}```"
    claim = {"compile_ok": True, "all_visible_tests_pass": True, "all_hidden_tests_pass": True, "score": 1.0,
             "runtime_ms": None, "notes": "Verified locally by oracle writer."}
    return {"task_id": T1, "messages": msgs + [{"role": "assistant", "content": content}], "verification": claim,
            "demo_id": demo_id}


def verify(tmp_path: Path, answers: list[dict], demo_ids: list[str] = ()) -> tuple[dict, dict, list]:
    """Verify the rows on task 0001's visible, hidden and generated tests; (accepted, rejected) by demo_id and the
    SFT rows."""
    returns = tmp_path / "returns.jsonl"
    returns.write_text("".join(json.dumps(r) + "\n" for r in [*(DEMO[d] for d in demo_ids), *answers]))
    out = tmp_path / "out"
    run = verify_returns(DATA / "seeds.jsonl", returns, out, hidden=DATA / "hidden_tests.json",
                         generators=DATA / "generators", options=VerifyOptions(measure_cases=1, spot_checks=1))
    assert run.report["counts"]["errors"] == 0, rows(out / "errors.jsonl")
    accepted = {r["demo_id"]: r for r in rows(out / "verified.jsonl")}
    rejected = {r["demo_id"]: r for r in rows(out / "rejected.jsonl")}
    return accepted, rejected, rows(out / "sft.jsonl")


def sft_codes(sft: list[dict]) -> list[str]:
    return [r["messages"][-1]["content"] for r in sft]


def test_an_answer_that_sleeps_is_rejected_and_the_same_answer_awake_is_accepted(tmp_path):
    answers = [answer_row(SLEEPS_ALWAYS, "sleeps-always"), answer_row(SLEEPS_WHEN_LARGE, "sleeps-when-large"),
               answer_row(AWAKE, "awake")]
    accepted, rejected, sft = verify(tmp_path, answers)
    assert set(accepted) == {"awake"}, {k: r["reasons"] for k, r in rejected.items()}
    v = accepted["awake"]["verification"]
    assert v["score"] == 1.0 and v["speed_gate"] == "passed" and v["largest_speedup"] > 1.0
    assert accepted["awake"]["timing"]["blocked"]["largest"] is not None
    for demo_id in ("sleeps-always", "sleeps-when-large"):
        rec = rejected[demo_id]
        assert rec["stage"] == "speed" and [f"{r['stage']}:{r['code']}" for r in rec["reasons"]] == ["speed:WAITS"]
        assert rec["verification"]["all_generated_tests_pass"] is True  # correct, and not measured
        assert rec["verification"]["measurement"] is None and rec["verification"]["speedup"] is None
        assert rec["verification"]["score"] == 0.0
    # the usleep on the large tests is named on those only (SIZE 3: n = 30,000), every sleep_for test on all
    assert set(rejected["sleeps-when-large"]["reasons"][0]["cases"]) <= {"gen_s3_0", "gen_s3_1"}
    assert rejected["sleeps-when-large"]["reasons"][0]["cases"]
    total = sum(rejected["sleeps-always"]["verification"]["tests"][s]["total"] for s in ("visible", "hidden",
                                                                                         "generated"))
    assert f"{total} test(s) over" in rejected["sleeps-always"]["reasons"][0]["message"]
    assert sft_codes(sft) == [answers[2]["messages"][-1]["content"]]


@pytest.fixture
def busy_sandboxes():
    """One sandbox per core spinning (other judges' CPU-bound cases), stopped afterwards."""
    stop = threading.Event()
    lim = Limits(cpu_seconds=1.0, wall_seconds=30.0)

    def spin() -> None:
        with Sandbox(limits=lim) as sb:
            while not stop.is_set():
                sb.run(["/bin/sh", "-c", "while :; do :; done"], limits=lim)

    threads = [threading.Thread(target=spin, daemon=True) for _ in range(os.cpu_count() or 1)]
    for t in threads:
        t.start()
    yield threads
    stop.set()
    for t in threads:
        t.join(timeout=60)


def test_verdicts_do_not_depend_on_the_hosts_load(tmp_path, hogs, busy_sandboxes):  # noqa: F811
    """Correct answers stay accepted and the sleeping one rejected with every core busy: a busy host adds
    run-queue delay (of the answer's run and of the sandbox server watching it), never blocked time."""
    answers = [answer_row(SLEEPS_WHEN_LARGE, "sleeps-when-large"), answer_row(AWAKE, "awake")]
    accepted, rejected, sft = verify(tmp_path, answers, ["example-0001", "good-0001"])
    assert set(accepted) == {"example-0001", "good-0001", "awake"}, {k: r["reasons"] for k, r in rejected.items()}
    assert [r["code"] for r in rejected["sleeps-when-large"]["reasons"]] == ["WAITS"]
    assert len(sft) == 3


def test_the_rule_blocked_time_over_50_ms_and_a_quarter_of_the_tests_own_time():
    """The rule on a judged test's figures (seconds): blocked = wall - CPU - run-queue delays."""
    def case(wall: float, cpu: float, delay: float = 0.0, server: float = 0.0) -> CaseResult:
        return CaseResult("t", Outcome.AC, cpu_seconds=cpu, wall_seconds=wall, run_delay_seconds=delay,
                          server_delay_seconds=server)

    assert (BLOCKED_MIN_SECONDS, BLOCKED_SHARE) == (0.05, 0.25)
    assert blocked_too_long(case(wall=1.82, cpu=0.02))  # the red team's: 1.8 s asleep
    assert not blocked_too_long(case(wall=0.04, cpu=0.001))  # under 50 ms: start-up, a few wake-ups
    assert not blocked_too_long(case(wall=1.2, cpu=1.0))  # 0.2 s of 1.2 s: under a quarter
    assert blocked_too_long(case(wall=1.4, cpu=1.0))  # 0.4 s of 1.4 s
    assert not blocked_too_long(case(wall=5.0, cpu=1.0, delay=3.9))  # a busy host: delay, not blocked
    assert not blocked_too_long(case(wall=2.0, cpu=1.0, delay=0.5, server=0.45))
    assert case(wall=1.0, cpu=0.6, delay=0.6).blocked_seconds == 0.0  # never negative
