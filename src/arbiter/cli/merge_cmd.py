"""``arbiter merge OUT SHARD_DIRS...``: join ``arbiter score --shard i/N`` folders into one folder equal to
a single run's (:func:`arbiter.pipelines.shards.merge_score_shards`). See ``docs/cluster.md`` ("Shards").
"""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer


def register(app: typer.Typer) -> None:
    @app.command()
    def merge(
        out: Path = typer.Argument(..., file_okay=False, help="the merged folder (new or empty)"),
        shards: list[Path] = typer.Argument(..., exists=True, file_okay=False, help="`arbiter score --shard` folders"),
        dataset: Optional[Path] = typer.Option(None, "--dataset", help="the scored rows (default: the shards' config path)"),
        completions: Optional[Path] = typer.Option(None, "--completions",
                                                   help="the scored completions (default: the shards' config path)"),
        allow_partial: bool = typer.Option(False, "--allow-partial",
                                           help="merge even with shards missing or unfinished (summary.json's "
                                                "\"partial\" says what is missing)"),
    ) -> None:
        """Merge the shard folders of one `arbiter score` run into OUT.

        Every shard must have been scored from the same dataset and completions (content sha256) and
        options (only --shard differs), the folders must be shards 0/N..N-1/N of one N, each once, every
        shard must have finished (a verdict for each of its responses: an interrupted shard is finished
        by rerunning its score command) and no response key may be in two shards; otherwise exit 2
        naming the folders. --allow-partial merges missing or unfinished shards anyway and says what
        is missing. OUT gets verdicts.jsonl in the completions' order, problems.jsonl, summary.json and
        config.json, as a single run writes them."""
        from rich.console import Console
        from rich.markup import escape

        from arbiter.pipelines.shards import MergeRefused, merge_score_shards

        console = Console(stderr=True)
        try:
            summary = merge_score_shards(out, shards, dataset=dataset, completions=completions,
                                         allow_partial=allow_partial)
        except (MergeRefused, ValueError, OSError) as exc:
            console.print(f"[red]error:[/] {escape(str(exc))}")
            raise typer.Exit(2) from None
        overall = summary["overall"]
        console.print(f"{len(shards)} shards merged into {escape(str(out))}: {overall['problems']} problems, "
                      f"{overall['responses']} responses")
        if "partial" in summary:
            console.print(f"[yellow]partial merge: {escape(_partial_text(summary['partial']))}[/]")


def _partial_text(partial: dict) -> str:
    """What a partial merge lacks, in one line (from summary.json's ``partial``)."""
    parts = [f"shard(s) {', '.join(partial['missing_shards'])} not given"] if partial["missing_shards"] else []
    parts += [f"{folder} lacks {n} verdict(s)" for folder, n in partial["unfinished_shards"].items()]
    return f"{'; '.join(parts)}; {partial['responses_without_verdict']} response(s) have no verdict"
