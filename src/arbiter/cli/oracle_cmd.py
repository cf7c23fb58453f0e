"""``arbiter oracle``: verify oracle return rows into SFT data (``verify``), or ask a model and verify
(``generate``). Exit status: 0 when every row got a verdict, 3 when some rows failed on our side (see
``errors.jsonl``; rerun to retry them), 2 for unusable arguments or inputs. See ``docs/oracle.md`` ("The CLI").
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Optional

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from arbiter.cli.cluster_opts import on_ray, ray_option, record_cluster
from arbiter.cli.interrupt import resumable
from arbiter.cli.llm_opts import MB, RETRIES_HELP, SIZE_HELP, TIMEOUT_HELP
from arbiter.pipelines.llm_client import (DEFAULT_CONCURRENCY, DEFAULT_MAX_RESPONSE_BYTES, DEFAULT_MAX_RETRIES,
                                          DEFAULT_TIMEOUT)
from arbiter.pipelines.outputs import holds_out_dirs
from arbiter.strenum import StrEnum

oracle_app = typer.Typer(name="oracle", help="Oracle SFT data: verify oracle answers, or generate and verify.",
                         no_args_is_help=True)


class MeasureMethod(StrEnum):
    """``--measure``: model cycles (valgrind with cache and branch simulation, deterministic, the default: closest
    to gem5's timing), instruction counts under valgrind (deterministic) or wall time (interleaved repeats)."""

    instructions = "instructions"
    cycles = "cycles"
    wall = "wall"


#: ``--measure`` help: which measure is used by default, and why.
MEASURE_HELP = ("cycles (default): model cycles of gem5's Skylake (the PIE card's timing) from one valgrind run per "
                "test with cache and branch simulation; deterministic, and unlike instruction counts it charges "
                "memory traffic and does not inflate start-up-bound speedups. instructions: valgrind instruction "
                "counts (deterministic). wall: interleaved repeats")


def _options(measure: MeasureMethod, min_speedup: float, measure_cases: int, largest_fraction: float,
             gen_plan: str, workers: Optional[int], parquet: bool, no_cache: bool, cache_dir: Optional[Path],
             spot_checks: int = 3):
    from arbiter.pipelines.oracle.verify import VerifyOptions

    opts = VerifyOptions(measure=measure.value, min_speedup=min_speedup, measure_cases=measure_cases,
                         largest_fraction=largest_fraction, gen_plan=gen_plan, workers=workers, parquet=parquet,
                         use_cache=not no_cache, cache_dir=cache_dir, spot_checks=spot_checks)
    opts.check()
    return opts


def _fmt_speed(x: Any) -> str:
    return "" if x is None else f"{x:.2f}x"


def _common_prefix(ids: list[str]) -> str:
    """The longest common prefix of ``ids`` ending at an underscore (so labels stay readable)."""
    if len(ids) < 2:
        return ""
    p = os.path.commonprefix(ids)
    return p[: p.rfind("_") + 1] if "_" in p else ""


def print_report(report: dict[str, Any], console: Console, *, rows: bool = True) -> None:
    """Print the per-row table (when ``rows``), the counts by stage and reason, and the best answer per task.

    Row table columns: the returns file's line, the row's ``demo_id`` (or ``#sample_index`` / key tail), the
    task (common prefix of the task ids dropped), the outcome, the first failing stage, every reason code, the
    writer's claim (``false`` when it disagrees with us), the largest-tests speedup (source / answer) and its unit
    (``cycles`` by default, ``instructions``, or ``seconds*`` in yellow for a row measured with wall/CPU time after a
    meter fallback: its speedup is a time ratio, not to be averaged with cycle or instruction ratios). The summary counts rows per unit; the
    best-answer table names each best row's unit and flags tasks ranked across units."""
    ids = sorted({str(r.get("task_id")) for r in report["rows"] if r.get("task_id")} | set(report.get("tasks", {})))
    prefix = _common_prefix(ids)

    def short(tid: Any) -> str:
        t = str(tid or "-")
        return t[len(prefix):] if prefix and t.startswith(prefix) else t

    if rows:
        console.print(_rows_table(report, prefix, short))
    console.print(_summary_table(report))
    best = [(tid, v.get("best")) for tid, v in report.get("tasks", {}).items() if v.get("best")]
    if best:
        console.print(_best_table(best, short))
    print_rejections_and_warnings(report, console)
    _print_footer(report, console)


def _row_reasons(r: dict[str, Any]) -> str:
    """The reasons cell: every reason code once, or the error, plus the row's trust flags."""
    reasons = " ".join(dict.fromkeys(c.split(":", 1)[1] for c in r.get("codes") or []))
    if r["outcome"] == "error":
        reasons = str(r.get("error", ""))[:80]
    if r.get("speed_gate") == "not_applied":
        reasons = (reasons + " " if reasons else "") + "(speed not gated: small tests)"
    if r.get("visible_only"):
        reasons = (reasons + " " if reasons else "") + "(visible tests only)"
    if r.get("measure_fallback"):
        reasons = (reasons + " " if reasons else "") + "(measured with wall time: valgrind cannot run it)"
    return reasons


def _rows_table(report: dict[str, Any], prefix: str, short: Any) -> Table:
    t = Table(title="oracle verification" + (f" (tasks {prefix}*)" if prefix else ""))
    for name, just in (("line", "right"), ("row", "left"), ("task", "left"), ("outcome", "left"),
                       ("stage", "left"), ("reasons", "left"), ("claim", "left"),
                       ("largest-tests speedup", "right"), ("unit", "left")):
        t.add_column(name, justify=just)  # type: ignore[arg-type]
    for r in report["rows"]:
        label = r.get("demo_id") or ("" if r.get("stage") == "load" else str(r.get("key") or "")[-16:])
        outcome = {"accepted": "[green]ACCEPTED[/]", "rejected": "[red]REJECTED[/]",
                   "error": "[yellow]ERROR[/]"}.get(r["outcome"], r["outcome"])
        claim = "false" if r.get("claim_disagreements") else ""
        t.add_row(str(r.get("line") or ""), label, short(r.get("task_id")), outcome, r.get("stage") or "",
                  _row_reasons(r), claim, _fmt_speed(r.get("largest_speedup")), _unit_cell(r))
    return t


def _summary_table(report: dict[str, Any]) -> Table:
    counts = report["counts"]
    s = Table(title="summary")
    s.add_column("what")
    s.add_column("count", justify="right")
    s.add_row("return rows", str(counts["rows"]))
    s.add_row("[green]accepted (SFT rows)[/]", str(counts["accepted"]))
    s.add_row("[red]rejected[/]", str(counts["rejected"]))
    for key, label in (("errors", "[yellow]not verified (our error; rerun)[/]"),
                       ("other_rejections", "rejected seed / hidden-test entries"),
                       ("accepted_visible_only", "[yellow]  accepted on visible tests only[/]"),
                       ("accepted_speed_gate_not_applied",
                        "[yellow]  accepted without the speed gate (tests too small)[/]"),
                       ("measure_fallbacks", "  measured with wall time (valgrind cannot run the program)")):
        if counts.get(key):
            s.add_row(label, str(counts[key]))
    measure = (report.get("options") or {}).get("measure") or "cycles"
    asked = "seconds" if measure == "wall" else measure
    for unit, n in (counts.get("speedup_units") or {}).items():
        flag = unit != asked
        label = f"rows measured, speedups in {unit}" + (
            f" (wall/CPU fallback: not comparable with {asked})" if flag else "")  # (of every row, not the rejected)
        s.add_row(f"[yellow]{label}[/]" if flag else label, str(n))
    s.add_row("claims disagreeing with our findings", str(report.get("claims_disagreeing", 0)))
    for stage, n in report["by_stage"].items():
        s.add_row(f"  first failing stage: {stage}", str(n))
    for reason, n in report["by_reason"].items():
        s.add_row(f"  rows with reason {reason}", str(n))
    return s


def _best_table(best: list[tuple[Any, dict[str, Any]]], short: Any) -> Table:
    b = Table(title="best answer per task (fastest among full marks)")
    b.add_column("task")
    b.add_column("row")
    b.add_column("largest-tests speedup", justify="right")
    b.add_column("speedup", justify="right")
    b.add_column("unit")
    for tid, v in best:
        unit = str(v.get("unit") or "")
        if len(v.get("units") or []) > 1:
            unit = f"[yellow]{unit} (ranked across {' and '.join(v['units'])})[/]"
        elif unit == "seconds":
            unit = "[yellow]seconds*[/]"
        b.add_row(short(tid), v.get("demo_id") or str(v.get("key"))[-16:], _fmt_speed(v.get("largest_speedup")),
                  _fmt_speed(v.get("speedup")), unit)
    return b


def _print_footer(report: dict[str, Any], console: Console) -> None:
    run = report.get("run") or {}
    opts = report.get("options") or {}
    stage_s = ", ".join(f"{k} {v:.1f}s" for k, v in (run.get("stage_seconds") or {}).items())
    from arbiter.timing.comparison import largest_count  # (after the run: no heavier start-up)

    cases, share = opts.get("measure_cases"), opts.get("largest_fraction")
    gate = (f" (the gate on the costliest {largest_count(cases, share)})"
            if isinstance(cases, int) and isinstance(share, (int, float)) and 0 < share < 1 else "")
    console.print(f"measure: {opts.get('measure')}, min speedup {opts.get('min_speedup')}, "
                  f"{cases} largest tests{gate}; run {run.get('seconds', 0):.1f}s wall "
                  f"(thread time: {stage_s}); decided now: {run.get('verified_now', 0)} accepted, "
                  f"{run.get('rejected_now', 0)} rejected; already done (resumed): {run.get('skipped_existing', 0)}",
                  highlight=False)
    outs = report.get("outputs") or {}
    if outs:
        console.print("outputs in " + str(Path(next(iter(outs.values()))).parent) + ": " +
                      ", ".join(str(Path(p).name) for p in outs.values()), highlight=False)


def _unit_cell(row: dict[str, Any]) -> str:
    """The unit column of a report row: ``cycles``, ``instructions``, ``seconds`` (asked for with ``--measure
    wall``) or ``seconds*`` in yellow (a meter fallback: not the unit asked for)."""
    unit = row.get("unit")
    if not unit:
        return ""
    if row.get("measure_fallback"):
        return f"[yellow]{unit}*[/]"
    return str(unit)


def print_rejections_and_warnings(report: dict[str, Any], console: Console) -> None:
    """Print the seed / hidden-test rejections (line, task, JSON path, reason) and the report's warnings."""
    from rich.markup import escape

    rejs = report.get("load_rejections") or []
    for r in rejs[:20]:
        console.print(f"[red]{r.get('kind')} row rejected:[/] {escape(str(r.get('message') or ''))}", highlight=False)
    if len(rejs) > 20:
        console.print(f"[red]... and {len(rejs) - 20} more seed / hidden-test rejections (rejected.jsonl)[/]")
    for w in report.get("warnings") or []:
        console.print(f"[yellow]warning:[/] {escape(w)}", highlight=False)


def _console() -> Console:
    """A console at least 150 columns wide when stdout is not a terminal (logs, ``make demo | tee``)."""
    c = Console()
    if not c.is_terminal and c.width < 150:
        c = Console(width=150)
    return c


def _run_verify(seeds: Path, returns: Path, out: Path, hidden: Optional[Path], generators: Optional[Path],
                opts: Any, console: Console, progress: bool, show_rows: bool) -> int:
    from arbiter.pipelines.oracle.verify import NoUsableSeeds, verify_returns

    bar = Progress(TextColumn("[bold]verifying[/]"), BarColumn(), MofNCompleteColumn(), TextColumn("{task.fields[info]}"),
                   TimeElapsedColumn(), console=console, disable=not progress, transient=True)
    state: dict[str, Any] = {"task": None}

    def on_progress(event: str, data: dict[str, Any]) -> None:
        if event == "start":
            state["task"] = bar.add_task("verify", total=data.get("total"), info="")
        elif event == "row" and state["task"] is not None:
            bar.update(state["task"], advance=1, info=f"{data.get('outcome')} {data.get('task_id') or ''}")

    try:
        with bar:
            run = verify_returns(seeds, returns, out, hidden=hidden, generators=generators, options=opts,
                                 on_progress=on_progress)
    except NoUsableSeeds as exc:
        from rich.markup import escape

        for r in exc.rejections:
            console.print(f"[red]seed row rejected:[/] {escape(r.message)}", highlight=False)
        raise ValueError(f"no usable seed row in {seeds} ({len(exc.rejections)} rejected): nothing can be "
                         "verified; fix the seeds file") from None
    print_report(run.report, console, rows=show_rows)
    return 3 if run.report["counts"].get("errors") else 0


# help texts shared by verify and generate (the same options, verifying the same way)
HIDDEN_HELP = "hidden tests: {task_id: [{name, stdin, stdout}]}"
GENERATORS_HELP = "folder of <task_id>.py test generators"
MIN_SPEEDUP_HELP = "minimum largest-tests speedup (1.0 = not slower)"
MEASURE_CASES_HELP = "measure the N largest tests (by input size)"
LARGEST_FRACTION_HELP = "share of the measured tests (costliest first) gated on"
SPOT_CHECKS_HELP = ("also run the answer under the meter on N other tests it passed, drawn at random (output "
                    "checked: the measured program must be the one that runs)")
GEN_PLAN_HELP = "generated inputs: SIZE:COUNT,... (seeds 0..COUNT-1)"
WORKERS_HELP = "rows verified at once (default: cores)"
PARQUET_HELP = "also write Parquet copies of the outputs"
CACHE_DIR_HELP = "cache root for generated tests and source counts (default: $ARBITER_CACHE_DIR or ~/.cache/arbiter)"
PROGRESS_HELP = "no progress bar"
NO_ROWS_HELP = "print only the summary, not one line per row"


@oracle_app.command("verify")
def verify(
    seeds: Path = typer.Option(..., "--seeds", help="seed rows (JSONL or Parquet)"),
    returns: Path = typer.Option(..., "--returns", help="oracle return rows (JSONL or Parquet)"),
    out: Path = typer.Option(..., "--out", help="output folder (created; a rerun resumes)"),
    hidden: Optional[Path] = typer.Option(None, "--hidden", help=HIDDEN_HELP),
    generators: Optional[Path] = typer.Option(None, "--generators", help=GENERATORS_HELP),
    measure: MeasureMethod = typer.Option(MeasureMethod.cycles, "--measure", help=MEASURE_HELP),
    min_speedup: float = typer.Option(1.0, "--min-speedup", help=MIN_SPEEDUP_HELP),
    measure_cases: int = typer.Option(3, "--measure-cases", help=MEASURE_CASES_HELP),
    largest_fraction: float = typer.Option(0.5, "--largest-fraction", help=LARGEST_FRACTION_HELP),
    spot_checks: int = typer.Option(3, "--spot-checks", help=SPOT_CHECKS_HELP),
    gen_plan: str = typer.Option("0:10,1:10,2:4,3:2", "--gen-plan", help=GEN_PLAN_HELP),
    workers: Optional[int] = typer.Option(None, "--workers", help=WORKERS_HELP),
    parquet: bool = typer.Option(False, "--parquet", help=PARQUET_HELP),
    no_cache: bool = typer.Option(False, "--no-cache", help="rebuild generated tests and re-measure the source"),
    cache_dir: Optional[Path] = typer.Option(None, "--cache-dir", help=CACHE_DIR_HELP),
    no_progress: bool = typer.Option(False, "--no-progress", "--quiet", help=PROGRESS_HELP),
    no_rows: bool = typer.Option(False, "--no-rows", help=NO_ROWS_HELP),
    ray: Optional[str] = ray_option(),
) -> None:
    """Verify oracle return rows against their seed rows; write sft.jsonl, verified.jsonl, rejected.jsonl,
    best.jsonl and report.json to OUT and print the table.

    Exit status: 0 when every row got a verdict, 3 when some rows hit our own errors (rerun), 2 for bad input,
    4 --ray: Ray did not start in 3 tries (nothing was run).
    """
    console = _console()
    try:
        opts = _options(measure, min_speedup, measure_cases, largest_fraction, gen_plan, workers, parquet,
                        no_cache, cache_dir, spot_checks)
        from arbiter.pipelines.oracle.verify import check_returns_not_empty

        check_returns_not_empty(returns)  # 0 rows: exit 2 before anything is written, as for --seeds
        with on_ray(ray, console, pin_toolchain=True) as backend, resumable(console, out):
            code = _run_verify(seeds, returns, out, hidden, generators, opts, console, not no_progress, not no_rows)
            record_cluster(backend, out / "report.json")
    except (ValueError, FileNotFoundError) as exc:
        from rich.markup import escape

        console.print(f"[red]error:[/] {escape(str(exc))}", highlight=False)
        raise typer.Exit(2)
    raise typer.Exit(code)


def _check_tests_inputs(seeds: Path, hidden: Optional[Path], generators: Optional[Path]) -> None:
    """``--hidden`` and ``--generators`` checked against the seed tasks (``InputFileError``)."""
    if hidden is None and generators is None:
        return
    from arbiter.datasets.oracle import load_seeds
    from arbiter.pipelines.oracle.verify import check_generators_dir, load_hidden_or_raise

    task_ids = load_seeds(seeds).by_id or None
    if hidden is not None:
        load_hidden_or_raise(hidden, known_task_ids=task_ids)
    if generators is not None:
        check_generators_dir(generators, known_task_ids=task_ids)


@oracle_app.command("generate")
@holds_out_dirs  # --out stays locked from before the first request to the end of the verification
def generate(
    seeds: Path = typer.Option(..., "--seeds", help="seed rows (JSONL or Parquet)"),
    out: Path = typer.Option(..., "--out", help="output folder: returns.jsonl, then the verify outputs"),
    model: str = typer.Option(..., "--model", help="model name served by the endpoint"),
    base_url: Optional[str] = typer.Option(None, "--base-url",
                                           help="OpenAI-compatible base URL (default: $OPENAI_BASE_URL)"),
    n: int = typer.Option(4, "--n", help="samples per seed row"),
    concurrency: int = typer.Option(DEFAULT_CONCURRENCY, "--concurrency", help="requests in flight"),
    max_retries: int = typer.Option(DEFAULT_MAX_RETRIES, "--max-retries", help=RETRIES_HELP),
    timeout: float = typer.Option(DEFAULT_TIMEOUT, "--timeout", help=TIMEOUT_HELP),
    max_response_mb: float = typer.Option(DEFAULT_MAX_RESPONSE_BYTES / MB, "--max-response-mb", help=SIZE_HELP),
    temperature: float = typer.Option(0.7, "--temperature", help="sampling temperature sent with each request"),
    max_tokens: Optional[int] = typer.Option(None, "--max-tokens", help="completion token cap (default: the server's)"),
    sampling: str = typer.Option("n", "--sampling", help="n (API n parameter) or repeat (one request per sample)"),
    hidden: Optional[Path] = typer.Option(None, "--hidden", help=HIDDEN_HELP),
    generators: Optional[Path] = typer.Option(None, "--generators", help=GENERATORS_HELP),
    measure: MeasureMethod = typer.Option(MeasureMethod.cycles, "--measure", help=MEASURE_HELP),
    min_speedup: float = typer.Option(1.0, "--min-speedup", help=MIN_SPEEDUP_HELP),
    measure_cases: int = typer.Option(3, "--measure-cases", help=MEASURE_CASES_HELP),
    largest_fraction: float = typer.Option(0.5, "--largest-fraction", help=LARGEST_FRACTION_HELP),
    spot_checks: int = typer.Option(3, "--spot-checks", help=SPOT_CHECKS_HELP),
    gen_plan: str = typer.Option("0:10,1:10,2:4,3:2", "--gen-plan", help=GEN_PLAN_HELP),
    workers: Optional[int] = typer.Option(None, "--workers", help=WORKERS_HELP),
    parquet: bool = typer.Option(False, "--parquet", help=PARQUET_HELP),
    cache_dir: Optional[Path] = typer.Option(None, "--cache-dir", help=CACHE_DIR_HELP),
    no_progress: bool = typer.Option(False, "--no-progress", "--quiet", help=PROGRESS_HELP),
    no_rows: bool = typer.Option(False, "--no-rows", help=NO_ROWS_HELP),
) -> None:
    """Send each seed row's messages to an OpenAI-compatible endpoint (API key from $OPENAI_API_KEY, optional),
    N samples per row, then verify them all; best.jsonl keeps the fastest full-mark answer per task.

    Resumable: samples already in OUT/returns.jsonl are not asked for again; rows already verified are
    skipped. Exit status: 0 done; 2 bad input; 3 some samples missing (failed requests) or rows not verified.
    """
    from arbiter.pipelines.oracle.writer import generate as run_generate

    console = _console()
    try:
        opts = _options(measure, min_speedup, measure_cases, largest_fraction, gen_plan, workers, parquet, False,
                        cache_dir, spot_checks)
        if not seeds.is_file():
            raise FileNotFoundError(f"seeds file not found: {seeds}")
        from arbiter.pipelines.oracle.verify import ensure_out_dir

        _check_tests_inputs(seeds, hidden, generators)  # before asking the model anything
        ensure_out_dir(out)
        returns = out / "returns.jsonl"
        bar = Progress(TextColumn("[bold]asking the model[/]"), BarColumn(), MofNCompleteColumn(),
                       TimeElapsedColumn(), console=console, disable=no_progress, transient=True)
        with bar:
            task = bar.add_task("generate", total=None)

            def on_progress(done: int, total: int) -> None:
                bar.update(task, completed=done, total=total)

            summary = run_generate(seeds, returns, model=model, base_url=base_url,
                                   api_key=os.environ.get("OPENAI_API_KEY"), n=n, concurrency=concurrency,
                                   max_retries=max_retries, temperature=temperature, max_tokens=max_tokens,
                                   sampling=sampling, request_timeout=timeout,
                                   max_response_bytes=int(max_response_mb * MB), check_first=True,
                                   on_progress=on_progress)  # type: ignore[arg-type]
        console.print(f"writer: {summary.samples_written} new samples, {summary.samples_existing} already there, "
                      f"{summary.samples_missing} missing after {summary.requests} requests "
                      f"({summary.retries} retries, {summary.failed_requests} given up on"
                      f"{f', {summary.malformed_answers} malformed answers' if summary.malformed_answers else ''})"
                      f" -> {returns}", highlight=False)
        code = _run_verify(seeds, returns, out, hidden, generators, opts, console, not no_progress, not no_rows)
        if summary.samples_missing and code == 0:
            console.print(f"[yellow]{summary.samples_missing} samples are still missing "
                          f"(see {summary.errors_path}); rerun to ask for them[/]")
            code = 3
    except (ValueError, FileNotFoundError) as exc:
        from rich.markup import escape

        console.print(f"[red]error:[/] {escape(str(exc))}", highlight=False)
        raise typer.Exit(2)
    raise typer.Exit(code)


@oracle_app.command("plots")
def plots(
    folder: Path = typer.Argument(..., exists=True, file_okay=False, help="an `arbiter oracle verify` --out folder"),
    out: Optional[Path] = typer.Option(None, "--out", file_okay=False, help="report folder (default FOLDER/plots)"),
) -> None:
    """PNG plots of a finished run (rejections by stage, accepted speedups) with report.md and report.json (docs/report.md)."""
    from arbiter.cli.report_cmd import run_report

    run_report([folder], out or folder / "plots", title="oracle verify")


def register(app: typer.Typer) -> None:
    """Add the ``oracle`` command group (``verify``, ``generate``) to ``app``."""
    app.add_typer(oracle_app, name="oracle")
