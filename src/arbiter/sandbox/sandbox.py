"""One isolated environment for one submission, many runs inside it.

:class:`Sandbox` starts bwrap (:mod:`arbiter.sandbox.bwrap`) with the guest server
(:mod:`arbiter.sandbox.guest`) as its PID 1 in fresh cgroups, then runs cases: :meth:`Sandbox.run`
(a native binary), :meth:`Sandbox.load_python` once and :meth:`Sandbox.run_python` /
:meth:`Sandbox.call_python` per case. :func:`run` is the one-shot form. See docs/sandbox.md.
"""

from __future__ import annotations

import json
import os
import select
import shutil
import subprocess
import threading
import time
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from arbiter.sandbox import bwrap, cgroups, hostdirs, seccomp
from arbiter.sandbox.classify import classify
from arbiter.sandbox.channel import ChannelMixin
from arbiter.sandbox.config import SandboxConfig
from arbiter.sandbox.errors import SandboxError, UnsafeModeRefused  # noqa: F401 (re-exported)
from arbiter.sandbox.execution import Execution, Status
from arbiter.sandbox.guest.protocol import DEFAULT_ENV
from arbiter.sandbox.guest.runq import wall_cap
from arbiter.sandbox.limits import MiB, Limits
from arbiter.sandbox.session import _EXTRA_TASKS, SERVER_HEADROOM, SessionMixin

#: The guest server's folder (bind-mounted into the sandbox) and its start-up script.
GUEST_DIR = Path(__file__).with_name("guest")
SERVER_PATH = GUEST_DIR / "__main__.py"
#: Inputs larger than this (bytes) are written into the sandbox before a run starts, so the
#: program is not charged for its input (contest judges do not count it).
STAGE_STDIN_BYTES = 1 * MiB
#: Extra seconds the judge waits for the server's answer beyond the case's wall limit.
REPLY_GRACE = 5.0
#: Seconds the wipe after a run may take per CPU second the run had (what a program creates in the
#: scratch dirs costs it CPU; removing it costs the server up to ~3.5 times as much, for a chain
#: of directories): the reply, sent once the wipe is done, may be that much later.
CLEANUP_PER_CPU_SECOND = 5.0
#: Page cache and reclaimable kernel objects (dentries, inodes) the sandbox's memory cgroup may
#: hold when a run is measured; more (left by an earlier run or submission) is reclaimed first,
#: or the kernel would reclaim it while the run allocates and that much of the run's memory would
#: not show in its peak (docs/sandbox.md, "Memory").
RECLAIMABLE_SLACK = 4 * MiB
#: A run is stopped once its processes used this many CPU seconds beyond its CPU limit. Above
#: :data:`~arbiter.sandbox.classify.CPU_TOLERANCE`: a run stopped this way is one that
#: :func:`~arbiter.sandbox.classify.classify` would call time_limit anyway, it only ends sooner.
CPU_KILL_MARGIN = 0.1

_cgroups_ok: tuple[bool, str] | None = None
_cgroups_lock = threading.Lock()


#: The sandbox's writable tmpfs dirs, wiped after every run: no mount may sit inside them.
SCRATCH_DIRS = bwrap.SCRATCH_DIRS


def _cgroups_available() -> tuple[bool, str]:
    global _cgroups_ok
    with _cgroups_lock:
        if _cgroups_ok is None:
            _cgroups_ok = cgroups.available()
        return _cgroups_ok


_ROOT_LAYOUT: list[str] | None = None


class Sandbox(SessionMixin, ChannelMixin):
    """An isolated environment for one submission at a time (docs/sandbox.md).

    ``files`` (name -> bytes) are placed read-only in ``/prog``; ``mounts`` are ``(host_path,
    sandbox_path)`` pairs shown read-only (``host_path`` None: an empty directory); ``limits`` are the sandbox-wide limits (memory,
    processes, scratch) and the default per-run ones. Raises :class:`SandboxError` when it cannot
    start. A context manager; not thread-safe (one thread drives one sandbox). Isolated, it is a
    zygote with one session open (these ``files`` and ``limits``; none with ``session=False``);
    :meth:`end_session` and :meth:`new_session` hand it on (the pool: :mod:`arbiter.sandbox.pool`).
    """

    def __init__(self, *, files: Mapping[str, bytes] | None = None,
                 mounts: Sequence[tuple[str, str]] = (), limits: Limits | None = None,
                 config: SandboxConfig | None = None, session: bool = True):
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
        self._zygote_pid = 0  # host pid of the zygote (isolated), 0 without one
        self._session = 0  # sessions started so far
        self._owner = os.getpid()  # a forked child never touches its parent's sandboxes
        self.hello: dict[str, Any] = {}
        self._settling = False  # the server works on after its last reply (see _run)
        self._pinned = -1  # memory the cgroup cannot give back, when last read (see _settle_memory)
        self.python_loaded = False
        self.load_stage = ""
        self.start()
        if self.config.isolated and session:
            try:
                self.new_session(self._files, self.limits)
            except BaseException:
                self.close()
                raise

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
        cfg = self.config
        if not cfg.isolated:
            _warn_unsafe()
        elif not os.access(cfg.bwrap, os.X_OK):
            raise SandboxError(f"bubblewrap not found at {cfg.bwrap}; install it (apt-get install bubblewrap)")
        if not os.access(cfg.python, os.X_OK):
            raise SandboxError(f"the Python for untrusted code ({cfg.python}, $ARBITER_SANDBOX_PYTHON) "
                               "is not an executable file")
        hostdirs.prune_stale_dirs()
        self._tmp = hostdirs.new_dir()
        prog = hostdirs.write_prog(self._tmp, {} if cfg.isolated else self._files)
        empty = os.path.join(self._tmp, "empty")  # (shown where a mount's host path is None)
        os.mkdir(empty, 0o755)
        os.chmod(empty, 0o755)
        self._make_cgroups()
        to_r, to_w = os.pipe()
        from_r, from_w = os.pipe()
        info_r, info_w = os.pipe() if cfg.isolated else (-1, -1)
        seccomp_fd = -1
        bpf = seccomp.filter_bytes() if cfg.isolated else None
        if bpf is not None:
            seccomp_fd = os.memfd_create("seccomp")  # bwrap reads the filter from it
            os.write(seccomp_fd, bpf)
            os.lseek(seccomp_fd, 0, os.SEEK_SET)
        argv, env, cwd = self._command(prog, to_r, from_w, info_w, seccomp_fd)
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
        self._greet(info_r)

    def _make_cgroups(self) -> None:
        """Fresh cgroups for this sandbox, when the machine has them. Raises SandboxError."""
        ok, _ = _cgroups_available()
        if ok:
            try:
                self._memory_limit = self.limits.memory_bytes + SERVER_HEADROOM
                self._cg = cgroups.SandboxCgroups.create(
                    memory_bytes=self._memory_limit,
                    processes=self.limits.processes + _EXTRA_TASKS)
            except cgroups.CgroupError as exc:
                self._cleanup_files()
                raise SandboxError(str(exc)) from exc

    def _command(self, prog: str, to_r: int, from_w: int, info_w: int, seccomp_fd: int
                 ) -> tuple[list[str], dict[str, str], str]:
        """``(argv, env, cwd)`` that start the server (in bwrap unless unisolated)."""
        global _ROOT_LAYOUT
        cfg = self.config
        env = dict(DEFAULT_ENV)
        site = cfg.python_site or ()
        if cfg.isolated:
            if _ROOT_LAYOUT is None:
                _ROOT_LAYOUT = bwrap.root_layout_args()
            argv = bwrap.bwrap_argv(bwrap.BwrapPlan(
                bwrap=cfg.bwrap, python=cfg.python, root_layout=_ROOT_LAYOUT,
                ro_binds=cfg.python_ro_binds() + cfg.extra_ro_binds,
                scratch_bytes=self.limits.scratch_bytes, prog_dir=prog, guest_dir=str(GUEST_DIR),
                mounts=[(host or os.path.join(self._tmp or "", "empty"), inside)
                        for host, inside in self._mounts],
                seccomp_fd=seccomp_fd, info_fd=info_w, in_fd=to_r,
                out_fd=from_w, site=site))
            return argv, env, "/"
        work = os.path.join(self._tmp or "", "work")
        tmp = os.path.join(self._tmp or "", "tmp")
        os.mkdir(work)
        os.mkdir(tmp)
        env.update(HOME=work, TMPDIR=tmp)
        return bwrap.unisolated_argv(cfg.python, str(SERVER_PATH), to_r, from_w, (work, tmp), site), env, work

    def _greet(self, info_r: int) -> None:
        """Learn the server's pid (bwrap's info), attach it to the cgroups, read its hello.
        Closes ``info_r``; raises SandboxError (the sandbox closed)."""
        try:
            if self.config.isolated:  # the zygote: it stays out of the cgroups (runs no program)
                info = self._read_info(info_r, deadline=time.monotonic() + 10)
                self._zygote_pid = int(info["child-pid"])
            else:
                self._server_pid = self._proc.pid
                if self._cg is not None:
                    self._cg.attach(self._server_pid)
            self.hello, _ = self._read_frame(time.monotonic() + 20)
        except (SandboxError, cgroups.CgroupError, EOFError, OSError, ValueError, KeyError) as exc:
            detail = self._stderr_tail()
            self.close()
            raise SandboxError(f"the sandbox did not start: {exc}{detail}") from exc
        finally:
            if info_r >= 0:
                os.close(info_r)

    def close(self) -> None:
        """Stop the server, kill every process of the sandbox, remove its cgroups and files.
        In a forked child of the process that started it: only forget it (its processes, cgroups
        and files are the parent's)."""
        for fd in (self._to_server, self._from_server, self._schedstat_fd):
            if fd >= 0:
                try:
                    os.close(fd)  # (in a forked child: its own copies)
                except OSError:
                    pass
        self._to_server = self._from_server = self._schedstat_fd = -1
        if self._owner != os.getpid():
            self._proc = self._cg = self._tmp = None
            return
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

        Scratch files are wiped after every run but those in ``keep`` (relative to
        :attr:`work_dir`). ``log_fd`` (e.g. 3): a pipe on that descriptor, its last
        ``limits.stderr_bytes`` returned as :attr:`Execution.log` (e.g. valgrind's summary)."""
        return self._run({"mode": "exec", "argv": list(argv), "cwd": cwd, "log_fd": int(log_fd),
                          "env": dict(env) if env else None,
                          "keep": [k if k.startswith("/") else os.path.join(self.work_dir, k)
                                   for k in keep]}, stdin, limits)

    def load_python(self, source: str, prelude: str = "", filename: str = "main.py",
                    limits: Limits | None = None) -> str | None:
        """Compile a Python program (and the task's ``prelude``, run once into the ``__main__``
        each case starts from) for the following runs. Returns ``None``, or the compiler's message
        (:attr:`load_stage`: ``"program"`` or ``"prelude"``). Raises SandboxError."""
        lim = limits or self.limits
        reply, _ = self._request({"op": "load", "filename": filename,
                                  "limits": lim.with_(cpu_seconds=10, wall_seconds=20).payload()},
                                 [source.encode("utf-8", "surrogateescape"),
                                  prelude.encode("utf-8", "surrogateescape")], timeout=60)
        self.load_stage = reply.get("stage", "program")
        self._settling = bool(reply.get("settling"))
        self._pinned = -1  # a forker with the program in it
        if reply.get("ok"):
            self.python_loaded = True
            return None
        return (reply.get("error") or "the program could not be compiled").strip()

    def run_python(self, stdin: bytes = b"", limits: Limits | None = None, *, keep: Sequence[str] = ()) -> Execution:
        """Run the loaded program as ``__main__`` in a forked child (``keep``: as :meth:`run`)."""
        if not self.python_loaded:
            raise SandboxError("load_python() first")
        return self._run({"mode": "python", "keep": [os.path.join(self.work_dir, k) for k in keep]}, stdin, limits)

    def call_python(self, fn_name: str, args: Sequence[Any] = (), kwargs: Mapping[str, Any] | None = None,
                    limits: Limits | None = None, *, call_json: str | bytes | None = None) -> Execution:
        """Run the loaded program's module code, then call ``fn_name`` (``Solution().fn_name``
        when ``class Solution`` defines it) with JSON ``args`` / ``kwargs``, or ``call_json`` (the
        JSON text of ``{"args": [...], "kwargs": {...}}``, for integers longer than this process's
        int/str digit limit). ``Execution.result`` is the harness's JSON (docs/sandbox.md, "mode:
        call"). Raises TypeError / ValueError when the args are not JSON."""
        if not self.python_loaded:
            raise SandboxError("load_python() first")
        if call_json is not None:
            payload = call_json.encode() if isinstance(call_json, str) else bytes(call_json)
        else:
            payload = json.dumps({"args": list(args), "kwargs": dict(kwargs or {})}).encode()
        return self._run({"mode": "call", "fn_name": fn_name}, b"", limits, payload)

    def _run(self, req: dict[str, Any], stdin: bytes, limits: Limits | None,
             call_payload: bytes | None = None) -> Execution:
        """One run, with the memory accounting of contest judges (docs/sandbox.md, "Limits"): not
        charged for its input (staged first) nor its stdout; with cgroups, stopped once its CPU
        passes the limit (:meth:`_cpu_watch`); the server's own CPU never counted."""
        lim = limits or self.limits
        req = dict(req, op="run", limits=lim.payload())
        cg = self._cg
        if not self.config.isolated or cg is None:
            req["limits"]["processes"] = lim.processes
        if cg is None:  # no memory cgroup: fall back to an address-space limit
            req["limits"]["address_space_bytes"] = lim.memory_bytes + 64 * MiB
        try:
            self._ready_for_run()
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
                mem_before = self._settle_memory(cg)
                cg.reset_memory_peak()
                oom_before = cg.oom_kills()
                cpu_before = cg.cpu_ns() - self._server_cpu_ns()
            blobs = [stdin] if call_payload is None else [stdin, call_payload]
            watch = self._cpu_watch(cg, cpu_before, lim) if cg is not None and self._server_pid else None
            timeout = wall_cap(lim.wall) + REPLY_GRACE + CLEANUP_PER_CPU_SECOND * (lim.cpu_seconds + CPU_KILL_MARGIN)
            reply, rblobs = self._request(req, blobs, timeout=timeout, watch=watch)
            self._settling = bool(reply.get("settling"))
            if staged or self._settling:
                self._pinned = -1  # the staged input, or the forker, goes: look again
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
        ex = classify(reply, lim, parts.get("stdout", b""), parts.get("stderr", b""),
                       parts.get("result"), mem_delta, oom, cg_cpu, have_memcg=cg is not None)
        ex.log = parts.get("log")
        return ex

    def _settle_memory(self, cg: cgroups.SandboxCgroups) -> int:
        """Before a run is measured: reclaim what the cgroup holds beyond its pinned memory
        (:meth:`~arbiter.sandbox.cgroups.SandboxCgroups.memory_pinned`) when that is more than
        :data:`RECLAIMABLE_SLACK`. ``memory.stat`` is read only when the charge grew by more
        than that since it was last read (or pinned memory may have shrunk: a staged input
        freed, a forker replaced, a new session or program). Returns the bytes charged now."""
        usage = cg.memory_usage()
        if 0 <= self._pinned and usage - self._pinned <= RECLAIMABLE_SLACK:
            return usage
        charged, pinned = cg.memory_pinned()
        if charged - pinned > RECLAIMABLE_SLACK:
            charged = cg.reclaim(pinned + RECLAIMABLE_SLACK // 2)
            usage = cg.memory_usage()
        # what could not be reclaimed counts as pinned (no second try at every run)
        self._pinned = pinned if charged - pinned <= RECLAIMABLE_SLACK else charged
        return usage

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
        """A ``watch`` for :meth:`_read_exact` that kills every process of the run but the
        server once the sandbox's processes together used more CPU than ``lim.cpu_seconds`` +
        :data:`CPU_KILL_MARGIN` (a spinning fork bomb, children nobody waits for). Returns True
        once it acted (or the reply is already on its way)."""
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
