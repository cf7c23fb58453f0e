"""``arbiter doctor``: what this machine offers; non-zero exit when code cannot be isolated.

Besides the sandbox checks it judges every registered language's self-test program
(:func:`arbiter.judge.selftest.run_self_tests`) and reports each.
"""

from __future__ import annotations

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table


def register(app: typer.Typer) -> None:
    @app.command()
    def doctor() -> None:
        """Check bubblewrap, namespaces, cgroups, g++, valgrind and the sandbox's Python, then
        judge each language's self-test program.

        Exits 1 when untrusted code cannot be isolated on this machine.
        """
        from arbiter.judge.selftest import run_self_tests
        from arbiter.sandbox.doctor import diagnose

        d = diagnose()
        table = Table(title="arbiter doctor", show_lines=False)
        table.add_column("check")
        table.add_column("")
        table.add_column("detail", overflow="fold")
        for c in d.checks:
            mark = "[green]ok[/]" if c.ok else ("[red]FAIL[/]" if c.ok is False else "[dim]info[/]")
            table.add_row(c.name, mark, c.detail)
        if d.isolated:
            for name, verdict in run_self_tests():
                ok = verdict.accepted
                detail = f"{verdict.outcome.value}: {verdict.reason}"
                if not ok and verdict.compile_output:
                    detail += f" ({verdict.compile_output[:200]})"
                table.add_row(f"language {name}", "[green]ok[/]" if ok else "[red]FAIL[/]", escape(detail))
        console = Console()
        console.print(table)
        if not d.isolated:
            console.print("[red]untrusted code cannot be isolated here[/]")
            raise typer.Exit(1)
