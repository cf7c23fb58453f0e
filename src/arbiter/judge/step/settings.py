"""What a step judge does per submission (:class:`Settings`): reuse, case order, schedule;
:data:`ON` (all three) and :data:`OFF` (none: ``judge()`` on each task). See docs/step.md."""

from __future__ import annotations

from dataclasses import dataclass

from arbiter.judge.step.key import CASE_ORDERS

#: ``schedule`` values: start the longest predicted submission first, or in submission order.
SCHEDULES = ("longest_first", "fifo")


@dataclass(frozen=True)
class Settings:
    """Per submission: ``reuse`` verdicts of identical submissions; ``case_order``
    (``failures_first`` or ``suite``); ``schedule`` (``longest_first`` or ``fifo``)."""

    reuse: bool = True
    case_order: str = "failures_first"
    schedule: str = "longest_first"

    def __post_init__(self) -> None:
        if self.case_order not in CASE_ORDERS:
            raise ValueError(f"case_order must be one of {CASE_ORDERS}, got {self.case_order!r}")
        if self.schedule not in SCHEDULES:
            raise ValueError(f"schedule must be one of {SCHEDULES}, got {self.schedule!r}")


#: Reuse, failures first, longest first.
ON = Settings()
#: The suite's order, no reuse, submission order: ``judge()`` on each task.
OFF = Settings(reuse=False, case_order="suite", schedule="fifo")
