"""``summary.json`` of a PIE batch: counts and speedup figures over reward records, per unit, with dataset
defects kept apart. Field meanings: ``docs/pie.md`` ("Batch outputs").
"""

from __future__ import annotations

import hashlib
import json
import math
import statistics
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from arbiter.datasets.pie.card import OPT_THRESHOLD
from arbiter.rewards.pie.result import DATASET_DEFECT
from arbiter.timing.comparison import DEFAULT_METHOD, unit_of


def _count(items: Iterable[str]) -> dict[str, int]:
    out: dict[str, int] = {}
    for x in items:
        out[x] = out.get(x, 0) + 1
    return out


def _unit_of(method: Any) -> str:
    return unit_of(method)


def _figure_kind(record: Mapping[str, Any]) -> str:
    """What a record's speedup may be averaged with: its unit, and for cycles also the cycle model and cache
    geometry (``cycles:<model name>:<digest>``), so figures of two models never meet in one mean."""
    unit = str(record.get("unit") or _unit_of(record.get("method")))
    meter = record.get("meter") if isinstance(record.get("meter"), Mapping) else {}
    model = meter.get("cycle_model")
    if unit != "cycles" or not isinstance(model, Mapping):
        return unit
    identity = json.dumps({"model": model, "caches": meter.get("caches")}, sort_keys=True, default=str)
    return f"cycles:{model.get('name')}:{hashlib.sha256(identity.encode()).hexdigest()[:8]}"


def _head_kind(unit: str, kinds: Iterable[str]) -> str:
    """The figure kind the headline speedups describe: ``unit``, or the one cycle model the run used (with two
    models, the headline stays empty rather than mixing them)."""
    if unit != "cycles":
        return unit
    models = sorted({k for k in kinds if k.startswith("cycles:")})
    return models[0] if len(models) == 1 else unit


def speedup_stats(speedups: Sequence[float]) -> dict[str, Any]:
    """``{n, mean, geomean, median, min, max}`` of speedups (ratios > 0) of one unit; figures None when empty."""
    xs = [float(x) for x in speedups]
    return {"n": len(xs), "mean": statistics.fmean(xs) if xs else None,
            "geomean": math.exp(statistics.fmean(math.log(x) for x in xs)) if xs else None,
            "median": statistics.median(xs) if xs else None, "min": min(xs) if xs else None,
            "max": max(xs) if xs else None}


def summarize_rewards(records: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Counts and figures over reward records (:meth:`PieRewardResult.to_dict` shape); speedups per unit, dataset
    defects kept apart. Every field: ``docs/pie.md`` ("Summary (`summarize_rewards`)")."""
    by: dict[str, int] = {}
    for r in records:
        by[str(r.get("outcome"))] = by.get(str(r.get("outcome")), 0) + 1
    scored = [r for r in records if r.get("reward") is not None]
    failed = [r for r in scored if r.get("outcome") != "AC"]
    correct = [r for r in scored if r.get("outcome") == "AC" and r.get("speedup")]
    ok = [float(r["speedup"]) for r in correct]
    requested = sorted({str(r.get("requested_method") or r["method"]) for r in records
                        if r.get("requested_method") or r.get("method")})
    unit = _unit_of(requested[0]) if len(requested) == 1 else unit_of(DEFAULT_METHOD)
    per_unit: dict[str, list[float]] = {}
    for r in correct:
        per_unit.setdefault(_figure_kind(r), []).append(float(r["speedup"]))
    unit = _head_kind(unit, per_unit)
    head = speedup_stats(per_unit.get(unit, []))
    n_defects, defects = _dataset_defects(records)
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
        "n_failed_scored": len(failed),
        "failure_rewards": sorted({float(r["reward"]) for r in failed}),
        "mean_reward_correct": (statistics.fmean(float(r["reward"]) for r in scored if r.get("outcome") == "AC")
                                if len(failed) < len(scored) else None),
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


def _dataset_defects(records: Sequence[Mapping[str, Any]]) -> tuple[int, dict[str, dict[str, Any]]]:
    """``(records, {row: entry})`` of the DATASET_DEFECT records, one entry per row (the first record's)."""
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
    return n_defects, defects
