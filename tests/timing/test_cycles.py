"""The ``cycles`` measure: cache and branch simulation in arbiter's counting tool, a documented cycle model.

Determinism (two runs, identical counts and events), Ir identical to the instruction meter's, pages and system
calls counted, the start-up floor in cycles, counts independent of how many cores measure them, the client-request
cheats refused under simulation too, and speedups of different models never compared.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from arbiter.languages.cpp.compile import CompileSpec, compile_cpp
from arbiter.timing.comparison import comparable_speedups
from arbiter.timing.cycles import (
    CACHES, DEFAULT_MODEL, NOMINAL_HZ, SKYLAKE_4IPC, CycleModel, ModelMismatch, parse_sim_line,
)
from arbiter.timing.instructions import (
    CLIENT_REQUEST_REASON, MODIFIES_CODE_REASON, MeasureStatus, find_valgrind, measure_instructions,
    valgrind_available,
)
from arbiter.timing.measure import compare, startup_floor

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
    events = {"I1m": 1, "D1m": 2, "LLim": 0, "LLdm": 3, "Bc": 9, "Bcm": 4, "Bi": 1, "Bim": 1, "Pg": 7, "Sys": 5}
    assert DEFAULT_MODEL.name == "gem5-skylake-se" and DEFAULT_MODEL == CycleModel()
    assert DEFAULT_MODEL.cost(1000, events) == round(0.55 * 1000 + 12 * 3 + 200 * 3 + 16 * 5 + 30 * 12)
    # the previous default, kept for comparison: a quarter cycle per instruction, no traps
    assert SKYLAKE_4IPC.cost(1000, events) == round(0.25 * 1000 + 12 * 3 + 200 * 3 + 16 * 5)
    fp = cycles_meter().fingerprint()
    assert fp["meter"] == "valgrind-arbiter-count-cycles"
    assert fp["cycle_model"]["l1_miss"] == 12 and fp["caches"]["LL"] == list(CACHES["LL"])
    assert "--LL=8388608,16,64" in fp["options"]
    assert cycles_meter(CycleModel(name="other", ir=1.0)).fingerprint() != fp
    assert DEFAULT_MODEL.identity().startswith("gem5-skylake-se:")
    assert CycleModel(trap=31.0).identity() != DEFAULT_MODEL.identity()


def test_two_runs_give_identical_counts_and_events_and_the_same_ir_as_the_instruction_meter():
    """Simulation adds helper calls, never guest instructions: Ir is the instruction meter's."""
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
    assert c1.events["Pg"] > 4096 and c1.events["Sys"] > 10  # 16 MiB touched; ld.so and stdio make calls


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
    want = MeasureStatus(re.search(r"^// expect: (\S+)", path.read_text(), re.M).group(1))  # the JIT: modifies_code
    assert c.status is want and c.cost is None, (c.status, c.detail)
    assert c.detail.startswith(CLIENT_REQUEST_REASON if want is MeasureStatus.CLIENT_REQUEST else MODIFIES_CODE_REASON)


def test_pages_and_system_calls_are_counted():
    """Each page first touched and each system call is a trap in gem5's syscall emulation: the model charges it."""
    quiet = 'int main() { static char a[1 << 24]; for (int i = 0; i < (1 << 24); i += 4096) a[i] = 1; return a[7]; }'
    chatty = ('#include <unistd.h>\nint main() { static char a[1 << 24]; for (int i = 0; i < (1 << 24); i += 4096) '
              'a[i] = 1; for (int i = 0; i < 300; i++) write(1, "", 0); return a[7]; }')
    (q,), (c,) = (measure_instructions(binary(src), [("c", b"", None)], valgrind=cycles_meter()).counts
                  for src in (quiet, chatty))
    assert q.ok and c.ok, (q.detail, c.detail)
    assert q.events["Pg"] >= 4096 and abs(c.events["Pg"] - q.events["Pg"]) < 16  # 16 MiB: 4096 pages
    assert c.events["Sys"] - q.events["Sys"] == 300
    assert c.cycles - q.cycles >= 300 * DEFAULT_MODEL.trap


def test_startup_floor_in_cycles_is_the_card_floor_order():
    """The floor of the default cycle model: an empty dynamic program costs about the card's 192 M-tick gem5
    start-up floor (at 3.5 GHz, 672k cycles), and an empty iostream program several times that."""
    spec = CompileSpec()
    floor = startup_floor(spec, method="cycles")
    assert startup_floor(spec, method="cycles") == floor  # cached; deterministic anyway
    card = 192e6 * NOMINAL_HZ / 1e12
    assert 0.75 * card < floor < 1.25 * card, floor
    assert startup_floor(spec, method="cycles", iostream=True) > 4 * floor
    assert startup_floor(spec, method="cycles", cycle_model=SKYLAKE_4IPC) != floor
    assert startup_floor(spec) != floor  # instructions: another unit
    with pytest.raises(ValueError):
        startup_floor(spec, method="wall")


def test_counts_do_not_depend_on_how_many_cores_measure_them():
    """Cases measured in parallel (each worker a sandbox and a core of its own) give the sequential counts, in case
    order; with stop_on_failure, nothing after the first failed case (in case order) is reported."""
    exe = binary(RANDOM)
    cases = [(f"c{i}", f"{1000 * (i + 1)}\n".encode(), None) for i in range(5)]
    one = measure_instructions(exe, cases, valgrind=cycles_meter(), workers=1)
    two = measure_instructions(exe, cases, valgrind=cycles_meter(), workers=2)
    assert one.ok and two.ok
    assert [(c.case, c.instructions, c.events, c.cycles) for c in one.counts] == \
        [(c.case, c.instructions, c.events, c.cycles) for c in two.counts]
    bad = cases[:2] + [("bad", b"x\n", None)] + cases[2:]  # scanf fails: exit 1, a runtime error
    run = measure_instructions(exe, bad, valgrind=cycles_meter(), workers=2)
    assert [c.case for c in run.counts] == ["c0", "c1", "bad"] and not run.ok
    assert run.counts[0].ok and run.counts[1].ok and run.counts[2].status is MeasureStatus.RUNTIME_ERROR
    assert len(run.cores) >= 1
