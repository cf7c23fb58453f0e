"""The PIE gem5 card's reward over dataset timings (``sum(src ticks) / sum(tgt ticks)`` over K usable cases), its
case choice and the startup-floor ceiling. Rules and sources: ``docs/pie.md`` ("The card's reward and the transforms").
"""

from __future__ import annotations

import operator
import random
from collections.abc import Mapping, Sequence
from typing import Any, Literal

from arbiter.datasets.pie.decode import decode_case_ids, decode_ticks
from arbiter.datasets.pie.errors import PieRowError, RowIssues, id_or_none, row_label
from arbiter.datasets.pie.rows import PIE_RELEASE_LACKS, PieBysrcRow, PiePair, PieRow, parse_row


#: gem5 ticks are picoseconds (card, "TL;DR": seconds = ticks * 1e-12).
TICKS_PER_SECOND = 1_000_000_000_000


#: The gem5 startup floor the card's ``ceiling_speedup`` divides by: 192M ticks (card, "Derived speedups").
STARTUP_FLOOR_TICKS = 192_000_000


#: ``flag_low_headroom`` is ``ceiling_speedup < 1.5`` (card, "Derived speedups + flags").
LOW_HEADROOM_THRESHOLD = 1.5


#: PIE's %Opt threshold: speedup >= 1.10 (pie.md §1 "Aggregation"; LearningOpt/pie ``gem5_eval.py``).
OPT_THRESHOLD = 1.10


class PieRewardError(ValueError):
    """The reward cannot be computed for this row. ``.row`` is the row label (index, problem_id, src_id),
    ``.column`` the column at fault (or None)."""

    def __init__(self, row: str, column: str | None, message: str):
        where = f"{row}: column {column!r}: " if column else f"{row}: "
        super().__init__(where + message)
        self.row = row
        self.column = column


def ticks_to_seconds(ticks: int | float) -> float:
    """gem5 ticks (picoseconds) → seconds: ``ticks * 1e-12`` (card, "TL;DR units & encoding")."""
    return ticks / TICKS_PER_SECOND


def as_row(row: Any) -> PieRow | PieBysrcRow:
    """``row`` as a validated row: a :class:`PieRow` / :class:`PieBysrcRow` as is; a plain mapping with the card's
    columns (what Hugging Face ``datasets`` yields) is parsed, as a pairs row when it has ``tgt_id``, else as a
    bysrc row (:func:`~arbiter.datasets.pie.rows.parse_row`; raises its ``PieRowError``). Anything else:
    ``TypeError``."""
    if isinstance(row, (PieRow, PieBysrcRow)):
        return row
    if isinstance(row, Mapping):
        return parse_row(row, kind="pairs" if "tgt_id" in row else "bysrc")
    raise TypeError(f"expected a PieRow, PieBysrcRow or a mapping of the card's columns, got {type(row).__name__}")


#: Columns of the card that hold per-case ticks but are not a bysrc row's oracle target.
_NOT_ORACLE = ("gem5_src_per_tc_ticks", "gem5_fastest_per_tc_ticks")


class _Columns:
    """The columns a card function reads, from a validated row, or from a plain mapping that holds only them
    (as ``load_dataset(..., columns=[...])`` gives): a mapping's cells are decoded when read, and a missing or
    undecodable one raises :class:`PieRowError` naming that column only."""

    def __init__(self, row: Any):
        if isinstance(row, PiePair):
            raise TypeError(f"a PIE release row (PIE's own schema) has no gem5 timings: {PIE_RELEASE_LACKS}")
        if not isinstance(row, (PieRow, PieBysrcRow, Mapping)):
            raise TypeError(f"expected a PieRow, PieBysrcRow or a mapping of the card's columns, "
                            f"got {type(row).__name__}")
        self.row = row
        self.is_mapping = isinstance(row, Mapping)
        self.pairs = isinstance(row, PieRow) or (self.is_mapping and "tgt_id" in row)
        self.label = (row_label(None, id_or_none(row, "problem_id"), id_or_none(row, "src_id"))
                      if self.is_mapping else row.label())

    def _fail(self, column: str, message: str) -> PieRowError:
        raw = self.row
        return PieRowError(RowIssues(None, id_or_none(raw, "problem_id"), id_or_none(raw, "src_id"),
                                    ((column, message),)))

    def _cell(self, column: str) -> Any:
        if not self.is_mapping:
            if column in type(self.row).model_fields:
                return getattr(self.row, column)
            return (self.row.model_extra or {})[column]
        if column not in self.row:
            raise self._fail(column, "is missing (this function reads it)")
        return self.row[column]

    def ticks(self, column: str) -> dict[int, int]:
        value = self._cell(column)
        if not self.is_mapping:
            return value if isinstance(value, dict) else decode_ticks(value)
        try:
            return decode_ticks(value)
        except ValueError as e:
            raise self._fail(column, str(e)) from None

    def case_ids(self, column: str) -> list[int]:
        value = self._cell(column)
        if not self.is_mapping:
            return list(value)
        try:
            return decode_case_ids(value)
        except ValueError as e:
            raise self._fail(column, str(e)) from None

    def has(self, column: str) -> bool:
        if self.is_mapping:
            return column in self.row
        return column in type(self.row).model_fields or column in (self.row.model_extra or {})

    def extra_names(self) -> list[str]:
        """Column names beyond the card's fields (a validated row's extras; every key of a mapping)."""
        if self.is_mapping:
            return [str(k) for k in self.row]
        return list(self.row.model_extra or {})


def select_cases(usable: Sequence[int], k: int, rng: random.Random | None = None, *, row: str = "row") -> list[int]:
    """The case ids the reward sums over, exactly as the card's snippet picks them.

    ``k < 0`` → all of ``usable`` (stored order). ``k > 0`` → ``rng.sample(list(usable), min(k, len(usable)))``:
    K is clamped, never padded. With ``k >= len(usable)`` and no ``rng`` all cases are returned (the sum is the
    same); with an ``rng`` it is still called, so a shared generator advances as in the card's snippet.
    Raises :class:`PieRewardError` when ``usable`` is empty, ``ValueError`` when ``k == 0`` (neither "all" nor a
    usable sample; the card's all-marker is -1) or when sampling is needed and ``rng`` is None (pass a seeded
    ``random.Random`` so runs are reproducible). Source: card, "How to compute the reward".
    """
    usable = list(usable)
    if not usable:
        raise PieRewardError(row, "usable_case_ids", "is empty: no case to compute a speedup over")
    if isinstance(k, bool):
        raise ValueError(f"K must be an int, got {k!r}")
    try:
        k = operator.index(k)  # ints and integer scalars (e.g. numpy.int64)
    except TypeError:
        raise ValueError(f"K must be an int, got {k!r}") from None
    if k == 0:
        raise ValueError("K = 0 selects no case; use K = -1 (or any K < 0) for all usable cases, K >= 1 to sample")
    if k < 0:
        return usable
    n = min(k, len(usable))
    if rng is None:
        if n == len(usable):
            return usable
        raise ValueError(f"K = {k} < {len(usable)} usable cases: pass rng=random.Random(seed) to sample")
    return rng.sample(usable, n)


def _sum_over(ticks: Mapping[int, int], cases: Sequence[int], column: str, row: str) -> int:
    missing = [c for c in cases if c not in ticks]
    if missing:
        raise PieRewardError(row, column, f"has no ticks for case(s) {sorted(missing)[:10]} of the selected cases")
    total = sum(ticks[c] for c in cases)
    if total <= 0:
        raise PieRewardError(row, column, f"sums to {total} ticks over cases {list(cases)[:10]}: ratio undefined")
    return total


def sum_ratio(
    num: Mapping[int, int],
    den: Mapping[int, int],
    cases: Sequence[int],
    *,
    num_column: str = "numerator",
    den_column: str = "denominator",
    row: str = "row",
) -> float:
    """``sum(num[c]) / sum(den[c])`` over ``cases`` (ticks, int keys): the card's speedup on a chosen case set.

    Use it for re-timed candidates too (src reference ticks over candidate ticks on the same cases). Raises
    :class:`PieRewardError` naming ``row`` and the column when ``cases`` is empty, a case is missing from either
    mapping, or either sum is <= 0 (no silent 0 or inf).
    """
    if not cases:
        raise PieRewardError(row, None, "no case selected")
    return _sum_over(num, cases, num_column, row) / _sum_over(den, cases, den_column, row)


_ORACLE_HINT = "pass ticks_column=<the bysrc column holding the oracle target's per-case ticks>"


def oracle_ticks(row: PieBysrcRow | Mapping[str, Any], ticks_column: str | None = None) -> tuple[str, dict[int, int]]:
    """The bysrc row's oracle-target per-case ticks, as ``(column, {case_idx: ticks})``.

    The card says only that in pie-gem5-bysrc the tgt of the reward snippet is the "oracle" variant ("best
    surviving target kept as oracle") and does not name its column. Resolution: ``ticks_column`` if given;
    else the one extra column whose name contains ``oracle`` and ends with ``_per_tc_ticks``; else a
    ``gem5_tgt_per_tc_ticks`` column if the bysrc row has one (the name the card's snippet uses). The value is
    decoded like every ``*_per_tc_ticks`` column. ``row``: a :class:`PieBysrcRow` or a mapping (only the columns
    read are needed). Raises :class:`PieRewardError` when no column or several candidates are found, or the
    value is null/undecodable.
    """
    return _oracle_ticks(_Columns(row), ticks_column)


def _oracle_ticks(cols: _Columns, ticks_column: str | None) -> tuple[str, dict[int, int]]:
    label = cols.label
    if ticks_column is None:
        cands = sorted(c for c in cols.extra_names()
                       if "oracle" in c and c.endswith("_per_tc_ticks") and c not in _NOT_ORACLE)
        if len(cands) > 1:
            raise PieRewardError(label, None, f"several oracle tick columns {cands}; {_ORACLE_HINT}")
        if cands:
            ticks_column = cands[0]
        elif cols.has("gem5_tgt_per_tc_ticks"):
            ticks_column = "gem5_tgt_per_tc_ticks"
        else:
            have = sorted(c for c in cols.extra_names() if c.endswith("_per_tc_ticks") and c not in _NOT_ORACLE)
            msg = f"no oracle per-case ticks column found (extra *_per_tc_ticks columns: {have}); {_ORACLE_HINT}"
            raise PieRewardError(label, None, msg)
    if not cols.has(ticks_column):
        raise PieRewardError(label, ticks_column, "is not a column of this row")
    try:
        return ticks_column, cols.ticks(ticks_column)
    except (ValueError, TypeError) as e:
        if isinstance(e, PieRowError):
            raise
        raise PieRewardError(label, ticks_column, str(e)) from None


def _target(cols: _Columns, ticks_column: str | None) -> tuple[str, Mapping[int, int]]:
    if cols.pairs:
        if ticks_column is not None:
            raise ValueError("ticks_column is only for pie-gem5-bysrc rows (pairs rows use gem5_tgt_per_tc_ticks)")
        return "gem5_tgt_per_tc_ticks", cols.ticks("gem5_tgt_per_tc_ticks")
    return _oracle_ticks(cols, ticks_column)


def speedup(
    row: PieRow | PieBysrcRow, k: int = -1, rng: random.Random | None = None, *, ticks_column: str | None = None
) -> float:
    """The card's reward: ``sum(src ticks) / sum(tgt ticks)`` over K cases of ``usable_case_ids``.

    ``row``: a :class:`PieRow` (tgt = ``gem5_tgt_per_tc_ticks``) or a :class:`PieBysrcRow` (tgt = the oracle
    target, :func:`oracle_ticks`; ``ticks_column`` names its column). ``k``: number of cases, clamped to
    ``len(usable)``; ``k < 0`` = all (the card's -1); ``k == 0`` raises ``ValueError``. ``rng``: a
    ``random.Random`` used as ``rng.sample(usable, min(k, len(usable)))`` (see :func:`select_cases`).
    Returns a dimensionless ratio > 0 (src over tgt; > 1 means tgt is faster). With ``k < 0`` on a pairs row this
    reproduces ``our_speedup_usable``. A plain mapping needs only the columns read (``gem5_src_per_tc_ticks``, the
    target's ticks, ``usable_case_ids``): a pairs row when it has ``tgt_id``, else a bysrc row. Raises
    :class:`PieRewardError` (row + column) when usable is empty, a selected case has no ticks on either side, or a
    sum is 0; :class:`PieRowError` naming the column when a mapping lacks one it reads or holds an undecodable one.
    Source: card, "How to compute the reward".
    """
    cols = _Columns(row)
    tgt_col, tgt = _target(cols, ticks_column)
    cases = select_cases(cols.case_ids("usable_case_ids"), k, rng, row=cols.label)
    return sum_ratio(cols.ticks("gem5_src_per_tc_ticks"), tgt, cases, num_column="gem5_src_per_tc_ticks",
                     den_column=tgt_col, row=cols.label)


def oracle_speedup(
    row: PieBysrcRow, k: int = -1, rng: random.Random | None = None, *, ticks_column: str | None = None
) -> float:
    """:func:`speedup` for a pie-gem5-bysrc row: src over the oracle target (card: "'oracle' variant in the bysrc
    dataset"). bysrc ``usable_case_ids`` is kept ∩ src-timed ∩ wall, so a usable case the oracle was not timed on
    raises :class:`PieRewardError` naming the oracle column rather than being skipped. A mapping is read as a
    bysrc row (its ``tgt_id``, if any, ignored)."""
    cols = _Columns(row)
    if isinstance(row, PieRow):
        raise TypeError(f"oracle_speedup needs a PieBysrcRow, got {type(row).__name__}")
    cols.pairs = False
    tgt_col, tgt = _target(cols, ticks_column)
    cases = select_cases(cols.case_ids("usable_case_ids"), k, rng, row=cols.label)
    return sum_ratio(cols.ticks("gem5_src_per_tc_ticks"), tgt, cases, num_column="gem5_src_per_tc_ticks",
                     den_column=tgt_col, row=cols.label)


def fastest_speedup(row: PieRow | PieBysrcRow, k: int = -1, rng: random.Random | None = None) -> float:
    """Src over the problem's fastest surviving program, over K cases of ``usable_case_ids``.

    Same case selection and errors as :func:`speedup`; tgt is ``gem5_fastest_per_tc_ticks``. With ``k < 0``
    this reproduces ``our_fastest_speedup`` ("sum(src ticks)/sum(fastest ticks) over usable_case_ids", whose
    denominator is ``gem5_fastest_sum_ticks_usable``). Source: card, "How to compute the reward" and
    ``gem5_fastest_*``.
    """
    cols = _Columns(row)
    cases = select_cases(cols.case_ids("usable_case_ids"), k, rng, row=cols.label)
    return sum_ratio(cols.ticks("gem5_src_per_tc_ticks"), cols.ticks("gem5_fastest_per_tc_ticks"), cases,
                     num_column="gem5_src_per_tc_ticks", den_column="gem5_fastest_per_tc_ticks", row=cols.label)


def ceiling_speedup(row: PieRow | PieBysrcRow, *, cases: Literal["usable", "timed"] = "usable") -> float:
    """Theoretical max speedup of the src given gem5's startup floor: mean per-case src ticks / 192M ticks.

    The card ("ceiling_speedup": "Mean per-case src ticks / startup floor (192M ticks)") does not say over which
    cases; the default is ``usable_case_ids``, the set every speedup is computed over. ``cases="timed"`` uses every
    case in ``gem5_src_per_tc_ticks``. Returns a ratio (ticks / ticks). Raises :class:`PieRewardError` when the
    case set is empty or a usable case has no src ticks.
    """
    if cases not in ("usable", "timed"):
        raise ValueError(f"cases must be 'usable' or 'timed', got {cases!r}")
    cols = _Columns(row)
    label = cols.label
    src = cols.ticks("gem5_src_per_tc_ticks")
    if cases == "usable":
        ids = cols.case_ids("usable_case_ids")
        if not ids:
            raise PieRewardError(label, "usable_case_ids", "is empty: no case to average src ticks over")
        total = _sum_over(src, ids, "gem5_src_per_tc_ticks", label)
    else:
        ids = list(src)
        if not ids:
            raise PieRewardError(label, "gem5_src_per_tc_ticks", "is empty: no timed case")
        total = sum(src.values())
    return total / len(ids) / STARTUP_FLOOR_TICKS


def flag_low_headroom(ceiling: float | PieRow | PieBysrcRow) -> bool:
    """``ceiling_speedup < 1.5`` (card, "flag_low_headroom"). Accepts the ceiling or a row (computed with
    :func:`ceiling_speedup` over usable cases)."""
    if not isinstance(ceiling, (int, float)):
        ceiling = ceiling_speedup(ceiling)
    return ceiling < LOW_HEADROOM_THRESHOLD
