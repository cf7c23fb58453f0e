"""Rows of the PIE gem5-timed datasets (``spec/pie_gem5_pairs_card.txt``) and of the older PIE C++ release.

Three row models:

- :class:`PieRow` — one row of ``pie-gem5-pairs`` (one official (src, tgt) pair).
- :class:`PieBysrcRow` — one row of the companion ``pie-gem5-bysrc`` (one row per unique (problem, src)): every
  column the card does not mark ``[pairs only]``. The card does not name the columns that hold the "oracle" target
  of a bysrc row; they are kept as extra columns (``row.model_extra``) and looked up by
  :func:`arbiter.pipelines.pie_speedup.oracle_ticks`.
- :class:`PiePair` — the small shape the re-timing reward consumes: problem, src/tgt ids and code, the dataset's
  speedup and (for gem5 rows) the usable case ids. Built from a PIE release row (e.g.
  ``realdata/pie_purdue/val.jsonl``: ``src_id, tgt_id, problem_id, speedup, src_code, tgt_code, ...``, numbers as
  numbers or as strings) or from a gem5 row (:meth:`PieRow.to_pair`).

Decoding (card, "TL;DR units & encoding"): the columns named ``*_per_tc_ticks``, ``*_tc2time``, ``*_case_ids``,
``*_excluded`` are JSON strings; they are decoded into ``dict[int, int]`` (ticks = gem5 picoseconds),
``dict[int, float | None]`` (seconds) and ``list[int]``. Case ids become ``int`` whatever the JSON key type; a key
given twice (``"7"`` and ``"07"``, or a repeated JSON key) is an error. Already-decoded values (dict/list, or the
list of pairs pyarrow gives for a map column) are accepted too.

Nulls (card, "Splits & why some columns are null"):

- every column the field dictionary marks ``all`` must be present and non-null ("None of the gem5_* / our_* /
  *_case_ids / n_* columns are ever null"; ``all`` = "populated in every split");
- ``test-only`` pie_* columns may be null in any split and MUST be null in train/validation rows;
  ``train/val-only`` pie_* columns may be null in any split and MUST be null in test rows ("null elsewhere").

Other checks: ``split`` is one of train/validation/test, ``language`` is ``cpp``; ``n_usable``/``n_kept``/
``n_common_timed`` equal the lengths of their lists (the card defines them as ``len(...)``); every case id lies
in ``0 .. n_cases_available-1`` and appears once per list; gem5 statuses are ``ok`` or ``forkloop_partial``;
``our_*`` and ``ceiling_speedup`` are finite and > 0. Whether the usable cases have ticks is checked where the
reward is computed (``pipelines/pie_speedup.py``), not here.

Loading: :func:`iter_rows` takes a Parquet file, a JSONL file (optionally ``.gz``), a directory written by
``datasets.Dataset.save_to_disk`` (or a directory of Parquet shards), a ``datasets.Dataset``/``DatasetDict``, a
``pyarrow.Table``, or any iterable of mappings, and yields one validated row or one :class:`RowError` per input
row, so a bad row never stops a batch. :func:`parse_row` validates a single mapping and raises
:class:`PieRowError`.
"""

from __future__ import annotations

import gzip
import json
import math
import os
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, ClassVar, Literal, Union

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    PrivateAttr,
    ValidationError,
    field_validator,
    model_validator,
)
from pydantic_core import PydanticCustomError

from arbiter.datasets.io import decode_json_line

__all__ = [
    "GEM5_STATUSES",
    "SPLITS",
    "TEST_ONLY_COLUMNS",
    "TRAIN_VAL_ONLY_COLUMNS",
    "PieBysrcRow",
    "PiePair",
    "PieRow",
    "PieRowError",
    "RowError",
    "decode_case_ids",
    "decode_ticks",
    "iter_jsonl_lines",
    "iter_pie_pairs",
    "iter_raw_rows",
    "iter_rows",
    "load_pie_pairs",
    "load_rows",
    "parse_pie_pair",
    "parse_row",
]

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

_NEVER_NULL = (
    "is null, but the card populates this column in every split "
    "('None of the gem5_* / our_* / *_case_ids / n_* columns are ever null')"
)
_DIGITS = re.compile(r"[0-9]+")


# --------------------------------------------------------------------------------------------- decoding helpers


def _no_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in pairs:
        if k in out:
            raise ValueError(f"JSON object repeats key {k!r}")
        out[k] = v
    return out


def _load_json(value: Any) -> Any:
    if isinstance(value, (bytes, bytearray)):
        value = value.decode("utf-8")
    if isinstance(value, str):
        try:
            return json.loads(value, object_pairs_hook=_no_duplicate_keys)
        except json.JSONDecodeError as e:
            snippet = value if len(value) <= 60 else value[:57] + "..."
            raise ValueError(f"is not valid JSON ({e.msg} at char {e.pos}): {snippet!r}") from None
    return value


def _case_id(x: Any) -> int:
    """One case index: a non-negative int, or its decimal string (JSON object keys are strings)."""
    if isinstance(x, bool):
        raise ValueError(f"case id {x!r} is a boolean, not an integer")
    if isinstance(x, int):
        if x < 0:
            raise ValueError(f"case id {x} is negative")
        return x
    if isinstance(x, str) and _DIGITS.fullmatch(x):
        return int(x)
    if isinstance(x, float) and x.is_integer() and x >= 0:
        return int(x)
    raise ValueError(f"case id {x!r} is not a non-negative integer")


def _as_mapping(value: Any) -> Mapping[Any, Any]:
    value = _load_json(value)
    if isinstance(value, list) and all(isinstance(p, tuple) and len(p) == 2 for p in value):
        value = dict(value)  # pyarrow map<k, v> columns come back as a list of (key, value) tuples
    if not isinstance(value, Mapping):
        raise ValueError(f"must be a JSON object {{case_idx: value}}, got {type(value).__name__}")
    return value


def _keyed(value: Any, convert) -> dict[int, Any]:
    out: dict[int, Any] = {}
    for k, v in _as_mapping(value).items():
        c = _case_id(k)
        if c in out:
            raise ValueError(f"case id {c} appears twice among the keys")
        out[c] = convert(c, v)
    return out


def _tick_value(case: int, v: Any) -> int:
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise ValueError(f"ticks for case {case} must be a non-negative integer (gem5 picoseconds), got {v!r}")
    if isinstance(v, float):
        if not (math.isfinite(v) and v.is_integer()):
            raise ValueError(f"ticks for case {case} must be a whole number of picoseconds, got {v!r}")
        v = int(v)
    if v < 0:
        raise ValueError(f"ticks for case {case} are negative ({v})")
    return v


def _seconds_value(case: int, v: Any) -> float | None:
    if v is None:
        return None
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise ValueError(f"time for case {case} must be a number of seconds, got {v!r}")
    v = float(v)
    if math.isnan(v) or v < 0:
        raise ValueError(f"time for case {case} must be >= 0 seconds, got {v!r}")
    return v


def decode_ticks(value: Any) -> dict[int, int]:
    """Decode a ``*_per_tc_ticks`` cell into ``{case_idx: ticks}`` (ints; ticks are gem5 picoseconds).

    Accepts the card's JSON string (``'{"0": 123, "1": 456}'``), an already-decoded dict with int or decimal-string
    keys, or pyarrow's list of (key, value) tuples. Raises ``ValueError`` on null, invalid JSON, a non-object, a
    negative/non-integer case id or tick count, or a case id given twice. Source: card, "TL;DR units & encoding".
    """
    if value is None:
        raise ValueError(_NEVER_NULL)
    return _keyed(value, _tick_value)


def decode_case_ids(value: Any) -> list[int]:
    """Decode a ``*_case_ids`` / ``*_excluded`` cell into a list of case indices, order kept.

    Accepts a JSON list string or a list. Raises ``ValueError`` on null, invalid JSON, a non-list, a negative or
    non-integer id, or a repeated id (the lists are sets of cases). Source: card, "TL;DR units & encoding".
    """
    if value is None:
        raise ValueError(_NEVER_NULL)
    value = _load_json(value)
    if isinstance(value, tuple):
        value = list(value)
    if not isinstance(value, list):
        raise ValueError(f"must be a JSON list of case indices, got {type(value).__name__}")
    out = [_case_id(x) for x in value]
    if len(set(out)) != len(out):
        dups = sorted({c for c in out if out.count(c) > 1})
        raise ValueError(f"repeats case id(s) {dups}")
    return out


def _decode_tc2time(value: Any) -> dict[int, float | None] | None:
    if value is None:
        return None
    return _keyed(value, _seconds_value)


def _not_null(value: Any) -> Any:
    if value is None:
        raise ValueError(_NEVER_NULL)
    if isinstance(value, float) and math.isnan(value):
        raise ValueError("is NaN (null), but the card populates this column in every split")
    return value


def _nan_to_none(value: Any) -> Any:
    if isinstance(value, float) and math.isnan(value):
        return None
    return value


def _optional_case_ids(value: Any) -> list[int] | None:
    return None if value is None else decode_case_ids(value)


Ticks = Annotated[dict[int, int], BeforeValidator(decode_ticks)]
CaseIds = Annotated[list[int], BeforeValidator(decode_case_ids)]
OptCaseIds = Annotated[Union[list[int], None], BeforeValidator(_optional_case_ids)]
OptTc2Time = Annotated[Union[dict[int, Union[float, None]], None], BeforeValidator(_decode_tc2time)]
ReqStr = Annotated[str, BeforeValidator(_not_null)]
ReqInt = Annotated[int, BeforeValidator(_not_null)]
ReqFloat = Annotated[float, BeforeValidator(_not_null)]
ReqBool = Annotated[bool, BeforeValidator(_not_null)]
OptFloat = Annotated[Union[float, None], BeforeValidator(_nan_to_none)]
OptInt = Annotated[Union[int, None], BeforeValidator(_nan_to_none)]
OptStr = Annotated[Union[str, None], BeforeValidator(_nan_to_none)]


# ----------------------------------------------------------------------------------------------------- errors


@dataclass(frozen=True)
class RowError:
    """One input row that could not be turned into a row model.

    ``index`` is the 0-based position of the row in its source (data rows only; blank JSONL lines are not
    counted). ``problem_id``/``src_id`` are taken from the raw row when readable. ``issues`` holds one
    ``(column, message)`` pair per problem found; ``column`` is ``"<row>"`` when the whole record is unreadable
    (invalid JSON line, not an object).
    """

    index: int | None
    problem_id: str | None
    src_id: str | None
    issues: tuple[tuple[str, str], ...]

    @property
    def columns(self) -> tuple[str, ...]:
        """The columns named by the issues, in order."""
        return tuple(c for c, _ in self.issues)

    @property
    def column(self) -> str:
        """The first column named (convenience for single-issue errors)."""
        return self.issues[0][0] if self.issues else "<row>"

    def where(self) -> str:
        """``row 3 (problem_id=p02915, src_id=s1)`` — the row part of messages."""
        return _row_label(self.index, self.problem_id, self.src_id)

    def __str__(self) -> str:
        body = "; ".join(f"column {c!r}: {m}" if c != "<row>" else m for c, m in self.issues)
        return f"{self.where()}: {body}"


class PieRowError(ValueError):
    """A row failed validation. ``.error`` is the :class:`RowError` (row index, ids, columns, messages)."""

    def __init__(self, error: RowError):
        super().__init__(str(error))
        self.error = error


def _row_label(index: int | None, problem_id: Any, src_id: Any) -> str:
    ids = ", ".join(f"{k}={v}" for k, v in (("problem_id", problem_id), ("src_id", src_id)) if v is not None)
    head = f"row {index}" if index is not None else "row"
    return f"{head} ({ids})" if ids else head


def _id_or_none(raw: Any, key: str) -> str | None:
    if isinstance(raw, Mapping):
        v = raw.get(key)
        return None if v is None else str(v)
    return None


def _issues_from_validation(e: ValidationError) -> tuple[tuple[str, str], ...]:
    out: list[tuple[str, str]] = []
    for err in e.errors():
        ctx = err.get("ctx") or {}
        if not err["loc"] and "issues" in ctx:
            out.extend(ctx["issues"])
            continue
        column = ".".join(str(p) for p in err["loc"]) if err["loc"] else "<row>"
        msg = err["msg"]
        if msg.startswith("Value error, "):
            msg = msg[len("Value error, "):]
        if err["type"] == "missing":
            msg = "is missing, but the card defines it for this dataset"
        out.append((column, msg))
    return tuple(out)


# ------------------------------------------------------------------------------------------------ row models


class _PieRowBase(BaseModel):
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
    def _cross_checks(self) -> "_PieRowBase":
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
        return _row_label(self._index, self.problem_id, self.src_id)


class PieRow(_PieRowBase):
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


class PieBysrcRow(_PieRowBase):
    """One row of ``pie-gem5-bysrc``: one unique (problem, src), best surviving target kept as "oracle".

    Holds every column of the card not marked ``[pairs only]``; ``usable_case_ids`` is kept ∩ src-timed ∩ wall
    (card, ``usable_case_ids``), so the oracle may lack ticks on some usable case. The card names no oracle
    column: oracle columns (e.g. ``oracle_tgt_code``) stay in ``model_extra``; JSON ones are decoded on use by
    ``arbiter.pipelines.pie_speedup.oracle_ticks``. Same decoding and null rules as :class:`PieRow`.
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
RowKind = Literal["pairs", "bysrc", "auto"]
_MODELS: dict[str, type[_PieRowBase]] = {"pairs": PieRow, "bysrc": PieBysrcRow}


# ---------------------------------------------------------------------------------------------- parsing


def _validate(model: type[BaseModel], raw: Any, index: int | None) -> Any:
    if not isinstance(raw, Mapping):
        err = RowError(index, None, None, (("<row>", f"is a {type(raw).__name__}, not a JSON object / mapping"),))
        raise PieRowError(err)
    try:
        obj = model.model_validate(dict(raw))
    except ValidationError as e:
        raise PieRowError(
            RowError(index, _id_or_none(raw, "problem_id"), _id_or_none(raw, "src_id"), _issues_from_validation(e))
        ) from None
    if isinstance(obj, _PieRowBase):
        obj._index = index
    return obj


def parse_row(
    raw: Mapping[str, Any], *, index: int | None = None, kind: Literal["pairs", "bysrc"] = "pairs"
) -> AnyPieRow:
    """Validate one raw row (column → value) into a :class:`PieRow` (``kind="pairs"``) or :class:`PieBysrcRow`.

    ``index`` is the row's position in its source, used in error messages. Raises :class:`PieRowError`
    (a ``ValueError``) naming the row (index, problem_id, src_id) and every bad column. Rules: module docstring.
    """
    if kind not in _MODELS:
        raise ValueError(f"kind must be 'pairs' or 'bysrc', got {kind!r}")
    return _validate(_MODELS[kind], raw, index)


def parse_pie_pair(raw: Mapping[str, Any], *, index: int | None = None) -> PiePair:
    """Validate one row into a :class:`PiePair`.

    A row with gem5 columns (``gem5_src_per_tc_ticks`` present) is validated as a :class:`PieRow` first and
    converted with :meth:`PieRow.to_pair`; any other row is read as a PIE release row (``src_id, tgt_id,
    problem_id, speedup, src_code, tgt_code``; other columns ignored). Raises :class:`PieRowError`.
    """
    if isinstance(raw, Mapping) and "gem5_src_per_tc_ticks" in raw:
        row = _validate(PieRow, raw, index)
        try:
            return row.to_pair()
        except ValidationError as e:
            raise PieRowError(RowError(index, row.problem_id, row.src_id, _issues_from_validation(e))) from None
    return _validate(PiePair, raw, index)


# ---------------------------------------------------------------------------------------------- sources


def _is_hf(obj: Any, name: str) -> bool:
    return any(c.__name__ == name and c.__module__.startswith("datasets") for c in type(obj).__mro__)


def _pick_split(dd: Any, split: str | None) -> Any:
    if split is None:
        if len(dd) == 1:
            return next(iter(dd.values()))
        raise ValueError(f"this DatasetDict has splits {sorted(dd)}; pass split=")
    if split not in dd:
        raise ValueError(f"split {split!r} not in this DatasetDict (has {sorted(dd)})")
    return dd[split]


def iter_jsonl_lines(path: str | os.PathLike) -> Iterator[tuple[int, Any, str | None]]:
    """Read a JSONL file (``.gz``: gzip) line by line, never stopping at a bad line.

    Yields ``(line number, value, None)`` for each non-blank line (1-based; lines end at a newline byte; a UTF-8 byte
    order mark on line 1 is ignored) and ``(line number, None, problem)`` for a line that is not UTF-8 text
    (``problem`` names the first invalid byte and its position in the line, e.g. ``"not UTF-8 text (byte 0xff at
    column 12)"``) or not one JSON value (``"not valid JSON (Expecting value at char 0)"``). Raises ``OSError`` when
    the file cannot be opened or read (a problem of the whole file, not of a line)."""
    path = Path(path)
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rb") as f:
        for lineno, raw in enumerate(f, 1):
            if not raw.strip():
                continue
            try:
                value = decode_json_line(raw, lineno)
            except ValueError as e:
                yield lineno, None, str(e)
                continue
            yield lineno, value, None


def _iter_jsonl(path: Path) -> Iterator[Any]:
    for lineno, value, problem in iter_jsonl_lines(path):
        if problem is None:
            yield value
        else:
            yield RowError(None, None, None, (("<row>", f"{path.name}: line {lineno} is {problem}"),))


def _iter_parquet(path: Path) -> Iterator[dict[str, Any]]:
    import pyarrow.parquet as pq

    pf = pq.ParquetFile(path)
    for batch in pf.iter_batches(batch_size=512):
        yield from batch.to_pylist()


def _iter_source(source: Any, split: str | None) -> Iterator[Any]:
    if isinstance(source, (str, os.PathLike)):
        path = Path(source)
        if path.is_dir():
            markers = ("dataset_info.json", "state.json", "dataset_dict.json")
            if any((path / m).exists() for m in markers):
                import datasets  # optional dependency: arbiter[hf]

                ds = datasets.load_from_disk(str(path))
                if _is_hf(ds, "DatasetDict"):
                    ds = _pick_split(ds, split)
                yield from ds
                return
            files = sorted(p for p in path.rglob("*.parquet") if split is None or p.name.startswith(split))
            if not files:
                raise ValueError(f"{path}: neither a datasets.save_to_disk directory nor a folder of Parquet files")
            for p in files:
                yield from _iter_parquet(p)
            return
        if not path.exists():
            raise FileNotFoundError(f"{path}: no such file")
        name = path.name.lower()
        if name.endswith((".parquet", ".pq")):
            yield from _iter_parquet(path)
        elif name.endswith((".jsonl", ".jsonl.gz", ".json", ".ndjson")):
            yield from _iter_jsonl(path)
        else:
            raise ValueError(f"{path}: unknown format (expected .parquet, .jsonl[.gz], or a directory)")
        return
    if _is_hf(source, "DatasetDict"):
        yield from _pick_split(source, split)
        return
    if _is_hf(source, "Dataset"):
        yield from source
        return
    if type(source).__name__ == "Table" and type(source).__module__.startswith("pyarrow"):
        for batch in source.to_batches(max_chunksize=512):
            yield from batch.to_pylist()
        return
    if isinstance(source, Mapping):
        raise TypeError("pass an iterable of rows, not a single row (use parse_row for one row)")
    if isinstance(source, Iterable):
        yield from source
        return
    raise TypeError(f"cannot read PIE rows from a {type(source).__name__}")


def iter_raw_rows(source: Any, *, split: str | None = None) -> Iterator[tuple[int, Any]]:
    """Yield ``(index, raw_row)`` for every data row of ``source``, ``index`` 0-based.

    ``source``: a ``.parquet`` file; a ``.jsonl``/``.jsonl.gz``/``.json`` (one object per line) file; a directory
    written by ``datasets`` ``save_to_disk`` (``split=`` picks a split of a DatasetDict) or holding ``*.parquet``
    shards (``split=`` keeps files whose name starts with it); a ``datasets.Dataset``/``DatasetDict``; a
    ``pyarrow.Table``; or an iterable of mappings. ``raw_row`` is a dict, or a :class:`RowError` for an
    unreadable JSONL line. Raises ``FileNotFoundError``/``ValueError``/``TypeError`` for an unusable source.
    """
    for i, raw in enumerate(_iter_source(source, split)):
        if isinstance(raw, RowError):
            raw = RowError(i, None, None, raw.issues)
        yield i, raw


def iter_rows(source: Any, *, kind: RowKind = "auto", split: str | None = None) -> Iterator[AnyPieRow | RowError]:
    """Yield one validated row or one :class:`RowError` per input row of ``source`` (see :func:`iter_raw_rows`).

    ``kind``: ``"pairs"`` (:class:`PieRow`), ``"bysrc"`` (:class:`PieBysrcRow`), or ``"auto"``: pairs when the
    first readable row has a ``tgt_id`` column (``[pairs only]`` in the card), else bysrc. A bad row never stops
    the iteration; the source itself being unreadable raises (see :func:`iter_raw_rows`).
    """
    model: type[_PieRowBase] | None = None if kind == "auto" else _MODELS.get(kind)
    if kind != "auto" and model is None:
        raise ValueError(f"kind must be 'pairs', 'bysrc' or 'auto', got {kind!r}")
    for i, raw in iter_raw_rows(source, split=split):
        if isinstance(raw, RowError):
            yield raw
            continue
        if model is None and isinstance(raw, Mapping):
            model = PieRow if "tgt_id" in raw else PieBysrcRow
        try:
            yield _validate(model or PieRow, raw, i)
        except PieRowError as e:
            yield e.error


def load_rows(
    source: Any, *, kind: RowKind = "auto", split: str | None = None, on_error: Literal["raise", "skip"] = "raise"
) -> list[AnyPieRow]:
    """All rows of ``source`` as a list. ``on_error="raise"`` raises :class:`PieRowError` at the first bad row;
    ``"skip"`` drops bad rows (use :func:`iter_rows` to see them)."""
    out: list[AnyPieRow] = []
    for r in iter_rows(source, kind=kind, split=split):
        if isinstance(r, RowError):
            if on_error == "raise":
                raise PieRowError(r)
            continue
        out.append(r)
    return out


def iter_pie_pairs(source: Any, *, split: str | None = None) -> Iterator[PiePair | RowError]:
    """Yield one :class:`PiePair` or one :class:`RowError` per row of ``source`` (see :func:`parse_pie_pair` and
    :func:`iter_raw_rows`). Reads PIE release files such as ``realdata/pie_purdue/val.jsonl`` and gem5 pairs."""
    for i, raw in iter_raw_rows(source, split=split):
        if isinstance(raw, RowError):
            yield raw
            continue
        try:
            yield parse_pie_pair(raw, index=i)
        except PieRowError as e:
            yield e.error


def load_pie_pairs(
    source: Any, *, split: str | None = None, on_error: Literal["raise", "skip"] = "raise"
) -> list[PiePair]:
    """All :class:`PiePair` rows of ``source``; ``on_error`` as in :func:`load_rows`."""
    out: list[PiePair] = []
    for r in iter_pie_pairs(source, split=split):
        if isinstance(r, RowError):
            if on_error == "raise":
                raise PieRowError(r)
            continue
        out.append(r)
    return out
