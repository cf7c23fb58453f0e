"""What a program prints: run one program on many inputs in one sandbox and keep each run's output.

The judge's entry point for building test suites (a generator's inputs, a reference solution's expected
outputs): no checker and no verdict, only each run's :class:`~arbiter.sandbox.execution.Execution`. Pipelines
reach programs through here, never through a sandbox of their own. See ``docs/oracle.md`` ("Generated tests").
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence

from arbiter.sandbox.config import SandboxConfig
from arbiter.sandbox.execution import Execution
from arbiter.sandbox.limits import Limits
from arbiter.sandbox.sandbox import Sandbox

#: In an argv: the folder holding the program's files (read-only), and the sandbox's Python.
PROG = "{prog}"
PYTHON = "{python}"

__all__ = ["PROG", "PYTHON", "run_each"]


def run_each(files: Mapping[str, bytes], runs: Iterable[tuple[Sequence[str], bytes]], limits: Limits, *,
             config: SandboxConfig | None = None) -> Iterator[Execution]:
    """Run each ``(argv, stdin)`` of ``runs`` in order, in one sandbox holding ``files``; yield its execution.

    ``argv`` may name :data:`PROG` (e.g. ``[f"{PROG}/main"]``) and :data:`PYTHON`. The sandbox is closed when
    the iteration ends or stops. Raises :class:`~arbiter.sandbox.sandbox.SandboxError` when no sandbox starts;
    a failed run is ``Status.SANDBOX_ERROR`` in its execution.
    """
    cfg = config or SandboxConfig()
    with Sandbox(files=dict(files), limits=limits, config=cfg) as sb:
        for argv, stdin in runs:
            real = [a.replace(PROG, sb.prog_dir).replace(PYTHON, cfg.python) for a in argv]
            yield sb.run(real, stdin, limits)
