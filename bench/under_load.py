"""Verdicts under host load: the same workload quiet and while this script loads the host.

The workload: every Python 3 program of the shared codescope_codeopt rows on all their cases
(``judge_many``, 2 CPU s per case), a program that uses 80% of its CPU limit on every case (wall
limit equal to its CPU limit, so a starved run passes the wall limit), and the oracle demo
(``arbiter oracle verify`` as ``make demo`` runs it: 7 rows accepted). Runs, one after another:

- quiet (other jobs of the machine still run: the point is identical verdicts);
- hogs: 4 spinning processes per core, each in its own session;
- scoring: 3 more processes judging the codescope programs in a loop at the same time;
- memory: one process keeps all but 3 GiB of the available memory touched (it gives memory back
  when less than 1.5 GiB is left, and is the OOM killer's first choice), so the kernel reclaims.

Each load is started before its run and killed after it (each load process also ends by itself
after 30 minutes). Prints the verdict counts of each run side by side, whether they equal the
quiet run's, TLE on programs accepted quietly, the 1-minute load average during each run, and
the 80% program's largest wall time against its wall limit.

Usage: .venv/bin/python bench/under_load.py [--quick] [--runs quiet,hogs,scoring,memory]
(``ARBITER_SHARED``: the shared folder, default ../shared)
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
SHARED = Path(os.environ.get("ARBITER_SHARED", REPO.parent / "shared"))
CODESCOPE = SHARED / "realdata" / "codescope_codeopt" / "code_optimization_data.jsonl"
ORACLE = REPO / "data" / "oracle"
LOAD_LIFETIME = 1800  # seconds a load process runs at most, whatever happens to this script
CPU80_LIMIT = 1.0

BURN = """import time
t = time.process_time()
n = 0
while time.process_time() - t < {cpu}:
    n += 1
print(input())
"""


def codescope_tasks(rows: int | None):
    from arbiter.checkers.spec import CheckerSpec
    from arbiter.judge.encodings import codescope_row_to_suite
    from arbiter.judge.task import Task
    from arbiter.sandbox.limits import Limits

    tasks = []
    taken = 0
    for line in CODESCOPE.open(encoding="utf-8"):
        r = json.loads(line)
        if r["lang"] != "Python 3":
            continue
        if rows is not None and taken >= rows:
            break
        taken += 1
        suite = codescope_row_to_suite(r)
        for field in ("time_baseline_source_code", "memory_baseline_source_code"):
            tasks.append(Task("python", r[field], suite, checker=CheckerSpec("tokens"), run_all=True,
                              limits=Limits(cpu_seconds=2), task_id=f"codescope {r['id']} {field[:4]}"))
    return tasks


def cpu80_task(cases: int):
    from arbiter.judge.task import Task
    from arbiter.judge.testsuite import StdioCase, TestSuite
    from arbiter.sandbox.limits import Limits

    suite = TestSuite(tuple(StdioCase(f"c{i}", f"{i}\n".encode(), (f"{i}\n".encode(),)) for i in range(cases)))
    # the program's own start-up counts too: the loop leaves room for it within 80%
    return Task("python", BURN.format(cpu=0.8 * CPU80_LIMIT - 0.03), suite, run_all=True,
                limits=Limits(cpu_seconds=CPU80_LIMIT, wall_seconds=CPU80_LIMIT), task_id="cpu80")


def oracle_demo(out: Path) -> dict:
    """``arbiter oracle verify`` on the demo rows; returns its counts and the accepted rows."""
    cmd = [str(REPO / ".venv" / "bin" / "arbiter"), "oracle", "verify", "--seeds", str(ORACLE / "seeds.jsonl"),
           "--returns", str(ORACLE / "returns.jsonl"), "--hidden", str(ORACLE / "hidden_tests.json"),
           "--generators", str(ORACLE / "generators"), "--out", str(out)]
    subprocess.run(cmd, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    counts = collections.Counter()
    for name, key in (("verified.jsonl", "accepted"), ("rejected.jsonl", "rejected")):
        path = out / name
        for line in (path.open() if path.exists() else []):
            row = json.loads(line)
            counts[f"oracle {key}"] += 1
            if key == "rejected":
                for reason in row.get("reasons", []):
                    counts[f"oracle reason {reason['stage']}:{reason['code']}"] += 1
            else:
                counts[f"oracle accepted {row.get('demo_id')}"] += 1
    return counts


def run_workload(args) -> tuple[collections.Counter, dict]:
    from arbiter.judge.judge import judge_many

    counts: collections.Counter = collections.Counter()
    tasks = codescope_tasks(6 if args.quick else None) + [cpu80_task(6 if args.quick else 20)]
    accepted = set()
    cpu80_wall = 0.0
    for task, v in zip(tasks, judge_many(tasks)):
        group = "cpu80" if task.task_id == "cpu80" else "codescope"
        counts[f"{group} program {v.outcome.value}"] += 1
        for c in v.cases:
            counts[f"{group} case {c.outcome.value}"] += 1
            if c.outcome.value in ("TLE", "MLE", "SANDBOX_ERROR"):
                print(f"  {task.task_id} {c.name}: {c.outcome.value} cpu {c.cpu_seconds:.2f} s wall "
                      f"{c.wall_seconds:.2f} s {c.detail[:160]}", flush=True)
            if group == "cpu80":
                cpu80_wall = max(cpu80_wall, c.wall_seconds)
        if v.outcome.value == "SANDBOX_ERROR":
            print(f"  {task.task_id}: SANDBOX_ERROR {v.reason[:200]}", flush=True)
        if v.accepted:
            accepted.add(task.task_id)
    with tempfile.TemporaryDirectory(prefix="under_load_") as d:
        counts.update(oracle_demo(Path(d)))
    return counts, {"accepted": accepted, "cpu80_wall": cpu80_wall}


# ---- loads ------------------------------------------------------------------------------------
def _spawn(code: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", code], start_new_session=True, cwd=REPO,
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL)


HOG = f"import time\nend = time.monotonic() + {LOAD_LIFETIME}\nwhile time.monotonic() < end: pass\n"

MEMORY_HOG = f"""
import os, time
open("/proc/self/oom_score_adj", "w").write("1000")
def available():
    for line in open("/proc/meminfo"):
        if line.startswith("MemAvailable:"):
            return int(line.split()[1]) * 1024
chunks, CHUNK, GiB = [], 64 << 20, 1 << 30
end = time.monotonic() + {LOAD_LIFETIME}
while time.monotonic() < end:
    free = available()
    if free > 3 * GiB + CHUNK:
        chunks.append(bytearray(CHUNK))  # zeroed: every page touched
    elif free < 1.5 * GiB and chunks:
        for _ in range(8):
            if chunks:
                chunks.pop()
    else:
        for c in chunks:  # keep every page recently used, so the kernel reclaims the others
            c[::4096] = b"\\1" * len(range(0, CHUNK, 4096))
        time.sleep(0.2)
"""


def start_load(kind: str, args) -> list[subprocess.Popen]:
    cores = os.cpu_count() or 1
    if kind == "hogs":
        return [_spawn(HOG) for _ in range(4 * cores)]
    if kind == "scoring":
        return [subprocess.Popen([sys.executable, __file__, "--scoring-worker"] + (["--quick"] if args.quick else []),
                                 start_new_session=True, cwd=REPO, stdin=subprocess.DEVNULL,
                                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL) for _ in range(3)]
    if kind == "memory":
        procs = [_spawn(MEMORY_HOG)]
        time.sleep(20 if not args.quick else 12)  # let it fill memory first
        return procs
    return []


def stop_load(procs: list[subprocess.Popen]) -> None:
    for p in procs:
        try:
            os.killpg(p.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    for p in procs:
        p.wait()


def scoring_worker(args) -> None:
    from arbiter.judge.judge import judge_many

    end = time.monotonic() + LOAD_LIFETIME
    tasks = codescope_tasks(6 if args.quick else None)
    while time.monotonic() < end:
        for _ in judge_many(tasks):
            pass


class LoadAverage(threading.Thread):
    """Samples the 1-minute load average and MemAvailable every second."""

    def __init__(self):
        super().__init__(daemon=True)
        self.samples: list[float] = []
        self.min_available = float("inf")
        self.stop = threading.Event()

    def run(self):
        while not self.stop.wait(1.0):
            self.samples.append(os.getloadavg()[0])
            for line in open("/proc/meminfo"):
                if line.startswith("MemAvailable:"):
                    self.min_available = min(self.min_available, int(line.split()[1]) / (1 << 20))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="6 codescope rows and 6 cases of the 80%% program")
    ap.add_argument("--runs", default="quiet,hogs,scoring,memory")
    ap.add_argument("--scoring-worker", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.scoring_worker:
        return scoring_worker(args)
    if not CODESCOPE.exists():
        sys.exit(f"{CODESCOPE} not found (set ARBITER_SHARED)")
    runs = args.runs.split(",")
    results, info = {}, {}
    for kind in runs:
        procs = start_load(kind, args)
        la = LoadAverage()
        la.start()
        t0 = time.monotonic()
        try:
            counts, extra = run_workload(args)
        finally:
            la.stop.set()
            stop_load(procs)
        s = la.samples or [os.getloadavg()[0]]
        extra.update(seconds=time.monotonic() - t0, load_mean=sum(s) / len(s), load_max=max(s),
                     min_available_gib=la.min_available)
        results[kind], info[kind] = counts, extra
        print(f"[{kind}] {extra['seconds']:.0f} s, load average {extra['load_mean']:.1f} (max "
              f"{extra['load_max']:.1f}), min MemAvailable {extra['min_available_gib']:.1f} GiB", flush=True)
    report(runs, results, info)


def report(runs, results, info) -> None:
    keys = sorted(set().union(*results.values()))
    w = max(len(k) for k in keys)
    print("\n" + "verdict counts".ljust(w) + "".join(f"{r:>10}" for r in runs))
    for k in keys:
        print(k.ljust(w) + "".join(f"{results[r][k]:>10}" for r in runs))
    rows = [("seconds", "{:.0f}", "seconds"), ("load average (1 min, mean)", "{:.1f}", "load_mean"),
            ("load average (1 min, max)", "{:.1f}", "load_max"), ("min MemAvailable GiB", "{:.1f}", "min_available_gib"),
            ("cpu80 largest case wall s", "{:.2f}", "cpu80_wall")]
    for label, fmt, key in rows:
        print(label.ljust(w) + "".join(f"{fmt.format(info[r][key]):>10}" for r in runs))
    print(f"(cpu80: CPU limit {CPU80_LIMIT:g} s = wall limit; a wall time above it was net of run-queue delay)")
    base = runs[0]
    for r in runs[1:]:
        lost = sorted(info[base]["accepted"] - info[r]["accepted"])
        same = results[r] == results[base]
        tle = sum(v for k, v in results[r].items() if k.endswith(" TLE")) - sum(
            v for k, v in results[base].items() if k.endswith(" TLE"))
        print(f"{r}: verdicts {'identical to' if same else 'DIFFERENT from'} {base}; "
              f"programs accepted in {base} but not here: {len(lost)} {lost[:5]}; extra TLE: {tle}")


if __name__ == "__main__":
    main()
