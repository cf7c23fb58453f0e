"""Reward transforms of a PIE speedup (``raw``, ``log``, ``clipped``, ``pie_floor``, ``opt_indicator``): a
speedup, or ``None`` for a failed candidate, to a reward.
Table and sources: ``docs/pie.md`` ("The card's reward and the transforms").
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

from arbiter.datasets.pie.card import OPT_THRESHOLD


#: Default bounds of the ``clipped`` transform (see :func:`make_transform`).
DEFAULT_CLIP_LO = 0.0


DEFAULT_CLIP_HI = 10.0


#: Default failure reward of the ``log`` transform: ln(1/10), i.e. a failure scores like a correct program 10x
#: slower than its source.
DEFAULT_LOG_FAILURE_PENALTY = -math.log(10.0)


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
