"""The goldilocks flag and its vocabulary (the card's "Difficulty (goldilocks) filtering", step 3):
the thresholds (:data:`LOWER_MAX`, :data:`UPPER_MIN`, :data:`ENGLISH_MIN`), :func:`is_goldilocks`,
:func:`drop_reason`, :func:`pass_rate`, one row's :class:`Annotation`, and the names of the
reasons a row gets no annotation (:mod:`arbiter.pipelines.goldilocks.score_folders`) and of the
decisions of the rows log (:mod:`arbiter.pipelines.goldilocks.curate`).

Annotation (the card's "Schema" and "Difficulty filtering"), per row and per model:

- ``lower_scores`` / ``upper_scores``: the per-completion rewards in completion order, each
  ``1.0`` (the completion passes: reward 1.0, "it clears every case") or ``0.0`` (anything else:
  WA, TLE, RE, FORMAT_ERROR, ...). Lower = the weak model, upper = the strong model.
- ``lower_pass_rate`` / ``upper_pass_rate``: the fraction of completions that pass, exactly
  ``mean(scores)`` (``c / n``; with n = 8 a multiple of 1/8, exact in binary floating point).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from arbiter.pipelines.goldilocks.errors import CurationInputError


#: The card's thresholds: kept when ``lower_pass_rate <= 0.875 AND upper_pass_rate >= 0.125``.
LOWER_MAX = 0.875
UPPER_MIN = 0.125
#: The card's English filter: "lingua confidence >= 0.999".
ENGLISH_MIN = 0.999
#: A row the English filter drops with at least this confidence (English likelier than every other language
#: together) is a near miss, listed for a curator to look at: a genuine English statement can score 0.97.
ENGLISH_NEAR_MISS = 0.5
#: The card's ``extra_info`` annotation fields (Schema: ``{index, id, lower_pass_rate, lower_scores,
#: upper_pass_rate, upper_scores}``).
ANNOTATION_FIELDS = ("lower_pass_rate", "lower_scores", "upper_pass_rate", "upper_scores")

# reasons a row gets no annotation from one score folder (:mod:`arbiter.pipelines.goldilocks.score_folders`)
MISSING = "missing"
INVALID = "invalid_task"
SANDBOX = "sandbox_error"
BAD_SCORE = "bad_score"
INCOMPLETE = "incomplete"
COUNT = "count_mismatch"
TRUTH = "ground_truth_changed"
POSITIONAL = "positional_key"

# decisions (``<stem>.rows.jsonl``)
KEPT = "kept"
FLOOR = "floor"
CEILING = "ceiling"
BOTH = "floor+ceiling"
VACUOUS = "vacuous"
NON_ENGLISH = "non_english"
NO_STATEMENT = "no_statement"
MISSING_ANNOTATION = "missing_annotation"
BAD_ROW = "bad_row"
DUPLICATE = "duplicate_key"


# ------------------------------------------------------------------ the flag


def check_rate(name: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or math.isnan(value) or not 0.0 <= value <= 1.0:
        raise ValueError(f"{name} must be a number in [0, 1], got {value!r}")
    return float(value)


def is_goldilocks(lower: float, upper: float, lower_max: float = LOWER_MAX, upper_min: float = UPPER_MIN) -> bool:
    """The card's flag: ``lower <= lower_max AND upper >= upper_min``, both inclusive ("lower_pass_rate
    <= 0.875 AND upper_pass_rate >= 0.125": the weak model does not solve the row every time, the
    strong one solves it at least once in 8).

    ``lower``/``upper``: the weak/strong model's pass rate in [0, 1]; thresholds in [0, 1]. With
    pass rates ``c / 8`` the comparisons are exact (0.875 and 0.125 are binary fractions). Raises
    ``ValueError`` for a value that is not a number in [0, 1] (NaN included).
    """
    return check_rate("lower", lower) <= check_rate("lower_max", lower_max) and \
        check_rate("upper", upper) >= check_rate("upper_min", upper_min)


def drop_reason(lower: float, upper: float, lower_max: float = LOWER_MAX, upper_min: float = UPPER_MIN) -> str:
    """Why :func:`is_goldilocks` fails: ``"floor"`` (``upper < upper_min``: no learnable signal),
    ``"ceiling"`` (``lower > lower_max``: no gradient), ``"floor+ceiling"`` (both: the weak model
    solves what the strong one does not), or ``""`` when the row is goldilocks. The card's
    "drops both the floor (nobody solves it ...) and the ceiling (everybody solves it ...)"."""
    floor = check_rate("upper", upper) < check_rate("upper_min", upper_min)
    ceiling = check_rate("lower", lower) > check_rate("lower_max", lower_max)
    return BOTH if floor and ceiling else FLOOR if floor else CEILING if ceiling else ""


def pass_rate(scores: Sequence[float]) -> float:
    """The fraction of ``scores`` equal to 1.0 (the card: "the per-model pass rate is the fraction of
    the 8 completions that pass"; "a completion passes only if it clears every case"). For 0/1
    scores this is exactly their mean. Raises ``ValueError`` for an empty list."""
    if not scores:
        raise ValueError("no scores")
    return sum(1 for s in scores if s == 1.0) / len(scores)


def usual_count(counts: Mapping[int, int]) -> int | None:
    """The most common score count of ``counts`` (count -> rows), the larger one on a tie: the
    completion count every row is held to when none is given (``--k``). ``None`` when empty."""
    return max(counts, key=lambda n: (counts[n], n)) if counts else None


@dataclass(frozen=True)
class Annotation:
    """One row's goldilocks annotation (module docstring): per-completion 0/1 scores of the weak
    (``lower``) and strong (``upper``) model, in completion order, and their pass rates.
    ``vacuous``: either folder flagged the row's suite as vacuous (not part of the card's fields)."""

    lower_scores: tuple[float, ...]
    upper_scores: tuple[float, ...]
    vacuous: bool = False

    @property
    def lower_pass_rate(self) -> float:
        return pass_rate(self.lower_scores)

    @property
    def upper_pass_rate(self) -> float:
        return pass_rate(self.upper_scores)

    def extra_info(self) -> dict[str, Any]:
        """The four ``extra_info`` fields of the card's schema."""
        return {"lower_pass_rate": self.lower_pass_rate, "lower_scores": list(self.lower_scores),
                "upper_pass_rate": self.upper_pass_rate, "upper_scores": list(self.upper_scores)}


def check_thresholds(lower_max: float, upper_min: float, english_min: float | None) -> None:
    try:
        check_rate("--lower-max", lower_max)
        check_rate("--upper-min", upper_min)
        if english_min is not None:
            check_rate("--english-min", english_min)
    except ValueError as exc:
        raise CurationInputError(str(exc)) from None
