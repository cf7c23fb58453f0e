"""Sessions: one submission's turn in a started (pooled) sandbox.

:class:`Session` is the state machine of a sandbox's sessions: *armed* (:meth:`Session.arm`: the
zygote's session server waits in fresh namespaces, in the sandbox's cgroups), *open*
(:meth:`Session.open`: the submission's files and limits, its hello read before the next
reply), *ended* (:meth:`Session.end`: its server exits, every process and mount of the session
with it). See docs/sandbox.md ("Warm pool", "What a session starts with").
"""

from __future__ import annotations

import time
from typing import Any, Callable, Mapping

from arbiter.sandbox import cgroups
from arbiter.sandbox.channel import Channel
from arbiter.sandbox.errors import SandboxError
from arbiter.sandbox.limits import MiB, Limits
from arbiter.sandbox.meter import RunMeter, pages

#: Memory the session server may use on top of the program's limit (its own reads and writes).
SERVER_HEADROOM = 32 * MiB
#: Tasks the pids cgroup allows beyond the program's: the session server itself (+ one for exec).
EXTRA_TASKS = 2
#: ... and, in a pooled sandbox, its zygote: in the sandbox's cgroups from its start, so every
#: session server is born in them (no migration per session: docs/sandbox.md, "Warm pool").
ZYGOTE_TASKS = 1
#: Seconds a session may take to start or to end.
SESSION_TIMEOUT = 20.0


def prog_files(files: Mapping[str, bytes]) -> tuple[list[list[Any]], list[bytes]]:
    """``files`` as the ``go`` request carries them: ``[[name, mode], ...]`` (mode 0755, so
    binaries run) and their contents. Raises ValueError for a name that is not a plain one."""
    for name in files:
        if "/" in name or name in ("", ".", ".."):
            raise ValueError(f"sandbox file names must be plain names, got {name!r}")
    return [[name, 0o755] for name in files], [bytes(data) for data in files.values()]


def memory_limit(limits: Limits, extra: int = 0) -> int:
    """The memory cgroup's limit for runs under ``limits``: the program's, the server's
    headroom, room for a stdout file, and ``extra`` bytes held for the session (``/prog``)."""
    return limits.memory_bytes + SERVER_HEADROOM + limits.output_bytes + extra


def child_pids(pid: int) -> list[int]:
    """Host pids of ``pid``'s children (``/proc/<pid>/task/<pid>/children``); OSError if it is gone."""
    with open(f"/proc/{pid}/task/{pid}/children") as f:
        return [int(kid) for kid in f.read().split()]


#: The prelude every session's zygote keeps compiled (``[text]``; docs/sandbox.md, "The zygote"):
#: one constant, arbiter's own (:func:`keep_compiled`), never the last load's. A case reads it in
#: the zygote's frame: the last task's prelude (a client's in ``arbiter serve``) would be another
#: tenant's data there, and whether the last load compiled a bit its submission chose.
KEPT_PRELUDE = [""]


def keep_compiled(prelude: str) -> None:
    """The prelude the zygotes keep compiled from now on (the judge's default one)."""
    KEPT_PRELUDE[0] = prelude


class Session:
    """The sessions of one isolated sandbox: its ``channel`` to the zygote (and the session
    server it starts), its cgroups ``cg`` and run ``meter`` (None without cgroups), the zygote's
    host pid; ``stderr_tail()`` says what bwrap printed, for errors."""

    def __init__(self, channel: Channel, cg: cgroups.SandboxCgroups | None, meter: RunMeter | None,
                 zygote_pid: int, stderr_tail: Callable[[], str]):
        self.channel, self.cg, self.meter = channel, cg, meter
        self.zygote_pid, self.stderr_tail = zygote_pid, stderr_tail
        self.request = 0  # the id of the request that started the current session
        self.armed = False  # a session server waits for its submission (see arm)
        self.armed_pid = 0  # its host pid
        self.server_pid = 0  # the open session's server (host pid); 0: none open
        self.processes = -1  # the program's processes limit in this session
        self.pids_max = -1  # the pids cgroup's limit now (see hold_tasks)
        self.hello_pending = 0  # the id of the "go" whose hello is not read yet
        self.hello: dict[str, Any] = {}  # the open session server's hello
        self.python = False  # the open session loads a Python program (see open)
        #: Whether the next armed session forks its Python forker ahead: as the last session
        #: did (a pool's sandboxes mostly see one language after another).
        self.prefork_next = True
        self.settling = False  # its server works on after its last reply (see ready_for_run)
        self.count = 0  # sessions opened so far
        self.plans_learnt = False  # page plans were learnt for its zygote (pageplans.learn_pages)
        self.plans: dict[str, int] = {}  # pages in each plan the zygote took
        self.held = 0  # bytes the open session's /prog files hold in the memory cgroup
        channel.on_read(self.take_hello)

    def arm(self, scratch_bytes: int, prefork: bool | None = None) -> None:
        """Get the next session ready before its submission is known (what can be done ahead:
        the zygote forks its server into fresh namespaces with a fresh ``/proc``; it joins the
        cgroups, whose memory is settled; ``prefork``: it forks its Python forker ahead, default
        as the last session wanted one). Idempotent. Raises SandboxError (the sandbox must then
        be closed)."""
        if self.armed or self.server_pid:
            return
        ch = self.channel
        if ch.broken or ch.to_server < 0:
            raise SandboxError(ch.broken or "the sandbox is closed")
        ch.request_id = 0  # every session's ids from 1: they reach its cases (the frames they are
        # forked from hold them), and ids counted on would tell them how many requests the
        # sessions before them made (no request is outstanding here: the last session ended)
        try:
            reply, _ = ch.request({"op": "session", "scratch_bytes": scratch_bytes},
                                  [KEPT_PRELUDE[0].encode("utf-8")], timeout=SESSION_TIMEOUT)
            self.request = ch.request_id  # the zygote's "ended" will carry it
            if reply.get("op") != "armed":
                raise SandboxError(f"the session did not start: {reply}{self.stderr_tail()}")
            self.armed_pid = self._host_pid(int(reply.get("levels", 2)))
            # (born in the sandbox's cgroups: the zygote is in them)
            if self.meter is not None:
                self.meter.track(self.armed_pid)
                self.meter.settle()  # what the last session left (off the next one's path)
            # its Python forker, forked ahead of the submission (no reply; sent once the server
            # is in the cgroups: what it forks is too)
            if self.prefork_next if prefork is None else prefork:
                ch.send({"op": "prefork", "id": -2})
        except (cgroups.CgroupError, OSError) as exc:
            raise ch.refuse(f"the session did not start: {exc}") from exc
        except SandboxError as exc:
            ch.refuse(str(exc))
            raise
        self.armed = True

    def open(self, files: Mapping[str, bytes], limits: Limits, python: bool) -> None:
        """Start a session: ``files`` read-only in ``/prog`` (written there by the session
        server itself: no descriptor of the judge's can hold one open for writing when it is
        executed), fresh scratch dirs (``limits.scratch_bytes`` each), ``/proc`` and PID
        numbering, the sandbox-wide ``limits`` (memory, processes) on the cgroups; ``python``:
        it will load a Python program (the forker forked ahead is kept for it; else it is gone
        before the first run is measured). Raises SandboxError (the sandbox must then be
        closed), ValueError for a bad file name."""
        if self.server_pid:
            raise SandboxError("a session is open: end_session() first")
        names, blobs = prog_files(files)
        self.arm(limits.scratch_bytes, prefork=python)
        self.python = python
        self.count += 1
        ch = self.channel
        self.held = sum(pages(len(b)) for b in blobs)
        try:
            if self.meter is not None:
                self.meter.set_memory_limit(memory_limit(limits, self.held))
                if limits.processes != self.processes:  # (else each run sets the limit it needs)
                    self.processes = limits.processes
                    self.hold_tasks(forker_beside=True)
            rid = ch.next_id()  # its hello is read with the next reply (see take_hello)
            # A Python session's go is written with its load, which follows at once: the server
            # finds the load behind the go and hands it to the blank forker before its own
            # start-up (docs/sandbox.md, "The blank forker"); a native one's now.
            (ch.hold if python else ch.send)(
                {"op": "go", "scratch_bytes": limits.scratch_bytes, "python": python,
                 "files": names, "id": rid}, blobs)
            self.hello_pending = rid
        except cgroups.CgroupError as exc:
            raise ch.refuse(f"the session did not start: {exc}") from exc
        except SandboxError as exc:
            ch.refuse(str(exc))
            raise
        self.armed = False
        self.server_pid = self.armed_pid
        self.settling = False
        if self.meter is not None and not python:
            self.meter.forget_pinned()  # (the blank forker forked ahead is dropped: less pinned)

    def hold_tasks(self, forker_beside: bool) -> None:
        """The pids cgroup's limit for the next run: the program's processes, the server (and one
        task for a native case's exec), the zygote; one less when no forker runs beside the case
        (a Python session's last case, which the forker runs itself): a case gets as many tasks
        wherever it runs in its submission. Written only when it changes."""
        want = self.processes + EXTRA_TASKS + ZYGOTE_TASKS - (0 if forker_beside else 1)
        if want != self.pids_max:
            self.cg.set_pids_max(want)
            self.pids_max = want

    def after_reply(self, reply: dict[str, Any]) -> None:
        """Note what a reply says the server still does (``settling``: it makes its forker
        again; ``reaping``: the case ended before its processes were gone): the next run waits
        for it (:meth:`ready_for_run`)."""
        self.settling = bool(reply.get("settling") or reply.get("reaping"))

    def ready_for_run(self) -> bool:
        """Before a run's cgroup readings: the session started (its hello read: nothing of its
        start-up, such as the forker it no longer needs, is charged to the run), and what the
        last reply left the server to do done (``settling``: ``sync``). True when the server
        since freed Unix sockets a case left in flight (their memory may still be charged)."""
        self.take_hello()
        if not self.settling:
            return False
        self.settling = False
        reply, _ = self.channel.request({"op": "sync"}, [], timeout=SESSION_TIMEOUT)
        return bool(reply.get("freed_in_flight"))

    def take_hello(self) -> None:
        """Read the hello of the last ``go`` if it is not read yet (the request that follows a
        ``go`` is sent before it is read, so a session costs no round trip of its own). A
        session that did not start gives the sandbox up (SandboxError)."""
        go, self.hello_pending = self.hello_pending, 0
        if not go:
            return
        ch = self.channel
        try:
            hello, _ = ch.read_raw_frame(time.monotonic() + SESSION_TIMEOUT)
        except (EOFError, TimeoutError, OSError, ValueError) as exc:
            raise ch.fail(f"the session did not start: {exc}{self.stderr_tail()}") from exc
        if hello.get("op") != "hello" or hello.get("id") != go or not hello.get("init"):
            raise ch.fail(f"the session did not start: {hello}{self.stderr_tail()}")
        self.hello = hello

    def tasks(self) -> list[int]:
        """Host pids of the processes in the sandbox's cgroups but its zygote (empty without
        cgroups)."""
        return [p for p in self.cg.pids() if p != self.zygote_pid] if self.cg is not None else []

    def _host_pid(self, levels: int) -> int:
        """The session server's host pid: the zygote's one child (``levels`` 1), or that
        child's one child (2: a helper entered the new PID namespace)."""
        pid = self.zygote_pid
        for _ in range(levels):
            kids = child_pids(pid)
            if len(kids) != 1:
                raise SandboxError(f"expected one session process under {pid}, found {kids}")
            pid = kids[0]
        return pid

    def end(self) -> bool:
        """End the open (or armed) session: its server exits, the kernel kills every process of
        its PID namespace and its mounts go with it. True when the sandbox may start another
        session (ended cleanly, nothing left in its cgroups); False when it must be closed, also
        when a case left Unix sockets in flight since the last run (their memory, freed by the
        kernel a little later, must be in no later run's baseline: docs/sandbox.md, "Memory")."""
        if not self.server_pid and not self.armed:
            return True
        self.prefork_next = self.python
        ch = self.channel
        reusable = True
        try:
            rid = self.request
            if self.server_pid:
                reply, _ = ch.request({"op": "exit"}, [], timeout=SESSION_TIMEOUT)
                if reply.get("op") != "bye" or reply.get("tampered") or reply.get("broken"):
                    raise SandboxError(f"the session did not end cleanly: {reply}")
                reusable = not reply.get("freed_in_flight")
            else:  # armed, never started: it leaves without a reply
                ch.send({"op": "exit", "id": -1})
            ended, _ = ch.read_frame(time.monotonic() + SESSION_TIMEOUT)
            if ended.get("op") != "ended" or ended.get("id") != rid or ended.get("status") != 0:
                raise SandboxError(f"the session did not end cleanly: {ended}")
            left = self.tasks()
            if left:
                raise SandboxError(f"processes left after the session: {left}")
        except (SandboxError, cgroups.CgroupError, EOFError, TimeoutError, OSError, ValueError) as exc:
            ch.fail(f"the session did not end cleanly: {exc}")
            return False
        finally:
            self.server_pid = self.armed_pid = self.hello_pending = 0
            self.armed = False
            if self.meter is not None:
                self.meter.track(0)
        return reusable
