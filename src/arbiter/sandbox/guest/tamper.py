"""What a program may change on the server (same uid) and later cases would inherit: the checks.

:func:`record_baseline` at start-up; :func:`tampering` after each case; :func:`untouched` for the
forker. See docs/sandbox.md ("Guarantees").
"""

import os

from . import kernel


#: rlimits a program could lower on the forker (same uid: ``prlimit``); see Server.check_forker.
_RLIMIT_NAMES = ("RLIMIT_AS RLIMIT_CORE RLIMIT_CPU RLIMIT_DATA RLIMIT_FSIZE RLIMIT_MEMLOCK "
                 "RLIMIT_MSGQUEUE RLIMIT_NICE RLIMIT_NOFILE RLIMIT_NPROC RLIMIT_RSS RLIMIT_RTPRIO "
                 "RLIMIT_RTTIME RLIMIT_SIGPENDING RLIMIT_STACK").split()


#: The server's own scheduling state when it started (see sched_state).
BASELINE = None


def record_baseline():
    """Remember this server's scheduling state (before any program runs)."""
    global BASELINE
    BASELINE = sched_state(0)


def sched_state(pid):
    """What a process of the same uid may change on ``pid`` and its children inherit: rlimits
    (lowered), nice value (raised), CPU affinity, scheduling policy (``SCHED_IDLE``/``BATCH``)
    and attributes (util clamps), I/O priority. ``pid`` 0: this process. Raises OSError when
    ``pid`` is gone."""
    import resource
    limits = tuple(resource.prlimit(pid, getattr(resource, name))
                   for name in _RLIMIT_NAMES if hasattr(resource, name))
    ioprio = attr = None
    if kernel.LIBC is not None and os.uname().machine == "x86_64":
        import ctypes
        ioprio = kernel.LIBC.syscall(252, 1, pid)  # ioprio_get(IOPRIO_WHO_PROCESS, pid)
        buf = ctypes.create_string_buffer(56)
        if kernel.LIBC.syscall(315, pid, buf, 56, 0) == 0:  # sched_getattr: policy, nice, util clamps
            attr = buf.raw
    return (limits, os.getpriority(os.PRIO_PROCESS, pid), frozenset(os.sched_getaffinity(pid)),
            os.sched_getscheduler(pid), ioprio, attr)


def tampering():
    """What a program changed on this server since it started (see :func:`sched_state`), as a
    short text; empty when nothing."""
    try:
        now = sched_state(0)
    except OSError as exc:
        return "state unreadable (%s)" % exc
    names = ("rlimits", "nice value", "CPU affinity", "scheduling policy", "I/O priority",
             "scheduling attributes")
    return ", ".join(name for name, a, b in zip(names, now, BASELINE) if a != b)


def untouched(pid):
    """True when process ``pid`` (the forker) is running or sleeping with no signal pending and
    the scheduling state (:func:`sched_state`) this server had when it started. Raises OSError
    when it is gone."""
    with open("/proc/%d/status" % pid, "rb") as f:
        fields = dict(line.split(b":", 1) for line in f if b":" in line)
    if fields[b"State"].split()[0] not in (b"R", b"S"):
        return False
    if int(fields[b"SigPnd"], 16) or int(fields[b"ShdPnd"], 16):
        return False
    return sched_state(pid) == BASELINE
