"""Row models of the PIE gem5-timed datasets (:class:`PieRow` pairs, :class:`PieBysrcRow` bysrc) and of the PIE
C++ release (:class:`PiePair`), with :func:`parse_row` / :func:`parse_pie_pair`. Column rules (nulls per
split, list lengths, case-id ranges): ``docs/pie.md`` ("Rows").
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any, ClassVar, Literal, Union

from pydantic import BaseModel, ConfigDict, PrivateAttr, ValidationError, field_validator, model_validator
from pydantic_core import PydanticCustomError

from arbiter.datasets.pie.decode import (
    CaseIds,
    OptCaseIds,
    OptFloat,
    OptInt,
    OptStr,
    OptTc2Time,
    ReqBool,
    ReqFloat,
    ReqInt,
    ReqStr,
    Ticks,
)
from arbiter.datasets.pie.errors import PieRowError, RowIssues, id_or_none, issues_from_validation, row_label


#: Splits of the card's "Splits" table.
SPLITS = ("train", "validation", "test")


#: Sweep statuses left after the card's filtering ("Hard-fail statuses ... are already dropped").
GEM5_STATUSES = ("ok", "forkloop_partial")


# Card, field dictionary: pie_* columns by availability. "[pairs ...]" ones exist only in pie-gem5-pairs.
_TEST_ONLY_COMMON = (
    "pie_n_tests", "pie_test_agg_runtime", "pie_test_accuracy", "pie_test_compilation",
    "pie_src_code_accuracy", "pie_src_code_compilation", "pie_fastest_code", "pie_fastest_code_len",
    "pie_fastest_code_runtime", "pie_src_code_tc2time", "pie_fastest_code_tc2time", "pie_tests_case_ids",
)


_TEST_ONLY_PAIRS = (
    "pie_tgt_code_accuracy", "pie_tgt_code_compilation", "pie_src_code_runtime", "pie_tgt_code_runtime",
    "pie_fastest_code_accuracy", "pie_fastest_code_compilation", "pie_tgt_code_tc2time",
)


_TRAIN_VAL_ONLY_COMMON = (
    "pie_speedup", "pie_src_verdict", "pie_fastest_agg_runtime_updated", "pie_src_reward_updated",
    "pie_src_reward_updated_pct_bin",
)


_TRAIN_VAL_ONLY_PAIRS = ("pie_tgt_verdict", "pie_target_reward_updated", "pie_target_reward_updated_pct_bin")


#: Columns the card marks ``test-only`` (null in train/validation), pairs and bysrc.
TEST_ONLY_COLUMNS = _TEST_ONLY_COMMON + _TEST_ONLY_PAIRS


#: Columns the card marks ``train/val-only`` (null in test), pairs and bysrc.
TRAIN_VAL_ONLY_COLUMNS = _TRAIN_VAL_ONLY_COMMON + _TRAIN_VAL_ONLY_PAIRS


class PieRowBase(BaseModel):
    """Columns shared by pie-gem5-pairs and pie-gem5-bysrc (card, field dictionary)."""

    model_config = ConfigDict(extra="allow", validate_default=False, protected_namespaces=())

    kind: ClassVar[str] = ""
    _pairs_only_test: ClassVar[tuple[str, ...]] = ()
    _pairs_only_trainval: ClassVar[tuple[str, ...]] = ()

    # Identity
    problem_id: ReqStr
    src_id: ReqStr
    split: ReqStr
    language: ReqStr
    # Code
    src_code: ReqStr
    # Our gem5 per-test-case timing (ticks = gem5 picoseconds)
    gem5_src_per_tc_ticks: Ticks
    gem5_fastest_id: ReqStr
    gem5_fastest_per_tc_ticks: Ticks
    gem5_fastest_usable_case_ids: CaseIds
    gem5_fastest_sum_ticks_usable: ReqInt
    gem5_src_excluded: CaseIds
    gem5_src_status: ReqStr
    gem5_src_sum_ticks_all: ReqInt
    # Case-id sets + counts
    correctness_kept_case_ids: CaseIds
    usable_case_ids: CaseIds
    n_kept: ReqInt
    n_usable: ReqInt
    n_cases_available: ReqInt
    src_n_fail: ReqInt
    # Derived speedups + flags
    our_speedup_usable: ReqFloat
    our_speedup_all: ReqFloat
    our_fastest_speedup: ReqFloat
    ceiling_speedup: ReqFloat
    flag_low_headroom: ReqBool
    flag_single_case: ReqBool
    flag_empty_kept: ReqBool
    # Carried verbatim from PIE: availability "all"
    pie_src_agg_runtime: ReqFloat
    pie_fastest_agg_runtime: ReqFloat
    # train/val-only
    pie_speedup: OptFloat = None
    pie_src_verdict: OptStr = None
    pie_fastest_agg_runtime_updated: OptFloat = None
    pie_src_reward_updated: OptFloat = None
    pie_src_reward_updated_pct_bin: OptInt = None
    # test-only
    pie_n_tests: OptInt = None
    pie_test_agg_runtime: OptFloat = None
    pie_test_accuracy: OptFloat = None
    pie_test_compilation: OptFloat = None
    pie_src_code_accuracy: OptFloat = None
    pie_src_code_compilation: OptFloat = None
    pie_fastest_code: OptStr = None
    pie_fastest_code_len: OptInt = None
    pie_fastest_code_runtime: OptFloat = None
    pie_src_code_tc2time: OptTc2Time = None
    pie_fastest_code_tc2time: OptTc2Time = None
    pie_tests_case_ids: OptCaseIds = None

    _index: int | None = PrivateAttr(default=None)

    @field_validator("split")
    @classmethod
    def _split_known(cls, v: str) -> str:
        if v not in SPLITS:
            raise ValueError(f"must be one of {', '.join(SPLITS)} (card, 'Splits'), got {v!r}")
        return v

    @field_validator("language")
    @classmethod
    def _language_cpp(cls, v: str) -> str:
        if v != "cpp":
            raise ValueError(f"must be 'cpp' (card: 'Always cpp'), got {v!r}")
        return v

    # ---- cross-column checks
    def _case_lists(self) -> list[tuple[str, Iterable[int]]]:
        return [
            ("gem5_src_per_tc_ticks", self.gem5_src_per_tc_ticks.keys()),
            ("gem5_fastest_per_tc_ticks", self.gem5_fastest_per_tc_ticks.keys()),
            ("gem5_fastest_usable_case_ids", self.gem5_fastest_usable_case_ids),
            ("gem5_src_excluded", self.gem5_src_excluded),
            ("correctness_kept_case_ids", self.correctness_kept_case_ids),
            ("usable_case_ids", self.usable_case_ids),
            ("pie_tests_case_ids", self.pie_tests_case_ids or ()),
        ]

    def _lengths(self) -> list[tuple[str, int, str, int]]:
        return [
            ("n_kept", self.n_kept, "correctness_kept_case_ids", len(self.correctness_kept_case_ids)),
            ("n_usable", self.n_usable, "usable_case_ids", len(self.usable_case_ids)),
        ]

    def _non_negative(self) -> list[str]:
        return ["gem5_fastest_sum_ticks_usable", "gem5_src_sum_ticks_all", "src_n_fail", "n_kept", "n_usable"]

    def _statuses(self) -> list[str]:
        return ["gem5_src_status"]

    def _positive_ratios(self) -> list[str]:
        return ["our_speedup_usable", "our_speedup_all", "our_fastest_speedup", "ceiling_speedup"]

    @model_validator(mode="after")
    def _cross_checks(self) -> "PieRowBase":
        issues: list[tuple[str, str]] = []
        for col in self._non_negative():
            if getattr(self, col) < 0:
                issues.append((col, f"must be >= 0, got {getattr(self, col)}"))
        if self.n_cases_available < 1:
            issues.append(("n_cases_available", f"must be >= 1, got {self.n_cases_available}"))
        for col, n, list_col, actual in self._lengths():
            if n != actual:
                issues.append((col, f"is {n} but len({list_col}) is {actual} (card: {col} = len({list_col}))"))
        if self.n_cases_available >= 1:
            top = self.n_cases_available
            for col, ids in self._case_lists():
                bad = sorted(c for c in ids if c >= top)
                if bad:
                    issues.append((col, f"case id(s) {bad[:5]} outside 0..{top - 1} (n_cases_available={top})"))
        for col in self._statuses():
            v = getattr(self, col)
            if v not in GEM5_STATUSES:
                issues.append((col, f"must be one of {', '.join(GEM5_STATUSES)} (card), got {v!r}"))
        for col in self._positive_ratios():
            v = getattr(self, col)
            if not (math.isfinite(v) and v > 0):
                issues.append((col, f"must be a finite ratio > 0, got {v!r}"))
        # Card, "Splits": test-only columns are null in train/validation; train/val-only ones are null in test.
        if self.split == "test":
            wrong, other = _TRAIN_VAL_ONLY_COMMON + self._pairs_only_trainval, "train/val-only"
        else:
            wrong, other = _TEST_ONLY_COMMON + self._pairs_only_test, "test-only"
        for col in wrong:
            if self._raw_value(col) is not None:
                issues.append((col, f"is set in a {self.split} row, but the card marks it {other} (null elsewhere)"))
        if issues:
            raise PydanticCustomError(
                "pie_row", "{summary}", {"summary": "; ".join(f"{c}: {m}" for c, m in issues), "issues": issues}
            )
        return self

    def _raw_value(self, col: str) -> Any:
        v = getattr(self, col, None)
        if v is None and self.model_extra:
            v = self.model_extra.get(col)
        return v

    # ---- identity helpers
    @property
    def row_index(self) -> int | None:
        """0-based position in the source the row was loaded from (None when built directly)."""
        return self._index

    def label(self) -> str:
        """``row 3 (problem_id=p02915, src_id=s1)``: how errors name this row."""
        return row_label(self._index, self.problem_id, self.src_id)


class PieRow(PieRowBase):
    """One row of ``pie-gem5-pairs``: an official (src, tgt) pair with per-case gem5 ticks.

    Field types after decoding: ``*_per_tc_ticks`` → ``dict[int, int]`` (gem5 picoseconds per case),
    ``*_case_ids``/``*_excluded`` → ``list[int]`` (order as stored), ``*_tc2time`` → ``dict[int, float | None]``
    (PIE's seconds), ``pie_*`` runtimes in seconds. Unknown extra columns are kept in ``model_extra``.
    Build with :func:`parse_row` (raises :class:`PieRowError` naming row and column) or ``PieRow.model_validate``
    (raises pydantic's ``ValidationError``). Source: card, field dictionary.
    """

    kind: ClassVar[str] = "pairs"
    _pairs_only_test: ClassVar[tuple[str, ...]] = _TEST_ONLY_PAIRS
    _pairs_only_trainval: ClassVar[tuple[str, ...]] = _TRAIN_VAL_ONLY_PAIRS

    tgt_id: ReqStr
    tgt_code: ReqStr
    gem5_tgt_per_tc_ticks: Ticks
    gem5_tgt_excluded: CaseIds
    gem5_tgt_status: ReqStr
    gem5_tgt_sum_ticks_all: ReqInt
    common_timed_case_ids: CaseIds
    n_common_timed: ReqInt
    tgt_n_fail: ReqInt
    pair_n_fail: ReqInt
    pie_tgt_agg_runtime: ReqFloat
    # train/val-only, pairs
    pie_tgt_verdict: OptStr = None
    pie_target_reward_updated: OptFloat = None
    pie_target_reward_updated_pct_bin: OptInt = None
    # test-only, pairs
    pie_tgt_code_accuracy: OptFloat = None
    pie_tgt_code_compilation: OptFloat = None
    pie_src_code_runtime: OptFloat = None
    pie_tgt_code_runtime: OptFloat = None
    pie_fastest_code_accuracy: OptFloat = None
    pie_fastest_code_compilation: OptFloat = None
    pie_tgt_code_tc2time: OptTc2Time = None

    def _case_lists(self) -> list[tuple[str, Iterable[int]]]:
        return super()._case_lists() + [
            ("gem5_tgt_per_tc_ticks", self.gem5_tgt_per_tc_ticks.keys()),
            ("gem5_tgt_excluded", self.gem5_tgt_excluded),
            ("common_timed_case_ids", self.common_timed_case_ids),
        ]

    def _lengths(self) -> list[tuple[str, int, str, int]]:
        return super()._lengths() + [
            ("n_common_timed", self.n_common_timed, "common_timed_case_ids", len(self.common_timed_case_ids)),
        ]

    def _non_negative(self) -> list[str]:
        return super()._non_negative() + ["gem5_tgt_sum_ticks_all", "n_common_timed", "tgt_n_fail", "pair_n_fail"]

    def _statuses(self) -> list[str]:
        return super()._statuses() + ["gem5_tgt_status"]

    def to_pair(self) -> "PiePair":
        """The :class:`PiePair` the re-timing reward consumes: ids, code, ``speedup = our_speedup_usable`` (the
        card's reference speedup) and ``usable_case_ids``. Raises ``ValueError`` (via PiePair) when
        ``usable_case_ids`` is empty: there would be nothing to time."""
        return PiePair(
            problem_id=self.problem_id,
            src_id=self.src_id,
            tgt_id=self.tgt_id,
            src_code=self.src_code,
            tgt_code=self.tgt_code,
            speedup=self.our_speedup_usable,
            usable_case_ids=list(self.usable_case_ids),
            src_agg_runtime=self.pie_src_agg_runtime,
            tgt_agg_runtime=self.pie_tgt_agg_runtime,
        )


class PieBysrcRow(PieRowBase):
    """One row of ``pie-gem5-bysrc``: one unique (problem, src), best surviving target kept as "oracle".

    Holds every column of the card not marked ``[pairs only]``; ``usable_case_ids`` is kept ∩ src-timed ∩ wall
    (card, ``usable_case_ids``), so the oracle may lack ticks on some usable case. The card names no oracle
    column: oracle columns (e.g. ``oracle_tgt_code``) stay in ``model_extra``; JSON ones are decoded on use by
    :func:`arbiter.datasets.pie.card.oracle_ticks`. Same decoding and null rules as :class:`PieRow`.
    """

    kind: ClassVar[str] = "bysrc"


class PiePair(BaseModel):
    """A (src, tgt) C++ pair to re-time: what the re-timing reward consumes.

    ``speedup`` is the dataset's own src/tgt figure (PIE release: its ``speedup`` column; gem5 rows:
    ``our_speedup_usable``), finite and > 0. ``usable_case_ids`` is None for PIE release rows (no case manifest:
    use every test case of the problem) and the card's usable set for gem5 rows (non-empty).
    ``src_agg_runtime``/``tgt_agg_runtime`` are PIE's aggregate runtimes in seconds when known. Numbers may
    arrive as strings (lax parsing); ids and code must be non-empty strings. Extra columns are ignored.
    """

    model_config = ConfigDict(extra="ignore")

    problem_id: ReqStr
    src_id: ReqStr
    tgt_id: ReqStr
    src_code: ReqStr
    tgt_code: ReqStr
    speedup: ReqFloat
    usable_case_ids: OptCaseIds = None
    src_agg_runtime: OptFloat = None
    tgt_agg_runtime: OptFloat = None

    @field_validator("problem_id", "src_id", "tgt_id", "src_code", "tgt_code")
    @classmethod
    def _non_empty(cls, v: str) -> str:
        if not v.strip():
            raise ValueError("is empty")
        return v

    @field_validator("speedup")
    @classmethod
    def _speedup_positive(cls, v: float) -> float:
        if not (math.isfinite(v) and v > 0):
            raise ValueError(f"must be a finite ratio > 0, got {v!r}")
        return v

    @field_validator("usable_case_ids")
    @classmethod
    def _usable_non_empty(cls, v: list[int] | None) -> list[int] | None:
        if v is not None and not v:
            raise ValueError("is empty: no case to time (card: usable_case_ids is the case set for the reward)")
        return v

    @field_validator("src_agg_runtime", "tgt_agg_runtime")
    @classmethod
    def _runtime_ok(cls, v: float | None) -> float | None:
        if v is not None and not (math.isfinite(v) and v >= 0):
            raise ValueError(f"must be a finite number of seconds >= 0, got {v!r}")
        return v


AnyPieRow = Union[PieRow, PieBysrcRow]


RowKind = Literal["pairs", "bysrc", "pie", "auto"]


#: What a PIE release row (PIE's own schema, e.g. its ``val.jsonl``: ``src_id, tgt_id, problem_id, speedup,
#: src_code, tgt_code, ...``) lacks next to a pie-gem5 row; said once when such a file is read as rows.
PIE_RELEASE_LACKS = ("it has no gem5 columns: no per-case ticks (gem5_src_per_tc_ticks, gem5_tgt_per_tc_ticks, "
                     "gem5_fastest_per_tc_ticks), no case manifest (usable_case_ids, correctness_kept_case_ids) and "
                     "no derived figures (our_speedup_usable, ceiling_speedup, ...), so the card's reward over "
                     "dataset ticks (speedup, oracle_speedup, fastest_speedup, ceiling_speedup) cannot be computed "
                     "from it; its `speedup` column is PIE's own figure, and `arbiter pie reward` re-times its "
                     "programs on the problem's tests")


def is_pie_release_row(raw: Any) -> bool:
    """True for a row of PIE's own schema: a mapping with ``src_code``, ``tgt_code`` and ``speedup`` and none of
    the gem5 columns."""
    return (isinstance(raw, Mapping) and not any(str(k).startswith("gem5_") for k in raw)
            and all(k in raw for k in ("src_code", "tgt_code", "speedup")))


MODELS: dict[str, type[PieRowBase]] = {"pairs": PieRow, "bysrc": PieBysrcRow}


def validate_row(model: type[BaseModel], raw: Any, index: int | None) -> Any:
    if not isinstance(raw, Mapping):
        err = RowIssues(index, None, None, (("<row>", f"is a {type(raw).__name__}, not a JSON object / mapping"),))
        raise PieRowError(err)
    try:
        obj = model.model_validate(dict(raw))
    except ValidationError as e:
        raise PieRowError(
            RowIssues(index, id_or_none(raw, "problem_id"), id_or_none(raw, "src_id"), issues_from_validation(e))
        ) from None
    if isinstance(obj, PieRowBase):
        obj._index = index
    return obj


def parse_row(
    raw: Mapping[str, Any], *, index: int | None = None, kind: Literal["pairs", "bysrc"] = "pairs"
) -> AnyPieRow:
    """Validate one raw row (column → value) into a :class:`PieRow` (``kind="pairs"``) or :class:`PieBysrcRow`.

    ``index`` is the row's position in its source, used in error messages. Raises :class:`PieRowError`
    (a ``ValueError``) naming the row (index, problem_id, src_id) and every bad column. Rules: ``docs/pie.md`` ("Rows").
    """
    if kind not in MODELS:
        raise ValueError(f"kind must be 'pairs' or 'bysrc', got {kind!r}")
    return validate_row(MODELS[kind], raw, index)


def parse_pie_pair(raw: Mapping[str, Any], *, index: int | None = None) -> PiePair:
    """Validate one row into a :class:`PiePair`.

    A row with gem5 columns (``gem5_src_per_tc_ticks`` present) is validated as a :class:`PieRow` first and
    converted with :meth:`PieRow.to_pair`; any other row is read as a PIE release row (``src_id, tgt_id,
    problem_id, speedup, src_code, tgt_code``; other columns ignored). Raises :class:`PieRowError`.
    """
    if isinstance(raw, Mapping) and "gem5_src_per_tc_ticks" in raw:
        row = validate_row(PieRow, raw, index)
        try:
            return row.to_pair()
        except ValidationError as e:
            raise PieRowError(RowIssues(index, row.problem_id, row.src_id, issues_from_validation(e))) from None
    return validate_row(PiePair, raw, index)
