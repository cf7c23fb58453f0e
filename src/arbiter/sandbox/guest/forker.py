"""The forker: a warm child of the server that only forks the Python cases and reports on them.

Exports: :class:`Forker` (one forker as the server sees it: its channels, ``fork``, ``stop``,
``healthy``, ``ahead``, ``run_case``), :func:`make_forker`, :func:`drop_forker`,
:func:`drop_blank_forker` (the server's forker in its :class:`~.state.ServerState`). The
forker process's own side: :mod:`.forker_loop`; the server's side of a case it runs:
:mod:`.forked_case`; its records: :mod:`.reports`. See docs/sandbox.md ("The forker").
"""

import os
import signal
import struct

import _socket  # (built in) the forker's request socket: each case's files travel with it

from . import kernel, tamper
from .forked_case import run_in_forker
from .forker_loop import AHEAD, forker_main
from .kernel import fork
from .program import warm_heavy_imports
from .protocol import encode_frame, write_all
from .reports import REPORT, parse_report


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

    @classmethod
    def fork(cls, state):
        """Fork a forker: a child of the server, as warm as it (the program compiled, the prelude
        run: ``state.program``), that forks every Python case (:func:`forker_main`). None when
        the fork failed (the pids limit reached)."""
        fk = cls()
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
        """True when it is exactly as forked: alive, neither stopped nor continued, the server's
        rlimits, nice value, CPU affinity, scheduling and I/O priority (a signal a program left
        pending on it: it ends itself before its next case). Called once every other process of
        the sandbox is dead, so none of it can change any more."""
        try:
            return (os.waitpid(self.pid, os.WNOHANG | os.WUNTRACED | os.WCONTINUED) == (0, 0)
                    and tamper.sched_state(self.pid) == tamper.BASELINE)
        except (ChildProcessError, OSError, ValueError, KeyError):
            return False

    def run_case(self, state, req, stdin_fd, call_args):
        """Run one Python case through this forker (:func:`.forked_case.run_in_forker`)."""
        return run_in_forker(state, self, req, stdin_fd, call_args)

    def stop(self):
        """In the server: kill the forker, reap it and close its files; its wait status, or None
        when it was reaped already. Its children (called between cases: at most the next case's
        child forked ahead, or a case it has not reaped yet) are this server's once it is gone
        (PID 1): killed and reaped too."""
        left = self.children() or ()
        try:
            os.kill(self.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        try:
            status = os.waitpid(self.pid, 0)[1]
        except ChildProcessError:
            status = None
        for pid in left:  # (reparented to this server: no other process may reap them)
            try:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
            except (ProcessLookupError, ChildProcessError):
                pass
        self.close()
        return status

    def ahead(self):
        """Let the forker fork the next case's child now (:data:`AHEAD`). Sent only once
        nothing of the last case is left but its exited process (which the forker reaps before
        it reads this). A forker gone meanwhile is found at the next run."""
        try:
            write_all(self.go.fileno(), encode_frame({"op": AHEAD}))
        except OSError:
            pass

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


def make_forker(state):
    """Fork the server's forker (``state.forker``): a failed fork leaves none, and cases fork
    from the server. Only in PID 1 with a program loaded."""
    if not state.is_init or state.program.code is None:
        return
    warm_heavy_imports(state.program.code, state.program.main_module)  # (once: cases fork with them)
    state.forker = Forker.fork(state)


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
