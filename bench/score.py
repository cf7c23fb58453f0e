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

3. ``--compare TREE``: the same batch (``compute_score_batch`` on every response) run alternately
   by this checkout and by another one (e.g. a checkout of main from before a change), each
   through its own ``.venv/bin/python`` in a subprocess, ``--rounds`` times, then once more in
   this checkout with its reuse, case order and schedule switched off; printed per shape (median
   of the rounds, with the load average): responses/s, judge CPU seconds per response (this
   process and every process it started, reaped by whoever: a cpuacct group of the run's own,
   :class:`CpuMeter`), makespan / ideal (ideal: that CPU over the cores), the
   share of the judge slots busy while the batch ran (judge seconds of the responses run over
   wall x cores: a load-independent view of idle slots, the tail), the reuse rate, cases run per
   failing response, and the TLE responses' CPU seconds (they run to their CPU limit under any
   judge). Every response's score must be equal in all three runs.
   Shapes: ``mix`` (every response above), ``weak`` (the mix shaped like the card's weak-model
   rollouts: 8 responses per problem, 7 failing ones cycled and 1 reference), ``grpo-weak`` /
   ``grpo-strong`` / ``grpo`` (both): GRPO steps built from bench/data/grpo (bench/grpo_shapes.py,
   docs/step.md).

4. ``--draws N``: the GRPO shapes' draws 0..N-1 in this tree only (each a fresh process): makespan /
   ideal, slots busy and the TLE responses per draw, with their mean and max (a tail is the luck of
   a draw: where its time-limited responses land).

Usage: .venv/bin/python bench/score.py [--rows 14927] [--skip-memory] [--compare TREE [--rounds 3]
       [--shape mix|weak|grpo-weak|grpo-strong|grpo] [--draw 0]] [--draws N [--shape grpo-strong]]
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


def tree_cpu_seconds() -> float:
    """CPU seconds used so far by this process and every process under it that is alive or was
    reaped by one of them. Not the processes of a sandbox's session: the kernel reaps what is left
    in a PID namespace when its PID 1 ends without adding their CPU to anyone (the forker, and
    with it every case it ran), so this misses most of the judge's CPU; :class:`CpuMeter` counts
    by cgroup and falls back to this where it cannot."""
    tick = os.sysconf("SC_CLK_TCK")
    parent: dict[int, int] = {}
    times: dict[int, int] = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/stat", "rb") as f:
                fields = f.read().rsplit(b")", 1)[1].split()
        except OSError:
            continue
        pid = int(entry.name)
        parent[pid] = int(fields[1])
        times[pid] = sum(int(x) for x in fields[11:15])  # utime stime cutime cstime
    me, total = os.getpid(), 0
    for pid, t in times.items():
        p = pid
        while p not in (0, 1) and p != me:
            p = parent.get(p, 0)
        total += t if p == me else 0
    return total / tick


CPUACCT = Path("/sys/fs/cgroup/cpuacct")


def _own_cpuacct() -> Path | None:
    """This process's group in a cgroup v1 ``cpuacct`` hierarchy not shared with ``cpu`` (so
    moving into a child group changes no CPU weight), if there is one."""
    with open("/proc/self/cgroup") as f:
        for line in f:
            _, names, path = line.rstrip("\n").split(":", 2)
            if names.split(",") == ["cpuacct"]:
                return CPUACCT / path.lstrip("/")
    return None


class CpuMeter:
    """CPU seconds of this process and everything it starts (the judge, its sandboxes, every
    program they ran, reaped by whoever): the ``cpuacct.usage`` of a group of its own that this
    process moves into (its sandboxes' groups are made under it and charge it), else
    :func:`tree_cpu_seconds`. Made before the first sandbox starts; ``how`` says which."""

    def __init__(self, group: str | None):
        own = _own_cpuacct() if group else None
        self.group = own / group if own is not None else None
        try:
            if self.group is None:
                raise OSError("no cgroup v1 cpuacct hierarchy of its own")
            self.group.mkdir(exist_ok=True)
            (self.group / "cgroup.procs").write_text("0")
            self.how = f"cpuacct group {self.group.name}"
        except OSError as exc:
            self.group, self.how = None, f"process tree ({exc})"

    def seconds(self) -> float:
        if self.group is None:
            return tree_cpu_seconds()
        return int((self.group / "cpuacct.usage").read_text()) / 1e9


def remove_group(group: str) -> None:
    """Remove the (empty by now) group a finished run's :class:`CpuMeter` made, deepest first."""
    own = _own_cpuacct()
    root = own / group if own is not None else None
    if root is None or not root.is_dir():
        return
    for d in sorted((p for p in root.rglob("*") if p.is_dir()), key=lambda p: -len(p.parts)) + [root]:
        try:
            d.rmdir()
        except OSError:
            pass


SHAPE_ITEMS = {"mix": lambda: load_items()[0], "weak": weak_items}
OFF = {"reuse": False, "case_order": "suite", "schedule": "fifo"}  # this tree's three switches, all off


#: The GRPO shapes' draw (``--draw``: grpo_shapes' seed; another draw is another step of the same prompts).
DRAW = 0


def _items(shape: str) -> list[tuple]:
    if shape.startswith("grpo-"):
        import grpo_shapes

        return grpo_shapes.items(shape.removeprefix("grpo-"), DRAW)
    return SHAPE_ITEMS[shape]()


def mix_once(shape: str, mode: str = "on", group: str | None = None) -> None:
    """One timed ``compute_score_batch`` over the shape (after a warm-up call on a row outside
    it), as one JSON line: wall and CPU seconds (:class:`CpuMeter` in the cpuacct ``group``),
    the per-response results. ``mode="off"``: this tree's reuse, case order and schedule
    switched off. Run by :func:`bench_compare`."""
    meter = CpuMeter(group)  # before any sandbox starts: theirs are made inside its group
    import grpo_shapes

    from arbiter.verl.reward import compute_score, compute_score_batch

    items = _items(shape)
    kwargs = OFF if mode == "off" else {}
    compute_score(*grpo_shapes.warmup_item(), **kwargs)  # warm-up: first sandbox start, imports
    cpu, tree, t = meter.seconds(), tree_cpu_seconds(), time.monotonic()
    batch = compute_score_batch([i[0] for i in items], [i[1] for i in items], [i[2] for i in items],
                                [i[3] for i in items], **kwargs)
    wall, cpu, tree = time.monotonic() - t, meter.seconds() - cpu, tree_cpu_seconds() - tree
    keep = ("score", "verdict", "passed", "total", "judge_seconds", "cpu_seconds", "cached")
    print(json.dumps({"wall": wall, "cpu": cpu, "cpu_meter": meter.how, "cpu_tree": tree, "cores": len(os.sched_getaffinity(0)),
                      "results": [{k: r.get(k, False) for k in keep} for r in batch]}))


def _run_tree(tree: Path, shape: str, mode: str) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    group = f"arbiter-bench-{os.getpid()}"
    try:
        out = subprocess.run([str(tree / ".venv/bin/python"), str(Path(__file__).resolve()), "--mix-once",
                              "--shape", shape, "--mode", mode, "--cpu-group", group, "--draw", str(DRAW)],
                             cwd=tree, env=env, capture_output=True, text=True)
    finally:
        remove_group(group)
    if out.returncode != 0:
        sys.exit(f"{tree} ({mode}): the mix failed:\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def cases_ran(r: dict) -> int:
    """Cases executed for this response now: none for a reused verdict."""
    return 0 if r.get("cached") else cases_run(r)


def figures(got: dict) -> dict:
    """The per-shape figures of one run (docs/step.md, "Measuring")."""
    res, n = got["results"], len(got["results"])
    failing = [r for r in res if r["verdict"] in RUN_VERDICTS]
    judged = [r for r in res if r["verdict"] not in ("FORMAT_ERROR", "INVALID_TASK")]
    tle = [r for r in res if r["verdict"] == "TLE" and not r.get("cached")]
    ideal = got["cpu"] / got["cores"]
    busy = sum(r["judge_seconds"] for r in res if not r.get("cached")) / (got["wall"] * got["cores"])
    return {"responses/s": n / got["wall"], "judge CPU-s/resp": got["cpu"] / n, "makespan/ideal": got["wall"] / ideal,
            "slots busy": busy,
            "hit rate": sum(1 for r in judged if r.get("cached")) / max(1, len(judged)),
            "cases/failing resp": sum(cases_ran(r) for r in failing) / max(1, len(failing)),
            "wall s": got["wall"], "CPU s": got["cpu"], "TLE run": len(tle),
            "TLE CPU s": sum(r["cpu_seconds"] for r in tle),
            "meter": got.get("cpu_meter", "process tree"), "tree CPU s": got.get("cpu_tree", got["cpu"])}


def bench_compare(other: Path, rounds: int, shapes: list[str]) -> None:
    """Each shape in this tree and in ``other`` (today's main), alternately, each by its own
    venv's interpreter; once more in this tree with its three switches off. Scores must be equal."""
    for tree in (HERE.parent, other):
        if not (tree / ".venv" / "bin" / "python").exists():
            sys.exit(f"no {tree / '.venv/bin/python'}")
    for shape in shapes:
        runs: dict[str, list[dict]] = {"this tree": [], "other": []}
        scores: dict[str, list] = {}
        for i in range(rounds):
            for name, tree in (("other", other), ("this tree", HERE.parent)):
                got = _run_tree(tree, shape, "on")
                runs[name].append(figures(got))
                scores.setdefault(name, [r["score"] for r in got["results"]])
                if scores[name] != [r["score"] for r in got["results"]]:
                    sys.exit(f"{shape}: {name} gave other scores in round {i + 1}")
        off = _run_tree(HERE.parent, shape, "off")
        scores["this tree, switches off"] = [r["score"] for r in off["results"]]
        _print_shape(shape, other, runs, figures(off), scores)


def bench_draws(shapes: list[str], draws: int) -> None:
    """Each GRPO shape's draws 0..``draws``-1 in this tree (a fresh process each): the tail is
    the luck of a draw (docs/step.md, "No tail"), so its makespan is quoted per draw and on average."""
    global DRAW
    cols = ["makespan/ideal", "slots busy", "wall s", "CPU s", "TLE run", "TLE CPU s"]
    for shape in shapes:
        rows, got = [], []
        for draw in range(draws):
            DRAW = draw
            f = figures(_run_tree(HERE.parent, shape, "on"))
            got.append(f)
            rows.append([str(draw)] + [_cell(f[c]) for c in cols] + [f"{os.getloadavg()[0]:.1f}"])
        rows.append(["mean"] + [_cell(statistics.mean(f[c] for f in got)) for c in cols] + [""])
        rows.append(["max"] + [_cell(max(f[c] for f in got)) for c in cols] + [""])
        print(f"\n== {shape}: draws 0-{draws - 1}, compute_score_batch in this tree, {got_cores()} cores")
        print(table(["draw"] + cols + ["load"], rows))


def _cell(value: float) -> str:
    return str(int(value)) if float(value).is_integer() and abs(value) >= 1 else f"{value:.3f}"


def got_cores() -> int:
    return len(os.sched_getaffinity(0))


def _distinct(shape: str) -> int:
    """Distinct (row, program after code extraction) pairs of the shape."""
    from arbiter.rewards.extract import extract_code

    return len({(ds, str(extra.get("index")), extract_code(resp).code) for ds, resp, _, extra in _items(shape)})


def _print_shape(shape: str, other: Path, runs: dict[str, list[dict]], off: dict, scores: dict) -> None:
    load = " ".join(f"{x:.1f}" for x in os.getloadavg())
    n = len(next(iter(scores.values())))
    draw = f" (draw {DRAW})" if shape.startswith("grpo-") else ""
    print(f"\n== {shape}{draw}: {n} responses ({_distinct(shape)} distinct programs), compute_score_batch; this tree vs "
          f"{other} (median of {len(runs['other'])} interleaved rounds); load average {load}")
    cols = ["responses/s", "judge CPU-s/resp", "makespan/ideal", "slots busy", "hit rate", "cases/failing resp",
            "wall s", "CPU s",
            "TLE run", "TLE CPU s"]
    med = {name: {c: statistics.median(f[c] for f in fs) for c in cols + ["tree CPU s"]} for name, fs in runs.items()}
    med["this tree, switches off (1 run)"] = off
    rows = [[name] + [_cell(m[c]) for c in cols] for name, m in med.items()]
    print(table(["tree"] + cols, rows))
    print(f"CPU counted by {runs['this tree'][0]['meter']}; the process tree alone (the sandboxes' reaped "
          f"processes not counted) saw {med['this tree']['tree CPU s']:.1f} s here, "
          f"{med['other']['tree CPU s']:.1f} s there")
    a, b = med["this tree"], med["other"]
    print(f"this / other: CPU per step {a['CPU s'] / b['CPU s']:.2f}x, wall {a['wall s'] / b['wall s']:.2f}x, "
          f"responses/s {a['responses/s'] / b['responses/s']:.2f}x")
    no_tle = [(m["CPU s"] - m["TLE CPU s"]) for m in (a, b)]
    print(f"TLE responses (they run to their CPU limit under any judge): {a['TLE run']} run here, {b['TLE run']} "
          f"there, {a['TLE CPU s']:.1f} and {b['TLE CPU s']:.1f} CPU s in their cases; without them, CPU per step "
          f"{no_tle[0] / max(1e-9, no_tle[1]):.2f}x; time-limit bound (TLE CPU / cores): "
          f"{a['TLE CPU s'] / got_cores():.1f} s here, {b['TLE CPU s'] / got_cores():.1f} s there")
    ref = scores["other"]
    for name, s in scores.items():
        same = sum(x == y for x, y in zip(s, ref))
        print(f"scores equal to the other tree's: {name}: {same}/{len(ref)}")
        if same != len(ref):
            sys.exit(f"MISMATCH: {shape}: {name}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=14927, help="rows of the synthetic streaming run (the card: 14,927)")
    ap.add_argument("--skip-memory", action="store_true", help="only the batch vs one-by-one comparison")
    ap.add_argument("--compare", type=Path, help="another checkout: the mix alternately here and there, side by side")
    ap.add_argument("--rounds", type=int, default=3, help="rounds of --compare")
    ap.add_argument("--shape", choices=("mix", "weak", "grpo-weak", "grpo-strong", "grpo"), default="mix",
                    help="--compare's batch: the whole mix, shaped like weak-model rollouts, or a GRPO step "
                         "(grpo: both GRPO shapes)")
    ap.add_argument("--draw", type=int, default=0,
                    help="the GRPO shapes' draw (seed): another step of the same prompts")
    ap.add_argument("--draws", type=int,
                    help="the GRPO shapes' draws 0..N-1 in this tree only: makespan per draw, mean, max")
    ap.add_argument("--mix-once", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--mode", choices=("on", "off"), default="on", help=argparse.SUPPRESS)
    ap.add_argument("--cpu-group", help=argparse.SUPPRESS)
    args = ap.parse_args()
    global DRAW
    DRAW = args.draw
    if args.mix_once:
        mix_once(args.shape, args.mode, args.cpu_group)
        return
    if args.draws:
        bench_draws(["grpo-weak", "grpo-strong"] if args.shape in ("grpo", "mix") else [args.shape], args.draws)
        return
    if args.compare is not None:
        shapes = ["grpo-weak", "grpo-strong"] if args.shape == "grpo" else [args.shape]
        bench_compare(args.compare.resolve(), args.rounds, shapes)
        return
    bench_batch_vs_serial()
    if not args.skip_memory:
        bench_memory(args.rows)


if __name__ == "__main__":
    main()
