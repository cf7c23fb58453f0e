"""The judge: ``Task -> Verdict``. The one place where "is this program right" is decided.

One sandbox session per submission (a warm sandbox from the pool: docs/sandbox.md, "Warm
pool"); the task's language builds the program once
(:mod:`arbiter.languages.registry`) and every test case runs inside that sandbox in a fresh
process. Per-case verdicts: :mod:`arbiter.judge.evaluate`. The submission-level verdicts
(``INVALID_TASK``, ``CE``, ``SANDBOX_ERROR`` and its retries) and the scoring modes:
``docs/checkers.md``, "From a run to a case verdict".
"""

from __future__ import annotations

import os
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Callable, Iterable, Iterator, Sequence

from arbiter.judge.checker_program import ExternalChecker
from arbiter.judge.evaluate import evaluate_case
from arbiter.judge.runner import Runner
from arbiter.judge.task import Task
from arbiter.judge.testsuite import CallCase, TestCase
from arbiter.judge.verdict import CaseResult, Outcome, Verdict
from arbiter.languages.base import BuildFailure, FailureKind, LoadFailure, Program
from arbiter.languages.registry import get_language
from arbiter.sandbox.config import SandboxConfig
from arbiter.sandbox.execution import Execution, Status
from arbiter.sandbox.pool import default_pool
from arbiter.sandbox.sandbox import SandboxError

_BUILD_OUTCOME = {
    FailureKind.COMPILE_ERROR: Outcome.CE,
    FailureKind.TASK_ERROR: Outcome.INVALID_TASK,
    FailureKind.ENVIRONMENT: Outcome.SANDBOX_ERROR,
}


@dataclass
class _Judging:
    """One submission being judged: what every verdict on it carries."""

    task: Task
    program: Program
    started: float
    results: list[CaseResult] = field(default_factory=list)

    def verdict(self, outcome: Outcome, reason: str, **kw) -> Verdict:
        """A verdict that ends the submission early (score 0), with its compile output."""
        kw.setdefault("compile_output", self.program.compile_output)
        kw.setdefault("toolchain", self.program.toolchain)
        return _verdict(self.task, outcome, reason, self.started, **kw)


def _verdict(task: Task, outcome: Outcome, reason: str, started: float, **kw) -> Verdict:
    return Verdict(outcome=outcome, score=0.0, total=len(task.suite), reason=reason,
                   seconds=time.monotonic() - started, **kw)


def judge(task: Task, *, config: SandboxConfig | None = None, retries: int = 2,
          on_case: Callable[[CaseResult], None] | None = None) -> Verdict:
    """Judge one program on its test suite. The rules: docs/checkers.md.

    - ``config``: sandbox configuration (default: isolated, Debian's python3).
    - ``retries``: how many times a case that hit ``SANDBOX_ERROR`` is retried in a fresh sandbox.
    - ``on_case``: called with each :class:`CaseResult` as it is decided (progress reporting).

    Returns a :class:`Verdict`; never raises for anything the program does (its output, its
    return value's size, depth or integers, its crashes). An unusable compile command is
    ``INVALID_TASK``; a compiler that is not installed is ``SANDBOX_ERROR``; an unexpected
    exception while judging a case's result (a bug on our side) is ``SANDBOX_ERROR`` naming the
    case and the exception. Raises ``ValueError`` only for an unknown language.
    """
    started = time.monotonic()
    language = get_language(task.language)
    if language is None:
        raise ValueError(f"task {task.task_id!r}: unknown language {task.language!r}")
    cases = list(task.suite)
    if not cases:
        return _verdict(task, Outcome.INVALID_TASK, "the test suite has zero cases", started)
    if not language.call_cases and any(isinstance(c, CallCase) for c in cases):
        return _verdict(task, Outcome.INVALID_TASK, "function-call tests need a Python program", started)
    if not _is_utf8(task.prelude):  # (a row's extra_info.prelude: a lone surrogate stopped whole batches)
        return _verdict(task, Outcome.INVALID_TASK, "the task's prelude is not UTF-8 text (a lone surrogate)", started)
    program = language.build(task.source, task.compile)
    if isinstance(program, BuildFailure):
        return _verdict(task, _BUILD_OUTCOME[program.kind], program.reason, started,
                        compile_output=program.compile_output, toolchain=program.toolchain)
    job = _Judging(task, program, started)
    runner = Runner(task, language, program, config)
    external = None
    try:
        if task.checker.name == "external":
            external = ExternalChecker(task.checker, config)
            if external.error:  # the task's checker does not compile, or its language is unknown
                return job.verdict(Outcome.INVALID_TASK, external.error)
            if external.host_error:  # (a compile time limit under load: ours, never reused)
                return job.verdict(Outcome.SANDBOX_ERROR, external.host_error)
        failure = _open(runner, retries)
        if failure:
            return job.verdict(Outcome.SANDBOX_ERROR, f"sandbox failure: {failure}")
        if runner.load_error is not None:
            return _load_failed(task, runner.load_error, started)
        stopped = _run_cases(job, cases, runner, external, retries, on_case)
        if stopped is not None:
            return stopped
    finally:
        runner.close()
        if external is not None:
            external.close()
    return _final_verdict(job, len(cases))


def _is_utf8(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _open(runner: Runner, retries: int) -> str:
    """Open the runner's first sandbox, retrying ``retries`` times; ``""`` or the last failure."""
    attempts_left = retries
    while True:
        try:
            runner.open()
            return ""
        except (SandboxError, OSError) as exc:
            if attempts_left <= 0:
                return str(exc)
            attempts_left -= 1


def _load_failed(task: Task, failure: LoadFailure, started: float) -> Verdict:
    if failure.in_prelude:
        return _verdict(task, Outcome.INVALID_TASK, "the task's prelude fails: " + failure.message[-300:], started)
    return _verdict(task, Outcome.CE, failure.reason, started, compile_output=failure.message[-4000:])


def _run_cases(job: _Judging, cases: list[TestCase], runner: Runner, external: ExternalChecker | None,
               retries: int, on_case: Callable[[CaseResult], None] | None) -> Verdict | None:
    """Run the cases into ``job.results``; a verdict when the submission ends early (a sandbox
    failure, a broken task, a judge bug), else ``None``."""
    task = job.task
    stop = task.scoring == "all_or_nothing" and not task.run_all
    failed = False
    for index, case in enumerate(cases):
        if failed and stop:
            job.results.append(CaseResult(name=case.name, outcome=Outcome.SKIPPED,
                                          detail="not run: an earlier case failed"))
            continue
        res = _run_case(job, case, runner, external, retries, last=index == len(cases) - 1)
        if isinstance(res, Verdict):
            return res
        if res.outcome in (Outcome.SANDBOX_ERROR, Outcome.INVALID_TASK):
            return job.verdict(res.outcome, f"case {case.name}: {res.detail}", cases=job.results + [res])
        job.results.append(res)
        if on_case is not None:
            on_case(res)
        if not res.passed:
            failed = True
    return None


#: Reruns of a case stopped by the wall limit while other processes held the CPU (it is never
#: TLE; still starved after these, the submission is SANDBOX_ERROR), after pauses of 1x, 2x,
#: ... this many seconds (docs/sandbox.md, "Under host load").
STARVED_RETRIES = 3
STARVED_PAUSE = 1.0


def _run_case(job: _Judging, case: TestCase, runner: Runner, external: ExternalChecker | None,
              retries: int, last: bool = False) -> CaseResult | Verdict:
    """One case, retried in a fresh sandbox after a sandbox failure, or in the same one after a
    pause when it was starved of CPU (:data:`STARVED_RETRIES`); a verdict on a judge bug.
    ``last``: no case follows it (:meth:`Runner.run`)."""
    attempts_left = retries
    starved_left = STARVED_RETRIES
    restart_error = ""
    while True:
        if restart_error:  # that retry is spent: the case is not run without a sandbox
            ex = Execution(Status.SANDBOX_ERROR,
                           detail=f"the sandbox could not be restarted after a failure: {restart_error}")
        else:
            try:
                ex = runner.run(case, last=last)
            except SandboxError as exc:
                ex = Execution(Status.SANDBOX_ERROR, detail=str(exc))
        try:
            res = evaluate_case(case, ex, job.task.checker, external)
        except Exception as exc:  # a judge bug: reported as ours, never raised into a batch
            return job.verdict(Outcome.SANDBOX_ERROR,
                               f"case {case.name}: internal error while judging the result "
                               f"({type(exc).__name__}: {str(exc)[:300]})", cases=job.results)
        if res.outcome is not Outcome.SANDBOX_ERROR:
            return res
        if ex.starved and starved_left > 0:  # the host's fault: wait for the load to ease
            starved_left -= 1
            time.sleep(STARVED_PAUSE * (STARVED_RETRIES - starved_left))
            continue
        if attempts_left <= 0:
            return res
        attempts_left -= 1
        restart_error = runner.reopen()


def _final_verdict(job: _Judging, total: int) -> Verdict:
    results = job.results
    passed = sum(1 for r in results if r.passed)
    first_bad = next((r for r in results if not r.passed and r.outcome is not Outcome.SKIPPED), None)
    if first_bad is None:
        outcome, reason = Outcome.AC, f"all {total} cases passed"
    else:
        outcome = first_bad.outcome
        reason = f"case {first_bad.name}: {first_bad.outcome.value}"
        if first_bad.diff or first_bad.detail:
            reason += f" ({(first_bad.diff or first_bad.detail)[:200]})"
    if job.task.scoring == "fraction":
        score = passed / total
    else:
        score = 1.0 if outcome is Outcome.AC else 0.0
    return Verdict(outcome=outcome, score=score, passed=passed, total=total, cases=results,
                   reason=reason, compile_output=job.program.compile_output, toolchain=job.program.toolchain,
                   seconds=time.monotonic() - job.started)


def default_workers() -> int:
    """Parallel submissions: one per core this process may use."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:
        return max(1, os.cpu_count() or 1)


def judge_many(tasks: Iterable[Task], *, workers: int | None = None,
               config: SandboxConfig | None = None, retries: int = 2) -> Iterator[Verdict]:
    """Judge tasks in parallel (one sandbox session per submission, ``workers`` at once, default
    one per core, their sandboxes kept warm in :func:`default_pool`); yields verdicts in the order
    of ``tasks``. Tasks are consumed lazily, so memory stays
    bounded on long streams."""
    n = workers or default_workers()
    default_pool().ensure_capacity(n)  # every worker's sandbox is kept warm between its tasks
    with ThreadPoolExecutor(max_workers=n, thread_name_prefix="judge") as pool:
        pending = []
        it = iter(tasks)
        for task in it:
            pending.append(pool.submit(judge, task, config=config, retries=retries))
            if len(pending) >= 2 * n:
                yield pending.pop(0).result()
        for fut in pending:
            yield fut.result()


def judge_all(tasks: Sequence[Task], **kw) -> list[Verdict]:
    """:func:`judge_many` collected into a list."""
    return list(judge_many(tasks, **kw))
