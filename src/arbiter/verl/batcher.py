"""Coalesce concurrent per-response reward calls into batches judged together.

verl 0.9's ``RewardLoopWorker.compute_score_batch`` starts one ``run_single`` task per response
of its chunk at once; :class:`RewardBatcher` gathers the items that arrive within ``window``
seconds (or ``max_batch`` of them), prepares them (route, suite, extraction: the same steps as
``compute_score``), judges the programs in one call to :class:`~arbiter.verl.judges.Judges` and
answers each caller with its own result or its own error. See ``docs/verl.md``.
"""

from __future__ import annotations

import asyncio
from typing import Any

from arbiter.rewards.codegen import RewardOptions, RewardResult, finish, prepare
from arbiter.verl.judges import Judges

Item = tuple[Any, Any, Any, Any]  # data_source, solution_str, ground_truth, extra_info


class RewardBatcher:
    """One per event loop (verl's reward-loop worker runs one loop per actor)."""

    def __init__(self, judges: Judges, opts: RewardOptions, *, window: float = 0.02, max_batch: int = 256):
        self.judges = judges
        self.opts = opts
        self.window = window
        self.max_batch = max_batch
        self._pending: list[tuple[Item, asyncio.Future]] = []
        self._timer: asyncio.TimerHandle | None = None
        self.batches: list[int] = []  # sizes of the batches judged (for tests and logs)

    async def score(self, item: Item) -> RewardResult:
        """The :class:`RewardResult` of one response, judged with whatever else arrives meanwhile.
        Raises what ``compute_score`` raises for that response."""
        loop = asyncio.get_running_loop()
        fut = loop.create_future()
        self._pending.append((item, fut))
        if len(self._pending) >= self.max_batch:
            self._flush()
        elif self._timer is None:
            self._timer = loop.call_later(self.window, self._flush)
        return await fut

    def _flush(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        batch, self._pending = self._pending, []
        if batch:
            asyncio.get_running_loop().create_task(self._run(batch))

    async def _run(self, batch: list[tuple[Item, asyncio.Future]]) -> None:
        self.batches.append(len(batch))
        loop = asyncio.get_running_loop()
        try:
            preps = await loop.run_in_executor(None, self._prepare_all, [item for item, _ in batch])
            todo = [p for p in preps if not isinstance(p, BaseException) and p.task is not None]
            verdicts = (await self.judges.judge([p.task for p in todo], [p.hint for p in todo], self.opts.step)
                        if todo else [])
        except BaseException as exc:  # the judging call itself failed: every caller hears it
            for _, fut in batch:
                if not fut.done():
                    fut.set_exception(exc)
            if not isinstance(exc, Exception):
                raise
            return
        by_prep = {id(p): v for p, v in zip(todo, verdicts, strict=True)}
        for (_, fut), prep in zip(batch, preps):
            if fut.done():
                continue
            try:
                if isinstance(prep, BaseException):
                    raise prep
                fut.set_result(finish(prep, by_prep.get(id(prep)), self.opts))
            except Exception as exc:  # this response's own InvalidTask / SandboxFailure / ValueError
                fut.set_exception(exc)

    def _prepare_all(self, items: list[Item]) -> list:
        out: list = []
        for data_source, solution_str, ground_truth, extra_info in items:
            try:
                out.append(prepare(data_source, solution_str, ground_truth, extra_info, self.opts))
            except Exception as exc:  # a non-code data_source: that caller's error
                out.append(exc)
        return out


__all__ = ["Item", "RewardBatcher"]
