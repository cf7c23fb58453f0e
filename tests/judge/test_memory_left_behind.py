"""Memory a run did not own, taken off its peak or left in the next run's baseline (red team 48, December 2026).

Each was a false AC on the memory limit (128 MiB here), mended:

- stdout's pages were taken off the peak whole, though only what stdout held at the peak belongs
  off it: touch 185 MiB, free it, print the answer and 62 MiB of spaces: AC. At most
  ``meter.OUTPUT_ALLOWANCE`` (4 MiB) comes off now, counted from the pages stdout really has (a
  call case's sparse ``ftruncate(1, 63 MiB)`` took 63 MiB off before);
- real-time signals a case queued on the forker (same uid; it blocks them) stayed pending: the
  forker ended itself only at the next request, after that run's baseline, and its memory and the
  queue (~10 MiB) left during the run. A forker with a signal pending is replaced now;
- kernel AIO rings (``io_setup``) are freed after their process exits: ~4 MiB in the next
  baseline, gone during that run. The seccomp filter refuses kernel AIO now;
- the session's last case, run by the forker itself, could free the forker's own pages (a 10 MiB
  constant of its source). The forker runs it in place only for a small source and no library
  imported for it at load now.
"""

from __future__ import annotations

from arbiter.judge.judge import judge
from arbiter.judge.task import Task
from arbiter.judge.testsuite import StdioCase, TestSuite
from arbiter.judge.verdict import Outcome
from arbiter.sandbox.limits import Limits, MiB

LIMITS = Limits(cpu_seconds=4, wall_seconds=20, memory_bytes=128 * MiB)

LATE_OUTPUT_PY = r"""
import sys
n, pad = map(int, sys.stdin.readline().split())
big = bytearray(n << 20)
for i in range(0, len(big), 4096):
    big[i] = 1
del big
sys.stdout.write("42\n")
for _ in range(pad):
    sys.stdout.write(" " * (1 << 20))
sys.stdout.write("\n")
"""

LATE_OUTPUT_CPP = r"""
#include <cstdio>
#include <cstdlib>
#include <cstring>
int main() {
    int n, pad;
    if (scanf("%d %d", &n, &pad) != 2) return 1;
    size_t size = (size_t)n << 20;
    char *p = (char *)malloc(size);
    for (size_t i = 0; i < size; i += 4096) p[i] = 1;
    int check = p[size / 2];
    free(p);
    printf("%d\n", 41 + check);
    static char chunk[1 << 20];
    memset(chunk, ' ', sizeof chunk);
    for (int i = 0; i < pad; i++) fwrite(chunk, 1, sizeof chunk, stdout);
    printf("\n");
}
"""

#: "sig": queues real-time signals on its parent (the forker) until refused; "touch N": N MiB.
SIGNALS_PY = r"""
import os, signal, sys
what = sys.stdin.readline().split()
if what[0] == "sig":
    try:
        for n in range(10 ** 6):
            os.kill(os.getppid(), signal.SIGRTMIN + n % 8)
    except OSError:
        pass
else:
    big = bytearray(int(what[1]) << 20)
    for i in range(0, len(big), 4096):
        big[i] = 1
print(42)
"""

AIO_CPP = r"""
#include <cstdio>
#include <cstdlib>
#include <sys/syscall.h>
#include <unistd.h>
int main() {
    int n;
    if (scanf("%d", &n) != 1) return 1;
    size_t size = (size_t)n << 20;
    char *p = (char *)malloc(size);
    for (size_t i = 0; i < size; i += 4096) p[i] = 1;
    int check = p[size / 2];
    free(p);
    int refused = 0;
    for (long events = 32768; events >= 1; events /= 2)
        for (;;) {
            unsigned long ctx = 0;
            if (syscall(SYS_io_setup, events, &ctx) != 0) { refused = 1; break; }
        }
    printf("%d\n", 41 + check * refused);
}
"""


def _outcomes(v):
    return [(c.name, c.outcome, (c.memory_bytes or 0) // MiB) for c in v.cases]


def _judge(language, source, cases):
    suite = TestSuite(tuple(StdioCase(name, stdin, (b"42\n",)) for name, stdin in cases))
    return judge(Task(language, source, suite, limits=LIMITS, run_all=True))


def test_output_printed_after_the_peak_is_not_taken_off_it():
    for language, source in (("python", LATE_OUTPUT_PY), ("cpp", LATE_OUTPUT_CPP)):
        v = _judge(language, source, [("late", b"185 62\n"), ("alone", b"185 0\n"), ("fits", b"100 3\n")])
        assert [c.outcome for c in v.cases] == [Outcome.MLE, Outcome.MLE, Outcome.AC], (language, _outcomes(v))


def test_signals_queued_on_the_forker_leave_nothing_for_the_next_case():
    v = _judge("python", SIGNALS_PY, [("sig", b"sig\n"), ("touch", b"touch 134\n"), ("sig2", b"sig\n"),
                                      ("touch2", b"touch 134\n")])
    assert [c.outcome for c in v.cases] == [Outcome.AC, Outcome.MLE, Outcome.AC, Outcome.MLE], _outcomes(v)


def test_kernel_aio_is_refused_so_its_rings_leave_nothing_for_the_next_case():
    v = _judge("cpp", AIO_CPP, [("a", b"64\n"), ("b", b"131\n"), ("c", b"131\n")])
    assert [c.outcome for c in v.cases] == [Outcome.AC, Outcome.MLE, Outcome.MLE], _outcomes(v)


def test_the_last_case_cannot_free_a_large_sources_constants():
    """A 10 MiB constant in the source: the forker compiled it (its own pages); the last case
    drops them (``madvise(MADV_DONTNEED)``) and touches 135 MiB. Forked, it cannot free them."""
    source = ("import ctypes, mmap, sys\nBLOB = b'" + "x" * (10 << 20) + "'\n" + r"""
what = sys.stdin.readline().split()
if what[0] == "free":
    libc = ctypes.CDLL(None)
    start = (id(BLOB) + 4095) & ~4095
    libc.madvise(ctypes.c_void_p(start), ctypes.c_size_t((10 << 20) - 8192), 4)
big = bytearray(int(what[1]) << 20)
for i in range(0, len(big), 4096):
    big[i] = 1
print(42)
""")
    v = _judge("python", source, [("a", b"keep 1\n"), ("last", b"free 135\n")])
    assert [c.outcome for c in v.cases] == [Outcome.AC, Outcome.MLE], _outcomes(v)
