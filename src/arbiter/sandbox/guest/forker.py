"""The forker: a warm child of the server that only forks the Python cases and reports on them.

Its channels (:class:`Forker`), its loop (:func:`forker_main`) and its report records. The
server's side is :mod:`.forked_case`. See docs/sandbox.md ("The forker").
"""

import errno
import json
import os
import signal
import struct
import sys

import _socket  # (built in) the forker's request socket: each case's files travel with it

from . import kernel
from .child import apply_rlimits, rlimit_list
from .kernel import close_all_but, fork, reseed_random, set_own_oom_adj
from .protocol import LEN, MAX_HEADER, RESULT_FD, read_exact, write_all
from .python_case import fresh_stdio, prepare_python_process, run_prepared_python
from .runq import own_delay_ns, task_stat


class Forker:
    """The forker's channels (see Server.make_forker).

    - ``go``: a Unix socket; the server sends one request frame per case, with the case's files
      attached (``SCM_RIGHTS``: stdin, stdout, the stderr pipe's write end, the call result);
    - ``report``: the forker writes a "done" record (wait status, rusage) once the case has
      exited (:data:`REPORT`);
    - ``started``: a "started" record (the child's pid) after each fork, on a pipe of its own
      that the server reads only when it needs the pid (a case still running after
      :data:`~.forked_case.QUICK_CASE` seconds, its deadline, the forker's death): a quick case
      costs the server no wake-up for it. The child closes all three before the program runs."""

    def __init__(self):
        go_r, go_w = _socket.socketpair(_socket.AF_UNIX, _socket.SOCK_STREAM)
        self.go_r = go_r.detach()
        self.go = go_w  # the server's end (a socket object: sendmsg)
        self.report_r, self.report_w = os.pipe()
        self.started_r, self.started_w = os.pipe()
        os.set_blocking(self.started_r, False)
        self.pid = None
        self.pidfd = -1
        self.children_fd = -1  # its /proc children file (the server's: see only_forker_left)

    def forker_fds(self):
        return (self.go_r, self.report_w, self.started_w)

    def started(self, pid):
        """In the server, once the forker runs: keep only the server's ends."""
        self.pid = pid
        for fd in (self.go_r, self.report_w, self.started_w):
            os.close(fd)
        self.go_r = self.report_w = self.started_w = -1
        self.pidfd = os.pidfd_open(pid)
        self.children_fd = kernel.open_children(pid)

    def children(self):
        """Its children's pids (zombies included); None when unreadable."""
        return kernel.children(self.children_fd)

    def stop(self):
        """In the server: kill the forker, reap it and close its files; its wait status, or None
        when it was reaped already."""
        try:
            os.kill(self.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        try:
            status = os.waitpid(self.pid, 0)[1]
        except ChildProcessError:
            status = None
        self.close()
        return status

    def send(self, frame, fds):
        """Send one request ``frame`` with the case's files ``fds`` (they stay open here)."""
        sent = self.go.sendmsg([frame], [(_socket.SOL_SOCKET, _socket.SCM_RIGHTS,
                                          struct.pack("%di" % len(fds), *fds))])
        write_all(self.go.fileno(), memoryview(frame)[sent:])

    def take_started(self, seq):
        """The "started" record of run ``seq`` (a dict, see :func:`read_report`) when it is
        there; earlier runs' records are dropped on the way. None when it is not (yet)."""
        while True:
            try:
                data = os.read(self.started_r, REPORT.size)
            except (BlockingIOError, OSError):
                return None
            if len(data) != REPORT.size:  # end of file (records are written whole)
                return None
            record = parse_report(data)
            if record["seq"] == seq:
                return record

    def drop_started(self):
        """Forget every "started" record written so far (called once a run is over)."""
        try:
            while len(os.read(self.started_r, 1 << 16)) == 1 << 16:
                pass
        except (BlockingIOError, OSError):
            pass

    def close(self):
        self.go.close()
        for fd in (self.go_r, self.report_r, self.report_w, self.started_r, self.started_w,
                   self.pidfd, self.children_fd):
            if fd >= 0:
                os.close(fd)
        self.go_r = self.report_r = self.report_w = self.started_r = self.started_w = -1
        self.pidfd = self.children_fd = -1


#: The descriptors a case's files are on, in the order they are sent: stdin, stdout, stderr,
#: the call result (only for calls).
CASE_FDS = (0, 1, 2, 3)


def recv_case(sock):
    """In the forker: read one request frame from the go socket and put the files sent with it
    on :data:`CASE_FDS` (free: the forker closes them after each fork). Returns ``(header,
    blobs, number of files)``. Raises EOFError when the server is gone, ValueError for a
    malformed frame."""
    data, anc, flags, _ = sock.recvmsg(LEN.size, _socket.CMSG_SPACE(4 * len(CASE_FDS)))
    fds = []
    for level, kind, blob in anc:
        if level == _socket.SOL_SOCKET and kind == _socket.SCM_RIGHTS:
            fds += struct.unpack("%di" % (len(blob) // 4), blob[:len(blob) // 4 * 4])
    if not data:
        raise EOFError("control socket closed")
    if flags & _socket.MSG_CTRUNC or len(fds) > len(CASE_FDS):
        raise ValueError("too many files with a request")
    wanted = list(CASE_FDS[:len(fds)])
    if fds != wanted:  # (the kernel gives the lowest free numbers: these, unless one was taken)
        import fcntl
        moved = [fcntl.fcntl(fd, fcntl.F_DUPFD, 10) for fd in fds]
        for fd in fds:
            os.close(fd)
        for src, dst in zip(moved, wanted):
            os.dup2(src, dst)
            os.close(src)
    fd = sock.fileno()
    if len(data) < LEN.size:
        data = bytes(data) + bytes(read_exact(fd, LEN.size - len(data)))
    (n,) = LEN.unpack(data)
    if n > MAX_HEADER:
        raise ValueError("frame header too large")
    header = json.loads(read_exact(fd, n))
    blobs = [read_exact(fd, int(size)) for size in header.get("blobs", [])]
    return header, blobs, len(fds)


def forker_main(server, fk):
    """The forker's loop: read a request, fork its child, report the child's pid, report its
    exit status and rusage once it has exited, reap it. What every case's process needs is set up
    here, once or before each fork, and inherited (docs/sandbox.md, "The forker"); like a case the
    server forks, it stays in the server's process group and session, so ``os.setsid()`` works."""
    import fcntl
    moved = [fcntl.fcntl(fd, fcntl.F_DUPFD, 10) for fd in fk.forker_fds()]
    close_all_but(moved)  # CASE_FDS too: each request brings its own
    go, report, started = moved
    sock = _socket.socket(fileno=go)
    set_own_oom_adj(b"1000")
    if hasattr(sys, "set_int_max_str_digits"):
        sys.set_int_max_str_digits(0)
    fresh_stdio()
    signal.signal(signal.SIGINT, signal.default_int_handler)  # as python3 main.py has it
    main = prepare_python_process(server)
    # Every signal a program may send it stays pending (then it ends itself before the next
    # case, and the server replaces it) instead of killing it between reaping its child and
    # reporting; its children unblock them. SIGCHLD (each child's exit; ignored) is left
    # unblocked, or it would be pending after every case.
    import _signal
    _signal.pthread_sigmask(signal.SIG_BLOCK, signal.valid_signals() - {signal.SIGCHLD})
    pending = _signal.sigpending
    pack = REPORT.pack
    peek = exit_peeker()
    own_waited = _own_run_delay()
    waited_before = own_waited()  # its own run-queue delay: a case's start-up waits count
    while True:
        try:
            req, blobs, _ = recv_case(sock)
        except (EOFError, OSError, ValueError):
            return 0
        if pending():  # a program signalled it: a case could inherit nothing, but the server
            return 0  # replaces it rather than keep a queue a program filled
        call_args = blobs[0] if blobs and blobs[0] else None
        del blobs
        call = req.get("mode") == "call"
        limits = req.get("limits", {})
        if "processes" in limits:  # RLIMIT_NPROC (no pids cgroup) counts this forker too
            limits = dict(limits, processes=int(limits["processes"]) + 1)
        rlimits = rlimit_list(limits, RESULT_FD if call else 2)
        seq = int(req.get("seq", 0))
        waited = own_waited()  # (it sleeps between cases: this is the wait to fork this one)
        startup, waited_before = waited - waited_before, waited
        reseed_random()
        pid = fork(reseed=False)  # OSError: this forker ends; the server forks the case itself
        if pid == 0:  # -------------------------------------------------------- the case
            status = 70
            try:
                for fd in (report, started, go, own_waited.fd):  # (forged reports...)
                    os.close(fd)
                if kernel.LIBC is not None:  # its own /proc files (environ, io...), as python3 main.py
                    kernel.LIBC.prctl(4, 1, 0, 0, 0)  # PR_SET_DUMPABLE; the forker itself stays closed
                _signal.pthread_sigmask(signal.SIG_SETMASK, ())
                apply_rlimits(rlimits)
                status = run_prepared_python(server, req, call_args, main)
            finally:
                kernel.EXIT(status)
        # While the case runs, every page this forker writes is a copy (the case shares them):
        # only what must be done now, the rest once it has exited.
        os.closerange(0, len(CASE_FDS))  # the case's files are the case's (and the server's) only
        os.write(started, pack(b"S", pid, 0, 0.0, 0.0, 0, seq, startup))
        # Report, then reap: stopped or killed in between, the child stays a zombie the server
        # reaps itself (its status is never lost with the forker)
        status, utime, stime, maxrss = peek(pid)
        del req, call_args
        ran, waited = task_stat(pid)  # a zombie still: its schedstat is readable
        delay = own_delay_ns(ran, waited, int((utime + stime) * 1e9))
        os.write(report, pack(b"D", pid, status, utime, stime, maxrss, seq, delay))
        os.waitpid(pid, 0)


def _own_run_delay():
    """A function giving this process's run-queue delay so far (ns), from its ``schedstat``
    kept open (``.fd``: the child closes it)."""
    import fcntl
    low = os.open("/proc/%d/schedstat" % os.getpid(), os.O_RDONLY | os.O_CLOEXEC)
    fd = fcntl.fcntl(low, fcntl.F_DUPFD_CLOEXEC, 10)  # (0-3 are each case's files)
    os.close(low)

    def waited():
        try:
            return int(os.pread(fd, 128, 0).split()[1])
        except (OSError, ValueError, IndexError):
            return 0

    waited.fd = fd
    return waited


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
