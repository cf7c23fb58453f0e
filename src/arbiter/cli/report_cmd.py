"""``arbiter report``: tables and PNG plots of an annotated verl dataset and of run folders, over
:mod:`arbiter.pipelines.report`. Inputs, outputs and every table: ``docs/report.md``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer
from rich.console import Console
from rich.markup import escape


def run_report(inputs: list[Path], out: Path, *, candidates: Optional[list[str]] = None,
               tokenizer: Optional[Path] = None, prompt_cap: int = 2048, split: Optional[str] = None,
               title: str = "arbiter report") -> None:
    """Build the report and print where it is; a bad input or option exits 2 naming it."""
    from arbiter.pipelines.report import ReportOptions, TokenizerError, build_report, parse_candidates

    console = Console()
    try:
        opts = ReportOptions(candidates=parse_candidates(candidates or []), tokenizer=tokenizer,
                             prompt_cap=prompt_cap, split=split, title=title)
        rep = build_report(inputs, out, opts)
    except (ValueError, TokenizerError, OSError) as exc:
        console.print(f"[red]error:[/] {escape(str(exc))}", highlight=False)
        raise typer.Exit(2)
    for sec in rep.content["sections"]:
        console.print(f"{sec['kind']} {escape(sec['name'])}: {', '.join(sec['plots'].values())}", highlight=False)
    console.print(f"report: {escape(str(rep.out / 'report.md'))} (numbers in report.json)", highlight=False)


def register(app: typer.Typer) -> None:
    """Add ``arbiter report`` to ``app``."""

    @app.command("report")
    def report(
        inputs: list[Path] = typer.Argument(..., help="verl dataset (.parquet/.jsonl/HF folder) with the goldilocks "
                                                      "annotation, and/or arbiter score, pie eval, pie reward, "
                                                      "oracle verify folders"),
        out: Path = typer.Option(..., "--out", file_okay=False, help="report folder (report.md, report.json, PNGs)"),
        candidates: Optional[list[str]] = typer.Option(None, "--candidates",
                                                       help="[SOURCE=]PATH of a candidate dataset before filtering "
                                                            "(kept / candidate); repeatable"),
        tokenizer: Optional[Path] = typer.Option(None, "--tokenizer", exists=True,
                                                 help="local tokenizer.json (or its folder, with tokenizer_config.json "
                                                      "for the chat template); default: characters"),
        prompt_cap: int = typer.Option(2048, "--prompt-cap", min=1, help="count prompts longer than this"),
        split: Optional[str] = typer.Option(None, "--split", help="split of an HF datasets folder"),
        title: str = typer.Option("arbiter report", "--title", help="report title"),
    ) -> None:
        """The codegen card's tables (composition, kept / candidate, difficulty, test suites, prompt lengths)
        and plots (weak vs strong pass rates, suite sizes, pass@k by data_source), and the plots of score,
        pie eval, pie reward and oracle verify folders. Exit 0 written, 2 bad input."""
        run_report(inputs, out, candidates=candidates, tokenizer=tokenizer, prompt_cap=prompt_cap, split=split,
                   title=title)


__all__ = ["register", "run_report"]
