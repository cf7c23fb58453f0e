"""The warm pool: started sandboxes kept per configuration and reused across submissions.

:class:`SandboxPool` hands out a :class:`~arbiter.sandbox.sandbox.Sandbox` with a fresh session
(:meth:`SandboxPool.acquire`) and takes it back (:meth:`SandboxPool.release`): on background
threads the session is ended (its processes, files and mounts die with its namespaces) and the
next one armed, spares are started ahead of need, and idle sandboxes expire. A sandbox that
failed is closed, never reused. :func:`default_pool` is the process's one pool
(``ARBITER_POOL=0``: none kept, each submission starts its own). See docs/sandbox.md ("Warm pool").
"""

from __future__ import annotations

import atexit
import os
import threading
import time
from collections import deque
from typing import TYPE_CHECKING, Any, Callable, Mapping, Sequence

from arbiter.sandbox.config import SandboxConfig
from arbiter.sandbox.errors import SandboxError
from arbiter.sandbox.limits import Limits
from arbiter.sandbox.pageplans import learn_pages
from arbiter.sandbox.sandbox import Sandbox
from arbiter.sandbox.slots import cores

if TYPE_CHECKING:
    from concurrent.futures import ThreadPoolExecutor

#: ``0`` disables reuse; a number sets :attr:`SandboxPool.max_sandboxes`.
POOL_ENV = "ARBITER_POOL"
#: Seconds an idle sandbox is kept before it is closed.
IDLE_SECONDS = 300.0
#: Seconds an acquire waits for a sandbox of its key being recycled (a few ms of work) rather
#: than starting a new one (a hundred ms or more).
RECYCLE_WAIT = 0.5
#: Seconds a released sandbox waits before its recycle starts when another of its key is idle:
#: the releasing caller finishes its verdict first (a recycle's start takes the GIL and a core for
#: the guest's teardown, which made a one-case ``compute_score`` about 0.4 ms slower when it
#: overlapped the caller's last steps). With none idle it starts at once (an acquire may wait).
RECYCLE_DELAY = 0.003


def _key(factory: Callable[..., Sandbox], config: SandboxConfig, mounts: Sequence[tuple[str, str]]) -> tuple:
    """The pool key of a sandbox: its class, configuration and extra mounts."""
    return (factory, config, tuple(tuple(m) for m in mounts))


class SandboxPool:
    """Sandboxes kept per key ``(class, SandboxConfig, mounts)``; thread-safe. Acquiring waits
    only for a sandbox of its key being recycled (at most :data:`RECYCLE_WAIT`).

    - ``max_sandboxes``: sandboxes the pool keeps alive at most (busy + idle + being recycled;
      default ``2 * cores + 2``); past it, a released sandbox is closed. ``0``: no reuse.
    - ``max_idle_per_key``: idle and recycling sandboxes kept per key (default
      ``max(2, cores) + 1``).
    - ``idle_seconds``: an idle sandbox older than this is closed.
    - ``spares``: idle sandboxes started ahead of need for a key whose sandboxes came back
      healthy before (after an acquire left fewer idle: see :meth:`_want_spare`).
    """

    def __init__(self, *, max_sandboxes: int | None = None, max_idle_per_key: int | None = None,
                 idle_seconds: float = IDLE_SECONDS, spares: int = 1):
        n = cores()
        self.max_sandboxes = 2 * n + 2 if max_sandboxes is None else max_sandboxes
        self.max_idle_per_key = max_idle_per_key or max(2, n) + 1
        self.idle_seconds = idle_seconds
        self.spares = spares
        self._reset()

    def _reset(self) -> None:
        """Fresh state (at start, and in a forked child: the parent's sandboxes are not ours)."""
        self._pid = os.getpid()
        lock = threading.RLock()
        self._cond = threading.Condition(lock)  # acquires waiting for a sandbox being recycled
        # each kind's worker threads wait on their own condition (one lock): a job wakes one
        # worker of its kind, never every thread of the pool
        self._wake = {kind: threading.Condition(lock) for kind in ("recycle", "spare")}
        self._idle: dict[Any, list[tuple[Sandbox, float]]] = {}
        self._busy: dict[int, Any] = {}
        self._seen: set[Any] = set()
        self._jobs: dict[str, deque[tuple[Any, Any]]] = {"recycle": deque(), "spare": deque()}
        self._threads: dict[str, list[threading.Thread]] = {}
        self._starters: ThreadPoolExecutor | None = None
        self._pending: dict[Any, int] = {}  # key -> sandboxes being recycled (or started)
        self._starting: dict[Any, int] = {}  # key -> spares queued or being started
        self._closed = False
        self.counts = dict(acquired=0, started=0, reused=0, discarded=0, max_busy=0)

    def _check_pid(self) -> None:
        if self._pid != os.getpid():
            self._reset()

    # ---- the caller's side ----------------------------------------------------------------------
    def acquire(self, *, files: Mapping[str, bytes] | None = None, limits: Limits | None = None,
                config: SandboxConfig | None = None, mounts: Sequence[tuple[str, str]] = (),
                fresh: bool = False, factory: Callable[..., Sandbox] = Sandbox, python: bool = False) -> Sandbox:
        """A sandbox with a new session: ``files`` read-only in ``/prog``, ``limits`` (see
        :class:`Sandbox`). ``fresh``: a newly started one (after a sandbox failure); ``factory``:
        the class started (part of the key); ``python``: the session loads a Python program
        (see :meth:`Sandbox.new_session`). Raises SandboxError when none can be started."""
        self._check_pid()
        limits = limits or Limits()
        config = config or SandboxConfig()
        key = _key(factory, config, mounts)
        sb = None
        while not fresh and self._reusable(config):
            with self._cond:
                deadline = time.monotonic() + RECYCLE_WAIT
                while not self._idle.get(key) and self._pending.get(key) and time.monotonic() < deadline:
                    self._cond.wait(timeout=deadline - time.monotonic())  # one is nearly back
                idle = self._idle.get(key)
                if not idle:
                    break
                sb = idle.pop(0)[0]  # the longest idle: the one recycled last may still be warming its forker
            try:
                if not sb.alive:
                    raise SandboxError("the idle sandbox died")
                sb.new_session(files, limits, python=python)
                break
            except (SandboxError, OSError):
                self._count("discarded")
                sb.close()
                sb = None
        reused = sb is not None
        if sb is None:
            start = lambda: factory(files=files, limits=limits, config=config, mounts=mounts)  # noqa: E731
            sb = self._starter().submit(start).result() if self._reusable(config) else start()
        with self._cond:
            c = self.counts
            c["acquired"] += 1
            c["reused" if reused else "started"] += 1
            self._busy[id(sb)] = key
            c["max_busy"] = max(c["max_busy"], len(self._busy))
            if self._want_spare(key):
                self._submit("spare", key, (mounts, python))
        return sb

    def _want_spare(self, key: Any) -> bool:
        """Whether an acquire of ``key`` should start a spare (``self._cond`` held): its
        sandboxes came back healthy before, fewer than :attr:`spares` of them are idle or
        starting (one being recycled does not count: a recycle takes about as long as a short
        submission, whose next acquire would wait for it), there is room for one more while the
        one just taken is recycled later (:attr:`max_idle_per_key`), and in the pool."""
        idle = len(self._idle.get(key, ()))
        kept = idle + self._pending.get(key, 0)
        return (key in self._seen and idle + self._starting.get(key, 0) < self.spares
                and kept + 1 < self.max_idle_per_key and self._alive() < self.max_sandboxes)

    def prestart(self, *, config: SandboxConfig | None = None, python: bool = False) -> None:
        """Start a sandbox for ``config`` (no extra mounts) on the pool's spare thread, unless one
        of its key is idle or on its way: a command about to judge overlaps the start with its
        own set-up, and its :meth:`acquire` waits for this one. ``python``: as for acquire."""
        self._check_pid()
        config = config or SandboxConfig()
        key = _key(Sandbox, config, ())
        with self._cond:
            if (self._reusable(config) and not self._idle.get(key) and not self._pending.get(key)
                    and self._alive() < self.max_sandboxes):
                self._submit("spare", key, ((), python))

    def release(self, sb: Sandbox) -> None:
        """Give ``sb`` back after its submission: recycled for the next one on a recycling thread
        when it is healthy and there is room, else closed."""
        self._check_pid()
        with self._cond:
            key = self._busy.pop(id(sb), None)
            keep = (key is not None and self._reusable(sb.config) and sb.alive
                    and self._alive() < self.max_sandboxes
                    and len(self._idle.get(key, ())) + self._pending.get(key, 0) < self.max_idle_per_key)
            if keep:
                self._seen.add(key)  # spares are started for keys whose sandboxes came back healthy
                # (at once when no sandbox of its key is idle: the next acquire may wait for it)
                delay = RECYCLE_DELAY if self._idle.get(key) else 0.0
                self._submit("recycle", key, (sb, time.monotonic() + delay))
                return
        sb.close()

    def discard(self, sb: Sandbox) -> None:
        """Close ``sb`` (it failed): never reused."""
        self._check_pid()
        with self._cond:
            self._busy.pop(id(sb), None)
            self.counts["discarded"] += 1
        sb.close()

    def ensure_capacity(self, busy: int) -> None:
        """Room for ``busy`` sandboxes in use at once, their recycling and a spare (raises
        :attr:`max_sandboxes` to ``2 * busy + 1`` and :attr:`max_idle_per_key` to ``busy + 1``; never
        lowers them, never enables a disabled pool)."""
        with self._cond:
            if self.max_sandboxes > 0:
                self.max_sandboxes = max(self.max_sandboxes, 2 * busy + 1)
                self.max_idle_per_key = max(self.max_idle_per_key, busy + 1)

    def stats(self) -> dict[str, int]:
        """``acquired``, ``started`` (new sandboxes handed out), ``reused``, ``discarded``,
        ``busy`` (handed out now), ``max_busy``, ``idle``."""
        self._check_pid()
        with self._cond:
            return dict(self.counts, busy=len(self._busy),
                        idle=sum(len(v) for v in self._idle.values()))

    def close(self) -> None:
        """Close every idle sandbox and stop the background thread (busy ones stay the callers')."""
        if self._pid != os.getpid():
            return
        with self._cond:
            self._closed = True
            idle = [sb for v in self._idle.values() for sb, _ in v]
            idle += [sb for _, (sb, _) in self._jobs["recycle"]]
            self._idle.clear()
            for jobs in self._jobs.values():
                jobs.clear()
            self._cond.notify_all()
            for wake in self._wake.values():
                wake.notify_all()
            threads = [t for ts in self._threads.values() for t in ts]
            starters, self._starters = self._starters, None
        if starters is not None:
            starters.shutdown(wait=False)
        for sb in idle:
            sb.close()
        for thread in threads:
            if thread is not threading.current_thread():
                thread.join(timeout=30)

    # ---- the background thread --------------------------------------------------------------------
    def _starter(self) -> ThreadPoolExecutor:
        """The threads that start the pool's sandboxes. bwrap runs ``--die-with-parent``, and its
        parent is the *thread* that started it: a sandbox started by a caller's thread would die
        with that thread (a ``judge_many`` worker's) while the pool still keeps it."""
        from concurrent.futures import ThreadPoolExecutor  # (not at import: the CLI's start-up)

        with self._cond:
            if self._starters is None:
                self._starters = ThreadPoolExecutor(max_workers=max(2, cores()),
                                                    thread_name_prefix="sandbox-pool-start")
            return self._starters

    def _reusable(self, config: SandboxConfig) -> bool:
        return self.max_sandboxes > 0 and config.isolated and not self._closed

    def _alive(self) -> int:
        return (len(self._busy) + sum(self._pending.values())
                + sum(len(v) for v in self._idle.values()))

    def _count(self, name: str) -> None:
        with self._cond:
            self.counts[name] += 1

    def _submit(self, kind: str, key: Any, arg: Any) -> None:
        """Queue a job for the ``kind`` worker threads (``self._cond`` held)."""
        self._pending[key] = self._pending.get(key, 0) + 1
        if kind == "spare":
            self._starting[key] = self._starting.get(key, 0) + 1
        self._jobs[kind].append((key, arg))
        threads = self._threads.setdefault(kind, [])
        # recycling: one thread per core (a recycle is mostly waiting for the guest, and takes
        # longer than a one-case submission); spares: one
        if len(threads) < (cores() if kind == "recycle" else 1):
            threads.append(threading.Thread(target=self._work, args=(kind,), daemon=True,
                                            name=f"sandbox-pool-{kind}-{len(threads)}"))
            threads[-1].start()
        self._wake[kind].notify()

    def _work(self, kind: str) -> None:
        jobs, wake = self._jobs[kind], self._wake[kind]
        while True:
            with self._cond:
                while not jobs and not self._closed:
                    wake.wait(timeout=min(self.idle_seconds, 30.0))
                    if kind == "spare":
                        self._expire()
                if self._closed:
                    return
                key, arg = jobs.popleft()
            sb = self._recycle(arg) if kind == "recycle" else self._spare(key, arg)
            with self._cond:
                self._pending[key] -= 1
                if kind == "spare":
                    self._starting[key] -= 1
                idle = self._idle.setdefault(key, [])
                if sb is not None and not self._closed and len(idle) < self.max_idle_per_key:
                    idle.append((sb, time.monotonic()))  # the bound holds whatever was on its way
                    sb = None
                self._cond.notify_all()
            if sb is not None:
                sb.close()

    def _recycle(self, job: tuple[Sandbox, float]) -> Sandbox | None:
        """End the session of a released sandbox (``job``: it and when its recycle may start,
        see :data:`RECYCLE_DELAY`) and arm the next; None (closed) when it did not end cleanly."""
        sb, start = job
        wait = start - time.monotonic()
        if wait > 0:
            time.sleep(wait)
        try:
            if sb.end_session():
                learn_pages(sb)
                sb.arm()
                return sb
        except Exception:  # (ours, whatever it is: the sandbox is closed, the thread lives on)
            pass
        self._count("discarded")
        sb.close()
        return None

    def _spare(self, key: Any, how: tuple[Sequence[tuple[str, str]], bool]) -> Sandbox | None:
        mounts, python = how
        try:
            sb = key[0](config=key[1], mounts=mounts, session=False)
            sb.arm(prefork=python)
            return sb
        except (SandboxError, OSError):
            return None

    def _expire(self) -> None:
        """Close idle sandboxes older than :attr:`idle_seconds` (``self._cond`` held)."""
        old = time.monotonic() - self.idle_seconds
        for key, items in list(self._idle.items()):
            for item in [i for i in items if i[1] < old]:
                items.remove(item)
                item[0].close()


_default: SandboxPool | None = None
_default_lock = threading.Lock()


def default_pool() -> SandboxPool:
    """The process's one pool (``$ARBITER_POOL``: ``0`` for none kept, or the maximum number of
    sandboxes); a forked child gets its own, empty one. Closed at exit."""
    global _default
    pool = _default
    if pool is not None and pool._pid == os.getpid():
        return pool
    with _default_lock:
        if _default is None or _default._pid != os.getpid():
            env = os.environ.get(POOL_ENV, "").strip()
            _default = SandboxPool(max_sandboxes=int(env) if env.isdigit() else None)
            atexit.register(_default.close)
        return _default
