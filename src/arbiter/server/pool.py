"""The bounded judge pool: ``workers`` threads, a queue of at most ``queue`` waiting units;
work past it is refused (:class:`Overloaded`), work whose client left is cancelled before it
starts. See ``docs/serve.md``."""

from __future__ import annotations

import asyncio
import threading
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, Callable

from arbiter.server.metrics import Metrics


class Overloaded(Exception):
    """The queue is full; retry after ``retry_after`` seconds."""

    def __init__(self, retry_after: int):
        super().__init__(f"the judge queue is full; retry after {retry_after} s")
        self.retry_after = retry_after


class JudgePool:
    """Runs blocking judge calls on ``workers`` threads with a bounded queue."""

    def __init__(self, workers: int, queue: int, metrics: Metrics):
        self.workers, self.capacity, self.metrics = workers, queue, metrics
        self._executor = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="arbiter-serve")
        self._lock = threading.Lock()
        self.waiting = 0
        self.busy = 0

    def admit(self, n: int) -> None:
        """Reserve ``n`` queue places or raise :class:`Overloaded` (a batch larger than the
        whole queue is admitted only into an empty one)."""
        with self._lock:
            if self.waiting and self.waiting + n > self.capacity:
                raise Overloaded(max(1, round(self.waiting / max(1, self.workers) * 0.5)))
            self.waiting += n
            self.metrics.queue_depth = self.waiting

    def release(self, n: int) -> None:
        """Give back places that were admitted but never submitted."""
        with self._lock:
            self.waiting -= n
            self.metrics.queue_depth = self.waiting

    def submit(self, fn: Callable[..., Any], *args: Any, counted: bool = True) -> Future:
        """Run an admitted unit; its place is freed when it starts (or is cancelled). ``counted=False``:
        ``fn`` frees the places of the units it runs itself (:meth:`release`)."""

        def run() -> Any:
            with self._lock:
                self.waiting -= counted
                self.busy += 1
                self.metrics.queue_depth, self.metrics.busy = self.waiting, self.busy
            try:
                return fn(*args)
            finally:
                with self._lock:
                    self.busy -= 1
                    self.metrics.busy = self.busy

        fut = self._executor.submit(run)
        if counted:
            fut.add_done_callback(self._cancelled)
        return fut

    def _cancelled(self, fut: Future) -> None:
        if fut.cancelled():
            self.release(1)
            self.metrics.cancelled += 1

    async def run(self, fn: Callable[..., Any], *args: Any, disconnected: Callable[[], Any] | None = None) -> Any:
        """Admit, run and await one unit; cancelled (if still queued) when ``disconnected()``
        becomes true. Raises :class:`Overloaded`, ``asyncio.CancelledError``."""
        self.admit(1)
        fut = self.submit(fn, *args)
        return await watch(fut, disconnected)

    def shutdown(self) -> None:
        self._executor.shutdown(wait=True, cancel_futures=True)


async def watch(fut: Future, disconnected: Callable[[], Any] | None, poll: float = 0.2) -> Any:
    """Await ``fut``; cancel it when ``await disconnected()`` says the client left."""
    afut = asyncio.wrap_future(fut)
    while True:
        done, _ = await asyncio.wait({afut}, timeout=poll)
        if done:
            return afut.result()
        if disconnected is not None and await disconnected():
            fut.cancel()
            raise asyncio.CancelledError("client disconnected")
