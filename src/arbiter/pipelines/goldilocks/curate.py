"""Curation (:func:`curate_goldilocks`, ``arbiter curate goldilocks``): annotate every row of a dataset from two
``arbiter score`` folders (:mod:`~arbiter.pipelines.goldilocks.score_folders`), keep the rows whose recomputed
flag holds and whose statement passes the English filter (:mod:`~arbiter.pipelines.goldilocks.rows`), count them
(:mod:`~arbiter.pipelines.goldilocks.tally`) and write the kept rows, the report and the rows log
(:mod:`~arbiter.pipelines.goldilocks.writer`).

The outputs, the decisions, the counts and the vacuous-suite rule: ``docs/goldilocks.md``.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from arbiter.datasets.convert import check_output_path
from arbiter.pipelines.codegen import CONFIG_FILE, input_identity
from arbiter.pipelines.goldilocks.english import EnglishFilter, english_detector_description, template_report, with_confidence
from arbiter.pipelines.goldilocks.errors import CurationInputError
from arbiter.pipelines.goldilocks.flag import (ENGLISH_MIN, ENGLISH_NEAR_MISS, KEPT, LOWER_MAX, UPPER_MIN, VACUOUS,
                                               check_thresholds)
from arbiter.pipelines.goldilocks.prescan import Prescan, input_schema, prescan_dataset
from arbiter.pipelines.goldilocks.rows import RowDecider, rows_log_record
from arbiter.pipelines.goldilocks.combine import load_folders
from arbiter.pipelines.goldilocks.score_folders import ScoreFolder
from arbiter.pipelines.goldilocks.tally import CurationCounts, Tally
from arbiter.pipelines.goldilocks.writer import CuratedWriter, short_message, check_output_paths, json_line, write_json_atomic
from arbiter.pipelines.outputs import holds_out_dirs, lock_out_dir

__all__ = ["CurationRun", "Tally", "curate_goldilocks"]


def _report_paths(out: Path, report: str | os.PathLike | None, rows_log: str | os.PathLike | None) -> tuple[Path, Path]:
    stem = out.name[: -len(out.suffix)] if out.suffix else out.name
    return (Path(report) if report is not None else out.with_name(f"{stem}.report.json"),
            Path(rows_log) if rows_log is not None else out.with_name(f"{stem}.rows.jsonl"))


def _folder_identity(folder: ScoreFolder) -> dict[str, Any]:
    """What the report says about a score folder: its inputs (from ``config.json``), options, rows,
    how many rows have each completion count, parity mode, vacuous rows."""
    cfg = folder.config or {}

    def pick(name: str) -> dict[str, Any] | None:
        value = cfg.get(name)
        return {k: value.get(k) for k in ("path", "sha256")} if isinstance(value, dict) else None

    return {"path": str(folder.path.resolve()), "dataset": pick("dataset"), "completions": pick("completions"),
            "split": cfg.get("split"), "options": cfg.get("options"), "rows": len(folder.rows),
            "completion_counts": dict(sorted(folder.counts().items())), "parity": folder.parity,
            "scored_this_dataset": folder.dataset_matches, "vacuous_rows": folder.vacuous_rows()}


@dataclass
class CurationRun:
    """What :func:`curate_goldilocks` did: ``report`` (the content of ``report.json``), the output
    paths, and ``overall`` (:class:`Tally` of all rows)."""

    report: dict[str, Any]
    out: Path
    report_path: Path
    rows_path: Path
    overall: Tally
    bad_rows: int = 0
    duplicate_rows: int = 0
    warnings: list[str] = field(default_factory=list)

    @property
    def problems(self) -> int:
        """Rows that could not be judged for the filter: missing annotations, bad rows, repeated keys."""
        return self.overall.missing_annotation + self.bad_rows + self.duplicate_rows


def _parity_refusal(folder: ScoreFolder) -> str:
    return (f"{folder.label} {folder.path} was scored with `arbiter score --parity {folder.parity}` "
            f"({folder.parity_detail()}): there a SKIPPED verdict scores 1.0 when only the first 10 cases passed "
            f"(the rest never ran) and failures get partial credit, but the card counts a completion as passing "
            f"only when it clears every case. Rescore without --parity into a new folder, or pass --allow-parity "
            f"to use these verdicts as they are (recorded in the report)")


@dataclass
class _Inputs:
    """The checked inputs of one curation run."""

    dataset: Path
    weak: ScoreFolder
    strong: ScoreFolder
    out: Path
    report: Path
    rows: Path
    english: EnglishFilter | None
    schema: Any
    scan: Prescan
    identity: dict[str, Any]
    k_lower: int | None
    k_upper: int | None


def _output_paths(out: str | os.PathLike, report: str | os.PathLike | None,
                  rows_log: str | os.PathLike | None) -> tuple[Path, Path, Path]:
    try:
        out_path = check_output_path(out)
    except ValueError as exc:
        raise CurationInputError(str(exc)) from None
    report_path, rows_path = _report_paths(out_path, report, rows_log)
    for name, path in (("--report", report_path), ("rows log", rows_path)):
        if not path.parent.is_dir():
            raise CurationInputError(f"{name} {path}: its folder {path.parent} does not exist")
    return out_path, report_path, rows_path


def _load_folders(weak: Any, strong: Any, allow_partial: bool) -> tuple[ScoreFolder, ScoreFolder]:
    weak_f = load_folders(weak, "--weak", allow_partial)
    strong_f = load_folders(strong, "--strong", allow_partial)
    if weak_f.path.resolve() == strong_f.path.resolve():
        raise CurationInputError(f"--weak and --strong are the same folder ({weak_f.path}); score the weak and the "
                                 f"strong model's completions into two folders")
    return weak_f, strong_f


def _prepare(dataset: str | os.PathLike, weak: Any, strong: Any,
             out: str | os.PathLike, report: str | os.PathLike | None, rows_log: str | os.PathLike | None, *,
             english_min: float | None, english: EnglishFilter | None, k: int | None, split: str | None,
             allow_parity: bool, allow_partial: bool) -> _Inputs:
    """Check every input before anything is written; :class:`CurationInputError` names what is wrong."""
    out_path, report_path, rows_path = _output_paths(out, report, rows_log)
    dpath = Path(dataset)
    weak_f, strong_f = _load_folders(weak, strong, allow_partial)
    check_output_paths({"--out": out_path, "--report": report_path, "rows log": rows_path},
                       {"--dataset": dpath, "--weak": weak_f.path, "--strong": strong_f.path})
    for f in (weak_f, strong_f):
        if f.parity and not allow_parity:
            raise CurationInputError(_parity_refusal(f))
    if english_min is not None and english is None:
        english = EnglishFilter(english_min)
    if english_min is None:
        english = None
    parquet_out = out_path.suffix.lower() == ".parquet"
    try:
        schema = input_schema(dpath) if parquet_out else None
    except (ValueError, OSError) as exc:
        raise CurationInputError(f"--dataset: {exc}") from None
    scan = prescan_dataset(dpath, split, statements=english is not None, infer_schema=parquet_out and schema is None)
    if parquet_out and schema is None:
        schema = scan.schema
    try:
        identity = input_identity(dpath)
    except OSError as exc:
        raise CurationInputError(f"--dataset: {exc}") from None
    for f in (weak_f, strong_f):
        f.dataset_matches = f.matches_dataset(identity, split)
    return _Inputs(dpath, weak_f, strong_f, out_path, report_path, rows_path, english, schema, scan, identity,
                   k if k is not None else weak_f.default_k(), k if k is not None else strong_f.default_k())


def _input_warnings(inp: _Inputs) -> list[str]:
    """What the report warns about the inputs (folders that disagree, unchecked inputs, mixed index types)."""
    warnings: list[str] = []
    weak_f, strong_f = inp.weak, inp.strong
    if inp.k_lower is not None and inp.k_upper is not None and inp.k_lower != inp.k_upper:
        warnings.append(f"the weak folder's rows have {inp.k_lower} completions, the strong folder's {inp.k_upper}")
    wc, sc = (weak_f.config or {}).get("completions"), (strong_f.config or {}).get("completions")
    if isinstance(wc, dict) and isinstance(sc, dict) and wc.get("sha256") and wc.get("sha256") == sc.get("sha256"):
        warnings.append("--weak and --strong scored the same completions file (same sha256)")
    wo, so = (weak_f.config or {}).get("options"), (strong_f.config or {}).get("options")
    if isinstance(wo, dict) and isinstance(so, dict) and wo != so:
        diff = sorted(k_ for k_ in set(wo) | set(so) if wo.get(k_) != so.get(k_))
        warnings.append(f"--weak and --strong were scored with different options ({', '.join(diff)})")
    for f in (weak_f, strong_f):
        warnings.extend(_folder_warnings(f, inp.scan.positional))
    if inp.scan.index_as_string:
        warnings.append(f"extra_info.index holds values of several types (numbers and strings): written as strings "
                        f"to {inp.out.name} (the card's index is a string, e.g. deepcoder_{{i}}); row keys are "
                        f"unchanged")
    return warnings


def _folder_warnings(f: ScoreFolder, positional: int) -> list[str]:
    warnings = [f"{gap} (--allow-partial: rows lacking verdicts get no annotation)"
                for gap in f.shard_gaps]
    if f.config is None:
        warnings.append(f"{f.label} {f.path}: no {CONFIG_FILE}; its inputs cannot be checked (ground truths are "
                        f"still checked row by row; rows without an extra_info.index cannot be joined)")
    elif not f.dataset_matches:
        joined = ("rows with an extra_info.index were joined on data_source:index, each verdict's ground-truth "
                  "sha256 checked" +
                  (f"; the {positional} row(s) without an extra_info.index are keyed by position and "
                   f"got no annotation from it (positional_key)" if positional else ""))
        warnings.append(f"{f.label} scored another dataset file or split (sha256 differs); {joined}")
    if f.parity:
        warnings.append(f"{f.label} {f.path} was scored with --parity {f.parity} (--allow-parity): SKIPPED "
                        f"verdicts, first 10 cases passed and the rest not run, count as passes")
    return warnings


def _open_writer(inp: _Inputs) -> CuratedWriter:
    for folder in dict.fromkeys(p.parent for p in (inp.out, inp.report, inp.rows)):
        lock_out_dir(folder)  # one writer per folder (OutputDirBusy, a ValueError: exit 2); held until we return
    try:
        return CuratedWriter(inp.out, inp.schema)
    except (ValueError, TypeError, OSError, NotImplementedError) as exc:  # pyarrow: a schema Parquet cannot store
        raise CurationInputError(f"--out {inp.out}: cannot write these rows as Parquet ({short_message(exc)}); write "
                                 f".jsonl instead") from None


def _write_rows(inp: _Inputs, decider: RowDecider, split: str | None, counts: CurationCounts,
                progress: Callable[[int, int], None] | None) -> None:
    """Decide, count and write every row: the kept rows to ``OUT``, every decision to the rows log. Both go
    through ``.partial`` files; on failure neither is left behind."""
    writer = _open_writer(inp)
    rows_tmp = inp.rows.with_name(inp.rows.name + ".partial")
    done = 0
    try:
        with open(rows_tmp, "wb") as log:
            items = decider.first_decisions(inp.dataset, split)
            for item, conf in with_confidence(items, lambda it: it.text, inp.english):
                payload = decider.final_decision(item, conf, writer, inp.out.name) if item.decision == "" else None
                counts.count(item, conf)
                if payload is not None:
                    writer.write_encoded(payload)
                    counts.replaced_rows += bool(item.replaced)
                log.write(json_line(rows_log_record(item, conf), default=str))
                done += 1
                if progress is not None:
                    progress(done, inp.scan.rows)
    except (ValueError, OSError) as exc:  # a dataset line that breaks mid-stream (RowError), an I/O error
        writer.close(keep=False)
        rows_tmp.unlink(missing_ok=True)
        raise CurationInputError(f"--dataset: {exc}") from None
    except BaseException:
        writer.close(keep=False)
        rows_tmp.unlink(missing_ok=True)
        raise
    try:
        writer.close()
    except (ValueError, OSError) as exc:
        rows_tmp.unlink(missing_ok=True)
        raise CurationInputError(f"--out {inp.out}: {exc}") from None
    os.replace(rows_tmp, inp.rows)


def _result_warnings(counts: CurationCounts) -> list[str]:
    """What the report warns about the outcome (rows without an annotation, swapped folders, vacuous rows kept,
    surrogates replaced)."""
    warnings: list[str] = []
    overall, annotated, vacuous_rows = counts.overall, counts.annotated, counts.vacuous_rows
    if overall.missing_annotation:
        by_reason = Counter(f"{p['side']}: {p['reason']}" for p in counts.annotation_problems)
        warnings.append(f"{overall.missing_annotation} row(s) without an annotation (not kept): "
                        + ", ".join(f"{n} {r}" for r, n in by_reason.most_common()))
    if annotated["rows"]:
        mean_lower, mean_upper = annotated["lower"] / annotated["rows"], annotated["upper"] / annotated["rows"]
        if mean_lower > mean_upper:
            warnings.append(f"the weak model's mean pass rate ({mean_lower:.3f}) exceeds the strong model's "
                            f"({mean_upper:.3f}) over the {annotated['rows']} annotated row(s): are --weak and "
                            f"--strong swapped?")
    kept_vacuous = sum(1 for v in vacuous_rows if v["decision"] != VACUOUS)
    if kept_vacuous:
        warnings.append(f"{kept_vacuous} row(s) with a vacuous suite (every expected output empty: any program "
                        f"printing nothing passes) went through the filter (--keep-vacuous); "
                        f"{sum(1 for v in vacuous_rows if v['decision'] == KEPT)} kept, listed in the report")
    near = sorted(counts.english_near_misses, key=lambda r: -r["english_confidence"])
    if near:
        shown = ", ".join(f"{r['row_key']} ({r['english_confidence']:.3f})" for r in near[:5])
        warnings.append(f"{len(near)} row(s) dropped by the English filter although English is the likelier reading "
                        f"(confidence >= {ENGLISH_NEAR_MISS}; a genuine English statement can score 0.97): {shown}"
                        f"{', ...' if len(near) > 5 else ''}; listed in the report (english_near_misses)")
    if counts.replaced_rows:
        warnings.append(f"{counts.replaced_rows} kept row(s) held lone surrogates, replaced by U+FFFD in the Parquet "
                        f"output (fields listed in the rows log)")
    return warnings


def _report_content(inp: _Inputs, counts: CurationCounts, options: dict[str, Any],
                    warnings: list[str]) -> dict[str, Any]:
    overall, joins = counts.overall, counts.joins
    return {
        "card": "codegen_iquest_card.txt: Difficulty (goldilocks) filtering; Creation pipeline steps 2-4",
        "options": options,
        "inputs": {"dataset": inp.identity, "weak": _folder_identity(inp.weak),
                   "strong": _folder_identity(inp.strong)},
        "outputs": {"rows": str(inp.out), "decisions": str(inp.rows)},
        "join": {"by_data_source_index": joins["by_data_source_index"], "by_position": joins["by_position"],
                 "by_position_refused": joins["by_position_refused"],
                 "rule": "rows meet their verdicts on <data_source>:<extra_info.index>; a row without an index on "
                         "<data_source>:#<position>, only from a folder that scored this very dataset file"},
        "overall": {**overall.as_dict(overall.kept), "bad_rows": len(counts.bad_rows),
                    "duplicate_rows": len(counts.duplicates)},
        "by_data_source": {ds: t.as_dict(overall.kept) for ds, t in sorted(counts.tallies.items())},
        "annotation_problems": counts.annotation_problems,
        "bad_rows": counts.bad_rows,
        "duplicate_rows": counts.duplicates,
        "vacuous_rows": counts.vacuous_rows,
        "english_near_misses": sorted(counts.english_near_misses, key=lambda r: -r["english_confidence"]),
        "template_lines": template_report(inp.scan.template),
        "warnings": warnings,
    }


@holds_out_dirs
def curate_goldilocks(dataset: str | os.PathLike, weak: Any, strong: Any,
                      out: str | os.PathLike, *, lower_max: float = LOWER_MAX, upper_min: float = UPPER_MIN,
                      english_min: float | None = ENGLISH_MIN, k: int | None = None, split: str | None = None,
                      report: str | os.PathLike | None = None, rows_log: str | os.PathLike | None = None,
                      english: EnglishFilter | None = None, keep_vacuous: bool = False, allow_parity: bool = False,
                      allow_partial: bool = False, progress: Callable[[int, int], None] | None = None) -> CurationRun:
    """Annotate ``dataset`` from two ``arbiter score`` folders, keep the goldilocks English rows,
    and write the outputs described in ``docs/goldilocks.md``.

    - ``dataset``: verl rows (Parquet, JSONL, HF folder with ``split``), the rows that were scored.
    - ``weak`` / ``strong``: the ``arbiter score --out`` folder (or a list of folders, read as one
      by :func:`~arbiter.pipelines.goldilocks.combine.load_folders`) of the weak (lower) and strong
      (upper) model's completions.
    - ``out``: ``.parquet`` or ``.jsonl`` in an existing folder
      (:func:`arbiter.datasets.convert.check_output_path`); ``report`` / ``rows_log`` default to
      ``<stem>.report.json`` / ``<stem>.rows.jsonl`` next to it. None of the three may be an input,
      lie inside a score folder or be another of them (:func:`check_output_paths`).
    - ``lower_max``, ``upper_min``: :func:`is_goldilocks` thresholds (the card: 0.875, 0.125).
    - ``english_min``: the English filter's minimum confidence (the card: 0.999); ``None`` turns
      the filter off. ``english``: a prepared :class:`EnglishFilter` (its threshold is used).
    - ``k``: the completion count every row must have on both sides; default per folder, its most
      common count (:meth:`ScoreFolder.default_k`).
    - ``keep_vacuous``: keep rows whose suite is vacuous (flagged) instead of dropping them.
    - ``allow_parity``: accept folders scored with ``arbiter score --parity`` (refused otherwise).
    - ``allow_partial``: accept shard folders that are not one whole finished run (refused
      otherwise, as by ``arbiter merge``); the report's warnings say what they lack.
    - ``progress(done, total)``: rows finished so far.

    Reads the dataset twice, streamed (first pass: keys, template lines, the Parquet schema; memory:
    the two folders' 0/1 scores, the template line counts and one batch of rows). Bad rows,
    repeated keys and rows without an annotation are reported and the batch goes on. Raises
    :class:`CurationInputError` for unusable inputs (nothing is written then).
    """
    check_thresholds(lower_max, upper_min, english_min)
    if k is not None and (isinstance(k, bool) or not isinstance(k, int) or k < 1):
        raise CurationInputError(f"--k must be a positive integer, got {k!r}")
    inp = _prepare(dataset, weak, strong, out, report, rows_log, english_min=english_min, english=english, k=k,
                   split=split, allow_parity=allow_parity, allow_partial=allow_partial)
    warnings = _input_warnings(inp)
    decider = RowDecider(inp.weak, inp.strong, inp.k_lower, inp.k_upper, lower_max, upper_min, keep_vacuous,
                         inp.english, inp.scan)
    counts = CurationCounts()
    _write_rows(inp, decider, split, counts, progress)
    warnings.extend(_result_warnings(counts))
    options = {"lower_max": lower_max, "upper_min": upper_min,
               "english_min": inp.english.min_confidence if inp.english is not None else None,
               "english_detector": english_detector_description(inp.english, inp.scan.template),
               "k_lower": inp.k_lower, "k_upper": inp.k_upper, "split": split, "keep_vacuous": keep_vacuous,
               "allow_parity": allow_parity, "allow_partial": allow_partial,
               "index_as_string": inp.scan.index_as_string}
    content = _report_content(inp, counts, options, warnings)
    write_json_atomic(inp.report, content)
    return CurationRun(content, inp.out, inp.report, inp.rows, counts.overall, len(counts.bad_rows),
                       len(counts.duplicates), warnings)
