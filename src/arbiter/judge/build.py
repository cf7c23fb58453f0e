"""Building a row's own programs before judging: the one door through which jobs above the judge
compile (the oracle's seed programs, PIE's source and target). See ``docs/languages.md``."""

from __future__ import annotations

from arbiter.languages.base import CompileSpec
from arbiter.languages.cpp.compile import CompileCommandError, CompileResult, compile_cpp
from arbiter.languages.cpp.toolchain import ToolchainUnavailable

__all__ = ["CompileCommandError", "CompileResult", "CompileSpec", "ToolchainUnavailable", "build_cpp"]


def build_cpp(source: str, spec: CompileSpec | None = None, **options) -> CompileResult:
    """Compile C++ ``source`` as ``spec`` says, in the sandbox, through the compile cache (options as
    :func:`arbiter.languages.cpp.compile.compile_program`)."""
    return compile_cpp(source, spec, **options)
