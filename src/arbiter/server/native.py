"""The native endpoints: ``POST /v1/judge`` (arbiter Tasks -> Verdicts, :mod:`arbiter.judge.codec`)
and ``POST /v1/score`` (verl items -> :func:`arbiter.rewards.codegen.score` results). A batch runs
on the judge pool through the service's step judge (reuse, failures first, longest first:
``docs/step.md``); with ``"stream": true`` its answers come as NDJSON lines as they finish.
See ``docs/serve.md``."""

from __future__ import annotations

import asyncio
import json
from concurrent.futures import Future
from typing import Any, AsyncIterator, Callable

from arbiter.judge.codec import task_from_json, verdict_to_json
from arbiter.judge.step import Settings, StepJudge
from arbiter.judge.task import Task
from arbiter.rewards.codegen import InvalidTask, Prepared, RewardOptions, SandboxFailure, finish, prepare
from arbiter.rewards.wire import from_wire
from arbiter.sandbox.limits import MiB
from arbiter.server.config import ServerConfig
from arbiter.server.metrics import Metrics
from arbiter.server.pool import JudgePool, watch
from arbiter.server.runcode import BadRequest

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


def parse_tasks(body: Any, cfg: ServerConfig) -> list[Task]:
    """The request's tasks; :class:`BadRequest` naming the task and field that is refused."""
    tasks = []
    for i, d in enumerate(_items(body, "tasks", cfg)):
        try:
            task = task_from_json(d)
        except (KeyError, TypeError, ValueError) as exc:
            raise BadRequest(f"tasks[{i}]: {type(exc).__name__}: {exc}") from None
        if len(task.suite) > cfg.max_tests:
            raise BadRequest(f"tasks[{i}].suite: {len(task.suite)} cases; at most {cfg.max_tests}")
        lim = task.limits
        if lim.memory_bytes > cfg.max_memory_mb * MiB or lim.output_bytes > cfg.max_output_bytes:
            raise BadRequest(f"tasks[{i}].limits: memory at most {cfg.max_memory_mb} MiB, output at most "
                             f"{cfg.max_output_bytes} bytes")
        if lim.cpu_seconds > cfg.max_seconds:
            raise BadRequest(f"tasks[{i}].limits.cpu_seconds: at most {cfg.max_seconds:g}")
        tasks.append(task)
    return tasks


def parse_score(body: Any, cfg: ServerConfig) -> tuple[list[tuple], RewardOptions]:
    """The request's ``(data_source, solution_str, ground_truth, extra_info)`` items and options."""
    items = []
    for i, d in enumerate(_items(body, "items", cfg)):
        if not isinstance(d, dict) or "solution_str" not in d or "ground_truth" not in d:
            raise BadRequest(f"items[{i}]: needs data_source, solution_str, ground_truth (extra_info optional)")
        try:  # the client's wire form (arbiter.rewards.wire): bytes travel as {"$bytes": base64}
            item = tuple(from_wire(d.get(k)) for k in ("data_source", "solution_str", "ground_truth", "extra_info"))
        except ValueError as exc:
            raise BadRequest(f"items[{i}]: {exc}") from None
        items.append(item)
    try:
        opts = RewardOptions.from_kwargs(dict(body.get("options") or {}))
    except (TypeError, ValueError) as exc:
        raise BadRequest(f"options: {exc}") from None
    return items, opts


def judge_one(task: Task, metrics: Metrics, judges: StepJudge) -> dict[str, Any]:
    """One task's verdict JSON: reused when an identical task was judged (the suite's case order
    is kept: a ``/v1/judge`` client gets the verdict ``arbiter judge`` gives)."""
    verdict = judges.judge(task, settings=JUDGE_SETTINGS)
    if not verdict.cached:
        metrics.verdict(verdict.outcome.value, sum(1 for c in verdict.cases if c.outcome.value != "SKIPPED"))
    return verdict_to_json(verdict)


def prepare_one(item: tuple, opts: RewardOptions) -> Prepared | dict[str, Any]:
    """The item made ready to judge, or the error answer of a non-code ``data_source``."""
    try:
        return prepare(*item, opts)
    except (TypeError, ValueError) as exc:
        return {"error": str(exc), "type": type(exc).__name__}


def finish_one(prep: Prepared | dict[str, Any], opts: RewardOptions, metrics: Metrics,
               judges: StepJudge) -> dict[str, Any]:
    """One item's result as ``compute_score`` returns it, or ``{"error": message, "type": name,
    "row", "reason"}`` for what it raises (``SandboxFailure``, ``InvalidTask``, ``ValueError``,
    ``TypeError``: the client raises the same)."""
    if isinstance(prep, dict):
        return prep
    try:
        verdict = judges.judge(prep.task, hint=prep.hint, settings=opts.step) if prep.task is not None else None
        result = dict(finish(prep, verdict, opts))
    except SandboxFailure as exc:
        metrics.verdict("SANDBOX_ERROR", 0)
        return {"error": str(exc), "type": "SandboxFailure", "row": exc.row, "reason": exc.reason}
    except InvalidTask as exc:
        return {"error": str(exc), "type": "InvalidTask", "row": exc.row, "reason": exc.reason}
    except (TypeError, ValueError) as exc:
        return {"error": str(exc), "type": type(exc).__name__}
    metrics.verdict(str(result.get("verdict")), 0 if result.get("cached") else int(result.get("total") or 0))
    return result


def score_units(items: list[tuple], opts: RewardOptions, metrics: Metrics,
                judges: StepJudge) -> tuple[list[Callable[[], Any]], list[int]]:
    """A ``/v1/score`` request's units (one per item) and the order to start them in: longest
    predicted first, repeats of a program last (docs/step.md)."""
    preps = [prepare_one(item, opts) for item in items]
    tasks = [None if isinstance(p, dict) else p.task for p in preps]
    hints = [None if isinstance(p, dict) else p.hint for p in preps]
    order = judges.submission_order(tasks, hints, opts.step)
    return [lambda p=p: finish_one(p, opts, metrics, judges) for p in preps], order


class Batch:
    """The futures of one request's units, in order; all admitted up front, started in
    ``order`` (positions of ``calls``; default as given)."""

    def __init__(self, pool: JudgePool, calls: list[Callable[[], Any]], order: list[int] | None = None):
        pool.admit(len(calls))
        futures: dict[int, Future] = {i: pool.submit(calls[i]) for i in (order or range(len(calls)))}
        self.futures: list[Future] = [futures[i] for i in range(len(calls))]

    def cancel(self) -> None:
        for f in self.futures:
            f.cancel()

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
                done, _ = await asyncio.wait(set(pending), timeout=0.2, return_when=asyncio.FIRST_COMPLETED)
                if not done and await disconnected():
                    return
                for d in done:
                    yield (json.dumps({"index": pending.pop(d), key: d.result()}) + "\n").encode()
        finally:
            self.cancel()

