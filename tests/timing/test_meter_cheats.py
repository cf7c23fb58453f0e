"""The measured program is the program that runs (issue 29, section 1): the cheats of ``tests/cheats/meter`` are
correct natively and as slow as the seed, and none of them gets a speedup from the meter, through oracle verify
and through the PIE reward, under every measure.

Every cheat answers the oracle's sum-even task (``dummy_pie_cpp_0001_sum_even``) with the seed's own O(n^2) loop
natively and an O(n) path that is wrong for n < 64 under the meter. The suites: the oracle's hidden tests plus one
n = 16,000 test, long enough to time natively (``EVERY``), and its tests with n >= 64 only (``LARGE``: the fast path
is right on every one of them, so no output check can catch it). What each defence gives:

- ``smc_*`` (the code changes under the meter): refused by the meter (``modifies_code``: PIE ``UNMEASURABLE``, oracle
  ``measure:MODIFIES_CODE``), except the ``/proc/self/mem`` patch, which ``--smc-check=all`` sees: it is counted as
  what it is, the seed's loop (speedup about 1: oracle ``speed:SLOWER_THAN_SOURCE``);
- ``detect_*`` (another path when measured): a wrong output when measured is ``MEASURE_MISMATCH`` (PIE measures
  every used case; the oracle's spot checks); with right outputs, the native cross-check refuses the speedup
  (``NATIVE_CONTRADICTS``);
- wall time measures the native program: every cheat gets its true speedup, about 1.
Honest programs are never refused, with the host under load too.
"""

from __future__ import annotations

import json
import random
import re
from pathlib import Path

import pytest

from arbiter.datasets.io import read_jsonl
from arbiter.datasets.oracle import load_seeds
from arbiter.datasets.pie.source import PieSource
from arbiter.languages.cpp.compile import CompileSpec, compile_cpp
from arbiter.pipelines.oracle.verify import VerifyOptions, verify_returns
from arbiter.rewards.pie.result import MEASURE_MISMATCH, NATIVE_CONTRADICTS, UNMEASURABLE
from arbiter.rewards.pie.reward import pie_reward
from arbiter.rewards.pie.transforms import DEFAULT_LOG_FAILURE_PENALTY
from arbiter.sandbox.limits import Limits
from arbiter.sandbox.sandbox import Sandbox
from arbiter.timing.instructions import MODIFIES_CODE_REASON, MeasureStatus, measure_instructions, valgrind_available
from arbiter.timing.valgrind import find_valgrind
from arbiter.timing.cycles import DEFAULT_MODEL
from test_under_load import hogs  # noqa: F401  (the fixture: two spinning processes per core)

pytestmark = pytest.mark.skipif(not valgrind_available(), reason="valgrind (with its tool libraries) is not installed")

REPO = Path(__file__).resolve().parents[2]
DATA = REPO / "data" / "oracle"
TASK = "dummy_pie_cpp_0001_sum_even"
CHEATS = sorted((REPO / "tests" / "cheats" / "meter").glob("*.cpp"))
SMC = [p for p in CHEATS if p.stem.startswith("smc_")]
DETECT = [p for p in CHEATS if p.stem.startswith("detect_")]
#: The code change made through /proc/self/mem: valgrind would follow it (--smc-check=all), but the meter refuses
#: the writable open of a process's memory file (through it a program could write into the meter's own memory).
PROC_MEM = "smc_proc_self_mem"
#: Cheats that tell the meter by timing: on a loaded host they may miss it, run the seed's loop when measured and
#: get its honest figure (about 1), which is no cheat; that is the only other outcome allowed for them.
TIMED = {"detect_timing", "detect_rdtsc"}
REFUSED = SMC
LONG_N = 16000


def seed_source() -> str:
    return load_seeds(DATA / "seeds.jsonl").by_id[TASK].source_code


def exe(code: str) -> bytes:
    comp = compile_cpp(code, CompileSpec(command="g++ -std=c++20 -O2 -pipe main.cpp -o main"))
    assert comp.ok, comp.message
    return comp.binary


def long_input() -> str:
    r = random.Random(29)
    return f"{LONG_N}\n" + " ".join(str(r.randint(-10**12, 10**12)) for _ in range(LONG_N)) + "\n"


@pytest.fixture(scope="module")
def suite() -> list[dict]:
    """The hidden tests of the task plus the long one, expected outputs from the seed (correct by contract)."""
    tests = json.loads((DATA / "hidden_tests.json").read_text())[TASK] + [{"name": "long", "stdin": long_input()}]
    with Sandbox(files={"main": exe(seed_source())}) as sb:
        for t in tests:
            ex = sb.run(["/prog/main"], t["stdin"].encode(), Limits(cpu_seconds=10))
            assert ex.ok
            t["stdout"] = ex.stdout.decode()
    return tests


def n_of(test: dict) -> int:
    return int(test["stdin"].split()[0])


def pie_dir(root: Path, tests: list[dict]) -> Path:
    (root / "psum").mkdir(parents=True)
    for i, t in enumerate(tests):
        (root / "psum" / f"input.{i}.txt").write_text(t["stdin"])
        (root / "psum" / f"output.{i}.txt").write_text(t["stdout"])
    return root


@pytest.fixture(scope="module")
def every(suite, tmp_path_factory) -> Path:
    return pie_dir(tmp_path_factory.mktemp("every"), suite)


@pytest.fixture(scope="module")
def large(suite, tmp_path_factory) -> Path:
    return pie_dir(tmp_path_factory.mktemp("large"), [t for t in suite if n_of(t) >= 64])


def src() -> PieSource:
    return PieSource(problem_id="psum", src_id="seed", src_code=seed_source(), usable_case_ids=None)


# ------------------------------------------------------------------------------------------------- the programs

def test_every_cheat_is_correct_natively_and_says_its_defence(suite):
    assert len(SMC) >= 5 and len(DETECT) >= 8
    for path in CHEATS:
        assert re.search(r"^// defence: \S", path.read_text(), re.M), path.name
        with Sandbox(files={"main": exe(path.read_text())}) as sb:
            for t in suite:
                ex = sb.run(["/prog/main"], t["stdin"].encode(), Limits(cpu_seconds=10))
                assert ex.ok and ex.stdout.decode() == t["stdout"], (path.stem, t["name"], ex.stdout[:40])


@pytest.mark.parametrize("method", ["instructions", "cycles"])
def test_the_meter_refuses_code_changes(suite, method):
    vg = find_valgrind() if method == "instructions" else find_valgrind().with_cycles(DEFAULT_MODEL)
    long = [t for t in suite if t["name"] == "long"]
    cases = [(t["name"], t["stdin"].encode(), t["stdout"].encode()) for t in long]
    seed = measure_instructions(exe(seed_source()), cases, valgrind=vg, pin=False)
    assert seed.ok
    for path in SMC:
        (c,) = measure_instructions(exe(path.read_text()), cases, valgrind=vg, pin=False).counts
        if path.stem == PROC_MEM:
            assert c.status is MeasureStatus.WRITES_METER and c.cost is None, (path.stem, c.status, c.detail)
        else:
            assert c.status is MeasureStatus.MODIFIES_CODE and c.cost is None, (path.stem, c.status, c.detail)
            assert c.detail.startswith(MODIFIES_CODE_REASON) and "refused by the meter" in c.detail


# ------------------------------------------------------------------------------------------------- PIE reward

@pytest.mark.parametrize("method", ["instructions", "cycles"])
def test_pie_reward_gives_no_cheat_a_speedup(large, method):
    """On tests where the fast path is right every time, only the meter and the native cross-check stand."""
    for path in CHEATS:
        r = pie_reward(src(), path.read_text(), large, method=method, transform="log")
        assert r.verdict["outcome"] == "AC", (path.stem, r.verdict)
        want = UNMEASURABLE if path in REFUSED else NATIVE_CONTRADICTS
        if path.stem in TIMED and r.outcome == "AC":  # missed the meter: measured as the seed's loop
            assert 0.9 < r.speedup < 1.1, (path.stem, r.speedup)
            continue
        assert r.outcome == want, (path.stem, r.outcome, r.reason)
        assert r.speedup is None and r.reward == DEFAULT_LOG_FAILURE_PENALTY and r.scored
        if want == NATIVE_CONTRADICTS:
            check = r.comparison["extra"]["native_check"]
            assert check["status"] == "contradicts" and check["ratio"] > check["margin"]
            # counted fast, runs as slow as the seed: within 3x, since CPU time is noisy on a VM whose host is busy
            # (one fixed loop measured 0.13-0.30 s of CPU here; these cheats' native speedups 0.50-2.01)
            assert r.comparison["speedup"] > 5 and check["native_speedup"] < 3


def test_pie_reward_refuses_a_wrong_output_when_measured(every):
    """Every used case is measured: the fast path's wrong outputs (n < 64) are seen, its own outcome."""
    for path in DETECT:
        r = pie_reward(src(), path.read_text(), every, transform="raw")
        assert r.verdict["outcome"] == "AC", (path.stem, r.verdict)  # correct natively on the same cases
        if path.stem in TIMED and r.outcome == "AC":
            assert 0.9 < r.speedup < 1.1, (path.stem, r.speedup)
            continue
        assert r.outcome == MEASURE_MISMATCH and r.speedup is None and r.reward == 0.0, (path.stem, r.outcome)
        assert "not the program that runs" in r.reason


def test_wall_time_measures_the_program_that_runs(large):
    """Wall time runs the native program (no meter to tell apart): one cheat of each kind gets its true figure."""
    for path in [p for p in CHEATS if p.stem in ("smc_rwx_patch", "smc_memfd_alias", "detect_env", "detect_rdtsc")]:
        r = pie_reward(src(), path.read_text(), large, method="wall", repeats=1, transform="raw")
        assert r.outcome == "AC" and 0.25 < r.speedup < 3.0, (path.stem, r.outcome, r.speedup, r.reason)  # never ~40x


# ------------------------------------------------------------------------------------------------- oracle verify

def answer_row(path: Path) -> dict:
    seed = load_seeds(DATA / "seeds.jsonl").by_id[TASK]
    msgs = [{"role": m.role, "content": m.content} for m in seed.messages]
    content = (f"<reasoning>One pass over the values; the nested loop is gone.</reasoning>\n"
               f"```cpp\n{path.read_text()}```")
    claim = {"compile_ok": True, "all_visible_tests_pass": True, "all_hidden_tests_pass": True, "score": 1.0,
             "runtime_ms": None, "notes": "Verified locally by oracle writer."}
    return {"task_id": TASK, "messages": msgs + [{"role": "assistant", "content": content}], "verification": claim,
            "demo_id": path.stem}


def verify(tmp_path: Path, tests: list[dict], options: VerifyOptions) -> tuple[dict, list[dict]]:
    """Every cheat as a return row; the rejected rows by cheat. Only a timed cheat that missed the meter may be
    accepted, with the seed's own figure (its speedup about 1)."""
    hidden = tmp_path / "hidden.json"
    hidden.write_text(json.dumps({TASK: tests}))
    returns = tmp_path / "returns.jsonl"
    returns.write_text("".join(json.dumps(answer_row(p)) + "\n" for p in CHEATS))
    out = tmp_path / "out"
    run = verify_returns(DATA / "seeds.jsonl", returns, out, hidden=hidden, options=options)
    assert run.report["counts"]["errors"] == 0
    accepted = {r["demo_id"]: r for r in read_jsonl(out / "verified.jsonl")} if (out / "verified.jsonl").exists() \
        else {}
    assert set(accepted) <= TIMED, {k: (r["verification"]["speedup"], r["timing"].get("spot_checks"))
                                    for k, r in accepted.items() if k not in TIMED}
    assert all(0.9 < r["verification"]["speedup"] < 1.1 for r in accepted.values())
    rejected = {r["row"]["demo_id"]: r for r in read_jsonl(out / "rejected.jsonl")}
    assert set(rejected) | set(accepted) == {p.stem for p in CHEATS}
    return run.report, rejected


@pytest.mark.parametrize("method", ["instructions", "cycles"])
def test_oracle_verify_accepts_no_cheat(suite, tmp_path, method):
    """The largest test is the long one: the fast path is right there; no spot check, so the native cross-check
    and the meter stand alone."""
    _, rejected = verify(tmp_path, [t for t in suite], VerifyOptions(measure=method, measure_cases=1,
                                                                     spot_checks=0, workers=1))
    for name, rec in rejected.items():
        v = rec["verification"]
        if name in TIMED and [r["code"] for r in rec["reasons"]] == ["SLOWER_THAN_SOURCE"]:
            continue  # missed the meter: measured as the seed's loop, slower than the seed by its own checks
        assert v["all_visible_tests_pass"] is True and v["all_hidden_tests_pass"] is True, name  # correct natively
        codes = [f"{r['stage']}:{r['code']}" for r in rec["reasons"]]
        want = ("measure:WRITES_METER" if name == PROC_MEM else "measure:MODIFIES_CODE" if name.startswith("smc_")
                else "measure:NATIVE_CONTRADICTS")
        assert codes == [want], (name, codes, rec["reasons"])
        assert v["speedup"] is None and v["largest_speedup"] is None and v["score"] == 0.0
        if name.startswith("detect_"):
            check = rec["timing"]["native_check"]  # CPU times: with the run's other timings
            assert check["status"] == "contradicts" and "not the program that runs" in rec["reasons"][0]["message"]


def test_oracle_spot_checks_catch_a_wrong_output_when_measured(suite, tmp_path):
    """Without the long test nothing is long enough to time; the largest test (n = 1692) has the fast path right.
    The fast path is right on two of the five other tests (n = 75, and n = 1 whose answer is 0), so the default
    three spot checks drawn from them always meet a wrong output (two would miss one time in ten)."""
    short = [t for t in suite if t["name"] != "long"]
    report, rejected = verify(tmp_path, short, VerifyOptions(measure_cases=1, workers=1))
    for path in DETECT:
        if path.stem not in rejected:
            continue  # a timed cheat that missed the meter (verify() checked its figure)
        rec = rejected[path.stem]
        assert [r["code"] for r in rec["reasons"]] == ["MEASURE_MISMATCH"], (path.stem, rec["reasons"])
        spots = [c["case"] for c in rec["timing"]["spot_checks"]]  # drawn at random: with the run's timings
        assert len(spots) <= 3 and rec["reasons"][0]["cases"][0] == spots[-1]  # they stop at the first failure
    assert report["by_reason"]["measure:MEASURE_MISMATCH"] >= len(DETECT) - len(TIMED)


# ------------------------------------------------------------------------------------------------- honest programs

HALF = seed_source().replace("for(int j=0;j<n;j++)", "for(int j=0;j<=i;j++)")  # half the seed's iterations
LINEAR = seed_source().replace("for(int j=0;j<n;j++){if(i==j&&", "for(int j=i;j<=i;j++){if(")  # O(n), honest


@pytest.mark.parametrize("method", ["instructions", "cycles"])
def test_honest_programs_are_never_refused_under_load(large, hogs, method):
    assert HALF != seed_source() and LINEAR != seed_source()
    for code, low, high in ((seed_source(), 0.8, 1.25), (HALF, 1.5, 2.5), (LINEAR, 5.0, None)):
        r = pie_reward(src(), code, large, method=method, transform="raw")
        assert r.outcome == "AC", (r.outcome, r.reason)
        assert r.speedup > low and (high is None or r.speedup < high), r.speedup
        check = r.comparison["extra"]["native_check"]
        assert check["status"] in ("consistent", "not_applied"), check
    # the long runs are timed: the check applied to the seed against itself
    r = pie_reward(src(), seed_source(), large, method=method)
    assert r.comparison["extra"]["native_check"]["status"] == "consistent"
