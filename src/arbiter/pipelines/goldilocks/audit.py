"""Audit of a goldilocks annotation a dataset already carries (``arbiter curate audit``).

:func:`audit_annotations` checks a dataset that already carries the annotation in
``extra_info`` (the card's dataset does): stored pass rates against their scores, the score
counts, and the flag recomputed ("Consolidation recomputes the goldilocks flag"). The checks are
listed at :func:`audit_annotations`; :class:`AuditRun` is what it reports. The dataset is read as
:func:`arbiter.pipelines.goldilocks.curate_goldilocks` reads it (the same first pass, statement
and English filter).
"""

from __future__ import annotations

import math
import os
from collections import Counter, defaultdict
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from arbiter.datasets.verl_rows import RowError, iter_raw_rows, parse_row, row_key
from arbiter.pipelines.goldilocks.english import (
    EnglishFilter, english_detector_description, template_report, with_confidence, detection_text, statement_text,
)
from arbiter.pipelines.goldilocks.errors import CurationInputError
from arbiter.pipelines.goldilocks.flag import (
    ANNOTATION_FIELDS, BAD_ROW, COUNT, DUPLICATE, ENGLISH_MIN, LOWER_MAX, NO_STATEMENT, NON_ENGLISH, UPPER_MIN,
    check_rate, check_thresholds, drop_reason, pass_rate, usual_count,
)
from arbiter.pipelines.goldilocks.prescan import prescan_dataset


# ------------------------------------------------------------------ audit

# audit findings (``findings`` of :func:`audit_annotations`)
MISSING_FIELDS = "missing_fields"
BAD_SCORES = "bad_scores"
NON_BINARY = "non_binary_scores"
RATE_MISMATCH = "pass_rate_mismatch"
#: Findings that make a row's stored annotation inconsistent (the others say it would not be kept).
INCONSISTENT = (MISSING_FIELDS, BAD_SCORES, NON_BINARY, RATE_MISMATCH, COUNT)


def _scores_of(value: Any) -> list[float] | None:
    if hasattr(value, "tolist"):
        value = value.tolist()
    if not isinstance(value, (list, tuple)) or not value:
        return None
    out: list[float] = []
    for s in value:
        if isinstance(s, bool) or not isinstance(s, (int, float)) or math.isnan(s) or not 0.0 <= s <= 1.0:
            return None
        out.append(float(s))
    return out


@dataclass
class AuditRun:
    """What :func:`audit_annotations` found.

    - ``rows``: rows read; ``clean``: rows whose stored annotation is consistent and which the
      recomputed flag and the English filter keep;
    - ``findings``: one record per row with a finding: ``row_key``, ``data_source``, ``position``,
      ``findings`` (kinds: ``missing_fields``, ``bad_scores``, ``non_binary_scores``,
      ``pass_rate_mismatch``, ``count_mismatch``; ``floor``, ``ceiling``, ``non_english``,
      ``no_statement``; ``bad_row``, ``duplicate_key``), ``detail`` (one line per kind), stored and recomputed values;
    - ``counts``: ``{"overall": {kind: rows}, "by_data_source": {ds: {kind: rows}}}`` plus ``rows``
      and ``clean`` in each;
    - ``k``: the expected completion count per side;
    - ``template_lines``: the dataset's template lines, left out of the English detection.
    """

    rows: int = 0
    clean: int = 0
    findings: list[dict[str, Any]] = field(default_factory=list)
    counts: dict[str, Any] = field(default_factory=dict)
    k: dict[str, int | None] = field(default_factory=dict)
    options: dict[str, Any] = field(default_factory=dict)
    template_lines: dict = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return {"card": "codegen_iquest_card.txt: Difficulty (goldilocks) filtering; Creation pipeline step 3-4",
                "options": self.options, "k": self.k, "rows": self.rows, "clean": self.clean,
                "counts": self.counts, "findings": self.findings,
                "template_lines": template_report(self.template_lines)}


def audit_annotations(dataset: str | os.PathLike, *, lower_max: float = LOWER_MAX, upper_min: float = UPPER_MIN,
                      english_min: float | None = ENGLISH_MIN, k: int | None = None, split: str | None = None,
                      english: EnglishFilter | None = None, tolerance: float = 1e-9) -> AuditRun:
    """Check the goldilocks annotation stored in ``extra_info`` of every row of ``dataset`` (the
    card's dataset carries ``lower_pass_rate``, ``lower_scores``, ``upper_pass_rate``,
    ``upper_scores``), as the card's consolidation does ("recomputes the goldilocks flag"):

    - the four fields are present, the scores are lists of numbers in [0, 1] (else
      ``missing_fields`` / ``bad_scores``); scores other than 0 and 1 are ``non_binary_scores``
      (only 1.0 passes: the card's pass rate is "the fraction of 8 samples that reach 1.0");
    - the pass rate recomputed from the scores (:func:`pass_rate`) equals the stored one within
      ``tolerance`` (else ``pass_rate_mismatch``);
    - every row has k scores per side (``k``, else the most common count per side; else
      ``count_mismatch``);
    - the flag recomputed from the scores (:func:`is_goldilocks` with ``lower_max``/``upper_min``)
      holds (else ``floor`` / ``ceiling``), and the statement passes the English filter
      (``english_min``; ``None`` skips it) (else ``non_english``; read as :func:`curate_goldilocks`
      reads it, without template lines; a row without a user message: ``no_statement``).

    Rows that do not parse (``bad_row``) or repeat a row key (``duplicate_key``) are findings too;
    one bad row never stops the audit. Memory: one small record per row (and the template line
    counts of the first pass). Raises
    :class:`CurationInputError` for an unreadable dataset or bad thresholds.
    """
    check_thresholds(lower_max, upper_min, english_min)
    if k is not None and (isinstance(k, bool) or not isinstance(k, int) or k < 1):
        raise CurationInputError(f"--k must be a positive integer, got {k!r}")
    dpath = Path(dataset)
    if english_min is not None and english is None:
        english = EnglishFilter(english_min)
    if english_min is None:
        english = None
    template = prescan_dataset(dpath, split, statements=english is not None, infer_schema=False).template
    run = AuditRun(options={"lower_max": lower_max, "upper_min": upper_min,
                            "english_min": english.min_confidence if english is not None else None,
                            "english_detector": english_detector_description(english, template),
                            "tolerance": tolerance, "split": split}, template_lines=template)
    rules = _AuditRules(lower_max, upper_min, english, template, tolerance)
    per_row: list[dict[str, Any]] = []   # every row: key, data_source, position, findings, detail, lengths
    records = rules.first_pass(dpath, split)
    for rec, conf in with_confidence(records, lambda r: r["_text"], english):
        if conf is not None:
            rec["english_confidence"] = conf
            if conf < english.min_confidence:  # type: ignore[union-attr]
                _add(rec, NON_ENGLISH, f"lingua English confidence {conf:.6f} < {english.min_confidence}")  # type: ignore[union-attr]
        rec.pop("_text", None)
        per_row.append(rec)
        run.rows += 1
    _count_findings(run, per_row, k)
    return run


def _add(rec: dict[str, Any], kind: str, detail: str) -> None:
    """Record a finding of ``kind`` on ``rec`` (details of the same kind are joined)."""
    if kind not in rec["findings"]:
        rec["findings"].append(kind)
    rec["detail"][kind] = f"{rec['detail'][kind]}; {detail}" if kind in rec["detail"] else detail


@dataclass
class _AuditRules:
    """The checks of one audit, applied one row at a time."""

    lower_max: float
    upper_min: float
    english: EnglishFilter | None
    template: dict
    tolerance: float
    seen: set[str] = field(default_factory=set)

    def first_pass(self, dataset: Path, split: str | None) -> Iterator[dict[str, Any]]:
        """One record per row with every finding but the English filter's and the count's."""
        for position, raw in enumerate(iter_raw_rows(dataset, split=split, batch_size=64, unreadable=True)):
            yield self._check_row(position, raw)

    def _check_row(self, position: int, raw: Any) -> dict[str, Any]:
        rec: dict[str, Any] = {"row_key": "", "data_source": None, "position": position, "findings": [],
                               "detail": {}, "_n": {}, "_text": None}
        try:
            row = parse_row(raw, position)
        except RowError as exc:
            ds = raw.get("data_source") if isinstance(raw, Mapping) else None
            ei = raw.get("extra_info") if isinstance(raw, Mapping) else None
            rec["row_key"] = row_key(ds, ei.get("index") if isinstance(ei, Mapping) else None, position)
            rec["data_source"] = ds if isinstance(ds, str) else None
            _add(rec, BAD_ROW, str(exc))
            return rec
        rec["row_key"], rec["data_source"] = row.key, row.data_source
        if row.key in self.seen:
            _add(rec, DUPLICATE, f"row key {row.key!r} repeats at position {position}")
            return rec
        self.seen.add(row.key)
        ei = row.extra_info
        absent = [f for f in ANNOTATION_FIELDS if ei.get(f) is None]
        if absent:
            _add(rec, MISSING_FIELDS, f"extra_info lacks {', '.join(absent)}")
        rates: dict[str, float] = {}
        for side in ("lower", "upper"):
            rate = self._check_side(rec, side, ei.get(f"{side}_scores"), ei.get(f"{side}_pass_rate"))
            if rate is not None:
                rates[side] = rate
        rec["stored"] = {f"{side}_pass_rate": ei.get(f"{side}_pass_rate") for side in ("lower", "upper")}
        if "lower" in rates and "upper" in rates:
            self._check_flag(rec, rates, row.prompt)
        return rec

    def _check_side(self, rec: dict[str, Any], side: str, raw_scores: Any, raw_rate: Any) -> float | None:
        """Check one side's scores against its stored pass rate; the rate the flag is recomputed from."""
        if raw_scores is None:
            try:  # no scores to check it against: the flag comes from the stored rate
                return check_rate(f"{side}_pass_rate", raw_rate)
            except ValueError:
                return None
        scores = _scores_of(raw_scores)
        if scores is None:
            _add(rec, BAD_SCORES, f"{side}_scores is not a non-empty list of numbers in [0, 1]")
            return None
        rec["_n"][side] = len(scores)
        odd = sorted({s for s in scores if s not in (0.0, 1.0)})
        if odd:
            _add(rec, NON_BINARY, f"{side}_scores holds values other than 0 and 1 ({odd[:4]}); "
                                  f"only 1.0 counts as a pass")
        rate = pass_rate(scores)
        rec[f"recomputed_{side}_pass_rate"] = rate
        if raw_rate is not None and (isinstance(raw_rate, bool) or not isinstance(raw_rate, (int, float))
                                     or not abs(float(raw_rate) - rate) <= self.tolerance):
            _add(rec, RATE_MISMATCH, f"{side}_pass_rate is {raw_rate!r} but {sum(1 for s in scores if s == 1.0)} "
                                     f"of {len(scores)} {side}_scores pass ({rate})")
        return rate

    def _check_flag(self, rec: dict[str, Any], rates: dict[str, float], prompt: Any) -> None:
        why = drop_reason(rates["lower"], rates["upper"], self.lower_max, self.upper_min)
        for kind in filter(None, why.split("+")):
            _add(rec, kind, f"lower_pass_rate {rates['lower']} (max {self.lower_max}), upper_pass_rate "
                            f"{rates['upper']} (min {self.upper_min})")
        if not why and self.english is not None:
            statement = statement_text(prompt)
            if statement.strip():
                rec["_text"] = detection_text(statement, self.template)
            else:
                _add(rec, NO_STATEMENT, "no user message: no problem statement to read the language of")


def _count_findings(run: AuditRun, per_row: list[dict[str, Any]], k: int | None) -> None:
    """The completion-count check (needs every row's counts), then the counts and the findings of ``run``."""
    for side in ("lower", "upper"):
        c = Counter(r["_n"][side] for r in per_row if side in r["_n"])
        run.k[side] = k if k is not None else usual_count(c)
    by_ds: dict[str, Counter] = defaultdict(Counter)
    overall: Counter = Counter()
    for rec in per_row:
        for side in ("lower", "upper"):
            n = rec["_n"].get(side)
            if n is not None and run.k[side] is not None and n != run.k[side]:
                _add(rec, COUNT, f"{n} {side}_scores, expected {run.k[side]}")
        rec.pop("_n")
        ds = str(rec["data_source"])
        for counter in (by_ds[ds], overall):
            counter["rows"] += 1
            counter.update(set(rec["findings"]))
            if any(kind in INCONSISTENT for kind in rec["findings"]):
                counter["inconsistent"] += 1
            if not rec["findings"]:
                counter["clean"] += 1
        if rec["findings"]:
            run.findings.append(rec)
        else:
            run.clean += 1
    run.counts = {"overall": dict(overall), "by_data_source": {ds: dict(c) for ds, c in sorted(by_ds.items())}}
