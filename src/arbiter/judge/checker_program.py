"""A task's own checker program (testlib style), built by its language and run in its own sandbox."""

from __future__ import annotations

from arbiter.checkers.result import CheckResult
from arbiter.checkers.spec import CheckerSpec
from arbiter.judge.evaluate import text_tail
from arbiter.judge.testsuite import StdioCase
from arbiter.languages.base import BuildFailure, CompileSpec, FailureKind, build_stopped_by_host
from arbiter.languages.registry import get_language
from arbiter.sandbox.config import SandboxConfig
from arbiter.sandbox.execution import Status
from arbiter.sandbox.limits import MiB, Limits
from arbiter.sandbox.pool import default_pool
from arbiter.sandbox.sandbox import Sandbox

CHECKER_LIMITS = Limits(cpu_seconds=10, wall_seconds=20, memory_bytes=1024 * MiB)


class ExternalChecker:
    """A testlib-style checker program (``checker input output answer``, exit 0 accepts), compiled
    once and run in its own sandbox: the checker comes from the dataset, but it reads the
    program's output, so it is isolated too."""

    def __init__(self, spec: CheckerSpec, config: SandboxConfig | None):
        self.spec = spec
        self.config = config
        self.sandbox: Sandbox | None = None
        self.error = ""
        self.host_error = ""  # the checker's build stopped by a limit or the machine: not the task's
        self.language = get_language(spec.program_language)
        if self.language is None:
            self.error = f"unknown checker language {spec.program_language!r}"
            return
        program = self.language.build(spec.program or "", CompileSpec(), entry="checker")
        if isinstance(program, BuildFailure):
            if program.kind is not FailureKind.COMPILE_ERROR and program.error is not None:
                raise program.error  # ours (a failed sandbox, a missing compiler): not the task's
            if build_stopped_by_host(program.reason, program.compile_output):
                self.host_error = f"the checker's build was stopped by a limit or the machine: {program.reason}"
            else:
                self.error = f"checker does not compile: {program.compile_output[:500]}"
            return
        self.sandbox = default_pool().acquire(files=program.files, limits=CHECKER_LIMITS, config=config)
        self._suspect = False
        self.argv = self.language.argv(program, self.sandbox)

    def check(self, case: StdioCase, output: bytes) -> CheckResult | str | None:
        """A :class:`CheckResult`; a string when the checker itself failed (the task's fault:
        testlib's exit 3 "FAIL", any other exit status, a crash, a Python traceback, a time
        limit); ``None`` when the sandbox failed (ours).

        testlib's convention: exit 0 accepts, 1 (WA) and 2 (presentation error) reject.
        """
        if self.sandbox is None:
            return None
        sb = self.sandbox
        sb.put("input.txt", case.stdin)
        sb.put("output.txt", output)
        last = CheckResult(False, "")
        for answer in case.expected:
            sb.put("answer.txt", answer)
            ex = sb.run([*self.argv, "input.txt", "output.txt", "answer.txt"], b"", CHECKER_LIMITS)
            if ex.status is Status.SANDBOX_ERROR:
                self._suspect = True
                return None
            if ex.status is Status.OK:
                return CheckResult(True, "")
            msg = text_tail(ex.stderr or ex.stdout, 300)
            marker = self.language.crash_marker if self.language is not None else ""
            crashed = bool(marker) and marker in msg
            if (ex.status is Status.RUNTIME_ERROR and ex.signal is None and ex.exit_code in (1, 2)
                    and not crashed):
                last = CheckResult(False, f"checker: {msg}" if msg else f"checker exit {ex.exit_code}")
                continue
            return f"the checker failed ({ex.detail}){': ' + msg if msg else ''}"
        return last

    def close(self) -> None:
        """Give the sandbox back to the pool (closed instead after a failure of ours)."""
        if self.sandbox is not None:
            sb, self.sandbox = self.sandbox, None
            (default_pool().discard if self._suspect else default_pool().release)(sb)
