"""Where a warm one-case ``compute_score`` spends its time: a timeline across host and guest.

A debug build only: ``bench/trace_one.patch`` puts CLOCK_MONOTONIC stamps into the guest (the
session server ``S_``, the zygote and arming ``Z_``/``A_``, the blank forker ``B_``, the forker
``F_``, the case child ``C_``) in a copy of ``src/`` made in a temporary directory; the stamps go
to an anonymous shared map the zygote makes (so every process of the sandbox, cases included,
writes into one map: never in a build anyone judges with) and come back in each run's reply.
The host's own stamps (``H>op`` a request sent, ``H<op`` a reply read, ``name(``/``name)`` around
the host's steps) are taken here. Printed: each stamp's median time from the call's start over
N calls, and the step from the one before. Stamps before 0 are the recycle that armed the
session. The patch is written against the guest of its commit; when it no longer applies, make
it again from a tree with the stamps put back in by hand.

Usage: ``python bench/trace_one.py [-n 100] [--gap 0.05]``.
"""

from __future__ import annotations

import argparse
import collections
import functools
import importlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
RESPONSE = "```python\n# response {}\nimport sys\nprint(int(sys.stdin.readline()) + 1)\n```"
TRUTH = json.dumps({"inputs": ["1\n"], "outputs": ["2\n"]})
#: Host steps stamped on entry and exit: (module, qualified name, tag).
HOST_STEPS = [
    ("arbiter.verl.reward", "prepare", "prep"), ("arbiter.verl.reward", "finish", "finish"),
    ("arbiter.judge.step.stepjudge", "StepJudge.submit", "submit"),
    ("arbiter.judge.step.stepjudge", "StepJudge._finished", "sj_done"),
    ("arbiter.sandbox.pool", "SandboxPool.acquire", "acquire"),
    ("arbiter.sandbox.pool", "SandboxPool.release", "release"),
    ("arbiter.sandbox.pool", "SandboxPool._recycle", "recycle"),
    ("arbiter.sandbox.sandbox", "Sandbox.load_python", "load"),
    ("arbiter.sandbox.sandbox", "Sandbox._run", "run"),
    ("arbiter.sandbox.meter", "RunMeter.before", "before"),
    ("arbiter.sandbox.meter", "RunMeter.after", "after"),
]


def traced(n: int, gap: float) -> None:
    """In the patched tree's process: ``n`` timed calls, the median timeline printed."""
    from arbiter.sandbox import channel
    from arbiter.verl.reward import compute_score

    stamps: list[tuple[str, int]] = []
    guest: dict[str, list] = {}
    send, read = channel.Channel.send, channel.Channel.read_raw_frame

    def sent(self, header, blobs=()):
        stamps.append(("H>" + str(header.get("op"))[:7], time.monotonic_ns()))
        return send(self, header, blobs)

    def got(self, *a, **k):
        frame = read(self, *a, **k)
        stamps.append(("H<" + str(frame[0].get("op"))[:7], time.monotonic_ns()))
        if "trace" in frame[0]:
            guest["last"] = frame[0]["trace"]
        return frame

    channel.Channel.send, channel.Channel.read_raw_frame = sent, got
    for mod, qual, tag in HOST_STEPS:
        _stamp_calls(importlib.import_module(mod), qual, tag, stamps)
    for i in range(8):
        compute_score("codecontests", RESPONSE.format(i), TRUTH)
    time.sleep(0.3)
    at: dict[str, list[float]] = collections.defaultdict(list)
    total = []
    for i in range(n):
        stamps.clear()
        guest.clear()
        t0 = time.monotonic_ns()
        assert compute_score("codecontests", RESPONSE.format(100 + i), TRUTH)["score"] == 1.0
        t1 = time.monotonic_ns()
        total.append((t1 - t0) / 1e6)
        events = [("H_start", t0)] + [e for e in stamps if e[1] <= t1]
        events += [(tag, ns) for tag, ns in guest.get("last", [])] + [("H_end", t1)]
        seen: collections.Counter = collections.Counter()
        for tag, ns in sorted(events, key=lambda e: e[1]):
            seen[tag] += 1
            at[tag + ("" if seen[tag] == 1 else str(seen[tag]))].append((ns - t0) / 1e6)
        if gap:
            time.sleep(gap)
    print(f"{n} calls, gap {gap} s, load {os.getloadavg()[0]:.2f}: p50 {statistics.median(total):.2f} ms "
          f"(p25 {sorted(total)[n // 4]:.2f}); the debug build's stamps cost a little")
    before = 0.0
    for tag in sorted(at, key=lambda t: statistics.median(at[t])):
        m = statistics.median(at[tag])
        print(f"  {tag:<12} in {len(at[tag]):4d} calls  at {m:8.3f} ms  (+{m - before:.3f})")
        before = m


def _stamp_calls(mod, qual: str, tag: str, stamps: list) -> None:
    obj = mod
    *path, name = qual.split(".")
    for part in path:
        obj = getattr(obj, part)
    fn = getattr(obj, name)

    @functools.wraps(fn)
    def wrapper(*a, **k):
        stamps.append((tag + "(", time.monotonic_ns()))
        try:
            return fn(*a, **k)
        finally:
            stamps.append((tag + ")", time.monotonic_ns()))

    setattr(obj, name, wrapper)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-n", type=int, default=100)
    ap.add_argument("--gap", type=float, default=0.05, help="seconds between calls (0: back to back)")
    ap.add_argument("--traced", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.traced:
        traced(args.n, args.gap)
        return
    with tempfile.TemporaryDirectory(prefix="arbiter-trace-") as tmp:
        os.chmod(tmp, 0o755)  # (the sandbox's user reads the guest's code from it)
        shutil.copytree(HERE.parent / "src", Path(tmp) / "src", ignore=shutil.ignore_patterns("__pycache__"))
        patch = subprocess.run(["patch", "-p1", "-s", "-d", tmp, "-i", str(HERE / "trace_one.patch")],
                               capture_output=True, text=True)
        if patch.returncode != 0:
            sys.exit(f"bench/trace_one.patch no longer applies to this tree:\n{patch.stdout}{patch.stderr}")
        env = dict(os.environ, PYTHONPATH=str(Path(tmp) / "src"))
        subprocess.run([sys.executable, __file__, "--traced", "-n", str(args.n), "--gap", str(args.gap)],
                       env=env, check=True)


if __name__ == "__main__":
    main()
