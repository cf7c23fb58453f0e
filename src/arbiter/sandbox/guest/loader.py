"""Loading the Python program in the forker: the compile check and the warm forker are one fork.

Exports: :func:`load_in_forker`, :func:`hand_to_blank` (over a :class:`~.state.ServerState`),
:func:`fork_blank_forker`.
The forker is forked first; it compiles the program (and runs the prelude) under the load's
limits, says so on its report pipe, then forks the cases. A source that crashes or hangs the
compiler takes only that child with it. See docs/sandbox.md ("load").
"""

import os

from . import kernel, pageplan
from .cases import Capture, case_clock, drain
from .child import rlimit_list
from .forker import Forker, drop_blank_forker, forker_main, recv_case
from .kernel import close_all_but, fork, set_own_oom_adj
from .program import compile_program, failed_load_stage, load_checked, warm_heavy_imports, warm_up_prelude
from .protocol import encode_frame, read_exact
from .python_case import fresh_stdio
from .reaper import kill_all, reap_all
from .reports import REPORT
from .state import LoadedProgram

#: A "loaded" record's flag: the forker imported library modules for the program (numpy...), its
#: own memory, which the session's last case, run in the forker itself, could free and take.
LOADED_HEAVY = 2
#: The largest source (and prelude) whose forker may run the last case itself: its compiled
#: constants are the forker's own memory too (a 10 MiB constant freed by the last case gave it
#: that much room; red team, December 2026).
IN_PLACE_MAX_SOURCE = 64 * 1024


def load_in_forker(state, source, prelude, filename, limits, handed=None):
    """Have the forker load the program: the blank forker forked before the program was
    known (:func:`fork_blank_forker`), else a newly forked one; ``handed``: what
    :func:`hand_to_blank` returned for this load (it was handed over early). Returns ``(ok,
    wrapped, stage, error)`` (``state.forker`` set when ok), or None when no forker could be
    had (not PID 1, the fork failed): the caller then checks the compile in a throwaway child."""
    if not state.is_init:
        return None
    state.in_place_ok = len(source) + len(prelude) <= IN_PLACE_MAX_SOURCE
    if handed is None:
        handed = (hand_to_blank(state, source, prelude, filename, limits)
                  or _fork_loader(source, prelude, filename, limits))
        if handed is None:
            return None
    fk, err_r = handed
    try:
        return _await_loaded(state, fk, err_r, limits)
    finally:
        os.close(err_r)


def hand_to_blank(state, source, prelude, filename, limits):
    """Send the program to the blank forker, which starts loading it: ``(forker, read end of
    its stderr)`` for :func:`load_in_forker`, or None when there is no blank forker."""
    err_r, err_w = os.pipe()
    fk = _send_to_blank(state, source, prelude, filename, limits, err_w)
    os.close(err_w)
    if fk is None:
        os.close(err_r)
        return None
    return fk, err_r


def _fork_loader(source, prelude, filename, limits):
    """Fork a forker that loads the program: ``(forker, read end of its stderr)``, or None
    when the fork failed."""
    try:
        fk = Forker()
    except OSError:
        return None
    err_r, err_w = os.pipe()
    try:
        pid = fork()
    except OSError:
        fk.close()
        os.close(err_r)
        os.close(err_w)
        return None
    if pid == 0:  # ------------------------------------------------------ the forker
        status = 70
        try:
            os.close(err_r)
            status = _load_then_serve(LoadedProgram(), fk, source, prelude, filename, limits, err_w)
        finally:
            kernel.EXIT(status)
    fk.started(pid)
    os.close(err_w)
    return fk, err_r


def _send_to_blank(state, source, prelude, filename, limits, err_w):
    """Hand the program to the blank forker (its stderr: ``err_w``); the forker, or None
    when there is none (or it is gone)."""
    fk, state.blank_forker = state.blank_forker, None
    if fk is None:
        return None
    frame = encode_frame({"op": "load", "filename": filename, "limits": limits},
                         [source, prelude.encode("utf-8", "surrogateescape")])
    try:
        fk.send(frame, [err_w])
        return fk
    except OSError:
        state.blank_forker = fk
        drop_blank_forker(state)
        return None


def _await_loaded(state, fk, err_r, limits):
    """Wait for the forker's "loaded" record, or its exit, or the load's wall clock."""
    import select
    import time

    os.set_blocking(err_r, False)
    err_cap = int(limits.get("stderr_bytes", 64 << 10))
    err = Capture(err_cap, head=err_cap // 2)
    clock = case_clock(state, time.monotonic(), limits, pid=fk.pid)
    poller = select.poll()
    for fd in (fk.report_r, fk.pidfd, err_r):
        poller.register(fd, select.POLLIN)
    flags = exited = None
    while flags is None and not exited:
        left = clock.deadline() - time.monotonic()
        events = poller.poll(left * 1000.0) if left > 0 else []
        if not events and clock.expired(time.monotonic()):
            break
        for fd, _ in events:
            if fd == err_r and not drain(fd, err):
                poller.unregister(fd)
            elif fd == fk.report_r:
                flags = _read_loaded(fd)
                if flags is None:
                    poller.unregister(fd)
            elif fd == fk.pidfd:
                exited = True
    if flags is not None:
        state.forker, state.forker_spent = fk, False
        state.in_place_ok = state.in_place_ok and not flags & LOADED_HEAVY
        return True, bool(flags & 1), None, None
    return _load_failed(state, fk, err_r, err)


def _load_failed(state, fk, err_r, err):
    """The forker exited (or ran out of time) before it loaded the program: kill and reap it,
    and say why, as the compiler said it (stage ``"sandbox"`` when it was not the compiler)."""
    status = fk.stop()
    kill_all(state, 0)
    reap_all(state)
    drain(err_r, err)
    code = os.WEXITSTATUS(status) if status is not None and os.WIFEXITED(status) else None
    stage = failed_load_stage(code, os.WTERMSIG(status) if status is not None and os.WIFSIGNALED(status) else None)
    return False, False, stage, err.value()[:8192].decode("utf-8", "replace")


def _read_loaded(fd):
    """The forker's "loaded" record: its flags (bit 0 ``wrapped``, :data:`LOADED_HEAVY`), or None
    (end of file, another record)."""
    try:
        kind, _, flags, *_ = REPORT.unpack(read_exact(fd, REPORT.size))
    except (EOFError, OSError, ValueError):
        return None
    return flags if kind == b"L" else None


def _load_then_serve(program, fk, source, prelude, filename, limits, err_w):
    """In the forker: load the program under soft limits (nothing untrusted has run: compiling
    runs no program code), lift them, report "loaded", then fork the cases."""
    import resource

    os.dup2(err_w, 2)
    os.close(err_w)
    set_own_oom_adj(b"1000")
    wanted = rlimit_list(limits, 2)
    saved = [(res, resource.getrlimit(res)) for res, _ in wanted]
    for res, (soft, _) in wanted:
        hard = resource.getrlimit(res)[1]
        resource.setrlimit(res, (soft if hard == resource.RLIM_INFINITY else min(soft, hard), hard))
    status = _load(program, source, prelude, filename)
    for res, value in saved:
        resource.setrlimit(res, value)
    if status:
        return status
    flags = int(program.wrapped) | (LOADED_HEAVY if program.heavy else 0)
    os.write(fk.report_w, REPORT.pack(b"L", os.getpid(), flags, 0.0, 0.0, 0, 0, 0))
    return forker_main(program, fk)


def _load(program, source, prelude, filename):
    """Compile the program and run the prelude into ``program`` (this process's); the
    compiler's or the prelude's traceback on stderr and a non-zero status when that fails."""
    import gc

    fresh_stdio()
    status, code, wrapped, main = load_checked(source, prelude, filename)
    if status:
        return status
    program.code, program.wrapped, program.filename, program.main_module = code, wrapped, filename, main
    program.heavy = warm_heavy_imports(code, main) > 0
    gc.collect()
    gc.freeze()
    return 0


def fork_blank_forker(drop_capabilities):
    """In a session server armed for a submission not known yet: fork the forker now, off the
    submission's path; it drops its capabilities (``drop_capabilities()``) before anything
    else and waits for the program (:func:`load_in_forker`). The server's
    :class:`~.forker.Forker`, or None when the fork failed."""
    try:
        fk = Forker()
    except OSError:
        return None
    try:
        pid = fork()
    except OSError:
        fk.close()
        return None
    if pid == 0:  # ------------------------------------------------------------ the forker
        status = 70
        try:
            drop_capabilities()
            status = _wait_for_program(fk)
        finally:
            kernel.EXIT(status)
    fk.started(pid)
    return fk


#: What the blank forker compiles while it waits (never run): the pages the compiler writes
#: become this process's own now, not copies made while the submission waits.
_WARM_UP_SOURCE = """
import sys
from collections import defaultdict


def solve(data):
    n, *rest = map(int, data.split())
    seen = defaultdict(int)
    for i, x in enumerate(rest[:n]):
        seen[x % 7] += i if x > 0 else -i
    return sorted(seen.items(), key=lambda kv: (-kv[1], kv[0]))


class Solution:
    def run(self, s: str) -> list:
        return [c for c in s if c.isalpha()] or ["%d" % len(s)]


print(*solve(sys.stdin.read()), sep="\\n")
"""


#: What it runs while it waits, into a namespace it then drops: the imports preludes make
#: (their modules are loaded already; the names looked up write to the same pages).
_WARM_UP_IMPORTS = """
from bisect import bisect_left, insort
from collections import Counter, OrderedDict, defaultdict, deque
from functools import lru_cache, reduce
from heapq import heappop, heappush
from itertools import accumulate, combinations, permutations, product
from math import ceil, floor, gcd, inf, sqrt
from typing import Dict, List, Optional, Set, Tuple
"""


def _warm_up_compiler():
    import gc
    import linecache

    compile_program(_WARM_UP_SOURCE.encode(), "<warm-up>")  # (the source's decoding too)
    linecache.cache.pop("<warm-up>", None)
    exec(compile(_WARM_UP_IMPORTS, "<warm-up>", "exec", dont_inherit=True), {"__name__": "<warm-up>"})
    warm_up_prelude()  # (the imports of the prelude the zygote keeps compiled)
    gc.collect()


def _wait_for_program(fk):
    """The blank forker: wait for the ``load`` frame (source, prelude; its stderr's write end
    attached), then load it and fork the cases as a forker forked at load does."""
    import _socket
    import fcntl

    close_all_but(fk.forker_fds())
    os.chdir("/work")  # (the session server's cwd from its start on)
    _warm_up_compiler()
    pageplan.populate(pageplan.FORKER)
    sock = _socket.socket(fileno=fcntl.fcntl(fk.go_r, fcntl.F_DUPFD_CLOEXEC, 10))  # (0-3: files)
    try:
        header, blobs, files = recv_case(sock)
    except (EOFError, OSError, ValueError):
        return 0
    finally:
        sock.close()
    if header.get("op") != "load" or files != 1 or len(blobs) != 2:
        return 0
    source, prelude = bytes(blobs[0]), blobs[1].decode("utf-8", "surrogateescape")
    del blobs
    return _load_then_serve(LoadedProgram(), fk, source, prelude, header.get("filename", "main.py"),
                            header.get("limits", {}), 0)  # (its stderr came on fd 0)
