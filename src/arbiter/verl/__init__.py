"""verl reward plug-in: :func:`compute_score` and friends (:mod:`arbiter.verl.reward`),
``data_source`` routing (:mod:`arbiter.verl.routing`), code-block extraction
(:mod:`arbiter.verl.extract`).

verl config: ``custom_reward_function.path=pkg://arbiter.verl.reward``,
``custom_reward_function.name=compute_score`` (or ``compute_score_batch`` with
``reward_model.reward_manager=batch``, or ``compute_score_async``).
"""

from arbiter.verl.extract import Extraction, extract_code
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
from arbiter.verl.routing import ROUTES, Route, route

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
