"""``arbiter curate``: RL prompt-set curation the codegen card's way ("Difficulty (goldilocks) filtering",
"Creation pipeline" steps 2-4); the rules live in :mod:`arbiter.pipelines.goldilocks`.

- ``goldilocks --dataset D --weak DIR --strong DIR --out OUT``: annotate D from two ``arbiter score`` folders
  (joined on data_source-qualified keys), keep ``lower <= 0.875 AND upper >= 0.125`` rows in English; writes
  OUT, ``<stem>.report.json`` and ``<stem>.rows.jsonl`` (``docs/goldilocks.md``).
- ``consolidate --source PREFIX=ROWS [--sidecar PREFIX=SIDECAR] --out OUT``: step 3: recompute the flag, fold
  the annotation into ``extra_info``, re-index ``PREFIX_{i}``, prefix ``code_``, concatenate
  (``docs/codegen.md``, "Consolidation").
- ``audit --dataset D``: check the annotation a dataset already carries.

Exit status (each command's help has the details): 0 done; 1 done with rows that have problems (listed in the
report); 2 bad input (option, file and line named; nothing written).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, Optional

import typer
from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

curate_app = typer.Typer(name="curate", no_args_is_help=True,
                         help="Curate RL prompt sets: goldilocks difficulty filter and English filter; audit annotations.")


def _show(text: Any) -> str:
    """``text`` for the terminal: lone surrogates (a JSON ``"\\ud83d"`` in a row key) as ``\\ud83d``."""
    return escape(str(text).encode("utf-8", "backslashreplace").decode("utf-8"))


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.1f}%"


def _rate(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def goldilocks_table(report: dict[str, Any]) -> Table:
    """A rich table of a goldilocks ``report.json``, one row per data_source then ``overall`` (the card's
    composition and difficulty tables): candidates, rows without annotation, vacuous drops, drops at the floor
    only, the ceiling only and both (so the columns up to goldilocks add up to the candidates), goldilocks,
    non-English drops (and rows without a statement, when there are any), kept, kept per candidate, share of
    kept, mean weak / strong pass rate of kept rows."""
    table = Table(title="goldilocks by data_source")
    no_statement = bool(report["overall"].get("dropped_no_statement"))
    table.caption = ("floor, ceiling: rows dropped by that bound alone; both: by the two; weak, strong: mean "
                     "pass rates of the kept rows")
    cols = ["data_source", "candidates", "no annot.", "vacuous", "floor", "ceiling", "both", "goldilocks",
            "non-English"]
    cols += ["no stmt."] if no_statement else []
    cols += ["kept", "kept/cand.", "share", "weak", "strong"]
    for col in cols:
        table.add_column(col, justify="left" if col == "data_source" else "right", no_wrap=True)
    groups = list(report["by_data_source"].items()) + [("overall", report["overall"])]
    for name, g in groups:
        both = g["dropped_floor_and_ceiling"]  # (report.json counts these in floor and in ceiling too)
        cells = [f"[bold]{_show(name)}[/]" if name == "overall" else _show(name), str(g["candidates"]),
                 str(g["missing_annotation"]), str(g["dropped_vacuous"]), str(g["dropped_floor"] - both),
                 str(g["dropped_ceiling"] - both), str(both), str(g["goldilocks"]), str(g["dropped_non_english"])]
        cells += [str(g["dropped_no_statement"])] if no_statement else []
        cells += [str(g["kept"]), _pct(g["kept_per_candidate"]), _pct(g["share_of_kept"]),
                  _rate(g["mean_lower_pass_rate"]), _rate(g["mean_upper_pass_rate"])]
        table.add_row(*cells)
    return table


AUDIT_COLUMNS = ("rows", "clean", "inconsistent", "pass_rate_mismatch", "count_mismatch", "missing_fields",
                 "bad_scores", "non_binary_scores", "floor", "ceiling", "non_english", "no_statement", "bad_row",
                 "duplicate_key")


def audit_table(counts: dict[str, Any]) -> Table:
    """A rich table of an audit's counts (rows with each finding), one row per data_source then ``overall``."""
    table = Table(title="goldilocks annotation audit by data_source")
    cols = [c for c in AUDIT_COLUMNS if c in ("rows", "clean", "inconsistent") or counts["overall"].get(c)]
    table.add_column("data_source", no_wrap=True)
    for c in cols:
        table.add_column(c.replace("_", " "), justify="right", no_wrap=True)
    groups = list(counts["by_data_source"].items()) + [("overall", counts["overall"])]
    for name, g in groups:
        table.add_row(f"[bold]{_show(name)}[/]" if name == "overall" else _show(name),
                      *[str(g.get(c, 0)) for c in cols])
    return table


def _english_min(english_min: float, no_english_filter: bool) -> Optional[float]:
    return None if no_english_filter else english_min


@curate_app.command("goldilocks")
def goldilocks(
    dataset: Path = typer.Option(..., "--dataset", exists=True,
                                 help="the scored verl rows: .parquet, .jsonl[.gz] or an HF datasets folder"),
    weak: list[Path] = typer.Option(..., "--weak", help="`arbiter score --out` folder of the weak model (lower); "
                                                        "repeat for several (shards, more completions)"),
    strong: list[Path] = typer.Option(..., "--strong", help="`arbiter score --out` folder of the strong model "
                                                            "(upper); repeatable as --weak"),
    out: Path = typer.Option(..., "--out", help="kept rows: OUT.parquet or OUT.jsonl (its folder must exist)"),
    lower_max: float = typer.Option(0.875, "--lower-max", help="keep when lower_pass_rate <= this (card: 0.875)"),
    upper_min: float = typer.Option(0.125, "--upper-min", help="keep when upper_pass_rate >= this (card: 0.125)"),
    english_min: float = typer.Option(0.999, "--english-min", help="lingua English confidence to keep (card: 0.999)"),
    no_english_filter: bool = typer.Option(False, "--no-english-filter", help="keep rows in any language"),
    k: Optional[int] = typer.Option(None, "--k", help="completions every row must have per model "
                                                      "(default: each folder's most common count)"),
    split: Optional[str] = typer.Option(None, "--split", help="split of an HF DatasetDict folder"),
    report: Optional[Path] = typer.Option(None, "--report", dir_okay=False,
                                          help="report path (default: <OUT stem>.report.json)"),
    keep_vacuous: bool = typer.Option(False, "--keep-vacuous",
                                      help="keep rows whose every expected output is empty (flagged; default: drop)"),
    allow_parity: bool = typer.Option(False, "--allow-parity",
                                      help="accept folders scored with `arbiter score --parity` (SKIPPED = pass)"),
    allow_partial: bool = typer.Option(False, "--allow-partial",
                                       help="accept shard folders that are not one whole finished run (their "
                                            "missing rows are reported, not kept)"),
    quiet: bool = typer.Option(False, "--quiet", help="no progress bar"),
) -> None:
    """Keep the goldilocks rows of DATASET (lower <= 0.875 AND upper >= 0.125), in English.

    Pass rates come from the two `arbiter score` folders (fraction of a row's completions with score 1.0),
    joined on <data_source>:<extra_info.index> (a row without an index by its position, only when DATASET is the
    file the folder scored); each verdict's ground-truth sha256 must match the row's. A row missing from either
    folder, with another number of completions than the folder's other rows, INVALID_TASK, SANDBOX_ERROR, a score
    outside [0, 1] or a changed ground truth is reported, never counted as 0, and not kept. Rows with a vacuous
    suite (every expected output empty) are dropped unless --keep-vacuous; folders scored with --parity are
    refused unless --allow-parity. Several folders of one completions file must be the shards of one whole
    finished run (`arbiter score --shard i/N`, checked as `arbiter merge` does) unless --allow-partial.
    Writes OUT, the report and <OUT stem>.rows.jsonl; none may be an input or lie in a score folder. Exit
    status: 0 done; 1 done with rows lacking an annotation, bad or repeated rows (listed in the report); 2 bad
    input.
    """
    from arbiter.pipelines.goldilocks import CurationInputError, curate_goldilocks

    console = Console(stderr=True)
    bar = Progress(TextColumn("curating"), BarColumn(), MofNCompleteColumn(), TextColumn("rows"), TimeElapsedColumn(),
                   console=console, disable=quiet)
    task = bar.add_task("curate", total=None)
    started = False

    def progress(done: int, total: int) -> None:
        nonlocal started
        if not started:
            bar.start()
            started = True
        bar.update(task, completed=done, total=total)

    try:
        run = curate_goldilocks(dataset, weak, strong, out, lower_max=lower_max, upper_min=upper_min,
                                english_min=_english_min(english_min, no_english_filter), k=k, split=split,
                                report=report, keep_vacuous=keep_vacuous, allow_parity=allow_parity,
                                allow_partial=allow_partial, progress=progress)
    except (CurationInputError, ValueError, OSError, RuntimeError) as exc:
        if started:
            bar.stop()
        console.print(f"[red]error:[/] {_show(exc)}")
        raise typer.Exit(2)
    if started:
        bar.stop()
    Console(width=None if sys.stdout.isatty() else 160).print(goldilocks_table(run.report))
    o = run.report["options"]
    console.print(f"kept {run.overall.kept} of {run.overall.candidates} candidate rows "
                  f"(lower <= {o['lower_max']}, upper >= {o['upper_min']}, "
                  f"{'English >= ' + str(o['english_min']) if o['english_min'] is not None else 'no English filter'}; "
                  f"k = {o['k_lower']} weak, {o['k_upper']} strong)", highlight=False)
    _print_findings(console, run)
    console.print(f"outputs: {_show(run.out)}, {_show(run.report_path)}, {_show(run.rows_path)}", highlight=False)
    raise typer.Exit(1 if run.problems else 0)


def _print_findings(console: Console, run: Any) -> None:
    """The warnings, then the first rows of each list of the report a curator should look at."""
    for w in run.warnings:
        console.print(f"[yellow]warning:[/] {_show(w)}")
    for p in run.report["annotation_problems"][:10]:
        console.print(f"  [yellow]{_show(p['row_key'])}[/] {p['side']}: {p['reason']}: {_show(p['detail'])}")
    if len(run.report["annotation_problems"]) > 10:
        console.print(f"  ... and {len(run.report['annotation_problems']) - 10} more in {_show(run.report_path)}")
    for r in run.report["english_near_misses"][:10]:
        console.print(f"  [yellow]near miss[/] {_show(r['row_key'])} English {r['english_confidence']:.3f}: "
                      f"{_show(r['statement_start'][:80])}", highlight=False)
    for b in (run.report["bad_rows"] + run.report["duplicate_rows"])[:10]:
        console.print(f"  [red]bad row[/] {_show(b['error'])}")


@curate_app.command("audit")
def audit(
    dataset: Path = typer.Option(..., "--dataset", exists=True,
                                 help="verl rows carrying extra_info.{lower,upper}_{scores,pass_rate}"),
    lower_max: float = typer.Option(0.875, "--lower-max", help="the flag's lower_pass_rate maximum (card: 0.875)"),
    upper_min: float = typer.Option(0.125, "--upper-min", help="the flag's upper_pass_rate minimum (card: 0.125)"),
    english_min: float = typer.Option(0.999, "--english-min", help="lingua English confidence (card: 0.999)"),
    no_english_filter: bool = typer.Option(False, "--no-english-filter", help="do not check the language"),
    k: Optional[int] = typer.Option(None, "--k", help="scores every row must have per model "
                                                      "(default: the most common count)"),
    split: Optional[str] = typer.Option(None, "--split", help="split of an HF DatasetDict folder"),
    report: Optional[Path] = typer.Option(None, "--report", dir_okay=False, help="write the findings as JSON here"),
) -> None:
    """Audit the goldilocks annotation stored in DATASET's extra_info.

    Recomputes each pass rate from its scores (fraction equal to 1.0) and compares it with the stored one, checks
    the score counts, recomputes the flag and the English filter (read as `curate goldilocks` reads it), and lists
    every row that is inconsistent or would not be kept. --report must not be DATASET. Exit status: 0 every row
    consistent and kept; 1 findings; 2 bad input.
    """
    from arbiter.pipelines.goldilocks import (
        CurationInputError, audit_annotations, check_output_paths, write_json_atomic,
    )

    console = Console(stderr=True)
    try:
        if report is not None:
            if not report.parent.is_dir():
                raise CurationInputError(f"--report {report}: its folder {report.parent} does not exist")
            check_output_paths({"--report": report}, {"--dataset": dataset})
        run = audit_annotations(dataset, lower_max=lower_max, upper_min=upper_min,
                                english_min=_english_min(english_min, no_english_filter), k=k, split=split)
        if report is not None:
            from arbiter.pipelines.outputs import lock_out_dir

            lock_out_dir(report.parent)  # one writer per folder; released when this process ends
            write_json_atomic(report, run.as_dict())
    except (CurationInputError, ValueError, OSError, RuntimeError) as exc:
        console.print(f"[red]error:[/] {_show(exc)}")
        raise typer.Exit(2)
    Console(width=None if sys.stdout.isatty() else 160).print(audit_table(run.counts))
    console.print(f"{run.rows} rows audited; {run.clean} consistent and kept; {len(run.findings)} with findings "
                  f"(k = {run.k.get('lower')} lower, {run.k.get('upper')} upper)", highlight=False)
    for f in run.findings[:10]:
        console.print(f"  [yellow]{_show(f['row_key'])}[/] " + "; ".join(
            f"{kind}: {_show(f['detail'].get(kind, ''))}" for kind in f["findings"]))
    if len(run.findings) > 10:
        console.print(f"  ... and {len(run.findings) - 10} more" + (f" in {_show(report)}" if report else
                                                                     " (write them all with --report)"))
    raise typer.Exit(1 if run.findings else 0)


def _pairs(values: list[str], option: str) -> dict[str, Path]:
    from arbiter.pipelines.goldilocks import CurationInputError

    pairs: dict[str, Path] = {}
    for v in values:
        prefix, sep, path = v.partition("=")
        if not sep or not prefix or not path:
            raise CurationInputError(f"{option} {v!r}: expected PREFIX=PATH (e.g. deepcoder=rows.parquet)")
        if prefix in pairs:
            raise CurationInputError(f"{option}: prefix {prefix!r} given twice")
        if not Path(path).exists():
            raise CurationInputError(f"{option} {v!r}: {path} does not exist")
        pairs[prefix] = Path(path)
    return pairs


@curate_app.command("consolidate")
def consolidate_cmd(
    source: list[str] = typer.Option(..., "--source", help="PREFIX=ROWS, repeatable, in output order: rows whose "
                                     "extra_info carries the annotation (e.g. `curate goldilocks` outputs)"),
    sidecar: list[str] = typer.Option([], "--sidecar", help="PREFIX=SIDECAR: read that source's annotation from a "
                                      "sidecar dataset joined on <data_source>:<index>"),
    out: Path = typer.Option(..., "--out", help="consolidated rows: OUT.parquet or OUT.jsonl"),
    lower_max: float = typer.Option(0.875, "--lower-max", help="keep when lower_pass_rate <= this (card: 0.875)"),
    upper_min: float = typer.Option(0.125, "--upper-min", help="keep when upper_pass_rate >= this (card: 0.125)"),
    k: Optional[int] = typer.Option(None, "--k", help="scores every row must have per model (card: 8; default: "
                                                      "each source's most common count)"),
    split: Optional[str] = typer.Option(None, "--split", help="split of HF DatasetDict folders"),
    report: Optional[Path] = typer.Option(None, "--report", dir_okay=False,
                                          help="report path (default: <OUT stem>.report.json)"),
) -> None:
    """Card step 3: keep goldilocks rows of each source, fold the annotation into extra_info, re-index them
    PREFIX_{i} (original id in extra_info.id), prefix code_ to a data_source without "code", concatenate.

    Exit status: 0 done; 1 some rows could not be consolidated (listed); 2 bad input.
    """
    from arbiter.pipelines.goldilocks import ConsolidationSource, CurationInputError, consolidate

    console = Console(stderr=True)
    try:
        rows, sides = _pairs(source, "--source"), _pairs(sidecar, "--sidecar")
        unknown = sorted(set(sides) - set(rows))
        if unknown:
            raise CurationInputError(f"--sidecar {unknown[0]}: no --source with that prefix")
        run = consolidate([ConsolidationSource(p, r, sides.get(p)) for p, r in rows.items()], out, lower_max=lower_max,
                          upper_min=upper_min, split=split, k=k, report=report)
    except (CurationInputError, ValueError, OSError) as exc:
        console.print(f"[red]error:[/] {_show(exc)}")
        raise typer.Exit(2)
    table = Table(title="consolidation by source")
    for col in ("source", "candidates", "kept", "floor", "ceiling", "floor+ceiling", "problems"):
        table.add_column(col, justify="left" if col == "source" else "right", no_wrap=True)
    for prefix, c in run.counts.items():
        table.add_row(_show(prefix), *[str(c[k]) for k in ("candidates", "kept", "floor", "ceiling", "floor+ceiling",
                                                           "problems")])
    Console(width=None if sys.stdout.isatty() else 160).print(table)
    for p in run.problems[:10]:
        console.print(f"  [yellow]problem:[/] {_show(p)}")
    console.print(f"kept {run.kept} rows -> {_show(run.out)} (report {_show(run.report_path)})", highlight=False)
    raise typer.Exit(1 if run.problems else 0)


def register(app: typer.Typer) -> None:
    """Add the ``curate`` command group (``goldilocks``, ``consolidate``, ``audit``) to ``app``."""
    app.add_typer(curate_app, name="curate")


__all__ = ["audit_table", "curate_app", "goldilocks_table", "register"]
