"""The PIE reward: the correctness-gated, re-timed speedup of a candidate rewrite of a PIE source program
(:func:`pie_reward`, a stage list in :mod:`arbiter.rewards.pie.reward`) and its transforms. See ``docs/pie.md``.
"""

from arbiter.rewards.pie.measure import SrcCountCache
from arbiter.rewards.pie.options import DEFAULT_LIMITS, MAX_REPEATS, check_reward_options
from arbiter.rewards.pie.result import (
    DATASET_DEFECT, MEASURE_MISMATCH, NATIVE_CONTRADICTS, UNMEASURABLE, PieRewardResult,
)
from arbiter.rewards.pie.reward import pie_reward
from arbiter.rewards.pie.transforms import TRANSFORMS, RewardTransform, apply_reward, make_transform

__all__ = [
    "DATASET_DEFECT",
    "DEFAULT_LIMITS",
    "MAX_REPEATS",
    "MEASURE_MISMATCH",
    "NATIVE_CONTRADICTS",
    "TRANSFORMS",
    "UNMEASURABLE",
    "PieRewardResult",
    "RewardTransform",
    "SrcCountCache",
    "apply_reward",
    "check_reward_options",
    "make_transform",
    "pie_reward",
]
