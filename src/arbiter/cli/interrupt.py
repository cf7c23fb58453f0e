"""Ctrl-C during a long command: one line saying what is kept and how to go on, exit status 130."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import typer
from rich.console import Console


@contextmanager
def resumable(console: Console, out: Path | str) -> Iterator[None]:
    """Turn a KeyboardInterrupt in the block into that line (on ``console``) and exit 130; what
    the run wrote to ``out`` is kept (outputs are written as they come) and the same command
    resumes without doing it again."""
    try:
        yield
    except KeyboardInterrupt:
        from rich.markup import escape

        console.print(f"[yellow]interrupted:[/] what was written to {escape(str(out))} is kept; the same command "
                      "resumes without doing it again", highlight=False)
        raise typer.Exit(130) from None
