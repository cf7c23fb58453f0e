"""The ``cycles`` measure: cache and branch simulation in arbiter's counting tool, a documented cycle model.

Determinism (two runs, identical counts and events), Ir identical to the instruction meter's, the client-request
cheats refused under simulation too, and speedups of different models never compared.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from arbiter.languages.cpp.compile import CompileSpec, compile_cpp
from arbiter.timing.comparison import comparable_speedups
from arbiter.timing.cycles import CACHES, DEFAULT_MODEL, CycleModel, ModelMismatch, parse_sim_line
from arbiter.timing.instructions import (
    CLIENT_REQUEST_REASON, MeasureStatus, find_valgrind, measure_instructions, valgrind_available,
)
from arbiter.timing.measure import compare

pytestmark = pytest.mark.skipif(not valgrind_available(), reason="valgrind (with its tool libraries) is not installed")

CHEATS = sorted((Path(__file__).resolve().parents[1] / "cheats" / "valgrind").glob("*.cpp"))
PARTS = {"globals": "static long long N, S;", "read": 'if (scanf("%lld", &N) != 1) return 1;',
         "work": "long long s = 0;\n    for (long long i = 1; i <= N; i++) s += N / i;\n    S = s;",
         "print": 'printf("%lld\\n", S);'}

# random reads over a table larger than the simulated LL: few instructions, many misses
RANDOM = r"""
#include <cstdio>
#include <vector>
int main() { int n; if (scanf("%d", &n) != 1) return 1; std::vector<unsigned> a(1 << 22, 1); unsigned long long x = 1, s = 0;
  for (int i = 0; i < n; i++) { x = x * 6364136223846793005ULL + 1; s += a[(x >> 33) & ((1 << 22) - 1)]; }
  printf("%llu\n", s); }
"""
# the same number of reads, sequential
SEQUENTIAL = RANDOM.replace("a[(x >> 33) & ((1 << 22) - 1)]", "a[i & ((1 << 22) - 1)] + (x & 0)")


def compiled(code: str):
    comp = compile_cpp(code, CompileSpec())
    assert comp.ok, comp.message
    return comp


def binary(code: str) -> bytes:
    return compiled(code).binary


def cycles_meter(model: CycleModel = DEFAULT_MODEL):
    return find_valgrind().with_cycles(model)


def test_sim_line_is_read_before_the_count_only():
    log = b"==7== arbiter-count sim: I1m=1 D1m=2 LLim=3 LLdm=4 Bc=5 Bcm=6 Bi=7 Bim=8\n==7== I   refs:      1,234\n"
    assert parse_sim_line(log) == {"I1m": 1, "D1m": 2, "LLim": 3, "LLdm": 4, "Bc": 5, "Bcm": 6, "Bi": 7, "Bim": 8}
    assert parse_sim_line(log + b"==7== trailing\n") is None  # not the second-to-last line: not the tool's
    assert parse_sim_line(b"==7== I   refs:      1,234\n") is None


def test_model_cost_and_fingerprint():
    events = {"I1m": 1, "D1m": 2, "LLim": 0, "LLdm": 3, "Bc": 9, "Bcm": 4, "Bi": 1, "Bim": 1}
    assert DEFAULT_MODEL.cost(1000, events) == round(0.25 * 1000 + 12 * 3 + 200 * 3 + 16 * 5)
    fp = cycles_meter().fingerprint()
    assert fp["meter"] == "valgrind-arbiter-count-cycles"
    assert fp["cycle_model"]["l1_miss"] == 12 and fp["caches"]["LL"] == list(CACHES["LL"])
    assert "--LL=8388608,16,64" in fp["options"]
    assert cycles_meter(CycleModel(name="other", ir=1.0)).fingerprint() != fp


def test_two_runs_give_identical_counts_and_events_and_the_same_ir_as_the_instruction_meter():
    exe = binary(RANDOM)
    case = [("c", b"200000\n", None)]
    one = measure_instructions(exe, case, valgrind=cycles_meter())
    two = measure_instructions(exe, case, valgrind=cycles_meter())
    plain = measure_instructions(exe, case)
    (c1,), (c2,), (p,) = one.counts, two.counts, plain.counts
    assert c1.ok and c2.ok and p.ok, (c1.detail, c2.detail, p.detail)
    assert (c1.instructions, c1.events, c1.cycles) == (c2.instructions, c2.events, c2.cycles)
    assert c1.instructions == p.instructions and p.cycles is None
    assert c1.events["D1m"] > 100_000 and c1.events["LLdm"] > 50_000  # random reads over 16 MiB miss


def test_cycles_see_the_memory_traffic_instructions_miss():
    """Random reads (a) against sequential ones (b): about the same instructions, many more cycles for a."""
    cases = [("c", b"1000000\n", None)]
    ins = compare(compiled(RANDOM), compiled(SEQUENTIAL), cases, method="instructions", pin=False)
    cyc = compare(compiled(RANDOM), compiled(SEQUENTIAL), cases, method="cycles", pin=False)
    assert ins.ok and cyc.ok, (ins.failures, cyc.failures)
    assert cyc.method == cyc.unit == "cycles" and cyc.meter["cycle_model"]["name"] == DEFAULT_MODEL.name
    assert 0.7 < ins.speedup < 1.4
    assert cyc.speedup > 1.5 * ins.speedup, (cyc.speedup, ins.speedup)  # b (sequential) is faster in cycles


def test_speedups_of_different_models_are_never_compared():
    exe = compiled(SEQUENTIAL)
    cases = [("c", b"1000\n", None)]
    a = compare(exe, exe, cases, method="cycles", pin=False)
    b = compare(exe, exe, cases, method="cycles", pin=False, cycle_model=CycleModel(name="ir-only", l1_miss=0,
                                                                                         ll_miss=0, mispredict=0))
    i = compare(exe, exe, cases, method="instructions", pin=False)
    assert comparable_speedups([a, a]) == [a.speedup, a.speedup]
    with pytest.raises(ModelMismatch):
        comparable_speedups([a, b])
    with pytest.raises(ModelMismatch):
        comparable_speedups([a, i])


@pytest.mark.parametrize("path", CHEATS, ids=[p.stem for p in CHEATS])
def test_client_request_cheats_are_refused_under_cycles_too(path):
    code = re.sub(r"(?m)^[ \t]*// @(\w+)[ \t]*$", lambda m: PARTS[m.group(1)], path.read_text())
    n = 100000
    expected = f"{sum(n // i for i in range(1, n + 1))}\n".encode()
    run = measure_instructions(binary(code), [("c", f"{n}\n".encode(), expected)], valgrind=cycles_meter(), pin=False)
    (c,) = run.counts
    assert c.status is MeasureStatus.CLIENT_REQUEST and c.cost is None, (c.status, c.detail)
    assert c.detail.startswith(CLIENT_REQUEST_REASON)
