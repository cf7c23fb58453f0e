"""The counts of a curation (:class:`Tally`, overall and per ``data_source``) and the lists of the report
(:class:`CurationCounts`: annotation problems, bad rows, repeated keys, vacuous rows, how rows were joined).

What each count means and the identities they satisfy: ``docs/goldilocks.md``, "Counts".
"""

from __future__ import annotations

import statistics
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import Any

from arbiter.pipelines.goldilocks.flag import (
    BAD_ROW, BOTH, CEILING, DUPLICATE, ENGLISH_NEAR_MISS, FLOOR, KEPT, MISSING_ANNOTATION, NO_STATEMENT, NON_ENGLISH,
    POSITIONAL, VACUOUS,
)
from arbiter.pipelines.goldilocks.rows import RowItem


@dataclass
class Tally:
    """Counts of one ``data_source`` (or overall); see ``docs/goldilocks.md``. ``lower``/``upper``:
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


@dataclass
class CurationCounts:
    """Everything the report counts or lists, filled one decided row at a time (:meth:`count`)."""

    overall: Tally = field(default_factory=Tally)
    tallies: dict[str, Tally] = field(default_factory=lambda: defaultdict(Tally))
    annotation_problems: list[dict[str, Any]] = field(default_factory=list)
    bad_rows: list[dict[str, Any]] = field(default_factory=list)
    duplicates: list[dict[str, Any]] = field(default_factory=list)
    vacuous_rows: list[dict[str, Any]] = field(default_factory=list)
    #: rows the English filter dropped although English was the likelier reading (>= ENGLISH_NEAR_MISS)
    english_near_misses: list[dict[str, Any]] = field(default_factory=list)
    joins: Counter = field(default_factory=Counter)
    #: over every annotated row (swapped --weak/--strong?): rows, sum of lower and of upper pass rates
    annotated: dict[str, float] = field(default_factory=lambda: {"rows": 0, "lower": 0.0, "upper": 0.0})
    replaced_rows: int = 0

    def count(self, item: RowItem, conf: float | None = None) -> None:
        """Count one row whose decision is final (``conf``: its English confidence, when it was read)."""
        if item.decision == NON_ENGLISH and conf is not None and conf >= ENGLISH_NEAR_MISS:
            self.english_near_misses.append({"row_key": item.key, "data_source": item.data_source,
                                             "position": item.position, "english_confidence": conf,
                                             "statement_start": (item.text or "").strip()[:160]})
        if item.decision in (BAD_ROW, DUPLICATE):
            target = self.bad_rows if item.decision == BAD_ROW else self.duplicates
            target.append({"position": item.position, "row_key": item.key, "error": item.error})
            return
        both = (self.tallies[str(item.data_source)], self.overall)
        for tally in both:
            tally.candidates += 1
        if item.decision == MISSING_ANNOTATION:
            self._count_missing(item, both)
            return
        ann = item.annotation
        assert ann is not None
        self.joins["by_position" if item.positional else "by_data_source_index"] += 1
        self.annotated["rows"] += 1
        self.annotated["lower"] += ann.lower_pass_rate
        self.annotated["upper"] += ann.upper_pass_rate
        if ann.vacuous:
            self.vacuous_rows.append({"row_key": item.key, "data_source": item.data_source,
                                      "position": item.position, "decision": item.decision})
            for tally in both:
                tally.vacuous += 1
        for tally in both:
            _count_decision(tally, item.decision, ann.lower_pass_rate, ann.upper_pass_rate)

    def _count_missing(self, item: RowItem, both: tuple[Tally, Tally]) -> None:
        for tally in both:
            tally.missing_annotation += 1
        for p in item.problems:
            self.annotation_problems.append({"row_key": item.key, "data_source": item.data_source,
                                             "position": item.position, **p})
        if any(p["reason"] == POSITIONAL for p in item.problems):
            self.joins["by_position_refused"] += 1


def _count_decision(tally: Tally, decision: str, lower: float, upper: float) -> None:
    """Count the final decision of an annotated row in ``tally``."""
    if decision == VACUOUS:
        tally.dropped_vacuous += 1
    elif decision in (FLOOR, CEILING, BOTH):
        tally.dropped_floor += decision in (FLOOR, BOTH)
        tally.dropped_ceiling += decision in (CEILING, BOTH)
        tally.dropped_floor_and_ceiling += decision == BOTH
    else:
        tally.goldilocks += 1
        tally.dropped_non_english += decision == NON_ENGLISH
        tally.dropped_no_statement += decision == NO_STATEMENT
        if decision == KEPT:
            tally.kept += 1
            tally.lower.append(lower)
            tally.upper.append(upper)
