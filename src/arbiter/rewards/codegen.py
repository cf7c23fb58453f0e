"""The codegen reward: one verl code row and one model response -> a score and a verdict.

:func:`prepare` routes the row (:mod:`arbiter.rewards.routes`), builds its test suite and
extracts the program (:mod:`arbiter.rewards.extract`); the judge runs it; :func:`finish` turns the
verdict into a :class:`RewardResult` (always the keys :data:`RESULT_KEYS`). :func:`score` does
the three for one response. verl's plug-in (:mod:`arbiter.verl.reward`) and ``arbiter score``
both call these, so a response scores the same in training and in evaluation.
See ``docs/codegen.md`` ("The reward", "Parity mode").
"""

from __future__ import annotations

import ast
import functools
import logging
import math
import numbers
import threading
import time
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any

from arbiter.checkers.spec import CHECKER_NAMES
from arbiter.datasets.verl_rows import vacuous_suite_warning
from arbiter.judge.encodings.verl import verl_ground_truth_to_suite
from arbiter.judge.step import Settings, default_step_judge
from arbiter.judge.step.key import CASE_ORDERS
from arbiter.judge.step.settings import SCHEDULES
from arbiter.judge.task import Task
from arbiter.judge.testsuite import CallCase, InvalidTestSuite, TestSuite
from arbiter.judge.verdict import Outcome, Verdict
from arbiter.rewards.extract import MAX_RESPONSE_CHARS, extract_code
from arbiter.rewards.routes import Route, route, scrub_prelude
from arbiter.sandbox.limits import MAX_SECONDS

log = logging.getLogger("arbiter.verl")

#: ``parity`` values: ``"prime_code"`` reproduces verl ``prime_code``'s continuous score (the
#: passed fraction of the first 10 cases; ``docs/codegen.md``, "Parity mode").
PARITY_MODES = ("prime_code",)
PRIME_CODE_CASES = 10

#: ``acc`` is ``score`` again, under the name verl's DAPO recipes filter groups by
#: (``algorithm.filter_groups.metric=acc``; verl sets it so for a reward that returns a number).
RESULT_KEYS = ("score", "acc", "verdict", "passed", "total", "reason", "seconds", "judge_seconds", "cpu_seconds",
               "cached", "warning")
_ON_INVALID = ("zero", "raise")
_ON_SANDBOX_ERROR = ("raise", "report")


class SandboxFailure(RuntimeError):
    """The sandbox failed (``SANDBOX_ERROR``) on a submission even after the judge's retries.

    Raised with ``on_sandbox_error="raise"``. Attributes: ``row`` (the row label),
    ``reason`` (the judge's reason), ``results`` (for the batch variant: every result of the
    batch, the failed ones with ``verdict == "SANDBOX_ERROR"``; else ``None``).
    """

    def __init__(self, message: str, *, row: str = "", reason: str = "", results: list | None = None):
        super().__init__(message)
        self.row = row
        self.reason = reason
        self.results = results


class InvalidTask(ValueError):
    """A row whose test suite cannot be used (unknown encoding, zero tests); raised with
    ``on_invalid="raise"`` (the default). The message names the row
    (``"<data_source>:<extra_info.index>"``), the field and the shape found (e.g.
    ``row 'code_taco:7': ground_truth[0].type: unknown type 'assert'; known: stdin_stdout,
    function_call``). Attributes: ``row`` (that label), ``reason`` (the message)."""

    def __init__(self, message: str, *, row: str = ""):
        super().__init__(message)
        self.row = row
        self.reason = message


class RewardResult(dict):
    """A plain ``dict`` of the :data:`RESULT_KEYS` whose ``[0]`` is also the score.

    verl's naive and batch managers read ``result["score"]`` and log the other keys; its prime
    manager reads ``float(result[0])`` from a non-number result. An integer key ``0`` can never be
    one of the string keys, so the alias is unambiguous.
    """

    def __getitem__(self, key: Any) -> Any:
        if type(key) is int and key == 0:
            return dict.__getitem__(self, "score")
        return dict.__getitem__(self, key)

    def __reduce__(self):  # pickles as this class (ProcessPoolExecutor in verl's prime manager)
        return (RewardResult, (dict(self),))


@dataclass(frozen=True)
class RewardOptions:
    """The keyword options of :func:`compute_score` (verl ``reward_kwargs``), validated.

    - ``parity``: ``None`` (all-or-nothing on every case, the card's reward) or ``"prime_code"``.
    - ``on_invalid``: ``"raise"`` (default: :class:`InvalidTask`, the card's "fail loudly") or
      ``"zero"`` (score 0.0, ``verdict: "INVALID_TASK"``); docs/codegen.md, step 2.
    - ``on_sandbox_error``: ``"raise"`` (default, :class:`SandboxFailure`) or ``"report"``.
    - ``checker``, ``case_insensitive``, ``abs_tol``, ``rel_tol``: override the route's checker.
    - ``time_limit``: CPU seconds per case; ``memory_limit_mb``: MiB per case.
    - ``run_all``: keep running cases after the first failure (exact ``passed`` counts; slower).
    - ``workers``: parallel submissions for the batch variant (default: one per core).
    - ``max_response_chars``: longer responses are FORMAT_ERROR unparsed (docs/codegen.md, step 3).
    - ``reuse``, ``case_order``, ``schedule``: how a batch is judged (docs/step.md); never the score.
    """

    parity: str | None = None
    on_invalid: str = "raise"
    on_sandbox_error: str = "raise"
    checker: str | None = None
    case_insensitive: bool | None = None
    abs_tol: float | None = None
    rel_tol: float | None = None
    time_limit: float | None = None
    memory_limit_mb: int | None = None
    run_all: bool = False
    workers: int | None = None
    max_response_chars: int = MAX_RESPONSE_CHARS
    reuse: bool = True
    case_order: str = "failures_first"
    schedule: str = "longest_first"

    @classmethod
    def from_kwargs(cls, kwargs: Mapping[str, Any]) -> "RewardOptions":
        """Validate ``kwargs``. Raises ``TypeError`` for an unknown name (a misspelt
        ``reward_kwargs`` entry must not be ignored) and ``ValueError`` for a bad value."""
        names = set(cls.__dataclass_fields__)
        unknown = sorted(set(kwargs) - names)
        if unknown:
            raise TypeError(f"arbiter compute_score: unknown option(s) {unknown}; known: {sorted(names)}")
        opts = cls(**dict(kwargs))
        if opts.parity is not None and opts.parity not in PARITY_MODES:
            raise ValueError(f"parity must be None or one of {PARITY_MODES}, got {opts.parity!r}")
        if opts.on_invalid not in _ON_INVALID:
            raise ValueError(f"on_invalid must be one of {_ON_INVALID}, got {opts.on_invalid!r}")
        if opts.on_sandbox_error not in _ON_SANDBOX_ERROR:
            raise ValueError(f"on_sandbox_error must be one of {_ON_SANDBOX_ERROR}, got {opts.on_sandbox_error!r}")
        if opts.checker is not None and (opts.checker not in CHECKER_NAMES or opts.checker == "external"):
            names = [n for n in CHECKER_NAMES if n != "external"]
            raise ValueError(f"checker must be one of {names}, got {opts.checker!r}")
        for name in ("time_limit", "memory_limit_mb"):
            value = getattr(opts, name)
            if value is not None and not float(value) > 0:
                raise ValueError(f"{name} must be positive, got {value!r}")
        if opts.time_limit is not None and not float(opts.time_limit) <= MAX_SECONDS:
            raise ValueError(f"time_limit must be at most {MAX_SECONDS} CPU seconds per case, got {opts.time_limit!r}")
        for name in ("abs_tol", "rel_tol"):
            value = getattr(opts, name)
            if value is not None and not (0 <= float(value) < math.inf):
                raise ValueError(f"{name} must be a finite number >= 0, got {value!r}")
        if type(opts.max_response_chars) is not int or opts.max_response_chars < 1:
            raise ValueError(f"max_response_chars must be a positive int, got {opts.max_response_chars!r}")
        if opts.workers is not None and int(opts.workers) < 1:
            raise ValueError(f"workers must be >= 1, got {opts.workers!r}")
        if not isinstance(opts.reuse, bool):
            raise ValueError(f"reuse must be true or false, got {opts.reuse!r}")
        if opts.case_order not in CASE_ORDERS:
            raise ValueError(f"case_order must be one of {CASE_ORDERS}, got {opts.case_order!r}")
        if opts.schedule not in SCHEDULES:
            raise ValueError(f"schedule must be one of {SCHEDULES}, got {opts.schedule!r}")
        return opts

    @property
    def step(self) -> Settings:
        """How the judge runs a batch of these responses (:class:`arbiter.judge.step.Settings`)."""
        return Settings(reuse=self.reuse, case_order=self.case_order, schedule=self.schedule)


def reward_result(score: float, verdict: str, passed: int, total: int, reason: str, started: float,
                  judge_seconds: float = 0.0, cpu_seconds: float = 0.0, prep_seconds: float | None = None,
                  warning: str = "", cached: bool = False) -> RewardResult:
    """``seconds`` is the preparation time (``prep_seconds``, or since ``started``) plus the judge's
    wall time: the work done for this response, without time spent queued behind others (for a
    reused verdict, ``cached``: the judge's times of the run it reuses)."""
    reason = " | ".join(line.strip() for line in reason.splitlines() if line.strip())  # one line
    return RewardResult(score=float(score), acc=float(score), verdict=verdict, passed=int(passed), total=int(total),
                        reason=reason,
                        seconds=round((time.monotonic() - started if prep_seconds is None else prep_seconds)
                                      + judge_seconds, 6),
                        judge_seconds=round(judge_seconds, 6),
                        cpu_seconds=round(float(cpu_seconds), 6),
                        cached=bool(cached), warning=warning)


def row_label(data_source: Any, extra_info: Any) -> str:
    """``"<data_source>:<extra_info.index>"`` (or ``"<data_source>:?"``): the row in messages and
    the data_source-qualified key the card's 2026-08 fix requires (indexes collide across
    DeepCoder's subsets)."""
    index = extra_info.get("index") if isinstance(extra_info, Mapping) else None
    return f"{data_source}:{'?' if index is None else index}"


def row_time_limit(extra_info: Any) -> float | None:
    """The row's own CPU limit per case, ``extra_info.time_limit`` (seconds), or ``None`` when the
    row has none (missing or null: the route's default applies).

    ``arbiter convert`` writes it for rows whose reference solution it measured
    (:mod:`arbiter.pipelines.codegen.references`: a documented multiple of the reference's slowest case, never
    below the route's default). verl hands ``extra_info`` to the reward function unchanged, so the
    limit travels with the row. The ``time_limit`` option (``reward_kwargs``) replaces it. Raises
    ``ValueError`` naming the field for a value that is not a number of seconds in
    ``(0, MAX_SECONDS]`` (a bool, text, NaN, 0, negative, over a day)."""
    if not isinstance(extra_info, Mapping):
        return None
    value = extra_info.get("time_limit")
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) and not hasattr(value, "__float__"):
        raise ValueError(f"extra_info.time_limit: expected CPU seconds per case (a number), got "
                         f"{type(value).__name__} {str(value)[:40]!r}")
    try:
        seconds = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"extra_info.time_limit: expected CPU seconds per case, got {str(value)[:40]!r}") from None
    if not 0 < seconds <= MAX_SECONDS:  # NaN fails too
        raise ValueError(f"extra_info.time_limit: {seconds!r} is not a number of CPU seconds per case in "
                         f"(0, {MAX_SECONDS}]")
    return seconds


@functools.lru_cache(maxsize=16)
def _suite_from_text(text: str, label: str, int_keys: bool) -> TestSuite:
    return verl_ground_truth_to_suite(text, row=label, int_keys=int_keys)


def load_suite(ground_truth: Any, label: str, int_keys: bool = False) -> TestSuite:
    """The test suite of a verl ``ground_truth`` (JSON text cached: verl scores the n responses
    of a prompt one after another); ``int_keys``: the route's (:attr:`Route.int_keys`). Raises
    :class:`InvalidTestSuite`."""
    if isinstance(ground_truth, str):
        return _suite_from_text(ground_truth, label, int_keys)
    return verl_ground_truth_to_suite(ground_truth, row=label, int_keys=int_keys)


@dataclass
class Prepared:
    """One response made ready to judge: either ``result`` is set (no judging needed:
    FORMAT_ERROR, INVALID_TASK) or ``task`` is."""

    label: str
    started: float
    prep_seconds: float = 0.0
    task: Task | None = None
    result: RewardResult | None = None
    invalid_error: Exception | None = None
    suite_cases: int = 0  # cases in the row's whole suite (parity mode judges only the first 10)
    warning: str = ""  # about the row, e.g. a vacuous suite (RESULT_KEYS "warning")
    hint: float | None = None  # extra_info.reference_cpu_seconds: a first prediction of the judge's time


#: ``extra_info`` fields a row may use to state its problem's own real-number tolerance.
ROW_TOLERANCE_FIELDS = ("abs_tol", "rel_tol")


def _with_row_tolerance(r: Route, extra_info: Any, label: str, opts: RewardOptions) -> Route:
    """``r`` with the row's own ``extra_info.abs_tol``/``rel_tol`` (the statement's tolerance),
    unless ``reward_kwargs`` set that one. Raises :class:`InvalidTestSuite` naming the row and
    field for a value that is not a finite number >= 0."""
    if not isinstance(extra_info, Mapping):
        return r
    found: dict[str, float] = {}
    for name in ROW_TOLERANCE_FIELDS:
        value = extra_info.get(name)
        if value is None or getattr(opts, name) is not None:
            continue
        ok = isinstance(value, numbers.Real) and not isinstance(value, bool) and 0 <= float(value) < math.inf
        if not ok:
            raise InvalidTestSuite(f"row {label!r}: extra_info.{name} must be a finite number >= 0, got {value!r}")
        found[name] = float(value)
    return r.with_overrides(**found) if found else r


def prepare(data_source: Any, solution_str: Any, ground_truth: Any, extra_info: Any, opts: RewardOptions,
            *, suite: TestSuite | Exception | None = None, route_: Route | None = None,
            code: str | None = None) -> Prepared:
    """Steps 1-3 of the reward (docs/codegen.md) for one response: a :class:`Task`, or an immediate result.

    ``suite``/``route_`` may be passed in when the caller already built them (the batch variant
    and the scoring pipeline build a row's suite once for its n responses, decoded with the
    route's ``int_keys``); an ``Exception`` passed as ``suite`` is the row's conversion error. ``code``: a program to judge as is instead
    of the one extracted from ``solution_str`` (a row's reference solution,
    :mod:`arbiter.pipelines.codegen.references`). Raises ``ValueError`` for a non-code ``data_source`` or a
    bad override.
    """
    started = time.monotonic()
    label = row_label(data_source, extra_info)
    r = route_ or route(data_source)
    time_limit = opts.time_limit
    if time_limit is None:
        try:
            time_limit = row_time_limit(extra_info)
        except ValueError as exc:
            reason = f"row {label!r}: {exc}"
            return Prepared(label, started, result=reward_result(0.0, Outcome.INVALID_TASK.value, 0, 0, reason, started),
                            invalid_error=exc)
    r = r.with_overrides(checker=opts.checker, case_insensitive=opts.case_insensitive, abs_tol=opts.abs_tol,
                         rel_tol=opts.rel_tol, time_limit=time_limit, memory_limit_mb=opts.memory_limit_mb)
    if suite is None:
        try:
            suite = load_suite(ground_truth, label, r.int_keys)
        except InvalidTestSuite as exc:
            suite = exc
    if not isinstance(suite, Exception):
        try:
            r = _with_row_tolerance(r, extra_info, label, opts)
        except InvalidTestSuite as exc:
            suite = exc
    if isinstance(suite, Exception):
        return Prepared(label, started, result=reward_result(0.0, Outcome.INVALID_TASK.value, 0, 0, str(suite), started),
                        invalid_error=suite)
    suite_cases = len(suite)
    if opts.parity == "prime_code":
        suite = TestSuite(suite.cases[:PRIME_CODE_CASES], origin=f"{suite.origin}[:{PRIME_CODE_CASES}]")
    warning = _row_warning(label, suite)
    if code is None:
        got = extract_code(solution_str, opts.max_response_chars)
        if not got.ok:
            return Prepared(label, started, result=reward_result(0.0, Outcome.FORMAT_ERROR.value, 0, len(suite),
                                                           f"FORMAT_ERROR: {got.reason}", started, warning=warning),
                            warning=warning)
        code = got.code or ""
    prelude = r.prelude
    if isinstance(extra_info, Mapping) and isinstance(extra_info.get("prelude"), str) and extra_info["prelude"]:
        prelude = extra_info["prelude"]
    # names under test are scrubbed from the prelude unless class Solution defines them (then the
    # harness calls the method, and the method may still use a prelude function of that name)
    fn_names = {c.fn_name for c in suite.cases if isinstance(c, CallCase)} if suite.is_call_based else set()
    if fn_names:
        fn_names -= _solution_methods(code)
    task = Task(
        language="python",
        source=code,
        suite=suite,
        limits=r.limits,
        checker=r.checker,
        scoring="fraction" if opts.parity else "all_or_nothing",
        run_all=bool(opts.parity) or opts.run_all,
        prelude=scrub_prelude(prelude, fn_names),
        task_id=label,
    )
    return Prepared(label, started, prep_seconds=time.monotonic() - started, task=task, suite_cases=suite_cases,
                    warning=warning, hint=reference_seconds(extra_info))


def reference_seconds(extra_info: Any) -> float | None:
    """``extra_info.reference_cpu_seconds`` when it is a positive number (``arbiter convert``
    measures it), else ``None``: a hint of how long the row's submissions take, never a limit."""
    value = extra_info.get("reference_cpu_seconds") if isinstance(extra_info, Mapping) else None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value < math.inf:
        return None
    return float(value)


def _solution_methods(code: str) -> set[str]:
    """Method names of a top-level ``class Solution`` (empty when the code does not parse: the
    judge reports that as CE)."""
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return set()
    return {f.name for node in tree.body if isinstance(node, ast.ClassDef) and node.name == "Solution"
            for f in node.body if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef))}


_warned_invalid: set[str] = set()
_warned_vacuous: set[str] = set()
_warn_lock = threading.Lock()


def _row_warning(label: str, suite: TestSuite) -> str:
    """The ``warning`` of a row's judged suite (a vacuous suite), logged once per row label."""
    warning = vacuous_suite_warning(suite)
    if warning:
        with _warn_lock:
            first = label not in _warned_vacuous and len(_warned_vacuous) < 10_000
            _warned_vacuous.add(label)
        if first:
            log.warning("%s: %s", label, warning)
    return warning


def finish(prep: Prepared, verdict: Verdict | None, opts: RewardOptions, *, raise_errors: bool = True) -> RewardResult:
    """Step 4-5: the :class:`RewardResult` of a prepared response and its verdict.

    Raises :class:`InvalidTask` (``on_invalid="raise"``) or :class:`SandboxFailure`
    (``on_sandbox_error="raise"``) unless ``raise_errors`` is False (the batch variant raises
    once for the whole batch).
    """
    if prep.result is not None:
        res = prep.result
        if res["verdict"] == Outcome.INVALID_TASK.value:
            if opts.on_invalid == "raise" and raise_errors:
                raise InvalidTask(res["reason"], row=prep.label) from prep.invalid_error
            with _warn_lock:
                first = prep.label not in _warned_invalid and len(_warned_invalid) < 10_000
                _warned_invalid.add(prep.label)
            if first:
                log.warning("INVALID_TASK %s scored 0.0: %s", prep.label, res["reason"])
        return res
    assert verdict is not None
    cpu = sum(c.cpu_seconds for c in verdict.cases)
    outcome = verdict.outcome
    if outcome is Outcome.SANDBOX_ERROR:
        reason = f"SANDBOX_ERROR (infrastructure failure, not the program's fault; retried): {verdict.reason}"
        log.warning("%s: %s", prep.label, reason)
        if opts.on_sandbox_error == "raise" and raise_errors:
            raise SandboxFailure(f"{prep.label}: {reason}", row=prep.label, reason=verdict.reason)
        return reward_result(0.0, outcome.value, verdict.passed, verdict.total, reason, prep.started,
                             verdict.seconds, cpu, prep.prep_seconds, prep.warning, verdict.cached)
    if outcome is Outcome.INVALID_TASK:
        if opts.on_invalid == "raise" and raise_errors:
            raise InvalidTask(f"row {prep.label!r}: {verdict.reason}", row=prep.label)
        log.warning("INVALID_TASK %s scored 0.0: %s", prep.label, verdict.reason)
    reason = verdict.reason
    if opts.parity and outcome not in (Outcome.INVALID_TASK, Outcome.CE):
        outcome, reason = _parity_label(opts.parity, verdict, prep.suite_cases)
    return reward_result(verdict.score, outcome.value, verdict.passed, verdict.total, reason, prep.started,
                         verdict.seconds, cpu, prep.prep_seconds, prep.warning, verdict.cached)


def _parity_label(parity: str, verdict: Verdict, suite_cases: int) -> tuple[Outcome, str]:
    """The honest verdict and reason of a parity-mode result (:data:`PARITY_MODES`): ``AC`` only
    when the whole suite ran and passed; ``SKIPPED`` when the first cases passed and later ones
    were not run; else the judge's verdict on the first cases."""
    run, passed = verdict.total, verdict.passed
    head = (f"parity {parity}: {passed}/{run} of the first {run} cases passed (score {verdict.score:g})"
            if suite_cases > run else f"parity {parity}: {passed}/{run} cases passed (score {verdict.score:g})")
    not_run = f"cases {run + 1}-{suite_cases} not run" if suite_cases > run + 1 else f"case {suite_cases} not run"
    if verdict.outcome is Outcome.AC:
        if suite_cases > run:
            return Outcome.SKIPPED, f"{head}; {not_run}, verdict SKIPPED"
        return Outcome.AC, f"parity {parity}: all {run} cases passed (score 1)"
    reason = f"{head}; first failure: {verdict.reason}"
    if suite_cases > run:
        reason += f"; {not_run}"
    return verdict.outcome, reason


def score(data_source: Any, solution_str: Any, ground_truth: Any, extra_info: Any, opts: RewardOptions, *,
          raise_errors: bool = True, judges: Any = None) -> RewardResult:
    """The reward of one response (:func:`prepare`, the judge, :func:`finish`). ``judges``: the
    :class:`~arbiter.judge.step.StepJudge` to ask (default the process's)."""
    prep = prepare(data_source, solution_str, ground_truth, extra_info, opts)
    verdict = None
    if prep.task is not None:
        verdict = (judges or default_step_judge()).judge(prep.task, hint=prep.hint, settings=opts.step)
    return finish(prep, verdict, opts, raise_errors=raise_errors)


#: :class:`RewardOptions` fields that never change a score (parallelism, error policies, how a
#: batch is judged: docs/step.md).
NOT_VERDICT_OPTIONS = ("workers", "on_invalid", "on_sandbox_error", "reuse", "case_order", "schedule")


def verdict_options(opts: RewardOptions) -> dict[str, Any]:
    """The options a verdict depends on (recorded in a run folder's ``config.json``)."""
    return {k: v for k, v in asdict(opts).items() if k not in NOT_VERDICT_OPTIONS}


__all__ = ["InvalidTask", "NOT_VERDICT_OPTIONS", "PARITY_MODES", "PRIME_CODE_CASES", "Prepared", "RESULT_KEYS",
           "ROW_TOLERANCE_FIELDS", "RewardOptions", "RewardResult", "SandboxFailure", "finish", "load_suite",
           "prepare", "reference_seconds", "row_label", "row_time_limit", "score", "verdict_options"]
