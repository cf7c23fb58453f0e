"""The session's last case, reported once its program ended (before the kernel's teardown).

A run marked ``last`` gets a pipe on which its process writes its exit status when the program
has ended; the forker takes the kernel's figures then and kills it (docs/sandbox.md, "The
forker"). The record is the program's to forge: whatever it does with it, the run gets no more
than ``os._exit`` at that point would give, nothing of it outlives the run, and a run after it in
the same session is measured from a clean baseline.
"""

from __future__ import annotations

import pytest

from arbiter.sandbox.execution import Status
from arbiter.sandbox.limits import MiB, Limits
from arbiter.sandbox.sandbox import Sandbox

LIMITS = Limits(cpu_seconds=2, wall_seconds=5)

#: The program's own search for its ENDED pipe: a pipe it did not open, other than stderr.
FIND_PIPE = (
    "import os, stat\n"
    "def ended_fds():\n"
    "    found = []\n"
    "    for name in os.listdir('/proc/self/fd'):\n"
    "        fd = int(name)\n"
    "        try:\n"
    "            st = os.fstat(fd)\n"
    "        except OSError:\n"
    "            continue\n"
    "        if fd > 2 and stat.S_ISFIFO(st.st_mode):\n"
    "            found.append(fd)\n"
    "    return found\n")


def run_last(source: str, stdin: bytes = b"", limits: Limits = LIMITS, then: bytes | None = None):
    """``source`` run once as the session's last run; with ``then``, once more after it in the
    same session (a starved case's retry does that). Returns the executions and what was left."""
    with Sandbox(limits=limits) as sb:
        assert sb.load_python(source) is None
        first = sb.run_python(stdin, limits, last=True)
        second = sb.run_python(then, limits) if then is not None else None
        left = sb.stray_processes()
    return first, second, left


def test_a_last_case_is_reported_with_its_status_and_figures():
    ex, _, left = run_last("import sys\nx = bytearray(64 << 20)\nprint(len(x))\nsys.exit(3)\n")
    assert ex.status is Status.RUNTIME_ERROR and ex.exit_code == 3, ex
    assert ex.stdout == b"%d\n" % (64 << 20)
    assert ex.peak_memory_bytes >= 64 * MiB, ex.peak_memory_bytes
    assert ex.cpu_seconds > 0
    assert left == []


@pytest.mark.parametrize("source, status, cpu", [
    ("print(int(input()) + 1)\n", Status.OK, 2),
    ("raise ValueError('no')\n", Status.RUNTIME_ERROR, 2),
    ("import os\nprint(1, flush=True)\nos._exit(0)\n", Status.OK, 2),  # no record: at its exit
    ("import os, signal\nos.kill(os.getpid(), signal.SIGSEGV)\n", Status.RUNTIME_ERROR, 2),
    ("while True:\n    pass\n", Status.TIME_LIMIT, 1),
    ("x = bytearray(700 << 20)\nprint(len(x))\n", Status.MEMORY_LIMIT, 10),  # (reclaim first: CPU)
])
def test_last_and_not_last_give_the_same_verdict(source, status, cpu):
    limits = Limits(cpu_seconds=cpu, wall_seconds=2 * cpu, memory_bytes=512 * MiB)
    with Sandbox(limits=limits) as sb:
        assert sb.load_python(source) is None
        before = sb.run_python(b"41\n", limits)
        last = sb.run_python(b"41\n", limits, last=True)
        again = sb.run_python(b"41\n", limits)  # (after a sync: measured from a clean baseline)
    for ex in (before, last, again):
        assert ex.status is status, (ex, before, last, again)
        assert ex.stdout == before.stdout
        assert ex.exit_code == before.exit_code and ex.signal == before.signal


def test_a_run_after_the_last_one_waits_for_it_and_is_charged_its_own_memory_only():
    """The last case's 400 MB may still be being freed when the next run starts: the reply says
    so (``reaping``) and the host syncs first, or that run's baseline would hold them and its
    own memory would not show in full (200 MB, and a 40 MB file in its tmpfs, which only the
    cgroup's figure sees: its process's peak RSS does not)."""
    source = ("n = int(input())\nx = bytearray(n << 20)\nx[::4096] = b'1' * len(x[::4096])\n"
              "with open('/tmp/f', 'wb') as f:\n    f.write(memoryview(x)[:40 << 20])\nprint(n)\n")
    limits = Limits(cpu_seconds=4, wall_seconds=8, memory_bytes=768 * MiB)
    with Sandbox(limits=limits) as sb:
        assert sb.load_python(source) is None
        first = sb.run_python(b"400\n", limits, last=True)
        assert sb.session is not None and sb.session.settling  # (the next run syncs first)
        second = sb.run_python(b"200\n", limits)
        left = sb.stray_processes()
    assert first.status is Status.OK and first.peak_memory_bytes >= 440 * MiB, first
    assert second.status is Status.OK and second.peak_memory_bytes >= 238 * MiB, second
    assert left == []


def test_a_record_written_early_ends_the_program_there():
    """The program writes the record itself, then goes on printing: it is ended at once (as by
    ``os._exit`` then), never left running, and nothing it printed after shows up later."""
    source = FIND_PIPE + (
        "import struct, sys, time\n"
        "print('before', flush=True)\n"
        "for fd in ended_fds():\n"
        "    try:\n"
        "        os.write(fd, struct.pack('=i', 0))\n"
        "    except OSError:\n"
        "        pass\n"
        "time.sleep(0.2)\n"
        "while True:\n"
        "    print('after', flush=True)\n")
    first, second, left = run_last(source, then=b"")
    assert first.status is Status.OK and first.exit_code == 0, first
    assert first.stdout.startswith(b"before\n")
    assert b"after" not in first.stdout  # (killed within its 0.2 s sleep)
    assert first.wall_seconds < 1, first.wall_seconds
    assert second.status is Status.TIME_LIMIT  # (the same program, not last: it prints forever)
    assert left == []


def test_a_record_from_a_process_the_program_forked_is_not_taken():
    """A child made by ``os.fork`` returns through the harness too; only the case's own process
    may end the case: the parent's later output is all there."""
    source = (
        "import os, sys, time\n"
        "pid = os.fork()\n"
        "if pid == 0:\n"
        "    print('child', flush=True)\n"
        "    sys.exit(0)\n"
        "os.waitpid(pid, 0)\n"
        "time.sleep(0.1)\n"
        "print('parent')\n")
    ex, _, left = run_last(source)
    assert ex.status is Status.OK, ex
    assert ex.stdout == b"child\nparent\n"
    assert left == []


def test_a_program_cannot_put_a_file_on_the_pipes_number():
    """The pipe sits at or above the case's ``RLIMIT_NOFILE``: the program cannot move a file of
    its own there (``dup2`` fails), and a pipe it closes sends no record (reported at its exit)."""
    source = FIND_PIPE + (
        "fds = ended_fds()\n"
        "out = os.open('mine', os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)\n"
        "moved = 0\n"
        "for fd in fds:\n"
        "    try:\n"
        "        os.dup2(out, fd)\n"
        "        moved += 1\n"
        "    except OSError:\n"
        "        os.close(fd)\n"
        "print(len(fds), moved)\n")
    with Sandbox(limits=LIMITS) as sb:
        assert sb.load_python(source) is None
        ex = sb.run_python(b"", LIMITS, last=True, keep=["mine"])
        mine = sb.fetch(f"{sb.work_dir}/mine")
    assert ex.status is Status.OK and ex.stdout == b"1 0\n", ex
    assert mine == b""


def test_what_a_last_case_left_running_is_gone_before_the_next_session():
    source = (
        "import os, time\n"
        "if os.fork() == 0:\n"
        "    while True:\n"
        "        print('daemon', flush=True)\n"
        "        time.sleep(0.001)\n"
        "print('main', flush=True)\n")
    first, second, left = run_last(source, then=b"")
    assert first.status is Status.OK and b"main\n" in first.stdout, first
    assert second.status is Status.OK
    assert left == []


@pytest.mark.parametrize("how", ["SIGSTOP", "SIGKILL"])
def test_a_last_case_that_stops_or_kills_its_forker_is_not_kept_waiting(how):
    """Nobody reads its record: it waits at most ENDED_WAIT (or not at all once the forker is
    gone), then exits and is collected from its exit, with its own status and output."""
    source = f"import os, signal\ni = int(input())\nos.kill(os.getppid(), signal.{how})\nprint(i * 2)\n"
    limits = Limits(cpu_seconds=1, wall_seconds=2)
    with Sandbox(limits=limits) as sb:
        assert sb.load_python(source) is None
        runs = [sb.run_python(b"4\n", limits, last=True) for _ in range(3)]
        left = sb.stray_processes()
    for ex in runs:
        assert ex.status is Status.OK and ex.stdout == b"8\n", ex
        assert ex.wall_seconds < 0.5, ex.wall_seconds
    assert left == []


# ---- the forker becomes the last case (guest/inplace_case.py) -----------------------------------


def test_the_last_case_is_charged_none_of_the_forkers_own_cpu():
    """The forker that becomes the last case ran the prelude at the load (here 0.3 s of CPU or
    more): none of it is the case's, in its figures or against its CPU limit."""
    prelude = "import time\n_t = time.process_time()\nwhile time.process_time() - _t < 0.3:\n    pass\n"
    limits = Limits(cpu_seconds=1, wall_seconds=4)
    with Sandbox(limits=limits) as sb:
        assert sb.load_python("print(int(input()) + 1)\n", prelude=prelude) is None
        before = sb.run_python(b"1\n", limits)
        last = sb.run_python(b"1\n", limits, last=True)
    assert before.status is Status.OK and last.status is Status.OK, (before, last)
    assert last.stdout == before.stdout == b"2\n"
    assert last.cpu_seconds < 0.15, last.cpu_seconds  # (the prelude's 0.3 s is the load's)


def test_a_last_case_that_closes_its_record_pipe_and_spins_is_a_time_limit():
    """No record will come (the program closed every descriptor above stderr): the server, whose
    process the case is now, keeps its wall clock and ends it as any other."""
    source = "import os\nos.closerange(3, 1 << 16)\nprint(1, flush=True)\nwhile True:\n    pass\n"
    limits = Limits(cpu_seconds=1, wall_seconds=2)
    first, second, left = run_last(source, limits=limits, then=b"")
    assert first.status is Status.TIME_LIMIT and first.stdout == b"1\n", first
    assert second.status is Status.TIME_LIMIT
    assert left == []


def test_a_forker_that_ends_before_the_last_case_costs_it_nothing():
    """A case leaves a signal pending on the forker (blocked there): the forker ends itself at the
    next request instead of becoming the last case; the server runs that case itself."""
    source = ("import os, signal\nn = int(input())\n"
              "if n == 0:\n    os.kill(os.getppid(), signal.SIGUSR1)\n"
              "print(n * 2, os.getppid() == 1)\n")
    limits = Limits(cpu_seconds=1, wall_seconds=2)
    with Sandbox(limits=limits) as sb:
        assert sb.load_python(source) is None
        first = sb.run_python(b"0\n", limits)
        last = sb.run_python(b"21\n", limits, last=True)
        left = sb.stray_processes()
    assert first.status is Status.OK and first.stdout == b"0 False\n", first
    assert last.status is Status.OK and last.stdout.split()[0] == b"42", last
    assert left == []


@pytest.mark.parametrize("end", ["os._exit(0)", "os.kill(os.getpid(), signal.SIGSEGV)"])
def test_a_last_case_that_ends_without_its_record_is_charged_its_own_cpu_only(end):
    """Red team (in-place): without its record the last case is collected from its exit, and
    ``wait4``'s rusage counts the children it reaped: every earlier case of the session, which the
    forker ran. Three cases of 0.6 s each, then a quick last one: OK (or RE), never TLE."""
    source = ("import os, signal, time\nn = float(input())\nt = time.process_time()\n"
              "while time.process_time() - t < n:\n    pass\nprint('done', flush=True)\n" + end + "\n")
    limits = Limits(cpu_seconds=1, wall_seconds=3, memory_bytes=256 * MiB)
    with Sandbox(limits=limits) as sb:
        assert sb.load_python(source) is None
        runs = [sb.run_python(b"0.6\n", limits) for _ in range(3)]
        last = sb.run_python(b"0.05\n", limits, last=True)
    for ex in runs + [last]:
        assert ex.status is runs[0].status and ex.stdout == b"done\n", (ex, runs[0])
    assert runs[0].status in (Status.OK, Status.RUNTIME_ERROR)
    assert last.cpu_seconds < 0.5, last.cpu_seconds


def test_a_last_case_continued_by_its_own_child_after_its_record_is_still_ended():
    """A child keeps sending SIGCONT to the last case: nothing of it keeps the case going past its
    record (a stopped case would be resumed: the server kills it). Its output is what it printed
    before its record, nothing is left."""
    source = ("import os, signal, sys\nppid = os.getpid()\n"
              "if os.fork() == 0:\n    while True:\n        os.kill(ppid, signal.SIGCONT)\n"
              "print(int(input()) * 2)\n")
    first, second, left = run_last(source, stdin=b"21\n", then=b"1\n")
    assert first.status is Status.OK and first.stdout == b"42\n", first
    assert second.status is Status.OK and second.stdout == b"2\n", second
    assert left == []


def test_a_forged_record_with_a_child_that_keeps_the_case_going_cannot_hang_the_server():
    """A thread forges the record while the main thread spins and a child keeps sending SIGCONT
    (which discards a pending stop: a server waiting for one would wait forever): the case ends at
    the record all the same, at once, and the next run of the session is clean."""
    source = FIND_PIPE + (
        "import signal, struct, threading\nppid = os.getpid()\n"
        "if os.fork() == 0:\n    while True:\n        os.kill(ppid, signal.SIGCONT)\n"
        "print('1', flush=True)\n"
        "def forge():\n    for fd in ended_fds():\n        os.write(fd, struct.pack('=i', 0))\n"
        "threading.Thread(target=forge).start()\n"
        "while True:\n    pass\n")
    limits = Limits(cpu_seconds=2, wall_seconds=4)
    first, second, left = run_last(source, limits=limits, then=b"")
    assert first.status is Status.OK and first.stdout.startswith(b"1\n"), first
    assert first.wall_seconds < 1, first.wall_seconds
    assert second.status is Status.TIME_LIMIT  # (not last: it spins to its limit)
    assert left == []


#: The kernel sends SIGCONT to the case when the server closes its end of the record's pipe
#: (``O_ASYNC``, ``F_SETOWN`` itself, ``F_SETSIG`` SIGCONT): what a stopped case would use.
ARM_SIGCONT = (
    "import fcntl, signal\n"
    "def arm(fd):\n"
    "    fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) | os.O_ASYNC)\n"
    "    fcntl.fcntl(fd, fcntl.F_SETOWN, os.getpid())\n"
    "    fcntl.fcntl(fd, 10, signal.SIGCONT)  # F_SETSIG\n")


def test_a_last_case_that_has_the_kernel_continue_it_does_nothing_after_its_record():
    """Red team (in-place, 2): a case stopped at its record (not killed) was continued by the
    kernel once the server closed its end of the pipe, and emptied its stdout under the reply
    (WA for an answer, or SANDBOX_ERROR: "the file is shorter than it was"). Killed at its
    record, its output is what it wrote before it, every time."""
    source = FIND_PIPE + ARM_SIGCONT + (
        "import select, struct, time\nfds = ended_fds()\nfor fd in fds:\n    arm(fd)\n"
        "os.write(1, b'x' * 100 + b'\\n')\np = select.poll()\nfor fd in fds:\n    p.register(fd, 0)\n"
        "for fd in fds:\n    os.write(fd, struct.pack('=i', 0))\np.poll(1000)\n"
        "os.ftruncate(1, 0)\ntime.sleep(1)\n")
    limits = Limits(cpu_seconds=2, wall_seconds=4)
    for _ in range(5):
        first, second, left = run_last(source, limits=limits, then=b"")
        assert first.status is Status.OK and first.stdout == b"x" * 100 + b"\n", first
        assert left == []


THREADS = ("import threading\nn = int(input())\nev = threading.Event()\n"
           "ts = [threading.Thread(target=ev.wait) for _ in range(n)]\nfor t in ts: t.start()\n"
           "ev.set()\nfor t in ts: t.join()\nprint('ok')\n")


def test_the_last_case_gets_as_many_tasks_as_a_forked_one():
    """The last case runs without the forker beside it: its pids limit is one lower, so a program
    gets ``processes`` tasks at every place (red team, December 2026: the last case had one more,
    and failures-first moved a program starting exactly that many threads between AC and TLE)."""
    from arbiter.judge.judge import judge
    from arbiter.judge.task import Task
    from arbiter.judge.testsuite import StdioCase, TestSuite
    from arbiter.judge.verdict import Outcome

    lim = Limits(cpu_seconds=2, wall_seconds=6, processes=8)
    for threads, want in ((7, Outcome.AC), (8, None)):
        cases = tuple(StdioCase(f"c{i}", b"%d\n" % threads, (b"ok\n",)) for i in range(3))
        v = judge(Task("python", THREADS, TestSuite(cases), limits=lim, run_all=True))
        got = [c.outcome for c in v.cases]
        assert len(set(got)) == 1, (threads, got)  # the same at every place, the last one included
        assert want is None and got[0] is not Outcome.AC or got[0] is want, (threads, got)
