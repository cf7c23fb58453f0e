"""Red team (issue 31): the step judge's reuse and failures-first order attacked by hostile
programs and a hostile verdict folder."""

from __future__ import annotations

import shutil

import pytest

from arbiter.judge.step import Settings, StepJudge
from arbiter.judge.step.store import DiskStore, VerdictStore
from arbiter.judge.task import CompileSpec, Task
from arbiter.judge.testsuite import StdioCase, TestSuite
from arbiter.judge.verdict import Outcome
from arbiter.sandbox.limits import Limits

SUITE = TestSuite([StdioCase("a", "1\n", "1\n"), StdioCase("b", "2\n", "2\n")])

# Counts the cases run before it in its session every way it can (UDP datagrams in the network
# namespace's counters, marker files in every writable folder) and answers right unless it is the
# first case run and its input is not the suite's first: were any of these kept from one case to
# the next, it would be right in the suite's order only.
ORDER_DEPENDENT = """import os, socket
run_before = 0
try:
    lines = [l for l in open('/proc/net/snmp').read().splitlines() if l.startswith('Udp:')]
    run_before += int(dict(zip(lines[0].split()[1:], lines[1].split()[1:]))['OutDatagrams'])
    socket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(b'x', ('127.0.0.1', 9))
except OSError:
    pass
for folder in ('/work', '/tmp', '/dev/shm'):
    run_before += os.path.exists(folder + '/ran')
    try:
        open(folder + '/ran', 'w').close()
    except OSError:
        pass
n = input().strip()
print(n if run_before or n == '1' else 'no')
"""


def task(source: str) -> Task:
    return Task("python", source, SUITE, limits=Limits(cpu_seconds=2))


def test_network_counters_and_files_do_not_tell_a_case_its_order():
    """Neither the network namespace (no socket but a Unix one) nor the scratch files (wiped) tell
    a case how many ran before it: the program is wrong on case b in either order, the same
    score (other ways still tell: below)."""
    j = StepJudge(1)
    try:
        assert j.judge(task("print(1)")).outcome is Outcome.WA  # fails case b: b now runs first
        suite_order = j.judge(task(ORDER_DEPENDENT), settings=Settings(reuse=False, case_order="suite"))
        failures_first = j.judge(task(ORDER_DEPENDENT), settings=Settings(reuse=False))
        assert suite_order.outcome is Outcome.WA, suite_order.reason
        assert failures_first.score == suite_order.score, failures_first.reason
    finally:
        j.close()


# Red team 3: each way a case still counts the cases run before it in its session (seccomp and
# the wipe close the network and the files, not these). Each sets ``run_before``; the program is
# then right unless it runs first on an input that is not the suite's first.
COUNTERS = {
    # the session's PID namespace: each case is forked at the next PID (Python: 3, 4, ...); the
    # last case, the forker itself (its parent PID 1), has reaped the ones before it (cminflt)
    "pid": ("import os\nstat = open('/proc/self/stat').read().rsplit(')', 1)[1].split()\n"
            "run_before = os.getpid() - os.getppid() > 1 if os.getppid() != 1 else int(stat[8]) > 0\n"),
    # the scratch tmpfs is emptied, not mounted again: its inode numbers go on (2, 3, ...)
    "tmpfs_inode": ("import os\nopen('/dev/shm/probe', 'w').close()\n"
                    "run_before = os.stat('/dev/shm/probe').st_ino > 2\n"),
    # the forker's frame is on the case's stack: its loop's locals (seq, the last case's maxrss)
    "forker_frame": ("import sys\nf = sys._getframe()\nwhile f.f_code.co_name != 'forker_main': f = f.f_back\n"
                     "run_before = f.f_locals['seq'] > 1\n"),
    # an abstract Unix socket kept alive by an SCM_RIGHTS cycle (sockets in flight, each in the
    # other's queue: no process holds them, the kernel's unix GC does not collect them at exit)
    # is listed in the network namespace's /proc/net/unix
    "unix_in_flight": ("import array, socket\nrun_before = '@stash' in open('/proc/net/unix').read()\n"
                       "if not run_before:\n"
                       "    a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)\n"
                       "    s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM); s.bind(b'\\0stash')\n"
                       "    rights = lambda *fds: [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array('i', fds))]\n"
                       "    try:\n"
                       "        b.sendmsg([b'x'], rights(a.fileno(), s.fileno())); a.sendmsg([b'x'], rights(b.fileno()))\n"
                       "    except PermissionError:\n"
                       "        pass\n"),
    # the forker's /proc stat: the minor faults of the children it reaped (cminflt); the last
    # case is the forker itself
    "forker_stat": ("import os\nforker = os.getppid() if os.getppid() != 1 else os.getpid()\n"
                    "stat = open('/proc/%d/stat' % forker).read().rsplit(')', 1)[1].split()\n"
                    "run_before = int(stat[8]) > 0\n"),
}
COUNTER_CPP = r"""#include <cstdio>
#include <unistd.h>
#include <fcntl.h>
#include <sys/stat.h>
int main() {
    int n; if (scanf("%d", &n) != 1) return 1;
    struct stat st; fstat(open("/dev/shm/probe", O_CREAT | O_WRONLY, 0600), &st);
    bool run_before = getpid() - getppid() > 1 || st.st_ino > 2;  // the PID, the tmpfs inode
    if (run_before || n == 1) printf("%d\n", n); else puts("no");
}
"""


_COUNTS_BEFORE = ("redteam3: a case still counts the cases run before it in its session (PID numbers, tmpfs inode "
                  "numbers, the forker's frame and /proc stat), so failures-first changes "
                  "an all-or-nothing score (docs/step.md: 'One exception is known and kept')")


def _counter_param(name: str):
    """Each counter a strict xfail, but the Unix socket in flight, which passes: no case can send
    a file over a socket (the seccomp filter's descriptor floor, guest/fdfloor.py)."""
    if name == "unix_in_flight":
        return pytest.param(name)
    return pytest.param(name, marks=pytest.mark.xfail(strict=True, reason=_COUNTS_BEFORE))


@pytest.mark.parametrize("name", [_counter_param(n) for n in [*COUNTERS, "cpp"]])
def test_a_case_cannot_count_the_cases_before_it(name):
    if name == "cpp":
        t = Task("cpp", COUNTER_CPP, SUITE, limits=Limits(cpu_seconds=2))
        prime = Task("cpp", '#include <cstdio>\nint main() { std::puts("1"); }\n', SUITE, limits=Limits(cpu_seconds=2))
    else:
        t = task(COUNTERS[name] + "n = input().strip()\nprint(n if run_before or n == '1' else 'no')\n")
        prime = task("print(1)")
    j = StepJudge(1)
    try:
        assert j.judge(prime).outcome is Outcome.WA  # fails case b: b now runs first
        suite_order = j.judge(t, settings=Settings(reuse=False, case_order="suite"))
        failures_first = j.judge(t, settings=Settings(reuse=False))
        assert suite_order.outcome is Outcome.WA, suite_order.reason
        assert failures_first.score == suite_order.score, failures_first.reason
    finally:
        j.close()


def test_a_verdict_file_under_another_keys_name_is_a_miss(tmp_path):
    """An entry's checksum covers its key: a valid entry under another key's name (a copy, a
    merged folder) is judged again, never served as that key's verdict."""
    j = StepJudge(1, store=VerdictStore(disk=DiskStore(tmp_path)))
    right, wrong = task("print(input())"), task("print(0)")
    assert j.judge(right).outcome is Outcome.AC
    j.close()
    k_right, k_wrong = j.key(right), j.key(wrong)
    (tmp_path / k_wrong[:2]).mkdir(exist_ok=True)
    shutil.copy(tmp_path / k_right[:2] / k_right, tmp_path / k_wrong[:2] / k_wrong)
    later = StepJudge(1, store=VerdictStore(disk=DiskStore(tmp_path)))  # the next run over the folder
    try:
        v = later.judge(wrong)
        assert v.outcome is Outcome.WA, f"print(0) served {v.outcome.value} (cached={v.cached})"
    finally:
        later.close()


SLOW_TO_COMPILE = """#include <cstdio>
constexpr long long spin() {
    long long s = 0;
    for (int i = 0; i < 200000; ++i) for (int k = 0; k < 200000; ++k) s += (i ^ k) & 7;
    return s;
}
constexpr long long value = spin();
int main() { std::printf("%lld\\n", value); }
"""


def test_a_compile_stopped_by_a_limit_is_not_reused():
    t = Task("cpp", SLOW_TO_COMPILE, TestSuite((StdioCase("1", b"", (b"1\n",)),)),
             compile=CompileSpec(timeout_seconds=2))
    j = StepJudge(1)
    try:
        first = j.judge(t)
        assert first.outcome is Outcome.CE and "time limit" in first.reason, first.reason
        again = j.judge(t)
        assert not again.cached, "a compile time limit, judged again, was the first run's verdict"
    finally:
        j.close()


@pytest.mark.parametrize("reason, output, stopped", [
    ("compile time limit exceeded", "", True),
    ("compile error", "the compiler exceeded the memory limit (512 MiB)\n", True),
    ("compile error", "the compiler was killed (SIGKILL)\n", True),
    ("compile error", "g++: fatal error: Killed signal terminated program cc1plus\n", True),
    ("compile error", "main.cpp:3:5: error: 'x' was not declared in this scope\n", False),
    ("compile error", "", False),
])
def test_a_ce_from_a_stopped_build_is_told_from_the_sources_own(reason, output, stopped):
    from arbiter.judge.step.store import reusable
    from arbiter.judge.verdict import Verdict
    from arbiter.languages.base import build_stopped_by_host

    assert build_stopped_by_host(reason, output) is stopped
    assert reusable(Verdict(Outcome.CE, 0.0, reason=reason, compile_output=output)) is not stopped
