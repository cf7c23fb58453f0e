"""Python: the source is loaded once into the sandbox's warm fork server; each case forks it.

Function-call cases and a task's prelude apply to Python only. A checker program in Python runs
as ``python3 -I -S checker.py``. See ``docs/languages.md``.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Sequence

from arbiter.languages.base import (BuildFailure, CompileSpec, FailureKind, LoadFailure, Program, SelfTest,
                                    SourceNotText, source_bytes)

if TYPE_CHECKING:
    from arbiter.sandbox.config import SandboxConfig
    from arbiter.sandbox.execution import Execution
    from arbiter.sandbox.limits import Limits
    from arbiter.sandbox.sandbox import Sandbox


class PythonLanguage:
    """CPython, the sandbox's own interpreter (:attr:`SandboxConfig.python`)."""

    name = "python"
    suffixes = (".py",)
    compiled = False
    fork_server = True
    call_cases = True
    prelude = True
    crash_marker = "Traceback (most recent call last)"
    mounts: tuple[tuple[str, str], ...] = ()
    self_test = SelfTest(source="import sys\nprint(sum(map(int, sys.stdin.read().split())))\n",
                         stdin=b"1 2 3\n", expected=b"6\n")

    def check_command(self, command: str) -> None:
        raise ValueError("a Python program takes no compile command")

    def fingerprint(self, spec: CompileSpec, config: SandboxConfig) -> str | None:
        """The sandbox's interpreter and the site directories it reads (``numpy``...): real
        paths with size, mtime, ctime and inode, so an upgrade changes it."""
        return repr([_stamp(config.python), *(_stamp(d) for d in config.python_site or ())])

    def build(self, source: str, spec: CompileSpec, *, entry: str = "main") -> Program | BuildFailure:
        """Nothing to compile: the source as ``<entry>.py`` (a ``SyntaxError`` shows at load); a source that is
        not text (a lone surrogate) is a compile error."""
        try:
            data = source_bytes(source)
        except SourceNotText as exc:
            return BuildFailure(FailureKind.COMPILE_ERROR, "the program does not compile (not text)", str(exc))
        return Program(files={f"{entry}.py": data}, entry=f"{entry}.py", source=source)

    def argv(self, program: Program, sandbox: Sandbox) -> list[str]:
        return [sandbox.config.python, "-I", "-S", f"{sandbox.prog_dir}/{program.entry}"]

    def load(self, sandbox: Sandbox, program: Program, prelude: str) -> LoadFailure | None:
        """Load the program (after ``prelude``) into the fork server; why it failed, or ``None``."""
        error = sandbox.load_python(program.source, prelude)
        if error is None:
            return None
        return LoadFailure(error, sandbox.load_stage == "prelude", "the program does not compile (SyntaxError)")

    def run(self, sandbox: Sandbox, program: Program, stdin: bytes, limits: Limits,
            keep: Sequence[str] = (), last: bool = False) -> Execution:
        return sandbox.run_python(stdin, limits, keep=keep, last=last)


def _stamp(path: str) -> tuple:
    real = os.path.realpath(path)
    try:
        st = os.stat(real)
    except OSError:
        return (real,)
    return (real, st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino)


PYTHON = PythonLanguage()
