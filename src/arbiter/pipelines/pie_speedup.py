"""The PIE gem5 card's reward, computed from dataset timings, and the reward transforms applied to it.

Card (``spec/pie_gem5_pairs_card.txt``), "How to compute the reward"::

    cases = usable if K < 0 else random.sample(usable, min(K, len(usable)))
    speedup = sum(src[str(c)] for c in cases) / sum(tgt[str(c)] for c in cases)

- :func:`speedup` — src over tgt on pie-gem5-pairs rows; on pie-gem5-bysrc rows tgt is the "oracle" target
  (:func:`oracle_ticks`). :func:`fastest_speedup` — src over ``gem5_fastest_per_tc_ticks`` (cf.
  ``our_fastest_speedup``). :func:`ceiling_speedup` / :func:`flag_low_headroom` — the startup-floor ceiling.
- Case choice (:func:`select_cases`) follows the card literally: the usable list in its stored order,
  ``rng.sample(usable, min(K, len(usable)))``; the same seeded ``random.Random`` gives the same cases as the
  card's snippet seeded alike. K is clamped to ``len(usable)`` — never padded, skipped or zeroed. K < 0 means all.
  **K = 0 is an error** (the card's all-marker is -1; sampling 0 cases gives 0/0).
- Nothing returns a silent 0 or inf: an empty usable set, a used case missing from a ticks dict, or a zero sum
  raises :class:`PieRewardError` naming the row and the column. ``usable_case_ids`` is used as given (card: "do
  not re-derive"); when ``flag_empty_kept`` is set it already holds the all-timed fallback.
- Ticks are gem5 picoseconds: :func:`ticks_to_seconds`.

Reward transforms (:func:`make_transform`, :func:`apply_reward`; names in :data:`TRANSFORMS`) map a speedup,
or ``None`` for a candidate that failed correctness, to a reward; each documents its failure reward and source.
"""

from __future__ import annotations

import math
import operator
import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from arbiter.datasets.pie_rows import PieBysrcRow, PieRow, decode_ticks

__all__ = [
    "DEFAULT_CLIP_HI",
    "DEFAULT_CLIP_LO",
    "DEFAULT_LOG_FAILURE_PENALTY",
    "LOW_HEADROOM_THRESHOLD",
    "OPT_THRESHOLD",
    "STARTUP_FLOOR_TICKS",
    "TICKS_PER_SECOND",
    "TRANSFORMS",
    "PieRewardError",
    "RewardTransform",
    "apply_reward",
    "ceiling_speedup",
    "fastest_speedup",
    "flag_low_headroom",
    "make_transform",
    "oracle_speedup",
    "oracle_ticks",
    "select_cases",
    "speedup",
    "sum_ratio",
    "ticks_to_seconds",
]

#: gem5 ticks are picoseconds (card, "TL;DR": seconds = ticks * 1e-12).
TICKS_PER_SECOND = 1_000_000_000_000
#: The gem5 startup floor the card's ``ceiling_speedup`` divides by: 192M ticks (card, "Derived speedups").
STARTUP_FLOOR_TICKS = 192_000_000
#: ``flag_low_headroom`` is ``ceiling_speedup < 1.5`` (card, "Derived speedups + flags").
LOW_HEADROOM_THRESHOLD = 1.5
#: PIE's %Opt threshold: speedup >= 1.10 (pie.md §1 "Aggregation"; LearningOpt/pie ``gem5_eval.py``).
OPT_THRESHOLD = 1.10
#: Default bounds of the ``clipped`` transform (see :func:`make_transform`).
DEFAULT_CLIP_LO = 0.0
DEFAULT_CLIP_HI = 10.0
#: Default failure reward of the ``log`` transform: ln(1/10), i.e. a failure scores like a correct program 10x
#: slower than its source.
DEFAULT_LOG_FAILURE_PENALTY = -math.log(10.0)


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


def _label(row: Any) -> str:
    return row.label() if isinstance(row, (PieRow, PieBysrcRow)) else "row"


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


def oracle_ticks(row: PieBysrcRow, ticks_column: str | None = None) -> tuple[str, dict[int, int]]:
    """The bysrc row's oracle-target per-case ticks, as ``(column, {case_idx: ticks})``.

    The card says only that in pie-gem5-bysrc the tgt of the reward snippet is the "oracle" variant ("best
    surviving target kept as oracle") and does not name its column. Resolution: ``ticks_column`` if given;
    else the one extra column whose name contains ``oracle`` and ends with ``_per_tc_ticks``; else a
    ``gem5_tgt_per_tc_ticks`` column if the bysrc row has one (the name the card's snippet uses). The value is
    decoded like every ``*_per_tc_ticks`` column. Raises :class:`PieRewardError` when no column or several
    candidates are found, or the value is null/undecodable.
    """
    label = _label(row)
    extra = row.model_extra or {}
    if ticks_column is None:
        cands = sorted(c for c in extra if "oracle" in c and c.endswith("_per_tc_ticks"))
        if len(cands) > 1:
            raise PieRewardError(label, None, f"several oracle tick columns {cands}; {_ORACLE_HINT}")
        if cands:
            ticks_column = cands[0]
        elif "gem5_tgt_per_tc_ticks" in extra:
            ticks_column = "gem5_tgt_per_tc_ticks"
        else:
            have = sorted(c for c in extra if c.endswith("_per_tc_ticks"))
            msg = f"no oracle per-case ticks column found (extra *_per_tc_ticks columns: {have}); {_ORACLE_HINT}"
            raise PieRewardError(label, None, msg)
    if ticks_column in extra:
        value = extra[ticks_column]
    elif ticks_column in type(row).model_fields:
        value = getattr(row, ticks_column)
    else:
        raise PieRewardError(label, ticks_column, "is not a column of this row")
    try:
        return ticks_column, decode_ticks(value)
    except ValueError as e:
        raise PieRewardError(label, ticks_column, str(e)) from None


def _target(row: PieRow | PieBysrcRow, ticks_column: str | None) -> tuple[str, Mapping[int, int]]:
    if isinstance(row, PieRow):
        if ticks_column is not None:
            raise ValueError("ticks_column is only for pie-gem5-bysrc rows (pairs rows use gem5_tgt_per_tc_ticks)")
        return "gem5_tgt_per_tc_ticks", row.gem5_tgt_per_tc_ticks
    if isinstance(row, PieBysrcRow):
        return oracle_ticks(row, ticks_column)
    raise TypeError(f"expected a PieRow or PieBysrcRow, got {type(row).__name__}")


def speedup(
    row: PieRow | PieBysrcRow, k: int = -1, rng: random.Random | None = None, *, ticks_column: str | None = None
) -> float:
    """The card's reward: ``sum(src ticks) / sum(tgt ticks)`` over K cases of ``usable_case_ids``.

    ``row``: a :class:`PieRow` (tgt = ``gem5_tgt_per_tc_ticks``) or a :class:`PieBysrcRow` (tgt = the oracle
    target, :func:`oracle_ticks`; ``ticks_column`` names its column). ``k``: number of cases, clamped to
    ``len(usable)``; ``k < 0`` = all (the card's -1); ``k == 0`` raises ``ValueError``. ``rng``: a
    ``random.Random`` used as ``rng.sample(usable, min(k, len(usable)))`` (see :func:`select_cases`).
    Returns a dimensionless ratio > 0 (src over tgt; > 1 means tgt is faster). With ``k < 0`` on a pairs row this
    reproduces ``our_speedup_usable``. Raises :class:`PieRewardError` (row + column) when usable is empty, a
    selected case has no ticks on either side, or a sum is 0. Source: card, "How to compute the reward".
    """
    tgt_col, tgt = _target(row, ticks_column)
    label = _label(row)
    cases = select_cases(row.usable_case_ids, k, rng, row=label)
    return sum_ratio(
        row.gem5_src_per_tc_ticks, tgt, cases, num_column="gem5_src_per_tc_ticks", den_column=tgt_col, row=label
    )


def oracle_speedup(
    row: PieBysrcRow, k: int = -1, rng: random.Random | None = None, *, ticks_column: str | None = None
) -> float:
    """:func:`speedup` for a pie-gem5-bysrc row: src over the oracle target (card: "'oracle' variant in the bysrc
    dataset"). bysrc ``usable_case_ids`` is kept ∩ src-timed ∩ wall, so a usable case the oracle was not timed on
    raises :class:`PieRewardError` naming the oracle column rather than being skipped."""
    if not isinstance(row, PieBysrcRow):
        raise TypeError(f"oracle_speedup needs a PieBysrcRow, got {type(row).__name__}")
    return speedup(row, k, rng, ticks_column=ticks_column)


def fastest_speedup(row: PieRow | PieBysrcRow, k: int = -1, rng: random.Random | None = None) -> float:
    """Src over the problem's fastest surviving program, over K cases of ``usable_case_ids``.

    Same case selection and errors as :func:`speedup`; tgt is ``gem5_fastest_per_tc_ticks``. With ``k < 0``
    this reproduces ``our_fastest_speedup`` ("sum(src ticks)/sum(fastest ticks) over usable_case_ids", whose
    denominator is ``gem5_fastest_sum_ticks_usable``). Source: card, "How to compute the reward" and
    ``gem5_fastest_*``.
    """
    label = _label(row)
    cases = select_cases(row.usable_case_ids, k, rng, row=label)
    return sum_ratio(
        row.gem5_src_per_tc_ticks,
        row.gem5_fastest_per_tc_ticks,
        cases,
        num_column="gem5_src_per_tc_ticks",
        den_column="gem5_fastest_per_tc_ticks",
        row=label,
    )


def ceiling_speedup(row: PieRow | PieBysrcRow, *, cases: Literal["usable", "timed"] = "usable") -> float:
    """Theoretical max speedup of the src given gem5's startup floor: mean per-case src ticks / 192M ticks.

    The card ("ceiling_speedup": "Mean per-case src ticks / startup floor (192M ticks)") does not say over which
    cases; the default is ``usable_case_ids``, the set every speedup is computed over. ``cases="timed"`` uses every
    case in ``gem5_src_per_tc_ticks``. Returns a ratio (ticks / ticks). Raises :class:`PieRewardError` when the
    case set is empty or a usable case has no src ticks.
    """
    label = _label(row)
    if cases == "usable":
        ids = list(row.usable_case_ids)
        if not ids:
            raise PieRewardError(label, "usable_case_ids", "is empty: no case to average src ticks over")
        total = _sum_over(row.gem5_src_per_tc_ticks, ids, "gem5_src_per_tc_ticks", label)
    elif cases == "timed":
        ids = list(row.gem5_src_per_tc_ticks)
        if not ids:
            raise PieRewardError(label, "gem5_src_per_tc_ticks", "is empty: no timed case")
        total = sum(row.gem5_src_per_tc_ticks.values())
    else:
        raise ValueError(f"cases must be 'usable' or 'timed', got {cases!r}")
    return total / len(ids) / STARTUP_FLOOR_TICKS


def flag_low_headroom(ceiling: float | PieRow | PieBysrcRow) -> bool:
    """``ceiling_speedup < 1.5`` (card, "flag_low_headroom"). Accepts the ceiling or a row (computed with
    :func:`ceiling_speedup` over usable cases)."""
    if isinstance(ceiling, (PieRow, PieBysrcRow)):
        ceiling = ceiling_speedup(ceiling)
    return ceiling < LOW_HEADROOM_THRESHOLD


# ---------------------------------------------------------------------------------------------- transforms


@dataclass(frozen=True)
class RewardTransform:
    """A named speedup → reward map.

    ``__call__(speedup)``: ``speedup`` is a finite ratio > 0 (src time / candidate time) or ``None`` when the
    candidate failed correctness (or did not compile / timed out), which returns ``failure_reward``. A speedup
    that is not finite and > 0 raises ``ValueError``. ``source`` says where the rule comes from.
    """

    name: str
    fn: Callable[[float], float]
    failure_reward: float
    source: str
    params: dict[str, float] = field(default_factory=dict)

    def __call__(self, speedup: float | None) -> float:
        if speedup is None:
            return self.failure_reward
        if isinstance(speedup, bool) or not isinstance(speedup, (int, float)):
            raise ValueError(f"speedup must be a number or None (failed), got {speedup!r}")
        if not (math.isfinite(speedup) and speedup > 0):
            raise ValueError(f"speedup must be a finite ratio > 0 (None = failed candidate), got {speedup!r}")
        return float(self.fn(float(speedup)))


def _raw(**_: float) -> RewardTransform:
    return RewardTransform("raw", lambda s: s, 0.0, "card, 'How to compute the reward': the ratio itself; failure 0.0")


def _log(*, failure_penalty: float = DEFAULT_LOG_FAILURE_PENALTY) -> RewardTransform:
    if not math.isfinite(failure_penalty):
        raise ValueError(f"failure_penalty must be finite, got {failure_penalty!r}")
    return RewardTransform(
        "log",
        math.log,
        float(failure_penalty),
        "natural log of the speedup (0 at parity, symmetric for 2x faster / 2x slower); failure = failure_penalty "
        "(default ln(1/10): a failure ranks with a correct program 10x slower than its source)",
        {"failure_penalty": float(failure_penalty)},
    )


def _clipped(*, lo: float = DEFAULT_CLIP_LO, hi: float = DEFAULT_CLIP_HI) -> RewardTransform:
    if not (math.isfinite(lo) and math.isfinite(hi) and 0 <= lo < hi):
        raise ValueError(f"need finite 0 <= lo < hi, got lo={lo!r} hi={hi!r}")
    return RewardTransform(
        "clipped",
        lambda s: min(max(s, lo), hi),
        float(lo),
        "speedup clipped to [lo, hi], default [0, 10]: 10x is the largest threshold PIE reports and near the "
        "best-of-humans mean (9.56x, pie.md §1), so outliers (startup-dominated cases) cannot dominate a batch; "
        "failure = lo",
        {"lo": float(lo), "hi": float(hi)},
    )


def _pie_floor(**_: float) -> RewardTransform:
    return RewardTransform(
        "pie_floor",
        lambda s: max(s, 1.0),
        1.0,
        "PIE gem5_eval.py (pie.md §1 'Aggregation'): speedup clipped below at 1.0; a failure counts as 1.0",
    )


def _opt_indicator(*, threshold: float = OPT_THRESHOLD) -> RewardTransform:
    if not (math.isfinite(threshold) and threshold > 0):
        raise ValueError(f"threshold must be finite and > 0, got {threshold!r}")
    return RewardTransform(
        "opt_indicator",
        lambda s: 1.0 if s >= threshold else 0.0,
        0.0,
        "PIE %Opt (pie.md §1 'Aggregation'): 1.0 when speedup >= 1.10, else 0.0; failure 0.0",
        {"threshold": float(threshold)},
    )


#: Transform factories by name: ``raw``, ``log`` (``failure_penalty``), ``clipped`` (``lo``, ``hi``),
#: ``pie_floor``, ``opt_indicator`` (``threshold``).
TRANSFORMS: dict[str, Callable[..., RewardTransform]] = {
    "raw": _raw,
    "log": _log,
    "clipped": _clipped,
    "pie_floor": _pie_floor,
    "opt_indicator": _opt_indicator,
}

_PARAMS: dict[str, set[str]] = {
    "raw": set(),
    "log": {"failure_penalty"},
    "clipped": {"lo", "hi"},
    "pie_floor": set(),
    "opt_indicator": {"threshold"},
}


def make_transform(name: str, **params: float) -> RewardTransform:
    """Build a reward transform by name.

    ==============  ==============================================  ==============================================
    name            reward for a speedup ``s``                      failure (``None``)
    ==============  ==============================================  ==============================================
    raw             ``s``                                           0.0
    log             ``ln(s)``                                       ``failure_penalty`` (default ``-ln 10``)
    clipped         ``min(max(s, lo), hi)``, default [0, 10]        ``lo``
    pie_floor       ``max(s, 1.0)`` (PIE ``gem5_eval.py``)          1.0 (PIE counts failures as 1.0)
    opt_indicator   ``1.0 if s >= threshold else 0.0`` (1.10)        0.0
    ==============  ==============================================  ==============================================

    Raises ``ValueError`` for an unknown name, an unknown parameter, or invalid bounds.
    """
    if name not in TRANSFORMS:
        raise ValueError(f"unknown reward transform {name!r}; known: {', '.join(TRANSFORMS)}")
    unknown = set(params) - _PARAMS[name]
    if unknown:
        raise ValueError(f"transform {name!r} takes {sorted(_PARAMS[name]) or 'no parameters'}, got {sorted(unknown)}")
    return TRANSFORMS[name](**params)


def apply_reward(speedup: float | None, transform: str = "raw", **params: float) -> float:
    """``make_transform(transform, **params)(speedup)``: the reward for one candidate. ``speedup`` is the ratio
    src/candidate (> 0, finite) or ``None`` when the candidate failed correctness. Raises ``ValueError`` as
    :func:`make_transform` and :class:`RewardTransform` do."""
    return make_transform(transform, **params)(speedup)
