"""Compile an untrusted program inside the sandbox: checked command, limits, PCH, cache.

:func:`compile_program` (and :func:`compile_cpp` for C++) is what the gcc-family languages call:
parse and check the command (:mod:`~arbiter.languages.cpp.command`), pin the toolchain, look the
compile up in the cache, else compile in a fresh sandbox under :func:`compile_limits` (with a
precompiled header for C++ when one fits). Steps, limits and compile bombs: ``docs/languages.md``.
"""

from __future__ import annotations

import re
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from arbiter.languages.base import (
    COMPILE_TIME_LIMIT,
    COMPILER_KILLED,
    COMPILER_MEMORY_LIMIT,
    COMPILER_OUTPUT_LIMIT,
    RESOURCE_MARKERS,
    CompileSpec,
    SourceNotText,
    source_bytes,
)
from arbiter.languages.compile_cache import CacheEntry, CompileCache, compile_key
from arbiter.languages.cpp.command import (
    CXX,
    DEFAULT_FLAGS,
    ONLINE_JUDGE_FLAG,
    CompileCommand,
    CompileCommandError,
    Dialect,
    command_line,
    parse_compile_command,
)
from arbiter.languages.cpp.pch import MOUNT_POINT, PchStore, gch_lines, new_mount_point, plan_pch
from arbiter.languages.cpp.toolchain import (
    Toolchain,
    ToolchainMismatch,
    ToolchainUnavailable,
    assert_comparable,
    probe_toolchain,
)
from arbiter.sandbox.config import SandboxConfig
from arbiter.sandbox.execution import Execution, Status
from arbiter.sandbox.limits import MiB, Limits
from arbiter.sandbox.sandbox import Sandbox, SandboxError

__all__ = [
    "CompileCommandError", "CompileResult", "CompileSpec", "Toolchain", "ToolchainMismatch",
    "ToolchainUnavailable", "assert_comparable", "compile_cpp", "compile_program", "compile_limits", "default_cache",
    "default_pch_store", "DEFAULT_FLAGS", "MAX_EXECUTABLE_BYTES", "ONLINE_JUDGE_FLAG",
    "parse_compile_command", "pch_used",
]

GiB = 1024 * MiB
DEFAULT_MEMORY_BYTES = 2 * GiB
#: The largest file g++ may write (objects, temporaries), bytes: RLIMIT_FSIZE in the compile
#: sandbox.
MAX_OUTPUT_BYTES = 256 * MiB
#: The largest executable, bytes: a bigger one (``.fill`` or a huge initialised array make one
#: in seconds) is a compile error naming this cap, never fetched into the judge process nor
#: cached. Real contest programs are far smaller (the largest seen, static: ~2 MiB).
MAX_EXECUTABLE_BYTES = 64 * MiB
#: Compiler output kept from the sandbox, bytes (more is dropped, not an error).
STDERR_KEEP_BYTES = 1 * MiB
#: CE messages are cut to this many characters: the first and last halves are kept.
MESSAGE_LIMIT = 8192


@dataclass
class CompileResult:
    """What :func:`compile_cpp` produced.

    - ``ok``: an executable was produced; ``binary``: its bytes (``None`` unless ``ok``).
    - ``message``: the compiler's output (stderr), at most :data:`MESSAGE_LIMIT` characters (head
      and tail kept), or why the compile stopped (time/memory/file-size limit).
    - ``seconds``: wall seconds this call spent (near 0 on a cache hit; includes building a PCH).
    - ``cached``: the result came from the compile cache.
    - ``timed_out``: the compile hit its time limit (never cached).
    - ``toolchain``: the :class:`Toolchain` fingerprint (compiler, libc, link mode, flags).
    - ``flags``: the effective g++ flags (file names, ``-o`` and PCH arguments excluded).
    - ``pch``: the precompiled header offered to g++ (``""``, ``"stdcxx"`` or ``"prefix"``).
    - ``command``: the effective command line, for messages.
    """

    ok: bool
    binary: bytes | None
    message: str
    seconds: float
    cached: bool
    timed_out: bool
    toolchain: Toolchain
    flags: tuple[str, ...]
    pch: str = ""
    command: str = ""

    @property
    def compile_error(self) -> bool:
        """True for a compile error or a compile time limit (the judge's ``CE``)."""
        return not self.ok


def compile_limits(timeout_seconds: float, memory_bytes: int = DEFAULT_MEMORY_BYTES) -> Limits:
    """The sandbox limits of one compile: CPU and wall ``timeout_seconds``; ``memory_bytes`` for
    the compiler plus every file it writes (tmpfs pages count); files and stdout up to
    :data:`MAX_OUTPUT_BYTES`; 32 tasks; 256 open files; 256 MiB stack."""
    return Limits(cpu_seconds=timeout_seconds, wall_seconds=timeout_seconds, memory_bytes=memory_bytes,
                  processes=32, output_bytes=MAX_OUTPUT_BYTES, stderr_bytes=STDERR_KEEP_BYTES,
                  open_files=256, scratch_bytes=1 * GiB, stack_bytes=256 * MiB)


_defaults_lock = threading.Lock()
_default_cache: dict[str, CompileCache] = {}
_default_store: dict[str, PchStore] = {}


def default_cache() -> CompileCache:
    """The process-wide :class:`CompileCache` at ``$ARBITER_CACHE_DIR/compile``."""
    c = CompileCache()
    with _defaults_lock:
        return _default_cache.setdefault(str(c.root), c)


def default_pch_store() -> PchStore:
    """The process-wide :class:`PchStore` (see :func:`arbiter.languages.cpp.pch.default_pch_root`)."""
    s = PchStore()
    with _defaults_lock:
        return _default_store.setdefault(str(s.root), s)


def truncate_message(text: str, limit: int = MESSAGE_LIMIT) -> str:
    """``text`` cut to about ``limit`` characters, keeping the first and last halves with a marker
    saying how much was left out (compiler errors matter at both ends)."""
    if len(text) <= limit:
        return text
    half = limit // 2
    omitted = len(text) - 2 * half
    return f"{text[:half]}\n[... {omitted} characters omitted ...]\n{text[-half:]}"


def pch_used(message: str) -> bool:
    """True when compiler output produced with ``-H`` (``extra_args=("-H",)``) shows that a
    ``.gch`` under ``/pch`` was used (g++ prints ``! /pch/....gch``)."""
    used, _ = gch_lines(message)
    return any(p.startswith(MOUNT_POINT + "/") for p in used)


def compile_cpp(source: str, spec: CompileSpec | None = None, **kw) -> CompileResult:
    """:func:`compile_program` for C++ (the :data:`~arbiter.languages.cpp.command.CXX` dialect)."""
    return compile_program(source, spec, CXX, **kw)


def compile_program(source: str, spec: CompileSpec | None = None, dialect: Dialect = CXX, *,
                    memory_bytes: int = DEFAULT_MEMORY_BYTES, use_cache: bool = True, use_pch: bool = True,
                    cache: CompileCache | None = None, pch_store: PchStore | None = None,
                    config: SandboxConfig | None = None, extra_args: tuple[str, ...] = ()) -> CompileResult:
    """Compile ``source`` (text in ``dialect``'s language) as the task's ``spec`` says, in the sandbox.

    - ``spec``: :class:`CompileSpec` (``None``: the default ``g++ -std=gnu++17 -O2
      -DONLINE_JUDGE``).
    - ``memory_bytes``: memory for the compiler and the files it writes, bytes (default 2 GiB).
    - ``use_cache``: read and fill the compile cache (``cache``, default :func:`default_cache`).
    - ``use_pch``: offer a precompiled header (``pch_store``, default :func:`default_pch_store`);
      never without isolation (the PCH is shown through a bwrap mount).
    - ``config``: sandbox configuration.
    - ``extra_args``: diagnostic-only g++ arguments (e.g. ``("-H",)``) placed after the flags; not
      part of ``flags`` or the fingerprint; a call with them bypasses the cache.

    Returns a :class:`CompileResult`: ``ok`` with the executable, or a compile error / time limit
    with the compiler's message. Compile errors that are the program's own are cached; time, memory
    and file-size limits and an executable over :data:`MAX_EXECUTABLE_BYTES` are not.

    Raises :class:`CompileCommandError` (``ValueError``) for a compile command outside the
    allowlist (a task error, naming the token); :class:`ToolchainUnavailable` when the named
    compiler is not installed; :class:`~arbiter.sandbox.sandbox.SandboxError` when the sandbox
    fails twice (our fault: report ``SANDBOX_ERROR``, never ``CE``).
    """
    t0 = time.monotonic()
    spec = spec if spec is not None else CompileSpec()
    cmd = parse_compile_command(spec.command, online_judge=spec.online_judge, dialect=dialect)
    tc = probe_toolchain(cmd.compiler, cmd.flags)
    try:
        src = source_bytes(source)
    except SourceNotText as exc:  # the program's compile error: g++ never sees it
        return CompileResult(ok=False, binary=None, message=str(exc), seconds=time.monotonic() - t0, cached=False,
                             timed_out=False, toolchain=tc, flags=cmd.flags, command=command_line(cmd))
    if not dialect.pch or not (config if config is not None else SandboxConfig()).isolated:
        use_pch = False  # without bwrap there is no /pch mount
    if not use_cache or extra_args:
        return _compile_classified(source, src, cmd, tc, spec, memory_bytes, use_pch, pch_store, config,
                                   extra_args, t0)[0]
    cache = cache if cache is not None else default_cache()
    key = compile_key(src, cmd.source_name, cmd.flags, tc.fingerprint, language=dialect.language)
    hit = cache.get(key)
    if hit is not None:
        return _from_entry(hit, cmd, tc, t0)
    # Single flight: one compile per key across threads and processes; the others wait for it
    # (bounded: after the wait they compile themselves).
    with cache.lock(key, timeout=spec.timeout_seconds + 240):
        hit = cache.get(key)
        if hit is not None:
            return _from_entry(hit, cmd, tc, t0)
        res, cacheable = _compile_classified(source, src, cmd, tc, spec, memory_bytes, use_pch,
                                             pch_store, config, (), t0)
        if cacheable:
            cache.put(key, ok=res.ok, binary=res.binary, message=res.message, seconds=res.seconds,
                      extra={"flags": list(cmd.flags), "source_name": cmd.source_name,
                             "toolchain": tc.fingerprint, "pch": res.pch})
        return res


def _from_entry(hit: CacheEntry, cmd: CompileCommand, tc: Toolchain, t0: float) -> CompileResult:
    return CompileResult(ok=hit.ok, binary=hit.binary, message=hit.message, seconds=time.monotonic() - t0,
                         cached=True, timed_out=False, toolchain=tc, flags=cmd.flags,
                         pch=str(hit.meta.get("pch", "")), command=command_line(cmd))


def _compile_classified(source: str, src: bytes, cmd: CompileCommand, tc: Toolchain, spec: CompileSpec,
                        memory_bytes: int, use_pch: bool, store: PchStore | None,
                        config: SandboxConfig | None, extra_args: tuple[str, ...],
                        t0: float) -> tuple[CompileResult, bool]:
    """Compile (with a PCH when possible; without it if the PCH got in the way); returns the
    result and whether it may be cached."""
    limits = compile_limits(spec.timeout_seconds, memory_bytes)
    pch_dir: Path | None = None
    plan = plan_pch(source, cmd.flags, tc) if use_pch else None
    if plan is not None:
        try:
            store = store if store is not None else default_pch_store()
            pch_dir = store.ensure(plan, tc, config=config)
        except (OSError, RuntimeError, ValueError):  # no usable PCH store: compile without one
            pch_dir = None
    attempts = [(pch_dir, plan)] if pch_dir is not None and plan is not None else []
    attempts.append((None, None))
    failures = 0
    last_error: SandboxError | None = None
    i = 0
    while i < len(attempts):
        directory, p = attempts[i]
        try:
            ex, binary, size = _run_compiler(src, cmd, tc, limits, directory, p, extra_args, config)
        except SandboxError as exc:
            ex, binary, size = Execution(Status.SANDBOX_ERROR, detail=str(exc)), None, None
        if ex.status is Status.SANDBOX_ERROR:
            last_error = SandboxError(ex.detail)
            if directory is not None:  # maybe the PCH mount: go on without it
                i += 1
                continue
            failures += 1
            if failures >= 2:
                raise last_error
            continue
        stderr = ex.stderr.decode("utf-8", "replace")
        if directory is not None and not (ex.ok and binary) and MOUNT_POINT + "/" in stderr:
            i += 1  # the PCH was in the way (e.g. evicted mid-compile): compile without it
            continue
        return _classify(ex, binary, stderr, cmd, tc, limits, "" if p is None else p.kind, t0,
                         too_large=size)
    raise last_error or SandboxError("the compile could not run")


def _run_compiler(src: bytes, cmd: CompileCommand, tc: Toolchain, limits: Limits, pch_dir: Path | None,
                  plan, extra_args: tuple[str, ...],
                  config: SandboxConfig | None) -> tuple[Execution, bytes | None, int | None]:
    """Run g++ in a fresh sandbox; returns its run, the executable (at most
    :data:`MAX_EXECUTABLE_BYTES`) and, when it is larger, its size instead."""
    mount = new_mount_point()  # a name no program can guess (pch module docstring)
    # Every compile sandbox has a directory there, the PCH's or an empty one: whether /pch exists
    # (``__has_include("/pch/../usr/include/stdio.h")``) would tell a program whether another
    # submission had used its headers before.
    mounts = [(str(pch_dir) if pch_dir is not None else None, mount)]
    pch_args = tuple(plan.compile_args(mount)) if pch_dir is not None else ()
    with Sandbox(limits=limits, mounts=mounts, config=config) as sb:
        sb.put(cmd.source_name, src)
        argv = cmd.argv(tc.exec_path or tc.compiler_path, (*pch_args, *extra_args))
        ex = sb.run(argv, limits=limits, keep=[cmd.output_name])
        binary = size = None
        if ex.ok:
            binary, size = sb.fetch_or_size(cmd.output_name, max_bytes=MAX_EXECUTABLE_BYTES)
    return ex, binary, size


def _classify(ex: Execution, binary: bytes | None, stderr: str, cmd: CompileCommand, tc: Toolchain,
              limits: Limits, pch: str, t0: float, too_large: int | None = None
              ) -> tuple[CompileResult, bool]:
    timed_out = False
    cacheable = False
    note = ""
    if ex.ok and binary:
        ok, cacheable = True, True
    elif ex.ok and too_large is not None:
        ok, note = False, (f"the executable is {too_large} bytes, more than the "
                           f"{MAX_EXECUTABLE_BYTES // MiB} MiB cap on executables")
    elif ex.ok:
        ok, note = False, f"the compiler produced no executable {cmd.output_name!r}"
    elif ex.status is Status.TIME_LIMIT:
        ok, timed_out = False, True
        note = f"{COMPILE_TIME_LIMIT} ({limits.wall:g} s)"
    elif ex.status is Status.MEMORY_LIMIT:
        ok, note = False, f"{COMPILER_MEMORY_LIMIT} ({limits.memory_bytes // MiB} MiB)"
    elif ex.status is Status.OUTPUT_LIMIT:
        ok, note = False, f"{COMPILER_OUTPUT_LIMIT} {limits.output_bytes} bytes"
    elif ex.signal is not None:
        ok, note = False, f"{COMPILER_KILLED} ({ex.detail})"
    else:
        ok = False
        cacheable = ex.exit_code is not None and not RESOURCE_MARKERS.search(stderr)
    message = stderr
    if ex.stderr_truncated:
        message += f"\n[compiler output cut by the sandbox at {STDERR_KEEP_BYTES} bytes]"
    if note:
        message = f"{note}\n{message}" if message.strip() else note
    res = CompileResult(ok=ok, binary=binary if ok else None, message=truncate_message(message.strip()),
                        seconds=time.monotonic() - t0, cached=False, timed_out=timed_out, toolchain=tc,
                        flags=cmd.flags, pch=pch, command=command_line(cmd))
    return res, cacheable
