"""One isolated environment for one submission, many runs inside it.

:class:`Sandbox` starts bwrap (:mod:`arbiter.sandbox.bwrap`) with the guest server
(:mod:`arbiter.sandbox.guest`) as its PID 1 in fresh cgroups, then runs cases: :meth:`Sandbox.run`
(a native binary), :meth:`Sandbox.load_python` once and :meth:`Sandbox.run_python` /
:meth:`Sandbox.call_python` per case. :func:`run` is the one-shot form. See docs/sandbox.md.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import threading
import time
from pathlib import Path
from typing import Any, Mapping, Sequence

from arbiter.sandbox import bwrap, cgroups, hostdirs, hostuid
from arbiter.sandbox.channel import Channel, read_info
from arbiter.sandbox.classify import classify
from arbiter.sandbox.config import SandboxConfig
from arbiter.sandbox.errors import SandboxError, UnsafeModeRefused  # noqa: F401 (re-exported)
from arbiter.sandbox.execution import Execution, Status
from arbiter.sandbox.guest.runq import wall_cap
from arbiter.sandbox.limits import MiB, Limits
from arbiter.sandbox.meter import CPU_KILL_MARGIN, RunMeter, Usage, pages
from arbiter.sandbox.launch import launch
from arbiter.sandbox.session import EXTRA_TASKS, SERVER_HEADROOM, ZYGOTE_TASKS, Session, memory_limit

#: Inputs larger than this (bytes) are written into the sandbox before a run starts, so the
#: program is not charged for its input (contest judges do not count it).
STAGE_STDIN_BYTES = 1 * MiB
#: Extra seconds the judge waits for the server's answer beyond the case's wall limit.
REPLY_GRACE = 5.0
#: Seconds the wipe after a run may take per CPU second the run had (what a program creates in the
#: scratch dirs costs it CPU; removing it costs the server up to ~3.5 times as much, for a chain
#: of directories): the reply, sent once the wipe is done, may be that much later.
CLEANUP_PER_CPU_SECOND = 5.0

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


def limits_regime() -> str:
    """How this process's sandboxes limit and measure memory and processes: ``"cgroups"`` (the
    cgroup's peak, its pids limit) or ``"rlimits"`` (``RLIMIT_AS``, ``ru_maxrss``, ``RLIMIT_NPROC``)
    when the machine gives no cgroups. Verdicts differ between the two (a reserved, untouched
    mapping), so the verdict key holds it."""
    return "cgroups" if _cgroups_available()[0] else "rlimits"


#: The scratch size every session is armed with (the default, never a submission's: a case
#: reads it in the zygote's frame; a session of another size remounts its scratch at ``go``).
ARMED_SCRATCH_BYTES = Limits().scratch_bytes


class Sandbox:
    """An isolated environment for one submission at a time (docs/sandbox.md).

    ``files`` (name -> bytes) are placed read-only in ``/prog``; ``mounts`` are ``(host_path,
    sandbox_path)`` pairs shown read-only (``host_path`` None: an empty directory); ``limits``
    are the sandbox-wide limits (memory, processes, scratch) and the default per-run ones.
    Raises :class:`SandboxError` when it cannot start. A context manager; not thread-safe (one
    thread drives one sandbox). Isolated, it is a zygote with one session open (these ``files``
    and ``limits``; none with ``session=False``); :meth:`end_session` and :meth:`new_session`
    hand it on (the pool: :mod:`arbiter.sandbox.pool`). Composed of a
    :class:`~arbiter.sandbox.channel.Channel` (requests), a :class:`~arbiter.sandbox.session.
    Session` (isolated only) and a :class:`~arbiter.sandbox.meter.RunMeter` (with cgroups).
    """

    def __init__(self, *, files: Mapping[str, bytes] | None = None,
                 mounts: Sequence[tuple[str | None, str]] = (), limits: Limits | None = None,
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
        self._uid_lease: hostuid.UidLease | None = None  # its host uid, as root
        self._cg: cgroups.SandboxCgroups | None = None
        self._tmp: str | None = None
        self.channel = Channel(-1, -1, self._kill_now)
        self.meter: RunMeter | None = None
        self.session: Session | None = None
        self._owner = os.getpid()  # a forked child never touches its parent's sandboxes
        self._hello: dict[str, Any] = {}  # the first process's hello (the zygote's, isolated)
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
        self._make_cgroups()
        try:
            launched = launch(cfg, self.limits, self._mounts, self._tmp, self._files)
        except (SandboxError, OSError) as exc:
            self.close()
            raise exc if isinstance(exc, SandboxError) else SandboxError(f"cannot start the sandbox: {exc}")
        self._proc, self._uid_lease = launched.proc, launched.uid_lease
        self.channel = Channel(launched.to_server, launched.from_server, self._kill_now)
        self._greet(launched.info_r)

    def _make_cgroups(self) -> None:
        """Fresh cgroups for this sandbox, when the machine has them. Raises SandboxError."""
        ok, _ = _cgroups_available()
        if ok:
            try:
                limit = self.limits.memory_bytes + SERVER_HEADROOM
                extra = EXTRA_TASKS + (ZYGOTE_TASKS if self.config.isolated else 0)
                self._cg = cgroups.SandboxCgroups.create(memory_bytes=limit, processes=self.limits.processes + extra)
                self.meter = RunMeter(self._cg, limit)
            except cgroups.CgroupError as exc:
                self._cleanup_files()
                raise SandboxError(str(exc)) from exc

    def _greet(self, info_r: int) -> None:
        """Learn the server's pid (bwrap's info), attach it to the cgroups, read its hello.
        Closes ``info_r``; raises SandboxError (the sandbox closed)."""
        try:
            if self.config.isolated:  # the zygote: its session servers are born in its cgroups
                zygote_pid = int(read_info(info_r, deadline=time.monotonic() + 10)["child-pid"])
                self.session = Session(self.channel, self._cg, self.meter, zygote_pid, self._stderr_tail)
                if self._cg is not None:
                    self._cg.attach(zygote_pid)  # (it has forked nothing yet)
                    self.meter.zygote_pid = zygote_pid
            else:
                if self._cg is not None:
                    self._cg.attach(self._proc.pid)
                    self.meter.track(self._proc.pid)
            self._hello, _ = self.channel.read_frame(time.monotonic() + 20)
        except (SandboxError, cgroups.CgroupError, EOFError, OSError, ValueError, KeyError) as exc:
            detail = self._stderr_tail()
            self.close()
            raise SandboxError(f"the sandbox did not start: {exc}{detail}") from exc
        finally:
            if info_r >= 0:
                os.close(info_r)

    @property
    def hello(self) -> dict[str, Any]:
        """The server's hello: the open session's once read (isolated), else the first one's."""
        return (self.session.hello if self.session is not None else {}) or self._hello

    def close(self) -> None:
        """Stop the server, kill every process of the sandbox, remove its cgroups and files.
        In a forked child of the process that started it: only forget it (its processes, cgroups
        and files are the parent's)."""
        self.channel.close()
        if self.meter is not None:
            self.meter.close()
        if self._owner != os.getpid():
            self._proc = self._cg = self._tmp = None
            self._release_uid()  # (this process's descriptor only: the parent's lease stays)
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
        self._release_uid()

    def _release_uid(self) -> None:
        if self._uid_lease is not None:
            self._uid_lease.release()
            self._uid_lease = None

    def _cleanup_files(self) -> None:
        if self._tmp:
            shutil.rmtree(self._tmp, ignore_errors=True)
            self._tmp = None

    def _kill_now(self) -> None:
        """Stop the sandbox at once: bwrap and every process of its cgroups."""
        if self._proc is not None and self._proc.poll() is None:
            self._proc.kill()
        if self._cg is not None:
            try:
                self._cg.kill_all()
            except cgroups.CgroupError:
                pass

    def _stderr_tail(self) -> str:
        """What bwrap printed (and its exit status), for an error message."""
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

    # ---- sessions -----------------------------------------------------------------------------
    def arm(self, prefork: bool | None = None) -> None:
        """Get the next session ready ahead of its submission (:meth:`Session.arm`)."""
        if self.session is None:
            raise SandboxError("sessions need an isolated sandbox")
        self.session.arm(ARMED_SCRATCH_BYTES, prefork)

    def new_session(self, files: Mapping[str, bytes] | None = None, limits: Limits | None = None,
                    python: bool = False) -> None:
        """Start a session with ``files`` in ``/prog`` and the sandbox-wide ``limits``
        (:meth:`Session.open`). Raises SandboxError (the sandbox must then be closed)."""
        if self.session is None:
            raise SandboxError("sessions need an isolated sandbox")
        if self.session.server_pid:
            raise SandboxError("a session is open: end_session() first")
        self.limits = limits or self.limits
        self.session.open(files or {}, self.limits, python)
        self.python_loaded = False
        self.load_stage = ""

    def end_session(self) -> bool:
        """End the open session (:meth:`Session.end`): True when the sandbox may start another."""
        if self.session is None or not self.alive:
            return False
        return self.session.end()

    def stray_processes(self) -> list[int]:
        """PIDs (inside the sandbox) of processes left between runs: everything except the
        server and its forker (the process Python cases are forked from). Empty after every run (the server kills the rest)."""
        reply, _ = self.channel.request({"op": "ps"}, [], timeout=10)
        return list(reply.get("pids", []))

    def task_count(self) -> int | None:
        """Processes alive in the sandbox now (the server counts as one, a pooled sandbox's
        zygote does not), from its pids cgroup; ``None`` without cgroups."""
        if self._cg is None:
            return None
        return len(self.session.tasks()) if self.session is not None else len(self._cg.pids())

    @property
    def cgroup_dirs(self) -> list[Path]:
        """The sandbox's cgroup directories (empty without cgroups); gone after :meth:`close`."""
        return list(self._cg.paths.values()) if self._cg is not None else []

    @property
    def alive(self) -> bool:
        """False once the server died or the sandbox was closed."""
        return self._proc is not None and not self.channel.broken and self._proc.poll() is None

    # ---- files --------------------------------------------------------------------------------
    def put(self, name: str, data: bytes, mode: int = 0o644) -> None:
        """Write ``data`` to ``work_dir/name`` (kept across cases). Raises SandboxError."""
        if "/" in name or name in ("", ".", ".."):
            raise ValueError(f"plain file name expected, got {name!r}")
        self.channel.request({"op": "put", "path": os.path.join(self.work_dir, name), "mode": mode},
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
        reply, blobs = self.channel.request({"op": "fetch", "path": path, "max_bytes": max_bytes}, [],
                                            timeout=60)
        if reply.get("ok"):
            return blobs[0], None
        size = reply.get("size")
        return None, int(size) if isinstance(size, int) else None

    # ---- runs ---------------------------------------------------------------------------------
    def run(self, argv: Sequence[str], stdin: bytes = b"", limits: Limits | None = None, *,
            cwd: str | None = None, env: Mapping[str, str] | None = None,
            keep: Sequence[str] = (), log_fd: int = 0, last: bool = False) -> Execution:
        """Fork+exec ``argv`` (absolute path first) with ``stdin``; see :class:`Execution`.

        Scratch files are wiped after every run but those in ``keep`` (relative to
        :attr:`work_dir`). ``log_fd`` (e.g. 3): a pipe on that descriptor, its last
        ``limits.stderr_bytes`` returned as :attr:`Execution.log` (e.g. valgrind's summary).
        ``last``: the caller runs nothing more in this session (it may fetch files): with cgroups,
        a Python case may then be reported once its program ended, before the kernel has torn its
        process down (docs/sandbox.md, "The forker"); a later run waits for that teardown."""
        return self._run({"mode": "exec", "argv": list(argv), "cwd": cwd, "log_fd": int(log_fd),
                          "env": dict(env) if env else None,
                          "keep": [k if k.startswith("/") else os.path.join(self.work_dir, k)
                                   for k in keep]}, stdin, limits, last=last)

    def load_python(self, source: str, prelude: str = "", filename: str = "main.py",
                    limits: Limits | None = None) -> str | None:
        """Compile a Python program (and the task's ``prelude``, run once into the ``__main__``
        each case starts from) for the following runs. Returns ``None``, or the compiler's message
        (:attr:`load_stage`: ``"program"`` or ``"prelude"``). Raises SandboxError, also when the
        load ended for a reason not the compiler's (the guest's stage ``"sandbox"``)."""
        lim = limits or self.limits
        reply, _ = self.channel.request({"op": "load", "filename": filename,
                                         "limits": lim.with_(cpu_seconds=10, wall_seconds=20).payload()},
                                        [source.encode("utf-8", "surrogateescape"),
                                         prelude.encode("utf-8", "surrogateescape")], timeout=60)
        self.load_stage = reply.get("stage", "program")
        if not reply.get("ok") and self.load_stage == "sandbox":
            raise self.channel.fail("the program's loader ended before it loaded: "
                                    + (reply.get("error") or "")[-300:])
        if self.session is not None:
            self.session.after_reply(reply)
        if self.meter is not None and (self.python_loaded or self.session is None):
            self.meter.forget_pinned()  # the forker of the last program went (the first load
            # takes the blank forker: pinned memory only grows, which the next run sees)
        if reply.get("ok"):
            self.python_loaded = True
            return None
        return (reply.get("error") or "the program could not be compiled").strip()

    def run_python(self, stdin: bytes = b"", limits: Limits | None = None, *, keep: Sequence[str] = (),
                   last: bool = False) -> Execution:
        """Run the loaded program as ``__main__`` in a forked child (``keep``, ``last``: as :meth:`run`)."""
        if not self.python_loaded:
            raise SandboxError("load_python() first")
        return self._run({"mode": "python", "keep": [os.path.join(self.work_dir, k) for k in keep]}, stdin, limits,
                         last=last)

    def call_python(self, fn_name: str, args: Sequence[Any] = (), kwargs: Mapping[str, Any] | None = None,
                    limits: Limits | None = None, *, call_json: str | bytes | None = None,
                    last: bool = False) -> Execution:
        """Run the loaded program's module code, then call ``fn_name`` (``Solution().fn_name``
        when ``class Solution`` defines it) with JSON ``args`` / ``kwargs``, or ``call_json`` (the
        JSON text of ``{"args": [...], "kwargs": {...}}``, for integers longer than this process's
        int/str digit limit; it may also carry a LeetCode row's ``node_args`` and ``node_return``, and
        an APPS/TACO row's ``int_keys``).
        ``Execution.result`` is the harness's JSON (docs/sandbox.md, "mode: call"). ``last``: as :meth:`run`. Raises TypeError / ValueError when the args are not JSON."""
        if not self.python_loaded:
            raise SandboxError("load_python() first")
        if call_json is not None:
            payload = call_json.encode() if isinstance(call_json, str) else bytes(call_json)
        else:
            payload = json.dumps({"args": list(args), "kwargs": dict(kwargs or {})}).encode()
        return self._run({"mode": "call", "fn_name": fn_name}, b"", limits, payload, last=last)

    def _held(self) -> int:
        """Bytes the open session holds in the memory cgroup for itself (its ``/prog`` files)."""
        return self.session.held if self.session is not None else 0

    def _run(self, req: dict[str, Any], stdin: bytes, limits: Limits | None,
             call_payload: bytes | None = None, last: bool = False) -> Execution:
        """One run, with the memory accounting of contest judges (docs/sandbox.md, "Limits"): not
        charged for its input (staged first) nor its stdout; with cgroups, stopped once its CPU
        passes the limit (:meth:`RunMeter.cpu_watch`); the server's own CPU never counted."""
        lim = limits or self.limits
        req = dict(req, op="run", limits=lim.payload())
        meter = self.meter
        if last and meter is not None:  # (without cgroups only the case's rusage counts its children)
            req["final"] = True
        if self.session is None or meter is None:
            req["limits"]["processes"] = lim.processes
        if meter is None:  # no memory cgroup: fall back to an address-space limit
            req["limits"]["address_space_bytes"] = lim.memory_bytes + 64 * MiB
        usage = Usage()
        try:
            if self.session is not None and self.session.ready_for_run() and meter is not None:
                if not meter.await_release():
                    raise SandboxError("memory a case left in flight in Unix sockets was not freed in time")
            if self.session is not None and meter is not None:
                self.session.hold_tasks(forker_beside=not (last and req.get("mode") in ("python", "call")))
            staged = 0
            if meter is not None and len(stdin) > STAGE_STDIN_BYTES:
                # while it is copied in, the input exists twice (the server's buffer, the memfd)
                meter.set_memory_limit(memory_limit(lim, self._held() + 2 * pages(len(stdin))))
                self.channel.request({"op": "stdin", "mode": req.get("mode")}, [stdin], timeout=60)
                req["stdin_staged"] = True
                staged, stdin = len(stdin), b""
            base = watch = None
            if meter is not None:
                meter.set_memory_limit(memory_limit(lim, self._held() + pages(staged)))
                base = meter.before(pages(staged))
                watch = meter.cpu_watch(base, lim, self.channel.from_server)
            blobs = [stdin] if call_payload is None else [stdin, call_payload]
            timeout = wall_cap(lim.wall) + REPLY_GRACE + CLEANUP_PER_CPU_SECOND * (lim.cpu_seconds + CPU_KILL_MARGIN)
            reply, rblobs = self.channel.request(req, blobs, timeout=timeout, watch=watch)
            if self.session is not None:
                self.session.after_reply(reply)
            if meter is not None:
                usage = meter.after(base, int(reply.get("stdout_charged", 0)))
                if staged or reply.get("settling"):
                    meter.forget_pinned()  # the staged input, or the forker, goes: look again
        except cgroups.CgroupError as exc:
            return Execution(Status.SANDBOX_ERROR, detail=f"cgroup failure: {exc}")
        except SandboxError as exc:
            return Execution(Status.SANDBOX_ERROR, detail=str(exc))
        parts = dict(zip(reply.get("parts", ["stdout", "stderr", "result"]), rblobs))
        ex = classify(reply, lim, parts.get("stdout", b""), parts.get("stderr", b""), parts.get("result"),
                      usage.memory, usage.oom_kills, usage.cpu_seconds, have_memcg=meter is not None)
        ex.log = parts.get("log")
        return ex


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
