"""The sandbox of one submission: opened with the built program, restarted after a failure.

The language decides how a case runs (:meth:`~arbiter.languages.base.Language.run`: an argv, or
the warm fork server); function-call cases go to the sandbox's call harness.
"""

from __future__ import annotations

from arbiter.judge import jsonvalues
from arbiter.judge.task import Task
from arbiter.judge.testsuite import CallCase, TestCase
from arbiter.languages.base import Language, LoadFailure, Program
from arbiter.sandbox.config import SandboxConfig
from arbiter.sandbox.execution import Execution
from arbiter.sandbox.sandbox import Sandbox, SandboxError


class Runner:
    """Owns the sandbox of one submission; restarts it after a sandbox failure."""

    def __init__(self, task: Task, language: Language, program: Program, config: SandboxConfig | None):
        self.task = task
        self.language = language
        self.program = program
        self.config = config
        self.sandbox: Sandbox | None = None
        self.load_error: LoadFailure | None = None

    def open(self) -> None:
        self.close()
        files = None if self.language.fork_server else self.program.files
        self.sandbox = Sandbox(files=files, limits=self.task.limits, config=self.config)
        self.load_error = self.language.load(self.sandbox, self.program, self.task.prelude)

    def reopen(self) -> str:
        """A fresh sandbox after a failure: ``""``, or why it could not be had (the restart
        failed, or the program no longer loads in it). Never raises."""
        try:
            self.open()
        except (SandboxError, OSError) as exc:
            self.close()
            return f"{type(exc).__name__}: {exc}" if isinstance(exc, OSError) else str(exc)
        if self.load_error is not None:  # it loaded in the first sandbox: ours, not the program's
            self.close()
            return f"the program no longer loads in the new sandbox: {self.load_error.message[-300:]}"
        return ""

    def run(self, case: TestCase) -> Execution:
        if self.sandbox is None:
            raise SandboxError("no sandbox (a restart failed)")
        lim = self.task.limits
        if isinstance(case, CallCase):
            call = jsonvalues.dumps({"args": list(case.args), "kwargs": dict(case.kwargs)})
            return self.sandbox.call_python(case.fn_name, limits=lim, call_json=call)
        return self.language.run(self.sandbox, self.program, case.stdin, lim)

    def close(self) -> None:
        if self.sandbox is not None:
            self.sandbox.close()
            self.sandbox = None
