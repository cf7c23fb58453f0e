"""``arbiter judge``: judge one program file on a test suite; a per-case table and the score."""

from __future__ import annotations

import threading
from enum import Enum
from pathlib import Path
from typing import Optional

import typer

from arbiter.checkers.table import CHECKER_NAMES
from arbiter.languages.registry import get_language, language_for_file, language_names

#: ``--lang`` choices: the language registry's names.
Lang = Enum("Lang", {name: name for name in language_names()}, type=str)  # type: ignore[misc]


class Scoring(str, Enum):
    all_or_nothing = "all_or_nothing"
    fraction = "fraction"


PRELUDE_KEYWORDS = ("auto", "none", "apps")


class BadOption(Exception):
    """A command-line value that cannot be used; the message names the option (exit status 2)."""


def _prelude(option: str, suite, lang: str) -> str:
    """The Python prelude for ``--prelude``: ``auto`` runs the import block the APPS/TACO/verl
    harnesses prepend (scrubbed of the names of the functions under test) for suites in those
    encodings, nothing for other suites; ``none``; ``apps``; or a file (UTF-8 Python source).

    Raises :class:`BadOption` naming ``--prelude`` and the file when it is missing, not a
    regular file, unreadable or not UTF-8.
    """
    from arbiter.judge.testsuite import CallCase
    from arbiter.judge.preludes import PYTHON_PRELUDE, scrub_prelude

    if option not in PRELUDE_KEYWORDS:
        path = Path(option)
        if not path.exists():
            raise BadOption(f"--prelude: no such file: {option} (or use auto, none, apps)")
        if not path.is_file():
            raise BadOption(f"--prelude: not a regular file: {option}")
        try:
            text = path.read_text(encoding="utf-8")
        except OSError as exc:
            raise BadOption(f"--prelude: cannot read {option} ({exc.strerror or exc})") from None
        except UnicodeDecodeError as exc:
            raise BadOption(f"--prelude: {option} is not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    language = get_language(lang)
    if language is None or not language.prelude or option == "none":
        return ""
    if option == "auto" and not suite.origin.split(":")[0] in ("apps", "verl"):
        return ""
    if option in ("auto", "apps"):
        text = PYTHON_PRELUDE
    return scrub_prelude(text, {c.fn_name for c in suite if isinstance(c, CallCase)})


def _check_limits(time_limit: float, memory_limit: int) -> None:
    """Raise :class:`BadOption` naming ``--time-limit`` (CPU seconds) or ``--memory-limit`` (MiB)
    unless each is a positive finite number."""
    from arbiter.sandbox.limits import MAX_SECONDS

    if not (0 < time_limit <= MAX_SECONDS):
        raise BadOption(f"--time-limit must be a number of CPU seconds per case in (0, {MAX_SECONDS}], "
                        f"got {time_limit:g}")
    if memory_limit <= 0:
        raise BadOption(f"--memory-limit must be a positive number of MiB per case, got {memory_limit}")


def _check_compile_command(command: str | None, lang: str) -> None:
    """Raise :class:`BadOption` naming ``--compile-command`` when it is given for an interpreted
    language or fails the language's check (for C++ and C
    :func:`arbiter.languages.cpp.command.parse_compile_command`: a shell-free gcc-family command
    line naming one source file)."""
    if command is None:
        return
    language = get_language(lang)
    if language is None or not language.compiled:
        compiled = [n for n in language_names() if get_language(n).compiled]  # type: ignore[union-attr]
        others = f" (and {', '.join(compiled[1:])})" if len(compiled) > 1 else ""
        raise BadOption(f"--compile-command applies to --lang {compiled[0]} only{others}")
    try:
        language.check_command(command)
    except ValueError as exc:
        raise BadOption(f"--compile-command {command!r}: {exc}") from None


def _checker_language(path: Path | None) -> str:
    """The language of a ``--checker-program`` file by its suffix (``.py``, ``.c``); C++ otherwise."""
    language = language_for_file(path.name) if path is not None else None
    return language.name if language is not None else "cpp"


def _read_text(path: Path, what: str) -> str:
    """A file given on the command line, decoded as UTF-8 (undecodable bytes kept as surrogate
    escapes); :class:`BadOption` naming ``what`` and the path when it cannot be read."""
    try:
        return path.read_text(encoding="utf-8", errors="surrogateescape")
    except OSError as exc:
        raise BadOption(f"{what}: cannot read {path} ({exc.strerror or exc})") from None


def _import_table_printer() -> None:
    import rich.console  # noqa: F401
    import rich.table  # noqa: F401


#: Exit status of a run whose output could not be written (the interpreter's own, for a failed flush at exit).
EXIT_OUTPUT_FAILED = 120


def _output_failed(exc: OSError) -> int:
    """Say on stderr (one line) that stdout could not be written; stdout is dropped so that nothing tries again
    at exit. Returns :data:`EXIT_OUTPUT_FAILED`."""
    import os
    import sys

    try:
        os.write(2, f"arbiter: the output could not be written: {exc}\n".encode("utf-8", "replace"))
    except OSError:
        pass
    sys.stdout = open(os.devnull, "w")
    return EXIT_OUTPUT_FAILED


def _print_verdict(name: str, verdict) -> None:
    """The per-case table, the compiler's output of a CE, and the summary line (rich)."""
    from rich.console import Console
    from rich.table import Table

    from arbiter.judge.verdict import Outcome
    from arbiter.sandbox.limits import MiB

    console = Console()
    table = Table(title=f"{name}: {verdict.outcome.value}  score {verdict.score:g}")
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


def register(app: typer.Typer) -> None:
    @app.command()
    def judge(
        file: Path = typer.Argument(..., exists=True, dir_okay=False, help="the program to judge"),
        lang: Lang = typer.Option(..., "--lang", help=" | ".join(language_names())),
        tests: Path = typer.Option(..., "--tests",
                                   help="test suite: PIE folder/.tar.gz, APPS input_output.json, verl JSON, or a visible_tests list"),
        checker: str = typer.Option("tokens", "--checker", help=" | ".join(CHECKER_NAMES)),
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

        Exit status: 0 when accepted, 1 otherwise, 2 for bad input (a message on stderr names
        the option: a missing or unreadable --tests / --prelude file, a non-positive
        --time-limit / --memory-limit, an unusable --compile-command, an unknown --checker).
        """
        from arbiter.checkers.spec import CheckerSpec
        from arbiter.judge.encodings.autodetect import load_suite
        from arbiter.judge.judge import judge as run_judge
        from arbiter.judge.task import CompileSpec, Task
        from arbiter.judge.testsuite import InvalidTestSuite
        from arbiter.sandbox.limits import MiB, Limits

        try:
            _check_limits(time_limit, memory_limit)
            _check_compile_command(compile_command, lang.value)
            source = _read_text(file, "FILE")
            checker_source = _read_text(checker_program, "--checker-program") if checker_program else None
            if not tests.exists():
                raise BadOption(f"--tests: no such file or directory: {tests}")
            try:
                suite = load_suite(tests, problem=problem)
            except OSError as exc:
                raise BadOption(f"--tests: cannot read {exc.filename or tests} ({exc.strerror or exc})") from None
            except InvalidTestSuite as exc:
                raise BadOption(f"--tests: {exc}") from None
            spec = CheckerSpec(checker, case_insensitive=case_insensitive, program=checker_source,
                               program_language=_checker_language(checker_program))
            task = Task(language=lang.value, source=source,
                        suite=suite, limits=Limits(cpu_seconds=time_limit, memory_bytes=memory_limit * MiB),
                        checker=spec, scoring=scoring.value, run_all=run_all,  # type: ignore[arg-type]
                        compile=CompileSpec(command=compile_command), task_id=str(file),
                        prelude=_prelude(prelude, suite, lang.value))
        except (BadOption, InvalidTestSuite, ValueError, OSError) as exc:
            from rich.console import Console
            from rich.markup import escape

            Console(stderr=True).print(f"[red]error:[/] {escape(str(exc))}", highlight=False, soft_wrap=True)
            raise typer.Exit(2)
        if not as_json:  # (imported while the judge waits for its sandbox and its runs)
            threading.Thread(target=_import_table_printer, daemon=True).start()
        verdict = run_judge(task)
        try:
            if as_json:
                from arbiter.judge.codec import dumps_verdict

                print(dumps_verdict(verdict), flush=True)
            else:
                _print_verdict(file.name, verdict)
        except OSError as exc:  # a full disk, a closed pipe: never read as the verdict's status
            raise typer.Exit(_output_failed(exc)) from None
        raise typer.Exit(0 if verdict.accepted else 1)
