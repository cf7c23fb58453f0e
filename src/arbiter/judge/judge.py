"""The judge: ``Task -> Verdict``. The one place where "is this program right" is decided.

One sandbox per submission; the program is compiled (C++) or loaded (Python) once and every test
case runs inside that sandbox in a fresh process. Per-case verdicts follow DESIGN.md:

- the sandbox's ``time_limit`` / ``memory_limit`` / ``output_limit`` are TLE / MLE / OLE;
- a non-zero exit status or a fatal signal is RE, even when stdout matched;
- an exception inside a called function is RE, whatever the expected value;
- a function's return value is serialised to JSON inside the sandbox and compared here (never
  through the program's own ``__eq__``); a value that cannot be serialised (a generator, a
  custom object, a list nested past the sandbox's recursion limit) is WA; if serialising it
  crashes the process (a C stack overflow after ``sys.setrecursionlimit``), RE;
- the JSON is decoded here without the 4300-digit int limit (integers up to 1,000,000 digits,
  :mod:`arbiter.judge.jsonvalues`); a value that decodes but is nested deeper than the judge
  process can decode (about 1000 levels), or holds a longer integer, cannot equal any expected
  value and is WA with a diff that says so;
- a result whose decoding could take more than :data:`DECODE_BUDGET` bytes of the judge
  process is first counted (containers, items, members; in C, nothing decoded): more than every
  expected value has is WA undecoded, so the judge's memory per case stays within a small
  multiple of the output cap plus the expected values' own size (``docs/parsers.md``);
- otherwise the task's checker decides AC or WA.

Submission-level verdicts: ``INVALID_TASK`` (zero cases, call-based cases for C++), ``CE``
(compile error; a Python ``SyntaxError``), ``SANDBOX_ERROR`` (our failure: the sandbox is
restarted and the case retried ``retries`` times, then the verdict is reported, never turned
into a silent 0; a restart that fails spends a retry, and when none is left the verdict is
``SANDBOX_ERROR`` naming the failed restart: a case never runs without its sandbox).

Scoring: all-or-nothing (the cards' reward) stops at the first failing case unless
``task.run_all``; fraction mode runs every case.
"""

from __future__ import annotations

import os
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Callable, Iterable, Iterator, Sequence

from arbiter.checkers.compare import check_output, compare_values
from arbiter.checkers.result import CheckResult
from arbiter.checkers.spec import CheckerSpec
from arbiter.judge import jsonvalues
from arbiter.judge.jsonvalues import IntegerTooLong, JsonTooDeep
from arbiter.judge.jsonvalues import loads as loads_json
from arbiter.judge.task import Task
from arbiter.judge.testsuite import CallCase, StdioCase, TestCase
from arbiter.judge.verdict import CaseResult, Outcome, Verdict
from arbiter.sandbox.config import SandboxConfig
from arbiter.sandbox.execution import Execution, Status
from arbiter.sandbox.limits import MiB, Limits
from arbiter.sandbox.sandbox import Sandbox, SandboxError

_STATUS_OUTCOME = {
    Status.TIME_LIMIT: Outcome.TLE,
    Status.MEMORY_LIMIT: Outcome.MLE,
    Status.OUTPUT_LIMIT: Outcome.OLE,
    Status.RUNTIME_ERROR: Outcome.RE,
}
STDERR_TAIL = 600  # bytes of stderr quoted in an RE's detail
#: How the sandbox's call harness starts the JSON of a returned value (``json.dumps`` of
#: ``{"ok": True, "value": ...}``, default separators).
_VALUE_PREFIX = b'{"ok": true, "value": '
CHECKER_LIMITS = Limits(cpu_seconds=10, wall_seconds=20, memory_bytes=1024 * MiB)
#: A call's result whose decoding may cost more than this (bytes, :func:`_decode_cost`) is first
#: checked against the expected values' size (:func:`_json_items`) before it is decoded.
DECODE_BUDGET = 128 * MiB
_ITEM_MARKS = (b"[", b"{", b",", b":")


def _tail(data: bytes, n: int = STDERR_TAIL) -> str:
    text = data[-n:].decode("utf-8", "replace").strip()
    return text


class _Runner:
    """Owns the sandbox of one submission; restarts it after a sandbox failure."""

    def __init__(self, task: Task, config: SandboxConfig | None, binary: bytes | None):
        self.task = task
        self.config = config
        self.binary = binary
        self.sandbox: Sandbox | None = None
        self.load_error: str | None = None

    def open(self) -> None:
        self.close()
        files = {"main": self.binary} if self.binary is not None else None
        self.sandbox = Sandbox(files=files, limits=self.task.limits, config=self.config)
        if self.task.language == "python":
            self.load_error = self.sandbox.load_python(self.task.source, self.task.prelude)

    def reopen(self) -> str:
        """A fresh sandbox after a failure: ``""``, or why it could not be had (the restart
        failed, or the program no longer loads in it). Never raises."""
        try:
            self.open()
        except (SandboxError, OSError) as exc:
            self.close()
            return f"{type(exc).__name__}: {exc}" if isinstance(exc, OSError) else str(exc)
        if self.load_error is not None:  # it loaded in the first sandbox: ours, not the program's
            self.close()
            return f"the program no longer loads in the new sandbox: {self.load_error[-300:]}"
        return ""

    def run(self, case: TestCase) -> Execution:
        if self.sandbox is None:
            raise SandboxError("no sandbox (a restart failed)")
        lim = self.task.limits
        if isinstance(case, CallCase):
            call = jsonvalues.dumps({"args": list(case.args), "kwargs": dict(case.kwargs)})
            return self.sandbox.call_python(case.fn_name, limits=lim, call_json=call)
        if self.task.language == "python":
            return self.sandbox.run_python(case.stdin, lim)
        return self.sandbox.run([f"{self.sandbox.prog_dir}/main"], case.stdin, lim)

    def close(self) -> None:
        if self.sandbox is not None:
            self.sandbox.close()
            self.sandbox = None


class _ExternalChecker:
    """A testlib-style checker program (``checker input output answer``, exit 0 accepts), compiled
    once and run in its own sandbox: the checker comes from the dataset, but it reads the
    program's output, so it is isolated too."""

    def __init__(self, spec: CheckerSpec, config: SandboxConfig | None):
        self.spec = spec
        self.config = config
        self.sandbox: Sandbox | None = None
        self.error = ""
        lang = spec.program_language
        if lang == "cpp":
            from arbiter.languages.cpp import compile_cpp
            from arbiter.judge.task import CompileSpec

            res = compile_cpp(spec.program or "", CompileSpec())
            if not res.ok:
                self.error = f"checker does not compile: {res.message[:500]}"
                return
            self.sandbox = Sandbox(files={"checker": res.binary}, limits=CHECKER_LIMITS, config=config)
            self.argv = [f"{self.sandbox.prog_dir}/checker"]
        elif lang == "python":
            self.sandbox = Sandbox(files={"checker.py": (spec.program or "").encode()},
                                   limits=CHECKER_LIMITS, config=config)
            self.argv = [self.sandbox.config.python, "-I", "-S", f"{self.sandbox.prog_dir}/checker.py"]
        else:
            self.error = f"unknown checker language {lang!r}"

    def check(self, case: StdioCase, output: bytes) -> CheckResult | str | None:
        """A :class:`CheckResult`; a string when the checker itself failed (the task's fault:
        testlib's exit 3 "FAIL", any other exit status, a crash, a Python traceback, a time
        limit); ``None`` when the sandbox failed (ours).

        testlib's convention: exit 0 accepts, 1 (WA) and 2 (presentation error) reject.
        """
        if self.sandbox is None:
            return None
        sb = self.sandbox
        sb.put("input.txt", case.stdin)
        sb.put("output.txt", output)
        last = CheckResult(False, "")
        for answer in case.expected:
            sb.put("answer.txt", answer)
            ex = sb.run([*self.argv, "input.txt", "output.txt", "answer.txt"], b"", CHECKER_LIMITS)
            if ex.status is Status.SANDBOX_ERROR:
                return None
            if ex.status is Status.OK:
                return CheckResult(True, "")
            msg = _tail(ex.stderr or ex.stdout, 300)
            python_crash = self.spec.program_language == "python" and "Traceback (most recent call last)" in msg
            if (ex.status is Status.RUNTIME_ERROR and ex.signal is None and ex.exit_code in (1, 2)
                    and not python_crash):
                last = CheckResult(False, f"checker: {msg}" if msg else f"checker exit {ex.exit_code}")
                continue
            return f"the checker failed ({ex.detail}){': ' + msg if msg else ''}"
        return last

    def close(self) -> None:
        if self.sandbox is not None:
            self.sandbox.close()


def evaluate_case(case: TestCase, ex: Execution, checker: CheckerSpec,
                  external: _ExternalChecker | None = None) -> CaseResult:
    """The verdict on one case from the sandbox's :class:`Execution` (see the module docstring).

    Raises nothing; a failed external checker yields ``SANDBOX_ERROR``.
    """
    res = CaseResult(name=case.name, outcome=Outcome.AC, cpu_seconds=ex.cpu_seconds,
                     wall_seconds=ex.wall_seconds, memory_bytes=ex.peak_memory_bytes,
                     exit_code=ex.exit_code, signal=ex.signal)
    if ex.status is Status.SANDBOX_ERROR:
        res.outcome, res.detail = Outcome.SANDBOX_ERROR, ex.detail
        return res
    if isinstance(case, CallCase):
        return _evaluate_call(case, ex, checker, res)
    if ex.status is not Status.OK:
        res.outcome = _STATUS_OUTCOME[ex.status]
        res.detail = ex.detail
        if ex.status is Status.RUNTIME_ERROR and ex.stderr:
            res.detail += ": " + _tail(ex.stderr)
        return res
    if external is not None:
        result = external.check(case, ex.stdout)
        if result is None:
            res.outcome, res.detail = Outcome.SANDBOX_ERROR, external.error or "the checker's sandbox failed"
            return res
        if isinstance(result, str):  # the task's checker is broken: never the program's fault
            res.outcome, res.detail = Outcome.INVALID_TASK, result
            return res
    else:
        result = check_output(checker, ex.stdout, case.expected)
    if not result.ok:
        res.outcome, res.diff = Outcome.WA, result.diff
    return res


def _json_items(data: bytes | str, start: int = 0, end: int | None = None) -> int:
    """The number of ``[``, ``{``, ``,`` and ``:`` in ``data[start:end]``: at least one per
    container, array item and object member of the JSON there (strings may add more), counted
    in C without decoding."""
    if isinstance(data, str):
        data = data.encode("utf-8", "surrogatepass")
    end = len(data) if end is None else end
    return sum(data.count(m, start, end) for m in _ITEM_MARKS)


def _decode_cost(data: bytes) -> int:
    """An upper bound of the memory ``json.loads(data)`` takes in the judge process (bytes): at
    most one object of at most about 100 bytes per :func:`_json_items` mark (an empty list
    costs 80), plus the text decoded (a str copy, then the strings)."""
    return 100 * _json_items(data) + 3 * len(data)


def _too_large_to_match(case: CallCase, result: bytes) -> str:
    """Why the harness's ``{"ok": true, "value": ...}`` result cannot match any expected value,
    without decoding it; ``""`` when it might. A value equal to an expected one has exactly its
    containers, items and members (numbers and strings hold no marks, and the same strings hold
    the same ones), so more :func:`_json_items` than every expected value's canonical JSON
    cannot match (duplicate object keys are counted as written)."""
    items = _json_items(result, len(_VALUE_PREFIX), len(result) - 1)
    most = -1
    for want in case.expected:
        try:
            most = max(most, _json_items(jsonvalues.dumps(want)))
        except (TypeError, ValueError, RecursionError):
            return ""
    if items <= most:
        return ""
    return (f"the return value is too large to match: its {len(result):,} bytes of JSON hold {items:,} "
            f"containers/items/members, the expected value{'s' if len(case.expected) > 1 else ''} at most "
            f"{max(most, 0):,} (not decoded: that would take up to {_decode_cost(result) // MiB:,} MiB)")


def _evaluate_call(case: CallCase, ex: Execution, checker: CheckerSpec, res: CaseResult) -> CaseResult:
    if ex.status in (Status.TIME_LIMIT, Status.MEMORY_LIMIT, Status.OUTPUT_LIMIT):
        res.outcome, res.detail = _STATUS_OUTCOME[ex.status], ex.detail
        return res
    if ex.result and _decode_cost(ex.result) > DECODE_BUDGET:
        # judge-side memory stays bounded: only a value that may match is decoded
        if not (ex.result.startswith(_VALUE_PREFIX) and ex.result.endswith(b"}")):
            res.outcome = Outcome.RE  # the harness's other payloads are short: not its result
            res.detail = (f"the call's result ({len(ex.result):,} bytes) is not the harness's return value"
                          + (f" ({ex.detail})" if ex.detail else ""))
            return res
        why = _too_large_to_match(case, ex.result)
        if why:
            if ex.status is Status.RUNTIME_ERROR:  # returned, then the process died
                res.outcome, res.detail = Outcome.RE, ex.detail
            else:
                res.outcome, res.diff = Outcome.WA, why
            return res
    payload = None
    if ex.result:
        try:
            payload = loads_json(ex.result)
        except (JsonTooDeep, IntegerTooLong) as exc:
            # Valid JSON the judge process cannot hold: nested deeper than its recursion limit
            # or an integer over the digit cap. No expected value decoded from JSON is that
            # deep or that long, so a returned value of this kind cannot match: WA (RE when
            # the process failed; anything else is not the harness's value payload: RE below).
            if ex.status is Status.OK and ex.result.startswith(_VALUE_PREFIX):
                res.outcome = Outcome.WA
                res.diff = f"the return value cannot be compared: {exc}"
                return res
            payload = None
        except ValueError:
            payload = None
    if not isinstance(payload, dict):
        res.outcome = Outcome.RE
        res.detail = (ex.detail or "the function did not return") + (
            ": " + _tail(ex.stderr) if ex.stderr else "")
        return res
    if not payload.get("ok"):
        res.outcome = Outcome.RE  # an exception in the call is RE, whatever the expected value
        res.detail = f"exception: {str(payload.get('error', ''))[:500]}"
        return res
    if ex.status is Status.RUNTIME_ERROR:  # returned, then the process died (os._exit(1), ...)
        res.outcome, res.detail = Outcome.RE, ex.detail
        return res
    if "unserializable" in payload:  # (str(): the payload's fields are not trusted to be strings)
        res.outcome = Outcome.WA
        res.diff = (f"returned a {str(payload.get('type', 'value'))[:60]} that is not a JSON value "
                    f"({str(payload['unserializable'])[:200]})")
        return res
    value = payload.get("value")
    first: CheckResult | None = None
    for want in case.expected:
        r = compare_values(value, want, checker.abs_tol, checker.rel_tol, strict_bool=checker.strict_bool)
        if r.ok:
            return res
        if first is None:
            first = r
    res.outcome = Outcome.WA
    res.diff = first.diff if first is not None else "no expected value"
    return res


def _verdict(task: Task, outcome: Outcome, reason: str, started: float, **kw) -> Verdict:
    return Verdict(outcome=outcome, score=0.0, total=len(task.suite), reason=reason,
                   seconds=time.monotonic() - started, **kw)


def judge(task: Task, *, config: SandboxConfig | None = None, retries: int = 2,
          on_case: Callable[[CaseResult], None] | None = None) -> Verdict:
    """Judge one program on its test suite. See the module docstring for the rules.

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
    if task.language not in ("python", "cpp"):
        raise ValueError(f"task {task.task_id!r}: unknown language {task.language!r}")
    cases = list(task.suite)
    if not cases:
        return _verdict(task, Outcome.INVALID_TASK, "the test suite has zero cases", started)
    if task.language == "cpp" and any(isinstance(c, CallCase) for c in cases):
        return _verdict(task, Outcome.INVALID_TASK, "function-call tests need a Python program", started)

    binary = None
    compile_output = ""
    toolchain = None
    if task.language == "cpp":
        from arbiter.languages.cpp import CompileCommandError, ToolchainUnavailable, compile_cpp

        try:
            comp = compile_cpp(task.source, task.compile)
        except CompileCommandError as exc:  # the row's compile command is unusable
            return _verdict(task, Outcome.INVALID_TASK, f"compile command: {exc}", started)
        except (SandboxError, ToolchainUnavailable) as exc:  # ours, never the program's
            return _verdict(task, Outcome.SANDBOX_ERROR, f"compile: {exc}", started)
        compile_output = comp.message
        toolchain = comp.toolchain.to_dict() if comp.toolchain is not None else None
        if not comp.ok:
            why = "compile time limit exceeded" if comp.timed_out else "compile error"
            return _verdict(task, Outcome.CE, why, started, compile_output=compile_output,
                            toolchain=toolchain)
        binary = comp.binary

    external = None
    runner = _Runner(task, config, binary)
    results: list[CaseResult] = []
    try:
        if task.checker.name == "external":
            external = _ExternalChecker(task.checker, config)
            if external.error:  # the task's checker does not compile, or its language is unknown
                return _verdict(task, Outcome.INVALID_TASK, external.error, started,
                                compile_output=compile_output, toolchain=toolchain)
        attempts_left = retries
        while True:
            try:
                runner.open()
                break
            except (SandboxError, OSError) as exc:
                if attempts_left <= 0:
                    return _verdict(task, Outcome.SANDBOX_ERROR, f"sandbox failure: {exc}", started,
                                    compile_output=compile_output, toolchain=toolchain)
                attempts_left -= 1
        if runner.load_error is not None:
            if runner.sandbox is not None and runner.sandbox.load_stage == "prelude":
                return _verdict(task, Outcome.INVALID_TASK, "the task's prelude fails: "
                                + runner.load_error[-300:], started)
            return _verdict(task, Outcome.CE, "the program does not compile (SyntaxError)", started,
                            compile_output=runner.load_error[-4000:])
        stop = task.scoring == "all_or_nothing" and not task.run_all
        failed = False
        for case in cases:
            if failed and stop:
                results.append(CaseResult(name=case.name, outcome=Outcome.SKIPPED,
                                          detail="not run: an earlier case failed"))
                continue
            attempts_left = retries
            restart_error = ""
            while True:
                if restart_error:  # that retry is spent: the case is not run without a sandbox
                    ex = Execution(Status.SANDBOX_ERROR,
                                   detail=f"the sandbox could not be restarted after a failure: {restart_error}")
                else:
                    try:
                        ex = runner.run(case)
                    except SandboxError as exc:
                        ex = Execution(Status.SANDBOX_ERROR, detail=str(exc))
                try:
                    res = evaluate_case(case, ex, task.checker, external)
                except Exception as exc:  # a judge bug: reported as ours, never raised into a batch
                    return _verdict(task, Outcome.SANDBOX_ERROR,
                                    f"case {case.name}: internal error while judging the result "
                                    f"({type(exc).__name__}: {str(exc)[:300]})", started,
                                    cases=results, compile_output=compile_output, toolchain=toolchain)
                if res.outcome is not Outcome.SANDBOX_ERROR or attempts_left <= 0:
                    break
                attempts_left -= 1
                restart_error = runner.reopen()
            if res.outcome in (Outcome.SANDBOX_ERROR, Outcome.INVALID_TASK):
                return _verdict(task, res.outcome, f"case {case.name}: {res.detail}", started,
                                cases=results + [res], compile_output=compile_output,
                                toolchain=toolchain)
            results.append(res)
            if on_case is not None:
                on_case(res)
            if not res.passed:
                failed = True
    finally:
        runner.close()
        if external is not None:
            external.close()

    passed = sum(1 for r in results if r.passed)
    total = len(cases)
    first_bad = next((r for r in results if not r.passed and r.outcome is not Outcome.SKIPPED), None)
    if first_bad is None:
        outcome, reason = Outcome.AC, f"all {total} cases passed"
    else:
        outcome = first_bad.outcome
        reason = f"case {first_bad.name}: {first_bad.outcome.value}"
        if first_bad.diff or first_bad.detail:
            reason += f" ({(first_bad.diff or first_bad.detail)[:200]})"
    if task.scoring == "fraction":
        score = passed / total
    else:
        score = 1.0 if outcome is Outcome.AC else 0.0
    return Verdict(outcome=outcome, score=score, passed=passed, total=total, cases=results,
                   reason=reason, compile_output=compile_output, toolchain=toolchain,
                   seconds=time.monotonic() - started)


def default_workers() -> int:
    """Parallel submissions: one per core this process may use."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:
        return max(1, os.cpu_count() or 1)


def judge_many(tasks: Iterable[Task], *, workers: int | None = None,
               config: SandboxConfig | None = None, retries: int = 2) -> Iterator[Verdict]:
    """Judge tasks in parallel (one sandbox per submission, ``workers`` at once, default one per
    core); yields verdicts in the order of ``tasks``. Tasks are consumed lazily, so memory stays
    bounded on long streams."""
    n = workers or default_workers()
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
