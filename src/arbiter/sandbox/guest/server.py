"""The guest server: PID 1 of the sandbox, one request and one reply at a time over two pipes.

Ops: ``put``, ``load``, ``stdin``, ``run``, ``fetch``, ``ps``, ``exit`` (docs/sandbox.md, "Ops"); in a
pooled sandbox it runs per session under the zygote (:mod:`.zygote`, "Warm pool").
Started as ``python3 -I -S -B -X utf8 guest/__main__.py IN_FD OUT_FD [--scratch D:D] [--site D:D]``.
"""

import errno
import json
import os
import sys

from . import kernel, python_case, tamper, zygote
from .cases import CasesMixin
from .forked_case import ForkerMixin
from .forker import exit_peeker
from .kernel import memfd, namespace_pids
from .loader import LoaderMixin, fork_blank_forker
from .program import PRELUDE_FAILED, compile_program, new_main
from .protocol import LEN, encode_frame, read_frame_blocking, write_all
from .reaper import DIR_FLAGS, ReaperMixin
from .tamper import tampering


#: (``ast``: a traceback's caret anchors parse the failing line with it, in every failing case.)
WARM_MODULES = (
    "abc array ast bisect builtins cmath collections collections.abc copy datetime decimal "
    "enum fractions functools gc heapq io itertools json math numbers operator queue random "
    "re resource select signal statistics string struct threading time traceback types typing "
    "unicodedata sortedcontainers"
).split()


SCRATCH_DIRS = ("/work", "/tmp", "/dev/shm")
#: A reply whose blobs are this small is read into memory and written at once, not streamed.
ONE_WRITE_BYTES = 1 << 16


def _pread_all(fd, size):
    """The first ``size`` bytes of the file open as ``fd`` (its offset untouched)."""
    data = os.pread(fd, size, 0)
    while len(data) < size:
        more = os.pread(fd, size - len(data), len(data))
        if not more:
            raise OSError("the file is shorter than it was")
        data += more
    return data


_CATCHABLE = ("SIGHUP SIGINT SIGQUIT SIGTERM SIGUSR1 SIGUSR2 SIGALRM SIGPIPE SIGXFSZ SIGXCPU SIGTSTP "
              "SIGTTIN SIGTTOU SIGCHLD").split()


class Server(CasesMixin, ForkerMixin, LoaderMixin, ReaperMixin):
    def __init__(self, in_fd, out_fd, scratch_dirs, hello_id=None):
        self.in_fd = in_fd
        self.out_fd = out_fd
        self.scratch_dirs = scratch_dirs
        self.is_init = os.getpid() == 1
        self.code = None
        self.main_module = None
        self.filename = "main.py"
        self.wrapped = False
        self.kept_files = set()
        self.forker = None  # the Forker that forks each Python case (see make_forker)
        self.blank_forker = None  # forked before the program was known (set at go; see op_load)
        self.pending_load = None  # (source, prelude, filename) not yet compiled here (see loaded)
        self.tampered = ""  # what a program changed on this server (see op_run)
        self.broken = ""  # why runs are refused: a failed run could not be cleaned up after
        self.seq = 0  # runs sent to the forker (see REPORT)
        import stat
        self.scratch_fds = {}  # directory -> (its descriptor, its mode at start-up)
        for d in scratch_dirs:
            try:
                fd = os.open(d, DIR_FLAGS)
            except OSError:
                continue
            self.scratch_fds[d] = (fd, stat.S_IMODE(os.fstat(fd).st_mode))
        self.staged_stdin = None  # a memfd: the next case's stdin, written beforehand
        self.request_id, self.replied = hello_id, False  # the request being answered (see serve)

    # ---- plumbing -------------------------------------------------------------------------
    def reply(self, header, blobs=()):
        """Send the one reply of the current request (tagged with its ``id``)."""
        self._start_reply()
        write_all(self.out_fd, encode_frame(dict(header, id=self.request_id), blobs))

    def _start_reply(self):
        if self.replied:
            raise RuntimeError("a second reply to request %r" % (self.request_id,))
        self.replied = True

    def reply_with_fds(self, header, fds_and_sizes):
        """Reply with blobs streamed from file descriptors (no copy through Python memory);
        an item may also be plain bytes."""
        self._start_reply()
        header = dict(header, id=self.request_id)
        header["blobs"] = [len(item) if isinstance(item, bytes) else item[1] for item in fds_and_sizes]
        raw = json.dumps(header, separators=(",", ":")).encode()
        if sum(header["blobs"]) <= ONE_WRITE_BYTES:  # a small reply: one write, one wake-up
            parts = [LEN.pack(len(raw)), raw]
            for item in fds_and_sizes:
                parts.append(item if isinstance(item, bytes) else _pread_all(*item))
            write_all(self.out_fd, b"".join(parts))
            return
        write_all(self.out_fd, LEN.pack(len(raw)) + raw)
        for item in fds_and_sizes:
            if isinstance(item, bytes):
                write_all(self.out_fd, item)
                continue
            fd, size = item
            offset = 0
            while offset < size:
                sent = os.sendfile(self.out_fd, fd, offset, size - offset)
                if sent <= 0:
                    raise OSError("sendfile sent nothing")
                offset += sent

    def serve(self):
        """Answer requests until ``exit`` or the end of the pipe: exactly one reply each, tagged
        with the request's ``id``. A failure after the reply was sent (cleaning up after a
        run) sends nothing more: the server recovers (:meth:`recover`), and if it cannot, the
        next run is refused."""
        self.reply({"op": "hello", "pid": os.getpid(), "python": sys.version.split()[0],
                    "init": self.is_init})
        while True:
            try:
                header, blobs = read_frame_blocking(self.in_fd)
            except EOFError:
                return
            op = header.get("op")
            self.request_id, self.replied = header.get("id"), False
            try:
                if op == "run":
                    self.op_run(header, blobs)
                elif op == "load":
                    self.op_load(header, blobs)
                elif op == "put":
                    self.op_put(header, blobs)
                elif op == "fetch":
                    self.op_fetch(header)
                elif op == "ps":
                    self.op_ps()
                elif op == "stdin":
                    self.op_stdin(header, blobs)
                elif op == "sync":  # (answered once what the last reply left to do is done)
                    self.reply({"op": "sync"})
                elif op == "exit":  # (tampered, broken: the pool does not reuse the sandbox)
                    self.reply({"op": "bye", "tampered": self.tampered, "broken": self.broken})
                    return
                else:
                    self.reply({"op": "error", "error": "unknown op %r" % (op,)})
            except Exception as exc:  # our own failure: report it, never guess a verdict
                if self.replied:  # (cleaning up after the reply): never a second reply
                    self.recover()
                    continue
                if op == "run":
                    tampered = tampering()  # ... unless a program broke this server
                    if not tampered and isinstance(exc, OSError) and exc.errno == errno.EMFILE:
                        tampered = "open-file limit (out of descriptors mid-run)"  # set, reset
                    self.recover()
                    if tampered:
                        self.tampered = tampered
                        self.reply({"op": "run", "sandbox_tampered": tampered, "parts": []})
                        continue
                import traceback
                self.reply({"op": "error", "error": "%s: %s" % (type(exc).__name__, exc),
                            "traceback": traceback.format_exc()[-4000:]})
            del header, blobs  # a large stdin must not stay alive (and charged) between cases

    # ---- ops ------------------------------------------------------------------------------
    def recover(self):
        """After a run failed in this server (an exception): nothing of it may reach the next
        run. Kill and reap every process (``kill(-1)``: no descriptor needed), drop the forker,
        forget a staged input, wipe the scratch directories. When a step fails, later runs are
        refused (:attr:`broken`)."""
        self.staged_stdin = None
        steps = (lambda: self.kill_all(0), self.reap_all, self.drop_forker, self.drop_blank_forker,
                 self.wipe_scratch)
        for step in steps:
            try:
                step()
            except Exception as exc:
                self.broken = self.broken or "%s: %s" % (type(exc).__name__, exc)
                self.forker = None

    def op_put(self, header, blobs):
        path = header["path"]
        mode = int(header.get("mode", 0o644))
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, mode)
        try:
            write_all(fd, blobs[0])
        finally:
            os.close(fd)
        os.chmod(path, mode)
        self.kept_files.add(os.path.abspath(path))
        self.reply({"op": "put", "ok": True})

    def op_fetch(self, header):
        path = header["path"]
        max_bytes = int(header.get("max_bytes", 64 << 20))
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
        except OSError as exc:
            self.reply({"op": "fetch", "ok": False, "error": "%s: %s" % (type(exc).__name__, exc)})
            return
        try:
            st = os.fstat(fd)
            import stat as _stat
            if not _stat.S_ISREG(st.st_mode):
                self.reply({"op": "fetch", "ok": False, "error": "not a regular file"})
                return
            if st.st_size > max_bytes:
                self.reply({"op": "fetch", "ok": False, "size": st.st_size,
                            "error": "file is %d bytes, more than %d" % (st.st_size, max_bytes)})
                return
            self.reply_with_fds({"op": "fetch", "ok": True, "mode": st.st_mode & 0o7777},
                                [(fd, st.st_size)])
        finally:
            os.close(fd)

    def op_stdin(self, header, blobs):
        """Write the next case's stdin now (a large input): the judge then measures the sandbox's
        memory with the input already in it, so the input is not charged to the program."""
        data = blobs[0] if blobs else b""
        blobs.clear()
        if self.staged_stdin is not None:
            os.close(self.staged_stdin)
            self.staged_stdin = None
        if header.get("mode") in ("python", "call") and self.forker is None and self.loaded():
            self.make_forker()  # (after a native run dropped it) before the judge measures
        self.staged_stdin = memfd("stdin", data)
        del data
        self.reply({"op": "stdin", "ok": True})

    def op_ps(self):
        """The processes in the sandbox other than this server and its forker (or the blank
        forker waiting for a program)."""
        fk = self.forker or self.blank_forker
        self.reply({"op": "ps", "pids": namespace_pids(fk.pid if fk else None) if self.is_init else []})

    def op_load(self, header, blobs):
        """Compile the program once. A source that crashes or hangs the compiler is caught by
        compiling it first in a child under limits: the forker itself (:mod:`.loader`), or,
        when none can be forked, a throwaway child."""
        source = bytes(blobs[0])  # compiled like a file, so a coding line is honoured
        prelude = blobs[1].decode("utf-8", "surrogateescape") if len(blobs) > 1 else ""
        filename = header.get("filename", "main.py")
        limits = header.get("limits", {})
        self.drop_forker()  # it holds the previous program
        self.code = self.main_module = self.pending_load = None
        loaded = self.load_in_forker(source, prelude, filename, limits)
        if loaded is None:
            loaded = self._probe_compile(source, prelude, filename, limits)
        ok, wrapped, stage, error = loaded
        if not ok:
            self.reply({"op": "load", "ok": False, "error": error, "stage": stage})
            return
        if self.forker is None:  # checked by the probe: this server's copy, then a forker
            self._load_here(source, prelude, filename)
            self.reply({"op": "load", "ok": True, "wrapped": self.wrapped, "settling": self.is_init})
            self.make_forker()  # while the judge reads the reply
            return
        self.reply({"op": "load", "ok": True, "wrapped": wrapped})
        # This server's own copy (for cases forked here, a later forker) is made when first
        # needed (:meth:`loaded`): usually never, the forker serving every case.
        self.pending_load = (source, prelude, filename)

    def loaded(self):
        """True when a program is loaded in this server; compiles the one the forker loaded
        first (:attr:`pending_load`), now that it is needed. It compiled in the forker: a
        failure here is ours, never a verdict (later runs are refused: :attr:`broken`)."""
        pending, self.pending_load = self.pending_load, None
        if pending is not None:
            try:
                self._load_here(*pending)
            except BaseException as exc:
                self.code = self.main_module = None
                self.broken = self.broken or "the program did not load again: %s: %s" % (
                    type(exc).__name__, exc)
                raise RuntimeError(self.broken)
        return self.code is not None

    def _probe_compile(self, source, prelude, filename, limits):
        """The compile check in a throwaway child; ``(ok, None, stage, error)``."""
        probe = self.fork_case({"mode": "compile_probe", "limits": limits, "filename": filename},
                               source_for_probe=(source, prelude))
        if probe.get("exit_code") != 0:
            stage = "prelude" if probe.get("exit_code") == PRELUDE_FAILED else "program"
            return False, False, stage, probe.get("stderr_text", "")
        return True, None, None, None

    def _load_here(self, source, prelude, filename):
        """Compile the program and run the prelude in this server (checked in a child first)."""
        self.code, self.wrapped = compile_program(source, filename)
        self.filename = filename
        # The prelude (task data: an import preamble, never the submission) runs once, here,
        # into the __main__ module every case forks with, instead of once per case. Same
        # semantics as running it first in each case: each case gets its own copy of that dict.
        self.main_module = new_main(filename)
        if prelude:
            exec(compile(prelude, "<prelude>", "exec"), self.main_module.__dict__)
        import gc
        gc.collect()
        gc.freeze()

    def op_run(self, header, blobs):
        """Run one case. A program may change this server's own rlimits, nice value, CPU affinity,
        scheduling policy or I/O priority (same uid): after the case that did it (found by
        comparing with the state at start-up), this and every later run is answered
        ``sandbox_tampered`` (the judge's runtime error), never run in a server that later
        cases would inherit it from, nor reported as the sandbox's own failure."""
        if self.tampered:
            self.reply({"op": "run", "sandbox_tampered": self.tampered, "parts": []})
            return
        if self.broken:
            raise RuntimeError("the sandbox could not clean up after a failed run: " + self.broken)
        for path in header.get("keep", ()):  # outputs the judge will fetch (e.g. a binary)
            self.kept_files.add(os.path.abspath(path))
        stdin = blobs[0] if blobs else b""
        call_args = blobs[1] if len(blobs) > 1 else None
        blobs.clear()
        result = self.fork_case(header, stdin=stdin, call_args=call_args)
        tampered = tampering() or tamper.restore_autogroup()
        if tampered:
            self.tampered = result["sandbox_tampered"] = tampered
            self.drop_forker()
        fds = result.pop("_fds")
        # a forker to make again after the reply: the judge must wait for it before it measures
        # the next run (its memory would be charged to that run): "settling"
        if (self.forker is None and not self.tampered and self.is_init
                and header.get("mode") in ("python", "call")
                and (self.code is not None or self.pending_load is not None)):
            result["settling"] = True
        try:
            # before the reply: the next request finds the sandbox clean (a wipe still going on
            # would count in its CPU and memory), and the judge waits for what this run left
            self.wipe_scratch()
            self.reply_with_fds(dict(result, op="run"), fds)
        finally:
            for item in fds:
                if not isinstance(item, bytes):
                    os.close(item[0])
            self.await_zombie()  # (while the judge reads the reply)
            if (self.forker is None and not self.tampered and header.get("mode") in ("python", "call")
                    and self.loaded()):
                self.make_forker()  # while the judge reads the reply

    # ---- running one case ---------------------------------------------------------------------



def main():
    """``guest/__main__.py IN_FD OUT_FD [--scratch DIR:DIR...] [--site DIR:DIR...] [--zygote 1]``:
    warm up, then serve (or, with ``--zygote``, start one server per session: :mod:`.zygote`)."""
    in_fd, out_fd = int(sys.argv[1]), int(sys.argv[2])
    opts = dict(zip(sys.argv[3::2], sys.argv[4::2]))
    scratch = tuple(opts["--scratch"].split(":")) if opts.get("--scratch") else SCRATCH_DIRS
    _warm_up(opts, in_fd, out_fd)
    if opts.get("--zygote"):
        def start_server(in_fd, out_fd):  # (armed: the submission is not known yet)
            tamper.record_baseline(opts.get("--filtered"))
            server = Server(in_fd, out_fd, scratch)

            def serve(go, blank):
                server.request_id, server.blank_forker = go.get("id"), blank
                if not go.get("python"):  # (gone before the judge measures the first run)
                    server.drop_blank_forker()
                server.serve()
            return serve

        zygote.serve(in_fd, out_fd, start_server, prefork=fork_blank_forker)
        return
    tamper.record_baseline(opts.get("--filtered"))
    Server(in_fd, out_fd, scratch).serve()


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
