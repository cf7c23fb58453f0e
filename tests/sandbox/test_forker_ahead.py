"""The forker forks each Python case's process ahead of its request (docs/sandbox.md, "The
forker"): once the program is loaded, and after each case once the server has found nothing of
it left. That waiting child counts as the forker's: it is no stray, it dies with the forker or
the session, and nothing a case does can reach it, since it is forked only after the case's
processes are all gone."""

from __future__ import annotations

import os
import signal
import time

import pytest

from arbiter.sandbox.execution import Status
from arbiter.sandbox.limits import Limits
from arbiter.sandbox.pool import SandboxPool
from arbiter.sandbox.sandbox import Sandbox

LIMITS = Limits(cpu_seconds=2, wall_seconds=4)

#: Prints its own pid (as the sandbox's PID namespace numbers it).
PID = "import os\ninput()\nprint(os.getpid())\n"


def _ppid(pid: int) -> int:
    with open(f"/proc/{pid}/stat", "rb") as f:
        return int(f.read().rsplit(b")", 1)[1].split()[1])


def _ns_pid(pid: int) -> int:
    """The pid the sandbox's namespace gives host pid ``pid`` (the last of ``NSpid``)."""
    with open(f"/proc/{pid}/status") as f:
        return int(next(line for line in f if line.startswith("NSpid:")).split()[-1])


def _waiting_child(sb: Sandbox) -> tuple[int, int]:
    """Host pids of the forker and of the child it forked ahead (between cases: the sandbox
    holds the server, the forker, its child)."""
    if sb._cg is None:
        pytest.skip("needs cgroups to see the sandbox's processes from the host")
    for _ in range(500):  # (forked while the judge reads the reply)
        others = [p for p in sb.session.tasks() if p != sb.session.server_pid]
        if len(others) == 2:
            break
        time.sleep(0.01)
    assert len(others) == 2, others
    forker = next(p for p in others if _ppid(p) == sb.session.server_pid)
    child = next(p for p in others if p != forker)
    assert _ppid(child) == forker
    return forker, child


def test_each_case_runs_in_the_child_forked_ahead_which_is_no_stray():
    """After the load and after each case the forker has the next case's process waiting; the
    server's ``ps`` does not list it, and the next case is that process."""
    with Sandbox(limits=LIMITS) as sb:
        assert sb.load_python(PID) is None
        for _ in range(3):
            _, child = _waiting_child(sb)
            assert sb.stray_processes() == []
            ex = sb.run_python(b"\n")
            assert ex.status is Status.OK and int(ex.stdout) == _ns_pid_or(child, ex), ex
        ex = sb.run_python(b"\n", last=True)  # the last: nothing is forked after it
        assert ex.ok and sb.stray_processes() == []
        assert sb.run_python(b"\n").ok  # (a run after the last: forked at its request)


def _ns_pid_or(child: int, ex) -> int:
    try:
        return _ns_pid(child)
    except (OSError, StopIteration):  # it has exited by now: its pid is not reused in between
        return int(ex.stdout)


#: A case that signals every process it sees but itself and PID 1 (its forker included), and
#: leaves a daemon that for a second signals every process that appears after it started (what
#: the next case's process would be, were it forked before this case's processes are gone).
SIGNAL_ALL = r"""
import os, signal, time
i = int(input())
def pids():
    return {int(p) for p in os.listdir("/proc") if p.isdigit()} - {1, os.getpid()}
if os.fork() == 0:
    os.setpgrp()
    if os.fork() == 0:
        seen = pids()
        end = time.monotonic() + 1.0
        while time.monotonic() < end:
            for pid in pids() - seen:
                for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGUSR1, signal.SIGSTOP):
                    try:
                        os.kill(pid, sig)
                    except OSError:
                        pass
        os._exit(0)
    os._exit(0)
time.sleep(0.05)
if i % 2:
    for pid in pids():
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
print("ok", i)
"""


def test_a_case_that_signals_every_process_it_can_see_cannot_reach_the_next_case():
    """Its signals (and its daemon's) reach no later case: each case and the one after run and
    get their own verdict."""
    with Sandbox(limits=LIMITS) as sb:
        assert sb.load_python(SIGNAL_ALL) is None
        runs = [sb.run_python(f"{i}\n".encode()) for i in range(6)]
        assert sb.stray_processes() == []
        last = sb.run_python(b"6\n", last=True)
    for i, ex in enumerate([*runs, last]):
        assert ex.status is Status.OK and ex.stdout == f"ok {i}\n".encode(), (i, ex, ex.stderr[-300:])


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGSTOP])
def test_the_child_forked_ahead_killed_or_stopped_from_outside_costs_no_verdict(sig):
    """Whatever happens to the waiting child (here: the host kills or stops it), the next case
    runs (forked by the server once the forker is gone) and a new forker serves the one after."""
    with Sandbox(limits=Limits(cpu_seconds=1, wall_seconds=1)) as sb:
        assert sb.load_python("print(int(input()) + 1)\n") is None
        assert sb.run_python(b"1\n").stdout == b"2\n"
        os.kill(_waiting_child(sb)[1], sig)
        ex = sb.run_python(b"2\n")
        assert ex.status is Status.OK and ex.stdout == b"3\n", ex
        assert sb.stray_processes() == []
        assert sb.run_python(b"3\n").stdout == b"4\n"
        _waiting_child(sb)


def test_a_forker_killed_from_outside_takes_its_waiting_child_with_it():
    """The waiting child dies with its forker (``PR_SET_PDEATHSIG``) and is reaped by the
    server: nothing is left once the next case has run."""
    with Sandbox(limits=LIMITS) as sb:
        assert sb.load_python("print(int(input()) + 1)\n") is None
        forker, child = _waiting_child(sb)
        os.kill(forker, signal.SIGKILL)
        for _ in range(500):
            if not os.path.exists(f"/proc/{child}") or _state(child) == "Z":
                break
            time.sleep(0.01)
        assert not os.path.exists(f"/proc/{child}") or _state(child) == "Z"
        ex = sb.run_python(b"1\n")
        assert ex.status is Status.OK and ex.stdout == b"2\n", ex
        assert sb.stray_processes() == []
        assert child not in sb.session.tasks()


def _state(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return f.read().rsplit(b")", 1)[1].split()[0].decode()
    except OSError:
        return "gone"


def test_a_native_run_drops_the_forker_and_its_waiting_child():
    """A native run after Python cases: the forker and its child are stopped first; the next
    Python case gets a new forker, with a child of its own forked ahead."""
    with Sandbox(limits=LIMITS) as sb:
        assert sb.load_python(PID) is None
        assert sb.run_python(b"\n").ok
        ex = sb.run(["/bin/ls", "/proc"])
        pids = [name for name in ex.stdout.split() if name.isdigit()]
        assert ex.ok and len(pids) == 2, ex  # the server and ls: no forker, no child of it
        assert sb.run_python(b"\n").ok
        assert sb.stray_processes() == []


def test_a_session_with_a_child_forked_ahead_ends_and_recycles_cleanly():
    """A session given back with the next case's process waiting ends cleanly (nothing left in
    the cgroups), and the sandbox serves the next session."""
    pool = SandboxPool(spares=0, max_sandboxes=2)
    try:
        for _ in range(3):
            sb = pool.acquire(limits=LIMITS, python=True)
            assert sb.load_python(PID) is None
            assert sb.run_python(b"\n").ok
            if sb._cg is not None:
                _waiting_child(sb)
            pool.release(sb)
            deadline = time.monotonic() + 60
            while pool.stats()["idle"] < 1:
                assert time.monotonic() < deadline, pool.stats()
                time.sleep(0.01)
        assert pool.stats()["discarded"] == 0 and pool.stats()["reused"] == 2, pool.stats()
    finally:
        pool.close()
