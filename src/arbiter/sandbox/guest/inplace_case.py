"""The session's last Python case, run by the forker itself: no fork on the submission's path.

Exports: :func:`run_in_place` (over a :class:`~.state.ServerState` and its
:class:`~.forker.Forker`), :func:`reap_ended` (after its reply). The forker's side:
``forker._become_case``. See docs/sandbox.md ("The session's last case").
"""

import os
import select
import time

from .cases import Capture, case_clock, drain, finish_case
from .protocol import encode_frame
from .reaper import kill_all, kill_until_none_new, reap_all
from .reports import REPORT_GRACE, Rusage, ended_early
from .runq import own_delay_ns, task_stat


def run_in_place(state, fk, req, stdin_fd, call_args):
    """Run the session's last Python case (``req["final"]``) in the forker ``fk`` itself, with
    ``stdin_fd`` (the caller closes it); returns what :func:`.ops.fork_case` returns, or None when
    the forker did not become the case (it was gone, or ended first: the caller forks the case
    itself). The forker is the server's no more (``state.forker`` None, ``state.forker_spent``)."""
    limits = req.get("limits", {})
    mode = req.get("mode")
    out_fd = os.memfd_create("stdout", os.MFD_CLOEXEC)
    res_fd = os.memfd_create("result", os.MFD_CLOEXEC) if mode == "call" else -1
    err_r, err_w = os.pipe()
    os.set_blocking(err_r, False)
    ended_r, ended_w = os.pipe2(os.O_CLOEXEC)
    os.lseek(stdin_fd, 0, os.SEEK_SET)
    # the ENDED pipe last, after a stand-in for the call result (closed there) when there is none
    fds = [stdin_fd, out_fd, err_w, res_fd if res_fd >= 0 else err_w, ended_w]
    state.seq += 1
    req = dict(req, seq=state.seq, in_place=True)
    server_from = task_stat(os.getpid())[1]  # (this server's run-queue delay: see WallClock.stop)
    t0 = time.monotonic()
    try:
        try:
            fk.send(encode_frame(req, [call_args or b""]), fds)
        finally:
            os.close(err_w)
            os.close(ended_w)
    except OSError:
        for fd in (out_fd, res_fd, err_r, ended_r):
            if fd >= 0:
                os.close(fd)
        return None
    state.forker, state.forker_spent = None, True
    err_cap = int(limits.get("stderr_bytes", 64 << 10))
    err = Capture(err_cap, head=err_cap // 2)
    try:
        end = _watch(state, fk, req, (t0, server_from), err, err_r, ended_r)
    finally:
        os.close(ended_r)
    try:
        if end is None:
            for fd in (out_fd, res_fd):
                if fd >= 0:
                    os.close(fd)
            return None
        status, rusage, wall, timed_out, clock = end
        drain(err_r, err)
        return finish_case(status, rusage, wall, timed_out, out_fd, err, res_fd,
                           int(limits.get("output_bytes", 64 << 20)), mode, clock=clock)
    finally:
        os.close(err_r)
        fk.close()


def _watch(state, fk, req, start, err, err_r, ended_r):
    """Wait for the case (the forker's process) to end: its ENDED record, its exit or its wall
    clock (``start``: ``(t0, this server's run-queue delay then)``). Returns ``(status, rusage,
    wall, timed_out, clock)``, or None when the forker never became the case (then it is
    reaped here)."""
    pid = fk.pid
    t0, server_from = start
    clock = case_clock(state, t0, req.get("limits", {}), pid, server_from=server_from)
    clock.sampling = False  # (until its "started" record tells the forker's figures before the case)
    poller = select.poll()
    for fd in (fk.pidfd, ended_r, err_r):
        poller.register(fd, select.POLLIN)
    timed_out = False
    base = early = None
    while True:
        left = clock.deadline() - time.monotonic()
        events = dict(poller.poll(left * 1000.0) if left > 0 else [])
        if not events:
            base = base or _take_base(state, fk, clock)
            if clock.expired(time.monotonic()):
                timed_out = True
                kill_all(state, 0)  # (everything but this server: the case and what it left)
                break
            continue
        if err_r in events and not drain(err_r, err):
            poller.unregister(err_r)
        if ended_r in events:
            base = base or _take_base(state, fk, clock)
            early = ended_early(pid, ended_r) if base is not None else None
            if early is not None:
                break  # (its figures taken, it is killed)
            poller.unregister(ended_r)  # no record (closed, cut short, or exited first)
        if fk.pidfd in events:
            break
    end = time.monotonic()
    clock.stop()
    base = base or _take_base(state, fk, clock)
    if base is None:  # it ended before it became the case: nothing of the program ran
        kill_all(state, 0)
        reap_all(state)
        return None
    if early is not None:  # killed; it and what it left are reaped after the reply
        status, cpu, _, maxrss = early
        ran, waited = task_stat(pid)
        kill_until_none_new(None, (pid,))
        state.reaping = pid
    else:
        ran, waited = (0, 0) if timed_out else task_stat(pid)
        # Its own CPU, read while it is a zombie: wait4's rusage would add its reaped children,
        # and those are every case this forker ran before it (the early path's figure too).
        os.waitid(os.P_PID, pid, os.WEXITED | os.WNOWAIT)
        try:
            cpu = time.clock_gettime_ns(((~pid) << 3) | 2) / 1e9  # (its CPUCLOCK_SCHED)
        except OSError:
            cpu = base["base_cpu"]  # (none of its own: the cgroup's figure, which the host takes)
        status = os.wait4(pid, 0)[1]
        # (its ru_maxrss is the largest of the earlier cases' too: the cgroup's peak is the figure)
        maxrss = 0
        kill_all(state, 0)
        reap_all(state)
    cpu = max(0.0, cpu - base["base_cpu"])
    if ran:
        clock.note(own_delay_ns(ran - base["base_ran_ns"], waited - base["base_waited_ns"], int(cpu * 1e9)))
    return status, Rusage(cpu, 0.0, maxrss), end - t0, timed_out, clock


def _take_base(state, fk, clock):
    """The forker's "started" record of this run (written before it became the case: its CPU,
    time run and run-queue delay so far), given to the case's ``clock``; None when not there."""
    base = fk.take_started(state.seq)
    if base is not None:
        clock.startup = max(0, int(base["run_delay_ns"])) / 1e9
        clock.base = (fk.pid, base["base_ran_ns"], base["base_waited_ns"])
        clock.sampling = True
    return base


def reap_ended(state):
    """Once the reply of a case reported before its exit is sent (``state.reaping``: its pid,
    killed): sleep until it has exited (the kernel tears its memory down meanwhile, no scan of
    ``/proc``), then kill and reap every process left. True when there was one."""
    if state.reaping is None:
        return False
    case, state.reaping = state.reaping, None
    try:
        pidfd = os.pidfd_open(case)
    except OSError:
        pidfd = -1
    if pidfd >= 0:
        try:
            exited = select.poll()
            exited.register(pidfd, select.POLLIN)
            exited.poll(REPORT_GRACE * 1000)
        finally:
            os.close(pidfd)
    reap_all(state)
    return True
