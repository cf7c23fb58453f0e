"""One host uid per sandbox (red team, December 2026): kernel quotas kept per host user are not shared.

Every sandbox ran as host uid 65534, and the kernel counts pipe buffer pages per host user
(``fs.pipe-user-pages-soft``): a program that grew about 60 pipes to 1 MiB put the uid over the
soft limit, and while it held them every new pipe in every other sandbox had 8 KiB instead of
64 KiB (an honest program that buffers 32 KiB in its own pipe before reading it blocked: a false
TLE; and a bit one tenant's program could read of another's). As root, each sandbox now runs as a
host uid of its own (``arbiter.sandbox.hostuid``), shown inside as 65534.
"""

from __future__ import annotations

import os
import threading
import time

import pytest

from arbiter.sandbox import hostuid
from arbiter.sandbox.limits import Limits
from arbiter.sandbox.sandbox import Sandbox

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="per-sandbox host uids need root")

#: Grows pipes to 1 MiB (two processes, 64 descriptors each) until the kernel refuses (its host uid
#: near the soft limit), then tops up with default pipes (over it), and holds them for 4 s.
HOG = r"""
import fcntl, os, time
kid = os.fork()
grown = 0
held = []
for i in range(60):
    r, w = os.pipe()
    os.close(w)
    held.append(r)
    try:
        fcntl.fcntl(r, fcntl.F_SETPIPE_SZ, 1 << 20)
        grown += 1
    except OSError:
        for j in range(20):
            r, w = os.pipe()
            os.close(w)
            held.append(r)
        break
print("grown", grown, flush=True)
time.sleep(4)
if kid:
    os.waitpid(kid, 0)
"""
VICTIM = "import fcntl, os\nr, w = os.pipe()\nprint(fcntl.fcntl(w, fcntl.F_GETPIPE_SZ))\n"


def _host_uid(sb: Sandbox) -> int:
    status = open(f"/proc/{sb.meter.zygote_pid}/status").read()
    return int(next(line for line in status.splitlines() if line.startswith("Uid:")).split()[1])


def _open_files(sb: Sandbox) -> int:
    total = 0
    for pid in sb._cg.pids():
        try:
            total += len(os.listdir(f"/proc/{pid}/fd"))
        except OSError:
            pass
    return total


def test_each_sandbox_runs_as_a_host_uid_of_its_own_shown_inside_as_65534():
    with Sandbox() as a, Sandbox() as b:
        uids = {_host_uid(a), _host_uid(b)}
        assert len(uids) == 2 and all(hostuid.FIRST_UID <= u < hostuid.FIRST_UID + hostuid.COUNT for u in uids)
        for sb in (a, b):
            assert sb.load_python("import os\nprint(os.getuid(), os.getgid())\n") is None
            assert sb.run_python(b"").stdout == b"65534 65534\n"


def _victim_during_hog() -> tuple[bytes, bytes, list[int]]:
    """The victim's pipe size alone and while the hog, in another sandbox, holds its pipes."""
    out = {}
    with Sandbox(limits=Limits(cpu_seconds=2, wall_seconds=10)) as hog, Sandbox() as victim:
        assert hog.load_python(HOG) is None and victim.load_python(VICTIM) is None
        alone = victim.run_python(b"")
        thread = threading.Thread(target=lambda: out.setdefault("hog", hog.run_python(b"")))
        thread.start()
        deadline = time.monotonic() + 10
        while _open_files(hog) < 90:  # both processes holding their pipes
            assert time.monotonic() < deadline, "the hog never held its pipes"
            time.sleep(0.02)
        during = victim.run_python(b"")
        thread.join()
    assert alone.ok and during.ok, (alone, during)
    return alone.stdout, during.stdout, [int(line.split()[1]) for line in out["hog"].stdout.decode().splitlines()]


def test_pipes_grown_in_one_sandbox_leave_another_sandboxs_pipes_alone():
    alone, during, grown = _victim_during_hog()
    assert alone == during == b"65536\n"
    assert sum(grown) >= 60, grown


def test_the_same_hog_shrinks_the_pipes_of_a_sandbox_of_its_host_uid(monkeypatch):
    """The control: both sandboxes given one host uid, as before."""
    monkeypatch.setattr(hostuid, "lease", lambda: hostuid.UidLease(65534, -1))
    alone, during, grown = _victim_during_hog()
    assert (alone, during) == (b"65536\n", b"8192\n"), grown


def test_a_lease_is_exclusive_and_given_back(tmp_path, monkeypatch):
    """Leases start from a random place (the uid shows in mountinfo: the lowest free one would
    tell a program how many sandboxes run); with one place, they go up from it."""
    import random

    monkeypatch.setenv(hostuid.LOCK_DIR_ENV, str(tmp_path))
    monkeypatch.setattr(random, "randrange", lambda n: n - 1)
    first, second = hostuid.lease(), hostuid.lease()
    last = hostuid.FIRST_UID + hostuid.COUNT - 1
    assert (first.uid, second.uid) == (last, hostuid.FIRST_UID)  # (it wraps around)
    pid = os.fork()
    if pid == 0:  # a forked child lets its copy go: the parent's lease stays held
        first.release()
        os._exit(0)
    os.waitpid(pid, 0)
    assert hostuid.lease().uid == hostuid.FIRST_UID + 1
    first.release()
    assert hostuid.lease().uid == last
