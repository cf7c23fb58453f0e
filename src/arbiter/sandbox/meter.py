"""What a run used, from the sandbox's cgroups: its memory over an exact baseline, its OOM kills,
its CPU (the server's own excepted), and the watch that stops it past its CPU limit.

:class:`RunMeter` owns the cgroup figures of one sandbox between runs: the memory limit in force,
the pinned memory last read, the session server whose CPU is not the program's. See
docs/sandbox.md ("Limits", "Memory").
"""

from __future__ import annotations

import os
import select
import time
from dataclasses import dataclass
from typing import Callable

from arbiter.sandbox import cgroups
from arbiter.sandbox.limits import MiB, Limits

#: Page cache and reclaimable kernel objects (dentries, inodes) the sandbox's memory cgroup may
#: hold when a run is measured; more (left by an earlier run or submission) is reclaimed first,
#: or the kernel would reclaim it while the run allocates and that much of the run's memory would
#: not show in its peak (docs/sandbox.md, "Memory").
RECLAIMABLE_SLACK = 4 * MiB
#: A run is stopped once its processes used this many CPU seconds beyond its CPU limit. Above
#: :data:`~arbiter.sandbox.classify.CPU_TOLERANCE`: a run stopped this way is one that
#: :func:`~arbiter.sandbox.classify.classify` would call time_limit anyway, it only ends sooner.
CPU_KILL_MARGIN = 0.1
#: The most of a run's stdout (a memfd: its pages are charged to the sandbox) taken off its peak.
#: Only what stdout held at the peak belongs off it, and that is not known: taking all of it let a
#: program touch 185 MiB, free it, then print 62 MiB of trailing spaces, AC against 128 MiB (red
#: team, December 2026). So output beyond this counts as memory (docs/sandbox.md, "Memory").
OUTPUT_ALLOWANCE = 4 * MiB
#: Seconds a run waits for the memory of Unix sockets the run before it left in flight to leave
#: the cgroup (:meth:`RunMeter.await_release`).
RELEASE_SECONDS = 5.0


@dataclass
class Baseline:
    """The cgroup readings just before a run."""

    memory: int  # bytes charged
    oom_kills: int
    cpu_ns: int  # the group's CPU less the server's own


@dataclass
class Usage:
    """What the run used: memory peak over the baseline (its stdout's pages, up to a point, excepted), OOM kills,
    CPU seconds of every process of the run (waited for or not)."""

    memory: int = 0
    oom_kills: int = 0
    cpu_seconds: float = 0.0


class RunMeter:
    """The cgroup side of each run of one sandbox (``cg``: its :class:`~arbiter.sandbox.cgroups.
    SandboxCgroups`)."""

    def __init__(self, cg: cgroups.SandboxCgroups, memory_limit: int):
        self.cg = cg
        self.memory_limit = memory_limit  # the limit in force (a write costs a third of a ms)
        self.server_pid = 0  # the session server (host pid): its CPU is never a run's
        self.zygote_pid = 0  # the sandbox's zygote (host pid; 0: none): in the cgroups, idle while a run runs
        self._schedstat_fd = -1  # its /proc/<pid>/schedstat, kept open
        self._pinned = -1  # memory the cgroup cannot give back, when last read (-1: read again)
        self.last_base = 0  # bytes charged at the last run's baseline, less its staged input (freed after it)

    def set_memory_limit(self, limit: int) -> None:
        """The cgroup's memory limit (written only when it changes). Raises CgroupError."""
        if limit != self.memory_limit:
            self.memory_limit = limit
            self.cg.set_memory_limit(limit)

    def track(self, server_pid: int) -> None:
        """A new session server (0: none): its CPU is subtracted from every run's (its
        ``schedstat`` opened now, when the session is armed, not in the first run's readings)."""
        if self._schedstat_fd >= 0:
            os.close(self._schedstat_fd)
        self._schedstat_fd = -1
        self.server_pid = server_pid
        self._pinned = -1
        if server_pid:
            self.server_cpu_ns()

    def forget_pinned(self) -> None:
        """Pinned memory may have shrunk (a staged input freed, a forker replaced, a program
        loaded): the next run reads ``memory.stat`` again."""
        self._pinned = -1

    def settle(self) -> int:
        """Reclaim what the cgroup holds beyond its pinned memory
        (:meth:`~arbiter.sandbox.cgroups.SandboxCgroups.memory_pinned`) when that is more than
        :data:`RECLAIMABLE_SLACK`. ``memory.stat`` is read only when the charge grew by more than
        that since it was last read, or after :meth:`forget_pinned`. Returns the bytes charged."""
        cg = self.cg
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

    def before(self, staged: int = 0) -> Baseline:
        """Just before a run: the memory settled, the peak reset, the readings taken. ``staged``:
        the bytes of its staged input, in the baseline and freed after the run."""
        cg = self.cg
        memory = self.settle()
        self.last_base = memory - staged
        cg.reset_memory_peak()
        return Baseline(memory, cg.oom_kills(), cg.cpu_ns() - self.server_cpu_ns())

    def await_release(self, seconds: float = RELEASE_SECONDS) -> bool:
        """After the server freed Unix sockets a run left in flight: wait until the memory they
        held has left the cgroup (the kernel releases their files a little after it frees the
        sockets), i.e. until no more than :data:`RECLAIMABLE_SLACK` over the last run's
        baseline (its staged input, freed since, left out) is charged. False when it is still
        there after ``seconds``."""
        end = time.monotonic() + seconds
        while self.cg.memory_usage() - self.last_base > RECLAIMABLE_SLACK:
            if time.monotonic() > end:
                return False
            time.sleep(0.001)
        self._pinned = -1
        return True

    def after(self, base: Baseline, stdout_charged: int) -> Usage:
        """Once the run's reply is in: what it used since ``base``, less its stdout's pages
        (``stdout_charged`` bytes) up to :data:`OUTPUT_ALLOWANCE`."""
        cg = self.cg
        output = min(pages(stdout_charged), OUTPUT_ALLOWANCE)
        return Usage(max(0, cg.memory_peak() - base.memory - output),
                     cg.oom_kills() - base.oom_kills,
                     (cg.cpu_ns() - self.server_cpu_ns() - base.cpu_ns) / 1e9)

    def server_cpu_ns(self) -> int:
        """CPU nanoseconds the session server itself has used (its ``/proc/<pid>/schedstat``,
        kept open; 0 when unreadable)."""
        try:
            if self._schedstat_fd < 0:
                self._schedstat_fd = os.open(f"/proc/{self.server_pid}/schedstat",
                                             os.O_RDONLY | os.O_CLOEXEC)
            return int(os.pread(self._schedstat_fd, 128, 0).split(None, 1)[0])
        except (OSError, ValueError, IndexError):
            return 0

    def cpu_watch(self, base: Baseline, lim: Limits, reply_fd: int) -> Callable[[], bool] | None:
        """A ``watch`` for :meth:`~arbiter.sandbox.channel.Channel.read_exact` that kills every
        process of the run but the server once the sandbox's processes together used more CPU
        than ``lim.cpu_seconds`` + :data:`CPU_KILL_MARGIN` (a spinning fork bomb, children
        nobody waits for). Returns True once it acted (or the reply is already on its way).
        None without a session server."""
        if not self.server_pid:
            return None
        limit_ns = int((lim.cpu_seconds + CPU_KILL_MARGIN) * 1e9)
        cg, server_pid = self.cg, self.server_pid

        def watch() -> bool:
            try:
                if cg.cpu_ns() - self.server_cpu_ns() - base.cpu_ns <= limit_ns:
                    return False
                if select.select([reply_fd], [], [], 0)[0]:
                    return True  # the run just ended: its reply is here, leave the forker alone
                cg.kill_except((server_pid, self.zygote_pid))
            except (cgroups.CgroupError, OSError):
                pass  # never leave the reply unread: the wall limit still ends the run
            return True

        return watch

    def close(self) -> None:
        self.track(0)


def pages(n: int) -> int:
    """``n`` bytes rounded up to whole 4 KiB pages."""
    return (n + 4095) // 4096 * 4096
