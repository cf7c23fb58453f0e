"""Process plumbing of the guest server: libc access, fork, own oom_score_adj, the namespace's pids.

Exports: :func:`load_libc` (sets :data:`LIBC`, :data:`RAW_FORK` once at start-up), :func:`fork`,
:func:`find_tid_offset` and :func:`clone_process` (a process cloned into new namespaces),
:data:`EXIT`, :func:`memfd`, :func:`reseed_random`, :func:`close_all_but`, :func:`namespace_pids`,
:func:`open_children`, :func:`children`, :func:`sigkill_each`, :func:`parent_pid`, :func:`stopped`,
:func:`write_own_proc`, :func:`set_own_oom_adj`. See docs/sandbox.md.
"""

import errno
import os
import signal
import sys

from .protocol import write_all


#: ``os._exit``, captured before any program runs (a program may replace it in its process).
EXIT = os._exit
LIBC = None
RAW_FORK = None  # libc's fork(), called with the GIL held (see fork)


def load_libc():
    """Open libc (ctypes) and make this process non-dumpable: no ptrace, no /proc access by
    programs. Leaves :data:`LIBC` None when ctypes is missing."""
    global LIBC, RAW_FORK
    try:
        import ctypes
        LIBC = ctypes.CDLL(None)
        RAW_FORK = ctypes.PyDLL(None, use_errno=True).fork
        LIBC.prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE 0: no ptrace, no /proc access by programs
    except Exception:
        LIBC = None


#: A case's input is in its run's memory baseline: sealed, so that no case can free its pages
#: (``ftruncate``, a hole punched, a reopen through ``/proc/self/fd/0``) and take their room.
_SEALS = 0x0001 | 0x0002 | 0x0004 | 0x0008  # F_SEAL_SEAL | SHRINK | GROW | WRITE
_F_ADD_SEALS = 1033


def memfd(name, data):
    """A new memfd holding ``data``, at offset 0, sealed: it can never change (:data:`_SEALS`)."""
    import fcntl

    fd = os.memfd_create(name, os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING)
    write_all(fd, data)
    os.lseek(fd, 0, os.SEEK_SET)
    fcntl.fcntl(fd, _F_ADD_SEALS, _SEALS)
    return fd


def reseed_random():
    """Reseed ``random`` (when imported) from 256 bits of ``os.urandom``, as its at-fork hook
    does (from 2,496 bytes: the same effect, fewer pages written)."""
    rnd = sys.modules.get("random")
    if rnd is not None:
        rnd._inst.seed(int.from_bytes(os.urandom(32), "little"))


def fork(reseed=True):
    """Fork this process; returns like ``os.fork()``. Raises OSError.

    Through libc's ``fork()`` called with the GIL held (``ctypes.PyDLL``), not ``os.fork()``:
    CPython's after-fork work in the child writes to many pages of the parent's heap (each a
    copy-on-write fault); the server is single-threaded and holds no lock while it forks, and
    ``random``'s reseeding is done here. Falls back to ``os.fork()`` without libc or once a module
    with its own at-fork hook (``logging``, ``concurrent.futures.thread``) is imported."""
    raw = RAW_FORK
    if raw is None or "logging" in sys.modules or "concurrent.futures.thread" in sys.modules:
        return os.fork()
    pid = raw()
    if pid < 0:
        import ctypes
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err))
    if pid == 0 and reseed:
        reseed_random()  # what random's os.register_at_fork hook does
    return pid


#: Where glibc keeps the calling thread's TID (an offset into its ``struct pthread``), found by
#: :func:`find_tid_offset`; None: unknown (:func:`clone_process` is then not used).
TID_OFFSET = None
SYS_CLONE, SYS_GETTID = 56, 186  # x86_64
CLONE_CHILD_CLEARTID, CLONE_CHILD_SETTID = 0x00200000, 0x01000000


def find_tid_offset():
    """Find (once, at start-up) where glibc caches the thread's TID in its ``struct pthread``,
    which ``fork()`` has the kernel write in the child (``CLONE_CHILD_SETTID``), so that
    :func:`clone_process` can do the same: in a forked child and in its child, the first int
    equal to ``gettid()`` past ``pthread_self()``; used only when both agree. Sets
    :data:`TID_OFFSET` (None on another architecture, without ctypes, or when they differ)."""
    global TID_OFFSET
    if RAW_FORK is None or os.uname().machine != "x86_64":
        return None
    r, w = os.pipe()
    pid = fork(reseed=False)
    if pid == 0:
        found = -1
        try:
            found = _tid_offset_here()
            if found >= 0:
                grandchild = fork(reseed=False)
                if grandchild == 0:
                    EXIT(0 if _tid_offset_here() == found else 1)
                _, status = os.waitpid(grandchild, 0)
                found = found if status == 0 else -1
        finally:
            os.write(w, b"%d" % found)
            EXIT(0)
    os.close(w)
    data = os.read(r, 32)
    os.close(r)
    os.waitpid(pid, 0)
    found = int(data or b"-1")
    TID_OFFSET = found if found >= 0 else None
    return TID_OFFSET


def _pthread_self():
    """The address of the calling thread's ``struct pthread`` (``pthread_self()``)."""
    import ctypes

    fn = ctypes.CDLL(None).pthread_self
    fn.restype = ctypes.c_void_p
    return fn()


def _tid_offset_here():
    """The offset of the first int equal to this thread's TID in its ``struct pthread`` (-1)."""
    import ctypes
    import struct

    tid = ctypes.CDLL(None).syscall(SYS_GETTID)
    raw = ctypes.string_at(_pthread_self(), 0x1000)
    for offset in range(0, len(raw) - 4, 4):
        if struct.unpack_from("i", raw, offset)[0] == tid:
            return offset
    return -1


def clone_process(flags):
    """``clone(2)`` with namespace ``flags``: like :func:`fork` (returns 0 in the child, its pid
    in the parent), the child in new namespaces, a new PID namespace's PID 1 among them, with
    no intermediate process; glibc's cached TID is written by the kernel as ``fork()`` has it
    written. Raises OSError (or RuntimeError when :func:`find_tid_offset` found nothing)."""
    if TID_OFFSET is None:
        raise RuntimeError("the TID field of glibc's struct pthread is not known")
    import ctypes
    import signal as _signal

    libc = ctypes.PyDLL(None, use_errno=True)  # (the GIL held, as for RAW_FORK)
    ctid = ctypes.c_void_p(_pthread_self() + TID_OFFSET)
    pid = libc.syscall(ctypes.c_long(SYS_CLONE),
                       ctypes.c_ulong(flags | CLONE_CHILD_SETTID | CLONE_CHILD_CLEARTID | _signal.SIGCHLD),
                       ctypes.c_void_p(0), ctypes.c_void_p(0), ctid, ctypes.c_ulong(0))
    if pid < 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err))
    return pid


def close_all_but(keep):
    """Close every descriptor but those in ``keep``."""
    low = 0
    for fd in sorted(keep):
        if fd > low:
            os.closerange(low, fd)
        low = fd + 1
    os.closerange(low, 1 << 16)


def namespace_pids(keep=None):
    """The pids in this PID namespace (``/proc``) other than this process and ``keep``."""
    me = os.getpid()
    return [int(name) for name in os.listdir("/proc")
            if name.isdigit() and int(name) not in (me, keep)]


def open_children(pid):
    """A descriptor of ``/proc/<pid>/task/<pid>/children`` (read it with :func:`children`), or -1.
    It stays the file of that process: once it is gone it reads empty, and a later process
    with the same pid number has a file of its own (keep it with what it was opened for)."""
    try:
        return os.open("/proc/%d/task/%d/children" % (pid, pid), os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return -1


def children(fd):
    """The pids of the children of (the main thread of) the process whose :func:`open_children`
    descriptor is ``fd``, zombies included; None when unreadable. (Read again from the start:
    a path lookup in ``/proc`` costs ten times the read.)"""
    if fd < 0:
        return None
    try:
        return [int(p) for p in os.pread(fd, 1 << 16, 0).split()]
    except (OSError, ValueError):
        return None


def open_status(pid):
    """A descriptor of ``/proc/<pid>/status`` (read it with :func:`signals_pending`), or -1."""
    try:
        return os.open("/proc/%d/status" % pid, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return -1


def signals_pending(fd):
    """True when the process whose :func:`open_status` descriptor is ``fd`` has a signal pending
    (``SigPnd``/``ShdPnd`` not zero), or its status is unreadable."""
    try:
        status = os.pread(fd, 1 << 13, 0)
    except OSError:
        return True
    for field in (b"\nSigPnd:", b"\nShdPnd:"):
        at = status.find(field)
        if at < 0:
            return True
        value = status[at + len(field):status.find(b"\n", at + 1)].strip()
        if value.strip(b"0"):
            return True
    return False


def sigkill_each(pids):
    """SIGKILL each pid (those already gone are skipped)."""
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def parent_pid(pid):
    """The parent pid of ``pid`` (from ``/proc``), None when it is gone."""
    try:
        with open("/proc/%d/stat" % pid, "rb") as f:
            return int(f.read().rsplit(b")", 1)[1].split()[1])
    except (OSError, ValueError, IndexError):
        return None


def stopped(pid):
    """True when child ``pid`` is stopped (SIGSTOP from a program); reaps it if it exited."""
    try:
        done, status = os.waitpid(pid, os.WNOHANG | os.WUNTRACED)
    except ChildProcessError:
        return False
    return bool(done) and os.WIFSTOPPED(status)


def write_own_proc(name, value):
    """Write ``value`` to this (non-dumpable) process's ``/proc/self/<name>``; returns the old
    value (bytes, stripped). Dumpable only for the instant of the write, while no program is
    alive in the sandbox (the previous case's processes are reaped, the forker is dropped), so
    nothing can ptrace it. Raises OSError."""
    if LIBC is None:
        raise OSError(errno.ENOSYS, "no libc")
    LIBC.prctl(4, 1, 0, 0, 0)
    try:
        fd = os.open("/proc/self/" + name, os.O_RDWR | os.O_CLOEXEC)
        try:
            old = os.pread(fd, 128, 0).strip()
            os.write(fd, value)
            return old
        finally:
            os.close(fd)
    finally:
        LIBC.prctl(4, 0, 0, 0, 0)


def set_own_oom_adj(value):
    """Set this process's own ``oom_score_adj`` (:func:`write_own_proc`); returns the old value
    (bytes) or None."""
    try:
        return write_own_proc("oom_score_adj", value)
    except OSError:
        return None
