"""The ``arbiter`` command: one typer app, one module per command group.

Each ``*_cmd`` module exposes ``register(app)``; entry points only parse input, call a pipeline
and write output (DESIGN.md layers). The modules are imported when the app is run or inspected,
and a run of one command imports only that command's module (docs/DESIGN.md, "Performance").
"""

from __future__ import annotations

import importlib
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

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        argv = args[0] if args else kwargs.pop("args", None)
        argv = bare_ray_is_local(list(argv) if argv is not None else sys.argv[1:])
        first = argv[0] if argv and not argv[0].startswith("-") else ""
        module = f"{first}_cmd"
        if first and module in self._modules:
            self._load((module,))
        return super().__call__(argv, *args[1:], **kwargs)


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
