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


def _summary(r: Mapping[str, Any], outcome: str, codes: list[str]) -> dict[str, Any]:
    """The report's line of one verified or rejected return row."""
    v = r.get("verification") or {}
    out = {"line": r.get("line"), "key": r.get("key"), "task_id": r.get("task_id"), "demo_id": r.get("demo_id"),
           "outcome": outcome, "stage": r.get("stage") if outcome == "rejected" else None, "codes": codes,
           "speedup": v.get("speedup"), "largest_speedup": v.get("largest_speedup"),
           "speed_gate": v.get("speed_gate"), "unit": speedup_unit(r)}
    if outcome == "accepted":
        out["visible_only"] = _visible_only(r)
    out["measure_fallback"] = (v.get("measurement") or {}).get("fallback_reason")
    out["claim_disagreements"] = [d["field"] for d in v.get("claim_disagreements") or []]
    return out


def _visible_only(r: Mapping[str, Any]) -> bool:
    v = r.get("verification") or {}
    return v.get("all_hidden_tests_pass") is None and v.get("all_generated_tests_pass") is None


def _tally(ver: list[dict[str, Any]], rej: list[dict[str, Any]], errs: list[dict[str, Any]]) -> dict[str, Any]:
    """Rows, tasks, and the counters by stage, reason and kind."""
    by_stage: Counter[str] = Counter()
    by_reason: Counter[str] = Counter()
    by_kind: Counter[str] = Counter()
    tasks: dict[str, dict[str, Any]] = {}
    rows: list[dict[str, Any]] = []
    claims = 0

    def task(tid: Any) -> dict[str, Any]:
        return tasks.setdefault(str(tid), {"accepted": 0, "rejected": 0})

    for r in ver:
        task(r.get("task_id"))["accepted"] += 1
        claims += bool((r.get("verification") or {}).get("claim_disagreements"))
        rows.append(_summary(r, "accepted", []))
    for r in rej:
        by_kind[r.get("kind", "?")] += 1
        by_stage[r.get("stage", "?")] += 1
        codes = [f"{x.get('stage')}:{x.get('code')}" for x in r.get("reasons") or []]
        by_reason.update(list(dict.fromkeys(codes)))  # rows with the reason: a row failing several suites counts once
        if r.get("kind") != "return":
            continue
        if r.get("task_id") is not None and r.get("stage") != "load":
            task(r.get("task_id"))["rejected"] += 1
        claims += bool((r.get("verification") or {}).get("claim_disagreements"))
        rows.append(_summary(r, "rejected", codes))
    for e in errs:
        rows.append({"line": e.get("line"), "key": e.get("key"), "task_id": e.get("task_id"), "demo_id": None,
                     "outcome": "error", "stage": None, "codes": [], "error": e.get("error")})
    rows.sort(key=lambda x: (x.get("line") is None, x.get("line") or 0, str(x.get("key"))))
    return {"by_stage": by_stage, "by_reason": by_reason, "by_kind": by_kind, "tasks": tasks, "rows": rows,
            "claims": claims, "task": task}


def _lines(recs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{"line": r.get("line"), "key": r.get("key"), "task_id": r.get("task_id")}
            for r in sorted(recs, key=lambda r: r.get("line") or 0)]


def build_report(out_dir: str | os.PathLike, *, options: VerifyOptions | None = None,
                 inputs: Mapping[str, Any] | None = None, generated: Mapping[str, Any] | None = None,
                 best: Mapping[str, Any] | None = None, run: Mapping[str, Any] | None = None,
                 hidden_checks: Mapping[str, Any] | None = None,
                 coverage: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The ``report.json`` content, read back from ``verified.jsonl`` / ``rejected.jsonl`` (so it covers rows
    decided by earlier, interrupted runs too) plus this run's ``errors.jsonl`` records. The keys are listed in
    ``docs/oracle.md`` ("report.json")."""
    out = Path(out_dir)
    ver = read_records(out / "verified.jsonl")
    rej = read_records(out / "rejected.jsonl")
    errs = [e for e in read_records(out / "errors.jsonl") if run is None or e.get("run_id") == run.get("run_id")]
    t = _tally(ver, rej, errs)
    for tid, b in (best or {}).items():
        t["task"](tid)["best"] = b
    n_return_rej = sum(1 for r in rej if r.get("kind") == "return")
    vis_only = [r for r in ver if _visible_only(r)]
    no_gate = [r for r in ver if (r.get("verification") or {}).get("speed_gate") == "not_applied"]
    fallbacks = [r for r in ver + [x for x in rej if x.get("kind") == "return"]
                 if ((r.get("verification") or {}).get("measurement") or {}).get("fallback_reason")]
    load_rej = [{"kind": r.get("kind"), "line": r.get("line"), "task_id": r.get("task_id"),
                 "path": (r.get("reasons") or [{}])[0].get("path"), "code": (r.get("reasons") or [{}])[0].get("code"),
                 "message": r.get("message")} for r in rej if r.get("kind") in ("seed", "hidden")]
    units = Counter(str(x["unit"]) for x in t["rows"] if x.get("unit"))
    mixed = {str(tid): list(b.get("units") or []) for tid, b in (best or {}).items() if len(b.get("units") or []) > 1}
    warnings = _warnings(len(ver), vis_only, no_gate, fallbacks, hidden_checks or {}, coverage or {}, load_rej)
    if mixed:
        warnings.append(f"{len(mixed)} task(s) have accepted answers measured in different units (cycles or "
                        "instructions, and wall/CPU seconds, after a meter fallback); their best answer was ranked "
                        "across units: " + _ids([f"{tid} ({', '.join(u)})" for tid, u in mixed.items()]))
    return {
        "counts": {"rows": len(ver) + n_return_rej + len(errs), "accepted": len(ver), "rejected": n_return_rej,
                   "errors": len(errs), "sft_rows": len(read_records(out / "sft.jsonl")),
                   "other_rejections": len(rej) - n_return_rej,
                   "accepted_visible_only": len(vis_only), "accepted_speed_gate_not_applied": len(no_gate),
                   "measure_fallbacks": len(fallbacks), "speedup_units": dict(sorted(units.items())),
                   "tasks_best_across_units": len(mixed)},
        "warnings": warnings,
        "accepted_visible_only": _lines(vis_only),
        "accepted_speed_gate_not_applied": _lines(no_gate),
        "hidden_checks": dict(hidden_checks or {}),
        "coverage": dict(coverage or {}),
        "load_rejections": load_rej,
        "by_stage": dict(sorted(t["by_stage"].items(),
                                key=lambda kv: (STAGES.index(kv[0]) if kv[0] in STAGES else 99))),
        "by_reason": dict(sorted(t["by_reason"].items(), key=lambda kv: (-kv[1], kv[0]))),
        "by_kind": dict(sorted(t["by_kind"].items())),
        "claims_disagreeing": t["claims"],
        "tasks": dict(sorted(t["tasks"].items())),
        "rows": t["rows"],
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
        asked = sorted({str(((r.get("verification") or {}).get("measurement") or {}).get("requested_method"))
                        for r in fallbacks})
        out.append(f"{len(fallbacks)} row(s) measured with wall/CPU time instead of {' or '.join(asked)} (valgrind "
                   "cannot run the program, e.g. AVX-512): see verification.measurement.fallback_reason")
    seeds = [r for r in load_rej if r.get("kind") == "seed"]
    if seeds:
        out.append(f"{len(seeds)} seed row(s) rejected; returns for them are rejected as SEED_REJECTED")
    return out
