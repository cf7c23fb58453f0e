"""The forker's report records, and how a process learns a child's exit without reaping it.

Exports: :data:`REPORT` (the record), :func:`read_report`, :func:`parse_report`, :class:`Rusage`,
:data:`REPORT_GRACE`, :func:`exit_peeker`. See docs/sandbox.md ("The forker").
"""

import errno
import os
import struct

from .protocol import read_exact


#: Seconds the server waits for the forker's report once the case has ended (or for the case's
#: processes to be reaped) before it kills the forker and collects the case itself.
REPORT_GRACE = 2.0


#: The forker's reports: kind (b"S" started, b"D" done), pid, wait status, user and system
#: CPU seconds, max RSS (KiB), the run's sequence number (a record of an earlier run, left by a
#: run that failed in the server, is never taken for this run's), a run-queue delay in ns (done:
#: the child's; started: the forker's own since the last start). Fixed size, written whole.
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
    """A :data:`REPORT` record as a dict: ``{"pid", "seq", "run_delay_ns"}`` (started; the
    forker's own run-queue delay since the last case started) or ``{"pid", "status", "utime",
    "stime", "maxrss", "seq", "run_delay_ns"}`` (done). Raises struct.error."""
    kind, pid, status, utime, stime, maxrss, seq, delay = REPORT.unpack(data)
    if kind == b"S":
        return {"pid": pid, "seq": seq, "run_delay_ns": delay}
    return {"pid": pid, "status": status, "utime": utime, "stime": stime, "maxrss": maxrss,
            "seq": seq, "run_delay_ns": delay}
