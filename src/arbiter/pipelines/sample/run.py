"""``arbiter sample``: n completions per verl row from an OpenAI-compatible chat endpoint, written as the
completions records ``arbiter score`` reads.

The endpoint and model are checked first (:func:`arbiter.pipelines.llm_client.check_endpoint`); requests go
through the shared :class:`~arbiter.pipelines.llm_client.ChatClient` (bounded concurrency, retries with
backoff); output is a keyed :class:`~arbiter.datasets.io.JsonlSink`, so a rerun after a kill asks only for
the samples still missing. See ``docs/codegen.md`` ("Sampling: arbiter sample").
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator, Literal

from arbiter.datasets.io import JsonlSink
from arbiter.pipelines.outputs import open_locked, remove_if_empty, unlock
from arbiter.pipelines.llm_client import (
    ChatClient, RequestFailed, check_endpoint, request_params, resolve, status_of,
)
from arbiter.pipelines.sample.records import (
    Prompt, completion_record, load_prompts, record_key, run_fields, scan_existing,
)

Sampling = Literal["auto", "n", "repeat"]


@dataclass
class SampleSummary:
    """What one :func:`sample` run did; counts are samples (completions) unless named otherwise.

    ``rows``: rows sampled; ``bad_rows``: rows skipped (``problems`` holds the first messages);
    ``samples_wanted`` = ``rows * n``; ``samples_existing``: already in the output at start; ``samples_written``;
    ``samples_missing``: still missing at the end; ``requests`` / ``retries``: HTTP requests (malformed answers
    asked again count as retries); ``failed_requests``: requests given up on (their samples are missing, listed
    in the errors file); ``malformed_answers``: answers that were no usable completion; ``n_refusals``: requests
    with ``n`` the server refused before the run switched to one request per sample (their samples were asked
    again, not failed); ``used_n``: whether the server's ``n`` parameter was used to the end; ``seconds``: wall
    time.
    """

    rows: int = 0
    bad_rows: int = 0
    samples_wanted: int = 0
    samples_existing: int = 0
    samples_written: int = 0
    samples_missing: int = 0
    requests: int = 0
    retries: int = 0
    failed_requests: int = 0
    malformed_answers: int = 0
    n_refusals: int = 0
    errors: int = 0
    used_n: bool = True
    out_path: str = ""
    errors_path: str = ""
    model: str = ""
    seconds: float = 0.0
    problems: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


class OutputBusy(ValueError):
    """Another ``arbiter sample`` is writing the same output file."""


@contextlib.contextmanager
def _locked(out: Path) -> Iterator[None]:
    """An exclusive ``flock`` on ``<out>.lock`` for the run (two runs into one file would duplicate); the lock
    file is removed when the run ends."""
    out.parent.mkdir(parents=True, exist_ok=True)
    lock = out.with_name(out.name + ".lock")
    try:
        fd = open_locked(lock)
    except BlockingIOError:
        raise OutputBusy(f"--out {out} is being written by another arbiter sample run") from None
    try:
        yield
    finally:
        unlock(lock, fd)


@dataclass
class _Run:
    client: ChatClient
    params: dict[str, Any]
    seed: int | None
    n: int
    sink: JsonlSink
    errors: JsonlSink
    use_n: bool
    fallback: bool
    on_progress: Callable[[int, int], None] | None
    total: int = 0
    done: int = 0
    written: int = 0
    error_count: int = 0
    failed: int = 0
    n_refusals: int = 0

    def sampling(self, first: int, n: int) -> dict[str, Any]:
        """The sampling parameters of a request for samples ``first .. first + n - 1``: the request's ``seed``
        is ``seed + first`` (repeated requests with one seed would return one sample n times)."""
        p = {k: self.params.get(k) for k in ("temperature", "top_p", "max_tokens")}
        return {**p, "seed": None if self.seed is None else self.seed + first, "n": n}

    def error(self, prompt: Prompt, indices: list[int], exc: BaseException | None, message: str, attempts: int) -> None:
        self.error_count += 1
        self.failed += 1
        self.errors.write({"seq": self.error_count, "time": time.time(), "key": prompt.key,
                           "sample_indices": indices, "model": self.client.model, "attempts": attempts,
                           "error": type(exc).__name__ if exc is not None else "IncompleteResponse",
                           "status_code": status_of(exc) if exc is not None else None, "message": message[:1000]})

    def progress(self, k: int) -> None:
        self.done += k
        if self.on_progress is not None:
            self.on_progress(self.done, self.total)


async def _request(run: _Run, prompt: Prompt, indices: list[int]) -> list[int]:
    """Ask for ``indices`` in one request; write what came back; return the indices still missing."""
    sampling = run.sampling(indices[0], len(indices))
    params = {**run.params, **({"seed": sampling["seed"]} if sampling["seed"] is not None else {})}
    answer, _ = await run.client.complete(prompt.messages, len(indices), params)
    choices = answer.choices  # at most len(indices), at least one: llm_answer.parse_completion checked it
    got = indices[:len(choices)]
    rec = completion_record(prompt, got, choices, model=run.client.model, sampling=sampling, usage=answer.usage)
    if run.sink.write(rec):
        run.written += len(got)
    run.progress(len(got))
    return indices[len(choices):]


def _is_n_refusal(exc: RequestFailed) -> bool:
    return status_of(exc.error) in (400, 422)


async def _sample_row(run: _Run, prompt: Prompt, indices: list[int], sem: asyncio.Semaphore) -> None:
    """All missing samples of one row: one request with ``n`` while the server takes it, else one request per
    sample (also for the rest when the server returns fewer choices than asked). Never raises: a failed request
    (or any error writing its answer) is recorded with the samples it leaves missing, and the run goes on."""
    pending = list(indices)
    async with sem:
        try:
            while pending:
                batch = pending if run.use_n and len(pending) > 1 else pending[:1]
                try:
                    rest = await _request(run, prompt, batch)
                except RequestFailed as exc:
                    if len(batch) > 1 and run.fallback and _is_n_refusal(exc):
                        run.use_n = False  # the server refuses n > 1: one request per sample from now on
                        run.n_refusals += 1
                        continue
                    raise
                pending = rest + pending[len(batch):]
        except RequestFailed as exc:  # one failed request never stops the batch
            run.error(prompt, pending, exc.error, str(exc), exc.attempts)
            run.progress(len(pending))
        except Exception as exc:  # noqa: BLE001 - e.g. a record that cannot be written: that row's samples only
            run.error(prompt, pending, exc, f"{type(exc).__name__}: {exc}", 0)
            run.progress(len(pending))


def _plan(prompts: list[Prompt], n: int, done: dict[str, set[int]], summary: SampleSummary) -> list[tuple[Prompt, list[int]]]:
    jobs = []
    for p in prompts:
        missing = [i for i in range(n) if i not in done.get(p.key, ())]
        summary.samples_existing += n - len(missing)
        if missing:
            jobs.append((p, missing))
    return jobs


def _check_args(model: str, n: int, concurrency: int, sampling: str) -> None:
    if not model:
        raise ValueError("--model is required (the served model name, e.g. vLLM's --served-model-name)")
    if n < 1:
        raise ValueError(f"--n must be >= 1, got {n}")
    if concurrency < 1:
        raise ValueError(f"--concurrency must be >= 1, got {concurrency}")
    if sampling not in ("auto", "n", "repeat"):
        raise ValueError(f"sampling must be 'auto', 'n' or 'repeat', got {sampling!r}")


async def asample(dataset: str | os.PathLike, out_path: str | os.PathLike, *, model: str,
                  base_url: str | None = None, api_key: str | None = None, n: int = 8, concurrency: int = 8,
                  temperature: float | None = None, top_p: float | None = None, max_tokens: int | None = None,
                  seed: int | None = None, sampling: Sampling = "auto", split: str | None = None,
                  retry: dict[str, Any] | None = None,
                  on_progress: Callable[[int, int], None] | None = None) -> SampleSummary:
    """The async form of :func:`sample` (same arguments and result)."""
    t0 = time.monotonic()
    _check_args(model, n, concurrency, sampling)
    out = Path(out_path)
    summary = SampleSummary(model=model, out_path=str(out), errors_path=str(out.with_name(out.stem + ".errors.jsonl")))
    prompts, problems = load_prompts(dataset, split=split)
    if not prompts:
        raise ValueError(f"--dataset {dataset}: no row to sample" + (f" (first problem: {problems[0]})" if problems else ""))
    summary.rows, summary.bad_rows, summary.problems = len(prompts), len(problems), problems[:20]
    summary.samples_wanted = len(prompts) * n
    params = request_params(temperature, top_p, max_tokens)
    client = ChatClient(model=model, base_url=resolve(base_url, "OPENAI_BASE_URL"),
                        api_key=resolve(api_key, "OPENAI_API_KEY"), **(retry or {}))
    try:
        await check_endpoint(client)
        with _locked(out):
            sink = JsonlSink(out, key=record_key)
            errors = JsonlSink(summary.errors_path, key=lambda r: f"{r['time']}:{r['seq']}")
            try:
                fields = run_fields(model, {"temperature": temperature, "top_p": top_p, "max_tokens": max_tokens})
                done = scan_existing(out, fields)
                jobs = _plan(prompts, n, done, summary)
                run = _Run(client, params, seed, n, sink, errors, use_n=sampling != "repeat",
                           fallback=sampling == "auto", on_progress=on_progress,
                           total=sum(len(ix) for _, ix in jobs))
                sem = asyncio.Semaphore(concurrency)
                await asyncio.gather(*(_sample_row(run, p, ix, sem) for p, ix in jobs))
                summary.samples_written, summary.errors, summary.used_n = run.written, run.error_count, run.use_n
                summary.failed_requests, summary.n_refusals = run.failed, run.n_refusals
                summary.samples_missing = summary.samples_wanted - summary.samples_existing - run.written
            finally:
                sink.close()
                errors.close()
                remove_if_empty(summary.errors_path)
    finally:
        await client.close()
    summary.requests, summary.retries = client.stats.requests, client.stats.retries
    summary.malformed_answers = client.stats.malformed
    summary.seconds = round(time.monotonic() - t0, 3)
    return summary


def sample(dataset: str | os.PathLike, out_path: str | os.PathLike, **kwargs: Any) -> SampleSummary:
    """Ask an OpenAI-compatible chat endpoint for ``n`` completions of each row of ``dataset``.

    - ``dataset``: verl rows (Parquet, JSONL, HF folder); each row's ``prompt`` messages are sent unchanged.
    - ``out_path``: completions JSONL (:func:`~arbiter.pipelines.sample.records.completion_record`), created or
      resumed: only samples missing from it are asked for; a file made with another model or other sampling
      parameters is refused. Failures go to ``<out stem>.errors.jsonl``.
    - ``model``, ``base_url`` (else ``$OPENAI_BASE_URL``), ``api_key`` (else ``$OPENAI_API_KEY``, optional).
    - ``n`` (>= 1), ``concurrency`` (rows in flight, >= 1), ``temperature``, ``top_p``, ``max_tokens``,
      ``seed`` (request seed ``seed + first sample index``); ``sampling``: ``"auto"`` (``n`` until the server
      refuses it, then one request per sample), ``"n"`` or ``"repeat"``.
    - ``retry``: :class:`~arbiter.pipelines.llm_client.ChatClient` options (``max_retries``, ``backoff_base``,
      ``backoff_max``, ``timeout``, ``rng_seed``); ``on_progress(done, total)`` after each request.

    Raises ``ValueError`` for bad arguments or an unreadable dataset,
    :class:`~arbiter.pipelines.llm_client.EndpointError` (a ``ValueError``) for an endpoint that cannot be reached
    or does not serve ``model`` (before anything is written), :class:`OutputBusy` when another run writes
    ``out_path``. Failed requests never raise; they are counted and logged.
    """
    return asyncio.run(asample(dataset, out_path, **kwargs))


__all__ = ["OutputBusy", "SampleSummary", "asample", "sample"]
