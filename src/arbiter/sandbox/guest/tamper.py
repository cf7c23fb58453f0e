"""What a program may change on the server (same uid) and later cases would inherit: the checks.

Exports: :func:`record_baseline` (at start-up: :data:`BASELINE`), :func:`tampering` (after each
case), :func:`sched_state` (the same state of the forker), :func:`restore_autogroup`,
:func:`autogroup_nice`. See docs/sandbox.md ("Guarantees").
"""

import os

from . import kernel


#: rlimits a program could lower on the forker (same uid: ``prlimit``); see Server.check_forker.
_RLIMIT_NAMES = ("RLIMIT_AS RLIMIT_CORE RLIMIT_CPU RLIMIT_DATA RLIMIT_FSIZE RLIMIT_MEMLOCK "
                 "RLIMIT_MSGQUEUE RLIMIT_NICE RLIMIT_NOFILE RLIMIT_NPROC RLIMIT_RSS RLIMIT_RTPRIO "
                 "RLIMIT_RTTIME RLIMIT_SIGPENDING RLIMIT_STACK").split()


#: The server's own scheduling state when it started (see sched_state).
BASELINE = None
#: True when the sandbox runs under arbiter's seccomp filter, which refuses every change to
#: PID 1's rlimits and scheduling (docs/sandbox.md, "Seccomp"): :func:`tampering` has nothing
#: to find then, and is skipped.
FILTERED = False


def record_baseline(filtered=False):
    """Remember this server's scheduling state (before any program runs); ``filtered``: see
    :data:`FILTERED`."""
    global BASELINE, FILTERED, AUTOGROUP, _AUTOGROUP_FD
    BASELINE = sched_state(0)
    FILTERED = bool(filtered) and os.getpid() == 1
    try:
        _AUTOGROUP_FD = os.open("/proc/self/autogroup", os.O_RDONLY | os.O_CLOEXEC)
        AUTOGROUP = autogroup_nice()
    except (OSError, ValueError, IndexError):
        _AUTOGROUP_FD, AUTOGROUP = -1, None


#: The nice value of this session's autogroup at start-up (None: no autogroup scheduling).
AUTOGROUP = None
_AUTOGROUP_FD = -1


def autogroup_nice():
    """The nice value of this process's autogroup (``/proc/self/autogroup``, kept open)."""
    return int(os.pread(_AUTOGROUP_FD, 128, 0).split()[-1])


def restore_autogroup():
    """A case may set the nice value of its session's autogroup (``/proc/self/autogroup``: it
    is dumpable), which this server, the forker and every later case share: put it back. Empty,
    or what could not be put back (the kernel takes one change a tenth of a second)."""
    if AUTOGROUP is None:
        return ""
    import time
    for attempt in range(3):
        try:
            if autogroup_nice() == AUTOGROUP:
                return ""
            kernel.write_own_proc("autogroup", b"%d" % AUTOGROUP)
        except (OSError, ValueError, IndexError):
            time.sleep(0.11)
    return "autogroup nice value"


def sched_state(pid):
    """What a process of the same uid may change on ``pid`` and its children inherit: rlimits
    (lowered), nice value (raised), CPU affinity, scheduling policy (``SCHED_IDLE``/``BATCH``)
    and attributes (util clamps), I/O priority. ``pid`` 0: this process. Raises OSError when
    ``pid`` is gone. (Called twice per case: what it needs is looked up once.)"""
    read = _READERS or _make_readers()
    prlimit, resources, ioprio, attr = read
    return (tuple([prlimit(pid, res) for res in resources]), os.getpriority(os.PRIO_PROCESS, pid),
            frozenset(os.sched_getaffinity(pid)), os.sched_getscheduler(pid), ioprio(pid),
            attr(pid))


_READERS = ()


def _make_readers():
    """``(prlimit, the rlimits, ioprio_get(pid), sched_getattr(pid))`` for :func:`sched_state`."""
    global _READERS
    import resource
    resources = tuple(getattr(resource, name) for name in _RLIMIT_NAMES if hasattr(resource, name))
    ioprio = attr = lambda pid: None  # noqa: E731
    if kernel.LIBC is not None and os.uname().machine == "x86_64":
        import ctypes
        syscall = kernel.LIBC.syscall
        buf = ctypes.create_string_buffer(56)
        ioprio = lambda pid: syscall(252, 1, pid)  # noqa: E731  ioprio_get(IOPRIO_WHO_PROCESS, pid)

        def attr(pid):  # sched_getattr: policy, nice, util clamps
            return buf.raw if syscall(315, pid, buf, 56, 0) == 0 else None
    _READERS = (resource.prlimit, resources, ioprio, attr)
    return _READERS


def tampering():
    """What a program changed on this server since it started (see :func:`sched_state`), as a
    short text; empty when nothing (at once under the filter: :data:`FILTERED`)."""
    if FILTERED:
        return ""
    try:
        now = sched_state(0)
    except OSError as exc:
        return "state unreadable (%s)" % exc
    names = ("rlimits", "nice value", "CPU affinity", "scheduling policy", "I/O priority",
             "scheduling attributes")
    return ", ".join(name for name, a, b in zip(names, now, BASELINE) if a != b)
