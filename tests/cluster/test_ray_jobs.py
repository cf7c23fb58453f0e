"""``arbiter score --ray`` on a real two-node Ray cluster (``ray.cluster_utils.Cluster``): the same files as
the local run (timing fields dropped), every item exactly once when a node's judge pool is killed mid-run,
the pool's cap on judges at once, and a resumed Ray run adds nothing twice."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

ray = pytest.importorskip("ray")

from cluster.ray_rows import arbiter, make_inputs, two_node_cluster, without_timing  # noqa: E402

from arbiter.cluster.pool import pool_name  # noqa: E402

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
