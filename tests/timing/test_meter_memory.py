"""The meter's own memory (red team, PIE speedup reward): valgrind and the program share one address space, and a
program that wrote into the counting tool's counters got any speedup it liked (752x for a natively unchanged
program). A store, a system call's output or a writable /proc mem file landing in valgrind's memory now ends the
measured run: ``writes_meter``, never a figure, under both meters. And a program that runs an AVX-512 instruction
only when measured, on a CPU without AVX-512, no longer gets the wall-time fallback it chose."""

from __future__ import annotations

import pytest

from arbiter.languages.cpp.compile import CompileSpec, compile_cpp
from arbiter.timing.cycles import DEFAULT_MODEL
from arbiter.timing.instructions import measure_instructions
from arbiter.timing.status import MeasureStatus
from arbiter.timing.valgrind import find_valgrind, host_has_cpu_flag

# Natively (the judge's runs) it only prints; under the meter it finds a writable mapping of the tool and writes
# the byte already there back (``HOW``), so that, unrefused, nothing changes and the run would count as usual.
ATTACK = r"""
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <sys/syscall.h>
#include <unistd.h>
static unsigned char* meter_byte() {
    FILE* f = fopen("/proc/self/maps", "r");
    char line[512];
    unsigned long lo = 0, hi = 0;
    char perms[8];
    while (f && fgets(line, sizeof line, f))
        if (strstr(line, "arbiter-count") && sscanf(line, "%lx-%lx %7s", &lo, &hi, perms) == 3 && perms[1] == 'w')
            return (unsigned char*)(lo + 64);
    return nullptr;
}
int main() {
    unsigned char* p = meter_byte();
    if (p) {
        unsigned char v = *p;
        HOW
    }
    puts("42");
}
"""
HOWS = {
    "store": "*(volatile unsigned char*)p = v;",
    "syscall": "int fds[2]; pipe(fds); write(fds[1], &v, 1); read(fds[0], p, 1);",
    "proc_mem": 'int m = open("/proc/self/mem", O_RDWR); pwrite(m, &v, 1, (off_t)(unsigned long)p);',
    # a second red team: kernel writes valgrind's wrappers do not announce as output (the word already there is
    # written back, or the call fails), and an open that is not open()
    "prctl": "syscall(SYS_prctl, 40 /* PR_GET_TID_ADDRESS */, (unsigned long)p, 0, 0, 0);",
    "futex": "unsigned w = 0; syscall(SYS_futex, &w, 5 /* FUTEX_WAKE_OP */, 0, 0, (unsigned*)p, 0);",
    "creat": 'int m = creat("/proc/self/mem", 0600); pwrite(m, &v, 1, (off_t)(unsigned long)p);',
    "unshare": "syscall(SYS_unshare, 0x10000000 /* CLONE_NEWUSER */);",
    # a third: io_submit writes into the request blocks it is pointed to (a list the program holds, not an
    # argument), so asynchronous I/O is refused from its set-up on
    "aio": "unsigned long ctx = 0; syscall(SYS_io_setup, 1, &ctx);",
}


def _binary(source: str) -> bytes:
    result = compile_cpp(source, CompileSpec())
    assert result.ok, result.message
    return result.binary


@pytest.mark.parametrize("meter", ["instructions", "cycles"])
@pytest.mark.parametrize("how", sorted(HOWS))
def test_a_write_into_the_meters_memory_ends_the_run(how, meter):
    vg = find_valgrind() if meter == "instructions" else find_valgrind().with_cycles(DEFAULT_MODEL)
    binary = _binary(ATTACK.replace("HOW", HOWS[how]))
    run = measure_instructions(binary, [("c", b"", b"42\n")], valgrind=vg)
    c = run.counts[0]
    assert c.status is MeasureStatus.WRITES_METER and c.instructions is None and not run.ok, (c.status, c.detail)
    assert "refused by the meter" in c.detail, c.detail


def test_a_register_a_system_call_does_not_read_is_not_its_argument():
    """getpid() with an address of the meter's memory left in a register it does not read (the program's own
    value: a third red team's false refusal) is measured."""
    honest = ATTACK.replace("HOW", 'asm volatile("mov %0, %%r10\\n\\tmov $39, %%eax\\n\\tsyscall" : : "r"(p) '
                                   ': "rax", "rcx", "r10", "r11", "memory");')
    run = measure_instructions(_binary(honest), [("c", b"", b"42\n")])
    assert run.ok and run.counts[0].status is MeasureStatus.OK, run.counts[0].detail


def test_an_honest_program_counts_as_before_under_both_meters():
    binary = _binary(ATTACK.replace("HOW", ""))  # finds the mapping, writes nothing
    for vg in (find_valgrind(), find_valgrind().with_cycles(DEFAULT_MODEL)):
        run = measure_instructions(binary, [("c", b"", b"42\n")], valgrind=vg)
        assert run.ok and run.counts[0].status is MeasureStatus.OK and run.total > 0, run.counts[0].detail


EVEX_WHEN_MEASURED = r"""
#include <cstdio>
#include <cstring>
int main() {
    FILE* f = fopen("/proc/self/maps", "r");
    char line[512];
    bool measured = false;
    while (f && fgets(line, sizeof line, f))
        measured |= strstr(line, "arbiter-count") != nullptr;
    if (measured)
        asm volatile(".byte 0x62, 0xf1, 0x7d, 0x48, 0xef, 0xc0");  // vpxord zmm0, zmm0, zmm0 (EVEX)
    puts("42");
}
"""


@pytest.mark.skipif(host_has_cpu_flag("avx512f"), reason="this CPU has AVX-512: such a program may run it natively")
def test_an_avx512_instruction_run_only_when_measured_is_the_programs_crash():
    """On a CPU without AVX-512 the native run cannot have run it: not the meter's limitation (which would let the
    program pick the wall-time fallback), a crash under measurement."""
    run = measure_instructions(_binary(EVEX_WHEN_MEASURED), [("c", b"", b"42\n")])
    c = run.counts[0]
    assert c.status is MeasureStatus.RUNTIME_ERROR and "this CPU does not have" in c.detail, (c.status, c.detail)
