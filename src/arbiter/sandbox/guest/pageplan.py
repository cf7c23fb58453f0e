"""Page plans: the pages a session's server and forker write while they serve, copied ahead.

Each session server is a fresh fork of the zygote and its forker a fork of the server, so every
page they write while serving a submission is first copied (a copy-on-write fault, 5 to 10 µs
each in a virtual machine, some 400 per one-case submission). A plan lists those pages; a
server populates its role's plan writable (``MADV_POPULATE_WRITE``) once its blank forker is
forked, the blank forker once warm, both before the submission arrives.

Plans are learnt once per zygote, in a session of arbiter's own (the judge's warm-up program:
:data:`LEARN_FD` set only then), never from a submission: every later session of the sandbox
gets the same plans whatever ran before it. See docs/sandbox.md ("Page plans").
"""

import os
import struct

MADV_POPULATE_WRITE = 23
PR_SET_DUMPABLE = 4
PAGE = os.sysconf("SC_PAGE_SIZE")
#: Pages one role's plan holds at most (a learnt plan holds some 500).
MAX_PAGES = 2048
#: Runs (contiguous pages) one role's plan holds at most: both roles' messages fit in a pipe.
MAX_RUNS = 1500
SERVER, FORKER = b"S", b"F"
#: Role -> ((first page's address, pages), ...): this zygote's plans, inherited by its sessions.
PLANS = {}
#: In a learning session only: the write end of the zygote's pipe for the plans (else -1).
LEARN_FD = -1
_RUN = struct.Struct("=QI")
_HEAD = struct.Struct("=cI")
_ENTRY = struct.Struct("=Q")
_MINE = (1 << 63) | (1 << 56)  # present, mapped by this process only
_libc = None


def populate(role):
    """Copy (populate writable) the pages of ``role``'s plan; pages no longer mapped so are
    skipped by the kernel's own checks."""
    runs = PLANS.get(role)
    if not runs:
        return
    libc = _load_libc()
    for addr, pages in runs:
        libc.madvise(addr, pages * PAGE, MADV_POPULATE_WRITE)


def _load_libc():
    global _libc
    if _libc is None:
        import ctypes
        _libc = ctypes.CDLL(None, use_errno=True)
        _libc.madvise.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    return _libc


def learn(role):
    """In a learning session: send this process's written pages as ``role``'s plan, then
    close :data:`LEARN_FD` (nothing this process forks has it)."""
    global LEARN_FD
    fd, LEARN_FD = LEARN_FD, -1
    if fd < 0:
        return
    libc = _load_libc()
    libc.prctl(PR_SET_DUMPABLE, 1, 0, 0, 0)  # (else /proc/self/pagemap is root's, unreadable)
    try:
        runs = written_runs()
        os.write(fd, _HEAD.pack(role, len(runs)) + b"".join(_RUN.pack(a, n) for a, n in runs))
    except OSError:
        pass
    finally:
        libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)
        os.close(fd)


def written_runs():
    """Runs ``(address, pages)`` of this process's private writable pages mapped by it alone
    (written since the last fork whose child still lives, or new), at most :data:`MAX_RUNS`
    runs and :data:`MAX_PAGES` pages."""
    runs, total = [], 0
    with open("/proc/self/maps") as maps, open("/proc/self/pagemap", "rb", buffering=0) as pagemap:
        for line in maps:
            fields = line.split()
            if fields[1] != "rw-p" or (len(fields) > 5 and fields[5] in ("[stack]", "[vvar]", "[vsyscall]")):
                continue
            low, high = (int(x, 16) for x in fields[0].split("-"))
            pagemap.seek(low // PAGE * _ENTRY.size)
            entries = pagemap.read((high - low) // PAGE * _ENTRY.size)
            for i, (entry,) in enumerate(_ENTRY.iter_unpack(entries)):
                if entry & _MINE != _MINE:
                    continue
                addr = low + i * PAGE
                if runs and runs[-1][0] + runs[-1][1] * PAGE == addr:
                    runs[-1][1] += 1
                elif len(runs) < MAX_RUNS:
                    runs.append([addr, 1])
                else:
                    return [tuple(r) for r in runs]
                total += 1
                if total >= MAX_PAGES:
                    return [tuple(r) for r in runs]
    return [tuple(r) for r in runs]


def sizes():
    """Pages in each role's plan: ``{"S": pages, "F": pages}`` (the zygote's ``ended``)."""
    return {role.decode(): sum(n for _, n in runs) for role, runs in PLANS.items()}


def take(data):
    """The zygote: keep the plans a learning session sent (``data``: all its messages)."""
    plans, at = {}, 0
    while at + _HEAD.size <= len(data):
        role, count = _HEAD.unpack_from(data, at)
        at += _HEAD.size
        if role not in (SERVER, FORKER) or at + count * _RUN.size > len(data) or count > MAX_RUNS:
            return
        runs = [_RUN.unpack_from(data, at + i * _RUN.size) for i in range(count)]
        at += count * _RUN.size
        if all(a % PAGE == 0 and 0 < n for a, n in runs) and sum(n for _, n in runs) <= MAX_PAGES:
            plans[role] = tuple(runs)
    PLANS.update(plans)
