"""Ray backend overhead: cases/s of the same responses scored locally, on a one-node Ray (this machine's
cores, one judge pool) and on two simulated nodes sharing the same cores (``ray.cluster_utils.Cluster``,
the cores split between them), side by side in one run.

The workload is bench/data/codegen (real problems from APPS/CodeRL, LeetCodeDataset and NeMo-Gym with
references, labelled generations and wrong variants), scored by the codegen reward through the same
pipeline as ``arbiter score`` (:func:`arbiter.pipelines.codegen.stream.iter_scores`), ``--passes`` times.
Ray's start (cluster, pools, doctor checks) is printed apart from the scoring time; every mode must give
the local verdicts. Target: one node's cases/s within 10% of the local run's (also in ``--rounds``
interleaved local / Ray rounds).

Usage: .venv/bin/python bench/ray.py [--passes 2] [--rounds 3]
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
# this file is named ray.py: its folder must not shadow the ray package
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != HERE]
_spec = importlib.util.spec_from_file_location("bench_score", HERE / "score.py")
_score = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_score)
cases_run, load_items, table = _score.cases_run, _score.load_items, _score.table


def score_all(items: list, passes: int) -> tuple[list[dict], float]:
    from arbiter.pipelines.codegen.stream import iter_scores
    from arbiter.rewards.codegen import RewardOptions

    opts = RewardOptions(on_invalid="zero", on_sandbox_error="report")
    t = time.perf_counter()
    results = [dict(r) for _ in range(passes) for r in iter_scores(items, opts, raise_errors=False)]
    return results, time.perf_counter() - t


def on_ray(items: list, passes: int, address: str | None) -> tuple[list[dict], float, float, int]:
    from arbiter.pipelines.executor import ray_backend, use_backend

    t = time.perf_counter()
    backend = ray_backend(address)
    started = time.perf_counter() - t
    try:
        with use_backend(backend):
            score_all(items[:4], 1)  # the pools' first judge (imports, compile caches) is start-up too
            results, wall = score_all(items, passes)
    finally:
        nodes = len(backend.pools)
        backend.close()
    return results, wall, started, nodes


def interleaved(items: list, rounds: int, cores: int) -> list[tuple[float, float]]:
    """``(local cases/s, one-node Ray cases/s)`` per round, local and Ray passes alternating (a noisy
    machine moves both alike), with one Ray start for all rounds."""
    from arbiter.pipelines.executor import ray_backend, use_backend

    backend = ray_backend(None)
    out = []
    try:
        with use_backend(backend):
            score_all(items[:4], 1)
        for _ in range(rounds):
            res, wall = score_all(items, 1)
            local = sum(cases_run(r) for r in res) / wall
            with use_backend(backend):
                res, wall = score_all(items, 1)
            out.append((local, sum(cases_run(r) for r in res) / wall))
    finally:
        backend.close()
    return out


def print_rounds(pairs: list[tuple[float, float]]) -> None:
    import statistics

    rows = [[str(i + 1), f"{a:.1f}", f"{b:.1f}", f"{100 * (1 - b / a):+.1f}%"] for i, (a, b) in enumerate(pairs)]
    med = statistics.median(100 * (1 - b / a) for a, b in pairs)
    rows.append(["median", f"{statistics.median(a for a, _ in pairs):.1f}",
                 f"{statistics.median(b for _, b in pairs):.1f}", f"{med:+.1f}%"])
    print("interleaved rounds, local vs ray 1 node (cases/s)")
    print(table(["round", "local", "ray 1 node", "overhead"], rows))
    print(f"ray, 1 node, interleaved: median {med:+.1f}% overhead vs local (target: <= 10%)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--passes", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=3, help="interleaved local / one-node Ray rounds")
    args = ap.parse_args()
    import ray
    from ray.cluster_utils import Cluster

    from arbiter.judge.judge import default_workers

    items, _, problems = load_items()
    cores = default_workers()
    score_all(items[:4], 1)  # warm the local process the same way
    rows, verdicts = [], {}

    def add(name: str, results: list[dict], wall: float, start: float, nodes: int) -> None:
        verdicts[name] = [r["verdict"] for r in results]
        cases = sum(cases_run(r) for r in results)
        rows.append([name, str(nodes), str(len(results)), str(cases), f"{start:.1f}", f"{wall:.2f}",
                     f"{cases / wall:.1f}", f"{cases / wall / cores:.1f}"])

    res, wall = score_all(items, args.passes)
    add("local (threads)", res, wall, 0.0, 1)
    ray.init(num_cpus=cores, include_dashboard=False, log_to_driver=False, namespace="arbiter")
    res, wall, start, nodes = on_ray(items, args.passes, None)
    add("ray, 1 node", res, wall, start, nodes)
    pairs = interleaved(items, args.rounds, cores) if args.rounds > 0 else []
    ray.shutdown()
    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": max(1, cores // 2), "include_dashboard": False})
    cluster.add_node(num_cpus=max(1, cores - cores // 2))
    cluster.wait_for_nodes()
    ray.init(address=cluster.address, log_to_driver=False, namespace="arbiter")
    res, wall, start, nodes = on_ray(items, args.passes, None)
    add("ray, 2 simulated nodes", res, wall, start, nodes)
    ray.shutdown()
    cluster.shutdown()
    print(f"{problems} problems, {len(items)} responses x {args.passes} passes, {cores} cores")
    print(table(["mode", "nodes", "responses", "cases", "start s", "wall s", "cases/s", "cases/s/core"], rows))
    local = float(rows[0][6])
    for r in rows[1:]:
        target = " (target: <= 10%)" if r[1] == "1" else ""
        print(f"{r[0]}: {100 * (1 - float(r[6]) / local):+.1f}% overhead vs local{target}")
    if pairs:
        print_rounds(pairs)
    same = all(v == verdicts["local (threads)"] for v in verdicts.values())
    print("verdicts identical in every mode:", same)
    if not same:
        sys.exit(1)


if __name__ == "__main__":
    main()
