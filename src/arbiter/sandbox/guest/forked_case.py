"""The server's side of a case the forker runs: send it, watch it, collect it.

Exports: :func:`run_in_forker` (over a :class:`~.state.ServerState` and its
:class:`~.forker.Forker`), :func:`await_zombie`, :data:`QUICK_CASE`. See
docs/sandbox.md ("The forker").
"""

import os
import signal

from .cases import Capture, case_clock, drain, finish_case, wait_for_exit
from .kernel import stopped
from .protocol import encode_frame
from .reaper import kill_all, only_forker_left, reap_all, wipe_scratch
from .reports import REPORT_GRACE, Rusage, read_report
from .runq import task_stat


def run_in_forker(state, fk, req, stdin_fd, call_args):
    """Run one Python case through the forker, with ``stdin_fd`` (a memfd holding the input;
    the caller closes it) and new stdout, stderr and result files; returns what
    :func:`.ops.fork_case` returns, or None when the forker died before it reported its child's
    pid (the child, if any, is killed and the scratch directories wiped: the caller forks
    the case itself). The exit status and rusage come from the forker's report, or from this
    server's own ``wait4`` when the forker died or was stopped first (docs/sandbox.md)."""
    import time

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
    state.seq += 1
    req = dict(req, seq=state.seq)
    server_from = task_stat(os.getpid())[1]
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
        return _watch_forked_case(state, fk, req, (t0, server_from), err, err_r, out_fd, res_fd, out_cap)
    finally:
        os.close(err_r)


def await_zombie(state):
    """Once the reply is sent: wait until the forker has reaped its reported case, so the
    next request finds nothing of it; a forker that does not do so within
    :data:`REPORT_GRACE` is dropped (the zombie is then this server's to reap)."""
    import time
    if state.zombie is None:
        return
    (pid, forker), state.zombie = state.zombie, None
    give_up = time.monotonic() + REPORT_GRACE
    while pid in (forker.children() or ()):
        if time.monotonic() > give_up:
            _drop_forker(state)
            break
        time.sleep(0.00005)
    try:  # the forker was dropped meanwhile: the zombie was reparented to this server
        os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        pass


def _reap_sparing(state, keep, case):
    """Reap every process left but ``keep`` (the forker's pid, or None), killing them; when one
    stays that only the forker could reap (not ``case``, which it reaps next), the forker is
    killed too and everything reaped: False then."""
    if reap_all(state, keep, case):
        return True
    kill_all(state, 0)
    reap_all(state)
    return False


def _watch_forked_case(state, fk, req, start, err, err_r, out_fd, res_fd, out_cap):
    """The rest of :func:`run_in_forker`, once the request is sent (``start``: ``(t0, this
    server's run-queue delay then)``): takes ``out_fd`` and ``res_fd`` (handed to
    :func:`.cases.finish_case`, or closed)."""
    limits = req.get("limits", {})
    t0, server_from = start
    w = _CaseWatch(fk, err, err_r, case_clock(state, t0, limits, keep=fk.pid, server_from=server_from),
                   t0 + QUICK_CASE)
    try:
        while w.done is None:
            events = _next_events(state, w)
            if events is None:
                continue
            _take_events(state, w, events)
            if w.forker_dead and w.done is None:
                if fk.report_r in dict(w.poller.poll(0)):
                    continue  # read what it wrote before it died
                _take_started(state, w)
                if w.pid is None:  # it died before it reported its child (if it forked one)
                    kill_all(state, 0)
                    reap_all(state)
                    wipe_scratch(state)
                    for fd in (out_fd, res_fd):
                        if fd >= 0:
                            os.close(fd)
                    return None
                w.done = _collect_orphan(state, w.pid, w.case_pidfd, w.exited, w.clock,
                                              err, err_r)
                if w.done.get("timed_out"):
                    w.timed_out = True
    finally:
        if w.case_pidfd is not None:
            os.close(w.case_pidfd)
    return _end_forked_case(state, w, req, t0, out_fd, res_fd, out_cap)


def _take_started(state, w):
    """Read the forker's "started" record of this run, if it is there: the case's pid
    (watched from now on by its pidfd) and the forker's run-queue delay before the fork."""
    import select

    if w.pid is not None:
        return
    frame = w.fk.take_started(state.seq)
    if frame is None:
        return
    w.pid = int(frame["pid"])
    w.clock.startup = max(0, int(frame.get("run_delay_ns", 0))) / 1e9
    try:
        w.case_pidfd = os.pidfd_open(w.pid)
        w.poller.register(w.case_pidfd, select.POLLIN)
    except ProcessLookupError:
        pass  # it has exited already: the report follows


def _next_events(state, w):
    """Poll once for what :meth:`_watch_forked_case` waits for; None when the case's wall
    clock expired just now (every process but the forker is then killed). A case still
    running at ``w.quick_until`` gets its "started" record read and is watched by its pidfd
    from then on."""
    import select
    import time

    fk = w.fk
    now = time.monotonic()
    if w.exited or w.timed_out:
        # The case is over; the forker's report is due. From the second poll on, every
        # other process is killed at each pass (daemons writing to stderr would keep this
        # loop busy), and a forker that is stopped or late (REPORT_GRACE) is killed: the
        # case is then collected as an orphan.
        if w.waits and not w.forker_dead:
            kill_all(state, 0, fk.pid)
            if stopped(fk.pid) or now > w.end + REPORT_GRACE:
                os.kill(fk.pid, signal.SIGKILL)
        w.waits += 1
        return w.poller.poll(20 if w.waits > 1 else 2)
    if w.quick_until is not None and now >= w.quick_until:
        w.quick_until = None  # no longer quick: wake up for its "started" record
        w.poller.register(fk.started_r, select.POLLIN)
        _take_started(state, w)
    wake = w.clock.deadline() if w.quick_until is None else min(w.quick_until, w.clock.deadline())
    left = wake - now
    events = w.poller.poll(left * 1000.0) if left > 0 else []
    if not events:
        now = time.monotonic()
        if now < w.clock.deadline():
            return []  # the quick time is over, or its run-queue delay moved the deadline
        _take_started(state, w)  # (its start-up delay moves the deadline)
        if not w.clock.expired(now):
            return []
        w.timed_out = True
        w.end = time.monotonic()
        w.clock.stop()
        kill_all(state, 0, fk.pid if not w.forker_dead else None)
        return None
    return events


def _take_events(state, w, events):
    """Act on polled ``events``: stderr drained, the forker's reports read, the case's or the
    forker's exit noted."""
    import time

    fk = w.fk
    for fd, _ in events:
        if fd == w.err_r:
            if not drain(fd, w.err):
                w.poller.unregister(fd)  # every writer is gone
        elif fd == fk.report_r:
            frame = read_report(fd)
            if frame is None:  # the forker is gone: its pidfd says so too
                w.poller.unregister(fd)
            elif frame["seq"] == state.seq and "status" in frame:
                w.done = frame  # (a record left by an earlier run that failed is skipped)
                w.pid = int(frame["pid"]) if w.pid is None else w.pid
        elif fd == fk.started_r:
            _take_started(state, w)
            if w.pid is not None or w.forker_dead:
                w.poller.unregister(fd)
        elif fd == w.case_pidfd:
            w.exited = True
            w.end = w.end or time.monotonic()
            w.clock.stop()
            w.poller.unregister(fd)
        elif fd == fk.pidfd and not w.forker_dead:
            w.forker_dead = True
            w.poller.unregister(fd)
            try:
                os.waitpid(fk.pid, 0)
            except ChildProcessError:
                pass


def _end_forked_case(state, w, req, t0, out_fd, res_fd, out_cap):
    """Once the forker reported (or the case was collected): kill and reap what is left
    (nothing to do when the forker and its reported case are all there is), build the
    result; drop the forker if it died or is no longer as forked."""
    import time

    fk, forker_dead = w.fk, w.forker_dead
    end = w.end or time.monotonic()
    w.clock.stop()  # (when the case's exit was not seen before the forker's report)
    keep = None if forker_dead else fk.pid
    if forker_dead or not only_forker_left(state, fk, w.pid):
        kill_all(state, 0, keep)
        if not _reap_sparing(state, keep, w.pid):  # a process only the forker could reap
            forker_dead = True
    drain(w.err_r, w.err)  # everything that could write is gone now
    done = w.done
    w.clock.note(int(done.get("run_delay_ns", 0)))
    status = done.get("status")
    rusage = Rusage(done.get("utime", 0.0), done.get("stime", 0.0), done.get("maxrss", 0))
    result = finish_case(status, rusage, end - t0, w.timed_out, out_fd, w.err, res_fd,
                              out_cap, req.get("mode"), clock=w.clock)
    if forker_dead:
        state.forker = None
        fk.close()
    else:
        fk.drop_started()
        if not fk.healthy():
            _drop_forker(state)
    return result


def _collect_orphan(state, pid, pidfd, exited, clock, err, err_r):
    """The forker died while its child ``pid`` ran: the child is now this server's; wait for
    it (its wall ``clock`` still holds) and return a report like the forker's, with
    ``status`` None when the forker had reaped it already. The child is told by its
    ``pidfd`` (``waitid(P_PIDFD, WNOWAIT)`` before the ``wait4``), never by a pid number
    that could have been reused."""
    timed_out = False
    if not exited and pidfd is not None:
        timed_out = wait_for_exit(pidfd, {err_r: err}, clock)
        if timed_out:
            kill_all(state, 0)
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


#: Seconds a case may run before the server reads its "started" record and watches it by its
#: pidfd: most cases are over sooner, and their "done" record is then the only wake-up.
QUICK_CASE = 0.05


class _CaseWatch:
    """What the server knows of a case the forker runs, while it watches it."""

    def __init__(self, fk, err, err_r, clock, quick_until):
        import select

        self.fk, self.err, self.err_r, self.clock = fk, err, err_r, clock
        self.poller = select.poll()
        for fd in (fk.report_r, fk.pidfd, err_r):
            self.poller.register(fd, select.POLLIN)
        self.quick_until = quick_until  # (then the "started" record is read: see _next_events)
        self.pid = self.case_pidfd = None
        self.done = None  # the forker's report: {"pid", "status", "utime", "stime", "maxrss"}
        self.forker_dead = self.exited = self.timed_out = False
        self.end = None  # when the case ended (exit or deadline)
        self.waits = 0  # polls for the forker's report since the case ended


def _drop_forker(state):
    """Stop the server's forker (:func:`.forker.drop_forker`; that module imports this one)."""
    fk, state.forker = state.forker, None
    if fk is not None:
        fk.stop()
