"""The result of one run inside the sandbox."""

from __future__ import annotations

import enum
from dataclasses import dataclass


class Status(str, enum.Enum):
    """How a run ended, as seen by the sandbox (not yet a judge verdict).

    ``sandbox_error`` is our fault (bwrap missing, a cgroup write failed, the sandbox died for a
    reason that is not the program's) and must never be turned into a program verdict.
    """

    OK = "ok"
    RUNTIME_ERROR = "runtime_error"
    TIME_LIMIT = "time_limit"
    MEMORY_LIMIT = "memory_limit"
    OUTPUT_LIMIT = "output_limit"
    SANDBOX_ERROR = "sandbox_error"


@dataclass
class Execution:
    """What one run did.

    - ``status``: see :class:`Status`. ``ok`` means exit code 0 and no limit hit.
    - ``exit_code``: the exit status when the program exited normally, else ``None``.
    - ``signal``: the number of the signal that killed it, else ``None``.
    - ``cpu_seconds``: user + system CPU seconds of the program and the children it waited for.
    - ``wall_seconds``: elapsed seconds from fork to exit.
    - ``peak_memory_bytes``: the largest memory the run used, bytes, the figure the memory limit
      is judged on: the peak of what the run added to the sandbox's memory cgroup (heap, stack,
      page tables, files written to tmpfs); pages in memory before the run (shared libraries,
      the warm interpreter a Python case is forked from) are not counted. Without a memory
      cgroup, the run's peak RSS (docs/sandbox.md, LIMITS).
    - ``stdout`` / ``stderr``: captured bytes, capped by ``Limits.output_bytes`` /
      ``Limits.stderr_bytes``; ``*_truncated`` says when more was written.
    - ``result``: for a Python function call, the JSON bytes the harness wrote for the return value
      (or the exception), else ``None``.
    - ``detail``: a short human-readable reason (which limit, which signal, what failed).
    - ``log``: what the run wrote to its ``log_fd`` pipe (see :meth:`Sandbox.run`), else ``None``.
    - ``run_delay_seconds``: the largest time one of its tasks was runnable but had no CPU (the
      kernel's run-queue delay); the wall limit does not count it (docs/sandbox.md, "Under host
      load").
    - ``server_delay_seconds``: the sandbox server's own run-queue delay while it watched the run
      (waking to drain its stderr, to see it end): in ``wall_seconds``, neither the program's time
      nor a limit.
    - ``starved``: the run was stopped by the wall limit while other processes held the CPU
      (``status`` is then ``sandbox_error``: the judge retries it, never a TLE).
    """

    status: Status
    exit_code: int | None = None
    signal: int | None = None
    cpu_seconds: float = 0.0
    wall_seconds: float = 0.0
    peak_memory_bytes: int = 0
    stdout: bytes = b""
    stderr: bytes = b""
    stdout_truncated: bool = False
    stderr_truncated: bool = False
    result: bytes | None = None
    detail: str = ""
    log: bytes | None = None
    run_delay_seconds: float = 0.0
    starved: bool = False
    server_delay_seconds: float = 0.0

    @property
    def ok(self) -> bool:
        """True when the run exited 0 within every limit."""
        return self.status is Status.OK
