"""verl reward plug-in: :func:`compute_score` and friends (:mod:`arbiter.verl.reward`), thin
wrappers over :mod:`arbiter.rewards.codegen`; ``data_source`` routing and code extraction are
re-exported from :mod:`arbiter.rewards`.

verl >= 0.9: ``reward.custom_reward_function.path=pkg://arbiter.verl.reward`` with
``name=compute_score`` (or ``compute_score_async``), or the reward-loop manager
:mod:`arbiter.verl.reward_loop` (imported only by verl: it needs verl installed). verl <= 0.8
keys, the per-node judge pool and config checks: ``docs/verl.md``.
"""

from arbiter.rewards.extract import Extraction, extract_code
from arbiter.rewards.routes import ROUTES, Route, route
from arbiter.verl.reward import (
    InvalidTask,
    RewardResult,
    SandboxFailure,
    compute_score,
    compute_score_async,
    compute_score_batch,
    compute_score_batch_async,
    compute_score_float,
)

__all__ = [
    "Extraction",
    "InvalidTask",
    "ROUTES",
    "Route",
    "RewardResult",
    "SandboxFailure",
    "compute_score",
    "compute_score_async",
    "compute_score_batch",
    "compute_score_batch_async",
    "compute_score_float",
    "extract_code",
    "route",
]
