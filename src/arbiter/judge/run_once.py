"""Run one program once on one stdin and return what it did (no verdict): the building block of
SandboxFusion's ``/run_code``. Build, sandbox and retries as :func:`arbiter.judge.judge.judge`
does them. See ``docs/serve.md``.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from arbiter.judge.runner import Runner
from arbiter.judge.task import CompileSpec, Task
from arbiter.judge.testsuite import StdioCase, TestSuite
from arbiter.languages.base import BuildFailure, FailureKind
from arbiter.languages.registry import get_language, language_names
from arbiter.sandbox.config import SandboxConfig
from arbiter.sandbox.execution import Execution, Status
from arbiter.sandbox.limits import Limits
from arbiter.sandbox.sandbox import SandboxError


@dataclass
class RunOnce:
    """What :func:`run_once` saw.

    - ``build_failure``: the build produced no program (``kind`` says whose fault), else ``None``.
    - ``compile_output`` / ``compile_seconds``: the compiler's messages and the build's wall seconds
      (``compiled`` is False for interpreted languages).
    - ``load_error``: a Python program that did not load (SyntaxError traceback), else ``""``.
    - ``execution``: the run (``None`` when nothing ran); ``Status.SANDBOX_ERROR`` means ours.
    - ``files``: ``fetch`` paths found after the run, name -> bytes.
    """

    compiled: bool = False
    build_failure: BuildFailure | None = None
    compile_output: str = ""
    compile_seconds: float = 0.0
    load_error: str = ""
    execution: Execution | None = None
    files: dict[str, bytes] = field(default_factory=dict)

    @property
    def sandbox_error(self) -> str:
        """Why arbiter itself failed (``""`` when it did not): never the program's fault."""
        if self.build_failure is not None and self.build_failure.kind is FailureKind.ENVIRONMENT:
            return self.build_failure.reason
        if self.execution is not None and self.execution.status is Status.SANDBOX_ERROR:
            return self.execution.detail or "sandbox error"
        return ""


def supported_languages() -> list[str]:
    """The language names :func:`run_once` accepts (the registry's)."""
    return language_names()


def run_once(language: str, source: str, stdin: bytes, limits: Limits, *, compile_seconds: float = 30.0,
             files: dict[str, bytes] | None = None, fetch: tuple[str, ...] = (),
             config: SandboxConfig | None = None, retries: int = 2) -> RunOnce:
    """Build ``source`` and run it once with ``stdin`` under ``limits``.

    ``files``: plain file names -> bytes, written to the program's working directory first.
    ``fetch``: paths (relative to the working directory) read back after the run; missing ones
    are left out. A sandbox failure is retried ``retries`` times in a fresh sandbox. Raises
    ``ValueError`` for an unknown language or a file name with a ``/``.
    """
    lang = get_language(language)
    if lang is None:
        raise ValueError(f"unknown language {language!r}; supported: {', '.join(supported_languages())}")
    for name in files or {}:
        if "/" in name or name in ("", ".", ".."):
            raise ValueError(f"files: plain file names only, got {name!r}")
    out = RunOnce(compiled=lang.compiled)
    started = time.monotonic()
    program = lang.build(source, CompileSpec(timeout_seconds=compile_seconds))
    out.compile_seconds = time.monotonic() - started
    if isinstance(program, BuildFailure):
        out.build_failure, out.compile_output = program, program.compile_output
        return out
    out.compile_output = program.compile_output
    case = StdioCase("1", stdin, (b"",))
    task = Task(language=language, source=source, suite=TestSuite((case,), origin="run_once"), limits=limits)
    runner = Runner(task, lang, program, config)
    try:
        for attempt in range(retries + 1):
            ex = _attempt(runner, case, files or {}, out)
            if ex is None or ex.status is not Status.SANDBOX_ERROR or attempt == retries:
                out.execution = ex
                break
        if out.execution is not None and out.execution.status is not Status.SANDBOX_ERROR:
            out.files = _fetch(runner, fetch)
    finally:
        runner.close()
    return out


def _attempt(runner: Runner, case: StdioCase, files: dict[str, bytes], out: RunOnce) -> Execution | None:
    """One try in a fresh sandbox: the execution, ``None`` when the program does not load."""
    try:
        runner.open()
        if runner.load_error is not None:
            out.load_error = runner.load_error.message[-4000:]
            return None
        assert runner.sandbox is not None
        for name, data in files.items():
            runner.sandbox.put(name, data)
        return runner.run(case)
    except (SandboxError, OSError) as exc:
        return Execution(Status.SANDBOX_ERROR, detail=f"{type(exc).__name__}: {exc}")


def _fetch(runner: Runner, paths: tuple[str, ...]) -> dict[str, bytes]:
    found: dict[str, bytes] = {}
    if runner.sandbox is None:
        return found
    for path in paths:
        try:
            data = runner.sandbox.fetch(path, max_bytes=runner.task.limits.output_bytes)
        except SandboxError:
            continue
        if data is not None:
            found[path] = data
    return found


__all__ = ["RunOnce", "run_once", "supported_languages"]
