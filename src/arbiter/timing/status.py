"""How one measured run ended (:class:`MeasureStatus`), and the check that turns a sandbox run into one.

Shared by both meters (instruction counts and wall time); the rules are in ``docs/measurement.md``.
"""

from __future__ import annotations

import enum
from typing import Callable

from arbiter.sandbox.execution import Execution, Status

__all__ = ["MeasureStatus", "default_same_output", "run_status"]


class MeasureStatus(str, enum.Enum):
    """How one measured run ended. ``ok`` is the only status that carries a figure; ``sandbox_error`` is ours
    (retried, reported, never a verdict); the others are the program's failed measurements. Each status is
    described in ``docs/measurement.md`` ("Statuses")."""

    OK = "ok"
    RUNTIME_ERROR = "runtime_error"
    TIME_LIMIT = "time_limit"
    MEMORY_LIMIT = "memory_limit"
    OUTPUT_LIMIT = "output_limit"
    WRONG_OUTPUT = "wrong_output"
    EXEC_REFUSED = "exec_refused"
    NO_COUNT = "no_count"
    SANDBOX_ERROR = "sandbox_error"
    UNSUPPORTED_BY_METER = "unsupported_by_meter"
    CREATES_PROCESSES = "creates_processes"
    CLIENT_REQUEST = "client_request"
    MODIFIES_CODE = "modifies_code"
    WRITES_METER = "writes_meter"


_FROM_SANDBOX = {
    Status.OK: MeasureStatus.OK,
    Status.RUNTIME_ERROR: MeasureStatus.RUNTIME_ERROR,
    Status.TIME_LIMIT: MeasureStatus.TIME_LIMIT,
    Status.MEMORY_LIMIT: MeasureStatus.MEMORY_LIMIT,
    Status.OUTPUT_LIMIT: MeasureStatus.OUTPUT_LIMIT,
    Status.SANDBOX_ERROR: MeasureStatus.SANDBOX_ERROR,
}


def default_same_output(actual: bytes, expected: bytes) -> bool:
    """The output comparison used when the caller gives none: equal after removing trailing whitespace of every
    line and trailing empty lines (the oracle seed card's ``trailing_whitespace`` checker).

    Correctness is the judge's job; this only makes sure a measured run computed the expected answer. Callers with
    another checker (PIE's float tolerance, tokens) pass it as ``same_output``.
    """
    def norm(b: bytes) -> list[bytes]:
        lines = [ln.rstrip() for ln in b.replace(b"\r\n", b"\n").split(b"\n")]
        while lines and not lines[-1]:
            lines.pop()
        return lines
    return norm(actual) == norm(expected)


def run_status(ex: Execution, expected: bytes | None,
               same_output: Callable[[bytes, bytes], bool] | None = None) -> tuple[MeasureStatus, str]:
    """``(status, detail)`` of one measured run: the sandbox's status, then the output check when ``expected`` is
    given (``same_output(actual, expected)``, default :func:`default_same_output`)."""
    status = _FROM_SANDBOX[ex.status]
    if status is not MeasureStatus.OK:
        return status, ex.detail
    if expected is not None:
        if ex.stdout_truncated:
            return MeasureStatus.WRONG_OUTPUT, "stdout was truncated"
        if not (same_output or default_same_output)(ex.stdout, expected):
            return MeasureStatus.WRONG_OUTPUT, "stdout differs from the expected output"
    return MeasureStatus.OK, ""
