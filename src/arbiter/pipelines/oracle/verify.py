"""Oracle SFT verification: seed rows + oracle return rows -> verified rows, rejected rows, SFT data.

Source of the rules: ``spec/oracle_seed_card.txt`` (the "Dummy PIE C++ Oracle Seed" card: "local verifier
checks format, compile, tests, and score -> only full-mark verified rows become SFT data"; "The verification
object in returned rows ... should be treated as a claim from the oracle writer") and issue 5, which this
module implements end to end (what ``make demo`` runs).

Verification of one return row (:func:`verify_row`). Every stage that can still run meaningfully runs, and
every reason that applies is collected (a row can be rejected for altered messages *and* for being slower):

1. **task** -- the row's ``task_id`` is a seed task (checked by the loader: ``UNKNOWN_TASK_ID``); the task is
   usable: its hidden tests loaded (``INVALID_TASK`` when its hidden entry was rejected), its compile command is
   accepted, its source compiles for generated tests. An unusable task stops the row after the text checks.
   **Hidden tests are checked against the seed's source first** (:mod:`arbiter.pipelines.oracle.hidden_tests`,
   once per task, cached by task + hidden cases): ``source_code`` is correct by contract, so a hidden case it
   fails (``WA``/``RE``/``OLE``) is bad data and is dropped, counted in the report's warnings and noted in the
   task's rows (``verification.hidden_tests_dropped``); no answer is blamed for it. A task all of whose hidden
   cases are bad has no hidden suite (``all_hidden_tests_pass: null``, with a warning). Cases the source cannot
   finish (``TLE``/``MLE`` with 5x the seed's CPU time) are kept as given and reported as unconfirmed.
2. **messages** and **format** -- ``messages`` equals the seed's ``messages`` exactly plus one final assistant
   message; the answer is exactly one ``<reasoning>`` block then one ```` ```cpp ```` fence
   (:mod:`arbiter.pipelines.oracle.format`, card "Required Oracle Return Format"). A messages failure does not
   stop the row (its code can still be judged); a format failure does (there is no program).
3. **compile** -- with the seed's ``compile.command`` and ``compile.timeout_sec``, as is (no ``-DONLINE_JUDGE``,
   see :func:`~arbiter.pipelines.oracle.generated_tests.seed_compile_spec`). ``CE`` stops the row.
4. **tests** -- visible tests (``visible_tests``), hidden tests (``--hidden``), generated tests
   (``--generators``, :mod:`arbiter.pipelines.oracle.generated_tests`), each judged by
   :func:`arbiter.judge.judge.judge` with the seed's ``run.timeout_sec`` (CPU seconds; wall ``2 t + 1``) and
   ``run.memory_mb``, compared with the seed's ``public_checker`` (``exact_stdout`` +
   ``strip_trailing_whitespace`` -> checker ``trailing_whitespace``; without stripping -> ``exact``). Visible and
   hidden suites run every case (each failing case is named); the generated suite stops at its first failure;
   after a time limit the later suites stop at their first failure too (bounded cost).
5. **measure** -- only for an answer that passed every test (the speed of a wrong program is not an
   optimization; PIE's reward is correctness-gated as well): the answer is measured against the seed's
   ``source_code`` (compiled with the same command, so the toolchain fingerprints match) by
   :func:`arbiter.pipelines.oracle.measure.measure_against_source` (the timing module: instruction counts under
   valgrind by default, each of the source's counts measured once per test and memoized since counts are
   deterministic; wall time with interleaved repeats via :func:`arbiter.timing.compare.compare` as an option) on
   the :attr:`VerifyOptions.measure_cases` largest tests by input size (ties: visible, hidden, generated order).
   Why not every test: under valgrind each run costs ~0.2 s of start-up, and small tests measure start-up only.
   Recorded: both programs' per-case figures and sums, ``speedup = sum(source) / sum(answer)`` (PIE card's rule),
   ``largest_speedup`` (the same ratio on the costliest :attr:`VerifyOptions.largest_fraction` of the measured
   cases by the source's cost), the toolchain fingerprint and the meter.
   **Meter fallback**: when valgrind cannot run a program that passed every test natively (valgrind 3.19 has no
   AVX-512 decoder: the run dies of SIGILL with "unhandled instruction bytes", ``unsupported_by_meter`` in
   :mod:`arbiter.timing.instructions`), that is the meter's limitation, never the answer's fault (no
   ``MEASURE_FAILED``): the pair is measured again with interleaved wall/CPU time (the wall method, all other
   work of the run paused) and ``verification.measurement`` says so: ``method: "wall"``, ``requested_method:
   "instructions"``, ``fallback_reason`` (e.g. "valgrind cannot decode the program's instructions (AVX-512)"),
   ``extra.meter_failures``; a note too. The gate below then uses the wall figures and the wall rule.
   **Programs that create processes or threads**: measured runs refuse them (``RLIMIT_NPROC = 1``, both methods;
   a child's or thread's work would escape the figure). An answer that passed every test but fails a measured run
   only because of that is rejected with ``measure:CREATES_PROCESSES`` ("the answer creates processes; its cost
   cannot be measured"), not ``MEASURE_FAILED`` with a wrong-answer status; a source that does is
   ``SOURCE_MEASURE_FAILED``.
   **Answers that make valgrind client requests** (``VALGRIND_NON_SIMD_CALL1`` and friends: valgrind would run the
   answer's code natively, uncounted; header, hand-written asm or code written at run time alike): the meter
   refuses the request and stops the run (``client_request`` in :mod:`arbiter.timing.instructions`); the row is
   rejected with ``measure:CLIENT_REQUEST`` ("program makes valgrind client requests; its cost cannot be
   measured"), never accepted, never in ``sft.jsonl``.
   **Units**: ``verification.measurement`` has ``method`` and ``unit`` (``instructions`` or ``seconds``); every
   row of ``report.json`` carries ``unit`` and ``measure_fallback``, ``counts.speedup_units`` counts rows per unit,
   and a warning names tasks whose best answer was picked among speedups in different units.
6. **speed** and **score** -- score 1.0 only when every stage passed and ``largest_speedup >= min_speedup``
   (default 1.0: "not slower than the source on the largest tests"); anything less is rejected with every
   reason. When the largest tests are too small to show speed (the source's cost on them is below
   :data:`MEASURABLE_FACTOR` times the start-up floor of an empty ``<iostream>`` program under the same
   toolchain, or below :data:`WALL_MEASURABLE_SECONDS` per case for wall time), "not slower" cannot be told from
   start-up noise: with ``min_speedup <= 1`` the gate is not applied and the row says so
   (``speed_gate: "not_applied"``); with ``min_speedup > 1`` the gate still applies (the speedup asked for must
   be shown, and cannot be on such tests). This only happens without generated tests.

Our ``verification`` (card fields first): ``compile_ok``; ``all_visible_tests_pass``; ``all_hidden_tests_pass`` and
``all_generated_tests_pass`` (``None`` when the task has no such tests, ``False`` when they exist but failed or
were not reached); ``score`` (1.0 or 0.0); ``runtime_ms`` (the answer's native CPU time summed over every test it
ran, milliseconds; a wall-clock-like figure, not deterministic); ``speedup`` and ``largest_speedup`` (source /
answer); ``instructions`` (``{"source", "answer", "largest_cases", "source_largest", "answer_largest"}``, instruction
method only); ``toolchain`` (:meth:`~arbiter.languages.toolchain.Toolchain.to_dict`, with its fingerprint);
``notes``; ``claim_disagreements``; ``tests`` (per suite: total, passed, outcome, failed cases, dropped generated
inputs); ``measurement`` (the comparison: per-case figures, meter, startup floor); ``speed_gate`` (``passed``,
``failed``, ``not_applied`` or ``None`` when not measured).

The writer's ``verification`` object is kept as ``claimed_verification``; the fields it gets wrong
(``compile_ok``, ``all_visible_tests_pass``, ``all_hidden_tests_pass``, ``score``) are listed in
``verification.claim_disagreements`` and in ``notes``.

Outputs (:func:`verify_returns`), written incrementally with :class:`~arbiter.datasets.jsonl_sink.JsonlSink`
keyed by the row key (:attr:`~arbiter.datasets.oracle_rows.ReturnRow.key`; load rejections:
:attr:`~arbiter.datasets.oracle_rows.Rejection.key`), so a rerun skips finished rows and never duplicates:

- ``sft.jsonl``: ``{"task_id", "messages"}`` for accepted rows (written before ``verified.jsonl``, and repaired
  from it on a rerun, so a kill between the two loses nothing).
- ``verified.jsonl``: accepted rows: the row's own fields, our ``verification``, the writer's
  ``claimed_verification``, ``key``, ``line``; wall-clock figures under ``timing``.
- ``rejected.jsonl``: ``key``, ``kind`` (``return``/``seed``/``hidden``), ``line``, ``task_id``, ``stage`` (the
  first failing stage), ``stages``, ``reasons`` (every reason: ``stage``, ``code``, ``message``, ``path`` or
  ``suite``/``cases``), our partial ``verification``, the claim, and the ``row`` (``null`` when it did not parse).
- ``errors.jsonl``: rows we could not verify because of *our* failure (sandbox, missing valgrind or compiler):
  never written as rejected, so a rerun retries them (DESIGN.md: ``SANDBOX_ERROR`` is retried and reported,
  never turned into a silent 0).
- ``best.jsonl``: one ``{"task_id", "messages"}`` per task: the accepted answer with the highest
  ``largest_speedup`` (ties: ``speedup``, then key); rewritten at the end of every run.
- ``report.json``: counts by outcome, stage and reason, per task, per row, generated suites, timings. Rebuilt from
  the output files, so a resumed run reports every row. It also says how far the accepted rows can be trusted
  (:func:`build_report`): rows accepted on visible tests only, rows accepted without the speed gate, hidden cases
  dropped as bad data, seed tasks without hidden / generated tests, seed and hidden-test rejections, meter
  fallbacks, each summed up in a ``warnings`` line that ``arbiter oracle verify`` prints.
- ``config.json``: what the verdicts depend on (sha256 of the seeds, hidden tests and generators; the
  verdict-changing options). A rerun into a folder made with anything else is refused (:class:`ConfigMismatch`)
  instead of mixing verdicts. The returns file is not part of it: rows are keyed by their content, so rows
  appended to it (``arbiter oracle generate`` resuming) are verified on the next run; the outputs accumulate
  every row verified into the folder.
- Parquet copies of ``sft``/``verified``/``rejected``/``best`` with ``parquet=True`` (nested values whose shape
  varies are stored as JSON text).

Parallelism: rows are verified by ``workers`` threads (default: one per core); every measurement holds one core
exclusively (:func:`arbiter.timing.wallclock.core_lease`); with ``measure="wall"`` a measurement also waits for
all other sandbox work of this run to pause (wall time is sensitive to a busy machine).
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import json
import math
import os
import tempfile
import threading
import time
import uuid
from collections import Counter
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Literal, Mapping, Sequence

from arbiter.datasets.jsonl_sink import JsonlSink, read_jsonl
from arbiter.datasets.oracle_rows import (
    HiddenTests,
    Rejection,
    ReturnRow,
    SeedRow,
    iter_returns,
    load_hidden_tests,
    load_seeds,
    return_row_key,
)
from arbiter.pipelines.oracle.format import check_answer
from arbiter.pipelines.oracle.measure import COUNT_CACHE_SUBDIR
from arbiter.pipelines.oracle.hidden_tests import CACHE_SUBDIR as HIDDEN_CACHE_SUBDIR
from arbiter.pipelines.oracle.hidden_tests import HiddenCheck, HiddenCheckError, check_hidden_tests
from arbiter.pipelines.oracle.generated_tests import (
    CACHE_SUBDIR,
    DEFAULT_PLAN,
    GeneratedSuite,
    GeneratedTestsError,
    GenPlan,
    build_generated_suite,
    find_generator,
    seed_compile_spec,
    seed_run_limits,
)
from arbiter.pipelines.outputs import ensure_out_dir, holds_out_dirs, write_json_atomic

Method = Literal["instructions", "wall"]

#: Default number of tests measured per row (the largest by input size).
DEFAULT_MEASURE_CASES = 3
#: Default share of the measured tests (costliest for the source first) that make up "the largest tests".
DEFAULT_LARGEST_FRACTION = 0.5
#: The speed gate applies only when the source's instructions on the largest tests are at least this many
#: times the start-up floor (per case): below it, the figures measure start-up, not the algorithm.
MEASURABLE_FACTOR = 2.0
#: Wall-time analogue of :data:`MEASURABLE_FACTOR`: seconds per case the source must take.
WALL_MEASURABLE_SECONDS = 0.01
#: Compiler output quoted in a CE reason, characters.
COMPILE_MESSAGE_CHARS = 2000
#: Failing case names listed per suite in a reason.
MAX_CASES_LISTED = 20

OUTPUT_FILES = ("sft.jsonl", "verified.jsonl", "rejected.jsonl", "best.jsonl", "report.json", "errors.jsonl",
                "config.json")
STAGES = ("load", "task", "messages", "format", "compile", "tests", "measure", "speed")


class InfraError(RuntimeError):
    """Verification could not finish because of our failure (sandbox, valgrind, compiler missing): the row goes
    to ``errors.jsonl`` and is retried by the next run, never rejected."""


@dataclass
class VerifyOptions:
    """Options of a verification run.

    - ``measure``: ``"instructions"`` (valgrind counts, deterministic; default) or ``"wall"`` (interleaved
      repeats, ``wall_repeats`` rounds after one warm-up; seconds).
    - ``min_speedup``: the answer passes the speed gate when ``largest_speedup >= min_speedup`` (1.0: not
      slower than the source).
    - ``measure_cases``: how many tests (the largest by input bytes) are measured, >= 1.
    - ``largest_fraction``: which share of the measured tests, costliest for the source first, is "the largest
      tests" of the gate (``compare``'s ``largest_fraction``), in (0, 1].
    - ``gen_plan``: generator plan (:class:`~arbiter.pipelines.oracle.generated_tests.GenPlan` or text).
    - ``cache_dir``: root of this pipeline's caches: generated suites in ``<cache_dir>/oracle_generated``, the
      source's instruction counts in ``<cache_dir>/oracle_source_counts`` (default ``$ARBITER_CACHE_DIR``, else
      ``~/.cache/arbiter``); ``use_cache=False`` neither reads nor writes them.
    - ``workers``: rows verified at once (default: one per core).
    - ``parquet``: also write Parquet copies of the outputs.
    - ``config``: sandbox configuration (default :class:`~arbiter.sandbox.config.SandboxConfig`).
    """

    measure: Method = "instructions"
    min_speedup: float = 1.0
    measure_cases: int = DEFAULT_MEASURE_CASES
    largest_fraction: float = DEFAULT_LARGEST_FRACTION
    gen_plan: GenPlan | str = DEFAULT_PLAN
    cache_dir: str | os.PathLike | None = None
    use_cache: bool = True
    workers: int | None = None
    parquet: bool = False
    wall_repeats: int = 5
    config: Any = None

    def check(self) -> None:
        """Raise ``ValueError`` naming the first bad option."""
        if self.measure not in ("instructions", "wall"):
            raise ValueError(f"measure must be 'instructions' or 'wall', got {self.measure!r}")
        if not (isinstance(self.min_speedup, (int, float)) and math.isfinite(self.min_speedup)
                and self.min_speedup > 0):
            raise ValueError(f"min_speedup must be a positive number, got {self.min_speedup!r}")
        if int(self.measure_cases) < 1:
            raise ValueError(f"measure_cases must be >= 1, got {self.measure_cases!r}")
        if not 0 < self.largest_fraction <= 1:
            raise ValueError(f"largest_fraction must be in (0, 1], got {self.largest_fraction!r}")
        if self.workers is not None and int(self.workers) < 1:
            raise ValueError(f"workers must be >= 1, got {self.workers!r}")
        if int(self.wall_repeats) < 1:
            raise ValueError(f"wall_repeats must be >= 1, got {self.wall_repeats!r}")
        if isinstance(self.gen_plan, str):
            self.gen_plan = GenPlan.parse(self.gen_plan)

    def to_dict(self) -> dict[str, Any]:
        """The options as JSON (``gen_plan`` in its text form; ``config`` and the cache folder left out)."""
        return {"measure": self.measure, "min_speedup": self.min_speedup, "measure_cases": int(self.measure_cases),
                "largest_fraction": self.largest_fraction, "gen_plan": str(self.gen_plan),
                "workers": self.workers, "wall_repeats": self.wall_repeats}


def _sub(opts: VerifyOptions, name: str) -> Path | None:
    """``<opts.cache_dir>/<name>``, or ``None`` (the module's default under ``$ARBITER_CACHE_DIR``)."""
    return None if opts.cache_dir is None else Path(opts.cache_dir) / name


# --------------------------------------------------------------------------------------------------
# Locks


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
class _TaskInfo:
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
        self._tasks: dict[str, _TaskInfo] = {}
        self._task_locks: dict[str, threading.Lock] = {}
        self._guard = threading.Lock()
        self._floors: dict[str, int] = {}
        self._hidden_extra: dict[str, _TaskInfo] = {}  # hidden checks of tasks no row needed (report coverage)
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
        """Held around a measurement with the run's method: exclusive for wall time, shared for instruction
        counts (``compare`` itself leases a core either way)."""
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

    def task_info(self, seed: SeedRow) -> _TaskInfo:
        """The generated suite of ``seed``'s task (built once per run, cached on disk). Raises
        :class:`InfraError` for our failures; a task error is returned in ``generated_error``."""
        from arbiter.languages.toolchain import ToolchainUnavailable
        from arbiter.sandbox.sandbox import SandboxError

        with self._guard:
            lock = self._task_locks.setdefault(seed.task_id, threading.Lock())
        with lock:
            info = self._tasks.get(seed.task_id)
            if info is not None:
                return info
            info = _TaskInfo()
            self._check_hidden(seed, info)
            gen = find_generator(self.generators, seed.task_id) if self.generators is not None else None
            if gen is not None and info.hidden_error is None:
                info.generator_path = str(gen)
                t0 = time.monotonic()
                try:
                    with self.work():
                        info.generated = build_generated_suite(
                            seed, gen, self.options.gen_plan, cache_dir=_sub(self.options, CACHE_SUBDIR),
                            use_cache=self.options.use_cache, config=self.options.config)
                except GeneratedTestsError as exc:
                    info.generated_error = str(exc)
                except (SandboxError, ToolchainUnavailable, OSError) as exc:
                    raise InfraError(f"generated tests of {seed.task_id}: {type(exc).__name__}: {exc}") from exc
                finally:
                    self.add_seconds("generate", time.monotonic() - t0)
            self._tasks[seed.task_id] = info
            return info

    def _check_hidden(self, seed: SeedRow, info: _TaskInfo) -> None:
        """Check the task's hidden cases against its source (:mod:`~arbiter.pipelines.oracle.hidden_tests`)."""
        from arbiter.languages.toolchain import ToolchainUnavailable
        from arbiter.sandbox.sandbox import SandboxError

        cases = self.hidden.for_task(seed.task_id) if self.hidden is not None else []
        if not cases:
            return
        t0 = time.monotonic()
        try:
            with self.work():
                info.hidden = check_hidden_tests(seed, cases, _checker(seed),
                                                 cache_dir=_sub(self.options, HIDDEN_CACHE_SUBDIR),
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
        info = _TaskInfo()
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

    def startup_floor(self, seed: SeedRow) -> int | None:
        """Instructions of an empty ``<iostream>`` program compiled with the seed's command (the card's
        "startup floor" analogue), measured once per compile command; ``None`` when it cannot be measured."""
        from arbiter.languages.cpp import compile_cpp
        from arbiter.timing.compare import startup_floor

        spec = seed_compile_spec(seed)
        with self._guard:
            if spec.command in self._floors:
                return self._floors[spec.command]
        try:
            floor = startup_floor(lambda src: compile_cpp(src, spec), iostream=True)
        except RuntimeError:
            floor = None
        with self._guard:
            if floor is not None:
                self._floors[spec.command] = floor
        return floor


# --------------------------------------------------------------------------------------------------
# One row


@dataclass
class RowResult:
    """The outcome of one return row.

    - ``key``, ``task_id``, ``line`` (1-based line or Parquet row of the returns file).
    - ``accepted``: score 1.0. ``stage``: the first failing stage (``None`` when accepted); ``reasons``: every
      reason (dicts with ``stage``, ``code``, ``message`` and ``path`` or ``suite``/``cases``).
    - ``verification``: our findings (card fields plus ``speedup``, ``largest_speedup``, ``instructions``,
      ``toolchain``, ``tests``, ``measurement``...). ``timing``: wall-clock seconds per stage (not
      deterministic). ``error``: set when our own failure stopped the row (then it is neither accepted nor
      rejected).
    """

    key: str
    task_id: str
    line: int | None
    accepted: bool = False
    stage: str | None = None
    reasons: list[dict[str, Any]] = field(default_factory=list)
    verification: dict[str, Any] = field(default_factory=dict)
    timing: dict[str, Any] = field(default_factory=dict)
    error: str | None = None

    @property
    def codes(self) -> list[str]:
        """``stage:code`` of every reason, in order."""
        return [f"{r['stage']}:{r['code']}" for r in self.reasons]


def _reason(stage: str, code: str, message: str, **extra: Any) -> dict[str, Any]:
    r = {"stage": stage, "code": code, "message": message}
    r.update({k: v for k, v in extra.items() if v is not None})
    return r


def _checker(seed: SeedRow):
    from arbiter.checkers.spec import CheckerSpec

    # card: public_checker {"type": "exact_stdout", "strip_trailing_whitespace": true}
    return CheckerSpec("trailing_whitespace" if seed.public_checker.strip_trailing_whitespace else "exact")


@dataclass
class _Case:
    name: str
    stdin: bytes
    stdout: bytes
    suite: str


def _suites(seed: SeedRow, ctx: VerifyContext, info: _TaskInfo) -> list[tuple[str, list[_Case] | None]]:
    """``[(suite name, cases or None when the suite does not exist)]`` in judging order."""
    from arbiter.judge.encodings._common import str_to_bytes

    visible = [_Case(t.name, str_to_bytes(t.stdin), str_to_bytes(t.stdout), "visible") for t in seed.visible_tests]
    hidden = None
    if ctx.hidden is not None and seed.task_id in ctx.hidden.tests:
        # only the cases the seed's source passes (or could not finish): the others are bad data, dropped
        keep = set(info.hidden.kept) if info.hidden is not None else None
        hidden = [_Case(t.name, str_to_bytes(t.stdin), str_to_bytes(t.stdout), "hidden")
                  for t in ctx.hidden.for_task(seed.task_id) if keep is None or t.name in keep]
        hidden = hidden or None
    generated = None
    if info.generated is not None and info.generated.cases:
        generated = [_Case(c.name, c.stdin, c.stdout, "generated") for c in info.generated.cases]
    return [("visible", visible), ("hidden", hidden), ("generated", generated)]


def _judge_suite(name: str, cases: list[_Case], code: str, seed: SeedRow, ctx: VerifyContext, key: str,
                 run_all: bool):
    from arbiter.judge.judge import judge
    from arbiter.judge.task import Task
    from arbiter.judge.testsuite import StdioCase, TestSuite
    from arbiter.judge.verdict import Outcome

    suite = TestSuite(tuple(StdioCase(c.name, c.stdin, (c.stdout,)) for c in cases), origin=f"oracle:{name}")
    task = Task(language="cpp", source=code, suite=suite, limits=seed_run_limits(seed), checker=_checker(seed),
                scoring="all_or_nothing", run_all=run_all, compile=seed_compile_spec(seed), task_id=key)
    with ctx.work():
        v = judge(task, config=ctx.options.config)
    if v.outcome is Outcome.SANDBOX_ERROR:
        raise InfraError(f"{name} tests: sandbox error: {v.reason}")
    return v


def _claim_check(claim: Mapping[str, Any] | None, ver: Mapping[str, Any], row: ReturnRow,
                 notes: list[str]) -> list[dict[str, Any]]:
    """Fields of the writer's claim that disagree with our findings (card: the claim is "not enough by
    itself")."""
    if not isinstance(claim, Mapping):
        return []
    from arbiter.pipelines.oracle.writer import placeholder_verification

    if row.model and dict(claim) == placeholder_verification(row.model):
        notes.append("the claim is the arbiter writer's placeholder (nothing claimed)")
        return []
    out = []
    for f in ("compile_ok", "all_visible_tests_pass", "all_hidden_tests_pass", "score"):
        claimed, found = claim.get(f), ver.get(f)
        if f == "all_hidden_tests_pass":
            if claimed is None:
                continue
            if found is None:
                notes.append(f"claim all_hidden_tests_pass={json.dumps(claimed)} not checked: no hidden tests here")
                continue
        if f == "score":
            same = claimed is not None and found is not None and float(claimed) == float(found)
        else:
            same = claimed == found
        if not same:
            out.append({"field": f, "claimed": claimed, "found": found})
    if out:
        notes.append("claim disagrees with our findings: " + ", ".join(
            f"{d['field']} claimed {json.dumps(d['claimed'])}, found {json.dumps(d['found'])}" for d in out))
    return out


def _largest_by_input(cases: list[_Case], k: int) -> list[_Case]:
    order = {"visible": 0, "hidden": 1, "generated": 2}
    ranked = sorted(range(len(cases)), key=lambda i: (-len(cases[i].stdin), order[cases[i].suite], i))
    return [cases[i] for i in ranked[:k]]


def _same_output(seed: SeedRow) -> Callable[[bytes, bytes], bool]:
    from arbiter.checkers.compare import check_output

    spec = _checker(seed)
    return lambda actual, expected: check_output(spec, actual, (expected,)).ok


def _trim_measurement(d: dict[str, Any], timing: dict[str, Any]) -> dict[str, Any]:
    """The comparison record kept in ``verification.measurement``: run order dropped; the leased core (not
    deterministic) moved to ``timing``."""
    d = dict(d)
    d.pop("order", None)
    meter = dict(d.get("meter") or {})
    if "core" in meter:
        timing["measure_core"] = meter.pop("core")
    if "source_memo_hits" in meter:
        timing["source_memo_hits"] = meter.pop("source_memo_hits")
    d["meter"] = meter
    d.pop("toolchain", None)  # recorded once, in verification.toolchain
    return d


def verify_row(row: ReturnRow, seed: SeedRow, ctx: VerifyContext) -> RowResult:
    """Verify one return row against its seed; see the module docstring for the stages and rules.

    Returns a :class:`RowResult`. Never raises for anything in the row or the answer; our own failures
    (sandbox, valgrind, compiler missing) come back as ``RowResult.error`` (the row is then neither accepted nor
    rejected and a rerun retries it).
    """
    res = RowResult(key=row.key, task_id=row.task_id, line=row.origin.line if row.origin else None)
    try:
        _verify(row, seed, ctx, res)
    except InfraError as exc:
        res.error = str(exc)
    except Exception as exc:  # noqa: BLE001 - one row never stops the batch
        from arbiter.languages.toolchain import ToolchainUnavailable
        from arbiter.sandbox.sandbox import SandboxError

        if isinstance(exc, (SandboxError, ToolchainUnavailable, OSError)):
            res.error = f"{type(exc).__name__}: {exc}"
        else:
            try:
                from arbiter.timing.instructions import ValgrindUnavailable
            except ImportError:  # pragma: no cover
                ValgrindUnavailable = ()  # type: ignore[assignment]
            if ValgrindUnavailable and isinstance(exc, ValgrindUnavailable):
                res.error = f"ValgrindUnavailable: {exc}"
            else:
                res.error = f"internal error: {type(exc).__name__}: {exc}"
    return res


def _verify(row: ReturnRow, seed: SeedRow, ctx: VerifyContext, res: RowResult) -> None:
    from arbiter.judge.verdict import Outcome
    from arbiter.languages.cpp import CompileCommandError, compile_cpp

    reasons = res.reasons
    notes: list[str] = []
    timing = res.timing
    ver: dict[str, Any] = {
        "compile_ok": False, "all_visible_tests_pass": False, "all_hidden_tests_pass": None,
        "all_generated_tests_pass": None, "score": 0.0, "runtime_ms": None, "speedup": None,
        "largest_speedup": None, "instructions": None, "toolchain": None, "notes": "",
        "claim_disagreements": [], "tests": {}, "measurement": None, "speed_gate": None,
    }
    res.verification = ver
    t_row = time.monotonic()

    # 1. task
    task_ok = True
    if ctx.hidden is not None and seed.task_id in ctx.hidden.invalid_tasks:
        reasons.append(_reason("task", "INVALID_TASK", f"the hidden tests of {seed.task_id} were rejected "
                               "(see rejected.jsonl, kind 'hidden'); the task cannot be verified"))
        task_ok = False
    info = _TaskInfo()
    if task_ok:
        info = ctx.task_info(seed)
        for err in (info.hidden_error, info.generated_error):
            if err is not None:
                reasons.append(_reason("task", "INVALID_TASK", err))
                task_ok = False
        hc = info.hidden
        if hc is not None and hc.dropped:
            names = [d["name"] for d in hc.dropped]
            listed = ", ".join(f"{d['name']} {d['outcome']}" for d in hc.dropped[:MAX_CASES_LISTED])
            notes.append(f"{len(names)} of {hc.total} hidden test(s) dropped as bad data: the seed's source_code "
                         f"(correct by contract) fails them ({listed})"
                         + ("; the task's hidden suite is treated as absent" if hc.all_bad else ""))
            ver["hidden_tests_dropped"] = names
        if hc is not None and hc.unconfirmed:
            notes.append(f"{len(hc.unconfirmed)} hidden test(s) kept unconfirmed: the seed's source_code did not "
                         f"finish them ({', '.join(d['name'] for d in hc.unconfirmed[:MAX_CASES_LISTED])})")

    # a suite that exists but is not run (or fails) is "not all passed": False; a suite that does not exist: None
    suites = _suites(seed, ctx, info)
    for name, cases in suites:
        ver[f"all_{name}_tests_pass"] = False if cases is not None else None

    # 2. messages and format
    check = check_answer(row.messages, seed.messages)
    for f in check.failures:
        reasons.append(_reason(f.stage, f.code.value, f.message, path=f.path))
    code = check.code
    if not task_ok or code is None:
        if code is None and task_ok:
            notes.append("not compiled: the answer holds no program in the required format")
        return _finish(row, res, ver, notes, t_row)

    # 3. compile
    spec = seed_compile_spec(seed)
    t0 = time.monotonic()
    try:
        with ctx.work():
            comp = compile_cpp(code, spec)
    except CompileCommandError as exc:
        reasons.append(_reason("task", "INVALID_TASK", f"the seed's compile command is refused: {exc}"))
        return _finish(row, res, ver, notes, t_row)
    finally:
        timing["compile_seconds"] = round(time.monotonic() - t0, 4)
        ctx.add_seconds("compile", time.monotonic() - t0)
    ver["toolchain"] = comp.toolchain.to_dict()
    timing["compile_cached"] = comp.cached
    if not comp.ok:
        why = "compile time limit exceeded" if comp.timed_out else "compile error"
        msg = comp.message
        if len(msg) > COMPILE_MESSAGE_CHARS:
            msg = msg[:COMPILE_MESSAGE_CHARS] + f"\n[... {len(comp.message) - COMPILE_MESSAGE_CHARS} more characters]"
        reasons.append(_reason("compile", "CE", f"{why} with `{comp.command or spec.command}`:\n{msg}"))
        notes.append("not run: the answer does not compile")
        return _finish(row, res, ver, notes, t_row)
    ver["compile_ok"] = True

    # 4. tests
    t0 = time.monotonic()
    all_cases: list[_Case] = []
    cpu_total = 0.0
    all_passed = True
    hit_time_limit = False
    for name, cases in suites:
        flag = f"all_{name}_tests_pass"
        if cases is None:
            ver["tests"][name] = None
            if name == "generated":
                if info.generator_path is None and ctx.generators is not None:
                    notes.append(f"no generator for {seed.task_id} in {ctx.generators}")
                elif info.generated is not None:
                    notes.append("the generator produced no usable input")
            continue
        run_all = name != "generated" and not hit_time_limit
        v = _judge_suite(name, cases, code, seed, ctx, res.key, run_all)
        failed = [c for c in v.cases if c.outcome not in (Outcome.AC, Outcome.SKIPPED)]
        cpu_total += sum(c.cpu_seconds for c in v.cases)
        entry: dict[str, Any] = {"total": v.total, "passed": v.passed, "outcome": v.outcome.value,
                                 "run_all": run_all}
        if name == "generated" and info.generated is not None:
            entry["dropped"] = {k: n for k, n in info.generated.counts().items() if k != "kept"}
        if v.outcome is Outcome.AC:
            ver[flag] = True
            all_cases.extend(cases)
        else:
            ver[flag] = False
            all_passed = False
            if v.outcome in (Outcome.CE, Outcome.INVALID_TASK):  # cannot happen after a good compile
                reasons.append(_reason("tests", v.outcome.value, f"{name} tests: {v.reason}", suite=name))
            by_outcome: dict[str, list] = {}
            for c in failed:
                by_outcome.setdefault(c.outcome.value, []).append(c)
            for oc, cs in by_outcome.items():
                first = cs[0]
                what = (first.diff or first.detail or "").strip().replace("\n", " ")
                listed = [c.name for c in cs[:MAX_CASES_LISTED]]
                more = f" (+{len(cs) - len(listed)} more)" if len(cs) > len(listed) else ""
                scope = "" if run_all else " (stopped at the first failure)"
                reasons.append(_reason("tests", oc, f"{oc} on {len(cs)} {name} test(s){scope}: "
                                       f"{', '.join(listed)}{more}; first: {first.name}: {what[:300]}",
                                       suite=name, cases=listed))
                if oc == "TLE":
                    hit_time_limit = True
            entry["failed"] = [c.name for c in failed][:MAX_CASES_LISTED]
        ver["tests"][name] = entry
    ver["runtime_ms"] = round(cpu_total * 1000, 3)
    timing["tests_seconds"] = round(time.monotonic() - t0, 4)
    ctx.add_seconds("tests", time.monotonic() - t0)

    # 5. measure (only a correct answer: the speed of a wrong program is not an optimization)
    if not all_passed:
        notes.append("not measured: the answer failed tests")
        return _finish(row, res, ver, notes, t_row)
    t0 = time.monotonic()
    try:
        _measure(seed, comp, spec, all_cases, ctx, res, ver, notes)
    finally:
        timing["measure_seconds"] = round(time.monotonic() - t0, 4)
        ctx.add_seconds("measure", time.monotonic() - t0)
    return _finish(row, res, ver, notes, t_row)


#: Measurement statuses of an answer that passed every test but cannot be measured, and their reason codes.
_UNMEASURABLE_CODES = {"creates_processes": "CREATES_PROCESSES", "client_request": "CLIENT_REQUEST"}


def _measure(seed: SeedRow, comp: Any, spec: Any, all_cases: list[_Case], ctx: VerifyContext, res: RowResult,
             ver: dict[str, Any], notes: list[str]) -> None:
    from arbiter.languages.cpp import compile_cpp
    from arbiter.pipelines.oracle.measure import measure_against_source
    from arbiter.timing.compare import Program, mark_fallback, meter_fallback_reason

    opts = ctx.options
    with ctx.work():
        src = compile_cpp(seed.source_code, spec)
    if not src.ok:
        res.reasons.append(_reason("task", "INVALID_TASK", "the seed's source_code does not compile with its own "
                                   f"command: {src.message[:500]}"))
        return
    chosen = _largest_by_input(all_cases, int(opts.measure_cases))
    cases = [(c.name, c.stdin, c.stdout) for c in chosen]
    a, b = Program(src.binary, src.toolchain, "source"), Program(comp.binary, comp.toolchain, "answer")
    kw = dict(limits=seed_run_limits(seed), same_output=_same_output(seed), largest_fraction=opts.largest_fraction,
              repeats=int(opts.wall_repeats), cache_dir=_sub(opts, COUNT_CACHE_SUBDIR), use_cache=opts.use_cache)
    with ctx.measuring():
        cmp = measure_against_source(a, b, cases, method=opts.measure, **kw)
    reason = meter_fallback_reason(cmp) if cmp.method == "instructions" else None
    if reason is not None:
        # valgrind cannot run a program that passed every test natively (e.g. AVX-512): the meter's limitation,
        # never the program's fault. Measure the pair with interleaved wall/CPU time instead, and say so.
        attempt = cmp
        with ctx.measuring_wall():
            cmp = mark_fallback(measure_against_source(a, b, cases, method="wall", **kw), attempt, reason)
        notes.append(f"measured with wall/CPU time instead of instructions: {reason}")
    if cmp.sandbox_error:
        raise InfraError("measurement: sandbox error: " + "; ".join(
            f"{f['program']}/{f['case']}: {f.get('detail', '')}" for f in cmp.failures))
    d = _trim_measurement(cmp.to_dict(), res.timing)
    d["measured_cases"] = [c.name for c in chosen]
    ver["measurement"] = d
    if cmp.method == "wall":
        res.timing["wall"] = {"source_total": cmp.a_total, "answer_total": cmp.b_total}
    for f in cmp.failures:
        who = "source" if f["program"] == "a" else "answer"
        if who == "answer" and f["status"] in _UNMEASURABLE_CODES:
            res.reasons.append(_reason("measure", _UNMEASURABLE_CODES[f["status"]], f"the answer passed the tests, "
                                       f"but on {f['case']}: {f.get('detail', '')}".strip(), cases=[f["case"]]))
            continue
        code = "SOURCE_MEASURE_FAILED" if who == "source" else "MEASURE_FAILED"
        res.reasons.append(_reason("measure", code, f"the {who} failed a measured run on {f['case']}: "
                                   f"{f['status']} {f.get('detail', '')}".strip(), cases=[f["case"]]))
    if not cmp.ok:
        return
    ver["speedup"] = _round(cmp.speedup)
    ver["largest_speedup"] = _round(cmp.largest_speedup)
    if cmp.method == "instructions":
        ver["instructions"] = {"source": cmp.a_total, "answer": cmp.b_total,
                               "largest_cases": cmp.largest_cases,
                               "source_largest": sum(c.a for c in cmp.cases if c.case in cmp.largest_cases),
                               "answer_largest": sum(c.b for c in cmp.cases if c.case in cmp.largest_cases)}
    # is the gate meaningful on these tests?
    big = [c for c in cmp.cases if c.case in cmp.largest_cases]
    src_cost = sum(c.a for c in big)
    measurable = True
    if cmp.method == "instructions":
        floor = ctx.startup_floor(seed)
        if floor is not None:
            d["startup_floor"] = floor
            measurable = src_cost >= MEASURABLE_FACTOR * floor * len(big)
    else:
        measurable = src_cost >= WALL_MEASURABLE_SECONDS * len(big)
    if not measurable and opts.min_speedup <= 1.0:
        ver["speed_gate"] = "not_applied"
        notes.append("speed gate not applied: the largest tests are too small to show speed "
                     f"(source cost {src_cost} {cmp.unit} on {len(big)} case(s) is within start-up cost); "
                     "give generated tests (--generators) to measure speed")
        return
    ls = cmp.largest_speedup
    if ls is not None and ls >= opts.min_speedup:
        ver["speed_gate"] = "passed"
    else:
        ver["speed_gate"] = "failed"
        if not measurable:
            notes.append("the largest tests are too small to show speed (within start-up cost); a speedup above "
                         f"{opts.min_speedup:g} cannot be demonstrated on them: give generated tests (--generators)")
        res.reasons.append(_reason(
            "speed", "SLOWER_THAN_SOURCE",
            f"largest-tests speedup {ls:.4f} < {opts.min_speedup:g} ({cmp.unit}: source "
            f"{sum(c.a for c in big)} vs answer {sum(c.b for c in big)} on {', '.join(cmp.largest_cases)})",
            cases=list(cmp.largest_cases)))


def _round(x: float | None) -> float | None:
    return None if x is None else round(float(x), 6)


def _finish(row: ReturnRow, res: RowResult, ver: dict[str, Any], notes: list[str], t_row: float) -> None:
    res.accepted = not res.reasons and ver.get("compile_ok") and ver.get("speed_gate") in ("passed", "not_applied")
    res.accepted = bool(res.accepted)
    ver["score"] = 1.0 if res.accepted else 0.0
    if not res.accepted and not res.reasons:  # defensive: never reject without a reason
        res.reasons.append(_reason("measure", "NOT_MEASURED", "the answer could not be measured"))
    res.stage = None if res.accepted else res.reasons[0]["stage"]
    claim = row.raw.get("verification") if isinstance(row.raw, Mapping) else None
    ver["claim_disagreements"] = _claim_check(claim, ver, row, notes)
    ver["notes"] = "; ".join(notes) if notes else ("verified by arbiter" if res.accepted else "")
    res.timing["row_seconds"] = round(time.monotonic() - t_row, 4)


# --------------------------------------------------------------------------------------------------
# Records


def _row_fields(row: ReturnRow) -> dict[str, Any]:
    raw = dict(row.raw)
    raw.pop("verification", None)
    return raw


def sft_record(row: ReturnRow) -> dict[str, Any]:
    """The SFT row: ``{"task_id", "messages"}``, messages reduced to ``role`` and ``content`` (card: "the
    messages array is already in SFT-ready chat form")."""
    return {"task_id": row.task_id, "messages": [{"role": m.role, "content": m.content} for m in row.messages]}


def _sft_key(rec: Mapping[str, Any]) -> str:
    return return_row_key(str(rec.get("task_id")), list(rec.get("messages") or []))


def verified_record(row: ReturnRow, res: RowResult) -> dict[str, Any]:
    """The ``verified.jsonl`` record of an accepted row."""
    rec = {**_row_fields(row), "key": res.key, "line": res.line, "verification": res.verification,
           "claimed_verification": row.raw.get("verification"), "timing": res.timing}
    return rec


def rejected_record(row: ReturnRow, res: RowResult) -> dict[str, Any]:
    """The ``rejected.jsonl`` record of a verified-but-rejected return row."""
    return {"key": res.key, "kind": "return", "source": row.origin.source if row.origin else None,
            "line": res.line, "task_id": row.task_id, "demo_id": row.raw.get("demo_id"), "stage": res.stage,
            "stages": sorted({r["stage"] for r in res.reasons}, key=STAGES.index),
            "reasons": res.reasons, "verification": res.verification,
            "claimed_verification": row.raw.get("verification"), "row": row.raw, "timing": res.timing}


def load_rejection_record(rej: Rejection) -> dict[str, Any]:
    """The ``rejected.jsonl`` record of a row that did not load (seed, return or hidden-test row)."""
    return {"key": rej.key, "kind": rej.kind, "source": rej.source, "line": rej.line, "task_id": rej.task_id,
            "demo_id": None, "stage": "load", "stages": ["load"],
            "reasons": [{"stage": "load", **i.to_dict()} for i in rej.issues], "message": rej.message,
            "verification": None, "claimed_verification": None, "row": None}


# --------------------------------------------------------------------------------------------------
# The run


@dataclass
class VerifyRun:
    """What :func:`verify_returns` did in this run (the full picture is in ``report``, read back from the
    output files).

    - ``out_dir``; ``report``: the ``report.json`` content.
    - ``verified_now`` / ``rejected_now`` / ``errors_now``: rows decided (or failed) by this run;
      ``skipped_existing``: rows already decided by an earlier run; ``seconds``: wall time.
    """

    out_dir: Path
    report: dict[str, Any]
    verified_now: int = 0
    rejected_now: int = 0
    errors_now: int = 0
    skipped_existing: int = 0
    seconds: float = 0.0


def _count_rows(path: Path) -> int | None:
    try:
        head = path.open("rb").read(4)
        if head == b"PAR1" or path.suffix.lower() in (".parquet", ".pq"):
            import pyarrow.parquet as pq

            return pq.ParquetFile(path).metadata.num_rows
        n = 0
        with path.open("rb") as f:
            for line in f:
                if line.strip():
                    n += 1
        return n
    except Exception:  # noqa: BLE001 - only for the progress bar
        return None


@holds_out_dirs
def verify_returns(seeds: str | os.PathLike, returns: str | os.PathLike, out_dir: str | os.PathLike, *,
                   hidden: str | os.PathLike | None = None, generators: str | os.PathLike | None = None,
                   options: VerifyOptions | None = None,
                   on_progress: Callable[[str, dict[str, Any]], None] | None = None) -> VerifyRun:
    """Verify every return row of ``returns`` against ``seeds``; write the outputs to ``out_dir``.

    - ``seeds``: seed rows (JSONL or Parquet), validated against ``oracle_seed.schema.json``; rejected seed rows
      go to ``rejected.jsonl`` (``kind: "seed"``). ``returns``: return rows (JSONL or Parquet), validated against
      ``oracle_return.schema.json`` (bad lines, unknown task ids, duplicates, oversized answers, binary junk are
      rejected at stage ``load``, each with its reason; the batch goes on).
    - ``hidden``: hidden tests ``{task_id: [{name, stdin, stdout}]}`` (or JSONL). ``generators``: a folder with
      ``<task_id>.py`` generators.
    - ``options``: :class:`VerifyOptions`. ``on_progress(event, data)``: called with ``"start"``
      (``{"total"}``: rows in the returns file, or ``None``), ``"row"`` (``{"key", "outcome", "task_id"}`` per
      row decided or skipped) and ``"done"``.

    Resumable: rows whose key is already in ``verified.jsonl`` / ``rejected.jsonl`` are skipped; the outputs of
    an interrupted run plus a rerun equal those of one uninterrupted run (up to the ``timing`` fields and the
    wall-clock ``runtime_ms``). Returns a :class:`VerifyRun`. Raises ``ValueError`` for bad options,
    :class:`NoUsableSeeds` (a ``ValueError``, before anything is written) when every seed row is rejected,
    :class:`OutputDirError` (a ``ValueError``) when ``out_dir`` is an existing file or cannot be created,
    :class:`ConfigMismatch` for a folder of another run, ``FileNotFoundError`` when ``seeds`` or ``returns``
    does not exist, and :class:`InputFileError` (a ``ValueError``, before anything is written) when ``hidden`` or
    ``generators`` cannot be used as a whole (:func:`load_hidden_or_raise`, :func:`check_generators_dir`); nothing
    in the rows raises. Seed rows that are rejected while others load are reported
    (``rejected.jsonl`` kind ``seed``, ``report["load_rejections"]``), and returns for them are rejected as
    ``SEED_REJECTED`` ("seed row rejected"), not ``UNKNOWN_TASK_ID``.
    """
    t_run = time.monotonic()
    opts = options or VerifyOptions()
    opts.check()
    for p, what in ((seeds, "seeds"), (returns, "returns")):
        if not Path(p).is_file():
            raise FileNotFoundError(f"{what} file not found: {p}")
    if generators is not None:
        check_generators_dir(generators)
    seeds_loaded = load_seeds(seeds)
    by_id = seeds_loaded.by_id
    if not by_id:
        raise NoUsableSeeds(seeds_loaded.rejections, seeds)
    hidden_loaded = load_hidden_or_raise(hidden, known_task_ids=by_id) if hidden is not None else None
    out = ensure_out_dir(out_dir)
    emit = on_progress or (lambda event, data: None)
    run_id = uuid.uuid4().hex[:12]
    check_config(out, config_fingerprint(seeds, hidden, generators, opts))

    ctx = VerifyContext(by_id, hidden=hidden_loaded, generators=generators, options=opts)

    sft = JsonlSink(out / "sft.jsonl", key=_sft_key)
    verified = JsonlSink(out / "verified.jsonl", key="key")
    rejected = JsonlSink(out / "rejected.jsonl", key="key")
    errors = JsonlSink(out / "errors.jsonl", key=lambda r: f"{r.get('run_id')}:{r.get('seq')}")
    stats = VerifyRun(out_dir=out, report={})
    err_seq = [0]
    try:
        # a kill between sft and verified: sft is written first; repair the other direction too
        for rec in read_jsonl(verified.path):
            if rec.get("key") not in sft and "messages" in rec:
                sft.write({"task_id": rec["task_id"], "messages": [
                    {"role": m["role"], "content": m["content"]} for m in rec["messages"]]})
        for rej in seeds_loaded.rejections + (hidden_loaded.rejections if hidden_loaded else []):
            rejected.write(load_rejection_record(rej))

        emit("start", {"total": _count_rows(Path(returns))})
        workers = int(opts.workers) if opts.workers else _default_workers()
        pending: dict[Future, ReturnRow] = {}

        def settle(fut: Future, row: ReturnRow) -> None:
            res: RowResult = fut.result()
            if res.error is not None:
                err_seq[0] += 1
                errors.write({"run_id": run_id, "seq": err_seq[0], "key": res.key, "task_id": res.task_id,
                              "line": res.line, "error": res.error,
                              "time": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")})
                stats.errors_now += 1
                emit("row", {"key": res.key, "task_id": res.task_id, "outcome": "error", "line": res.line})
                return
            if res.accepted:
                sft.write(sft_record(row))  # before verified.jsonl: see the module docstring
                verified.write(verified_record(row, res))
                stats.verified_now += 1
            else:
                rejected.write(rejected_record(row, res))
                stats.rejected_now += 1
            emit("row", {"key": res.key, "task_id": res.task_id, "line": res.line,
                         "outcome": "accepted" if res.accepted else "rejected", "stage": res.stage})

        with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="oracle-verify") as pool:
            for item in iter_returns(returns, by_id, seed_rejections=seeds_loaded.rejections):
                if isinstance(item, Rejection):
                    if item.key not in rejected:
                        rejected.write(load_rejection_record(item))
                        stats.rejected_now += 1
                    else:
                        stats.skipped_existing += 1
                    emit("row", {"key": item.key, "task_id": item.task_id, "line": item.line,
                                 "outcome": "rejected", "stage": "load"})
                    continue
                if item.key in verified or item.key in rejected:
                    stats.skipped_existing += 1
                    emit("row", {"key": item.key, "task_id": item.task_id, "line": item.origin.line
                                 if item.origin else None, "outcome": "skipped"})
                    continue
                pending[pool.submit(verify_row, item, by_id[item.task_id], ctx)] = item
                while len(pending) >= 2 * workers:
                    done, _ = wait(list(pending), return_when=FIRST_COMPLETED)
                    for fut in done:
                        settle(fut, pending.pop(fut))
            while pending:
                done, _ = wait(list(pending), return_when=FIRST_COMPLETED)
                for fut in done:
                    settle(fut, pending.pop(fut))
    finally:
        for s in (sft, verified, rejected, errors):
            s.close()

    best = write_best(out)
    hidden_checks = ctx.hidden_summaries(all_tasks=True)
    stats.seconds = time.monotonic() - t_run
    report = build_report(out, options=opts, hidden_checks=hidden_checks,
                          coverage=_coverage(ctx, hidden_checks), inputs={
        "seeds": str(seeds), "returns": str(returns), "hidden": str(hidden) if hidden is not None else None,
        "generators": str(generators) if generators is not None else None,
        "seed_rows": len(seeds_loaded.rows), "seed_rejections": len(seeds_loaded.rejections),
        "hidden_rejections": len(hidden_loaded.rejections) if hidden_loaded else 0,
    }, generated=ctx.generated_summaries(), best=best, run={
        "run_id": run_id, "seconds": round(stats.seconds, 3), "verified_now": stats.verified_now,
        "rejected_now": stats.rejected_now, "errors_now": stats.errors_now,
        "skipped_existing": stats.skipped_existing,
        "stage_seconds": {k: round(v, 3) for k, v in sorted(ctx.stage_seconds.items())},
    })
    write_json_atomic(out / "report.json", report)
    if opts.parquet:
        report["parquet"] = write_parquet(out)
        write_json_atomic(out / "report.json", report)
    stats.report = report
    emit("done", {"report": report})
    return stats


def _coverage(ctx: VerifyContext, hidden_checks: Mapping[str, Any]) -> dict[str, Any]:
    """Which seed tasks have hidden / generated tests (for the report's warnings): ``hidden_given``,
    ``generators_given``, ``tasks`` (seed tasks), ``tasks_without_hidden`` (no hidden cases, or every one dropped as
    bad, or its entry rejected), ``tasks_without_generated`` (no generator file, or a generated suite with no case),
    ``tasks_visible_only`` (neither)."""
    ids = sorted(ctx.seeds)
    no_hidden = []
    for tid in ids:
        cases = ctx.hidden.for_task(tid) if ctx.hidden is not None else []
        if not cases or (hidden_checks.get(tid) or {}).get("all_bad"):
            no_hidden.append(tid)
    no_gen = []
    with ctx._guard:
        infos = dict(ctx._tasks)
    for tid in ids:
        info = infos.get(tid)
        if ctx.generators is None or find_generator(ctx.generators, tid) is None:
            no_gen.append(tid)
        elif info is not None and (info.generated_error is not None
                                   or (info.generated is not None and not info.generated.cases)):
            no_gen.append(tid)
    return {"hidden_given": ctx.hidden is not None, "generators_given": ctx.generators is not None,
            "tasks": len(ids), "tasks_without_hidden": no_hidden, "tasks_without_generated": no_gen,
            "tasks_visible_only": sorted(set(no_hidden) & set(no_gen))}


class NoUsableSeeds(ValueError):
    """Every seed row was rejected (a malformed or empty seeds file): nothing can be verified. ``rejections``: the
    seed rejections (each names the line, the JSON path and the reason); the message lists the first ones."""

    def __init__(self, rejections: Sequence[Rejection], path: Any):
        self.rejections = list(rejections)
        lines = [f"  {r.message}" for r in self.rejections[:MAX_CASES_LISTED]]
        more = len(self.rejections) - len(lines)
        super().__init__(f"no usable seed row in {path}: " + (
            f"{len(self.rejections)} seed row(s) rejected:\n" + "\n".join(lines)
            + (f"\n  (+{more} more)" if more > 0 else "") if self.rejections else "the file holds no row"))


class InputFileError(ValueError):
    """An input given by path (``--hidden``, ``--generators``) cannot be used as a whole: missing, of the wrong kind
    (a folder for a file, or the reverse), unreadable, or not JSON/JSONL of the documented shape. Raised before
    anything is written: verifying without the hidden tests or generators asked for would accept answers on fewer
    tests than intended. The message names the option and the path; ``rejections``: the hidden-tests file's
    rejections when it was read (each names the line, the JSON path and the reason)."""

    def __init__(self, message: str, rejections: Sequence[Rejection] = ()):
        self.rejections = list(rejections)
        super().__init__(message)


def load_hidden_or_raise(path: str | os.PathLike, known_task_ids: Iterable[str] | None = None) -> HiddenTests:
    """Load ``--hidden`` (:func:`~arbiter.datasets.oracle_rows.load_hidden_tests`), refusing a file that cannot be
    used as a whole with :class:`InputFileError` (a ``ValueError``: the CLI exits 2) naming the file: it does not
    exist, is not a regular file, cannot be read, is not UTF-8, is not JSON (a JSON document that does not parse, or
    a JSONL file none of whose lines is an entry), is JSON of another shape (e.g. a list), or none of its entries
    is usable or even names a task of ``known_task_ids`` (the seed tasks; a wrong file). A bad *entry* (one seed
    task's tests of the wrong shape) is not fatal: it is rejected alone (``rejected.jsonl`` kind ``hidden``; its
    task becomes ``INVALID_TASK``) and the run goes on; so are entries for unknown tasks next to usable ones."""
    p = Path(path)
    if not p.exists():
        raise InputFileError(f"--hidden {p}: hidden tests file not found")
    if not p.is_file():
        raise InputFileError(f"--hidden {p}: " + ("is a folder; give the hidden tests file (JSON or JSONL)"
                                                 if p.is_dir() else "is not a regular file"))
    known = set(known_task_ids) if known_task_ids is not None else None
    loaded = load_hidden_tests(p, known_task_ids=known)
    whole = [r for r in loaded.rejections if r.task_id is None and r.line is None]
    concerned = loaded.invalid_tasks if known is None else loaded.invalid_tasks & known
    nothing = loaded.rejections and not loaded.tests and not concerned
    if whole or nothing:
        first = (whole or loaded.rejections)[0]
        why = " (no usable entry for a seed task)" if not whole and first.task_id is not None else ""
        more = f" (and {len(loaded.rejections) - 1} more problem(s))" if len(loaded.rejections) > 1 else ""
        raise InputFileError(f"--hidden {p}: the hidden tests file cannot be used{why}: {first.message}{more}",
                             loaded.rejections)
    return loaded


def check_generators_dir(path: str | os.PathLike) -> Path:
    """``--generators``: an existing, readable folder (of ``<task_id>.py`` generators). Raises
    :class:`InputFileError` naming the path otherwise. Returns the path."""
    p = Path(path)
    if not p.exists():
        raise InputFileError(f"--generators {p}: generators folder not found")
    if not p.is_dir():
        raise InputFileError(f"--generators {p}: is a file; give the folder of <task_id>.py generators")
    try:
        with os.scandir(p) as entries:
            next(entries, None)
    except OSError as e:
        raise InputFileError(f"--generators {p}: cannot be read: {e.strerror or e}") from None
    return p


def check_returns_not_empty(path: str | os.PathLike) -> Path:
    """``--returns``: refuse a return-rows file with no row at all (an empty or blank JSONL file, a Parquet file of
    0 rows) with :class:`InputFileError` naming the option and the path, before anything is written (as an empty
    seeds file is refused): verifying nothing and exiting 0 would hide a wrong path or a failed export. A file of
    bad rows (binary junk, malformed JSON) is not empty: each row is rejected with its reason and the run goes on.
    A missing file is left to :func:`verify_returns` (``FileNotFoundError``). Returns the path."""
    p = Path(path)
    if p.is_file() and _count_rows(p) == 0:
        raise InputFileError(f"--returns {p}: empty (no rows): nothing to verify; give the oracle return rows "
                             "(JSONL, one {\"task_id\", \"messages\"} object per line, or Parquet)")
    return p


class ConfigMismatch(ValueError):
    """``out_dir`` holds verdicts made with other seeds, hidden tests, generators or verdict-changing options;
    resuming into it would mix verdicts. Use another output folder (or delete that one)."""


CONFIG_FILE = "config.json"


def _file_sha(path: str | os.PathLike | None) -> str | None:
    if path is None:
        return None
    import hashlib

    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def config_fingerprint(seeds: str | os.PathLike, hidden: str | os.PathLike | None,
                       generators: str | os.PathLike | None, opts: VerifyOptions) -> dict[str, Any]:
    """What the verdicts of a run depend on besides the return rows themselves (whose key is content-addressed):
    sha256 of the seeds file, of the hidden-tests file, of every ``*.py`` generator (by name), and the options that
    change verdicts (``measure``, ``min_speedup``, ``measure_cases``, ``largest_fraction``, ``gen_plan``)."""
    gens = None
    if generators is not None:
        gens = {p.name: _file_sha(p) for p in sorted(Path(generators).glob("*.py"))}
    # version 2: hidden cases the seed's source fails are dropped (oracle_hidden_tests), which changes verdicts
    return {"version": 2, "seeds": _file_sha(seeds), "hidden": _file_sha(hidden), "generators": gens,
            "options": {k: v for k, v in opts.to_dict().items() if k not in ("workers", "wall_repeats")}
            | ({"wall_repeats": opts.wall_repeats} if opts.measure == "wall" else {})}


def check_config(out_dir: Path, fingerprint: dict[str, Any]) -> None:
    """Record ``fingerprint`` in ``out_dir/config.json`` on the first run; on a rerun, raise
    :class:`ConfigMismatch` naming what changed (DESIGN.md "Reliability": a rerun resumes the *same* job)."""
    path = out_dir / CONFIG_FILE
    if path.exists():
        try:
            old = json.loads(path.read_text(encoding="utf-8"))
        except ValueError:
            old = None
        if isinstance(old, dict) and old != fingerprint:
            changed = sorted(k for k in set(old) | set(fingerprint) if old.get(k) != fingerprint.get(k))
            if "options" in changed:
                o, n = old.get("options") or {}, fingerprint.get("options") or {}
                changed = [c for c in changed if c != "options"] + [
                    f"option {k} ({o.get(k)!r} -> {n.get(k)!r})" for k in sorted(set(o) | set(n)) if o.get(k) != n.get(k)]
            raise ConfigMismatch(f"{out_dir} holds verdicts made with other inputs or options (changed: "
                                 f"{', '.join(changed)}); use another --out folder or delete it")
        if isinstance(old, dict):
            return
    write_json_atomic(path, fingerprint)


def _default_workers() -> int:
    from arbiter.judge.judge import default_workers

    return default_workers()


# --------------------------------------------------------------------------------------------------
# best.jsonl, report.json, Parquet


def _write_jsonl_atomic(path: Path, records: Sequence[Mapping[str, Any]]) -> None:
    fd, tmp = tempfile.mkstemp(prefix=".tmp-", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            for r in records:
                f.write(json.dumps(r, ensure_ascii=False, separators=(",", ":")) + "\n")
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def _read(path: Path) -> list[dict[str, Any]]:
    return list(read_jsonl(path)) if path.exists() else []


def _best_rank(rec: Mapping[str, Any]) -> tuple:
    v = rec.get("verification") or {}
    ls = v.get("largest_speedup")
    sp = v.get("speedup")
    return (-(ls if ls is not None else 0.0), -(sp if sp is not None else 0.0), str(rec.get("key")))


def speedup_unit(rec: Mapping[str, Any]) -> str | None:
    """The unit of a verified/rejected record's speedups: ``verification.measurement.unit`` (``instructions`` or
    ``seconds``), ``None`` when the row was not measured."""
    return ((rec.get("verification") or {}).get("measurement") or {}).get("unit")


def write_best(out_dir: str | os.PathLike) -> dict[str, dict[str, Any]]:
    """Rewrite ``best.jsonl`` from ``verified.jsonl``: per task, the accepted row with the highest
    ``largest_speedup`` (then ``speedup``, then key) as ``{"task_id", "messages"}`` (issue 5: "keep the best
    verified answer per task (fastest among full marks)"). Returns ``task_id -> {"key", "speedup",
    "largest_speedup", "unit", "units"}``: ``unit`` is the unit of the best row's speedups, ``units`` every unit
    among the task's accepted rows; more than one means the ranking compared instruction speedups with wall/CPU
    time speedups (a meter fallback), which the report warns about."""
    out = Path(out_dir)
    best: dict[str, dict[str, Any]] = {}
    units: dict[str, set[str]] = {}
    for rec in _read(out / "verified.jsonl"):
        tid = rec.get("task_id")
        if speedup_unit(rec):
            units.setdefault(tid, set()).add(str(speedup_unit(rec)))
        if tid not in best or _best_rank(rec) < _best_rank(best[tid]):
            best[tid] = rec
    records = [{"task_id": tid, "messages": [{"role": m["role"], "content": m["content"]}
                                            for m in best[tid]["messages"]]} for tid in sorted(best)]
    _write_jsonl_atomic(out / "best.jsonl", records)
    return {tid: {"key": r["key"], "demo_id": r.get("demo_id"),
                  "speedup": (r.get("verification") or {}).get("speedup"),
                  "largest_speedup": (r.get("verification") or {}).get("largest_speedup"),
                  "unit": speedup_unit(r), "units": sorted(units.get(tid, ()))}
            for tid, r in sorted(best.items())}


def build_report(out_dir: str | os.PathLike, *, options: VerifyOptions | None = None,
                 inputs: Mapping[str, Any] | None = None, generated: Mapping[str, Any] | None = None,
                 best: Mapping[str, Any] | None = None, run: Mapping[str, Any] | None = None,
                 hidden_checks: Mapping[str, Any] | None = None,
                 coverage: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The ``report.json`` content, read back from ``verified.jsonl`` / ``rejected.jsonl`` (so it covers rows
    decided by earlier, interrupted runs too) plus this run's ``errors.jsonl`` records.

    Keys: ``counts`` (``rows``, ``accepted``, ``rejected``, ``errors``), ``by_stage`` (first failing stage of
    rejected rows), ``by_reason`` (``stage:code`` over every reason of every rejected row), ``by_kind``
    (rejected rows by ``return``/``seed``/``hidden``), ``claims`` (rows whose claim disagrees with us), ``tasks``
    (per task: accepted, rejected, best), ``rows`` (one summary per return row, by line), ``generated``,
    ``options``, ``inputs``, ``run`` (this run's timings in seconds).

    How much the accepted rows can be trusted (issue: known-wrong rows must not slip into SFT data silently):
    ``counts.accepted_visible_only`` (accepted rows whose task had neither hidden nor generated tests: checked on
    the seed's visible tests only), ``counts.accepted_speed_gate_not_applied`` (accepted without the speed gate:
    their tests were too small to show speed), ``counts.measure_fallbacks`` (rows measured with wall time because
    valgrind could not run a program), ``counts.speedup_units`` (measured rows per unit of their speedups:
    ``instructions`` / ``seconds``; each row's ``unit``), ``counts.tasks_best_across_units`` (tasks whose best
    answer was ranked among speedups of different units; a warning names them); ``hidden_checks`` (per task: the
    seed's source on its hidden cases, :mod:`~arbiter.pipelines.oracle.hidden_tests`: dropped bad cases,
    unconfirmed ones); ``coverage`` (which seed tasks have hidden / generated tests, given by the caller);
    ``load_rejections`` (seed and hidden-test entries
    that were rejected: line, task, JSON path, code, message); ``warnings``: one line per problem, recommending
    ``--hidden`` / ``--generators`` where they would help.
    """
    out = Path(out_dir)
    ver = _read(out / "verified.jsonl")
    rej = _read(out / "rejected.jsonl")
    errs = [e for e in _read(out / "errors.jsonl") if run is None or e.get("run_id") == run.get("run_id")]
    by_stage: Counter[str] = Counter()
    by_reason: Counter[str] = Counter()
    by_kind: Counter[str] = Counter()
    tasks: dict[str, dict[str, Any]] = {}
    rows: list[dict[str, Any]] = []
    claims = 0

    def task(tid: Any) -> dict[str, Any]:
        return tasks.setdefault(str(tid), {"accepted": 0, "rejected": 0})

    for r in ver:
        v = r.get("verification") or {}
        task(r.get("task_id"))["accepted"] += 1
        claims += bool(v.get("claim_disagreements"))
        rows.append({"line": r.get("line"), "key": r.get("key"), "task_id": r.get("task_id"),
                     "demo_id": r.get("demo_id"), "outcome": "accepted", "stage": None, "codes": [],
                     "speedup": v.get("speedup"), "largest_speedup": v.get("largest_speedup"),
                     "speed_gate": v.get("speed_gate"), "unit": speedup_unit(r),
                     "visible_only": v.get("all_hidden_tests_pass") is None
                     and v.get("all_generated_tests_pass") is None,
                     "measure_fallback": (v.get("measurement") or {}).get("fallback_reason"),
                     "claim_disagreements": [d["field"] for d in v.get("claim_disagreements") or []]})
    for r in rej:
        by_kind[r.get("kind", "?")] += 1
        by_stage[r.get("stage", "?")] += 1
        codes = []
        for reason in r.get("reasons") or []:
            c = f"{reason.get('stage')}:{reason.get('code')}"
            by_reason[c] += 1
            codes.append(c)
        if r.get("kind") != "return":
            continue
        v = r.get("verification") or {}
        if r.get("task_id") is not None and r.get("stage") != "load":
            task(r.get("task_id"))["rejected"] += 1
        claims += bool(v.get("claim_disagreements"))
        rows.append({"line": r.get("line"), "key": r.get("key"), "task_id": r.get("task_id"),
                     "demo_id": r.get("demo_id"), "outcome": "rejected", "stage": r.get("stage"), "codes": codes,
                     "speedup": v.get("speedup"), "largest_speedup": v.get("largest_speedup"),
                     "speed_gate": v.get("speed_gate"), "unit": speedup_unit(r),
                     "measure_fallback": (v.get("measurement") or {}).get("fallback_reason"),
                     "claim_disagreements": [d["field"] for d in v.get("claim_disagreements") or []]})
    for e in errs:
        rows.append({"line": e.get("line"), "key": e.get("key"), "task_id": e.get("task_id"), "demo_id": None,
                     "outcome": "error", "stage": None, "codes": [], "error": e.get("error")})
    rows.sort(key=lambda x: (x.get("line") is None, x.get("line") or 0, str(x.get("key"))))
    for tid, b in (best or {}).items():
        task(tid)["best"] = b
    n_return_rej = sum(1 for r in rej if r.get("kind") == "return")
    vis_only = [r for r in ver if (r.get("verification") or {}).get("all_hidden_tests_pass") is None
                and (r.get("verification") or {}).get("all_generated_tests_pass") is None]
    no_gate = [r for r in ver if (r.get("verification") or {}).get("speed_gate") == "not_applied"]
    fallbacks = [r for r in ver + [x for x in rej if x.get("kind") == "return"]
                 if ((r.get("verification") or {}).get("measurement") or {}).get("fallback_reason")]
    load_rej = [{"kind": r.get("kind"), "line": r.get("line"), "task_id": r.get("task_id"),
                 "path": (r.get("reasons") or [{}])[0].get("path"), "code": (r.get("reasons") or [{}])[0].get("code"),
                 "message": r.get("message")} for r in rej if r.get("kind") in ("seed", "hidden")]
    units = Counter(str(x["unit"]) for x in rows if x.get("unit"))
    mixed = {str(tid): list(b.get("units") or []) for tid, b in (best or {}).items() if len(b.get("units") or []) > 1}
    warnings = _warnings(len(ver), vis_only, no_gate, fallbacks, hidden_checks or {}, coverage or {}, load_rej)
    if mixed:
        warnings.append(f"{len(mixed)} task(s) have accepted answers measured in different units (instructions and "
                        "wall/CPU seconds, after a meter fallback); their best answer was ranked across units: "
                        + _ids([f"{t} ({', '.join(u)})" for t, u in mixed.items()]))
    return {
        "counts": {"rows": len(ver) + n_return_rej + len(errs), "accepted": len(ver), "rejected": n_return_rej,
                   "errors": len(errs), "sft_rows": len(_read(out / "sft.jsonl")),
                   "other_rejections": len(rej) - n_return_rej,
                   "accepted_visible_only": len(vis_only), "accepted_speed_gate_not_applied": len(no_gate),
                   "measure_fallbacks": len(fallbacks), "speedup_units": dict(sorted(units.items())),
                   "tasks_best_across_units": len(mixed)},
        "warnings": warnings,
        "accepted_visible_only": [{"line": r.get("line"), "key": r.get("key"), "task_id": r.get("task_id")}
                                  for r in sorted(vis_only, key=lambda r: r.get("line") or 0)],
        "accepted_speed_gate_not_applied": [{"line": r.get("line"), "key": r.get("key"), "task_id": r.get("task_id")}
                                            for r in sorted(no_gate, key=lambda r: r.get("line") or 0)],
        "hidden_checks": dict(hidden_checks or {}),
        "coverage": dict(coverage or {}),
        "load_rejections": load_rej,
        "by_stage": dict(sorted(by_stage.items(), key=lambda kv: (STAGES.index(kv[0]) if kv[0] in STAGES else 99))),
        "by_reason": dict(sorted(by_reason.items(), key=lambda kv: (-kv[1], kv[0]))),
        "by_kind": dict(sorted(by_kind.items())),
        "claims_disagreeing": claims,
        "tasks": dict(sorted(tasks.items())),
        "rows": rows,
        "generated": dict(generated or {}),
        "options": options.to_dict() if options else None,
        "inputs": dict(inputs or {}),
        "run": dict(run or {}),
        "outputs": {name: str(out / name) for name in OUTPUT_FILES},
    }


def _ids(ids: Sequence[str], limit: int = 8) -> str:
    ids = list(ids)
    return ", ".join(ids[:limit]) + (f" (+{len(ids) - limit} more)" if len(ids) > limit else "")


def _warnings(accepted: int, vis_only: list[Mapping[str, Any]], no_gate: list[Mapping[str, Any]],
              fallbacks: list[Mapping[str, Any]], hidden_checks: Mapping[str, Any], coverage: Mapping[str, Any],
              load_rej: list[Mapping[str, Any]]) -> list[str]:
    """The report's warning lines (see :func:`build_report`)."""
    out: list[str] = []
    hidden_given, gens_given = coverage.get("hidden_given"), coverage.get("generators_given")
    n_tasks = coverage.get("tasks")
    if vis_only:
        out.append(f"{len(vis_only)} of {accepted} accepted row(s) were checked on the seed's visible tests only (no "
                   "hidden or generated tests for their task): a wrong answer that passes the visible tests is "
                   "accepted; give --hidden and/or --generators")
    if no_gate:
        out.append(f"{len(no_gate)} of {accepted} accepted row(s) skipped the speed gate (their largest tests are "
                   "too small to show speed): they may be slower than the source; give --generators (large "
                   "generated tests) so the gate applies")
    bare = coverage.get("tasks_visible_only") or []
    if n_tasks and bare and (hidden_given or gens_given):
        out.append(f"{len(bare)} of {n_tasks} seed task(s) have neither hidden nor generated tests: {_ids(bare)}")
    no_hidden = coverage.get("tasks_without_hidden") or []
    if hidden_given and n_tasks and no_hidden:
        out.append(f"the hidden-tests file leaves {len(no_hidden)} of {n_tasks} seed task(s) without (usable) hidden "
                   f"tests: {_ids(no_hidden)}")
    no_gen = coverage.get("tasks_without_generated") or []
    if gens_given and n_tasks and no_gen:
        out.append(f"no generator (or no usable generated input) for {len(no_gen)} of {n_tasks} seed task(s): "
                   f"{_ids(no_gen)}")
    dropped = {t: h for t, h in hidden_checks.items() if h.get("dropped")}
    if dropped:
        n = sum(len(h["dropped"]) for h in dropped.values())
        out.append(f"{n} hidden test(s) of {len(dropped)} task(s) dropped as bad data: the seed's source_code "
                   "(correct by contract) fails them, so no answer is judged on them: " + "; ".join(
                       f"{t}: {', '.join(d['name'] + ' ' + d['outcome'] for d in h['dropped'][:5])}"
                       for t, h in list(dropped.items())[:5]))
    all_bad = [t for t, h in hidden_checks.items() if h.get("all_bad")]
    if all_bad:
        out.append(f"every hidden test of {len(all_bad)} task(s) is bad: their hidden suite is treated as absent: "
                   f"{_ids(all_bad)}")
    unconf = {t: h for t, h in hidden_checks.items() if h.get("unconfirmed")}
    if unconf:
        n = sum(len(h["unconfirmed"]) for h in unconf.values())
        out.append(f"{n} hidden test(s) of {len(unconf)} task(s) could not be confirmed (the source did not finish "
                   f"them); kept as given: {_ids(list(unconf))}")
    for t, h in hidden_checks.items():
        if h.get("error"):
            out.append(f"the hidden tests of {t} could not be checked against its source: {h['error']}")
    if fallbacks:
        out.append(f"{len(fallbacks)} row(s) measured with wall/CPU time instead of instructions (valgrind cannot "
                   "run the program, e.g. AVX-512): see verification.measurement.fallback_reason")
    seeds = [r for r in load_rej if r.get("kind") == "seed"]
    if seeds:
        out.append(f"{len(seeds)} seed row(s) rejected; returns for them are rejected as SEED_REJECTED")
    return out


def _jsonify(value: Any) -> str | None:
    return None if value is None else json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)


def write_parquet(out_dir: str | os.PathLike) -> dict[str, int]:
    """Write ``sft``/``best``/``verified``/``rejected`` ``.parquet`` next to their JSONL (pyarrow). ``messages``
    stays a list of ``{role, content}`` structs; every other nested value (dicts, lists) is stored as JSON text,
    since its shape varies between rows. Returns ``file name -> rows``."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    out = Path(out_dir)
    counts = {}
    msg_type = pa.list_(pa.struct([("role", pa.string()), ("content", pa.string())]))
    for name in ("sft", "best", "verified", "rejected"):
        recs = _read(out / f"{name}.jsonl")
        cols: dict[str, list[Any]] = {}
        keys: list[str] = []
        for r in recs:
            for k in r:
                if k not in cols:
                    cols[k] = []
                    keys.append(k)
        arrays, fields = [], []
        for k in keys:
            vals = [r.get(k) for r in recs]
            if k == "messages":
                arrays.append(pa.array([None if v is None else [{"role": m.get("role"), "content": m.get("content")}
                                                                for m in v] for v in vals], type=msg_type))
                fields.append(pa.field(k, msg_type))
                continue
            kinds = {type(v) for v in vals if v is not None}
            if kinds <= {str}:
                t = pa.string()
            elif kinds <= {bool}:
                t = pa.bool_()
            elif kinds <= {int}:
                t = pa.int64()
            elif kinds <= {int, float}:
                t = pa.float64()
            else:
                t = pa.string()
                vals = [_jsonify(v) for v in vals]
            arrays.append(pa.array(vals, type=t))
            fields.append(pa.field(k, t))
        table = pa.Table.from_arrays(arrays, schema=pa.schema(fields)) if fields else pa.table({})
        pq.write_table(table, out / f"{name}.parquet")
        counts[f"{name}.parquet"] = len(recs)
    return counts
