"""The native endpoints: ``POST /v1/judge`` (arbiter Tasks -> Verdicts, :mod:`arbiter.judge.codec`)
and ``POST /v1/score`` (verl items -> :func:`arbiter.rewards.codegen.score` results). A batch runs
on the judge pool through the service's step judge (reuse, failures first, longest first:
``docs/step.md``); with ``"stream": true`` its answers come as NDJSON lines as they finish.
See ``docs/serve.md``."""

from __future__ import annotations

import asyncio
import itertools
import json
from concurrent.futures import Future
from typing import Any, AsyncIterator, Callable

from arbiter.judge.codec import task_from_json, verdict_to_json
from arbiter.judge.step import Settings, StepJudge
from arbiter.judge.task import Task
from arbiter.judge.verdict import Outcome, Verdict
from arbiter.rewards.codegen import (InvalidTask, Prepared, RewardOptions, SandboxFailure, finish, prepare,
                                     row_label, row_time_limit)
from arbiter.rewards.wire import from_wire
from arbiter.sandbox.limits import MiB
from arbiter.server.config import ServerConfig
from arbiter.server.metrics import Metrics
from arbiter.server.admission import FairQueue, Slot, Tenant
from arbiter.server.runcode import BadRequest

_BATCHES = itertools.count()
#: ``/v1/judge``: verdicts reused between identical tasks, cases in the suite's order.
JUDGE_SETTINGS = Settings(reuse=True, case_order="suite")


def _items(body: Any, key: str, cfg: ServerConfig) -> list:
    if not isinstance(body, dict) or not isinstance(body.get(key), list):
        raise BadRequest(f"the body must be a JSON object with a list {key!r}")
    items = body[key]
    if not items:
        raise BadRequest(f"{key!r} is empty")
    if len(items) > cfg.max_items:
        raise BadRequest(f"{key!r} has {len(items)} entries; at most {cfg.max_items} per request")
    return items


#: Task limit fields -> (the config cap they may not pass, unit) (422 naming the field).
def _limit_caps(cfg: ServerConfig) -> dict[str, float]:
    memory = cfg.max_memory_mb * MiB
    return {"cpu_seconds": cfg.max_seconds, "wall_seconds": 2 * cfg.max_seconds + 1, "memory_bytes": memory,
            "processes": cfg.max_processes, "output_bytes": cfg.max_output_bytes, "file_bytes": cfg.max_output_bytes,
            "stderr_bytes": cfg.max_output_bytes, "open_files": cfg.max_open_files, "scratch_bytes": memory,
            "stack_bytes": memory}


def _num(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else f"{value:g}"


def check_task(task: Task, where: str, cfg: ServerConfig) -> None:
    """:class:`BadRequest` naming ``where`` and the field for a task past the service's caps."""
    if len(task.suite) > cfg.max_tests:
        raise BadRequest(f"{where}.suite: {len(task.suite)} cases; at most {cfg.max_tests}")
    for name, cap in _limit_caps(cfg).items():
        value = getattr(task.limits, name)
        if value is not None and value > cap:
            raise BadRequest(f"{where}.limits.{name}: {_num(value)} is over this service's cap of {_num(cap)}")
    if task.compile.timeout_seconds > cfg.max_seconds:
        raise BadRequest(f"{where}.compile.timeout_seconds: {task.compile.timeout_seconds:g} is over this "
                         f"service's cap of {cfg.max_seconds:g}")


def parse_tasks(body: Any, cfg: ServerConfig) -> list[Task]:
    """The request's tasks; :class:`BadRequest` naming the task and field that is refused."""
    tasks = []
    for i, d in enumerate(_items(body, "tasks", cfg)):
        try:
            task = task_from_json(d)
        except (KeyError, TypeError, ValueError) as exc:
            raise BadRequest(f"tasks[{i}]: {type(exc).__name__}: {exc}") from None
        check_task(task, f"tasks[{i}]", cfg)
        tasks.append(task)
    return tasks


def _check_options(opts: RewardOptions, cfg: ServerConfig) -> None:
    if opts.time_limit is not None and float(opts.time_limit) > cfg.max_seconds:
        raise BadRequest(f"options.time_limit: {opts.time_limit:g} is over this service's cap of "
                         f"{cfg.max_seconds:g} CPU seconds per case")
    if opts.memory_limit_mb is not None and float(opts.memory_limit_mb) > cfg.max_memory_mb:
        raise BadRequest(f"options.memory_limit_mb: {opts.memory_limit_mb:g} is over this service's cap of "
                         f"{cfg.max_memory_mb} MiB")


def parse_score(body: Any, cfg: ServerConfig) -> tuple[list[tuple], RewardOptions]:
    """The request's ``(data_source, solution_str, ground_truth, extra_info)`` items and options;
    :class:`BadRequest` naming the item and field past the service's caps."""
    items = []
    try:
        opts = RewardOptions.from_kwargs(dict(body.get("options") or {}) if isinstance(body, dict) else {})
    except (TypeError, ValueError) as exc:
        raise BadRequest(f"options: {exc}") from None
    _check_options(opts, cfg)
    for i, d in enumerate(_items(body, "items", cfg)):
        if not isinstance(d, dict) or "solution_str" not in d or "ground_truth" not in d:
            raise BadRequest(f"items[{i}]: needs data_source, solution_str, ground_truth (extra_info optional)")
        try:  # the client's wire form (arbiter.rewards.wire): bytes travel as {"$bytes": base64}
            item = tuple(from_wire(d.get(k)) for k in ("data_source", "solution_str", "ground_truth", "extra_info"))
        except ValueError as exc:
            raise BadRequest(f"items[{i}]: {exc}") from None
        if opts.time_limit is None:
            try:
                row_limit = row_time_limit(item[3])
            except ValueError as exc:
                raise BadRequest(f"items[{i}].{exc}") from None
            if row_limit is not None and row_limit > cfg.max_seconds:
                raise BadRequest(f"items[{i}].extra_info.time_limit: {row_limit:g} is over this service's cap of "
                                 f"{cfg.max_seconds:g} CPU seconds per case")
        items.append(item)
    return items, opts


def judge_one(task: Task, metrics: Metrics, tenant: str, judges: StepJudge) -> dict[str, Any]:
    """One task's verdict JSON: reused when an identical task was judged (the suite's case order
    is kept: a ``/v1/judge`` client gets the verdict ``arbiter judge`` gives)."""
    verdict = judges.judge(task, settings=JUDGE_SETTINGS)
    if not verdict.cached:
        metrics.verdict(tenant, verdict.outcome.value, cases_run(verdict))
    return verdict_to_json(verdict)


def prepare_one(item: tuple, opts: RewardOptions) -> Prepared | dict[str, Any]:
    """The item made ready to judge, or the error answer of a non-code ``data_source``."""
    try:
        return prepare(*item, opts)
    except (TypeError, ValueError) as exc:
        return _error_item(exc, row_label(item[0], item[3]))


def _error_item(exc: Exception, row: str) -> dict[str, Any]:
    """What an item answers for an exception ``compute_score`` would raise: its message, its type's
    name, the row and the reason (the exception's own, as the client raises them again; a plain
    ``TypeError``/``ValueError`` has none: ``row`` and its message)."""
    return {"error": str(exc), "type": type(exc).__name__, "row": getattr(exc, "row", row),
            "reason": getattr(exc, "reason", str(exc))}


def finish_one(prep: Prepared | dict[str, Any], opts: RewardOptions, metrics: Metrics, tenant: str,
               judges: StepJudge) -> dict[str, Any]:
    """One item's result as ``compute_score`` returns it, or ``{"error": message, "type": name,
    "row", "reason"}`` for what it raises (``SandboxFailure``, ``InvalidTask``, ``ValueError``,
    ``TypeError``: the client raises the same)."""
    if isinstance(prep, dict):
        return prep
    verdict = None
    try:
        verdict = judges.judge(prep.task, hint=prep.hint, settings=opts.step) if prep.task is not None else None
        result = dict(finish(prep, verdict, opts))
    except SandboxFailure as exc:
        metrics.verdict(tenant, "SANDBOX_ERROR", cases_run(verdict))
        return _error_item(exc, prep.label)
    except (InvalidTask, TypeError, ValueError) as exc:
        return _error_item(exc, prep.label)
    metrics.verdict(tenant, str(result.get("verdict")), cases_run(verdict))
    return result


def cases_run(verdict: Verdict | None) -> int:
    """The cases a fresh verdict ran (not the ``SKIPPED`` ones); 0 for a reused verdict or none."""
    if verdict is None or verdict.cached:
        return 0
    return sum(1 for c in verdict.cases if c.outcome is not Outcome.SKIPPED)


def score_units(items: list[tuple], opts: RewardOptions, metrics: Metrics, tenant: str, judges: StepJudge,
                max_tests: int) -> tuple[list[Callable[[Slot], Any]], list[int]]:
    """A ``/v1/score`` request's units (one per item) and the order to start them in: longest
    predicted first, repeats of a program last (docs/step.md). :class:`BadRequest` naming the item
    whose suite has more than ``max_tests`` cases (as ``/v1/judge``'s tasks)."""
    preps = [prepare_one(item, opts) for item in items]
    for i, p in enumerate(preps):
        if not isinstance(p, dict) and p.task is not None and len(p.task.suite) > max_tests:
            raise BadRequest(f"items[{i}].ground_truth: {len(p.task.suite)} cases; at most {max_tests}")
    tasks = [None if isinstance(p, dict) else p.task for p in preps]
    hints = [None if isinstance(p, dict) else p.hint for p in preps]
    order = judges.submission_order(tasks, hints, opts.step)
    return [lambda slot, p=p: finish_one(p, opts, metrics, tenant, judges) for p in preps], order


class Batch:
    """The futures of one request's units, in order; all admitted up front, as one flow of the
    tenant (:class:`~arbiter.server.admission.FairQueue`), started in ``order`` (positions of
    ``calls``; default as given)."""

    def __init__(self, queue: FairQueue, tenant: Tenant, calls: list[Callable[[Slot], Any]], metrics: Metrics,
                 order: list[int] | None = None):
        self.queue, self.metrics = queue, metrics
        order = list(order) if order is not None else list(range(len(calls)))
        started = queue.submit(tenant, f"batch-{next(_BATCHES)}", [calls[i] for i in order])
        futures = dict(zip(order, started, strict=True))
        self.futures: list[Future] = [futures[i] for i in range(len(calls))]

    def cancel(self) -> None:
        """Take the units still waiting off the queue (a client that left)."""
        for f in self.futures:
            if not f.done() and self.queue.cancel(f):
                self.metrics.add("arbiter_cancelled_total")

    async def results(self, disconnected: Callable[[], Any]) -> list[Any]:
        try:
            return [await watch(f, disconnected) for f in self.futures]
        finally:
            self.cancel()

    async def lines(self, key: str, disconnected: Callable[[], Any]) -> AsyncIterator[bytes]:
        """NDJSON ``{"index": i, key: ...}`` lines in the order the units finish."""
        pending = {asyncio.wrap_future(f): i for i, f in enumerate(self.futures)}
        try:
            while pending:
                done, _ = await asyncio.wait(set(pending), timeout=1.0, return_when=asyncio.FIRST_COMPLETED)
                if not done and await disconnected():
                    return
                for d in done:
                    yield (json.dumps({"index": pending.pop(d), key: d.result()}) + "\n").encode()
        finally:
            self.cancel()


async def watch(fut: Future, disconnected: Callable[[], Any] | None, poll: float = 1.0) -> Any:
    """Await ``fut``; ``asyncio.CancelledError`` once ``await disconnected()`` says the client left
    (asked every ``poll`` seconds)."""
    afut = asyncio.wrap_future(fut)
    while True:
        done, _ = await asyncio.wait({afut}, timeout=poll)
        if done:
            return afut.result()
        if disconnected is not None and await disconnected():
            raise asyncio.CancelledError("client disconnected")
