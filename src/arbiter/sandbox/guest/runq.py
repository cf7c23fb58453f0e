"""The wall limit net of run-queue delay: time a case was runnable but had no CPU is not its own.

A :class:`WallClock` per case: its deadline is ``t0 + wall + delay``, ``delay`` the largest
run-queue delay of one of the case's tasks (``/proc/<pid>/task/<tid>/schedstat``'s second field)
less the CPU its other tasks used (what they can have made it wait), read when the plain
deadline passes and, summed over intervals, every :data:`SAMPLE_SECONDS` while the case runs
(tasks that exit take their delay with them), never later than :func:`wall_cap`. It also reports this server's own run-queue
delay over the case (its wake-ups to drain the case's stderr and to see it end), which is in the
case's wall time too. Exports: :class:`WallClock`, :func:`wall_cap`, :func:`task_stat`,
:func:`own_delay_ns`, :func:`task_stats`, :func:`largest_delay_ns`, :func:`case_delay_ns`,
:data:`SAMPLE_SECONDS`. See docs/sandbox.md ("Under host load").
"""

import os

#: The hard cap on a case's elapsed time: ``CAP_FACTOR * wall + CAP_MARGIN`` seconds.
CAP_FACTOR = 3.0
CAP_MARGIN = 2.0


def wall_cap(wall):
    """The most elapsed seconds a case with wall limit ``wall`` may run, however starved."""
    return CAP_FACTOR * float(wall) + CAP_MARGIN


def task_stat(pid, tid=None):
    """``(ns on a CPU, ns waiting on a run queue)`` of task ``tid`` of ``pid`` (default: its main
    thread; a zombie's too); ``(0, 0)`` when it is gone or unreadable."""
    path = "/proc/%d/schedstat" % pid if tid is None else "/proc/%d/task/%d/schedstat" % (pid, tid)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return 0, 0
    try:
        ran, waited = os.read(fd, 128).split()[:2]
        return int(ran), int(waited)
    except (OSError, ValueError):
        return 0, 0
    finally:
        os.close(fd)


def own_delay_ns(ran, waited, cpu_ns):
    """The run-queue delay of a task that ran ``ran`` ns in a case whose tasks used ``cpu_ns``
    together, less what the others can have made it wait (their CPU)."""
    return max(0, waited - max(0, cpu_ns - ran))


def task_stats(pids, base=None):
    """``{(pid, tid): (ns run, ns waited)}`` of every thread of the processes ``pids``; ``base``:
    ``(pid, ns run, ns waited)`` of a main thread before the case (a forker that became it)."""
    stats = {}
    for pid in pids:
        try:
            tids = [int(t) for t in os.listdir("/proc/%d/task" % pid)]
        except (OSError, ValueError):
            continue
        for tid in tids:
            ran, waited = task_stat(pid, tid)
            if base is not None and (pid, tid) == (base[0], base[0]):  # its run before the case is not the case's
                ran, waited = max(0, ran - base[1]), max(0, waited - base[2])
            stats[(pid, tid)] = (ran, waited)
    return stats


def largest_delay_ns(stats):
    """The largest :func:`own_delay_ns` among ``stats`` (``(ns run, ns waited)`` of tasks that
    ran at the same time)."""
    cpu = sum(ran for ran, _ in stats)
    return max((own_delay_ns(ran, waited, cpu) for ran, waited in stats), default=0)


def case_delay_ns(pids, base=None):
    """The largest :func:`own_delay_ns` among the threads of the processes ``pids``."""
    return largest_delay_ns(list(task_stats(pids, base).values()))


#: Seconds between two readings of a running case's tasks (:meth:`WallClock.sample`): a task's
#: delay is lost when it exits, so workers a program runs in turn are read while they run.
SAMPLE_SECONDS = 0.1


class WallClock:
    """The wall deadline of one case started at ``t0`` (``time.monotonic()``).

    ``pids()`` gives the case's processes when the deadline is checked. :attr:`delay` is the
    run-queue delay (seconds) counted so far; :attr:`capped` says the case was stopped by the cap
    before its time net of delay reached the limit. :meth:`stop`, when the case's wall time is
    taken, fixes this server's own run-queue delay since ``t0`` (never a limit). From
    :data:`SAMPLE_SECONDS` on, :meth:`deadline` is also the next reading of the case's tasks
    (:meth:`sample`), taken by :meth:`expired`."""

    def __init__(self, t0, wall, pids, server_from=None):
        self.t0, self.wall, self.pids = t0, float(wall), pids
        self.cap_at = t0 + wall_cap(wall)
        self.next_sample = t0 + SAMPLE_SECONDS
        self.seen = {}  # (pid, tid) -> (ns run, ns waited) at the last reading
        self.sampling = True  # False until the case's figures can be told from its process's (base)
        self.sampled = 0.0  # seconds of delay summed over the readings (see sample)
        self.delay = 0.0
        self.startup = 0.0  # the forker's run-queue delay before it forked the case
        self.base = None  # (pid, ns run, ns waited) before the case: a forker that became it
        self.capped = False
        # this server's run-queue delay (ns) when ``t0`` was taken
        self.server_from = task_stat(os.getpid())[1] if server_from is None else server_from
        self.server_delay = None  # seconds, once stopped

    def limit_at(self):
        return min(self.t0 + self.wall + self.startup + self.delay, self.cap_at)

    def deadline(self):
        """When to look next: the limit, or the next reading of the case's tasks."""
        return min(self.limit_at(), self.next_sample)

    def expired(self, now):
        """True once the case's elapsed time net of its run-queue delay reached the limit, or the
        cap passed; reads the case's tasks when a reading is due, and re-reads the delay when the
        limit passed, to move it."""
        if now >= self.next_sample:
            self.sample(now)
        if now < self.limit_at():
            return False
        self.note(case_delay_ns(self.pids(), self.base))
        if now < self.limit_at():
            return False
        self.capped = now >= self.cap_at and now - self.t0 - self.startup - self.delay < self.wall
        return True

    def note(self, delay_ns):
        """Take a delay reading (ns) of one of the case's tasks (the largest counts)."""
        self.delay = max(self.delay, delay_ns / 1e9)

    def sample(self, now):
        """Read the case's tasks: over the time since the last reading, the largest delay of one
        task less the CPU the others used then (:func:`largest_delay_ns`), added up over the
        readings. So workers run in turn (each waiting while it runs, then gone) count each, and
        tasks of the program competing with each other count nothing."""
        self.next_sample = now + SAMPLE_SECONDS
        if not self.sampling:
            return
        stats = task_stats(self.pids(), self.base)
        steps = []
        for key, (ran, waited) in stats.items():
            ran0, waited0 = self.seen.get(key, (0, 0))
            steps.append((max(0, ran - ran0), max(0, waited - waited0)))
        self.seen = stats
        self.sampled += largest_delay_ns(steps) / 1e9
        self.note(self.sampled * 1e9)

    def stop(self):
        """Fix this server's run-queue delay over the case (the first call counts)."""
        if self.server_delay is None:
            self.server_delay = max(0, task_stat(os.getpid())[1] - self.server_from) / 1e9

    def report(self):
        """The fields this clock adds to a case's result header."""
        self.stop()
        return {"run_delay_seconds": self.startup + self.delay, "wall_capped": self.capped,
                "server_delay_seconds": self.server_delay}
