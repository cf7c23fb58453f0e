"""One host uid per sandbox: a lease, so that no kernel quota kept per host user is shared.

The kernel keeps some quotas per host user whatever the namespaces: pipe buffer pages
(``fs.pipe-user-pages-soft``) and files in flight in Unix sockets. Sandboxes that all ran as one
uid (65534) shared them: a program in one could shrink every new pipe of another sandbox to two
pages while it ran (a false TLE there, and a bit the other program can read; red team, December
2026). When arbiter runs as root, each sandbox runs as a host uid of its own, leased from
:data:`FIRST_UID` on (an exclusive ``flock`` per uid, shared by every arbiter process on the
machine), and shown inside as the configured uid (65534; the tmpfs mounts' options in
``/proc/self/mountinfo`` still show the host uid). See docs/sandbox.md ("The sandbox").
"""

from __future__ import annotations

import fcntl
import os
import tempfile

#: The leased uids: ``FIRST_UID`` to ``FIRST_UID + COUNT - 1``, above systemd's container range
#: (up to 0x6FFFFFFF), below its foreign range (0x7FFE0000) and below 2^31.
FIRST_UID = 0x7FF00000
COUNT = 4096
#: Where the lock files live (``$ARBITER_UID_LOCK_DIR`` overrides).
LOCK_DIR_ENV = "ARBITER_UID_LOCK_DIR"


class UidLease:
    """A host uid held for one sandbox until :meth:`release` (or this process's end)."""

    def __init__(self, uid: int, fd: int):
        self.uid = uid
        self._fd = fd

    def release(self) -> None:
        """Give the uid back (once every process of the sandbox is gone). Only closes this
        process's descriptor: in a forked child the parent's lease stays held."""
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1


def lock_dir() -> str:
    d = os.environ.get(LOCK_DIR_ENV) or os.path.join(tempfile.gettempdir(), "arbiter-uid-locks")
    os.makedirs(d, mode=0o755, exist_ok=True)
    return d


def lease() -> UidLease:
    """A free uid of the range, held: the first free one from a random place, so that the uid
    (which a program can read in ``/proc/self/mountinfo``) tells nothing of how many sandboxes
    the machine runs. Raises OSError when every one is held."""
    import random

    directory = lock_dir()
    start = random.randrange(COUNT)
    for n in ((start + i) % COUNT for i in range(COUNT)):
        fd = os.open(os.path.join(directory, f"uid-{n}.lock"), os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            continue
        return UidLease(FIRST_UID + n, fd)
    raise OSError(f"every sandbox uid ({COUNT} from {FIRST_UID}) is leased")
