"""``/run_code`` work kept across a client's retries: a request answered 504 because it waited
``hold_seconds`` without a judge keeps its place in the queue for ``window`` seconds; the same
request sent again by the same tenant (verl's client retries a 504 after 1 s, then 2 s) takes that
place, or the answer already made, instead of queuing anew at the back. See ``docs/serve.md``."""

from __future__ import annotations

import hashlib
import threading
import time
from concurrent.futures import Future
from typing import Callable

#: Orphaned requests remembered at most.
MAX_ORPHANS = 4096


def request_key(tenant: str, body: bytes) -> str:
    """What makes a retry the same request: its tenant and its exact body."""
    h = hashlib.sha256(tenant.encode() + b"\0")
    h.update(body)
    return h.hexdigest()


class Orphans:
    """Units whose client was answered 504 while they waited, by :func:`request_key`."""

    def __init__(self, window: float, cancel: Callable[[Future], bool]):
        self.window, self._cancel = window, cancel
        self._kept: dict[str, tuple[float, Future]] = {}
        self._lock = threading.Lock()

    def leave(self, key: str, fut: Future) -> None:
        """Keep ``fut`` (still queued) for a retry of ``key`` within the window."""
        with self._lock:
            old = self._kept.pop(key, None)
            self._kept[key] = (time.monotonic() + self.window, fut)
            while len(self._kept) > MAX_ORPHANS:
                self._drop(self._kept.pop(next(iter(self._kept)))[1])
        if old is not None:
            self._drop(old[1])

    def adopt(self, key: str) -> Future | None:
        """The unit a retry of ``key`` takes over (queued, running or done), else ``None``."""
        self.sweep()
        with self._lock:
            kept = self._kept.pop(key, None)
        return kept[1] if kept is not None else None

    def sweep(self) -> int:
        """Drop orphans past their window (queued ones leave the queue); how many."""
        now = time.monotonic()
        with self._lock:
            old = [k for k, (until, _) in self._kept.items() if until < now]
            gone = [self._kept.pop(k)[1] for k in old]
        for fut in gone:
            self._drop(fut)
        return len(gone)

    def _drop(self, fut: Future) -> None:
        if not self._cancel(fut):
            fut.add_done_callback(_close_answer)


def _close_answer(fut: Future) -> None:
    if not fut.cancelled() and fut.exception() is None:
        fut.result().close()
