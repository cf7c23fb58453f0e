"""What the rows of one verification run share: per-task suites, the start-up floor, the lock. See
``docs/oracle.md``."""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator, Mapping

from arbiter.datasets.oracle import HiddenTests, SeedRow
from arbiter.pipelines.oracle.generated_tests import (
    CACHE_SUBDIR,
    GeneratedSuite,
    GeneratedTestsError,
    build_generated_suite,
    find_generator,
    seed_compile_spec,
)
from arbiter.pipelines.oracle.hidden_tests import CACHE_SUBDIR as HIDDEN_CACHE_SUBDIR
from arbiter.pipelines.oracle.hidden_tests import HiddenCheck, HiddenCheckError, check_hidden_tests
from arbiter.pipelines.oracle.options import InfraError, VerifyOptions, cache_subdir
from arbiter.pipelines.oracle.suites import checker_of


class _RWLock:
    """Many holders of ``shared()`` or one of ``exclusive()`` (writer-preferring)."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._readers = 0
        self._writer = False
        self._waiting_writers = 0

    @contextlib.contextmanager
    def shared(self) -> Iterator[None]:
        with self._cond:
            while self._writer or self._waiting_writers:
                self._cond.wait()
            self._readers += 1
        try:
            yield
        finally:
            with self._cond:
                self._readers -= 1
                self._cond.notify_all()

    @contextlib.contextmanager
    def exclusive(self) -> Iterator[None]:
        with self._cond:
            self._waiting_writers += 1
            while self._writer or self._readers:
                self._cond.wait()
            self._waiting_writers -= 1
            self._writer = True
        try:
            yield
        finally:
            with self._cond:
                self._writer = False
                self._cond.notify_all()


# --------------------------------------------------------------------------------------------------
# Context shared by the rows of one run


@dataclass
class TaskInfo:
    generated: GeneratedSuite | None = None
    generated_error: str | None = None  # task error (INVALID_TASK)
    generator_path: str | None = None
    hidden: HiddenCheck | None = None  # the source's check of the task's hidden cases (None: no hidden cases)
    hidden_error: str | None = None  # task error (INVALID_TASK): the hidden cases could not be checked


class VerifyContext:
    """What the rows of one run share: seeds, hidden tests, generators, options, per-task generated suites
    (built once, on first use), the start-up floor, and the measurement lock.

    - ``seeds``: ``task_id -> SeedRow``; ``hidden``: :class:`HiddenTests` or ``None``; ``generators``: a folder
      of ``<task_id>.py`` or ``None``.
    Thread-safe.
    """

    def __init__(self, seeds: Mapping[str, SeedRow], *, hidden: HiddenTests | None = None,
                 generators: str | os.PathLike | None = None, options: VerifyOptions | None = None):
        self.seeds = dict(seeds)
        self.hidden = hidden
        self.generators = Path(generators) if generators is not None else None
        self.options = options or VerifyOptions()
        self.options.check()
        self._tasks: dict[str, TaskInfo] = {}
        self._task_locks: dict[str, threading.Lock] = {}
        self._guard = threading.Lock()
        self._floors: dict[tuple[str, str], int] = {}
        self._hidden_extra: dict[str, TaskInfo] = {}  # hidden checks of tasks no row needed (report coverage)
        self._hidden_failures: dict[str, str] = {}
        self.rw = _RWLock()
        self.stage_seconds: Counter[str] = Counter()

    def add_seconds(self, stage: str, seconds: float) -> None:
        with self._guard:
            self.stage_seconds[stage] += seconds

    @contextlib.contextmanager
    def work(self) -> Iterator[None]:
        """Held (shared) around sandbox work that is not a measurement, so that a wall-time measurement (the wall
        method, or an instruction measurement's fallback to it) can pause it. Never nested."""
        with self.rw.shared():
            yield

    @contextlib.contextmanager
    def measuring(self) -> Iterator[None]:
        """Held around a measurement with the run's method: exclusive for wall time, shared for cycles and
        instruction counts (``compare`` itself leases cores either way)."""
        if self.options.measure == "wall":
            with self.rw.exclusive():
                yield
        else:
            with self.rw.shared():
                yield

    @contextlib.contextmanager
    def measuring_wall(self) -> Iterator[None]:
        """Held around a wall-time measurement whatever the run's method (a meter fallback): exclusive."""
        with self.rw.exclusive():
            yield

    def hold(self, phase: str) -> contextlib.AbstractContextManager[None]:
        """The lock of a phase of :func:`arbiter.judge.speedup.gated_speedup`."""
        return {"measure": self.measuring, "measure_wall": self.measuring_wall}.get(phase, self.work)()

    def task_infos(self) -> dict[str, TaskInfo]:
        """The tasks whose suites were built so far."""
        with self._guard:
            return dict(self._tasks)

    def task_info(self, seed: SeedRow) -> TaskInfo:
        """The generated suite of ``seed``'s task (built once per run, cached on disk). Raises
        :class:`InfraError` for our failures; a task error is returned in ``generated_error``."""
        from arbiter.languages.cpp.toolchain import ToolchainUnavailable
        from arbiter.sandbox.sandbox import SandboxError

        with self._guard:
            lock = self._task_locks.setdefault(seed.task_id, threading.Lock())
        with lock:
            info = self._tasks.get(seed.task_id)
            if info is not None:
                return info
            info = TaskInfo()
            self._check_hidden(seed, info)
            gen = find_generator(self.generators, seed.task_id) if self.generators is not None else None
            if gen is not None and info.hidden_error is None:
                info.generator_path = str(gen)
                t0 = time.monotonic()
                try:
                    with self.work():
                        info.generated = build_generated_suite(
                            seed, gen, self.options.gen_plan, cache_dir=cache_subdir(self.options, CACHE_SUBDIR),
                            use_cache=self.options.use_cache, config=self.options.config)
                except GeneratedTestsError as exc:
                    info.generated_error = str(exc)
                except (SandboxError, ToolchainUnavailable, OSError) as exc:
                    raise InfraError(f"generated tests of {seed.task_id}: {type(exc).__name__}: {exc}") from exc
                finally:
                    self.add_seconds("generate", time.monotonic() - t0)
            self._tasks[seed.task_id] = info
            return info

    def _check_hidden(self, seed: SeedRow, info: TaskInfo) -> None:
        """Check the task's hidden cases against its source (:mod:`~arbiter.pipelines.oracle.hidden_tests`)."""
        from arbiter.languages.cpp.toolchain import ToolchainUnavailable
        from arbiter.sandbox.sandbox import SandboxError

        cases = self.hidden.for_task(seed.task_id) if self.hidden is not None else []
        if not cases:
            return
        t0 = time.monotonic()
        try:
            with self.work():
                info.hidden = check_hidden_tests(seed, cases, checker_of(seed),
                                                 cache_dir=cache_subdir(self.options, HIDDEN_CACHE_SUBDIR),
                                                 use_cache=self.options.use_cache, config=self.options.config)
        except HiddenCheckError as exc:
            info.hidden_error = str(exc)
        except (SandboxError, ToolchainUnavailable, OSError) as exc:
            raise InfraError(f"hidden tests of {seed.task_id}: {type(exc).__name__}: {exc}") from exc
        finally:
            self.add_seconds("hidden_check", time.monotonic() - t0)

    def hidden_summaries(self, all_tasks: bool = False) -> dict[str, Any]:
        """Per task with hidden cases: the source's check of them (:meth:`HiddenCheck.summary`, or its error).
        ``all_tasks``: also check the tasks no row of this run needed (cached on disk; for the report's
        coverage); our own failure there is reported as ``{"error": ...}``, never raised."""
        if all_tasks and self.hidden is not None:
            for tid in sorted(self.hidden.tests):
                if tid in self.seeds and self.hidden.tests[tid] and tid not in self._tasks:
                    try:
                        self._hidden_only(tid)
                    except InfraError as exc:
                        with self._guard:
                            self._hidden_failures[tid] = str(exc)
        with self._guard:
            items = list(self._tasks.items()) + [(t, i) for t, i in self._hidden_extra.items()
                                                 if t not in self._tasks]
            failures = dict(self._hidden_failures)
        out: dict[str, Any] = {}
        for tid, info in sorted(items):
            if info.hidden is not None:
                out[tid] = info.hidden.summary()
            elif info.hidden_error is not None:
                out[tid] = {"task_id": tid, "error": info.hidden_error}
        for tid, err in failures.items():
            out.setdefault(tid, {"task_id": tid, "error": err, "ours": True})
        return dict(sorted(out.items()))

    def _hidden_only(self, tid: str) -> None:
        with self._guard:
            if tid in self._hidden_extra:
                return
        info = TaskInfo()
        self._check_hidden(self.seeds[tid], info)
        with self._guard:
            self._hidden_extra[tid] = info

    def generated_summaries(self) -> dict[str, Any]:
        """Per task: the generated suite's summary (or its error)."""
        with self._guard:
            items = list(self._tasks.items())
        out = {}
        for tid, info in sorted(items):
            if info.generated is not None:
                out[tid] = info.generated.summary()
            elif info.generated_error is not None:
                out[tid] = {"task_id": tid, "error": info.generated_error}
        return out

    def startup_floor(self, seed: SeedRow, method: str = "instructions") -> int | None:
        """The cost of an empty ``<iostream>`` program compiled with the seed's command, in ``method``'s unit
        (instructions or cycles; the card's "startup floor" analogue), measured once per compile command and
        method; ``None`` when it cannot be measured."""
        from arbiter.judge.build import build_cpp
        from arbiter.timing.measure import startup_floor

        spec = seed_compile_spec(seed)
        key = (spec.command, method)
        with self._guard:
            if key in self._floors:
                return self._floors[key]
        try:
            floor = startup_floor(lambda src: build_cpp(src, spec), iostream=True,
                                  method=method)  # type: ignore[arg-type]
        except RuntimeError:
            floor = None
        with self._guard:
            if floor is not None:
                self._floors[key] = floor
        return floor
