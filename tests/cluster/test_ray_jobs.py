"""``arbiter score --ray`` on a real two-node Ray cluster (``ray.cluster_utils.Cluster``): the same files as
the local run (timing fields dropped), every item exactly once when a node's judge pool is killed mid-run,
the pool's cap on judges at once, and a resumed Ray run adds nothing twice. On the same cluster: a
detached pool of another arbiter is never used, and the trainer adapters judging on the node pool
(``pool="node"``, in the driver and in a Ray task) give ``compute_score``'s scores."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

ray = pytest.importorskip("ray")

from cluster.ray_rows import arbiter, fence, make_inputs, two_node_cluster, without_timing  # noqa: E402

from arbiter.cluster.pool import NAME_PREFIX, NAMESPACE, JudgePool, code_version, node_pool, pool_name  # noqa: E402
from arbiter.rewards.codegen import RewardOptions, prepare  # noqa: E402
from arbiter.verl.judges import judges_for  # noqa: E402
from arbiter.verl.reward import compute_score  # noqa: E402

FILES = ("verdicts.jsonl", "problems.jsonl", "summary.json")


@pytest.fixture(scope="module")
def cluster():
    c = two_node_cluster()
    yield c
    ray.shutdown()
    c.shutdown()


@pytest.fixture(scope="module")
def inputs(shared: Path, tmp_path_factory):
    work = tmp_path_factory.mktemp("ray_score")
    dataset, completions, expected = make_inputs(shared, work)
    local = work / "local"
    arbiter("score", "--dataset", str(dataset), "--completions", str(completions), "--out", str(local), "--quiet")
    return dataset, completions, expected, local


def _score_args(inputs, out: Path, address: str) -> list[str]:
    dataset, completions, _, _ = inputs
    return ["score", "--dataset", str(dataset), "--completions", str(completions), "--out", str(out), "--quiet",
            "--ray", address]


def test_two_nodes_give_the_local_files(cluster, inputs, tmp_path):
    out = tmp_path / "ray"
    arbiter(*_score_args(inputs, out, cluster.address))
    for name in FILES:
        assert without_timing(out / name) == without_timing(inputs[3] / name), name
    summary = json.loads((out / "summary.json").read_text())
    assert len(summary["cluster"]["nodes"]) == 2 and summary["cluster"]["retries"] == 0
    scores = {r["key"]: r["score"] for r in map(json.loads, (out / "verdicts.jsonl").read_text().splitlines())}
    assert scores == inputs[2]
    pools = [ray.get_actor(pool_name(n["NodeID"]), namespace="arbiter") for n in ray.nodes() if n["Alive"]]
    stats = ray.get([p.stats.remote() for p in pools])
    assert all(s["cores"] == 1 and 1 <= s["max_busy"] <= 1 and s["done"] > 0 for s in stats), stats
    records = [json.loads(x) for x in (out / "verdicts.jsonl").read_text().splitlines()]
    run_now = [r for r in records if r["verdict"] != "FORMAT_ERROR" and not r["cached"]]  # copies are reused
    assert sum(s["done"] for s in stats) >= len(run_now) > 0
    arbiter(*_score_args(inputs, out, cluster.address))  # a rerun: everything already done, nothing added
    assert without_timing(out / "verdicts.jsonl") == without_timing(inputs[3] / "verdicts.jsonl")


def test_a_pool_killed_mid_run_loses_and_duplicates_nothing(cluster, inputs, tmp_path):
    out = tmp_path / "killed"
    proc = subprocess.Popen([sys.executable, "-m", "arbiter.cli.main", *_score_args(inputs, out, cluster.address)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    verdicts = out / "verdicts.jsonl"
    deadline = time.monotonic() + 300
    victim = None
    while victim is None:  # a pool judging an item right now, after the run wrote its first verdicts
        assert time.monotonic() < deadline and proc.poll() is None, "the run ended before a pool could be killed"
        if verdicts.exists() and len(verdicts.read_text().splitlines()) >= 3:
            pools = [ray.get_actor(pool_name(n["NodeID"]), namespace="arbiter") for n in ray.nodes() if n["Alive"]]
            busy = [p for p, s in zip(pools, ray.get([p.stats.remote() for p in pools])) if s["busy"] >= 1]
            victim = busy[0] if busy else None
        time.sleep(0.02)
    ray.kill(victim, no_restart=True)
    _, err = proc.communicate(timeout=600)
    assert proc.returncode == 0, err[-3000:]
    keys = [json.loads(x)["key"] for x in verdicts.read_text().splitlines()]
    assert sorted(keys) == sorted(inputs[2]) and len(keys) == len(set(keys))
    assert without_timing(verdicts) == without_timing(inputs[3] / "verdicts.jsonl")
    summary = json.loads((out / "summary.json").read_text())
    assert [n["alive"] for n in summary["cluster"]["nodes"]].count(False) == 1
    assert summary["cluster"]["retries"] >= 1 and summary["overall"]["responses"] == len(inputs[2])


def _rows(path: Path) -> list[dict]:
    return [json.loads(x) for x in path.read_text().splitlines()] if path.exists() else []


def _decided(path: Path) -> list[str]:
    """The rows of an oracle output file without their timing (``timing``, ``verification.runtime_ms``), sorted."""
    out = []
    for r in _rows(path):
        r.pop("timing", None)
        (r.get("verification") or {}).pop("runtime_ms", None)
        out.append(json.dumps(r, sort_keys=True))
    return sorted(out)


def test_oracle_verify_on_ray_accepts_and_rejects_the_demo_rows(cluster, tmp_path):
    data = Path(__file__).resolve().parents[2] / "data" / "oracle"
    args = ["oracle", "verify", "--seeds", str(data / "seeds.jsonl"), "--returns", str(data / "returns.jsonl"),
            "--hidden", str(data / "hidden_tests.json"), "--generators", str(data / "generators"),
            "--no-rows", "--no-progress", "--cache-dir", str(tmp_path / "cache")]
    arbiter(*args, "--out", str(tmp_path / "local"))
    arbiter(*args, "--out", str(tmp_path / "ray"), "--ray", cluster.address)
    for name in ("verified.jsonl", "rejected.jsonl", "sft.jsonl", "best.jsonl"):
        assert _decided(tmp_path / "ray" / name) == _decided(tmp_path / "local" / name), name
    assert len(_rows(tmp_path / "ray" / "verified.jsonl")) == 7 and len(_rows(tmp_path / "ray" / "rejected.jsonl")) == 24
    report = json.loads((tmp_path / "ray" / "report.json").read_text())
    assert len(report["cluster"]["nodes"]) == 2 and report["cluster"]["retries"] == 0


def test_a_detached_pool_of_another_arbiter_never_judges_for_this_one(cluster, inputs):
    """Pools left by an older arbiter (named before code digests existed, or with another digest)
    stay idle: this arbiter's node pool is another actor, and the judging goes there."""
    node = ray.get_runtime_context().get_node_id()
    other = "0" * 16 if code_version() != "0" * 16 else "1" * 16
    stale = [ray.remote(JudgePool).options(name=name, namespace=NAMESPACE, lifetime="detached", num_cpus=0).remote(node, 1)
             for name in (NAME_PREFIX + node, f"{NAME_PREFIX}{other}-{node}")]
    try:
        stale_pids = {s["pid"] for s in ray.get([p.stats.remote() for p in stale])}  # alive, named as another arbiter's
        mine = ray.get(node_pool().stats.remote())
        assert mine["code_version"] == code_version() and mine["pid"] not in stale_pids
        rows = [json.loads(x) for x in inputs[0].read_text().splitlines()][:2]
        tasks = [prepare(r["data_source"], fence(r["extra_info"]["reference_solutions"][0]),
                         r["reward_model"]["ground_truth"], r["extra_info"], RewardOptions()).task for r in rows]
        verdicts = asyncio.run(judges_for("node").judge(tasks))
        assert [v.outcome.value for v in verdicts] == ["AC", "AC"]
        assert [s["done"] for s in ray.get([p.stats.remote() for p in stale])] == [0, 0]
    finally:
        for p in stale:
            ray.kill(p, no_restart=True)


def test_trainer_adapters_on_the_node_pool_give_compute_scores_scores(cluster, shared, tmp_path):
    """TRL's, OpenRLHF's and open-r1's reward functions with ``pool="node"``: in the driver, and in a
    Ray task (where OpenRLHF's and verl's reward code runs), each judged on its node's pool."""
    from test_adapters import cases, trl_call

    from arbiter.integrations.open_r1 import make_code_reward
    from arbiter.integrations.openrlhf import label, make_reward_func
    from arbiter.integrations.trl import reward_function

    items = cases(shared, tmp_path)
    expected = [compute_score(r["data_source"], t, r["reward_model"]["ground_truth"], r["extra_info"])["score"]
                for r, t in items]
    programs = sum(1 for r, t in items if prepare(r["data_source"], t, r["reward_model"]["ground_truth"],
                                                    r["extra_info"], RewardOptions()).task is not None)
    assert 0.0 in expected and 1.0 in expected and programs

    def all_three(items):
        prompts = ["P:"] * len(items)
        return [trl_call(reward_function(pool="node"), items),
                list(make_reward_func(pool="node")([p + t for p, (_, t) in zip(prompts, items)], prompts,
                                                  [label(r) for r, _ in items])["scores"]),
                make_code_reward(pool="node")([t for _, t in items], data_source=[r["data_source"] for r, _ in items],
                                              reward_model=[r["reward_model"] for r, _ in items],
                                              extra_info=[r["extra_info"] for r, _ in items])]

    pool = node_pool()

    def asked() -> int:  # programs the pool's step judge answered: judged, reused or joined to a run
        st = ray.get(pool.stats.remote())
        return st["done"] + st["hits"] + st["joined"]

    before = asked()
    assert all_three(items) == [expected] * 3
    assert asked() - before == 3 * programs  # every program answered by the node's pool
    import test_adapters
    from ray import cloudpickle

    cloudpickle.register_pickle_by_value(test_adapters)  # the task's helpers travel with it (tests/ is no package)
    in_task = ray.remote(num_cpus=0)(all_three)
    assert ray.get(in_task.remote(items)) == [expected] * 3
