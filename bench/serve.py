"""``arbiter serve`` throughput on loopback, side by side in one run (bench/data/codegen's real rows):

1. ``/run_code``: one request per test case, as verl's sandbox_fusion reward sends them (the
   extracted program and one stdin case; function-call rows are left out), 32 client threads;
2. ``/v1/score``: one request per problem (all its responses), 2 x cores client threads;
3. in-process ``compute_score_batch`` on the same responses.

Each mode runs a fixed amount of work (``--cases`` /run_code requests, every response once for the
other two) and stops after ``--seconds`` whatever happens. Printed: requests, cases, cases/s, p50/p99
request latency, errors (must be 0), and the server's RSS at start and end.

Usage: .venv/bin/python bench/serve.py [--cases 800] [--seconds 120]
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from score import cases_run, load_items, table  # noqa: E402  (bench/score.py: the same real data)


def rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def start_server() -> tuple[subprocess.Popen, str]:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen([str(Path(sys.executable).with_name("arbiter")), "serve", "--port", str(port),
                             "--queue", "4096"])
    url = f"http://127.0.0.1:{port}"
    for _ in range(600):
        try:
            httpx.get(url + "/metrics", timeout=5)
            return proc, url
        except httpx.TransportError:
            time.sleep(0.1)
    sys.exit("arbiter serve did not start")


def run_code_requests(items, limit: int) -> list[dict]:
    """verl's requests: the extracted program with one stdin case each (stdin rows only)."""
    from arbiter.rewards.extract import extract_code

    out = []
    for _, solution, truth, _ in items:
        code = extract_code(solution).code
        cases = json.loads(truth)
        if not code or not isinstance(cases, (dict, list)):
            continue
        if isinstance(cases, dict):
            if cases.get("fn_name"):
                continue
            stdins = cases.get("inputs", [])
        else:
            if any(c.get("type") != "stdin_stdout" for c in cases):
                continue
            stdins = [c["input"] for c in cases]
        out += [{"code": code, "language": "python", "stdin": s, "run_timeout": 10, "compile_timeout": 10,
                 "memory_limit_MB": 1024} for s in stdins[:10]]  # verl scores the first 10 cases
    return out[:limit]


def timed(pool: ThreadPoolExecutor, fn, jobs, deadline: float):
    """Run ``fn`` on every job; ``(results, latencies, errors, wall)``, stopping at ``deadline``."""
    def one(job):
        if time.monotonic() > deadline:
            return None, 0.0, "deadline"
        t = time.monotonic()
        try:
            return fn(job), time.monotonic() - t, ""
        except Exception as exc:  # counted, printed
            return None, time.monotonic() - t, f"{type(exc).__name__}: {exc}"[:200]

    t = time.monotonic()
    done = list(pool.map(one, jobs))
    return [d[0] for d in done], [d[1] for d in done if not d[2]], [d[2] for d in done if d[2]], time.monotonic() - t


def row(name: str, requests: int, cases: int, wall: float, lat: list[float], errors: list[str]) -> list[str]:
    lat = sorted(lat) or [0.0]
    p99 = lat[min(len(lat) - 1, int(0.99 * len(lat)))]
    return [name, str(requests), str(cases), f"{wall:.2f}", f"{cases / wall:.1f}", f"{statistics.median(lat):.3f}",
            f"{p99:.3f}", str(len(errors))]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--cases", type=int, default=800)
    ap.add_argument("--seconds", type=float, default=300.0)
    args = ap.parse_args()
    from arbiter.judge.judge import default_workers
    from arbiter.verl.reward import compute_score_batch

    items, _, problems = load_items()
    proc, url = start_server()
    rows, errors_all = [], []
    try:
        rss_start = rss_mib(proc.pid)
        http = httpx.Client(timeout=300)
        reqs = run_code_requests(items, args.cases)
        http.post(url + "/run_code", json=reqs[0])  # warm-up: imports, first sandbox
        with ThreadPoolExecutor(32) as pool:
            def rc(req):
                r = http.post(url + "/run_code", json=req)
                if r.status_code != 200:
                    raise RuntimeError(f"HTTP {r.status_code}: {r.text[:100]}")
                return r.json()

            res, lat, errs, wall = timed(pool, rc, reqs, time.monotonic() + args.seconds)
        rows.append(row("/run_code (case/request)", len(reqs), sum(1 for r in res if r), wall, lat, errs))
        errors_all += errs
        by_problem: dict[str, list] = {}
        for it in items:
            by_problem.setdefault(f"{it[0]}:{it[3]['index']}", []).append(it)
        groups = list(by_problem.values())
        starts = [sum(len(g) for g in groups[:i]) for i in range(len(groups))]
        t = time.monotonic()
        local = compute_score_batch(*map(list, zip(*[it for g in groups for it in g])))
        wall = time.monotonic() - t
        local_row = row("in-process compute_score_batch", 1, sum(map(cases_run, local)), wall, [wall], [])
        with ThreadPoolExecutor(2 * default_workers()) as pool:
            def sc(group):
                body = {"items": [dict(zip(("data_source", "solution_str", "ground_truth", "extra_info"), it))
                                  for it in group]}
                r = http.post(url + "/v1/score", json=body)
                if r.status_code != 200 or any("error" in x for x in r.json()["results"]):
                    raise RuntimeError(f"HTTP {r.status_code}: {r.text[:100]}")
                return r.json()["results"]

            res, lat, errs, wall = timed(pool, sc, groups, time.monotonic() + args.seconds)
        served = [x for group in res if group for x in group]
        rows.append(row("/v1/score (problem/request)", len(by_problem), sum(map(cases_run, served)), wall, lat, errs))
        errors_all += errs
        rss_end = rss_mib(proc.pid)
        rows.append(local_row)
        local_by = [local[i:i + len(g)] for i, g in zip(starts, groups)]
        same = sum(1 for got, want in zip(res, local_by) if got is not None
                   for a, b in zip(got, want) if (a["verdict"], a["score"]) == (b["verdict"], b["score"]))
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=120)
    print(f"== arbiter serve on loopback ({problems} problems, {len(items)} responses, {default_workers()} cores, "
          f"load average {os.getloadavg()[0]:.1f})")
    print(table(["mode", "requests", "cases", "wall s", "cases/s", "p50 s", "p99 s", "errors"], rows))
    v1, local_rate = float(rows[1][4]), float(rows[2][4])  # in-process ran just before /v1/score
    print(f"/v1/score vs in-process: {v1 / local_rate:.2f}x (target >= 0.90); /run_code {rows[0][4]} cases/s "
          f"(target >= 132 on 2 cores); server RSS {rss_start:.0f} MiB at start, {rss_end:.0f} MiB at end; "
          f"same verdicts /v1/score vs in-process: {same}/{len(local)}; server exit status {proc.returncode}")
    if errors_all:
        print("errors:", sorted(set(errors_all))[:5])
        sys.exit(1)


if __name__ == "__main__":
    main()
