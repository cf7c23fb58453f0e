"""The forker's report records, and how a process learns a child's exit without reaping it.

Exports: :data:`REPORT` (the record), :func:`read_report`, :func:`parse_report`, :class:`Rusage`,
:data:`REPORT_GRACE`, :func:`exit_peeker`; the session's last case's own record that its program
ended: :func:`tell_ended`, :func:`own_ended_pipe`, :func:`ended_early`. See docs/sandbox.md ("The
forker", "The session's last case").
"""

import errno
import os
import select
import signal
import struct
import time

from .protocol import read_exact


#: Seconds the server waits for the forker's report once the case has ended (or for the case's
#: processes to be reaped) before it kills the forker and collects the case itself.
REPORT_GRACE = 2.0


#: The forker's reports: kind (b"S" started, b"D" done), pid, wait status, user and system CPU
#: seconds, max RSS (KiB), the run's sequence number (a record of an earlier run, left by a run
#: that failed in the server, is never taken for this run's), a run-queue delay in ns (done: the
#: child's; started: the forker's own since the last start). A forker that runs the case itself
#: (:mod:`.inplace_case`) puts its own CPU, run-queue delay and time run so far into its
#: "started" record's user, system and max RSS fields. Fixed size, written whole.
REPORT = struct.Struct("=ciiddqQq")


_PEEKER = []  # the one exit_peeker() of this process, made before the forker forks


def exit_peeker():
    """The memoised :func:`make_exit_peeker` (made once in the server: every forker inherits it)."""
    if not _PEEKER:
        _PEEKER.append(make_exit_peeker())
    return _PEEKER[0]


def make_exit_peeker():
    """A function ``pid -> (wait status, utime, stime, maxrss KiB)`` for a child that has
    exited or will, without reaping it: the raw ``waitid(P_PID, pid, WEXITED | WNOWAIT)``, whose
    last argument (not in ``os.waitid``) gets the rusage. Falls back to ``wait4`` (reaps) when
    ctypes is missing or not on x86_64."""
    try:
        import ctypes
        if os.uname().machine != "x86_64":
            raise ImportError("waitid's number")
        libc = ctypes.CDLL(None, use_errno=True)
    except (ImportError, OSError):
        def reap(pid):
            _, status, ru = os.wait4(pid, 0)
            return status, ru.ru_utime, ru.ru_stime, ru.ru_maxrss
        return reap
    info = ctypes.create_string_buffer(128)  # siginfo_t
    ru = ctypes.create_string_buffer(144)  # struct rusage
    flags = os.WEXITED | os.WNOWAIT

    def peek(pid):
        while libc.syscall(247, os.P_PID, pid, info, flags, ru) != 0:  # SYS_waitid
            err = ctypes.get_errno()
            if err != errno.EINTR:
                raise OSError(err, os.strerror(err))
        code, = struct.unpack_from("i", info, 8)  # si_code
        st, = struct.unpack_from("i", info, 24)  # si_status
        usec, uusec, ssec, susec, maxrss = struct.unpack_from("qqqqq", ru, 0)
        status = (st & 0xFF) << 8 if code == 1 else (st | 0x80 if code == 3 else st)  # CLD_*
        return status, usec + uusec / 1e6, ssec + susec / 1e6, maxrss

    return peek


class Rusage:
    """The fields of a ``wait4`` rusage the server uses (sent by the forker)."""

    def __init__(self, utime, stime, maxrss):
        self.ru_utime, self.ru_stime, self.ru_maxrss = float(utime), float(stime), int(maxrss)


def read_report(fd):
    """One record from the forker's report pipe (:data:`REPORT`, written whole) as a dict (see
    :func:`parse_report`); None at end of file."""
    try:
        return parse_report(read_exact(fd, REPORT.size))
    except (EOFError, OSError, struct.error):
        return None


def parse_report(data):
    """A :data:`REPORT` record as a dict: ``{"pid", "seq", "run_delay_ns", "base_cpu",
    "base_waited_ns", "base_ran_ns"}`` (started; the forker's own run-queue delay since the last
    case started; the base figures: a forker that runs the case itself, :mod:`.inplace_case`) or
    ``{"pid", "status", "utime", "stime", "maxrss", "seq", "run_delay_ns"}`` (done). Raises
    struct.error."""
    kind, pid, status, utime, stime, maxrss, seq, delay = REPORT.unpack(data)
    if kind == b"S":  # (a forker that runs the case itself: its CPU, waits and time run so far)
        return {"pid": pid, "seq": seq, "run_delay_ns": delay, "base_cpu": utime,
                "base_waited_ns": int(stime * 1e9), "base_ran_ns": maxrss}
    return {"pid": pid, "status": status, "utime": utime, "stime": stime, "maxrss": maxrss,
            "seq": seq, "run_delay_ns": delay}


#: The session's last case's own record, on a pipe of its own, that its program ended: its exit
#: status. Written by the case's process (the forker that became it, never a process it forked)
#: after the program's shutdown (stdio flushed), just before ``_exit``.
ENDED = struct.Struct("=i")

#: Seconds a case that sent its :data:`ENDED` record waits to be killed before it exits itself:
#: the server reads its figures within microseconds unless it is starved, and a case that exits
#: first is reported from its exit, as any other.
ENDED_WAIT = 0.05


def tell_ended(ended_w, own, status):
    """In the case, once its program ended with ``status``: the record, when this is still the
    case's process and ``ended_w`` still its pipe (``own``: :func:`own_ended_pipe`, taken before
    the program ran: a process the program forked, or a descriptor it closed and reused, gets
    no record); then wait for the server to take its figures and kill it (:func:`ended_early`),
    or to be gone (the pipe has no reader), at most :data:`ENDED_WAIT`
    seconds. A signal handler of the program's may still run then, as one may during CPython's
    shutdown. Returns when no record was sent or the wait is over. (Little Python work here: in
    a forked process every page first written is a copy, a few µs each.)"""
    try:
        if own_ended_pipe(ended_w) != own:
            return
        os.write(ended_w, ENDED.pack(status))
        gone = select.poll()
        gone.register(ended_w, 0)  # (POLLERR: no reader left)
        gone.poll(ENDED_WAIT * 1000)
    except OSError:
        return


def own_ended_pipe(ended_w):
    """What :func:`tell_ended` checks, taken in the case before its program runs."""
    st = os.fstat(ended_w)
    return os.getpid(), (st.st_dev, st.st_ino)


def ended_early(pid, ended_r):
    """In the server: the report of its last case ``pid`` from the case's :data:`ENDED` record,
    without waiting for the kernel to tear the process down (a large process takes most of a
    millisecond): ``(wait status, CPU seconds, 0.0, peak RSS KiB)``, the kernel's figures for
    the process at that moment (it waits: :func:`tell_ended`), then the case SIGKILLed (made
    ``SCHED_BATCH`` first: a task so woken preempts no one, so its teardown does not run on this
    server's core before the reply). The
    record is trusted for nothing the program could not do itself: end now, with that status.
    None when the case exited first or without a record (its ``wait4`` then gives its
    figures). The CPU is the process's since it started (the caller subtracts the forker's)."""
    try:
        pidfd = os.pidfd_open(pid)
    except OSError:
        return None
    try:
        poller = select.poll()
        poller.register(ended_r, select.POLLIN)
        poller.register(pidfd, select.POLLIN)
        ready = dict(poller.poll())
        if pidfd in ready:
            return None  # it has exited: its rusage is there
        data = os.read(ended_r, ENDED.size)
        if len(data) != ENDED.size:
            return None
        cpu_ns = time.clock_gettime_ns(((~pid) << 3) | 2)  # the process's CPUCLOCK_SCHED
        maxrss = peak_rss_kib(pid)
        if maxrss is None:
            return None  # its memory is gone already: it is exiting, its rusage comes next
        try:  # (woken by the SIGKILL, its teardown would preempt this server on its core)
            os.sched_setscheduler(pid, os.SCHED_BATCH, os.sched_param(0))
        except OSError:
            pass
        os.kill(pid, signal.SIGKILL)  # (it waits for this; a forged record: it ends here)
    except OSError:
        return None
    finally:
        os.close(pidfd)
    return (ENDED.unpack(data)[0] & 0xFF) << 8, cpu_ns / 1e9, 0.0, maxrss


def peak_rss_kib(pid):
    """The ``VmHWM`` of ``/proc/<pid>/status`` (KiB, as ``ru_maxrss``); None when not there (an
    exiting process whose memory is gone)."""
    fd = os.open("/proc/%d/status" % pid, os.O_RDONLY | os.O_CLOEXEC)
    try:
        text = os.read(fd, 4096)
    finally:
        os.close(fd)
    at = text.find(b"VmHWM:")
    return int(text[at + 6:text.index(b"kB", at)]) if at >= 0 else None
