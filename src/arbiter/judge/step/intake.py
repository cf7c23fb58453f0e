"""The main thread's door into a step judge: threads of the judge's own do its bookkeeping.

Python runs signal handlers in the main thread (after a call returns, at a loop's jump back, at a
function's start): an interrupt (Ctrl-C in a notebook, a ``SIGALRM`` timeout around
``compute_score``) raised in the judge's bookkeeping there (a key claimed, a job queued, a place
counted, a lock held) would leave it half done, and so would one raised in a future's
``with self._condition`` (``Condition.__enter__`` is Python code: the lock taken, the ``with`` not
entered yet), which leaves the lock held and the worker that completes the future waiting forever.
From the main thread a call is one ``put`` on a queue and a wait on a lock of its own; the call runs
in an intake thread, to its end, whether anyone still waits or not, and the main thread touches no
future. Exports :class:`Intake`, :func:`outcome`, :data:`CLOSED`. See docs/step.md.
"""

from __future__ import annotations

import functools
import itertools
import os
import queue
import threading
import weakref
from concurrent.futures import CancelledError, Future
from typing import Any, Callable

#: What a call of a closed step judge (or of its intake) raises.
CLOSED = "this step judge is closed"


def outcome(fut: Future) -> tuple[Any, BaseException | None]:
    """A done ``fut``'s ``(result, None)`` or ``(None, error)``; a future cancelled before it
    began (an executor shut down with ``cancel_futures``) ends with CancelledError."""
    error = CancelledError() if fut.cancelled() else fut.exception()
    return (None if error is not None else fut.result()), error


class _Handed:
    """One result handed to its waiter in the main thread. The wait is the ``acquire`` of a lock
    no other thread waits for (C code: a handler that raises ends it cleanly, and nothing is left
    held that anyone needs); ``Future.result`` waits in ``Condition.wait``, which loses its lock
    when a handler raises at the wrong bytecode (``RuntimeError: cannot release un-acquired
    lock`` instead of the interrupt), and enters it by ``Condition.__enter__``."""

    def __init__(self) -> None:
        self._ready = threading.Lock()
        self._ready.acquire()
        self._value: Any = None
        self._error: BaseException | None = None

    def hand(self, value: Any, error: BaseException | None) -> None:
        self._value, self._error = value, error
        self._ready.release()

    def hand_outcome(self, fut: Future) -> None:
        """``fut``'s result or exception (a done-callback of ``fut``)."""
        self.hand(*outcome(fut))

    def wait(self) -> Any:
        self._ready.acquire()
        if self._error is not None:
            raise self._error
        return self._value


def _to_loop(loop: Any, mirror: Any, fut: Future) -> None:
    """A done-callback: ``fut``'s outcome onto ``mirror`` in its event loop (gone: dropped)."""
    value, error = outcome(fut)
    try:
        loop.call_soon_threadsafe(_settle, mirror, value, error)
    except RuntimeError:  # the loop is closed: nobody waits
        pass


def _settle(mirror: Any, value: Any, error: BaseException | None) -> None:
    if mirror.done():  # (cancelled by its waiter)
        return
    if error is not None:
        mirror.set_exception(error)
    else:
        mirror.set_result(value)


_NUMBERS = itertools.count(1)


class Intake:
    """Runs each :meth:`run`'s function in a daemon thread of its own and hands back its result.
    Its threads (``name`` theirs: default numbered) keep one spare: the first is started by the
    first call, and a thread that takes a call starts another when none is left waiting, so a call
    made while an earlier one still runs (an interrupted call's work, which runs to its end) is
    taken at once; a thread ends when it is done and two others wait. A forked child's intake
    starts anew (the parent's threads are not in it)."""

    def __init__(self, name: str | None = None):
        self._name = name or f"arbiter-step-intake-{next(_NUMBERS)}"
        self._closed = False
        self._begin()
        _INTAKES.add(self)

    def _begin(self) -> None:
        """A new queue and lock, no thread yet (here and in a forked child)."""
        self._queue: queue.SimpleQueue = queue.SimpleQueue()
        self._lock = threading.Lock()  # (run, close and the threads' count)
        self._idle = 0  # threads waiting for a call, or started to (counted by the threads only)
        self._server: threading.Thread | None = None  # the first thread (None: the next call starts it)

    def run(self, fn: Callable[[], Any], until_done: bool = False) -> Any:
        """``fn()`` run in an intake thread: its result or its exception; ``until_done``: ``fn``
        returns a future, and this is that future's result or exception, once it is done. An
        interrupt ends this wait; ``fn`` runs to its end all the same. RuntimeError once closed."""
        handed = _Handed()
        with self._lock:
            if self._closed:
                raise RuntimeError(CLOSED)
            if self._server is None:  # the first call (an interrupt inside the start leaves it to the
                # next call; one started but not known is one thread more: it counts itself)
                server = threading.Thread(target=self._serve, args=(False,), name=self._name, daemon=True)
                server.start()
                self._server = server
            self._queue.put((fn, handed, until_done))
        return handed.wait()

    def wait(self, fut: Future) -> Any:
        """``fut``'s result (or its exception raised): from the main thread, waited for as :meth:`run`
        waits (the future is touched in the intake thread only, so an interrupt ends this wait and
        leaves no lock of it held); from any other thread, ``fut.result()``."""
        if threading.current_thread() is not threading.main_thread():
            return fut.result()
        return self.run(lambda: fut, until_done=True)

    def bridge(self, futures: list[Future], loop: Any) -> list[Any]:
        """An asyncio future of ``loop`` for each of ``futures`` (what ``asyncio.wrap_future`` gives,
        but its done-callbacks are added in the intake thread: ``wrap_future`` adds them in the
        caller's, the main thread's, where an interrupt could leave a future's lock held)."""
        mirrors = [loop.create_future() for _ in futures]

        def watch() -> None:
            for fut, mirror in zip(futures, mirrors):
                fut.add_done_callback(functools.partial(_to_loop, loop, mirror))

        self.run(watch)
        return mirrors

    def close(self) -> None:
        """Refuse new calls; the threads end once what they were given has run."""
        with self._lock:
            self._closed = True
            self._queue.put(None)

    def _serve(self, counted: bool) -> None:
        if not counted:
            with self._lock:
                self._idle += 1
        while True:
            item = self._queue.get()
            if item is None:
                self._queue.put(None)  # (for the other threads)
                return
            with self._lock:
                self._idle -= 1
                if not self._idle and not self._closed:
                    self._start_spare()
            _run_one(*item)
            del item
            with self._lock:
                if self._idle >= 2 and not self._closed:  # (a spare and one more wait: not needed;
                    return  # once closed, the calls queued before the end are still served)
                self._idle += 1

    def _start_spare(self) -> None:
        """One more thread waiting for calls (``self._lock`` held; never in the main thread, so
        no interrupt lands between the count and the start)."""
        self._idle += 1
        try:
            threading.Thread(target=self._serve, args=(True,), name=self._name, daemon=True).start()
        except RuntimeError:  # (no thread can be started now: later calls wait for this one)
            self._idle -= 1


#: Every live intake: a forked child gives each a new queue and lock, and no thread.
_INTAKES: "weakref.WeakSet[Intake]" = weakref.WeakSet()


def _after_fork_in_child() -> None:
    for intake in list(_INTAKES):
        intake._begin()


os.register_at_fork(after_in_child=_after_fork_in_child)


def _run_one(fn: Callable[[], Any], handed: _Handed, until_done: bool) -> None:
    try:
        value, error = fn(), None
        if until_done:
            value.add_done_callback(handed.hand_outcome)
            return
    except BaseException as exc:  # fn's error (or a value that is no future) is its caller's
        value, error = None, exc
    handed.hand(value, error)
