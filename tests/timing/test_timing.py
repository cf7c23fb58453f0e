"""Measurement module: real C++ programs compiled with g++ in the sandbox, measured under valgrind / wall clock
in the real sandbox. No mocks, no hard-coded counts."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import threading

import pytest

from arbiter.languages.cpp.compile import CompileResult, CompileSpec, compile_cpp
from arbiter.languages.cpp.toolchain import ToolchainMismatch
from arbiter.sandbox.limits import MiB, Limits
from arbiter.sandbox.sandbox import Sandbox
from arbiter.timing.measure import (
    FingerprintMismatch,
    MeasuredProgram,
    check_comparable,
    compare,
    largest_cases,
    startup_floor,
)
from arbiter.timing.count_cache import CountCache, count_key, sha256_hex
from arbiter.timing.instructions import (
    MeasureStatus,
    count_instructions,
    find_valgrind,
    measure_instructions,
    valgrind_available,
    valgrind_limits,
)
from arbiter.timing.wallclock import core_lease, interleave_order, spread

pytestmark = pytest.mark.skipif(not valgrind_available(), reason="valgrind is not installed")

FLAGS = ["-std=gnu++17", "-O2"]

# count pairs i<j with (a_i + a_j) % k == 0: O(n^2) and O(n + k)
QUAD = r"""
#include <bits/stdc++.h>
int main() {
    int n, k; std::cin >> n >> k;
    std::vector<long long> a(n);
    for (auto &x : a) std::cin >> x;
    long long c = 0;
    for (int i = 0; i < n; i++)
        for (int j = i + 1; j < n; j++)
            if ((a[i] + a[j]) % k == 0) c++;
    std::cout << c << "\n";
}
"""
LINEAR = r"""
#include <bits/stdc++.h>
int main() {
    int n, k; std::cin >> n >> k;
    std::vector<long long> cnt(k, 0);
    for (int i = 0; i < n; i++) { long long x; std::cin >> x; cnt[x % k]++; }
    long long c = cnt[0] * (cnt[0] - 1) / 2;
    for (int r = 1; 2 * r < k; r++) c += cnt[r] * cnt[k - r];
    if (k % 2 == 0) c += cnt[k / 2] * (cnt[k / 2] - 1) / 2;
    std::cout << c << "\n";
}
"""
CRASH = r"""
#include <bits/stdc++.h>
int main() { int n; std::cin >> n; volatile int *p = nullptr; if (n > 0) *p = n; std::cout << n << "\n"; }
"""
WRONG = r"""
#include <bits/stdc++.h>
int main() { int n, k; std::cin >> n >> k; std::cout << n + k << "\n"; }
"""
EXEC = r"""
#include <unistd.h>
#include <cstdio>
int main() { puts("0"); fflush(stdout); execl("/bin/true", "true", (char *)0); return 3; }
"""
FORK = r"""
#include <unistd.h>
#include <sys/wait.h>
#include <cstdio>
int main() { pid_t p = fork(); if (p < 0) return 4; if (p == 0) _exit(0); waitpid(p, nullptr, 0); puts("0"); }
"""
DEEP = r"""
#include <bits/stdc++.h>
int f(int n) {
    volatile char buf[256];
    buf[n % 256] = (char)n;
    if (n == 0) return 0;
    int r = f(n - 1);
    return r + (buf[n % 256] == (char)n);
}
int main() { int n; std::cin >> n; std::cout << f(n) << "\n"; }
"""
SPIN = r"""
int main() { volatile unsigned long x = 0; for (;;) x++; }
"""
# LINEAR's answer computed in a forked child; the parent waits for it without reaping it (WNOWAIT), so getrusage
# never charges the child's CPU to the measured process: natively correct, and its CPU figure misses the work
FORK_WORKER = r"""
#include <bits/stdc++.h>
#include <unistd.h>
#include <sys/wait.h>
int main() {
    pid_t p = fork();
    if (p == 0) {
        int n, k; std::cin >> n >> k;
        std::vector<long long> cnt(k, 0);
        for (int i = 0; i < n; i++) { long long x; std::cin >> x; cnt[x % k]++; }
        long long c = cnt[0] * (cnt[0] - 1) / 2;
        for (int r = 1; 2 * r < k; r++) c += cnt[r] * cnt[k - r];
        if (k % 2 == 0) c += cnt[k / 2] * (cnt[k / 2] - 1) / 2;
        std::cout << c << "\n" << std::flush;
        _exit(0);
    }
    if (p > 0) { siginfo_t info; waitid(P_PID, p, &info, WEXITED | WNOWAIT); }
    return 0;
}
"""
# LINEAR's answer counted by a pool of four threads
THREAD_POOL = r"""
#include <bits/stdc++.h>
int main() {
    int n, k; std::cin >> n >> k;
    std::vector<long long> a(n), cnt(k, 0);
    for (auto &x : a) std::cin >> x;
    std::mutex m;
    std::vector<std::thread> pool;
    for (int t = 0; t < 4; t++)
        pool.emplace_back([&, t] {
            std::vector<long long> local(k, 0);
            for (int i = t; i < n; i += 4) local[a[i] % k]++;
            std::lock_guard<std::mutex> g(m);
            for (int r = 0; r < k; r++) cnt[r] += local[r];
        });
    for (auto &th : pool) th.join();
    long long c = cnt[0] * (cnt[0] - 1) / 2;
    for (int r = 1; 2 * r < k; r++) c += cnt[r] * cnt[k - r];
    if (k % 2 == 0) c += cnt[k / 2] * (cnt[k / 2] - 1) / 2;
    std::cout << c << "\n";
}
"""
# tries to fork a helper, and does all the work itself (correctly) when the fork is refused
FORK_OPTIONAL = LINEAR.replace("int main() {", "int main() {\n    if (fork() == 0) _exit(0);\n    wait(nullptr);", 1) \
    .replace("#include <bits/stdc++.h>", "#include <bits/stdc++.h>\n#include <unistd.h>\n#include <sys/wait.h>", 1)

SPEC = CompileSpec()  # g++ -std=gnu++17 -O2 -DONLINE_JUDGE (the PIE card's flags)


def compiled(source: str, spec: CompileSpec = SPEC) -> CompileResult:
    """Compile with arbiter's C++ toolchain (in the sandbox, compile-cached, with its toolchain fingerprint)."""
    result = compile_cpp(source, spec)
    assert result.ok, result.message
    return result


def compile_binary(source: str) -> bytes:
    return compiled(source).binary


def program(source: str, name: str) -> MeasuredProgram:
    return MeasuredProgram.of(compiled(source), name)


def make_input(n: int, k: int = 7, seed: int = 1) -> bytes:
    rng = random.Random(seed * 1000003 + n)
    return f"{n} {k}\n{' '.join(str(rng.randint(1, 10**9)) for _ in range(n))}\n".encode()


def expected_output(stdin: bytes) -> bytes:
    """The right answer, computed here (not by the programs under test)."""
    head, rest = stdin.split(b"\n", 1)
    n, k = map(int, head.split())
    cnt = [0] * k
    for x in rest.split():
        cnt[int(x) % k] += 1
    c = cnt[0] * (cnt[0] - 1) // 2 + sum(cnt[r] * cnt[k - r] for r in range(1, (k + 1) // 2))
    if k % 2 == 0:
        c += cnt[k // 2] * (cnt[k // 2] - 1) // 2
    return f"{c}\n".encode()


def cases_for(sizes: list[int], seed: int = 1) -> list[tuple[str, bytes, bytes]]:
    out = []
    for i, n in enumerate(sizes):
        stdin = make_input(n, seed=seed + i)
        out.append((f"n{n}-{i}", stdin, expected_output(stdin)))
    return out


def test_same_pair_twice_gives_identical_counts():
    """Issue 7: "Measuring the same pair twice gives identical instruction counts" (fresh sandboxes each time)."""
    quad, lin = program(QUAD, "quad"), program(LINEAR, "linear")
    cases = cases_for([10, 300, 1000])
    first = compare(quad, lin, cases)
    second = compare(quad, lin, cases)
    assert first.ok and second.ok, (first.failures, second.failures)
    assert [(c.a, c.b) for c in first.cases] == [(c.a, c.b) for c in second.cases]
    assert first.a_total == second.a_total and first.b_total == second.b_total
    assert first.speedup == second.speedup
    assert all(isinstance(c.a, int) and c.a > 0 for c in first.cases)
    # the record says what the figures depend on
    assert first.fingerprint == program(QUAD, "x").fingerprint
    assert first.meter["valgrind"] == find_valgrind().version and "--tool=arbiter-count" in first.meter["options"]
    assert first.method == "instructions" and first.unit == "instructions"
    # sums and the speedup are the card's rule: sum(a) / sum(b) over the same cases
    assert first.a_total == sum(c.a for c in first.cases)
    assert first.speedup == pytest.approx(first.a_total / first.b_total)
    json.loads(json.dumps(first.to_dict()))


def test_quadratic_vs_linear_speedup_grows_with_n():
    quad, lin = program(QUAD, "quad"), program(LINEAR, "linear")
    speedups = []
    for n in (200, 800, 3000):
        c = compare(quad, lin, cases_for([n], seed=n))
        assert c.ok, c.failures
        speedups.append(c.speedup)
    assert speedups[0] > 1
    assert speedups[0] < speedups[1] < speedups[2], speedups
    # largest cases: ranked by the baseline's cost; their speedup is the ratio over exactly those cases
    mixed = compare(quad, lin, cases_for([5, 10, 20, 40, 2000]), largest_fraction=0.2)
    assert mixed.ok
    assert mixed.largest_cases == [max(mixed.cases, key=lambda c: c.a).case]
    top = next(c for c in mixed.cases if c.case == mixed.largest_cases[0])
    assert mixed.largest_speedup == pytest.approx(top.a / top.b)
    assert mixed.largest_speedup > mixed.speedup > 1


def test_startup_floor():
    floor = startup_floor(SPEC)
    assert isinstance(floor, int) and floor > 0
    assert startup_floor(SPEC) == floor  # cached per fingerprint (and deterministic anyway)
    again = measure_instructions(compile_binary("int main() {}\n"), [("empty", b"", None)])
    assert again.ok and again.total == floor
    assert startup_floor(lambda src: compiled(src)) == floor  # a compile callable gives the same floor
    iostream = startup_floor(SPEC, iostream=True)
    assert iostream > floor
    # the floor depends on the link mode (card: "pin your toolchain"; static vs dynamic)
    static = startup_floor(CompileSpec(command="g++ -std=gnu++17 -O2 -static main.cpp -o main"))
    assert static > 0 and static != floor
    # below the count of any real program, even on its smallest input
    quad, lin = program(QUAD, "quad"), program(LINEAR, "linear")
    c = compare(quad, lin, cases_for([1, 50]))
    assert c.ok
    assert all(floor < x for case in c.cases for x in (case.a, case.b))
    ceiling = c.ceiling_speedup(floor)
    assert ceiling == pytest.approx(c.a_total / len(c.cases) / floor) and ceiling > 1


def test_failed_runs_are_failed_measurements_never_numbers():
    lin = program(LINEAR, "linear")
    cases = cases_for([30, 40])
    for source, status in ((CRASH, MeasureStatus.RUNTIME_ERROR), (WRONG, MeasureStatus.WRONG_OUTPUT),
                           (EXEC, MeasureStatus.EXEC_REFUSED), (FORK, MeasureStatus.RUNTIME_ERROR)):
        c = compare(lin, program(source, "bad"), cases)
        assert not c.ok and c.speedup is None and c.b_total is None and c.largest_speedup is None
        assert c.failures[0]["program"] == "b" and c.failures[0]["status"] == status.value, c.failures
        assert c.cases[0].b is None and c.cases[0].b_status == status.value
        assert c.cases[0].a is not None  # the baseline's figure is still reported
        assert len(c.order) == 2  # stopped at the first failure
    # the baseline failing is a failure too (on the wall-clock method as well)
    w = compare(program(CRASH, "crash"), lin, cases, method="wall", repeats=2, warmup=0)
    assert not w.ok and w.failed("a") and w.speedup is None
    assert w.failures[0]["status"] == MeasureStatus.RUNTIME_ERROR.value
    # without an expected output, only the run's own status counts
    ok = compare(lin, program(WRONG, "wrong"), [(n, i, None) for n, i, _ in cases])
    assert ok.ok and ok.speedup is not None


def test_programs_that_create_processes_are_unmeasurable_never_wrong_never_fast():
    """A program that does its work in a forked child (never reaped, so its CPU is not charged to the measured
    process) or in a thread pool must not get a figure: under both methods the measured run refuses new processes
    (RLIMIT_NPROC = 1) and the failure is ``creates_processes`` with a clear reason, never a wrong answer."""
    from arbiter.timing.instructions import CREATES_PROCESSES_REASON

    lin = program(LINEAR, "linear")
    cases = cases_for([3000, 50])
    for source in (FORK_WORKER, THREAD_POOL):
        bad = program(source, "bad")
        # the premise: natively, with processes allowed, it computes the right answer
        with Sandbox(files={"main": bad.binary}, limits=Limits()) as sb:
            for _, stdin, want in cases:
                ex = sb.run(["/prog/main"], stdin, Limits())
                assert ex.ok and ex.stdout == want, (ex.status, ex.detail, ex.stdout)
        for method in ("instructions", "wall"):
            c = compare(lin, bad, cases, method, repeats=2, warmup=0)
            assert not c.ok and c.speedup is None and c.b_total is None and c.largest_speedup is None
            f = c.failures[0]
            assert (f["program"], f["status"]) == ("b", MeasureStatus.CREATES_PROCESSES.value), (method, c.failures)
            assert f["detail"].startswith(CREATES_PROCESSES_REASON), f["detail"]
            assert "program creates processes; its cost cannot be measured" in f["detail"]
            assert c.cases[0].b is None and c.cases[0].b_status == MeasureStatus.CREATES_PROCESSES.value
            if method == "instructions":  # the baseline is counted as usual (wall: stopped at the first failure)
                assert c.cases[0].a is not None and c.cases[0].a_status == "ok"
            assert not c.sandbox_error
    # the same counting under valgrind directly, in a measuring sandbox
    run = measure_instructions(compile_binary(FORK_WORKER), cases)
    assert not run.ok and run.total is None
    assert run.counts[0].status is MeasureStatus.CREATES_PROCESSES and run.counts[0].instructions is None


def test_a_program_that_only_tries_to_fork_is_measured_single_process():
    """Refusing new processes is the rule of a measured run, not a verdict on the source code: a correct program
    whose fork is refused and that then does the work itself is measured like any other (the probe only names a
    failure)."""
    lin = program(LINEAR, "linear")
    opt = program(FORK_OPTIONAL, "fork-optional")
    cases = cases_for([3000, 50])
    for method in ("instructions", "wall"):
        c = compare(lin, opt, cases, method, repeats=2, warmup=0)
        assert c.ok and not c.failures and c.speedup is not None and c.speedup > 0, c.failures
    counted = compare(lin, opt, cases)
    assert all(case.b is not None and case.b_status == "ok" for case in counted.cases)


def test_time_limit_under_valgrind_is_a_failed_measurement():
    vg = find_valgrind()
    with Sandbox(files={"main": compile_binary(SPIN)}, limits=Limits(memory_bytes=256 * MiB),
                 mounts=vg.mounts) as sb:  # the counting tool is mounted from the host
        c = count_instructions(sb, ("/prog/main",), b"", limits=Limits(cpu_seconds=1.0, wall_seconds=3.0,
                                                                       memory_bytes=256 * MiB, processes=1),
                               case="spin", valgrind=vg)
    assert c.status is MeasureStatus.TIME_LIMIT and c.instructions is None and not c.ok


def test_deep_recursion_gets_the_native_stack_under_valgrind():
    """Valgrind caps the program's stack at 16 MiB unless told otherwise; the native stack limit is passed on."""
    n = 200_000  # about 60 MiB of stack
    stdin = f"{n}\n".encode()
    limits = Limits(memory_bytes=512 * MiB)
    with Sandbox(files={"main": compile_binary(DEEP)}, limits=limits) as sb:
        native = sb.run(["/prog/main"], stdin, limits)
    assert native.ok and native.stdout == stdin
    run = measure_instructions(compile_binary(DEEP), [("deep", stdin, stdin)], limits=limits)
    assert run.ok, run.counts[0]
    assert run.total > 10 * n  # every level ran


def test_mismatched_fingerprints_are_refused_before_running():
    o2 = compiled(LINEAR, CompileSpec(command="g++ -std=gnu++17 -O2 main.cpp -o main"))
    o3 = compiled(LINEAR, CompileSpec(command="g++ -std=gnu++17 -O3 main.cpp -o main"))
    with pytest.raises(FingerprintMismatch, match="flags") as info:
        compare(o2, o3, cases_for([5]))
    assert isinstance(info.value, ToolchainMismatch) and "flags" in info.value.differences
    static = compiled(LINEAR, CompileSpec(command="g++ -std=gnu++17 -O2 -static main.cpp -o main"))
    with pytest.raises(ToolchainMismatch, match="link_mode"):
        compare(o2, static, cases_for([5]), method="wall")
    with pytest.raises(FingerprintMismatch):  # opaque fingerprints work too
        compare(MeasuredProgram(o2.binary, "gcc-12 -O2 dynamic"), MeasuredProgram(o2.binary, "gcc-12 -O2 static"), cases_for([5]))
    # a stored Toolchain.to_dict() matches the live Toolchain it came from
    same = compare(MeasuredProgram(o2.binary, o2.toolchain), MeasuredProgram(o2.binary, o2.toolchain.to_dict()), cases_for([5]))
    assert same.ok and same.speedup == 1.0 and same.fingerprint == o2.toolchain.fingerprint
    assert same.toolchain == o2.toolchain.to_dict()
    with pytest.raises(ValueError, match="zero tests"):
        compare(o2, o2, [])
    with pytest.raises(ValueError, match="duplicate"):
        compare(o2, o2, cases_for([5]) * 2)


def test_wall_clock_interleaving_is_recorded():
    quad, lin = program(QUAD, "quad"), program(LINEAR, "linear")
    cases = cases_for([100, 400])
    c = compare(quad, lin, cases, method="wall", repeats=3, warmup=1, pattern="ABBA", clock="wall")
    assert c.ok, c.failures
    assert c.method == "wall" and c.unit == "seconds" and c.clock == "wall"
    names = [n for n, _, _ in cases]
    expected_order = interleave_order(names, 4, "ABBA")
    assert [(o["round"], o["case"], o["program"]) for o in c.order] == expected_order
    # ABBA: each case alternates AB / BA across rounds; neighbouring cases start differently
    per_case = [[p for r, n, p in expected_order if n == names[0]]]
    assert per_case[0] == ["a", "b", "b", "a", "a", "b", "b", "a"]
    assert [o["warmup"] for o in c.order] == [o["round"] < 1 for o in c.order]
    for case in c.cases:
        kept = [o["wall_seconds"] for o in c.order
                if o["case"] == case.case and o["program"] == "a" and not o["warmup"]]
        assert case.a_spread["wall"]["n"] == 3 and case.a == pytest.approx(sorted(kept)[1])
        assert case.a_spread["wall"]["iqr"] >= 0 and case.a_spread["cpu"]["cv"] >= 0
    assert c.a_total == pytest.approx(sum(x.a for x in c.cases))
    assert c.speedup == pytest.approx(c.a_total / c.b_total)
    assert len(c.extra["round_speedups"]) == 3 and c.extra["cpu_speedup"] > 0
    assert c.meter["core"] in os.sched_getaffinity(0)
    ab = compare(quad, lin, cases, method="wall", repeats=2, warmup=0, pattern="AB")
    assert ab.ok and ab.clock == "cpu" and ab.extra["wall_speedup"] > 0  # CPU clock by default, wall alongside
    kept_cpu = [o["cpu_seconds"] for o in ab.order if o["case"] == ab.cases[0].case and o["program"] == "a"]
    assert ab.cases[0].a == pytest.approx(sum(kept_cpu) / 2)  # median of two samples
    assert [o["program"] for o in ab.order] == ["a", "b"] * 4
    json.loads(json.dumps(ab.to_dict()))


def test_core_lease_pins_sandboxes_and_is_exclusive():
    with core_lease() as core:
        with Sandbox() as sb:
            ex = sb.run(["/usr/bin/grep", "Cpus_allowed_list", "/proc/self/status"])
        assert ex.ok and ex.stdout.split()[-1].decode() == str(core)
        errors = []

        def other():
            try:
                with core_lease(cores=[core], timeout=0.3):
                    errors.append("got a leased core")
            except TimeoutError:
                pass

        t = threading.Thread(target=other)
        t.start()
        t.join()
        assert not errors
        with core_lease(timeout=1) as inner:  # re-entrant in the holding thread
            assert inner == core
    with core_lease(cores=[core], timeout=5) as again:  # released on exit
        assert again == core
        run = measure_instructions(compile_binary("int main() {}\n"), [("empty", b"", None)])  # nested: no deadlock
        assert run.ok


def test_counts_do_not_depend_on_busy_cores():
    """Every allowed core runs a CPU burner during the second measurement; the counts are the same."""
    binary = compile_binary(QUAD)
    cases = cases_for([600, 20], seed=5)
    idle = measure_instructions(binary, cases)
    burners = []
    try:
        for core in sorted(os.sched_getaffinity(0)):
            code = f"import os; os.sched_setaffinity(0, {{{core}}})\nwhile True: pass"
            burners.append(subprocess.Popen([sys.executable, "-c", code]))
        busy = measure_instructions(binary, cases)
        assert all(p.poll() is None for p in burners)  # they were burning all along
    finally:
        for p in burners:
            p.kill()
            p.wait()
    assert idle.ok and busy.ok
    assert [c.instructions for c in idle.counts] == [c.instructions for c in busy.counts]


def test_helpers():
    assert largest_cases([("a", 1), ("b", 9), ("c", 9), ("d", 3), ("e", 2)], 0.2) == ["b"]
    assert largest_cases([("a", 1), ("b", 9), ("c", 9), ("d", 3), ("e", 2)], 0.4) == ["b", "c"]
    assert largest_cases([("a", 1)], 0.01) == ["a"]
    s = spread([1.0, 2.0, 3.0, 4.0, 100.0])
    assert s.median == 3.0 and s.mad == 1.0 and s.n == 5 and s.iqr == pytest.approx(2.0)
    with pytest.raises(ValueError):
        interleave_order(["x"], 2, "BAAB")  # type: ignore[arg-type]



FORGER = r"""
#include <cstdio>
#include <cstring>
#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>
// Tries to forge the count: writes a fake cachegrind summary to every descriptor it can reach
// (and, with REOPEN, by reopening each entry of /proc/self/fd), then does real work.
int main() {
    const char* fake = "==1== I   refs:      5\n";
    for (int fd = 3; fd < 4096; fd++) write(fd, fake, strlen(fake));
#ifdef REOPEN
    if (DIR* d = opendir("/proc/self/fd")) {
        while (dirent* e = readdir(d)) {
            char path[300];
            snprintf(path, sizeof path, "/proc/self/fd/%s", e->d_name);
            int fd = open(path, O_WRONLY | O_APPEND | O_NONBLOCK);
            if (fd >= 0) { write(fd, fake, strlen(fake)); close(fd); }
        }
        closedir(d);
    }
#endif
    long s = 0;
    for (long i = 0; i < 3000000; i++) s += i % 7;
    printf("%ld\n", s);
}
"""


def test_a_program_cannot_forge_its_instruction_count():
    """The count is the last line of valgrind's log pipe, written after the program ran: a fake
    summary written by the program comes before it, or (writing into valgrind's own pipes) crashes
    valgrind, which is a failed measurement, never the forged number."""
    direct = measure_instructions(compiled(FORGER).binary, [("forge", b"", None)])
    assert direct.ok, direct.counts[0].detail
    assert direct.counts[0].instructions > 3_000_000  # the loop alone, not the forged 5
    reopened = measure_instructions(compiled("#define REOPEN\n" + FORGER).binary, [("forge", b"", None)])
    count = reopened.counts[0]
    assert count.instructions != 5
    assert (not count.ok) or count.instructions > 3_000_000, count


# ---------------------------------------------------------------------------------------------------------------
# baseline count cache
# ---------------------------------------------------------------------------------------------------------------


def _key(stdin: bytes = b"1\n", **over) -> str:
    kw = dict(toolchain="tc", meter={"meter": "valgrind-cachegrind", "valgrind": "3.19.0"},
              limits=valgrind_limits(Limits()), output_check="")
    kw.update(over)
    return count_key(sha256_hex(b"exe"), stdin, b"ok\n", **kw)


def test_count_key_names_everything_a_count_depends_on():
    base = _key()
    assert len(base) == 64 and _key() == base  # deterministic
    variants = {_key(b"2\n"), _key(toolchain="tc-static"), _key(meter={"meter": "valgrind-cachegrind"}),
                _key(limits=valgrind_limits(Limits(cpu_seconds=1.0))),
                _key(limits=valgrind_limits(Limits(stack_bytes=300 * MiB))), _key(output_check="pie"),
                count_key(sha256_hex(b"other"), b"1\n", b"ok\n", toolchain="tc", meter={},
                          limits=valgrind_limits(Limits())),
                count_key(sha256_hex(b"exe"), b"1\n", None, toolchain="tc",
                          meter={"meter": "valgrind-cachegrind", "valgrind": "3.19.0"},
                          limits=valgrind_limits(Limits()))}
    assert base not in variants and len(variants) == 8


def test_count_cache_disk_round_trip_and_corrupt_entries_are_misses(tmp_path):
    d = tmp_path / "counts"
    first = CountCache(d)
    assert first.get("k1") is None and not d.exists()  # a miss writes nothing
    first.put("k1", 12345, "case-1")
    assert first.get("k1") == 12345 and len(first) == 1
    assert json.loads((d / "k1.json").read_text()) == {"key": "k1", "instructions": 12345, "case": "case-1"}
    assert not [p for p in d.iterdir() if p.name.startswith(".tmp-")]  # atomic write left no temporary file
    assert CountCache(d).get("k1") == 12345  # a new process sees the stored count
    for name, text in (("bad-json", "{not json"), ("other-key", '{"key": "k0", "instructions": 5}'),
                       ("zero", '{"key": "zero", "instructions": 0}'),
                       ("bool", '{"key": "bool", "instructions": true}'),
                       ("text", '{"key": "text", "instructions": "7"}'), ("list", "[1, 2]"), ("empty", "")):
        (d / f"{name}.json").write_text(text)
        assert CountCache(d).get(name) is None, name
    with pytest.raises(ValueError):
        first.put("k2", 0)
    # memory only, disabled, failures only when asked for (memory only, never on disk)
    mem = CountCache()
    mem.put("k", 7)
    assert mem.get("k") == 7 and mem.directory is None
    off = CountCache.disabled()
    off.put("k", 7)
    off.put_failure("k", "time_limit", "")
    assert off.get("k") is None and off.failure("k") is None and len(off) == 0
    first.put_failure("k3", "time_limit", "cpu")
    assert first.failure("k3") is None  # only successful counts are reused by default
    remembering = CountCache(d, remember_failures=True)
    remembering.put_failure("k3", "time_limit", "cpu")
    assert remembering.failure("k3") == ("time_limit", "cpu") and not (d / "k3.json").exists()
    # one shared instance per directory and options
    assert CountCache.shared(d) is CountCache.shared(str(d)) and CountCache.shared(d) is not first
    assert CountCache.shared(d, remember_failures=True) is not CountCache.shared(d)


def test_count_cache_single_flight_lock_per_executable():
    cache = CountCache()
    assert cache.flight("exe-a") is cache.flight("exe-a") and cache.flight("exe-a") is not cache.flight("exe-b")
    # the second thread asking for the same executable waits until the first has stored its count
    seen: list[int | None] = []

    def second():
        with cache.flight("exe-a"):
            seen.append(cache.get("k"))

    with cache.flight("exe-a"):
        t = threading.Thread(target=second)
        t.start()
        t.join(0.3)
        assert t.is_alive()  # blocked on the flight
        cache.put("k", 99)
    t.join(5)
    assert seen == [99]


def test_compare_with_a_baseline_cache_reuses_the_baseline_counts(tmp_path):
    quad, lin = program(QUAD, "quad"), program(LINEAR, "linear")
    cases = cases_for([10, 300, 1000])
    plain = compare(quad, lin, cases)
    cache = CountCache(tmp_path / "counts")
    first = compare(quad, lin, cases, baseline_cache=cache)
    second = compare(quad, lin, cases, baseline_cache=cache, largest_fraction=0.5)
    for c in (first, second):  # same figures and rules as without a cache
        assert c.ok and [(f.a, f.b) for f in c.cases] == [(f.a, f.b) for f in plain.cases]
        assert (c.a_total, c.b_total, c.speedup, c.fingerprint) == (plain.a_total, plain.b_total, plain.speedup,
                                                                     plain.fingerprint)
        assert {k: v for k, v in c.meter.items() if k != "core"} == {k: v for k, v in plain.meter.items()
                                                                      if k != "core"}
    assert first.largest_cases == plain.largest_cases and first.largest_speedup == plain.largest_speedup
    assert first.extra == {"baseline_cache_hits": 0} and second.extra == {"baseline_cache_hits": 3}
    assert [o["program"] for o in first.order] == ["a"] * 3 + ["b"] * 3  # the baseline first, then the candidate
    assert [o["program"] for o in second.order] == ["b"] * 3  # hits are not runs
    stored = list((tmp_path / "counts").glob("*.json"))
    assert len(stored) == 3  # on disk for the next process, as the counts measured
    assert sorted(CountCache(tmp_path / "counts").get(p.stem) for p in stored) == sorted(f.a for f in plain.cases)
    # another candidate with the same baseline: hits again; a disabled cache measures the baseline again
    third = compare(quad, program(QUAD.replace("c++;", "c += 1;"), "quad2"), cases, baseline_cache=cache)
    assert third.extra["baseline_cache_hits"] == 3 and third.ok
    off = compare(quad, lin, cases, baseline_cache=CountCache.disabled())
    assert off.extra["baseline_cache_hits"] == 0
    assert [(f.a, f.b) for f in off.cases] == [(f.a, f.b) for f in plain.cases]
    with pytest.raises(ValueError, match="instruction counts only"):
        compare(quad, lin, cases, method="wall", baseline_cache=cache)


def test_compare_baseline_cache_single_flight_across_threads():
    """Concurrent comparisons against one baseline measure it once: the others wait and take the counts."""
    quad, lin = program(QUAD, "quad"), program(LINEAR, "linear")
    cases = cases_for([200, 400])
    cache = CountCache()
    results: list = []

    def one():
        results.append(compare(quad, lin, cases, baseline_cache=cache))

    threads = [threading.Thread(target=one) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(600)
    assert len(results) == 3 and all(r.ok for r in results)
    assert sorted(r.extra["baseline_cache_hits"] for r in results) == [0, 2, 2]
    assert len({tuple((f.a, f.b) for f in r.cases) for r in results}) == 1


def test_compare_baseline_cache_failures_remembered_only_when_asked():
    crash, lin = program(CRASH, "crash"), program(LINEAR, "linear")
    cases = cases_for([30, 40])
    for remember in (False, True):
        cache = CountCache(remember_failures=remember)
        first = compare(crash, lin, cases, baseline_cache=cache)
        again = compare(crash, lin, cases, baseline_cache=cache)
        for c in (first, again):
            assert not c.ok and c.failed("a") and not c.failed("b") and c.speedup is None
            assert c.failures[0]["status"] == MeasureStatus.RUNTIME_ERROR.value
            assert c.cases[0].a_status == "runtime_error"
            assert c.cases[1].a_status == "not_run" and c.cases[0].b_status == "not_run"  # stopped; b never run
        assert first.order == [{"case": cases[0][0], "program": "a"}]
        assert again.order == ([] if remember else first.order)  # remembered: not re-run
        assert again.failures == first.failures


def test_check_comparable_is_the_one_fingerprint_check():
    o2 = compiled(LINEAR, CompileSpec(command="g++ -std=gnu++17 -O2 main.cpp -o main"))
    o3 = compiled(LINEAR, CompileSpec(command="g++ -std=gnu++17 -O3 main.cpp -o main"))
    check_comparable(o2, MeasuredProgram.of(o2))
    check_comparable(o2.toolchain, o2.toolchain.to_dict())
    with pytest.raises(FingerprintMismatch, match="flags") as info:
        check_comparable(MeasuredProgram.of(o2), o3.toolchain)
    assert isinstance(info.value, ToolchainMismatch) and "flags" in info.value.differences


# ---------------------------------------------------------------------------------------------------------------
# instructions valgrind cannot decode (AVX-512): the meter's limitation, never the program's fault
# ---------------------------------------------------------------------------------------------------------------


def _cpu_flags() -> set[str]:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("flags"):
                    return set(line.split(":", 1)[1].split())
    except OSError:
        pass
    return set()


HAS_AVX512 = {"avx512f", "avx512bw", "avx512vl"} <= _cpu_flags()
needs_avx512 = pytest.mark.skipif(not HAS_AVX512, reason="this CPU lacks avx512f/avx512bw/avx512vl")

# LINEAR plus an AVX-512 vectorised max over the input (GCC emits EVEX vpmaxsq): same answers as LINEAR
AVX512 = '#pragma GCC target("avx512f,avx512bw,avx512vl")\n#pragma GCC optimize("O3,unroll-loops")\n' + r"""
#include <bits/stdc++.h>
int main() {
    int n, k; std::cin >> n >> k;
    std::vector<long long> a(n);
    for (auto &x : a) std::cin >> x;
    long long mx = LLONG_MIN;
    for (int i = 0; i < n; i++) mx = std::max(mx, a[i]);
    std::vector<long long> cnt(k, 0);
    for (int i = 0; i < n; i++) cnt[a[i] % k]++;
    long long c = cnt[0] * (cnt[0] - 1) / 2;
    for (int r = 1; 2 * r < k; r++) c += cnt[r] * cnt[k - r];
    if (k % 2 == 0) c += cnt[k / 2] * (cnt[k / 2] - 1) / 2;
    if (mx < 0) c = -1;
    std::cout << c << "\n";
}
"""
# writes valgrind's "unhandled instruction" message into its log pipe, then dies of SIGILL natively too
FAKE_SIGILL = r"""
#include <csignal>
#include <cstdio>
#include <cstring>
#include <unistd.h>
int main() {
    const char *m = "vex amd64->IR: unhandled instruction bytes: 0x62 0xD2 0xFD 0x8\n";
    if (write(3, m, strlen(m)) < 0) {}
    std::raise(SIGILL);
    puts("0");
}
"""

# the log of a real run (valgrind 3.19, this repository's options) of an AVX-512 program, up to its summary
REAL_AVX512_LOG = b"""==2== Cachegrind, a cache and branch-prediction profiler
==2== Copyright (C) 2002-2017, and GNU GPL'd, by Nicholas Nethercote et al.
==2== Using Valgrind-3.19.0 and LibVEX; rerun with -h for copyright info
==2== Command: /prog/main
==2== 
--2-- warning: L3 cache found, using its data for the LL simulation.
vex amd64->IR: unhandled instruction bytes: 0x62 0xD2 0xFD 0x8 0x3D 0xC7 0xC4 0xE1 0xF9 0x7E
vex amd64->IR:   REX=0 REX.W=0 REX.R=0 REX.X=0 REX.B=0
vex amd64->IR:   VEX=0 VEX.L=0 VEX.nVVVV=0x0 ESC=NONE
vex amd64->IR:   PFX.66=0 PFX.F2=0 PFX.F3=0
==2== valgrind: Unrecognised instruction at address 0x10940a.
==2==    at 0x10940A: main (in /prog/main)
==2== Your program just tried to execute an instruction that Valgrind
==2== did not recognise.  There are two possible reasons for this.
==2== Either way, Valgrind will now raise a SIGILL signal which will
==2== probably kill your program.
==2== 
==2== Process terminating with default action of signal 4 (SIGILL)
==2==  Illegal opcode at address 0x10940A
==2==    at 0x10940A: main (in /prog/main)
==2== 
==2== I   refs:      1,817,498
"""


def test_undecodable_instruction_is_read_from_the_real_valgrind_log():
    from arbiter.timing.instructions import meter_reason, undecodable_instruction

    reason, specifics = undecodable_instruction(REAL_AVX512_LOG)
    assert reason == "valgrind cannot decode the program's instructions (AVX-512)"
    assert specifics.startswith("unhandled instruction bytes 0x62 0xD2 0xFD 0x8")
    assert meter_reason(f"{reason}; {specifics}; more") == reason
    # a legacy prefix before the EVEX byte is still AVX-512; other bytes are not named as AVX-512
    assert undecodable_instruction(b"vex amd64->IR: unhandled instruction bytes: 0x67 0x62 0xF1\n")[0].endswith(
        "(AVX-512)")
    other = undecodable_instruction(b"vex amd64->IR: unhandled instruction bytes: 0xF 0x1 0xD0 0x0\n")
    assert other == ("valgrind cannot decode the program's instructions", "unhandled instruction bytes 0xF 0x1 0xD0 0x0")
    assert undecodable_instruction(b"==7== valgrind: Unrecognised instruction at address 0x4011.\n")[0] == \
        "valgrind cannot decode the program's instructions"
    # an ordinary log (a crash, a clean run) is not a meter limitation
    assert undecodable_instruction(b"==2== Process terminating with default action of signal 11 (SIGSEGV)\n"
                                   b"==2== I   refs:      1,000\n") is None
    assert undecodable_instruction(b"") is None and undecodable_instruction(None) is None


@needs_avx512
def test_avx512_program_is_unsupported_by_the_meter_not_a_crash():
    """valgrind 3.19 cannot decode AVX-512 and kills the program with SIGILL; the same binary runs natively. That is
    the meter's limitation (``unsupported_by_meter``), never ``runtime_error``; ``compare(on_unsupported="wall")``
    measures the pair with interleaved wall/CPU time instead and says why."""
    avx = compiled(AVX512)
    cases = cases_for([3000, 20])
    with Sandbox(files={"main": avx.binary}, limits=Limits()) as sb:  # natively: correct
        native = sb.run(["/prog/main"], cases[0][1], Limits())
    assert native.ok and native.stdout == cases[0][2]
    run = measure_instructions(avx.binary, cases)
    c = run.counts[0]
    assert c.status is MeasureStatus.UNSUPPORTED_BY_METER and c.signal == 4 and c.instructions is None, c
    assert c.detail.startswith("valgrind cannot decode the program's instructions (AVX-512); ") and \
        "native run" in c.detail
    quad = program(QUAD, "quad")
    plain = compare(quad, MeasuredProgram.of(avx, "avx"), cases)
    assert not plain.ok and plain.failures[0]["status"] == "unsupported_by_meter" and plain.fallback_reason is None
    fb = compare(quad, MeasuredProgram.of(avx, "avx"), cases, on_unsupported="wall", repeats=2, warmup=1)
    assert fb.ok, fb.failures
    assert (fb.method, fb.unit, fb.requested_method) == ("wall", "seconds", "instructions")
    assert fb.fallback_reason == "valgrind cannot decode the program's instructions (AVX-512)"
    assert fb.extra["meter_failures"][0]["program"] == "b"
    assert fb.speedup == pytest.approx(fb.a_total / fb.b_total) and fb.speedup > 1  # O(n^2) vs O(n) on n=3000
    assert {o["program"] for o in fb.order} == {"a", "b"}  # both measured together, interleaved
    d = fb.to_dict()
    assert d["fallback_reason"] == fb.fallback_reason and d["requested_method"] == "instructions"


def test_sigill_with_a_forged_meter_message_is_still_a_crash():
    """Detection is precise: a log line saying "unhandled instruction" is not enough; the native run must succeed."""
    run = measure_instructions(compile_binary(FAKE_SIGILL), [("x", b"", None)])
    c = run.counts[0]
    assert c.status is MeasureStatus.RUNTIME_ERROR and "native run failed too" in c.detail, c
    # ud2 (__builtin_trap) is an instruction VEX does not handle either, but it also kills the native run: a crash
    trap = measure_instructions(compile_binary("int main() { __builtin_trap(); }\n"), [("t", b"", None)])
    assert trap.counts[0].status is MeasureStatus.RUNTIME_ERROR, trap.counts[0]
