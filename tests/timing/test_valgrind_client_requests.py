"""valgrind client requests cannot hide work from the instruction count (issue 19, item 1).

``VALGRIND_NON_SIMD_CALL1(fn, arg)`` makes valgrind call ``fn`` natively: none of its instructions is counted, while
the program computes normally without valgrind and passes every test. The cheat programs in
``tests/cheats/valgrind/`` do that three ways: with the header, with the magic sequence written by hand in inline
asm, and with the bytes written at run time into an anonymous executable mapping (no preamble in the binary).
Each must be refused by the meter (``client_request``; the last one earlier, as code written at run time:
``modifies_code``), end to end: PIE reward ``UNMEASURABLE`` (never a speedup), oracle row rejected with
``measure:CLIENT_REQUEST`` / ``measure:MODIFIES_CODE`` (never in ``sft.jsonl``). Ordinary programs are counted exactly
as cachegrind counts them.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from arbiter.datasets.oracle import load_seeds
from arbiter.pipelines.oracle.verify import VerifyOptions, verify_returns
from arbiter.datasets.io import read_jsonl
from arbiter.languages.cpp.compile import CompileSpec, compile_cpp
from arbiter.datasets.pie.source import PieSource
from arbiter.rewards.pie.result import UNMEASURABLE
from arbiter.rewards.pie.reward import pie_reward
from arbiter.rewards.pie.transforms import DEFAULT_LOG_FAILURE_PENALTY
from arbiter.sandbox.limits import Limits
from arbiter.sandbox.sandbox import Sandbox
from arbiter.timing.instructions import (
    CLIENT_REQUEST_REASON,
    MODIFIES_CODE_REASON,
    LOG_FD,
    MeasureStatus,
    count_instructions,
    find_valgrind,
    measure_instructions,
    parse_cachegrind_log,
    refused_client_request,
    valgrind_available,
    valgrind_limits,
)

pytestmark = pytest.mark.skipif(not valgrind_available(), reason="valgrind (with its tool libraries) is not installed")

REPO = Path(__file__).resolve().parents[2]
CHEATS = sorted((Path(__file__).resolve().parents[1] / "cheats" / "valgrind").glob("*.cpp"))
CHEAT_IDS = [p.stem for p in CHEATS]
PREAMBLE = bytes.fromhex("48c1c70348c1c70d48c1c73d48c1c733")

# the PIE test problem ("divisor sum": print sum_{i=1..n} floor(n / i)); the source's own O(n) loop
PIE_SLOW = r"""
#include <cstdio>
int main() {
    long long n; if (scanf("%lld", &n) != 1) return 1;
    long long s = 0;
    for (long long i = 1; i <= n; i++) s += n / i;
    printf("%lld\n", s);
    return 0;
}
"""
PIE_PARTS = {"globals": "static long long N, S;", "read": 'if (scanf("%lld", &N) != 1) return 1;',
             "work": "long long s = 0;\n    for (long long i = 1; i <= N; i++) s += N / i;\n    S = s;",
             "print": 'printf("%lld\\n", S);'}
# oracle task 0001 (sum of the even numbers), with the seed's own O(n^2) loop
ORACLE_PARTS = {"globals": "#include <vector>\nstatic int N;\nstatic std::vector<long long> A;\nstatic long long ANS;",
                "read": "ios::sync_with_stdio(false); cin.tie(nullptr);\n    cin >> N; A.resize(N);\n"
                        "    for (int i = 0; i < N; i++) cin >> A[i];",
                "work": "long long ans = 0;\n    for (int i = 0; i < N; i++)\n        for (int j = 0; j < N; j++)\n"
                        "            if (i == j && A[i] % 2 == 0) ans += A[i];\n    ANS = ans;",
                "print": 'cout << ANS << "\\n";'}


def expect(path: Path) -> str:
    return re.search(r"^// expect: (\S+)", path.read_text(), re.M).group(1)


#: The reason each expected refusal starts with, and the oracle's reason code for it.
REASONS = {"client_request": (CLIENT_REQUEST_REASON, "CLIENT_REQUEST"),
           "modifies_code": (MODIFIES_CODE_REASON, "MODIFIES_CODE")}


def fill(path: Path, parts: dict[str, str]) -> str:
    """The cheat with the task filled in at its ``// @name`` lines."""
    return re.sub(r"(?m)^[ \t]*// @(\w+)[ \t]*$", lambda m: parts[m.group(1)], path.read_text())


def divisor_sum(n: int) -> int:
    return sum(n // i for i in range(1, n + 1))


def binary(code: str) -> bytes:
    comp = compile_cpp(code, CompileSpec())
    assert comp.ok, comp.message
    return comp.binary


# ------------------------------------------------------------------------------------------------- detector

def test_refused_request_is_read_from_the_tools_line_only():
    log = b"==7== arbiter-count, ...\n==7== arbiter-count: refused client request 0x1102\n"
    assert refused_client_request(log) == "0x1102"
    assert refused_client_request(b"==7== \n==7== I   refs:      1,234\n") is None
    assert refused_client_request(None) is None
    # a program's own text that merely mentions it mid-line is not the tool's line
    assert refused_client_request(b"xx ==7== arbiter-count: refused client request 0x1\n") is None


@pytest.mark.parametrize("path", CHEATS, ids=CHEAT_IDS)
def test_each_cheat_is_correct_natively_and_refused_by_the_meter(path):
    """Natively the cheat prints the right answer (it would pass every test); under the meter its client request
    (or, first, its code written at run time) is refused and the run is that status, never a count."""
    assert expect(path) in REASONS
    exe = binary(fill(path, PIE_PARTS))
    with Sandbox(files={"main": exe}) as sb:
        native = sb.run(["/prog/main"], b"100000\n", Limits(cpu_seconds=5))
    assert native.exit_code == 0 and native.stdout == f"{divisor_sum(100000)}\n".encode()
    run = measure_instructions(exe, [("c", b"100000\n", f"{divisor_sum(100000)}\n".encode())], pin=False)
    (c,) = run.counts
    assert c.status is MeasureStatus(expect(path)) and c.instructions is None, (c.status, c.detail)
    assert c.detail.startswith(REASONS[expect(path)][0])
    if path.stem == "client_call_jit":  # the request's bytes exist only at run time
        assert PREAMBLE not in exe
    else:
        assert PREAMBLE in exe


def test_ordinary_programs_count_exactly_what_cachegrind_counts():
    """The counting tool is a drop-in for ``cachegrind --cache-sim=no``: same ``I refs`` on the same binary, input
    and environment (here an iostream program with a sort and a map, and the C stdio loop)."""
    iostream = r"""
#include <bits/stdc++.h>
using namespace std;
int main() { ios::sync_with_stdio(false); int n; cin >> n; vector<long long> v(n); for (auto& x : v) cin >> x;
  sort(v.begin(), v.end()); map<int, int> m; for (auto x : v) m[x % 97]++;
  cout << v[0] << " " << accumulate(v.begin(), v.end(), 0LL) << " " << m.size() << "\n"; }
"""
    vg = find_valgrind()
    lim = valgrind_limits(Limits(cpu_seconds=5))
    stdin_io = ("3000\n" + " ".join(str((i * 7919) % 100003) for i in range(3000)) + "\n").encode()
    for code, stdin in ((iostream, stdin_io), (PIE_SLOW, b"200000\n")):
        exe = binary(code)
        with Sandbox(files={"main": exe}, limits=lim, mounts=vg.mounts) as sb:
            ours = count_instructions(sb, stdin=stdin, limits=lim, valgrind=vg)
            cg = sb.run([vg.prlimit, f"--nofile={lim.open_files}:{lim.open_files}", "--nproc=1:1", "--",
                         f"{vg.lib_dir}/cachegrind-{vg.arch}", "--tool=cachegrind", "--vgdb=no",
                         "--trace-children=yes", "--command-line-only=yes", "--cache-sim=no", "--branch-sim=no",
                         f"--main-stacksize={lim.stack}", "--cachegrind-out-file=/dev/null", f"--log-fd={LOG_FD}",
                         "/prog/main"], stdin, lim, env=vg.env, log_fd=LOG_FD)
        assert ours.ok, (ours.status, ours.detail)
        assert ours.instructions == parse_cachegrind_log(cg.log)


def test_stock_cachegrind_would_not_count_the_cheats_work():
    """Why the meter is ours: under stock cachegrind the header cheat's count does not grow with its work (the loop
    runs natively). This is the attack the meter refuses."""
    exe = binary(fill(CHEATS[CHEAT_IDS.index("client_call_header")], PIE_PARTS))
    vg = find_valgrind()
    lim = valgrind_limits(Limits(cpu_seconds=5))
    counts = []
    with Sandbox(files={"main": exe}, limits=lim, mounts=vg.mounts) as sb:
        for n in (10, 2_000_000):
            ex = sb.run([f"{vg.lib_dir}/cachegrind-{vg.arch}", "--tool=cachegrind", "--vgdb=no", "--cache-sim=no",
                         "--cachegrind-out-file=/dev/null", f"--log-fd={LOG_FD}", "/prog/main"],
                        f"{n}\n".encode(), lim, env=vg.env, log_fd=LOG_FD)
            assert ex.stdout == f"{divisor_sum(n)}\n".encode()  # the work was done (natively, by valgrind)
            counts.append(parse_cachegrind_log(ex.log))
    assert counts[1] - counts[0] < 100_000  # 2M divisions (>= 2e7 instructions) went uncounted


# ------------------------------------------------------------------------------------------------- PIE reward

@pytest.fixture(scope="module")
def pie_tests(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("pie_clreq")
    d = root / "p09101"
    d.mkdir()
    for i, n in enumerate([300_000, 10, 7]):
        (d / f"input.{i}.txt").write_text(f"{n}\n")
        (d / f"output.{i}.txt").write_text(f"{divisor_sum(n)}\n")
    return root


@pytest.mark.parametrize("path", CHEATS, ids=CHEAT_IDS)
def test_pie_candidate_with_client_requests_is_unmeasurable_never_a_speedup(pie_tests, path):
    """The source's own loop run through a client request: correct on every case natively (the judge says AC),
    refused under measurement: UNMEASURABLE with the reason, the failure reward, no speedup."""
    src = PieSource(problem_id="p09101", src_id="s1", src_code=PIE_SLOW, usable_case_ids=None)
    r = pie_reward(src, fill(path, PIE_PARTS), pie_tests, method="instructions", transform="log")
    assert r.verdict["outcome"] == "AC", r.verdict
    assert r.outcome == UNMEASURABLE, (r.outcome, r.reason)
    assert REASONS[expect(path)][0] in r.reason
    assert r.speedup is None and r.candidate_total is None and r.reward == DEFAULT_LOG_FAILURE_PENALTY and r.scored
    assert r.comparison["failures"][0]["status"] == expect(path)
    assert r.comparison["failures"][0]["program"] == "b"


# ------------------------------------------------------------------------------------------------- oracle verify

DATA = REPO / "data/oracle"
T1 = "dummy_pie_cpp_0001_sum_even"


def answer_row(code: str, demo_id: str) -> dict:
    seed = load_seeds(DATA / "seeds.jsonl").by_id[T1]
    msgs = [{"role": m.role, "content": m.content} for m in seed.messages]
    content = f"<reasoning>One pass.</reasoning>\n```cpp\n{code}```"
    claim = {"compile_ok": True, "all_visible_tests_pass": True, "all_hidden_tests_pass": None, "score": 1.0,
             "runtime_ms": None, "notes": "Verified locally by oracle writer."}
    return {"task_id": T1, "messages": msgs + [{"role": "assistant", "content": content}], "verification": claim,
            "demo_id": demo_id}


def test_oracle_answers_with_client_requests_are_rejected_never_in_sft(tmp_path):
    """The seed's own O(n^2) loop wrapped in a client request (each of the three ways): every test passes
    natively, the measured run is refused: rejected with measure:CLIENT_REQUEST, no speedup, sft.jsonl empty."""
    returns = tmp_path / "returns.jsonl"
    returns.write_text("".join(json.dumps(answer_row(fill(p, ORACLE_PARTS), p.stem)) + "\n" for p in CHEATS))
    out = tmp_path / "out"
    run = verify_returns(DATA / "seeds.jsonl", returns, out, hidden=DATA / "hidden_tests.json",
                         options=VerifyOptions(measure_cases=1, workers=1))
    assert run.report["counts"]["errors"] == 0
    assert not (out / "sft.jsonl").exists() or list(read_jsonl(out / "sft.jsonl")) == []
    assert not (out / "verified.jsonl").exists() or list(read_jsonl(out / "verified.jsonl")) == []
    rejected = [r for r in read_jsonl(out / "rejected.jsonl") if r["kind"] == "return"]
    assert len(rejected) == len(CHEATS)
    expected = {p.stem: expect(p) for p in CHEATS}
    for rec in rejected:
        v, want = rec["verification"], expected[rec["row"]["demo_id"]]
        assert v["all_visible_tests_pass"] is True and v["all_hidden_tests_pass"] is True  # correct natively
        assert rec["stage"] == "measure" and [r["code"] for r in rec["reasons"]] == [REASONS[want][1]], rec["reasons"]
        assert REASONS[want][0] in rec["reasons"][0]["message"]
        assert v["speedup"] is None and v["largest_speedup"] is None and v["score"] == 0.0
        assert v["measurement"]["failures"][0]["status"] == want
    codes = [f"measure:{REASONS[w][1]}" for w in expected.values()]
    assert run.report["by_reason"] == {c: codes.count(c) for c in codes}

