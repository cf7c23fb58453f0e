"""The fork-server that runs inside the sandbox (standard library only).

It is started once per submission as the sandbox's PID 1 (``bwrap --as-pid-1``) and then serves
requests from the judge over two pipes, one frame each way per request:

- ``put``: write a file into the scratch directory (kept across cases);
- ``load``: compile a Python program (and an optional prelude) once; later runs fork from here;
- ``run``: run one test case in a freshly forked child with its own limits: either the loaded
  Python program (``mode: python``), a call of one of its functions (``mode: call``), both
  forked by the *forker* (a warm child of this server that only forks cases and reports their
  exit status: :meth:`Server.make_forker`), or ``execve`` of a native binary (``mode: exec``);
- ``fetch``: read a file produced in the sandbox (e.g. a compiled binary), size-capped;
- ``exit``.

Why PID 1: the kernel drops signals sent to a namespace's init from inside the namespace unless it
installed a handler, so ``kill(-1)`` or ``kill(getppid())`` from a program cannot take the server
down; and after each case the server SIGKILLs every process the case left behind (daemons,
``setsid`` children, grandchildren holding pipes): ``kill(-1)``, or each pid in ``/proc`` but
the forker's. The server is made
non-dumpable so a program (same uid) cannot ptrace it or open its ``/proc`` files.

Each case gets stdin and stdout as real file descriptors backed by memfds (so
``sys.stdin.buffer`` works and a read after EOF returns at once) and stderr as a pipe, all three
new for every case (a lock or owner left on a shared file would reach the next case);
``RLIMIT_FSIZE`` caps the output.
For function calls the harness writes one JSON document to fd 3 after the call returns; the
expected value never enters the sandbox, it is compared by the judge (DESIGN.md standing rules).
A returned value whose JSON is larger than the output cap ends the child by ``SIGXFSZ`` (output
limit, as for a native program writing past ``RLIMIT_FSIZE``), after a short note on fd 3.

Frame format (both directions): 4-byte big-endian length, a UTF-8 JSON header, then the raw bytes
of each blob whose length is listed in ``header["blobs"]``. The judge never unpickles anything that
comes out of the sandbox.
"""

import errno
import os
import signal
import sys

# --------------------------------------------------------------------------------------------
# framing (imported by the judge side as well)
# --------------------------------------------------------------------------------------------
import json
import struct

import _socket  # (built in) the forker's request socket: each case's files travel with it

_LEN = struct.Struct(">I")
MAX_HEADER = 16 * 1024 * 1024


def encode_frame(header, blobs=()):
    """Return the bytes of one frame: ``header`` (a JSON-able dict) and its ``blobs`` (bytes)."""
    header = dict(header)
    header["blobs"] = [len(b) for b in blobs]
    raw = json.dumps(header, separators=(",", ":")).encode()
    return b"".join([_LEN.pack(len(raw)), raw, *blobs])


def _read_exact(fd, n):
    """Read exactly ``n`` bytes into one buffer (no second copy: a large stdin is memory)."""
    buf = bytearray(n)
    view = memoryview(buf)
    got = 0
    while got < n:
        k = os.readv(fd, [view[got:got + (1 << 20)]])
        if not k:
            raise EOFError("control pipe closed")
        got += k
    view.release()
    return buf


def read_frame_blocking(fd):
    """Read one frame from ``fd`` (blocking). Returns ``(header, [blob, ...])``."""
    (n,) = _LEN.unpack(_read_exact(fd, 4))
    if n > MAX_HEADER:
        raise ValueError("frame header too large")
    header = json.loads(_read_exact(fd, n))
    blobs = [_read_exact(fd, int(size)) for size in header.get("blobs", [])]
    return header, blobs


def _write_all(fd, data):
    view = memoryview(data)
    while view:
        n = os.write(fd, view)
        view = view[n:]


def _memfd(name, data):
    """A new memfd holding ``data``, at offset 0."""
    fd = os.memfd_create(name, os.MFD_CLOEXEC)
    _write_all(fd, data)
    os.lseek(fd, 0, os.SEEK_SET)
    return fd


# --------------------------------------------------------------------------------------------
# the server
# --------------------------------------------------------------------------------------------

# Imported once so that every forked case finds them in sys.modules (a warm interpreter).
WARM_MODULES = (
    "abc array bisect builtins cmath collections collections.abc copy dataclasses datetime decimal "
    "enum fractions functools gc heapq inspect io itertools json math numbers operator queue random "
    "re resource select signal statistics string struct threading time traceback types typing "
    "unicodedata sortedcontainers"
).split()

SCRATCH_DIRS = ("/work", "/tmp", "/dev/shm")
DEFAULT_ENV = {"PATH": "/usr/bin:/bin", "HOME": "/work", "LANG": "C.UTF-8", "TMPDIR": "/tmp"}
_LIBC = None
_RAW_FORK = None  # libc's fork(), called with the GIL held (see _fork)
# Captured before any program runs: a program may monkeypatch os, json or builtins in its own
# process, and the harness code that runs after it must not be affected.
_DUMPS = json.dumps
_LOADS = json.loads
_EXIT = os._exit
_WRITE = os.write
_LSEEK = os.lseek
_FTRUNCATE = os.ftruncate
_KILL = os.kill
_GETPID = os.getpid
_SIGNAL = signal.signal
_SIGMASK = signal.pthread_sigmask
_SIGXFSZ, _SIG_DFL, _SIG_UNBLOCK = signal.SIGXFSZ, signal.SIG_DFL, signal.SIG_UNBLOCK
_EFBIG = errno.EFBIG
_ATEXIT = _THREADING = None  # the real atexit and threading modules (set in main)
RESULT_FD = 3
_CATCHABLE = ("SIGHUP SIGINT SIGQUIT SIGTERM SIGUSR1 SIGUSR2 SIGALRM SIGPIPE SIGXFSZ SIGXCPU SIGTSTP "
              "SIGTTIN SIGTTOU SIGCHLD").split()


class Server:
    def __init__(self, in_fd, out_fd, scratch_dirs):
        self.in_fd = in_fd
        self.out_fd = out_fd
        self.scratch_dirs = scratch_dirs
        self.is_init = os.getpid() == 1
        self.code = None
        self.main_module = None
        self.filename = "main.py"
        self.wrapped = False
        self.kept_files = set()
        self.forker = None  # the _Forker that forks each Python case (see make_forker)
        self.tampered = ""  # what a program changed on this server (see op_run)
        self.broken = ""  # why runs are refused: a failed run could not be cleaned up after
        self.seq = 0  # runs sent to the forker (see _REPORT)
        import stat
        self.scratch_fds = {}  # directory -> (its descriptor, its mode at start-up)
        for d in scratch_dirs:
            try:
                fd = os.open(d, _DIR_FLAGS)
            except OSError:
                continue
            self.scratch_fds[d] = (fd, stat.S_IMODE(os.fstat(fd).st_mode))
        self.staged_stdin = None  # a memfd: the next case's stdin, written beforehand
        self.request_id, self.replied = None, False  # the request being answered (see serve)

    # ---- plumbing -------------------------------------------------------------------------
    def reply(self, header, blobs=()):
        """Send the one reply of the current request (tagged with its ``id``)."""
        self._start_reply()
        _write_all(self.out_fd, encode_frame(dict(header, id=self.request_id), blobs))

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
        _write_all(self.out_fd, _LEN.pack(len(raw)) + raw)
        for item in fds_and_sizes:
            if isinstance(item, bytes):
                _write_all(self.out_fd, item)
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
                elif op == "exit":
                    self.reply({"op": "bye"})
                    return
                else:
                    self.reply({"op": "error", "error": "unknown op %r" % (op,)})
            except Exception as exc:  # our own failure: report it, never guess a verdict
                if self.replied:  # (cleaning up after the reply): never a second reply
                    self.recover()
                    continue
                if op == "run":
                    tampered = _tampering()  # ... unless a program broke this server
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
        steps = (lambda: self.kill_all(0), self.reap_all, self.drop_forker, self.wipe_scratch)
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
            _write_all(fd, blobs[0])
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
        if header.get("mode") in ("python", "call") and self.forker is None:
            self.make_forker()  # (after a native run dropped it) before the judge measures
        self.staged_stdin = _memfd("stdin", data)
        del data
        self.reply({"op": "stdin", "ok": True})

    def op_ps(self):
        """The processes in the sandbox other than this server and its forker."""
        keep = self.forker.pid if self.forker else None
        self.reply({"op": "ps", "pids": _namespace_pids(keep) if self.is_init else []})

    def op_load(self, header, blobs):
        """Compile the program once. A source that crashes or hangs the compiler is caught by
        compiling it first in a throwaway child under limits."""
        source = bytes(blobs[0])  # compiled like a file, so a coding line is honoured
        prelude = blobs[1].decode("utf-8", "surrogateescape") if len(blobs) > 1 else ""
        filename = header.get("filename", "main.py")
        self.drop_forker()  # it holds the previous program
        probe = self.fork_case({"mode": "compile_probe", "limits": header.get("limits", {}),
                                "filename": filename},
                               source_for_probe=(source, prelude))
        if probe.get("exit_code") != 0:
            self.reply({"op": "load", "ok": False, "error": probe.get("stderr_text", ""),
                        "stage": "prelude" if probe.get("exit_code") == 3 else "program",
                        "probe": {k: v for k, v in probe.items() if k != "stderr_text"}})
            return
        self.code, self.wrapped = compile_program(source, filename)
        self.filename = filename
        _warm_heavy_imports(self.code)
        # The prelude (task data: an import preamble, never the submission) runs once, here,
        # into the __main__ module every case forks with, instead of once per case. Same
        # semantics as running it first in each case: each case gets its own copy of that dict.
        self.main_module = _new_main(filename)
        if prelude:
            exec(compile(prelude, "<prelude>", "exec"), self.main_module.__dict__)
        import gc
        gc.collect()
        gc.freeze()
        self.reply({"op": "load", "ok": True, "wrapped": self.wrapped})
        self.make_forker()  # while the judge reads the reply

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
        tampered = _tampering()
        if tampered:
            self.tampered = result["sandbox_tampered"] = tampered
            self.drop_forker()
        fds = result.pop("_fds")
        try:
            # before the reply: the next request finds the sandbox clean (a wipe still going on
            # would count in its CPU and memory), and the judge waits for what this run left
            self.wipe_scratch()
            self.reply_with_fds(dict(result, op="run"), fds)
        finally:
            for item in fds:
                if not isinstance(item, bytes):
                    os.close(item[0])
            if (self.code is not None and self.forker is None and not self.tampered
                    and header.get("mode") in ("python", "call")):
                self.make_forker()  # while the judge reads the reply

    # ---- running one case ---------------------------------------------------------------------
    def fork_case(self, req, stdin=b"", call_args=None, source_for_probe=None):
        """Run one case; returns the result header plus ``_fds`` (the blobs of the reply).

        A Python case of the loaded program goes to the forker (:meth:`run_in_forker`); the rest
        (native programs, the compile probe, a Python case when there is no forker) is forked
        or spawned here, and cleaned up with ``kill(-1)``.

        stdout goes to a memfd capped by RLIMIT_FSIZE (over the cap is OLE); stderr goes to a
        pipe this server drains while the case runs, keeping its first and last
        ``stderr_bytes / 2`` (never a limit: contest judges ignore stderr); ``log_fd`` (exec only)
        is another drained pipe whose last bytes are kept."""
        import time

        limits = req.get("limits", {})
        out_cap = int(limits.get("output_bytes", 64 << 20))
        err_cap = int(limits.get("stderr_bytes", 64 << 10))
        mode = req.get("mode", "exec")
        staged = self.staged_stdin if req.get("stdin_staged") else None
        self.staged_stdin = None
        if mode in ("python", "call") and self.code is not None:
            if self.forker is None:
                self.make_forker()
            if self.forker is not None:
                case_stdin = staged if staged is not None else _memfd("stdin", stdin)
                try:
                    result = self.run_in_forker(req, case_stdin, call_args)
                finally:
                    if case_stdin != staged:
                        os.close(case_stdin)
                if result is not None:
                    if staged is not None:
                        os.close(staged)
                    return result
        self.drop_forker()  # a direct fork's cleanup (kill(-1)) would take it anyway
        stdin_fd = os.memfd_create("stdin", os.MFD_CLOEXEC)
        out_fd = os.memfd_create("stdout", os.MFD_CLOEXEC)
        err_r, err_w = os.pipe()
        res_fd = os.memfd_create("result", os.MFD_CLOEXEC) if mode == "call" else -1
        if staged is not None:
            os.close(stdin_fd)
            stdin_fd = staged
            os.lseek(stdin_fd, 0, os.SEEK_SET)
        else:
            _write_all(stdin_fd, stdin)
            os.lseek(stdin_fd, 0, os.SEEK_SET)
        os.set_blocking(err_r, False)
        err = _Capture(err_cap, head=err_cap // 2)

        log_fd = int(req.get("log_fd") or 0) if mode == "exec" else 0
        log_r = log_w = -1
        if log_fd:  # a channel only the exec'd tool writes last to (e.g. valgrind's --log-fd)
            log_r, log_w = os.pipe()
            os.set_blocking(log_r, False)
        log = _Capture(err_cap, head=0) if log_fd else None
        t0 = time.monotonic()
        pid = None
        spawned = False
        if mode == "exec" and "address_space_bytes" not in limits:
            pid = self.spawn_exec(req, limits, stdin_fd, out_fd, err_w,
                                  extra=[(log_w, log_fd)] if log_fd else [])
            spawned = True
            if isinstance(pid, str):  # execve failed: report like a shell would (exit 127)
                err.feed(pid.encode("utf-8", "replace"))
                for fd in (stdin_fd, log_r, log_w, err_r, err_w):
                    if fd >= 0:
                        os.close(fd)
                return self.finish_case(127 << 8, None, 0.0, False, out_fd, err, res_fd,
                                        out_cap, mode, log, spawned=True)
        if pid is None:
            pid = _fork()
            if pid == 0:  # --------------------------------------------------------- child
                status = 70
                try:
                    if log_fd:
                        os.dup2(log_w, log_fd)
                    status = child_main(self, req, limits, stdin_fd, out_fd, err_w, res_fd,
                                        call_args, source_for_probe, keep_fd=log_fd)
                finally:
                    _EXIT(status)
        # ------------------------------------------------------------------------- parent
        for fd in (stdin_fd, log_w, err_w):
            if fd >= 0:
                os.close(fd)
        readers = {err_r: err}
        if log_r >= 0:
            readers[log_r] = log
        wall_limit = float(limits.get("wall_seconds", 10.0))
        deadline = t0 + wall_limit
        pidfd = os.pidfd_open(pid)
        try:
            timed_out = _wait_for_exit(pidfd, readers, deadline)
        finally:
            os.close(pidfd)
        if timed_out:
            self.kill_all(pid)
        _, status, rusage = os.wait4(pid, 0)
        wall = time.monotonic() - t0
        self.kill_all(pid)
        self.reap_all()
        for fd, capture in readers.items():
            _drain(fd, capture)  # everything that could write is gone now
            os.close(fd)
        return self.finish_case(status, rusage, wall, timed_out, out_fd, err, res_fd, out_cap,
                                mode, log, spawned=spawned)

    def finish_case(self, status, rusage, wall, timed_out, out_fd, err, res_fd, out_cap, mode,
                    log=None, spawned=False):
        out_size = os.fstat(out_fd).st_size
        lost = status is None  # see run_in_forker
        result = {
            "exit_code": os.WEXITSTATUS(status) if not lost and os.WIFEXITED(status) else None,
            "signal": os.WTERMSIG(status) if not lost and os.WIFSIGNALED(status) else None,
            "cpu_seconds": rusage.ru_utime + rusage.ru_stime if rusage else 0.0,
            "wall_seconds": wall,
            # A posix_spawn'ed (vfork) child's ru_maxrss includes this server's RSS: exec records
            # the high-water mark of the mm it leaves. The judge uses the memory cgroup instead.
            "maxrss_bytes": rusage.ru_maxrss * 1024 if rusage and not spawned else 0,
            "wall_timeout": timed_out,
            "stdout_size": out_size,
            "stderr_size": err.total,
        }
        if lost:
            result["status_lost"] = True
        if mode == "compile_probe":
            result["stderr_text"] = err.value()[:8192].decode("utf-8", "replace")
            os.close(out_fd)
            if res_fd >= 0:
                os.close(res_fd)
            return result
        fds = [(out_fd, min(out_size, out_cap)), err.value()]
        if res_fd >= 0 and mode != "call":
            os.close(res_fd)
            res_fd = -1
        parts = ["stdout", "stderr"]
        if res_fd >= 0:
            fds.append((res_fd, min(os.fstat(res_fd).st_size, out_cap)))
            parts.append("result")
        if log is not None:
            fds.append(log.value())
            parts.append("log")
        result["parts"] = parts
        result["_fds"] = fds
        return result

    def spawn_exec(self, req, limits, stdin_fd, out_fd, err_fd, extra=()):
        """``posix_spawn`` (vfork + exec: about 1 ms cheaper than forking this interpreter) of a
        native program. Soft limits are set on the server around the spawn so the child starts
        under them; right after, ``prlimit`` sets the child's soft and hard limits (RLIMIT_CPU
        counts CPU time from the start, so nothing escapes it) and its ``oom_score_adj``.
        Returns the pid, or a message when execve failed."""
        import resource
        import signal

        wanted = _rlimit_list(limits, RESULT_FD - 1)
        saved = []
        cwd = req.get("cwd")
        old_cwd = os.getcwd() if cwd else None
        try:
            for res, (soft, hard) in wanted:
                if res == resource.RLIMIT_CPU:
                    continue
                cur = resource.getrlimit(res)
                saved.append((res, cur))
                cap = cur[1]
                resource.setrlimit(res, (soft if cap == resource.RLIM_INFINITY else min(soft, cap), cap))
            if cwd:
                os.chdir(cwd)
            env = req.get("env") or DEFAULT_ENV
            # The child inherits oom_score_adj at spawn; setting it on the child afterwards races
            # with its exec (its /proc files are root-owned until exec makes it dumpable).
            old_adj = _set_own_oom_adj(b"1000")
            try:
                pid = os.posix_spawn(
                    req["argv"][0], req["argv"], env,
                    file_actions=[(os.POSIX_SPAWN_DUP2, stdin_fd, 0),
                                  (os.POSIX_SPAWN_DUP2, out_fd, 1),
                                  (os.POSIX_SPAWN_DUP2, err_fd, 2),
                                  *[(os.POSIX_SPAWN_DUP2, src, dst) for src, dst in extra]],
                    setsid=not self.is_init,
                    setsigdef=(signal.SIGPIPE, signal.SIGXFSZ, signal.SIGINT))
            except OSError as exc:
                return "exec %s failed: %s\n" % (req["argv"][0], exc)
            finally:
                if old_adj is not None:
                    _set_own_oom_adj(old_adj)
        finally:
            for res, cur in reversed(saved):
                resource.setrlimit(res, cur)
            if old_cwd:
                os.chdir(old_cwd)
        for res, val in wanted:
            # The open-file and stack limits were already in force at exec (as soft limits);
            # changing them under a running program confuses programs that read them at start
            # (valgrind reserves descriptors below RLIMIT_NOFILE).
            if res in (resource.RLIMIT_NOFILE, resource.RLIMIT_STACK):
                continue
            try:
                resource.prlimit(pid, res, val)
            except (OSError, ValueError):
                pass
        return pid

    # ---- the forker ---------------------------------------------------------------------------
    def make_forker(self):
        """Fork the forker: a child of this server, as warm as it (the program compiled, the
        prelude run), that forks every Python case of the loaded program (see
        :func:`_forker_main`). Forking from a process that does nothing else keeps the per-case
        copy-on-write faults down: this server's own work on a request (decoding it, waiting,
        replying) writes to pages a forked case would share, each write a page copy, ~250 a
        case; the forker's loop writes to a few dozen. Each case's files (stdin, stdout, the
        call result: memfds; stderr: a pipe) are new, made by this server and passed to the
        forker with the request (``SCM_RIGHTS``): nothing a program leaves on an open file or its
        inode (locks, leases, owner, flags, mode, times, extended attributes) reaches a later case.

        A program shares the sandbox with its forker (same uid; it cannot ptrace it or open its
        ``/proc`` files, the forker being non-dumpable): it may kill or stop it, or lower its
        rlimits. :meth:`check_forker` drops it after a case unless it is as forked; a dead
        forker's case is collected by this server (the case's process is reparented to PID 1).
        A failed fork (the pids limit reached) leaves no forker: cases fork from this server."""
        if not self.is_init or self.code is None:
            return
        fk = _Forker()
        try:
            pid = _fork()
        except OSError:
            fk.close()
            return
        if pid == 0:  # ------------------------------------------------------------ forker
            status = 70
            try:
                status = _forker_main(self, fk)
            finally:
                _EXIT(status)
        fk.started(pid)
        self.forker = fk

    def drop_forker(self):
        """Stop the forker (if any) and close its files."""
        fk, self.forker = self.forker, None
        if fk is not None:
            try:
                os.kill(fk.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            try:
                os.waitpid(fk.pid, 0)
            except ChildProcessError:
                pass
            fk.close()

    def check_forker(self):
        """Drop the forker unless it is exactly as forked: alive, neither stopped nor continued,
        no signal pending, this server's rlimits, nice value and CPU affinity. Called once every
        other process of the sandbox is dead, so none of it can change any more."""
        fk = self.forker
        try:
            healthy = os.waitpid(fk.pid, os.WNOHANG | os.WUNTRACED | os.WCONTINUED) == (0, 0)
            healthy = healthy and _untouched(fk.pid)
        except (ChildProcessError, OSError, ValueError, KeyError):
            healthy = False
        if not healthy:
            self.drop_forker()

    def run_in_forker(self, req, stdin_fd, call_args):
        """Run one Python case through the forker, with ``stdin_fd`` (a memfd holding the input;
        the caller closes it) and new stdout, stderr and result files; returns what
        :meth:`fork_case` returns, or None when the forker died before it reported its child's
        pid (the child, if any, is killed and the scratch directories wiped: the caller forks
        the case itself).

        The forker reports its child's pid right after the fork; this server then watches the
        child as it watches a child of its own (``pidfd``, wall deadline, stderr drained). The
        exit status and rusage come from the forker, which reports them before it reaps the
        child, or from this server's own ``wait4`` when the forker died or was stopped before
        its report (the child, unreaped, is then reparented to PID 1; a stopped forker is
        killed). Only where the forker must reap to learn the status (:func:`_exit_peeker`'s
        fallback) can a program that kills it at that instant lose the status: the reply then
        says ``status_lost``."""
        import select
        import time

        fk = self.forker
        limits = req.get("limits", {})
        out_cap = int(limits.get("output_bytes", 64 << 20))
        err_cap = int(limits.get("stderr_bytes", 64 << 10))
        mode = req.get("mode")
        out_fd = os.memfd_create("stdout", os.MFD_CLOEXEC)
        res_fd = os.memfd_create("result", os.MFD_CLOEXEC) if mode == "call" else -1
        err_r, err_w = os.pipe()
        os.set_blocking(err_r, False)
        os.lseek(stdin_fd, 0, os.SEEK_SET)
        fds = [stdin_fd, out_fd, err_w] + ([res_fd] if res_fd >= 0 else [])
        err = _Capture(err_cap, head=err_cap // 2)
        self.seq += 1
        req = dict(req, seq=self.seq)
        t0 = time.monotonic()
        try:
            try:
                fk.send(encode_frame(req, [call_args or b""]), fds)
            finally:
                os.close(err_w)  # the forker and the case hold it: end of file once they are gone
        except OSError:
            for fd in (out_fd, res_fd, err_r):
                if fd >= 0:
                    os.close(fd)
            return None
        try:
            return self._watch_forked_case(fk, req, t0, err, err_r, out_fd, res_fd, out_cap)
        finally:
            os.close(err_r)

    def _watch_forked_case(self, fk, req, t0, err, err_r, out_fd, res_fd, out_cap):
        """The rest of :meth:`run_in_forker`, once the request is sent: takes ``out_fd`` and
        ``res_fd`` (handed to :meth:`finish_case`, or closed)."""
        import select
        import time

        limits = req.get("limits", {})
        deadline = t0 + float(limits.get("wall_seconds", 10.0))
        poller = select.poll()
        for fd in (fk.report_r, fk.pidfd, err_r):
            poller.register(fd, select.POLLIN)
        pid = case_pidfd = None
        done = None  # the forker's report: {"pid", "status", "utime", "stime", "maxrss"}
        forker_dead = exited = timed_out = False
        end = None
        waits = 0  # polls for the forker's report since the case ended
        try:
            while done is None:
                now = time.monotonic()
                if exited or timed_out:
                    # The case is over; the forker's report is due. From the second poll on,
                    # every other process is killed at each pass (daemons writing to stderr
                    # would keep this loop busy), and a forker that is stopped or late
                    # (REPORT_GRACE) is killed: the case is then collected as an orphan.
                    if waits and not forker_dead:
                        self.kill_all(0, fk.pid)
                        if _stopped(fk.pid) or now > end + REPORT_GRACE:
                            os.kill(fk.pid, signal.SIGKILL)
                    waits += 1
                    events = poller.poll(20 if waits > 1 else 2)
                else:
                    left = deadline - now
                    events = poller.poll(left * 1000.0) if left > 0 else []
                    if not events:
                        timed_out = True
                        end = time.monotonic()
                        self.kill_all(0, fk.pid if not forker_dead else None)
                        continue
                for fd, _ in events:
                    if fd == err_r:
                        if not _drain(fd, err):
                            poller.unregister(fd)  # every writer is gone
                    elif fd == fk.report_r:
                        frame = _read_report(fd)
                        if frame is None:  # the forker is gone: its pidfd says so too
                            poller.unregister(fd)
                        elif frame["seq"] != self.seq:
                            continue  # left by an earlier run that failed in this server
                        elif "status" in frame:
                            done = frame
                        elif pid is None:
                            pid = int(frame["pid"])
                            try:
                                case_pidfd = os.pidfd_open(pid)
                                poller.register(case_pidfd, select.POLLIN)
                            except ProcessLookupError:
                                pass  # it has exited already: the report follows
                    elif fd == case_pidfd:
                        exited = True
                        end = end or time.monotonic()
                        poller.unregister(fd)
                    elif fd == fk.pidfd and not forker_dead:
                        forker_dead = True
                        poller.unregister(fd)
                        try:
                            os.waitpid(fk.pid, 0)
                        except ChildProcessError:
                            pass
                if forker_dead and done is None:
                    if fk.report_r in dict(poller.poll(0)):
                        continue  # read what it wrote before it died
                    if pid is None:  # it died before it reported its child (if it forked one)
                        self.kill_all(0)
                        self.reap_all()
                        self.wipe_scratch()
                        for fd in (out_fd, res_fd):
                            if fd >= 0:
                                os.close(fd)
                        return None
                    done = self._collect_orphan(pid, case_pidfd, exited, deadline, err, err_r)
                    if done.get("timed_out"):
                        timed_out = True
        finally:
            if case_pidfd is not None:
                os.close(case_pidfd)
        end = end or time.monotonic()
        keep = None if forker_dead else fk.pid
        self.kill_all(0, keep)
        if not self.reap_all(keep, pid):  # a process only the forker could reap: it goes too
            forker_dead = True
            os.kill(fk.pid, signal.SIGKILL)
            self.reap_all()
        _drain(err_r, err)  # everything that could write is gone now
        status = done.get("status")
        rusage = _Rusage(done.get("utime", 0.0), done.get("stime", 0.0), done.get("maxrss", 0))
        result = self.finish_case(status, rusage, end - t0, timed_out, out_fd, err, res_fd,
                                  out_cap, req.get("mode"))
        if forker_dead:
            self.forker = None
            fk.close()
        else:
            self.check_forker()
        return result

    def _collect_orphan(self, pid, pidfd, exited, deadline, err, err_r):
        """The forker died while its child ``pid`` ran: the child is now this server's; wait for
        it (its wall deadline still holds) and return a report like the forker's, with
        ``status`` None when the forker had reaped it already. The child is told by its
        ``pidfd`` (``waitid(P_PIDFD, WNOWAIT)`` before the ``wait4``), never by a pid number
        that could have been reused."""
        timed_out = False
        if not exited and pidfd is not None:
            timed_out = _wait_for_exit(pidfd, {err_r: err}, deadline)
            if timed_out:
                self.kill_all(0)
        lost = {"status": None, "timed_out": timed_out}
        if pidfd is None:
            return lost
        try:
            os.waitid(os.P_PIDFD, pidfd, os.WEXITED | os.WNOWAIT)  # ours (reparented), a zombie
            _, status, ru = os.wait4(pid, 0)
        except ChildProcessError:
            return lost
        return {"status": status, "utime": ru.ru_utime, "stime": ru.ru_stime,
                "maxrss": ru.ru_maxrss, "timed_out": timed_out}

    def kill_all(self, pid, keep=None):
        """SIGKILL every process the case left: as PID 1 everything in this PID namespace but this
        server (``kill(-1)``), or but this server and ``keep`` (the forker); else the case's
        process group."""
        try:
            if not self.is_init:
                os.killpg(pid, signal.SIGKILL)
            elif keep is None:
                os.kill(-1, signal.SIGKILL)  # everything in this PID namespace but us
            else:
                _sigkill_each(_namespace_pids(keep))
        except ProcessLookupError:
            pass

    def reap_all(self, keep=None, keeps_child=None):
        """Wait for every process left in the namespace (but ``keep``). As PID 1, kill again
        before each wait, so a process forked while the kill was walking the list dies too.
        Returns False when the others could not all be reaped while sparing ``keep`` (and
        waiting for ``keeps_child``, the case ``keep`` is reaping)."""
        if keep is not None and self.is_init:
            return self._reap_all_but(keep, keeps_child)
        while True:
            if self.is_init:
                self.kill_all(0)
            try:
                pid, _ = os.waitpid(-1, 0 if self.is_init else os.WNOHANG)
            except ChildProcessError:
                return True
            if pid == 0:
                return True

    def _reap_all_but(self, keep, keeps_child=None):
        """:meth:`reap_all` sparing ``keep``: a blocking ``waitpid(-1)`` could wait for it
        forever, so kill what ``/proc`` lists, reap without blocking, and scan again until the
        namespace holds only this server and ``keep``. Processes forked meanwhile show up in
        the next scan; SIGKILLed ones cannot fork any more. Reaping ``keep`` (it died) is left
        to the caller's check. Returns False when a process stays that only ``keep`` could reap
        (a zombie whose parent it is: ``clone(CLONE_PARENT)`` from its child) other than
        ``keeps_child`` (the forker reaps it right after its report), or any process after
        :data:`REPORT_GRACE`: the caller then kills ``keep`` too."""
        import time
        give_up = time.monotonic() + REPORT_GRACE
        while True:
            others = _namespace_pids(keep)
            if not others:
                return True
            _sigkill_each(others)
            reaped = False
            for other in others:
                try:
                    if os.waitpid(other, os.WNOHANG)[0]:
                        reaped = True
                except ChildProcessError:
                    pass  # not ours (yet): its parent is dying, then it is reparented to us
            if not reaped:
                if time.monotonic() > give_up or any(
                        p != keeps_child and _parent_pid(p) == keep for p in others):
                    return False
                time.sleep(0.0002)

    def wipe_scratch(self):
        """Empty every scratch directory but the kept files (:func:`_empty_dir`), and give the
        directory itself back its mode, no extended attributes, and times set to now. Raises
        OSError when something could not be removed (then nothing more may run here)."""
        for d, (fd, mode) in self.scratch_fds.items():
            try:
                st = os.fstat(fd)
                if st.st_mode & 0o7777 != mode:
                    os.fchmod(fd, mode)  # chmod 0 would hide its files from the wipe
                for name in os.listxattr(fd):
                    os.removexattr(fd, name)
                os.utime(fd)  # (always: when it was last set would tell what an earlier case did)
            except OSError:
                st = None
            if self.is_init and st is not None and st.st_size == _TMPFS_EMPTY_DIR_SIZE:
                continue  # a tmpfs directory's size counts its entries: none
            _empty_dir(fd, {os.path.basename(p) for p in self.kept_files
                            if os.path.dirname(p) == d} if self.kept_files else ())


#: The size of an empty tmpfs directory (its ``.`` and ``..``; each entry adds 20: the kernel's
#: ``BOGO_DIRENT_SIZE``). In the sandbox the scratch dirs are tmpfs mounts (bwrap ``--tmpfs``).
_TMPFS_EMPTY_DIR_SIZE = 40
#: How the wipe opens a directory: never through a symbolic link.
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


def _empty_dir(top, keep=()):
    """Remove everything in the directory open as ``top`` but the names in ``keep``, whatever
    tree a program built there, in constant memory and with two descriptors at a time (a
    20,000-deep chain of directories once overflowed ``shutil.rmtree``): clear a directory of
    files and empty directories; at its first non-empty one, go down (``openat(name,
    O_NOFOLLOW)``, mode 0700 first: a program may have made it unreadable, unsearchable or
    unwritable); once one is empty, go back up by ``".."`` and clear the parent again (which
    removes the emptied one). Nothing else runs while it wipes: the tree cannot change under it.
    Raises OSError when an entry stays. ``top`` stays open."""
    fd, depth = top, 0  # the directory we are in (ours to close unless it is top)
    try:
        while True:
            child = _clear_dir(fd, keep if depth == 0 else ())
            if child is not None:
                try:
                    cfd = os.open(child, _DIR_FLAGS, dir_fd=fd)
                except PermissionError:  # not readable
                    os.chmod(child, 0o700, dir_fd=fd)
                    cfd = os.open(child, _DIR_FLAGS, dir_fd=fd)
                os.fchmod(cfd, 0o700)  # searchable and writable: its entries can go, ".." opens
                depth += 1
            elif depth:
                cfd = os.open("..", _DIR_FLAGS, dir_fd=fd)
                depth -= 1
            else:
                return
            if fd != top:
                os.close(fd)
            fd = cfd if depth else top
            if not depth:
                os.close(cfd)
    finally:
        if fd != top:
            os.close(fd)


def _clear_dir(fd, keep):
    """Remove the files and empty directories (but the names in ``keep``) of the directory open
    as ``fd``, up to its first non-empty directory; returns that one's name, or None."""
    with os.scandir(fd) as entries:  # (removing while listing: tmpfs's cursor allows it)
        for e in entries:
            name = e.name
            if name in keep:
                continue
            if not e.is_dir(follow_symlinks=False):
                os.unlink(name, dir_fd=fd)
                continue
            try:
                os.rmdir(name, dir_fd=fd)  # an empty one goes at once, whatever its mode
            except OSError as exc:
                if exc.errno != errno.ENOTEMPTY:
                    raise
                return name
    return None


class _Forker:
    """The forker's channels (see Server.make_forker).

    - ``go``: a Unix socket; the server sends one request frame per case, with the case's files
      attached (``SCM_RIGHTS``: stdin, stdout, the stderr pipe's write end, the call result);
    - ``report``: the forker writes a "started" record (the child's pid) after each fork and a
      "done" record (wait status, rusage) once it has exited (:data:`_REPORT`); the child
      closes both before the program runs."""

    def __init__(self):
        go_r, go_w = _socket.socketpair(_socket.AF_UNIX, _socket.SOCK_STREAM)
        self.go_r = go_r.detach()
        self.go = go_w  # the server's end (a socket object: sendmsg)
        self.report_r, self.report_w = os.pipe()
        self.pid = None
        self.pidfd = -1

    def forker_fds(self):
        return (self.go_r, self.report_w)

    def started(self, pid):
        """In the server, once the forker runs: keep only the server's ends."""
        self.pid = pid
        for fd in (self.go_r, self.report_w):
            os.close(fd)
        self.go_r = self.report_w = -1
        self.pidfd = os.pidfd_open(pid)

    def send(self, frame, fds):
        """Send one request ``frame`` with the case's files ``fds`` (they stay open here)."""
        sent = self.go.sendmsg([frame], [(_socket.SOL_SOCKET, _socket.SCM_RIGHTS,
                                          struct.pack("%di" % len(fds), *fds))])
        _write_all(self.go.fileno(), memoryview(frame)[sent:])

    def close(self):
        self.go.close()
        for fd in (self.go_r, self.report_r, self.report_w, self.pidfd):
            if fd >= 0:
                os.close(fd)
        self.go_r = self.report_r = self.report_w = self.pidfd = -1


#: The descriptors a case's files are on, in the order they are sent: stdin, stdout, stderr,
#: the call result (only for calls).
CASE_FDS = (0, 1, 2, 3)


def _recv_case(sock):
    """In the forker: read one request frame from the go socket and put the files sent with it
    on :data:`CASE_FDS` (free: the forker closes them after each fork). Returns ``(header,
    blobs, number of files)``. Raises EOFError when the server is gone, ValueError for a
    malformed frame."""
    data, anc, flags, _ = sock.recvmsg(_LEN.size, _socket.CMSG_SPACE(4 * len(CASE_FDS)))
    fds = []
    for level, kind, blob in anc:
        if level == _socket.SOL_SOCKET and kind == _socket.SCM_RIGHTS:
            fds += struct.unpack("%di" % (len(blob) // 4), blob[:len(blob) // 4 * 4])
    if not data:
        raise EOFError("control socket closed")
    if flags & _socket.MSG_CTRUNC or len(fds) > len(CASE_FDS):
        raise ValueError("too many files with a request")
    wanted = list(CASE_FDS[:len(fds)])
    if fds != wanted:  # (the kernel gives the lowest free numbers: these, unless one was taken)
        import fcntl
        moved = [fcntl.fcntl(fd, fcntl.F_DUPFD, 10) for fd in fds]
        for fd in fds:
            os.close(fd)
        for src, dst in zip(moved, wanted):
            os.dup2(src, dst)
            os.close(src)
    fd = sock.fileno()
    if len(data) < _LEN.size:
        data = bytes(data) + bytes(_read_exact(fd, _LEN.size - len(data)))
    (n,) = _LEN.unpack(data)
    if n > MAX_HEADER:
        raise ValueError("frame header too large")
    header = json.loads(_read_exact(fd, n))
    blobs = [_read_exact(fd, int(size)) for size in header.get("blobs", [])]
    return header, blobs, len(fds)


def _forker_main(server, fk):
    """The forker's loop: read a request, fork its child, report the child's pid, report its
    exit status and rusage once it has exited, reap it.

    The forker blocks every signal but SIGKILL, SIGSTOP and SIGCHLD. What every case's process
    needs is set up here, once or before each fork, and inherited:
    the case's own files on fds 0-3 (stdin, stdout, stderr, the call result: received with the
    request, closed here right after the fork), ``oom_score_adj``
    1000 (the OOM killer's first choice, never the server), no int/str digit limit, CPython-like
    stdio objects, the pristine ``__main__``, the SIGINT handler, the case's rlimits (computed),
    a freshly seeded ``random``. The child then only closes the forker's channels, unblocks
    signals, sets its rlimits and runs the program: each page it writes costs a
    copy. Like a case the server forks, it stays in the server's process group and session, so
    ``os.setsid()`` and ``os.setpgrp()`` work as under a judge's ``subprocess``."""
    import fcntl
    moved = [fcntl.fcntl(fd, fcntl.F_DUPFD, 10) for fd in fk.forker_fds()]
    _close_all_but(moved)  # CASE_FDS too: each request brings its own
    go, report = moved
    sock = _socket.socket(fileno=go)
    _set_own_oom_adj(b"1000")
    if hasattr(sys, "set_int_max_str_digits"):
        sys.set_int_max_str_digits(0)
    _fresh_stdio()
    signal.signal(signal.SIGINT, signal.default_int_handler)  # as python3 main.py has it
    main = _prepare_python_process(server)
    # Every signal a program may send it stays pending (then the server replaces it) instead of
    # killing it between reaping its child and reporting; its children unblock them. SIGCHLD
    # (each child's exit; ignored) is left unblocked, or it would be pending after every case.
    import _signal
    _signal.pthread_sigmask(signal.SIG_BLOCK, signal.valid_signals() - {signal.SIGCHLD})
    pack = _REPORT.pack
    peek = _exit_peeker()
    while True:
        try:
            req, blobs, _ = _recv_case(sock)
        except (EOFError, OSError, ValueError):
            return 0
        call_args = blobs[0] if blobs and blobs[0] else None
        del blobs
        call = req.get("mode") == "call"
        limits = req.get("limits", {})
        if "processes" in limits:  # RLIMIT_NPROC (no pids cgroup) counts this forker too
            limits = dict(limits, processes=int(limits["processes"]) + 1)
        rlimits = _rlimit_list(limits, RESULT_FD if call else 2)
        _reseed_random()
        pid = _fork(reseed=False)  # OSError: this forker ends; the server forks the case itself
        if pid == 0:  # -------------------------------------------------------- the case
            status = 70
            try:
                os.close(report)  # a program must not be able to forge the reports
                os.close(go)
                if _LIBC is not None:  # its own /proc files (environ, io...), as python3 main.py
                    _LIBC.prctl(4, 1, 0, 0, 0)  # PR_SET_DUMPABLE; the forker itself stays closed
                _signal.pthread_sigmask(signal.SIG_SETMASK, ())
                _apply_rlimits(rlimits)
                status = run_prepared_python(server, req, call_args, main)
            finally:
                _EXIT(status)
        os.closerange(0, len(CASE_FDS))  # the case's files are the case's (and the server's) only
        seq = int(req.get("seq", 0))
        os.write(report, pack(b"S", pid, 0, 0.0, 0.0, 0, seq))
        del req, call_args
        # Report, then reap: stopped or killed in between, the child stays a zombie the server
        # reaps itself (its status is never lost with the forker)
        status, utime, stime, maxrss = peek(pid)
        os.write(report, pack(b"D", pid, status, utime, stime, maxrss, seq))
        os.waitpid(pid, 0)


#: Seconds the server waits for the forker's report once the case has ended (or for the case's
#: processes to be reaped) before it kills the forker and collects the case itself.
REPORT_GRACE = 2.0

#: The forker's reports: kind (b"S" started, b"D" done), pid, wait status, user and system
#: CPU seconds, max RSS (KiB), the run's sequence number (a record of an earlier run, left by a
#: run that failed in the server, is never taken for this run's). Fixed size, written whole.
_REPORT = struct.Struct("=ciiddqQ")


def _exit_peeker():
    """A function ``pid -> (wait status, utime, stime, maxrss KiB)`` for a child that has
    exited or will, without reaping it: the raw ``waitid(P_PID, pid, WEXITED | WNOWAIT)``, whose
    last argument (not in ``os.waitid``) gets the rusage. Falls back to ``wait4`` (reaps) when
    ctypes is missing or not on x86_64."""
    try:
        import ctypes
        if os.uname().machine != "x86_64":
            raise ImportError("waitid's number")
        libc = ctypes.CDLL(None, use_errno=True)
    except (ImportError, OSError):
        def reap(pid):
            _, status, ru = os.wait4(pid, 0)
            return status, ru.ru_utime, ru.ru_stime, ru.ru_maxrss
        return reap
    info = ctypes.create_string_buffer(128)  # siginfo_t
    ru = ctypes.create_string_buffer(144)  # struct rusage
    flags = os.WEXITED | os.WNOWAIT

    def peek(pid):
        while libc.syscall(247, os.P_PID, pid, info, flags, ru) != 0:  # SYS_waitid
            err = ctypes.get_errno()
            if err != errno.EINTR:
                raise OSError(err, os.strerror(err))
        code, = struct.unpack_from("i", info, 8)  # si_code
        st, = struct.unpack_from("i", info, 24)  # si_status
        usec, uusec, ssec, susec, maxrss = struct.unpack_from("qqqqq", ru, 0)
        status = (st & 0xFF) << 8 if code == 1 else (st | 0x80 if code == 3 else st)  # CLD_*
        return status, usec + uusec / 1e6, ssec + susec / 1e6, maxrss

    return peek


class _Rusage:
    """The fields of a ``wait4`` rusage the server uses (sent by the forker)."""

    def __init__(self, utime, stime, maxrss):
        self.ru_utime, self.ru_stime, self.ru_maxrss = float(utime), float(stime), int(maxrss)


def _read_report(fd):
    """One record from the forker's report pipe (:data:`_REPORT`, written whole) as a dict:
    ``{"pid", "seq"}`` (started) or ``{"pid", "status", "utime", "stime", "maxrss", "seq"}``
    (done); None at end of file."""
    try:
        kind, pid, status, utime, stime, maxrss, seq = _REPORT.unpack(
            _read_exact(fd, _REPORT.size))
    except (EOFError, OSError, struct.error):
        return None
    if kind == b"S":
        return {"pid": pid, "seq": seq}
    return {"pid": pid, "status": status, "utime": utime, "stime": stime, "maxrss": maxrss,
            "seq": seq}


def _xattrs(fd):
    """The extended attribute names of open file ``fd`` (empty where unsupported)."""
    try:
        return sorted(os.listxattr(fd))
    except OSError:
        return []


def _sigkill_each(pids):
    """SIGKILL each pid (those already gone are skipped)."""
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def _parent_pid(pid):
    """The parent pid of ``pid`` (from ``/proc``), None when it is gone."""
    try:
        with open("/proc/%d/stat" % pid, "rb") as f:
            return int(f.read().rsplit(b")", 1)[1].split()[1])
    except (OSError, ValueError, IndexError):
        return None


def _stopped(pid):
    """True when child ``pid`` is stopped (SIGSTOP from a program); reaps it if it exited."""
    try:
        done, status = os.waitpid(pid, os.WNOHANG | os.WUNTRACED)
    except ChildProcessError:
        return False
    return bool(done) and os.WIFSTOPPED(status)


#: Installed modules too heavy to import for every sandbox (numpy: ~50 ms, ~20 MB) that are
#: imported once, before any case forks, when the loaded program mentions them: name -> module
#: (``np`` too: preludes may bind it lazily).
HEAVY_MODULES = {"numpy": "numpy", "np": "numpy"}


def _imported_names(code):
    names = set(code.co_names)
    for const in code.co_consts:
        if hasattr(const, "co_names"):
            names |= _imported_names(const)
    return names


def _warm_heavy_imports(code):
    """Import the heavy modules the program's code mentions (by name), in the server: every case
    then forks with them loaded. Only installed library modules from :data:`HEAVY_MODULES`, never
    the program's own code."""
    import importlib
    names = _imported_names(code)
    for name, mod in HEAVY_MODULES.items():
        if name in names and mod not in sys.modules:
            try:
                importlib.import_module(mod)
            except Exception:
                pass


def compile_program(source, filename):
    """Compile ``source`` (bytes, decoded as ``python3 main.py`` would: PEP 263 coding line, BOM,
    else UTF-8) as a module. A module-level ``return`` (legal in the APPS/TACO harness, which
    wraps stdin programs in a function) is accepted by wrapping the body the same way, only when
    plain compilation fails for that reason. Returns ``(code, wrapped)``."""
    try:
        code = compile(source, filename, "exec", dont_inherit=True)
        _remember_source(source, filename)
        return code, False
    except SyntaxError as exc:
        if "'return' outside function" not in str(exc.msg):
            raise
    source = _decode_source(source)
    body = "".join("    " + line if line.strip() else line for line in source.splitlines(True))
    wrapped = "def __arbiter_main__():\n" + body + "\n__arbiter_main__()\n"
    code = compile(wrapped, filename, "exec", dont_inherit=True)
    _remember_source(wrapped, filename)
    return code, True


def _decode_source(source):
    """``source`` as text, decoded as ``python3 main.py`` would (PEP 263 coding line, BOM, UTF-8)."""
    if isinstance(source, bytes):
        import io
        import tokenize
        encoding, _ = tokenize.detect_encoding(io.BytesIO(source).readline)
        source = source.decode(encoding)
    return source


def _remember_source(source, filename):
    """Put the program's text in :mod:`linecache` (compiled from memory, it has no file the
    traceback printer could read), so tracebacks show source lines as ``python3 main.py`` does.
    Best effort: never fails the compile."""
    try:
        import linecache
        text = _decode_source(source)
        if len(text) <= (4 << 20):
            linecache.cache[filename] = (len(text), None, text.splitlines(True), filename)
    except Exception:
        pass


# --------------------------------------------------------------------------------------------
# the child: limits, then the program
# --------------------------------------------------------------------------------------------

class _Capture:
    """Bytes read from a pipe, bounded: the first ``head`` bytes and the last ``cap - head``;
    ``total`` counts everything that was written."""

    def __init__(self, cap, head):
        self.cap, self.head_cap = cap, head
        self.head = bytearray()
        self.tail = bytearray()
        self.total = 0

    def feed(self, chunk):
        self.total += len(chunk)
        room = self.head_cap - len(self.head)
        if room > 0:
            self.head += chunk[:room]
            chunk = chunk[room:]
        if chunk:
            self.tail += chunk
            keep = self.cap - self.head_cap
            if len(self.tail) > keep:
                del self.tail[:len(self.tail) - keep]

    def value(self):
        return bytes(self.head + self.tail)


def _wait_for_exit(pidfd, readers, deadline):
    """Wait until the process of ``pidfd`` exits or ``deadline`` (``time.monotonic()``) passes,
    draining each pipe of ``readers`` (fd -> :class:`_Capture`) meanwhile. True on the deadline."""
    import select
    import time
    poller = select.poll()
    poller.register(pidfd, select.POLLIN)
    for fd in readers:
        poller.register(fd, select.POLLIN)
    while True:
        left = deadline - time.monotonic()
        events = poller.poll(left * 1000.0) if left > 0 else []
        if not events:
            return True
        if any(fd == pidfd for fd, _ in events):
            return False
        for fd, _ in events:
            if fd in readers and not _drain(fd, readers[fd]):
                poller.unregister(fd)  # every writer closed it: just wait for the exit
                readers = {k: v for k, v in readers.items() if k != fd}


def _drain(fd, capture):
    """Read what is available on non-blocking ``fd`` into ``capture``. False at end of file."""
    while True:
        try:
            chunk = os.read(fd, 65536)
        except BlockingIOError:
            return True
        if not chunk:
            return False
        capture.feed(chunk)


def _reseed_random():
    """Reseed ``random`` (when imported) from 256 bits of ``os.urandom``, as its at-fork hook
    does (from 2,496 bytes: the same effect, fewer pages written)."""
    rnd = sys.modules.get("random")
    if rnd is not None:
        rnd._inst.seed(int.from_bytes(os.urandom(32), "little"))


def _fork(reseed=True):
    """Fork this process; returns like ``os.fork()``. Raises OSError.

    Through libc's ``fork()`` called with the GIL held (``ctypes.PyDLL``), not ``os.fork()``:
    CPython's after-fork work in the child (thread-state and lock re-initialisation, the
    ``threading`` module's at-fork hook) writes to ~170 pages of the parent's heap, each a
    copy-on-write fault, ~0.4 ms a case. The server is single-threaded and holds no lock
    while it forks, so the child needs none of it; the one at-fork hook whose effect a program can
    see, ``random`` reseeding itself, is run here. Falls back to ``os.fork()`` without libc or
    once a module that registers its own at-fork hook (``logging``,
    ``concurrent.futures.thread``) is imported into the server."""
    raw = _RAW_FORK
    if raw is None or "logging" in sys.modules or "concurrent.futures.thread" in sys.modules:
        return os.fork()
    pid = raw()
    if pid < 0:
        import ctypes
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err))
    if pid == 0 and reseed:
        _reseed_random()  # what random's os.register_at_fork hook does
    return pid


def _close_all_but(keep):
    """Close every descriptor but those in ``keep``."""
    low = 0
    for fd in sorted(keep):
        if fd > low:
            os.closerange(low, fd)
        low = fd + 1
    os.closerange(low, 1 << 16)


def _namespace_pids(keep=None):
    """The pids in this PID namespace (``/proc``) other than this process and ``keep``."""
    me = os.getpid()
    return [int(name) for name in os.listdir("/proc")
            if name.isdigit() and int(name) not in (me, keep)]


#: rlimits a program could lower on the forker (same uid: ``prlimit``); see Server.check_forker.
_RLIMIT_NAMES = ("RLIMIT_AS RLIMIT_CORE RLIMIT_CPU RLIMIT_DATA RLIMIT_FSIZE RLIMIT_MEMLOCK "
                 "RLIMIT_MSGQUEUE RLIMIT_NICE RLIMIT_NOFILE RLIMIT_NPROC RLIMIT_RSS RLIMIT_RTPRIO "
                 "RLIMIT_RTTIME RLIMIT_SIGPENDING RLIMIT_STACK").split()
#: The server's own scheduling state when it started (see _sched_state).
_BASELINE = None


def _sched_state(pid):
    """What a process of the same uid may change on ``pid`` and its children inherit: rlimits
    (lowered), nice value (raised), CPU affinity, scheduling policy (``SCHED_IDLE``/``BATCH``)
    and attributes (util clamps), I/O priority. ``pid`` 0: this process. Raises OSError when
    ``pid`` is gone."""
    import resource
    limits = tuple(resource.prlimit(pid, getattr(resource, name))
                   for name in _RLIMIT_NAMES if hasattr(resource, name))
    ioprio = attr = None
    if _LIBC is not None and os.uname().machine == "x86_64":
        import ctypes
        ioprio = _LIBC.syscall(252, 1, pid)  # ioprio_get(IOPRIO_WHO_PROCESS, pid)
        buf = ctypes.create_string_buffer(56)
        if _LIBC.syscall(315, pid, buf, 56, 0) == 0:  # sched_getattr: policy, nice, util clamps
            attr = buf.raw
    return (limits, os.getpriority(os.PRIO_PROCESS, pid), frozenset(os.sched_getaffinity(pid)),
            os.sched_getscheduler(pid), ioprio, attr)


def _tampering():
    """What a program changed on this server since it started (see :func:`_sched_state`), as a
    short text; empty when nothing."""
    try:
        now = _sched_state(0)
    except OSError as exc:
        return "state unreadable (%s)" % exc
    names = ("rlimits", "nice value", "CPU affinity", "scheduling policy", "I/O priority",
             "scheduling attributes")
    return ", ".join(name for name, a, b in zip(names, now, _BASELINE) if a != b)


def _untouched(pid):
    """True when process ``pid`` (the forker) is running or sleeping with no signal pending and
    the scheduling state (:func:`_sched_state`) this server had when it started. Raises OSError
    when it is gone."""
    with open("/proc/%d/status" % pid, "rb") as f:
        fields = dict(line.split(b":", 1) for line in f if b":" in line)
    if fields[b"State"].split()[0] not in (b"R", b"S"):
        return False
    if int(fields[b"SigPnd"], 16) or int(fields[b"ShdPnd"], 16):
        return False
    return _sched_state(pid) == _BASELINE


def _set_own_oom_adj(value):
    """Set this (non-dumpable) server's own ``oom_score_adj``; returns the old value (bytes) or
    None. Dumpable only for the instant of the write, while no program is alive in the sandbox
    (the previous case's processes are reaped, the forker is dropped), so nothing can ptrace it."""
    if _LIBC is None:
        return None
    _LIBC.prctl(4, 1, 0, 0, 0)
    try:
        fd = os.open("/proc/self/oom_score_adj", os.O_RDWR)
        try:
            old = os.pread(fd, 16, 0).strip()
            os.write(fd, value)
            return old
        finally:
            os.close(fd)
    except OSError:
        return None
    finally:
        _LIBC.prctl(4, 0, 0, 0, 0)


def _rlimit_list(limits, keep_fd):
    """The ``(resource, (soft, hard))`` pairs a case runs under."""
    import math
    import resource

    cpu = float(limits.get("cpu_seconds", 2.0))
    soft = int(math.ceil(cpu)) + 1
    rl = [
        (resource.RLIMIT_CPU, (soft, soft + 1)),
        # stdout is a file too: the cap is the larger of the two, stdout's own cap is checked after
        (resource.RLIMIT_FSIZE, (max(int(limits.get("output_bytes", 64 << 20)),
                                     int(limits.get("file_bytes", 0))) + 1,) * 2),
        (resource.RLIMIT_NOFILE, (max(int(limits.get("open_files", 64)), keep_fd + 1),) * 2),
        (resource.RLIMIT_CORE, (0, 0)),
    ]
    if "processes" in limits:
        rl.append((resource.RLIMIT_NPROC, (int(limits["processes"]),) * 2))
    stack = limits.get("stack_bytes")
    if stack:
        # Soft limit only: the hard limit stays unlimited, so the competitive-programming idiom
        # setrlimit(RLIMIT_STACK, (RLIM_INFINITY, RLIM_INFINITY)) works (as on Codeforces-style
        # judges). A bigger stack is still memory: the memory cgroup (or RLIMIT_AS) bounds it.
        rl.append((resource.RLIMIT_STACK, (int(stack), resource.RLIM_INFINITY)))
    if limits.get("address_space_bytes"):
        rl.append((resource.RLIMIT_AS, (int(limits["address_space_bytes"]),) * 2))
    return rl


def _set_limits(limits, keep_fd):
    _apply_rlimits(_rlimit_list(limits, keep_fd))


def _apply_rlimits(rlimits):
    """Set each ``(resource, (soft, hard))``; a hard limit above the current one (the sandbox
    was started with a lower one) is kept, the soft limit capped by it."""
    import resource

    for res, val in rlimits:
        try:
            resource.setrlimit(res, val)
        except (ValueError, OSError):
            hard = resource.getrlimit(res)[1]
            soft_v = val[0] if hard == resource.RLIM_INFINITY else min(val[0], hard)
            resource.setrlimit(res, (soft_v, hard))


def child_main(server, req, limits, stdin_fd, out_fd, err_fd, res_fd, call_args, probe, keep_fd=0):
    import signal

    # stdio as real descriptors; everything else closed
    os.dup2(stdin_fd, 0)
    os.dup2(out_fd, 1)
    os.dup2(err_fd, 2)
    top = 2
    if res_fd >= 0:
        os.dup2(res_fd, RESULT_FD)
        top = RESULT_FD
    if keep_fd:
        top = max(top, keep_fd)
    os.closerange(top + 1, 1 << 16)
    if not server.is_init:
        os.setsid()  # without a PID namespace the process group is what we can kill
    mode = req.get("mode", "exec")
    # the OOM killer must pick the program, never the server
    if _LIBC is not None:
        _LIBC.prctl(4, 1, 0, 0, 0)  # PR_SET_DUMPABLE 1: the child may write its own /proc files
    try:
        fd = os.open("/proc/self/oom_score_adj", os.O_WRONLY)
        os.write(fd, b"1000")
        os.close(fd)
    except OSError:
        pass
    _set_limits(limits, top)
    if mode == "exec":
        argv = req["argv"]
        env = req.get("env") or DEFAULT_ENV
        for signum in (signal.SIGPIPE, signal.SIGXFSZ):  # execve keeps ignored signals ignored
            signal.signal(signum, signal.SIG_DFL)
        cwd = req.get("cwd")
        if cwd:
            os.chdir(cwd)
        try:
            os.execve(argv[0], argv, env)
        except OSError as exc:
            os.write(2, ("exec %s failed: %s\n" % (argv[0], exc)).encode())
            return 127
    # Python modes: behave like `python3 -X utf8 main.py` (SIGPIPE and SIGXFSZ stay ignored,
    # as the server has them)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    return run_python(server, req, call_args, probe)


def _make_stdio():
    """Text stdio on fds 0-2 as ``python3 -X utf8`` makes them (CPython's ``create_stdio``): a
    ``TextIOWrapper`` with ``mode`` ``'r'`` / ``'w'`` over a ``BufferedReader`` /
    ``BufferedWriter`` over a ``FileIO`` (``closefd=False``) named ``'<stdin>'`` / ``'<stdout>'``
    / ``'<stderr>'``, so ``name`` and ``mode`` read the same at every level (templates such as
    PyRival's FastIO test ``file.mode``). Built once in the server (which never uses them), so
    each forked case gets clean objects for free."""
    import io

    def make(fd, name, mode, errors, line_buffering):
        raw = io.FileIO(fd, mode + "b", closefd=False)
        raw.name = name  # what CPython sets instead of the descriptor number
        buf = io.BufferedReader(raw) if mode == "r" else io.BufferedWriter(raw)
        text = io.TextIOWrapper(buf, encoding="utf-8", errors=errors, newline="\n",
                                line_buffering=line_buffering)
        text.mode = mode
        return text

    return (make(0, "<stdin>", "r", "surrogateescape", False),
            make(1, "<stdout>", "w", "surrogateescape", False),
            make(2, "<stderr>", "w", "backslashreplace", True))


_STDIO = None


def _fresh_stdio():
    stdin, stdout, stderr = _STDIO or _make_stdio()
    sys.stdin = sys.__stdin__ = stdin
    sys.stdout = sys.__stdout__ = stdout
    sys.stderr = sys.__stderr__ = stderr


def _exit_code_of(exc):
    """The exit status of an uncaught ``SystemExit``, as CPython's ``_Py_HandleSystemExit``
    computes it: ``code`` None is 0; an ``int`` (by its real type, never ``isinstance``, which a
    ``__class__`` property fools) is its C ``long`` value (``int.__and__``: a subclass's own
    ``__and__`` is never called), -1 when it does not fit; anything else is printed, status 1."""
    try:
        code = exc.code
    except BaseException:
        code = exc
    if code is None:
        return 0
    if issubclass(type(code), int):
        if not -(1 << 63) <= int.__int__(code) < (1 << 63):
            return 255
        return int.__and__(code, 0xFF)
    try:
        sys.stderr.write(str(code) + "\n")
    except BaseException:
        pass
    return 1


def _finalize(status):
    """What CPython's shutdown does after the program (``Py_FinalizeEx``): call
    ``threading._shutdown`` (of whatever ``sys.modules["threading"]`` holds, as CPython looks it
    up), run the exit functions of the real ``atexit`` module (captured at start-up: a program
    may put anything in ``sys.modules``), flush stdio. An exception in any of them is ignored
    (CPython prints it as unraisable): it never changes the status, but a failed flush makes it
    120."""
    threading = sys.modules.get("threading")
    try:
        # (the real module with no thread to join: nothing to do; its _shutdown joins exactly
        # the threads in _shutdown_locks: a program that clears _active still has them joined)
        if threading is not _THREADING or _THREADING._shutdown_locks:
            threading._shutdown()
    except BaseException:
        pass
    try:
        if _ATEXIT._ncallbacks():
            _ATEXIT._run_exitfuncs()
    except BaseException:
        pass
    for stream in (sys.stdout, sys.__stdout__, sys.stderr, sys.__stderr__):
        if stream is None or _is_closed(stream):
            continue  # CPython's flush_std_files skips closed streams (print, then close)
        try:
            stream.flush()
        except BaseException:
            status = 120  # CPython's exit status when flushing stdio fails (Py_Exit)
    return status


def _is_closed(stream):
    """``stream.closed`` as CPython's ``file_is_closed`` reads it: an error reading it is False."""
    try:
        return bool(stream.closed)
    except BaseException:
        return False


def run_python(server, req, call_args, probe):
    import traceback

    sys.set_int_max_str_digits(0) if hasattr(sys, "set_int_max_str_digits") else None
    # (the random module reseeds itself in a forked child: os.register_at_fork)
    _fresh_stdio()
    if probe is not None:  # compile (and run the prelude) here first: the server must survive
        source, prelude = probe
        try:
            compile_program(source, req.get("filename", "main.py"))
        except SyntaxError:
            traceback.print_exc(limit=0)
            sys.stderr.flush()
            return 1
        except BaseException:
            traceback.print_exc(limit=0)
            sys.stderr.flush()
            return 2
        if prelude:
            try:
                exec(compile(prelude, "<prelude>", "exec"), _new_main(req.get("filename", "main.py")).__dict__)
            except BaseException:
                traceback.print_exc(limit=3)
                sys.stderr.flush()
                return 3
        return 0

    return run_prepared_python(server, req, call_args, _prepare_python_process(server))


def _prepare_python_process(server):
    """Make this process look like ``python3 main.py`` about to run the loaded program: a fresh
    ``__main__`` (the server's pristine one), ``sys.argv``, ``sys.path[0]``. Returns the module.
    The forker does it once; its children inherit it."""
    main = server.main_module or _new_main(server.filename)
    sys.modules["__main__"] = main
    sys.argv = [server.filename]
    sys.path[0] = os.getcwd()
    return main


def run_prepared_python(server, req, call_args, main):
    """Run the loaded program (``mode: python``) or call its function (``mode: call``) in this
    process, prepared by :func:`_prepare_python_process`. Returns the exit status."""
    g = main.__dict__
    status = 0
    dumps = _DUMPS
    if req.get("mode") == "call":
        payload = {"ok": False, "error": "the function did not return"}
        try:
            exec(server.code, g)
            fn = _find_function(g, req["fn_name"])
            spec = _LOADS(call_args.decode()) if call_args else {"args": [], "kwargs": {}}
            args, kwargs = _convert_args(g, fn, spec.get("args", []), spec.get("kwargs", {}))
            value = fn(*args, **kwargs)
            try:
                if value is None and _returns_node(g, fn):
                    value = []  # LeetCode writes an empty list / tree as []
                payload = {"ok": True, "value": value}
                text = dumps(payload, allow_nan=True, default=_plain_default(g))
            except (TypeError, ValueError, RecursionError) as exc:
                payload = {"ok": True, "unserializable": "%s: %s" % (type(exc).__name__, exc),
                           "type": type(value).__name__}
                text = dumps(payload)
        except BaseException as exc:  # an exception inside the call is RE, whatever expected
            text = dumps({"ok": False, "error": "%s: %s" % (type(exc).__name__, str(exc)[:500])})
            _print_program_traceback(exc)
            status = 1
        data = text.encode("utf-8", "surrogateescape")
        del text
        # A return value larger than the output cap is OLE, as a too-long stdout is: the judge
        # would only get it cut (the result blob is capped too), and writing it may hit
        # RLIMIT_FSIZE (EFBIG, SIGXFSZ being ignored).
        cap = int(req.get("limits", {}).get("output_bytes", 64 << 20))
        over = status == 0 and len(data) > cap
        if not over:
            try:
                _write_result(data)
            except OSError as exc:
                if exc.errno != _EFBIG:
                    raise
                over = status == 0  # an exception's short message: still RE
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except BaseException:
                pass
        if over:
            size = len(data)
            del data
            try:
                _write_result(dumps({"ok": False, "output_limit": True,
                                     "error": "output limit exceeded: the return value is %d bytes "
                                              "of JSON, more than %d" % (size, cap)}).encode())
            except OSError:
                pass
            _die_of_sigxfsz()  # the judge reads SIGXFSZ as OLE, as for a native program
        return status
    try:
        exec(server.code, g)
    except SystemExit as exc:
        status = _exit_code_of(exc)
    except BaseException as exc:
        _print_program_traceback(exc)
        status = 1
    return _finalize(status)


def _write_result(data):
    """Replace the call result (fd 3) with ``data``; raises OSError (EFBIG past RLIMIT_FSIZE)."""
    _LSEEK(RESULT_FD, 0, 0)
    _FTRUNCATE(RESULT_FD, 0)
    view = memoryview(data)
    while view:
        view = view[_WRITE(RESULT_FD, view):]


def _die_of_sigxfsz():
    """End this child by SIGXFSZ (file size limit exceeded), whatever the program did to the
    signal's disposition or mask (it runs in the main thread: the harness's own code)."""
    try:
        _SIGMASK(_SIG_UNBLOCK, [_SIGXFSZ])
        _SIGNAL(_SIGXFSZ, _SIG_DFL)
        _KILL(_GETPID(), _SIGXFSZ)
    except BaseException:
        pass


def _new_main(filename):
    import types
    main = types.ModuleType("__main__")
    main.__file__ = os.path.join(os.getcwd(), filename)
    main.__builtins__ = __builtins__
    return main


#: Frames of an uncaught exception's traceback that are printed: the last ones, as CPython's own
#: printer does (its default ``sys.tracebacklimit`` is 1000). Formatting every frame of a
#: recursion 10**6 deep (a program that raised ``sys.setrecursionlimit``) takes longer than the
#: time limit and would turn a quick runtime error into a time limit.
TRACEBACK_FRAMES = 1000


def _print_program_traceback(exc):
    """Print the traceback like ``python3 main.py`` would: the harness's own frames left out, only
    the last ``sys.tracebacklimit`` (at most :data:`TRACEBACK_FRAMES`) frames of each exception
    in the chain, so the exception type and the innermost frames are always there."""
    import traceback
    tb = exc.__traceback__
    while tb is not None and tb.tb_frame.f_code.co_filename == __file__:
        tb = tb.tb_next
    try:
        limit = getattr(sys, "tracebacklimit", TRACEBACK_FRAMES)
        limit = max(0, min(int(limit), TRACEBACK_FRAMES))
    except BaseException:
        limit = TRACEBACK_FRAMES
    try:
        # skip to the last `limit` entries first: walking tb_next is cheap, formatting is not
        depth, t = 0, tb
        while t is not None:
            depth += 1
            t = t.tb_next
        for _ in range(depth - limit):
            tb = tb.tb_next
        traceback.print_exception(type(exc), exc, tb, limit=-limit if limit else 0)
    except BaseException:
        pass


def _find_function(g, fn_name):
    """``Solution().fn_name`` when ``class Solution`` defines it, else the top-level function
    (TACO/LiveCodeBench/verl call-based convention)."""
    sol = g.get("Solution")
    if isinstance(sol, type) and callable(getattr(sol, fn_name, None)):
        return getattr(sol(), fn_name)
    fn = g.get(fn_name)
    if callable(fn):
        return fn
    raise NameError("no function %r and no class Solution with that method" % (fn_name,))


def _annotation_texts(fn):
    """Parameter annotations as normalised text (``Optional[ListNode]`` -> ``ListNode``)."""
    import inspect
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return [], {}
    order, by_name = [], {}
    for p in sig.parameters.values():
        text = _ann_text(p.annotation)
        order.append(text)
        by_name[p.name] = text
    return order, by_name


def _returns_node(g, fn):
    """True when ``fn`` is annotated to return a ``ListNode`` or ``TreeNode``."""
    if "ListNode" not in g and "TreeNode" not in g:
        return False
    import inspect
    try:
        ann = inspect.signature(fn).return_annotation
    except (TypeError, ValueError):
        return False
    return _unwrap_optional(_ann_text(ann)) in ("ListNode", "TreeNode")


def _ann_text(ann):
    """An annotation as text without module prefixes: ``Optional[ListNode]``, ``List[int]``."""
    import re
    text = ann if isinstance(ann, str) else ann.__name__ if isinstance(ann, type) else repr(ann)
    return re.sub(r"\b(?:typing|__main__|builtins)\.", "", text).replace(" ", "")


def _unwrap_optional(text):
    while True:
        if text.startswith("Optional[") and text.endswith("]"):
            text = text[len("Optional["):-1]
        elif text.endswith("|None"):
            text = text[:-len("|None")]
        elif text.startswith("None|"):
            text = text[len("None|"):]
        else:
            return text


def _convert_args(g, fn, args, kwargs):
    """LeetCode linked lists and trees travel as lists; build ``ListNode`` / ``TreeNode`` objects
    (from the program's or prelude's classes) where the parameter is annotated with them."""
    if "ListNode" not in g and "TreeNode" not in g:
        return args, kwargs
    order, by_name = _annotation_texts(fn)
    args = [_from_plain(g, order[i] if i < len(order) else "", a) for i, a in enumerate(args)]
    kwargs = {k: _from_plain(g, by_name.get(k, ""), v) for k, v in kwargs.items()}
    return args, kwargs


def _from_plain(g, ann, value):
    ann = _unwrap_optional(ann)
    if not isinstance(value, list):
        return value
    for prefix in ("List[", "list["):
        if ann.startswith(prefix) and ann.endswith("]"):
            inner = ann[len(prefix):-1]
            return [_from_plain(g, inner, v) for v in value]
    if ann == "ListNode" and g.get("ListNode") is not None:
        cls = g["ListNode"]
        head = None
        for v in reversed(value):
            node = cls(v)
            node.next = head
            head = node
        return head
    if ann == "TreeNode" and g.get("TreeNode") is not None:
        cls = g["TreeNode"]
        if not value or value[0] is None:
            return None
        root = cls(value[0])
        queue, qi, i = [root], 0, 1
        while qi < len(queue) and i < len(value):
            node = queue[qi]
            qi += 1
            if i < len(value) and value[i] is not None:
                node.left = cls(value[i])
                queue.append(node.left)
            i += 1
            if i < len(value) and value[i] is not None:
                node.right = cls(value[i])
                queue.append(node.right)
            i += 1
        return root
    return value


def _plain_default(g):
    """``json.dumps(default=...)`` for values JSON cannot hold natively: ``ListNode`` / ``TreeNode``
    become their list forms (LeetCode: level order, trailing nulls dropped); numpy scalars and
    arrays become Python numbers and lists (APPS/TACO harnesses compare them with ``==``, so
    ``np.int64(6)`` is 6). Anything else (a generator, a custom object) stays unserialisable."""
    lcls, tcls = g.get("ListNode"), g.get("TreeNode")
    np = sys.modules.get("numpy")

    def default(value):
        if lcls is not None and isinstance(value, lcls):
            out, seen = [], 0
            while value is not None and seen < 10 ** 6:
                out.append(value.val)
                value = value.next
                seen += 1
            return out
        if tcls is not None and isinstance(value, tcls):
            out, queue, qi = [], [value], 0
            while qi < len(queue) and qi < 10 ** 6:
                node = queue[qi]
                qi += 1
                if node is None:
                    out.append(None)
                    continue
                out.append(node.val)
                queue.append(node.left)
                queue.append(node.right)
            while out and out[-1] is None:
                out.pop()
            return out
        if np is not None and isinstance(value, (np.generic, np.ndarray)):
            return value.tolist()  # np.generic.tolist() is .item()
        raise TypeError("%s is not a JSON value" % type(value).__name__)

    return default


def main():
    """``server.py IN_FD OUT_FD [--scratch DIR:DIR...] [--site DIR:DIR...]``."""
    in_fd, out_fd = int(sys.argv[1]), int(sys.argv[2])
    opts = dict(zip(sys.argv[3::2], sys.argv[4::2]))
    scratch = tuple(opts["--scratch"].split(":")) if opts.get("--scratch") else SCRATCH_DIRS
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
    global _LIBC
    try:
        import ctypes
        _LIBC = ctypes.CDLL(None)
        global _RAW_FORK
        _RAW_FORK = ctypes.PyDLL(None, use_errno=True).fork
        _LIBC.prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE 0: no ptrace, no /proc access by programs
    except Exception:
        _LIBC = None
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
    global _STDIO
    _STDIO = _make_stdio()
    global _ATEXIT, _THREADING
    import atexit  # the real modules, whatever a program later puts in sys.modules (_finalize)
    _ATEXIT, _THREADING = atexit, sys.modules["threading"]
    for fd in (in_fd, out_fd):
        os.set_inheritable(fd, False)
    global _BASELINE
    _BASELINE = _sched_state(0)
    import gc
    gc.collect()
    gc.freeze()
    Server(in_fd, out_fd, scratch).serve()


if __name__ == "__main__":
    main()
