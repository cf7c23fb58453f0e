"""Page plans: the pages a session's server and forker write while they serve, copied ahead.

Each session server is a fresh fork of the zygote and its forker a fork of the server, so every
page they write while serving a submission is first copied (a copy-on-write fault, 5 to 10 µs
each in a virtual machine). A plan lists those pages for one role; the server populates its
plan writable (``MADV_POPULATE_WRITE``) once its blank forker is forked, the blank forker once
warm, both before the submission arrives. The judge learns the plans from its own program and
gives them to the zygote (op ``plans``, :func:`take`); every later session inherits them. See
docs/sandbox.md ("Page plans").
"""

import os
import struct

MADV_POPULATE_WRITE = 23
PAGE = os.sysconf("SC_PAGE_SIZE")
#: Pages one role's plan holds at most (a learnt plan holds a few hundred).
MAX_PAGES = 2048
#: Runs (contiguous pages) one role's plan holds at most.
MAX_RUNS = 1500
SERVER, FORKER = b"S", b"F"
#: Role -> ((first page's address, pages), ...): this zygote's plans, inherited by its sessions.
PLANS = {}
#: A plan on the wire: its role and number of runs, then each run's address and pages.
HEAD = struct.Struct("=cI")
RUN = struct.Struct("=QI")
_madvise = None


def load_libc():
    """In the zygote, once: ``madvise`` ready for every session it forks."""
    global _madvise
    import ctypes
    _madvise = ctypes.CDLL(None, use_errno=True).madvise
    _madvise.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]


def populate(role):
    """Copy (populate writable) the pages of ``role``'s plan; a page no longer mapped so is
    skipped by the kernel's own checks."""
    runs = PLANS.get(role)
    if not runs or _madvise is None:
        return
    for addr, pages in runs:
        _madvise(addr, pages * PAGE, MADV_POPULATE_WRITE)


def sizes():
    """Pages in each role's plan: ``{"S": pages, "F": pages}``."""
    return {role.decode(): sum(n for _, n in runs) for role, runs in PLANS.items()}


def take(data):
    """The zygote: keep the plans in ``data`` (the judge's: each a :data:`HEAD`, then its
    :data:`RUN` s); a plan that is not well formed or too large is dropped."""
    at = 0
    while at + HEAD.size <= len(data):
        role, count = HEAD.unpack_from(data, at)
        at += HEAD.size
        if role not in (SERVER, FORKER) or count > MAX_RUNS or at + count * RUN.size > len(data):
            return
        runs = tuple(RUN.unpack_from(data, at + i * RUN.size) for i in range(count))
        at += count * RUN.size
        if all(a % PAGE == 0 and n > 0 for a, n in runs) and sum(n for _, n in runs) <= MAX_PAGES:
            PLANS[role] = runs
