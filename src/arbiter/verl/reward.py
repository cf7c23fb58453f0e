"""The verl reward plug-in: ``compute_score`` (per sample), ``compute_score_batch`` (verl's
``batch`` reward manager) and ``compute_score_async`` (coroutine; verl awaits it).

Use it from a verl config (``reference/verl_reward.md`` section 1)::

    custom_reward_function:
      path: pkg://arbiter.verl.reward        # or the file path of this module
      name: compute_score                    # compute_score_batch with reward_manager=batch
      reward_kwargs: {on_sandbox_error: raise, on_invalid: raise, parity: null}

What one call does, in order (each step's rule and its source):

1. ``data_source`` -> :func:`arbiter.verl.routing.route`: checker, limits, prelude. A non-code
   source raises ``ValueError`` (verl's own router raises ``NotImplementedError`` there). A row's
   own ``extra_info.time_limit`` (CPU seconds per case; ``arbiter convert`` measures it from the
   row's reference solution, :mod:`arbiter.verl.references`) replaces the route's CPU limit
   (:func:`row_time_limit`; an unusable value is ``INVALID_TASK`` naming the field); the
   ``time_limit`` option replaces both.
2. ``ground_truth`` -> test suite (:func:`arbiter.judge.encodings.verl_ground_truth_to_suite`;
   the card's three encodings, as a JSON string or decoded numpy/pyarrow data). A row that does
   not convert (unknown encoding, zero tests) is ``INVALID_TASK``:

   - ``on_invalid="raise"`` (the default): :class:`InvalidTask` is raised, naming the row
     (``"<data_source>:<extra_info.index>"``) and what is wrong with the ``ground_truth`` (its
     shape: "zero test cases (empty list)", "unknown type 'assert'", "got int", ...). The card:
     the in-tree reward "raises on anything else — unknown encodings fail loudly rather than
     silently scoring 0". In training this stops the step (verl's naive and batch managers do not
     catch; its prime manager turns any exception into 0.0 for the *whole* batch), which is the
     point: a dataset with unusable rows is a bug to fix before training. Validate datasets with
     ``arbiter score`` / ``arbiter convert``, which report such rows without stopping.
   - ``on_invalid="zero"``: score 0.0, ``verdict: "INVALID_TASK"`` with the reason, and one
     warning per row in the log. Every response of such a row scores 0.0, so group-normalised
     advantages (GRPO) are zero and the row teaches nothing; use it to train on a dataset known
     to hold a few bad rows.

   ``arbiter score`` (:func:`iter_scores` with ``raise_errors=False``) always records such rows
   as INVALID_TASK verdicts and goes on, whatever ``on_invalid`` says.
3. ``solution_str`` -> program (:func:`arbiter.verl.extract.extract_code`): the last fenced
   Python (or unlabelled) block after any ``<think>`` block; none is ``FORMAT_ERROR``, 0.0. A
   response longer than ``max_response_chars`` (default
   :data:`arbiter.verl.extract.MAX_RESPONSE_CHARS`, 4 Mi characters) is not parsed:
   ``FORMAT_ERROR`` with a reason naming the cap (the parse is linear, but the trainer's process
   should not spend seconds on a degenerate response).
4. The judge runs the program on every case in one sandbox (DESIGN.md) and stops at the first
   failure: score 1.0 only if every case passes (the card's all-or-nothing reward).
   ``parity="prime_code"`` instead reproduces verl ``prime_code``'s published continuous score
   (see :data:`PARITY_MODES`, also for its ``verdict``).
5. ``SANDBOX_ERROR`` (our failure, not the program's) has already been retried by the judge
   (a fresh sandbox, twice per case). Then :class:`SandboxFailure` is raised
   (``on_sandbox_error="raise"``, the default: a broken sandbox must stop training rather than
   feed it zeros), or the result says ``verdict: "SANDBOX_ERROR"`` with score 0.0 (verl needs a
   float) and a reason starting with ``SANDBOX_ERROR``, and a warning is logged
   (``on_sandbox_error="report"``). Never a silent 0.

The result is a :class:`RewardResult`: a dict with always the same keys (verl collects every key
into ``reward_extra_info`` lists, so the key set must not vary):

- ``score`` (float in [0, 1]), ``verdict`` (``AC``, ``WA``, ``TLE``, ``MLE``, ``RE``, ``OLE``,
  ``CE``, ``FORMAT_ERROR``, ``INVALID_TASK``, ``SANDBOX_ERROR``; in parity mode also ``SKIPPED``,
  see :data:`PARITY_MODES`), ``passed`` / ``total`` (cases;
  ``total`` counts the cases scored: the whole suite, or the first 10 in parity mode),
  ``reason`` (one line), ``seconds`` (wall seconds of work for this response: parsing,
  extraction and judging, not time queued in a batch), ``judge_seconds`` (wall seconds inside the
  judge), ``cpu_seconds`` (CPU seconds of all cases run), ``warning`` (``""``, or one line about
  the row that does not change the score: ``"vacuous test suite: every expected output is empty
  (3 cases); a program that prints nothing passes"`` when every case of the judged suite accepts
  the output of a program that does nothing, :func:`arbiter.datasets.verl_rows.vacuous_suite_warning`;
  such a row is judged as usual, since one empty expected output is a legitimate answer and only an
  all-empty suite is suspect, and it is logged once per row; ``arbiter score`` counts such rows).

``result[0]`` is ``score`` as well: verl's ``prime`` manager reads ``float(result[0])`` from
anything that is not a number (and turns the whole batch into zeros if that raises).

Which verl reward manager (``reference/verl_reward.md`` section 1):

- ``batch`` + ``compute_score_batch``: recommended; one call per batch, judged on all cores.
- the reward loop / ``launch_reward_fn_async`` + ``compute_score_async``: never blocks the event
  loop; one judge per core at a time.
- ``naive`` + ``compute_score``: works, one response at a time (slow: verl issue 1962). When a
  caller runs ``compute_score`` from many threads, at most one judge per core runs at once.
- ``prime`` + ``compute_score``: works (``result[0]``), but it calls from 64 processes at once,
  which oversubscribes the cores (CPU limits still hold; the wall limit, ``2 x CPU + 1`` s, may
  turn slow-but-correct programs into TLE), and it turns any exception of any sample into 0.0
  for the whole batch, so ``on_sandbox_error="raise"`` cannot stop training there. Prefer
  ``batch``.

The judge does not use ``signal.alarm`` (verl issue 3407: alarms fail outside the main thread
and every reward silently became 0), so every entry point is safe to call from threads.
"""

from __future__ import annotations

import ast
import asyncio
import functools
import logging
import math
import numbers
import os
import threading
import time
from collections import deque
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Iterable, Iterator

from arbiter.checkers.spec import CHECKER_NAMES
from arbiter.datasets.verl_rows import vacuous_suite_warning
from arbiter.judge.encodings.verl import verl_ground_truth_to_suite
from arbiter.judge.judge import default_workers, judge
from arbiter.judge.task import Task
from arbiter.judge.testsuite import CallCase, InvalidTestSuite, TestSuite
from arbiter.judge.verdict import Outcome, Verdict
from arbiter.sandbox.limits import MAX_SECONDS
from arbiter.verl.extract import MAX_RESPONSE_CHARS, extract_code
from arbiter.verl.routing import Route, route, scrub_prelude

log = logging.getLogger("arbiter.verl")

#: ``parity`` values. ``"prime_code"``: verl ``prime_code.compute_score(continuous=True)`` as
#: published (``reference/verl_reward.md`` section 3): it first runs every test and returns 1.0
#: when all pass, otherwise the fraction of the **first 10** tests that pass. Both branches equal
#: "passed among the first min(10, n) cases / min(10, n)", so only those cases are run; a
#: solution that fails only case 11 or later scores 1.0, exactly as in prime_code. Parity
#: reproduces the scoring formula, not prime_code's comparison (its numpy-based, set-of-lines
#: fallbacks accept wrong answers); arbiter's checkers and sandbox stay in force, and a response
#: without a code block is FORMAT_ERROR (prime_code would run the whole text as code).
#:
#: The label stays honest (only the score follows prime_code): ``verdict`` is ``AC`` only when
#: every case of the suite ran and passed (a suite of at most 10 cases); a failure among the
#: first 10 gives that case's verdict (``WA``, ``TLE``, ...) with the fraction as score; when the
#: first 10 pass and the suite has more cases, which were not run, ``verdict`` is ``SKIPPED``
#: (the per-case verdict for "not run": the cases that would decide AC were never run) with
#: score 1.0. ``reason`` reads e.g. "parity prime_code: 10/10 of the first 10 cases passed
#: (score 1.0); cases 11-15 not run, verdict SKIPPED". ``arbiter score`` counts a score of 1.0 as
#: correct, so parity pass rates are prime_code's; the verdict counts show how many were not
#: checked beyond case 10.
PARITY_MODES = ("prime_code",)
PRIME_CODE_CASES = 10

RESULT_KEYS = ("score", "verdict", "passed", "total", "reason", "seconds", "judge_seconds", "cpu_seconds", "warning")
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
      ``"zero"`` (score 0.0, ``verdict: "INVALID_TASK"``); module docstring, step 2.
    - ``on_sandbox_error``: ``"raise"`` (default, :class:`SandboxFailure`) or ``"report"``.
    - ``checker``, ``case_insensitive``, ``abs_tol``, ``rel_tol``: override the route's checker.
    - ``time_limit``: CPU seconds per case; ``memory_limit_mb``: MiB per case.
    - ``run_all``: keep running cases after the first failure (exact ``passed`` counts; slower).
    - ``workers``: parallel submissions for the batch variant (default: one per core).
    - ``max_response_chars``: longer responses are FORMAT_ERROR unparsed (module docstring, step 3).
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
        return opts


def _result(score: float, verdict: str, passed: int, total: int, reason: str, started: float,
            judge_seconds: float = 0.0, cpu_seconds: float = 0.0, prep_seconds: float | None = None,
            warning: str = "") -> RewardResult:
    """``seconds`` is the preparation time (``prep_seconds``, or since ``started``) plus the judge's
    wall time: the work done for this response, without time spent queued behind others."""
    reason = " | ".join(line.strip() for line in reason.splitlines() if line.strip())  # one line
    return RewardResult(score=float(score), verdict=verdict, passed=int(passed), total=int(total), reason=reason,
                        seconds=round((time.monotonic() - started if prep_seconds is None else prep_seconds)
                                      + judge_seconds, 6),
                        judge_seconds=round(judge_seconds, 6),
                        cpu_seconds=round(cpu_seconds, 6),
                        warning=warning)


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
    (:mod:`arbiter.verl.references`: a documented multiple of the reference's slowest case, never
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
def _suite_from_text(text: str, label: str) -> TestSuite:
    return verl_ground_truth_to_suite(text, row=label)


def load_suite(ground_truth: Any, label: str) -> TestSuite:
    """The test suite of a verl ``ground_truth`` (JSON text cached: verl scores the n responses
    of a prompt one after another). Raises :class:`InvalidTestSuite`."""
    if isinstance(ground_truth, str):
        return _suite_from_text(ground_truth, label)
    return verl_ground_truth_to_suite(ground_truth, row=label)


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
            raise InvalidTestSuite(f"{label}: extra_info.{name} must be a finite number >= 0, got {value!r}")
        found[name] = float(value)
    return r.with_overrides(**found) if found else r


def prepare(data_source: Any, solution_str: Any, ground_truth: Any, extra_info: Any, opts: RewardOptions,
            *, suite: TestSuite | Exception | None = None, route_: Route | None = None,
            code: str | None = None) -> Prepared:
    """Steps 1-3 of the module docstring for one response: a :class:`Task`, or an immediate result.

    ``suite``/``route_`` may be passed in when the caller already built them (the batch variant
    and the scoring pipeline build a row's suite once for its n responses); an ``Exception``
    passed as ``suite`` is the row's conversion error. ``code``: a program to judge as is instead
    of the one extracted from ``solution_str`` (a row's reference solution,
    :mod:`arbiter.verl.references`). Raises ``ValueError`` for a non-code ``data_source`` or a
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
            return Prepared(label, started, result=_result(0.0, Outcome.INVALID_TASK.value, 0, 0, reason, started),
                            invalid_error=exc)
    r = r.with_overrides(checker=opts.checker, case_insensitive=opts.case_insensitive, abs_tol=opts.abs_tol,
                         rel_tol=opts.rel_tol, time_limit=time_limit, memory_limit_mb=opts.memory_limit_mb)
    if suite is None:
        try:
            suite = load_suite(ground_truth, label)
        except InvalidTestSuite as exc:
            suite = exc
    if not isinstance(suite, Exception):
        try:
            r = _with_row_tolerance(r, extra_info, label, opts)
        except InvalidTestSuite as exc:
            suite = exc
    if isinstance(suite, Exception):
        return Prepared(label, started, result=_result(0.0, Outcome.INVALID_TASK.value, 0, 0, str(suite), started),
                        invalid_error=suite)
    suite_cases = len(suite)
    if opts.parity == "prime_code":
        suite = TestSuite(suite.cases[:PRIME_CODE_CASES], origin=f"{suite.origin}[:{PRIME_CODE_CASES}]")
    warning = _row_warning(label, suite)
    if code is None:
        got = extract_code(solution_str, opts.max_response_chars)
        if not got.ok:
            return Prepared(label, started, result=_result(0.0, Outcome.FORMAT_ERROR.value, 0, len(suite),
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
                    warning=warning)


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
        return _result(0.0, outcome.value, verdict.passed, verdict.total, reason, prep.started, verdict.seconds, cpu,
                       prep.prep_seconds, prep.warning)
    if outcome is Outcome.INVALID_TASK:
        if opts.on_invalid == "raise" and raise_errors:
            raise InvalidTask(f"row {prep.label!r}: {verdict.reason}", row=prep.label)
        log.warning("INVALID_TASK %s scored 0.0: %s", prep.label, verdict.reason)
    reason = verdict.reason
    if opts.parity and outcome not in (Outcome.INVALID_TASK, Outcome.CE):
        outcome, reason = _parity_label(opts.parity, verdict, prep.suite_cases)
    return _result(verdict.score, outcome.value, verdict.passed, verdict.total, reason, prep.started,
                   verdict.seconds, cpu, prep.prep_seconds, prep.warning)


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


_slots: tuple[int, threading.BoundedSemaphore] | None = None
_slots_lock = threading.Lock()


def _judge_slots() -> threading.BoundedSemaphore:
    """A per-process bound of one running judge per core for :func:`compute_score`, whose callers
    may run it from any number of threads (verl's reward loop runs sync reward functions in a
    thread pool). Oversubscribed cores would turn CPU-bound programs into wall-limit TLEs (the
    wall limit is ``2 x CPU + 1`` s). Recreated after a fork."""
    global _slots
    with _slots_lock:
        if _slots is None or _slots[0] != os.getpid():
            _slots = (os.getpid(), threading.BoundedSemaphore(default_workers()))
        return _slots[1]


def compute_score(data_source: Any, solution_str: Any, ground_truth: Any, extra_info: Any = None,
                  **kwargs: Any) -> RewardResult:
    """Score one response (verl ``custom_reward_function``; rules in the module docstring).

    - ``data_source``: the row's ``data_source`` (routing key; see :mod:`arbiter.verl.routing`).
    - ``solution_str``: the decoded response (markdown; the program is its last Python block).
    - ``ground_truth``: ``reward_model.ground_truth``: JSON text or decoded dict/list/numpy data.
    - ``extra_info``: the row's ``extra_info`` dict or ``None``; ``index`` labels the row,
      ``prelude`` (optional) replaces the route's Python prelude, ``time_limit`` (optional, CPU
      seconds per case) the route's CPU limit (:func:`row_time_limit`).
    - ``**kwargs``: :class:`RewardOptions` (verl ``reward_kwargs``).

    Accepts verl's call shapes: positional ``(data_source, solution_str, ground_truth,
    extra_info)`` (prime manager) and keywords (naive manager).

    Returns a :class:`RewardResult` (keys :data:`RESULT_KEYS`; seconds are wall seconds).
    Raises ``ValueError`` (non-code data_source, bad option value), ``TypeError`` (unknown
    option), :class:`InvalidTask` (an unusable ``ground_truth``, by default; with
    ``on_invalid="zero"`` it scores 0.0 with ``verdict: "INVALID_TASK"`` instead),
    :class:`SandboxFailure` (with ``on_sandbox_error="raise"``, the default).
    """
    opts = RewardOptions.from_kwargs(kwargs)
    prep = prepare(data_source, solution_str, ground_truth, extra_info, opts)
    verdict = None
    if prep.task is not None:
        with _judge_slots():
            verdict = judge(prep.task)
    return finish(prep, verdict, opts)


def compute_score_float(data_source: Any, solution_str: Any, ground_truth: Any, extra_info: Any = None,
                        **kwargs: Any) -> float:
    """:func:`compute_score`'s ``score`` alone, for callers that accept only a number. Same
    arguments and errors."""
    return compute_score(data_source, solution_str, ground_truth, extra_info, **kwargs)["score"]


def _as_list(values: Any, name: str) -> list:
    if values is None:
        raise ValueError(f"{name} is required")
    if isinstance(values, (str, bytes, Mapping)):
        raise ValueError(f"{name} must be a sequence of per-response values, got a {type(values).__name__}")
    return list(values)


def iter_scores(items: Iterable[tuple[Any, Any, Any, Any]], opts: RewardOptions, *,
                raise_errors: bool = True) -> Iterator[RewardResult]:
    """Score ``(data_source, solution_str, ground_truth, extra_info)`` items in parallel
    (``opts.workers`` sandboxes at once, default one per core), yielding results in input order.

    Items are consumed lazily and at most ``2 x workers`` items (judged or not) are in flight, so
    memory stays bounded on long streams whatever the mix. (This is :func:`arbiter.judge.judge.judge_many`'s scheme
    with one difference: ``judge_many`` pulls only tasks, so a long run of responses that need no
    judging, e.g. FORMAT_ERROR, would be pulled into memory while it looks for the next task.)
    Consecutive items that share one ground-truth object or text reuse its parsed suite (verl
    repeats a prompt's row for its n responses).

    ``raise_errors=False`` returns INVALID_TASK / SANDBOX_ERROR as results whatever the options
    say (``on_invalid``, ``on_sandbox_error``), and a non-code data_source as an INVALID_TASK
    result (with ``raise_errors`` it raises ``ValueError`` before judging that item); this is how
    ``arbiter score`` records bad rows and goes on.
    """
    cache: dict[tuple, tuple[Any, TestSuite | Exception]] = {}

    def suite_for(ground_truth: Any, label: str) -> TestSuite | Exception:
        # str: keyed by value; decoded data: by identity (the object is kept alive in the cache,
        # so its id cannot be reused while the entry exists)
        key = (label, ground_truth) if isinstance(ground_truth, str) else (label, id(ground_truth))
        hit = cache.get(key)
        if hit is not None:
            return hit[1]
        try:
            suite: TestSuite | Exception = verl_ground_truth_to_suite(ground_truth, row=label)
        except InvalidTestSuite as exc:
            suite = exc
        if len(cache) >= 8:
            cache.pop(next(iter(cache)))
        cache[key] = (ground_truth, suite)
        return suite

    def prepared(data_source: Any, solution_str: Any, ground_truth: Any, extra_info: Any) -> Prepared:
        label = row_label(data_source, extra_info)
        try:
            r = route(data_source)
        except ValueError as exc:
            if raise_errors:
                raise
            now = time.monotonic()  # a stream (arbiter score) reports the row and goes on
            return Prepared(label, now, result=_result(0.0, Outcome.INVALID_TASK.value, 0, 0, str(exc), now),
                            invalid_error=exc)
        return prepare(data_source, solution_str, ground_truth, extra_info, opts,
                       suite=suite_for(ground_truth, label), route_=r)

    workers = int(opts.workers or default_workers())
    window: deque[tuple[Prepared, Any]] = deque()
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="arbiter-judge") as pool:
        try:
            for item in items:
                prep = prepared(*item)
                window.append((prep, pool.submit(judge, prep.task) if prep.task is not None else None))
                while window and (window[0][1] is None or window[0][1].done() or len(window) > 2 * workers):
                    prep, fut = window.popleft()
                    yield finish(prep, fut.result() if fut is not None else None, opts, raise_errors=raise_errors)
            while window:
                prep, fut = window.popleft()
                yield finish(prep, fut.result() if fut is not None else None, opts, raise_errors=raise_errors)
        finally:
            for _, fut in window:  # abandoned (an exception, or the consumer stopped early)
                if fut is not None:
                    fut.cancel()


def compute_score_batch(data_sources: Sequence[Any], solution_strs: Sequence[Any], ground_truths: Sequence[Any],
                        extra_infos: Sequence[Any] | None = None, **kwargs: Any) -> list[RewardResult]:
    """Score a batch in parallel (verl ``reward_manager=batch``: one keyword call per batch with
    ``data_sources=``, ``solution_strs=``, ``ground_truths=``, ``extra_infos=`` plus
    ``reward_kwargs``; lists or numpy arrays).

    Judges on all cores (:func:`iter_scores`; ``workers`` option, default one per core; one
    sandbox per response) and
    returns one :class:`RewardResult` per response, in order. A prompt's n responses share one
    parsed suite.

    Raises ``ValueError`` (lengths differ, a non-code data_source: checked before anything runs),
    ``TypeError`` (unknown option), :class:`InvalidTask` (``on_invalid="raise"``, the default:
    the first invalid row, before judging; ``on_invalid="zero"`` scores such rows 0.0),
    :class:`SandboxFailure` (``on_sandbox_error="raise"``: after the whole batch is judged, with
    ``.results`` holding every result).
    """
    opts = RewardOptions.from_kwargs(kwargs)
    sources = _as_list(data_sources, "data_sources")
    solutions = _as_list(solution_strs, "solution_strs")
    truths = _as_list(ground_truths, "ground_truths")
    extras = [None] * len(sources) if extra_infos is None else _as_list(extra_infos, "extra_infos")
    lengths = {"data_sources": len(sources), "solution_strs": len(solutions), "ground_truths": len(truths),
               "extra_infos": len(extras)}
    if len(set(lengths.values())) != 1:
        raise ValueError(f"compute_score_batch: lengths differ: {lengths}")
    for ds in dict.fromkeys(map(str, sources)):
        route(ds)  # a non-code source fails the batch before any judging
    if opts.on_invalid == "raise":
        for ds, gt, ei in zip(sources, truths, extras):
            label = row_label(ds, ei)
            try:
                load_suite(gt, label)
                if opts.time_limit is None:
                    row_time_limit(ei)
            except InvalidTestSuite as exc:
                raise InvalidTask(str(exc), row=label) from exc
            except ValueError as exc:  # extra_info.time_limit
                raise InvalidTask(f"row {label!r}: {exc}", row=label) from exc
    results = list(iter_scores(zip(sources, solutions, truths, extras), opts, raise_errors=False))
    if opts.on_sandbox_error == "raise":
        failed = [(i, r) for i, r in enumerate(results) if r["verdict"] == Outcome.SANDBOX_ERROR.value]
        if failed:
            i, first = failed[0]
            raise SandboxFailure(
                f"{len(failed)} of {len(results)} responses hit SANDBOX_ERROR after retries; first (item {i}, "
                f"{row_label(sources[i], extras[i])}): {first['reason']}",
                row=row_label(sources[i], extras[i]), reason=first["reason"], results=results)
    return results


_executor: tuple[int, ThreadPoolExecutor] | None = None
_executor_lock = threading.Lock()


def _async_executor() -> ThreadPoolExecutor:
    """One thread per core, per process (a pool inherited through ``fork`` has no live threads:
    verl's prime manager forks workers, so the pool is recreated in a new process)."""
    global _executor
    with _executor_lock:
        if _executor is None or _executor[0] != os.getpid():
            _executor = (os.getpid(), ThreadPoolExecutor(max_workers=default_workers(),
                                                         thread_name_prefix="arbiter-reward"))
        return _executor[1]


async def compute_score_async(data_source: Any, solution_str: Any, ground_truth: Any, extra_info: Any = None,
                              **kwargs: Any) -> RewardResult:
    """:func:`compute_score` as a coroutine (verl awaits coroutine reward functions; its reward
    loop runs many at once). The blocking judge runs in a shared thread pool of one thread per
    core, so the event loop is never blocked and at most one sandbox per core runs however many
    coroutines are waiting. Same arguments, result and errors as :func:`compute_score`."""
    loop = asyncio.get_running_loop()
    call = functools.partial(compute_score, data_source, solution_str, ground_truth, extra_info, **kwargs)
    return await loop.run_in_executor(_async_executor(), call)


async def compute_score_batch_async(data_sources: Sequence[Any], solution_strs: Sequence[Any],
                                    ground_truths: Sequence[Any], extra_infos: Sequence[Any] | None = None,
                                    **kwargs: Any) -> list[RewardResult]:
    """:func:`compute_score_batch` as a coroutine (runs in a worker thread; the batch judges on all
    cores). Same arguments, result and errors."""
    call = functools.partial(compute_score_batch, data_sources, solution_strs, ground_truths, extra_infos, **kwargs)
    return await asyncio.get_running_loop().run_in_executor(None, call)


__all__ = [
    "InvalidTask",
    "PARITY_MODES",
    "RESULT_KEYS",
    "RewardOptions",
    "RewardResult",
    "SandboxFailure",
    "compute_score",
    "compute_score_async",
    "compute_score_batch",
    "compute_score_batch_async",
    "compute_score_float",
    "iter_scores",
    "prepare",
    "row_label",
    "row_time_limit",
]
