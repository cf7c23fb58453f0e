"""The forker: a warm child of the server that only forks the Python cases and reports on them.

Exports: :class:`Forker` (one forker as the server sees it: its channels, ``fork``, ``stop``,
``healthy``, ``run_case``), :func:`make_forker`, :func:`drop_forker`, :func:`drop_blank_forker`
(the server's forker in its :class:`~.state.ServerState`), :func:`forker_main` (the forker
process's loop), :func:`recv_case`, :data:`CASE_FDS`. The server's side of a case it runs:
:mod:`.forked_case`; its records: :mod:`.reports`. See docs/sandbox.md ("The forker").
"""

import json
import os
import signal
import struct
import sys
from resource import RLIMIT_NOFILE

import _signal  # (built in) the forker's and each case's signal masks
import _socket  # (built in) the forker's request socket: each case's files travel with it

from . import fdfloor, inflight, kernel, tamper
from .child import apply_rlimits, rlimit_list
from .forked_case import run_in_forker
from .inplace_case import run_in_place
from .kernel import close_all_but, fork, reseed_random, set_own_oom_adj
from .program import warm_heavy_imports
from .protocol import LEN, MAX_HEADER, RESULT_FD, read_exact, write_all
from .python_case import fresh_stdio, prepare_python_process, run_prepared_python
from .reports import REPORT, exit_peeker, own_ended_pipe, parse_report, tell_ended
from .runq import own_delay_ns, task_stat


class Forker:
    """One forker, as the server sees it (:func:`make_forker` forks one). Its channels:

    - ``go``: a Unix socket; the server sends one request frame per case, with the case's files
      attached (``SCM_RIGHTS``: stdin, stdout, the stderr pipe's write end, the call result);
    - ``report``: the forker writes a "done" record (wait status, rusage) once the case has
      exited (:data:`REPORT`);
    - ``started``: a "started" record (the child's pid) after each fork, on a pipe of its own
      that the server reads only when it needs the pid (a case still running after
      :data:`~.forked_case.QUICK_CASE` seconds, its deadline, the forker's death): a quick case
      costs the server no wake-up for it. The child closes all three before the program runs."""

    def __init__(self):
        """Raises OSError when the server's end cannot be put on the descriptor floor
        (:func:`.fdfloor.lift`: the server spawned a native program)."""
        if not fdfloor.reachable():
            raise OSError("the descriptor floor is out of reach")
        go_r, go_w = _socket.socketpair(_socket.AF_UNIX, _socket.SOCK_STREAM)
        try:
            high = fdfloor.lift(go_w.fileno())
        except OSError:
            go_r.close()
            raise
        finally:
            go_w.close()
        self.go = _socket.socket(fileno=high)  # the server's end (sendmsg: only on the floor)
        inflight.remember(go_r.fileno(), high)
        self.go_r = go_r.detach()
        self.report_r, self.report_w = os.pipe()
        self.started_r, self.started_w = os.pipe()
        os.set_blocking(self.started_r, False)
        self.pid = None
        self.pidfd = -1
        self.children_fd = -1  # its /proc children file (the server's: see only_forker_left)
        self.status_fd = -1  # its /proc status file

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
        self.status_fd = kernel.open_status(pid)  # (its pending signals: see healthy)

    @classmethod
    def fork(cls, state):
        """Fork a forker: a child of the server, as warm as it (the program compiled, the prelude
        run: ``state.program``), that forks every Python case (:func:`forker_main`). None when
        the fork failed (the pids limit reached)."""
        try:
            fk = cls()
        except OSError:
            return None
        try:
            pid = fork()
        except OSError:
            fk.close()
            return None
        if pid == 0:  # ------------------------------------------------------------ forker
            status = 70
            try:
                status = forker_main(state.program, fk)
            finally:
                kernel.EXIT(status)
        fk.started(pid)
        return fk

    def children(self):
        """Its children's pids (zombies included); None when unreadable."""
        return kernel.children(self.children_fd)

    def healthy(self):
        """True when it is exactly as forked: alive, neither stopped nor continued, no signal
        pending, the server's rlimits, nice value, CPU affinity, scheduling and I/O priority.
        Called once every other process of the sandbox is dead, so none of it can change any
        more. (A forker with signals pending would end itself at its next request, after the next
        run's baseline: its memory and the signals' queue, ~10 MiB, would leave the cgroup
        during that run; red team, December 2026.)"""
        try:
            return (os.waitpid(self.pid, os.WNOHANG | os.WUNTRACED | os.WCONTINUED) == (0, 0)
                    and not kernel.signals_pending(self.status_fd)
                    and tamper.sched_state(self.pid) == tamper.BASELINE)
        except (ChildProcessError, OSError, ValueError, KeyError):
            return False

    def run_case(self, state, req, stdin_fd, call_args):
        """Run one Python case through this forker (:func:`.forked_case.run_in_forker`); the
        session's last one (``final``) it runs itself (:func:`.inplace_case.run_in_place`)."""
        if req.get("final") and state.is_init and state.in_place_ok:
            return run_in_place(state, self, req, stdin_fd, call_args)
        return run_in_forker(state, self, req, stdin_fd, call_args)

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
                   self.pidfd, self.children_fd, self.status_fd):
            if fd >= 0:
                os.close(fd)
        self.go_r = self.report_r = self.report_w = self.started_r = self.started_w = -1
        self.pidfd = self.children_fd = self.status_fd = -1


#: The descriptors a case's files are on, in the order they are sent: stdin, stdout, stderr,
#: the call result (only for calls).
CASE_FDS = (0, 1, 2, 3)


def make_forker(state):
    """Fork the server's forker (``state.forker``): a failed fork leaves none, and cases fork
    from the server. Only in PID 1 with a program loaded."""
    if not state.is_init or state.program.code is None:
        return
    warm_heavy_imports(state.program.code, state.program.main_module)  # (once: cases fork with them)
    state.forker, state.forker_spent = Forker.fork(state), False


def drop_forker(state):
    """Stop the server's forker (if any) and close its files."""
    fk, state.forker = state.forker, None
    if fk is not None:
        fk.stop()


def drop_blank_forker(state):
    """Stop the blank forker (if it is still waiting for a program)."""
    fk, state.blank_forker = state.blank_forker, None
    if fk is not None:
        fk.stop()


def recv_case(sock):
    """In the forker: read one request frame from the go socket and put the files sent with it
    on :data:`CASE_FDS` (free: the forker closes them after each fork; one more for a case it runs
    itself, :func:`_become_case`). Returns ``(header,
    blobs, number of files)``. Raises EOFError when the server is gone, ValueError for a
    malformed frame."""
    data, anc, flags, _ = sock.recvmsg(LEN.size, _socket.CMSG_SPACE(4 * (len(CASE_FDS) + 1)))
    fds = []
    for level, kind, blob in anc:
        if level == _socket.SOL_SOCKET and kind == _socket.SCM_RIGHTS:
            fds += struct.unpack("%di" % (len(blob) // 4), blob[:len(blob) // 4 * 4])
    if not data:
        raise EOFError("control socket closed")
    if flags & _socket.MSG_CTRUNC or len(fds) > len(CASE_FDS) + 1:
        raise ValueError("too many files with a request")
    wanted = list(range(len(fds)))  # CASE_FDS, and an in-place case's ENDED pipe after them
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


def forker_main(program, fk):
    """The forker's loop (``program``: the :class:`~.state.LoadedProgram` it runs): read a
    request, fork its child, report the child's pid, report its exit status and rusage once it
    has exited, reap it. What every case's process needs is set up here, once or before each
    fork, and inherited (docs/sandbox.md, "The forker"); like a case the server forks, it stays
    in the server's process group and session, so ``os.setpgrp()`` works (``setsid`` is denied)."""
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
    main = prepare_python_process(program)
    # Every signal a program may send it stays pending (then it ends itself before the next
    # case, and the server replaces it) instead of killing it between reaping its child and
    # reporting; its children unblock them. SIGCHLD (each child's exit; ignored) is left
    # unblocked, or it would be pending after every case.
    _signal.pthread_sigmask(signal.SIG_BLOCK, signal.valid_signals() - {signal.SIGCHLD})
    pending = _signal.sigpending
    pack = REPORT.pack
    peek = exit_peeker()
    own_waited = _own_run_delay()
    waited_before = own_waited()  # its own run-queue delay: a case's start-up waits count
    while True:
        try:
            req, blobs, nfds = recv_case(sock)
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
        fds = (report, started, go, own_waited.fd)
        if req.get("in_place") and nfds == len(CASE_FDS) + 1:  # the session's last case
            _become_case(program, req, call_args, main, rlimits, fds, (seq, startup))
        pid = fork(reseed=False)  # OSError: this forker ends; the server forks the case itself
        if pid == 0:  # -------------------------------------------------------- the case
            _case(program, req, call_args, main, rlimits, fds, -1)
        # While the case runs, every page this forker writes is a copy (the case shares them):
        # only what must be done now, the rest once it has exited.
        os.closerange(0, len(CASE_FDS) + 1)  # the case's files are the case's (and the server's) only
        os.write(started, pack(b"S", pid, 0, 0.0, 0.0, 0, seq, startup))
        # Report, then reap: stopped or killed in between, the child stays a zombie the server
        # reaps itself (its status is never lost with the forker).
        status, utime, stime, maxrss = peek(pid)
        del req, call_args
        ran, waited = task_stat(pid)  # (a zombie: its schedstat is readable)
        delay = own_delay_ns(ran, waited, int((utime + stime) * 1e9))
        os.write(report, pack(b"D", pid, status, utime, stime, maxrss, seq, delay))
        os.waitpid(pid, 0)


def _case(program, req, call_args, main, rlimits, forker_fds, ended_w):
    """The case's process, just forked by the forker, or the forker itself on the session's last
    run (``ended_w``, else -1); never returns. The forker's descriptors closed (``forker_fds``:
    no forged reports), its own ``/proc`` files as under ``python3 main.py`` (and, in the forker
    itself, its peak RSS reset), signals unblocked, its rlimits, the program run; on the last run
    its record that the program ended (:func:`.reports.tell_ended`)."""
    status = 70
    try:
        for fd in forker_fds:
            if fd >= 0:
                os.close(fd)
        if kernel.LIBC is not None:  # PR_SET_DUMPABLE; the forker itself stays closed
            kernel.LIBC.prctl(4, 1, 0, 0, 0)
        if ended_w >= 0:
            _reset_peak_rss()
        _signal.pthread_sigmask(signal.SIG_SETMASK, ())
        apply_rlimits(rlimits)
        own = own_ended_pipe(ended_w) if ended_w >= 0 else None
        status = run_prepared_python(program, req, call_args, main)
        if own is not None:
            tell_ended(ended_w, own, status)
    finally:
        kernel.EXIT(status)


def _become_case(program, req, call_args, main, rlimits, forker_fds, run):
    """The session's last case, run by this forker itself (no fork: :mod:`.inplace_case`); never
    returns. Its :data:`ENDED` pipe came as the request's last file. The "started" record
    carries this process's CPU, time run and run-queue delay so far (the server subtracts
    them), then it becomes the case (:func:`_case`): its peak RSS reset, its CPU limit moved by
    the whole seconds it used already."""
    import fcntl
    import math
    import time
    from resource import RLIMIT_CPU

    seq, startup = run
    try:
        ended_w = fcntl.fcntl(len(CASE_FDS), fcntl.F_DUPFD_CLOEXEC, max(10, dict(rlimits)[RLIMIT_NOFILE][0]))
    except OSError:
        kernel.EXIT(0)  # (no record: the server runs the case itself)
    os.close(len(CASE_FDS))
    if req.get("mode") != "call":
        os.close(RESULT_FD)  # (a stand-in, so that the pipe came last)
    ran, waited = task_stat(os.getpid())
    cpu_ns = time.clock_gettime_ns(time.CLOCK_PROCESS_CPUTIME_ID)
    os.write(forker_fds[1], REPORT.pack(b"S", os.getpid(), 0, cpu_ns / 1e9, waited / 1e9, ran, seq, startup))
    used = int(math.ceil(cpu_ns / 1e9))
    rlimits = [(res, (val[0] + used, val[1] + used)) if res == RLIMIT_CPU else (res, val)
               for res, val in rlimits]
    _case(program, req, call_args, main, rlimits, forker_fds, ended_w)


def _reset_peak_rss():
    """``VmHWM`` from now on (``/proc/self/clear_refs``: 5; writable once dumpable)."""
    try:
        fd = os.open("/proc/self/clear_refs", os.O_WRONLY | os.O_CLOEXEC)
        try:
            os.write(fd, b"5")
        finally:
            os.close(fd)
    except OSError:
        pass


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


