"""``/run_code`` requests of one program share its sandbox: verl sends every test case of a
response as its own request, all at once. Requests of the same program (code, language, files,
limits) join one queue; up to ``per_program`` judge-pool workers drain it, each loading the
program once into one sandbox and running case after case in it (a fresh process each, as
:func:`arbiter.judge.judge.judge` runs a submission's cases). See ``docs/serve.md``.
"""

from __future__ import annotations

import hashlib
import threading
from collections import deque
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any

from arbiter.judge.run_once import WarmSandboxes
from arbiter.server.config import ServerConfig
from arbiter.server.metrics import Metrics
from arbiter.server.pool import JudgePool
from arbiter.server.runcode import RunCodeRequest, check, run_code


def program_key(req: RunCodeRequest) -> str:
    """What decides that two requests can share a loaded program (everything but ``stdin``)."""
    h = hashlib.sha256()
    for part in (req.language, req.code, repr(sorted(req.files.items())), repr(req.fetch_files),
                 repr((req.run_timeout, req.compile_timeout, req.memory_limit_MB))):
        h.update(part.encode("utf-8", "surrogatepass") + b"\0")  # any str, one way: a key, not a program
    return h.hexdigest()


@dataclass
class _Group:
    pending: deque = field(default_factory=deque)  # (request, future) not yet started
    runners: int = 0  # workers draining it now


class ProgramRuns:
    """Runs ``/run_code`` requests on the judge pool, grouped by program (thread-safe)."""

    def __init__(self, pool: JudgePool, cfg: ServerConfig, metrics: Metrics, per_program: int | None = None):
        self.pool, self.cfg, self.metrics = pool, cfg, metrics
        self.per_program = per_program or cfg.workers
        self._groups: dict[str, _Group] = {}
        self._lock = threading.Lock()

    def submit(self, req: RunCodeRequest) -> Future:
        """Admit the request (:class:`~arbiter.server.pool.Overloaded` when the queue is full,
        :class:`~arbiter.server.runcode.BadRequest` before anything runs) and queue it with its
        program; the future holds the SandboxFusion answer (or ``OurFailure``)."""
        check(req, self.cfg)
        self.pool.admit(1)
        fut: Future = Future()
        key = program_key(req)
        with self._lock:
            group = self._groups.setdefault(key, _Group())
            group.pending.append((req, fut))
            spawn = group.runners < self.per_program and (not group.runners or len(group.pending) > 1)
            if spawn:
                group.runners += 1
        if spawn:
            self.pool.submit(self._drain, key, group, counted=False)
        return fut

    def _next(self, key: str, group: _Group) -> tuple[RunCodeRequest, Future] | None:
        with self._lock:
            if group.pending:
                return group.pending.popleft()
            group.runners -= 1
            if not group.runners and self._groups.get(key) is group:
                del self._groups[key]
            return None

    def _drain(self, key: str, group: _Group) -> None:
        """One worker: its own sandbox of the program, kept between the group's requests."""
        warm = WarmSandboxes(capacity=1, idle_seconds=float("inf"), per_program=1 << 30, wait_seconds=0)
        try:
            while (job := self._next(key, group)) is not None:
                req, fut = job
                self.pool.release(1)
                if not fut.set_running_or_notify_cancel():
                    self.metrics.cancelled += 1
                    continue
                try:
                    answer: Any = run_code(req, self.cfg, warm)
                except BaseException as exc:  # handed to the request's route
                    fut.set_exception(exc)
                else:
                    fut.set_result(answer)
        finally:
            warm.close()
