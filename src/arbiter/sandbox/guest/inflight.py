"""Unix sockets a case left in flight: memory no process holds, charged until the kernel frees it.

A program that sends a Unix socket over itself (``SCM_RIGHTS``) with files attached (memfds full
of pages) and exits leaves pages charged to the sandbox's memory cgroup until the kernel's Unix
garbage collector runs: the next case's baseline would hold them and the collector free them while
it allocates (a false AC on its memory limit, red team 2026-12-07). Under the seccomp filter no
case can send a file (:mod:`.fdfloor`); this is the second line where there is none: after every
case the server looks for sockets of its network namespace that are not its own (:data:`OWN`) and,
when there are, releases sockets until the collector took them (a race a program can win).
Exports: :data:`OWN`, :func:`remember`, :func:`foreign`, :func:`drain`. See docs/sandbox.md
("Memory: a run's own, whatever ran before")."""

import os
import time

#: Inodes of the Unix sockets this server made (the forkers' pairs): never a case's.
OWN = set()
#: Seconds :func:`drain` waits for the collector before it gives up.
DRAIN_SECONDS = 5.0


def remember(*fds):
    """Count the sockets ``fds`` as the server's own."""
    for fd in fds:
        OWN.add(os.fstat(fd).st_ino)


def foreign():
    """The inodes of the Unix sockets of this network namespace that are not the server's own
    (``/proc/net/unix``: a socket in flight is listed until the collector frees it)."""
    fd = os.open("/proc/net/unix", os.O_RDONLY | os.O_CLOEXEC)
    try:
        chunks = []
        while True:
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                break
            chunks.append(chunk)
    finally:
        os.close(fd)
    out = []
    for line in b"".join(chunks).split(b"\n")[1:]:
        fields = line.split(None, 7)
        if len(fields) >= 7 and fields[6].isdigit() and int(fields[6]) not in OWN:
            out.append(int(fields[6]))
    return out


def drain(seconds=DRAIN_SECONDS):
    """Once a case's processes are gone: release a socket pair (the kernel then schedules its
    Unix garbage collector) until no foreign socket is listed. True when none is left."""
    import _socket

    end = time.monotonic() + seconds
    while foreign():
        if time.monotonic() > end:
            return False
        a, b = _socket.socketpair(_socket.AF_UNIX, _socket.SOCK_STREAM)
        a.close()
        b.close()
        time.sleep(0.001)
    return True
