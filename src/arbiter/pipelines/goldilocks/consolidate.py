"""Consolidation (the card's "Creation pipeline" step 3, ``arbiter curate consolidate``): per source, read each
row's goldilocks annotation (from its ``extra_info`` or from a sidecar dataset joined on the data_source-qualified
row key), recompute the flag at the thresholds, keep the goldilocks rows, fold the annotation into ``extra_info``,
re-index (``<prefix>_{i}``, the original id kept in ``extra_info.id``), prefix ``code_`` to a ``data_source``
without ``code``, and concatenate the sources into one output. See ``docs/codegen.md`` ("Consolidation: arbiter curate consolidate").
"""

from __future__ import annotations

import math
import os
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from arbiter.datasets.io import jsonl_to_parquet, write_json_atomic
from arbiter.datasets.verl_rows import RowError, iter_raw_rows, parse_row, row_key
from arbiter.pipelines.goldilocks.errors import CurationInputError
from arbiter.pipelines.goldilocks.flag import (
    ANNOTATION_FIELDS, KEPT, LOWER_MAX, UPPER_MIN, check_thresholds, drop_reason, pass_rate, usual_count,
)
from arbiter.pipelines.goldilocks.writer import CuratedWriter, UnwritableRow, check_output_paths, final_schema
from arbiter.pipelines.outputs import holds_out_dirs, lock_out_dir


@dataclass(frozen=True)
class ConsolidationSource:
    """One source to consolidate: its re-index ``prefix`` (``deepcoder``, ``cco``), its ``rows`` and, optionally,
    a ``sidecar`` dataset carrying the annotation (rows of ``data_source``, ``index`` or ``extra_info.index``,
    and ``lower_scores`` / ``upper_scores`` [+ pass rates], top-level or in ``extra_info``)."""

    prefix: str
    rows: Path
    sidecar: Path | None = None


@dataclass
class ConsolidationRun:
    """What :func:`consolidate` did: ``counts`` per source prefix (candidates, kept, floor, ceiling,
    floor+ceiling, problems; floor and ceiling include the floor+ceiling rows: :func:`drop_counts`),
    ``problems`` (one message per row not consolidated, naming row and field), the output and report
    paths; ``k``, per source prefix, the score count each side was held to."""

    out: Path
    report_path: Path
    counts: dict[str, dict[str, int]] = field(default_factory=dict)
    k: dict[str, dict[str, int | None]] = field(default_factory=dict)  # per source prefix: scores per side
    problems: list[str] = field(default_factory=list)

    @property
    def kept(self) -> int:
        return sum(c[KEPT] for c in self.counts.values())


def _scores(value: Any, where: str) -> list[float]:
    ok = isinstance(value, (list, tuple)) and value and all(
        isinstance(s, (int, float)) and not isinstance(s, bool) and not math.isnan(s) and 0 <= s <= 1 for s in value)
    if not ok:
        raise ValueError(f"{where}: expected a non-empty list of scores in [0, 1], got {str(value)[:80]}")
    odd = sorted({float(s) for s in value if s not in (0, 1)})
    if odd:
        raise ValueError(f"{where}: scores other than 0 and 1 ({odd[:4]}): the card's completion passes every case "
                         f"(1.0) or not (0.0)")
    return [float(s) for s in value]


def check_count(ann: Mapping[str, Any], k: Mapping[str, int | None], where: str) -> None:
    """Each side of ``ann`` has the score count ``k`` holds it to (none: any). Raises ``ValueError``
    naming the field after ``where`` (its prefix)."""
    for side in ("lower", "upper"):
        n, want = len(ann[f"{side}_scores"]), k.get(side)
        if want is not None and n != want:
            raise ValueError(f"{where}{side}_scores: {n} scores, expected {want} (--k, default the source's most "
                             f"common count)")


def _score_counts(annotations: Iterable[Any]) -> dict[str, int | None]:
    """Per side, the most common length of the score lists among ``annotations`` (mappings with
    ``lower_scores`` / ``upper_scores``; anything else is skipped)."""
    counts: dict[str, Counter] = {"lower": Counter(), "upper": Counter()}
    for ann in annotations:
        for side, counter in counts.items():
            scores = ann.get(f"{side}_scores") if isinstance(ann, Mapping) else None
            if isinstance(scores, (list, tuple)) and scores:
                counter[len(scores)] += 1
    return {side: usual_count(counter) for side, counter in counts.items()}


def source_k(src: "ConsolidationSource", sidecar: Mapping[str, Any] | None, k: int | None,
             split: str | None) -> dict[str, int | None]:
    """The score count per side every row of ``src`` must have: ``k``, else the most common one of
    its annotations (its sidecar's, or its rows' ``extra_info``, read in a first pass over that
    column alone), as ``audit`` and ``goldilocks`` default it."""
    if k is not None:
        return {"lower": k, "upper": k}
    if sidecar is not None:
        return _score_counts(sidecar.values())
    rows = iter_raw_rows(src.rows, columns=["extra_info"], split=split, unreadable=True)
    return _score_counts(r.get("extra_info") if isinstance(r, Mapping) else None for r in rows)


def read_annotation(fields: Mapping[str, Any], where: str, sep: str = ".") -> dict[str, Any]:
    """The four annotation fields from ``fields`` (scores required; a stored pass rate must equal the recomputed
    one). Raises ``ValueError`` naming ``where`` and the field."""
    ann: dict[str, Any] = {}
    for side in ("lower", "upper"):
        scores = _scores(fields.get(f"{side}_scores"), f"{where}{sep}{side}_scores")
        rate = pass_rate(scores)
        stored = fields.get(f"{side}_pass_rate")
        if stored is not None and stored != rate:
            raise ValueError(f"{where}{sep}{side}_pass_rate: {stored!r} differs from the fraction of passing "
                             f"{side}_scores ({rate})")
        ann[f"{side}_pass_rate"], ann[f"{side}_scores"] = rate, scores
    return ann


def load_sidecar(path: Path, split: str | None = None) -> dict[str, dict[str, Any] | str]:
    """``row key -> annotation`` of a sidecar dataset, keyed ``"<data_source>:<index>"``; a bad annotation is
    kept as its message (naming the sidecar row and field), a problem of that row only. Raises
    :class:`CurationInputError` for a sidecar row without data_source or index, or a key seen twice."""
    table: dict[str, dict[str, Any] | str] = {}
    for position, raw in enumerate(iter_raw_rows(path, split=split)):
        extra = raw.get("extra_info") if isinstance(raw.get("extra_info"), Mapping) else {}
        ds, index = raw.get("data_source"), raw.get("index", extra.get("index"))
        where = f"--sidecar {path} row {position}"
        if not isinstance(ds, str) or not ds or index is None:
            raise CurationInputError(f"{where}: needs 'data_source' and 'index' (joins are on data_source-qualified "
                                     f"keys)")
        key = row_key(ds, index, position)
        if key in table:
            raise CurationInputError(f"{where}: key {key!r} appears twice")
        try:
            table[key] = read_annotation({**extra, **raw}, where, ": ")
        except ValueError as exc:
            table[key] = str(exc)
    return table


def consolidated_row(raw: Mapping[str, Any], ann: Mapping[str, Any], new_index: str) -> dict[str, Any]:
    """``raw`` as the card's final row: ``extra_info`` with ``index`` = ``new_index``, ``id`` (the original id,
    else the original index) and the annotation; ``data_source`` prefixed ``code_`` when it lacks ``code``."""
    extra = dict(raw.get("extra_info") or {})
    original = extra.get("id") if extra.get("id") is not None else extra.get("index")
    extra.update({"index": new_index, "id": original, **{k: ann[k] for k in ANNOTATION_FIELDS}})
    ds = str(raw["data_source"])
    rm = dict(raw.get("reward_model") or {})  # the card's {style, ground_truth, method}, method null when absent
    card = {"style": rm.pop("style", "rule"), "ground_truth": rm.pop("ground_truth", None), "method": rm.pop("method", None)}
    return {**raw, "data_source": ds if "code" in ds else f"code_{ds}", "reward_model": {**card, **rm},
            "extra_info": extra}


def drop_counts(reason: str) -> list[str]:
    """The counts a dropped row adds to: ``floor`` and ``ceiling`` include the ``floor+ceiling`` rows, as the
    goldilocks tally's ``dropped_floor`` / ``dropped_ceiling`` do (docs/goldilocks.md, "Counts")."""
    return [reason] if "+" not in reason else [*reason.split("+"), reason]


def _consolidate_source(src: ConsolidationSource, writer: CuratedWriter, run: ConsolidationRun, thresholds: tuple[float, float],
                        split: str | None, k: int | None) -> None:
    sidecar = load_sidecar(src.sidecar, split) if src.sidecar is not None else None
    want = run.k[src.prefix] = source_k(src, sidecar, k, split)
    counts = run.counts.setdefault(src.prefix, {"candidates": 0, KEPT: 0, "floor": 0, "ceiling": 0,
                                                "floor+ceiling": 0, "problems": 0})
    seen: set[str] = set()
    for position, raw in enumerate(iter_raw_rows(src.rows, split=split, unreadable=True)):
        counts["candidates"] += 1
        try:
            row = parse_row(raw, position)
            where = f"{src.prefix}: row {row.key!r} (position {position})"
            if row.key in seen:
                raise ValueError(f"{where}: the row key repeats an earlier row")
            seen.add(row.key)
            if sidecar is not None:
                if row.key not in sidecar:
                    raise ValueError(f"{where}: no annotation in --sidecar {src.sidecar}")
                ann = sidecar[row.key]
                if isinstance(ann, str):
                    raise ValueError(f"{where}: {ann}")
                check_count(ann, want, f"{where}: --sidecar {src.sidecar}: ")
            else:
                ann = read_annotation(row.extra_info, f"{where}: extra_info")
                check_count(ann, want, f"{where}: extra_info.")
            reason = drop_reason(ann["lower_pass_rate"], ann["upper_pass_rate"], *thresholds)
            if reason:
                for label in drop_counts(reason):
                    counts[label] += 1
                continue
            writer.write(consolidated_row(raw, ann, f"{src.prefix}_{counts[KEPT]}"))
            counts[KEPT] += 1
        except (RowError, ValueError, UnwritableRow) as exc:
            msg = str(exc) if str(exc).startswith(src.prefix) else f"{src.prefix}: {exc}"
            counts["problems"] += 1
            run.problems.append(msg)


@holds_out_dirs
def consolidate(sources: list[ConsolidationSource], out: str | os.PathLike, *, lower_max: float = LOWER_MAX,
                upper_min: float = UPPER_MIN, split: str | None = None, k: int | None = None,
                report: str | os.PathLike | None = None) -> ConsolidationRun:
    """Consolidate ``sources`` (in order) into ``out`` (``.jsonl`` or ``.parquet``, written to a temporary file
    and renamed into place; its folder is locked for the run) and ``report`` (default ``<out stem>.report.json``:
    options, counts per source, problems). Rows are re-indexed ``<prefix>_{i}``, ``i`` counting kept rows of the
    source from 0. A row that cannot be consolidated (not a verl row, no or bad annotation, a score other than 0
    and 1, a score count other than ``k`` per side, default each source's most common one; a repeated key) is a
    problem naming row and field, and the batch goes on. Raises :class:`CurationInputError` for bad thresholds,
    ``k``, prefixes, paths, or a bad sidecar."""
    check_thresholds(lower_max, upper_min, None)
    if k is not None and (isinstance(k, bool) or not isinstance(k, int) or k < 1):
        raise CurationInputError(f"--k must be a positive integer, got {k!r}")
    out_path = Path(out)
    report_path = Path(report) if report is not None else out_path.with_name(out_path.stem + ".report.json")
    prefixes = [s.prefix for s in sources]
    if not sources or len(set(prefixes)) != len(prefixes) or not all(p and p.isidentifier() for p in prefixes):
        raise CurationInputError(f"--source: give one or more sources with distinct prefixes made of letters, digits "
                                 f"and _ (got {prefixes})")
    inputs = {f"--source {s.prefix}": s.rows for s in sources} | {f"--sidecar {s.prefix}": s.sidecar for s in sources}
    check_output_paths({"--out": out_path, "--report": report_path}, inputs)
    if not out_path.parent.is_dir():
        raise CurationInputError(f"--out {out_path}: its folder does not exist")
    lock_out_dir(out_path.parent)
    run = ConsolidationRun(out_path, report_path)
    parquet = out_path.suffix.lower() == ".parquet"
    staging = out_path.with_name(out_path.name + ".rows.jsonl") if parquet else out_path
    writer = CuratedWriter(staging)
    try:
        for src in sources:
            _consolidate_source(src, writer, run, (lower_max, upper_min), split, k)
    except BaseException:
        writer.close(keep=False)
        raise
    writer.close()
    if parquet:
        tmp = out_path.with_name(out_path.name + ".partial")
        jsonl_to_parquet(staging, tmp, schema_of=final_schema)
        os.replace(tmp, out_path)
        staging.unlink()
    write_json_atomic(report_path, {"card": "codegen_iquest_card.txt: Creation pipeline step 3",
                                    "options": {"lower_max": lower_max, "upper_min": upper_min, "k": k},
                                    "sources": [{"prefix": s.prefix, "rows": str(s.rows),
                                                 "sidecar": None if s.sidecar is None else str(s.sidecar),
                                                 "k": run.k.get(s.prefix)}
                                                for s in sources],
                                    "counts": run.counts, "kept": run.kept, "problems": run.problems})
    return run


__all__ = ["ConsolidationRun", "ConsolidationSource", "check_count", "consolidate", "consolidated_row", "load_sidecar",
           "read_annotation", "source_k"]
