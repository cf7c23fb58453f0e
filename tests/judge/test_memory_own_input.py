"""A case cannot free its own input to make room (red team of the lead, 2026-12-07).

A case's input is in its run's memory baseline (staged before the run, or written just before
it): the judge does not charge a program for its input. Its memfd was writable, so a case that
truncated its stdin (``ftruncate(0, 0)``) freed those pages and took their room: with a 100 MiB
input, 200 MiB touched against a 128 MiB limit was AC, in Python and in C++. The input memfd is
sealed now (no shrink, grow or write: docs/sandbox.md, "Memory: a run's own, whatever ran
before"), so every attempt fails and the run is MLE.
"""

from __future__ import annotations

from arbiter.judge.judge import judge
from arbiter.judge.task import Task
from arbiter.judge.testsuite import StdioCase, TestSuite
from arbiter.judge.verdict import Outcome
from arbiter.sandbox.limits import Limits, MiB

LIMITS = Limits(cpu_seconds=4, wall_seconds=20, memory_bytes=128 * MiB)

#: Tries to free its input every way a memfd allows (truncate, a write-mode reopen, a punched
#: hole), prints what worked, then touches 200 MiB.
PY = r"""
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
freed = []
for name, attempt in (("truncate", lambda: os.ftruncate(0, 0)),
                      ("reopen", lambda: os.ftruncate(os.open("/proc/self/fd/0", os.O_RDWR), 0)),
                      ("punch", lambda: libc.fallocate(0, 3, ctypes.c_long(0), ctypes.c_long(100 << 20)) == 0
                                        or (_ for _ in ()).throw(OSError()))):
    try:
        attempt()
        freed.append(name)
    except OSError:
        pass
print(*freed or ["none"])
big = bytearray(200 << 20)
for i in range(0, len(big), 4096):
    big[i] = 1
"""

CPP = r"""
#include <cstdio>
#include <cstdlib>
#include <fcntl.h>
#include <unistd.h>
int main() {
    bool freed = ftruncate(0, 0) == 0;
    int fd = open("/proc/self/fd/0", O_RDWR);
    freed = freed || (fd >= 0 && ftruncate(fd, 0) == 0);
    freed = freed || fallocate(0, 3, 0, 100 << 20) == 0;  // FALLOC_FL_PUNCH_HOLE | KEEP_SIZE
    std::puts(freed ? "freed" : "none");
    size_t n = 200u << 20;
    char *p = (char *)std::malloc(n);
    for (size_t i = 0; i < n; i += 4096) p[i] = 1;
    return p[n - 4096] == 1 ? 0 : 1;
}
"""


def _verdict(language: str, source: str, stdin: bytes):
    cases = (StdioCase("a", stdin, (b"none\n",)), StdioCase("b", stdin, (b"none\n",)))
    return judge(Task(language, source, TestSuite(cases), limits=LIMITS, run_all=True))


def test_a_case_cannot_free_its_large_input_to_make_room():
    """A 100 MiB input (staged before the run)."""
    big = b"#" * (100 << 20)
    for language, source in (("python", PY), ("cpp", CPP)):
        v = _verdict(language, source, big)
        assert [c.outcome for c in v.cases] == [Outcome.MLE, Outcome.MLE], \
            (language, [(c.outcome, (c.memory_bytes or 0) // MiB, c.detail) for c in v.cases])


def test_the_input_stays_readable_and_unchanged():
    """The seals change nothing a program may do with its input: it reads it (and seeks in it)."""
    src = "import os, sys\ndata = sys.stdin.buffer.read()\nos.lseek(0, 0, 0)\nprint(len(data), len(sys.stdin.buffer.read()), data[:3].decode())\n"
    small, big = b"abc" * 10, b"xyz" * (1 << 20)
    suite = TestSuite((StdioCase("small", small, (b"30 30 abc\n",)), StdioCase("big", big, (b"3145728 3145728 xyz\n",))))
    assert judge(Task("python", src, suite, limits=LIMITS, run_all=True)).outcome is Outcome.AC
