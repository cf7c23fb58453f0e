"""A warm one-case submission through ``compute_score``: this tree against another, side by side.

One trivial Python codegen row (one stdin case), scored by ``arbiter.verl.reward.compute_score``
(the reward's extraction and suite parsing, a warm pooled sandbox, the load, the case, the
release; a new program each call, so no verdict is reused) in a fresh process of each tree,
alternately, round by round: after a warm-up, N calls back to back (as verl's naive reward
manager makes them: the sandbox just released is recycled while the next call runs) or
``--gap`` seconds apart (the recycle done before the next call). ``--thread``: the calls are made
from a thread that is not the main one (verl's reward-loop workers, ``compute_score_async``'s pool,
a service's handlers): there the step judge runs a task in the calling thread (docs/step.md);
from the main thread its intake thread does (an interrupt must not land in its bookkeeping).
Printed: p25/p50/p75 ms of each tree, their ratio, the load average. Target: p50 <= 5 ms.

Usage: ``python bench/score_one.py --compare TREE [--rounds 4] [-n 30] [--gap 0] [--thread]``. TREE is a
checkout; its ``.venv/bin/python`` runs it, or, without one, this interpreter with
``PYTHONPATH=TREE/src``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
#: A new program each call (a comment numbers it), as every response of a rollout is: the step
#: judge would reuse the verdict of a program it judged already (docs/step.md).
RESPONSE = "```python\n# response {}\nimport sys\nprint(int(sys.stdin.readline()) + 1)\n```"
TRUTH = json.dumps({"inputs": ["1\n"], "outputs": ["2\n"]})


def calls(n: int, gap: float) -> None:
    """In one tree's process: ``n`` timed calls after a warm-up, as one JSON line (ms each)."""
    from arbiter.verl.reward import compute_score

    count = iter(range(1 << 30))

    def one() -> float:
        response = RESPONSE.format(next(count))
        t = time.perf_counter()
        r = compute_score("codecontests", response, TRUTH)
        assert r["score"] == 1.0, r
        return (time.perf_counter() - t) * 1e3

    for _ in range(8):
        one()
    time.sleep(0.3)  # (the warm-up's recycles and spares done)
    out = []
    for _ in range(n):
        out.append(one())
        if gap:
            time.sleep(gap)
    print(json.dumps(out))


def calls_in_a_thread(n: int, gap: float) -> None:
    """:func:`calls` from a thread of its own (not the main thread)."""
    import threading

    worker = threading.Thread(target=calls, args=(n, gap), name="caller")
    worker.start()
    worker.join()


def run_in(tree: Path, n: int, gap: float, thread: bool = False) -> list[float]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    python = tree / ".venv" / "bin" / "python"
    if not python.exists():
        python, env["PYTHONPATH"] = Path(sys.executable), str(tree / "src")
    out = subprocess.run([str(python), str(Path(__file__).resolve()), "--calls", str(n), "--gap", str(gap),
                          *(["--thread"] if thread else [])],
                         cwd=tree, env=env, capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"{tree}: failed:\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--compare", type=Path, help="another checkout, run alternately with this one")
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("-n", type=int, default=30, help="timed calls per round and tree")
    ap.add_argument("--gap", type=float, default=0.0, help="seconds between calls (0: back to back)")
    ap.add_argument("--thread", action="store_true", help="call from a thread that is not the main one")
    ap.add_argument("--calls", type=int, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.calls is not None:
        (calls_in_a_thread if args.thread else calls)(args.calls, args.gap)
        return
    trees = [HERE.parent] + ([args.compare.resolve()] if args.compare else [])
    ms: dict[Path, list[float]] = {t: [] for t in trees}
    loads = []
    for i in range(args.rounds):
        for tree in trees if i % 2 == 0 else trees[::-1]:
            ms[tree] += run_in(tree, args.n, args.gap, args.thread)
            loads.append(os.getloadavg()[0])
    print(f"one-case compute_score{' from a thread' if args.thread else ''}, {args.rounds} interleaved rounds x "
          f"{args.n} calls, gap {args.gap} s, "
          f"{os.cpu_count()} cores, load {min(loads):.1f}-{max(loads):.1f}")
    print(f"{'tree':<40} {'p25 ms':>8} {'p50 ms':>8} {'p75 ms':>8}")
    for tree in trees:
        xs = sorted(ms[tree])
        name = "this tree" if tree == HERE.parent else str(tree)
        print(f"{name:<40} {xs[len(xs) // 4]:>8.2f} {statistics.median(xs):>8.2f} {xs[3 * len(xs) // 4]:>8.2f}")
    if len(trees) == 2:
        print(f"p50 other / this: {statistics.median(ms[trees[1]]) / statistics.median(ms[trees[0]]):.2f}x "
              "(target: this tree's p50 <= 5 ms)")


if __name__ == "__main__":
    main()
