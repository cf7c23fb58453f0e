"""``arbiter serve`` on a real two-node Ray cluster with Ray Serve (``ray.cluster_utils.Cluster``, one
replica per node): the same answers as one ``arbiter serve``, a node removed mid-run loses no
request, and ``/metrics`` sums the nodes. The proxy runs on the head only: two simulated nodes on
one machine cannot both listen on one port (a real cluster uses ``EveryNode``); the head's proxy
hands requests to the head's front, which spreads them over both nodes' judges."""

from __future__ import annotations

import json
import socket
import sys
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest

ray = pytest.importorskip("ray")
pytest.importorskip("ray.serve")

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from cluster.ray_rows import two_node_cluster  # noqa: E402
from live_server import LiveServer  # noqa: E402

from arbiter.server import ray_serve  # noqa: E402
from arbiter.server.config import ServerConfig  # noqa: E402

GT = json.dumps({"inputs": ["1\n", "2\n"], "outputs": ["2\n", "4\n"]})
REQUESTS = [
    ("/run_code", {"code": "print(int(input()) * 3)", "language": "python", "stdin": "14"}),
    ("/run_code", {"code": "#include <cstdio>\nint main(){puts(\"c\");return 3;}", "language": "cpp"}),
    ("/run_code", {"code": "while True: pass", "language": "python", "run_timeout": 0.5}),
    ("/v1/score", {"items": [{"data_source": "apps", "solution_str": "```python\nprint(int(input())*2)\n```",
                              "ground_truth": GT, "extra_info": {"index": 0}},
                             {"data_source": "apps", "solution_str": "```python\nprint(1)\n```",
                              "ground_truth": GT, "extra_info": {"index": 1}}]}),
]
TIMING = {"execution_time", "cpu_time", "memory_bytes", "seconds", "wall_seconds", "cpu_seconds", "executor_pod_name",
          "elapsed_seconds", "judge_seconds", "prep_seconds"}


def _plain(value):
    """An answer without its timing fields."""
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items() if k not in TIMING}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


@pytest.fixture(scope="module")
def served():
    cluster = two_node_cluster()
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    line = ray_serve.run(ServerConfig(port=port), location="HeadOnly")
    yield cluster, f"http://127.0.0.1:{port}", line
    from ray import serve

    serve.shutdown()
    ray.shutdown()
    cluster.shutdown()


def test_same_answers_as_one_arbiter_serve(served):
    _, url, line = served
    assert "Ray Serve on 2 nodes" in line
    one = LiveServer()
    try:
        for path, body in REQUESTS:
            a, b = httpx.post(url + path, json=body, timeout=120), httpx.post(one.url + path, json=body, timeout=120)
            assert a.status_code == b.status_code == 200, (a.text[:300], b.text[:300])
            assert _plain(a.json()) == _plain(b.json()), path
    finally:
        assert one.stop() == 0


def test_metrics_sum_the_nodes(served):
    _, url, _ = served
    deadline = time.monotonic() + 60
    while True:
        m = _metrics(url)
        if m.get("arbiter_nodes") == 2 or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    assert m["arbiter_nodes"] == 2 and m["arbiter_judges"] == 2  # one CPU (one judge) per simulated node
    assert m["arbiter_cases_total"] >= 1


def test_a_node_removed_mid_run_loses_no_request(served):
    cluster, url, _ = served

    def one(i: int):
        r = httpx.post(url + "/run_code", timeout=120,
                       json={"code": f"import time\ntime.sleep(0.3)\nprint({i})", "language": "python"})
        return i, r.status_code, r.json() if r.status_code == 200 else r.text

    with ThreadPoolExecutor(8) as pool:
        futures = [pool.submit(one, i) for i in range(48)]
        while sum(f.done() for f in futures) < 6:
            time.sleep(0.05)
        worker = next(iter(cluster.worker_nodes))
        cluster.remove_node(worker)
        results = [f.result() for f in futures]
    assert Counter(code for _, code, _ in results) == {200: 48}, [r for r in results if r[1] != 200][:3]
    assert all(a["run_result"]["stdout"] == f"{i}\n" for i, _, a in results)
    nodes = Counter(a["executor_pod_name"] for _, _, a in results)
    assert len(nodes) == 2, nodes  # both nodes answered, the removed one before it went


def _metrics(url: str) -> dict[str, float]:
    out = {}
    for line in httpx.get(url + "/metrics", timeout=60).text.splitlines():
        if line and not line.startswith("#"):
            name, value = line.rsplit(" ", 1)
            out[name] = float(value)
    return out
