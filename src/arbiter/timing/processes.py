"""Measured runs are single-process: new processes and threads are refused (``prlimit --nproc=1:1``), and
:func:`process_probe` tells a program that needs them apart from one that fails on its own.

The rules are in ``docs/measurement.md`` ("One process").
"""

from __future__ import annotations

import functools
import os
from typing import Callable, Sequence

from arbiter.sandbox.limits import Limits
from arbiter.sandbox.sandbox import Sandbox
from arbiter.timing.status import MeasureStatus, run_status

__all__ = [
    "CREATES_PROCESSES_REASON",
    "NO_NEW_PROCESSES",
    "PROBED_STATUSES",
    "find_prlimit",
    "measuring_sandbox_limits",
    "process_probe",
    "single_process_argv",
]


#: The reason of a :attr:`MeasureStatus.CREATES_PROCESSES` failure (the start of its detail).
CREATES_PROCESSES_REASON = "program creates processes; its cost cannot be measured"


#: The ``prlimit`` option that refuses every new process or thread of the measured program (``RLIMIT_NPROC`` = 1:
#: the sandbox's server already counts as one process of the same user, so ``fork``/``clone`` fail with EAGAIN).
NO_NEW_PROCESSES = "--nproc=1:1"


#: Failed statuses that a refused ``fork``/``clone`` can cause (the program's reaction to EAGAIN), so
#: :func:`process_probe` is asked about them.
PROBED_STATUSES = frozenset({MeasureStatus.RUNTIME_ERROR, MeasureStatus.WRONG_OUTPUT, MeasureStatus.TIME_LIMIT,
                             MeasureStatus.MEMORY_LIMIT, MeasureStatus.OUTPUT_LIMIT})


@functools.lru_cache(maxsize=None)
def find_prlimit() -> str:
    """The path of util-linux ``prlimit`` (``/usr/bin/prlimit`` or ``/bin/prlimit``; the sandbox shows ``/usr``).
    Raises :class:`~arbiter.sandbox.sandbox.SandboxError` when it is missing (install util-linux): without it no
    measured run can refuse new processes, and measuring anyway would be our fault, not the program's."""
    from arbiter.sandbox.sandbox import SandboxError

    path = next((p for p in ("/usr/bin/prlimit", "/bin/prlimit") if os.access(p, os.X_OK)), "")
    if not path:
        raise SandboxError("prlimit not found (install util-linux): measured runs need it to refuse new processes")
    return path


def single_process_argv(argv: Sequence[str], prlimit: str | None = None) -> list[str]:
    """``argv`` run under ``RLIMIT_NPROC = 1`` (``prlimit --nproc=1:1 -- argv``): the program cannot create a
    process or a thread (``fork``/``clone`` fail with EAGAIN: the sandbox's server already counts as one process of
    the same user), so no child can do work its figure misses. ``prlimit`` execs ``argv`` in the same process; its
    own start-up is part of every wall/CPU figure, the same for both programs of a comparison. Raises
    ``SandboxError`` without prlimit."""
    return [prlimit or find_prlimit(), NO_NEW_PROCESSES, "--", *argv]


def measuring_sandbox_limits(run_limits: Limits, native: Limits) -> Limits:
    """The sandbox-wide limits of a measuring sandbox: ``run_limits`` (e.g. :func:`valgrind_limits`) with the
    native process limit, so that :func:`process_probe`'s allowed run may create processes (the measured runs
    themselves refuse them with :func:`single_process_argv` / ``--nproc=1:1``)."""
    return run_limits.with_(processes=max(int(native.processes), int(run_limits.processes)))


def process_probe(sandbox: Sandbox, argv: Sequence[str], stdin: bytes, limits: Limits,
                  expected: bytes | None = None, same_output: Callable[[bytes, bytes], bool] | None = None, *,
                  refused_failure: tuple[MeasureStatus, str] | None = None) -> str | None:
    """Whether a failed measured run failed because the program needs to create processes or threads.

    Runs ``argv`` natively in ``sandbox`` on ``stdin`` with ``limits`` (the program's native limits), allowed to
    create processes (up to the sandbox's ``pids.max``: create ``sandbox`` with :func:`measuring_sandbox_limits`).
    ``refused_failure``: the ``(status, detail)`` of a native run with new processes refused that already failed
    (the wall method's measured run); ``None`` (valgrind: its failure may be valgrind's own) runs that refused run
    here too (:func:`single_process_argv`). Returns the detail of a
    :attr:`MeasureStatus.CREATES_PROCESSES` failure (starting with :data:`CREATES_PROCESSES_REASON`) when the
    program succeeds (exit 0 within limits, ``expected`` output when given) only when allowed to create processes;
    ``None`` when it fails either way (its own failure), succeeds either way, or a run was a sandbox error.
    Costs one or two native runs; only called after a failed measured run."""
    if refused_failure is None:
        refused = sandbox.run(single_process_argv(argv), stdin, limits)
        refused_failure = run_status(refused, expected, same_output)
    r_status, r_detail = refused_failure
    if r_status is MeasureStatus.OK or r_status is MeasureStatus.SANDBOX_ERROR:
        return None
    allowed = sandbox.run(list(argv), stdin, limits)
    a_status, _ = run_status(allowed, expected, same_output)
    if a_status is not MeasureStatus.OK:
        return None
    return (f"{CREATES_PROCESSES_REASON} (with fork/clone refused it fails: {r_status.value}"
            f"{': ' + r_detail if r_detail else ''}; allowed to create processes or threads, it succeeds; measured "
            "programs must be single-process and single-threaded)")
