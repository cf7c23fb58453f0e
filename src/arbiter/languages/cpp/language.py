"""The gcc-family :class:`~arbiter.languages.base.Language`: compile in the sandbox, run the executable.

One class serves every language the gcc machinery compiles (C++ here, GNU C in
:mod:`arbiter.languages.c`); a :class:`~arbiter.languages.cpp.command.Dialect` says which
drivers, standards and file names a language accepts. See ``docs/languages.md``.
"""

from __future__ import annotations

from arbiter.languages.base import COMPILE_TIME_LIMIT, BuildFailure, CompileSpec, FailureKind, Program, SelfTest
from arbiter.languages.compiled import CompiledLanguage
from arbiter.languages.cpp.command import CXX, CompileCommandError, Dialect, parse_compile_command


class GccLanguage(CompiledLanguage):
    """A language compiled by gcc/g++/clang in the sandbox (:func:`compile_program`): the
    compiled-language base with the task's compile command parsed against an allowlist, the
    toolchain pinned, and precompiled headers."""

    def __init__(self, dialect: Dialect, suffixes: tuple[str, ...], self_test: SelfTest):
        self.dialect = dialect
        self.name = dialect.language
        self.suffixes = suffixes
        self.self_test = self_test

    def check_command(self, command: str) -> None:
        """Raise :class:`CompileCommandError` unless ``command`` is a usable compile command."""
        parse_compile_command(command, dialect=self.dialect)

    def fingerprint(self, spec: CompileSpec, config: object) -> str | None:
        """The toolchain fingerprint of ``spec``'s compiler and flags
        (:func:`~arbiter.languages.cpp.toolchain.probe_toolchain`); ``None`` for an unusable
        command or a compiler that is not installed."""
        from arbiter.languages.cpp.toolchain import ToolchainUnavailable, probe_toolchain

        try:
            cmd = parse_compile_command(spec.command, online_judge=spec.online_judge, dialect=self.dialect)
            return f"{cmd.source_name} {probe_toolchain(cmd.compiler, cmd.flags).fingerprint}"
        except (CompileCommandError, ToolchainUnavailable, OSError):
            return None

    def build(self, source: str, spec: CompileSpec, *, entry: str = "main") -> Program | BuildFailure:
        """Compile ``source``; the executable is placed as ``entry``. A bad compile command is
        the task's failure, a failed sandbox or a missing compiler ours, a compile error (or a
        compile time limit) the program's."""
        from arbiter.languages.cpp.compile import compile_program  # the sandbox: loaded when used
        from arbiter.languages.cpp.toolchain import ToolchainUnavailable
        from arbiter.sandbox.sandbox import SandboxError

        try:
            comp = compile_program(source, spec, self.dialect)
        except CompileCommandError as exc:  # the row's compile command is unusable
            return BuildFailure(FailureKind.TASK_ERROR, f"compile command: {exc}", error=exc)
        except (SandboxError, ToolchainUnavailable) as exc:  # ours, never the program's
            return BuildFailure(FailureKind.ENVIRONMENT, f"compile: {exc}", error=exc)
        toolchain = comp.toolchain.to_dict() if comp.toolchain is not None else None
        if not comp.ok or comp.binary is None:
            why = COMPILE_TIME_LIMIT if comp.timed_out else "compile error"
            return BuildFailure(FailureKind.COMPILE_ERROR, why, comp.message, toolchain)
        return Program(files={entry: comp.binary}, entry=entry, source=source,
                       compile_output=comp.message, toolchain=toolchain)


CPP = GccLanguage(CXX, (".cpp", ".cc", ".cxx", ".c++", ".C"), SelfTest(
    source='#include <bits/stdc++.h>\nint main() {\n    long long x, s = 0;\n'
           '    while (std::cin >> x) s += x;\n    std::cout << s << "\\n";\n}\n',
    stdin=b"1 2 3\n", expected=b"6\n"))
