"""The ``arbiter`` command: one typer app, one module per command group.

Each ``*_cmd`` module exposes ``register(app)``; entry points only parse input, call a pipeline
and write output (DESIGN.md layers). The modules are imported when the app is run or inspected,
and a run of one command imports only that command's module (docs/DESIGN.md, "Performance").
"""

from __future__ import annotations

import importlib
import inspect
import sys
from typing import Any, Iterable

import typer

# Command modules (each registers its commands on ``app``); ``<name>_cmd`` registers the command
# or group ``<name>``.
COMMAND_MODULES = ("doctor_cmd", "judge_cmd", "oracle_cmd", "score_cmd", "convert_cmd", "pie_cmd", "curate_cmd",
                   "sample_cmd", "report_cmd", "serve_cmd", "merge_cmd")


class LazyTyper(typer.Typer):
    """A :class:`typer.Typer` whose command modules are imported on first use: all of them when
    its commands are listed (``--help``, ``typer.main.get_command``, a test runner), only the
    named one when it is run as ``arbiter <command> ...``."""

    def __init__(self, *args: Any, modules: Iterable[str] = (), **kwargs: Any):
        self._modules = tuple(modules)
        self._loaded = self._loading = False
        super().__init__(*args, **kwargs)

    @property
    def registered_commands(self) -> list:
        self._load(self._modules)
        return self._commands

    @registered_commands.setter
    def registered_commands(self, value: list) -> None:
        self._commands = value

    @property
    def registered_groups(self) -> list:
        self._load(self._modules)
        return self._groups

    @registered_groups.setter
    def registered_groups(self, value: list) -> None:
        self._groups = value

    def _load(self, modules: Iterable[str]) -> None:
        if self._loaded or self._loading:
            return
        self._loading = True
        try:
            for name in modules:
                try:
                    mod = importlib.import_module(f"arbiter.cli.{name}")
                except ModuleNotFoundError as exc:  # a command group not built yet
                    if exc.name != f"arbiter.cli.{name}":
                        raise
                    continue
                mod.register(self)
        finally:
            self._loading = False
        self._loaded = True
        reflow_commands(self._commands, self._groups)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        argv = args[0] if args else kwargs.pop("args", None)
        argv = bare_ray_is_local(list(argv) if argv is not None else sys.argv[1:])
        first = argv[0] if argv and not argv[0].startswith("-") else ""
        module = f"{first}_cmd"
        if first and module in self._modules:
            self._load((module,))
        return super().__call__(argv, *args[1:], **kwargs)


def reflow(text: str) -> str:
    """``text`` (a docstring) with each paragraph's lines joined: typer prints a command's help
    paragraphs line for line, so a docstring wrapped at 100 columns came out ragged in an 80-column
    terminal. A line that starts a list item (``- ``, ``* ``) or is indented keeps its break, and so
    does every line of a paragraph marked ``\\b`` (click's "do not rewrap")."""
    paragraphs = []
    for para in inspect.cleandoc(text).split("\n\n"):
        lines = para.split("\n")
        out = lines[:1]
        for line in lines[1:]:
            keep = line.startswith(("- ", "* ", " ")) or para.startswith("\b")
            out[-1:] = [out[-1], line] if keep else [f"{out[-1]} {line.strip()}"]
        paragraphs.append("\n".join(out))
    return "\n\n".join(paragraphs)


def reflow_commands(commands: list, groups: list) -> None:
    """:func:`reflow` the help of every command, and of the commands of every group, once registered."""
    for cmd in commands:
        text = cmd.help if isinstance(cmd.help, str) else inspect.getdoc(cmd.callback)
        if text:
            cmd.help = reflow(text)
    for group in groups:
        sub_app = group.typer_instance
        if sub_app is not None:
            reflow_commands(sub_app.registered_commands, sub_app.registered_groups)


def bare_ray_is_local(argv: list[str]) -> list[str]:
    """``--ray`` without an address (last, or before another option) means ``--ray local`` (a typer
    option cannot take an optional value)."""
    out = []
    for i, arg in enumerate(argv):
        out.append(arg)
        if arg == "--ray" and (i + 1 == len(argv) or argv[i + 1].startswith("-")):
            out.append("local")
    return out


app = LazyTyper(
    name="arbiter",
    help="Run untrusted, model-written programs and turn them into verdicts, rewards and training data.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_show_locals=False,
    modules=COMMAND_MODULES,
)


@app.callback()
def _root() -> None:
    """arbiter: verdicts, rewards and training data from untrusted programs."""


def main() -> None:  # pragma: no cover - console entry
    app()


if __name__ == "__main__":  # pragma: no cover
    main()
