"""``arbiter sample``: n completions per verl row from an OpenAI-compatible chat endpoint, written as the
completions file ``arbiter score`` reads (:mod:`arbiter.pipelines.sample`; ``docs/codegen.md``, "Sampling").

Exit status: 0 every sample is in the output; 2 bad input, an endpoint that cannot be reached or does not serve
the model (nothing is asked); 3 done, but some samples are still missing (failed requests, listed in
``<out stem>.errors.jsonl``; rerun to ask for them).
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Optional

import typer
from rich.console import Console
from rich.markup import escape
from rich.progress import (
    BarColumn, MofNCompleteColumn, Progress, TaskProgressColumn, TextColumn, TimeElapsedColumn, TimeRemainingColumn,
)

from arbiter.cli.llm_opts import MB, RETRIES_HELP, SIZE_HELP, TIMEOUT_HELP
from arbiter.pipelines.llm_client import (DEFAULT_CONCURRENCY, DEFAULT_MAX_RESPONSE_BYTES, DEFAULT_MAX_RETRIES,
                                          DEFAULT_TIMEOUT)


def _bar(console: Console, disable: bool) -> Progress:
    return Progress(TextColumn("[bold]sampling[/]"), BarColumn(), MofNCompleteColumn(), TaskProgressColumn(),
                    TextColumn("{task.fields[rate]}"), TimeElapsedColumn(), TextColumn("ETA"), TimeRemainingColumn(),
                    console=console, disable=disable)


def _n_note(summary) -> str:
    if summary.used_n:
        return ""
    probes = f"{summary.n_refusals} request(s) with n refused, their samples asked again: " if summary.n_refusals else ""
    return f"; {probes}the server takes no n, one request per sample"


def sample(
    dataset: Path = typer.Option(..., "--dataset", exists=True, help="verl rows: .parquet, .jsonl[.gz] or an HF folder"),
    model: str = typer.Option(..., "--model", help="model name served by the endpoint"),
    base_url: Optional[str] = typer.Option(None, "--base-url", help="OpenAI-compatible base URL, e.g. "
                                           "http://localhost:8000/v1 (default: $OPENAI_BASE_URL)"),
    out: Path = typer.Option(..., "--out", help="completions JSONL (created, or resumed)"),
    n: int = typer.Option(8, "--n", help="completions per row"),
    temperature: Optional[float] = typer.Option(None, "--temperature", help="default: the server's"),
    top_p: Optional[float] = typer.Option(None, "--top-p", help="default: the server's"),
    max_tokens: Optional[int] = typer.Option(None, "--max-tokens", help="default: the server's"),
    seed: Optional[int] = typer.Option(None, "--seed", help="request seed (seed + first sample index)"),
    concurrency: int = typer.Option(DEFAULT_CONCURRENCY, "--concurrency", help="rows in flight"),
    max_retries: int = typer.Option(DEFAULT_MAX_RETRIES, "--max-retries", help=RETRIES_HELP),
    timeout: float = typer.Option(DEFAULT_TIMEOUT, "--timeout", help=TIMEOUT_HELP),
    max_response_mb: float = typer.Option(DEFAULT_MAX_RESPONSE_BYTES / MB, "--max-response-mb", help=SIZE_HELP),
    sampling: str = typer.Option("auto", "--sampling", help="auto (n while the server takes it), n, or repeat"),
    split: Optional[str] = typer.Option(None, "--split", help="split of an HF DatasetDict folder"),
    quiet: bool = typer.Option(False, "--quiet", "--no-progress", help="no progress bar"),
) -> None:
    """Send each row's prompt to the endpoint N times (API key from $OPENAI_API_KEY, optional) and write the
    completions `arbiter score --completions` reads, with finish reasons, token usage and sampling parameters.

    Resumable: samples already in OUT are not asked for again (a file made with another model or other
    sampling parameters is refused). Exit status: 0 complete; 2 bad input or endpoint; 3 samples missing.
    """
    from arbiter.pipelines.sample import sample as run_sample

    console = Console(stderr=True)
    bar = _bar(console, quiet)
    task = bar.add_task("sample", total=None, rate="")
    started = time.monotonic()  # (from the start: one request may bring all n samples of a prompt at once)

    def on_progress(done: int, total: int) -> None:
        rate = done / max(time.monotonic() - started, 1e-3)
        bar.update(task, completed=done, total=total, rate=f"{rate:.1f} samples/s")

    retry = {"max_retries": max_retries, "timeout": timeout, "max_response_bytes": int(max_response_mb * MB)}
    try:
        with bar:
            summary = run_sample(dataset, out, model=model, base_url=base_url, api_key=os.environ.get("OPENAI_API_KEY"),
                                 n=n, concurrency=concurrency, temperature=temperature, top_p=top_p,
                                 max_tokens=max_tokens, seed=seed, sampling=sampling, split=split, retry=retry,
                                 on_progress=on_progress)
    except (ValueError, OSError) as exc:
        console.print(f"[red]error:[/] {escape(str(exc))}", highlight=False)
        raise typer.Exit(2)
    for p in summary.problems:
        console.print(f"[yellow]skipped:[/] {escape(p)}", highlight=False)
    console.print(f"{summary.rows} rows x {n}: {summary.samples_written} new samples, {summary.samples_existing} "
                  f"already there, {summary.samples_missing} missing after {summary.requests} requests "
                  f"({summary.retries} retries, {summary.failed_requests} given up on"
                  f"{f', {summary.malformed_answers} malformed answers' if summary.malformed_answers else ''}"
                  f"{_n_note(summary)}) -> {out}", highlight=False)
    if summary.samples_missing:
        console.print(f"[yellow]{summary.samples_missing} samples are missing (see {escape(summary.errors_path)}); "
                      f"rerun to ask for them[/]")
        raise typer.Exit(3)


def register(app: typer.Typer) -> None:
    """Add the ``sample`` command to ``app``."""
    app.command("sample")(sample)


__all__ = ["register", "sample"]
