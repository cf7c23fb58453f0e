"""``arbiter pie``: the PIE speedup reward (``reward``) and PIE's paper metrics (``eval``), over
:mod:`arbiter.pipelines.pie.batch` and :mod:`arbiter.pipelines.pie.eval`. Inputs, resuming, bad input and exit
statuses: ``docs/pie.md`` ("Command line").
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Optional

import typer
from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from arbiter.cli.cluster_opts import on_ray, ray_option, record_cluster
from arbiter.cli.interrupt import resumable
from arbiter.strenum import StrEnum

pie_app = typer.Typer(name="pie", help="PIE speedup reward (re-timed here) and PIE paper metrics.",
                      no_args_is_help=True)


class Method(StrEnum):
    """``--method``: model cycles (valgrind with cache and branch simulation, deterministic, the default: closest
    to the card's gem5 speedups), instruction counts under valgrind (deterministic) or wall time (interleaved
    repeats, CPU clock)."""

    instructions = "instructions"
    cycles = "cycles"
    wall = "wall"


#: ``--method`` help: which measure is used by default, and why.
METHOD_HELP = ("cycles (default): model cycles of gem5's Skylake, the timing of the PIE card, from one valgrind run "
               "per case with cache and branch simulation; deterministic, and within a few % of the card's gem5 "
               "speedups, where instruction counts run about 3x high on start-up-bound pairs (iostream vs cstdio). "
               "instructions: valgrind instruction counts (deterministic). wall: interleaved repeats, CPU clock")


class Transform(StrEnum):
    """``--transform``: the reward transforms of :func:`arbiter.rewards.pie.transforms.make_transform`."""

    raw = "raw"
    log = "log"
    clipped = "clipped"
    pie_floor = "pie_floor"
    opt_indicator = "opt_indicator"


def _console() -> Console:
    c = Console()
    if not c.is_terminal and c.width < 150:
        c = Console(width=150)
    return c


def _params(pairs: list[str]) -> dict[str, float]:
    out: dict[str, float] = {}
    for p in pairs:
        name, sep, value = p.partition("=")
        if not sep or not name:
            raise ValueError(f"--param must be NAME=VALUE, got {p!r}")
        try:
            out[name.strip()] = float(value)
        except ValueError:
            raise ValueError(f"--param {name}: {value!r} is not a number") from None
    return out


def _check_options(k: int, cpu_seconds: float, memory_mib: int, repeats: int,
                   compile_command: Optional[str] = None) -> None:
    """Options checked before any file is read or written; raises ValueError naming the option (exit 2)."""
    from arbiter.languages.cpp.command import CompileCommandError, parse_compile_command
    from arbiter.rewards.pie.options import MAX_REPEATS
    from arbiter.sandbox.limits import MAX_SECONDS

    if k == 0 or k < -1:
        raise ValueError(f"--k must be -1 (every usable case, the card's K = -1) or a positive number of cases "
                         f"to sample, got {k}")
    if not (0 < cpu_seconds <= MAX_SECONDS):
        raise ValueError(f"--cpu-seconds must be a number of seconds in (0, {MAX_SECONDS}], got {cpu_seconds}")
    if memory_mib <= 0:
        raise ValueError(f"--memory-mib must be a positive number of MiB, got {memory_mib}")
    if not 1 <= repeats <= MAX_REPEATS:
        raise ValueError(f"--repeats must be from 1 to {MAX_REPEATS} timed rounds per case (one warm-up round is "
                         f"dropped besides), got {repeats}")
    if compile_command:  # as `arbiter judge`: a shell-free g++/clang++ command naming one source file
        try:
            parse_compile_command(compile_command)
        except CompileCommandError as exc:
            raise ValueError(f"--compile-command {compile_command!r}: {exc}") from None


def _check_paths(paths: list[tuple[str, Optional[Path], bool]]) -> None:
    """``(option, path, must_be_file)``: each given path must exist (a file when ``must_be_file``, else a file or a
    folder) and be readable. Raises FileNotFoundError / ValueError naming the option and the path (exit 2)."""
    import os

    for option, path, must_be_file in paths:
        if path is None:
            continue
        if not path.exists():
            what = "file" if must_be_file else "file or folder"
            raise FileNotFoundError(f"{option} {path}: not found (no such {what})")
        if must_be_file and not path.is_file():
            raise ValueError(f"{option} {path}: " + ("is a folder; give a JSONL file" if path.is_dir()
                                                      else "is not a regular file"))
        if not os.access(path, os.R_OK | (0 if path.is_file() else os.X_OK)):
            raise ValueError(f"{option} {path}: cannot be read (permission denied)")


def _reward_kw(method: Method, k: int, checker: str, compile_command: Optional[str], cpu_seconds: float,
               memory_mib: int, repeats: int, no_cache: bool, transform: str = "raw",
               params: Optional[list[str]] = None) -> dict[str, Any]:
    from arbiter.judge.task import CompileSpec
    from arbiter.rewards.pie.options import DEFAULT_LIMITS, check_reward_options
    from arbiter.sandbox.limits import MiB

    _check_options(k, cpu_seconds, memory_mib, repeats, compile_command)
    kw = {
        "transform": transform,
        "transform_params": _params(params or []),
        "method": method.value,
        "k": k,
        "checker": checker,
        "compile_spec": CompileSpec(command=compile_command) if compile_command else None,
        "limits": DEFAULT_LIMITS.with_(cpu_seconds=cpu_seconds, memory_bytes=memory_mib * MiB),
        "repeats": repeats,
        "cache": False if no_cache else None,
    }
    check_reward_options(kw, need_meter=False)  # valgrind is checked when something is measured
    return kw


def _failures_in(summary: dict) -> str:
    """How the failed candidates enter the mean reward: ``; 2 failed at 1.0 each``."""
    n, values = summary.get("n_failed_scored") or 0, summary.get("failure_rewards") or []
    if not n:
        return ""
    each = f"{values[0]:g} each" if len(values) == 1 else "their transform's failure reward"
    return f"; {n} failed candidate{'s' if n > 1 else ''} in it at {each}"


def _fmt(x: Any, spec: str = ".3f") -> str:
    return "" if x is None else format(x, spec)


def _bar(console: Console, label: str, enabled: bool) -> Progress:
    return Progress(TextColumn(f"[bold]{label}[/]"), BarColumn(), MofNCompleteColumn(),
                    TextColumn("{task.fields[info]}"), TimeElapsedColumn(), console=console, disable=not enabled,
                    transient=True)


def print_reward_summary(summary: dict[str, Any], console: Console) -> None:
    """The summary table of ``arbiter pie reward``: counts by outcome, correctness, reward and speedup figures,
    toolchain fingerprint and startup floor.

    Speedups are named with their unit: the headline figures are over records measured in the requested method's
    unit only (``cycles``, ``instructions``, or ``seconds`` for ``--method wall``); records measured in another unit
    after a meter fallback get their own line, flagged in yellow, and are never averaged into the headline."""
    t = Table(title="PIE re-timed reward")
    t.add_column("what")
    t.add_column("value", justify="right")
    t.add_row("candidates", str(summary.get("candidates", summary["n"])))
    t.add_row("  scored now / already done (resumed)", f"{summary.get('new', 0)} / {summary.get('resumed', 0)}")
    for oc, n in summary["by_outcome"].items():
        colour = {"AC": "green", "SANDBOX_ERROR": "yellow", "INVALID_TASK": "yellow",
                  "DATASET_DEFECT": "magenta"}.get(oc, "red")
        t.add_row(f"  [{colour}]{oc}[/]", str(n))
    if summary.get("sandbox_errors"):
        t.add_row("[yellow]our errors this run (errors.jsonl; rerun)[/]", str(summary["sandbox_errors"]))
    if summary.get("n_dataset_defect_rows"):
        t.add_row("[magenta]dataset defects: rows whose source/target fails its tests (reward None)[/]",
                  str(summary["n_dataset_defect_rows"]))
    t.add_row("scored (reward is a number)", str(summary["n_scored"]))
    t.add_row("%Correct (of scored)", _fmt(summary["pct_correct"], ".2f"))
    t.add_row("%Opt (speedup >= 1.10, of scored)", _fmt(summary["pct_opt"], ".2f"))
    t.add_row(f"mean reward ({', '.join(summary['transforms'])}, of scored{_failures_in(summary)})",
              _fmt(summary["mean_reward"], ".4f"))
    if summary.get("n_failed_scored"):
        t.add_row(f"mean reward of the correct (AC) only ({summary['n_scored'] - summary['n_failed_scored']})",
                  _fmt(summary.get("mean_reward_correct"), ".4f"))
    unit = summary.get("speedup_unit") or "cycles"
    by_unit = summary.get("speedups_by_unit") or {}
    n_head = (by_unit.get(unit) or {}).get("n", summary["n_correct"])
    t.add_row(f"speedup of correct, in {unit} ({n_head}): mean / geomean / median",
              f"{_fmt(summary['mean_speedup'])} / {_fmt(summary['geomean_speedup'])} / "
              f"{_fmt(summary['median_speedup'])}")
    t.add_row(f"speedup of correct, in {unit}: min .. max",
              f"{_fmt(summary['min_speedup'])} .. {_fmt(summary['max_speedup'])}")
    for other, st in by_unit.items():
        if other == unit:
            continue
        t.add_row(f"[yellow]speedup of correct, in {escape(other)} ({st['n']}; meter fallback, not in the figures "
                  f"above): mean / geomean / median[/]",
                  f"[yellow]{_fmt(st['mean'])} / {_fmt(st['geomean'])} / {_fmt(st['median'])}[/]")
    requested = summary.get("requested_methods") or summary["methods"]
    t.add_row("method (requested)", ", ".join(requested))
    if summary.get("n_method_fallbacks"):
        for why, n in (summary.get("fallback_reasons") or {}).items():
            t.add_row(f"[yellow]  measured with wall instead: {escape(why)}[/]", str(n))
    t.add_row("method (figures)", ", ".join(summary["methods"]))
    t.add_row("toolchain fingerprint", ", ".join(summary["fingerprints"]))
    if summary.get("startup_floors"):
        floor_unit = "cycles" if unit.startswith("cycles") else unit
        t.add_row(f"startup floor ({floor_unit}, empty main)", ", ".join(f"{f:,}" for f in summary["startup_floors"]))
    if summary.get("row_errors"):
        t.add_row("[yellow]unreadable rows in --rows[/]", str(summary["row_errors"]))
    console.print(t)


def _print_defects(defects: list[dict[str, Any]], console: Console) -> None:
    """The rows whose own source or target fails their tests (``DATASET_DEFECT``): first five, then a count."""
    if not defects:
        return
    console.print(f"[magenta]{len(defects)} dataset defect(s)[/] (the row's source or target fails its own tests; "
                  "reward None, not the candidate's failure):", highlight=False)
    for d in defects[:5]:
        console.print(f"  [magenta]dataset defect[/] {escape(str(d.get('row') or d.get('id')))}: "
                      f"{escape(str(d.get('reason')))}", highlight=False)
    if len(defects) > 5:
        console.print(f"  ... and {len(defects) - 5} more (dataset_defects in the summary)", highlight=False)


@pie_app.command("reward")
def reward(
    rows: Path = typer.Option(..., "--rows", help="PIE rows: gem5 pairs/bysrc Parquet/JSONL, or val.jsonl-style"),
    tests: Path = typer.Option(..., "--tests", help="PIE tests folder or .tar.gz (<problem_id>/input.N.txt)"),
    candidates: Path = typer.Option(..., "--candidates", help="JSONL: {src_id | row, candidates | code}"),
    out: Path = typer.Option(..., "--out", help="output folder (created; a rerun resumes)"),
    transform: Transform = typer.Option(Transform.raw, "--transform", help="reward transform"),
    param: Optional[list[str]] = typer.Option(None, "--param",
                                              help="transform parameter NAME=VALUE (lo, hi, failure_penalty, "
                                                   "threshold); repeatable"),
    method: Method = typer.Option(Method.cycles, "--method", help=METHOD_HELP),
    k: int = typer.Option(-1, "--k", help="cases per reward, sampled as the card does (-1 = all)"),
    seed: int = typer.Option(0, "--seed", help="K sampling seed (per source: every candidate gets the same cases)"),
    checker: str = typer.Option("pie", "--checker", help="pie (card), tokens, exact, trailing_whitespace, ..."),
    compile_command: Optional[str] = typer.Option(None, "--compile-command",
                                                  help="g++/clang++ command for both programs, naming the source file "
                                                       "(default: g++ -std=gnu++17 -O2 main.cpp)"),
    cpu_seconds: float = typer.Option(10.0, "--cpu-seconds", help="native CPU limit per case (PIE: 10 s)"),
    memory_mib: int = typer.Option(512, "--memory-mib", help="native memory limit per case, MiB"),
    repeats: int = typer.Option(5, "--repeats", help="wall method: kept rounds (one warm-up round is dropped)"),
    no_cache: bool = typer.Option(False, "--no-cache", help="re-measure the source for every candidate"),
    split: Optional[str] = typer.Option(None, "--split", help="split of a datasets folder / Parquet shards"),
    no_progress: bool = typer.Option(False, "--no-progress", help="no progress bar"),
    ray: Optional[str] = ray_option(),
) -> None:
    """Re-timed, correctness-gated speedup of each candidate over its row's source program.

    Writes OUT/rewards.jsonl (one record per candidate), OUT/errors.jsonl and OUT/summary.json, and prints a
    summary table. Exit status: 0 done, 3 some SANDBOX_ERROR (rerun to retry), 2 bad arguments, 4 --ray: Ray
    did not start in 3 tries."""
    from arbiter.pipelines.pie.batch import run_reward_batch
    from arbiter.timing.instructions import ValgrindUnavailable

    console = _console()
    try:
        kw = _reward_kw(method, k, checker, compile_command, cpu_seconds, memory_mib, repeats, no_cache,
                        transform.value, param)
        _check_paths([("--rows", rows, False), ("--tests", tests, False), ("--candidates", candidates, True)])
        bar = _bar(console, "scoring", not no_progress)
        state: dict[str, Any] = {}
        with bar:
            def on_start(total: int) -> None:
                state["task"] = bar.add_task("reward", total=total, info="")

            def on_result(rec: dict[str, Any]) -> None:
                sp = rec.get("speedup")
                bar.update(state["task"], advance=1,
                           info=escape(f"{rec.get('outcome')} {rec.get('problem_id')}/{rec.get('src_id')}"
                                       + (f" {sp:.2f}x {rec.get('unit')}" if sp else "")))

            with on_ray(ray, console, pin_toolchain=True) as backend, resumable(console, out):
                run = run_reward_batch(rows, tests, candidates, out, seed=seed, split=split, on_start=on_start,
                                       on_result=on_result, **kw)
                record_cluster(backend, Path(run.outputs["summary"]))
    except (ValueError, FileNotFoundError) as exc:
        console.print(f"[red]error:[/] {escape(str(exc))}", highlight=False)
        raise typer.Exit(2)
    except ValgrindUnavailable as exc:
        console.print(f"[red]error:[/] --method {method.value} needs valgrind: {escape(str(exc))} "
                      "(or use --method wall)", highlight=False)
        raise typer.Exit(2)
    for e in run.row_errors[:5]:
        console.print(f"[yellow]bad row in --rows:[/] {escape(e)}", highlight=False)
    _print_defects(run.summary.get("dataset_defects") or [], console)
    bad = [r for r in run.records if str(r.get("key", "")).endswith("error")]
    for r in bad[:5]:
        console.print(f"[yellow]bad record in --candidates:[/] {escape(str(r.get('reason')))}", highlight=False)
    if len(bad) > 5:
        console.print(f"[yellow]... and {len(bad) - 5} more (INVALID_TASK records in rewards.jsonl)[/]")
    print_reward_summary(run.summary, console)
    console.print("outputs: " + ", ".join(run.outputs.values()), highlight=False)
    raise typer.Exit(3 if run.sandbox_errors else 0)


@pie_app.command("eval")
def evaluate(
    generations: Path = typer.Option(..., "--generations",
                                     help="JSONL: {src_id | row, generations: [...]} or precomputed runtimes"),
    out: Path = typer.Option(..., "--out", help="output folder (created; a rerun resumes)"),
    rows: Optional[Path] = typer.Option(None, "--rows", help="PIE rows (needed unless every line is precomputed)"),
    tests: Optional[Path] = typer.Option(None, "--tests", help="PIE tests folder or .tar.gz"),
    method: Method = typer.Option(Method.cycles, "--method", help=METHOD_HELP),
    k: int = typer.Option(-1, "--k", help="test cases per measurement, sampled per source (-1 = all)"),
    seed: int = typer.Option(0, "--seed", help="case sampling seed"),
    checker: str = typer.Option("pie", "--checker", help="output checker (pie = the card's comparator)"),
    compile_command: Optional[str] = typer.Option(None, "--compile-command",
                                                  help="g++/clang++ command for all programs, naming the source file "
                                                       "(default: g++ -std=gnu++17 -O2 main.cpp)"),
    cpu_seconds: float = typer.Option(10.0, "--cpu-seconds", help="native CPU limit per case (PIE: 10 s)"),
    memory_mib: int = typer.Option(512, "--memory-mib", help="native memory limit per case, MiB"),
    repeats: int = typer.Option(5, "--repeats", help="wall method: kept rounds"),
    no_cache: bool = typer.Option(False, "--no-cache", help="re-measure sources"),
    split: Optional[str] = typer.Option(None, "--split", help="split of a datasets folder"),
    no_progress: bool = typer.Option(False, "--no-progress", help="no progress bar"),
    ray: Optional[str] = ray_option(),
) -> None:
    """PIE's paper metrics at best@k for k = 1..n: %Opt, mean speedup, %Correct.

    %Opt = speedup >= 1.10; mean speedup floored at 1.0 (failures count as 1.0); %Correct = a fully correct
    generation among the first k. Prints the table; writes OUT/metrics.json and OUT/generations.jsonl.
    Exit status: 4 with --ray when Ray did not start in 3 tries."""
    from arbiter.pipelines.pie.eval import run_eval
    from arbiter.timing.instructions import ValgrindUnavailable

    console = _console()
    try:
        kw = _reward_kw(method, k, checker, compile_command, cpu_seconds, memory_mib, repeats, no_cache)
        _check_paths([("--generations", generations, True), ("--rows", rows, False), ("--tests", tests, False)])
        bar = _bar(console, "measuring generations", not no_progress)
        state: dict[str, Any] = {}
        with bar:
            def on_start(total: int) -> None:
                state["task"] = bar.add_task("eval", total=total, info="")

            def on_result(rec: dict[str, Any]) -> None:
                bar.update(state["task"], advance=1, info=escape(f"{rec.get('outcome')} {rec.get('src_id')}"))

            with on_ray(ray, console, pin_toolchain=True) as backend, resumable(console, out):
                run = run_eval(rows, tests, generations, out, seed=seed, split=split, on_start=on_start,
                               on_result=on_result, **kw)
                record_cluster(backend, out / "metrics.json")
    except (ValueError, FileNotFoundError) as exc:
        console.print(f"[red]error:[/] {escape(str(exc))}", highlight=False)
        raise typer.Exit(2)
    except ValgrindUnavailable as exc:
        console.print(f"[red]error:[/] --method {method.value} needs valgrind: {escape(str(exc))} "
                      "(or use --method wall)", highlight=False)
        raise typer.Exit(2)
    rep = run.report
    console.print(f"PIE metrics over {rep['n_programs']} programs ({rep['method']}, unit {rep['unit']}); "
                  f"{rep['n_excluded']} excluded (unscorable: INVALID_TASK / SANDBOX_ERROR); "
                  f"{rep.get('n_dataset_defects', 0)} dataset defect(s) (DATASET_DEFECT, left out)", highlight=False)
    for e in rep["excluded"][:5]:
        console.print(f"  [yellow]excluded[/] {escape(str(e['id']))}: {escape(str(e['reason']))}", highlight=False)
    _print_defects(rep.get("dataset_defects") or [], console)
    console.print(run.table, highlight=False)
    gens = rep.get("generations") or {}
    if gens.get("fewest", 0) < gens.get("most", 0):
        console.print(f"[yellow]note:[/] best@k stops at k = {gens['fewest']}, the fewest generations of a program "
                      f"({escape(gens['fewest_id'])}; others have up to {gens['most']}): PIE's n", highlight=False)
    other = rep.get("programs_in_other_unit") or []
    if other:
        units = ", ".join(f"{u}: {n}" for u, n in (rep.get("speedup_units") or {}).items())
        console.print(f"[yellow]warning:[/] {len(other)} program(s) have generations measured in another unit than "
                      f"{rep['unit']} (a meter fallback to wall/CPU time); their speedups enter the metrics above as "
                      f"time ratios (correct generations per unit: {escape(units)}): "
                      f"{escape(', '.join(other[:10]))}" + (" ..." if len(other) > 10 else ""), highlight=False)
    if rep["fingerprints"]:
        console.print("toolchain fingerprint: " + ", ".join(rep["fingerprints"]), highlight=False)
    console.print("outputs: " + ", ".join(run.outputs.values()), highlight=False)
    raise typer.Exit(3 if run.sandbox_errors else 0)


@pie_app.command("plots")
def plots(
    folder: Path = typer.Argument(..., exists=True, file_okay=False,
                                  help="an `arbiter pie eval` or `arbiter pie reward` --out folder"),
    out: Optional[Path] = typer.Option(None, "--out", file_okay=False, help="report folder (default FOLDER/plots)"),
) -> None:
    """PNG plots of a finished run with report.md and report.json (docs/report.md): for `pie eval` the speedup
    distribution and %Opt by k, for `pie reward` the speedup distribution and the reward by candidate."""
    from arbiter.cli.report_cmd import run_report
    from arbiter.pipelines.report.folders import folder_kind

    kind = folder_kind(folder)
    run_report([folder], out or folder / "plots", title="pie reward" if kind == "pie_reward" else "pie eval")


def register(app: typer.Typer) -> None:
    """Add the ``pie`` command group (``reward``, ``eval``) to ``app``."""
    app.add_typer(pie_app, name="pie")


__all__ = ["pie_app", "print_reward_summary", "register"]
