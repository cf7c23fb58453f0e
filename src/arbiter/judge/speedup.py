"""The one correctness-gated speedup: a candidate is measured against its source only once it is correct.

:func:`gated_speedup` compiles the source, gates the candidate on the cases (its verdict there must be AC),
measures both with :func:`arbiter.timing.measure.compare` (model cycles by default, or instruction counts, both
falling back to interleaved wall time when valgrind cannot run a program; or wall time), checks that the counted
program is the one that runs (:mod:`arbiter.judge.meter_checks`) and classifies what happened into one
:class:`SpeedupOutcome`. The oracle and the PIE reward map these codes to their own output records. See
``docs/oracle.md`` ("The gated speedup").
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ContextManager, Literal

from arbiter.checkers.compare import check_output
from arbiter.checkers.spec import CheckerSpec
from arbiter.judge.task import CompileSpec, Task
from arbiter.judge.testsuite import StdioCase, TestSuite
from arbiter.judge.verdict import Outcome, Verdict
from arbiter.sandbox.limits import Limits
from arbiter.strenum import StrEnum
from arbiter.timing.comparison import DEFAULT_METHOD

__all__ = [
    "MISMATCH_REASON",
    "MeasureFailure",
    "SpeedupOutcome",
    "SpeedupResult",
    "SpeedupSpec",
    "STATUS_VERDICTS",
    "UNMEASURABLE_STATUSES",
    "gated_speedup",
]

Method = Literal["instructions", "cycles", "wall"]
#: A hook around each phase (``"compile"``, ``"judge"``, ``"measure"``, ``"measure_wall"``), e.g. a run's lock.
Hold = Callable[[str], ContextManager[Any]]


class SpeedupOutcome(StrEnum):
    """How a gated speedup ended (the one set of codes; callers map them to their records)."""

    MEASURED = "MEASURED"                  # correct and measured: ``speedup`` is a finite ratio > 0
    SOURCE_CE = "SOURCE_CE"                # the source does not compile
    NOT_CORRECT = "NOT_CORRECT"            # the gate: the candidate's verdict is not AC (``verdict``)
    INVALID_TASK = "INVALID_TASK"          # the gate: the judge found the task unusable
    SOURCE_FAILED = "SOURCE_FAILED"        # the source failed a measured run
    CANDIDATE_FAILED = "CANDIDATE_FAILED"  # the candidate failed a measured run (``failures[0].verdict``)
    UNMEASURABLE = "UNMEASURABLE"          # correct, but creates processes, makes client requests or changes code
    MEASURE_MISMATCH = "MEASURE_MISMATCH"  # correct natively, a wrong output when measured: not the judged program
    NATIVE_CONTRADICTS = "NATIVE_CONTRADICTS"  # the counted speedup is far above the native CPU-time speedup
    NO_SPEEDUP = "NO_SPEEDUP"              # every run succeeded yet the totals give no finite ratio > 0
    SANDBOX_ERROR = "SANDBOX_ERROR"        # ours (sandbox, toolchain mismatch, meter): never a reward


#: Measured-run statuses of a correct candidate whose cost cannot be measured.
UNMEASURABLE_STATUSES = frozenset({"creates_processes", "client_request", "modifies_code", "writes_meter",
                                   "exec_refused"})
#: Why a wrong output under measurement is its own outcome (the candidate passed the same case natively).
MISMATCH_REASON = ("the candidate printed the right output when judged natively and a wrong one when measured: "
                   "the measured program is not the program that runs; no speedup")
#: The verdict a measured-run status stands for (``SANDBOX_ERROR``: not the program's fault).
STATUS_VERDICTS: Mapping[str, Outcome] = {
    "time_limit": Outcome.TLE,
    "memory_limit": Outcome.MLE,
    "runtime_error": Outcome.RE,
    "output_limit": Outcome.OLE,
    "wrong_output": Outcome.WA,
    "no_count": Outcome.SANDBOX_ERROR,
    "sandbox_error": Outcome.SANDBOX_ERROR,
    "unsupported_by_meter": Outcome.SANDBOX_ERROR,
}


@dataclass(frozen=True)
class MeasureFailure:
    """One failed measured run: ``program`` is ``"source"`` or ``"candidate"``."""

    program: str
    case: str
    status: str
    detail: str = ""

    @property
    def unmeasurable(self) -> bool:
        return self.status in UNMEASURABLE_STATUSES

    @property
    def verdict(self) -> Outcome:
        return STATUS_VERDICTS.get(self.status, Outcome.SANDBOX_ERROR)

    @property
    def ours(self) -> bool:
        """Our failure (sandbox, meter), not the program's."""
        return self.verdict is Outcome.SANDBOX_ERROR and not self.unmeasurable


@dataclass(frozen=True)
class SpeedupSpec:
    """How both programs are built, checked and measured.

    ``method``: the measure (default :data:`~arbiter.timing.comparison.DEFAULT_METHOD`, cycles). ``names``: the
    two programs' names in the comparison record. ``cache``: a :class:`~arbiter.timing.count_cache.CountCache` for
    the source's counts (cycles or instructions; ``None``: none kept), keyed also by ``output_check``.
    ``fallback``: measure with wall time when valgrind cannot run a program. ``config``: the sandbox configuration
    of the gate's judge runs. ``spot_checks``: how many cases of the ``spot_pool`` given to :func:`gated_speedup`,
    drawn at random, the candidate is also run on under the meter (its output checked); ``native_check``:
    cross-check a counted speedup with native CPU time.
    """

    compile: CompileSpec = field(default_factory=CompileSpec)
    limits: Limits = field(default_factory=Limits)
    checker: CheckerSpec = field(default_factory=lambda: CheckerSpec("trailing_whitespace"))
    method: Method = DEFAULT_METHOD
    largest_fraction: float = 0.2
    repeats: int = 5
    warmup: int = 1
    cache: Any = None
    output_check: str | Mapping[str, str] = ""
    fallback: bool = True
    names: tuple[str, str] = ("source", "candidate")
    config: Any = None
    spot_checks: int = 0
    native_check: bool = True


@dataclass
class SpeedupResult:
    """What :func:`gated_speedup` found. ``stage``: where it ended (``source_compile``, ``gate``,
    ``candidate_compile``, ``measure``). ``error``: the exception behind a ``SANDBOX_ERROR``, when one was
    raised. ``cache_hits``: source figures taken from the cache (cycles or instructions without fallback, else
    None). ``native_check``: the native cross-check (:class:`~arbiter.timing.crosscheck.NativeCheck`) of a counted
    speedup; ``spot_checked``: the cases the candidate was also run on under the meter."""

    outcome: SpeedupOutcome
    reason: str
    stage: str
    source: Any = None
    candidate: Any = None
    verdict: Verdict | None = None
    comparison: Any = None
    failures: list[MeasureFailure] = field(default_factory=list)
    cache_hits: int | None = None
    error: BaseException | None = None
    native_check: Any = None
    spot_checked: list[str] = field(default_factory=list)

    @property
    def speedup(self) -> float | None:
        return self.comparison.speedup if self.outcome is SpeedupOutcome.MEASURED else None

    @property
    def largest_speedup(self) -> float | None:
        return self.comparison.largest_speedup if self.outcome is SpeedupOutcome.MEASURED else None


@contextlib.contextmanager
def _no_hold(_phase: str) -> Iterator[None]:
    yield


def gated_speedup(source: str, candidate: str, cases: Sequence[StdioCase], spec: SpeedupSpec, *,
                  passed: Sequence[Verdict] = (), hold: Hold | None = None, task_id: str = "",
                  spot_pool: Sequence[StdioCase] = ()) -> SpeedupResult:
    """Measure ``candidate`` against ``source`` (program texts) on ``cases``, if the candidate is correct there.

    ``passed``: verdicts the candidate already got; a case named in an AC case result of an AC verdict is not
    judged again (the rest are, all-or-nothing). ``spot_pool``: other cases the candidate passed natively, from
    which ``spec.spot_checks`` are drawn (:mod:`arbiter.judge.meter_checks`). Raises ``ValueError`` for no cases,
    a bad method or compile command; ``ValgrindUnavailable`` for cycles or instructions without valgrind. Sandbox
    failures come back as ``SANDBOX_ERROR`` with ``error`` set.
    """
    from arbiter.languages.cpp.compile import compile_cpp
    from arbiter.languages.cpp.toolchain import ToolchainUnavailable
    from arbiter.sandbox.sandbox import SandboxError

    if not cases:
        raise ValueError("no cases to measure (zero tests is INVALID_TASK, never a measurement)")
    if spec.method not in ("instructions", "cycles", "wall"):
        raise ValueError(f"method must be 'instructions', 'cycles' or 'wall', got {spec.method!r}")
    hold = hold or _no_hold
    stage = "source_compile"
    try:
        with hold("compile"):
            src = compile_cpp(source, spec.compile)
        if not src.ok:
            return SpeedupResult(SpeedupOutcome.SOURCE_CE, src.message, stage, source=src)
        stage = "gate"
        verdict = _gate(candidate, cases, spec, passed, hold, task_id)
        if verdict is not None and verdict.outcome is not Outcome.AC:
            return _gate_failed(verdict, src)
        stage = "candidate_compile"
        with hold("compile"):
            cand = compile_cpp(candidate, spec.compile)
        if not cand.ok:  # compiled a moment ago for the gate; only a vanished cache entry gets here
            return SpeedupResult(SpeedupOutcome.SANDBOX_ERROR, f"the candidate no longer compiles: "
                                 f"{cand.message[:200]}", stage, source=src, verdict=verdict)
        stage = "measure"
        cmp, hits = _compare(src, cand, cases, spec, hold)
    except (SandboxError, ToolchainUnavailable) as exc:
        return SpeedupResult(SpeedupOutcome.SANDBOX_ERROR, str(exc), stage, error=exc)
    except Exception as exc:
        from arbiter.languages.cpp.toolchain import ToolchainMismatch

        if isinstance(exc, ToolchainMismatch):
            return SpeedupResult(SpeedupOutcome.SANDBOX_ERROR, str(exc), stage, error=exc)
        raise
    res = SpeedupResult(SpeedupOutcome.MEASURED, "", stage, source=src, candidate=cand, verdict=verdict,
                        comparison=cmp, cache_hits=hits, failures=_failures(cmp))
    res.outcome, res.reason = classify(cmp, res.failures)
    if res.outcome is SpeedupOutcome.MEASURED:  # (wall too: its timed runs are pinned, the judged ones not)
        from arbiter.judge.meter_checks import check_meter

        try:
            check_meter(res, cases, spec, [*passed, *([verdict] if verdict is not None else [])], spot_pool, hold)
        except SandboxError as exc:
            res.outcome, res.reason, res.error = SpeedupOutcome.SANDBOX_ERROR, f"meter checks: {exc}", exc
    return res


def _gate(candidate: str, cases: Sequence[StdioCase], spec: SpeedupSpec, passed: Sequence[Verdict], hold: Hold,
          task_id: str) -> Verdict | None:
    """The candidate's verdict on the cases ``passed`` does not cover (``None``: all covered)."""
    from arbiter.judge.judge import judge

    covered = {c.name for v in passed if v.outcome is Outcome.AC for c in v.cases if c.outcome is Outcome.AC}
    todo = tuple(c for c in cases if c.name not in covered)
    if not todo:
        return None
    task = Task(language="cpp", source=candidate, suite=TestSuite(todo, origin="speedup"), limits=spec.limits,
                checker=spec.checker, scoring="all_or_nothing", compile=spec.compile, task_id=task_id)
    with hold("judge"):
        return judge(task) if spec.config is None else judge(task, config=spec.config)


def _gate_failed(verdict: Verdict, src: Any) -> SpeedupResult:
    outcome = {Outcome.SANDBOX_ERROR: SpeedupOutcome.SANDBOX_ERROR,
               Outcome.INVALID_TASK: SpeedupOutcome.INVALID_TASK}.get(verdict.outcome, SpeedupOutcome.NOT_CORRECT)
    return SpeedupResult(outcome, f"{verdict.outcome.value}: {verdict.reason}", "gate", source=src, verdict=verdict)


def output_check_of(checker: CheckerSpec, cases: Sequence[StdioCase]) -> Callable[[bytes, bytes], bool]:
    """The checker against every accepted answer of the case whose first answer is ``expected``."""
    answers = {c.expected[0]: tuple(c.expected) for c in cases}

    def same(actual: bytes, expected: bytes) -> bool:
        return check_output(checker, actual, answers.get(expected, (expected,))).ok

    return same


def _compare(src: Any, cand: Any, cases: Sequence[StdioCase], spec: SpeedupSpec, hold: Hold) -> tuple[Any, int | None]:
    """The comparison (after a meter fallback, if any) and the source's cache hits (valgrind measures only)."""
    from arbiter.timing.measure import MeasuredProgram, compare, mark_fallback, meter_fallback_reason
    from arbiter.timing.count_cache import CountCache

    a = MeasuredProgram(src.binary, src.toolchain, spec.names[0])
    b = MeasuredProgram(cand.binary, cand.toolchain, spec.names[1])
    timing_cases = [(c.name, c.stdin, c.expected[0]) for c in cases]
    kw: dict[str, Any] = dict(limits=spec.limits, same_output=output_check_of(spec.checker, cases),
                              largest_fraction=spec.largest_fraction, repeats=spec.repeats, warmup=spec.warmup)
    if spec.method == "wall":
        with hold("measure"):
            return compare(a, b, timing_cases, "wall", **kw), None
    cache = spec.cache if spec.cache is not None else CountCache.disabled()
    with hold("measure"):
        cmp = compare(a, b, timing_cases, spec.method, baseline_cache=cache, output_check=spec.output_check,
                      **kw)
    hits = cmp.extra.pop("baseline_cache_hits", 0)
    reason = meter_fallback_reason(cmp) if spec.fallback else None
    if reason is None:
        return cmp, hits
    with hold("measure_wall"):
        return mark_fallback(compare(a, b, timing_cases, "wall", **kw), cmp, reason), None


def _failures(cmp: Any) -> list[MeasureFailure]:
    return [MeasureFailure("source" if f["program"] == "a" else "candidate", f["case"], f["status"],
                           str(f.get("detail", "") or "")) for f in cmp.failures]


def classify(cmp: Any, failures: list[MeasureFailure]) -> tuple[SpeedupOutcome, str]:
    """The outcome, from the first failed run (or the totals when none failed)."""
    if failures:
        f = failures[0]
        what = f"{f.program} on case {f.case}: {f.status} {f.detail}".strip()
        if f.ours:
            return SpeedupOutcome.SANDBOX_ERROR, what
        if f.program == "source":
            return SpeedupOutcome.SOURCE_FAILED, what
        if f.unmeasurable:
            return SpeedupOutcome.UNMEASURABLE, what
        if f.status == "wrong_output":  # the gate judged this case AC natively
            return SpeedupOutcome.MEASURE_MISMATCH, f"{what}: {MISMATCH_REASON}"
        return SpeedupOutcome.CANDIDATE_FAILED, what
    if cmp.speedup is None or not (math.isfinite(cmp.speedup) and cmp.speedup > 0):
        return SpeedupOutcome.NO_SPEEDUP, f"measurement gave no speedup (totals {cmp.a_total} / {cmp.b_total})"
    return SpeedupOutcome.MEASURED, f"speedup {cmp.speedup:.4g} ({cmp.unit})"
