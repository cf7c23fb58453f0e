"""The sandbox of one submission: taken from the warm pool with the built program, given back
at the end, replaced by a freshly started one after a failure (docs/sandbox.md, "Warm pool").

The language decides how a case runs (:meth:`~arbiter.languages.base.Language.run`: an argv, or
the warm fork server); function-call cases go to the sandbox's call harness.
"""

from __future__ import annotations

from typing import Any, Sequence

from arbiter.judge import jsonvalues
from arbiter.judge.task import Task
from arbiter.judge.testsuite import CallCase, TestCase
from arbiter.languages.base import Language, LoadFailure, Program
from arbiter.sandbox.config import SandboxConfig
from arbiter.sandbox.execution import Execution, Status
from arbiter.sandbox.pool import default_pool
from arbiter.sandbox.sandbox import Sandbox, SandboxError


class Runner:
    """Holds the sandbox of one submission (from :func:`default_pool`); after a sandbox failure
    the suspect one is discarded and a freshly started one replaces it."""

    def __init__(self, task: Task, language: Language, program: Program, config: SandboxConfig | None):
        self.task = task
        self.language = language
        self.program = program
        self.config = config
        self.sandbox: Sandbox | None = None
        self.load_error: LoadFailure | None = None
        self._suspect = False  # a run of this session failed on our side: never reuse it

    def open(self, fresh: bool = False) -> None:
        """Take a sandbox (``fresh``: a newly started one) and load the program. Raises
        SandboxError / OSError."""
        self.close()
        # (a Python program's source too: ``/prog/main.py`` is its ``__file__``, which
        # multiprocessing's spawn and forkserver children run)
        files = self.program.files
        self.sandbox = default_pool().acquire(files=files, limits=self.task.limits, config=self.config,
                                              mounts=self.language.mounts, fresh=fresh, factory=Sandbox,
                                              python=bool(self.language.fork_server))
        try:
            self.load_error = self.language.load(self.sandbox, self.program, self.task.prelude)
        except BaseException:
            self._suspect = True
            self.close()
            raise

    def reopen(self) -> str:
        """A fresh sandbox after a failure: ``""``, or why it could not be had (the restart
        failed, or the program no longer loads in it). Never raises."""
        self._suspect = True
        try:
            self.open(fresh=True)
        except (SandboxError, OSError) as exc:
            self.close()
            return f"{type(exc).__name__}: {exc}" if isinstance(exc, OSError) else str(exc)
        if self.load_error is not None:  # it loaded in the first sandbox: ours, not the program's
            self.close()
            return f"the program no longer loads in the new sandbox: {self.load_error.message[-300:]}"
        return ""

    def run(self, case: TestCase, keep: Sequence[str] = (), last: bool = False) -> Execution:
        """Run one case (``keep``: working-directory files the wipe after it spares; ``last``: no
        other case follows in this sandbox, see :meth:`Sandbox.run`)."""
        if self.sandbox is None:
            raise SandboxError("no sandbox (a restart failed)")
        lim = self.task.limits
        if isinstance(case, CallCase):
            call = jsonvalues.dumps(_call_spec(case))
            ex = self.sandbox.call_python(case.fn_name, limits=lim, call_json=call, last=last)
        else:
            ex = self.language.run(self.sandbox, self.program, case.stdin, lim, keep, last)
        if ex.status is Status.SANDBOX_ERROR:
            self._suspect = True
        return ex

    def close(self) -> None:
        """Give the sandbox back to the pool (closed instead when a run of it failed)."""
        if self.sandbox is not None:
            sb, self.sandbox = self.sandbox, None
            if self._suspect:
                default_pool().discard(sb)
            else:
                default_pool().release(sb)
        self._suspect = False


def _call_spec(case: CallCase) -> dict[str, Any]:
    """What the call harness gets: ``args``, ``kwargs``, and the case's LeetCode node types when
    it has them (``node_args``, ``node_return``: the row's, never the program's; docs/sandbox.md,
    "mode: call")."""
    spec = {"args": list(case.args), "kwargs": dict(case.kwargs)}
    if case.node_args is not None:
        spec.update(node_args=list(case.node_args), node_return=case.node_return)
    if case.int_keys:  # the route's APPS/TACO rule: the first argument's keys become ints
        spec["int_keys"] = True
    return spec
