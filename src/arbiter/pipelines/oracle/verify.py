"""Oracle SFT verification: seed rows + oracle return rows -> verified rows, rejected rows, SFT data.

:func:`verify_returns` is the run (``arbiter oracle verify``, ``make demo``): resumable outputs in one folder, rows
verified in parallel (:mod:`.row`), then ``best.jsonl`` and ``report.json``. See ``docs/oracle.md``.
"""

from __future__ import annotations

import datetime as _dt
import os
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping

from arbiter.datasets.io import read_jsonl, write_json_atomic
from arbiter.datasets.oracle import Rejection, ReturnRow, iter_returns, load_seeds
from arbiter.pipelines.oracle.best import write_best
from arbiter.pipelines.oracle.config import ConfigMismatch, check_config, config_fingerprint
from arbiter.pipelines.oracle.context import VerifyContext
from arbiter.pipelines.oracle.generated_tests import find_generator
from arbiter.pipelines.oracle.inputs import (
    InputFileError,
    NoUsableSeeds,
    check_generators_dir,
    check_returns_not_empty,
    count_rows,
    load_hidden_or_raise,
)
from arbiter.pipelines.oracle.options import VerifyOptions
from arbiter.pipelines.oracle.parquet import write_parquet
from arbiter.pipelines.oracle.records import load_rejection_record, rejected_record, sft_key, sft_record, verified_record
from arbiter.pipelines.oracle.report import build_report
from arbiter.pipelines.oracle.row import RowResult, verify_row
from arbiter.pipelines.executor import unordered_map
from arbiter.pipelines.outputs import ensure_out_dir, holds_out_dirs
from arbiter.pipelines.runs import RunFolder

__all__ = [
    "ConfigMismatch",
    "InputFileError",
    "NoUsableSeeds",
    "VerifyOptions",
    "VerifyRun",
    "check_generators_dir",
    "check_returns_not_empty",
    "ensure_out_dir",
    "load_hidden_or_raise",
    "verify_returns",
]

Progress = Callable[[str, dict[str, Any]], None]


@dataclass
class VerifyRun:
    """What :func:`verify_returns` did in this run (the full picture is in ``report``, read back from the
    output files): rows decided (or failed) now, rows already decided by an earlier run, wall seconds."""

    out_dir: Path
    report: dict[str, Any]
    verified_now: int = 0
    rejected_now: int = 0
    errors_now: int = 0
    skipped_existing: int = 0
    seconds: float = 0.0
    run_id: str = field(default_factory=lambda: uuid.uuid4().hex[:12])


class _Sinks:
    """The four JSONL outputs of a run, keyed so a rerun skips finished rows and never duplicates."""

    def __init__(self, folder: RunFolder):
        self.sft = folder.sink("sft.jsonl", key=sft_key)
        self.verified = folder.sink("verified.jsonl", key="key")
        self.rejected = folder.sink("rejected.jsonl", key="key")
        self.errors = folder.sink("errors.jsonl", key=lambda r: f"{r.get('run_id')}:{r.get('seq')}")

    def repair_sft(self) -> None:
        """Make ``sft.jsonl`` hold exactly the rows ``verified.jsonl`` accepted: a kill between the two
        writes leaves a verified row without its SFT row (verified is written first), written now; an
        SFT row without its verified row (left by a kill when sft was written first) is dropped, since
        the row is decided again and may now be rejected."""
        self.sft.keep_only(lambda key: key in self.verified)
        for rec in read_jsonl(self.verified.path):
            if rec.get("key") not in self.sft and "messages" in rec:
                self.sft.write({"task_id": rec["task_id"], "messages": [
                    {"role": m["role"], "content": m["content"]} for m in rec["messages"]]})

    def decided(self, key: str) -> bool:
        return key in self.verified or key in self.rejected


def _settle(res: RowResult, row: ReturnRow, sinks: _Sinks, stats: VerifyRun, emit: Progress) -> None:
    """Write one verified row's outcome: an error (retried next run), accepted or rejected."""
    if res.error is not None:
        stats.errors_now += 1
        sinks.errors.write({"run_id": stats.run_id, "seq": stats.errors_now, "key": res.key, "task_id": res.task_id,
                            "line": res.line, "error": res.error,
                            "time": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")})
        emit("row", {"key": res.key, "task_id": res.task_id, "outcome": "error", "line": res.line})
        return
    if res.accepted:  # (verified first: an SFT row never stands without its verified row; repair_sft)
        sinks.verified.write(verified_record(row, res))
        sinks.sft.write(sft_record(row))
        stats.verified_now += 1
    else:
        sinks.rejected.write(rejected_record(row, res))
        stats.rejected_now += 1
    emit("row", {"key": res.key, "task_id": res.task_id, "line": res.line,
                 "outcome": "accepted" if res.accepted else "rejected", "stage": res.stage})


def _skip_or_reject(item: Any, sinks: _Sinks, stats: VerifyRun, emit: Progress) -> bool:
    """Handle a load rejection or an already-decided row; True when the item needs no verification."""
    if isinstance(item, Rejection):
        if item.key not in sinks.rejected:
            sinks.rejected.write(load_rejection_record(item))
            stats.rejected_now += 1
        else:
            stats.skipped_existing += 1
        emit("row", {"key": item.key, "task_id": item.task_id, "line": item.line, "outcome": "rejected",
                     "stage": "load"})
        return True
    if sinks.decided(item.key):
        stats.skipped_existing += 1
        emit("row", {"key": item.key, "task_id": item.task_id, "line": item.origin.line if item.origin else None,
                     "outcome": "skipped"})
        return True
    return False


def _to_verify(items: Any, sinks: _Sinks, stats: VerifyRun, emit: Progress) -> Any:
    """The rows that need verifying; load rejections and rows already decided are handled on the way."""
    for item in items:
        if not _skip_or_reject(item, sinks, stats, emit):
            yield item


def _verify_all(items: Any, ctx: VerifyContext, sinks: _Sinks, stats: VerifyRun, emit: Progress) -> None:
    """Verify the rows with a bounded number in flight; outcomes are written as they come."""
    workers = int(ctx.options.workers) if ctx.options.workers else _default_workers()
    rows = _to_verify(items, sinks, stats, emit)
    for row, res in unordered_map(lambda r: verify_row(r, ctx.seeds[r.task_id], ctx), rows, workers=workers,
                                  name="oracle-verify"):
        _settle(res, row, sinks, stats, emit)


def _check_inputs(seeds: Any, returns: Any, generators: Any) -> None:
    for p, what in ((seeds, "seeds"), (returns, "returns")):
        if not Path(p).is_file():
            raise FileNotFoundError(f"{what} file not found: {p}")
    if generators is not None:
        check_generators_dir(generators)


@holds_out_dirs
def verify_returns(seeds: str | os.PathLike, returns: str | os.PathLike, out_dir: str | os.PathLike, *,
                   hidden: str | os.PathLike | None = None, generators: str | os.PathLike | None = None,
                   options: VerifyOptions | None = None, on_progress: Progress | None = None) -> VerifyRun:
    """Verify every return row of ``returns`` against ``seeds``; write the outputs to ``out_dir``.

    ``on_progress(event, data)`` gets ``"start"`` (``{"total"}``), ``"row"`` per row decided or skipped, and
    ``"done"``. Resumable: rows already in ``verified.jsonl`` / ``rejected.jsonl`` are skipped. Raises
    ``ValueError`` for bad options, :class:`NoUsableSeeds`, :class:`InputFileError`, :class:`ConfigMismatch`,
    ``OutputDirError``, ``FileNotFoundError`` (all before anything is written); nothing in the rows raises.
    """
    t_run = time.monotonic()
    opts = options or VerifyOptions()
    opts.check()
    _check_inputs(seeds, returns, generators)
    seeds_loaded = load_seeds(seeds)
    by_id = seeds_loaded.by_id
    if not by_id:
        raise NoUsableSeeds(seeds_loaded.rejections, seeds)
    hidden_loaded = load_hidden_or_raise(hidden, known_task_ids=by_id) if hidden is not None else None
    if generators is not None:
        check_generators_dir(generators, known_task_ids=by_id)
    with RunFolder(out_dir) as folder:
        out = folder.path
        emit = on_progress or (lambda event, data: None)
        check_config(out, config_fingerprint(seeds, hidden, generators, opts))
        ctx = VerifyContext(by_id, hidden=hidden_loaded, generators=generators, options=opts)
        sinks = _Sinks(folder)
        stats = VerifyRun(out_dir=out, report={})
        sinks.repair_sft()
        for rej in seeds_loaded.rejections + (hidden_loaded.rejections if hidden_loaded else []):
            sinks.rejected.write(load_rejection_record(rej))
        emit("start", {"total": count_rows(Path(returns))})
        _verify_all(iter_returns(returns, by_id, seed_rejections=seeds_loaded.rejections), ctx, sinks, stats, emit)
    stats.seconds = time.monotonic() - t_run
    inputs = {"seeds": str(seeds), "returns": str(returns), "hidden": str(hidden) if hidden is not None else None,
              "generators": str(generators) if generators is not None else None,
              "seed_rows": len(seeds_loaded.rows), "seed_rejections": len(seeds_loaded.rejections),
              "hidden_rejections": len(hidden_loaded.rejections) if hidden_loaded else 0}
    stats.report = _write_report(out, ctx, stats, inputs, t_run)
    emit("done", {"report": stats.report})
    return stats


def _write_report(out: Path, ctx: VerifyContext, stats: VerifyRun, inputs: Mapping[str, Any],
                  t_run: float) -> dict[str, Any]:
    """``best.jsonl``, then ``report.json`` (and the Parquet copies when asked)."""
    opts = ctx.options
    best = write_best(out)
    hidden_checks = ctx.hidden_summaries(all_tasks=True)
    stats.seconds = time.monotonic() - t_run
    run = {"run_id": stats.run_id, "seconds": round(stats.seconds, 3), "verified_now": stats.verified_now,
           "rejected_now": stats.rejected_now, "errors_now": stats.errors_now,
           "skipped_existing": stats.skipped_existing,
           "stage_seconds": {k: round(v, 3) for k, v in sorted(ctx.stage_seconds.items())}}
    report = build_report(out, options=opts, hidden_checks=hidden_checks, coverage=coverage(ctx, hidden_checks),
                          inputs=inputs, generated=ctx.generated_summaries(), best=best, run=run)
    write_json_atomic(out / "report.json", report)
    if opts.parquet:
        report["parquet"] = write_parquet(out)
        write_json_atomic(out / "report.json", report)
    return report


def coverage(ctx: VerifyContext, hidden_checks: Mapping[str, Any]) -> dict[str, Any]:
    """Which seed tasks have hidden / generated tests (for the report's warnings)."""
    ids = sorted(ctx.seeds)
    no_hidden = []
    for tid in ids:
        cases = ctx.hidden.for_task(tid) if ctx.hidden is not None else []
        if not cases or (hidden_checks.get(tid) or {}).get("all_bad"):
            no_hidden.append(tid)
    no_gen = []
    infos = ctx.task_infos()
    for tid in ids:
        info = infos.get(tid)
        if ctx.generators is None or find_generator(ctx.generators, tid) is None:
            no_gen.append(tid)
        elif info is not None and (info.generated_error is not None
                                   or (info.generated is not None and not info.generated.cases)):
            no_gen.append(tid)
    return {"hidden_given": ctx.hidden is not None, "generators_given": ctx.generators is not None,
            "tasks": len(ids), "tasks_without_hidden": no_hidden, "tasks_without_generated": no_gen,
            "tasks_visible_only": sorted(set(no_hidden) & set(no_gen))}


def _default_workers() -> int:
    from arbiter.judge.judge import default_workers

    return default_workers()
