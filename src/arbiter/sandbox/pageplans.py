"""Page plans learnt by the judge: which pages a session's server and forker write while they
serve a submission, read from outside, once per sandbox, in a session of the judge's own program.

:func:`learn_pages` runs that session and reads the processes' ``/proc/<pid>/pagemap`` from the
host (as root only: the guest's processes are not dumpable) at the moments that tell the pages
they wrote from the pages they had to themselves already; the zygote keeps the plans (op
``plans``) and every later session copies them ahead of its submission
(``guest/pageplan.py``). No submission runs in the learning session, and the plans are read
from outside it, so no submission shapes them. See docs/sandbox.md ("Page plans").
"""

from __future__ import annotations

import os
import struct
import time
from typing import Iterable

from arbiter.sandbox.errors import SandboxError
from arbiter.sandbox.guest.pageplan import FORKER, HEAD, MAX_PAGES, MAX_RUNS, RUN, SERVER
from arbiter.sandbox.limits import Limits
from arbiter.sandbox.sandbox import ARMED_SCRATCH_BYTES, Sandbox
from arbiter.sandbox.session import KEPT_PRELUDE, child_pids

PAGE = os.sysconf("SC_PAGE_SIZE")
#: Seconds the learning session waits at most for its blank forker to be forked and warm (as
#: it is before a submission's ``go``), looking every :data:`SETTLE_STEP` seconds: warm is
#: asleep with no CPU used since the last look.
LEARN_SETTLE = 2.0
SETTLE_STEP = 0.005
#: The judge's own program the plans are learnt from, run on three cases (the last one in the
#: forker itself, as a submission's last case is).
LEARN_SOURCE = "import sys\nprint(int(sys.stdin.readline()) + 1)\n"
_ENTRY = struct.Struct("=Q")
_MINE = (1 << 63) | (1 << 56)  # present, mapped by this process only


def own_pages(pid: int) -> frozenset[int]:
    """Addresses of the private writable pages process ``pid`` (host pid) has present and to
    itself (written since the last fork whose child still lives, or new). OSError when it is
    gone or not readable (not root)."""
    pages = []
    with open(f"/proc/{pid}/maps") as maps, open(f"/proc/{pid}/pagemap", "rb", buffering=0) as pagemap:
        for line in maps:
            fields = line.split()
            if fields[1] != "rw-p" or (len(fields) > 5 and fields[5] in ("[stack]", "[vvar]", "[vsyscall]")):
                continue
            low, high = (int(x, 16) for x in fields[0].split("-"))
            pagemap.seek(low // PAGE * _ENTRY.size)
            entries = pagemap.read((high - low) // PAGE * _ENTRY.size)
            pages += [low + i * PAGE for i, (entry,) in enumerate(_ENTRY.iter_unpack(entries))
                      if entry & _MINE == _MINE]
    return frozenset(pages)


def encode(role: bytes, pages: Iterable[int]) -> bytes:
    """``role``'s plan on the wire: runs of contiguous pages, at most :data:`MAX_RUNS` runs and
    :data:`MAX_PAGES` pages (the lowest addresses kept)."""
    runs: list[list[int]] = []
    for addr in sorted(pages)[:MAX_PAGES]:
        if runs and runs[-1][0] + runs[-1][1] * PAGE == addr:
            runs[-1][1] += 1
        elif len(runs) < MAX_RUNS:
            runs.append([addr, 1])
    return HEAD.pack(role, len(runs)) + b"".join(RUN.pack(a, n) for a, n in runs)


def learn_pages(sb: Sandbox) -> None:
    """Once per sandbox (as root; a no-op otherwise), between two submissions: a session of
    :data:`LEARN_SOURCE` whose server and forker are read at these moments, then the plans
    given to the zygote:

    - the server just armed (``private``: what it has to itself before it forks), then once its
      blank forker is forked and warm (``go``, :func:`_warm_forker`: for each, what it has to
      itself already);
    - after two cases forked as usual, before the last (``last``: the forker still lives);
    - after the last case, run in the forker, which then exits, once the server has answered a
      ``ps`` (``end``: its work after the case done).

    The server's plan is what it has at ``end`` and not at ``go``, less what it had to itself
    before it forked and still shared with its forker at ``last`` (those pages are its own again
    when the forker exits, without a write); the forker's, what it has at ``last`` and not at
    ``go``. Raises SandboxError (the sandbox must then be closed)."""
    session = sb.session
    if session is None or session.plans_learnt or os.geteuid() != 0:
        return
    session.plans_learnt = True
    limits, prefork_next = sb.limits, session.prefork_next
    try:
        plans = _learning_session(sb)
    except (OSError, ValueError):  # (a process gone or not there, a file not readable: no plans)
        plans = b""
        if not sb.end_session():
            raise SandboxError("the sandbox's learning session did not end cleanly") from None
    finally:
        sb.limits = limits
        session.prefork_next = prefork_next  # (the last submission's, as without the learning)
    if plans:
        reply, _ = sb.channel.request({"op": "plans"}, [plans], timeout=10)
        session.plans = dict(reply.get("pages") or {})


def _warm_forker(server: int) -> int:
    """The host pid of ``server``'s blank forker once it is warm (or :data:`LEARN_SETTLE` has
    passed). ValueError when it has no one child then."""
    deadline = time.monotonic() + LEARN_SETTLE
    last = None
    while time.monotonic() < deadline:
        time.sleep(SETTLE_STEP)
        kids = child_pids(server)
        if len(kids) != 1:
            continue
        with open(f"/proc/{kids[0]}/stat") as stat, open(f"/proc/{kids[0]}/schedstat") as sched:
            now = (stat.read().rsplit(")", 1)[1].split()[0], sched.read().split()[0])  # state, CPU ns
        if now == last and now[0] == "S":
            return kids[0]
        last = now
    (forker,) = child_pids(server)
    return forker


def _learning_session(sb: Sandbox) -> bytes:
    session = sb.session
    session.arm(ARMED_SCRATCH_BYTES, prefork=False)
    server = session.armed_pid
    private = own_pages(server)
    sb.channel.send({"op": "prefork", "id": -2})
    forker = _warm_forker(server)
    at_go = own_pages(server), own_pages(forker)
    sb.new_session({"main.py": LEARN_SOURCE.encode()}, Limits(), python=True)
    if sb.load_python(LEARN_SOURCE, KEPT_PRELUDE[0]) is not None:
        raise SandboxError("the learning program did not load")
    for case in (b"1\n", b"2\n"):
        sb.run_python(case)
    at_last = own_pages(server), own_pages(forker)
    sb.run_python(b"3\n", last=True)
    sb.stray_processes()  # (answered once the server is done after the last case: reaped, wiped)
    at_end = own_pages(server)
    if not sb.end_session():
        raise SandboxError("the sandbox's learning session did not end cleanly")
    server_plan = at_end - at_go[0] - (private - at_last[0])
    return encode(SERVER, server_plan) + encode(FORKER, at_last[1] - at_go[1])
