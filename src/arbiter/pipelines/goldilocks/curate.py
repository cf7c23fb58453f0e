"""Curation (:func:`curate_goldilocks`, ``arbiter curate goldilocks``): annotate every row of a
dataset from two ``arbiter score`` folders (:mod:`arbiter.pipelines.goldilocks.score_folders`),
keep the rows whose recomputed flag holds (:func:`arbiter.pipelines.goldilocks.flag.is_goldilocks`)
and whose statement passes the English filter (:mod:`arbiter.pipelines.goldilocks.english`), and
write the kept rows, the report and the rows log (:mod:`arbiter.pipelines.goldilocks.writer`).

Vacuous suites: ``arbiter score`` flags a row whose every expected output is empty (its verdicts'
``warning``, ``vacuous: true`` in ``problems.jsonl``): any program that prints nothing passes,
so its pass rates say nothing about difficulty. Such rows are dropped (decision ``vacuous``)
unless ``keep_vacuous``; kept ones are flagged in the rows log and listed in the report.

Outputs of :func:`curate_goldilocks` (``OUT`` is ``<stem>.parquet`` or ``<stem>.jsonl``):

- ``OUT``: the kept rows, in dataset order, every column as read, with the annotation folded into
  ``extra_info`` (``index``, ``id`` and every other field kept; ``lower_pass_rate``,
  ``lower_scores``, ``upper_pass_rate``, ``upper_scores`` added or replaced). Written row group by
  row group to ``OUT.partial`` and renamed when done (an interrupted run leaves no truncated
  ``OUT``; the pass is cheap and is simply run again). Parquet: the schema is fixed before the
  first row is written (the input's Parquet schema, or the union of the rows' types found in the
  first pass; rows that cannot share one schema are refused then, before anything is written;
  an ``extra_info.index`` holding both numbers and strings is written as strings, the card's
  index being a string such as ``deepcoder_{i}``). Lone surrogates (JSON ``"\\ud83d"``): a JSONL
  output keeps them as ``\\u`` escapes (read back identical); Parquet strings are UTF-8, so they
  are replaced by U+FFFD there (listed per row in the rows log), except in ``reward_model`` (the
  scored tests would change): such a row is a ``bad_row``.
- ``<stem>.report.json``: options, inputs, the counts overall and per ``data_source`` (like the
  card's composition table), every annotation problem, bad row and vacuous row, the template
  lines removed for the English filter.
- ``<stem>.rows.jsonl``: one decision per dataset row (``kept``, ``floor``, ``ceiling``,
  ``floor+ceiling``, ``vacuous``, ``non_english``, ``no_statement``, ``missing_annotation``,
  ``bad_row``, ``duplicate_key``) with its pass rates and English confidence.

No output may overwrite an input (:func:`arbiter.pipelines.goldilocks.writer.check_output_paths`).

Counts (:class:`Tally`, overall and per ``data_source``): ``candidates`` (rows with a readable,
unique key), ``missing_annotation``, ``vacuous`` (annotated rows with a vacuous suite),
``dropped_vacuous`` (those dropped: all of them unless ``keep_vacuous``), ``goldilocks`` (the flag
holds), ``dropped_floor`` (``upper_pass_rate < upper_min``: "nobody solves it"),
``dropped_ceiling`` (``lower_pass_rate > lower_max``: "everybody solves it"),
``dropped_floor_and_ceiling`` (both; also counted in each of the two), ``dropped_non_english``
(goldilocks rows dropped by the English filter; the card: 36), ``dropped_no_statement``
(goldilocks rows without a statement), ``kept``. So ``kept = goldilocks - dropped_non_english -
dropped_no_statement`` and ``goldilocks = candidates - missing_annotation - dropped_vacuous -
dropped_floor - dropped_ceiling + dropped_floor_and_ceiling``.

To annotate every row without filtering, run with ``lower_max=1.0, upper_min=0.0,
english_min=None, keep_vacuous=True`` (``--lower-max 1 --upper-min 0 --no-english-filter
--keep-vacuous``): every annotatable row is written with its annotation.
"""

from __future__ import annotations

import os
import statistics
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from arbiter.datasets.convert import check_output_path
from arbiter.datasets.verl_rows import RowError, iter_raw_rows, parse_row, row_key
from arbiter.pipelines.codegen import CONFIG_FILE, input_identity
from arbiter.pipelines.goldilocks.english import (
    EnglishFilter, _english_detector_description, _template_report, _with_confidence, detection_text, statement_text,
)
from arbiter.pipelines.goldilocks.errors import CurationInputError
from arbiter.pipelines.goldilocks.flag import (
    BAD_ROW, BOTH, CEILING, DUPLICATE, ENGLISH_MIN, FLOOR, KEPT, LOWER_MAX, MISSING_ANNOTATION, NO_STATEMENT,
    NON_ENGLISH, POSITIONAL, UPPER_MIN, VACUOUS, Annotation, _check_thresholds, drop_reason,
)
from arbiter.pipelines.goldilocks.prescan import _input_schema, _prescan
from arbiter.pipelines.goldilocks.score_folders import ScoreFolder, annotate, is_positional
from arbiter.pipelines.outputs import holds_out_dirs, lock_out_dir
from arbiter.pipelines.goldilocks.writer import (
    CuratedWriter, UnwritableRow, _short, check_output_paths, json_line, write_json_atomic,
)


# ------------------------------------------------------------------ counts


@dataclass
class Tally:
    """Counts of one ``data_source`` (or overall); see the module docstring. ``lower``/``upper``:
    the pass rates of the kept rows (for the card's "Difficulty (kept rows)" means and medians)."""

    candidates: int = 0
    missing_annotation: int = 0
    vacuous: int = 0
    dropped_vacuous: int = 0
    goldilocks: int = 0
    dropped_floor: int = 0
    dropped_ceiling: int = 0
    dropped_floor_and_ceiling: int = 0
    dropped_non_english: int = 0
    dropped_no_statement: int = 0
    kept: int = 0
    lower: list[float] = field(default_factory=list)
    upper: list[float] = field(default_factory=list)

    def as_dict(self, total_kept: int) -> dict[str, Any]:
        def mean(v: list[float]) -> float | None:
            return sum(v) / len(v) if v else None

        return {
            "candidates": self.candidates, "missing_annotation": self.missing_annotation,
            "vacuous": self.vacuous, "dropped_vacuous": self.dropped_vacuous,
            "goldilocks": self.goldilocks, "dropped_floor": self.dropped_floor,
            "dropped_ceiling": self.dropped_ceiling, "dropped_floor_and_ceiling": self.dropped_floor_and_ceiling,
            "dropped_non_english": self.dropped_non_english, "dropped_no_statement": self.dropped_no_statement,
            "kept": self.kept,
            "kept_per_candidate": self.kept / self.candidates if self.candidates else None,
            "share_of_kept": self.kept / total_kept if total_kept else None,
            "mean_lower_pass_rate": mean(self.lower), "mean_upper_pass_rate": mean(self.upper),
            "median_lower_pass_rate": statistics.median(self.lower) if self.lower else None,
            "median_upper_pass_rate": statistics.median(self.upper) if self.upper else None,
        }


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


# ------------------------------------------------------------------ curate


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


@dataclass
class _Item:
    position: int
    raw: dict[str, Any] | None
    key: str
    data_source: str | None
    decision: str = ""
    annotation: Annotation | None = None
    problems: list[dict[str, str]] = field(default_factory=list)
    error: str = ""
    text: str | None = None
    positional: bool = False
    no_statement: bool = False
    replaced: list[str] = field(default_factory=list)


def _parity_refusal(folder: ScoreFolder) -> str:
    return (f"{folder.label} {folder.path} was scored with `arbiter score --parity {folder.parity}` "
            f"({folder.parity_detail()}): there a SKIPPED verdict scores 1.0 when only the first 10 cases passed "
            f"(the rest never ran) and failures get partial credit, but the card counts a completion as passing "
            f"only when it clears every case. Rescore without --parity into a new folder, or pass --allow-parity "
            f"to use these verdicts as they are (recorded in the report)")


@holds_out_dirs
def curate_goldilocks(dataset: str | os.PathLike, weak: str | os.PathLike, strong: str | os.PathLike,
                      out: str | os.PathLike, *, lower_max: float = LOWER_MAX, upper_min: float = UPPER_MIN,
                      english_min: float | None = ENGLISH_MIN, k: int | None = None, split: str | None = None,
                      report: str | os.PathLike | None = None, rows_log: str | os.PathLike | None = None,
                      english: EnglishFilter | None = None, keep_vacuous: bool = False, allow_parity: bool = False,
                      progress: Callable[[int, int], None] | None = None) -> CurationRun:
    """Annotate ``dataset`` from two ``arbiter score`` folders, keep the goldilocks English rows,
    and write the outputs of the module docstring.

    - ``dataset``: verl rows (Parquet, JSONL, HF folder with ``split``), the rows that were scored.
    - ``weak`` / ``strong``: the ``arbiter score --out`` folders of the weak (lower) and strong
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
    - ``progress(done, total)``: rows finished so far.

    Reads the dataset twice, streamed (first pass: keys, template lines, the Parquet schema; memory:
    the two folders' 0/1 scores, the template line counts and one batch of rows). Bad rows,
    repeated keys and rows without an annotation are reported and the batch goes on. Raises
    :class:`CurationInputError` for unusable inputs (nothing is written then).
    """
    _check_thresholds(lower_max, upper_min, english_min)
    if k is not None and (isinstance(k, bool) or not isinstance(k, int) or k < 1):
        raise CurationInputError(f"--k must be a positive integer, got {k!r}")
    try:
        out_path = check_output_path(out)
    except ValueError as exc:
        raise CurationInputError(str(exc)) from None
    report_path, rows_path = _report_paths(out_path, report, rows_log)
    for name, path in (("--report", report_path), ("rows log", rows_path)):
        if not path.parent.is_dir():
            raise CurationInputError(f"{name} {path}: its folder {path.parent} does not exist")
    dpath = Path(dataset)
    weak_f = ScoreFolder.load(weak, "--weak")
    strong_f = ScoreFolder.load(strong, "--strong")
    if weak_f.path.resolve() == strong_f.path.resolve():
        raise CurationInputError(f"--weak and --strong are the same folder ({weak_f.path}); score the weak and the "
                                 f"strong model's completions into two folders")
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
        schema = _input_schema(dpath) if parquet_out else None
    except (ValueError, OSError) as exc:
        raise CurationInputError(f"--dataset: {exc}") from None
    scan = _prescan(dpath, split, statements=english is not None, infer_schema=parquet_out and schema is None)
    total = scan.rows
    if parquet_out and schema is None:
        schema = scan.schema
    template = scan.template
    try:
        dataset_identity = input_identity(dpath)
    except OSError as exc:
        raise CurationInputError(f"--dataset: {exc}") from None
    for f in (weak_f, strong_f):
        f.dataset_matches = f.matches_dataset(dataset_identity, split)

    warnings: list[str] = []
    k_lower = k if k is not None else weak_f.default_k()
    k_upper = k if k is not None else strong_f.default_k()
    if k_lower is not None and k_upper is not None and k_lower != k_upper:
        warnings.append(f"the weak folder's rows have {k_lower} completions, the strong folder's {k_upper}")
    wc, sc = (weak_f.config or {}).get("completions"), (strong_f.config or {}).get("completions")
    if isinstance(wc, dict) and isinstance(sc, dict) and wc.get("sha256") and wc.get("sha256") == sc.get("sha256"):
        warnings.append("--weak and --strong scored the same completions file (same sha256)")
    wo, so = (weak_f.config or {}).get("options"), (strong_f.config or {}).get("options")
    if isinstance(wo, dict) and isinstance(so, dict) and wo != so:
        diff = sorted(k_ for k_ in set(wo) | set(so) if wo.get(k_) != so.get(k_))
        warnings.append(f"--weak and --strong were scored with different options ({', '.join(diff)})")
    for f in (weak_f, strong_f):
        if f.config is None:
            warnings.append(f"{f.label} {f.path}: no {CONFIG_FILE}; its inputs cannot be checked (ground truths are "
                            f"still checked row by row; rows without an extra_info.index cannot be joined)")
        elif not f.dataset_matches:
            joined = ("rows with an extra_info.index were joined on data_source:index, each verdict's ground-truth "
                      "sha256 checked" +
                      (f"; the {scan.positional} row(s) without an extra_info.index are keyed by position and "
                       f"got no annotation from it (positional_key)" if scan.positional else ""))
            warnings.append(f"{f.label} scored another dataset file or split (sha256 differs); {joined}")
        if f.parity:
            warnings.append(f"{f.label} {f.path} was scored with --parity {f.parity} (--allow-parity): SKIPPED "
                            f"verdicts, first 10 cases passed and the rest not run, count as passes")
    if scan.index_as_string:
        warnings.append(f"extra_info.index holds values of several types (numbers and strings): written as strings "
                        f"to {out_path.name} (the card's index is a string, e.g. deepcoder_{{i}}); row keys are "
                        f"unchanged")

    tallies: dict[str, Tally] = defaultdict(Tally)
    overall = Tally()
    annotation_problems: list[dict[str, Any]] = []
    bad_rows: list[dict[str, Any]] = []
    duplicates: list[dict[str, Any]] = []
    vacuous_rows: list[dict[str, Any]] = []
    seen: set[str] = set()
    joins: Counter = Counter()
    annotated = {"rows": 0, "lower": 0.0, "upper": 0.0}   # over every annotated row: swapped --weak/--strong?
    replaced_rows = 0

    def stage1() -> Iterator[_Item]:
        for position, raw in enumerate(iter_raw_rows(dpath, split=split, batch_size=64)):
            try:
                row = parse_row(raw, position)
            except RowError as exc:
                ds = raw.get("data_source") if isinstance(raw, Mapping) else None
                ei = raw.get("extra_info") if isinstance(raw, Mapping) else None
                key = row_key(ds, ei.get("index") if isinstance(ei, Mapping) else None, position)
                yield _Item(position, None, key, ds if isinstance(ds, str) else None, BAD_ROW, error=str(exc))
                continue
            item = _Item(position, raw, row.key, row.data_source, positional=is_positional(row))
            if row.key in seen:
                item.decision = DUPLICATE
                item.error = f"row key {row.key!r} repeats at position {position}; only the first row is curated"
                yield item
                continue
            seen.add(row.key)
            ann, problems = annotate(row, weak_f, strong_f, k_lower=k_lower, k_upper=k_upper)
            if ann is None:
                item.decision, item.problems = MISSING_ANNOTATION, problems
                yield item
                continue
            item.annotation = ann
            if ann.vacuous and not keep_vacuous:
                item.decision = VACUOUS
                yield item
                continue
            item.decision = drop_reason(ann.lower_pass_rate, ann.upper_pass_rate, lower_max, upper_min)
            if not item.decision and english is not None:
                statement = statement_text(row.prompt)
                if statement.strip():
                    item.text = detection_text(statement, template)
                else:
                    item.no_statement = True
            yield item

    def decide(item: _Item, conf: float | None) -> Any:
        """The final decision of a goldilocks row; the encoded output row when kept."""
        if item.no_statement:
            item.decision = NO_STATEMENT
            return None
        if conf is not None and conf < english.min_confidence:  # type: ignore[union-attr]
            item.decision = NON_ENGLISH
            return None
        ann = item.annotation
        assert ann is not None and item.raw is not None
        extra = item.raw.get("extra_info")
        extra = dict(extra) if isinstance(extra, Mapping) else {}
        if scan.index_as_string and extra.get("index") is not None:
            extra["index"] = str(extra["index"])
        extra.update(ann.extra_info())
        try:
            if item.position in scan.unwritable:
                raise UnwritableRow(f"its values do not convert to Parquet ({scan.unwritable[item.position]}); "
                                    f"write .jsonl instead")
            payload, item.replaced = writer.encode({**item.raw, "extra_info": extra})
        except UnwritableRow as exc:
            item.decision = BAD_ROW
            item.error = f"row {item.key!r} (position {item.position}): cannot be written to {out_path.name}: {exc}"
            return None
        item.decision = KEPT
        return payload

    def count(item: _Item) -> None:
        if item.decision == BAD_ROW:
            bad_rows.append({"position": item.position, "row_key": item.key, "error": item.error})
            return
        if item.decision == DUPLICATE:
            duplicates.append({"position": item.position, "row_key": item.key, "error": item.error})
            return
        both = (tallies[str(item.data_source)], overall)
        for tally in both:
            tally.candidates += 1
        if item.decision == MISSING_ANNOTATION:
            for tally in both:
                tally.missing_annotation += 1
            for p in item.problems:
                annotation_problems.append({"row_key": item.key, "data_source": item.data_source,
                                            "position": item.position, **p})
            if any(p["reason"] == POSITIONAL for p in item.problems):
                joins["by_position_refused"] += 1
            return
        ann = item.annotation
        assert ann is not None
        joins["by_position" if item.positional else "by_data_source_index"] += 1
        annotated["rows"] += 1
        annotated["lower"] += ann.lower_pass_rate
        annotated["upper"] += ann.upper_pass_rate
        if ann.vacuous:
            vacuous_rows.append({"row_key": item.key, "data_source": item.data_source, "position": item.position,
                                 "decision": item.decision})
            for tally in both:
                tally.vacuous += 1
        if item.decision == VACUOUS:
            for tally in both:
                tally.dropped_vacuous += 1
        elif item.decision in (FLOOR, CEILING, BOTH):
            for tally in both:
                tally.dropped_floor += item.decision in (FLOOR, BOTH)
                tally.dropped_ceiling += item.decision in (CEILING, BOTH)
                tally.dropped_floor_and_ceiling += item.decision == BOTH
        else:
            for tally in both:
                tally.goldilocks += 1
                tally.dropped_non_english += item.decision == NON_ENGLISH
                tally.dropped_no_statement += item.decision == NO_STATEMENT
                if item.decision == KEPT:
                    tally.kept += 1
                    tally.lower.append(ann.lower_pass_rate)
                    tally.upper.append(ann.upper_pass_rate)

    for folder in dict.fromkeys(p.parent for p in (out_path, report_path, rows_path)):
        lock_out_dir(folder)  # one writer per folder (OutputDirBusy, a ValueError: exit 2); held until we return
    try:
        writer = CuratedWriter(out_path, schema)
    except (ValueError, TypeError, OSError, NotImplementedError) as exc:  # pyarrow: a schema Parquet cannot store
        raise CurationInputError(f"--out {out_path}: cannot write these rows as Parquet ({_short(exc)}); write "
                                 f".jsonl instead") from None
    rows_tmp = rows_path.with_name(rows_path.name + ".partial")
    done = 0
    try:
        with open(rows_tmp, "wb") as log:
            for item, conf in _with_confidence(stage1(), lambda it: it.text, english):
                payload = decide(item, conf) if item.decision == "" else None
                count(item)
                if payload is not None:
                    writer.write_encoded(payload)
                    replaced_rows += bool(item.replaced)
                rec: dict[str, Any] = {"row_key": item.key, "data_source": item.data_source, "position": item.position,
                                       "decision": item.decision}
                if item.positional:
                    rec["keyed_by_position"] = True
                if item.annotation is not None:
                    rec.update(lower_pass_rate=item.annotation.lower_pass_rate,
                               upper_pass_rate=item.annotation.upper_pass_rate)
                    if item.annotation.vacuous:
                        rec["vacuous"] = True
                if conf is not None:
                    rec["english_confidence"] = conf
                if item.problems:
                    rec["problems"] = item.problems
                if item.error:
                    rec["error"] = item.error
                if item.replaced:
                    rec["surrogates_replaced"] = item.replaced
                log.write(json_line(rec, default=str))
                done += 1
                if progress is not None:
                    progress(done, total)
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
        raise CurationInputError(f"--out {out_path}: {exc}") from None
    os.replace(rows_tmp, rows_path)

    if overall.missing_annotation:
        by_reason = Counter(f"{p['side']}: {p['reason']}" for p in annotation_problems)
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
    if replaced_rows:
        warnings.append(f"{replaced_rows} kept row(s) held lone surrogates, replaced by U+FFFD in the Parquet output "
                        f"(fields listed in the rows log)")
    content = {
        "card": "codegen_iquest_card.txt: Difficulty (goldilocks) filtering; Creation pipeline steps 2-4",
        "options": {"lower_max": lower_max, "upper_min": upper_min,
                    "english_min": english.min_confidence if english is not None else None,
                    "english_detector": _english_detector_description(english, template),
                    "k_lower": k_lower, "k_upper": k_upper, "split": split, "keep_vacuous": keep_vacuous,
                    "allow_parity": allow_parity, "index_as_string": scan.index_as_string},
        "inputs": {"dataset": dataset_identity, "weak": _folder_identity(weak_f),
                   "strong": _folder_identity(strong_f)},
        "outputs": {"rows": str(out_path), "decisions": str(rows_path)},
        "join": {"by_data_source_index": joins["by_data_source_index"], "by_position": joins["by_position"],
                 "by_position_refused": joins["by_position_refused"],
                 "rule": "rows meet their verdicts on <data_source>:<extra_info.index>; a row without an index on "
                         "<data_source>:#<position>, only from a folder that scored this very dataset file"},
        "overall": {**overall.as_dict(overall.kept), "bad_rows": len(bad_rows), "duplicate_rows": len(duplicates)},
        "by_data_source": {ds: t.as_dict(overall.kept) for ds, t in sorted(tallies.items())},
        "annotation_problems": annotation_problems,
        "bad_rows": bad_rows,
        "duplicate_rows": duplicates,
        "vacuous_rows": vacuous_rows,
        "template_lines": _template_report(template),
        "warnings": warnings,
    }
    write_json_atomic(report_path, content)
    return CurationRun(content, out_path, report_path, rows_path, overall, len(bad_rows), len(duplicates), warnings)
