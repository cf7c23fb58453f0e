"""Many responses scored as ``compute_score`` scores each, judged together on the shared judge pool.

:func:`score_items` prepares every ``(data_source, solution_str, ground_truth, extra_info)`` item
(:func:`arbiter.rewards.codegen.prepare`), judges the programs on :func:`arbiter.verl.judges.judges_for`
(the node pool inside Ray, else this process, one judge per core) and finishes each result
(:func:`arbiter.rewards.codegen.finish`), raising what ``compute_score`` raises for the first item
that raises; with ``url=`` (or ``ARBITER_URL``) an ``arbiter serve`` scores them instead.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from arbiter.rewards.codegen import RewardOptions, RewardResult, finish, prepare
from arbiter.verl.judges import POOL_CHOICES, judges_for


def _run(coro: Any) -> Any:
    """Run ``coro`` to its end from synchronous code, on this thread or, when an event loop is
    already running here (a notebook, an async trainer), on a thread of its own."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)
    with ThreadPoolExecutor(max_workers=1) as one:
        return one.submit(asyncio.run, coro).result()


def split_options(options: dict[str, Any]) -> tuple[str, str, RewardOptions]:
    """``(url, pool, reward options)`` of an adapter's keyword options, validated at once (a
    misspelt option fails when the reward function is made, not at the first step)."""
    kw = dict(options)
    url = kw.pop("url", None) or os.environ.get("ARBITER_URL", "")
    pool = kw.pop("pool", "auto")
    if pool not in POOL_CHOICES:
        raise ValueError(f"arbiter pool must be one of {POOL_CHOICES}, got {pool!r}")
    return url, pool, RewardOptions.from_kwargs(kw)


def score_items(items: Sequence[tuple], url: str, pool: str, opts: RewardOptions,
                raw_options: dict[str, Any]) -> list[RewardResult]:
    """``compute_score`` of each item, in order (see the module docstring)."""
    items = list(items)
    if not items:
        return []
    if url:
        from arbiter.client import shared_client  # compute_score's own client (one per URL and process)

        return shared_client(url).score(items, {k: v for k, v in raw_options.items() if k not in ("url", "pool")})
    preps = [prepare(*item, opts) for item in items]
    todo = [p for p in preps if p.task is not None]
    verdicts = _run(judges_for(pool).judge([p.task for p in todo], [p.hint for p in todo], opts.step)) if todo else []
    by_prep = {id(p): v for p, v in zip(todo, verdicts, strict=True)}
    return [finish(p, by_prep.get(id(p)), opts) for p in preps]


def message_text(completion: Any) -> Any:
    """The text of a completion: a string as is; a conversation (a list of messages) its last
    message's ``content`` (text parts joined when the content is a list of parts)."""
    if isinstance(completion, list) and completion and isinstance(completion[-1], dict):
        content = completion[-1].get("content")
        if isinstance(content, list):
            return "".join(p.get("text", "") for p in content if isinstance(p, dict) and p.get("type") == "text")
        return content
    return completion


__all__ = ["message_text", "score_items", "split_options"]
