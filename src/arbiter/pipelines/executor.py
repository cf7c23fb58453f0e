"""The one parallel map of the batch jobs: ordered (or as completed), bounded, incremental.

:func:`ordered_map` yields results in input order as soon as each one and all before it are done,
pulling items lazily and keeping at most ``in_flight`` of them (default ``2 x workers``) between
input and output, so memory stays bounded however long the input is. Work runs on a
:class:`Backend`: :class:`ThreadBackend` (the judge blocks in a sandbox, so threads suffice) or
:func:`ray_backend` (the per-node judge pools of a Ray cluster). :func:`use_backend` makes one the
default of every map started inside it (how ``--ray`` reaches a job without new parameters).
See ``docs/codegen.md`` ("Executor") and ``docs/cluster.md``.
"""

from __future__ import annotations

import contextlib
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from typing import Any, Protocol, TypeVar

T = TypeVar("T")
R = TypeVar("R")


class Backend(Protocol):
    """Where work runs: ``submit(fn, arg)`` returns a ``concurrent.futures.Future`` of ``fn(arg)``;
    ``close(cancel)`` stops it (``cancel``: drop work not started)."""

    workers: int

    def submit(self, fn: Callable[[Any], Any], arg: Any) -> Future: ...

    def close(self, cancel: bool = False) -> None: ...


class ThreadBackend:
    """``workers`` threads of this process (named ``<name>_<n>``)."""

    def __init__(self, workers: int, name: str = "arbiter"):
        if workers < 1:
            raise ValueError(f"workers must be >= 1, got {workers!r}")
        self.workers = workers
        self._pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix=name)

    def submit(self, fn: Callable[[Any], Any], arg: Any) -> Future:
        return self._pool.submit(fn, arg)

    def close(self, cancel: bool = False) -> None:
        self._pool.shutdown(wait=True, cancel_futures=cancel)


def ray_backend(address: str | None = None, **options: Any) -> Backend:
    """The Ray backend (:class:`arbiter.cluster.backend.RayBackend`: ``address``, ``check_isolation``,
    ``pin_toolchain``); Ray is imported only here."""
    from arbiter.cluster.backend import RayBackend as _Ray

    return _Ray(address, **options)


_default: list[Backend] = []


@contextlib.contextmanager
def use_backend(backend: Backend | None) -> Iterator[Backend | None]:
    """Within the block, maps given no ``backend`` run on ``backend`` (their ``workers`` is then
    ignored: the backend's own count bounds the work in flight). ``None``: no change. Closes nothing."""
    if backend is None:
        yield None
        return
    _default.append(backend)
    try:
        yield backend
    finally:
        _default.remove(backend)


def current_backend() -> Backend | None:
    """The backend of the innermost :func:`use_backend` block, or ``None`` (this process's threads)."""
    return _default[-1] if _default else None


def _backend(workers: int | None, backend: Backend | None, name: str) -> tuple[Backend, bool]:
    if backend is not None:
        return backend, False
    if _default:
        return _default[-1], False
    if workers is None:
        from arbiter.judge.judge import default_workers

        workers = default_workers()
    return ThreadBackend(int(workers), name), True


def ordered_map(fn: Callable[[T], R], items: Iterable[T], *, workers: int | None = None,
                in_flight: int | None = None, backend: Backend | None = None, name: str = "arbiter",
                submit_if: Callable[[T], bool] | None = None) -> Iterator[tuple[T, R | None]]:
    """``(item, fn(item))`` for every item, in input order, lazily.

    - ``workers``: threads of the default :class:`ThreadBackend` (default one per core);
      ``backend``: run on this one instead (not closed here);
    - ``in_flight``: at most this many items wait between input and output (default ``2 x workers``);
    - ``submit_if(item)``: ``False`` passes the item through as ``(item, None)`` without running
      ``fn`` (still in order).

    An exception of ``fn`` is raised when its item's turn comes; work not yet yielded is
    cancelled when the consumer stops early or an error escapes."""
    pool, owned = _backend(workers, backend, name)
    bound = in_flight if in_flight is not None else 2 * pool.workers
    window: deque[tuple[T, Future | None]] = deque()  # None: passed through, nothing to wait for
    try:
        for item in items:
            run = submit_if is None or submit_if(item)
            window.append((item, pool.submit(fn, item) if run else None))
            while window and (window[0][1] is None or window[0][1].done() or len(window) > bound):
                head, fut = window.popleft()
                yield head, fut.result() if fut is not None else None
        while window:
            head, fut = window.popleft()
            yield head, fut.result() if fut is not None else None
    finally:
        for _, fut in window:
            if fut is not None:
                fut.cancel()
        if owned:
            pool.close(cancel=True)


def unordered_map(fn: Callable[[T], R], items: Iterable[T], *, workers: int | None = None,
                  in_flight: int | None = None, backend: Backend | None = None,
                  name: str = "arbiter") -> Iterator[tuple[T, R]]:
    """``(item, fn(item))`` as each finishes (any order), lazily; at most ``in_flight`` items
    submitted and not yet yielded (default ``2 x workers``). Same errors as :func:`ordered_map`."""
    pool, owned = _backend(workers, backend, name)
    bound = in_flight if in_flight is not None else 2 * pool.workers
    pending: dict[Future, T] = {}
    try:
        for item in items:
            pending[pool.submit(fn, item)] = item
            while len(pending) >= bound:
                done, _ = wait(list(pending), return_when=FIRST_COMPLETED)
                for fut in done:
                    yield pending.pop(fut), fut.result()
        while pending:
            done, _ = wait(list(pending), return_when=FIRST_COMPLETED)
            for fut in done:
                yield pending.pop(fut), fut.result()
    finally:
        for fut in pending:
            fut.cancel()
        if owned:
            pool.close(cancel=True)


__all__ = ["Backend", "ThreadBackend", "current_backend", "ordered_map", "ray_backend", "unordered_map",
           "use_backend"]
