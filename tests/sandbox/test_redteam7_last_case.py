"""Red team 7: attacks on the session's last case being reported before its teardown (73cf9f4).

A run marked ``last`` gets a pipe; the case's process writes its status there once its program
ended, the forker takes the kernel's figures for that one process (its CPU clock, ``VmHWM``) and
kills it. The bugs it found were fixed: without cgroups the last case is not reported early (its
children's CPU and memory are only in the case's rusage), and the pipe sits above the case's
descriptors (at or above its ``RLIMIT_NOFILE``). The rest were held.
"""

from __future__ import annotations

import pytest

import arbiter.sandbox.sandbox as sandbox_module
from arbiter.checkers.spec import CheckerSpec
from arbiter.judge.judge import judge
from arbiter.judge.task import Task
from arbiter.judge.testsuite import CallCase, StdioCase, TestSuite
from arbiter.judge.verdict import Outcome
from arbiter.sandbox.execution import Status
from arbiter.sandbox.limits import MiB, Limits
from arbiter.sandbox.sandbox import Sandbox

from test_last_case import FIND_PIPE  # (the program's own search for its ENDED pipe)


def both(source: str, limits: Limits, stdin: bytes = b"", fresh: bool = True):
    """``source`` run not-last and last (each in a sandbox of its own when ``fresh``); also
    what each sandbox had left afterwards."""
    out = []
    if fresh:
        for last in (False, True):
            with Sandbox(limits=limits) as sb:
                assert sb.load_python(source) is None
                ex = sb.run_python(stdin, limits, last=last)
                out.append((ex, sb.stray_processes()))
        return out
    with Sandbox(limits=limits) as sb:
        assert sb.load_python(source) is None
        for last in (False, True):
            ex = sb.run_python(stdin, limits, last=last)
            out.append((ex, sb.stray_processes()))
    return out


@pytest.fixture
def no_cgroups(monkeypatch):
    """A machine without cgroups (docs/sandbox.md, CGROUPS: "Without cgroups, memory is bounded
    by RLIMIT_AS and processes by RLIMIT_NPROC"): the CPU and memory of a run are the case's
    rusage alone."""
    monkeypatch.setattr(sandbox_module, "_cgroups_ok", (False, "red team: no cgroups"))


# ---- bugs ---------------------------------------------------------------------------------------

#: Two children, each burning 0.7 s of CPU (under its own RLIMIT_CPU of ceil(1)+1 s), waited for.
CPU_IN_WAITED_CHILDREN = (
    "import os, time\n"
    "for _ in range(2):\n"
    "    pid = os.fork()\n"
    "    if pid == 0:\n"
    "        t = time.process_time()\n"
    "        while time.process_time() - t < 0.7:\n"
    "            pass\n"
    "        os._exit(0)\n"
    "    os.waitpid(pid, 0)\n"
    "print(42)\n")

#: One child touching 300 MiB (under RLIMIT_AS = limit + 64 MiB), waited for.
MEMORY_IN_A_WAITED_CHILD = (
    "import os\n"
    "pid = os.fork()\n"
    "if pid == 0:\n"
    "    x = bytearray(300 << 20)\n"
    "    x[::4096] = b'1' * len(x[::4096])\n"
    "    os._exit(0)\n"
    "os.waitpid(pid, 0)\n"
    "print(42)\n")


def test_no_cgroups_cpu_of_waited_children_is_counted_on_the_last_case(no_cgroups):
    lim = Limits(cpu_seconds=1, wall_seconds=4)
    (before, _), (last, left) = both(CPU_IN_WAITED_CHILDREN, lim)
    assert before.status is Status.TIME_LIMIT, before
    assert last.status is Status.TIME_LIMIT, (last.status, last.cpu_seconds)
    assert left == []


def test_no_cgroups_memory_of_a_waited_child_is_counted_on_the_last_case(no_cgroups):
    lim = Limits(cpu_seconds=2, wall_seconds=4, memory_bytes=256 * MiB)
    (before, _), (last, left) = both(MEMORY_IN_A_WAITED_CHILD, lim)
    assert before.status is Status.MEMORY_LIMIT, before
    assert last.status is Status.MEMORY_LIMIT, (last.status, last.peak_memory_bytes)
    assert left == []


def test_no_cgroups_judge_rejects_cpu_in_waited_children(no_cgroups, one_sandbox_pool):
    suite = TestSuite((StdioCase("only", b"", (b"42\n",)),))
    task = Task("python", CPU_IN_WAITED_CHILDREN, suite, limits=Limits(cpu_seconds=1, wall_seconds=4),
                checker=CheckerSpec("tokens"))
    v = judge(task)
    assert v.outcome is Outcome.TLE, (v.outcome, v.reason, [(c.name, c.outcome, c.detail) for c in v.cases])


def test_the_last_case_has_the_same_descriptors_as_any_other():
    source = (
        "import os\n"
        "n = 0\n"
        "try:\n"
        "    while True:\n"
        "        os.open('/dev/null', os.O_RDONLY)\n"
        "        n += 1\n"
        "except OSError:\n"
        "    pass\n"
        "print(n)\n")
    lim = Limits(cpu_seconds=2, wall_seconds=4)
    (before, _), (last, left) = both(source, lim, fresh=False)
    assert before.status is Status.OK and last.status is Status.OK
    assert last.stdout == before.stdout, (before.stdout, last.stdout)


# ---- held ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("data", [b"\0", b"\0\0", b"\0\0\0"], ids=["1-byte", "2-bytes", "3-bytes"])
def test_a_partial_record_changes_nothing(data):
    """A partial record (1-3 bytes) is no record: the forker falls back to the case's exit, which
    is reported with its real status and output (exit 3 after more output), last or not."""
    source = FIND_PIPE + (
        "import sys, time\n"
        "for fd in ended_fds():\n"
        f"    os.write(fd, {data!r})\n"
        "time.sleep(0.1)\n"
        "print('after')\n"
        "sys.exit(3)\n")
    lim = Limits(cpu_seconds=2, wall_seconds=4)
    (before, _), (last, left) = both(source, lim)
    assert before.status is Status.RUNTIME_ERROR and before.exit_code == 3, before
    assert last.status is Status.RUNTIME_ERROR and last.exit_code == 3, last
    assert last.stdout == b"after\n" and last.wall_seconds < 1, last
    assert left == []


def test_a_partial_record_with_sigpipe_default_is_the_programs_own_doing():
    """After a partial record the forker closes its end; the harness's own record then gets EPIPE.
    With SIGPIPE at SIG_DFL (a common idiom) that kills the case: only a program that wrote the
    partial record itself gets there; an honest SIG_DFL program is OK."""
    honest = "import signal\nsignal.signal(signal.SIGPIPE, signal.SIG_DFL)\nprint(int(input()) * 2)\n"
    lim = Limits(cpu_seconds=2, wall_seconds=4)
    (before, _), (last, left) = both(honest, lim, stdin=b"21\n")
    assert before.status is Status.OK and last.status is Status.OK, (before, last)
    assert last.stdout == b"42\n" and left == []


def test_a_record_from_a_thread_ends_the_program_there_and_nothing_later_counts():
    """A thread forges exit 0 while the main thread is still going to fail: the case ends at the
    record (as by os._exit(0) from that thread), the main thread's later output and failure
    never happen, nothing is left, and the run is short."""
    source = FIND_PIPE + (
        "import struct, sys, threading, time\n"
        "print('1', flush=True)\n"
        "def forge():\n"
        "    for fd in ended_fds():\n"
        "        os.write(fd, struct.pack('=i', 0))\n"
        "threading.Thread(target=forge).start()\n"
        "time.sleep(0.3)\n"
        "print('late', flush=True)\n"
        "raise SystemExit(7)\n")
    lim = Limits(cpu_seconds=2, wall_seconds=4)
    with Sandbox(limits=lim) as sb:
        assert sb.load_python(source) is None
        ex = sb.run_python(b"", lim, last=True)
        left = sb.stray_processes()
    assert ex.status is Status.OK and ex.stdout == b"1\n", ex
    assert ex.wall_seconds < 0.3, ex.wall_seconds
    assert left == []


def test_a_record_from_a_grandchild_after_the_main_failed_is_not_taken():
    """The main exits 5 without its own record (it closed its copy of the pipe: the harness then
    writes none); a grandchild holding the pipe forges exit 0 meanwhile: the forker, polling the
    case's pidfd too, reads the record only while the case's memory is still there; once the case
    has exited (its files closed only after its memory went) it takes the exit."""
    source = FIND_PIPE + (
        "import struct, sys, time\n"
        "fds = ended_fds()\n"
        "if os.fork() == 0:\n"
        "    if os.fork() == 0:\n"
        "        deadline = time.monotonic() + 1\n"
        "        while time.monotonic() < deadline:\n"
        "            for fd in fds:\n"
        "                try:\n"
        "                    os.write(fd, struct.pack('=i', 0))\n"
        "                except OSError:\n"
        "                    pass\n"
        "            time.sleep(0.0002)\n"
        "    os._exit(0)\n"
        "for fd in fds:\n"
        "    os.close(fd)\n"
        "time.sleep(0.01)\n"
        "sys.exit(5)\n")
    lim = Limits(cpu_seconds=2, wall_seconds=4)
    for _ in range(3):
        with Sandbox(limits=lim) as sb:
            assert sb.load_python(source) is None
            ex = sb.run_python(b"", lim, last=True)
            left = sb.stray_processes()
        # the grandchild's forged 0 lands before the main's exit: that is os._exit(0) then
        # (its choice), else the main's own 5; never anything else, nothing left behind
        assert (ex.status, ex.exit_code) in ((Status.OK, 0), (Status.RUNTIME_ERROR, 5)), ex
        assert left == []


def test_a_stopped_forker_costs_the_program_at_most_its_wait():
    """The program stops the forker and ends normally: its record is never read; it waits
    ENDED_WAIT (1 s) and exits, the server finds the forker stopped and collects the case itself.
    The verdict and output are the same as not last; only the wall time grows (by its own doing)."""
    source = (
        "import os, signal\n"
        "forker = os.getppid()\n"
        "os.kill(forker, signal.SIGSTOP)\n"
        "print(int(input()) + 1)\n")
    lim = Limits(cpu_seconds=2, wall_seconds=5)
    for fresh in (True, False):
        (before, _), (last, left) = both(source, lim, stdin=b"41\n", fresh=fresh)
        assert before.status is Status.OK and last.status is Status.OK, (before, last)
        assert last.stdout == before.stdout == b"42\n"
        assert last.wall_seconds < 2.5, last.wall_seconds
        assert left == []


def test_a_killed_forker_leaves_the_last_case_its_own_verdict():
    source = (
        "import os, signal\n"
        "os.kill(os.getppid(), signal.SIGKILL)\n"
        "print(int(input()) + 1)\n")
    lim = Limits(cpu_seconds=2, wall_seconds=5)
    (before, _), (last, left) = both(source, lim, stdin=b"41\n")
    assert before.status is Status.OK and last.status is Status.OK, (before, last)
    assert last.stdout == b"42\n" and last.wall_seconds < 1.5, last
    assert left == []


def test_non_daemon_threads_atexit_and_multiprocessing_finish_before_the_record():
    """What CPython's shutdown runs (non-daemon threads joined, atexit) and a multiprocessing
    pool's workers all finish before the record; the output is whole."""
    source = (
        "import atexit, threading, time, multiprocessing as mp\n"
        "def sq(x):\n"
        "    return x * x\n"
        "def late():\n"
        "    time.sleep(0.2)\n"
        "    print('thread')\n"
        "threading.Thread(target=late).start()\n"
        "atexit.register(lambda: print('atexit'))\n"
        "with mp.get_context('fork').Pool(2) as p:\n"
        "    print(sum(p.map(sq, range(100))))\n")
    lim = Limits(cpu_seconds=4, wall_seconds=8)
    (before, _), (last, left) = both(source, lim)
    assert before.status is Status.OK and last.status is Status.OK, (before, last)
    assert last.stdout == before.stdout == b"328350\nthread\natexit\n"
    assert left == []


def test_call_mode_last_run_result_is_kept():
    source = ("class Solution:\n"
              "    def twice(self, x: int) -> int:\n"
              "        return 2 * x\n")
    lim = Limits(cpu_seconds=2, wall_seconds=4)
    with Sandbox(limits=lim) as sb:
        assert sb.load_python(source) is None
        a = sb.call_python("twice", (21,), limits=lim)
        b = sb.call_python("twice", (21,), limits=lim, last=True)
        c = sb.call_python("twice", (4,), limits=lim)
        left = sb.stray_processes()
    assert a.status is b.status is c.status is Status.OK, (a, b, c)
    assert a.result == b.result and b"8" in c.result, (a.result, b.result, c.result)
    assert left == []


def test_judge_verdicts_with_a_hostile_last_case_are_the_same_as_with_it_first(one_sandbox_pool):
    """The judge marks only the last case: the same failing program as the first or the last
    case of a suite gets the same verdict (forging the record, children writing after it)."""
    source = FIND_PIPE + (
        "import struct, sys\n"
        "n = int(input())\n"
        "if os.fork() == 0:\n"
        "    import time\n"
        "    time.sleep(0.05)\n"
        "    print('999', flush=True)\n"  # a child writing after the main's end
        "    os._exit(0)\n"
        "print(n + 1, flush=True)\n"
        "for fd in ended_fds():\n"  # (last: ends here, as by the os._exit(0) below)
        "    os.write(fd, struct.pack('=i', 0))\n"
        "os._exit(0)\n")
    right, wrong = StdioCase("r", b"1\n", (b"2\n",)), StdioCase("w", b"5\n", (b"7\n",))
    for suite in ((wrong, right), (right, wrong)):
        task = Task("python", source, TestSuite(suite), limits=Limits(cpu_seconds=2, wall_seconds=4),
                    checker=CheckerSpec("tokens"), run_all=True)
        v = judge(task)
        outcomes = {c.name: c.outcome for c in v.cases}
        assert outcomes["r"] is Outcome.AC and outcomes["w"] is Outcome.WA, v
        assert v.outcome is Outcome.WA


def test_a_run_after_a_last_run_in_the_same_session_starts_clean():
    """The last run leaves 300 MiB being freed, a file in /tmp and a child writing files; the
    next run (after the sync) sees no file, no process, and is charged its own memory only."""
    source = (
        "import os, sys, time\n"
        "n = int(input())\n"
        "print(sorted(os.listdir('/tmp')), len(os.listdir('/proc')) - 3, flush=True)\n"
        "if n:\n"
        "    x = bytearray(n << 20)\n"
        "    x[::4096] = b'1' * len(x[::4096])\n"
        "    open('/tmp/left', 'w').write('x')\n"
        "    if os.fork() == 0:\n"
        "        i = 0\n"
        "        while True:\n"
        "            i += 1\n"
        "            try:\n"
        "                open('/tmp/child%d' % (i % 50), 'w').write('y')\n"
        "            except OSError:\n"
        "                pass\n")
    lim = Limits(cpu_seconds=2, wall_seconds=4, memory_bytes=512 * MiB)
    with Sandbox(limits=lim) as sb:
        assert sb.load_python(source) is None
        first = sb.run_python(b"300\n", lim, last=True)
        second = sb.run_python(b"0\n", lim)
        left = sb.stray_processes()
    assert first.status is Status.OK and first.peak_memory_bytes >= 300 * MiB, first
    assert second.status is Status.OK, second
    assert second.stdout.startswith(b"[] "), second.stdout
    assert second.peak_memory_bytes < 100 * MiB, second.peak_memory_bytes
    assert left == []


def test_the_next_pooled_session_after_a_last_case_is_clean(one_sandbox_pool):
    """A submission's last case leaves a daemon writing to /tmp and /dev/shm; the next
    submission gets the pool's (only) sandbox and sees none of it."""
    spy = ("import os\n"
           "print(sorted(os.listdir('/tmp')), sorted(os.listdir('/dev/shm')), len(os.listdir('/proc')))\n")
    bad = ("import os, time\n"
           "if os.fork() == 0:\n"
           "    os.setsid()\n"
           "    while True:\n"
           "        for d in ('/tmp', '/dev/shm'):\n"
           "            try:\n"
           "                open(d + '/leak', 'w').write('x')\n"
           "            except OSError:\n"
           "                pass\n"
           "        time.sleep(0.0005)\n"
           "time.sleep(0.05)\n"
           "print(1)\n")
    lim = Limits(cpu_seconds=2, wall_seconds=4)
    suite = TestSuite((StdioCase("a", b"", (b"1\n",)),))
    v = judge(Task("python", bad, suite, limits=lim, checker=CheckerSpec("tokens")))
    assert v.outcome is Outcome.AC, v
    baseline = judge(Task("python", spy, TestSuite((StdioCase("a", b"", (b"x\n",)),)), limits=lim,
                          checker=CheckerSpec("tokens"), run_all=True))
    got = baseline.cases[0].detail + " " + str(baseline.cases[0].diff)
    assert "leak" not in got, got


def test_call_case_is_last_in_the_judge_too(one_sandbox_pool):
    """A LeetCode-style submission whose last case forges exit 0 after a wrong return: the
    result written is its own wrong value, WA as when not last."""
    source = FIND_PIPE + (
        "import struct\n"
        "class Solution:\n"
        "    def f(self, x: int) -> int:\n"
        "        return x + 100\n")
    suite = TestSuite((CallCase("a", "f", (1,), {}, (2,)), CallCase("b", "f", (2,), {}, (4,))))
    v = judge(Task("python", source, suite, limits=Limits(cpu_seconds=2), run_all=True))
    assert [c.outcome for c in v.cases] == [Outcome.WA, Outcome.WA], v
