"""Shared by the cluster tests: real converted rows of the shared folder with known-right and known-wrong
responses, the ``arbiter`` CLI, a two-node ``ray.cluster_utils.Cluster`` and the comparison without timing fields."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

TIMING = ("seconds", "judge_seconds", "cpu_seconds", "prep_seconds")
NO_CODE = "I cannot solve this one, sorry."


def arbiter(*args: str, ok: tuple[int, ...] = (0,)) -> subprocess.CompletedProcess:
    r = subprocess.run([sys.executable, "-m", "arbiter.cli.main", *args], capture_output=True, text=True)
    assert r.returncode in ok, (args, r.returncode, r.stdout[-2000:], r.stderr[-3000:])
    return r


def fence(code: str) -> str:
    return f"Here it is.\n\n```python\n{code}\n```\n"


def make_inputs(shared: Path, work: Path, leetcode_rows: int = 5, per_row: int = 4) -> tuple[Path, Path, dict]:
    """APPS (stdin) and LeetCode (call-based) rows converted by ``arbiter convert``, and completions of
    ``per_row`` responses each: the row's own references (right), another row's reference (wrong) and
    a no-code answer. Returns (dataset, completions, {key: expected score})."""
    arbiter("convert", "--from", "apps", str(shared / "realdata/coderl_apps"), "--out", str(work / "apps.jsonl"),
            "--no-measure-references")
    arbiter("convert", "--from", "leetcode", str(shared / "realdata/leetcodedataset/LeetCodeDataset-v0.3.1-test.jsonl.gz"),
            "--out", str(work / "lc.jsonl"), "--no-measure-references")
    rows = [json.loads(x) for x in (work / "apps.jsonl").read_text().splitlines()]
    rows += [json.loads(x) for x in (work / "lc.jsonl").read_text().splitlines()][:leetcode_rows]
    dataset, completions, expected = work / "rows.jsonl", work / "completions.jsonl", {}
    dataset.write_text("".join(json.dumps(r) + "\n" for r in rows))
    refs = [r["extra_info"]["reference_solutions"] for r in rows]
    with open(completions, "w") as f:
        for k, r in enumerate(rows):
            other = refs[(k + 1) % len(rows)][0]
            texts, scores = [], []
            for j in range(per_row):
                kind = j % 3
                texts.append(fence(refs[k][j % len(refs[k])]) if kind == 0 else fence(other) if kind == 1 else NO_CODE)
                scores.append(1.0 if kind == 0 else 0.0)
            key = f"{r['data_source']}:{r['extra_info']['index']}"
            expected.update({f"{key}#{j}": s for j, s in enumerate(scores)})
            f.write(json.dumps({"data_source": r["data_source"], "index": r["extra_info"]["index"],
                                "responses": texts}) + "\n")
    return dataset, completions, expected


def without_timing(path: Path) -> bytes:
    """The file with every timing field dropped (JSONL records, or a JSON summary without its
    ``cluster`` section: the nodes a run used), re-serialised."""
    if path.suffix == ".jsonl":
        recs = [json.loads(x) for x in path.read_text().splitlines()]
        return "".join(json.dumps({k: v for k, v in r.items() if k not in TIMING}) + "\n" for r in recs).encode()
    data = json.loads(path.read_text())
    data.pop("cluster", None)
    return json.dumps(data, indent=2).encode()


def two_node_cluster():
    """A local Ray cluster of two nodes with one CPU each (their own resources), this process connected."""
    import ray
    from ray.cluster_utils import Cluster

    cluster = Cluster(initialize_head=True, connect=False, head_node_args={"num_cpus": 1, "include_dashboard": False})
    cluster.add_node(num_cpus=1)
    cluster.wait_for_nodes()
    ray.init(address=cluster.address, namespace="arbiter", log_to_driver=False)
    return cluster
