"""One isolated environment for one submission, many runs inside it.

:class:`Sandbox` starts ``bwrap`` (new user, PID, mount, network, IPC, UTS and cgroup namespaces,
no network, read-only ``/usr``, private size-capped tmpfs ``/work``, ``/tmp`` and ``/dev/shm``,
an unprivileged uid, nested user namespaces disabled) with the fork-server
(:mod:`arbiter.sandbox.server_main`) as its PID 1, puts that server into fresh cgroup v1 groups
(memory, pids, cpuacct), and then runs cases by asking the server to fork:

- :meth:`Sandbox.run` — ``execve`` a native binary (e.g. a compiled C++ program or ``g++``);
- :meth:`Sandbox.load_python` once, then :meth:`Sandbox.run_python` / :meth:`Sandbox.call_python`
  per case — a forked child of the warm interpreter runs the program.

The program sees ``/prog`` (its files, read-only), ``/work`` (cwd, writable, wiped after each
case), ``/tmp`` and ``/dev/shm`` (writable, wiped after each case), ``/usr`` and ``/proc`` (its own
PID namespace only). It never sees expected outputs, the judge's files, the repository or ``$HOME``.

:func:`run` is the one-shot form: a sandbox for one run.
"""

from __future__ import annotations

import json
import os
import select
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from arbiter.sandbox import cgroups, seccomp
from arbiter.sandbox.config import SandboxConfig
from arbiter.sandbox.execution import Execution, Status
from arbiter.sandbox.limits import MiB, Limits
from arbiter.sandbox.guest.protocol import LEN, MAX_HEADER, encode_frame

#: The guest server's folder (bind-mounted into the sandbox) and its start-up script.
GUEST_DIR = Path(__file__).with_name("guest")
SERVER_PATH = GUEST_DIR / "__main__.py"
#: Memory the server itself may use on top of the program's limit (its own reads and writes).
SERVER_HEADROOM = 32 * MiB
#: Inputs larger than this (bytes) are written into the sandbox before a run starts, so the
#: program is not charged for its input (contest judges do not count it).
STAGE_STDIN_BYTES = 1 * MiB
#: Extra seconds the judge waits for the server's answer beyond the case's wall limit.
REPLY_GRACE = 5.0
_EXTRA_TASKS = 2  # the server itself (+ one for exec)
#: Seconds the wipe after a run may take per CPU second the run had (what a program creates in the
#: scratch dirs costs it CPU; removing it costs the server up to ~3.5 times as much, for a chain
#: of directories): the reply, sent once the wipe is done, may be that much later.
CLEANUP_PER_CPU_SECOND = 5.0
#: Seconds between two looks at the sandbox's CPU use while a run is going on.
WATCH_INTERVAL = 0.1
#: A run is stopped once its processes used this many CPU seconds beyond its CPU limit. Above
#: :func:`_classify`'s own 0.05 s tolerance: a run stopped this way is one that :func:`_classify`
#: would call time_limit anyway, it only ends sooner.
CPU_KILL_MARGIN = 0.1

#: Host directory of each sandbox: ``<tempdir>/arbiter-sbx-<judge pid>-XXXXXXXX``.
TMP_PREFIX = "arbiter-sbx-"
#: Seconds between two sweeps for directories of dead judges (the first sandbox of a process
#: always sweeps).
PRUNE_INTERVAL = 600.0
_next_prune = 0.0
_prune_lock = threading.Lock()

_cgroups_ok: tuple[bool, str] | None = None
_cgroups_lock = threading.Lock()


#: The sandbox's writable tmpfs dirs, wiped after every run: no mount may sit inside them.
SCRATCH_DIRS = ("/tmp", "/dev/shm", "/work")


class SandboxError(RuntimeError):
    """The sandbox failed for a reason that is ours (bwrap missing, cgroup write failed, the server
    died). Never a program verdict: callers retry, then report ``SANDBOX_ERROR``."""


class UnsafeModeRefused(SandboxError):
    """Isolation is unavailable and the loud opt-in for unisolated runs was not given."""


def _cgroups_available() -> tuple[bool, str]:
    global _cgroups_ok
    with _cgroups_lock:
        if _cgroups_ok is None:
            _cgroups_ok = cgroups.available()
        return _cgroups_ok


def _prune_stale_dirs() -> int:
    """Remove the host directories of sandboxes whose judge process died without closing them
    (e.g. SIGKILLed): ``arbiter-sbx-<pid>-*`` in the temp directory, owned by this user, whose
    ``pid`` is not alive. At most once per :data:`PRUNE_INTERVAL` per process. Directories of live
    processes, and of the old unnamed form ``arbiter-sbx-XXXXXXXX``, are left alone. Returns how
    many were removed."""
    global _next_prune
    with _prune_lock:
        now = time.monotonic()
        if now < _next_prune:
            return 0
        _next_prune = now + PRUNE_INTERVAL
    base = tempfile.gettempdir()
    removed = 0
    try:
        entries = list(os.scandir(base))
    except OSError:
        return 0
    me = os.geteuid()
    for e in entries:
        pid, sep, rest = e.name[len(TMP_PREFIX):].partition("-")
        if (not e.name.startswith(TMP_PREFIX) or not sep or not rest or not pid.isdigit()
                or cgroups.pid_alive(int(pid))):
            continue
        try:
            st = e.stat(follow_symlinks=False)
            if not e.is_dir(follow_symlinks=False) or st.st_uid != me:
                continue
        except OSError:
            continue
        shutil.rmtree(e.path, ignore_errors=True)
        removed += not os.path.lexists(e.path)
    return removed


def _root_layout_args() -> list[str]:
    args: list[str] = ["--ro-bind", "/usr", "/usr"]
    for name in ("bin", "sbin", "lib", "lib32", "lib64", "libx32"):
        p = Path("/") / name
        if p.is_symlink():
            args += ["--symlink", os.readlink(p), str(p)]
        elif p.is_dir():
            args += ["--ro-bind", str(p), str(p)]
    for etc in ("/etc/alternatives", "/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d",
                "/etc/localtime"):
        args += ["--ro-bind-try", etc, etc]
    return args


_ROOT_LAYOUT: list[str] | None = None


def _limits_payload(limits: Limits) -> dict[str, Any]:
    return {
        "cpu_seconds": limits.cpu_seconds,
        "wall_seconds": limits.wall,
        "output_bytes": limits.output_bytes,
        "file_bytes": limits.files,
        "stderr_bytes": limits.stderr_bytes,
        "open_files": limits.open_files,
        "stack_bytes": limits.stack,
    }


class Sandbox:
    """An isolated environment for one submission; see the module docstring.

    Parameters:
    - ``files``: name -> bytes, placed read-only in ``/prog`` (mode 0755, so binaries run).
    - ``mounts``: ``(host_path, sandbox_path)`` pairs shown read-only (e.g. a PCH directory).
    - ``limits``: the sandbox-wide limits: memory (cgroup), processes (cgroup ``pids.max``) and
      scratch size; the per-run CPU/wall/output limits can be given to each run.
    - ``config``: :class:`SandboxConfig` (interpreter, isolation).

    Raises :class:`SandboxError` when the sandbox cannot be started. Use as a context manager;
    :meth:`close` kills every process and removes every file the sandbox had.
    Not thread-safe: one thread drives one sandbox.
    """

    def __init__(self, *, files: Mapping[str, bytes] | None = None,
                 mounts: Sequence[tuple[str, str]] = (), limits: Limits | None = None,
                 config: SandboxConfig | None = None):
        self.limits = limits or Limits()
        self.config = config or SandboxConfig()
        self._files = dict(files or {})
        self._mounts = list(mounts)
        for _, inside in self._mounts:
            if any(inside == d or inside.startswith(d + "/") for d in SCRATCH_DIRS):
                raise ValueError(f"mount {inside!r} is inside a scratch dir {SCRATCH_DIRS}: the wipe after each run "
                                 f"would try to remove it; mount it elsewhere")
        self._proc: subprocess.Popen | None = None
        self._cg: cgroups.SandboxCgroups | None = None
        self._tmp: str | None = None
        self._to_server = self._from_server = -1
        self._broken = ""
        self._memory_limit = 0
        self._server_pid = 0
        self._request_id = 0
        self._schedstat_fd = -1  # the server's /proc/<pid>/schedstat (see _server_cpu_ns)
        self.hello: dict[str, Any] = {}
        self.python_loaded = False
        self.load_stage = ""
        self.start()

    # ---- paths as the program sees them ---------------------------------------------------------
    @property
    def prog_dir(self) -> str:
        """Where ``files`` are, inside the sandbox."""
        return "/prog" if self.config.isolated else os.path.join(self._tmp or "", "prog")

    @property
    def work_dir(self) -> str:
        """The program's writable working directory, inside the sandbox."""
        return "/work" if self.config.isolated else os.path.join(self._tmp or "", "work")

    # ---- lifecycle ----------------------------------------------------------------------------
    def start(self) -> None:
        """Start bwrap + the server and attach it to fresh cgroups. Raises SandboxError."""
        global _ROOT_LAYOUT
        cfg = self.config
        if not cfg.isolated:
            _warn_unsafe()
        elif not os.access(cfg.bwrap, os.X_OK):
            raise SandboxError(f"bubblewrap not found at {cfg.bwrap}; install it (apt-get install bubblewrap)")
        if not os.access(cfg.python, os.X_OK):
            raise SandboxError(f"the Python for untrusted code ({cfg.python}, $ARBITER_SANDBOX_PYTHON) "
                               "is not an executable file")
        _prune_stale_dirs()
        self._tmp = tempfile.mkdtemp(prefix=f"{TMP_PREFIX}{os.getpid()}-")
        os.chmod(self._tmp, 0o755)
        prog = os.path.join(self._tmp, "prog")
        os.mkdir(prog, 0o755)
        for name, data in self._files.items():
            if "/" in name or name in ("", ".", ".."):
                raise ValueError(f"sandbox file names must be plain names, got {name!r}")
            path = os.path.join(prog, name)
            with open(path, "wb") as f:
                f.write(data)
            os.chmod(path, 0o755)

        ok, why = _cgroups_available()
        if ok:
            try:
                self._memory_limit = self.limits.memory_bytes + SERVER_HEADROOM
                self._cg = cgroups.SandboxCgroups.create(
                    memory_bytes=self._memory_limit,
                    processes=self.limits.processes + _EXTRA_TASKS)
            except cgroups.CgroupError as exc:
                self._cleanup_files()
                raise SandboxError(str(exc)) from exc

        to_r, to_w = os.pipe()
        from_r, from_w = os.pipe()
        info_r, info_w = os.pipe() if cfg.isolated else (-1, -1)
        seccomp_fd = -1
        bpf = seccomp.filter_bytes() if cfg.isolated else None
        if bpf is not None:
            seccomp_fd = os.memfd_create("seccomp")  # bwrap reads the filter from it
            os.write(seccomp_fd, bpf)
            os.lseek(seccomp_fd, 0, os.SEEK_SET)
        env = {"PATH": "/usr/bin:/bin", "HOME": "/work", "LANG": "C.UTF-8", "TMPDIR": "/tmp"}
        py = [cfg.python, "-I", "-S", "-B", "-X", "utf8"]
        if cfg.isolated:
            if _ROOT_LAYOUT is None:
                _ROOT_LAYOUT = _root_layout_args()
            scratch = self.limits.scratch_bytes
            argv = [cfg.bwrap, "--unshare-all", "--unshare-user", "--disable-userns",
                    "--die-with-parent", "--new-session", "--as-pid-1", "--cap-drop", "ALL",
                    "--hostname", "sandbox", *_ROOT_LAYOUT]
            for d in cfg.python_ro_binds() + cfg.extra_ro_binds:
                argv += ["--ro-bind", d, d]
            argv += ["--proc", "/proc", "--dev", "/dev",
                     "--perms", "1777", "--size", str(scratch), "--tmpfs", "/tmp",
                     "--perms", "1777", "--size", str(scratch), "--tmpfs", "/dev/shm",
                     "--perms", "0755", "--size", str(scratch), "--tmpfs", "/work",
                     "--ro-bind", prog, "/prog",
                     "--ro-bind", str(GUEST_DIR), "/arbiter/guest"]
            for host, inside in self._mounts:
                argv += ["--ro-bind", host, inside]
            if seccomp_fd >= 0:
                argv += ["--seccomp", str(seccomp_fd)]
            argv += ["--remount-ro", "/", "--chdir", "/work", "--info-fd", str(info_w),
                     *py, "/arbiter/guest/__main__.py", str(to_r), str(from_w),
                     "--site", ":".join(cfg.python_site or ())]
            cwd = "/"
        else:
            work = os.path.join(self._tmp, "work")
            tmp = os.path.join(self._tmp, "tmp")
            os.mkdir(work)
            os.mkdir(tmp)
            env.update(HOME=work, TMPDIR=tmp)
            argv = [*py, str(SERVER_PATH), str(to_r), str(from_w), "--scratch", f"{work}:{tmp}",
                    "--site", ":".join(cfg.python_site or ())]
            cwd = work
        kwargs: dict[str, Any] = {}
        if os.geteuid() == 0 and cfg.isolated:
            kwargs.update(user=cfg.uid, group=cfg.gid, extra_groups=[])
        pass_fds = tuple(fd for fd in (to_r, from_w, info_w, seccomp_fd) if fd >= 0)
        try:
            self._proc = subprocess.Popen(argv, pass_fds=pass_fds, env=env, cwd=cwd,
                                          stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                          stderr=subprocess.PIPE, **kwargs)
        except OSError as exc:
            for fd in (to_r, to_w, from_r, from_w, info_r, info_w, seccomp_fd):
                if fd >= 0:
                    os.close(fd)
            self.close()
            raise SandboxError(f"cannot start the sandbox: {exc}") from exc
        for fd in pass_fds:
            os.close(fd)
        self._to_server, self._from_server = to_w, from_r
        try:
            if cfg.isolated:
                info = self._read_info(info_r, deadline=time.monotonic() + 10)
                server_pid = int(info["child-pid"])
            else:
                server_pid = self._proc.pid
            self._server_pid = server_pid
            if self._cg is not None:
                self._cg.attach(server_pid)
            self.hello, _ = self._read_frame(time.monotonic() + 20)
        except (SandboxError, cgroups.CgroupError, EOFError, OSError, ValueError, KeyError) as exc:
            detail = self._stderr_tail()
            self.close()
            raise SandboxError(f"the sandbox did not start: {exc}{detail}") from exc
        finally:
            if info_r >= 0:
                os.close(info_r)

    def _read_info(self, fd: int, deadline: float) -> dict[str, Any]:
        buf = b""
        while True:
            timeout = deadline - time.monotonic()
            if timeout <= 0:
                raise SandboxError("timed out waiting for bwrap's info")
            r, _, _ = select.select([fd], [], [], timeout)
            if not r:
                continue
            chunk = os.read(fd, 4096)
            if not chunk:
                break
            buf += chunk
            try:
                return json.loads(buf)
            except ValueError:
                continue
        if not buf:
            raise SandboxError("bwrap exited before starting the sandbox")
        return json.loads(buf)

    def _stderr_tail(self) -> str:
        if self._proc is None or self._proc.stderr is None:
            return ""
        try:
            os.set_blocking(self._proc.stderr.fileno(), False)
            data = self._proc.stderr.read(4096) or b""
        except (OSError, ValueError):
            data = b""
        text = data.decode("utf-8", "replace").strip()
        try:
            code = self._proc.wait(timeout=0.2)
        except subprocess.TimeoutExpired:
            code = None
        status = f"; bwrap exit status {code}" if code is not None else ""
        return f"{status} (stderr: {text})" if text else status

    def close(self) -> None:
        """Stop the server, kill every process of the sandbox, remove its cgroups and files."""
        if self._schedstat_fd >= 0:
            os.close(self._schedstat_fd)
            self._schedstat_fd = -1
        for fd in (self._to_server, self._from_server):
            if fd >= 0:
                try:
                    os.close(fd)
                except OSError:
                    pass
        self._to_server = self._from_server = -1
        if self._proc is not None:
            if self._proc.poll() is None:
                try:
                    self._proc.wait(timeout=0.5)
                except subprocess.TimeoutExpired:
                    self._proc.kill()
                    try:
                        self._proc.wait(timeout=5)
                    except subprocess.TimeoutExpired:
                        pass
            if self._proc.stderr is not None:
                self._proc.stderr.close()
            self._proc = None
        if self._cg is not None:
            self._cg.destroy()
            self._cg = None
        self._cleanup_files()

    def _cleanup_files(self) -> None:
        if self._tmp:
            shutil.rmtree(self._tmp, ignore_errors=True)
            self._tmp = None

    def __enter__(self) -> "Sandbox":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            if self._proc is not None:
                self.close()
        except Exception:
            pass

    def stray_processes(self) -> list[int]:
        """PIDs (inside the sandbox) of processes left between runs: everything except the
        server and its forker (the process Python cases are forked from). Empty after every run (the server kills the rest)."""
        reply, _ = self._request({"op": "ps"}, [], timeout=10)
        return list(reply.get("pids", []))

    def task_count(self) -> int | None:
        """Processes and threads alive in the sandbox now (the server counts as one), from its
        pids cgroup; ``None`` without cgroups."""
        return len(self._cg.pids()) if self._cg is not None else None

    @property
    def cgroup_dirs(self) -> list[Path]:
        """The sandbox's cgroup directories (empty without cgroups); gone after :meth:`close`."""
        return list(self._cg.paths.values()) if self._cg is not None else []

    @property
    def alive(self) -> bool:
        """False once the server died or the sandbox was closed."""
        return self._proc is not None and not self._broken and self._proc.poll() is None

    # ---- framing ------------------------------------------------------------------------------
    def _send(self, header: dict[str, Any], blobs: Sequence[bytes] = ()) -> None:
        if self._to_server < 0:
            raise SandboxError(self._broken or "the sandbox is closed")
        data = memoryview(encode_frame(header, blobs))
        try:
            while data:
                n = os.write(self._to_server, data)
                data = data[n:]
        except BrokenPipeError as exc:
            self._broken = "the sandbox server is gone"
            raise SandboxError(self._broken) from exc

    def _read_exact(self, n: int, deadline: float, watch: Callable[[], bool] | None = None) -> bytes:
        """``n`` bytes from the server. ``watch`` (optional) is called every
        :data:`WATCH_INTERVAL` seconds while nothing arrives, until it returns True."""
        chunks = []
        fd = self._from_server
        while n:
            timeout = deadline - time.monotonic()
            if timeout <= 0:
                raise TimeoutError("the sandbox server did not answer in time")
            r, _, _ = select.select([fd], [], [], min(timeout, WATCH_INTERVAL) if watch else timeout)
            if not r:
                if watch is not None and watch():
                    watch = None
                continue
            chunk = os.read(fd, min(n, 1 << 20))
            if not chunk:
                raise EOFError("the sandbox server closed its pipe")
            chunks.append(chunk)
            n -= len(chunk)
        return b"".join(chunks)

    def _read_frame(self, deadline: float, watch: Callable[[], bool] | None = None
                    ) -> tuple[dict[str, Any], list[bytes]]:
        (n,) = LEN.unpack(self._read_exact(4, deadline, watch))
        if n > MAX_HEADER:
            raise SandboxError("oversized frame from the sandbox server")
        header = json.loads(self._read_exact(n, deadline))
        sizes = header.get("blobs", [])
        if not isinstance(sizes, list) or len(sizes) > 8:
            raise SandboxError("malformed frame from the sandbox server")
        blobs = [self._read_exact(int(s), deadline) for s in sizes]
        return header, blobs

    def _request(self, header: dict[str, Any], blobs: Sequence[bytes], timeout: float,
                 watch: Callable[[], bool] | None = None) -> tuple[dict[str, Any], list[bytes]]:
        """Send one request and read its reply, which must carry the request's ``id`` (a reply
        to another request means the two sides are out of step: the sandbox is given up)."""
        self._request_id += 1
        self._send(dict(header, id=self._request_id), blobs)
        try:
            reply, rblobs = self._read_frame(time.monotonic() + timeout, watch)
            if reply.get("id") != self._request_id:
                raise ValueError(f"reply {reply.get('id')!r} to request {self._request_id}")
        except (EOFError, TimeoutError, ValueError) as exc:
            self._broken = f"the sandbox server failed: {exc}"
            self._kill_now()
            raise SandboxError(self._broken) from exc
        if reply.get("op") == "error":
            raise SandboxError(f"sandbox server error: {reply.get('error')}")
        return reply, rblobs

    def _kill_now(self) -> None:
        if self._proc is not None and self._proc.poll() is None:
            self._proc.kill()
        if self._cg is not None:
            try:
                self._cg.kill_all()
            except cgroups.CgroupError:
                pass

    # ---- files --------------------------------------------------------------------------------
    def put(self, name: str, data: bytes, mode: int = 0o644) -> None:
        """Write ``data`` to ``work_dir/name`` (kept across cases). Raises SandboxError."""
        if "/" in name or name in ("", ".", ".."):
            raise ValueError(f"plain file name expected, got {name!r}")
        self._request({"op": "put", "path": os.path.join(self.work_dir, name), "mode": mode},
                      [data], timeout=30)

    def fetch(self, path: str, max_bytes: int = 256 * MiB) -> bytes | None:
        """Read a regular file from inside the sandbox (``None`` when missing or too large)."""
        return self.fetch_or_size(path, max_bytes)[0]

    def fetch_or_size(self, path: str, max_bytes: int) -> tuple[bytes | None, int | None]:
        """``(data, None)`` for a regular file of at most ``max_bytes``; ``(None, size)`` when
        it is larger (nothing of it leaves the sandbox); ``(None, None)`` when it is missing or
        not a regular file."""
        if not path.startswith("/"):
            path = os.path.join(self.work_dir, path)
        reply, blobs = self._request({"op": "fetch", "path": path, "max_bytes": max_bytes}, [],
                                     timeout=60)
        if reply.get("ok"):
            return blobs[0], None
        size = reply.get("size")
        return None, int(size) if isinstance(size, int) else None

    # ---- runs ---------------------------------------------------------------------------------
    def run(self, argv: Sequence[str], stdin: bytes = b"", limits: Limits | None = None, *,
            cwd: str | None = None, env: Mapping[str, str] | None = None,
            keep: Sequence[str] = (), log_fd: int = 0) -> Execution:
        """Fork+exec ``argv`` (absolute path first) with ``stdin``; see :class:`Execution`.

        Scratch files are wiped after every run except those named in ``keep`` (relative to
        :attr:`work_dir`), which stay for :meth:`fetch` and later runs (e.g. a compiled binary).

        ``log_fd`` (e.g. 3): give the program a pipe on that descriptor, read by the server while
        it runs; its last ``limits.stderr_bytes`` come back as :attr:`Execution.log`. Because the
        pipe keeps the order of writes, what the process wrote last (e.g. valgrind's summary at
        exit) cannot be overwritten by anything it ran earlier.
        """
        return self._run({"mode": "exec", "argv": list(argv), "cwd": cwd, "log_fd": int(log_fd),
                          "env": dict(env) if env else None,
                          "keep": [k if k.startswith("/") else os.path.join(self.work_dir, k)
                                   for k in keep]}, stdin, limits)

    def load_python(self, source: str, prelude: str = "", filename: str = "main.py",
                    limits: Limits | None = None) -> str | None:
        """Compile a Python program once for the following runs.

        Returns ``None`` when it compiled, else the compiler's message (a ``SyntaxError``, which
        the judge reports as ``CE``); :attr:`load_stage` is then ``"program"``, or ``"prelude"``
        when the task's prelude failed (the task's fault, not the program's). The prelude runs
        once in the server, into the ``__main__`` module each case starts from. A module-level ``return`` is accepted the way the APPS/TACO
        harness accepts it (the program body is wrapped in a function). Raises SandboxError.
        """
        lim = limits or self.limits
        reply, _ = self._request({"op": "load", "filename": filename,
                                  "limits": _limits_payload(lim.with_(cpu_seconds=10, wall_seconds=20))},
                                 [source.encode("utf-8", "surrogateescape"),
                                  prelude.encode("utf-8", "surrogateescape")], timeout=60)
        self.load_stage = reply.get("stage", "program")
        if reply.get("ok"):
            self.python_loaded = True
            return None
        return (reply.get("error") or "the program could not be compiled").strip()

    def run_python(self, stdin: bytes = b"", limits: Limits | None = None) -> Execution:
        """Run the loaded program as ``__main__`` in a forked child, like ``python3 main.py``."""
        if not self.python_loaded:
            raise SandboxError("load_python() first")
        return self._run({"mode": "python"}, stdin, limits)

    def call_python(self, fn_name: str, args: Sequence[Any] = (), kwargs: Mapping[str, Any] | None = None,
                    limits: Limits | None = None, *, call_json: str | bytes | None = None) -> Execution:
        """Run the loaded program's module code, then call ``fn_name`` (``Solution().fn_name``
        when ``class Solution`` defines it) with JSON-compatible ``args`` / ``kwargs``.

        ``Execution.result`` holds the harness's JSON: ``{"ok": true, "value": ...}``,
        ``{"ok": true, "unserializable": "...", "type": "..."}`` or ``{"ok": false, "error": ...}``;
        ``None`` when the child died before writing it. A value whose JSON is larger than
        ``limits.output_bytes`` is ``Status.OUTPUT_LIMIT`` (the result is then
        ``{"ok": false, "output_limit": true, "error": ...}``). Raises TypeError when the args are
        not JSON, ValueError when they hold an integer longer than this process's int/str digit
        limit: a caller with such values passes ``call_json`` instead, the JSON text of
        ``{"args": [...], "kwargs": {...}}`` it encoded itself (the judge does, with
        :func:`arbiter.judge.jsonvalues.dumps`; inside the sandbox integers of any length decode).
        """
        if not self.python_loaded:
            raise SandboxError("load_python() first")
        if call_json is not None:
            payload = call_json.encode() if isinstance(call_json, str) else bytes(call_json)
        else:
            payload = json.dumps({"args": list(args), "kwargs": dict(kwargs or {})}).encode()
        return self._run({"mode": "call", "fn_name": fn_name}, b"", limits, payload)

    def _run(self, req: dict[str, Any], stdin: bytes, limits: Limits | None,
             call_payload: bytes | None = None) -> Execution:
        """One run, with the memory accounting of contest judges: the program is charged for its
        own memory, not for its input (a large stdin is written into the sandbox before the
        measurement starts) nor for its stdout (held in a memfd; subtracted). With cgroups, the
        run is stopped once its processes' CPU passes the limit (:meth:`_cpu_watch`). The
        server's own CPU (:meth:`_server_cpu_ns`: serving the request, wiping the scratch dirs
        before it replies) is never counted as the program's, and the reply may come
        :data:`CLEANUP_PER_CPU_SECOND` seconds per CPU second later while that wipe goes on."""
        lim = limits or self.limits
        req = dict(req, op="run", limits=_limits_payload(lim))
        cg = self._cg
        if not self.config.isolated or cg is None:
            req["limits"]["processes"] = lim.processes
        if cg is None:  # no memory cgroup: fall back to an address-space limit
            req["limits"]["address_space_bytes"] = lim.memory_bytes + 64 * MiB
        try:
            staged = 0
            base = lim.memory_bytes + SERVER_HEADROOM + lim.output_bytes
            if cg is not None and len(stdin) > STAGE_STDIN_BYTES:
                # while it is copied in, the input exists twice (the server's buffer, the memfd)
                self._memory_limit = base + 2 * _pages(len(stdin))
                cg.set_memory_limit(self._memory_limit)
                self._request({"op": "stdin", "mode": req.get("mode")}, [stdin], timeout=60)
                req["stdin_staged"] = True
                staged, stdin = len(stdin), b""
            if cg is not None:
                limit = base + _pages(staged)
                if limit != self._memory_limit:
                    self._memory_limit = limit
                    cg.set_memory_limit(limit)
                cg.reset_memory_peak()
                mem_before = cg.memory_usage()
                oom_before = cg.oom_kills()
                cpu_before = cg.cpu_ns() - self._server_cpu_ns()
            blobs = [stdin] if call_payload is None else [stdin, call_payload]
            watch = self._cpu_watch(cg, cpu_before, lim) if cg is not None and self._server_pid else None
            timeout = lim.wall + REPLY_GRACE + CLEANUP_PER_CPU_SECOND * (lim.cpu_seconds + CPU_KILL_MARGIN)
            reply, rblobs = self._request(req, blobs, timeout=timeout, watch=watch)
            mem_delta = oom = 0
            cg_cpu = 0.0
            if cg is not None:
                out_pages = _pages(int(reply.get("stdout_size", 0)))
                mem_delta = max(0, cg.memory_peak() - mem_before - out_pages)
                oom = cg.oom_kills() - oom_before
                cg_cpu = (cg.cpu_ns() - self._server_cpu_ns() - cpu_before) / 1e9
        except cgroups.CgroupError as exc:
            return Execution(Status.SANDBOX_ERROR, detail=f"cgroup failure: {exc}")
        except SandboxError as exc:
            return Execution(Status.SANDBOX_ERROR, detail=str(exc))
        parts = dict(zip(reply.get("parts", ["stdout", "stderr", "result"]), rblobs))
        ex = _classify(reply, lim, parts.get("stdout", b""), parts.get("stderr", b""),
                       parts.get("result"), mem_delta, oom, cg_cpu, have_memcg=cg is not None)
        ex.log = parts.get("log")
        return ex

    def _server_cpu_ns(self) -> int:
        """CPU nanoseconds the sandbox's server itself has used (its ``/proc/<pid>/schedstat``,
        kept open; 0 when unreadable)."""
        try:
            if self._schedstat_fd < 0:
                self._schedstat_fd = os.open(f"/proc/{self._server_pid}/schedstat",
                                             os.O_RDONLY | os.O_CLOEXEC)
            return int(os.pread(self._schedstat_fd, 128, 0).split(None, 1)[0])
        except (OSError, ValueError, IndexError):
            return 0

    def _cpu_watch(self, cg: cgroups.SandboxCgroups, cpu_before: int, lim: Limits) -> Callable[[], bool]:
        """A ``watch`` for :meth:`_read_exact` that stops a run as soon as the sandbox's
        processes together have used more CPU than ``lim.cpu_seconds`` (+ :data:`CPU_KILL_MARGIN`):
        a fork bomb spinning on failed forks, or a program whose children burn CPU it never waits
        for, would otherwise run to the wall limit. Every process of the run is killed (never
        the server); the server then reports the death and :func:`_classify` sees the group's
        CPU over the limit: ``time_limit``, the status the run would have got at its end anyway.
        Returns True once it acted (or the reply is already on its way)."""
        limit_ns = int((lim.cpu_seconds + CPU_KILL_MARGIN) * 1e9)
        server_pid, fd = self._server_pid, self._from_server

        def watch() -> bool:
            try:
                if cg.cpu_ns() - self._server_cpu_ns() - cpu_before <= limit_ns:
                    return False
                if select.select([fd], [], [], 0)[0]:
                    return True  # the run just ended: its reply is here, leave the forker alone
                cg.kill_except(server_pid)
            except (cgroups.CgroupError, OSError):
                pass  # never leave the reply unread: the wall limit still ends the run
            return True

        return watch


def _pages(n: int) -> int:
    """``n`` bytes rounded up to whole 4 KiB pages."""
    return (n + 4095) // 4096 * 4096


def _classify(reply: dict[str, Any], lim: Limits, stdout: bytes, stderr: bytes, result: bytes | None,
              mem_delta: int, oom_kills: int, cg_cpu: float, have_memcg: bool) -> Execution:
    """Turn the server's raw observations into a :class:`Status` (precedence: wall timeout, OOM
    kill or memory over the limit, CPU over the limit, output over the cap, signal, exit code);
    first of all, a run in a sandbox whose server the program changed (``sandbox_tampered``) is a
    runtime error."""
    sig = reply.get("signal")
    code = reply.get("exit_code")
    cpu = float(reply.get("cpu_seconds", 0.0))
    if cg_cpu > cpu + 0.05:  # CPU burnt by processes the program did not wait for
        cpu = cg_cpu
    maxrss = int(reply.get("maxrss_bytes", 0))
    peak = max(maxrss, mem_delta)
    out_size, err_size = int(reply.get("stdout_size", 0)), int(reply.get("stderr_size", 0))
    mem_exceeded = (oom_kills > 0 or mem_delta > lim.memory_bytes) if have_memcg else (
        maxrss > lim.memory_bytes)
    if reply.get("sandbox_tampered"):
        status, detail = Status.RUNTIME_ERROR, (
            "the program changed the sandbox server's own "
            f"{reply['sandbox_tampered']} (a process of the same uid may: prlimit, setpriority, "
            "sched_setaffinity on PID 1); this run and every later one in the sandbox fail")
    elif reply.get("wall_timeout"):
        status, detail = Status.TIME_LIMIT, f"wall time limit exceeded ({lim.wall:g} s)"
    elif mem_exceeded:
        status, detail = Status.MEMORY_LIMIT, f"memory limit exceeded ({lim.memory_bytes // MiB} MiB)"
    elif sig == signal.SIGXCPU or cpu > lim.cpu_seconds:
        status, detail = Status.TIME_LIMIT, f"CPU time limit exceeded ({lim.cpu_seconds:g} s)"
    elif sig == signal.SIGXFSZ or out_size > lim.output_bytes:
        status, detail = Status.OUTPUT_LIMIT, f"output limit exceeded ({lim.output_bytes} bytes)"
    elif sig is not None:
        try:
            name = signal.Signals(sig).name
        except ValueError:
            name = f"signal {sig}"
        status, detail = Status.RUNTIME_ERROR, f"killed by {name}"
    elif reply.get("status_lost"):
        status, detail = Status.RUNTIME_ERROR, ("exit status unknown: a process of the program "
                                                "killed the sandbox's forker, which had reaped it")
    elif code != 0:
        status, detail = Status.RUNTIME_ERROR, f"exit code {code}"
    else:
        status, detail = Status.OK, ""
    return Execution(
        status=status, exit_code=code, signal=sig, cpu_seconds=cpu,
        wall_seconds=float(reply.get("wall_seconds", 0.0)), peak_memory_bytes=peak,
        stdout=stdout, stderr=stderr,
        stdout_truncated=out_size > len(stdout), stderr_truncated=err_size > len(stderr),
        result=result, detail=detail)


_warned = False


def _warn_unsafe() -> None:
    global _warned
    if not _warned:
        import sys
        print("WARNING: arbiter is running UNTRUSTED CODE WITHOUT ISOLATION "
              "(ARBITER_UNSAFE_NO_ISOLATION is set). Programs can read and write your files, "
              "use the network and outlive their runs.", file=sys.stderr)
        _warned = True


def run(argv: Sequence[str], stdin: bytes = b"", files: Mapping[str, bytes] | None = None,
        limits: Limits | None = None, config: SandboxConfig | None = None) -> Execution:
    """Run one program once in a fresh sandbox and return its :class:`Execution`.

    ``files`` are placed read-only in ``/prog`` (so ``argv`` may be ``["/prog/main"]``). A
    failure of ours is ``Status.SANDBOX_ERROR``, never raised as a program verdict.
    """
    try:
        with Sandbox(files=files, limits=limits, config=config) as sb:
            return sb.run(argv, stdin, limits)
    except SandboxError as exc:
        return Execution(Status.SANDBOX_ERROR, detail=str(exc))
