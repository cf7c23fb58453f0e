"""``arbiter judge``: judge one program file on a test suite; a per-case table and the score."""

from __future__ import annotations

import json
from enum import Enum
from pathlib import Path
from typing import Optional

import typer
from rich.console import Console
from rich.table import Table


class Lang(str, Enum):
    python = "python"
    cpp = "cpp"


class Scoring(str, Enum):
    all_or_nothing = "all_or_nothing"
    fraction = "fraction"


def _prelude(option: str, suite, lang: str) -> str:
    """The Python prelude for ``--prelude``: ``auto`` runs the import block the APPS/TACO/verl
    harnesses prepend (scrubbed of the names of the functions under test) for suites in those
    encodings, nothing for other suites; ``none``; ``apps``; or a file."""
    from pathlib import Path

    from arbiter.judge.testsuite import CallCase
    from arbiter.judge.preludes import PYTHON_PRELUDE, scrub_prelude

    if lang != "python" or option == "none":
        return ""
    if option == "auto" and not suite.origin.split(":")[0] in ("apps", "verl"):
        return ""
    text = PYTHON_PRELUDE if option in ("auto", "apps") else Path(option).read_text(encoding="utf-8")
    return scrub_prelude(text, {c.fn_name for c in suite if isinstance(c, CallCase)})


def register(app: typer.Typer) -> None:
    @app.command()
    def judge(
        file: Path = typer.Argument(..., exists=True, dir_okay=False, help="the program to judge"),
        lang: Lang = typer.Option(..., "--lang", help="python or cpp"),
        tests: Path = typer.Option(..., "--tests", exists=True,
                                   help="test suite: PIE folder/.tar.gz, APPS input_output.json, verl JSON, or a visible_tests list"),
        checker: str = typer.Option("tokens", "--checker",
                                    help="exact | trailing_whitespace | pie | tokens | tokens_float | external"),
        checker_program: Optional[Path] = typer.Option(None, "--checker-program", exists=True,
                                                       help="source of an external (testlib-style) checker"),
        case_insensitive: bool = typer.Option(False, "--case-insensitive"),
        problem: Optional[str] = typer.Option(None, "--problem", help="problem id inside a PIE archive"),
        time_limit: float = typer.Option(2.0, "--time-limit", help="CPU seconds per case"),
        memory_limit: int = typer.Option(512, "--memory-limit", help="MiB per case"),
        scoring: Scoring = typer.Option(Scoring.all_or_nothing, "--scoring", help="all_or_nothing | fraction"),
        prelude: str = typer.Option("auto", "--prelude",
                                    help="Python code run first: auto (the APPS/TACO import block for APPS/verl test files), none, apps, or a file"),
        run_all: bool = typer.Option(False, "--run-all", help="keep running after the first failure"),
        compile_command: Optional[str] = typer.Option(None, "--compile-command",
                                                      help="e.g. 'g++ -std=c++20 -O2 main.cpp -o main'"),
        as_json: bool = typer.Option(False, "--json", help="print the verdict as JSON"),
    ) -> None:
        """Judge FILE on a test suite and print a per-case table and the score.

        Exit status: 0 when accepted, 1 otherwise, 2 for bad input.
        """
        from arbiter.checkers.spec import CheckerSpec
        from arbiter.judge.encodings.autodetect import load_suite
        from arbiter.judge.judge import judge as run_judge
        from arbiter.judge.task import CompileSpec, Task
        from arbiter.judge.testsuite import InvalidTestSuite
        from arbiter.judge.verdict import Outcome
        from arbiter.sandbox.limits import MiB, Limits

        console = Console(stderr=as_json)
        try:
            suite = load_suite(tests, problem=problem)
            spec = CheckerSpec(checker, case_insensitive=case_insensitive,
                               program=checker_program.read_text() if checker_program else None,
                               program_language="python" if checker_program and checker_program.suffix == ".py" else "cpp")
            task = Task(language=lang.value, source=file.read_text(encoding="utf-8", errors="surrogateescape"),
                        suite=suite, limits=Limits(cpu_seconds=time_limit, memory_bytes=memory_limit * MiB),
                        checker=spec, scoring=scoring.value, run_all=run_all,  # type: ignore[arg-type]
                        compile=CompileSpec(command=compile_command), task_id=str(file),
                        prelude=_prelude(prelude, suite, lang.value))
        except (InvalidTestSuite, ValueError, OSError) as exc:
            console.print(f"[red]error:[/] {exc}")
            raise typer.Exit(2)
        verdict = run_judge(task)
        if as_json:
            print(json.dumps(verdict.to_dict(), indent=2))
        else:
            table = Table(title=f"{file.name}: {verdict.outcome.value}  score {verdict.score:g}")
            for col in ("case", "verdict", "cpu s", "wall s", "memory MiB", "detail"):
                table.add_column(col, overflow="fold")
            for c in verdict.cases:
                color = "green" if c.outcome is Outcome.AC else "dim" if c.outcome is Outcome.SKIPPED else "red"
                table.add_row(c.name, f"[{color}]{c.outcome.value}[/]", f"{c.cpu_seconds:.3f}",
                              f"{c.wall_seconds:.3f}", f"{c.memory_bytes / MiB:.1f}", (c.diff or c.detail)[:120])
            console.print(table)
            if verdict.compile_output and verdict.outcome is Outcome.CE:
                console.print(verdict.compile_output)
            console.print(f"{verdict.passed}/{verdict.total} passed; {verdict.reason}; {verdict.seconds:.2f} s")
        raise typer.Exit(0 if verdict.accepted else 1)
