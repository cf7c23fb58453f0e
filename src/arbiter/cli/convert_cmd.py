"""``arbiter convert``: real code datasets in their own shapes -> verl rule-reward rows
(:mod:`arbiter.datasets.convert`)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Optional

import typer
from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

from arbiter.strenum import StrEnum


class Source(StrEnum):
    apps = "apps"
    taco = "taco"
    leetcode = "leetcode"
    codescope = "codescope"
    nemo_gym = "nemo-gym"
    lcb = "lcb"



def _show(console: Console, kind: str, entries: list, limit: int, more: str = "more") -> None:
    for label, why in entries[:limit]:
        console.print(f"  {kind} {escape(label)}: {escape(why)}")
    if len(entries) > limit:
        console.print(f"  ... and {len(entries) - limit} {more}")


def _print_report(console: Console, source: str, report, out: Path, measure: bool) -> None:
    console.print(f"{source}: {report.read} rows read, {report.written} written to {escape(str(out))} "
                  f"({report.tests} test cases, {report.reference_solutions} reference solutions), "
                  f"{len(report.skipped)} skipped, {len(report.bad)} bad, {len(report.warnings)} with warnings")
    if measure:
        console.print(f"  references: {report.measured} rows given a measured time_limit ({report.raised} above "
                      f"the route's default), {len(report.reference_failures)} written rows whose reference "
                      f"fails them, {len(report.unmeasured)} not measured (SANDBOX_ERROR)")
    _show(console, "[red]reference fails[/]", report.reference_failures, 20)
    for label, why in report.unmeasured[:5]:
        console.print(f"  [yellow]not measured[/] {escape(label)}: {escape(why)}")
    _show(console, "[red]bad[/]", report.bad, 20)
    if report.skipped:
        reasons: dict[str, int] = {}
        for _, why in report.skipped:
            reasons[why] = reasons.get(why, 0) + 1
        for why, n in sorted(reasons.items(), key=lambda kv: -kv[1])[:10]:
            console.print(f"  [dim]skipped {n}: {escape(why)}[/]")
    _show(console, "[yellow]warning[/]", report.warnings, 20, "more warnings")


def _write_errors(path: Path, report) -> None:
    """``--errors``: one JSON line per bad, skipped, warned, failing-reference and unmeasured row."""
    from arbiter.datasets.io import write_jsonl_atomic

    records = [*({"row": label, "kind": "bad", "error": why} for label, why in report.bad),
               *({"row": label, "kind": "skipped", "reason": why} for label, why in report.skipped),
               *({"row": label, "kind": "warning", "warning": why} for label, why in report.warnings),
               *({"row": label, "kind": "reference_failed", "error": why} for label, why in report.reference_failures),
               *({"row": label, "kind": "unmeasured", "reason": why} for label, why in report.unmeasured)]
    write_jsonl_atomic(path, records, dumps=lambda r: json.dumps(r, ensure_ascii=False))


def _measuring(bar: Progress, task, *, factor: float, ceiling: float, workers: int | None, drop_failing: bool):
    """The reference-measuring transform of the converted rows (progress in the bar's ``info``)."""
    from arbiter.pipelines.codegen.references import measure_references

    measured = {"n": 0, "failed": 0}

    def on_measure(item, check) -> None:
        measured["n"] += 1
        measured["failed"] += check.outcome not in ("AC", "SANDBOX_ERROR")
        bar.update(task, info=f"{measured['n']} references measured, {measured['failed']} failing")

    def transform(items):
        return measure_references(items, factor=factor, ceiling=ceiling, workers=workers,
                                  on_failure="drop" if drop_failing else "keep", on_measure=on_measure)

    return transform


def register(app: typer.Typer) -> None:
    @app.command()
    def convert(
        source: Source = typer.Option(..., "--from", help="the input's dataset shape"),
        input_path: Path = typer.Argument(..., exists=True, metavar="IN",
                                          help="rows (.jsonl[.gz], .parquet, HF folder) or an APPS folder tree"),
        out: Path = typer.Option(..., "--out", help="OUT.parquet or OUT.jsonl (its folder must exist)"),
        data_source: Optional[str] = typer.Option(None, "--data-source", help="override the data_source of every row"),
        index_prefix: Optional[str] = typer.Option(None, "--index-prefix",
                                                   help="extra_info.index prefix (default: the source; e.g. taco_test)"),
        errors: Optional[Path] = typer.Option(None, "--errors", dir_okay=False,
                                              help="write bad, skipped and warned rows to this JSONL"),
        fail_on_bad: bool = typer.Option(False, "--fail-on-bad", help="exit 1 when any row could not be converted or its reference fails it"),
        measure: bool = typer.Option(True, "--measure-references/--no-measure-references",
                                     help="judge each row's first reference solution and record a per-row time "
                                          "limit (extra_info.time_limit); rows without one cost nothing"),
        factor: float = typer.Option(2.0, "--time-limit-factor", min=1.0, max=100.0,
                                     help="per-row limit = this multiple of the reference's slowest case"),
        ceiling: float = typer.Option(30.0, "--max-time-limit", min=0.1, max=86400.0,
                                      help="largest per-row limit, CPU s per case (the reference runs under it)"),
        drop_failing: bool = typer.Option(False, "--drop-failing-references",
                                          help="do not write rows whose reference fails them (default: write "
                                               "them without time_limit, flagged in extra_info.notes)"),
        workers: Optional[int] = typer.Option(None, "--workers", min=1, help="rows measured at once (default: cores)"),
        quiet: bool = typer.Option(False, "--quiet", help="no progress bar"),
    ) -> None:
        """Convert IN (a SOURCE dataset) to verl rows in OUT.

        Every ground truth is read back through the verl test-suite normaliser (convert-or-fail);
        bad rows are reported and skipped, the batch goes on. Rows whose every expected output is
        empty (a program that prints nothing passes) are written and warned about. Unless
        --no-measure-references, each row's first reference solution is judged as the reward judges
        a response, and the row gets extra_info.time_limit = max(route default, min(--max-time-limit,
        --time-limit-factor x its slowest case)), which the reward uses; a reference that fails its
        own row is reported (kept without a time limit and flagged, or dropped with
        --drop-failing-references). OUT must end in
        .parquet or .jsonl, in an existing folder, and not be a directory. Exit status: 0 done (also
        with bad rows, unless --fail-on-bad); 1 bad rows with --fail-on-bad, or no row written;
        2 bad input: OUT unusable, IN missing, unreadable, not parseable (the file and line are
        named; nothing is written) or holding no rows.
        """
        from arbiter.datasets.convert import check_output_path
        from arbiter.datasets.convert import convert as run_convert

        console = Console(stderr=True)
        bar = Progress(TextColumn("[bold]converting[/]"), BarColumn(), TextColumn("{task.completed} rows"),
                       TextColumn("{task.fields[info]}"), TimeElapsedColumn(), console=console, disable=quiet,
                       transient=True)
        task = bar.add_task("convert", total=None, info="")
        transform = _measuring(bar, task, factor=factor, ceiling=ceiling, workers=workers,
                               drop_failing=drop_failing) if measure else None
        try:
            check_output_path(out)
            if errors is not None and not errors.parent.is_dir():
                raise ValueError(f"--errors {errors}: its folder {errors.parent} does not exist")
            with bar:
                report = run_convert(source.value, input_path, out, data_source=data_source, index_prefix=index_prefix,
                                     transform=transform, on_row=lambda item: bar.advance(task))
        except (ValueError, OSError) as exc:
            console.print(f"[red]error:[/] {escape(str(exc))}")
            raise typer.Exit(2)
        _print_report(console, source.value, report, out, measure)
        if errors is not None:
            _write_errors(errors, report)
        if report.written == 0 or (fail_on_bad and (report.bad or report.reference_failures)):
            raise typer.Exit(1)
