"""The :class:`Language` protocol: what the judge needs from one programming language.

A language is one module (``python.py``, ``c.py``, the ``cpp/`` package) plus one line in
:mod:`arbiter.languages.registry`. It builds a program (compile, or just keep the source), runs it
in a sandbox (an argv, or the warm fork server) and carries a self-test program that
``arbiter doctor`` judges. See ``docs/languages.md``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, Sequence

from arbiter.strenum import StrEnum

if TYPE_CHECKING:
    from arbiter.sandbox.config import SandboxConfig
    from arbiter.sandbox.execution import Execution
    from arbiter.sandbox.limits import Limits
    from arbiter.sandbox.sandbox import Sandbox


@dataclass(frozen=True)
class CompileSpec:
    """How to compile a program (a task field; ignored by interpreted languages).

    - ``command``: the task's own compile command (e.g. the oracle seed's
      ``g++ -std=c++20 -O2 -pipe main.cpp -o main``); ``None`` means the language's default
      (C++: ``g++ -std=gnu++17 -O2``, the PIE card's flags). Checked by the language
      (:func:`~arbiter.languages.cpp.command.parse_compile_command`).
    - ``timeout_seconds``: compile CPU and wall limit, seconds (the seed's ``compile.timeout_sec``).
    - ``online_judge``: add ``-DONLINE_JUDGE`` as Codeforces and AtCoder do.
    """

    command: str | None = None
    timeout_seconds: float = 30.0
    online_judge: bool = True

    def __post_init__(self) -> None:
        if not self.timeout_seconds > 0:
            raise ValueError(f"CompileSpec.timeout_seconds must be positive, got {self.timeout_seconds!r}")


@dataclass(frozen=True)
class SelfTest:
    """A known-good program with one input and its expected stdout (``arbiter doctor``)."""

    source: str
    stdin: bytes
    expected: bytes


@dataclass(frozen=True)
class Program:
    """A built program: ``files`` for the sandbox's program folder, ``entry`` the one to run,
    ``source`` its text, ``compile_output`` the compiler's messages, ``toolchain`` its
    fingerprint (a dict, ``None`` for interpreted languages)."""

    files: dict[str, bytes]
    entry: str
    source: str = ""
    compile_output: str = ""
    toolchain: dict[str, Any] | None = None


class SourceNotText(ValueError):
    """A source that no compiler or interpreter can read: it holds a lone UTF-16 surrogate (a JSON ``"\\ud800"``,
    e.g. a reply cut inside an emoji's pair), which has no UTF-8 form. The message names its line and column."""


def source_bytes(source: str) -> bytes:
    """The UTF-8 bytes of a program's ``source``. U+DC80-U+DCFF stand for the raw bytes of a source read from a
    file with ``surrogateescape`` (a PIE program with Latin-1 comments) and become those bytes again; any other
    lone surrogate raises :class:`SourceNotText` (the program's compile error, never an exception)."""
    try:
        return source.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError as exc:
        ch = source[exc.start]
        line = source.count("\n", 0, exc.start) + 1
        column = exc.start - (source.rfind("\n", 0, exc.start) + 1) + 1
        raise SourceNotText(f"the source is not text: a lone surrogate U+{ord(ch):04X} at line {line}, column "
                            f"{column} (half of a UTF-16 pair, as in a reply cut inside an emoji) has no UTF-8 "
                            "form, so no compiler can read the program") from None


class FailureKind(StrEnum):
    """Whose fault a failed build is: the program's (``CE``), the task's compile command
    (``INVALID_TASK``) or ours (``SANDBOX_ERROR``)."""

    COMPILE_ERROR = "compile_error"
    TASK_ERROR = "task_error"
    ENVIRONMENT = "environment"


#: Compiler messages that say the host or a limit stopped the build, not the source (never cached).
RESOURCE_MARKERS = re.compile(
    r"killed signal terminated program|signal terminated program|internal compiler error|"
    r"file size limit exceeded|file too large|no space left on device|virtual memory exhausted|"
    r"out of memory|memory exhausted|cannot allocate memory|resource temporarily unavailable|"
    r"cannot create temporary file|cannot fork|vfork|posix_spawn", re.I)

#: The notes a build stopped by a limit or the machine starts its ``CE`` reason or message with
#: (the builders write them; :func:`build_stopped_by_host` reads them).
COMPILE_TIME_LIMIT = "compile time limit exceeded"
COMPILER_MEMORY_LIMIT = "the compiler exceeded the memory limit"
COMPILER_KILLED = "the compiler was killed"
COMPILER_OUTPUT_LIMIT = "the compiler's output exceeded"
_STOPPED_BUILD = re.compile("|".join(map(re.escape, (COMPILE_TIME_LIMIT, COMPILER_MEMORY_LIMIT, COMPILER_KILLED,
                                                     COMPILER_OUTPUT_LIMIT))), re.I)


def build_stopped_by_host(reason: str, compile_output: str) -> bool:
    """Whether a ``CE`` came from a build stopped by a limit or the machine (time, memory, output,
    a signal, resources) rather than from the source alone: such a CE depends on the host and is
    never reused (neither by the compile cache nor by the step judge's verdict store)."""
    return bool(_STOPPED_BUILD.search(reason) or _STOPPED_BUILD.search(compile_output[:400])
                or RESOURCE_MARKERS.search(compile_output))


@dataclass(frozen=True)
class BuildFailure:
    """A build that produced no program: ``reason`` for the verdict, the compiler's output,
    the toolchain, and for task and environment failures the exception (``error``)."""

    kind: FailureKind
    reason: str
    compile_output: str = ""
    toolchain: dict[str, Any] | None = None
    error: BaseException | None = field(default=None, compare=False)


@dataclass(frozen=True)
class LoadFailure:
    """A program that did not load into the fork server: ``message`` (the traceback),
    ``in_prelude`` (the task's prelude failed, not the program), ``reason`` for a ``CE``."""

    message: str
    in_prelude: bool
    reason: str


class Language(Protocol):
    """One programming language (see ``docs/languages.md``).

    - ``name``: the registry name (``Task.language``); ``suffixes``: file name endings.
    - ``compiled``: takes a compile command (``CompileSpec.command``); ``check_command`` checks one
      (raises ``ValueError`` naming the bad token).
    - ``fork_server``: programs are loaded into the sandbox's warm server (``load``) instead of
      being placed as files; ``call_cases``: function-call test cases are possible;
      ``prelude``: a task's prelude applies.
    - ``crash_marker``: stderr text that marks the interpreter's own crash report (a checker
      program that prints it has crashed, whatever its exit status).
    - ``fingerprint(spec, config)``: what identifies the toolchain that would build and run a
      program with ``spec`` under ``config`` (a stable text; ``None`` when it cannot be told, e.g.
      an unusable compile command), so a verdict is reused only under the same one.
    - ``mounts``: ``(host path, sandbox path)`` pairs its programs' sandboxes show read-only
      (a toolchain outside ``/usr``).
    """

    name: str
    suffixes: tuple[str, ...]
    compiled: bool
    fork_server: bool
    call_cases: bool
    prelude: bool
    crash_marker: str
    self_test: SelfTest
    mounts: tuple[tuple[str, str], ...]

    def check_command(self, command: str) -> None: ...

    def fingerprint(self, spec: CompileSpec, config: SandboxConfig) -> str | None: ...

    def build(self, source: str, spec: CompileSpec, *, entry: str = "main") -> Program | BuildFailure: ...

    def argv(self, program: Program, sandbox: Sandbox) -> list[str]: ...

    def load(self, sandbox: Sandbox, program: Program, prelude: str) -> LoadFailure | None: ...

    def run(self, sandbox: Sandbox, program: Program, stdin: bytes, limits: Limits,
            keep: Sequence[str] = (), last: bool = False) -> Execution:
        """Run one case; ``keep``: files of the working directory the wipe after it spares;
        ``last``: the session's last run (see :meth:`Sandbox.run`)."""


class ArgvLanguage:
    """Defaults for a language whose programs run as an argv (nothing to load)."""

    fork_server = False
    call_cases = False
    prelude = False
    crash_marker = ""
    mounts: tuple[tuple[str, str], ...] = ()

    def argv(self, program: Program, sandbox: Sandbox) -> list[str]:
        """``[<program folder>/<entry>]``: run the built executable."""
        return [f"{sandbox.prog_dir}/{program.entry}"]

    def load(self, sandbox: Sandbox, program: Program, prelude: str) -> LoadFailure | None:
        return None

    def run(self, sandbox: Sandbox, program: Program, stdin: bytes, limits: Limits,
            keep: Sequence[str] = (), last: bool = False) -> Execution:
        return sandbox.run(self.argv(program, sandbox), stdin, limits, keep=keep, last=last)
