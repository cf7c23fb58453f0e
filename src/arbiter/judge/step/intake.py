"""The main thread's door into a step judge: one thread of the judge's own takes its submissions in.

Python runs signal handlers in the main thread, between any two bytecodes: an interrupt (Ctrl-C in
a notebook, a ``SIGALRM`` timeout around ``compute_score``) raised in the judge's bookkeeping there
(a key claimed, a job queued, a place counted) would leave it half done. From the main thread a
call is one ``put`` on a queue (C code: no bytecode in it) and a wait for its result; the call
runs here, to its end, whether anyone still waits for it or not. Exports :class:`Intake`. See docs/step.md.
"""

from __future__ import annotations

import queue
import threading
from concurrent.futures import Future, InvalidStateError
from typing import Any, Callable


class Intake:
    """Runs each :meth:`run`'s function, in order, in a daemon thread of its own (started at the
    first one), and hands back its result. ``name``: the thread's."""

    def __init__(self, name: str = "arbiter-step-intake"):
        self._queue: queue.SimpleQueue = queue.SimpleQueue()
        self._name = name
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()  # (close and run: nothing is queued after the end)
        self._closed = False

    def run(self, fn: Callable[[], Any]) -> Any:
        """``fn()`` run in the intake thread: its result or its exception. An interrupt while it
        runs lands in this wait; ``fn`` runs to its end all the same. RuntimeError once closed."""
        done: Future = Future()
        with self._lock:
            if self._closed:
                raise RuntimeError("this step judge is closed")
            if self._thread is None:
                thread = threading.Thread(target=self._serve, name=self._name, daemon=True)
                thread.start()
                self._thread = thread
            self._queue.put((fn, done))
        return done.result()

    def close(self) -> None:
        """Refuse new calls; the thread ends once what it was given has run."""
        with self._lock:
            self._closed = True
            self._queue.put(None)

    def _serve(self) -> None:
        while True:
            item = self._queue.get()
            if item is None:
                return
            fn, done = item
            del item
            try:
                done.set_result(fn())
            except BaseException as exc:  # fn's error is its caller's
                try:
                    done.set_exception(exc)
                except InvalidStateError:
                    pass
            del fn, done
