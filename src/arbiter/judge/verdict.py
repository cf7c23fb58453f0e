"""Verdicts: per test case and per submission.

Per case: ``AC`` ``WA`` ``TLE`` ``MLE`` ``RE`` ``OLE`` (``SKIPPED`` for cases not run because an
all-or-nothing run stopped at the first failure). Per submission additionally: ``CE`` (compile
error), ``FORMAT_ERROR`` (the response could not be parsed into a program), ``INVALID_TASK`` (the
row is unusable: unknown test encoding, zero tests) and ``SANDBOX_ERROR`` (our fault, not the
program's). See DESIGN.md, "Verdicts".
"""

from __future__ import annotations

import enum
from dataclasses import asdict, dataclass, field
from typing import Any


class Outcome(str, enum.Enum):
    """A verdict code."""

    AC = "AC"
    WA = "WA"
    TLE = "TLE"
    MLE = "MLE"
    RE = "RE"
    OLE = "OLE"
    SKIPPED = "SKIPPED"
    CE = "CE"
    FORMAT_ERROR = "FORMAT_ERROR"
    INVALID_TASK = "INVALID_TASK"
    SANDBOX_ERROR = "SANDBOX_ERROR"

    def __str__(self) -> str:
        return self.value


CASE_OUTCOMES = (Outcome.AC, Outcome.WA, Outcome.TLE, Outcome.MLE, Outcome.RE, Outcome.OLE, Outcome.SKIPPED)


@dataclass
class CaseResult:
    """The verdict on one test case.

    Times in seconds, memory in bytes. ``diff`` is a short description of the first difference for
    ``WA``; ``detail`` says why for the other verdicts (signal, limit, exception).
    ``run_delay_seconds`` / ``server_delay_seconds``: the run's run-queue delay and the sandbox
    server's while it watched the run (time runnable without a CPU: the host's load; see
    :class:`~arbiter.sandbox.execution.Execution`); :attr:`blocked_seconds` is what is left of
    the wall time after CPU and both delays (sleeping, waiting).
    """

    name: str
    outcome: Outcome
    cpu_seconds: float = 0.0
    wall_seconds: float = 0.0
    memory_bytes: int = 0
    exit_code: int | None = None
    signal: int | None = None
    diff: str = ""
    detail: str = ""
    run_delay_seconds: float = 0.0
    server_delay_seconds: float = 0.0

    @property
    def passed(self) -> bool:
        return self.outcome is Outcome.AC

    @property
    def blocked_seconds(self) -> float:
        """Wall time neither on a CPU nor waiting for one: asleep or waiting on something (never < 0)."""
        return max(0.0, self.wall_seconds - self.cpu_seconds - self.run_delay_seconds - self.server_delay_seconds)


@dataclass
class Verdict:
    """The verdict on one submission.

    - ``outcome``: ``AC`` when every case passed; else the first failing case's verdict, or a
      submission-level verdict (``CE``, ``FORMAT_ERROR``, ``INVALID_TASK``, ``SANDBOX_ERROR``).
    - ``score``: in [0, 1]; all-or-nothing mode gives 1.0 only when every case passed; fraction
      mode gives passed / total.
    - ``passed`` / ``total``: cases passed, cases in the suite (``total`` counts skipped cases).
    - ``cases``: one :class:`CaseResult` per case in suite order (skipped cases included).
    - ``reason``: one line a human can act on.
    - ``compile_output``: compiler messages (truncated) for compiled languages.
    - ``toolchain``: the toolchain fingerprint (compiled languages), see :mod:`arbiter.languages.cpp.toolchain`.
    - ``seconds``: wall seconds the judge spent (compile + run).
    - ``cached``: this verdict was not run now but reused from an identical submission's run
      (:mod:`arbiter.judge.step`; every other field is that run's, timings included).
    """

    outcome: Outcome
    score: float
    passed: int = 0
    total: int = 0
    cases: list[CaseResult] = field(default_factory=list)
    reason: str = ""
    compile_output: str = ""
    toolchain: dict[str, Any] | None = None
    seconds: float = 0.0
    cached: bool = False

    @property
    def accepted(self) -> bool:
        return self.outcome is Outcome.AC

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (enums as their string codes)."""
        d = asdict(self)
        d["outcome"] = self.outcome.value
        for c in d["cases"]:
            c["outcome"] = c["outcome"].value if isinstance(c["outcome"], Outcome) else c["outcome"]
        return d
