"""The base of a language whose programs are built in a sandbox, then run as an argv.

A new compiled language is one short file: a subclass of :class:`CompiledLanguage` that declares
its compiler, the build steps (argvs run one after another in a fresh sandbox, the source written
to :attr:`~CompiledLanguage.source_name` in its working directory), the file the build leaves
(:attr:`~CompiledLanguage.output`), how it runs, and if it needs them, its own read-only binds
(:attr:`~CompiledLanguage.mounts`) and limits. Building, the compile cache (keyed by the source,
the steps and the compiler's installed files), CE / INVALID_TASK / SANDBOX_ERROR and running are
done here. The gcc family (:mod:`arbiter.languages.cpp`) adds command parsing, toolchain
pinning and precompiled headers on top. See ``docs/languages.md`` ("A compiled language").
"""

from __future__ import annotations

import hashlib
import json
import os
from typing import TYPE_CHECKING, Any, Sequence

from arbiter.languages.base import COMPILE_TIME_LIMIT, ArgvLanguage, BuildFailure, CompileSpec, FailureKind, Program
from arbiter.languages.compile_cache import CompileCache, cache_root, compile_key

if TYPE_CHECKING:
    from arbiter.sandbox.execution import Execution
    from arbiter.sandbox.limits import Limits
    from arbiter.sandbox.sandbox import Sandbox

#: The largest output a build may leave (a larger one is a compile error, never fetched).
MAX_OUTPUT_BYTES = 64 << 20


class CompiledLanguage(ArgvLanguage):
    """Build in a sandbox, run the output. Subclasses set the class attributes and may override
    :meth:`build_steps`, :meth:`run_argv`, :meth:`build_limits` and :meth:`run_limits`."""

    compiled = True
    compiler: str = ""  # absolute path of the build tool (its installed files key the cache)
    source_name: str = "main"  # where the source is written, in the build's working directory
    output: str = "main"  # the file the build leaves, placed in /prog as the program's entry
    mounts: tuple[tuple[str, str], ...] = ()  # (host path, sandbox path) shown read-only, build and run
    build_env: dict[str, str] | None = None  # the build's environment (None: the sandbox default)

    def build_steps(self, spec: CompileSpec) -> list[list[str]]:
        """The argvs that turn :attr:`source_name` into :attr:`output` (run in order)."""
        return [[self.compiler, self.source_name, "-o", self.output]]

    def run_argv(self, program: Program, sandbox: Sandbox) -> list[str]:
        """How a built program runs (default: the output itself)."""
        return [f"{sandbox.prog_dir}/{program.entry}"]

    def build_limits(self, spec: CompileSpec) -> Limits:
        """The build's limits: ``spec.timeout_seconds`` of CPU and wall, 2 GiB, 32 tasks."""
        from arbiter.sandbox.limits import MiB, Limits

        return Limits(cpu_seconds=spec.timeout_seconds, wall_seconds=spec.timeout_seconds,
                      memory_bytes=2048 * MiB, processes=32, output_bytes=256 * MiB,
                      stderr_bytes=1 * MiB, open_files=256, scratch_bytes=1024 * MiB, stack_bytes=256 * MiB)

    def run_limits(self, limits: Limits) -> Limits:
        """A case's limits for a program of this language (default: the task's)."""
        return limits

    def check_command(self, command: str) -> None:
        raise ValueError(f"{self.name} programs take no compile command")

    def argv(self, program: Program, sandbox: Sandbox) -> list[str]:
        return self.run_argv(program, sandbox)

    def run(self, sandbox: Sandbox, program: Program, stdin: bytes, limits: Limits,
            keep: Sequence[str] = (), last: bool = False) -> Execution:
        return sandbox.run(self.run_argv(program, sandbox), stdin, self.run_limits(limits), keep=keep,
                           last=last)

    # ---- building -----------------------------------------------------------------------------
    def compiler_stamp(self) -> str:
        """What identifies the installed compiler: its real path, size, times and inode."""
        real = os.path.realpath(self.compiler)
        st = os.stat(real)
        return json.dumps([real, st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino])

    def fingerprint(self, spec: CompileSpec, config: object) -> str | None:
        """The installed compiler, the build steps, environment and binds (``None`` when the compiler is
        not installed): a verdict is reused only under the same ones."""
        try:
            return json.dumps([self.compiler_stamp(), self.build_steps(spec), [list(m) for m in self.mounts],
                               self.build_env], sort_keys=True)
        except OSError:
            return None

    def build(self, source: str, spec: CompileSpec, *, entry: str = "main",
              cache: CompileCache | None = None) -> Program | BuildFailure:
        """Build ``source`` (from the compile cache when it was built before); the output is
        placed as ``entry``. A missing compiler or a failed sandbox is ours (SANDBOX_ERROR), a
        failed build step the program's (CE)."""
        try:
            fingerprint = self.compiler_stamp()
        except OSError as exc:
            return BuildFailure(FailureKind.ENVIRONMENT, f"compile: {self.compiler} is not installed ({exc})", error=exc)
        steps = self.build_steps(spec)
        src = source.encode("utf-8", "surrogateescape")
        cache = cache if cache is not None else _default_cache()
        key = compile_key(src, self.source_name, tuple(json.dumps(s) for s in steps), fingerprint, language=self.name)
        hit = cache.get(key)
        if hit is None:
            built = self._build_in_sandbox(src, steps, spec)
            if isinstance(built, BuildFailure) and built.kind is not FailureKind.COMPILE_ERROR:
                return built
            ok = not isinstance(built, BuildFailure)
            cache.put(key, ok=ok, binary=built[0] if ok else None, seconds=0.0,
                      message=built[1] if ok else built.compile_output, extra={"language": self.name})
            hit = cache.get(key)
            if hit is None:  # (an unwritable cache)
                return built if not ok else Program({entry: built[0]}, entry, source, built[1])
        if not hit.ok or hit.binary is None:
            return BuildFailure(FailureKind.COMPILE_ERROR, "compile error", hit.message)
        return Program(files={entry: hit.binary}, entry=entry, source=source, compile_output=hit.message,
                       toolchain={"compiler": self.compiler, "fingerprint": hashlib.sha256(fingerprint.encode()).hexdigest()})

    def _build_in_sandbox(self, src: bytes, steps: Sequence[Sequence[str]], spec: CompileSpec
                          ) -> tuple[bytes, str] | BuildFailure:
        """``(output bytes, messages)`` or a failure: the build steps in one fresh sandbox."""
        from arbiter.sandbox.execution import Status
        from arbiter.sandbox.sandbox import Sandbox, SandboxError

        limits = self.build_limits(spec)
        messages: list[str] = []
        try:
            with Sandbox(limits=limits, mounts=self.mounts) as sb:
                sb.put(self.source_name, src)
                for argv in steps:
                    ex = sb.run(list(argv), limits=limits, env=self.build_env, keep=[self.output])
                    messages.append(ex.stderr.decode("utf-8", "replace"))
                    if ex.status is Status.SANDBOX_ERROR:
                        return BuildFailure(FailureKind.ENVIRONMENT, f"compile: {ex.detail}")
                    if not ex.ok:
                        why = COMPILE_TIME_LIMIT if ex.status is Status.TIME_LIMIT else "compile error"
                        return BuildFailure(FailureKind.COMPILE_ERROR, why, _message(messages, ex))
                data, size = sb.fetch_or_size(self.output, MAX_OUTPUT_BYTES)
        except SandboxError as exc:
            return BuildFailure(FailureKind.ENVIRONMENT, f"compile: {exc}", error=exc)
        if data is None:
            why = (f"the build's output is {size} bytes, more than {MAX_OUTPUT_BYTES}" if size is not None
                   else f"the build left no {self.output!r}")
            return BuildFailure(FailureKind.COMPILE_ERROR, why, "\n".join(messages + [why]).strip())
        return data, "\n".join(messages).strip()


def _message(messages: list[str], ex: Any) -> str:
    text = "\n".join(messages).strip()
    return f"{ex.detail}\n{text}".strip() if ex.detail else text


_cache: dict[str, CompileCache] = {}


def _default_cache() -> CompileCache:
    """The process's compile cache (the one the gcc family uses: ``$ARBITER_CACHE_DIR/compile``)."""
    root = str(cache_root() / "compile")
    return _cache.setdefault(root, CompileCache(root))
