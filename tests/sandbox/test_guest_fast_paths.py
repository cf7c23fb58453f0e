"""What the per-case fast paths (forker, reaper, warm pool) must not give up: a leftover
process is found even at a reused pid, the session's autogroup nice value does not reach a later
case or submission, and a forker made again after a reply is not charged to the next case."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[2] / "src"

# Run as PID 1 of a new user+PID namespace (like the sandbox's server), where writing
# ns_last_pid stands in for the ~4.2 million pid allocations a program needs to wrap the
# namespace's pid counter around (pid_max 4194304 in the sandbox; measured at ~45 us of CPU
# each from a Python case that compiles a clone() loop with the sandbox's gcc).
_STALE_CHILDREN_SCRIPT = r"""
import os, signal, time
from arbiter.sandbox.guest.forker import Forker
from arbiter.sandbox.guest.reaper import only_forker_left
from arbiter.sandbox.guest.state import ServerState

assert os.getpid() == 1
state = ServerState(-1, -1, True)

def zombie(pid):
    while True:
        with open("/proc/%d/stat" % pid) as f:
            if f.read().rsplit(")", 1)[1].split()[0] == "Z":
                return
        time.sleep(0.001)

def forker(with_sibling):
    # a "forker": forks its case (exits at once) and, if asked, a second child (what
    # clone(CLONE_PARENT) from the case makes); says their pids on a pipe, then waits
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        case = os.fork()
        if case == 0:
            os._exit(0)
        sib = 0
        if with_sibling:
            sib = os.fork()
            if sib == 0:
                time.sleep(60)
                os._exit(0)
        os.write(w, b"%d %d\n" % (case, sib))
        time.sleep(60)
        os._exit(0)
    os.close(w)
    case, sib = map(int, os.read(r, 100).split())
    zombie(case)
    fk = Forker()  # the server's handle on it, as the server makes one for each forker
    fk.started(pid)
    return fk, case, sib

# a forker at pid >= 300 (the pids a wrapped counter reuses); its case ends normally: the
# server keeps its /proc children file open
os.write(os.open("/proc/sys/kernel/ns_last_pid", os.O_WRONLY), b"499")
f1, c1, _ = forker(False)
assert only_forker_left(state, f1, c1)
os.kill(f1.pid, signal.SIGKILL)  # a program kills its forker; the server reaps it...
os.waitpid(f1.pid, 0)
f1.close()
while True:  # (its case, reparented here)
    try:
        os.waitpid(-1, 0)
    except ChildProcessError:
        break
# ...and, once the namespace's pid counter has wrapped around, forks a new one at the same pid
os.write(os.open("/proc/sys/kernel/ns_last_pid", os.O_WRONLY), b"%d" % (f1.pid - 1))
f2, c2, sib = forker(True)
assert f2.pid == f1.pid, (f1.pid, f2.pid)
print("only_forker_left with a live sibling:", only_forker_left(state, f2, c2), flush=True)
os.kill(f2.pid, signal.SIGKILL)
"""


@pytest.mark.skipif(not shutil.which("unshare"), reason="needs unshare(1)")
def test_a_forker_at_a_reused_pid_still_has_its_leftovers_found():
    """The server keeps each forker's /proc children file open (only_forker_left() reads it
    after every case). A forker that died and a later one that got the same pid number (the
    namespace's counter wrapped) must not share it: the dead one's file reads empty, and a
    process the case left (a second child of the forker, clone(CLONE_PARENT)) would live on
    into the next case. The file belongs to the Forker it was opened for."""
    env = dict(os.environ, PYTHONPATH=str(SRC))
    proc = subprocess.run(["unshare", "-Urpf", "--mount-proc", sys.executable, "-c",
                           _STALE_CHILDREN_SCRIPT], capture_output=True, text=True,
                          timeout=60, env=env)
    if proc.returncode != 0 and "unshare" in proc.stderr and "Operation not permitted" in proc.stderr:
        pytest.skip("no unprivileged user namespaces here")
    assert proc.returncode == 0, proc.stderr
    assert "only_forker_left with a live sibling: False" in proc.stdout, proc.stdout


_AUTOGROUP = r"""
import os, time
before = open("/proc/self/autogroup").read().split()[-1]
if input().strip() == "write":
    for _ in range(100):  # (the kernel allows one autogroup nice change per 100 ms, host-wide:
        try:              # EAGAIN when another sandbox's server has just put its own back)
            with open("/proc/self/autogroup", "w") as f:  # the autogroup of the whole session
                f.write("17")
            break
        except BlockingIOError:
            time.sleep(0.02)
print(before)
"""


def test_a_case_cannot_renice_the_autogroup_later_cases_and_submissions_share():
    """A case may write its own /proc/self/autogroup (it is dumpable): that sets the nice value
    of the session's autogroup, which the server, the forker and every later case share. The
    server puts it back after the case, and each session server starts a session (and so an
    autogroup) of its own: neither the next case nor the next submission reads "17"."""
    from arbiter.sandbox.limits import Limits
    from arbiter.sandbox.pool import SandboxPool
    from arbiter.sandbox.sandbox import Sandbox

    with Sandbox(limits=Limits(cpu_seconds=2)) as sb:
        assert sb.load_python(_AUTOGROUP) is None
        first = sb.run_python(b"write\n")
        second = sb.run_python(b"read\n")
    assert first.stdout == b"0\n", first
    assert second.stdout == b"0\n", second

    pool = SandboxPool(max_sandboxes=1)
    try:
        seen = []
        for inp in (b"write\n", b"read\n"):
            sb = pool.acquire(limits=Limits(cpu_seconds=2))
            assert sb.load_python(_AUTOGROUP) is None
            seen.append(sb.run_python(inp).stdout)
            pool.release(sb)
    finally:
        pool.close()
    assert seen == [b"0\n", b"0\n"], seen


_KILLS_ITS_FORKER_THEN_HONEST = r"""
import os, signal
import numpy as np  # a heavy module the program names: imported before its cases fork
cmd = input().strip()
if cmd == "kill":
    os.kill(os.getppid(), signal.SIGKILL)
b = bytearray(36 << 20)
print(cmd)
"""


def test_the_server_loading_its_copy_late_is_not_charged_to_an_honest_case():
    """After a case killed the forker, the server makes a new one (first compiling its own copy
    of the program, numpy imported) right after that case's reply: the host waits for it
    ("settling", then "sync") before it takes the next case's memory baseline. Otherwise the
    next, honest case is charged ~15 MiB of the server's growth (36 MiB become ~52 MiB of a
    48 MiB limit): a false MLE that depends on what an earlier case did."""
    pytest.importorskip("numpy")
    from arbiter.sandbox.execution import Status
    from arbiter.sandbox.limits import Limits, MiB
    from arbiter.sandbox.sandbox import Sandbox

    with Sandbox(limits=Limits(cpu_seconds=2, memory_bytes=48 * MiB)) as sb:
        assert sb.load_python(_KILLS_ITS_FORKER_THEN_HONEST) is None
        runs = [(cmd, sb.run_python(f"{cmd}\n".encode()))
                for cmd in ("plain", "kill", "plain", "plain")]
    for cmd, ex in runs:
        if cmd == "plain":
            assert ex.status is Status.OK, (cmd, ex.status, ex.peak_memory_bytes / MiB)


_CLONE_SCRIPT = r"""
import ctypes, os, struct
from arbiter.sandbox.guest import kernel

kernel.load_libc()
offset = kernel.find_tid_offset()
assert offset is not None
pid = kernel.clone_process(0x20000000 | 0x00020000 | 0x40000000)  # new PID, mount, network
if pid == 0:
    tid = struct.unpack("i", ctypes.string_at(kernel._pthread_self() + offset, 4))[0]
    child = kernel.fork()  # glibc's own fork from the cloned process still works
    if child == 0:
        kernel.EXIT(0)
    os.waitpid(child, 0)
    print("cloned: pid %d, glibc's tid %d, first child %d" % (os.getpid(), tid, child), flush=True)
    kernel.EXIT(0)
assert os.waitpid(pid, 0)[1] == 0
"""


@pytest.mark.skipif(not shutil.which("unshare"), reason="needs unshare(1)")
def test_a_session_server_cloned_into_its_namespaces_is_pid_1_with_glibcs_tid_right():
    """The zygote clones each session server straight into its namespaces (no helper process):
    the child is PID 1 of its PID namespace, and glibc's cached TID reads 1, as fork() leaves it."""
    env = dict(os.environ, PYTHONPATH=str(SRC))
    proc = subprocess.run(["unshare", "-Ur", sys.executable, "-c", _CLONE_SCRIPT], capture_output=True,
                          text=True, timeout=60, env=env)
    if proc.returncode != 0 and "unshare" in proc.stderr and "Operation not permitted" in proc.stderr:
        pytest.skip("no unprivileged user namespaces here")
    assert proc.returncode == 0, proc.stderr
    assert "cloned: pid 1, glibc's tid 1, first child 2" in proc.stdout, proc.stdout
