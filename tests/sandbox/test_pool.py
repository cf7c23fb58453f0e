"""The warm pool: a reused sandbox gives each submission what a fresh one would, and nothing of
the submissions before it (docs/sandbox.md, "Warm pool"). Real sandboxes throughout."""

from __future__ import annotations

import json
import os
import threading
import time

import pytest

from arbiter.sandbox.execution import Status
from arbiter.sandbox.limits import MiB, Limits
from arbiter.sandbox.pool import SandboxPool
from arbiter.sandbox.sandbox import Sandbox

LIMITS = Limits(cpu_seconds=4, memory_bytes=256 * MiB)

#: What a case sees of its sandbox: pid, inode numbers of new files, what is in the scratch dirs
#: and /prog, processes, environment, cwd, capabilities.
PROBE = r"""
import json, os
seen = {d: sorted(os.listdir(d)) for d in ("/work", "/tmp", "/dev/shm", "/prog")}
for d in ("/work", "/tmp"):
    open(d + "/probe", "w").close()
caps = {k: v.strip() for k, v in (l.split(":", 1) for l in open("/proc/self/status") if l.startswith("Cap"))}
try:
    open("/dev/probe", "w").close()
    dev = "writable"
except OSError:
    dev = "read-only"
print(json.dumps({"pid": os.getpid(), "ino": [os.stat(d + "/probe").st_ino for d in ("/work", "/tmp")],
                  "seen": seen, "procs": sorted(int(p) for p in os.listdir("/proc") if p.isdigit()),
                  "env": dict(os.environ), "cwd": os.getcwd(), "caps": caps, "dev": dev}))
"""

#: Submission A: leaves files everywhere it can write, a setsid daemon and fork-bomb remains,
#: burns CPU and memory.
MESS = r"""
import os, time
for d in ("/work", "/tmp", "/dev/shm"):
    with open(d + "/left_by_a", "w") as f:
        f.write("secret of A")
    os.makedirs(d + "/dir_of_a/sub", exist_ok=True)
try:
    open("/dev/left_by_a", "w").close()
except OSError:
    pass
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        while True:
            time.sleep(0.05)
    os._exit(0)
for _ in range(8):
    if os.fork() == 0:
        time.sleep(30)
        os._exit(0)
block = bytearray(96 * 1024 * 1024)
for i in range(0, len(block), 4096):
    block[i] = 1
t = time.process_time()
while time.process_time() - t < 0.4:
    pass
print("A done")
"""


def _pool(**kw) -> SandboxPool:
    kw.setdefault("spares", 0)
    return SandboxPool(**kw)


def _wait_idle(pool: SandboxPool, n: int = 1) -> None:
    """Until ``n`` sandboxes are idle (recycled on the pool's thread)."""
    deadline = time.monotonic() + 120
    while pool.stats()["idle"] < n:
        assert time.monotonic() < deadline, pool.stats()
        time.sleep(0.01)


def _probe(sb: Sandbox) -> dict:
    assert sb.load_python(PROBE) is None
    ex = sb.run_python(b"", LIMITS)
    assert ex.status is Status.OK, (ex.status, ex.detail, ex.stderr)
    return json.loads(ex.stdout)


@pytest.fixture
def pool():
    p = _pool(max_sandboxes=4)
    yield p
    p.close()


def test_a_reused_sandbox_shows_the_next_submission_a_fresh_one(pool):
    a = pool.acquire(files={"a.txt": b"A's file"}, limits=LIMITS)
    first = _probe(a)
    assert first["seen"]["/prog"] == ["a.txt"]
    assert a.load_python(MESS) is None
    mess = a.run_python(b"", LIMITS)
    assert mess.status is Status.OK and mess.stdout == b"A done\n", (mess.status, mess.detail)
    pool.release(a)
    _wait_idle(pool)
    b = pool.acquire(files={"b.txt": b"B's file"}, limits=LIMITS)
    assert b is a and pool.stats()["reused"] == 1  # the same sandbox, a new session
    second = _probe(b)
    # the same numbers a fresh sandbox gives: PID counter and tmpfs inode numbers start again
    assert second["pid"] == first["pid"] and second["ino"] == first["ino"]
    assert second["seen"] == {"/work": [], "/tmp": [], "/dev/shm": [], "/prog": ["b.txt"]}
    assert second["procs"] == first["procs"]  # A's daemon and children are gone
    assert second["env"] == first["env"] and second["cwd"] == first["cwd"] == "/work"
    assert second["dev"] == "read-only"
    for name in ("CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"):
        assert int(second["caps"][name], 16) == 0, second["caps"]
    # cgroup readings are this submission's own: not A's CPU or memory
    assert b.load_python("print(sum(range(1000)))\n") is None
    small = b.run_python(b"", LIMITS)
    assert small.status is Status.OK and small.stdout == b"499500\n"
    assert small.peak_memory_bytes < mess.peak_memory_bytes / 4
    assert small.cpu_seconds < mess.cpu_seconds / 4
    assert b.stray_processes() == []
    assert b.task_count() == 2  # the session server and its forker: nothing of A in the cgroups
    pool.release(b)


#: Forks until the pids limit refuses, each child asleep: how many processes a program may hold.
BUDGET = r"""
import os, time
n = 0
try:
    while n < 100:
        if os.fork() == 0:
            time.sleep(30)
            os._exit(0)
        n += 1
except OSError:
    pass
print(n)
"""

#: Children that spin and are never waited for: the CPU watch kills every process of the run but
#: the session server (and the zygote, in the same cgroups since the sandbox started).
SPINNERS = r"""
import os
for _ in range(3):
    if os.fork() == 0:
        while True:
            pass
while True:
    pass
"""


def test_the_zygote_in_the_sandbox_cgroups_is_out_of_a_sessions_reach(pool):
    """The zygote shares the sandbox's cgroups (its session servers are born in them): a session
    that fills the pids limit and is stopped by the CPU watch takes neither the zygote nor a
    process of the next session's budget."""
    limits = Limits(cpu_seconds=0.5, wall_seconds=5, processes=8)
    a = pool.acquire(limits=limits)
    zygote = a.session.zygote_pid
    assert zygote in a._cg.pids() and zygote not in a.session.tasks()
    assert a.load_python(BUDGET) is None
    full = a.run_python(b"", limits)
    assert full.status is Status.OK and full.stdout == b"7\n", (full.status, full.stdout, full.detail)
    assert a.load_python(SPINNERS) is None
    spun = a.run_python(b"", limits)
    assert spun.status is Status.TIME_LIMIT, (spun.status, spun.detail)
    pool.release(a)
    _wait_idle(pool)
    b = pool.acquire(limits=limits)
    assert b is a and b.session.zygote_pid == zygote and os.path.exists(f"/proc/{zygote}")
    assert b.load_python(BUDGET) is None
    again = b.run_python(b"", limits)
    assert again.stdout == full.stdout, (again.status, again.stdout, again.detail)
    assert b.task_count() == 2
    pool.release(b)


def _next_session(pool: SandboxPool, sb: Sandbox) -> Sandbox:
    """``sb`` released, recycled and acquired again (a new session of the same sandbox)."""
    pool.release(sb)
    _wait_idle(pool)
    again = pool.acquire(limits=LIMITS)
    assert again is sb
    return again


def test_a_python_sessions_go_is_sent_with_its_first_request(pool):
    """A Python session's ``go`` waits for the session's first frame (its load, in the same
    write) or its first read: a session whose first request is not a load, and one given back
    without any request, start and end cleanly, and the sandbox serves the next."""
    sb = pool.acquire(limits=LIMITS, python=True)
    assert sb.stray_processes() == []  # (a read first: the go goes, then the hello is read)
    pool.release(sb)
    _wait_idle(pool)
    again = pool.acquire(limits=LIMITS, python=True)
    assert again is sb
    pool.release(again)  # no request at all: the go is written before the session's exit
    _wait_idle(pool)
    last = pool.acquire(limits=LIMITS, python=True)
    assert last is sb
    assert last.load_python("import sys\nprint(sys.stdin.read().upper())\n") is None
    assert last.run_python(b"ok", LIMITS).stdout == b"OK\n"
    pool.release(last)
    assert pool.stats()["discarded"] == 0


def test_the_kept_prelude_is_used_only_for_its_own_text(pool):
    """The zygote keeps the last load's prelude compiled for the next sessions: a session whose
    load brings another prelude runs that one, and the kept one is never run in its place."""
    sb = pool.acquire(limits=LIMITS)
    outputs = []
    for prelude in ("X = 1\n", "X = 2\n", "X = 1\n", ""):
        assert sb.load_python("print(globals().get('X'))\n", prelude) is None
        outputs.append(sb.run_python(b"", LIMITS).stdout)
        sb = _next_session(pool, sb)
    assert outputs == [b"1\n", b"2\n", b"1\n", b"None\n"]
    pool.release(sb)


#: Overwrites, in its own process, the string constants of a code object the prelude made (the
#: prelude's code is the zygote's, copy-on-write), then prints them.
TAMPER_PRELUDE = r"""
import ctypes
consts = type(np).__getattr__.__code__.co_consts
bad = "tampered"
for i, v in enumerate(consts):
    if isinstance(v, str):
        ctypes.pythonapi.Py_IncRef(ctypes.py_object(bad))
        ctypes.cast(id(consts) + 24 + 8 * i, ctypes.POINTER(ctypes.c_void_p))[0] = id(bad)
print(type(np).__getattr__.__code__.co_consts)
"""
SHOW_PRELUDE = "print(type(np).__getattr__.__code__.co_consts)\n"


def test_a_program_cannot_change_the_kept_prelude(pool):
    """What a program does to the prelude's code objects (here: overwrites their constants with
    ctypes) stays in its own process: the next case and the next session see them as compiled."""
    from arbiter.judge.preludes import PYTHON_PRELUDE

    sb = pool.acquire(limits=LIMITS)
    assert sb.load_python(SHOW_PRELUDE, PYTHON_PRELUDE) is None
    honest = sb.run_python(b"", LIMITS).stdout
    assert b"'np'" in honest
    sb = _next_session(pool, sb)  # (armed with the prelude kept compiled)
    assert sb.load_python(TAMPER_PRELUDE, PYTHON_PRELUDE) is None
    tampered = sb.run_python(b"", LIMITS)
    assert tampered.status is Status.OK and b"tampered" in tampered.stdout, (tampered.status, tampered.stderr)
    assert sb.load_python(SHOW_PRELUDE, PYTHON_PRELUDE) is None
    assert sb.run_python(b"", LIMITS).stdout == honest
    sb = _next_session(pool, sb)
    assert sb.load_python(SHOW_PRELUDE, PYTHON_PRELUDE) is None
    assert sb.run_python(b"", LIMITS).stdout == honest
    pool.release(sb)


def test_a_native_program_sees_its_own_files_only(pool):
    a = pool.acquire(files={"main": b"#!/bin/sh\necho A\n", "data": b"x"}, limits=LIMITS)
    ex = a.run(["/bin/sh", "-c", "ls /prog; echo left > /work/kept; ls /work"])
    assert ex.stdout == b"data\nmain\nkept\n"
    pool.release(a)
    _wait_idle(pool)
    b = pool.acquire(files={"other": b"y"}, limits=LIMITS)
    assert b is a
    ex = b.run(["/bin/sh", "-c", "ls -a /prog /work; cat /prog/other"])
    assert ex.status is Status.OK
    assert ex.stdout == b"/prog:\n.\n..\nother\n\n/work:\n.\n..\ny", ex.stdout
    pool.release(b)


def test_limits_are_per_session(pool):
    small = Limits(cpu_seconds=4, memory_bytes=64 * MiB, processes=8)
    a = pool.acquire(limits=small)
    assert a.load_python("x = bytearray(160 * 1024 * 1024)\nprint(len(x))\n") is None
    assert a.run_python(b"", small).status is Status.MEMORY_LIMIT
    pool.release(a)
    _wait_idle(pool)
    b = pool.acquire(limits=LIMITS)
    assert b is a
    assert b.load_python("x = bytearray(32 * 1024 * 1024)\nprint(len(x))\n") is None
    ex = b.run_python(b"", LIMITS)
    assert ex.status is Status.OK and ex.stdout == b"33554432\n", (ex.status, ex.detail)
    pool.release(b)


def test_a_failed_sandbox_is_never_reused(pool):
    a = pool.acquire(limits=LIMITS)
    pool.discard(a)
    assert not a.alive
    b = pool.acquire(limits=LIMITS)
    assert b is not a and pool.stats()["discarded"] == 1
    b._kill_now()  # its server gone: the session cannot end cleanly
    pool.release(b)
    c = pool.acquire(limits=LIMITS)
    assert c is not b and c.alive
    assert _probe(c)["seen"]["/work"] == []
    pool.release(c)


def test_no_reuse_when_disabled():
    pool = _pool(max_sandboxes=0)
    try:
        a = pool.acquire(limits=LIMITS)
        pool.release(a)
        assert not a.alive
        b = pool.acquire(limits=LIMITS)
        assert b is not a and pool.stats()["reused"] == 0
        pool.release(b)
    finally:
        pool.close()


def test_threads_share_a_bounded_pool():
    pool = _pool(max_sandboxes=3, max_idle_per_key=2, spares=1)
    seen: set[int] = set()
    errors: list[str] = []

    def worker(k: int) -> None:
        for i in range(4):
            try:
                sb = pool.acquire(limits=LIMITS)
            except Exception as exc:
                errors.append(f"{k}/{i}: acquire: {exc!r}")
                continue
            seen.add(id(sb))
            try:
                err = sb.load_python("print(int(input()) * 2)\n")
                ex = sb.run_python(f"{k * 10 + i}\n".encode(), LIMITS)
                if err is not None or ex.stdout != f"{2 * (k * 10 + i)}\n".encode():
                    errors.append(f"{k}/{i}: {err} {ex.status} {ex.stdout!r} {ex.detail}")
            except Exception as exc:
                errors.append(f"{k}/{i}: {exc!r}")
            finally:
                pool.release(sb)

    # short-lived threads: the sandboxes they took must outlive them (bwrap --die-with-parent
    # follows the thread that started it), so each round's threads are new ones
    for wave in range(2):
        threads = [threading.Thread(target=worker, args=(3 * wave + k,)) for k in range(3)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        _wait_idle(pool)
    try:
        assert not errors
        st = pool.stats()
        assert st["acquired"] == 24 and st["busy"] == 0
        assert st["started"] + st["reused"] == 24 and st["reused"] > 0
        assert st["discarded"] == 0  # no sandbox died with the thread that took it first
        assert 1 <= st["max_busy"] <= 3
        assert st["idle"] <= 2
    finally:
        pool.close()
    assert pool.stats()["idle"] == 0


def test_a_forked_child_never_uses_its_parents_sandboxes(pool):
    a = pool.acquire(limits=LIMITS)
    pool.release(a)
    _wait_idle(pool)
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: its own, empty pool; the parent's sandbox is not touched
        code = 1
        try:
            os.close(r)
            st = pool.stats()
            sb = pool.acquire(limits=LIMITS)
            out = sb.run(["/bin/echo", "child"]).stdout
            fresh = sb is not a
            pool.release(sb)
            pool.close()
            a.close()  # a forked child only forgets it
            os.write(w, json.dumps({"idle": st["idle"], "out": out.decode(), "fresh": fresh}).encode())
            code = 0
        finally:
            os._exit(code)
    os.close(w)
    with os.fdopen(r) as f:
        got = json.loads(f.read() or "{}")
    assert os.waitpid(pid, 0)[1] == 0
    assert got == {"idle": 0, "out": "child\n", "fresh": True}
    b = pool.acquire(limits=LIMITS)
    assert b is a and b.run(["/bin/echo", "parent"]).stdout == b"parent\n"
    pool.release(b)


def test_prestart_starts_the_sandbox_the_next_acquire_takes(pool):
    pool.prestart(python=True)
    pool.prestart(python=True)  # one on its way: nothing more
    _wait_idle(pool)
    pool.prestart()  # one idle: nothing more
    assert pool.stats()["idle"] == 1
    sb = pool.acquire(limits=LIMITS, python=True)
    try:
        assert pool.stats()["started"] == 0 and pool.stats()["reused"] == 1
        assert sb.load_python("print(int(input()) + 1)\n") is None
        ex = sb.run_python(b"41\n", LIMITS)
        assert ex.status is Status.OK and ex.stdout == b"42\n", (ex.status, ex.detail)
    finally:
        pool.release(sb)


def test_a_disabled_pool_starts_nothing_ahead():
    off = _pool(max_sandboxes=0)
    off.prestart()
    assert off.stats()["idle"] == 0 and not off._threads
    off.close()


def test_back_to_back_submissions_rotate_a_few_sandboxes_and_close_none(monkeypatch):
    # spares cover the recycling of the last ones; none is started only to be closed for want
    # of room when it comes back (an acquire waits for a recycle however slow this machine is)
    import arbiter.sandbox.pool as pool_module

    monkeypatch.setattr(pool_module, "RECYCLE_WAIT", 60.0)
    pool = SandboxPool(max_sandboxes=6, spares=1)
    seen: dict[int, Sandbox] = {}
    try:
        for i in range(12):
            sb = pool.acquire(limits=LIMITS, python=True)
            seen[id(sb)] = sb
            assert sb.load_python("print(int(input()) + 1)\n") is None
            ex = sb.run_python(f"{i}\n".encode(), LIMITS)
            assert ex.stdout == f"{i + 1}\n".encode(), (ex.status, ex.detail)
            pool.release(sb)
        stats = pool.stats()
        assert stats["started"] == 1 and stats["reused"] == 11 and stats["discarded"] == 0, stats
        assert len(seen) <= pool.max_idle_per_key
        assert all(sb.alive for sb in seen.values())
    finally:
        pool.close()
