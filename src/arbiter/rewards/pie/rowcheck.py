"""Step 4 of the PIE reward: the row's own source and target must be correct on the pool (else
``DATASET_DEFECT``); source cases that are too slow are dropped. See ``docs/pie.md`` ("Re-timing a candidate").
"""

from __future__ import annotations

import json
import threading
from collections.abc import Mapping, Sequence
from typing import Any

from arbiter.datasets.pie.card import select_cases
from arbiter.datasets.pie.source import PieSource
from arbiter.judge.judge import judge
from arbiter.judge.task import Task
from arbiter.judge.testsuite import StdioCase
from arbiter.judge.verdict import Outcome, Verdict
from arbiter.judge.build import ToolchainUnavailable, build_cpp
from arbiter.rewards.pie.options import case_key, checker_key, limits_key
from arbiter.rewards.pie.result import DATASET_DEFECT, RESOURCE_OUTCOMES, RewardCall, Stop
from arbiter.sandbox.sandbox import SandboxError
from arbiter.timing.count_cache import sha256_hex as _sha


# Native verdicts of a row's programs per (problem, program, fingerprint, checker, limits, cases):
# {case name: (outcome, detail)}.
_SRC_CHECKS: dict[str, dict[str, tuple[str, str]]] = {}


_SRC_CHECKS_LOCK = threading.Lock()


_SRC_CHECKS_MAX = 4096


def _src_check(src: PieSource, src_code_sha: str, fingerprint: str, pool: list[StdioCase], task: Task
               ) -> tuple[dict[str, tuple[str, str]] | None, Verdict | None]:
    """A row program's native outcome on each pool case (cached), or ``(None, verdict)`` on CE/SANDBOX_ERROR.
    ``src_code_sha``: the sha256 of the program judged (the source's or the target's code)."""
    key = _sha(json.dumps([src.problem_id, src_code_sha, fingerprint, checker_key(task.checker),
                           limits_key(task.limits), [case_key(c) for c in pool], task.compile.command or ""],
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


def _judged(c: RewardCall, code: str, name: str) -> tuple[dict[str, tuple[str, str]] | None, Stop | None]:
    """``code``'s native outcome on every pool case, or the :class:`Stop` when it could not be judged."""
    task = c.task(code, c.pool, "fraction", name, run_all=True)
    outcomes, bad = _src_check(c.src, _sha(code), c.res.fingerprint, c.pool, task)
    if outcomes is not None:
        return outcomes, None
    assert bad is not None
    kind = Outcome.SANDBOX_ERROR if bad.outcome is Outcome.SANDBOX_ERROR else Outcome.INVALID_TASK
    program = "source" if name == "src" else "target"
    return None, Stop(kind, f"row {c.label}: judging the {program}: {bad.outcome.value}: {bad.reason}")


def check_source(c: RewardCall) -> Stop | None:
    """Judge the source on the pool: AC cases are kept, TLE/MLE ones dropped, others are dataset defects."""
    outcomes, stop = _judged(c, c.src.src_code, "src")
    if stop is not None:
        return stop
    for case in c.pool:
        oc, detail = outcomes[case.name]
        if oc == Outcome.AC.value:
            c.kept.append(case)
        elif Outcome(oc) in RESOURCE_OUTCOMES:
            c.res.src_dropped.append({"case": case.name, "outcome": oc, "detail": detail})
        else:
            c.res.dataset_defects.append({"program": "source", "id": c.src.src_id, "case": case.name,
                                          "outcome": oc, "detail": detail})
    return None


def check_target(c: RewardCall) -> Stop | None:
    """The target is never timed, but a row whose fast program fails its own tests is as broken as a wrong
    source: a compile error or a wrong result on a pool case is a dataset defect."""
    if c.src.tgt_code is None:
        return None
    try:
        tgt_comp = build_cpp(c.src.tgt_code, c.spec)
    except (SandboxError, ToolchainUnavailable) as e:
        return Stop(Outcome.SANDBOX_ERROR, f"compiling the target: {e}")
    if not tgt_comp.ok:
        c.res.dataset_defects.append({"program": "target", "id": c.src.tgt_id, "case": None,
                                      "outcome": Outcome.CE.value, "detail": tgt_comp.message[:300]})
        return None
    outcomes, stop = _judged(c, c.src.tgt_code, "tgt")
    if stop is not None:
        return stop
    for case in c.pool:
        oc, detail = outcomes[case.name]
        if oc != Outcome.AC.value and Outcome(oc) not in RESOURCE_OUTCOMES:
            c.res.dataset_defects.append({"program": "target", "id": c.src.tgt_id, "case": case.name,
                                          "outcome": oc, "detail": detail})
    return None


def gate_row(c: RewardCall) -> Stop | None:
    """Stop on a dataset defect or a source with no case left; else fix the used cases (K applied here for rows
    without ``usable_case_ids``)."""
    if c.res.dataset_defects:
        return Stop(DATASET_DEFECT, f"row {c.label}: dataset defect: {_defect_summary(c.res.dataset_defects)}")
    if not c.kept:
        return Stop(Outcome.INVALID_TASK, f"row {c.label}: the source passes none of the {len(c.pool)} cases "
                                          f"({', '.join(sorted({d['outcome'] for d in c.res.src_dropped}))})")
    c.used = select_cases(c.kept, c.k, c.rng, row=c.label) if c.src.usable_case_ids is None else c.kept
    c.res.cases = [case.name for case in c.used]
    return None
