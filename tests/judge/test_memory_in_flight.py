"""Memory parked in a Unix socket cycle is freed before the next run is measured (red team, 2026-12-07).

A case can send a Unix socket over itself (``SCM_RIGHTS``) with memfds attached and exit: no process
holds the cycle, the kill and the wipe find nothing, and its pages stay charged to the sandbox's
memory cgroup until the kernel's Unix garbage collector runs. The next run's baseline held them;
that run then released a socket (which schedules the collector), waited, and touched 200 MiB against
a 128 MiB limit: its peak over the baseline came out at about 100 MiB, AC (5 of 5 cases; through
``compute_score`` a score of 1.0 where the same program alone scores 0.0). The server now has the
collector take every socket a case left before the next run is measured (docs/sandbox.md, "Memory").
"""

from __future__ import annotations

import time

from arbiter.judge.judge import judge
from arbiter.judge.task import Task
from arbiter.judge.testsuite import StdioCase, TestSuite
from arbiter.judge.verdict import Outcome
from arbiter.sandbox.limits import Limits, MiB
from session_pairs import wait_idle

LIMITS = Limits(cpu_seconds=4, wall_seconds=20, memory_bytes=128 * MiB)

#: "park N": parks N MiB of memfds in a cycle of Unix sockets in flight (the cycle's socket bound
#: to an abstract name), prints whether an earlier one was still listed. "hog N": releases a socket
#: pair (the collector is scheduled), waits for it, touches N MiB. Both print "ok" last.
PARKER = r"""
import array, mmap, os, socket, sys, time
what, n = sys.stdin.readline().split()
n = int(n)
seen = "@arbiter-park" in open("/proc/net/unix").read()
if what == "park":
    fds = []
    for _ in range(n // 20):
        fd = os.memfd_create("park")
        os.ftruncate(fd, 20 << 20)
        m = mmap.mmap(fd, 20 << 20)
        for i in range(0, 20 << 20, 4096):
            m[i] = 1
        m.close()
        fds.append(fd)
    a = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    a.bind(b"\0arbiter-park")
    b = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    b.connect(b"\0arbiter-park")
    b.sendmsg([b"x"], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", fds))])
    b.sendmsg([b"y"], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", [a.fileno(), b.fileno()]))])
    print("seen" if seen else "none")
else:
    x, y = socket.socketpair()
    x.close()
    y.close()
    time.sleep(0.3)
    big = bytearray(n << 20)
    for i in range(0, len(big), 4096):
        big[i] = 1
print("ok")
"""

PARK = StdioCase("park", b"park 100\n", (b"none\nok\n",))  # (no earlier stash is ever seen)
HOG = StdioCase("hog", b"hog 200\n", (b"ok\n",))  # over 128 MiB: MLE, whatever ran before


def _task(*cases: StdioCase) -> Task:
    return Task("python", PARKER, TestSuite(cases), limits=LIMITS, run_all=True)


def _outcomes(v):
    return [(c.name, c.outcome, (c.memory_bytes or 0) // MiB) for c in v.cases]


def test_memory_parked_by_an_earlier_case_hides_nothing(one_sandbox_pool):
    v = judge(_task(HOG, PARK, HOG, PARK, PARK, HOG))
    assert [c.outcome for c in v.cases] == [Outcome.MLE, Outcome.AC, Outcome.MLE, Outcome.AC, Outcome.AC,
                                            Outcome.MLE], _outcomes(v)


def test_memory_parked_by_a_case_with_a_large_input_hides_nothing(one_sandbox_pool):
    """The parking case's input is staged (over 1 MiB), in its baseline and freed after it: the wait
    for the parked pages must not count that as their release (red team: 5 of 9 hogs AC)."""
    big_park = StdioCase("park", b"park 100\n" + b"#" * (100 << 20) + b"\n", (b"none\nok\n",))
    v = judge(_task(HOG, big_park, HOG, big_park, HOG))
    assert [c.outcome for c in v.cases] == [Outcome.MLE, Outcome.AC, Outcome.MLE, Outcome.AC, Outcome.MLE], _outcomes(v)


def test_memory_parked_by_the_previous_submission_hides_nothing(one_sandbox_pool):
    """The parking case is the session's last (run by the forker itself): when the server finds its
    sockets in flight, the sandbox whose cgroup the pages were charged to is given up (the kernel,
    which starts its collector itself when the case's own sockets are released at its exit, may
    have freed them first: then the sandbox is reused)."""
    first = judge(_task(PARK))
    assert first.outcome is Outcome.AC, _outcomes(first)
    deadline = time.monotonic() + 120
    while one_sandbox_pool.stats()["discarded"] + one_sandbox_pool.stats()["idle"] < 1:  # (recycled meanwhile)
        assert time.monotonic() < deadline, one_sandbox_pool.stats()
        time.sleep(0.01)
    second = judge(_task(HOG))
    stats = one_sandbox_pool.stats()
    assert stats["discarded"] + stats["reused"] == 1, stats
    assert second.outcome is Outcome.MLE, (_outcomes(second), stats)


def test_a_correct_submission_after_a_parking_one_reuses_the_sandbox(one_sandbox_pool):
    """Only a session whose case left sockets in flight gives its sandbox up."""
    judge(_task(StdioCase("hog", b"hog 20\n", (b"ok\n",))))
    wait_idle(one_sandbox_pool)
    v = judge(_task(StdioCase("hog", b"hog 20\n", (b"ok\n",))))
    assert v.outcome is Outcome.AC, _outcomes(v)
    assert one_sandbox_pool.stats()["reused"] == 1
