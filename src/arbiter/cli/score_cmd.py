"""``arbiter score``: score model completions on a verl code dataset (per-response verdicts,
per-problem pass rate, pass@k, a table by data_source); streaming and resumable.

Scores with the codegen reward exactly as the verl plug-in does in training
(:mod:`arbiter.rewards.codegen`), through the pipeline :mod:`arbiter.pipelines.codegen`.
"""

from __future__ import annotations

import logging
import sys
from pathlib import Path
from typing import Callable, Optional

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn
from rich.table import Table

from arbiter.cli.cluster_opts import on_ray, parse_shard, ray_option, record_cluster, shard_option
from arbiter.cli.interrupt import resumable


def _fmt(value: float | None, digits: int = 3) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def summary_table(summary: dict, title: str = "scores by data_source") -> Table:
    """A rich table of ``summary.json``: one row per data source, then ``overall``. Columns:
    problems (valid), invalid rows, vacuous rows (only when there are any: every expected output
    empty), responses, mean pass rate, pass@k for k = 1, the powers of 2 up to n and n, and
    verdict counts (AC, FORMAT_ERROR, the rest)."""
    table = Table(title=title)
    ks = sorted(int(k) for k in summary["overall"]["pass_at_k"])
    show_k = [k for k in ks if k & (k - 1) == 0 or k == ks[-1]][-5:] if ks else []
    if ks and 1 not in show_k:
        show_k = [1, *show_k[1:]]
    vacuous = bool(summary["overall"].get("vacuous_problems"))
    for col in ("data_source", "problems", "invalid", *(["vacuous"] if vacuous else []), "responses", "pass rate",
                *[f"pass@{k}" for k in show_k], "AC", "FORMAT", "other"):
        table.add_column(col, justify="left" if col == "data_source" else "right", no_wrap=True)
    groups = list(summary["by_data_source"].items()) + [("overall", summary["overall"])]
    for name, g in groups:
        v = g["verdicts"]
        other = sum(n for verdict, n in v.items() if verdict not in ("AC", "FORMAT_ERROR"))
        table.add_row(f"[bold]{name}[/]" if name == "overall" else name, str(g["problems"]), str(g["invalid_problems"]),
                      *([str(g.get("vacuous_problems", 0))] if vacuous else []),
                      str(g["responses"]), _fmt(g["mean_pass_rate"]),
                      *[_fmt(g["pass_at_k"].get(str(k))) for k in show_k],
                      str(v.get("AC", 0)), str(v.get("FORMAT_ERROR", 0)), str(other))
    table.caption = _fewer_than_k_caption(summary["overall"], show_k)
    return table


def _fewer_than_k_caption(overall: dict, show_k: list[int]) -> str | None:
    """A note when a shown pass@k leaves out problems with fewer than k responses (the unbiased
    estimator needs n >= k), naming how many problems each such column is over."""
    over = overall.get("problems_at_k", {})
    partial = [f"pass@{k} over {over[str(k)]}" for k in show_k
               if str(k) in over and over[str(k)] < overall["problems"]]
    if not partial:
        return None
    return f"pass@k is over the problems with at least k responses: {', '.join(partial)} of {overall['problems']}"


def _fail(console: Console, exc: BaseException) -> typer.Exit:
    from rich.markup import escape

    console.print(f"[red]error:[/] {escape(str(exc))}")
    return typer.Exit(2)


def _reward_options(console: Console, **given: object):
    """The reward's options from the command line (``on_invalid="zero"``: one unusable row never
    stops the run; it is recorded as INVALID_TASK); exit 2 for a bad value."""
    from arbiter.rewards.codegen import RewardOptions

    try:
        return RewardOptions.from_kwargs({k: v for k, v in given.items() if v is not None} | {"on_invalid": "zero"})
    except (TypeError, ValueError) as exc:
        raise _fail(console, exc) from None


def _show_input_problems(console: Console, problems, out: Path) -> None:
    from rich.markup import escape

    if not problems.count:
        return
    console.print(f"[yellow]{problems.count} input record(s) skipped (listed in "
                  f"{escape(str(out / 'errors.jsonl'))}):[/]")
    for message in problems.first[:5]:
        console.print(f"  {escape(message)}")
    if problems.count > 5:
        console.print(f"  ... and {problems.count - 5} more")


class _Bar:
    """The progress bar, started by the first progress call (after the config check too), so no
    message is drawn over it; ``before_start`` runs just before (the input problems are listed
    only once the run is sure to write them: not before a refused rerun)."""

    def __init__(self, console: Console, quiet: bool, before_start: Callable[[], None] = lambda: None):
        self.bar = Progress(TextColumn("scoring"), BarColumn(), MofNCompleteColumn(), TextColumn("responses"),
                            TimeElapsedColumn(), TimeRemainingColumn(), console=console, disable=quiet)
        self.task = self.bar.add_task("score", total=None)
        self.started = False
        self.before_start = before_start

    def __call__(self, done: int, total: int) -> None:
        if not self.started:
            self.before_start()
            self.bar.start()
            self.started = True
        self.bar.update(self.task, completed=done, total=total)

    def stop(self) -> None:
        if self.started:
            self.bar.stop()
            self.started = False


def _report(console: Console, run, out: Path) -> None:
    """The table by data_source and the run's counts; exit 1 when responses hit SANDBOX_ERROR."""
    from rich.markup import escape

    Console(width=None if sys.stdout.isatty() else 160).print(summary_table(run.summary))
    console.print(f"{run.rows} rows read; {run.responses} responses matched; {run.judged} scored now, "
                  f"{run.skipped_done} already done; outputs in {escape(str(out))}")
    if run.stale:
        console.print(f"[yellow]{run.stale} earlier verdict(s) were made for another response or ground truth; "
                      f"judged again and replaced[/]")
    vacuous = run.summary["overall"].get("vacuous_problems", 0)
    if vacuous:
        keys = ", ".join(run.summary.get("vacuous_row_keys", [])[:5])
        console.print(f"[yellow]{vacuous} problem(s) have a vacuous test suite (every expected output is empty: "
                      f"a program that prints nothing passes); judged and counted, flagged \"vacuous\" in "
                      f"{escape(str(out / 'problems.jsonl'))}: {escape(keys)}{', ...' if vacuous > 5 else ''}[/]")
    if run.errors:
        console.print(f"[yellow]{run.errors} problem(s) reported in {escape(str(out / 'errors.jsonl'))}[/]")
    if run.sandbox_errors:
        console.print(f"[red]{run.sandbox_errors} response(s) hit SANDBOX_ERROR after retries; they are not recorded; "
                      f"rerun the same command to retry them[/]")
        raise typer.Exit(1)


#: Options of ``arbiter score`` (one line each in its signature).
_CASE_INSENSITIVE = typer.Option(None, "--case-insensitive/--case-sensitive", help="override the route's case rule")
_ABS_TOL = typer.Option(None, "--abs-tol", help="absolute tolerance of a number-comparing checker (tokens_float, "
                        "...) for every row, over a row's extra_info.abs_tol")
_REL_TOL = typer.Option(None, "--rel-tol", help="relative tolerance of a number-comparing checker (tokens_float, "
                        "...) for every row, over a row's extra_info.rel_tol")
_REUSE = typer.Option(True, "--reuse/--no-reuse", help="judge identical programs on the same row once (docs/step.md)")
_CASE_ORDER = typer.Option("failures_first", "--case-order", help="failures_first (cases that failed earlier "
                           "responses of the row first) or suite; never changes a score")
_VERDICT_CACHE = typer.Option(None, "--verdict-cache", file_okay=False, help="a folder of verdicts kept between "
                              "runs: a program judged before under the same row and options is not run again")


def register(app: typer.Typer) -> None:
    @app.command()
    def score(
        dataset: Path = typer.Option(..., "--dataset", exists=True,
                                     help="verl rows: .parquet, .jsonl[.gz] or an HF datasets folder"),
        completions: Path = typer.Option(..., "--completions", exists=True, dir_okay=False,
                                         help='JSONL of {"index" | "key" | "data_source"+"index" | "row", "responses": [...]}'),
        out: Path = typer.Option(..., "--out", file_okay=False, help="output folder (resumable)"),
        workers: Optional[int] = typer.Option(None, "--workers", min=1, help="parallel sandboxes (default: one per core)"),
        parity: Optional[str] = typer.Option(None, "--parity", help="prime_code: verl prime_code's first-10-cases partial credit"),
        checker: Optional[str] = typer.Option(None, "--checker", help="override every route's checker (tokens, tokens_float, ...)"),
        case_insensitive: Optional[bool] = _CASE_INSENSITIVE,
        abs_tol: Optional[float] = _ABS_TOL,
        rel_tol: Optional[float] = _REL_TOL,
        time_limit: Optional[float] = typer.Option(None, "--time-limit", help="CPU seconds per case (default: per data_source)"),
        memory_limit: Optional[int] = typer.Option(None, "--memory-limit", help="MiB per case (default 1024)"),
        run_all: bool = typer.Option(False, "--run-all", help="run every case even after a failure (exact passed counts)"),
        reuse: bool = _REUSE,
        case_order: str = _CASE_ORDER,
        verdict_cache: Optional[Path] = _VERDICT_CACHE,
        split: Optional[str] = typer.Option(None, "--split", help="split of an HF DatasetDict folder"),
        quiet: bool = typer.Option(False, "--quiet", help="no progress bar"),
        ray: Optional[str] = ray_option(),
        shard: Optional[str] = shard_option(),
    ) -> None:
        """Score every response of COMPLETIONS against its row of DATASET.

        Writes OUT/verdicts.jsonl (one record per response, keyed <data_source>:<index>#<i>),
        OUT/problems.jsonl (pass rate, pass@k), OUT/summary.json and OUT/errors.jsonl, and prints
        a table by data_source. Rerun the same command after an interruption: finished responses
        are kept and skipped. OUT/config.json records the inputs (content sha256 of DATASET and
        COMPLETIONS) and the verdict-changing options (--parity, --checker, --case-insensitive,
        --abs-tol, --rel-tol, --time-limit, --memory-limit, --run-all, --split); a rerun into OUT with anything else is
        refused (exit 2, naming what differs): use a new --out. Rows with an unusable test suite are
        recorded as INVALID_TASK and the run goes on; rows whose every expected output is empty
        (a program that prints nothing passes) are judged and counted as vacuous. Both inputs are
        checked before scoring starts: an empty, binary, non-UTF-8 or non-JSON DATASET or
        COMPLETIONS, or completions matching no row, is exit 2 naming the file and line; single bad
        completion records are listed (with their line) and skipped. Exit status: 0 done; 1 some
        responses hit SANDBOX_ERROR (not recorded: rerun to retry them); 2 bad input or OUT made
        with other inputs; 4 --ray: Ray did not start in 3 tries (nothing was run). A row's identical
        programs are judged once, the cases that failed its earlier responses run first, the longest
        start first (docs/step.md): same scores.
        """
        from arbiter.pipelines.codegen import ScoringInputError, load_inputs, score_completions
        from arbiter.rewards.codegen import verdict_options

        console = Console(stderr=True)
        # INVALID_TASK / SANDBOX_ERROR are reported in the outputs and the table, not as log lines
        logging.getLogger("arbiter.verl").setLevel(logging.ERROR)
        opts = _reward_options(console, parity=parity, checker=checker, case_insensitive=case_insensitive,
                               abs_tol=abs_tol, rel_tol=rel_tol, time_limit=time_limit, memory_limit_mb=memory_limit, run_all=run_all, workers=workers,
                               reuse=reuse, case_order=case_order)
        try:  # every input check runs before the progress bar starts
            inputs = load_inputs(dataset, completions, split=split)
        except (ScoringInputError, OSError) as exc:
            raise _fail(console, exc) from None
        options = verdict_options(opts)
        part = parse_shard(shard)
        if part is not None:
            from arbiter.pipelines.shards import SHARD_OPTION, shard_inputs

            inputs, options = shard_inputs(inputs, *part), options | {SHARD_OPTION: shard}
        problems = inputs.problems  # (listed once the config check passed: nothing is written before)
        bar = _Bar(console, quiet, lambda: _show_input_problems(console, problems, out))
        with on_ray(ray, console) as backend, resumable(console, out):
            try:
                run = score_completions(dataset, completions, out, reward=opts, split=split, progress=bar,
                                        inputs=inputs, options=options, verdict_cache=verdict_cache)
            except (ValueError, OSError) as exc:
                bar.stop()
                raise _fail(console, exc) from None
            finally:
                bar.stop()
            record_cluster(backend, out / "summary.json")
        _report(console, run, out)
