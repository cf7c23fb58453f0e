"""A case forked (or spawned) by the server itself, and the result header of any case.

Exports (over a :class:`~.state.ServerState`): :func:`fork_here`, :func:`spawn_exec`,
:func:`case_clock`; :func:`finish_case`, :class:`Capture`, :func:`drain`, :func:`wait_for_exit`.
Which case goes where: :func:`.ops.fork_case`. See docs/sandbox.md ("run").
"""

import os

from . import fdfloor, kernel
from .child import child_main, rlimit_list
from .kernel import fork, memfd, namespace_pids, set_own_oom_adj
from .protocol import DEFAULT_ENV, RESULT_FD
from .reaper import kill_all, reap_all
from .runq import WallClock, own_delay_ns, task_stat


def case_clock(state, t0, limits, pid=None, keep=None, server_from=None):
    """The :class:`~.runq.WallClock` of a case started at ``t0``: its processes are every
    process of the namespace but this server and ``keep`` (PID 1), else only ``pid``;
    ``server_from``: this server's run-queue delay at ``t0`` (:func:`~.runq.task_stat`)."""
    if state.is_init:
        pids = lambda: namespace_pids(keep)  # noqa: E731
    else:
        pids = lambda: [pid] if pid else []  # noqa: E731
    return WallClock(t0, float(limits.get("wall_seconds", 10.0)), pids, server_from)


def fork_here(state, req, staged, stdin, call_args, source_for_probe):
    """Fork (or ``posix_spawn``) the case from this server and wait for it.

    stdout goes to a memfd capped by RLIMIT_FSIZE (over the cap is OLE); stderr goes to a
    pipe this server drains while the case runs, keeping its first and last
    ``stderr_bytes / 2`` (never a limit: contest judges ignore stderr); ``log_fd`` (exec only)
    is another drained pipe whose last bytes are kept."""
    import time

    limits = req.get("limits", {})
    out_cap = int(limits.get("output_bytes", 64 << 20))
    err_cap = int(limits.get("stderr_bytes", 64 << 10))
    mode = req.get("mode", "exec")
    stdin_fd, out_fd, err_r, err_w, res_fd = _case_files(mode, staged, stdin)
    err = Capture(err_cap, head=err_cap // 2)
    log_fd = int(req.get("log_fd") or 0) if mode == "exec" else 0
    log_r = log_w = -1
    if log_fd:  # a channel only the exec'd tool writes last to (e.g. valgrind's --log-fd)
        log_r, log_w = os.pipe()
        os.set_blocking(log_r, False)
    log = Capture(err_cap, head=0) if log_fd else None
    server_from = task_stat(os.getpid())[1]
    t0 = time.monotonic()
    pid = None
    spawned = False
    exec_r = exec_w = -1  # a forked exec's channel for why execve failed (see child_main)
    if mode == "exec" and "address_space_bytes" not in limits:
        pid = spawn_exec(state, req, limits, stdin_fd, out_fd, err_w,
                              extra=[(log_w, log_fd)] if log_fd else [])
        spawned = True
        if isinstance(pid, str):  # execve failed: nothing of the program ran
            for fd in (stdin_fd, log_r, log_w, err_r, err_w):
                if fd >= 0:
                    os.close(fd)
            return finish_case(127 << 8, None, 0.0, False, out_fd, err, res_fd,
                                    out_cap, mode, log, spawned=True, exec_failed=pid)
    if pid is None:
        if mode == "exec":
            exec_r, exec_w = os.pipe()  # (close-on-exec: it reads empty once execve worked)
        pid = fork()
        if pid == 0:  # --------------------------------------------------------- child
            status = 70
            try:
                if log_fd:
                    os.dup2(log_w, log_fd)
                status = child_main(state, req, limits, stdin_fd, out_fd, err_w, res_fd,
                                    call_args, source_for_probe, keep_fd=log_fd, exec_err=exec_w)
            finally:
                kernel.EXIT(status)
    for fd in (stdin_fd, log_w, err_w, exec_w):
        if fd >= 0:
            os.close(fd)
    readers = {err_r: err}
    if log_r >= 0:
        readers[log_r] = log
    clock = case_clock(state, t0, limits, pid, server_from=server_from)
    status, rusage, wall, timed_out = _wait_here(state, pid, readers, t0, clock)
    exec_failed = None
    if exec_r >= 0:
        exec_failed = os.read(exec_r, 4096).decode("utf-8", "replace") or None
        os.close(exec_r)
    return finish_case(status, rusage, wall, timed_out, out_fd, err, res_fd, out_cap,
                            mode, log, spawned=spawned, clock=clock, exec_failed=exec_failed)


def _wait_here(state, pid, readers, t0, clock):
    """Wait for the case ``pid`` forked here at ``t0`` (draining ``readers`` until its
    ``clock`` expires), kill and reap what it left; returns ``(wait status, rusage, wall
    seconds, timed out)``. Closes ``readers``."""
    import time

    pidfd = os.pidfd_open(pid)
    try:
        timed_out = wait_for_exit(pidfd, readers, clock)
    finally:
        os.close(pidfd)
    if timed_out:
        kill_all(state, pid)
    ran, waited = (0, 0) if timed_out else task_stat(pid)  # a zombie until the wait4 below
    _, status, rusage = os.wait4(pid, 0)
    clock.note(own_delay_ns(ran, waited, int((rusage.ru_utime + rusage.ru_stime) * 1e9)))
    wall = time.monotonic() - t0
    clock.stop()
    kill_all(state, pid)
    reap_all(state)
    for fd, capture in readers.items():
        drain(fd, capture)  # everything that could write is gone now
        os.close(fd)
    return status, rusage, wall, timed_out


def finish_case(status, rusage, wall, timed_out, out_fd, err, res_fd, out_cap, mode,
                log=None, spawned=False, clock=None, exec_failed=None):
    """The result header of a case (and ``_fds``, the reply's blobs). ``exec_failed``: why
    the program could not be started (a ``SANDBOX_ERROR``, never the program's verdict)."""
    out_stat = os.fstat(out_fd)
    lost = status is None  # see run_in_forker
    result = {
        "exit_code": os.WEXITSTATUS(status) if not lost and os.WIFEXITED(status) else None,
        "signal": os.WTERMSIG(status) if not lost and os.WIFSIGNALED(status) else None,
        "cpu_seconds": rusage.ru_utime + rusage.ru_stime if rusage else 0.0,
        "wall_seconds": wall,
        # A posix_spawn'ed (vfork) child's ru_maxrss includes this server's RSS: exec records
        # the high-water mark of the mm it leaves. The judge uses the memory cgroup instead.
        "maxrss_bytes": rusage.ru_maxrss * 1024 if rusage and not spawned else 0,
        "wall_timeout": timed_out,
        "stdout_size": out_stat.st_size,
        "stdout_charged": out_stat.st_blocks * 512,  # its pages (a file with holes has fewer)
        "stderr_size": err.total,
    }
    if clock is not None:
        result.update(clock.report())
    if lost:
        result["status_lost"] = True
    if exec_failed:
        result["exec_failed"] = exec_failed.strip()
    if mode == "compile_probe":
        result["stderr_text"] = err.value()[:8192].decode("utf-8", "replace")
        os.close(out_fd)
        if res_fd >= 0:
            os.close(res_fd)
        return result
    fds = [(out_fd, min(out_stat.st_size, out_cap)), err.value()]
    if res_fd >= 0 and mode != "call":
        os.close(res_fd)
        res_fd = -1
    parts = ["stdout", "stderr"]
    if res_fd >= 0:
        fds.append((res_fd, min(os.fstat(res_fd).st_size, out_cap)))
        parts.append("result")
    if log is not None:
        fds.append(log.value())
        parts.append("log")
    result["parts"] = parts
    result["_fds"] = fds
    return result


def spawn_exec(state, req, limits, stdin_fd, out_fd, err_fd, extra=()):
    """``posix_spawn`` (vfork + exec: about 1 ms cheaper than forking this interpreter) of a
    native program. Soft limits are set on the server around the spawn so the child starts
    under them; right after, ``prlimit`` sets the child's soft and hard limits (RLIMIT_CPU
    counts CPU time from the start, so nothing escapes it) and its ``oom_score_adj``.
    Returns the pid, or a message when execve failed."""
    import resource
    import signal

    fdfloor.cap()  # (it inherits this server's hard RLIMIT_NOFILE)
    wanted = rlimit_list(limits, RESULT_FD - 1)
    saved = []
    cwd = req.get("cwd")
    old_cwd = os.getcwd() if cwd else None
    try:
        for res, (soft, hard) in wanted:
            if res == resource.RLIMIT_CPU:
                continue
            cur = resource.getrlimit(res)
            saved.append((res, cur))
            cap = cur[1]
            resource.setrlimit(res, (soft if cap == resource.RLIM_INFINITY else min(soft, cap), cap))
        if cwd:
            os.chdir(cwd)
        env = req.get("env") or DEFAULT_ENV
        # The child inherits oom_score_adj at spawn; setting it on the child afterwards races
        # with its exec (its /proc files are root-owned until exec makes it dumpable).
        old_adj = set_own_oom_adj(b"1000")
        try:
            pid = os.posix_spawn(
                req["argv"][0], req["argv"], env,
                file_actions=[(os.POSIX_SPAWN_DUP2, stdin_fd, 0),
                              (os.POSIX_SPAWN_DUP2, out_fd, 1),
                              (os.POSIX_SPAWN_DUP2, err_fd, 2),
                              *[(os.POSIX_SPAWN_DUP2, src, dst) for src, dst in extra]],
                setsid=not state.is_init,
                setsigdef=(signal.SIGPIPE, signal.SIGXFSZ, signal.SIGINT))
        except OSError as exc:
            return "exec %s failed: %s\n" % (req["argv"][0], exc)
        finally:
            if old_adj is not None:
                set_own_oom_adj(old_adj)
    finally:
        for res, cur in reversed(saved):
            resource.setrlimit(res, cur)
        if old_cwd:
            os.chdir(old_cwd)
    for res, val in wanted:
        # The open-file and stack limits were already in force at exec (as soft limits);
        # changing them under a running program confuses programs that read them at start
        # (valgrind reserves descriptors below RLIMIT_NOFILE).
        if res in (resource.RLIMIT_NOFILE, resource.RLIMIT_STACK):
            continue
        try:
            resource.prlimit(pid, res, val)
        except (OSError, ValueError):
            pass
    return pid


def _case_files(mode, staged, stdin):
    """The files of a case forked here: ``(stdin, stdout, stderr read end, stderr write end,
    call result or -1)``; stdin is the ``staged`` memfd (rewound) or a new one holding ``stdin``."""
    if staged is not None:
        stdin_fd = staged
        os.lseek(stdin_fd, 0, os.SEEK_SET)
    else:
        stdin_fd = memfd("stdin", stdin)
    out_fd = os.memfd_create("stdout", os.MFD_CLOEXEC)
    err_r, err_w = os.pipe()
    res_fd = os.memfd_create("result", os.MFD_CLOEXEC) if mode == "call" else -1
    os.set_blocking(err_r, False)
    return stdin_fd, out_fd, err_r, err_w, res_fd


class Capture:
    """Bytes read from a pipe, bounded: the first ``head`` bytes and the last ``cap - head``;
    ``total`` counts everything that was written."""

    def __init__(self, cap, head):
        self.cap, self.head_cap = cap, head
        self.head = bytearray()
        self.tail = bytearray()
        self.total = 0

    def feed(self, chunk):
        self.total += len(chunk)
        room = self.head_cap - len(self.head)
        if room > 0:
            self.head += chunk[:room]
            chunk = chunk[room:]
        if chunk:
            self.tail += chunk
            keep = self.cap - self.head_cap
            if len(self.tail) > keep:
                del self.tail[:len(self.tail) - keep]

    def value(self):
        return bytes(self.head + self.tail)


def wait_for_exit(pidfd, readers, clock):
    """Wait until the process of ``pidfd`` exits or its :class:`~.runq.WallClock` ``clock``
    expires, draining each pipe of ``readers`` (fd -> :class:`Capture`) meanwhile. True when
    the clock expired."""
    import select
    import time
    poller = select.poll()
    poller.register(pidfd, select.POLLIN)
    for fd in readers:
        poller.register(fd, select.POLLIN)
    while True:
        left = clock.deadline() - time.monotonic()
        events = poller.poll(left * 1000.0) if left > 0 else []
        if not events:
            if clock.expired(time.monotonic()):
                return True
            continue
        if any(fd == pidfd for fd, _ in events):
            return False
        for fd, _ in events:
            if fd in readers and not drain(fd, readers[fd]):
                poller.unregister(fd)  # every writer closed it: just wait for the exit
                readers = {k: v for k, v in readers.items() if k != fd}


def drain(fd, capture):
    """Read what is available on non-blocking ``fd`` into ``capture``. False at end of file."""
    while True:
        try:
            chunk = os.read(fd, 65536)
        except BlockingIOError:
            return True
        if not chunk:
            return False
        capture.feed(chunk)
