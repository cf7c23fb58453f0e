"""The judge of an RL step's batch: ``judge()`` plus reuse, failures first and no tail.

:class:`StepJudge` takes tasks (:meth:`~StepJudge.submit`) and runs the ones it cannot answer at
most ``workers`` at once, longest predicted first. An identical earlier submission's verdict is
reused (:mod:`.store`), a copy of one being judged waits for it, and an all-or-nothing task runs
the cases that failed its suite's earlier submissions first (:mod:`.order`). Verdicts keep the
suite's case order. Each judge it runs in this process holds one of ``slots`` (the process's
:func:`~arbiter.sandbox.slots.judge_slots` for :func:`default_step_judge`, the process's one:
one bound on running judges per process, whatever door they came through). See ``docs/step.md``.
"""

from __future__ import annotations

import heapq
import itertools
import os
import threading
import weakref
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, Callable

from arbiter.judge.judge import default_workers, judge
from arbiter.judge.step.costs import CostModel
from arbiter.judge.step.intake import CLOSED, Intake, outcome
from arbiter.judge.step.jobs import Job, SuiteJobs
from arbiter.judge.step.key import effective_order, suite_digest, verdict_key
from arbiter.judge.step.order import CaseOrder, permute, restore
from arbiter.judge.step.settings import OFF, ON, Settings
from arbiter.judge.step.store import VerdictStore, decode, encode, reusable
from arbiter.judge.task import Task
from arbiter.judge.verdict import Outcome, Verdict
from arbiter.sandbox.config import SandboxConfig
from arbiter.sandbox.slots import JudgeSlots, judge_slots

class StepJudge:
    """Judges tasks ``workers`` at once on ``executor`` (anything with ``submit(fn, arg) ->
    Future``: default a thread pool of this process; a Ray backend sends them to node pools),
    sharing ``store``, ``order`` and ``costs`` (default: new ones) with whoever holds them.
    ``config``: the sandbox configuration tasks are judged and keyed with. ``inline``:
    :meth:`judge` runs in the calling thread (:meth:`judge_here`; the caller bounds its threads,
    e.g. a server's workers). ``slots``: a bound shared with other judges of this process
    (:func:`~arbiter.sandbox.slots.judge_slots`), held by each job while it runs in this
    process (its own threads or :meth:`judge_here`; a given executor bounds its own). Thread-safe."""

    def __init__(self, workers: int | None = None, *, executor: Any = None, store: VerdictStore | None = None,
                 order: CaseOrder | None = None, costs: CostModel | None = None,
                 config: SandboxConfig | None = None, inline: bool = False, slots: JudgeSlots | None = None):
        self.workers = int(workers or getattr(executor, "workers", 0) or default_workers())
        self._owned = executor is None
        self.executor = executor or ThreadPoolExecutor(self.workers, thread_name_prefix="arbiter-step")
        self.store = store if store is not None else VerdictStore()
        self.order = order if order is not None else CaseOrder()
        self.costs = costs if costs is not None else CostModel()
        self.config = config
        self.inline = inline
        self.slots = slots if self._owned or inline else None
        self._lock = threading.Lock()
        self._pumping = threading.local()  # (this thread is in _pump: see there)
        self._heap: list[tuple[float, int, Job | SuiteJobs]] = []
        self._suites: dict[str, SuiteJobs] = {}  # the queued longest-first jobs by suite digest
        self._queued = 0
        self._seq = itertools.count()
        self._counts = dict.fromkeys(("submitted", "hits", "joined", "runs", "done", "running", "max_running"), 0)
        self.intake = Intake()  # the main thread's calls, and its waits for their futures (docs/step.md)
        weakref.finalize(self, self.intake.close)  # (its thread ends with this judge, closed or not)
        self._closed = False

    # ------------------------------------------------------------------ planning

    def _plan(self, task: Task, settings: Settings, hint: float | None, out: Future) -> Job:
        job = Job(task, out, settings, hint=hint)
        try:
            job.digest = suite_digest(task.suite)
        except RecursionError:
            job.digest = None
        if settings.schedule == "longest_first":
            job.cost = self.costs.predict(job.digest, task, hint)
        return job

    def predict(self, task: Task, hint: float | None = None) -> float:
        """Predicted judge seconds of ``task`` (for callers that order their own submissions)."""
        try:
            digest: str | None = suite_digest(task.suite)
        except RecursionError:
            digest = None
        return self.costs.predict(digest, task, hint)

    def submission_order(self, tasks: list[Task | None], hints: list[float | None],
                         settings: Settings = ON) -> list[int]:
        """For a caller that starts its own submissions in order (a server's request): the
        positions of ``tasks`` longest predicted first, every repeat of an earlier program after
        the first copies (by then it is most likely a reused verdict); ``None`` tasks last."""
        seen: set[str] = set()
        ranked = []
        for i, (task, hint) in enumerate(zip(tasks, hints, strict=True)):
            if task is None:
                ranked.append((2, 0.0, i))
                continue
            key = self.key(task, settings)
            repeat = key is not None and key in seen
            seen.add(key) if key is not None else None
            cost = self.predict(task, hint) if settings.schedule == "longest_first" else 0.0
            ranked.append((int(repeat), -cost, i))
        return [i for *_, i in sorted(ranked)]

    def key(self, task: Task, settings: Settings = ON) -> str | None:
        """``task``'s verdict key under ``settings`` (``None``: never reused)."""
        return verdict_key(task, self.config, settings.case_order) if settings.reuse else None

    def _count(self, name: str, n: int = 1) -> None:
        with self._lock:
            self._counts[name] += n

    # ------------------------------------------------------------------ submitting

    def submit(self, task: Task, *, hint: float | None = None, settings: Settings = ON) -> Future:
        """A future of ``task``'s verdict: reused, joined to an identical one being judged, or
        queued. ``hint``: the row's reference CPU seconds per case (a better first prediction).
        From the main thread, taken in by the judge's intake thread (:mod:`.intake`)."""
        if _on_main_thread():
            return self.intake.run(lambda: self.submit(task, hint=hint, settings=settings))
        return self._submit(task, hint, settings, here=False)

    def submit_many(self, tasks: list[Task], hints: list[float | None] | None = None,
                    settings: Settings = ON) -> list[Future]:
        """:meth:`submit` of each task (``hints``: each one's, or ``None``), in one hand-over to
        the intake thread when called from the main thread."""
        if _on_main_thread():
            return self.intake.run(lambda: self.submit_many(tasks, hints, settings))
        hints = hints if hints is not None else [None] * len(tasks)
        return [self._submit(t, h, settings, here=False) for t, h in zip(tasks, hints, strict=True)]

    def _submit(self, task: Task, hint: float | None, settings: Settings, here: bool) -> Future:
        """:meth:`submit` in this thread; ``here``: judged in this thread when it would start at
        once."""
        self._check_open()
        out: Future = Future()
        self._count("submitted")
        self._enter(self.key(task, settings), task, hint, settings, out, here)
        return out

    def _enter(self, key: str | None, task: Task, hint: float | None, settings: Settings, out: Future,
               here: bool = False) -> None:
        """``task`` for ``out`` (``key``: its verdict key, None when never reused): a stored verdict,
        a wait for an identical task being judged (in no slot), or a job that owns ``key``, judged
        in this thread (``here``, when it would start at once) or queued."""
        if key is not None:
            hit = self._lookup(key)
            if isinstance(hit, Verdict):
                if out.set_running_or_notify_cancel():
                    out.set_result(hit)
                return
            if hit is not None:
                hit.add_done_callback(lambda f: self._joined(f, key, task, hint, settings, out))
                return
        job = self._plan(task, settings, hint, out)
        job.key = key  # (a cancelled job settles it unjudged: see _pump_loop)
        if here and self._take_slot():
            self._run_here(job)
        else:
            self._push(job)

    def _take_slot(self) -> bool:
        """A worker's place for a job about to run in the caller's thread, when one is free and
        no job is queued (it would start at once on a worker)."""
        with self._lock:
            if self._queued or self._counts["running"] >= self.workers:
                return False
            self._counts["running"] += 1
            self._counts["max_running"] = max(self._counts["max_running"], self._counts["running"])
            return True

    def _run_here(self, job: Job) -> None:
        """Run ``job`` (its worker's place taken: :meth:`_take_slot`) in this thread, as a worker
        would (its exception in ``job.out``). An interrupt (``KeyboardInterrupt``) is re-raised
        and its copies judge themselves, as a cancelled job's: a worker never sees one."""
        job.out.set_running_or_notify_cancel()
        try:
            fn, arg = _judge_with(self.config), self._ordered(job)
            verdict = _held(self.slots, fn, arg)
        except Exception as exc:
            self._finished(job, None, exc)
        except BaseException as exc:
            key, job.key = job.key, None
            if key is not None:
                self.store.settle(key)
            self._finished(job, None, exc)
            raise
        else:
            self._finished(job, verdict, None)

    def _lookup(self, key: str) -> Verdict | Future | None:
        """A stored verdict (marked cached), the future of an identical task being judged, or
        ``None``: the caller now owns ``key`` and must judge it (and settle it)."""
        hit = self.store.get(key)
        if hit is None:
            running = self.store.claim(key)
            if running is not None:
                return running
            hit = self.store.get(key)  # stored between the first look and the claim
            if hit is None:
                return None
            self.store.settle(key, hit)
        self._count("hits")
        return hit

    def _joined(self, running: Future, key: str, task: Task, hint: float | None, settings: Settings,
                out: Future) -> None:
        """The original of a copy ended: its verdict (as a reused one); none (it was cancelled before
        it ran): the copy is submitted again (:meth:`_again`); one that depends on the host (our
        failure, SANDBOX_ERROR): the copy is judged on its own (its retry, beside the others')."""
        error = running.exception()
        verdict = running.result() if error is None else None
        if error is None and verdict is None:
            self._again(key, task, hint, settings, out)
            return
        if error is None and not reusable(verdict):
            self._push(self._plan(task, settings, hint, out))
            return
        if not out.set_running_or_notify_cancel():
            return  # (its waiter cancelled it meanwhile: a batch's early stop)
        if error is not None:
            out.set_exception(error)
        else:
            self._count("joined")
            out.set_result(decode(encode(verdict)))

    def _again(self, key: str, task: Task, hint: float | None, settings: Settings, out: Future) -> None:
        """A copy whose original never ran, as a new submission of ``key``: the first such copy
        claims it and is judged (its verdict stored for the next), the others join it. A closed
        judge claims nothing (a judge sharing its store would join that claim and get its error)."""
        if self._closed:
            if out.set_running_or_notify_cancel():
                out.set_exception(RuntimeError(CLOSED))
            return
        self._enter(key, task, hint, settings, out)

    def judge(self, task: Task, *, hint: float | None = None, settings: Settings = ON) -> Verdict:
        """:meth:`submit` and wait (:meth:`judge_here` for an ``inline`` judge). With this
        judge's own threads, a task that would start at once (a worker free, nothing queued) is
        judged in the calling thread, in that worker's place (the same slot, order and settling,
        no thread hand-off); from the main thread, an intake thread (:mod:`.intake`) does so in
        its place: an interrupt lands in the wait (docs/step.md)."""
        if self.inline:
            return self.judge_here(task, hint=hint, settings=settings)
        if _on_main_thread():
            return self.intake.run(lambda: self._submit(task, hint, settings, here=self._owned), until_done=True)
        return self._submit(task, hint, settings, here=self._owned).result()

    def _check_open(self) -> None:
        if self._closed:
            raise RuntimeError(CLOSED)

    def call(self, fn: Callable[[Any], Any], arg: Any, priority: float = 0.0) -> Future:
        """``fn(arg)`` on the executor in one of the ``workers`` slots (work that is not a task,
        e.g. a batch job's item function), started after queued tasks predicted longer."""
        if _on_main_thread():
            return self.intake.run(lambda: self.call(fn, arg, priority))
        self._check_open()
        out: Future = Future()
        self._push(Job(None, out, OFF, cost=priority, call=(fn, arg)))
        return out

    def _push(self, job: Job) -> None:
        with self._lock:
            self._queued += 1
            if job.task is None or not job.digest or job.settings.schedule != "longest_first":
                heapq.heappush(self._heap, (-job.cost, next(self._seq), job))
            else:
                suite = self._suites.get(job.digest)
                if suite is None:
                    suite = self._suites[job.digest] = SuiteJobs(job.digest, job.cost, -1)
                    self._place(suite)
                elif job.cost > suite.cost:
                    suite.cost = job.cost
                    self._place(suite)
                suite.jobs.append(job)
        self._pump()

    def _place(self, suite: SuiteJobs) -> None:
        """(Re)place ``suite`` in the queue at its cost (under ``self._lock``)."""
        suite.entry = next(self._seq)
        heapq.heappush(self._heap, (-suite.cost, suite.entry, suite))

    def _rerank(self, digest: str) -> None:
        """A submission of the suite ``digest`` was judged: its queued ones take the place the
        suite's prediction now gives them (what the run has seen of it, docs/step.md)."""
        with self._lock:
            suite = self._suites.get(digest)
            if suite is not None:
                suite.cost = self.costs.predict(digest, suite.jobs[0].task, suite.jobs[0].hint)
                self._place(suite)

    def _pop(self) -> Job | None:
        """The queued job predicted longest, ``None`` if none (under ``self._lock``)."""
        while self._heap:
            cost, entry, item = heapq.heappop(self._heap)
            if isinstance(item, Job):
                self._queued -= 1
                return item
            if entry != item.entry:
                continue  # a stale place of a suite moved since
            job = item.jobs.popleft()
            if item.jobs:
                heapq.heappush(self._heap, (cost, entry, item))  # the rest keep the suite's place
            else:
                del self._suites[item.digest]
            self._queued -= 1
            return job
        return None

    def _pump(self) -> None:
        """Start queued jobs while slots are free. Not re-entered in one thread: a cancelled job's
        settling runs its copies' callbacks, which push and pump again; the loop on the stack
        takes what they queued (recursing once per cancelled original lost copies at the
        recursion limit: red team 51)."""
        if getattr(self._pumping, "on", False):
            return
        self._pumping.on = True
        try:
            self._pump_loop()
        finally:
            self._pumping.on = False

    def _pump_loop(self) -> None:
        while True:
            with self._lock:  # a slot is taken with the job, so never more than `workers` start
                if self._counts["running"] >= self.workers:
                    return
                job = self._pop()
                if job is None:
                    return
                self._counts["running"] += 1
                self._counts["max_running"] = max(self._counts["max_running"], self._counts["running"])
            if not job.out.set_running_or_notify_cancel():
                with self._lock:
                    self._counts["running"] -= 1
                if job.key is not None:
                    self.store.settle(job.key)  # its copies judge themselves
                continue
            if self._closed:  # (never submit here: close() may be cancelling the executor's work,
                # its lock held, and calling this job's neighbours' callbacks in this thread)
                self._finished(job, None, RuntimeError(CLOSED))
                continue
            try:
                fut = self._start(job)
            except BaseException as exc:  # the executor refused it (shut down, cluster gone)
                self._finished(job, None, exc)
                continue
            # (outside the try: a callback run at once, the job already done, that raises must
            # not finish the job a second time)
            fut.add_done_callback(lambda f, job=job: self._settle(job, f))

    def _start(self, job: Job) -> Future:
        fn, arg = job.call if job.call is not None else (_judge_with(self.config), self._ordered(job))
        return self.executor.submit(fn, arg) if self.slots is None else self.executor.submit(_held, self.slots, fn, arg)

    def _ordered(self, job: Job) -> Task:
        """The task to run: its cases in the order to run them (``job.order``: the positions)."""
        assert job.task is not None
        self._count("runs")
        if effective_order(job.task, job.settings.case_order) == "failures_first" and job.digest:
            job.order = self.order.order(job.digest, job.task.suite)
        return permute(job.task, job.order) if job.order else job.task

    def _settle(self, job: Job, fut: Future) -> None:
        self._finished(job, *outcome(fut))

    def _finished(self, job: Job, result: Any, error: BaseException | None) -> None:
        try:
            if error is None and job.call is None:
                result = self._learn(job, result)
        except BaseException as exc:  # a bug of ours: this job's error, never a hang
            error = exc
        finally:
            with self._lock:
                self._counts["running"] -= not job.inline
                self._counts["done"] += 1
            if job.key is not None:
                self.store.settle(job.key, None if error is not None else result, error)
            if error is not None:
                job.out.set_exception(error)
            else:
                job.out.set_result(result)
            self._pump()

    def _learn(self, job: Job, verdict: Verdict) -> Verdict:
        assert job.task is not None
        verdict = restore(verdict, job.order) if job.order else verdict
        if job.digest is not None:
            self.costs.observe(job.digest, verdict.seconds, verdict.outcome is Outcome.TLE)
            self._rerank(job.digest)
            if effective_order(job.task, job.settings.case_order) == "failures_first":
                self.order.learn(job.digest, job.task.suite, verdict)
        return verdict

    # ------------------------------------------------------------------ in the caller's thread

    def judge_here(self, task: Task, *, hint: float | None = None, settings: Settings = ON) -> Verdict:
        """:meth:`judge` run in the calling thread (the caller holds its own slot, e.g. a
        server's worker): reused or joined when it can be, else judged here."""
        self._count("submitted")
        key = self.key(task, settings)
        while key is not None:
            hit = self._lookup(key)
            if isinstance(hit, Verdict):
                return hit
            if hit is None:  # claimed: judged here
                break
            verdict = hit.result()
            if verdict is not None and reusable(verdict):
                self._count("joined")
                return decode(encode(verdict))
            if verdict is not None:  # our failure: judged here, on its own (its retry)
                key = None
            # (None: the original was cancelled before it ran: looked up again)
        out: Future = Future()
        out.set_running_or_notify_cancel()
        job = self._plan(task, settings, hint, out)
        job.key, job.inline = key, True
        try:
            self._start_here(job)
        except BaseException as exc:
            self._finished(job, None, exc)
        return out.result()

    def _start_here(self, job: Job) -> None:
        verdict = _held(self.slots, _judge_with(self.config), self._ordered(job))
        self._finished(job, verdict, None)

    # ------------------------------------------------------------------ state

    def stats(self) -> dict[str, int]:
        """``submitted``, ``hits`` (reused), ``joined`` (waited for an identical one), ``runs``
        (judged), ``running``/``max_running`` (slots in use now / at most), ``done``, ``queued``."""
        with self._lock:
            return dict(self._counts, queued=self._queued)

    def reset_counts(self) -> None:
        """Start the counts again (``max_running`` from the slots in use now)."""
        with self._lock:
            running = self._counts["running"]
            self._counts = dict.fromkeys(self._counts, 0)
            self._counts["running"] = self._counts["max_running"] = running

    def close(self) -> None:
        """Refuse new tasks (the queued ones end with ``RuntimeError``, those an owned pool had not
        begun with ``CancelledError``); stop the intake and the own pool once the running ones ran."""
        self._closed = True
        self.intake.close()
        if self._owned:
            self.executor.shutdown(wait=True, cancel_futures=True)


def _on_main_thread() -> bool:
    return threading.current_thread() is threading.main_thread()


def _judge_with(config: SandboxConfig | None) -> Callable[[Task], Verdict]:
    return judge if config is None else (lambda task: judge(task, config=config))


def _held(slots: JudgeSlots | None, fn: Callable[[Any], Any], arg: Any) -> Any:
    """``fn(arg)`` holding one of ``slots`` (if any)."""
    if slots is None:
        return fn(arg)
    with slots:
        return fn(arg)


_default: tuple[int, StepJudge] | None = None
_default_lock = threading.Lock()


def default_step_judge() -> StepJudge:
    """The process's step judge: its judges hold the process's judge slots (one per core unless
    resized: :func:`~arbiter.sandbox.slots.judge_slots`), one verdict store, one case-order
    memory (recreated after a fork)."""
    global _default
    with _default_lock:
        if _default is None or _default[0] != os.getpid():
            slots = judge_slots()
            _default = (os.getpid(), StepJudge(slots.size, slots=slots))
        return _default[1]


__all__ = ["StepJudge", "default_step_judge"]
