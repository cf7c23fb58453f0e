"""The descriptor floor: no case can send a file over a socket, only the server can.

A case that sends descriptors (``SCM_RIGHTS``) can leave files in flight that no process holds,
memory charged to the sandbox after the case is gone (docs/sandbox.md, "Memory: a run's own,
whatever ran before"). The sandbox's seccomp filter allows ``sendmsg`` only on descriptors
numbered at or above :data:`FLOOR` (``sendmmsg`` never), and no case can have one: every case's
hard ``RLIMIT_NOFILE`` is at most the floor. The server's sending socket of each forker is moved
there (:func:`lift`). A native program inherits the server's hard limit, so before it spawns one
the server lowers its own to the floor, for good (:func:`cap`): a forker made after that cannot
be lifted, and that session's Python cases fork from the server.
Exports: :data:`FLOOR`, :func:`set_floor`, :func:`reachable`, :func:`lift`, :func:`cap`, :func:`open_files`.
"""

import os

#: The lowest descriptor the filter lets ``sendmsg`` use; 0: no filter, no floor.
FLOOR = 0


def set_floor(floor):
    global FLOOR
    FLOOR = int(floor)


def reachable():
    """True when this process can still put a descriptor on the floor (or there is none)."""
    if not FLOOR:
        return True
    import resource

    hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    return hard == resource.RLIM_INFINITY or hard > FLOOR


def lift(fd):
    """A close-on-exec copy of ``fd`` at or above the floor (anywhere with no floor); ``fd``
    stays open. Raises OSError when this process can no longer reach the floor (:func:`cap`)."""
    import fcntl

    if not FLOOR:
        return fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 0)
    import errno
    import resource

    if not reachable():
        raise OSError(errno.EMFILE, "descriptor %d is out of reach" % FLOOR)
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    raise_soft = soft != resource.RLIM_INFINITY and soft <= FLOOR
    if raise_soft:
        resource.setrlimit(resource.RLIMIT_NOFILE, (FLOOR + 1, hard))
    try:
        return fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, FLOOR)
    finally:
        if raise_soft:
            resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


def cap():
    """Lower this process's hard ``RLIMIT_NOFILE`` to the floor (for good: nothing in the
    sandbox may raise it), so that what it spawns can never reach the floor."""
    if not FLOOR:
        return
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard == resource.RLIM_INFINITY or hard > FLOOR:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(soft, FLOOR), FLOOR))


def open_files(wanted):
    """A case's ``RLIMIT_NOFILE``: ``wanted``, at most the floor."""
    return min(wanted, FLOOR) if FLOOR else wanted
