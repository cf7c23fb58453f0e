"""The forker process: its loop, and each case's process it forks (ahead of the case's request, or at it).

Exports: :func:`forker_main` (the loop), :func:`recv_case`, :func:`case_rlimits`,
:data:`CASE_FDS`, :data:`AHEAD`, :data:`TAKEN`. The server's handle on a forker:
:mod:`.forker`; the server's side of a case: :mod:`.forked_case`; the records: :mod:`.reports`.
See docs/sandbox.md ("The forker").
"""

import json
import os
import signal
import struct
import sys
from resource import RLIMIT_NOFILE

import _signal  # (built in) the forker's and each case's signal masks
import _socket  # (built in) the forker's request socket: each case's files travel with it

from . import kernel
from .child import apply_rlimits, rlimit_list
from .kernel import close_all_but, fork, reseed_random, set_own_oom_adj
from .protocol import LEN, MAX_HEADER, RESULT_FD, read_exact
from .python_case import fresh_stdio, prepare_python_process, run_prepared_python
from .reports import REPORT, ended_early, ended_pipe, exit_peeker, own_ended_pipe, tell_ended
from .runq import own_delay_ns, task_stat


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


def forker_main(program, fk, ahead=True):
    """The forker's loop (``program``: the :class:`~.state.LoadedProgram` it runs): fork the next
    case's child ahead of its request (:meth:`_Loop.fork_ahead`: at start, nothing of a case
    exists yet; later only on the server's :data:`AHEAD`, sent once every process of the last
    case is gone), report the child's pid, its exit status and rusage once it has exited, reap
    it. A request that finds no child waiting (the session's last run gets no :data:`AHEAD`, a
    fork ahead failed) is read here and its child forked then. What every case's process needs is
    set up here, once or before each fork, and inherited (docs/sandbox.md, "The forker"); like a
    case the server forks, it stays in the server's process group and session, so
    ``os.setpgrp()`` works (``setsid`` is denied)."""
    loop = _Loop(program, fk)
    pending = _signal.sigpending
    idle = loop.fork_ahead() if ahead else None
    while True:
        if idle is not None:
            if not loop.serve_ahead(*idle):
                return 0
            idle = None
            continue
        try:
            req, blobs, _ = recv_case(loop.sock)
        except (EOFError, OSError, ValueError):
            return 0
        if pending():  # a program signalled it: a case could inherit nothing, but the server
            return 0  # replaces it rather than keep a queue a program filled
        if req.get("op") == AHEAD:
            idle = loop.fork_ahead()  # (None: the fork failed; the next request is read here)
        else:
            loop.serve_request(req, blobs)


#: The frame (``{"op": AHEAD}``, no files) on which the forker forks the next case's child
#: ahead of its request: the server sends it once nothing of the last case is left but its
#: exited process, which the forker reaps before it reads the frame.
AHEAD = "ahead"

#: What a child forked ahead writes its forker just before its program runs (read once the case
#: has ended): the run's sequence number, 1 when it holds the session's last run's ENDED pipe
#: (else 0), and its own CPU time so far in ns (its set-up, never the program's: taken off its
#: report).
TAKEN = struct.Struct("=qiq")


class _Loop:
    """The forker process's own state (:func:`forker_main`): its channels, the program and the
    ``__main__`` every case starts from, how it learns a child's end."""

    def __init__(self, program, fk):
        import fcntl
        moved = [fcntl.fcntl(fd, fcntl.F_DUPFD, 10) for fd in fk.forker_fds()]
        close_all_but(moved)  # CASE_FDS too: each request brings its own
        go, self.report, self.started = moved
        self.sock = _socket.socket(fileno=go)
        self.program = program
        self.pid = os.getpid()
        set_own_oom_adj(b"1000")
        if hasattr(sys, "set_int_max_str_digits"):
            sys.set_int_max_str_digits(0)
        fresh_stdio()
        signal.signal(signal.SIGINT, signal.default_int_handler)  # as python3 main.py has it
        self.main = prepare_python_process(program)
        # Every signal a program may send it stays pending (then it ends itself before the next
        # case, and the server replaces it) instead of killing it between reaping its child and
        # reporting; its children unblock them. SIGCHLD (each child's exit; ignored) is left
        # unblocked, or it would be pending after every case.
        _signal.pthread_sigmask(signal.SIG_BLOCK, signal.valid_signals() - {signal.SIGCHLD})
        self.peek = exit_peeker()
        self.own_waited = _own_run_delay()
        self.waited_before = self.own_waited()  # its own run-queue delay: a case's start-up waits count

    def own_fds(self, *more):
        """The descriptors a case's process closes before its program runs (-1: none)."""
        return (self.report, self.started, self.sock.fileno(), self.own_waited.fd) + more

    def fork_ahead(self):
        """Fork the next case's child now (:func:`_ahead_child`), before its request: ``(pid,
        read end of its TAKEN pipe, both ends of its ENDED pipe)``, or None when the fork (or a
        pipe) failed. Only when nothing of an earlier case is left (see :data:`AHEAD`)."""
        info_r, info_w = ended_pipe(0)  # (both ends at 10 or above: 0-3 are each case's files)
        if info_r < 0:
            return None
        ended_r, ended_w = ended_pipe(0)  # moved above its RLIMIT_NOFILE once its limits are known
        try:
            pid = fork(reseed=False)
        except OSError:
            pid = None
        if pid == 0:  # ---------------------------------------------- the next case's child
            _ahead_child(self, info_w, ended_w, (info_r, ended_r))
        for fd in (info_w,) if pid else (info_r, info_w, ended_r, ended_w):
            if fd >= 0:
                os.close(fd)
        return (pid, info_r, ended_r, ended_w) if pid else None

    def serve_ahead(self, pid, info_r, ended_r, ended_w):
        """Sleep until the child forked ahead has ended (or, on the session's last run, said its
        program ended: :func:`.reports.ended_early`), only then read its TAKEN record (written
        before its program ran), and report it as any case: nothing wakes this forker while
        the case runs. It keeps a write end of the ENDED pipe itself (``ended_w``), so a child
        that closes its own (not the last run) leaves the pipe silent. False when the child
        died before it took a request (the server dropped this forker, or ended the session)."""
        ended = ended_early(pid, ended_r) if ended_r >= 0 else None
        data = os.read(info_r, TAKEN.size)  # (written whole, or end of file: it never took one)
        for fd in (info_r, ended_w):
            if fd >= 0:
                os.close(fd)
        if len(data) != TAKEN.size:
            os.waitpid(pid, 0)
            if ended_r >= 0:
                os.close(ended_r)
            return False
        seq, _, cpu0_ns = TAKEN.unpack(data)
        self.waited_before = self.own_waited()
        # (its "started" record is its own: written before its program ran)
        self.finish(pid, seq, ended_r, cpu0_ns, ended=ended)
        return True

    def serve_request(self, req, blobs):
        """A request read here (no child waiting for it): fork its child now."""
        held = [req, blobs[0] if blobs and blobs[0] else None]  # (freed once the case exited)
        del blobs[:], req
        rlimits = case_rlimits(held[0])
        seq = int(held[0].get("seq", 0))
        waited = self.own_waited()  # (it sleeps between cases: this is the wait to fork this one)
        startup, self.waited_before = waited - self.waited_before, waited
        reseed_random()
        # the session's last run: the case's own record that its program ended (its report does
        # not wait for the kernel's teardown of it; what it leaves is reaped after the reply), on
        # a pipe above its descriptors (as many left to the program as in any other case)
        final = held[0].get("final")
        ended_r, ended_w = ended_pipe(dict(rlimits)[RLIMIT_NOFILE][0]) if final else (-1, -1)
        pid = fork(reseed=False)  # OSError: this forker ends; the server forks the case itself
        if pid == 0:  # -------------------------------------------------------- the case
            _case(self.program, *held, self.main, rlimits, self.own_fds(ended_r), ended_w)
        # While the case runs, every page this forker writes is a copy (the case shares them):
        # only what must be done now, the rest once it has exited.
        os.closerange(0, len(CASE_FDS))  # the case's files are the case's (and the server's) only
        if ended_w >= 0:
            os.close(ended_w)
        os.write(self.started, REPORT.pack(b"S", pid, 0, 0.0, 0.0, 0, seq, startup))
        ended = ended_early(pid, ended_r) if ended_r >= 0 else None
        self.finish(pid, seq, ended_r, 0, ended, held)

    def finish(self, pid, seq, ended_r, cpu0_ns, ended, held=None):
        """Report case ``pid`` once it ended, then reap it: stopped or killed in between, the
        child stays a zombie the server reaps itself (its status is never lost with the
        forker). ``ended``: its figures from its own record that its program ended
        (:func:`.reports.ended_early`: before its exit, the kernel's teardown of its pages),
        reported as "E"; None: it exited. ``cpu0_ns``: its CPU before its program ran (not the
        program's); ``held``: what to free once it has exited (the request), before the report
        (the judge measures the next run once it has the reply)."""
        status, utime, stime, maxrss = ended or self.peek(pid)
        if held:
            held.clear()
        utime, stime = _less_cpu(utime, stime, cpu0_ns)
        ran, waited = task_stat(pid)  # (a zombie, or exiting: its schedstat is readable)
        delay = own_delay_ns(ran, waited, int((utime + stime) * 1e9))
        os.write(self.report, REPORT.pack(b"E" if ended else b"D", pid, status, utime, stime, maxrss,
                                          seq, delay))
        os.waitpid(pid, 0)
        if ended_r >= 0:
            os.close(ended_r)


def case_rlimits(req):
    """The rlimits of a case's process for request ``req``."""
    limits = req.get("limits", {})
    if "processes" in limits:  # RLIMIT_NPROC (no pids cgroup) counts this forker too
        limits = dict(limits, processes=int(limits["processes"]) + 1)
    return rlimit_list(limits, RESULT_FD if req.get("mode") == "call" else 2)


def _less_cpu(utime, stime, cpu0_ns):
    """``(utime, stime)`` less ``cpu0_ns`` of a child's set-up (from the system time first)."""
    if cpu0_ns <= 0:
        return utime, stime
    cut = cpu0_ns / 1e9
    from_sys = min(stime, cut)
    return max(0.0, utime - (cut - from_sys)), stime - from_sys


def _ahead_child(loop, info_w, ended_w, forker_ends):
    """A case's process forked ahead of its request (:meth:`_Loop.fork_ahead`); never returns.
    It dies with its forker until its request is in (``PR_SET_PDEATHSIG``), closes the
    forker's descriptors, and waits for its request on the go socket; then it is what
    :func:`_case` makes of a child forked at its request: the request's files on
    :data:`CASE_FDS`, its rlimits, ``random`` seeded afresh, signals unblocked, no death signal.
    It writes its own "started" record and its TAKEN record (``info_w``) just before the
    program runs. Anything unexpected (no request, a signal pending) ends it: the forker then
    ends too, and the server runs the case itself."""
    from time import CLOCK_PROCESS_CPUTIME_ID, clock_gettime_ns

    status = 70
    try:
        if kernel.LIBC is not None:
            kernel.LIBC.prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG
        if os.getppid() != loop.pid:
            return  # (the forker died before the prctl)
        for fd in forker_ends + (loop.report, loop.own_waited.fd):
            if fd >= 0:
                os.close(fd)
        _warm_up()
        req = None
        while req is None or req.get("op") == AHEAD:
            try:
                req, blobs, _ = recv_case(loop.sock)
            except (EOFError, OSError, ValueError):
                return
        os.close(loop.sock.fileno())
        if _signal.sigpending():
            return
        call_args = blobs[0] if blobs and blobs[0] else None
        del blobs
        rlimits = case_rlimits(req)
        seq = int(req.get("seq", 0))
        reseed_random()
        if ended_w >= 0:
            ended_w = _raise_fd(ended_w, dict(rlimits)[RLIMIT_NOFILE][0]) if req.get("final") else _close(ended_w)

        def taken():
            if kernel.LIBC is not None:
                kernel.LIBC.prctl(1, 0, 0, 0, 0)  # a case outlives its forker (reparented)
            os.write(loop.started, REPORT.pack(b"S", os.getpid(), 0, 0.0, 0.0, 0, seq, 0))
            os.close(loop.started)
            cpu0 = clock_gettime_ns(CLOCK_PROCESS_CPUTIME_ID)
            os.write(info_w, TAKEN.pack(seq, int(ended_w >= 0), cpu0))
            os.close(info_w)

        status = _run_case(loop.program, req, call_args, loop.main, rlimits, ended_w, taken)
    finally:
        kernel.EXIT(status)


#: A run request's header as the judge sends it (its fields; the values do not matter).
_WARM_REQUEST = (b'{"op":"run","mode":"python","limits":{"cpu_seconds":2.0,"wall_seconds":5.0,'
                 b'"output_bytes":67108864,"file_bytes":67108864,"stderr_bytes":65536,"open_files":64,'
                 b'"stack_bytes":536870912},"stdin_staged":false,"final":false,"id":3,"seq":1,"blobs":[2,0]}')


def _warm_up():
    """In a process forked ahead, before it waits: handle a request like its own (parsed, its
    rlimits listed, its records packed) and drop it, so that the pages this writes are copied
    now, not once its request is in (every page a forked process first writes is a copy)."""
    req = json.loads(_WARM_REQUEST)
    case_rlimits(req)
    REPORT.pack(b"S", 0, 0, 0.0, 0.0, 0, int(req.get("seq", 0)), 0)
    TAKEN.pack(0, 0, 0)


def _raise_fd(fd, low):
    """``fd`` moved to the lowest free number at or above ``max(10, low)`` (close-on-exec); -1
    when it cannot be (then closed)."""
    import fcntl
    try:
        return fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, max(10, low)) if fd < max(10, low) else fd
    except OSError:
        return -1
    finally:
        if fd < max(10, low):
            os.close(fd)


def _close(fd):
    os.close(fd)
    return -1


def _case(program, req, call_args, main, rlimits, forker_fds, ended_w):
    """The case's process, just forked by the forker at its request; never returns. The
    forker's descriptors closed (``forker_fds``, -1 for none: forged reports...), then
    :func:`_run_case`."""
    status = 70
    try:
        for fd in forker_fds:
            if fd >= 0:
                os.close(fd)
        status = _run_case(program, req, call_args, main, rlimits, ended_w)
    finally:
        kernel.EXIT(status)


def _run_case(program, req, call_args, main, rlimits, ended_w, taken=None):
    """A case's process, its forker's descriptors closed: its own ``/proc`` files as under
    ``python3 main.py``, signals unblocked, its rlimits, ``taken()`` (if any) just before the
    program runs; on the session's last run (``ended_w``, else -1) its record that the program
    ended (:func:`.reports.tell_ended`). Returns the exit status."""
    if kernel.LIBC is not None:  # PR_SET_DUMPABLE; the forker itself stays closed
        kernel.LIBC.prctl(4, 1, 0, 0, 0)
    _signal.pthread_sigmask(signal.SIG_SETMASK, ())
    apply_rlimits(rlimits)
    own = own_ended_pipe(ended_w) if ended_w >= 0 else None
    if taken is not None:
        taken()
    status = run_prepared_python(program, req, call_args, main)
    if own is not None:
        tell_ended(ended_w, own, status)
    return status


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


