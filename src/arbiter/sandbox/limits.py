"""Resource limits for one run inside the sandbox."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

MiB = 1024 * 1024


#: The largest CPU limit a case may have, in seconds (one day). Larger values are almost surely a
#: unit mistake, and past about 1e9 s the kernel's timers and ``time_t`` overflow.
MAX_SECONDS = 86_400


@dataclass(frozen=True)
class Limits:
    """Per-run resource limits.

    Units: seconds for times, bytes for sizes, counts for processes and files.

    - ``cpu_seconds``: CPU time of the program (user + system, all its threads; with cgroups,
      of all its processes, waited for or not). Exceeding it is ``time_limit``; with cgroups the
      run is stopped as soon as its processes together pass it (a spinning fork bomb does not
      run on to the wall limit).
    - ``wall_seconds``: elapsed time; ``None`` means ``2 * cpu_seconds + 1`` (sleeping or blocked
      programs only stop at the wall limit, as isolate and DMOJ do).
    - ``memory_bytes``: memory the program may add to the sandbox (heap, stack, mmap, files it
      writes to ``/tmp``, ``/work`` or ``/dev/shm``); enforced by a cgroup v1 memory controller,
      exceeding it is ``memory_limit``.
    - ``processes``: tasks (processes and threads) alive at once in the sandbox, including the
      sandbox's own server process (cgroup ``pids.max`` plus ``RLIMIT_NPROC``).
    - ``output_bytes``: cap on stdout; exceeding it is ``output_limit``.
    - ``file_bytes``: the largest file the program may write (``RLIMIT_FSIZE``; writing past it
      is ``output_limit``); ``None`` means ``output_bytes``.
    - ``stderr_bytes``: how much of stderr is kept (more is discarded, not an error).
    - ``open_files``: ``RLIMIT_NOFILE``.
    - ``scratch_bytes``: size of each private tmpfs (``/work``, ``/tmp``, ``/dev/shm``).
    - ``stack_bytes``: the soft ``RLIMIT_STACK``; ``None`` means as large as ``memory_bytes``
      (contest judges bound the stack only by the memory limit). The hard limit is left unlimited,
      so the common ``setrlimit(RLIMIT_STACK, (RLIM_INFINITY, RLIM_INFINITY))`` works; the stack
      is memory, so the memory limit still bounds it.
    """

    cpu_seconds: float = 2.0  # (0, MAX_SECONDS]
    wall_seconds: float | None = None
    memory_bytes: int = 512 * MiB
    processes: int = 64
    output_bytes: int = 64 * MiB
    file_bytes: int | None = None
    stderr_bytes: int = 64 * 1024
    open_files: int = 64
    scratch_bytes: int = 256 * MiB
    stack_bytes: int | None = None

    def __post_init__(self) -> None:
        if not (0 < self.cpu_seconds <= MAX_SECONDS):
            raise ValueError(f"Limits.cpu_seconds must be a number of seconds in (0, {MAX_SECONDS}], "
                             f"got {self.cpu_seconds!r}")
        if self.wall_seconds is not None and not (0 < self.wall_seconds <= 2 * MAX_SECONDS + 1):
            raise ValueError(f"Limits.wall_seconds must be a number of seconds in (0, {2 * MAX_SECONDS + 1}], "
                             f"got {self.wall_seconds!r}")
        for name in ("memory_bytes", "processes", "output_bytes", "open_files", "scratch_bytes"):
            if int(getattr(self, name)) <= 0:
                raise ValueError(f"Limits.{name} must be positive, got {getattr(self, name)!r}")

    @property
    def wall(self) -> float:
        """The effective wall limit in seconds."""
        return self.wall_seconds if self.wall_seconds is not None else 2 * self.cpu_seconds + 1.0

    @property
    def files(self) -> int:
        """The effective file size limit in bytes."""
        return self.file_bytes if self.file_bytes is not None else self.output_bytes

    @property
    def stack(self) -> int:
        """The effective stack limit in bytes."""
        return self.stack_bytes if self.stack_bytes is not None else self.memory_bytes

    def with_(self, **changes) -> "Limits":
        """A copy with some fields changed."""
        return replace(self, **changes)

    def payload(self) -> dict[str, Any]:
        """The per-run limits as a guest request carries them (docs/sandbox.md, "run")."""
        return {"cpu_seconds": self.cpu_seconds, "wall_seconds": self.wall,
                "output_bytes": self.output_bytes, "file_bytes": self.files,
                "stderr_bytes": self.stderr_bytes, "open_files": self.open_files,
                "stack_bytes": self.stack}
