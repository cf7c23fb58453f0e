"""The forker (the warm process that forks each Python case; see sandbox.guest.forker.make_forker).

A program shares the sandbox with its forker: it may signal it, stop it, lower its limits or
try to forge its reports. Whatever it does, each case gets the verdict of its own run, the next
case gets a forker as good as new, and nothing it did reaches a later case.
"""

from __future__ import annotations

import struct

from arbiter.sandbox.execution import Status
from arbiter.sandbox.limits import Limits
from arbiter.sandbox.sandbox import Sandbox

CASES = 4


def run_cases(source: str, limits: Limits | None = None, n: int = CASES, ps: bool = True):
    """Run ``source`` on inputs "0".."n-1" in one sandbox, then once more on "0"; ``ps``: check
    that nothing is left running."""
    with Sandbox(limits=limits or Limits(cpu_seconds=2, wall_seconds=5)) as sb:
        assert sb.load_python(source) is None
        runs = [sb.run_python(f"{i}\n".encode()) for i in range(n)]
        if ps:
            assert sb.stray_processes() == []
        follow = sb.run_python(b"0\n")
    return runs, follow


def assert_ok_and_alike(runs) -> None:
    """Every run is OK and printed the same: nothing one case did showed in a later one."""
    for ex in runs:
        assert ex.status is Status.OK, ex
    assert len({ex.stdout for ex in runs}) == 1, [ex.stdout for ex in runs]


def test_a_program_that_kills_its_forker_still_gets_its_own_exit_status():
    """The case's process is reparented to the server, which reaps it itself."""
    runs, _ = run_cases(
        "import os, signal, sys\n"
        "i = int(input())\n"
        "os.kill(os.getppid(), signal.SIGKILL)\n"
        "print('after', i)\n"
        "sys.exit(3)\n")
    for i, ex in enumerate(runs):
        assert ex.status is Status.RUNTIME_ERROR and ex.exit_code == 3, ex
        assert ex.stdout == f"after {i}\n".encode()
        assert ex.wall_seconds < 2, ex.wall_seconds


def test_a_program_that_stops_its_forker_is_not_a_time_limit():
    """A stopped forker never reports: the server kills it and collects the case itself; a
    signal left pending on the stopped forker never reaches the next case."""
    runs, follow = run_cases(
        "import os, signal\n"
        "i = int(input())\n"
        "os.kill(os.getppid(), signal.SIGSTOP)\n"
        "os.kill(os.getppid(), signal.SIGTERM)  # pending while it is stopped\n"
        "print(i * 2)\n")
    for i, ex in enumerate(runs):
        assert ex.status is Status.OK, ex
        assert ex.stdout == f"{i * 2}\n".encode()
        assert ex.wall_seconds < 2, ex.wall_seconds
    assert follow.status is Status.OK and follow.stdout == b"0\n"


def test_what_a_program_does_to_its_forker_does_not_reach_the_next_case():
    """Lowered rlimits, a higher nice value and a narrower CPU affinity (all allowed between
    processes of one uid) would be inherited by the next case: the forker is replaced."""
    runs, _ = run_cases(
        "import os, resource\n"
        "input()\n"
        "ppid = os.getppid()\n"
        "print(resource.getrlimit(resource.RLIMIT_NOFILE), resource.getrlimit(resource.RLIMIT_DATA),\n"
        "      os.getpriority(os.PRIO_PROCESS, 0), sorted(os.sched_getaffinity(0)))\n"
        "resource.prlimit(ppid, resource.RLIMIT_NOFILE, (5, 5))\n"
        "resource.prlimit(ppid, resource.RLIMIT_DATA, (1 << 20, 1 << 20))\n"
        "os.setpriority(os.PRIO_PROCESS, ppid, 19)\n"
        "os.sched_setaffinity(ppid, {min(os.sched_getaffinity(0))})\n"
        "import json; print(json.dumps([list(range(10))] * 10))\n")
    assert_ok_and_alike(runs)


def test_a_forged_report_cannot_turn_a_failure_into_a_pass():
    """The report pipe is closed in the case before the program runs; the forker's descriptors
    are not open to it (it is not dumpable)."""
    done = struct.Struct("=ciiddq")
    runs, _ = run_cases(
        "import os, struct, sys\n"
        "input()\n"
        f"record = struct.Struct({done.format!r}).pack(b'D', os.getpid(), 0, 0.0, 0.0, 0)\n"
        "written = 0\n"
        "for fd in range(3, 1024):\n"
        "    try:\n"
        "        os.write(fd, record); written += 1\n"
        "    except OSError:\n"
        "        pass\n"
        "ppid = os.getppid()\n"
        "for path in (f'/proc/{ppid}/fd', f'/proc/{ppid}/mem'):\n"
        "    try:\n"
        "        os.listdir(path) if path.endswith('fd') else open(path, 'rb').read(1)\n"
        "        print('opened', path)\n"
        "    except OSError:\n"
        "        pass\n"
        "print('written', written)\n"
        "sys.exit(3)\n")
    for ex in runs:
        assert ex.status is Status.RUNTIME_ERROR and ex.exit_code == 3, ex
        assert ex.stdout == b"written 0\n"


def test_every_case_gets_a_freshly_seeded_random():
    runs, _ = run_cases("import random\ninput()\nprint(random.getrandbits(64), random.random())\n", n=6)
    assert all(ex.ok for ex in runs)
    assert len({ex.stdout for ex in runs}) == 6


def test_the_forker_keeps_the_case_files_apart():
    """Each case sees only its own input, and a long output of one case leaves nothing in the
    next (stdin, stdout and the call result are new files for every case)."""
    with Sandbox() as sb:
        assert sb.load_python(
            "import sys\n"
            "data = sys.stdin.read()\n"
            "print(len(data), data[:5])\n"
            "if data.startswith('big'):\n"
            "    sys.stdout.write('x' * 300000)\n") is None
        big = sb.run_python(b"big" + b"y" * 500_000)
        small = sb.run_python(b"tiny")
        assert big.ok and big.stdout.startswith(b"500003 bigyy\n") and len(big.stdout) == 300013
        assert small.ok and small.stdout == b"4 tiny\n", small
        assert sb.load_python(
            "def f(n):\n"
            "    return 'r' * n\n") is None
        long = sb.call_python("f", [100_000])
        short = sb.call_python("f", [3])
        assert long.ok and len(long.result) > 100_000
        assert short.ok and short.result == b'{"ok": true, "value": "rrr"}', short.result


def test_a_program_that_kills_or_stops_its_forker_and_spins_is_a_time_limit():
    for act in ("SIGKILL", "SIGSTOP"):
        runs, follow = run_cases(
            "import os, signal\n"
            "input()\n"
            f"os.kill(os.getppid(), signal.{act})\n"
            "while True:\n"
            "    pass\n", limits=Limits(cpu_seconds=5, wall_seconds=1), n=2)
        for ex in runs:
            assert ex.status is Status.TIME_LIMIT and ex.detail.startswith("wall"), (act, ex)
            # (the run-queue delay of a loaded machine is not counted: docs/sandbox.md, "Under host load")
            assert ex.wall_seconds - ex.run_delay_seconds < 2, ex
        assert follow.status is Status.TIME_LIMIT


def test_file_flags_set_by_a_program_do_not_reach_the_next_case():
    """O_NONBLOCK left on a shared stderr pipe would make a later case's large stderr fail with
    EAGAIN, a mode or extended attributes left on stdin would reach the next case (each case
    gets new files)."""
    runs, _ = run_cases(
        "import fcntl, os, sys\n"
        "input()\n"
        "print([fcntl.fcntl(fd, fcntl.F_GETFL) & (os.O_NONBLOCK | os.O_APPEND) for fd in (0, 1, 2)])\n"
        "sys.stderr.write('e' * 300000)\n"
        "sys.stderr.flush()\n"
        "print(os.fstat(0).st_mode & 0o777, [os.listxattr(fd) for fd in (0, 1)])\n"
        "for fd in (0, 1, 2):\n"
        "    fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) | os.O_NONBLOCK | os.O_APPEND)\n"
        "os.fchmod(0, 0)\n"
        "for fd in (0, 1):\n"
        "    try:\n"
        "        os.setxattr(fd, 'user.note', b'from an earlier case')\n"
        "    except OSError:\n"
        "        pass\n")
    for ex in runs:
        assert ex.status is Status.OK, (ex, ex.stderr[-300:])
    assert len({ex.stdout for ex in runs}) == 1 and runs[0].stdout.startswith(b"[0, 0, 0]\n"), runs


def _forker_host_pid(sb: Sandbox) -> int:
    """The forker's pid on the host: between cases the sandbox holds the server and it."""
    others = [p for p in sb.session.tasks() if p != sb.session.server_pid]
    assert len(others) == 1, others
    return others[0]


def test_a_forker_killed_or_stopped_from_outside_between_cases_costs_no_verdict():
    """Whatever happens to the forker between cases (here: the host kills or stops it), the
    next case still runs, forked by the server itself, and a new forker serves the one after."""
    import os
    import signal

    for sig in (signal.SIGKILL, signal.SIGSTOP):
        with Sandbox(limits=Limits(cpu_seconds=1, wall_seconds=1)) as sb:
            if sb._cg is None:
                import pytest
                pytest.skip("needs cgroups to find the forker")
            assert sb.load_python("print(int(input()) + 1)\n") is None
            assert sb.run_python(b"1\n").stdout == b"2\n"
            os.kill(_forker_host_pid(sb), sig)
            ex = sb.run_python(b"2\n")
            assert ex.status is Status.OK and ex.stdout == b"3\n", (sig, ex)
            assert sb.stray_processes() == []
            assert sb.run_python(b"3\n").stdout == b"4\n"


def test_a_large_input_reaches_the_program_after_a_native_run_in_the_same_sandbox():
    """A native run drops the forker; the next Python case's large input (written into the
    sandbox before the run) must still reach the program, whoever forks it."""
    data = b"7 " * 1_000_000  # 2 MB: staged before the run
    with Sandbox() as sb:
        assert sb.load_python("import sys\nd = sys.stdin.buffer.read()\nprint(len(d), d[:4])\n") is None
        assert sb.run(["/bin/true"]).ok
        ex = sb.run_python(data)
        assert ex.ok and ex.stdout == b"2000000 b'7 7 '\n", ex
        assert sb.run(["/bin/true"]).ok
        ex = sb.run_python(b"small")
        assert ex.ok and ex.stdout == b"5 b'smal'\n", ex
        ex = sb.run_python(data)
        assert ex.ok and ex.stdout == b"2000000 b'7 7 '\n", ex


def test_scheduling_state_set_on_the_forker_does_not_reach_the_next_case():
    """Scheduling policy, I/O priority and the stderr pipe's size, set by one case on its forker
    or its stderr, are not inherited by the next case."""
    runs, _ = run_cases(
        "import ctypes, fcntl, os\n"
        "libc = ctypes.CDLL(None)\n"
        "i = int(input())\n"
        "print(os.sched_getscheduler(0), libc.syscall(252, 1, 0), fcntl.fcntl(2, fcntl.F_GETPIPE_SZ))\n"
        "ppid = os.getppid()\n"
        "if i == 0:\n"
        "    os.sched_setscheduler(ppid, os.SCHED_IDLE, os.sched_param(0))\n"
        "elif i == 1:\n"
        "    os.sched_setscheduler(ppid, os.SCHED_BATCH, os.sched_param(0))\n"
        "elif i == 2:\n"
        "    libc.syscall(251, 1, ppid, 3 << 13)  # ioprio_set(IOPRIO_WHO_PROCESS, idle class)\n"
        "fcntl.fcntl(2, fcntl.F_SETPIPE_SZ, 4096)\n")
    assert_ok_and_alike(runs)


def test_a_zombie_left_to_the_forker_is_cleaned_up():
    """clone(CLONE_PARENT) from the case makes a sibling whose parent is the forker, which
    never reaps it: the server replaces the forker rather than wait for the zombie."""
    runs, follow = run_cases(
        "import ctypes, os\n"
        "libc = ctypes.CDLL(None)\n"
        "i = int(input())\n"
        "if i % 2 == 1 and libc.syscall(56, 0x8000 | 17, 0, 0, 0, 0) == 0:  # clone(CLONE_PARENT|SIGCHLD)\n"
        "    os._exit(0)\n"
        "print('ok', i)\n")
    for i, ex in enumerate(runs):
        assert ex.status is Status.OK and ex.stdout == f"ok {i}\n".encode(), ex
        assert ex.wall_seconds < 2, ex.wall_seconds
    assert follow.ok


def test_a_stopped_forker_and_a_chatty_daemon_do_not_hang_the_run():
    """The case exits; a process it forked stops the forker and keeps writing to stderr."""
    runs, _ = run_cases(
        "import os, signal, sys, time\n"
        "if int(input()) == 1:\n"
        "    forker = os.getppid(); r, w = os.pipe()\n"
        "    if os.fork() == 0:\n"
        "        os.kill(forker, signal.SIGSTOP); os.write(w, b'x')\n"
        "        while True:\n"
        "            os.write(2, b'.'); time.sleep(0.01)\n"
        "    os.read(r, 1); sys.exit(1)\n"
        "print('ok')\n")
    assert [ex.status for ex in runs] == [Status.OK, Status.RUNTIME_ERROR, Status.OK, Status.OK], runs
    assert runs[1].exit_code == 1
    assert all(ex.wall_seconds < 3 for ex in runs), [ex.wall_seconds for ex in runs]


def test_a_case_can_read_its_own_proc_files():
    runs, _ = run_cases(
        "import os\n"
        "input()\n"
        "print(len(open('/proc/self/environ', 'rb').read()) > 0, 'rchar' in open('/proc/self/io').read(),\n"
        "      len(os.listdir('/proc/self/fd')))\n", n=2)
    for ex in runs:
        assert ex.status is Status.OK and ex.stdout == b"True True 4\n", ex


SERVER_ATTACKS = {
    "nofile": "resource.prlimit(1, resource.RLIMIT_NOFILE, (4, 4))",
    "cpu": "resource.prlimit(1, resource.RLIMIT_CPU, (1, 1))",
    "nice": "os.setpriority(os.PRIO_PROCESS, 1, 19)",
    "user-nice": "os.setpriority(os.PRIO_USER, os.getuid(), 10)",
    "affinity": "os.sched_setaffinity(1, {min(os.sched_getaffinity(0))})",
    "policy": "os.sched_setscheduler(1, os.SCHED_IDLE, os.sched_param(0))",
}


def _attack_source(attack: str) -> str:
    return ("import os, resource\n"
            "i = int(input())\n"
            f"if i == 1:\n    {attack}\n"
            "print(i)\n")


def test_the_seccomp_filter_keeps_programs_off_the_sandbox_server():
    """PID 1 runs as the program's uid: prlimit/setpriority/sched_set*/ioprio_set would reach
    it, and every later case would inherit the change. The filter refuses them (EPERM): the
    attacking run fails with its own PermissionError, the later ones are untouched."""
    for name, attack in SERVER_ATTACKS.items():
        runs, follow = run_cases(_attack_source(attack), n=3)
        assert runs[1].status is Status.RUNTIME_ERROR and b"PermissionError" in runs[1].stderr, (name, runs[1])
        assert [ex.stdout for ex in (runs[0], runs[2], follow)] == [b"0\n", b"2\n", b"0\n"], (name, runs)


def test_without_the_filter_a_changed_server_gives_runtime_errors_not_sandbox_errors(monkeypatch):
    """Where there is no filter (it is x86-64 only; simulated here by building sandboxes without
    it), the server finds what a program changed on it: that run and every later one in the
    sandbox are runtime errors of the program, never sandbox errors or inherited limits."""
    from arbiter.sandbox import seccomp
    monkeypatch.setattr(seccomp, "filter_bytes", lambda *floor: None)
    for name, attack in SERVER_ATTACKS.items():
        if name == "cpu":
            continue  # the kernel SIGKILLs a server past its CPU rlimit: only the filter helps
        runs, follow = run_cases(_attack_source(attack), n=3, ps=False)  # no descriptor for /proc
        assert runs[0].status is Status.OK, (name, runs[0])
        for ex in (*runs[1:], follow):
            assert ex.status is Status.RUNTIME_ERROR, (name, ex)
            assert "sandbox server's own" in ex.detail, (name, ex.detail)


def test_a_program_may_change_its_own_scheduling():
    runs, _ = run_cases(
        "import os, resource\n"
        "input()\n"
        "os.nice(5)\n"
        "os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})\n"
        "resource.setrlimit(resource.RLIMIT_NOFILE, (16, 16))\n"
        "print(os.getpriority(os.PRIO_PROCESS, 0))\n", n=3)
    assert [ex.stdout for ex in runs] == [b"5\n"] * 3, runs


def test_a_case_may_start_its_own_process_group_but_not_a_session():
    """As under a judge's subprocess (not a process-group leader): setpgrp works. setsid is
    denied (EPERM: each call takes the next id of a host-wide counter a case could read back,
    docs/sandbox.md "Seccomp")."""
    runs, _ = run_cases(
        "import os\n"
        "i = int(input())\n"
        "if i % 2:\n"
        "    os.setpgrp()\n"
        "    print(os.getpgrp() == os.getpid())\n"
        "else:\n"
        "    try:\n"
        "        os.setsid()\n"
        "    except PermissionError:\n"
        "        print('EPERM')\n", n=4)
    assert [ex.stdout for ex in runs] == [b"EPERM\n", b"True\n"] * 2, runs


def test_times_set_by_a_case_do_not_reach_the_next_one():
    """A program may set the times of its stdio and scratch directories to any value; the next
    case never reads them back."""
    runs, _ = run_cases(
        "import os\n"
        "i = int(input())\n"
        "marks = [os.fstat(fd).st_mtime_ns % 10**9 for fd in (0, 1, 2)]\n"
        "marks += [os.stat(d).st_mtime_ns % 10**9 for d in ('/work', '/tmp', '/dev/shm')]\n"
        "print(424242 in marks)\n"
        "for fd in (0, 1, 2):\n"
        "    os.utime(fd, ns=(4102444800000424242, 4102444800000424242))\n"
        "for d in ('/work', '/tmp', '/dev/shm'):\n"
        "    os.utime(d, ns=(4102444800000424242, 4102444800000424242))\n")
    assert [ex.stdout for ex in runs] == [b"False\n"] * CASES, runs


#: Reads what earlier cases left on its stdio (through a second open file description of each,
#: as another process would see it: flock, OFD byte-range locks at offsets 1000..5000, the
#: signal owner), then leaves its own input there: a lock at offset (input + 1) * 1000.
LOCK_CHANNEL = """\
import fcntl, os, struct
i = int(input())
seen = []
for fd in (0, 1, 2):
    seen.append(fcntl.fcntl(fd, fcntl.F_GETOWN))
    probe = os.open("/proc/self/fd/%d" % fd, os.O_RDWR)
    try:
        fcntl.flock(probe, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        seen.append("flocked")
    for start in range(1, 6):
        got = fcntl.fcntl(probe, 36, struct.pack("hhqqi4x", fcntl.F_WRLCK, 0, start * 1000, 1, 0))
        if struct.unpack("hhqqi4x", got)[0] != fcntl.F_UNLCK:  # 36: F_OFD_GETLK
            seen.append(start)
    os.close(probe)
print(seen)
for fd in (0, 1, 2):
    fcntl.fcntl(fd, fcntl.F_SETOWN, os.getpid())
    if fd < 2:  # 37: F_OFD_SETLK
        fcntl.fcntl(fd, 37, struct.pack("hhqqi4x", fcntl.F_RDLCK if fd == 0 else fcntl.F_WRLCK, 0,
                                        (i + 1) * 1000, 1, 0))
    fcntl.flock(fd, fcntl.LOCK_SH if fd == 0 else fcntl.LOCK_EX)
"""


def test_locks_and_owners_left_on_the_case_files_do_not_reach_the_next_case():
    """Locks (flock, OFD byte ranges) and the F_SETOWN owner belong to an open file or its
    inode: on case files shared from case to case they once carried every earlier case's
    input to the next one (case 3 printed inputs 0-2). Each case gets new files."""
    runs, follow = run_cases(LOCK_CHANNEL, n=4)
    assert_ok_and_alike([*runs, follow])
    assert runs[0].stdout == b"[0, 0, 0]\n", runs[0]


def test_the_two_counts_the_readme_says_reach_the_next_case():
    """The README: of a case's doing, only two counts reach the next case, the PID counter and the
    scratch tmpfs's inode numbers (both grow with what earlier cases created). Pinned here so the
    statement stays exactly true."""
    with Sandbox(limits=Limits(cpu_seconds=2)) as sb:
        assert sb.load_python(
            "import os\n"
            "n = int(input())\n"
            "fd = os.open('/tmp/probe', os.O_CREAT | os.O_WRONLY)\n"
            "print(os.getpid(), os.fstat(fd).st_ino)\n"
            "for i in range(n):\n"
            "    pid = os.fork()\n"
            "    if pid == 0:\n"
            "        os._exit(0)\n"
            "    os.waitpid(pid, 0)\n"
            "    open('/tmp/f%d' % i, 'w').close()\n") is None
        runs = [sb.run_python(f"{n}\n".encode()) for n in (0, 50, 0)]
    assert all(ex.ok for ex in runs), runs
    (pid0, ino0), (pid1, ino1), (pid2, ino2) = (map(int, ex.stdout.split()) for ex in runs)
    assert pid2 - pid1 == 50 + (pid1 - pid0) and ino2 - ino1 == 50 + (ino1 - ino0), runs


#: A case that signals every process it sees but itself and PID 1 (its forker included, every
#: other case), and leaves a daemon that for a second signals every process that appears after
#: it started: what the next case's process would be, were it forked (ahead of its request, say)
#: before this case's processes are all gone.
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
    """Its signals, and its daemon's at every process that shows up after it, reach no later
    case: each case, the one after it and the session's last run get their own verdict."""
    with Sandbox(limits=Limits(cpu_seconds=2, wall_seconds=4)) as sb:
        assert sb.load_python(SIGNAL_ALL) is None
        runs = [sb.run_python(f"{i}\n".encode()) for i in range(6)]
        assert sb.stray_processes() == []
        last = sb.run_python(b"6\n", last=True)
    for i, ex in enumerate([*runs, last]):
        assert ex.status is Status.OK and ex.stdout == f"ok {i}\n".encode(), (i, ex, ex.stderr[-300:])


def test_a_program_loaded_after_a_native_run_runs_without_a_forker():
    """A native run lowers the server's hard RLIMIT_NOFILE to the descriptor floor for good
    (guest/fdfloor.py), so no forker can be made after it: a program loaded then is loaded by the
    server itself, and its cases, large input or not, are forked by the server."""
    with Sandbox() as sb:
        assert sb.run(["/bin/true"]).ok
        assert sb.load_python("import sys\nd = sys.stdin.buffer.read()\nprint(len(d), d[:4])\n") is None
        for data, out in ((b"abc", b"3 b'abc'\n"), (b"x" * 3_000_000, b"3000000 b'xxxx'\n"), (b"", b"0 b''\n")):
            ex = sb.run_python(data)
            assert ex.ok and ex.stdout == out, ex
        assert sb.run(["/bin/true"]).ok
