"""Parse a task's compile command into a checked, shell-free invocation.

The command is untrusted input like the program: :func:`parse_compile_command` splits it with
:func:`shlex.split` (no shell) and checks every token against an allowlist; a
:class:`Dialect` names the drivers, source names and standards of one language (C++ here, C in
:mod:`arbiter.languages.c`). The allowlist and what it rejects: ``docs/languages.md``.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass

#: The default compile flags when the task gives no command (PIE card: the dataset was built with
#: ``g++ -O2 -std=gnu++17``; CMS and Codeforces use gnu++17 -O2 as well).
DEFAULT_FLAGS: tuple[str, ...] = ("-std=gnu++17", "-O2")
DEFAULT_COMPILER = "g++"
DEFAULT_SOURCE = "main.cpp"
DEFAULT_OUTPUT = "main"
#: The macro Codeforces and AtCoder define (some CodeScope programs print nothing
#: without it).
ONLINE_JUDGE_FLAG = "-DONLINE_JUDGE"

_DRIVER_PREFIX = r"^(?:/usr(?:/local)?/bin/)?(?:(?:x86_64|aarch64|i686)-linux-gnu-)?"
_VERSION_SUFFIX = r"(-\d+(?:\.\d+)*)?$"
_NAME = r"^[A-Za-z0-9_][A-Za-z0-9_.+-]*"
_OUTPUT_RE = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.+-]*$")
_OPT_RE = re.compile(r"^-O(?:[0-3]|s|fast|g)?$")
_MACRO_NAME = r"[A-Za-z_][A-Za-z0-9_]*"
_DEFINE_RE = re.compile(rf"^-D{_MACRO_NAME}(?:=[^\x00\n]*)?$")
_UNDEF_RE = re.compile(rf"^-U{_MACRO_NAME}$")
_WARN_RE = re.compile(r"^-W(?:no-)?[a-z][a-z0-9+-]*(?:=[a-z0-9+-]+)?$")
_CPU_RE = re.compile(r"^-m(?:arch|tune)=[a-z0-9][a-z0-9_.-]*$")
_NUMERIC_F_RE = re.compile(
    r"^-f(?:template-depth|constexpr-depth|constexpr-steps|constexpr-loop-limit|constexpr-ops-limit|"
    r"max-errors)=\d{1,12}$|^-fdiagnostics-color=(?:never|always|auto)$")
SIMPLE_FLAGS = frozenset({
    "-pipe", "-static", "-static-libgcc", "-static-libstdc++", "-s", "-pthread", "-w",
    "-pedantic", "-pedantic-errors", "-g", "-g0", "-g1", "-g2", "-g3",
    "-lm", "-lpthread", "-lrt", "-ldl", "-latomic", "-lquadmath", "-lstdc++fs",
    "-m64", "-mavx", "-mavx2", "-msse", "-msse2", "-msse3", "-mssse3", "-msse4", "-msse4.1",
    "-msse4.2", "-mpopcnt", "-mbmi", "-mbmi2", "-mfma", "-mlzcnt", "-mtune=generic",
})
#: ``-f`` switches accepted as ``-fNAME`` and ``-fno-NAME``.
ALLOWED_F_FLAGS = frozenset({
    "omit-frame-pointer", "stack-protector", "stack-protector-strong", "stack-protector-all",
    "unroll-loops", "unroll-all-loops", "strict-aliasing", "strict-overflow", "wrapv", "trapv",
    "exceptions", "rtti", "permissive", "fast-math", "math-errno", "inline", "inline-functions",
    "tree-vectorize", "peel-loops", "pic", "PIC", "pie", "PIE", "signed-char", "unsigned-char",
    "concepts", "coroutines", "char8_t", "diagnostics-color", "elide-constructors",
    "operator-names", "threadsafe-statics", "optimize-sibling-calls", "ipa-sra", "gcse",
    "split-stack", "stack-clash-protection", "cf-protection", "plt", "semantic-interposition",
})
#: The reason given for well-known dangerous options (prefix -> why).
_REJECT_REASONS = (
    ("-I", "include paths are not allowed (the program may only use the system headers)"),
    ("-isystem", "include paths are not allowed"),
    ("-iquote", "include paths are not allowed"),
    ("-idirafter", "include paths are not allowed"),
    ("-include", "forced includes are not allowed"),
    ("-imacros", "forced includes are not allowed"),
    ("-L", "library paths are not allowed (system libraries only)"),
    ("-B", "compiler search paths are not allowed"),
    ("--sysroot", "a sysroot is not allowed"),
    ("-specs", "spec files are not allowed"),
    ("--specs", "spec files are not allowed"),
    ("-wrapper", "compiler wrappers are not allowed"),
    ("-fplugin", "compiler plugins are not allowed"),
    ("-Wl,", "linker pass-through options are not allowed"),
    ("-Wa,", "assembler pass-through options are not allowed"),
    ("-Wp,", "preprocessor pass-through options are not allowed"),
    ("-Xlinker", "linker pass-through options are not allowed"),
    ("-Xassembler", "assembler pass-through options are not allowed"),
    ("-Xpreprocessor", "preprocessor pass-through options are not allowed"),
    ("-fsanitize", "sanitizers are not allowed (they change the runtime and its timings)"),
    ("-fprofile", "profiling options write extra files and are not allowed"),
    ("-fdump", "dump options write extra files and are not allowed"),
    ("-save-temps", "-save-temps writes extra files and is not allowed"),
    ("-x", "overriding the source language is not allowed"),
    ("-c", "the command must produce an executable (no -c)"),
    ("-S", "the command must produce an executable (no -S)"),
    ("-E", "the command must produce an executable (no -E)"),
    ("-flto", "link-time optimisation is not allowed"),
    ("-M", "dependency output is not allowed"),
)


@dataclass(frozen=True)
class Dialect:
    """What a gcc-family language accepts in a compile command: drivers, source names, standards.

    - ``language``: the registry name (``cpp``); ``driver_re``, ``source_re``, ``std_re``: the
      patterns of the compiler token, the source file name and ``-std=``; ``drivers``,
      ``sources``, ``standards``: how messages name them.
    - ``default_compiler``, ``default_flags``, ``default_source``: the command when the task gives
      none; ``pch``: a precompiled header may be offered (C++ only).
    """

    language: str
    driver_re: re.Pattern
    source_re: re.Pattern
    std_re: re.Pattern
    drivers: str
    driver_examples: str
    sources: str
    standards: str
    default_compiler: str
    default_flags: tuple[str, ...]
    default_source: str
    pch: bool = False


CXX = Dialect(
    language="cpp",
    driver_re=re.compile(_DRIVER_PREFIX + r"(g\+\+|c\+\+|clang\+\+)" + _VERSION_SUFFIX),
    source_re=re.compile(_NAME + r"\.(?:cpp|cc|cxx|c\+\+|C)$"),
    std_re=re.compile(r"^--?std=(?:c|gnu)\+\+(?:98|03|0x|11|1y|14|1z|17|2a|20|2b|23|2c|26)$"),
    drivers="g++/clang++", driver_examples="g++, g++-N, c++, clang++ or clang++-N",
    sources="C++ source file name (.cpp .cc .cxx .c++ .C)", standards="-std=c++NN or -std=gnu++NN",
    default_compiler=DEFAULT_COMPILER, default_flags=DEFAULT_FLAGS, default_source=DEFAULT_SOURCE, pch=True)


class CompileCommandError(ValueError):
    """The task's compile command is unusable: not a g++/clang++ invocation on the task's own
    files, or a token outside the allowlist (see the module docstring). The message names the
    offending token; the judge treats it as a task error, never as the program's fault."""

    def __init__(self, message: str, token: str | None = None):
        super().__init__(message)
        self.token = token


@dataclass(frozen=True)
class CompileCommand:
    """A checked compile command.

    - ``compiler``: the driver as written (``g++``, ``/usr/bin/g++-12``, ``clang++``).
    - ``flags``: the effective flags in order (file names and ``-o`` removed; ``-DONLINE_JUDGE``
      added at the end when asked for and the command does not mention ``ONLINE_JUDGE`` itself).
    - ``source_name``: the source file name (``main.cpp`` by default).
    - ``output_name``: the executable name (``-o``; ``a.out`` when the command has none, as g++).
    """

    compiler: str
    flags: tuple[str, ...]
    source_name: str = DEFAULT_SOURCE
    output_name: str = DEFAULT_OUTPUT

    @property
    def static(self) -> bool:
        """True when the executable is linked statically (``-static``)."""
        return "-static" in self.flags

    def argv(self, compiler_path: str, extra: tuple[str, ...] = ()) -> list[str]:
        """The exec argv: ``[compiler_path, *flags, *extra, source_name, "-o", output_name]``."""
        return [compiler_path, *self.flags, *extra, self.source_name, "-o", self.output_name]


def _reject(token: str, why: str) -> CompileCommandError:
    return CompileCommandError(f"compile command: token {token!r} is not allowed: {why}", token)


def _check_flag(tok: str, dialect: Dialect) -> None:
    if tok in SIMPLE_FLAGS or dialect.std_re.match(tok) or _OPT_RE.match(tok) or _DEFINE_RE.match(tok) \
            or _UNDEF_RE.match(tok) or _CPU_RE.match(tok) or _NUMERIC_F_RE.match(tok):
        return
    if tok.startswith("-f"):
        name = tok[2:]
        if name.startswith("no-"):
            name = name[3:]
        if name in ALLOWED_F_FLAGS:
            return
    if tok.startswith("-W") and _WARN_RE.match(tok) and tok[2:4] not in ("l,", "a,", "p,"):
        return
    for prefix, why in _REJECT_REASONS:
        if tok == prefix or (tok.startswith(prefix) and len(prefix) > 2) or (
                len(prefix) == 2 and tok.startswith(prefix) and prefix in ("-I", "-L", "-B")):
            raise _reject(tok, why)
    if tok.startswith("@"):
        raise _reject(tok, "response files are not allowed")
    if tok.startswith(("-std=", "--std=")):
        raise _reject(tok, f"unknown language standard (use {dialect.standards})")
    if tok.startswith("-D") or tok.startswith("-U"):
        raise _reject(tok, "a macro name must match [A-Za-z_][A-Za-z0-9_]*")
    raise _reject(tok, "not in the allowlist of compile flags (arbiter.languages.cpp.command)")


def parse_compile_command(command: str | None, *, online_judge: bool = True,
                          dialect: Dialect = CXX) -> CompileCommand:
    """Parse and check a task's compile command (no shell; see the module docstring).

    ``None`` or an empty/whitespace string means the default ``g++ -std=gnu++17 -O2 main.cpp -o
    main`` (PIE card). ``online_judge`` appends ``-DONLINE_JUDGE`` (Codeforces and
    AtCoder compile with it) unless the command itself defines or undefines ``ONLINE_JUDGE``.

    Returns a :class:`CompileCommand`. Raises :class:`CompileCommandError` (a ``ValueError``)
    naming the offending token for anything outside the allowlist, a missing or second source
    file, a second ``-o``, or unbalanced quotes. ``dialect``: the language's drivers, source
    names and standards (default C++).
    """
    if command is None or not command.strip():
        return CompileCommand(dialect.default_compiler, _with_online_judge(dialect.default_flags, online_judge),
                              dialect.default_source)
    try:
        tokens = shlex.split(command, comments=False, posix=True)
    except ValueError as exc:
        raise CompileCommandError(f"compile command cannot be parsed: {exc}") from exc
    if not tokens:
        raise CompileCommandError("compile command is empty")
    compiler, rest = tokens[0], tokens[1:]
    if not dialect.driver_re.match(compiler):
        raise CompileCommandError(
            f"compile command: token {compiler!r} is not a {dialect.drivers} compiler "
            f"(expected {dialect.driver_examples}, optionally under /usr/bin/)", compiler)
    flags: list[str] = []
    source: str | None = None
    output: str | None = None
    i = 0
    while i < len(rest):
        tok = rest[i]
        i += 1
        if tok == "-o" or (tok.startswith("-o") and len(tok) > 2):
            name = tok[2:] if len(tok) > 2 else (rest[i] if i < len(rest) else None)
            if len(tok) == 2:
                i += 1
            if name is None:
                raise _reject(tok, "-o needs a file name")
            if output is not None:
                raise _reject(name, "a second output file (-o)")
            if not _OUTPUT_RE.match(name):
                raise _reject(name, "the output must be a plain file name in the working directory")
            output = name
            continue
        if tok in ("-D", "-U"):  # separated form: -D NAME[=VALUE]
            if i >= len(rest):
                raise _reject(tok, f"{tok} needs a macro name")
            tok = tok + rest[i]
            i += 1
            _check_flag(tok, dialect)
            flags.append(tok)
            continue
        if not tok.startswith("-") and not tok.startswith("@"):
            if "/" in tok:
                raise _reject(tok, "paths are not allowed; the source must be a plain file name")
            if dialect.source_re.match(tok):
                if source is not None:
                    raise _reject(tok, f"a second source file (the task has one: {source!r})")
                source = tok
                continue
            raise _reject(tok, f"not a {dialect.sources} or a flag")
        _check_flag(tok, dialect)
        flags.append(tok)
    if source is None:
        raise CompileCommandError(f"compile command names no source file (e.g. {dialect.default_source})")
    if output is not None and output == source:
        raise _reject(output, "the output would overwrite the source")
    return CompileCommand(compiler, _with_online_judge(tuple(flags), online_judge), source,
                          output or "a.out")


def _with_online_judge(flags: tuple[str, ...], online_judge: bool) -> tuple[str, ...]:
    if not online_judge:
        return flags
    for f in flags:
        if f in ("-UONLINE_JUDGE", ONLINE_JUDGE_FLAG) or f.startswith(ONLINE_JUDGE_FLAG + "="):
            return flags
    return (*flags, ONLINE_JUDGE_FLAG)


def command_line(cmd: CompileCommand) -> str:
    """The effective command as one shell-quoted line (for messages and logs)."""
    return shlex.join([cmd.compiler, *cmd.flags, cmd.source_name, "-o", cmd.output_name])
