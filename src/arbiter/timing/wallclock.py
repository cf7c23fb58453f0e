"""Wall-clock (and CPU-time) measurement of two programs with interleaved repeats, one core per measurement.

The optional method for speedups (instruction counts are the default, :mod:`arbiter.timing.instructions`).
:func:`core_lease` holds one exclusive core (a ``flock`` per core, shared by every arbiter process);
:func:`measure_wall` runs ``warmup + repeats`` rounds in :func:`interleave_order` (``ABBA`` or ``AB``), drops the
warm-up, keeps the median per case and a :class:`Spread`; every timed run refuses new processes and threads.
The rules and their reasons: ``docs/measurement.md``, "Wall time".
"""

from __future__ import annotations

import contextlib
import fcntl
import math
import os
import statistics
import tempfile
import threading
import time
from dataclasses import asdict, dataclass, field
from typing import Any, Callable, Iterable, Iterator, Literal, Mapping, Sequence

from arbiter.sandbox.limits import Limits
from arbiter.sandbox.sandbox import Sandbox
from arbiter.timing.processes import PROBED_STATUSES, process_probe, single_process_argv
from arbiter.timing.status import MeasureStatus, run_status

__all__ = [
    "CaseTimes",
    "Clock",
    "Pattern",
    "Spread",
    "WallRun",
    "WallSample",
    "core_lease",
    "interleave_order",
    "measure_wall",
    "spread",
]

Clock = Literal["wall", "cpu"]
Pattern = Literal["ABBA", "AB"]
#: Where the per-core lock files live (``$ARBITER_CORE_LOCK_DIR`` overrides).
LOCK_DIR_ENV = "ARBITER_CORE_LOCK_DIR"
_held = threading.local()


def _lock_dir() -> str:
    d = os.environ.get(LOCK_DIR_ENV) or os.path.join(tempfile.gettempdir(), "arbiter-core-locks")
    os.makedirs(d, exist_ok=True)
    try:
        os.chmod(d, 0o1777)  # shared by every user's arbiter on this machine
    except OSError:
        pass
    return d


@contextlib.contextmanager
def core_lease(cores: Iterable[int] | None = None, *, timeout: float | None = None,
               poll_seconds: float = 0.05) -> Iterator[int]:
    """Hold one CPU core exclusively and pin the calling thread to it; yields the core number.

    ``cores``: candidates (default: the calling thread's current affinity). The lease is an exclusive ``flock``
    on ``<lock dir>/core-<n>.lock``, so concurrent measurements of every arbiter process on this machine get
    different cores, and wait when all are taken (DESIGN.md: "timing measurements never share a core").
    Processes started by this thread inside the ``with`` block (e.g. a :class:`Sandbox` and all its programs)
    inherit the pinning; the thread's previous affinity is restored on exit. Re-entrant: inside a lease, the same
    thread gets the core it holds (so a measurement may run inside a caller's lease). Raises TimeoutError after
    ``timeout`` seconds without a free core, ValueError for an empty candidate set.
    """
    held = getattr(_held, "core", None)
    if held is not None:  # re-entrant: this thread already holds a core and is pinned to it
        if cores is not None and held not in set(cores):
            raise ValueError(f"core_lease: this thread already holds core {held}, not among {sorted(cores)}")
        yield held
        return
    previous = os.sched_getaffinity(0)
    candidates = sorted(set(cores) if cores is not None else previous)
    if not candidates:
        raise ValueError("core_lease: no candidate cores")
    lock_dir = _lock_dir()
    deadline = None if timeout is None else time.monotonic() + timeout
    while True:
        for core in candidates:
            path = os.path.join(lock_dir, f"core-{core}.lock")
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o666)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(fd)
                continue
            try:
                os.sched_setaffinity(0, {core})
                _held.core = core
                try:
                    yield core
                finally:
                    _held.core = None
                    os.sched_setaffinity(0, previous)
            finally:
                fcntl.flock(fd, fcntl.LOCK_UN)
                os.close(fd)
            return
        if deadline is not None and time.monotonic() >= deadline:
            raise TimeoutError(f"no free core among {candidates} after {timeout} s")
        time.sleep(poll_seconds)


def held_core() -> int | None:
    """The core the calling thread holds (:func:`core_lease`), or ``None``."""
    return getattr(_held, "core", None)


def interleave_order(case_names: Sequence[str], rounds: int, pattern: Pattern = "ABBA",
                     programs: tuple[str, str] = ("a", "b")) -> list[tuple[int, str, str]]:
    """The run order ``[(round, case, program), ...]``: rounds outer, cases inner, programs alternating.

    ``AB``: always ``a`` then ``b``. ``ABBA``: ``a b`` when ``round + case index`` is even, else ``b a`` (so each
    case sees ``AB BA AB ...`` across rounds and neighbouring cases start with different programs). Raises
    ValueError for an unknown pattern or ``rounds < 1``.
    """
    if pattern not in ("ABBA", "AB"):
        raise ValueError(f"pattern must be 'ABBA' or 'AB', got {pattern!r}")
    if rounds < 1:
        raise ValueError(f"rounds must be >= 1, got {rounds}")
    a, b = programs
    order = []
    for r in range(rounds):
        for i, name in enumerate(case_names):
            seq = (a, b) if pattern == "AB" or (r + i) % 2 == 0 else (b, a)
            order.extend((r, name, p) for p in seq)
    return order


@dataclass(frozen=True)
class Spread:
    """Location and spread of a case's kept samples, in seconds: ``median``, ``mad`` (median absolute
    deviation), ``iqr`` (inter-quartile range, inclusive quartiles), ``cv`` (population standard deviation / mean;
    0 for one sample) and ``n`` samples."""

    median: float
    mad: float
    iqr: float
    cv: float
    n: int


def spread(samples: Sequence[float]) -> Spread:
    """:class:`Spread` of ``samples`` (seconds). Raises ValueError when empty."""
    xs = [float(x) for x in samples]
    if not xs:
        raise ValueError("spread of no samples")
    med = statistics.median(xs)
    mad = statistics.median(abs(x - med) for x in xs)
    if len(xs) >= 2:
        q1, _, q3 = statistics.quantiles(xs, n=4, method="inclusive")
        iqr = q3 - q1
    else:
        iqr = 0.0
    mean = statistics.fmean(xs)
    cv = statistics.pstdev(xs) / mean if mean > 0 else 0.0
    return Spread(median=med, mad=mad, iqr=iqr, cv=cv, n=len(xs))


@dataclass
class WallSample:
    """One timed run: ``round`` (0-based; rounds below the warm-up count are dropped), ``case``, ``program``,
    ``wall_seconds`` / ``cpu_seconds`` of the run, its :class:`MeasureStatus` and ``warmup``."""

    round: int
    case: str
    program: str
    wall_seconds: float
    cpu_seconds: float
    status: MeasureStatus
    warmup: bool

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        d = asdict(self)
        d["status"] = self.status.value
        return d


@dataclass
class CaseTimes:
    """One program on one case: :class:`Spread` of the kept samples for both clocks (seconds)."""

    case: str
    program: str
    wall: Spread
    cpu: Spread

    def on(self, clock: Clock) -> Spread:
        """The spread for ``clock``."""
        return self.wall if clock == "wall" else self.cpu


@dataclass
class WallRun:
    """:func:`measure_wall`'s result.

    - ``order``: every run in the order it happened (warm-up included), as :class:`WallSample`.
    - ``times``: program -> its :class:`CaseTimes` per case, in case order (only when every kept run of that
      program on that case was ok).
    - ``failures``: ``{"program", "case", "round", "status", "detail"}`` for each failed run (the first one stops
      the measurement when ``stop_on_failure``).
    - ``repeats``, ``warmup``, ``pattern``: the schedule.
    """

    order: list[WallSample] = field(default_factory=list)
    times: dict[str, list[CaseTimes]] = field(default_factory=dict)
    failures: list[dict[str, Any]] = field(default_factory=list)
    repeats: int = 0
    warmup: int = 0
    pattern: str = "ABBA"

    @property
    def ok(self) -> bool:
        """True when no run failed."""
        return not self.failures

    def total(self, program: str, clock: Clock = "wall") -> float | None:
        """Sum over cases of the program's median (seconds); ``None`` when the program failed anywhere."""
        if not self.ok or program not in self.times:
            return None
        return math.fsum(t.on(clock).median for t in self.times[program])

    def round_speedups(self, a: str, b: str, clock: Clock = "wall") -> list[float]:
        """Per kept round: sum over cases of ``a``'s time / the same for ``b`` (a spread of the speedup)."""
        key = "wall_seconds" if clock == "wall" else "cpu_seconds"
        sums: dict[int, dict[str, float]] = {}
        for s in self.order:
            if not s.warmup and s.status is MeasureStatus.OK:
                sums.setdefault(s.round, {}).setdefault(s.program, 0.0)
                sums[s.round][s.program] += getattr(s, key)
        return [v[a] / v[b] for _, v in sorted(sums.items()) if a in v and b in v and v[b] > 0]


def measure_wall(sandboxes: Mapping[str, Sandbox], cases: Sequence[tuple[str, bytes, bytes | None]], *,
                 limits: Limits | None = None, argv: Sequence[str] = ("/prog/main",), repeats: int = 5,
                 warmup: int = 1, pattern: Pattern = "ABBA",
                 same_output: Callable[[bytes, bytes], bool] | None = None,
                 stop_on_failure: bool = True, single_process: bool = True) -> WallRun:
    """Time two programs on the same cases with interleaved repeats.

    ``sandboxes``: exactly two entries, program name -> a sandbox holding that program at ``argv[0]``, in run
    order preference (the first is "A" of the pattern). Create them inside :func:`core_lease` so all runs share
    one exclusive core; runs here are strictly sequential. ``cases``: ``(name, stdin, expected stdout or None)``.
    ``limits``: per-run native limits (default :class:`Limits`). ``repeats`` kept rounds after ``warmup`` dropped
    rounds (PIE's ``num_trials`` / ``ignore_first_k``). Every run's output is checked against ``expected``
    (``same_output``, default :func:`~arbiter.timing.instructions.default_same_output`); a crash, a limit or a
    wrong answer is a failure, never a time. ``single_process`` (default): every timed run refuses new processes
    and threads (``docs/measurement.md``, "One process, one thread"); a run that fails only because of that is a
    ``creates_processes`` failure. ``False`` times ``argv`` as is (for callers that enforce it themselves).
    Raises ValueError for bad arguments; :class:`~arbiter.sandbox.sandbox.SandboxError` when ``prlimit`` is missing.
    """
    if len(sandboxes) != 2:
        raise ValueError(f"measure_wall needs exactly two programs, got {len(sandboxes)}")
    if repeats < 1 or warmup < 0:
        raise ValueError(f"repeats must be >= 1 and warmup >= 0, got {repeats} and {warmup}")
    names = [c[0] for c in cases]
    programs = tuple(sandboxes)
    lim = limits or Limits()
    by_name = {c[0]: c for c in cases}
    run_argv = single_process_argv(argv) if single_process else list(argv)
    run = WallRun(repeats=repeats, warmup=warmup, pattern=pattern)
    samples: dict[tuple[str, str], list[tuple[float, float]]] = {}
    failed: set[tuple[str, str]] = set()
    for rnd, case, prog in interleave_order(names, warmup + repeats, pattern, programs):  # type: ignore[arg-type]
        if (prog, case) in failed:
            continue
        _, stdin, expected = by_name[case]
        ex = sandboxes[prog].run(run_argv, stdin, lim)
        status, detail = run_status(ex, expected, same_output)
        if single_process and status in PROBED_STATUSES:
            why = process_probe(sandboxes[prog], argv, stdin, lim, expected, same_output,
                                refused_failure=(status, detail))
            if why is not None:
                status, detail = MeasureStatus.CREATES_PROCESSES, why
        run.order.append(WallSample(round=rnd, case=case, program=prog, wall_seconds=ex.wall_seconds,
                                    cpu_seconds=ex.cpu_seconds, status=status, warmup=rnd < warmup))
        if status is not MeasureStatus.OK:
            failed.add((prog, case))
            run.failures.append({"program": prog, "case": case, "round": rnd, "status": status.value,
                                 "detail": detail})
            if stop_on_failure:
                break
            continue
        if rnd >= warmup:
            samples.setdefault((prog, case), []).append((ex.wall_seconds, ex.cpu_seconds))
    for prog in programs:
        per_case = []
        for case in names:
            got = samples.get((prog, case))
            if (prog, case) in failed or not got or len(got) < repeats:
                continue
            per_case.append(CaseTimes(case=case, program=prog, wall=spread([w for w, _ in got]),
                                      cpu=spread([c for _, c in got])))
        run.times[prog] = per_case
    return run
