"""Memory cannot be parked in flight: no case can send a file over a socket (red teams, 2026-12-07).

A case that sent a Unix socket over itself (``SCM_RIGHTS``) with memfds attached and exited left
files no process holds: the kill and the wipe found nothing, and the pages stayed charged to the
sandbox's memory cgroup until the kernel's Unix garbage collector ran. The next run's baseline held
them; that run then had the collector free them and touched 200 MiB against a 128 MiB limit: its
peak over the baseline came out at about 100 MiB, AC (through ``compute_score`` a score of 1.0 where
the same program alone scores 0.0). Looking for the cycle after each case left a race a program
could win (33 of 33). The seccomp filter now refuses ``sendmsg`` on every descriptor a case can
have (docs/sandbox.md, "Memory: a run's own, whatever ran before"): the parking case fails with
its own error, and every hog is MLE.
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

#: "park N": tries to park N MiB of memfds in a cycle of Unix sockets in flight (the cycle's socket
#: bound to an abstract name), prints whether an earlier one was still listed. "hog N": releases a
#: socket pair (the collector is scheduled), waits for it, touches N MiB. Both print "ok" last.
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


def _refused(v, case_index):
    case = v.cases[case_index]
    return case.outcome is Outcome.RE and "PermissionError" in (case.detail + case.diff)


def test_memory_parked_by_an_earlier_case_hides_nothing(one_sandbox_pool):
    v = judge(_task(HOG, PARK, HOG, PARK, PARK, HOG))
    assert [c.outcome for c in v.cases] == [Outcome.MLE, Outcome.RE, Outcome.MLE, Outcome.RE, Outcome.RE,
                                            Outcome.MLE], _outcomes(v)
    assert _refused(v, 1), v.cases[1]


#: Red team 3's variant of the park: the memfds in a third socket's queue, that socket sent into the
#: cycle, the collector run by the case itself and waited for before it exits.
NESTED = '''
    c, d = socket.socketpair()
    d.sendmsg([b"x"], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", fds))])
    b.sendmsg([b"x"], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", [c.fileno(), d.fileno()]))])
    socket.socketpair()[0].close()
    while "@arbiter-park" in open("/proc/net/unix").read():
        pass
'''


def test_the_nested_cycle_that_won_the_race_is_refused_too(one_sandbox_pool):
    """It won the race of the check after each case (33 of 33 AC); its first ``sendmsg`` is
    refused now."""
    plain = '    b.sendmsg([b"x"], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", fds))])\n'
    nested = PARKER.replace(plain, NESTED.lstrip("\n"))
    assert nested != PARKER
    v = judge(Task("python", nested, TestSuite((HOG, PARK, HOG, PARK, HOG)), limits=LIMITS, run_all=True))
    assert [c.outcome for c in v.cases] == [Outcome.MLE, Outcome.RE, Outcome.MLE, Outcome.RE, Outcome.MLE], _outcomes(v)
    assert _refused(v, 3), v.cases[3]


def test_memory_parked_by_the_previous_submission_hides_nothing(one_sandbox_pool):
    """The parking case is the session's last (run by the forker itself, which held the peer of
    the server's sending socket): refused there too, and the next submission is MLE."""
    first = judge(_task(PARK))
    assert first.outcome is Outcome.RE and _refused(first, 0), _outcomes(first)
    deadline = time.monotonic() + 120
    while one_sandbox_pool.stats()["discarded"] + one_sandbox_pool.stats()["idle"] < 1:  # (recycled meanwhile)
        assert time.monotonic() < deadline, one_sandbox_pool.stats()
        time.sleep(0.01)
    second = judge(_task(HOG))
    stats = one_sandbox_pool.stats()
    assert stats["discarded"] + stats["reused"] == 1, stats
    assert second.outcome is Outcome.MLE, (_outcomes(second), stats)


def test_a_correct_submission_after_another_reuses_the_sandbox(one_sandbox_pool):
    """A clean session keeps its sandbox."""
    judge(_task(StdioCase("hog", b"hog 20\n", (b"ok\n",))))
    wait_idle(one_sandbox_pool)
    v = judge(_task(StdioCase("hog", b"hog 20\n", (b"ok\n",))))
    assert v.outcome is Outcome.AC, _outcomes(v)
    assert one_sandbox_pool.stats()["reused"] == 1
