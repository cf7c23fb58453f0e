"""One return row through its stages (task, messages and format, compile, tests, measure and speed); the
rules that decide are in :mod:`arbiter.rewards.oracle`. See ``docs/oracle.md``.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

from arbiter.datasets.oracle import ReturnRow, SeedRow
from arbiter.pipelines.oracle.context import TaskInfo, VerifyContext
from arbiter.pipelines.oracle.format import check_answer
from arbiter.pipelines.oracle.generated_tests import seed_compile_spec
from arbiter.pipelines.oracle.measure import measure
from arbiter.pipelines.oracle.options import COMPILE_MESSAGE_CHARS, MAX_CASES_LISTED, InfraError
from arbiter.pipelines.oracle.suites import Case, judge_suite, suites_of
from arbiter.rewards.oracle import full_mark, reason


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

def verify_row(row: ReturnRow, seed: SeedRow, ctx: VerifyContext) -> RowResult:
    """Verify one return row against its seed; the stages are :data:`STAGE_FUNCTIONS`.

    Returns a :class:`RowResult`. Never raises for anything in the row or the answer; our own failures
    (sandbox, valgrind, compiler missing) come back as ``RowResult.error`` (the row is then neither accepted nor
    rejected and a rerun retries it).
    """
    res = RowResult(key=row.key, task_id=row.task_id, line=row.origin.line if row.origin else None)
    try:
        run_stages(RowState(row, seed, ctx, res))
    except InfraError as exc:
        res.error = str(exc)
    except Exception as exc:  # noqa: BLE001 - one row never stops the batch
        from arbiter.languages.cpp.toolchain import ToolchainUnavailable
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


@dataclass
class RowState:
    """What the stages of one row read and write."""

    row: ReturnRow
    seed: SeedRow
    ctx: VerifyContext
    res: RowResult
    notes: list[str] = field(default_factory=list)
    started: float = field(default_factory=time.monotonic)
    info: TaskInfo = field(default_factory=TaskInfo)
    suites: list[tuple[str, list[Case] | None]] = field(default_factory=list)
    task_ok: bool = True
    code: str | None = None
    passed: list[Any] = field(default_factory=list)  # the answer's AC verdicts, one per suite
    cases: list[Case] = field(default_factory=list)  # the cases of those suites

    @property
    def ver(self) -> dict[str, Any]:
        return self.res.verification


def _new_verification() -> dict[str, Any]:
    return {"compile_ok": False, "all_visible_tests_pass": False, "all_hidden_tests_pass": None,
            "all_generated_tests_pass": None, "score": 0.0, "runtime_ms": None, "speedup": None,
            "largest_speedup": None, "instructions": None, "cycles": None, "toolchain": None, "notes": "",
            "claim_disagreements": [], "tests": {}, "measurement": None, "speed_gate": None}


def task_stage(st: RowState) -> bool:
    """The task is usable: its hidden tests loaded and were checked, its generated suite was built."""
    seed, ctx = st.seed, st.ctx
    if ctx.hidden is not None and seed.task_id in ctx.hidden.invalid_tasks:
        st.res.reasons.append(reason("task", "INVALID_TASK", f"the hidden tests of {seed.task_id} were rejected "
                                     "(see rejected.jsonl, kind 'hidden'); the task cannot be verified"))
        st.task_ok = False
    if st.task_ok:
        st.info = ctx.task_info(seed)
        for err in (st.info.hidden_error, st.info.generated_error):
            if err is not None:
                st.res.reasons.append(reason("task", "INVALID_TASK", err))
                st.task_ok = False
        _note_hidden_check(st)
    # a suite that exists but is not run (or fails) is "not all passed": False; a suite that does not exist: None
    st.suites = suites_of(seed, ctx, st.info)
    for name, cases in st.suites:
        st.ver[f"all_{name}_tests_pass"] = False if cases is not None else None
    return True


def _note_hidden_check(st: RowState) -> None:
    hc = st.info.hidden
    if hc is not None and hc.dropped:
        names = [d["name"] for d in hc.dropped]
        listed = ", ".join(f"{d['name']} {d['outcome']}" for d in hc.dropped[:MAX_CASES_LISTED])
        st.notes.append(f"{len(names)} of {hc.total} hidden test(s) dropped as bad data: the seed's source_code "
                        f"(correct by contract) fails them ({listed})"
                        + ("; the task's hidden suite is treated as absent" if hc.all_bad else ""))
        st.ver["hidden_tests_dropped"] = names
    if hc is not None and hc.unconfirmed:
        st.notes.append(f"{len(hc.unconfirmed)} hidden test(s) kept unconfirmed: the seed's source_code did not "
                        f"finish them ({', '.join(d['name'] for d in hc.unconfirmed[:MAX_CASES_LISTED])})")


def answer_stage(st: RowState) -> bool:
    """Messages and format; the row goes on only with a usable task and a program."""
    check = check_answer(st.row.messages, st.seed.messages)
    for f in check.failures:
        st.res.reasons.append(reason(f.stage, f.code.value, f.message, path=f.path))
    st.code = check.code
    if st.code is None and st.task_ok:
        st.notes.append("not compiled: the answer holds no program in the required format")
    return st.task_ok and st.code is not None


def compile_stage(st: RowState) -> bool:
    """The answer compiles with the seed's own command."""
    from arbiter.judge.build import CompileCommandError, build_cpp

    spec = seed_compile_spec(st.seed)
    t0 = time.monotonic()
    try:
        with st.ctx.work():
            comp = build_cpp(st.code, spec)
    except CompileCommandError as exc:
        st.res.reasons.append(reason("task", "INVALID_TASK", f"the seed's compile command is refused: {exc}"))
        return False
    finally:
        st.res.timing["compile_seconds"] = round(time.monotonic() - t0, 4)
        st.ctx.add_seconds("compile", time.monotonic() - t0)
    st.ver["toolchain"] = comp.toolchain.to_dict()
    st.res.timing["compile_cached"] = comp.cached
    if not comp.ok:
        why = "compile time limit exceeded" if comp.timed_out else "compile error"
        msg = comp.message
        if len(msg) > COMPILE_MESSAGE_CHARS:
            msg = msg[:COMPILE_MESSAGE_CHARS] + f"\n[... {len(comp.message) - COMPILE_MESSAGE_CHARS} more characters]"
        st.res.reasons.append(reason("compile", "CE", f"{why} with `{comp.command or spec.command}`:\n{msg}"))
        st.notes.append("not run: the answer does not compile")
        return False
    st.ver["compile_ok"] = True
    return True


def tests_stage(st: RowState) -> bool:
    """Every suite that exists, in order; the row is measured only when all of them pass."""
    t0 = time.monotonic()
    cpu_total, all_passed, hit_time_limit = 0.0, True, False
    for name, cases in st.suites:
        if cases is None:
            st.ver["tests"][name] = None
            _note_missing_suite(st, name)
            continue
        run_all = name != "generated" and not hit_time_limit
        v = judge_suite(name, cases, st.code, st.seed, st.ctx, st.res.key, run_all)
        cpu_total += sum(c.cpu_seconds for c in v.cases)
        passed, hit_tle = _record_suite(st, name, cases, v, run_all)
        all_passed &= passed
        hit_time_limit |= hit_tle
    st.ver["runtime_ms"] = round(cpu_total * 1000, 3)
    st.res.timing["tests_seconds"] = round(time.monotonic() - t0, 4)
    st.ctx.add_seconds("tests", time.monotonic() - t0)
    if not all_passed:
        st.notes.append("not measured: the answer failed tests")
    return all_passed


def _note_missing_suite(st: RowState, name: str) -> None:
    if name != "generated":
        return
    if st.info.generator_path is None and st.ctx.generators is not None:
        st.notes.append(f"no generator for {st.seed.task_id} in {st.ctx.generators}")
    elif st.info.generated is not None:
        st.notes.append("the generator produced no usable input")


def _record_suite(st: RowState, name: str, cases: list[Case], v: Any, run_all: bool) -> tuple[bool, bool]:
    """Record one suite's verdict; returns (passed, a time limit was hit)."""
    from arbiter.judge.verdict import Outcome

    entry: dict[str, Any] = {"total": v.total, "passed": v.passed, "outcome": v.outcome.value, "run_all": run_all}
    if name == "generated" and st.info.generated is not None:
        entry["dropped"] = {k: n for k, n in st.info.generated.counts().items() if k != "kept"}
    st.ver["tests"][name] = entry
    if v.outcome is Outcome.AC:
        st.ver[f"all_{name}_tests_pass"] = True
        st.cases.extend(cases)
        st.passed.append(v)
        return True, False
    st.ver[f"all_{name}_tests_pass"] = False
    if v.outcome in (Outcome.CE, Outcome.INVALID_TASK):  # cannot happen after a good compile
        st.res.reasons.append(reason("tests", v.outcome.value, f"{name} tests: {v.reason}", suite=name))
    failed = [c for c in v.cases if c.outcome not in (Outcome.AC, Outcome.SKIPPED)]
    hit_tle = False
    by_outcome: dict[str, list] = {}
    for c in failed:
        by_outcome.setdefault(c.outcome.value, []).append(c)
    for oc, cs in by_outcome.items():
        first = cs[0]
        what = (first.diff or first.detail or "").strip().replace("\n", " ")
        listed = [c.name for c in cs[:MAX_CASES_LISTED]]
        more = f" (+{len(cs) - len(listed)} more)" if len(cs) > len(listed) else ""
        scope = "" if run_all else " (stopped at the first failure)"
        st.res.reasons.append(reason("tests", oc, f"{oc} on {len(cs)} {name} test(s){scope}: "
                                     f"{', '.join(listed)}{more}; first: {first.name}: {what[:300]}",
                                     suite=name, cases=listed))
        hit_tle |= oc == "TLE"
    entry["failed"] = [c.name for c in failed][:MAX_CASES_LISTED]
    return False, hit_tle


def measure_stage(st: RowState) -> bool:
    """Measure the correct answer against the source (the speed of a wrong program is not an optimization)."""
    t0 = time.monotonic()
    try:
        measure(st.seed, st.code, st.cases, st.passed, st.ctx, st.res, st.notes)
    finally:
        st.res.timing["measure_seconds"] = round(time.monotonic() - t0, 4)
        st.ctx.add_seconds("measure", time.monotonic() - t0)
    return True


#: The stages of a row, in order; each returns whether the next one runs.
STAGE_FUNCTIONS: tuple[Callable[[RowState], bool], ...] = (task_stage, answer_stage, compile_stage, tests_stage,
                                                           measure_stage)


def run_stages(st: RowState) -> None:
    """Run the stages until one stops the row, then decide the score."""
    st.res.verification = _new_verification()
    for stage in STAGE_FUNCTIONS:
        if not stage(st):
            break
    finish(st)


def finish(st: RowState) -> None:
    """The score (:func:`~arbiter.rewards.oracle.full_mark`), the first failing stage, the claim, the notes."""
    res, ver = st.res, st.ver
    res.accepted = full_mark(res.reasons, ver)
    ver["score"] = 1.0 if res.accepted else 0.0
    if not res.accepted and not res.reasons:  # defensive: never reject without a reason
        res.reasons.append(reason("measure", "NOT_MEASURED", "the answer could not be measured"))
    res.stage = None if res.accepted else res.reasons[0]["stage"]
    claim = st.row.raw.get("verification") if isinstance(st.row.raw, Mapping) else None
    ver["claim_disagreements"] = claim_check(claim, ver, st.row, st.notes)
    ver["notes"] = "; ".join(st.notes) if st.notes else ("verified by arbiter" if res.accepted else "")
    res.timing["row_seconds"] = round(time.monotonic() - st.started, 4)


def claim_check(claim: Mapping[str, Any] | None, ver: Mapping[str, Any], row: ReturnRow,
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