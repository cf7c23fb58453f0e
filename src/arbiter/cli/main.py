"""The ``arbiter`` command: one typer app, one module per command group.

Each ``*_cmd`` module exposes ``register(app)``; entry points only parse input, call a pipeline
and write output (DESIGN.md layers).
"""

from __future__ import annotations

import importlib

import typer

app = typer.Typer(
    name="arbiter",
    help="Run untrusted, model-written programs and turn them into verdicts, rewards and training data.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_show_locals=False,
)



@app.callback()
def _root() -> None:
    """arbiter: verdicts, rewards and training data from untrusted programs."""


# Command modules (each registers its commands on ``app``).
COMMAND_MODULES = ("doctor_cmd", "judge_cmd", "oracle_cmd", "score_cmd", "convert_cmd", "pie_cmd", "curate_cmd",
                   "sample_cmd", "report_cmd", "merge_cmd")

for _name in COMMAND_MODULES:
    try:
        _mod = importlib.import_module(f"arbiter.cli.{_name}")
    except ModuleNotFoundError as exc:  # a command group not built yet
        if exc.name != f"arbiter.cli.{_name}":
            raise
        continue
    _mod.register(app)


def main() -> None:  # pragma: no cover - console entry
    app()


if __name__ == "__main__":  # pragma: no cover
    main()
