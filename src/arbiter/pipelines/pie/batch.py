"""``arbiter pie reward``: score every candidate of a candidates file against its row, resumably, into a run
folder (``rewards.jsonl``, ``errors.jsonl``, ``summary.json``, ``config.json``). See ``docs/pie.md`` ("Batch outputs").
"""

from __future__ import annotations

import functools
import json
import os
import random
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from arbiter.datasets.io import JsonlSink, read_jsonl
from arbiter.datasets.pie.source import PieSource, RowIndex
from arbiter.judge.verdict import Outcome
from arbiter.pipelines.executor import ordered_map
from arbiter.pipelines.outputs import holds_out_dirs
from arbiter.pipelines.pie.candidates import CandidateItem, iter_candidates
from arbiter.pipelines.pie.config import CONFIG_RULES, reward_config
from arbiter.pipelines.pie.inputs import (
    CANDIDATE_SHAPE,
    CandidatesInputError,
    check_candidates_usable,
    check_tests_source,
)
from arbiter.pipelines.pie.summary import summarize_rewards
from arbiter.rewards.pie.options import check_reward_options
from arbiter.rewards.pie.result import PieRewardResult
from arbiter.rewards.pie.reward import pie_reward
from arbiter.pipelines.runs import RunFolder
from arbiter.timing.count_cache import sha256_hex as _sha
from arbiter.timing.instructions import ValgrindUnavailable
from arbiter.timing.comparison import DEFAULT_METHOD, unit_of


def sample_rng(seed: int, source: PieSource) -> random.Random:
    """The K-sampling generator of one source in a batch: seeded by ``seed``, ``problem_id`` and ``src_id``, so
    every candidate of a source is timed on the same cases (they share the source's counts and are comparable, as
    PIE's best@k needs) and a resumed run samples the same cases."""
    return random.Random(f"{seed}:{source.problem_id}:{source.src_id}")


def score_candidates(items: Iterable[CandidateItem], tests: Any, *, on_result: Callable[[CandidateItem, dict], None],
                     seed: int = 0, skip: Callable[[str], bool] = lambda key: False, **reward_kw: Any) -> None:
    """Score each item with :func:`pie_reward` (``reward_kw``: its keyword arguments; ``k`` sampling uses
    :func:`sample_rng`) and call ``on_result(item, record)`` with the JSON record: ``key``, ``line``, ``index``,
    ``id``, ``candidate_sha256`` plus :meth:`PieRewardResult.to_dict`. Items whose ``key`` ``skip`` accepts are
    passed over (resume). An unusable item gives a record with ``outcome`` ``INVALID_TASK`` and its error as
    ``reason``; an unexpected exception for one item gives ``SANDBOX_ERROR`` with the exception named, so one bad
    item never stops the batch (DESIGN.md "Reliability"). Bad arguments (transform, method, K) raise ``ValueError``
    before any item is scored; a missing valgrind raises :class:`~arbiter.timing.instructions.ValgrindUnavailable`."""
    check_reward_options(reward_kw)
    todo = (item for item in items if not skip(item.key))
    # one at a time here (measurements are taken alone); across a cluster's judge pools under --ray
    for item, rec in ordered_map(functools.partial(_score_one, tests=tests, seed=seed, reward_kw=reward_kw), todo,
                                 workers=1, name="arbiter-pie"):
        on_result(item, rec)


def _score_one(item: CandidateItem, *, tests: Any, seed: int, reward_kw: dict[str, Any]) -> dict[str, Any]:
    """The JSON record of one candidate (:func:`score_candidates`)."""
    head = {"key": item.key, "line": item.line, "index": item.index, "id": item.record_id,
            "candidate_sha256": _sha(item.code) if item.code else None}
    method = reward_kw.get("method", DEFAULT_METHOD)
    unit = unit_of(method)
    if item.error or item.source is None:
        src = item.source
        rec = PieRewardResult(outcome=Outcome.INVALID_TASK.value, reward=None, speedup=None,
                              reason=item.error or "no row", problem_id=src.problem_id if src else "",
                              src_id=src.src_id if src else "", tgt_id=src.tgt_id if src else None,
                              method=method, unit=unit, requested_method=method,
                              k=reward_kw.get("k", -1)).to_dict()
        return {**head, **rec}
    kw = dict(reward_kw)
    if kw.get("k", -1) > 0 and kw.get("rng") is None:
        kw["rng"] = sample_rng(seed, item.source)
    try:
        rec = pie_reward(item.source, item.code, tests, **kw).to_dict()
    except ValgrindUnavailable:
        raise
    except Exception as e:  # noqa: BLE001 - one item must not stop the batch; reported, never a 0
        rec = PieRewardResult(outcome=Outcome.SANDBOX_ERROR.value, reward=None, speedup=None,
                              reason=f"{type(e).__name__}: {e}", problem_id=item.source.problem_id,
                              src_id=item.source.src_id, tgt_id=item.source.tgt_id, method=method,
                              unit=unit, requested_method=method, k=reward_kw.get("k", -1)).to_dict()
    return {**head, **rec}


@dataclass
class BatchRun:
    """What :func:`run_reward_batch` did: ``records`` (this candidates file's final records, resumed ones
    included, in file order), ``new`` (scored now), ``resumed`` (already in the output), ``sandbox_errors`` (our
    failures this run: in ``errors.jsonl``, retried by a rerun), ``row_errors`` (rows of the rows file that could
    not be read), ``summary`` (:func:`summarize_rewards`) and ``outputs`` (name -> path)."""

    records: list[dict[str, Any]]
    new: int
    resumed: int
    sandbox_errors: list[dict[str, Any]]
    row_errors: list[str]
    summary: dict[str, Any]
    outputs: dict[str, str]


@holds_out_dirs
def run_reward_batch(rows: Any, tests: Any, candidates: str | os.PathLike, out_dir: str | os.PathLike, *,
                     seed: int = 0, split: str | None = None, field_names: Sequence[str] = ("candidates", "code"),
                     on_start: Callable[[int], None] | None = None,
                     on_result: Callable[[dict[str, Any]], None] | None = None,
                     file_names: Mapping[str, str] | None = None, skip_precomputed: bool = False,
                     input_option: str | None = "--candidates", **reward_kw: Any) -> BatchRun:
    """Score every candidate of a candidates JSONL against its row into the run folder ``out_dir``, resumably.

    ``reward_kw``: :func:`~arbiter.rewards.pie.reward.pie_reward` keywords; ``seed``: the K sampling seed. Outputs,
    ``config.json`` and every error raised before scoring: ``docs/pie.md`` ("Batch (`run_reward_batch`)")."""
    check_reward_options(reward_kw)
    index = rows if isinstance(rows, RowIndex) else RowIndex(rows, split=split)
    items = _read_items(candidates, index, tests, field_names, skip_precomputed, input_option)
    names = {"rewards": "rewards.jsonl", "errors": "errors.jsonl", "summary": "summary.json", **(file_names or {})}
    errors: list[dict[str, Any]] = []
    with RunFolder(out_dir) as folder:
        folder.check_config(reward_config(index, tests, seed=seed, **reward_kw), CONFIG_RULES)
        paths = {k: folder.file(names[k]) for k in ("rewards", "errors", "summary")}
        sink = folder.sink(names["rewards"], "key")
        resumed = sum(1 for it in items if it.key in sink)
        if on_start is not None:
            on_start(len(items))
        new = _score_into(items, tests, sink, paths["errors"], errors, on_result, seed=seed, **reward_kw)
    keys = {it.key for it in items}
    final = {r["key"]: r for r in read_jsonl(paths["rewards"]) if r.get("key") in keys}
    records = [final[it.key] for it in items if it.key in final]
    summary = summarize_rewards(records)
    summary.update({"candidates": len(items), "new": new, "resumed": resumed, "sandbox_errors": len(errors),
                    "row_errors": len(index.errors), "rows": len(index)})
    folder.write_summary(summary, names["summary"])
    return BatchRun(records=records, new=new, resumed=resumed, sandbox_errors=errors, row_errors=index.errors,
                    summary=summary, outputs={k: str(v) for k, v in paths.items()})


def _read_items(candidates: str | os.PathLike, index: RowIndex, tests: Any, field_names: Sequence[str],
                skip_precomputed: bool, input_option: str | None) -> list[CandidateItem]:
    """The candidates to score, after refusing inputs unusable as a whole (before anything is written)."""
    if not Path(candidates).is_file():
        raise FileNotFoundError(f"candidates file not found: {candidates}")
    check_tests_source(tests)
    try:
        items = list(iter_candidates(candidates, index, field_names=field_names, skip_precomputed=skip_precomputed))
    except OSError as e:  # e.g. a corrupt .gz: a problem of the whole file, not of a line
        raise CandidatesInputError(f"{input_option or 'candidates file'} {candidates}: cannot be read "
                                   f"({e.strerror or e})") from None
    if input_option is not None:
        check_candidates_usable(items, candidates, index, option=input_option,
                                shape=CANDIDATE_SHAPE.replace('"candidates" | "code"',
                                                               " | ".join(f'"{f}"' for f in field_names)))
    return items


def _score_into(items: Sequence[CandidateItem], tests: Any, sink: JsonlSink, errors_path: Path,
                errors: list[dict[str, Any]], on_result: Callable[[dict[str, Any]], None] | None, *,
                seed: int, **reward_kw: Any) -> int:
    """Score the items not yet in ``sink``: rewards into the sink, SANDBOX_ERROR records appended to
    ``errors_path`` and ``errors``; returns how many rewards were written."""
    new = 0
    with open(errors_path, "a", encoding="utf-8") as err_f:
        def handle(item: CandidateItem, rec: dict[str, Any]) -> None:
            nonlocal new
            if rec.get("outcome") == Outcome.SANDBOX_ERROR.value:
                errors.append(rec)
                err_f.write(json.dumps(rec, default=str) + "\n")
                err_f.flush()
            else:
                sink.write(rec)
                new += 1
            if on_result is not None:
                on_result(rec)

        score_candidates(items, tests, on_result=handle, seed=seed, skip=lambda key: key in sink, **reward_kw)
    return new
