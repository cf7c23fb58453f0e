"""``arbiter convert``: real code datasets in their own shapes -> verl rule-reward rows
(:mod:`arbiter.datasets.convert`)."""

from __future__ import annotations

import json
from enum import Enum
from pathlib import Path
from typing import Optional

import typer
from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn


class Source(str, Enum):
    apps = "apps"
    taco = "taco"
    leetcode = "leetcode"
    codescope = "codescope"
    nemo_gym = "nemo-gym"
    lcb = "lcb"


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
        from rich.markup import escape

        from arbiter.datasets.convert import check_output_path
        from arbiter.datasets.convert import convert as run_convert

        console = Console(stderr=True)
        bar = Progress(TextColumn("[bold]converting[/]"), BarColumn(), TextColumn("{task.completed} rows"),
                       TextColumn("{task.fields[info]}"), TimeElapsedColumn(), console=console, disable=quiet,
                       transient=True)
        task = bar.add_task("convert", total=None, info="")
        measured = {"n": 0, "failed": 0}

        def on_measure(item, check) -> None:
            measured["n"] += 1
            measured["failed"] += check.outcome not in ("AC", "SANDBOX_ERROR")
            bar.update(task, info=f"{measured['n']} references measured, {measured['failed']} failing")

        transform = None
        if measure:
            from arbiter.verl.references import measure_references

            def transform(items):
                return measure_references(items, factor=factor, ceiling=ceiling, workers=workers,
                                          on_failure="drop" if drop_failing else "keep", on_measure=on_measure)
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
        console.print(f"{source.value}: {report.read} rows read, {report.written} written to {escape(str(out))} "
                      f"({report.tests} test cases, {report.reference_solutions} reference solutions), "
                      f"{len(report.skipped)} skipped, {len(report.bad)} bad, {len(report.warnings)} with warnings")
        if measure:
            console.print(f"  references: {report.measured} rows given a measured time_limit ({report.raised} above "
                          f"the route's default), {len(report.reference_failures)} written rows whose reference "
                          f"fails them, {len(report.unmeasured)} not measured (SANDBOX_ERROR)")
        for label, why in report.reference_failures[:20]:
            console.print(f"  [red]reference fails[/] {escape(label)}: {escape(why)}")
        if len(report.reference_failures) > 20:
            console.print(f"  ... and {len(report.reference_failures) - 20} more")
        for label, why in report.unmeasured[:5]:
            console.print(f"  [yellow]not measured[/] {escape(label)}: {escape(why)}")
        for label, why in report.bad[:20]:
            console.print(f"  [red]bad[/] {escape(label)}: {escape(why)}")
        if len(report.bad) > 20:
            console.print(f"  ... and {len(report.bad) - 20} more")
        if report.skipped:
            reasons: dict[str, int] = {}
            for _, why in report.skipped:
                reasons[why] = reasons.get(why, 0) + 1
            for why, n in sorted(reasons.items(), key=lambda kv: -kv[1])[:10]:
                console.print(f"  [dim]skipped {n}: {escape(why)}[/]")
        for label, why in report.warnings[:20]:
            console.print(f"  [yellow]warning[/] {escape(label)}: {escape(why)}")
        if len(report.warnings) > 20:
            console.print(f"  ... and {len(report.warnings) - 20} more warnings")
        if errors is not None:
            with open(errors, "w", encoding="utf-8") as f:
                for label, why in report.bad:
                    f.write(json.dumps({"row": label, "kind": "bad", "error": why}, ensure_ascii=False) + "\n")
                for label, why in report.skipped:
                    f.write(json.dumps({"row": label, "kind": "skipped", "reason": why}, ensure_ascii=False) + "\n")
                for label, why in report.warnings:
                    f.write(json.dumps({"row": label, "kind": "warning", "warning": why}, ensure_ascii=False) + "\n")
                for label, why in report.reference_failures:
                    f.write(json.dumps({"row": label, "kind": "reference_failed", "error": why},
                                       ensure_ascii=False) + "\n")
                for label, why in report.unmeasured:
                    f.write(json.dumps({"row": label, "kind": "unmeasured", "reason": why}, ensure_ascii=False) + "\n")
        if report.written == 0 or (fail_on_bad and (report.bad or report.reference_failures)):
            raise typer.Exit(1)
