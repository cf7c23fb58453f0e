"""A case's own process: its rlimits, then the program (``execve`` or the Python case).

Exports: :func:`rlimit_list`, :func:`set_limits`, :func:`apply_rlimits`, :func:`child_main`.
See docs/sandbox.md ("Limits").
"""

import os

from . import fdfloor, kernel
from .protocol import DEFAULT_ENV, RESULT_FD
from .python_case import run_python


def rlimit_list(limits, keep_fd):
    """The ``(resource, (soft, hard))`` pairs a case runs under."""
    import math
    import resource

    cpu = float(limits.get("cpu_seconds", 2.0))
    soft = int(math.ceil(cpu)) + 1
    rl = [
        (resource.RLIMIT_CPU, (soft, soft + 1)),
        # stdout is a file too: the cap is the larger of the two, stdout's own cap is checked after
        (resource.RLIMIT_FSIZE, (max(int(limits.get("output_bytes", 64 << 20)),
                                     int(limits.get("file_bytes", 0))) + 1,) * 2),
        (resource.RLIMIT_NOFILE, (fdfloor.open_files(max(int(limits.get("open_files", 64)), keep_fd + 1)),) * 2),
        (resource.RLIMIT_CORE, (0, 0)),
    ]
    if "processes" in limits:
        rl.append((resource.RLIMIT_NPROC, (int(limits["processes"]),) * 2))
    stack = limits.get("stack_bytes")
    if stack:
        # Soft limit only: the hard limit stays unlimited, so the competitive-programming idiom
        # setrlimit(RLIMIT_STACK, (RLIM_INFINITY, RLIM_INFINITY)) works (as on Codeforces-style
        # judges). A bigger stack is still memory: the memory cgroup (or RLIMIT_AS) bounds it.
        rl.append((resource.RLIMIT_STACK, (int(stack), resource.RLIM_INFINITY)))
    if limits.get("address_space_bytes"):
        rl.append((resource.RLIMIT_AS, (int(limits["address_space_bytes"]),) * 2))
    return rl


def set_limits(limits, keep_fd):
    apply_rlimits(rlimit_list(limits, keep_fd))


def apply_rlimits(rlimits):
    """Set each ``(resource, (soft, hard))``; a hard limit above the current one (the sandbox
    was started with a lower one) is kept, the soft limit capped by it."""
    import resource

    for res, val in rlimits:
        try:
            resource.setrlimit(res, val)
        except (ValueError, OSError):
            hard = resource.getrlimit(res)[1]
            soft_v = val[0] if hard == resource.RLIM_INFINITY else min(val[0], hard)
            resource.setrlimit(res, (soft_v, hard))


def child_main(state, req, limits, stdin_fd, out_fd, err_fd, res_fd, call_args, probe, keep_fd=0,
               exec_err=-1):
    """The case's own process (forked by the server, whose :class:`~.state.ServerState` is
    ``state``): its files, limits, then the program.
    ``exec_err`` (exec mode): a pipe the reason goes to when ``execve`` fails."""
    import signal

    if exec_err >= 0:  # (close-on-exec, above every descriptor the program is given)
        import fcntl
        exec_err = fcntl.fcntl(exec_err, fcntl.F_DUPFD_CLOEXEC, max(16, keep_fd + 1))
    # stdio as real descriptors; everything else closed
    os.dup2(stdin_fd, 0)
    os.dup2(out_fd, 1)
    os.dup2(err_fd, 2)
    top = 2
    if res_fd >= 0:
        os.dup2(res_fd, RESULT_FD)
        top = RESULT_FD
    if keep_fd:
        top = max(top, keep_fd)
    if exec_err >= 0:
        os.closerange(top + 1, exec_err)
        os.closerange(exec_err + 1, 1 << 16)
    else:
        os.closerange(top + 1, 1 << 16)
    if not state.is_init:
        os.setsid()  # without a PID namespace the process group is what we can kill
    mode = req.get("mode", "exec")
    # the OOM killer must pick the program, never the server
    if kernel.LIBC is not None:
        kernel.LIBC.prctl(4, 1, 0, 0, 0)  # PR_SET_DUMPABLE 1: the child may write its own /proc files
    try:
        fd = os.open("/proc/self/oom_score_adj", os.O_WRONLY)
        os.write(fd, b"1000")
        os.close(fd)
    except OSError:
        pass
    set_limits(limits, top)
    if mode == "exec":
        argv = req["argv"]
        env = req.get("env") or DEFAULT_ENV
        for signum in (signal.SIGPIPE, signal.SIGXFSZ):  # execve keeps ignored signals ignored
            signal.signal(signum, signal.SIG_DFL)
        cwd = req.get("cwd")
        if cwd:
            os.chdir(cwd)
        try:
            os.execve(argv[0], argv, env)
        except OSError as exc:
            message = ("exec %s failed: %s\n" % (argv[0], exc)).encode()
            os.write(exec_err if exec_err >= 0 else 2, message)
            return 127
    # Python modes: behave like `python3 -X utf8 main.py` (SIGPIPE and SIGXFSZ stay ignored,
    # as the server has them)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    return run_python(state.program, req, call_args, probe)
