"""The record of one PIE reward (:class:`PieRewardResult`) and the outcomes that are not judge verdicts
(:data:`UNMEASURABLE`, :data:`DATASET_DEFECT`). Fields: ``docs/pie.md`` ("Reward record (`PieRewardResult`)").
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Literal, NamedTuple

from arbiter.checkers.spec import CheckerSpec
from arbiter.datasets.pie.source import PieSource
from arbiter.judge.task import CompileSpec, Task
from arbiter.judge.speedup import SpeedupOutcome
from arbiter.judge.testsuite import StdioCase, TestSuite
from arbiter.judge.verdict import Outcome
from arbiter.rewards.pie.transforms import RewardTransform
from arbiter.sandbox.limits import Limits
from arbiter.timing.comparison import DEFAULT_METHOD
from arbiter.timing.count_cache import CountCache


#: Outcome of a correct candidate whose cost cannot be measured (it creates processes or threads, or makes valgrind
#: client requests): :class:`arbiter.judge.speedup.SpeedupOutcome` ``UNMEASURABLE``. Not a verdict of the judge:
#: the program passed the tests; it gets the transform's failure reward and no speedup.
UNMEASURABLE: str = SpeedupOutcome.UNMEASURABLE.value


#: Outcomes of a correct candidate whose measured program is not the program that runs (``docs/measurement.md``,
#: "The measured program is the program that runs"): a wrong output when measured although the same case passed
#: natively, or a counted speedup far above the native CPU-time speedup. Failure reward, no speedup.
MEASURE_MISMATCH: str = SpeedupOutcome.MEASURE_MISMATCH.value
NATIVE_CONTRADICTS: str = SpeedupOutcome.NATIVE_CONTRADICTS.value


#: Outcome of a row whose own source or target program fails the row's tests (wrong result or no compile): the
#: dataset is at fault, not the candidate (``docs/pie.md``, step 4). Not a verdict of the judge; ``reward`` None.
DATASET_DEFECT = "DATASET_DEFECT"


#: Source verdicts that mean "correct but too slow/too big": dropped like the card's wall filter, not defects.
RESOURCE_OUTCOMES = frozenset({Outcome.TLE, Outcome.MLE})


@dataclass
class PieRewardResult:
    """The reward of one candidate: outcome, reward, speedup and the figures behind them. Every field:
    ``docs/pie.md`` ("Reward record (`PieRewardResult`)")."""

    outcome: str
    reward: float | None
    speedup: float | None
    reason: str
    problem_id: str = ""
    src_id: str = ""
    tgt_id: str | None = None
    transform: str = "raw"
    transform_params: dict[str, float] = field(default_factory=dict)
    method: str = DEFAULT_METHOD
    unit: str = DEFAULT_METHOD
    requested_method: str = DEFAULT_METHOD
    fallback_reason: str | None = None
    k: int = -1
    cases: list[str] = field(default_factory=list)
    per_case: list[dict[str, Any]] = field(default_factory=list)
    src_total: float | int | None = None
    candidate_total: float | int | None = None
    largest_speedup: float | None = None
    n_pool: int = 0
    src_dropped: list[dict[str, str]] = field(default_factory=list)
    dataset_defects: list[dict[str, Any]] = field(default_factory=list)
    fingerprint: str | None = None
    toolchain: dict[str, Any] | None = None
    meter: dict[str, Any] = field(default_factory=dict)
    startup_floor: int | None = None
    ceiling_speedup: float | None = None
    low_headroom: bool | None = None
    src_cache_hits: int = 0
    verdict: dict[str, Any] | None = None
    comparison: dict[str, Any] | None = None
    seconds: float = 0.0

    @property
    def correct(self) -> bool:
        """True when the candidate passed every used case and was measured (``outcome == "AC"``)."""
        return self.outcome == Outcome.AC.value

    @property
    def scored(self) -> bool:
        """True when ``reward`` is a number (not DATASET_DEFECT / INVALID_TASK / SANDBOX_ERROR)."""
        return self.reward is not None

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (every field)."""
        return asdict(self)


class Stop(NamedTuple):
    """How a reward stage ends the call: the outcome, the reason, and (``scored``) whether the transform gives a
    reward (a candidate's own failure or success) or ``reward`` stays None (the row's, the tests' or our fault)."""

    outcome: Outcome | str
    reason: str
    speedup: float | None = None
    scored: bool = False


@dataclass
class RewardCall:
    """The inputs and the state of one :func:`~arbiter.rewards.pie.reward.pie_reward` call, passed along its
    stages; ``res`` is the record being filled."""

    src: PieSource
    candidate: str
    tests: Any
    tf: RewardTransform
    method: str
    k: int
    rng: random.Random | None
    chk: CheckerSpec
    spec: CompileSpec
    lim: Limits
    cache: CountCache | Literal[False]
    only_cases: Iterable[str] | None
    repeats: int
    warmup: int
    with_floor: bool
    res: PieRewardResult
    pool: list[StdioCase] = field(default_factory=list)
    kept: list[StdioCase] = field(default_factory=list)
    used: list[StdioCase] = field(default_factory=list)
    src_comp: Any = None

    @property
    def label(self) -> str:
        return self.src.label()

    def task(self, source: str, cases: Sequence[StdioCase], scoring: str, name: str, **kw: Any) -> Task:
        """A C++ task of ``source`` on ``cases`` with this call's checker, limits and compile command."""
        return Task(language="cpp", source=source, suite=TestSuite(tuple(cases), origin="pie"), limits=self.lim,
                    checker=self.chk, scoring=scoring, compile=self.spec, task_id=f"{self.label}:{name}", **kw)
