"""Code-generation reward throughput: verl's batch variant against one-by-one calls, and the
streaming memory of ``arbiter score`` at the card's size.

1. The same responses (bench/data/codegen: 25 real problems from APPS/CodeRL, LeetCodeDataset and
   NeMo-Gym, 102 responses: references, labelled model generations, rollouts, wrong variants)
   scored by ``compute_score`` called one by one (verl's naive manager) and by
   ``compute_score_batch`` (verl's batch manager: one sandbox per response, one worker per core).
   Printed side by side: responses/s, cases/s, median and p90 seconds per response, the speedup;
   both modes must give the same verdicts.
2. ``arbiter score``'s pipeline on synthetic data of the card's shape (14,927 rows x 8 responses,
   ~80 cases per row; responses are prose without a code block except one real program per
   300 rows, so the streaming machinery is measured, not the judge) against a tenth of it:
   peak RSS (VmHWM) and rows/s side by side.

3. ``--compare TREE``: the same mix (``compute_score_batch`` on every response) run alternately
   by this checkout and by another one (e.g. a checkout of main from before a change), each
   through its own ``.venv/bin/python`` in a subprocess, ``--rounds`` times; printed: responses/s
   of both per round, the median ratio, whether both gave the same verdicts, and the bound the
   TLE responses set (they run to their CPU limit under any judge). With
   ``--shape weak`` the mix is shaped like the card's weak-model rollouts (median pass rate 0):
   8 responses per problem, 7 of them its failing ones (label 0.0, or the unlabelled variants that
   are usually wrong), cycled, and 1 reference; problems with no failing response are left out.

Usage: .venv/bin/python bench/score.py [--rows 14927] [--skip-memory] [--compare TREE [--rounds 3]
       [--shape mix|weak]]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
DATA = HERE / "data" / "codegen"
RUN_VERDICTS = {"WA", "TLE", "MLE", "RE", "OLE"}


def load_rows() -> dict[str, dict]:
    """The bench's problems by the key completions.jsonl names them with."""
    rows = {}
    with open(DATA / "rows.jsonl", encoding="utf-8") as f:
        for line in f:
            r = json.loads(line)
            rows[f"{r['data_source']}:{r['extra_info']['index']}"] = r
    return rows


def load_items():
    rows = load_rows()
    items, expected = [], []
    with open(DATA / "completions.jsonl", encoding="utf-8") as f:
        for line in f:
            c = json.loads(line)
            r = rows[c["key"]]
            for resp, exp in zip(c["responses"], c["expected"]):
                items.append((r["data_source"], resp, r["reward_model"]["ground_truth"], r["extra_info"]))
                expected.append(exp)
    return items, expected, len(rows)


#: The origins of unlabelled responses that are usually wrong (bench/data/codegen/README.md).
USUALLY_WRONG = ("dataset response (model answer, unlabelled)",
                 "reference with its first comparison flipped (usually wrong)")


def weak_items(per_problem: int = 8) -> list[tuple]:
    """The mix shaped like weak-model rollouts: for each problem with a failing response,
    ``per_problem - 1`` failing responses (cycled) and one reference (module docstring)."""
    rows = load_rows()
    items = []
    with open(DATA / "completions.jsonl", encoding="utf-8") as f:
        for line in f:
            c = json.loads(line)
            r = rows[c["key"]]
            triples = list(zip(c["responses"], c["expected"], c["origin"]))
            failing = [resp for resp, exp, origin in triples if exp == 0.0 or origin in USUALLY_WRONG]
            reference = [resp for resp, _, origin in triples if origin == "reference"]
            if not failing or not reference:
                continue
            chosen = [failing[i % len(failing)] for i in range(per_problem - 1)] + reference[:1]
            items += [(r["data_source"], resp, r["reward_model"]["ground_truth"], r["extra_info"])
                      for resp in chosen]
    return items


def cases_run(r: dict) -> int:
    """Cases actually executed: the passed ones plus the failing one (all-or-nothing stops there)."""
    return r["passed"] + (1 if r["verdict"] in RUN_VERDICTS else 0)


def line(name: str, results: list[dict], wall: float) -> list[str]:
    per = sorted(r["seconds"] for r in results)
    cases = sum(cases_run(r) for r in results)
    p90 = per[min(len(per) - 1, int(0.9 * len(per)))]
    return [name, str(len(results)), str(cases), f"{wall:.2f}", f"{len(results) / wall:.2f}", f"{cases / wall:.1f}",
            f"{statistics.median(per):.3f}", f"{p90:.3f}"]


def table(header: list[str], rows: list[list[str]]) -> str:
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(header)]
    fmt = lambda cells: "  ".join(c.rjust(w) if i else c.ljust(w) for i, (c, w) in enumerate(zip(cells, widths)))  # noqa: E731
    return "\n".join([fmt(header), fmt(["-" * w for w in widths]), *map(fmt, rows)])


def bench_batch_vs_serial() -> None:
    from arbiter.judge.judge import default_workers
    from arbiter.verl.reward import compute_score, compute_score_batch

    items, expected, problems = load_items()
    compute_score(*items[0])  # warm-up: first sandbox start, imports
    t = time.monotonic()
    serial = [compute_score(data_source=d, solution_str=s, ground_truth=g, extra_info=e) for d, s, g, e in items]
    serial_wall = time.monotonic() - t
    t = time.monotonic()
    batch = compute_score_batch([i[0] for i in items], [i[1] for i in items], [i[2] for i in items],
                                [i[3] for i in items])
    batch_wall = time.monotonic() - t
    same = sum(1 for a, b in zip(serial, batch) if (a["verdict"], a["score"]) == (b["verdict"], b["score"]))
    labelled = [(e, r["score"]) for e, r in zip(expected, batch) if e is not None]
    agree = sum(1 for e, s in labelled if e == s)
    verdicts: dict[str, int] = {}
    for r in batch:
        verdicts[r["verdict"]] = verdicts.get(r["verdict"], 0) + 1
    print(f"== compute_score one by one vs compute_score_batch ({problems} problems, {len(items)} responses, "
          f"{default_workers()} cores, load average {os.getloadavg()[0]:.1f})")
    print(table(["mode", "responses", "cases", "wall s", "responses/s", "cases/s", "median s/resp", "p90 s/resp"],
                [line("one by one", serial, serial_wall), line("batch", batch, batch_wall)]))
    print(f"speedup (one-by-one wall / batch wall): {serial_wall / batch_wall:.2f}x")
    print(f"same verdict and score in both modes: {same}/{len(items)}; "
          f"labelled responses matching their label: {agree}/{len(labelled)}; verdicts: {verdicts}")
    if same != len(items) or agree != len(labelled):
        sys.exit("MISMATCH")


PROBE = textwrap.dedent('''
    import functools, json, sys, time
    from arbiter.pipelines.codegen import score_completions
    from arbiter.verl.reward import RewardOptions, iter_scores
    t = time.monotonic()
    run = score_completions(sys.argv[1], sys.argv[2], sys.argv[3],
                            scorer=functools.partial(iter_scores, opts=RewardOptions(), raise_errors=False))
    wall = time.monotonic() - t
    hwm = next(int(l.split()[1]) for l in open("/proc/self/status") if l.startswith("VmHWM:"))
    print(json.dumps({"hwm_kib": hwm, "rows": run.rows, "responses": run.responses, "wall": wall}))
''')


def synthetic(folder: Path, n_rows: int, per_row: int = 8) -> tuple[Path, Path]:
    import pyarrow as pa
    import pyarrow.parquet as pq

    gt = json.dumps({"inputs": [f"{i} {i}\n" for i in range(80)], "outputs": [f"{2 * i}\n" for i in range(80)]})
    prose = "Let me think about this problem step by step. " * 40
    ok = "```python\na, b = map(int, input().split())\nprint(a + b)\n```"

    def row(i: int) -> dict:
        return {"data_source": "code_taco", "prompt": [{"role": "user", "content": f"problem {i}"}], "ability": "code",
                "reward_model": {"style": "rule", "ground_truth": gt}, "extra_info": {"index": f"deepcoder_{i}"}}

    dataset = folder / f"rows{n_rows}.parquet"
    writer = None
    for start in range(0, n_rows, 1000):
        table = pa.Table.from_pylist([row(i) for i in range(start, min(n_rows, start + 1000))])
        writer = writer or pq.ParquetWriter(dataset, table.schema)
        writer.write_table(table)
    writer.close()
    completions = folder / f"completions{n_rows}.jsonl"
    with open(completions, "w") as f:
        for i in range(n_rows):
            responses = [f"{prose} attempt {j}" for j in range(per_row)]
            if i % 300 == 0:
                responses[0] = ok
            f.write(json.dumps({"index": f"deepcoder_{i}", "responses": responses}) + "\n")
    return dataset, completions


def bench_memory(n_rows: int) -> None:
    print("\n== arbiter score streaming: peak RSS vs data size (synthetic, 8 responses per row)")
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        for n in (max(1, n_rows // 10), n_rows):
            dataset, completions = synthetic(tmp, n)
            size = (dataset.stat().st_size + completions.stat().st_size) / 2**20
            probe = subprocess.run([sys.executable, "-c", PROBE, str(dataset), str(completions), str(tmp / f"out{n}")],
                                   capture_output=True, text=True, check=True)
            got = json.loads(probe.stdout.strip().splitlines()[-1])
            rows.append([f"{n} x 8", f"{size:.0f}", f"{got['hwm_kib'] / 1024:.0f}", f"{got['wall']:.1f}",
                         f"{got['rows'] / got['wall']:.0f}", f"{got['responses'] / got['wall']:.0f}"])
    print(table(["rows x responses", "input MiB", "peak RSS MiB", "wall s", "rows/s", "responses/s"], rows))


def mix_once(shape: str) -> None:
    """One timed ``compute_score_batch`` over the mix (after a warm-up call), as one JSON line:
    wall seconds, responses, cases run, verdicts. Run by :func:`bench_compare` in each tree."""
    from arbiter.verl.reward import compute_score, compute_score_batch

    items = weak_items() if shape == "weak" else load_items()[0]
    compute_score(*items[0])  # warm-up: first sandbox start, imports
    t = time.monotonic()
    batch = compute_score_batch([i[0] for i in items], [i[1] for i in items], [i[2] for i in items],
                                [i[3] for i in items])
    wall = time.monotonic() - t
    print(json.dumps({"wall": wall, "responses": len(batch), "cases": sum(cases_run(r) for r in batch),
                      "verdicts": [r["verdict"] for r in batch],
                      "tle_seconds": sum(r["seconds"] for r in batch if r["verdict"] == "TLE")}))


def bench_compare(other: Path, rounds: int, shape: str) -> None:
    """The mix in this tree and in ``other``, alternately, each by its own venv's interpreter."""
    trees = {"this tree": HERE.parent, str(other): other}
    for name, tree in trees.items():
        if not (tree / ".venv" / "bin" / "python").exists():
            sys.exit(f"{name}: no {tree / '.venv/bin/python'}")
    walls: dict[str, list[float]] = {name: [] for name in trees}
    tle: dict[str, list[float]] = {name: [] for name in trees}
    verdicts: dict[str, list[str]] = {}
    responses = cases = 0
    for _ in range(rounds):
        for name, tree in trees.items():
            env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
            out = subprocess.run([str(tree / ".venv/bin/python"), str(Path(__file__).resolve()), "--mix-once",
                                  "--shape", shape],
                                 cwd=tree, env=env, capture_output=True, text=True)
            if out.returncode != 0:
                sys.exit(f"{name}: the mix failed:\n{out.stderr[-3000:]}")
            got = json.loads(out.stdout.strip().splitlines()[-1])
            walls[name].append(got["wall"])
            tle[name].append(got.get("tle_seconds", 0.0))
            verdicts[name], responses, cases = got["verdicts"], got["responses"], got["cases"]
    this, that = trees
    print(f"== RL-shaped mix, shape {shape} ({responses} responses, {cases} cases run, compute_score_batch): this tree vs {that}, {rounds} "
          f"interleaved rounds, load average {os.getloadavg()[0]:.1f}")
    rows = [[str(i + 1), f"{responses / a:.2f}", f"{responses / b:.2f}", f"{b / a:.2f}x"]
            for i, (a, b) in enumerate(zip(walls[this], walls[that]))]
    ratio = statistics.median(b / a for a, b in zip(walls[this], walls[that]))
    rows.append(["median", f"{responses / statistics.median(walls[this]):.2f}",
                 f"{responses / statistics.median(walls[that]):.2f}", f"{ratio:.2f}x"])
    print(table(["round", "this tree responses/s", "other responses/s", "this / other"], rows))
    same = sum(a == b for a, b in zip(verdicts[this], verdicts[that]))
    print(f"same verdict in both trees: {same}/{responses}")
    _print_bound(responses, statistics.median(tle[this]), statistics.median(walls[that]))


def _print_bound(responses: int, tle_seconds: float, other_wall: float) -> None:
    """What the time limits alone allow: a TLE response runs until its CPU limit whatever the
    judge, so with one worker per core no judge scores the mix faster than this."""
    from arbiter.judge.judge import default_workers

    if tle_seconds <= 0:
        return
    floor = tle_seconds / default_workers()
    print(f"time-limit bound: TLE responses took {tle_seconds:.1f} s (their CPU limits) on {default_workers()} "
          f"workers, so at most {responses / floor:.2f} responses/s, {other_wall / floor:.2f}x the other tree, "
          "for any judge")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=14927, help="rows of the synthetic streaming run (the card: 14,927)")
    ap.add_argument("--skip-memory", action="store_true", help="only the batch vs one-by-one comparison")
    ap.add_argument("--compare", type=Path, help="another checkout: the mix alternately here and there, side by side")
    ap.add_argument("--rounds", type=int, default=3, help="rounds of --compare")
    ap.add_argument("--shape", choices=("mix", "weak"), default="mix",
                    help="--compare's mix: the whole mix, or shaped like weak-model rollouts")
    ap.add_argument("--mix-once", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.mix_once:
        mix_once(args.shape)
        return
    if args.compare is not None:
        bench_compare(args.compare.resolve(), args.rounds, args.shape)
        return
    bench_batch_vs_serial()
    if not args.skip_memory:
        bench_memory(args.rows)


if __name__ == "__main__":
    main()
