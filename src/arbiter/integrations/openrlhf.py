"""OpenRLHF's custom reward function: ``--remote_rm_url`` naming this file, ``--label_key`` a column
made by :func:`label`.

OpenRLHF loads ``reward_func`` from the Python file given as ``--remote_rm_url`` and calls it with
``queries`` (prompt and response decoded together, special tokens kept), ``prompts`` (the prompt
text) and ``labels`` (the ``--label_key`` column). The label of a verl row is :func:`label`'s JSON
text (``data_source``, ``ground_truth``, ``extra_info``); the response is the query after its
prompt. Returns ``{"rewards", "scores", "extra_logs"}`` with ``compute_score``'s scores.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

from arbiter.integrations.scoring import score_items, split_options


def label(row: Mapping[str, Any]) -> str:
    """The OpenRLHF label of a verl row (a dict as ``datasets`` gives it): JSON text of its
    ``data_source``, ``reward_model.ground_truth`` and ``extra_info``. Add it as a column, e.g.
    ``ds.map(lambda row: {"arbiter_label": label(row)})``, and pass ``--label_key arbiter_label``."""
    rm = row.get("reward_model") or {}
    return json.dumps({"data_source": row.get("data_source"), "ground_truth": rm.get("ground_truth"),
                       "extra_info": row.get("extra_info")}, ensure_ascii=False, default=str)


def _item(query: str, prompt: str, text: Any, k: int) -> tuple:
    try:
        got = json.loads(text) if isinstance(text, str) else dict(text)
    except (ValueError, TypeError) as exc:
        raise ValueError(f"arbiter OpenRLHF reward: labels[{k}] is not arbiter.integrations.openrlhf.label's JSON "
                         f"({exc})") from None
    if not isinstance(got, dict) or "ground_truth" not in got:
        raise ValueError(f"arbiter OpenRLHF reward: labels[{k}] has no ground_truth: make the label column with "
                         f"arbiter.integrations.openrlhf.label(row)")
    if not isinstance(query, str) or not isinstance(prompt, str) or not query.startswith(prompt):
        raise ValueError(f"arbiter OpenRLHF reward: queries[{k}] does not start with prompts[{k}]; the response "
                         f"cannot be told from the prompt (which may hold a code block of its own)")
    return got.get("data_source"), query[len(prompt):], got["ground_truth"], got.get("extra_info")


def make_reward_func(**options: Any) -> Callable[..., dict]:
    """An OpenRLHF ``reward_func`` scoring with arbiter (``options``: ``compute_score``'s, plus
    ``url`` and ``pool``; to use them, name a file holding ``reward_func = make_reward_func(...)``)."""
    url, pool, opts = split_options(options)

    def reward_func(queries: list, prompts: list, labels: list, **_: Any) -> dict:
        items = [_item(q, p, t, k) for k, (q, p, t) in enumerate(zip(queries, prompts, labels, strict=True))]
        scores = [r["score"] for r in score_items(items, url, pool, opts, options)]
        try:
            import torch
        except ImportError:  # OpenRLHF always has torch; plain lists elsewhere
            return {"rewards": scores, "scores": scores, "extra_logs": {}}
        tensor = torch.tensor(scores, dtype=torch.float)
        return {"rewards": tensor, "scores": tensor, "extra_logs": {"arbiter_acc": tensor.clone()}}

    return reward_func


#: What OpenRLHF loads from this file (``--remote_rm_url <path of this file>``): default options.
reward_func = make_reward_func()

__all__ = ["label", "make_reward_func", "reward_func"]
