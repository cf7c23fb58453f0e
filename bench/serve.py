"""``arbiter serve`` measured side by side in one run (bench/data/codegen's real rows), printing the
machine's load average with every figure:

1. ``/run_code`` as verl sends it: verl 0.9.1's own sandbox_fusion ``check_correctness`` (loaded by
   path from the verl venv), one POST per test case, all cases of a response at once, one semaphore
   of ``--max-concurrent`` (verl's 64) and again of 2; against arbiter and, with ``--sandboxfusion
   URL``, a real SandboxFusion server on the same requests (cases/s, ratio). The data's stdin rows
   hold 326 cases: each server gets one pass as a warm-up, then passes until ``--cases`` (each
   pass's programs new submissions: a trailing comment names the pass), a steady state rather
   than a second of ramp;
2. per problem: arbiter's ``/v1/score`` (one request per problem) against verl's sandbox_fusion
   reward scoring the same responses through SandboxFusion's ``/run_code`` (responses/s, ratio);
3. the server's peak RSS (VmHWM) above idle under the attacks of issue items 1-3, sent 8 at once;
4. two tenants (one judge each): the quiet tenant's p50 ``/run_code`` latency alone and while the
   other floods TLEs.

SandboxFusion is not part of arbiter: run it yourself (its README: the official Docker image) on
this machine and pass its URL. Usage:
  .venv/bin/python bench/serve.py [--cases 800] [--sandboxfusion http://127.0.0.1:8080] [--skip verl,score,rss,tenants]
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import random
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from score import load_items, table  # noqa: E402  (bench/score.py: the same real data)

ARBITER = Path(sys.executable).with_name("arbiter")


def load() -> str:
    return "load average %.1f %.1f %.1f" % os.getloadavg()


def peak_rss_mib(pid: int, key: str = "VmHWM") -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(key + ":"):
            return int(line.split()[1]) / 1024
    return 0.0


class Server:
    """One ``arbiter serve`` on a free port (the start-up line says which)."""

    def __init__(self, *args: str):
        self.proc = subprocess.Popen([str(ARBITER), "serve", "--port", "0", *args], stdout=subprocess.DEVNULL,
                                     stderr=subprocess.PIPE, text=True)
        for line in self.proc.stderr:
            m = re.search(r"listening on (http://\S+)", line)
            if m:
                self.url = m.group(1)
                break
        else:
            sys.exit("arbiter serve did not start")
        threading.Thread(target=lambda: [None for _ in self.proc.stderr], daemon=True).start()

    def stop(self) -> int:
        self.proc.terminate()
        return self.proc.wait(timeout=180)


# ---- 1 and 2: verl's requests against arbiter and SandboxFusion -------------------------------
def verl_module(name: str):
    import importlib.util

    venv = Path(os.environ.get("ARBITER_VERL_VENV", Path.home() / ".cache" / "arbiter" / "verl-0.9.1"))
    folders = sorted(venv.glob("lib/python3*/site-packages/verl/utils/reward_score/sandbox_fusion"))
    if not folders:
        sys.exit("bench/serve.py needs verl's sandbox_fusion module (scripts/verl_venv.sh)")
    spec = importlib.util.spec_from_file_location(name, folders[0] / "__init__.py",
                                                  submodule_search_locations=[str(folders[0])])
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


def in_outs(truth: str) -> dict | None:
    """A row's stdin cases as verl's ``{"inputs", "outputs"}`` (``None``: function-call rows)."""
    cases = json.loads(truth)
    if isinstance(cases, list):
        if not cases or any(c.get("type") != "stdin_stdout" for c in cases):
            return None
        cases = {"inputs": [c["input"] for c in cases], "outputs": [c["output"] for c in cases]}
    return None if not cases or cases.get("fn_name") else cases


def verl_jobs(items, limit: int) -> list[tuple[str, dict]]:
    """``(program, in_outs)`` per response as verl's reward builds them (stdin rows), until ``limit`` cases."""
    from arbiter.rewards.extract import extract_code

    out, n = [], 0
    for _, solution, truth, _ in random.Random(0).sample(items, len(items)):
        code, cases = extract_code(solution).code, in_outs(truth)
        if not code or not cases:
            continue
        out.append((code, cases))
        n += len(cases["inputs"])
        if n >= limit:
            break
    return out


def run_verl(url: str, jobs, max_concurrent: int, at_once: int = 16) -> tuple[float, int, int, list]:
    """verl's reward path: ``at_once`` responses in flight, each sending all its cases at once."""
    sf = sys.modules.get("bench_verl_sf") or verl_module("bench_verl_sf")
    sem = threading.Semaphore(max_concurrent)
    results: list = []

    def one(job):
        code, in_outs = job
        res, meta = sf.check_correctness(url + "/run_code", in_outs, code, timeout=10, memory_limit_mb=1024,
                                               language="python", concurrent_semaphore=sem)
        results.append((res, meta))

    t = time.monotonic()
    with ThreadPoolExecutor(at_once) as pool:
        list(pool.map(one, jobs))
    wall = time.monotonic() - t
    cases = sum(len(r) for r, _ in results)
    errors = sum(1 for r, _ in results for x in r if x == -1)
    return wall, cases, errors, results


def passes(jobs, limit: int, first: int = 0) -> list[tuple[str, dict]]:
    """``jobs`` again and again until ``limit`` cases, each pass's programs new submissions (a
    trailing comment naming the pass): as verl's steady state sends them, a new response each step."""
    out, n, k = [], 0, first
    while n < limit:
        out += [(f"{code}\n# pass {k}\n", cases) for code, cases in jobs]
        n += sum(len(c["inputs"]) for _, c in jobs)
        k += 1
    return out


def bench_run_code(arbiter_url: str, sf_url: str | None, items, limit: int) -> list[list[str]]:
    """Each server first gets one pass of the requests (warm-up: its pools filled, as a server
    that has been serving), then the measured passes: the same requests to both servers."""
    jobs = verl_jobs(items, limit)
    rows = []
    for conc in (64, 2):
        for name, url in (("arbiter", arbiter_url), ("SandboxFusion", sf_url)):
            if url is None:
                continue
            run_verl(url, passes(jobs, 1, first=-1), conc)  # warm-up
            wall, cases, errors, _ = run_verl(url, passes(jobs, limit), conc)
            rows.append([f"/run_code verl, max_concurrent {conc}", name, str(cases), f"{wall:.1f}",
                         f"{cases / wall:.1f}", str(errors), load()])
    return rows


def bench_score(arbiter_url: str, sf_url: str | None, items, problems: int) -> list[list[str]]:
    by_problem: dict[str, list] = {}
    for it in items:
        if in_outs(it[2]) is None:
            continue
        by_problem.setdefault(f"{it[0]}:{it[3]['index']}", []).append(it)
    groups = list(by_problem.values())[:problems]
    n = sum(len(g) for g in groups)
    rows = []
    http = httpx.Client(timeout=600)

    def ours(group):
        body = {"items": [dict(zip(("data_source", "solution_str", "ground_truth", "extra_info"), it)) for it in group],
                "options": {"parity": "prime_code"}}
        r = http.post(arbiter_url + "/v1/score", json=body)
        assert r.status_code == 200, r.text[:200]
        return [x.get("score") for x in r.json()["results"]]

    t = time.monotonic()
    with ThreadPoolExecutor(4) as pool:
        mine = list(pool.map(ours, groups))
    wall = time.monotonic() - t
    rows.append(["per problem: /v1/score, one request a problem", "arbiter", str(n), f"{wall:.1f}",
                 f"{n / wall:.2f} responses/s", "0", load()])
    if sf_url is not None:
        sf = sys.modules.get("bench_verl_sf") or verl_module("bench_verl_sf")
        sem = threading.Semaphore(64)

        def theirs(group):
            return [sf.compute_score(sf_url + "/run_code", sem, 1024, it[1], in_outs(it[2]), continuous=True)[0]
                    for it in group]

        t = time.monotonic()
        with ThreadPoolExecutor(4) as pool:
            list(pool.map(theirs, groups))
        wall_sf = time.monotonic() - t
        rows.append(["per problem: verl sandbox_fusion reward", "SandboxFusion", str(n), f"{wall_sf:.1f}",
                     f"{n / wall_sf:.2f} responses/s", "-", load()])
    return rows


# ---- 3: peak RSS under the attacks of items 1-3 ----------------------------------------------
def attacks() -> list[tuple[str, str | bytes]]:
    big = base64.b64encode(os.urandom(40 << 20)).decode()  # a 40 MiB file, 53 MiB as base64
    spellings = ["big.bin"] + ["./" * k + "big.bin" for k in range(1, 40)]
    deep = "[" * 100_000 + "]" * 100_000
    return [
        ("/run_code", json.dumps({"code": "print(1)", "language": "python", "files": {"big.bin": big},
                                  "fetch_files": spellings})),
        ("/run_code", json.dumps({"code": "import sys\nsys.stdout.buffer.write(b'\\x01' * (60 << 20))",
                                  "language": "python"})),
        ("/run_code", json.dumps({"code": "import sys\nsys.stdout.write('x' * (60 << 20))", "language": "python"})),
        ("/v1/score", json.dumps({"items": [{"data_source": "apps", "solution_str": "x", "ground_truth": "{}"}],
                                  "options": {"time_limit": 86400, "memory_limit_mb": 1048576}})),
        ("/run_code", deep), ("/v1/judge", deep),
        ("/run_code", json.dumps({"code": "print(1)", "language": "python", "files": {"a\0b": "", "x" * 300: ""}})),
        ("/run_code", json.dumps({"code": "print(1)", "language": "python"}).replace('print(1)', 'print(1)\\ud800')),
    ]


def bench_rss(rounds: int = 3, at_once: int = 8) -> list[list[str]]:
    srv = Server()
    try:
        httpx.post(srv.url + "/run_code", json={"code": "print(1)", "language": "python"}, timeout=120)
        idle = peak_rss_mib(srv.proc.pid, "VmRSS")
        reqs = attacks() * rounds
        statuses: dict[int, int] = {}

        def send(req):
            path, body = req
            r = httpx.post(srv.url + path, content=body, headers={"Content-Type": "application/json"}, timeout=600)
            statuses[r.status_code] = statuses.get(r.status_code, 0) + 1
            return len(r.content)

        t = time.monotonic()
        with ThreadPoolExecutor(at_once) as pool:
            largest = max(pool.map(send, reqs))
        wall = time.monotonic() - t
        peak = peak_rss_mib(srv.proc.pid)
    finally:
        srv.stop()
    return [[f"attacks of items 1-3 ({len(reqs)} requests, {at_once} at once)", f"idle {idle:.0f} MiB",
             f"peak {peak:.0f} MiB", f"+{peak - idle:.0f} MiB (target < 300)", f"largest answer {largest >> 20} MiB",
             f"statuses {dict(sorted(statuses.items()))}", f"{wall:.0f} s", load()]]


# ---- 4: two tenants, one flooding TLEs -------------------------------------------------------
def bench_tenants(requests: int = 40, flood: int = 16) -> list[list[str]]:
    tokens = Path(tempfile.mkdtemp()) / "tokens.txt"
    tokens.write_text("quiet tok-quiet-0123456789 judges=1\nflood tok-flood-0123456789 judges=1\n")
    srv = Server("--tokens", str(tokens))
    quiet = {"Authorization": "Bearer tok-quiet-0123456789"}
    loud = {"Authorization": "Bearer tok-flood-0123456789"}
    short = [{"code": "import sys\nprint(sum(map(int, sys.stdin.read().split())))", "language": "python",
              "stdin": " ".join(map(str, range(i, i + 100)))} for i in range(requests)]

    def p50(headers) -> float:
        lat = []
        with httpx.Client(timeout=120, headers=headers) as c:
            for body in short:
                t = time.monotonic()
                assert c.post(srv.url + "/run_code", json=body).status_code == 200
                lat.append(time.monotonic() - t)
        return statistics.median(lat)

    try:
        p50(quiet)  # warm-up
        alone = p50(quiet)
        stop = threading.Event()

        def flooder():
            with httpx.Client(timeout=120, headers=loud) as c:
                while not stop.is_set():
                    c.post(srv.url + "/run_code", json={"code": "while True: pass", "language": "python",
                                                        "run_timeout": 2})

        threads = [threading.Thread(target=flooder) for _ in range(flood)]
        for t in threads:
            t.start()
        time.sleep(3)
        flooded = p50(quiet)
        stop.set()
        for t in threads:
            t.join()
    finally:
        srv.stop()
    return [[f"quiet tenant p50, {requests} requests", f"alone {alone * 1000:.0f} ms",
             f"while the other floods TLEs ({flood} at once) {flooded * 1000:.0f} ms",
             f"ratio {flooded / alone:.2f} (target <= 2)", load()]]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--cases", type=int, default=800, help="/run_code cases per mode")
    ap.add_argument("--problems", type=int, default=12, help="problems for the per-problem comparison")
    ap.add_argument("--sandboxfusion", default=os.environ.get("SANDBOX_FUSION_URL"),
                    help="a running SandboxFusion server's base URL")
    ap.add_argument("--skip", default="", help="comma-separated: verl,score,rss,tenants")
    args = ap.parse_args()
    skip = set(filter(None, args.skip.split(",")))
    items, _, problems = load_items()
    sf = args.sandboxfusion.rstrip("/") if args.sandboxfusion else None
    print(f"== arbiter serve, side by side ({problems} problems, {len(items)} responses; {load()})", flush=True)
    if not {"verl", "score"} <= skip:
        srv = Server()
        try:
            rows = [] if "verl" in skip else bench_run_code(srv.url, sf, items, args.cases)
            rows += [] if "score" in skip else bench_score(srv.url, sf, items, args.problems)
        finally:
            srv.stop()
        print(table(["mode", "server", "cases/responses", "wall s", "rate", "API errors", "load"], rows))
        for i in range(0, len(rows) - 1, 2):
            if sf and rows[i + 1][1] == "SandboxFusion":
                a, b = float(rows[i][4].split()[0]), float(rows[i + 1][4].split()[0])
                print(f"{rows[i][0]}: arbiter / SandboxFusion = {a / b:.2f}x (target >= 4)")
    if "rss" not in skip:
        print(table(["attack", "idle", "peak", "above idle", "largest", "statuses", "wall", "load"], bench_rss()))
    if "tenants" not in skip:
        print(table(["two tenants", "alone", "flooded", "ratio", "load"], bench_tenants()))


if __name__ == "__main__":
    main()
