"""Re-timing reward for a candidate rewrite of a PIE source program (issue 7, "Re-timing a candidate").

The PIE gem5 card (``spec/pie_gem5_pairs_card.txt``) warns: "if you re-time rollouts, use the same toolchain or
regenerate references, otherwise speedups are not comparable". So a candidate is **never** compared with the
dataset's gem5 ticks: :func:`pie_reward` measures the row's ``src_code`` and the candidate here, on the same cases,
with the same toolchain, and reports the toolchain fingerprint with the figures.

One call, step by step (every rule names its source):

1. **Row** (:func:`as_source`): a :class:`~arbiter.datasets.pie_rows.PiePair`, a pie-gem5 pairs/bysrc row, a
   mapping of either, or a :class:`PieSource`. Only ``problem_id``, ``src_id``, ``src_code``, ``tgt_code`` (checked
   for correctness in step 4, never timed) and ``usable_case_ids`` (gem5 rows) are used; the dataset's ticks are
   not.
2. **Tests**: a PIE/CodeNet folder or tar archive (``<problem_id>/input.N.txt``/``output.N.txt``, read by
   :func:`arbiter.judge.encodings.load_pie_tests`) or a ready :class:`~arbiter.judge.testsuite.TestSuite`. Card
   case index ``N`` is the case named ``input.N`` (or ``N``). A row with ``usable_case_ids`` is restricted to them
   (card: "usable_case_ids is already the correct, fully-filtered set"); a usable id without a test file is
   ``INVALID_TASK``.
3. **Case choice, the card's K** (:func:`arbiter.pipelines.pie_speedup.select_cases`): ``k < 0`` uses every case,
   ``k > 0`` takes ``rng.sample(cases, min(k, len(cases)))`` — clamped, never padded (card, "How to compute the
   reward"). Rows with ``usable_case_ids`` sample from that list in its stored order, exactly as the card's snippet
   (the same seeded ``random.Random`` picks the same cases as the dataset's reward). Rows without it (PIE release
   rows such as ``realdata/pie_purdue/val.jsonl``) sample from the cases the source passes (step 4).
4. **The row's own programs must be correct on its tests.** The source, then the target (``tgt_code``, when the
   row has one), are judged natively on the candidate pool (every case of the problem, or the card's sample) with
   the same checker and limits; the verdicts are cached per (problem, program, toolchain fingerprint, checker,
   limits, cases). The row claims both are correct there (card rows: "usable_case_ids is already the correct,
   fully-filtered set"; PIE release rows: ``src_status``/``tgt_status`` Accepted), so:

   - a wrong result (``WA``/``RE``/``OLE``) of either program on any pool case, or a program that does not
     compile, is :data:`DATASET_DEFECT` (``reward`` None, the candidate is not judged): ``dataset_defects`` names
     the program (``source``/``target``), its id, the case, the verdict and the detail. The card drops such "bad
     apples" from its release; a row that still has one (PIE's p02753 fast program s065571920 reads a 3-letter
     string into ``char S[3]`` with ``%s``, undefined behaviour that gives WA) cannot say what a correct rewrite
     is, and never becomes a candidate's failure or a speedup;
   - a source ``TLE``/``MLE`` ("correct but too slow": realdata/SOURCES.md §4 shows PIE's p02587 src exceeding
     4 s on 8 of 105 tests) is **dropped and reported** (``src_dropped``) like the card drops cases over its
     2-minute wall ("Strict 2-min wall: cases above 1.4e10 ticks dropped from usable"); a source with no case left
     is ``INVALID_TASK``. A target ``TLE``/``MLE`` is not a defect (the target is never timed here).
5. **Correctness first** (issue 7; PIE's harness runs the native binary before gem5): the candidate is judged on
   every used case with the PIE comparator (checker ``pie``: line-wise, floats within 1e-3; extra or missing
   lines fail, unlike PIE's ``zip``), all-or-nothing. Anything but ``AC`` (``WA``/``TLE``/``MLE``/``RE``/``OLE``/
   ``CE``) gets the transform's failure reward (:data:`arbiter.pipelines.pie_speedup.TRANSFORMS`), speedup
   ``None``.
6. **Measurement** with :mod:`arbiter.timing` on the used cases, one exclusive core per measurement:

   - ``method="instructions"`` (default; DESIGN.md "Speed"): exact valgrind instruction counts,
     :func:`arbiter.timing.compare.compare` with the source as the cached baseline (``baseline_cache``). The
     source's per-case counts are cached (:class:`SrcCountCache`, an :class:`arbiter.timing.count_cache.CountCache`)
     per (executable, toolchain fingerprint, case input, every accepted output, checker, meter incl. valgrind version
     and CPU, limits), in memory and on disk, so many candidates for one source measure it once. A count is a pure
     function of these (``arbiter.timing.instructions``: "same binary + same stdin + same environment give the
     same count"). The source's cases are looked up or measured first, then the candidate's.
   - ``method="wall"``: :func:`arbiter.timing.compare.compare` as is (interleaved ABBA repeats, headline on the
     CPU clock, wall clock in ``comparison["extra"]``); the source is re-measured with every candidate because
     interleaving is what makes wall figures comparable.

   Speedup = ``sum(src) / sum(candidate)`` over the used cases (card: "speedup = sum(src ...) / sum(tgt ...)").
   A candidate run that fails under measurement gets the failure reward (status mapped to its verdict); a source
   run that fails under measurement makes the row ``INVALID_TASK``.
   **Programs that create processes or threads**: measured runs refuse them (both methods, ``RLIMIT_NPROC = 1``:
   a child's or a thread's work would escape the figure, e.g. a parent that never reaps its worker child is charged
   none of its CPU). A candidate that passed step 5 but fails only because of that is neither wrong nor fast:
   outcome :data:`UNMEASURABLE`, reason "program creates processes; its cost cannot be measured", speedup ``None``
   and the transform's failure reward (a rollout that dodges measurement must not look like a neutral sample).
   **Programs that make valgrind client requests** (e.g. ``VALGRIND_NON_SIMD_CALL1``, which would make valgrind
   run a function of the program natively, uncounted; from ``<valgrind/valgrind.h>``, hand-written asm or code
   written at run time): the meter refuses the request and stops the run (``client_request`` in
   :mod:`arbiter.timing.instructions`); the candidate is :data:`UNMEASURABLE` too, reason "program makes valgrind
   client requests; its cost cannot be measured", speedup ``None``, the transform's failure reward.
   **Meter fallback**: a program that passed natively (step 4 / step 5) but that valgrind cannot run (valgrind
   3.19 has no AVX-512 decoder: the run dies of SIGILL with "unhandled instruction bytes" while the native run of
   the same binary on the same case succeeds, ``unsupported_by_meter`` in :mod:`arbiter.timing.instructions`) is
   the meter's limitation, never the program's fault: the pair is measured with the wall method instead
   (``compare(..., on_unsupported="wall")``: both programs, interleaved, same cases, ``repeats``/``warmup``), and
   the record says so: ``method: "wall"``, ``unit: "seconds"``, ``requested_method: "instructions"``,
   ``fallback_reason`` (e.g. "valgrind cannot decode the program's instructions (AVX-512)"). The reward is the
   same transform of that speedup; there is no startup floor for it.
7. **Reward** = the selected transform of the speedup (``raw``, ``log``, ``clipped``, ``pie_floor``,
   ``opt_indicator``; :func:`arbiter.pipelines.pie_speedup.make_transform`).
8. **Headroom**: with instructions, ``startup_floor`` (instructions of ``int main() {}`` under the same toolchain,
   :func:`arbiter.timing.compare.startup_floor`) and ``ceiling_speedup`` = mean per-case source instructions /
   floor, the card's ``ceiling_speedup`` ("Mean per-case src ticks / startup floor (192M ticks)") in instruction
   units; ``low_headroom`` = ceiling < 1.5 (card, ``flag_low_headroom``).

Rewards are never silently 0: ``DATASET_DEFECT`` (the row's source or target fails its tests), ``INVALID_TASK``
(the row/tests are otherwise unusable) and ``SANDBOX_ERROR`` (our fault,
after the judge's and the timing module's retries) return ``reward=None`` (DESIGN.md: "SANDBOX_ERROR is never
turned into reward 0 silently"; "zero tests is INVALID_TASK, never a pass"). An RL loop skips those samples.

:func:`run_reward_batch` (with :class:`RowIndex`, :func:`iter_candidates`, :func:`score_candidates`) is the batch
form behind ``arbiter pie reward``: resumable JSONL, one record per candidate, our errors kept apart for a rerun. Measured programs must be single-process (valgrind counting refuses ``fork``/``execve``); PIE/CodeNet
programs are.
"""

from __future__ import annotations

import json
import math
import os
import random
import re
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

from arbiter.checkers.compare import check_output
from arbiter.checkers.spec import CheckerSpec
from arbiter.datasets.pie_rows import (
    PieBysrcRow,
    PiePair,
    PieRow,
    PieRowError,
    RowError,
    decode_case_ids,
    iter_jsonl_lines,
    iter_raw_rows,
    parse_pie_pair,
    parse_row,
)
from arbiter.judge.encodings.pie import load_pie_tests, open_pie_archive
from arbiter.judge.judge import judge
from arbiter.judge.task import CompileSpec, Task
from arbiter.judge.testsuite import InvalidTestSuite, StdioCase, TestSuite
from arbiter.judge.verdict import CaseResult, Outcome, Verdict
from arbiter.pipelines.pie_speedup import LOW_HEADROOM_THRESHOLD, make_transform, select_cases
from arbiter.pipelines.outputs import OutputDirError, ensure_out_dir, holds_out_dirs
from arbiter.sandbox.limits import Limits
from arbiter.timing.count_cache import CountCache
from arbiter.timing.count_cache import sha256_hex as _sha

__all__ = [
    "DATASET_DEFECT",
    "DEFAULT_LIMITS",
    "CandidatesInputError",
    "ConfigMismatch",
    "OutputDirError",
    "PieRewardResult",
    "PieSource",
    "RowIndex",
    "SrcCountCache",
    "UNMEASURABLE",
    "UNMEASURABLE_STATUSES",
    "as_source",
    "bad_apple_limit",
    "case_number",
    "check_candidates_usable",
    "check_config",
    "check_reward_options",
    "check_tests_source",
    "costliest_cases",
    "ensure_out_dir",
    "iter_candidates",
    "pie_reward",
    "reward_config",
    "run_reward_batch",
    "sample_rng",
    "score_candidates",
    "speedup_stats",
    "summarize_rewards",
]

#: Native per-case limits of the correctness runs: PIE's harness runs the native binary with a 10 s timeout before
#: timing it (reference/pie.md §1, LearningOpt/pie ``gem5/benchmarking.py``). Valgrind runs scale these
#: (:func:`arbiter.timing.instructions.valgrind_limits`).
DEFAULT_LIMITS = Limits(cpu_seconds=10.0)
#: The most timed (or warm-up) rounds a batch accepts per case and program for the wall method: PIE's harness
#: uses 25 (reference/pie.md); beyond a thousand a run is a typo, not a measurement plan.
MAX_REPEATS = 1000
#: Source verdicts that mean "correct but too slow/too big": dropped like the card's wall filter, not defects.
RESOURCE_OUTCOMES = frozenset({Outcome.TLE, Outcome.MLE})
#: The directory of the on-disk source-count cache under the cache root (key versions:
#: :data:`arbiter.timing.count_cache.COUNT_KEY_VERSION`).
SRC_CACHE_SUBDIR = "pie_src_counts"

Method = Literal["instructions", "wall"]


def bad_apple_limit(n_cases: int) -> float:
    """The card's bad-apple bound for ``n_cases`` cases: ``max(5, 5 % of n_cases)``; a program failing MORE cases
    than this is "treated as wrong/mislabeled" (card, "Filtering"). That is the card's screen before release;
    :func:`pie_reward` checks rows that already passed it, so any wrong result of a row's program there is a
    :data:`DATASET_DEFECT`."""
    return max(5.0, 0.05 * n_cases)


def case_number(name: str) -> int | None:
    """The card's case index of a case name: ``input.N`` or ``N`` → ``N``; other names → ``None``."""
    text = name[len("input."):] if name.startswith("input.") else name
    return int(text) if text.isdigit() else None


# ------------------------------------------------------------------------------------------------------- rows


@dataclass(frozen=True)
class PieSource:
    """The part of a PIE row the re-timing reward uses.

    ``problem_id``/``src_id`` name the row; ``src_code`` is the C++ source program; ``usable_case_ids`` the card's
    usable case indices (``None`` for rows without a case manifest: every test of the problem is a candidate case);
    ``tgt_id``/``dataset_speedup`` are carried for reports only (never used in the reward); ``tgt_code`` (the
    row's fast program, ``None`` when the row has none) is only checked for correctness (:func:`pie_reward` step 4).
    """

    problem_id: str
    src_id: str
    src_code: str
    usable_case_ids: tuple[int, ...] | None = None
    tgt_id: str | None = None
    dataset_speedup: float | None = None
    tgt_code: str | None = None

    def label(self) -> str:
        """``problem_id/src_id`` (``/tgt_id`` when known), for messages and keys."""
        return f"{self.problem_id}/{self.src_id}" + (f"/{self.tgt_id}" if self.tgt_id else "")


def as_source(row: Any) -> PieSource:
    """A :class:`PieSource` from ``row``.

    Accepts a :class:`PieSource`; a :class:`~arbiter.datasets.pie_rows.PiePair`; a
    :class:`~arbiter.datasets.pie_rows.PieRow` (gem5 pairs: ``usable_case_ids``, ``our_speedup_usable``) or
    :class:`~arbiter.datasets.pie_rows.PieBysrcRow`; or a mapping: a gem5 row (has ``gem5_src_per_tc_ticks``;
    pairs if it has ``tgt_id``, else bysrc), a PIE release row (``src_id, tgt_id, problem_id, speedup, src_code,
    tgt_code``), or a minimal ``{problem_id, src_id, src_code[, usable_case_ids]}``. Raises
    :class:`~arbiter.datasets.pie_rows.PieRowError` (a ``ValueError``) naming the row and column for a bad
    mapping, ``TypeError`` for anything else.
    """
    if isinstance(row, PieSource):
        return row
    if isinstance(row, PiePair):
        ids = tuple(row.usable_case_ids) if row.usable_case_ids is not None else None
        return PieSource(row.problem_id, row.src_id, row.src_code, ids, row.tgt_id, row.speedup, row.tgt_code)
    if isinstance(row, PieRow):
        return PieSource(row.problem_id, row.src_id, row.src_code, tuple(row.usable_case_ids), row.tgt_id,
                         row.our_speedup_usable, row.tgt_code)
    if isinstance(row, PieBysrcRow):
        return PieSource(row.problem_id, row.src_id, row.src_code, tuple(row.usable_case_ids))
    if isinstance(row, Mapping):
        if "gem5_src_per_tc_ticks" in row:
            return as_source(parse_row(row, kind="pairs" if "tgt_id" in row else "bysrc"))
        if "tgt_code" in row and "speedup" in row:
            return as_source(parse_pie_pair(row))
        return _minimal_source(row)
    raise TypeError(f"cannot take a PIE source program from a {type(row).__name__}")


def _minimal_source(row: Mapping[str, Any]) -> PieSource:
    issues: list[tuple[str, str]] = []
    vals: dict[str, str] = {}
    for col in ("problem_id", "src_id", "src_code"):
        v = row.get(col)
        if not isinstance(v, str) or not v.strip():
            issues.append((col, "is missing" if v is None else "must be a non-empty string"))
        else:
            vals[col] = v
    usable = None
    if row.get("usable_case_ids") is not None:
        try:
            usable = tuple(decode_case_ids(row["usable_case_ids"]))
            if not usable:
                issues.append(("usable_case_ids", "is empty: no case to time"))
        except ValueError as e:
            issues.append(("usable_case_ids", str(e)))
    if issues:
        pid, sid = row.get("problem_id"), row.get("src_id")
        raise PieRowError(RowError(None, None if pid is None else str(pid), None if sid is None else str(sid),
                                   tuple(issues)))
    tgt_code = row.get("tgt_code")
    return PieSource(vals["problem_id"], vals["src_id"], vals["src_code"], usable,
                     str(row["tgt_id"]) if row.get("tgt_id") is not None else None,
                     tgt_code=tgt_code if isinstance(tgt_code, str) and tgt_code.strip() else None)


# ------------------------------------------------------------------------------------------------------- result


@dataclass
class PieRewardResult:
    """The reward of one candidate (see the module docstring for every rule).

    - ``outcome``: ``"AC"`` when the candidate was correct and measured; its verdict (``WA``/``TLE``/``MLE``/``RE``/
      ``OLE``/``CE``) when it failed (then ``reward`` is the transform's failure reward, ``speedup`` None);
      ``"UNMEASURABLE"`` when it was correct but creates processes or threads, so its cost cannot be measured
      (failure reward, speedup None; module docstring step 6);
      ``"DATASET_DEFECT"`` when the row's source or target fails the row's own tests (``dataset_defects`` says
      which; module docstring step 4), ``"INVALID_TASK"`` (row/tests otherwise unusable) or ``"SANDBOX_ERROR"``
      (ours), all three with ``reward`` None.
    - ``reward``: the transform of ``speedup``; ``speedup``: ``src_total / candidate_total`` (dimensionless, > 1 =
      candidate faster). ``transform`` / ``transform_params``: which transform.
    - ``method``: the method that produced the figures (``instructions`` | ``wall``; the requested one when nothing
      was measured); ``unit``: ``instructions`` | ``seconds`` (wall: the CPU clock); ``requested_method``: the
      method asked for; ``fallback_reason``: why ``method`` differs from it (``None`` when it does not; step 6,
      "Meter fallback").
    - ``cases``: the case names the speedup is over (after K sampling and drops); ``per_case``:
      ``[{case, src, candidate, speedup}]`` in ``unit``; ``src_total`` / ``candidate_total``; ``largest_speedup``:
      the ratio over the source's costliest 20 % of cases (:mod:`arbiter.timing.compare`).
    - ``src_dropped``: ``[{case, outcome, detail}]`` cases dropped because the source was too slow on them (step
      4); ``n_pool``: how many cases the row's programs were checked on; ``dataset_defects``: ``[{program, id,
      case, outcome, detail}]``, the failures of the row's own programs (``program`` is ``source`` or ``target``;
      ``case`` None for a compile error) when ``outcome`` is ``DATASET_DEFECT``, else empty.
    - ``fingerprint`` / ``toolchain``: the toolchain both programs were built with; ``meter``: what else the
      figures depend on (valgrind version and CPU, or the wall schedule).
    - ``startup_floor`` (instructions of an empty program, same toolchain), ``ceiling_speedup`` (mean per-case src
      instructions / floor), ``low_headroom`` (ceiling < 1.5); instructions only.
    - ``src_cache_hits``: source cases whose count came from the cache; ``verdict``: the candidate's correctness
      verdict (``Verdict.to_dict()``; None when the candidate was not judged); ``reason``: one line a human can
      act on; ``seconds``: wall seconds spent; ``comparison``: the timing module's record (``Comparison.to_dict()``
      without the run order), when measured.
    """

    outcome: str
    reward: float | None
    speedup: float | None
    reason: str
    problem_id: str = ""
    src_id: str = ""
    tgt_id: str | None = None
    transform: str = "raw"
    transform_params: dict[str, float] = field(default_factory=dict)
    method: str = "instructions"
    unit: str = "instructions"
    requested_method: str = "instructions"
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


# ------------------------------------------------------------------------------------------------------- caches


class SrcCountCache(CountCache):
    """Per-case instruction counts of source programs, so many candidates for one source measure it once: an
    :class:`arbiter.timing.count_cache.CountCache` that also remembers failed source runs.

    Keys: :func:`arbiter.timing.count_cache.count_key` as :func:`arbiter.timing.compare.compare` computes them for
    its baseline (executable, toolchain fingerprint, case input and expected output, the valgrind meter and
    limits), with the checker and every accepted output as the output check (:func:`pie_reward`) — at case
    granularity, so two candidates sampling overlapping cases share counts.

    Successful counts (instructions, int > 0) are kept in memory and, when ``directory`` is given, as one small
    JSON file per key (written atomically; unreadable files are ignored). Failed source runs are remembered in
    memory only (a TLE is not re-run for every candidate in one process; ``sandbox_error`` never). Thread-safe;
    single flight per source executable (:meth:`~arbiter.timing.count_cache.CountCache.flight`).
    """

    def __init__(self, directory: str | os.PathLike | None = None):
        super().__init__(directory, remember_failures=True)

    @classmethod
    def default(cls) -> "SrcCountCache":
        """The process-wide cache, on disk under ``<cache root>/pie_src_counts`` (``$ARBITER_CACHE_DIR``, default
        ``~/.cache/arbiter``, as the compile cache)."""
        return cls.shared(subdir=SRC_CACHE_SUBDIR)  # type: ignore[return-value]


# Native verdicts of a row's programs per (problem, program, fingerprint, checker, limits, cases):
# {case name: (outcome, detail)}.
_SRC_CHECKS: dict[str, dict[str, tuple[str, str]]] = {}
_SRC_CHECKS_LOCK = threading.Lock()
_SRC_CHECKS_MAX = 4096


# ------------------------------------------------------------------------------------------------------- helpers


def _load_suite(tests: Any, problem_id: str) -> TestSuite:
    if isinstance(tests, TestSuite):
        return tests
    if isinstance(tests, (str, os.PathLike)):
        return load_pie_tests(tests, problem_id)
    if isinstance(tests, Mapping):
        if problem_id not in tests:
            raise InvalidTestSuite(f"row {problem_id!r}: tests: no suite for this problem")
        return tests[problem_id]
    if callable(tests):
        return tests(problem_id)
    raise TypeError(f"tests must be a PIE folder/archive path, a TestSuite, a mapping or a callable, "
                    f"got {type(tests).__name__}")


def _stdio_cases(suite: TestSuite, label: str) -> list[StdioCase]:
    cases = list(suite)
    if not cases:
        raise InvalidTestSuite(f"row {label!r}: tests: zero test cases; a suite without tests is never scored")
    bad = [c.name for c in cases if not isinstance(c, StdioCase)]
    if bad:
        raise InvalidTestSuite(f"row {label!r}: tests: case {bad[0]!r} is a function call; PIE programs use stdin")
    return cases


def _by_card_index(cases: list[StdioCase], ids: Sequence[int], label: str) -> dict[int, StdioCase]:
    index: dict[int, StdioCase] = {}
    for c in cases:
        n = case_number(c.name)
        if n is not None:
            index.setdefault(n, c)
    missing = [i for i in ids if i not in index]
    if missing:
        raise InvalidTestSuite(f"row {label!r}: usable_case_ids: case(s) {missing[:10]} have no test file "
                               f"(input.N.txt) among the {len(cases)} cases found")
    return index


def _pie_same_output(checker: CheckerSpec, answers: Mapping[bytes, tuple[bytes, ...]]) -> Callable[[bytes, bytes], bool]:
    """``same_output(actual, expected)`` for the timing module: the task's checker against every accepted answer
    of the case whose first answer is ``expected`` (the timing module's cases carry one expected output)."""

    def same(actual: bytes, expected: bytes) -> bool:
        return check_output(checker, actual, answers.get(expected, (expected,))).ok

    return same


def _limits_key(lim: Limits) -> list[Any]:
    return [lim.cpu_seconds, lim.wall_seconds, lim.memory_bytes, lim.output_bytes, lim.stack_bytes]


def _checker_key(chk: CheckerSpec) -> str:
    return f"{chk.name}:{chk.case_insensitive}:{chk.abs_tol}:{chk.rel_tol}:{_sha(chk.program)[:16]}"


def _case_key(c: StdioCase) -> list[str]:
    return [c.name, _sha(c.stdin), *(_sha(e) for e in c.expected)]


#: Outcome of a correct candidate whose cost cannot be measured: it creates processes or threads, which measured
#: runs refuse (:mod:`arbiter.timing.instructions`, ``creates_processes``). Not a verdict of the judge: the program
#: passed the tests; it gets the transform's failure reward and no speedup.
UNMEASURABLE = "UNMEASURABLE"
#: Measurement statuses of a correct candidate that give :data:`UNMEASURABLE`: it creates processes or threads,
#: or it makes valgrind client requests (which would run its code outside the count; the meter refuses them).
UNMEASURABLE_STATUSES = frozenset({"creates_processes", "client_request"})
#: Outcome of a row whose own source or target program fails the row's tests (wrong result or no compile): the
#: dataset is at fault, not the candidate (module docstring step 4). Not a verdict of the judge; ``reward`` None.
DATASET_DEFECT = "DATASET_DEFECT"

_MEASURE_OUTCOME = {
    "time_limit": Outcome.TLE,
    "memory_limit": Outcome.MLE,
    "runtime_error": Outcome.RE,
    "output_limit": Outcome.OLE,
    "wrong_output": Outcome.WA,
    "exec_refused": Outcome.RE,
    "no_count": Outcome.SANDBOX_ERROR,
    "sandbox_error": Outcome.SANDBOX_ERROR,
    "unsupported_by_meter": Outcome.SANDBOX_ERROR,  # the meter's limit, never the program's (normally: fallback)
}


def _src_check(src: PieSource, src_code_sha: str, fingerprint: str, pool: list[StdioCase], task: Task
               ) -> tuple[dict[str, tuple[str, str]] | None, Verdict | None]:
    """A row program's native outcome on each pool case (cached), or ``(None, verdict)`` on CE/SANDBOX_ERROR.
    ``src_code_sha``: the sha256 of the program judged (the source's or the target's code)."""
    key = _sha(json.dumps([src.problem_id, src_code_sha, fingerprint, _checker_key(task.checker),
                           _limits_key(task.limits), [_case_key(c) for c in pool], task.compile.command or ""],
                          separators=(",", ":")))
    with _SRC_CHECKS_LOCK:
        hit = _SRC_CHECKS.get(key)
    if hit is not None:
        return hit, None
    v = judge(task)
    if v.outcome in (Outcome.SANDBOX_ERROR, Outcome.CE, Outcome.INVALID_TASK) or len(v.cases) != len(pool):
        return None, v
    out = {r.name: (r.outcome.value, (r.diff or r.detail)[:200]) for r in v.cases}
    with _SRC_CHECKS_LOCK:
        if len(_SRC_CHECKS) >= _SRC_CHECKS_MAX:
            _SRC_CHECKS.pop(next(iter(_SRC_CHECKS)))
        _SRC_CHECKS[key] = out
    return out, None


def _defect_summary(defects: Sequence[Mapping[str, Any]], shown: int = 3) -> str:
    """One line naming which row program failed which cases with which verdict, e.g. ``the target (s065571920)
    fails 1 of the row's cases: input.3 WA``."""
    parts = []
    for program in ("source", "target"):
        mine = [d for d in defects if d["program"] == program]
        if not mine:
            continue
        who = f"the {program} ({mine[0]['id']})" if mine[0].get("id") else f"the {program}"
        if mine[0]["case"] is None:
            parts.append(f"{who} does not compile")
            continue
        cases = ", ".join(f"{d['case']} {d['outcome']}" for d in mine[:shown])
        cases += " ..." if len(mine) > shown else ""
        parts.append(f"{who} fails {len(mine)} of the row's cases: {cases}")
    return "; ".join(parts)


def costliest_cases(src_cases: Sequence[CaseResult], n_largest: int, n_smallest: int = 0) -> list[str]:
    """Names of the source's ``n_largest`` costliest cases plus its ``n_smallest`` cheapest ones, in suite order.

    ``src_cases``: the source's native :class:`~arbiter.judge.verdict.CaseResult` per case (its correctness pass:
    ``Verdict.cases``); cost = ``cpu_seconds``, ties by suite order (both ends). Only ``AC`` cases are eligible. Ranked by the
    source alone, so a candidate cannot choose which cases count (as :func:`arbiter.timing.compare.largest_cases`).
    Used to bound valgrind's cost on suites with heavy inputs (instruction counting is 20-50x slower than native):
    the costliest cases carry the speedup, the cheap ones keep the start-up-dominated regime in view. Raises
    ``ValueError`` for negative counts.
    """
    if n_largest < 0 or n_smallest < 0:
        raise ValueError("n_largest and n_smallest must be >= 0")
    ok = [(i, c) for i, c in enumerate(src_cases) if c.outcome is Outcome.AC]
    by_cost = sorted(ok, key=lambda ic: (-ic[1].cpu_seconds, ic[0]))
    chosen = {i for i, _ in by_cost[:n_largest]}
    for i, _ in sorted(ok, key=lambda ic: (ic[1].cpu_seconds, ic[0])):  # cheapest first, ties by suite order
        if len(chosen) >= min(len(ok), n_largest + n_smallest):
            break
        chosen.add(i)
    return [c.name for i, c in ok if i in chosen]


# ------------------------------------------------------------------------------------------------------- reward


def pie_reward(
    row: Any,
    candidate: str,
    tests: Any,
    *,
    transform: str = "raw",
    transform_params: Mapping[str, float] | None = None,
    method: Method = "instructions",
    k: int = -1,
    rng: random.Random | None = None,
    checker: str | CheckerSpec = "pie",
    compile_spec: CompileSpec | None = None,
    limits: Limits | None = None,
    only_cases: Iterable[str] | None = None,
    repeats: int = 5,
    warmup: int = 1,
    cache: CountCache | None | Literal[False] = None,
    with_floor: bool = True,
) -> PieRewardResult:
    """The correctness-gated, re-timed speedup reward of ``candidate`` against the row's source program.

    - ``row``: anything :func:`as_source` accepts (PiePair, PieRow, PieBysrcRow, mapping, :class:`PieSource`).
    - ``candidate``: the candidate's C++ source text.
    - ``tests``: a PIE/CodeNet folder or ``.tar.gz`` (``<problem_id>/input.N.txt``), a ``TestSuite`` for this
      problem, a mapping ``problem_id -> TestSuite`` or a callable ``problem_id -> TestSuite``.
    - ``transform`` / ``transform_params``: :func:`arbiter.pipelines.pie_speedup.make_transform` (``raw``,
      ``log``, ``clipped``, ``pie_floor``, ``opt_indicator``).
    - ``method``: ``"instructions"`` (valgrind counts; default) or ``"wall"`` (interleaved repeats, CPU clock;
      ``repeats``/``warmup`` rounds).
    - ``k`` / ``rng``: the card's K (``-1`` = all cases; ``k > 0`` sampled with ``rng``, clamped); ``k == 0``
      raises. ``only_cases``: restrict the pool to these case names first (e.g. :func:`costliest_cases`).
    - ``checker``: ``"pie"`` by default (the card's comparator); ``"tokens"`` for Codeforces-style rows.
    - ``compile_spec``: default :class:`~arbiter.languages.cpp.CompileSpec` (``g++ -std=gnu++17 -O2``, the card's
      build, plus ``-DONLINE_JUDGE``); both programs use it. ``limits``: native per-case limits (default
      :data:`DEFAULT_LIMITS`, 10 s CPU).
    - ``cache``: the source-count cache (default :meth:`SrcCountCache.default`, on disk; any
      :class:`~arbiter.timing.count_cache.CountCache`); ``False`` disables it (the source is measured afresh).
    - ``with_floor``: also report the startup floor and ceiling (instructions only; one cached valgrind run).

    Returns a :class:`PieRewardResult` (``reward`` None for INVALID_TASK / SANDBOX_ERROR). Raises ``ValueError``
    for a bad transform/method/K (or a sample without ``rng``), ``TypeError``/``PieRowError`` for an unusable
    ``row`` object, :class:`~arbiter.languages.cpp.CompileCommandError` for an unusable ``compile_spec``, and
    :class:`~arbiter.timing.instructions.ValgrindUnavailable` when instructions are asked for without valgrind.
    """
    started = time.monotonic()
    params = dict(transform_params or {})
    tf = make_transform(transform, **params)
    if method not in ("instructions", "wall"):
        raise ValueError(f"method must be 'instructions' or 'wall', got {method!r}")
    if isinstance(k, bool) or not isinstance(k, int) or k == 0:
        raise ValueError(f"K must be a non-zero int (-1 = all cases), got {k!r}")
    if not isinstance(candidate, str):
        raise TypeError(f"candidate must be C++ source text, got {type(candidate).__name__}")
    src = as_source(row)
    spec = compile_spec or CompileSpec()
    lim = limits or DEFAULT_LIMITS
    chk = checker if isinstance(checker, CheckerSpec) else CheckerSpec(checker)
    if cache is None:
        cache = SrcCountCache.default()
    res = PieRewardResult(outcome="", reward=None, speedup=None, reason="", problem_id=src.problem_id,
                          src_id=src.src_id, tgt_id=src.tgt_id, transform=tf.name, transform_params=dict(tf.params),
                          method=method, unit="instructions" if method == "instructions" else "seconds",
                          requested_method=method, k=k)

    def done(outcome: Outcome | str, reason: str, speedup: float | None = None, scored: bool = False
             ) -> PieRewardResult:
        res.outcome = outcome.value if isinstance(outcome, Outcome) else outcome
        res.reason = reason
        res.speedup = speedup
        res.reward = tf(speedup) if scored else None
        res.seconds = time.monotonic() - started
        return res

    label = src.label()
    # 2. tests, 3. pool
    try:
        cases = _stdio_cases(_load_suite(tests, src.problem_id), label)
        if only_cases is not None:
            wanted = set(only_cases)
            unknown = wanted - {c.name for c in cases}
            if unknown:
                raise InvalidTestSuite(f"row {label!r}: only_cases: unknown case(s) {sorted(unknown)[:10]}")
            cases = [c for c in cases if c.name in wanted]
        if src.usable_case_ids is not None:
            index = _by_card_index(cases, src.usable_case_ids, label)
            usable = [i for i in src.usable_case_ids if i in index]
            if only_cases is not None:
                usable = [i for i in usable if index[i].name in wanted]
            if not usable:
                raise InvalidTestSuite(f"row {label!r}: usable_case_ids: no usable case left to time")
            pool = [index[i] for i in select_cases(usable, k, rng, row=label)]
        else:
            pool = cases
        if not pool:
            raise InvalidTestSuite(f"row {label!r}: tests: no case selected")
    except InvalidTestSuite as e:
        return done(Outcome.INVALID_TASK, str(e))

    # 4. source: compile, then check natively on the pool
    from arbiter.languages.cpp import ToolchainUnavailable, compile_cpp
    from arbiter.sandbox.sandbox import SandboxError

    try:
        src_comp = compile_cpp(src.src_code, spec)
    except (SandboxError, ToolchainUnavailable) as e:
        return done(Outcome.SANDBOX_ERROR, f"compiling the source: {e}")
    res.fingerprint = src_comp.toolchain.fingerprint
    res.toolchain = src_comp.toolchain.to_dict()
    if not src_comp.ok:
        res.dataset_defects = [{"program": "source", "id": src.src_id, "case": None, "outcome": Outcome.CE.value,
                                "detail": src_comp.message[:300]}]
        return done(DATASET_DEFECT, f"row {label}: dataset defect: the source ({src.src_id}) does not compile: "
                                    f"{src_comp.message[:300]}")
    res.n_pool = len(pool)
    src_task = Task(language="cpp", source=src.src_code, suite=TestSuite(tuple(pool), origin="pie"), limits=lim,
                    checker=chk, scoring="fraction", run_all=True, compile=spec, task_id=f"{label}:src")
    src_sha = _sha(src.src_code)
    outcomes, bad_verdict = _src_check(src, src_sha, res.fingerprint, pool, src_task)
    if outcomes is None:
        assert bad_verdict is not None
        kind = Outcome.SANDBOX_ERROR if bad_verdict.outcome is Outcome.SANDBOX_ERROR else Outcome.INVALID_TASK
        return done(kind, f"row {label}: judging the source: {bad_verdict.outcome.value}: {bad_verdict.reason}")
    kept: list[StdioCase] = []
    for c in pool:
        oc, detail = outcomes[c.name]
        if oc == Outcome.AC.value:
            kept.append(c)
        elif Outcome(oc) in RESOURCE_OUTCOMES:
            res.src_dropped.append({"case": c.name, "outcome": oc, "detail": detail})
        else:
            res.dataset_defects.append({"program": "source", "id": src.src_id, "case": c.name, "outcome": oc,
                                        "detail": detail})
    # the target: never timed, but a row whose fast program fails its own tests is as broken as a wrong source
    if src.tgt_code is not None:
        try:
            tgt_comp = compile_cpp(src.tgt_code, spec)
        except (SandboxError, ToolchainUnavailable) as e:
            return done(Outcome.SANDBOX_ERROR, f"compiling the target: {e}")
        if not tgt_comp.ok:
            res.dataset_defects.append({"program": "target", "id": src.tgt_id, "case": None,
                                        "outcome": Outcome.CE.value, "detail": tgt_comp.message[:300]})
        else:
            tgt_task = Task(language="cpp", source=src.tgt_code, suite=TestSuite(tuple(pool), origin="pie"),
                            limits=lim, checker=chk, scoring="fraction", run_all=True, compile=spec,
                            task_id=f"{label}:tgt")
            tgt_out, bad_verdict = _src_check(src, _sha(src.tgt_code), res.fingerprint, pool, tgt_task)
            if tgt_out is None:
                assert bad_verdict is not None
                ours = bad_verdict.outcome is Outcome.SANDBOX_ERROR
                kind = Outcome.SANDBOX_ERROR if ours else Outcome.INVALID_TASK
                return done(kind, f"row {label}: judging the target: {bad_verdict.outcome.value}: "
                                  f"{bad_verdict.reason}")
            for c in pool:
                oc, detail = tgt_out[c.name]
                if oc != Outcome.AC.value and Outcome(oc) not in RESOURCE_OUTCOMES:
                    res.dataset_defects.append({"program": "target", "id": src.tgt_id, "case": c.name,
                                                "outcome": oc, "detail": detail})
    if res.dataset_defects:
        return done(DATASET_DEFECT, f"row {label}: dataset defect: {_defect_summary(res.dataset_defects)}")
    if not kept:
        return done(Outcome.INVALID_TASK, f"row {label}: the source passes none of the {len(pool)} cases "
                                          f"({', '.join(sorted({d['outcome'] for d in res.src_dropped}))})")
    used = select_cases(kept, k, rng, row=label) if src.usable_case_ids is None else kept
    res.cases = [c.name for c in used]

    # 5. correctness first
    used_suite = TestSuite(tuple(used), origin="pie")
    verdict = judge(Task(language="cpp", source=candidate, suite=used_suite, limits=lim, checker=chk,
                         scoring="all_or_nothing", compile=spec, task_id=f"{label}:candidate"))
    res.verdict = verdict.to_dict()
    if verdict.outcome is Outcome.SANDBOX_ERROR:
        return done(Outcome.SANDBOX_ERROR, f"judging the candidate: {verdict.reason}")
    if verdict.outcome is Outcome.INVALID_TASK:
        return done(Outcome.INVALID_TASK, f"judging the candidate: {verdict.reason}")
    if verdict.outcome is not Outcome.AC:
        return done(verdict.outcome, f"candidate {verdict.outcome.value}: {verdict.reason}", None, scored=True)

    # 6. measure
    try:
        cand_comp = compile_cpp(candidate, spec)
    except (SandboxError, ToolchainUnavailable) as e:
        return done(Outcome.SANDBOX_ERROR, f"compiling the candidate for measurement: {e}")
    if not cand_comp.ok:  # compiled a moment ago for the judge; only a vanished cache entry gets here
        return done(Outcome.SANDBOX_ERROR, f"the candidate no longer compiles: {cand_comp.message[:200]}")
    from arbiter.languages.toolchain import ToolchainMismatch
    from arbiter.timing.compare import Program, compare

    answers = {c.expected[0]: c.expected for c in used}
    same = _pie_same_output(chk, answers)
    timing_cases = [(c.name, c.stdin, c.expected[0]) for c in used]
    a = Program(src_comp.binary, src_comp.toolchain, "src")
    b = Program(cand_comp.binary, cand_comp.toolchain, "candidate")
    try:
        if method == "instructions":
            checks = {c.name: ":".join([_checker_key(chk), *(_sha(e) for e in c.expected)]) for c in used}
            comp = compare(a, b, timing_cases, "instructions", limits=lim, same_output=same, output_check=checks,
                           baseline_cache=cache if cache is not False else CountCache.disabled(),
                           on_unsupported="wall", repeats=repeats, warmup=warmup)
            if comp.method == "instructions":
                # this reward's record: hits as src_cache_hits, no leased core, meter limits without the stack
                res.src_cache_hits = comp.extra.pop("baseline_cache_hits")
                comp.meter.pop("core", None)
                comp.meter["limits"] = {k: v for k, v in comp.meter["limits"].items() if k != "stack_bytes"}
                comp.meter["src_cache_hits"] = res.src_cache_hits
            else:  # valgrind could not run one of the programs: measured with the wall method instead
                res.method, res.unit, res.fallback_reason = comp.method, comp.unit, comp.fallback_reason
        else:
            comp = compare(a, b, timing_cases, "wall", limits=lim, same_output=same, repeats=repeats, warmup=warmup)
    except ToolchainMismatch as e:
        return done(Outcome.SANDBOX_ERROR, f"toolchains differ between source and candidate: {e}")
    except SandboxError as e:
        return done(Outcome.SANDBOX_ERROR, f"measurement sandbox: {e}")
    cd = comp.to_dict()
    cd.pop("order", None)
    res.comparison = cd
    res.meter = comp.meter
    res.per_case = [{"case": c.case, "src": c.a, "candidate": c.b, "speedup": c.speedup} for c in comp.cases]
    if comp.failures:
        f = comp.failures[0]
        unmeasurable = f["status"] in UNMEASURABLE_STATUSES
        oc = _MEASURE_OUTCOME.get(f["status"], Outcome.SANDBOX_ERROR)
        if oc is Outcome.SANDBOX_ERROR and not unmeasurable:
            return done(Outcome.SANDBOX_ERROR, f"measurement of {f['program']} on case {f['case']}: "
                                               f"{f['status']} {f.get('detail', '')}".strip())
        if f["program"] == "a":
            return done(Outcome.INVALID_TASK, f"row {label}: the source failed under measurement on case "
                                              f"{f['case']}: {f['status']} {f.get('detail', '')}".strip())
        if unmeasurable:
            return done(UNMEASURABLE, f"candidate on case {f['case']}: {f.get('detail', '')}".strip(), None,
                        scored=True)
        return done(oc, f"candidate failed under measurement on case {f['case']}: {f['status']} "
                        f"{f.get('detail', '')}".strip(), None, scored=True)
    if comp.speedup is None or not (math.isfinite(comp.speedup) and comp.speedup > 0):
        return done(Outcome.SANDBOX_ERROR, f"measurement gave no speedup (totals {comp.a_total} / {comp.b_total})")
    res.src_total, res.candidate_total = comp.a_total, comp.b_total
    res.largest_speedup = comp.largest_speedup

    # 8. headroom
    if res.method == "instructions" and with_floor:
        from arbiter.timing.compare import startup_floor

        try:
            res.startup_floor = startup_floor(spec)
        except RuntimeError:
            res.startup_floor = None
        if res.startup_floor:
            res.ceiling_speedup = comp.ceiling_speedup(res.startup_floor)
            if res.ceiling_speedup is not None:
                res.low_headroom = res.ceiling_speedup < LOW_HEADROOM_THRESHOLD
    how = f" ({res.unit}; {res.method} fallback: {res.fallback_reason})" if res.fallback_reason else f" ({res.unit})"
    return done(Outcome.AC, f"correct on {len(used)} case(s); speedup {comp.speedup:.4g}{how}",
                comp.speedup, scored=True)


# ------------------------------------------------------------------------------------------------------- batch


class RowIndex:
    """The rows of a PIE file, looked up by a candidate record's ``src_id`` (+ optional ``problem_id``/``tgt_id``)
    or ``row`` key (``problem_id/src_id[/tgt_id]``).

    Built from anything :func:`arbiter.datasets.pie_rows.iter_raw_rows` reads (Parquet, JSONL, HF datasets);
    each raw row is turned into a :class:`PieSource` with :func:`as_source`. Bad rows are kept in ``errors``
    (``RowError`` or message strings) and never stop the load. Several rows may share a ``src_id`` (one source,
    several targets); a lookup by ``src_id`` alone is accepted only when those rows agree on problem, code and
    usable cases, otherwise it must name ``tgt_id``.
    """

    def __init__(self, source: Any, *, split: str | None = None):
        #: the rows source as given (a path for files and folders), for the input identity of a run's config
        self.origin = source
        self.split = split
        self.sources: list[PieSource] = []
        self.errors: list[str] = []
        self._by_src: dict[str, list[int]] = {}
        for i, raw in iter_raw_rows(source, split=split):
            if isinstance(raw, RowError):
                self.errors.append(str(raw))
                continue
            try:
                s = as_source(raw)
            except (PieRowError, TypeError) as e:
                err = getattr(e, "error", None)
                if err is not None:
                    err = RowError(i, err.problem_id, err.src_id, err.issues)
                self.errors.append(str(err) if err is not None else f"row {i}: {e}")
                continue
            self._by_src.setdefault(s.src_id, []).append(len(self.sources))
            self.sources.append(s)

    def __len__(self) -> int:
        return len(self.sources)

    def lookup(self, src_id: str, *, problem_id: str | None = None, tgt_id: str | None = None) -> PieSource:
        """The row for a candidate. Raises ``KeyError`` (unknown) or ``ValueError`` (ambiguous) with a message."""
        found = [self.sources[i] for i in self._by_src.get(src_id, [])]
        if problem_id is not None:
            found = [s for s in found if s.problem_id == problem_id]
        if tgt_id is not None:
            found = [s for s in found if s.tgt_id == tgt_id]
        if not found:
            what = f"src_id {src_id!r}" + (f", problem_id {problem_id!r}" if problem_id else "") + (
                f", tgt_id {tgt_id!r}" if tgt_id else "")
            raise KeyError(f"no row with {what}")
        first = found[0]
        for s in found[1:]:
            if (s.problem_id, s.src_code, s.usable_case_ids) != (first.problem_id, first.src_code,
                                                                 first.usable_case_ids):
                raise ValueError(f"src_id {src_id!r} matches {len(found)} rows that differ in problem, code or "
                                 "usable_case_ids; give tgt_id")
        return first


@dataclass
class CandidateItem:
    """One candidate to score: ``key`` (stable, for resume), ``line`` (1-based in the candidates file), ``index``
    (position in its record's list), ``source`` (the row, or None when it could not be resolved), ``code``, and
    ``error`` (why the record is unusable, or ""); ``not_object``: the line is not a JSON object at all (not
    UTF-8, not JSON, or another JSON value such as a list)."""

    key: str
    line: int
    index: int
    source: PieSource | None
    code: str
    error: str = ""
    record_id: str = ""
    not_object: bool = False


def _read_jsonl_lines(path: str | os.PathLike) -> Iterator[tuple[int, Any]]:
    """``(line, value)`` per non-blank line; a line that is not UTF-8 or not JSON gives ``(line, ValueError)``
    naming the file and the line (:func:`arbiter.datasets.pie_rows.iter_jsonl_lines`), so it becomes one rejected
    record and the batch goes on."""
    name = Path(path).name
    for n, value, problem in iter_jsonl_lines(path):
        yield n, (value if problem is None else ValueError(f"line {n} of {name}: {problem}"))


def iter_candidates(path: str | os.PathLike, rows: RowIndex, *, field_names: Sequence[str] = ("candidates", "code"),
                    skip_precomputed: bool = False) -> Iterator[CandidateItem]:
    """The candidates of a JSONL file, one :class:`CandidateItem` per program.

    Record format (one JSON object per line)::

        {"src_id": "s995406644", "code": "<C++>"}
        {"src_id": "s995406644", "tgt_id": "s525143936", "problem_id": "p02915", "candidates": ["<C++>", ...]}
        {"row": "p02915/s995406644", "id": "my-run-17", "candidates": [...]}

    ``src_id`` (optionally narrowed by ``problem_id``/``tgt_id``) or ``row`` (``problem_id/src_id[/tgt_id]``)
    names the row; ``candidates`` (a list of programs) or ``code`` (one program) holds the code (``field_names``
    gives the accepted fields, first match wins; ``arbiter pie eval`` adds ``generations``, a list too). Types are
    strict: ``code`` must be a string (one program) and every other program field a JSON list of strings; a string
    where a list is expected (``"candidates": "<C++>"``) or a list in ``code`` is bad input naming the line and
    field, never guessed at. Optional ``id`` names
    the record. Stable key: ``<id or problem/src/tgt@line>#<index>:<sha256(code)[:16]>``, so an edited file does not
    reuse stale results. A bad record (a line that is not UTF-8 text or not JSON included: the file and line are
    named) yields one item with ``error`` set (the line and field named) and never stops the batch.
    ``skip_precomputed``: pass over records holding ``runtimes`` and no program field (``arbiter pie
    eval``'s precomputed lines).
    """
    for line, rec in _read_jsonl_lines(path):
        if skip_precomputed and isinstance(rec, dict) and "runtimes" in rec and not any(f in rec for f in field_names):
            continue
        if isinstance(rec, Exception):
            yield CandidateItem(key=f"@{line}#error", line=line, index=0, source=None, code="", error=str(rec),
                                not_object=True)
            continue
        if not isinstance(rec, dict):
            yield CandidateItem(key=f"@{line}#error", line=line, index=0, source=None, code="",
                                error=f"line {line}: expected a JSON object, got {type(rec).__name__}",
                                not_object=True)
            continue
        rid = str(rec["id"]) if rec.get("id") is not None else ""
        src_id, problem_id, tgt_id = rec.get("src_id"), rec.get("problem_id"), rec.get("tgt_id")
        if rec.get("row") is not None:
            parts = str(rec["row"]).split("/")
            if len(parts) in (2, 3) and all(parts):
                problem_id, src_id = parts[0], parts[1]
                tgt_id = parts[2] if len(parts) == 3 else tgt_id
            else:
                src_id = None
        err = ""
        source = None
        if not isinstance(src_id, str) or not src_id:
            err = f"line {line}: field 'src_id' (or 'row' = problem_id/src_id[/tgt_id]) is missing or invalid"
        else:
            try:
                source = rows.lookup(src_id, problem_id=problem_id, tgt_id=tgt_id)
            except (KeyError, ValueError) as e:
                err = f"line {line}: field 'src_id': {e.args[0]}"
        codes: list[Any] | None = None
        fname = next((f for f in field_names if f in rec), None)
        if fname is None:
            err = err or f"line {line}: no program: expected one of the fields {list(field_names)}"
        else:
            val = rec[fname]
            if fname == "code":
                if isinstance(val, str):
                    codes = [val]
                else:
                    err = err or (f"line {line}: field 'code' must be one program (a string), got "
                                  f"{type(val).__name__}; several programs go in a list field "
                                  f"({', '.join(repr(f) for f in field_names if f != 'code')})")
            elif isinstance(val, list):
                codes = val
                if not codes:
                    err = err or f"line {line}: field {fname!r} is an empty list"
            else:
                err = err or (f"line {line}: field {fname!r} must be a list of programs, got {type(val).__name__}"
                              + ("; one program may be given as a string in the field 'code'"
                                 if "code" in field_names else ""))
        base = rid or (f"{source.label()}@{line}" if source else f"{problem_id or '?'}/{src_id or '?'}@{line}")
        if err:
            yield CandidateItem(key=f"{base}#error", line=line, index=0, source=source, code="", error=err,
                                record_id=rid)
            continue
        for i, code in enumerate(codes or []):
            if not isinstance(code, str) or not code.strip():
                yield CandidateItem(key=f"{base}#{i}:error", line=line, index=i, source=source, code="",
                                    error=f"line {line}: field {fname!r}[{i}] is not a non-empty string",
                                    record_id=rid)
                continue
            yield CandidateItem(key=f"{base}#{i}:{_sha(code)[:16]}", line=line, index=i, source=source, code=code,
                                record_id=rid)


def sample_rng(seed: int, source: PieSource) -> random.Random:
    """The K-sampling generator of one source in a batch: seeded by ``seed``, ``problem_id`` and ``src_id``, so
    every candidate of a source is timed on the same cases (they share the source's counts and are comparable, as
    PIE's best@k needs) and a resumed run samples the same cases."""
    return random.Random(f"{seed}:{source.problem_id}:{source.src_id}")


def check_reward_options(reward_kw: Mapping[str, Any], *, need_meter: bool = True) -> None:
    """Validate :func:`pie_reward` keyword options once, before a batch: the transform and its parameters, the
    method, K (-1 or >= 1: a batch is stricter than :func:`pie_reward`, which takes any K < 0 as "all" like the
    card's snippet), ``repeats`` (1 .. :data:`MAX_REPEATS`) and ``warmup`` (0 .. :data:`MAX_REPEATS`; both are used
    by the wall method and by a meter fallback). Raises ``ValueError`` naming the option;
    :class:`~arbiter.timing.instructions.ValgrindUnavailable` when instructions are asked for without valgrind
    (``need_meter=False`` skips that check: options checked before it is known whether anything is measured).
    A ``compile_spec`` whose command :func:`~arbiter.languages.cpp_command.parse_compile_command` refuses (not a
    g++/clang++ command, a flag outside the allowlist, no source file) raises its
    :class:`~arbiter.languages.cpp_command.CompileCommandError` (a ``ValueError``) here, before anything runs,
    instead of making every candidate a SANDBOX_ERROR."""
    make_transform(reward_kw.get("transform", "raw"), **dict(reward_kw.get("transform_params") or {}))
    method = reward_kw.get("method", "instructions")
    if method not in ("instructions", "wall"):
        raise ValueError(f"method must be 'instructions' or 'wall', got {method!r}")
    k = reward_kw.get("k", -1)
    if isinstance(k, bool) or not isinstance(k, int) or k == 0 or k < -1:
        raise ValueError(f"K must be -1 (all cases, the card's K = -1) or a positive number of cases, got {k!r}")
    repeats, warmup = reward_kw.get("repeats", 5), reward_kw.get("warmup", 1)
    if isinstance(repeats, bool) or not isinstance(repeats, int) or not 1 <= repeats <= MAX_REPEATS:
        raise ValueError(f"repeats must be a whole number of timed rounds from 1 to {MAX_REPEATS}, got {repeats!r}")
    if isinstance(warmup, bool) or not isinstance(warmup, int) or not 0 <= warmup <= MAX_REPEATS:
        raise ValueError(f"warmup must be a whole number of dropped rounds from 0 to {MAX_REPEATS}, got {warmup!r}")
    spec = reward_kw.get("compile_spec")
    if spec is not None and spec.command is not None and spec.command.strip():
        from arbiter.languages.cpp_command import parse_compile_command

        parse_compile_command(spec.command, online_judge=spec.online_judge)
    if method == "instructions" and need_meter:
        from arbiter.timing.instructions import find_valgrind

        find_valgrind()


def score_candidates(items: Iterable[CandidateItem], tests: Any, *, on_result: Callable[[CandidateItem, dict], None],
                     seed: int = 0, skip: Callable[[str], bool] = lambda key: False, **reward_kw: Any) -> None:
    """Score each item with :func:`pie_reward` (``reward_kw``: its keyword arguments; ``k`` sampling uses
    :func:`sample_rng`) and call ``on_result(item, record)`` with the JSON record: ``key``, ``line``, ``index``,
    ``id``, ``candidate_sha256`` plus :meth:`PieRewardResult.to_dict`. Items whose ``key`` ``skip`` accepts are
    passed over (resume). An unusable item gives a record with ``outcome`` ``INVALID_TASK`` and its error as
    ``reason``; an unexpected exception for one item gives ``SANDBOX_ERROR`` with the exception named, so one bad
    item never stops the batch (DESIGN.md "Reliability"). Bad arguments (transform, method, K) raise ``ValueError``
    before any item is scored; a missing valgrind raises :class:`~arbiter.timing.instructions.ValgrindUnavailable`."""
    from arbiter.timing.instructions import ValgrindUnavailable

    check_reward_options(reward_kw)
    for item in items:
        if skip(item.key):
            continue
        head = {"key": item.key, "line": item.line, "index": item.index, "id": item.record_id,
                "candidate_sha256": _sha(item.code) if item.code else None}
        method = reward_kw.get("method", "instructions")
        unit = "instructions" if method == "instructions" else "seconds"
        if item.error or item.source is None:
            src = item.source
            rec = PieRewardResult(outcome=Outcome.INVALID_TASK.value, reward=None, speedup=None,
                                  reason=item.error or "no row", problem_id=src.problem_id if src else "",
                                  src_id=src.src_id if src else "", tgt_id=src.tgt_id if src else None,
                                  method=method, unit=unit, requested_method=method,
                                  k=reward_kw.get("k", -1)).to_dict()
        else:
            kw = dict(reward_kw)
            if kw.get("k", -1) > 0 and kw.get("rng") is None:
                kw["rng"] = sample_rng(seed, item.source)
            try:
                rec = pie_reward(item.source, item.code, tests, **kw).to_dict()
            except ValgrindUnavailable:
                raise
            except Exception as e:  # noqa: BLE001 - one item must not stop the batch; reported, never a 0
                rec = PieRewardResult(outcome=Outcome.SANDBOX_ERROR.value, reward=None, speedup=None,
                                      reason=f"{type(e).__name__}: {e}", problem_id=item.source.problem_id,
                                      src_id=item.source.src_id, tgt_id=item.source.tgt_id, method=method,
                                      unit=unit, requested_method=method, k=reward_kw.get("k", -1)).to_dict()
        on_result(item, {**head, **rec})


# ------------------------------------------------------------------------------------------------------- runs


@dataclass
class BatchRun:
    """What :func:`run_reward_batch` did: ``records`` (this candidates file's final records, resumed ones
    included, in file order), ``new`` (scored now), ``resumed`` (already in the output), ``sandbox_errors`` (our
    failures this run: in ``errors.jsonl``, retried by a rerun), ``row_errors`` (rows of the rows file that could
    not be read), ``summary`` (:func:`summarize_rewards`) and ``outputs`` (name -> path)."""

    records: list[dict[str, Any]]
    new: int
    resumed: int
    sandbox_errors: list[dict[str, Any]]
    row_errors: list[str]
    summary: dict[str, Any]
    outputs: dict[str, str]


def _count(items: Iterable[str]) -> dict[str, int]:
    out: dict[str, int] = {}
    for x in items:
        out[x] = out.get(x, 0) + 1
    return out


def _unit_of(method: Any) -> str:
    return "seconds" if method == "wall" else "instructions"


def speedup_stats(speedups: Sequence[float]) -> dict[str, Any]:
    """``{n, mean, geomean, median, min, max}`` of speedups (ratios > 0) of one unit; figures None when empty."""
    import statistics

    xs = [float(x) for x in speedups]
    return {"n": len(xs), "mean": statistics.fmean(xs) if xs else None,
            "geomean": math.exp(statistics.fmean(math.log(x) for x in xs)) if xs else None,
            "median": statistics.median(xs) if xs else None, "min": min(xs) if xs else None,
            "max": max(xs) if xs else None}


def summarize_rewards(records: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Counts and figures over reward records (:meth:`PieRewardResult.to_dict` shape).

    ``n``; ``by_outcome`` (outcome -> count); ``n_scored`` (reward is a number); ``n_correct`` (AC);
    ``pct_correct`` (% of scored that are AC); ``mean_reward`` (over scored); ``pct_opt``: % of scored whose
    speedup >= 1.10 (PIE %Opt; failures count as not optimized; each record judged on its own speedup, whatever
    its unit); ``fingerprints`` / ``methods`` (the methods that produced figures, or were requested for records
    without figures) / ``requested_methods`` / ``transforms`` seen; ``n_method_fallbacks`` and
    ``fallback_reasons`` (``{reason: count}``): records measured with another method than requested because the
    meter could not run a program (:func:`pie_reward` step 6); ``startup_floors`` (distinct instruction floors).

    Units (instruction ratios and wall/CPU-time ratios are never averaged together): ``speedup_unit`` is the unit
    of the requested method (``instructions``, or ``seconds`` for ``wall``); ``mean_speedup``, ``geomean_speedup``,
    ``median_speedup``, ``min_speedup``, ``max_speedup`` are over the AC records measured in that unit only;
    ``speedup_units`` counts AC records per unit; ``speedups_by_unit`` holds :func:`speedup_stats` per unit;
    ``n_other_unit`` counts AC records left out of the headline figures (measured in another unit after a meter
    fallback). Percentages are 0-100; None when undefined.

    Dataset defects (the row's own source or target fails its tests; :data:`DATASET_DEFECT`, reward None) are never
    counted as a candidate's failure: they are outside ``n_scored`` and every figure, counted in ``by_outcome``
    and listed once per row in ``dataset_defects`` (``[{row, program, cases, reason}]``; ``row`` is
    ``problem_id/src_id[/tgt_id]``, ``program`` ``source`` / ``target`` / ``source+target``, ``cases`` the
    failures as ``"<program> <case> <verdict>"``, ``compile`` for the case of a compile error), with
    ``n_dataset_defect_rows`` rows and ``n_dataset_defects`` records."""
    import statistics

    from arbiter.pipelines.pie_speedup import OPT_THRESHOLD

    by: dict[str, int] = {}
    for r in records:
        by[str(r.get("outcome"))] = by.get(str(r.get("outcome")), 0) + 1
    scored = [r for r in records if r.get("reward") is not None]
    correct = [r for r in scored if r.get("outcome") == "AC" and r.get("speedup")]
    ok = [float(r["speedup"]) for r in correct]
    requested = sorted({str(r.get("requested_method") or r["method"]) for r in records
                        if r.get("requested_method") or r.get("method")})
    unit = _unit_of(requested[0]) if len(requested) == 1 else "instructions"
    per_unit: dict[str, list[float]] = {}
    for r in correct:
        per_unit.setdefault(str(r.get("unit") or _unit_of(r.get("method"))), []).append(float(r["speedup"]))
    head = speedup_stats(per_unit.get(unit, []))
    defects: dict[str, dict[str, Any]] = {}
    n_defects = 0
    for r in records:
        if r.get("outcome") != DATASET_DEFECT:
            continue
        n_defects += 1
        row = "/".join(str(x) for x in (r.get("problem_id"), r.get("src_id"), r.get("tgt_id")) if x)
        fails = r.get("dataset_defects") or []
        programs = sorted({str(d.get("program")) for d in fails})  # "source" < "target"
        defects.setdefault(row, {"row": row, "program": "+".join(programs),
                                 "cases": [f"{d.get('program')} {d.get('case') or 'compile'} {d.get('outcome')}"
                                           for d in fails[:10]],
                                 "reason": r.get("reason")})
    return {
        "n": len(records),
        "by_outcome": dict(sorted(by.items())),
        "n_scored": len(scored),
        "n_dataset_defects": n_defects,
        "n_dataset_defect_rows": len(defects),
        "dataset_defects": [defects[k] for k in sorted(defects)],
        "n_correct": len(ok),
        "pct_correct": 100.0 * len(ok) / len(scored) if scored else None,
        "mean_reward": statistics.fmean(float(r["reward"]) for r in scored) if scored else None,
        "speedup_unit": unit,
        "mean_speedup": head["mean"],
        "geomean_speedup": head["geomean"],
        "median_speedup": head["median"],
        "min_speedup": head["min"],
        "max_speedup": head["max"],
        "speedup_units": {u: len(v) for u, v in sorted(per_unit.items())},
        "speedups_by_unit": {u: speedup_stats(v) for u, v in sorted(per_unit.items())},
        "n_other_unit": sum(len(v) for u, v in per_unit.items() if u != unit),
        "pct_opt": 100.0 * sum(s >= OPT_THRESHOLD for s in ok) / len(scored) if scored else None,
        "fingerprints": sorted({str(r["fingerprint"]) for r in records if r.get("fingerprint")}),
        "methods": sorted({str(r["method"]) for r in records if r.get("method")}),
        "requested_methods": requested,
        "n_method_fallbacks": sum(1 for r in records if r.get("fallback_reason")),
        "fallback_reasons": dict(sorted(_count(str(r["fallback_reason"]) for r in records
                                               if r.get("fallback_reason")).items())),
        "transforms": sorted({str(r["transform"]) for r in records if r.get("transform")}),
        "startup_floors": sorted({int(r["startup_floor"]) for r in records if r.get("startup_floor")}),
    }


class CandidatesInputError(ValueError):
    """The candidates (or generations) file cannot be used as a whole: empty, not JSON Lines (binary, a JSON list,
    text), or none of its records names a row of the rows file. Raised before anything is scored or written; the
    message names the option and the file. Single bad records next to usable ones are not this: they become
    ``INVALID_TASK`` records and the batch goes on."""


#: What one line of a candidates file looks like, for error messages.
_CANDIDATE_SHAPE = '{"src_id" | "row", "candidates" | "code"}'


def _first_bytes(path: Path, n: int = 4) -> bytes:
    try:
        with open(path, "rb") as f:
            return f.read(n)
    except OSError:
        return b""


def check_candidates_usable(items: Sequence[CandidateItem], path: str | os.PathLike, rows: RowIndex, *,
                            option: str = "--candidates", shape: str = _CANDIDATE_SHAPE) -> None:
    """Refuse a candidates file that is unusable as a whole (:class:`CandidatesInputError`, naming ``option`` and
    the file): no record at all (an empty or blank file), no line that is a JSON object (binary bytes, text, a JSON
    list: not JSON Lines; the first problem line is quoted), or no record naming a row of ``rows`` (e.g. every
    ``src_id`` unknown, or a rows file with no usable row). A file with at least one record matched to a row
    passes: its other records stay per-record ``INVALID_TASK`` (one bad record never stops a batch)."""
    p = Path(path)
    if not items:
        raise CandidatesInputError(f"{option} {p}: empty (no records); expected one {shape} object per line")
    if any(it.source is not None for it in items):
        return
    records = [it for it in items if not it.not_object]
    first = (records or items)[0].error
    if not records:
        head = _first_bytes(p)
        kind = ("a Parquet file" if head.startswith(b"PAR1") else
                "gzip-compressed" if head.startswith(b"\x1f\x8b") else "not JSON Lines")
        lists = sum(1 for it in items if it.error.endswith("expected a JSON object, got list"))
        hint = "; a JSON list: give one object per line (JSON Lines)" if lists else ""
        raise CandidatesInputError(
            f"{option} {p}: {kind}: none of its {len(items)} non-blank line(s) is a JSON object (first: {first})"
            f"{hint}; expected one {shape} object per line")
    origin = rows.origin if not isinstance(rows.origin, (str, os.PathLike)) else Path(rows.origin)
    read = f"{len(rows)} usable row(s) read" + (f", {len(rows.errors)} unreadable" if rows.errors else "")
    raise CandidatesInputError(
        f"{option} {p}: none of its {len(records)} record(s) names a usable row of --rows {origin} ({read}; "
        f"first: {first})")


_PIE_FILE_RE = re.compile(r"input\.[0-9]+\.txt")


def _has_pie_files(folder: Path) -> bool:
    try:
        with os.scandir(folder) as entries:
            return any(_PIE_FILE_RE.fullmatch(e.name) and e.is_file() for e in entries)
    except OSError:
        return False


def check_tests_source(tests: Any, *, option: str = "--tests") -> None:
    """Refuse a tests folder or archive that is unusable as a whole, before anything is scored (a ``ValueError``
    naming ``option`` and the path): an archive that cannot be read (an empty file, a truncated or corrupt tar, not
    a tar at all) or holds no ``<problem_id>/input.N.txt`` member; a folder without any ``<problem_id>/`` (or
    ``<problem_id>/test_cases/``) folder holding ``input.N.txt`` files (an empty folder, or one problem's own
    folder given instead of its parent). A usable folder or archive that lacks one row's problem is not this:
    that row's candidates become ``INVALID_TASK``. Anything but a path (a ``TestSuite``, mapping, callable) is
    not checked."""
    if not isinstance(tests, (str, os.PathLike)):
        return
    p = Path(tests)
    expected = "expected <problem_id>/input.N.txt and output.N.txt files"
    if p.is_file():
        try:
            archive = open_pie_archive(p)
        except InvalidTestSuite as e:
            msg = str(e)
            why = msg[msg.index("cannot read the archive"):] if "cannot read the archive" in msg else msg
            raise ValueError(f"{option} {p}: not a usable PIE tests archive: {why}; {expected} "
                             "(a .tar.gz of a PIE tests folder, or the folder itself)") from None
        if not archive.problems:
            raise ValueError(f"{option} {p}: the archive holds no PIE test files; {expected}")
        return
    if p.is_dir():
        try:
            with os.scandir(p) as entries:
                subdirs = [Path(e.path) for e in entries if e.is_dir()]
        except OSError as e:
            raise ValueError(f"{option} {p}: cannot be read: {e.strerror or e}") from None
        for d in subdirs:
            if _has_pie_files(d) or _has_pie_files(d / "test_cases"):
                return
        if _has_pie_files(p) or _has_pie_files(p / "test_cases"):
            raise ValueError(f"{option} {p}: is one problem's test folder; give the folder holding "
                             f"<problem_id>/ folders (its parent, {p.parent})")
        what = "an empty folder" if not subdirs and not any(p.iterdir()) else "no <problem_id>/input.N.txt found"
        raise ValueError(f"{option} {p}: no PIE test folder in it ({what}); {expected}")


@holds_out_dirs
def run_reward_batch(rows: Any, tests: Any, candidates: str | os.PathLike, out_dir: str | os.PathLike, *,
                     seed: int = 0, split: str | None = None, field_names: Sequence[str] = ("candidates", "code"),
                     on_start: Callable[[int], None] | None = None,
                     on_result: Callable[[dict[str, Any]], None] | None = None,
                     file_names: Mapping[str, str] | None = None, skip_precomputed: bool = False,
                     input_option: str | None = "--candidates", **reward_kw: Any) -> BatchRun:
    """Score every candidate of a candidates JSONL (:func:`iter_candidates`) against its row; resumable.

    - ``rows``: a rows source (:class:`RowIndex`: Parquet / JSONL / HF datasets; pairs, bysrc or PIE release
      rows such as ``val.jsonl``) or a ready :class:`RowIndex`.
    - ``tests``: as :func:`pie_reward` (a PIE folder or ``.tar.gz``; ...).
    - ``out_dir``: created. ``rewards.jsonl``: one record per candidate (``key``, ``line``, ``index``, ``id``,
      ``candidate_sha256`` + :meth:`PieRewardResult.to_dict`), keyed by ``key`` and appended as each candidate
      finishes, so an interrupted run loses nothing and a rerun skips what is done
      (:class:`arbiter.datasets.io.JsonlSink`). ``errors.jsonl``: SANDBOX_ERROR records of this run (our
      failures are not final: a rerun retries them; never written as a reward). ``summary.json``:
      :func:`summarize_rewards` over the final records plus run counts. ``file_names`` renames these
      (``{"rewards": ..., "errors": ..., "summary": ...}``). ``skip_precomputed``: see :func:`iter_candidates`.
    - ``seed``: K sampling seed (:func:`sample_rng`); ``reward_kw``: :func:`pie_reward` keywords (``transform``,
      ``transform_params``, ``method``, ``k``, ``checker``, ``compile_spec``, ``limits``, ``repeats``, ...).
    - ``on_start(total)`` / ``on_result(record)``: progress hooks.
    - ``config.json`` (DESIGN.md "Reliability": a rerun resumes the *same* job): the first run records what the
      rewards depend on besides the candidate code (which is in every key): :func:`reward_config` (the rows and
      tests identity and the reward-changing options). A rerun into a folder made with anything else is refused
      with :class:`ConfigMismatch` naming what differs (e.g. ``option transform ('raw' -> 'log')``), instead of
      silently keeping the old rewards.

    Raises ``FileNotFoundError`` for a missing candidates file, ``ValueError`` for bad options (before scoring),
    :class:`ConfigMismatch` (a ``ValueError``) for a folder of another run, :class:`OutputDirError` (a
    ``ValueError``) when ``out_dir`` cannot be a folder (e.g. it is an existing file). Inputs unusable as a whole
    raise a ``ValueError`` before anything is scored or written: a tests folder/archive
    (:func:`check_tests_source`) and, unless ``input_option`` is None, a candidates file
    (:class:`CandidatesInputError` from :func:`check_candidates_usable`, naming ``input_option``: empty, not JSON
    Lines, or no record naming a row) or one that cannot be read.
    """
    from arbiter.datasets.io import JsonlSink, read_jsonl

    check_reward_options(reward_kw)
    index = rows if isinstance(rows, RowIndex) else RowIndex(rows, split=split)
    if not Path(candidates).is_file():
        raise FileNotFoundError(f"candidates file not found: {candidates}")
    check_tests_source(tests)
    try:
        items = list(iter_candidates(candidates, index, field_names=field_names, skip_precomputed=skip_precomputed))
    except OSError as e:  # e.g. a corrupt .gz: a problem of the whole file, not of a line
        raise CandidatesInputError(f"{input_option or 'candidates file'} {candidates}: cannot be read "
                                   f"({e.strerror or e})") from None
    if input_option is not None:
        check_candidates_usable(items, candidates, index, option=input_option,
                                shape=_CANDIDATE_SHAPE.replace('"candidates" | "code"',
                                                               " | ".join(f'"{f}"' for f in field_names)))
    out = ensure_out_dir(out_dir)
    check_config(out, reward_config(index, tests, seed=seed, **reward_kw))
    names = {"rewards": "rewards.jsonl", "errors": "errors.jsonl", "summary": "summary.json", **(file_names or {})}
    paths = {k: out / names[k] for k in ("rewards", "errors", "summary")}
    sink = JsonlSink(paths["rewards"], "key")
    resumed = sum(1 for it in items if it.key in sink)
    if on_start is not None:
        on_start(len(items))
    errors: list[dict[str, Any]] = []
    new = 0
    try:
        with open(paths["errors"], "a", encoding="utf-8") as err_f:
            def handle(item: CandidateItem, rec: dict[str, Any]) -> None:
                nonlocal new
                if rec.get("outcome") == Outcome.SANDBOX_ERROR.value:
                    errors.append(rec)
                    err_f.write(json.dumps(rec, default=str) + "\n")
                    err_f.flush()
                else:
                    sink.write(rec)
                    new += 1
                if on_result is not None:
                    on_result(rec)

            score_candidates(items, tests, on_result=handle, seed=seed, skip=lambda key: key in sink, **reward_kw)
    finally:
        sink.close()
    keys = {it.key for it in items}
    final = {r["key"]: r for r in read_jsonl(paths["rewards"]) if r.get("key") in keys}
    records = [final[it.key] for it in items if it.key in final]
    summary = summarize_rewards(records)
    summary.update({"candidates": len(items), "new": new, "resumed": resumed, "sandbox_errors": len(errors),
                    "row_errors": len(index.errors), "rows": len(index)})
    paths["summary"].write_text(json.dumps(summary, indent=2, default=str) + "\n", encoding="utf-8")
    return BatchRun(records=records, new=new, resumed=resumed, sandbox_errors=errors, row_errors=index.errors,
                    summary=summary, outputs={k: str(v) for k, v in paths.items()})


# ------------------------------------------------------------------------------------------------------- outputs


class ConfigMismatch(ValueError):
    """``out_dir`` holds rewards computed from other rows, tests or reward-changing options; resuming into it would
    keep those rewards for candidates scored again with the new ones. Use another output folder (or delete it)."""


CONFIG_FILE = "config.json"


def _path_identity(obj: Any) -> Any:
    """The identity of an input given as a path: a file's sha256; a folder's sha256 over its listing (relative path,
    size, mtime in ns of every file; content hashing a PIE tests tree would read gigabytes); anything else (an
    in-memory ``TestSuite``, a mapping, a callable): ``None`` (not recorded)."""
    import hashlib

    if not isinstance(obj, (str, os.PathLike)):
        return None
    p = Path(obj)
    h = hashlib.sha256()
    if p.is_file():
        with open(p, "rb") as f:
            for chunk in iter(lambda: f.read(1 << 20), b""):
                h.update(chunk)
        return {"file_sha256": h.hexdigest()}
    if p.is_dir():
        n = 0
        for root, dirs, files in os.walk(p):
            dirs.sort()
            for name in sorted(files):
                fp = Path(root, name)
                try:
                    st = fp.stat()
                except OSError:
                    continue
                h.update(f"{fp.relative_to(p).as_posix()}\0{st.st_size}\0{st.st_mtime_ns}\n".encode())
                n += 1
        return {"listing_sha256": h.hexdigest(), "files": n}
    return None


def reward_config(rows: Any, tests: Any, *, seed: int = 0, **reward_kw: Any) -> dict[str, Any]:
    """What a batch's rewards depend on besides the candidates (whose code is hashed into every key):

    - ``rows``: the identity of the rows file/folder (:class:`RowIndex` ``origin``; the split), ``tests``: of the
      tests folder/archive (:func:`_path_identity`);
    - ``options``: ``transform`` and ``transform_params``, ``method``, ``k`` (and ``seed`` when ``k > 0``: it picks
      the cases), ``checker``, the compile command, the native limits (CPU seconds, wall seconds, memory bytes), and
      ``repeats``/``warmup`` for the wall method. Not included: the cache switch and progress options (they do not
      change a reward)."""
    from arbiter.judge.task import CompileSpec

    origin = rows.origin if isinstance(rows, RowIndex) else rows
    split = rows.split if isinstance(rows, RowIndex) else None
    chk = reward_kw.get("checker", "pie")
    chk = chk if isinstance(chk, CheckerSpec) else CheckerSpec(chk)
    spec = reward_kw.get("compile_spec") or CompileSpec()
    lim = reward_kw.get("limits") or DEFAULT_LIMITS
    method = reward_kw.get("method", "instructions")
    k = reward_kw.get("k", -1)
    tf = make_transform(reward_kw.get("transform", "raw"), **dict(reward_kw.get("transform_params") or {}))
    options: dict[str, Any] = {
        "transform": tf.name, "transform_params": dict(sorted(tf.params.items())), "method": method, "k": k,
        "checker": _checker_key(chk), "compile_command": spec.command,
        "limits": {"cpu_seconds": lim.cpu_seconds, "wall_seconds": lim.wall_seconds,
                   "memory_bytes": lim.memory_bytes},
    }
    if isinstance(k, int) and k > 0:
        options["seed"] = seed
    if method == "wall":
        options["repeats"] = reward_kw.get("repeats", 5)
        options["warmup"] = reward_kw.get("warmup", 1)
    return {"version": 1, "rows": _path_identity(origin), "split": split, "tests": _path_identity(tests),
            "options": options}


def check_config(out_dir: Path, fingerprint: dict[str, Any]) -> None:
    """Record ``fingerprint`` in ``out_dir/config.json`` on the first run; on a rerun, raise :class:`ConfigMismatch`
    naming what changed (inputs by name, options as ``option NAME (old -> new)``). A folder from before this file
    existed (no ``config.json``) gets the current one."""
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
                    f"option {k} ({o.get(k)!r} -> {n.get(k)!r})" for k in sorted(set(o) | set(n))
                    if o.get(k) != n.get(k)]
            raise ConfigMismatch(f"{out_dir} holds rewards computed with other inputs or options (changed: "
                                 f"{', '.join(changed)}); use another --out folder or delete it")
        if isinstance(old, dict):
            return
    tmp = path.with_name(f".{CONFIG_FILE}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(fingerprint, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    os.replace(tmp, path)
