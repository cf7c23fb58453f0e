"""Every door of the codegen reward gives compute_score's result and marks a reused verdict: a
batch holding a response and the same program in other prose (a GRPO group's repeat) judges the
program once and answers the repeat with ``cached: true`` and otherwise the very same fields.
Doors: compute_score, compute_score_async, compute_score_batch, the verl manager's batcher, the
per-node pool (its class, in process; tests/cluster and tests/verl run it under Ray),
``arbiter score`` with a verdict folder, and ``/v1/score`` of ``arbiter serve``."""

from __future__ import annotations

import asyncio
import json
import uuid

import pytest

from arbiter.rewards.codegen import RESULT_KEYS, RewardOptions
from arbiter.verl.batcher import RewardBatcher
from arbiter.verl.judges import LocalJudges
from arbiter.verl.reward import compute_score, compute_score_async, compute_score_batch

EXACT = ("score", "verdict", "passed", "total", "reason", "warning")
#: The suite's case order, so a wrong response's passed count and reason do not depend on what the
#: process learned before (failures first: docs/step.md); reuse stays on.
SUITE = {"case_order": "suite"}


def group() -> list[tuple]:
    """A fresh suite (never judged in this process) and responses: right, wrong, the wrong one
    again in other prose, no code, the right one again."""
    tag = uuid.uuid4().hex
    gt = json.dumps({"inputs": [f"{i} {i + 1}\n{tag}\n" for i in range(6)],
                     "outputs": [f"{2 * i + 1}\n" for i in range(6)]})
    right = f"```python\na, b = map(int, input().split())\nprint(a + b)  # {tag}\n```"
    wrong = f"```python\na, b = map(int, input().split())\nprint(a + b if a != 3 else 0)  # {tag}\n```"
    texts = [right, wrong, f"Let me think.\n\n{wrong}\nDone.", "no code at all", f"Sure:\n{right}"]
    return [("code_taco", t, gt, {"index": f"{tag}-{i}"}) for i, t in enumerate(texts)]


CACHED = [False, False, True, False, True]


def check(results: list[dict], reference: list[dict]) -> None:
    for got, want in zip(results, reference, strict=True):
        assert tuple(got) == RESULT_KEYS
        assert {k: got[k] for k in EXACT} == {k: want[k] for k in EXACT}
    assert [r["cached"] for r in results] == CACHED
    assert [r["verdict"] for r in results] == ["AC", "WA", "WA", "FORMAT_ERROR", "AC"]


def reference(items) -> list[dict]:
    """compute_score one by one, nothing reused."""
    return [compute_score(*item, reuse=False, **SUITE) for item in items]


def test_compute_score_and_its_async_form():
    items = group()
    check([compute_score(*i, **SUITE) for i in items], reference(items))
    items = group()

    async def all_at_once():
        return [await compute_score_async(*i, **SUITE) for i in items]

    check(asyncio.run(all_at_once()), reference(items))


def test_compute_score_batch():
    items = group()
    got = compute_score_batch(*[list(x) for x in zip(*items)], **SUITE)
    check(got, reference(items))
    default = compute_score_batch(*[list(x) for x in zip(*group())])  # failures first: the same scores
    assert [r["score"] for r in default] == [r["score"] for r in got] and [r["cached"] for r in default] == CACHED
    off = compute_score_batch(*[list(x) for x in zip(*items)], reuse=False, case_order="suite", schedule="fifo")
    assert [r["cached"] for r in off] == [False] * 5 and [r["score"] for r in off] == [r["score"] for r in got]


def test_the_verl_managers_batcher():
    items = group()
    batcher = RewardBatcher(LocalJudges(), RewardOptions(**SUITE))

    async def run():
        return await asyncio.gather(*(batcher.score(i) for i in items))

    check(asyncio.run(run()), reference(items))
    assert batcher.batches == [len(items)]


def test_the_node_pool_in_process():
    from arbiter.cluster.pool import JudgePool

    pool = JudgePool("in-process", 2)
    items = group()
    check(pool.score_batch(*[list(x) for x in zip(*items)], **SUITE), reference(items))
    st = pool.stats()
    assert st["hits"] + st["joined"] == 2 and st["done"] == 2 and 1 <= st["max_busy"] <= 2


def test_arbiter_score_with_a_verdict_folder(tmp_path):
    from arbiter.pipelines.codegen import score_completions
    from arbiter.rewards.codegen import RewardOptions

    items = group()
    rows = [{"data_source": "code_taco", "prompt": [{"role": "user", "content": "add"}], "ability": "code",
             "reward_model": {"style": "rule", "ground_truth": items[0][2]}, "extra_info": {"index": "r0"}}]
    (tmp_path / "rows.jsonl").write_text(json.dumps(rows[0]) + "\n")
    (tmp_path / "c.jsonl").write_text(json.dumps({"index": "r0", "responses": [i[1] for i in items]}) + "\n")
    folder = tmp_path / "verdicts"
    for out in ("first", "second"):  # a second run into another folder reuses the first's verdicts
        run = score_completions(tmp_path / "rows.jsonl", tmp_path / "c.jsonl", tmp_path / out, verdict_cache=folder,
                                reward=RewardOptions(**SUITE))
        assert run.judged == 5
    first, second = ([{k: v for k, v in json.loads(x).items() if k in RESULT_KEYS}
                      for x in (tmp_path / o / "verdicts.jsonl").read_text().splitlines()] for o in ("first", "second"))
    check(first, reference(items))
    assert [r["cached"] for r in second] == [True, True, True, False, True]
    assert [{k: r[k] for k in EXACT} for r in second] == [{k: r[k] for k in EXACT} for r in first]


def test_the_services_v1_score():
    pytest.importorskip("httpx")
    from live_server import LiveServer

    from arbiter.client import Client

    server = LiveServer()
    try:
        items = group()
        check(Client(server.url).score(items, SUITE), reference(items))
    finally:
        assert server.stop() == 0
