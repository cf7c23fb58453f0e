"""``report.json``: counts, per-task and per-row summaries and the trust warnings, read back from the outputs.
See ``docs/oracle.md``."""

from __future__ import annotations

import os
from collections import Counter
from pathlib import Path
from typing import Any, Mapping, Sequence

from arbiter.pipelines.oracle.best import read_records, speedup_unit
from arbiter.pipelines.oracle.options import OUTPUT_FILES, VerifyOptions
from arbiter.rewards.oracle import STAGES


def build_report(out_dir: str | os.PathLike, *, options: VerifyOptions | None = None,
                 inputs: Mapping[str, Any] | None = None, generated: Mapping[str, Any] | None = None,
                 best: Mapping[str, Any] | None = None, run: Mapping[str, Any] | None = None,
                 hidden_checks: Mapping[str, Any] | None = None,
                 coverage: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The ``report.json`` content, read back from ``verified.jsonl`` / ``rejected.jsonl`` (so it covers rows
    decided by earlier, interrupted runs too) plus this run's ``errors.jsonl`` records.

    Keys: ``counts`` (``rows``, ``accepted``, ``rejected``, ``errors``), ``by_stage`` (first failing stage of
    rejected rows), ``by_reason`` (``stage:code`` over every reason of every rejected row), ``by_kind``
    (rejected rows by ``return``/``seed``/``hidden``), ``claims`` (rows whose claim disagrees with us), ``tasks``
    (per task: accepted, rejected, best), ``rows`` (one summary per return row, by line), ``generated``,
    ``options``, ``inputs``, ``run`` (this run's timings in seconds).

    How much the accepted rows can be trusted (issue: known-wrong rows must not slip into SFT data silently):
    ``counts.accepted_visible_only`` (accepted rows whose task had neither hidden nor generated tests: checked on
    the seed's visible tests only), ``counts.accepted_speed_gate_not_applied`` (accepted without the speed gate:
    their tests were too small to show speed), ``counts.measure_fallbacks`` (rows measured with wall time because
    valgrind could not run a program), ``counts.speedup_units`` (measured rows per unit of their speedups:
    ``instructions`` / ``seconds``; each row's ``unit``), ``counts.tasks_best_across_units`` (tasks whose best
    answer was ranked among speedups of different units; a warning names them); ``hidden_checks`` (per task: the
    seed's source on its hidden cases, :mod:`~arbiter.pipelines.oracle.hidden_tests`: dropped bad cases,
    unconfirmed ones); ``coverage`` (which seed tasks have hidden / generated tests, given by the caller);
    ``load_rejections`` (seed and hidden-test entries
    that were rejected: line, task, JSON path, code, message); ``warnings``: one line per problem, recommending
    ``--hidden`` / ``--generators`` where they would help.
    """
    out = Path(out_dir)
    ver = read_records(out / "verified.jsonl")
    rej = read_records(out / "rejected.jsonl")
    errs = [e for e in read_records(out / "errors.jsonl") if run is None or e.get("run_id") == run.get("run_id")]
    by_stage: Counter[str] = Counter()
    by_reason: Counter[str] = Counter()
    by_kind: Counter[str] = Counter()
    tasks: dict[str, dict[str, Any]] = {}
    rows: list[dict[str, Any]] = []
    claims = 0

    def task(tid: Any) -> dict[str, Any]:
        return tasks.setdefault(str(tid), {"accepted": 0, "rejected": 0})

    for r in ver:
        v = r.get("verification") or {}
        task(r.get("task_id"))["accepted"] += 1
        claims += bool(v.get("claim_disagreements"))
        rows.append({"line": r.get("line"), "key": r.get("key"), "task_id": r.get("task_id"),
                     "demo_id": r.get("demo_id"), "outcome": "accepted", "stage": None, "codes": [],
                     "speedup": v.get("speedup"), "largest_speedup": v.get("largest_speedup"),
                     "speed_gate": v.get("speed_gate"), "unit": speedup_unit(r),
                     "visible_only": v.get("all_hidden_tests_pass") is None
                     and v.get("all_generated_tests_pass") is None,
                     "measure_fallback": (v.get("measurement") or {}).get("fallback_reason"),
                     "claim_disagreements": [d["field"] for d in v.get("claim_disagreements") or []]})
    for r in rej:
        by_kind[r.get("kind", "?")] += 1
        by_stage[r.get("stage", "?")] += 1
        codes = []
        for reason in r.get("reasons") or []:
            c = f"{reason.get('stage')}:{reason.get('code')}"
            by_reason[c] += 1
            codes.append(c)
        if r.get("kind") != "return":
            continue
        v = r.get("verification") or {}
        if r.get("task_id") is not None and r.get("stage") != "load":
            task(r.get("task_id"))["rejected"] += 1
        claims += bool(v.get("claim_disagreements"))
        rows.append({"line": r.get("line"), "key": r.get("key"), "task_id": r.get("task_id"),
                     "demo_id": r.get("demo_id"), "outcome": "rejected", "stage": r.get("stage"), "codes": codes,
                     "speedup": v.get("speedup"), "largest_speedup": v.get("largest_speedup"),
                     "speed_gate": v.get("speed_gate"), "unit": speedup_unit(r),
                     "measure_fallback": (v.get("measurement") or {}).get("fallback_reason"),
                     "claim_disagreements": [d["field"] for d in v.get("claim_disagreements") or []]})
    for e in errs:
        rows.append({"line": e.get("line"), "key": e.get("key"), "task_id": e.get("task_id"), "demo_id": None,
                     "outcome": "error", "stage": None, "codes": [], "error": e.get("error")})
    rows.sort(key=lambda x: (x.get("line") is None, x.get("line") or 0, str(x.get("key"))))
    for tid, b in (best or {}).items():
        task(tid)["best"] = b
    n_return_rej = sum(1 for r in rej if r.get("kind") == "return")
    vis_only = [r for r in ver if (r.get("verification") or {}).get("all_hidden_tests_pass") is None
                and (r.get("verification") or {}).get("all_generated_tests_pass") is None]
    no_gate = [r for r in ver if (r.get("verification") or {}).get("speed_gate") == "not_applied"]
    fallbacks = [r for r in ver + [x for x in rej if x.get("kind") == "return"]
                 if ((r.get("verification") or {}).get("measurement") or {}).get("fallback_reason")]
    load_rej = [{"kind": r.get("kind"), "line": r.get("line"), "task_id": r.get("task_id"),
                 "path": (r.get("reasons") or [{}])[0].get("path"), "code": (r.get("reasons") or [{}])[0].get("code"),
                 "message": r.get("message")} for r in rej if r.get("kind") in ("seed", "hidden")]
    units = Counter(str(x["unit"]) for x in rows if x.get("unit"))
    mixed = {str(tid): list(b.get("units") or []) for tid, b in (best or {}).items() if len(b.get("units") or []) > 1}
    warnings = _warnings(len(ver), vis_only, no_gate, fallbacks, hidden_checks or {}, coverage or {}, load_rej)
    if mixed:
        warnings.append(f"{len(mixed)} task(s) have accepted answers measured in different units (instructions and "
                        "wall/CPU seconds, after a meter fallback); their best answer was ranked across units: "
                        + _ids([f"{t} ({', '.join(u)})" for t, u in mixed.items()]))
    return {
        "counts": {"rows": len(ver) + n_return_rej + len(errs), "accepted": len(ver), "rejected": n_return_rej,
                   "errors": len(errs), "sft_rows": len(read_records(out / "sft.jsonl")),
                   "other_rejections": len(rej) - n_return_rej,
                   "accepted_visible_only": len(vis_only), "accepted_speed_gate_not_applied": len(no_gate),
                   "measure_fallbacks": len(fallbacks), "speedup_units": dict(sorted(units.items())),
                   "tasks_best_across_units": len(mixed)},
        "warnings": warnings,
        "accepted_visible_only": [{"line": r.get("line"), "key": r.get("key"), "task_id": r.get("task_id")}
                                  for r in sorted(vis_only, key=lambda r: r.get("line") or 0)],
        "accepted_speed_gate_not_applied": [{"line": r.get("line"), "key": r.get("key"), "task_id": r.get("task_id")}
                                            for r in sorted(no_gate, key=lambda r: r.get("line") or 0)],
        "hidden_checks": dict(hidden_checks or {}),
        "coverage": dict(coverage or {}),
        "load_rejections": load_rej,
        "by_stage": dict(sorted(by_stage.items(), key=lambda kv: (STAGES.index(kv[0]) if kv[0] in STAGES else 99))),
        "by_reason": dict(sorted(by_reason.items(), key=lambda kv: (-kv[1], kv[0]))),
        "by_kind": dict(sorted(by_kind.items())),
        "claims_disagreeing": claims,
        "tasks": dict(sorted(tasks.items())),
        "rows": rows,
        "generated": dict(generated or {}),
        "options": options.to_dict() if options else None,
        "inputs": dict(inputs or {}),
        "run": dict(run or {}),
        "outputs": {name: str(out / name) for name in OUTPUT_FILES},
    }


def _ids(ids: Sequence[str], limit: int = 8) -> str:
    ids = list(ids)
    return ", ".join(ids[:limit]) + (f" (+{len(ids) - limit} more)" if len(ids) > limit else "")


def _warnings(accepted: int, vis_only: list[Mapping[str, Any]], no_gate: list[Mapping[str, Any]],
              fallbacks: list[Mapping[str, Any]], hidden_checks: Mapping[str, Any], coverage: Mapping[str, Any],
              load_rej: list[Mapping[str, Any]]) -> list[str]:
    """The report's warning lines (see :func:`build_report`)."""
    out: list[str] = []
    hidden_given, gens_given = coverage.get("hidden_given"), coverage.get("generators_given")
    n_tasks = coverage.get("tasks")
    if vis_only:
        out.append(f"{len(vis_only)} of {accepted} accepted row(s) were checked on the seed's visible tests only (no "
                   "hidden or generated tests for their task): a wrong answer that passes the visible tests is "
                   "accepted; give --hidden and/or --generators")
    if no_gate:
        out.append(f"{len(no_gate)} of {accepted} accepted row(s) skipped the speed gate (their largest tests are "
                   "too small to show speed): they may be slower than the source; give --generators (large "
                   "generated tests) so the gate applies")
    bare = coverage.get("tasks_visible_only") or []
    if n_tasks and bare and (hidden_given or gens_given):
        out.append(f"{len(bare)} of {n_tasks} seed task(s) have neither hidden nor generated tests: {_ids(bare)}")
    no_hidden = coverage.get("tasks_without_hidden") or []
    if hidden_given and n_tasks and no_hidden:
        out.append(f"the hidden-tests file leaves {len(no_hidden)} of {n_tasks} seed task(s) without (usable) hidden "
                   f"tests: {_ids(no_hidden)}")
    no_gen = coverage.get("tasks_without_generated") or []
    if gens_given and n_tasks and no_gen:
        out.append(f"no generator (or no usable generated input) for {len(no_gen)} of {n_tasks} seed task(s): "
                   f"{_ids(no_gen)}")
    dropped = {t: h for t, h in hidden_checks.items() if h.get("dropped")}
    if dropped:
        n = sum(len(h["dropped"]) for h in dropped.values())
        out.append(f"{n} hidden test(s) of {len(dropped)} task(s) dropped as bad data: the seed's source_code "
                   "(correct by contract) fails them, so no answer is judged on them: " + "; ".join(
                       f"{t}: {', '.join(d['name'] + ' ' + d['outcome'] for d in h['dropped'][:5])}"
                       for t, h in list(dropped.items())[:5]))
    all_bad = [t for t, h in hidden_checks.items() if h.get("all_bad")]
    if all_bad:
        out.append(f"every hidden test of {len(all_bad)} task(s) is bad: their hidden suite is treated as absent: "
                   f"{_ids(all_bad)}")
    unconf = {t: h for t, h in hidden_checks.items() if h.get("unconfirmed")}
    if unconf:
        n = sum(len(h["unconfirmed"]) for h in unconf.values())
        out.append(f"{n} hidden test(s) of {len(unconf)} task(s) could not be confirmed (the source did not finish "
                   f"them); kept as given: {_ids(list(unconf))}")
    for t, h in hidden_checks.items():
        if h.get("error"):
            out.append(f"the hidden tests of {t} could not be checked against its source: {h['error']}")
    if fallbacks:
        out.append(f"{len(fallbacks)} row(s) measured with wall/CPU time instead of instructions (valgrind cannot "
                   "run the program, e.g. AVX-512): see verification.measurement.fallback_reason")
    seeds = [r for r in load_rej if r.get("kind") == "seed"]
    if seeds:
        out.append(f"{len(seeds)} seed row(s) rejected; returns for them are rejected as SEED_REJECTED")
    return out
