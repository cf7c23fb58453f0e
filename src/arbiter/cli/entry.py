"""The ``arbiter`` console script. ``arbiter judge`` asks the warm pool for its sandbox first,
so the sandbox starts (on the pool's thread) while the CLI itself loads: typer, the judge, the
test suite, the build (docs/DESIGN.md, "Performance")."""

from __future__ import annotations

import sys


def main() -> None:
    argv = sys.argv[1:]
    judging = argv[:1] == ["judge"] and not {"--help", "-h"} & set(argv)
    if judging:
        prestart_sandbox(argv)
    from arbiter.cli.main import app

    if not judging:
        app()
        return
    try:
        app()
    except SystemExit as exc:
        exit_now(exc.code)
    exit_now(0)


def exit_now(code: object) -> None:
    """End the process as ``sys.exit(code)`` would, without the interpreter's teardown of every
    module loaded (tens of milliseconds, a sizeable part of a one-case ``arbiter judge``): output
    flushed, ``atexit`` handlers run (the warm pool closes its sandboxes). Falls back to
    ``sys.exit`` while a non-daemon thread still runs."""
    import atexit
    import os
    import threading

    if any(t is not threading.main_thread() and not t.daemon and t.is_alive() for t in threading.enumerate()):
        sys.exit(code)
    if code is not None and not isinstance(code, int):
        print(code, file=sys.stderr)
        code = 1
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError) as exc:
            code = 120  # as the interpreter's exit does when flushing fails, whatever the status
            try:
                os.write(2, f"arbiter: the output could not be written: {exc}\n".encode())
            except OSError:
                pass
    os._exit(code or 0)


def prestart_sandbox(argv: list[str]) -> None:
    """Start the sandbox ``arbiter judge ARGV`` will take (with its Python forker forked ahead
    when ``--lang`` names a language that loads into one); never fails: a bad command line is
    the CLI's to report."""
    try:
        from arbiter.languages.registry import get_language
        from arbiter.sandbox.pool import default_pool

        language = get_language(_option(argv, "--lang") or "")
        default_pool().prestart(python=bool(language is not None and language.fork_server))
    except Exception:
        pass  # (the judge starts its own sandbox, and reports what is wrong)


def _option(argv: list[str], name: str) -> str | None:
    """The value of ``name`` in ``argv`` (``NAME VALUE`` or ``NAME=VALUE``), or None."""
    for i, arg in enumerate(argv):
        if arg == name and i + 1 < len(argv):
            return argv[i + 1]
        if arg.startswith(name + "="):
            return arg[len(name) + 1:]
    return None
