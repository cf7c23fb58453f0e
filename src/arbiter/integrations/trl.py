"""TRL's ``GRPOTrainer`` reward function: :func:`reward_function` (or the ready-made :func:`arbiter_reward`).

TRL calls a reward function with ``prompts``, ``completions`` (strings, or conversations: lists of
messages, for chat datasets), ``completion_ids`` and every other dataset column as a keyword
argument holding one value per completion. On arbiter's verl rows those columns are
``data_source``, ``reward_model`` and ``extra_info``; the function returns ``compute_score``'s score
for each completion and logs the verdicts to TRL's completions table (``arbiter_verdict``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from arbiter.integrations.scoring import message_text, score_items, split_options


def _column(columns: dict[str, Any], name: str, n: int) -> list:
    values = columns.get(name)
    if values is None:
        raise ValueError(f"arbiter TRL reward: the dataset has no {name!r} column (TRL passes every column but "
                         f"prompt/completion; arbiter's verl rows have data_source, reward_model, extra_info)")
    values = list(values)
    if len(values) != n:
        raise ValueError(f"arbiter TRL reward: column {name!r} has {len(values)} values for {n} completions")
    return values


def reward_function(**options: Any) -> Callable[..., list[float]]:
    """A TRL reward function scoring with arbiter. ``options``: ``compute_score``'s keyword
    options, plus ``url`` (score through ``arbiter serve``) and ``pool`` (``auto``|``node``|``process``)."""
    url, pool, opts = split_options(options)

    def arbiter_reward(prompts: list, completions: list, completion_ids: list | None = None,
                       **columns: Any) -> list[float]:
        n = len(completions)
        truths = [rm.get("ground_truth") if isinstance(rm, dict) else None
                  for rm in _column(columns, "reward_model", n)]
        extras = columns.get("extra_info") or [None] * n
        items = list(zip(_column(columns, "data_source", n), map(message_text, completions), truths, extras))
        results = score_items(items, url, pool, opts, options)
        log_extra = columns.get("log_extra")
        if callable(log_extra):
            log_extra("arbiter_verdict", [r["verdict"] for r in results])
        return [r["score"] for r in results]

    arbiter_reward.__name__ = "arbiter_reward"
    return arbiter_reward


#: The reward function with ``compute_score``'s default options.
arbiter_reward = reward_function()

__all__ = ["arbiter_reward", "reward_function"]
