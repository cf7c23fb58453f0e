"""cgroup v1 groups for one sandbox: memory (limit, peak, OOM kills), pids (max tasks), cpuacct.

Groups are created under the judge's own group in each hierarchy, in a sub-directory ``arbiter``;
its CPU weight is one task's times the sandboxes alive in it (:func:`reweigh`).
A failed cgroup operation raises :class:`CgroupError` (``sandbox_error``, never a program verdict).
See docs/sandbox.md ("Cgroups", "Under host load").
"""

from __future__ import annotations

import errno
import itertools
import os
import signal
import threading
import time
from pathlib import Path
from typing import Collection

ROOT = Path("/sys/fs/cgroup")
CONTROLLERS = ("memory", "pids", "cpuacct")
#: Optional: the CPU bandwidth controller. Each sandbox gets its own group (equal CFS share with
#: every other sandbox, whatever its process count) capped at a little more than one core, so a
#: fork bomb spinning 64 processes cannot starve the programs of the other sandboxes into false
#: wall-time limits.
OPTIONAL_CONTROLLERS = ("cpu",)
CPU_PERIOD_US = 100_000
#: One core and a fifth: at exactly one core a single-threaded case was throttled in 2-3 of 30-40
#: runs on a quiet host (the kernel hands the quota out to each CPU in 5 ms slices, and the
#: sandbox's own server and forker add a little); with this headroom, in none of 40.
CPU_QUOTA_US = 120_000
#: ``cpu.shares`` of one task at nice 0. The ``arbiter`` group gets this times the number of
#: sandboxes in it (at most :data:`MAX_SHARES`, the kernel's), so N judges compete with the host's
#: processes as N tasks, not as one.
TASK_SHARES = 1024
MAX_SHARES = 262_144
_counter = itertools.count()
_lock = threading.Lock()


class CgroupError(RuntimeError):
    """A cgroup could not be created, configured, read or removed (our failure)."""


def own_cgroup_path(controller: str) -> str:
    """This process's group path in the v1 hierarchy of ``controller`` (from /proc/self/cgroup)."""
    with open("/proc/self/cgroup") as f:
        for line in f:
            _, names, path = line.rstrip("\n").split(":", 2)
            if controller in names.split(","):
                return path
    raise CgroupError(f"no cgroup v1 hierarchy for controller {controller!r}")


def available() -> tuple[bool, str]:
    """Whether this process can create the sandbox's groups; ``(ok, reason)``."""
    try:
        for c in CONTROLLERS:
            base = ROOT / c / own_cgroup_path(c).lstrip("/")
            if not base.is_dir():
                return False, f"{base} does not exist"
            if not os.access(base, os.W_OK):
                return False, f"{base} is not writable (run as root or delegate the group)"
        probe = SandboxCgroups.create(memory_bytes=64 << 20, processes=8)
        probe.destroy()
        return True, "cgroup v1 memory, pids, cpuacct"
    except (CgroupError, OSError) as exc:
        return False, str(exc)


_pruned = False


def reweigh(base: Path) -> int:
    """Set the ``cpu.shares`` of ``base`` (an ``arbiter`` group of the cpu hierarchy) to
    :data:`TASK_SHARES` times the sandbox groups in it; returns the value. Under an exclusive
    ``flock`` of the directory, so judges of several processes sharing it do not undo each
    other's count. Raises OSError."""
    import fcntl

    fd = os.open(base, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        n = sum(1 for d in os.scandir(base) if d.name.startswith("sbx-") and d.is_dir())
        shares = max(2, min(MAX_SHARES, TASK_SHARES * max(1, n)))
        with open(base / "cpu.shares", "w") as f:
            f.write(str(shares))
        return shares
    finally:
        os.close(fd)  # (releases the lock)


def pid_alive(pid: int) -> bool:
    """True when a process ``pid`` exists (also when it belongs to another user)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def prune_stale(base: Path) -> int:
    """Remove sandbox groups left by judge processes that died (e.g. SIGKILLed) before their
    sandboxes' ``close``: groups named ``sbx-<pid>-<n>`` whose ``pid`` is gone. Their tasks (if
    any survived ``--die-with-parent``) are killed first. Returns how many groups were removed."""
    removed = 0
    try:
        entries = list(base.iterdir())
    except OSError:
        return 0
    for d in entries:
        parts = d.name.split("-")
        if len(parts) != 3 or parts[0] != "sbx" or not parts[1].isdigit() or pid_alive(int(parts[1])):
            continue
        try:
            for pid in (int(x) for x in (d / "cgroup.procs").read_text().split()):
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            d.rmdir()
            removed += 1
        except OSError:
            pass
    return removed


class SandboxCgroups:
    """The memory, pids and cpuacct groups of one sandbox.

    Memory: ``memory.limit_in_bytes`` (and ``memsw`` when present, so swap cannot extend it);
    the peak is read from ``memory.max_usage_in_bytes`` (``memory.memsw.`` when present; reset
    before each case); OOM kills are
    counted from ``memory.oom_control``'s ``oom_kill`` field. Pids: ``pids.max`` bounds processes
    and threads. CPU: ``cpuacct.usage`` in nanoseconds covers every task, waited for or not; when
    the ``cpu`` controller is there, the sandbox is its own CFS group capped at a little more than
    one core (:data:`CPU_QUOTA_US`), so sandboxes share the cores fairly whatever their process counts.
    """

    def __init__(self, paths: dict[str, Path]):
        self.paths = paths
        self._fds: dict[str, int] = {}

    def _fd(self, controller: str, name: str, flags: int = os.O_RDONLY) -> int:
        """A cached descriptor for a control file: re-read with pread at offset 0 (no
        open/close per case)."""
        key = f"{controller}/{name}/{flags}"
        fd = self._fds.get(key)
        if fd is None:
            try:
                fd = os.open(self.paths[controller] / name, flags | os.O_CLOEXEC)
            except OSError as exc:
                raise CgroupError(f"cannot open {self.paths[controller] / name}: {exc}") from exc
            self._fds[key] = fd
        return fd

    def _pread_int(self, controller: str, name: str) -> int:
        try:
            return int(os.pread(self._fd(controller, name), 64, 0))
        except (OSError, ValueError) as exc:
            raise CgroupError(f"cannot read {self.paths[controller] / name}: {exc}") from exc

    @classmethod
    def create(cls, *, memory_bytes: int, processes: int) -> "SandboxCgroups":
        """Create the three groups with these limits (bytes, tasks). Raises CgroupError."""
        global _pruned
        with _lock:
            name = f"sbx-{os.getpid()}-{next(_counter)}"
            prune, _pruned = not _pruned, True
        paths: dict[str, Path] = {}
        try:
            for c in CONTROLLERS:
                base = ROOT / c / own_cgroup_path(c).lstrip("/") / "arbiter"
                base.mkdir(exist_ok=True)
                if prune:
                    prune_stale(base)
                p = base / name
                p.mkdir()
                paths[c] = p
            for c in OPTIONAL_CONTROLLERS:
                try:
                    base = ROOT / c / own_cgroup_path(c).lstrip("/") / "arbiter"
                    base.mkdir(exist_ok=True)
                    if prune:
                        prune_stale(base)
                    (base / name).mkdir()
                    paths[c] = base / name
                    reweigh(base)
                except (OSError, CgroupError):
                    continue
            self = cls(paths)
            self.set_memory_limit(memory_bytes)
            try:  # reclaim in this group takes page cache, never anonymous memory (see reclaim)
                self._write("memory", "memory.swappiness", "0")
            except CgroupError:
                pass
            self._write("pids", "pids.max", str(int(processes)))
            if "cpu" in paths:
                self._write("cpu", "cpu.cfs_period_us", str(CPU_PERIOD_US))
                self._write("cpu", "cpu.cfs_quota_us", str(CPU_QUOTA_US))
            return self
        except OSError as exc:
            for p in paths.values():
                try:
                    p.rmdir()
                except OSError:
                    pass
            raise CgroupError(f"cannot create sandbox cgroups: {exc}") from exc

    # ---- small file helpers -----------------------------------------------------------------
    def _write(self, controller: str, name: str, value: str) -> None:
        try:
            with open(self.paths[controller] / name, "w") as f:
                f.write(value)
        except OSError as exc:
            raise CgroupError(f"cannot write {value!r} to {self.paths[controller] / name}: {exc}") from exc

    def _read(self, controller: str, name: str) -> str:
        try:
            with open(self.paths[controller] / name) as f:
                return f.read()
        except OSError as exc:
            raise CgroupError(f"cannot read {self.paths[controller] / name}: {exc}") from exc

    # ---- configuration ------------------------------------------------------------------------
    def set_memory_limit(self, limit_bytes: int) -> None:
        """Set the memory (and memory+swap) limit in bytes."""
        memsw = self.paths["memory"] / "memory.memsw.limit_in_bytes"
        # memsw must stay >= the memory limit: order the writes accordingly
        current = int(self._read("memory", "memory.limit_in_bytes"))
        if memsw.exists() and limit_bytes > current:
            self._write("memory", "memory.memsw.limit_in_bytes", str(limit_bytes))
            self._write("memory", "memory.limit_in_bytes", str(limit_bytes))
        else:
            self._write("memory", "memory.limit_in_bytes", str(limit_bytes))
            if memsw.exists():
                self._write("memory", "memory.memsw.limit_in_bytes", str(limit_bytes))

    def set_pids_max(self, processes: int) -> None:
        self._write("pids", "pids.max", str(int(processes)))

    def attach(self, pid: int) -> None:
        """Move process ``pid`` (not yet forked any children) into every group."""
        for c in self.paths:
            self._write(c, "cgroup.procs", str(pid))

    # ---- readings -----------------------------------------------------------------------------
    @property
    def _mem_prefix(self) -> str:
        """``memory.memsw.`` when the kernel accounts swap (memory + swap: pages swapped out under
        memory pressure stay counted), else ``memory.``."""
        prefix = getattr(self, "_prefix", None)
        if prefix is None:
            memsw = (self.paths["memory"] / "memory.memsw.max_usage_in_bytes").exists()
            prefix = self._prefix = "memory.memsw." if memsw else "memory."
        return prefix

    def memory_usage(self) -> int:
        """Bytes charged to the group now (memory + swap when swap is accounted)."""
        return self._pread_int("memory", self._mem_prefix + "usage_in_bytes")

    def memory_peak(self) -> int:
        """Largest bytes charged since the last :meth:`reset_memory_peak` (memory + swap when swap
        is accounted)."""
        return self._pread_int("memory", self._mem_prefix + "max_usage_in_bytes")

    def reset_memory_peak(self) -> None:
        name = self._mem_prefix + "max_usage_in_bytes"
        try:
            os.pwrite(self._fd("memory", name, os.O_WRONLY), b"0", 0)
        except OSError as exc:
            raise CgroupError(f"cannot reset {name}: {exc}") from exc

    def memory_pinned(self) -> tuple[int, int]:
        """``(charged, pinned)`` bytes of the group now: everything charged to it, and what no
        reclaim can free: anonymous memory, shmem (tmpfs files, memfds) and file pages mapped by
        its processes (in use). The rest is page cache and kernel objects (dentries, inodes)
        the kernel would reclaim when the group nears its limit (``memory.stat``)."""
        try:
            charged = int(os.pread(self._fd("memory", "memory.usage_in_bytes"), 64, 0))
            text = os.pread(self._fd("memory", "memory.stat"), 4096, 0)
        except (OSError, ValueError) as exc:
            raise CgroupError(f"cannot read memory.stat: {exc}") from exc
        fields = dict(line.split(b" ", 1) for line in text.split(b"\n", 12)[:12] if b" " in line)
        try:
            pinned = int(fields[b"rss"]) + int(fields[b"shmem"]) + int(fields[b"mapped_file"])
        except (KeyError, ValueError) as exc:
            raise CgroupError(f"memory.stat without rss, shmem or mapped_file: {exc}") from exc
        return charged, pinned

    def reclaim(self, target: int) -> int:
        """Have the kernel reclaim the group's page cache and reclaimable kernel objects down to
        ``target`` bytes charged (by lowering its memory limit to it for the instant of the write,
        which reclaims synchronously; ``memory.swappiness`` 0: anonymous memory is never swapped
        out for it), then put the limit back. Returns the bytes charged after. When the kernel
        cannot get that low, it stops where it can (EBUSY)."""
        name = "memory.limit_in_bytes"
        limit = int(self._read("memory", name))
        if target < limit:
            try:
                fd = os.open(self.paths["memory"] / name, os.O_WRONLY | os.O_CLOEXEC)
                try:
                    os.write(fd, str(int(target)).encode())
                except OSError as exc:
                    if exc.errno != errno.EBUSY:
                        raise
                    pass  # (what is left cannot be reclaimed)
                finally:
                    os.close(fd)
            except OSError as exc:
                raise CgroupError(f"cannot lower {name} to reclaim: {exc}") from exc
            finally:
                self._write("memory", name, str(limit))
        return self._pread_int("memory", "memory.usage_in_bytes")

    def oom_kills(self) -> int:
        """OOM kills so far in this group (the ``oom_kill`` field, kernel >= 4.13)."""
        try:
            text = os.pread(self._fd("memory", "memory.oom_control"), 256, 0).decode()
        except OSError as exc:
            raise CgroupError(f"cannot read memory.oom_control: {exc}") from exc
        for line in text.splitlines():
            key, _, value = line.partition(" ")
            if key == "oom_kill":
                return int(value)
        return self._pread_int("memory", "memory.failcnt")  # old kernels: any limit hit

    def cpu_ns(self) -> int:
        """CPU nanoseconds used by every task of the group so far."""
        return self._pread_int("cpuacct", "cpuacct.usage")

    def pids(self) -> list[int]:
        return [int(x) for x in self._read("pids", "cgroup.procs").split()]

    def kill_except(self, keep: Collection[int]) -> int:
        """SIGKILL every process of the group except those in ``keep`` (the sandbox's server,
        its zygote), once.
        Each pid is pinned with a pidfd and checked to still be in this group before the
        signal, so a pid reused by an unrelated host process is never hit. Returns how many
        processes were signalled."""
        want = "/" + str(self.paths["pids"].relative_to(ROOT / "pids"))
        killed = 0
        for pid in self.pids():
            if pid in keep:
                continue
            try:
                pidfd = os.pidfd_open(pid)
            except OSError:
                continue  # gone already
            try:
                with open(f"/proc/{pid}/cgroup") as f:
                    ours = any(line.rstrip("\n").split(":", 2)[2] == want
                               for line in f if "pids" in line.split(":", 2)[1].split(","))
                if ours:
                    signal.pidfd_send_signal(pidfd, signal.SIGKILL)
                    killed += 1
            except (OSError, IndexError):
                pass
            finally:
                os.close(pidfd)
        return killed

    # ---- teardown -----------------------------------------------------------------------------
    def kill_all(self, timeout: float = 2.0) -> bool:
        """SIGKILL every task in the group until it is empty; True when it emptied in time."""
        deadline = time.monotonic() + timeout
        while True:
            pids = self.pids() if self.paths["pids"].exists() else []
            if not pids:
                return True
            for pid in pids:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            if time.monotonic() > deadline:
                return False
            time.sleep(0.002)

    def destroy(self) -> None:
        """Kill what is left and remove the groups (retrying while the kernel drains them)."""
        for fd in self._fds.values():
            try:
                os.close(fd)
            except OSError:
                pass
        self._fds.clear()
        try:
            self.kill_all()
        except CgroupError:
            pass
        for c, p in self.paths.items():
            for _ in range(200):
                try:
                    p.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    time.sleep(0.005)
            if c == "cpu":
                try:
                    reweigh(p.parent)
                except OSError:
                    pass

    def cpu_throttled(self) -> tuple[int, int]:
        """``(periods throttled, nanoseconds throttled)`` of the sandbox's CPU quota so far
        (``cpu.stat``); ``(0, 0)`` without the cpu controller."""
        if "cpu" not in self.paths:
            return 0, 0
        fields = dict(line.split() for line in self._read("cpu", "cpu.stat").splitlines()
                      if len(line.split()) == 2)
        return int(fields.get("nr_throttled", 0)), int(fields.get("throttled_time", 0))
