"""Run one program once on one stdin and return what it did (no verdict): the building block of
SandboxFusion's ``/run_code``. Build, sandbox and retries as :func:`arbiter.judge.judge.judge`
does them. See ``docs/serve.md``.
"""

from __future__ import annotations

import hashlib
import threading
import time
from collections import OrderedDict
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
    - ``files_omitted``: ``fetch`` paths left out, name -> why (missing, over the budget).
    """

    compiled: bool = False
    build_failure: BuildFailure | None = None
    compile_output: str = ""
    compile_seconds: float = 0.0
    load_error: str = ""
    execution: Execution | None = None
    files: dict[str, bytes] = field(default_factory=dict)
    files_omitted: dict[str, str] = field(default_factory=dict)

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
             config: SandboxConfig | None = None, retries: int = 2, warm: "WarmSandboxes | None" = None,
             fetch_bytes: int | None = None, owner: str = "") -> RunOnce:
    """Build ``source`` and run it once with ``stdin`` under ``limits``.

    ``files``: plain file names -> bytes, written to the program's working directory first.
    ``fetch``: plain names of files in the working directory (given in ``files`` or written by
    the program) read back after the run, at most ``fetch_bytes`` in all (default
    ``limits.output_bytes``); missing ones and those past the budget are left out
    (``files_omitted``). A sandbox failure is retried ``retries`` times in a fresh sandbox. ``warm``:
    keep the program's sandbox for the next run of the same program (as :func:`judge` runs
    every case of one submission in one sandbox, each in a fresh process); only a run of the same
    ``owner`` (a tenant of ``arbiter serve``) takes that sandbox again. Raises ``ValueError``
    for an unknown language or a file name with a ``/``.
    """
    lang = get_language(language)
    if lang is None:
        raise ValueError(f"unknown language {language!r}; supported: {', '.join(supported_languages())}")
    files = dict(files or {})
    for name in (*files, *fetch):
        if "/" in name or name in ("", ".", ".."):
            raise ValueError(f"files: plain file names only, got {name!r}")
    fetch = tuple(dict.fromkeys(fetch))
    out = RunOnce(compiled=lang.compiled)
    key = owner + "\0" + _key(language, source, files, limits, config)
    runner = warm.take(key) if warm is not None else None
    try:
        budget = limits.output_bytes if fetch_bytes is None else fetch_bytes
        return _run(out, lang, key, runner, language, source, stdin, limits, compile_seconds, files, (fetch, budget),
                    config, retries, warm)
    finally:
        if warm is not None:
            warm.done(key)


def _run(out: RunOnce, lang, key: str, runner: Runner | None, language: str, source: str, stdin: bytes,
         limits: Limits, compile_seconds: float, files: dict[str, bytes], fetch: tuple[tuple[str, ...], int],
         config: SandboxConfig | None, retries: int, warm: "WarmSandboxes | None") -> RunOnce:
    if runner is None:
        started = time.monotonic()
        program = lang.build(source, CompileSpec(timeout_seconds=compile_seconds))
        out.compile_seconds = time.monotonic() - started
        if isinstance(program, BuildFailure):
            out.build_failure, out.compile_output = program, program.compile_output
            return out
        task = Task(language=language, source=source, suite=TestSuite((_CASE,), origin="run_once"), limits=limits)
        runner = Runner(task, lang, program, config)
    out.compile_output = runner.program.compile_output
    case = StdioCase("1", stdin, (b"",))
    for attempt in range(retries + 1):
        fresh = runner.sandbox is None or attempt > 0
        ex = _attempt(runner, case, files, out, fresh, fetch[0])
        if ex is None or ex.status is not Status.SANDBOX_ERROR or attempt == retries:
            out.execution = ex
            break
    if out.execution is not None and out.execution.status is not Status.SANDBOX_ERROR:
        out.files, out.files_omitted = _fetch(runner, *fetch)
    if warm is not None and out.execution is not None and not out.sandbox_error and not fetch[0]:
        warm.give(key, runner)
    else:
        runner.close()
    return out


_CASE = StdioCase("1", b"", (b"",))


def _key(language: str, source: str, files: dict[str, bytes], limits: Limits, config: SandboxConfig | None) -> str:
    h = hashlib.sha256()
    for part in (language, source, repr(sorted((k, hashlib.sha256(v).hexdigest()) for k, v in files.items())),
                 repr(limits), repr(config)):
        h.update(part.encode("utf-8", "surrogatepass") + b"\0")  # any str, one way: a key, not a program
    return h.hexdigest()


class WarmSandboxes:
    """Idle sandboxes of recent programs, by program (source, language, files, limits); at most
    ``capacity`` kept, the least recently used closed first, none idle longer than ``idle_seconds``.
    Thread-safe; a sandbox is used by one run at a time."""

    def __init__(self, capacity: int = 8, idle_seconds: float = 30.0, per_program: int = 2,
                 wait_seconds: float = 10.0):
        self.capacity, self.idle_seconds = capacity, idle_seconds
        self.per_program, self.wait_seconds = per_program, wait_seconds
        self._idle: OrderedDict[tuple[str, int], tuple[float, Runner]] = OrderedDict()
        self._lock = threading.Condition()
        self._busy: dict[str, int] = {}
        self._n = 0

    def take(self, key: str) -> Runner | None:
        """An idle sandbox of this program, or ``None`` (build a new one). While ``per_program``
        runs of the program are under way, waits up to ``wait_seconds`` for one of them (verl
        sends every case of a program at once: a warm sandbox runs a case in milliseconds, a new
        one costs a start). Every call is paired with :meth:`done`."""
        with self._lock:
            self._lock.wait_for(lambda: self._busy.get(key, 0) < self.per_program, timeout=self.wait_seconds)
            self._busy[key] = self._busy.get(key, 0) + 1
            expired = self._expire()
            found = next((k for k in reversed(self._idle) if k[0] == key), None)
            runner = self._idle.pop(found)[1] if found is not None else None
        for r in expired:
            r.close()
        return runner

    def done(self, key: str) -> None:
        """The run that :meth:`take` started is over (its sandbox given back or closed)."""
        with self._lock:
            self._busy[key] -= 1
            if not self._busy[key]:
                del self._busy[key]
            self._lock.notify_all()

    def give(self, key: str, runner: Runner) -> None:
        with self._lock:
            self._n += 1
            self._idle[(key, self._n)] = (time.monotonic(), runner)
            expired = self._expire()
            while len(self._idle) > self.capacity:
                expired.append(self._idle.popitem(last=False)[1][1])
        for r in expired:
            r.close()

    def _expire(self) -> list[Runner]:
        now = time.monotonic()
        old = [k for k, (t, _) in self._idle.items() if now - t > self.idle_seconds]
        return [self._idle.pop(k)[1] for k in old]

    def close(self) -> None:
        with self._lock:
            runners = [r for _, r in self._idle.values()]
            self._idle.clear()
        for r in runners:
            r.close()


def _attempt(runner: Runner, case: StdioCase, files: dict[str, bytes], out: RunOnce,
             fresh: bool, keep: tuple[str, ...]) -> Execution | None:
    """One try (in a fresh sandbox when ``fresh``): the execution, ``None`` when the program
    does not load. The request's files are written before every run: a warm sandbox keeps them
    across runs (the wipe spares them) as the last run left them."""
    try:
        if fresh:
            runner.open()
            if runner.load_error is not None:
                out.load_error = runner.load_error.message[-4000:]
                return None
        assert runner.sandbox is not None
        for name, data in files.items():
            runner.sandbox.put(name, data)
        return runner.run(case, keep, last=True)
    except (SandboxError, OSError) as exc:
        return Execution(Status.SANDBOX_ERROR, detail=f"{type(exc).__name__}: {exc}")


def _fetch(runner: Runner, names: tuple[str, ...], budget: int) -> tuple[dict[str, bytes], dict[str, str]]:
    """The files, at most ``budget`` bytes in all; and why the others were left out."""
    found: dict[str, bytes] = {}
    omitted: dict[str, str] = {}
    for name in names:
        if runner.sandbox is None:
            omitted[name] = "no sandbox"
            continue
        try:
            data, size = runner.sandbox.fetch_or_size(name, max_bytes=budget)
        except SandboxError as exc:
            omitted[name] = f"not read: {exc}"
            continue
        if data is not None:
            found[name] = data
            budget -= len(data)
        else:
            omitted[name] = "missing or not a regular file" if size is None else \
                f"{size} bytes, over the {budget} bytes left of the answer's file budget"
    return found, omitted


__all__ = ["RunOnce", "WarmSandboxes", "run_once", "supported_languages"]
