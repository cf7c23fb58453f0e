"""open-r1's ``code_reward`` contract: :func:`code_reward` (a drop-in for ``open_r1.rewards.code_reward``).

open-r1 (through TRL) calls ``code_reward(completions, **kwargs)`` with conversational completions
and the dataset's ``verification_info`` column: ``{"language": "python", "test_cases": [{"input",
"output"[, "type"]}]}`` per row. The test cases become the card's ``stdin_stdout`` ground truth
and are judged as ``compute_score`` judges that row (``data_source`` from the dataset's column when
it has one, else ``code``); arbiter's own verl columns (``reward_model``, ``extra_info``) are used
instead when the dataset has them. Returns one score per completion.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from arbiter.integrations.scoring import message_text, score_items, split_options

#: open-r1's own keyword options, accepted and not used (arbiter judges in its own sandbox).
OPEN_R1_OPTIONS = ("num_parallel", "provider_type", "enforce_same_language")


def ground_truth(info: Any, k: int = 0) -> str:
    """The ``stdin_stdout`` ground truth (JSON text) of one ``verification_info``. Raises
    ``ValueError`` naming the row for a language other than Python or a row without test cases."""
    if not isinstance(info, dict) or not isinstance(info.get("test_cases"), list):
        raise ValueError(f"arbiter open-r1 reward: verification_info[{k}] has no test_cases list")
    language = str(info.get("language") or "python").lower()
    if language not in ("python", "python3", "py"):
        raise ValueError(f"arbiter open-r1 reward: verification_info[{k}] is {language}; arbiter judges Python here")
    cases = []
    for case in info["test_cases"]:
        if case.get("type", "stdin_stdout") != "stdin_stdout":
            raise ValueError(f"arbiter open-r1 reward: verification_info[{k}]: a {case.get('type')!r} case; "
                             f"open-r1's code_reward runs stdin/stdout cases only")
        cases.append({"type": "stdin_stdout", "input": case["input"], "output": case["output"]})
    return json.dumps(cases, ensure_ascii=False)


def make_code_reward(**options: Any) -> Callable[..., list[float]]:
    """An open-r1 ``code_reward`` scoring with arbiter (``options``: ``compute_score``'s, plus ``url``, ``pool``)."""
    url, pool, opts = split_options(options)

    def code_reward(completions: list, **kwargs: Any) -> list[float]:
        n = len(completions)
        sources = kwargs.get("data_source") or ["code"] * n
        if kwargs.get("reward_model") is not None:
            truths = [rm.get("ground_truth") for rm in kwargs["reward_model"]]
        else:
            truths = [ground_truth(info, k) for k, info in enumerate(kwargs["verification_info"])]
        extras = kwargs.get("extra_info") or [None] * n
        items = list(zip(sources, map(message_text, completions), truths, extras, strict=True))
        return [r["score"] for r in score_items(items, url, pool, opts, options)]

    code_reward.__name__ = "code_reward"
    return code_reward


code_reward = make_code_reward()

__all__ = ["OPEN_R1_OPTIONS", "code_reward", "ground_truth", "make_code_reward"]
