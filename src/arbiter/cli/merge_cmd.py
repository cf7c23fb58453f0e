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
    ) -> None:
        """Merge the shard folders of one `arbiter score` run into OUT.

        Every shard must have been scored from the same dataset and completions (content sha256) and
        options (only --shard differs), and no response key may be in two shards; otherwise exit 2 naming
        the folders. OUT gets verdicts.jsonl in the completions' order, problems.jsonl, summary.json and
        config.json, as a single run writes them."""
        from rich.console import Console
        from rich.markup import escape

        from arbiter.pipelines.shards import MergeRefused, merge_score_shards

        console = Console(stderr=True)
        try:
            summary = merge_score_shards(out, shards, dataset=dataset, completions=completions)
        except (MergeRefused, ValueError, OSError) as exc:
            console.print(f"[red]error:[/] {escape(str(exc))}")
            raise typer.Exit(2) from None
        overall = summary["overall"]
        console.print(f"{len(shards)} shards merged into {escape(str(out))}: {overall['problems']} problems, "
                      f"{overall['responses']} responses")
