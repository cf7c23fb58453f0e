"""Per-row time limits measured from a row's reference solution (``arbiter convert``).

:func:`measure_references` judges the first reference solution of every converted row that has
one, exactly as the reward judges a response, and records ``extra_info.time_limit`` (twice its
slowest case, within the route's default and :data:`DEFAULT_CEILING`) and
``extra_info.reference_cpu_seconds``. A reference that fails its own row is reported, never
passed over. Rules and cost: ``docs/codegen.md`` ("Reference time limits").
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from arbiter.judge.judge import default_workers, judge
from arbiter.judge.task import Task
from arbiter.judge.verdict import Outcome, Verdict
from arbiter.pipelines.executor import ordered_map
from arbiter.rewards.codegen import RewardOptions, prepare
from arbiter.rewards.routes import route
from arbiter.sandbox.limits import MAX_SECONDS

#: The per-row limit is this multiple of the reference's slowest case (Polygon: a time limit at
#: least twice the model solutions' slowest time).
DEFAULT_FACTOR = 2.0
#: The largest per-row limit written, and the limit the reference is measured under (CPU s per
#: case): a reference slower than this fails its row (TLE).
DEFAULT_CEILING = 30.0
#: Prefix of the note and the report entry for a reference that fails its own row.
REFERENCE_FAILS = "reference solution fails its own row"
ON_FAILURE = ("keep", "drop")


def time_limit_for(slowest_cpu: float, floor: float, *, factor: float = DEFAULT_FACTOR,
                   ceiling: float = DEFAULT_CEILING) -> float:
    """The per-row CPU limit per case (seconds): ``factor * slowest_cpu`` rounded up to 0.1 s,
    at most ``ceiling`` and never below ``floor`` (the route's default)."""
    wanted = math.ceil(factor * max(0.0, slowest_cpu) * 10 - 1e-9) / 10
    return max(float(floor), min(float(ceiling), wanted))


@dataclass(frozen=True)
class ReferenceCheck:
    """What measuring one row's reference gave.

    ``outcome``: the reference's verdict (``AC`` when it passed every case); ``slowest_cpu`` /
    ``slowest_case``: its slowest case (AC only); ``time_limit``: the limit written (AC only);
    ``floor``: the route's default; ``reason``: the judge's one-line reason."""

    outcome: str
    reason: str
    floor: float
    slowest_cpu: float | None = None
    slowest_case: str | None = None
    time_limit: float | None = None


def _check(verdict: Verdict, floor: float, factor: float, ceiling: float) -> ReferenceCheck:
    if verdict.outcome is not Outcome.AC:
        return ReferenceCheck(verdict.outcome.value, verdict.reason, floor)
    slowest = max(verdict.cases, key=lambda c: c.cpu_seconds)
    return ReferenceCheck("AC", verdict.reason, floor, slowest.cpu_seconds, slowest.name,
                          time_limit_for(slowest.cpu_seconds, floor, factor=factor, ceiling=ceiling))


def _apply(item: Any, check: ReferenceCheck, *, factor: float, ceiling: float, on_failure: str) -> Any:
    """``item`` (a Converted) with the measurement recorded in its row."""
    extra = item.row["extra_info"]
    if check.outcome == "AC":
        extra["time_limit"] = check.time_limit
        extra["reference_cpu_seconds"] = round(check.slowest_cpu, 6)
        item.limit_raised = check.time_limit > check.floor
        return item
    if check.outcome == Outcome.SANDBOX_ERROR.value:
        item.reference_unmeasured = f"reference solution not measured (SANDBOX_ERROR): {check.reason}"
        extra["notes"] = [*extra.get("notes", []), item.reference_unmeasured]
        return item
    why = f"{REFERENCE_FAILS}: {check.outcome}: {check.reason}"
    if on_failure == "drop":
        return type(item)(item.label, error=why)
    extra["notes"] = [*extra.get("notes", []), why]
    item.reference_failure = why
    return item


def measure_references(items: Iterable[Any], *, factor: float = DEFAULT_FACTOR, ceiling: float = DEFAULT_CEILING,
                       on_failure: str = "keep", workers: int | None = None,
                       on_measure: Callable[[Any, ReferenceCheck], None] | None = None) -> Iterator[Any]:
    """Measure the first reference solution of every converted row that has one (module
    docstring) and yield the items in input order, rows updated.

    ``items``: :class:`arbiter.datasets.convert.Converted` (rows without a reference, bad and
    skipped items pass through). ``factor`` / ``ceiling``: :func:`time_limit_for` (``ceiling`` is
    also the limit the reference runs under; a route default above it wins). ``on_failure``:
    ``"keep"`` or ``"drop"`` a row whose reference fails it. ``workers``: rows judged at once
    (default one per core); at most ``2 * workers`` items are in flight, so memory stays bounded.
    ``on_measure(item, check)`` is called for every measured row (progress). Raises
    ``ValueError`` for a bad option.
    """
    if not (isinstance(factor, (int, float)) and 1.0 <= factor <= 100.0):
        raise ValueError(f"factor must be a number from 1 to 100, got {factor!r}")
    if not (isinstance(ceiling, (int, float)) and 0 < ceiling <= MAX_SECONDS):
        raise ValueError(f"ceiling must be CPU seconds per case in (0, {MAX_SECONDS}], got {ceiling!r}")
    if on_failure not in ON_FAILURE:
        raise ValueError(f"on_failure must be one of {ON_FAILURE}, got {on_failure!r}")
    n = int(workers or default_workers())
    if n < 1:
        raise ValueError(f"workers must be >= 1, got {workers!r}")
    jobs = (_job(item, ceiling) for item in items)
    done = ordered_map(lambda job: judge(job.task), jobs, workers=n, name="arbiter-reference",
                       submit_if=lambda job: job.task is not None)
    with contextlib.closing(done):
        for job, verdict in done:
            if verdict is None:
                yield job.item
                continue
            check = _check(verdict, job.floor, factor, ceiling)
            if on_measure is not None:
                on_measure(job.item, check)
            yield _apply(job.item, check, factor=factor, ceiling=ceiling, on_failure=on_failure)


@dataclass
class _Job:
    item: Any
    task: Task | None = None
    floor: float = 0.0


def _job(item: Any, ceiling: float) -> _Job:
    """What to judge for ``item``: its first reference under the ceiling, or nothing (the item
    passes through, possibly turned into a bad row naming why it cannot be measured)."""
    row = getattr(item, "row", None)
    refs = (row or {}).get("extra_info", {}).get("reference_solutions") or []
    if row is None or not refs:
        return _Job(item)
    try:
        r = route(row["data_source"])
    except ValueError as exc:  # e.g. --data-source gsm8k: no route judges this row
        return _Job(type(item)(item.label, error=f"measuring the reference: {exc}"))
    floor = r.limits.cpu_seconds
    opts = RewardOptions(time_limit=max(float(ceiling), floor))
    prep = prepare(row["data_source"], None, row["reward_model"]["ground_truth"], row["extra_info"], opts,
                   route_=r, code=refs[0])
    if prep.task is None:  # the suite does not read back (convert-or-fail refused that already)
        return _Job(type(item)(item.label, error=f"measuring the reference: {prep.result['reason']}"))
    return _Job(item, prep.task, floor)


__all__ = ["DEFAULT_CEILING", "DEFAULT_FACTOR", "ON_FAILURE", "REFERENCE_FAILS", "ReferenceCheck",
           "measure_references", "time_limit_for"]
