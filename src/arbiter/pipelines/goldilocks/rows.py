"""Deciding the rows of a curation one at a time: :class:`RowItem` (a dataset row and its decision so far),
:class:`RowDecider` (the first pass over the rows: bad rows, repeated keys, the annotation, the flag; then the
English filter's verdict and the encoded output row) and :func:`rows_log_record` (the row's line in the rows log).

The decisions and what they mean: ``docs/goldilocks.md``, "Outputs".
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from arbiter.datasets.verl_rows import RowError, iter_raw_rows, parse_row, row_key
from arbiter.pipelines.goldilocks.english import EnglishFilter, detection_text, statement_text
from arbiter.pipelines.goldilocks.flag import (
    BAD_ROW, DUPLICATE, KEPT, MISSING_ANNOTATION, NO_STATEMENT, NON_ENGLISH, VACUOUS, Annotation, drop_reason,
)
from arbiter.pipelines.goldilocks.prescan import Prescan
from arbiter.pipelines.goldilocks.score_folders import ScoreFolder, annotate, is_positional
from arbiter.pipelines.goldilocks.writer import CuratedWriter, UnwritableRow


@dataclass
class RowItem:
    """One dataset row on its way through the curation; ``decision`` is ``""`` until one is taken."""

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


@dataclass
class RowDecider:
    """The rules of one curation run applied to a row: thresholds, folders, English filter, output."""

    weak: ScoreFolder
    strong: ScoreFolder
    k_lower: int | None
    k_upper: int | None
    lower_max: float
    upper_min: float
    keep_vacuous: bool
    english: EnglishFilter | None
    scan: Prescan
    seen: set[str] = field(default_factory=set)

    def first_decisions(self, dataset: Path, split: str | None) -> Iterator[RowItem]:
        """Every row of ``dataset`` in order, decided as far as it can be without the English filter."""
        for position, raw in enumerate(iter_raw_rows(dataset, split=split, batch_size=64, unreadable=True)):
            yield self._first_decision(position, raw)

    def _first_decision(self, position: int, raw: Any) -> RowItem:
        try:
            row = parse_row(raw, position)
        except RowError as exc:
            ds = raw.get("data_source") if isinstance(raw, Mapping) else None
            ei = raw.get("extra_info") if isinstance(raw, Mapping) else None
            key = row_key(ds, ei.get("index") if isinstance(ei, Mapping) else None, position)
            return RowItem(position, None, key, ds if isinstance(ds, str) else None, BAD_ROW, error=str(exc))
        item = RowItem(position, raw, row.key, row.data_source, positional=is_positional(row))
        if row.key in self.seen:
            item.decision = DUPLICATE
            item.error = f"row key {row.key!r} repeats at position {position}; only the first row is curated"
            return item
        self.seen.add(row.key)
        ann, problems = annotate(row, self.weak, self.strong, k_lower=self.k_lower, k_upper=self.k_upper)
        if ann is None:
            item.decision, item.problems = MISSING_ANNOTATION, problems
            return item
        item.annotation = ann
        if ann.vacuous and not self.keep_vacuous:
            item.decision = VACUOUS
            return item
        item.decision = drop_reason(ann.lower_pass_rate, ann.upper_pass_rate, self.lower_max, self.upper_min)
        if not item.decision and self.english is not None:
            statement = statement_text(row.prompt)
            if statement.strip():
                item.text = detection_text(statement, self.scan.template)
            else:
                item.no_statement = True
        return item

    def final_decision(self, item: RowItem, conf: float | None, writer: CuratedWriter, out_name: str) -> Any:
        """The final decision of a goldilocks row; the encoded output row when kept."""
        if item.no_statement:
            item.decision = NO_STATEMENT
            return None
        if conf is not None and conf < self.english.min_confidence:  # type: ignore[union-attr]
            item.decision = NON_ENGLISH
            return None
        ann = item.annotation
        assert ann is not None and item.raw is not None
        extra = item.raw.get("extra_info")
        extra = dict(extra) if isinstance(extra, Mapping) else {}
        if self.scan.index_as_string and extra.get("index") is not None:
            extra["index"] = str(extra["index"])
        extra.update(ann.extra_info())
        try:
            if item.position in self.scan.unwritable:
                raise UnwritableRow(f"its values do not convert to Parquet ({self.scan.unwritable[item.position]}); "
                                    f"write .jsonl instead")
            payload, item.replaced = writer.encode({**item.raw, "extra_info": extra})
        except UnwritableRow as exc:
            item.decision = BAD_ROW
            item.error = f"row {item.key!r} (position {item.position}): cannot be written to {out_name}: {exc}"
            return None
        item.decision = KEPT
        return payload


def rows_log_record(item: RowItem, conf: float | None) -> dict[str, Any]:
    """The line of ``item`` in the rows log."""
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
    return rec
