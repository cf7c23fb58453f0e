"""The server's side of the forker: start, check and drop it; send it a case and watch the case.

A mixin of :class:`~.server.Server`. See docs/sandbox.md ("The forker").
"""

import os
import signal

from . import kernel
from .cases import Capture, drain, wait_for_exit
from .forker import REPORT_GRACE, Forker, Rusage, forker_main, read_report
from .kernel import fork, stopped
from .protocol import encode_frame
from .tamper import untouched


class ForkerMixin:
    """The forker, seen from the server (see the module docstring)."""

    def make_forker(self):
        """Fork the forker: a child of this server, as warm as it (the program compiled, the
        prelude run), that forks every Python case of the loaded program (see
        :func:`forker_main`). Forking from a process that does nothing else keeps the per-case
        copy-on-write faults down: this server's own work on a request (decoding it, waiting,
        replying) writes to pages a forked case would share, each write a page copy, ~250 a
        case; the forker's loop writes to a few dozen. Each case's files (stdin, stdout, the
        call result: memfds; stderr: a pipe) are new, made by this server and passed to the
        forker with the request (``SCM_RIGHTS``): nothing a program leaves on an open file or its
        inode (locks, leases, owner, flags, mode, times, extended attributes) reaches a later case.

        A program shares the sandbox with its forker (same uid; it cannot ptrace it or open its
        ``/proc`` files, the forker being non-dumpable): it may kill or stop it, or lower its
        rlimits. :meth:`check_forker` drops it after a case unless it is as forked; a dead
        forker's case is collected by this server (the case's process is reparented to PID 1).
        A failed fork (the pids limit reached) leaves no forker: cases fork from this server."""
        if not self.is_init or self.code is None:
            return
        fk = Forker()
        try:
            pid = fork()
        except OSError:
            fk.close()
            return
        if pid == 0:  # ------------------------------------------------------------ forker
            status = 70
            try:
                status = forker_main(self, fk)
            finally:
                kernel.EXIT(status)
        fk.started(pid)
        self.forker = fk

    def drop_forker(self):
        """Stop the forker (if any) and close its files."""
        fk, self.forker = self.forker, None
        if fk is not None:
            try:
                os.kill(fk.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            try:
                os.waitpid(fk.pid, 0)
            except ChildProcessError:
                pass
            fk.close()

    def check_forker(self):
        """Drop the forker unless it is exactly as forked: alive, neither stopped nor continued,
        no signal pending, this server's rlimits, nice value and CPU affinity. Called once every
        other process of the sandbox is dead, so none of it can change any more."""
        fk = self.forker
        try:
            healthy = os.waitpid(fk.pid, os.WNOHANG | os.WUNTRACED | os.WCONTINUED) == (0, 0)
            healthy = healthy and untouched(fk.pid)
        except (ChildProcessError, OSError, ValueError, KeyError):
            healthy = False
        if not healthy:
            self.drop_forker()

    def run_in_forker(self, req, stdin_fd, call_args):
        """Run one Python case through the forker, with ``stdin_fd`` (a memfd holding the input;
        the caller closes it) and new stdout, stderr and result files; returns what
        :meth:`fork_case` returns, or None when the forker died before it reported its child's
        pid (the child, if any, is killed and the scratch directories wiped: the caller forks
        the case itself).

        The forker reports its child's pid right after the fork; this server then watches the
        child as it watches a child of its own (``pidfd``, wall deadline, stderr drained). The
        exit status and rusage come from the forker, which reports them before it reaps the
        child, or from this server's own ``wait4`` when the forker died or was stopped before
        its report (the child, unreaped, is then reparented to PID 1; a stopped forker is
        killed). Only where the forker must reap to learn the status (:func:`exit_peeker`'s
        fallback) can a program that kills it at that instant lose the status: the reply then
        says ``status_lost``."""
        import time

        fk = self.forker
        limits = req.get("limits", {})
        out_cap = int(limits.get("output_bytes", 64 << 20))
        err_cap = int(limits.get("stderr_bytes", 64 << 10))
        mode = req.get("mode")
        out_fd = os.memfd_create("stdout", os.MFD_CLOEXEC)
        res_fd = os.memfd_create("result", os.MFD_CLOEXEC) if mode == "call" else -1
        err_r, err_w = os.pipe()
        os.set_blocking(err_r, False)
        os.lseek(stdin_fd, 0, os.SEEK_SET)
        fds = [stdin_fd, out_fd, err_w] + ([res_fd] if res_fd >= 0 else [])
        err = Capture(err_cap, head=err_cap // 2)
        self.seq += 1
        req = dict(req, seq=self.seq)
        t0 = time.monotonic()
        try:
            try:
                fk.send(encode_frame(req, [call_args or b""]), fds)
            finally:
                os.close(err_w)  # the forker and the case hold it: end of file once they are gone
        except OSError:
            for fd in (out_fd, res_fd, err_r):
                if fd >= 0:
                    os.close(fd)
            return None
        try:
            return self._watch_forked_case(fk, req, t0, err, err_r, out_fd, res_fd, out_cap)
        finally:
            os.close(err_r)

    def _watch_forked_case(self, fk, req, t0, err, err_r, out_fd, res_fd, out_cap):
        """The rest of :meth:`run_in_forker`, once the request is sent: takes ``out_fd`` and
        ``res_fd`` (handed to :meth:`finish_case`, or closed)."""
        import select
        import time

        limits = req.get("limits", {})
        deadline = t0 + float(limits.get("wall_seconds", 10.0))
        poller = select.poll()
        for fd in (fk.report_r, fk.pidfd, err_r):
            poller.register(fd, select.POLLIN)
        pid = case_pidfd = None
        done = None  # the forker's report: {"pid", "status", "utime", "stime", "maxrss"}
        forker_dead = exited = timed_out = False
        end = None
        waits = 0  # polls for the forker's report since the case ended
        try:
            while done is None:
                now = time.monotonic()
                if exited or timed_out:
                    # The case is over; the forker's report is due. From the second poll on,
                    # every other process is killed at each pass (daemons writing to stderr
                    # would keep this loop busy), and a forker that is stopped or late
                    # (REPORT_GRACE) is killed: the case is then collected as an orphan.
                    if waits and not forker_dead:
                        self.kill_all(0, fk.pid)
                        if stopped(fk.pid) or now > end + REPORT_GRACE:
                            os.kill(fk.pid, signal.SIGKILL)
                    waits += 1
                    events = poller.poll(20 if waits > 1 else 2)
                else:
                    left = deadline - now
                    events = poller.poll(left * 1000.0) if left > 0 else []
                    if not events:
                        timed_out = True
                        end = time.monotonic()
                        self.kill_all(0, fk.pid if not forker_dead else None)
                        continue
                for fd, _ in events:
                    if fd == err_r:
                        if not drain(fd, err):
                            poller.unregister(fd)  # every writer is gone
                    elif fd == fk.report_r:
                        frame = read_report(fd)
                        if frame is None:  # the forker is gone: its pidfd says so too
                            poller.unregister(fd)
                        elif frame["seq"] != self.seq:
                            continue  # left by an earlier run that failed in this server
                        elif "status" in frame:
                            done = frame
                        elif pid is None:
                            pid = int(frame["pid"])
                            try:
                                case_pidfd = os.pidfd_open(pid)
                                poller.register(case_pidfd, select.POLLIN)
                            except ProcessLookupError:
                                pass  # it has exited already: the report follows
                    elif fd == case_pidfd:
                        exited = True
                        end = end or time.monotonic()
                        poller.unregister(fd)
                    elif fd == fk.pidfd and not forker_dead:
                        forker_dead = True
                        poller.unregister(fd)
                        try:
                            os.waitpid(fk.pid, 0)
                        except ChildProcessError:
                            pass
                if forker_dead and done is None:
                    if fk.report_r in dict(poller.poll(0)):
                        continue  # read what it wrote before it died
                    if pid is None:  # it died before it reported its child (if it forked one)
                        self.kill_all(0)
                        self.reap_all()
                        self.wipe_scratch()
                        for fd in (out_fd, res_fd):
                            if fd >= 0:
                                os.close(fd)
                        return None
                    done = self._collect_orphan(pid, case_pidfd, exited, deadline, err, err_r)
                    if done.get("timed_out"):
                        timed_out = True
        finally:
            if case_pidfd is not None:
                os.close(case_pidfd)
        end = end or time.monotonic()
        keep = None if forker_dead else fk.pid
        self.kill_all(0, keep)
        if not self.reap_all(keep, pid):  # a process only the forker could reap: it goes too
            forker_dead = True
            os.kill(fk.pid, signal.SIGKILL)
            self.reap_all()
        drain(err_r, err)  # everything that could write is gone now
        status = done.get("status")
        rusage = Rusage(done.get("utime", 0.0), done.get("stime", 0.0), done.get("maxrss", 0))
        result = self.finish_case(status, rusage, end - t0, timed_out, out_fd, err, res_fd,
                                  out_cap, req.get("mode"))
        if forker_dead:
            self.forker = None
            fk.close()
        else:
            self.check_forker()
        return result

    def _collect_orphan(self, pid, pidfd, exited, deadline, err, err_r):
        """The forker died while its child ``pid`` ran: the child is now this server's; wait for
        it (its wall deadline still holds) and return a report like the forker's, with
        ``status`` None when the forker had reaped it already. The child is told by its
        ``pidfd`` (``waitid(P_PIDFD, WNOWAIT)`` before the ``wait4``), never by a pid number
        that could have been reused."""
        timed_out = False
        if not exited and pidfd is not None:
            timed_out = wait_for_exit(pidfd, {err_r: err}, deadline)
            if timed_out:
                self.kill_all(0)
        lost = {"status": None, "timed_out": timed_out}
        if pidfd is None:
            return lost
        try:
            os.waitid(os.P_PIDFD, pidfd, os.WEXITED | os.WNOWAIT)  # ours (reparented), a zombie
            _, status, ru = os.wait4(pid, 0)
        except ChildProcessError:
            return lost
        return {"status": status, "utime": ru.ru_utime, "stime": ru.ru_stime,
                "maxrss": ru.ru_maxrss, "timed_out": timed_out}
