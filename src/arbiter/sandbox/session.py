"""Sessions: one submission's turn in a started (pooled) sandbox.

A mixin of :class:`~arbiter.sandbox.sandbox.Sandbox`. :meth:`SessionMixin.new_session` asks the
zygote (:mod:`arbiter.sandbox.guest.zygote`) for a session server in fresh namespaces, attaches it
to the sandbox's cgroups and sets the session's limits; :meth:`SessionMixin.end_session` ends it and
says whether the sandbox may serve another one. See docs/sandbox.md ("Warm pool").
"""

from __future__ import annotations

import os
import time
from typing import Any, Callable, Mapping

from arbiter.sandbox import cgroups
from arbiter.sandbox.errors import SandboxError
from arbiter.sandbox.limits import MiB, Limits

#: Memory the session server may use on top of the program's limit (its own reads and writes).
SERVER_HEADROOM = 32 * MiB
_EXTRA_TASKS = 2  # the session server itself (+ one for exec)
#: Seconds a session may take to start or to end.
SESSION_TIMEOUT = 20.0


def prog_files(files: Mapping[str, bytes]) -> tuple[list[list[Any]], list[bytes]]:
    """``files`` as the ``go`` request carries them: ``[[name, mode], ...]`` (mode 0755, so
    binaries run) and their contents. Raises ValueError for a name that is not a plain one."""
    for name in files:
        if "/" in name or name in ("", ".", ".."):
            raise ValueError(f"sandbox file names must be plain names, got {name!r}")
    return [[name, 0o755] for name in files], [bytes(data) for data in files.values()]


def _pages(n: int) -> int:
    """``n`` bytes rounded up to whole 4 KiB pages."""
    return (n + 4095) // 4096 * 4096


class SessionMixin:
    """Uses the sandbox's ``config``, ``limits``, ``_tmp``, ``_cg``, ``_request``, ``_read_frame``,
    ``_zygote_pid``, ``_server_pid``, ``_session``, ``_broken``."""

    _session_request = 0  # the id of the request that started the open session
    _armed = False  # a session server waits for its submission (see arm)
    _armed_pid = 0  # its host pid
    _session_processes = -1  # the processes limit on the pids cgroup now
    _hello_pending = 0  # the id of the "go" whose hello is not read yet
    _session_python = False  # the open session loads a Python program (see new_session)
    #: Whether the next armed session forks its Python forker ahead: as the last session did
    #: (a pool's sandboxes mostly see one language after another).
    _prefork_next = True

    def arm(self, prefork: bool | None = None) -> None:
        """Get the next session ready before its submission is known (what can be done ahead:
        the zygote forks its server into fresh PID and mount namespaces with a fresh ``/proc``;
        it joins the cgroups; ``prefork``: it forks its Python forker ahead, default as the last
        session wanted one). Idempotent. Raises SandboxError (the sandbox must then be closed)."""
        if self._armed or self._server_pid:
            return
        if not self.config.isolated:
            raise SandboxError("sessions need an isolated sandbox")
        if self._broken or self._to_server < 0:
            raise SandboxError(self._broken or "the sandbox is closed")
        try:
            reply, _ = self._request({"op": "session", "scratch_bytes": self.limits.scratch_bytes}, [],
                                     timeout=SESSION_TIMEOUT)
            self._session_request = self._request_id  # the zygote's "ended" will carry it
            if reply.get("op") != "armed":
                raise SandboxError(f"the session did not start: {reply}{self._stderr_tail()}")
            self._armed_pid = self._session_host_pid()
            if self._cg is not None:
                self._cg.attach(self._armed_pid)  # before any request: no program ran yet
                self._pinned = -1
                self._settle_memory(self._cg)  # what the last session left (off the next one's path)
            # its Python forker, forked ahead of the submission (no reply; sent once the server
            # is in the cgroups: what it forks is too)
            if self._prefork_next if prefork is None else prefork:
                self._send({"op": "prefork", "id": -2})
        except (cgroups.CgroupError, OSError) as exc:
            self._broken = f"the session did not start: {exc}"
            raise SandboxError(self._broken) from exc
        except SandboxError as exc:
            self._broken = self._broken or str(exc)
            raise
        self._armed = True

    def new_session(self, files: Mapping[str, bytes] | None = None, limits: Limits | None = None,
                    python: bool = False) -> None:
        """Start a session: ``files`` read-only in ``/prog`` (written there by the session server
        itself: no descriptor of the judge's can hold one open for writing when it is executed),
        fresh ``/work``, ``/tmp``,
        ``/dev/shm`` (``limits.scratch_bytes`` each), ``/proc`` and PID numbering, the sandbox-wide
        ``limits`` (memory, processes) on the cgroups; ``python``: it will load a Python program
        (the forker forked ahead is kept for it; else it is gone before the first run is
        measured). Raises SandboxError (the sandbox must then be closed)."""
        if self._server_pid:
            raise SandboxError("a session is open: end_session() first")
        names, blobs = prog_files(files or {})
        self.arm(prefork=python)
        self._session_python = python
        self.limits = limits or self.limits
        self._session += 1
        try:
            if self._cg is not None:  # (the runs' own limit, room for a stdout file and /prog's
                # files included: a write to memory.limit_in_bytes costs a third of a millisecond)
                memory = (self.limits.memory_bytes + SERVER_HEADROOM + self.limits.output_bytes
                          + sum(_pages(len(b)) for b in blobs))
                if memory != self._memory_limit:
                    self._memory_limit = memory
                    self._cg.set_memory_limit(memory)
                if self.limits.processes != self._session_processes:
                    self._cg.set_pids_max(self.limits.processes + _EXTRA_TASKS)
                    self._session_processes = self.limits.processes
            self._request_id += 1  # its hello is read with the next reply (see _read_frame)
            self._send({"op": "go", "scratch_bytes": self.limits.scratch_bytes, "python": python,
                        "files": names, "id": self._request_id}, blobs)
            self._hello_pending = self._request_id
        except cgroups.CgroupError as exc:
            self._broken = f"the session did not start: {exc}"
            raise SandboxError(self._broken) from exc
        except SandboxError as exc:
            self._broken = self._broken or str(exc)
            raise
        self._armed = False
        self._server_pid = self._armed_pid
        self._settling = False
        self._pinned = -1  # (its /prog files; the blank forker it may drop)
        self.python_loaded = False
        self.load_stage = ""

    def _ready_for_run(self) -> None:
        """Before a run's cgroup readings: the session started (its hello read: nothing of its
        start-up, such as the forker it no longer needs, is charged to the run), and what the
        last reply left the server to do done (``settling``: ``sync``)."""
        self._take_hello()
        if self._settling:
            self._settling = False
            self._request({"op": "sync"}, [], timeout=SESSION_TIMEOUT)

    def _read_frame(self, deadline: float, watch: Callable[[], bool] | None = None
                    ) -> tuple[dict[str, Any], list[bytes]]:
        """(:class:`ChannelMixin`'s) After a ``go``, the session's hello first: the request
        that follows a ``go`` is sent before it is read, so a session costs no round trip of its
        own. A session that did not start gives the sandbox up (SandboxError)."""
        self._take_hello()
        return super()._read_frame(deadline, watch)

    def _take_hello(self) -> None:
        """Read the hello of the last ``go`` if it is not read yet. A session that did not
        start gives the sandbox up (SandboxError)."""
        go, self._hello_pending = self._hello_pending, 0
        if go:
            try:
                hello, _ = super()._read_frame(time.monotonic() + SESSION_TIMEOUT)
            except (EOFError, TimeoutError, OSError, ValueError) as exc:
                self._broken = f"the session did not start: {exc}{self._stderr_tail()}"
                self._kill_now()
                raise SandboxError(self._broken) from exc
            if hello.get("op") != "hello" or hello.get("id") != go or not hello.get("init"):
                self._broken = f"the session did not start: {hello}{self._stderr_tail()}"
                self._kill_now()
                raise SandboxError(self._broken)
            self.hello = hello

    def _session_host_pid(self) -> int:
        """The session server's host pid: the one child of the zygote's one child (the helper
        that entered the new PID namespace)."""
        pid = self._zygote_pid
        for _ in range(2):
            with open(f"/proc/{pid}/task/{pid}/children") as f:
                kids = f.read().split()
            if len(kids) != 1:
                raise SandboxError(f"expected one session process under {pid}, found {kids}")
            pid = int(kids[0])
        return pid

    def end_session(self) -> bool:
        """End the open session: its server exits, the kernel kills every process of its PID
        namespace and its mounts go with it. True when the sandbox may start another session
        (ended cleanly, nothing left in its cgroups); False when it must be closed."""
        if not self.config.isolated or not self.alive:
            return False
        if not self._server_pid and not self._armed:
            return True
        self._prefork_next = self._session_python
        try:
            rid = self._session_request
            if self._server_pid:
                reply, _ = self._request({"op": "exit"}, [], timeout=SESSION_TIMEOUT)
                if reply.get("op") != "bye" or reply.get("tampered") or reply.get("broken"):
                    raise SandboxError(f"the session did not end cleanly: {reply}")
            else:  # armed, never started: it leaves without a reply
                self._send({"op": "exit", "id": -1})
            ended, _ = self._read_frame(time.monotonic() + SESSION_TIMEOUT)
            if ended.get("op") != "ended" or ended.get("id") != rid or ended.get("status") != 0:
                raise SandboxError(f"the session did not end cleanly: {ended}")
            if self._cg is not None and self._cg.pids():
                raise SandboxError(f"processes left after the session: {self._cg.pids()}")
        except (SandboxError, cgroups.CgroupError, EOFError, TimeoutError, OSError, ValueError) as exc:
            self._broken = self._broken or f"the session did not end cleanly: {exc}"
            self._kill_now()
            return False
        finally:
            self._server_pid = self._armed_pid = self._hello_pending = 0
            self._armed = False
            if self._schedstat_fd >= 0:
                os.close(self._schedstat_fd)
                self._schedstat_fd = -1
        return True
