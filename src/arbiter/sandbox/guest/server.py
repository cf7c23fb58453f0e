"""The guest server: PID 1 of the sandbox, one request and one reply at a time over two pipes.

Exports: :func:`serve` (the loop over a :class:`~.state.ServerState`, dispatching through
:data:`.ops.OPS`), :func:`main` (start-up), :data:`WARM_MODULES`. In a pooled sandbox it runs per
session under the zygote (:mod:`.zygote`, docs/sandbox.md "Warm pool"). Started as
``python3 -I -S -B -X utf8 guest/__main__.py IN_FD OUT_FD [--scratch D:D] [--site D:D]``.
"""

import os
import sys

from . import fdfloor, kernel, python_case, tamper, zygote
from .forker import drop_blank_forker
from .loader import fork_blank_forker
from .ops import OPS, recover, run_failed, take_early_load
from .protocol import read_frame_blocking
from .reply import reply
from .reports import exit_peeker
from .state import new_state


#: (``ast``: a traceback's caret anchors parse the failing line with it, in every failing case.)
WARM_MODULES = (
    "abc array ast bisect builtins cmath collections collections.abc copy datetime decimal "
    "enum fractions functools gc heapq io itertools json math numbers operator queue random "
    "re resource select signal statistics string struct threading time traceback types typing "
    "unicodedata sortedcontainers"
).split()


SCRATCH_DIRS = ("/work", "/tmp", "/dev/shm")

_CATCHABLE = ("SIGHUP SIGINT SIGQUIT SIGTERM SIGUSR1 SIGUSR2 SIGALRM SIGPIPE SIGXFSZ SIGXCPU SIGTSTP "
              "SIGTTIN SIGTTOU SIGCHLD").split()


def serve(state):
    """Answer requests until ``exit`` or the end of the pipe: exactly one reply each, tagged
    with the request's ``id`` (:data:`.ops.OPS`). A failure after the reply was sent
    (cleaning up after a run) sends nothing more: the server recovers (:func:`.ops.recover`),
    and if it cannot, the next run is refused."""
    reply(state, {"op": "hello", "pid": os.getpid(), "python": sys.version.split()[0],
                  "init": state.is_init})
    while True:
        early, state.early_frame = state.early_frame, None
        try:
            header, blobs = early if early is not None else read_frame_blocking(state.in_fd)
        except EOFError:
            return
        op = header.get("op")
        state.request_id, state.replied = header.get("id"), False
        try:
            if op == "exit":  # (tampered, broken: the pool does not reuse the sandbox)
                reply(state, {"op": "bye", "tampered": state.tampered, "broken": state.broken,
                              "freed_in_flight": state.freed_in_flight})
                return
            handler = OPS.get(op)
            if handler is None:
                reply(state, {"op": "error", "error": "unknown op %r" % (op,)})
            else:
                handler(state, header, blobs)
        except Exception as exc:  # our own failure: report it, never guess a verdict
            if state.replied:  # (cleaning up after the reply): never a second reply
                recover(state)
                continue
            if op == "run" and run_failed(state, exc):
                continue
            import traceback
            reply(state, {"op": "error", "error": "%s: %s" % (type(exc).__name__, exc),
                          "traceback": traceback.format_exc()[-4000:]})
        del header, blobs  # a large stdin must not stay alive (and charged) between cases


def main():
    """``guest/__main__.py IN_FD OUT_FD [--scratch DIR:DIR...] [--site DIR:DIR...] [--zygote 1]``:
    warm up, then serve (or, with ``--zygote``, start one server per session: :mod:`.zygote`)."""
    in_fd, out_fd = int(sys.argv[1]), int(sys.argv[2])
    opts = dict(zip(sys.argv[3::2], sys.argv[4::2]))
    scratch = tuple(opts["--scratch"].split(":")) if opts.get("--scratch") else SCRATCH_DIRS
    fdfloor.set_floor(opts.get("--filtered") or 0)  # (the filter's descriptor floor)
    _warm_up(opts, in_fd, out_fd)
    if opts.get("--zygote"):
        def start_server(in_fd, out_fd):  # (armed: the submission is not known yet)
            tamper.record_baseline(opts.get("--filtered"))
            state = new_state(in_fd, out_fd, scratch)

            def on_go(go, blank):  # (before the session's start-up: see take_early_load)
                state.request_id, state.blank_forker = go.get("id"), blank
                if not go.get("python"):  # (gone before the judge measures the first run)
                    drop_blank_forker(state)
                else:
                    take_early_load(state)
            return on_go, lambda: serve(state)

        zygote.serve(in_fd, out_fd, start_server, prefork=fork_blank_forker)
        return
    tamper.record_baseline(opts.get("--filtered"))
    serve(new_state(in_fd, out_fd, scratch))


def _warm_up(opts, in_fd, out_fd):
    """Everything a server does once before its first request: signals, libc, warm imports."""
    for d in (opts.get("--site") or "").split(":"):
        if d and os.path.isdir(d) and d not in sys.path:
            sys.path.append(d)  # third-party packages untrusted code may import (numpy, ...)
    import signal
    for name in _CATCHABLE:
        signum = getattr(signal, name, None)
        if signum is not None and name != "SIGCHLD":
            try:
                signal.signal(signum, signal.SIG_IGN if name in ("SIGPIPE", "SIGXFSZ") else signal.SIG_DFL)
            except (OSError, ValueError):
                pass
    kernel.load_libc()
    import importlib
    for name in WARM_MODULES:
        try:
            importlib.import_module(name)
        except ImportError:
            pass
    # `python3 main.py` has exit(), quit(), help() and copyright from the site module; -S skips
    # site, so install just those builtins (not its sys.path changes).
    try:
        import site
        site.setquit()
        site.setcopyright()
        site.sethelper()
    except Exception:
        pass
    python_case.init()
    exit_peeker()  # (every forker uses it: made once, here)
    for fd in (in_fd, out_fd):
        os.set_inheritable(fd, False)
    import gc
    gc.collect()
    gc.freeze()
