"""Red team 8: a cheat that can tell a native re-run from its judged run (the cross-check, docs/measurement.md).

c455889 confirmed a contradiction with two more native runs of the candidate, its fastest kept. Those re-runs were
not the judged run: they ran pinned to one core (``core_lease``, as valgrind's runs), each measured case twice in
one session. The two cheats below ran their fast path there and their slow, always-correct path when judged: PIE
``AC`` with the counted speedup (instructions ~60, cycles ~34), oracle verify accepted both (~77, no spot check),
every run. The change was reverted (the candidate's native time is its judged run's); these tests hold that.

The cheats answer the oracle's sum-even task like ``tests/cheats/meter``: the seed's O(n^2) loop when judged, an
O(n) path that is wrong for n < 64 otherwise. The honest outcome of every one of them is no speedup.
"""

from __future__ import annotations

import pytest

from arbiter.pipelines.oracle.verify import VerifyOptions
from arbiter.rewards.pie.result import NATIVE_CONTRADICTS
from arbiter.rewards.pie.reward import pie_reward
from arbiter.sandbox.limits import Limits
from arbiter.sandbox.sandbox import Sandbox
from arbiter.timing.instructions import valgrind_available
from arbiter.timing.wallclock import core_lease
from test_meter_cheats import exe, large, src, suite, seed_source  # noqa: F401  (fixtures)

pytestmark = pytest.mark.skipif(not valgrind_available(), reason="valgrind (with its tool libraries) is not installed")

COMMON = r"""
#include <iostream>
#include <vector>
#include <cstdlib>
#include <sched.h>
#include <unistd.h>
using namespace std;
int n;
vector<long long> a;
static long long fast_impl() {  // O(n), wrong for n < 64
    long long s = 0;
    int full = n / 64 * 64;
    for (int i = 0; i < full; i++) if (a[i] % 2 == 0) s += a[i];
    if (full) for (int i = full; i < n; i++) if (a[i] % 2 == 0) s += a[i];
    return s;
}
static long long slow_impl() {  // the seed's loop: correct
    long long ans = 0;
    for (int i = 0; i < n; i++) for (int j = 0; j < n; j++) if (i == j && a[i] % 2 == 0) ans += a[i];
    return ans;
}
static int cpus() { cpu_set_t s; CPU_ZERO(&s); sched_getaffinity(0, sizeof s, &s); return CPU_COUNT(&s); }
"""

#: Fast whenever it runs on one core: valgrind's runs and the confirming re-runs hold a core lease (pinned), the
#: judge's runs do not (every core of the host). No environment variable, no timing: deterministic on >= 2 cores.
PINNED = COMMON + r"""
int main() {
    ios::sync_with_stdio(false); cin.tie(nullptr);
    cin >> n; a.resize(n);
    for (int i = 0; i < n; i++) cin >> a[i];
    cout << (cpus() == 1 ? fast_impl() : slow_impl()) << "\n";
}
"""

multicore = pytest.mark.skipif(len(__import__("os").sched_getaffinity(0)) < 2, reason="needs two cores or more")


@multicore
def test_the_rerun_sandbox_is_pinned_and_the_judged_one_is_not(suite):
    """The signal itself: one CPU in a core lease's sandbox (the re-runs, the meter), every CPU in a plain one."""
    long = next(t for t in suite if t["name"] == "long")
    probe = COMMON + r"int main(){ cout << cpus() << endl; }"
    binary = exe(probe)
    with Sandbox(files={"main": binary}) as sb:
        assert int(sb.run(["/prog/main"], b"", Limits()).stdout) >= 2
    with core_lease(), Sandbox(files={"main": binary}) as sb:
        assert int(sb.run(["/prog/main"], b"", Limits()).stdout) == 1
    # the cheat is correct natively, as judged and as re-run
    with Sandbox(files={"main": exe(PINNED)}) as sb:
        ex = sb.run(["/prog/main"], long["stdin"].encode(), Limits(cpu_seconds=10))
        assert ex.ok and ex.stdout.decode() == long["stdout"]


#: Fast from the first repeat of an input within one session on: the confirming re-runs run the measured cases
#: twice in one sandbox session, the judge runs each case once. Cases of a session share no file (wiped), but
#: two counters tell a case its past (docs/sandbox.md, "what tells a case how many ran before it"): its PID and
#: the scratch tmpfs's inode numbers. Each native case makes one file, so PID - inode moves only by the processes
#: a case forks: a case leaves a 6-bit state for the next one (the first input's hash, and a flag "the first
#: input came again") by forking 0-63 children. No pinning, timing or host-wide state: the meter is told by
#: VALGRIND_LIB (like detect_env).
REPEAT = COMMON + r"""
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
int main() {
    ios::sync_with_stdio(false); cin.tie(nullptr);
    cin >> n; a.resize(n);
    for (int i = 0; i < n; i++) cin >> a[i];
    if (getenv("VALGRIND_LIB")) { cout << fast_impl() << "\n"; return 0; }
    int fd = open("/tmp/.c", O_CREAT | O_WRONLY, 0600);
    struct stat st; fstat(fd, &st);
    long ino = (long)st.st_ino, d = ((long)getpid() - ino) & 63;
    int mine = (int)((unsigned long long)(n * 2654435761ULL + (unsigned long long)a[0] * 40503ULL) % 31) + 1;
    bool first = ino == 2;
    int h0 = first ? mine : (int)(d & 31), flag = first ? 0 : (int)(d >> 5);
    if (!first && h0 == mine) flag = 1;  // the session's first input again: a re-run
    cout << (flag ? fast_impl() : slow_impl()) << "\n";
    cout.flush();
    int target = (flag << 5) | h0, f = (target - (int)d) & 63;  // D of the next case = D + f
    for (int i = 0; i < f; i++) { pid_t p = vfork(); if (p == 0) _exit(0); if (p > 0) waitpid(p, nullptr, 0); }
    return 0;
}
"""

#: The two cheats by name.
CHEATS = {"pinned": PINNED, "repeat": REPEAT}


def test_the_repeat_cheat_runs_slow_once_and_fast_on_a_repeat_in_one_session(suite):
    """The signal: a session of distinct inputs (the judge's) is slow and right on every case; a session that runs
    the long case twice (the re-runs') is slow, then fast, right both times."""
    long = next(t for t in suite if t["name"] == "long")
    with Sandbox(files={"main": exe(REPEAT)}) as sb:
        for t in [t for t in suite if int(t["stdin"].split()[0]) >= 64]:
            ex = sb.run(["/prog/main"], t["stdin"].encode(), Limits(cpu_seconds=10))
            assert ex.ok and ex.stdout.decode() == t["stdout"], (t["name"], ex)
        judged = ex.cpu_seconds  # the long case is the last of them
    with Sandbox(files={"main": exe(REPEAT)}) as sb:
        again = [sb.run(["/prog/main"], long["stdin"].encode(), Limits(cpu_seconds=10)) for _ in range(2)]
    assert all(ex.ok and ex.stdout.decode() == long["stdout"] for ex in again)
    assert again[0].cpu_seconds > 4 * again[1].cpu_seconds and judged > 4 * again[1].cpu_seconds, \
        (judged, [ex.cpu_seconds for ex in again])


@pytest.mark.parametrize("method", ["instructions", "cycles"])
@pytest.mark.parametrize("cheat", [pytest.param("pinned", marks=multicore), "repeat"])
def test_pie_reward_gives_neither_cheat_a_speedup(large, cheat, method):
    """Fast only when pinned (valgrind's runs), or from a repeated input on: counted fast, judged slow."""
    r = pie_reward(src(), CHEATS[cheat], large, method=method, transform="raw")
    assert r.verdict["outcome"] == "AC", r.verdict
    check = r.comparison["extra"].get("native_check") if r.comparison else None
    assert r.outcome == NATIVE_CONTRADICTS, (r.outcome, r.speedup, check)


@multicore
def test_oracle_verify_accepts_no_rerun_cheat(suite, tmp_path):
    """As test_oracle_verify_accepts_no_cheat: no spot check, the native cross-check stands alone. (With the
    default three spot checks both cheats are still rejected, MEASURE_MISMATCH on sample_1, n = 5, where the fast
    path is wrong; their native_check there is 'consistent' too: the spot checks alone stand.)"""
    import json

    from arbiter.datasets.io import read_jsonl
    from arbiter.pipelines.oracle.verify import verify_returns
    from test_meter_cheats import DATA, TASK, answer_row

    tests = list(suite)
    hidden = tmp_path / "hidden.json"
    hidden.write_text(json.dumps({TASK: tests}))
    rows = []
    for name, code in (("pinned", PINNED), ("repeat", REPEAT)):
        path = tmp_path / f"{name}.cpp"
        path.write_text(code)
        rows.append(answer_row(path))
    returns = tmp_path / "returns.jsonl"
    returns.write_text("".join(json.dumps(r) + "\n" for r in rows))
    out = tmp_path / "out"
    run = verify_returns(DATA / "seeds.jsonl", returns, out, hidden=hidden,
                         options=VerifyOptions(measure="instructions", measure_cases=1, spot_checks=0, workers=1))
    assert run.report["counts"]["errors"] == 0
    accepted = {r["demo_id"]: (r["verification"]["speedup"], r["timing"].get("native_check", {}).get("status"))
                for r in read_jsonl(out / "verified.jsonl")} if (out / "verified.jsonl").exists() else {}
    assert accepted == {}, accepted


@pytest.fixture(scope="module", params=["pinned", "repeat"])
def judged_cheat(request, suite):
    """(seed, cheat, counted comparison, judged CPU seconds per case, cases) on the n >= 64 tests: the cheat judged
    as the judge runs it (one session, every case in turn, no core lease)."""
    from arbiter.timing.measure import MeasuredProgram, compare

    code = CHEATS[request.param]
    cases = [(t["name"], t["stdin"].encode(), t["stdout"].encode()) for t in suite if int(t["stdin"].split()[0]) >= 64]
    seed = MeasuredProgram(exe(seed_source()), "g++ -O2", "source")
    cand = MeasuredProgram(exe(code), "g++ -O2", "candidate")
    counted = compare(seed, cand, cases, "instructions")
    assert counted.speedup > 20, counted.speedup
    judged = {}
    with Sandbox(files={"main": cand.binary}) as sb:
        for name, stdin, expected in cases:
            ex = sb.run(["/prog/main"], stdin, Limits(cpu_seconds=10))
            assert ex.ok and ex.stdout == expected
            judged[name] = ex.cpu_seconds
    return seed, cand, counted, judged, cases


@multicore
def test_the_crosscheck_refuses_both_cheats_on_their_judged_runs(judged_cheat):
    """From the judged runs alone, both cheats contradict their count."""
    from arbiter.timing.crosscheck import native_check

    seed, _, counted, judged, cases = judged_cheat
    check = native_check(seed, counted, judged, cases, Limits(cpu_seconds=10))
    assert check.contradicts, check


def test_wall_time_gives_the_repeat_cheat_no_speedup(large):
    """Wall time runs each case again and again in one session; the repeat cheat gains nothing there (its figure is
    the seed's, about 1), and the comparison is cross-checked with its judged runs."""
    r = pie_reward(src(), REPEAT, large, method="wall", transform="raw")
    assert r.verdict["outcome"] == "AC", r.verdict
    check = r.comparison["extra"].get("native_check") if r.comparison else None
    assert check is not None and check["status"] in ("consistent", "contradicts"), check
    assert r.outcome == NATIVE_CONTRADICTS or (r.outcome == "AC" and r.speedup < 3), (r.outcome, r.speedup, check)


@multicore
@pytest.mark.xfail(strict=False, reason="red team 8: wall time's runs hold a pinned core, the judged runs do not; a "
                   "cheat fast only when pinned got 11x. The cross-check refuses a figure over 8x its judged one: "
                   "refused in 5 of 6 runs here, AC at 9.4x (native 1.43) in 1 (docs/measurement.md)")
def test_wall_time_gives_the_pinned_cheat_no_speedup(large):
    r = pie_reward(src(), PINNED, large, method="wall", transform="raw")
    assert r.verdict["outcome"] == "AC", r.verdict
    check = r.comparison["extra"].get("native_check") if r.comparison else None
    assert r.outcome == NATIVE_CONTRADICTS, (r.outcome, r.speedup, check)
