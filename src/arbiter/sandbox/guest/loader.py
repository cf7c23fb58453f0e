"""Loading the Python program in the forker: the compile check and the warm forker are one fork.

The forker is forked first; it compiles the program (and runs the prelude) under the load's
limits, says so on its report pipe, then forks the cases. A source that crashes or hangs the
compiler takes only that child with it. See docs/sandbox.md ("load").
"""

import os
import signal

from . import kernel
from .cases import Capture, drain
from .child import rlimit_list
from .forker import REPORT, Forker, forker_main
from .kernel import fork, set_own_oom_adj
from .program import PRELUDE_FAILED, load_checked, warm_heavy_imports
from .protocol import read_exact
from .python_case import fresh_stdio


class LoaderMixin:
    """:meth:`load_in_forker`, a mixin of :class:`~.server.Server`."""

    def load_in_forker(self, source, prelude, filename, limits):
        """Fork the forker and have it load the program. Returns ``(ok, wrapped, stage, error)``
        (``self.forker`` set when ok), or None when no forker could be forked (not PID 1, the
        fork failed): the caller then checks the compile in a throwaway child instead."""
        if not self.is_init:
            return None
        fk = Forker()
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
                status = _load_then_serve(self, fk, source, prelude, filename, limits, err_w)
            finally:
                kernel.EXIT(status)
        os.close(err_w)
        fk.started(pid)
        try:
            return self._await_loaded(fk, err_r, limits)
        finally:
            os.close(err_r)

    def _await_loaded(self, fk, err_r, limits):
        """Wait for the forker's "loaded" record, or its exit, or the load's wall clock."""
        import select
        import time

        os.set_blocking(err_r, False)
        err_cap = int(limits.get("stderr_bytes", 64 << 10))
        err = Capture(err_cap, head=err_cap // 2)
        clock = self.case_clock(time.monotonic(), limits, pid=fk.pid)
        poller = select.poll()
        for fd in (fk.report_r, fk.pidfd, err_r):
            poller.register(fd, select.POLLIN)
        wrapped = exited = None
        while wrapped is None and not exited:
            left = clock.deadline() - time.monotonic()
            events = poller.poll(left * 1000.0) if left > 0 else []
            if not events and clock.expired(time.monotonic()):
                break
            for fd, _ in events:
                if fd == err_r and not drain(fd, err):
                    poller.unregister(fd)
                elif fd == fk.report_r:
                    wrapped = _read_loaded(fd)
                    if wrapped is None:
                        poller.unregister(fd)
                elif fd == fk.pidfd:
                    exited = True
        if wrapped is not None:
            self.forker = fk
            return True, wrapped, None, None
        return self._load_failed(fk, err_r, err)

    def _load_failed(self, fk, err_r, err):
        """The forker exited (or ran out of time) before it loaded the program: kill and reap it,
        and say why, as the compiler said it."""
        try:
            os.kill(fk.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        try:
            _, status = os.waitpid(fk.pid, 0)
        except ChildProcessError:
            status = None
        fk.close()
        self.kill_all(0)
        self.reap_all()
        drain(err_r, err)
        code = os.WEXITSTATUS(status) if status is not None and os.WIFEXITED(status) else None
        stage = "prelude" if code == PRELUDE_FAILED else "program"
        return False, False, stage, err.value()[:8192].decode("utf-8", "replace")


def _read_loaded(fd):
    """The forker's "loaded" record: ``wrapped`` (bool), or None (end of file, another record)."""
    try:
        kind, _, wrapped, *_ = REPORT.unpack(read_exact(fd, REPORT.size))
    except (EOFError, OSError, ValueError):
        return None
    return bool(wrapped) if kind == b"L" else None


def _load_then_serve(server, fk, source, prelude, filename, limits, err_w):
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
    status = _load(server, source, prelude, filename)
    for res, value in saved:
        resource.setrlimit(res, value)
    if status:
        return status
    os.write(fk.report_w, REPORT.pack(b"L", os.getpid(), int(server.wrapped), 0.0, 0.0, 0, 0, 0))
    return forker_main(server, fk)


def _load(server, source, prelude, filename):
    """Compile the program and run the prelude into this process's copy of ``server``; the
    compiler's or the prelude's traceback on stderr and a non-zero status when that fails."""
    import gc

    fresh_stdio()
    status, code, wrapped, main = load_checked(source, prelude, filename)
    if status:
        return status
    server.code, server.wrapped, server.filename, server.main_module = code, wrapped, filename, main
    warm_heavy_imports(code)
    gc.collect()
    gc.freeze()
    return 0
