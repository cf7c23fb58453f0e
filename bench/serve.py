"""``arbiter serve`` throughput on loopback, side by side in one run (bench/data/codegen's real rows):

1. ``/run_code (verl)``: verl 0.9.1's own sandbox_fusion ``check_correctness`` (loaded by path from the
   installed ``verl``, else a copy of its request shape): for each response one POST per test case,
   all cases of a response at once from a thread pool, ``--responses-at-once`` responses in flight,
   one global semaphore of ``--max-concurrent`` (verl's default 64) requests;
1b. ``/run_code (mixed)``: the same requests (first 10 cases per response) in order, 32 client threads;
2. ``/v1/score``: one request per problem (all its responses), 2 x cores client threads;
3. in-process ``compute_score_batch`` on the same responses.

Each mode runs a fixed amount of work (``--cases`` /run_code requests, every response once for the
other two) and stops after ``--seconds`` whatever happens. Printed: requests, cases, cases/s, p50/p99
request latency, errors (must be 0), and the server's RSS at start and end.

Usage: .venv/bin/python bench/serve.py [--cases 800] [--seconds 120] [--max-concurrent 64]
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


def verl_check_correctness():
    """verl's ``check_correctness`` (its module has no imports beyond ``requests``), or ``None``."""
    import importlib.util

    import os

    roots = []
    spec = importlib.util.find_spec("verl")
    if spec is not None and spec.submodule_search_locations:
        roots.append(Path(list(spec.submodule_search_locations)[0]))
    venv = Path(os.environ.get("ARBITER_VERL_VENV", Path.home() / ".cache" / "arbiter" / "verl-0.9.1"))
    roots += sorted(venv.glob("lib/python3*/site-packages/verl"))  # the venv make test builds
    paths = [r / "utils/reward_score/sandbox_fusion/utils.py" for r in roots]
    paths = [p for p in paths if p.exists()]
    if not paths:
        return None
    path = paths[0]
    mod_spec = importlib.util.spec_from_file_location("verl_sandbox_fusion_utils", path)
    mod = importlib.util.module_from_spec(mod_spec)
    mod_spec.loader.exec_module(mod)
    return mod.check_correctness


def verl_jobs(items, limit: int) -> list[tuple[str, dict]]:
    """``(program, in_outs)`` per response, as verl's sandbox_fusion reward builds them (every case
    of the row; function-call rows keep ``fn_name``), until ``limit`` cases."""
    from arbiter.rewards.extract import extract_code

    import random

    out, n = [], 0
    for _, solution, truth, _ in random.Random(0).sample(items, len(items)):  # a mix of rows in any prefix
        code, cases = extract_code(solution).code, json.loads(truth)
        if not code or not cases:
            continue
        if isinstance(cases, list):  # arbiter's case list -> verl's in_outs (fn_name: one JSON argument a line)
            fns = {c.get("fn_name") for c in cases if c.get("type") == "function_call"}
            if len(fns) > 1 or (fns and len(fns) + sum(c.get("type") == "stdin_stdout" for c in cases) > 1):
                continue
            calls = [c for c in cases if c.get("type") == "function_call"]
            cases = ({"fn_name": fns.pop(), "inputs": ["\n".join(json.dumps(a) for a in c["input"]) for c in calls],
                      "outputs": [json.dumps(c["output"][0] if len(c["output"]) == 1 else c["output"]) for c in calls]}
                     if fns else {"inputs": [c["input"] for c in cases], "outputs": [c["output"] for c in cases]})
        out.append((code, cases))
        n += len(cases["inputs"])
        if n >= limit:
            break
    return out


def run_verl(url: str, jobs, at_once: int, max_concurrent: int, deadline: float):
    """verl's reward path: ``at_once`` responses in flight, each sending all its cases at once."""
    import threading

    check = verl_check_correctness()
    if check is None:
        sys.exit("bench/serve.py needs verl's sandbox_fusion module: scripts/verl_venv.sh, or pip install verl==0.9.1 --no-deps")
    sem = threading.Semaphore(max_concurrent)

    def one(job):
        code, in_outs = job
        results, meta = check(url + "/run_code", in_outs, code, timeout=10, memory_limit_mb=1024,
                              language="python", concurrent_semaphore=sem)
        bad = [m for r, m in zip(results, meta) if r == -1]  # -1: an API or sandbox error
        if bad:
            raise RuntimeError(f"verl saw an API error: {str(bad[0])[:150]}")
        return results

    with ThreadPoolExecutor(at_once) as pool:
        return timed(pool, one, jobs, deadline)


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
    ap.add_argument("--max-concurrent", type=int, default=64, help="verl's sandbox_fusion max_concurrent")
    ap.add_argument("--responses-at-once", type=int, default=16)
    ap.add_argument("--run-code-only", action="store_true", help="skip /v1/score and in-process")
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
        jobs = verl_jobs(items, args.cases)
        res, lat, errs, wall = run_verl(url, jobs, args.responses_at_once, args.max_concurrent,
                                        time.monotonic() + args.seconds)
        rows.append(row(f"/run_code (verl, {args.max_concurrent} at once)", sum(len(j[1]["inputs"]) for j in jobs),
                        sum(len(r) for r in res if r), wall, lat, errs))
        errors_all += errs
        with ThreadPoolExecutor(32) as pool:
            def rc(req):
                r = http.post(url + "/run_code", json=req)
                if r.status_code != 200:
                    raise RuntimeError(f"HTTP {r.status_code}: {r.text[:100]}")
                return r.json()

            res, lat, errs, wall = timed(pool, rc, reqs, time.monotonic() + args.seconds)
        rows.append(row("/run_code (mixed, 32 threads)", len(reqs), sum(1 for r in res if r), wall, lat, errs))
        errors_all += errs
        if args.run_code_only:
            print(table(["mode", "requests", "cases", "wall s", "cases/s", "p50 s", "p99 s", "errors"], rows),
                  f"\nload average {os.getloadavg()[0]:.1f}", sorted(set(errors_all))[:3])
            return
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
    v1, local_rate = float(rows[2][4]), float(rows[3][4])  # in-process ran just before /v1/score
    print(f"/v1/score vs in-process: {v1 / local_rate:.2f}x (target >= 0.90); /run_code (verl) {rows[0][4]} cases/s "
          f"(target >= 132 on 2 cores); server RSS {rss_start:.0f} MiB at start, {rss_end:.0f} MiB at end; "
          f"same verdicts /v1/score vs in-process: {same}/{len(local)}; server exit status {proc.returncode}")
    if errors_all:
        print("errors:", sorted(set(errors_all))[:5])
        sys.exit(1)


if __name__ == "__main__":
    main()
