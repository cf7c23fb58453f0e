"""arbiter's reward-loop manager for verl >= 0.9: :class:`ArbiterRewardManager`.

Loaded by verl's external-manager option (``reward.reward_manager.source=importlib``,
``reward.reward_manager.module.path=pkg://arbiter.verl.reward_loop``,
``reward.reward_manager.name=ArbiterRewardManager``). ``run_single`` decodes the response as
verl's ``naive`` manager does, batches it with the responses arriving meanwhile
(:mod:`arbiter.verl.batcher`) and judges them on the node's shared judge pool
(:mod:`arbiter.verl.judges`). Importing this module needs verl; the rest of arbiter does not.
See ``docs/verl.md``.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

try:
    from verl.experimental.reward_loop.reward_manager.base import RewardManagerBase
except ImportError as exc:  # pragma: no cover - exercised in the main venv, which has no verl
    raise ImportError(f"arbiter.verl.reward_loop is a reward manager for verl >= 0.9 and needs it installed "
                      f"({exc}); without verl use arbiter.verl.reward.compute_score") from exc

from arbiter.rewards.codegen import RESULT_KEYS, RewardOptions
from arbiter.verl.batcher import RewardBatcher
from arbiter.verl.config_check import names_arbiter, warn_once
from arbiter.verl.fileload import adopt
from arbiter.verl.judges import POOL_CHOICES, judges_for

log = logging.getLogger("arbiter.verl")
#: ``reward_extra_info`` keys of every result, always all present (verl builds one column per
#: key from the first result of a step, so a missing key would fail the step).
EXTRA_KEYS = RESULT_KEYS
#: Manager options accepted in ``reward_kwargs`` beside :class:`RewardOptions`'.
MANAGER_OPTIONS = ("pool", "batch_window", "max_batch")


def _plain(value: Any) -> Any:
    """An OmegaConf container as plain Python (verl hands config nodes to managers)."""
    try:
        from omegaconf import OmegaConf
    except ImportError:  # pragma: no cover
        return value
    return OmegaConf.to_container(value, resolve=True) if OmegaConf.is_config(value) else value


def _reward_kwargs(config: Any) -> dict[str, Any]:
    fn = config.reward.get("custom_reward_function") or {}
    return dict(_plain(fn.get("reward_kwargs")) or {})


class ArbiterRewardManager(RewardManagerBase):
    """verl 0.9 reward-loop manager judging with arbiter. Options: ``reward.custom_reward_function.
    reward_kwargs`` (those of ``compute_score``, plus ``pool`` = auto|node|process,
    ``batch_window`` seconds, ``max_batch``). ``run_single`` returns ``{"reward_score",
    "reward_extra_info"}`` with the keys :data:`EXTRA_KEYS`, the values ``compute_score`` gives."""

    def __init__(self, config, tokenizer, compute_score=None, reward_router_address=None,
                 reward_model_tokenizer=None, **_: Any):
        super().__init__(config, tokenizer, compute_score)
        kwargs = _reward_kwargs(config)
        pool = kwargs.pop("pool", "auto")
        window = float(kwargs.pop("batch_window", 0.02))
        max_batch = int(kwargs.pop("max_batch", 256))
        if pool not in POOL_CHOICES:
            raise ValueError(f"arbiter reward_kwargs.pool must be one of {POOL_CHOICES}, got {pool!r}")
        self.options = RewardOptions.from_kwargs(kwargs)  # a misspelt option fails here, at start-up
        path = config.reward.get("custom_reward_function", {}).get("path")
        if path and not names_arbiter(path):
            log.warning("arbiter ArbiterRewardManager: reward.custom_reward_function.path=%r is not arbiter's; "
                        "this manager judges with arbiter and never calls that function", path)
        warn_once(config, "ArbiterRewardManager")
        self.batcher = RewardBatcher(judges_for(pool), self.options, window=window, max_batch=max_batch)

    async def run_single(self, data) -> dict:
        data = data[-1:]  # multi-sequence outputs: the last sequence, as verl's naive manager does
        item = data[0]
        response_ids = item.batch["responses"]
        response_length = response_ids.shape[-1]
        valid_length = item.batch["attention_mask"][-response_length:].sum()
        valid_ids = response_ids[:valid_length]
        loop = asyncio.get_running_loop()  # not self.loop: the loop verl runs us on, whichever it is
        text = await loop.run_in_executor(None, lambda: self.tokenizer.decode(valid_ids, skip_special_tokens=True))
        row = item.non_tensor_batch
        extra_info = row.get("extra_info", None)
        extra_info = dict(extra_info) if isinstance(extra_info, dict) else extra_info
        result = await self.batcher.score((row["data_source"], text, row["reward_model"]["ground_truth"], extra_info))
        return {"reward_score": float(result["score"]), "reward_extra_info": {k: result[k] for k in EXTRA_KEYS}}


adopt(globals(), "arbiter.verl.reward_loop")  # verl may load this file by path: docs/verl.md

__all__ = ["ArbiterRewardManager", "EXTRA_KEYS", "MANAGER_OPTIONS"]
