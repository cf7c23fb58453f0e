"""``arbiter pie eval``: PIE's paper metrics (%Opt, speedup, %Correct at best@k) for n generations per source
program, re-timed here. Rules (runtimes, exclusions, units): ``docs/pie.md`` ("Evaluation").
"""

from __future__ import annotations

import json
import math
import os
import statistics
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from arbiter.datasets.io import write_json_atomic
from arbiter.datasets.pie.read import iter_jsonl_lines
from arbiter.datasets.pie.source import RowIndex
from arbiter.pipelines.outputs import ensure_out_dir, holds_out_dirs
from arbiter.pipelines.pie.batch import BatchRun, run_reward_batch
from arbiter.pipelines.pie.candidates import iter_candidates
from arbiter.pipelines.pie.metrics import PieMetricsAtK, ProgramGenerations, format_metrics_table, pie_eval_metrics
from arbiter.rewards.pie.options import check_reward_options
from arbiter.timing.comparison import DEFAULT_METHOD, unit_of


#: Fields holding the generations of a line (first match wins).
GENERATION_FIELDS = ("generations", "candidates", "code")


@dataclass
class EvalRun:
    """What :func:`run_eval` did: ``metrics`` (one :class:`~arbiter.pipelines.pie.metrics.PieMetricsAtK` per k),
    ``table`` (the plain-text table), ``report`` (the JSON written to ``metrics.json``), ``records`` (per-generation
    reward records, resumed ones included), ``sandbox_errors`` (this run; rerun to retry) and ``outputs``."""

    metrics: list[PieMetricsAtK]
    table: str
    report: dict[str, Any]
    records: list[dict[str, Any]] = field(default_factory=list)
    sandbox_errors: list[dict[str, Any]] = field(default_factory=list)
    outputs: dict[str, str] = field(default_factory=dict)


def programs_from_records(groups: Sequence[tuple[str, Sequence[Mapping[str, Any]]]],
                          defects: list[dict[str, Any]] | None = None,
                          ) -> tuple[list[ProgramGenerations], list[dict[str, Any]], list[dict[str, Any]]]:
    """Turn per-generation reward records into PIE programs (``docs/pie.md``, "Evaluation": runtimes, exclusions).

    ``groups``: ``(program_id, records in generation order)``. Returns ``(programs, per_program, excluded)``:
    ``per_program`` holds ``{id, src_runtime, runtimes, outcomes, units, unit}`` (runtimes None for failures;
    src_runtime None when no generation was correct; ``units``: the unit of each generation's speedup, None for
    failures; ``unit``: the unit of ``src_runtime``) and ``excluded`` ``{id, reason}`` for programs with an
    unscorable generation. When ``defects`` (a list) is given, programs with a ``DATASET_DEFECT`` generation are
    appended to it as ``{id, row, reason}`` instead of ``excluded``."""
    programs: list[ProgramGenerations] = []
    per: list[dict[str, Any]] = []
    excluded: list[dict[str, Any]] = []
    for pid, recs in groups:
        bad = [r for r in recs if r.get("reward") is None]
        defect = next((r for r in bad if r.get("outcome") == "DATASET_DEFECT"), None)
        if defect is not None and defects is not None:
            row = "/".join(str(x) for x in (defect.get("problem_id"), defect.get("src_id"), defect.get("tgt_id"))
                           if x)
            defects.append({"id": pid, "row": row, "reason": str(defect.get("reason"))[:300]})
            continue
        if bad or not recs:
            why = f"{bad[0].get('outcome')}: {str(bad[0].get('reason'))[:200]}" if bad else "no generations"
            excluded.append({"id": pid, "reason": why})
            continue
        # a generation measured with a fallback method (``docs/pie.md``, step 6) has its totals in another unit: the
        # program's source runtime comes from the most common unit; each runtime is src_runtime / its own speedup
        units = [str(r.get("unit")) for r in recs if r.get("outcome") == "AC" and r.get("src_total")]
        unit = max(dict.fromkeys(units), key=units.count) if units else None
        srcs = [float(r["src_total"]) for r in recs
                if r.get("outcome") == "AC" and r.get("src_total") and str(r.get("unit")) == unit]
        src_rt = statistics.median(srcs) if srcs else None
        runtimes: list[float | None] = []
        for r in recs:
            sp = r.get("speedup")
            runtimes.append(src_rt / float(sp) if r.get("outcome") == "AC" and sp and src_rt else None)
        programs.append(ProgramGenerations(src_rt if src_rt else 1.0, runtimes, pid))
        per.append({"id": pid, "src_runtime": src_rt, "runtimes": runtimes,
                    "outcomes": [r.get("outcome") for r in recs],
                    "units": [str(r.get("unit")) if r.get("outcome") == "AC" and r.get("speedup") else None
                              for r in recs],
                    "unit": unit if src_rt else None})
    return programs, per, excluded


def _precomputed(rec: Mapping[str, Any], line: int) -> tuple[str, ProgramGenerations]:
    pid = str(rec.get("id") or rec.get("src_id") or f"line {line}")
    if not isinstance(rec.get("runtimes"), list) or not rec["runtimes"]:
        raise ValueError(f"line {line}: field 'runtimes' must be a non-empty list (one runtime or null per "
                         f"generation), got {json.dumps(rec.get('runtimes'))[:80]}")
    try:
        return pid, ProgramGenerations(rec["src_runtime"], list(rec["runtimes"]), pid)
    except (TypeError, ValueError, KeyError) as e:
        raise ValueError(f"line {line}: fields 'src_runtime'/'runtimes': {e}") from None


@holds_out_dirs
def run_eval(rows: Any, tests: Any, generations: str | os.PathLike, out_dir: str | os.PathLike, *,
             ks: Sequence[int] | None = None, seed: int = 0, split: str | None = None,
             on_start: Callable[[int], None] | None = None,
             on_result: Callable[[dict[str, Any]], None] | None = None, **reward_kw: Any) -> EvalRun:
    """PIE's %Opt, mean speedup (floored at 1.0), %Correct and threshold shares at best@k, k = 1..n, for a
    generations file; ``reward_kw`` as :func:`~arbiter.pipelines.pie.batch.run_reward_batch`. Inputs, outputs and
    errors: ``docs/pie.md`` ("Evaluation run (`run_eval`)")."""
    gen_path = Path(generations)
    if not gen_path.is_file():
        raise FileNotFoundError(f"generations file not found: {gen_path}")
    check_reward_options(reward_kw, need_meter=False)  # before anything is written (valgrind: when measuring)
    if Path(out_dir).exists():  # an --out that is a file is refused now; a new folder is made once inputs pass
        ensure_out_dir(out_dir)
    lines, bad_lines = _read_lines(gen_path)
    pre = [(n, r) for n, r in lines if "runtimes" in r and not any(f in r for f in GENERATION_FIELDS)]
    needs_run = len(pre) < len(lines)
    groups: list[tuple[str, list[dict[str, Any]]]] = []
    run = None
    method = reward_kw.get("method", DEFAULT_METHOD)
    if needs_run:
        if rows is None or tests is None:
            raise ValueError("rows and tests are needed to measure generations (only precomputed lines skip them)")
        index = rows if isinstance(rows, RowIndex) else RowIndex(rows, split=split)
        run = run_reward_batch(index, tests, gen_path, out_dir, seed=seed, field_names=GENERATION_FIELDS,
                               file_names={"rewards": "generations.jsonl", "summary": "generations_summary.json"},
                               skip_precomputed=True,
                               # a file of measured lines only that is unusable as a whole (empty, not JSON
                               # Lines, no line naming a row) is refused before scoring; next to precomputed
                               # lines, its bad lines are excluded programs as usual
                               input_option=None if pre else "--generations",
                               on_start=on_start, on_result=on_result, **reward_kw)
        groups = _groups(run, gen_path, index)
    defects: list[dict[str, Any]] = []
    programs, per, excluded = programs_from_records(groups, defects)
    if not needs_run:  # (otherwise iter_candidates reported the bad lines as unscorable records, excluded above)
        excluded.extend(bad_lines)
    _add_precomputed(pre, gen_path, programs, per, excluded)
    if not programs:
        left = excluded + defects
        raise ValueError(f"no program left to evaluate ({len(excluded)} excluded, {len(defects)} dataset defects: "
                         f"{'; '.join(e['id'] + ': ' + e['reason'] for e in left[:3])})")
    metrics = pie_eval_metrics(programs, ks)
    records = run.records if run is not None else []
    report = _report(method, needs_run, programs, per, excluded, defects, records, metrics)
    out = ensure_out_dir(out_dir)
    paths = {"metrics": out / "metrics.json"}
    if run is not None:
        paths.update({"generations": Path(run.outputs["rewards"]), "errors": Path(run.outputs["errors"])})
    write_json_atomic(paths["metrics"], report, indent=2, ensure_ascii=True)
    return EvalRun(metrics=metrics, table=format_metrics_table(metrics), report=report, records=records,
                   sandbox_errors=run.sandbox_errors if run is not None else [],
                   outputs={k: str(v) for k, v in paths.items()})


def _read_lines(gen_path: Path) -> tuple[list[tuple[int, dict[str, Any]]], list[dict[str, Any]]]:
    """``(lines, bad_lines)``: the JSON lines of the file, and one excluded program per unreadable line."""
    lines: list[tuple[int, dict[str, Any]]] = []
    bad_lines: list[dict[str, Any]] = []
    for n, rec, problem in iter_jsonl_lines(gen_path):
        if problem is not None:  # one bad line never stops the batch: it is reported as an excluded program
            bad_lines.append({"id": f"line {n}", "reason": f"line {n} of {gen_path.name}: {problem}"})
        else:
            lines.append((n, rec if isinstance(rec, dict) else {}))
    return lines, bad_lines


def _groups(run: BatchRun, gen_path: Path, index: RowIndex) -> list[tuple[str, list[dict[str, Any]]]]:
    """The reward records of the batch grouped per line of the generations file, in file order."""
    by_key = {r["key"]: r for r in run.records}
    errs = {r["key"]: r for r in run.sandbox_errors}
    by_line: dict[int, list[dict[str, Any]]] = {}
    names: dict[int, str] = {}
    for it in iter_candidates(gen_path, index, field_names=GENERATION_FIELDS, skip_precomputed=True):
        rec = by_key.get(it.key) or errs.get(it.key) or {"outcome": "SANDBOX_ERROR", "reward": None,
                                                         "reason": "not scored"}
        by_line.setdefault(it.line, []).append(rec)
        names.setdefault(it.line, it.record_id or (f"{it.source.label()}@{it.line}" if it.source else
                                                   f"line {it.line}"))
    return [(names[n], by_line[n]) for n in sorted(by_line)]


def _add_precomputed(pre: Sequence[tuple[int, dict[str, Any]]], gen_path: Path, programs: list[ProgramGenerations],
                     per: list[dict[str, Any]], excluded: list[dict[str, Any]]) -> None:
    """Append the precomputed lines' programs (or their exclusion, for bad fields or an id that an
    earlier line gave: an ``id`` names one line of the file)."""
    seen = {p["id"] for p in per}
    for n, r in pre:
        try:
            pid, prog = _precomputed(r, n)
            if pid in seen:
                raise ValueError(f"line {n}: id {pid!r} names an earlier line too (an id names one line; this one "
                                 f"is not counted)")
        except ValueError as e:
            excluded.append({"id": str(r.get("id") or r.get("src_id") or f"line {n}"),
                             "reason": f"{gen_path.name}: {e}"})
            continue
        seen.add(pid)
        programs.append(prog)
        per.append({"id": pid, "src_runtime": prog.src_runtime,
                    "runtimes": [None if x == math.inf else x for x in prog.runtimes], "outcomes": None})


def _generation_counts(programs: Sequence[ProgramGenerations]) -> dict[str, Any]:
    """The fewest and most generations of a program, and the first program with the fewest: best@k
    stops at the fewest (PIE's n), which a reader should see when programs differ."""
    counts = [len(p.runtimes) for p in programs]
    fewest = min(counts)
    return {"fewest": fewest, "most": max(counts), "fewest_id": str(programs[counts.index(fewest)].program_id)}


def _report(method: str, measured: bool, programs: Sequence[ProgramGenerations], per: Sequence[dict[str, Any]],
            excluded: list[dict[str, Any]], defects: list[dict[str, Any]], records: Sequence[Mapping[str, Any]],
            metrics: Sequence[PieMetricsAtK]) -> dict[str, Any]:
    """The ``metrics.json`` report; ``measured`` False when every line was precomputed."""
    unit = unit_of(method)
    units: dict[str, int] = {}
    other: list[str] = []
    for p in per:
        for u in p.get("units") or []:
            if u is not None:
                units[u] = units.get(u, 0) + 1
        if any(u is not None and u != unit for u in p.get("units") or []):
            other.append(str(p["id"]))
    return {
        "method": method if measured else "precomputed",
        "unit": unit if measured else "as given",
        "speedup_units": dict(sorted(units.items())),
        "programs_in_other_unit": other,
        "n_programs": len(programs),
        "generations": _generation_counts(programs),
        "n_excluded": len(excluded),
        "excluded": excluded,
        "n_dataset_defects": len(defects),
        "dataset_defects": defects,
        "fingerprints": sorted({str(r["fingerprint"]) for r in records if r.get("fingerprint")}),
        "method_fallbacks": [{"key": r.get("key"), "method": r.get("method"), "reason": r.get("fallback_reason")}
                             for r in records if r.get("fallback_reason")],
        "metrics": [m.as_record() for m in metrics],
        "per_program": [dict(p, speedups_at_k={m.k: m.speedups[i] for m in metrics}) for i, p in enumerate(per)],
        "rules": "PIE's aggregation (LearningOpt/pie gem5_eval.py; docs/pie.md): failures = inf runtime; "
                 "best@k over the first k; speedup floored at 1.0; %Opt = speedup >= 1.10",
    }
