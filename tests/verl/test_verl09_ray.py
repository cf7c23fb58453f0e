"""verl 0.9.1's Ray reward-loop actors with arbiter's manager (run by the verl venv's python; from
the main venv test_verl09_venv.py runs it there): ``reward.num_workers=8`` actors on one node
with 2 judge slots share the node's judge pool, so at most 2 judges run at once (counted by the
pool itself), and every reward matches the single-process ``compute_score`` run."""

from __future__ import annotations

import os
import time

import pytest

pytest.importorskip("verl.experimental.reward_loop", reason="needs verl 0.9 (the verl venv: scripts/verl_venv.sh; "
                    "test_verl09_venv.py runs these tests there)")

import numpy as np  # noqa: E402
import ray  # noqa: E402

from test_verl09_reward_loop import (EXACT_KEYS, MANAGER_OVERRIDES, compose_config, expected_results,  # noqa: E402
                                     make_dataproto, make_tokenizer, real_items)

ACTORS = 8
SLOTS = 2  # the node's cores as Ray advertises them to the pool (at most this machine's cores)


@pytest.fixture(scope="module")
def local_ray():
    # Ray's CPU resource lets the 8 reward actors (1 CPU each for placement) start; the judge pool
    # takes its slots from the machine's cores, here at most 2.
    assert len(os.sched_getaffinity(0)) >= 1
    # address="local": a new cluster of our own, never one another process on this machine started.
    # Ray waits a fixed 30 s for its raylet; on a loaded machine that can pass: start again.
    for attempt in range(3):
        try:
            ray.init(address="local", num_cpus=ACTORS, include_dashboard=False, log_to_driver=False,
                     namespace="verl-test")
            break
        except Exception as exc:  # "The current node timed out during startup"
            ray.shutdown()
            if attempt == 2 or "timed out during startup" not in str(exc):
                raise
    yield
    ray.shutdown()


def test_eight_reward_actors_share_one_node_pool(local_ray, shared, tmp_path):
    from verl.experimental.reward_loop import RewardLoopManager
    from verl.utils import hf_tokenizer

    from arbiter.cluster.pool import pool_on

    (tmp_path / "rows").mkdir()
    items = real_items(shared, tmp_path / "rows")
    expected = expected_results(items)  # the single-process run
    tokenizer_dir = make_tokenizer(tmp_path / "tokenizer")
    config = compose_config(MANAGER_OVERRIDES + [f"reward.num_workers={ACTORS}",
                                                 "+reward.custom_reward_function.reward_kwargs.pool=node"],
                            tokenizer_dir)
    started = time.monotonic()
    manager = RewardLoopManager(config)  # its actors create the node's pool (or find it)
    assert len(manager.reward_loop_workers) == ACTORS
    ray.get([w.__ray_ready__.remote() for w in manager.reward_loop_workers])
    print(f"\n{ACTORS} reward-loop actors up in {time.monotonic() - started:.1f}s")
    data = make_dataproto(items, hf_tokenizer(str(tokenizer_dir)))
    started = time.monotonic()
    out = manager.compute_rm_score(data)
    print(f"{len(items)} responses scored by {ACTORS} actors in {time.monotonic() - started:.1f}s")

    cores = min(SLOTS, len(os.sched_getaffinity(0)))
    stats = ray.get(pool_on(ray.get_runtime_context().get_node_id()).stats.remote())
    # verl pads the batch to a multiple of the actors with copies of its first rows: those are judged too
    padded = list(range(len(items))) + list(range((-len(items)) % ACTORS))
    judged = sum(1 for i in padded if expected[i]["verdict"] not in ("FORMAT_ERROR", "INVALID_TASK"))
    # every judged response is run once by the pool, or reused from an identical one (verl's padding copies)
    assert stats["cores"] == cores and stats["done"] + stats["hits"] + stats["joined"] == judged, stats
    assert 1 <= stats["max_busy"] <= cores, stats  # 8 actors, never more than `cores` judges at once
    # every reward and reward_extra_info value as compute_score gave it in one process
    scores = out.batch["rm_scores"].sum(dim=1).tolist()
    assert scores == [r["score"] for r in expected]
    assert set(EXACT_KEYS) <= set(out.meta_info["reward_extra_keys"])
    for key in EXACT_KEYS:
        assert list(out.non_tensor_batch[key]) == [r[key] for r in expected], key
    assert np.all(out.non_tensor_batch["seconds"].astype(float) >= 0)


# ------------------------------------------------------------------ verl's agent loop (the trainer's path)


def _agent_loop_worker(handles, tokenizer):
    """verl's own ``AgentLoopWorker`` holding the reward-loop actors' handles, as the trainer makes
    it, less what scoring never touches (LLM servers, tools, the model config): ``_compute_score``
    reads only these attributes."""
    from verl.experimental.agent_loop.agent_loop import AgentLoopWorker

    worker = object.__new__(AgentLoopWorker)
    worker.reward_loop_worker_handles = handles
    worker.tokenizer, worker.processor, worker.mm_processor_kwargs = tokenizer, None, {}
    return worker


def _agent_loop_scores(worker, items, tokenizer) -> list[tuple[float, dict]]:
    """Each response through ``AgentLoopWorker._compute_score`` with the row's columns as the
    agent loop hands them over (numpy elements of the batch's non-tensor arrays) and 2 turns."""
    import asyncio

    from verl.experimental.agent_loop.agent_loop import AgentLoopMetrics, AgentLoopOutput

    columns = {"data_source": np.array([r["data_source"] for r, _, _ in items]),
               "reward_model": np.array([r["reward_model"] for r, _, _ in items], dtype=object),
               "extra_info": np.array([r["extra_info"] for r, _, _ in items], dtype=object),
               "index": np.arange(len(items))}

    async def one(i, text):
        ids = tokenizer.encode(text, add_special_tokens=False) + [tokenizer.eos_token_id]
        output = AgentLoopOutput(prompt_ids=[1, 2, 3], response_ids=ids, response_mask=[1] * len(ids), num_turns=2,
                                 metrics=AgentLoopMetrics())
        await worker._compute_score([output], kwargs={k: v[i] for k, v in columns.items()})
        return output.reward_score, output.extra_fields["reward_extra_info"]

    async def every():
        return await asyncio.gather(*(one(i, text) for i, (_, text, _) in enumerate(items)))

    return asyncio.run(every())


@pytest.mark.parametrize("form", ["local", "url"])
def test_agent_loop_compute_score_matches_compute_score(local_ray, shared, tmp_path, form):
    """verl's agent loop adds a numpy ``num_turns`` (and ``rollout_reward_scores``) to
    ``extra_info`` before calling the reward function: the function form scores in-process and
    through ``url=`` exactly as ``compute_score`` does."""
    from live_server import LiveServer
    from verl.experimental.reward_loop import RewardLoopManager
    from verl.utils import hf_tokenizer

    from test_verl09_reward_loop import FUNCTION_OVERRIDES

    (tmp_path / "rows").mkdir()
    items = real_items(shared, tmp_path / "rows")[::2]
    expected = expected_results(items)
    tokenizer_dir = make_tokenizer(tmp_path / "tokenizer")
    tokenizer = hf_tokenizer(str(tokenizer_dir))
    server = LiveServer() if form == "url" else None
    try:
        extra = [f"+reward.custom_reward_function.reward_kwargs.url={server.url}"] if server else []
        config = compose_config(FUNCTION_OVERRIDES + ["reward.num_workers=2"] + extra, tokenizer_dir)
        manager = RewardLoopManager(config)
        got = _agent_loop_scores(_agent_loop_worker(manager.reward_loop_workers, tokenizer), items, tokenizer)
        if server:
            assert server.metrics().get('arbiter_request_seconds_count{route="/v1/score"}', 0) >= len(items)
    finally:
        if server:
            server.stop()
        for actor in manager.reward_loop_workers if "manager" in locals() else []:
            ray.kill(actor)
    for (score, info), want, (row, _, kind) in zip(got, expected, items):
        assert score == want["score"], (kind, info, want)
        assert {k: info[k] for k in EXACT_KEYS} == {k: want[k] for k in EXACT_KEYS}, kind
