"""``arbiter score``'s run: every response of a completions file judged against its dataset row
by the codegen reward, into a resumable run folder (``verdicts.jsonl``, ``problems.jsonl``,
``summary.json``, ``errors.jsonl``, ``config.json``). See ``docs/codegen.md`` ("Batch scoring").
"""

from __future__ import annotations

import functools
import os
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from arbiter.datasets.io import JsonlSink
from arbiter.datasets.verl_rows import RowError, iter_raw_rows, parse_row
from arbiter.judge.verdict import Outcome
from arbiter.pipelines.codegen.config import RULES, VERDICTS_FILE, config_fingerprint, text_sha256
from arbiter.pipelines.codegen.inputs import ScoringInputs, load_inputs
from arbiter.pipelines.codegen.stream import Item, iter_scores
from arbiter.pipelines.codegen.summary import summarize
from arbiter.pipelines.codegen.verdicts import (drop_earlier_duplicates, fingerprint, load_done, read_responses,
                                                rewrite)
from arbiter.pipelines.outputs import holds_out_dirs
from arbiter.pipelines.runs import ErrorLog, RunFolder
from arbiter.rewards.codegen import RewardOptions, verdict_options

Scorer = Callable[[Iterable[Item]], Iterator[Mapping[str, Any]]]
SANDBOX_ERROR = Outcome.SANDBOX_ERROR.value


@dataclass
class ScoringRun:
    """What one run did (counts of this run; totals are in ``summary``).

    - ``rows``: dataset rows read; ``responses``: responses in the completions that match a row;
    - ``judged``: responses scored in this run; ``skipped_done``: already in ``verdicts.jsonl``
      (for the same response and ground truth); ``stale``: records found for another response or
      ground truth (judged again, replaced);
    - ``sandbox_errors``: responses that hit SANDBOX_ERROR (not written; rerun to retry);
    - ``errors``: other problems (bad records/rows), also in ``errors.jsonl``;
    - ``summary``: the content of ``summary.json``.
    """

    rows: int = 0
    responses: int = 0
    judged: int = 0
    skipped_done: int = 0
    stale: int = 0
    sandbox_errors: int = 0
    errors: int = 0
    summary: dict[str, Any] = field(default_factory=dict)


class _Feed:
    """The responses still to judge, fed to the scorer in dataset order, and their results
    recorded as they come back (``pending`` pairs each result with its response)."""

    def __init__(self, ins: ScoringInputs, split: str | None, run: ScoringRun, errors: ErrorLog, sink: JsonlSink,
                 done: dict[str, bytes | None]):
        self.ins, self.split, self.run, self.errors, self.sink, self.done = ins, split, run, errors, sink, done
        self.stale: dict[str, bytes | None] = {}  # key -> fingerprint of the response/ground truth judged now
        # (row key, i, data_source, index, response sha256, ground truth sha256), in item order
        self.pending: deque[tuple[str, int, Any, Any, str, str]] = deque()
        self.passed_over = 0  # responses of rows that cannot be read: never judged, done all the same

    def items(self) -> Iterator[Item]:
        ins = self.ins
        with open(ins.completions, "rb") as cf:
            for position, raw in enumerate(iter_raw_rows(ins.dataset, split=self.split, batch_size=16,
                                                         unreadable=True)):
                self.run.rows += 1
                key = ins.by_position[position]
                entries = ins.comp_index.get(key)
                if position in ins.duplicate_positions or not entries:
                    continue
                if position in ins.unusable_positions:  # (reported when the run started)
                    self.passed_over += sum(n for _, n in entries)
                    continue
                try:
                    row = parse_row(raw, position)
                except RowError as exc:
                    self.errors.add("dataset", str(exc), row=key, position=position)
                    self.passed_over += sum(n for _, n in entries)
                    continue
                truth_sha = text_sha256(row.ground_truth)
                for i, response in enumerate(read_responses(cf, entries)):
                    response_sha = text_sha256(response)
                    if not self._needs_judging(f"{key}#{i}", response_sha, truth_sha):
                        continue
                    self.pending.append((key, i, row.data_source, row.index, response_sha, truth_sha))
                    yield row.data_source, response, row.ground_truth, row.extra_info

    def _needs_judging(self, rkey: str, response_sha: str, truth_sha: str) -> bool:
        if rkey not in self.done:
            return True
        fp = fingerprint(response_sha, truth_sha)
        if self.done[rkey] == fp:
            return False
        self.stale[rkey] = fp  # made for another response or ground truth: judge again, replace
        self.sink.keys.discard(rkey)
        self.run.stale += 1
        self.run.skipped_done -= 1
        return True

    def record(self, result: Mapping[str, Any]) -> None:
        key, i, ds, idx, response_sha, truth_sha = self.pending.popleft()
        if result.get("verdict") == SANDBOX_ERROR:
            self.run.sandbox_errors += 1
            self.errors.add("sandbox_error", str(result.get("reason", "")), row=key, response_idx=i)
            return
        self.sink.write({"key": f"{key}#{i}", "row_key": key, "response_idx": i, "data_source": ds, "index": idx,
                         "response_sha256": response_sha, "ground_truth_sha256": truth_sha, **dict(result)})
        self.run.judged += 1


def _judge_all(folder: RunFolder, ins: ScoringInputs, split: str | None, run: ScoringRun, errors: ErrorLog,
               scorer: Scorer, progress: Callable[[int, int], None] | None) -> dict[str, bytes | None]:
    """Judge what ``verdicts.jsonl`` lacks; the stale keys replaced (key -> new fingerprint)."""
    path = folder.file(VERDICTS_FILE)
    JsonlSink(path, key="key").close()  # repairs a line torn by a kill
    done, duplicates = load_done(path)
    if duplicates:  # killed after appending a replacement for a stale record: the last one wins
        drop_earlier_duplicates(path)
    with JsonlSink(path, key="key") as sink:
        run.skipped_done = sum(1 for k in done if k.rsplit("#", 1)[0] in ins.comp_index)
        if progress is not None:
            progress(run.skipped_done, run.responses)
        feed = _Feed(ins, split, run, errors, sink, done)
        processed = 0
        for processed, result in enumerate(scorer(feed.items()), 1):
            feed.record(result)
            if progress is not None:
                progress(run.skipped_done + processed + feed.passed_over, run.responses)
        if progress is not None:  # (the last rows may be ones that cannot be read)
            progress(run.skipped_done + processed + feed.passed_over, run.responses)
    return feed.stale


@holds_out_dirs
def score_completions(dataset: str | os.PathLike, completions: str | os.PathLike, out_dir: str | os.PathLike, *,
                      reward: RewardOptions | None = None, scorer: Scorer | None = None, split: str | None = None,
                      options: Mapping[str, Any] | None = None, progress: Callable[[int, int], None] | None = None,
                      inputs: ScoringInputs | None = None,
                      verdict_cache: str | os.PathLike | None = None) -> ScoringRun:
    """Score every response in ``completions`` against its row of ``dataset`` into ``out_dir``
    (resumable; ``docs/codegen.md``).

    - ``reward``: the codegen reward's options (default :class:`RewardOptions`); bad rows are
      recorded as INVALID_TASK and SANDBOX_ERROR in ``errors.jsonl`` whatever its error policies;
    - ``scorer``: instead, any function of ``(data_source, solution_str, ground_truth,
      extra_info)`` items -> result dicts (``score``, ``verdict``, ...), lazily, in input order;
    - ``options``: what the verdicts depend on, recorded in ``config.json`` (default: the
      reward's verdict options; ``{}`` with a ``scorer``); a rerun with other values is refused;
    - ``progress(done, total)``: called as responses finish (first after every check passed);
    - ``inputs``: :func:`load_inputs` of these inputs when the caller already checked them;
    - ``verdict_cache``: a folder of verdicts kept between runs (docs/step.md): a program judged
      before on the same suite, limits and checker is not run again.

    Raises :class:`ScoringInputError` (nothing created), :class:`ConfigMismatch` (nothing changed),
    ``OutputDirError``/``OutputDirBusy``, ``OSError``; bad rows and records go to ``errors.jsonl``."""
    ins = inputs if inputs is not None else load_inputs(dataset, completions, split=split)
    opts = reward if reward is not None else RewardOptions()
    if options is None:
        options = verdict_options(opts) if scorer is None else {}
    scorer = scorer or functools.partial(iter_scores, opts=opts, raise_errors=False, verdict_cache=verdict_cache)
    with RunFolder(out_dir) as folder:
        folder.check_config(config_fingerprint(dataset, completions, split, options), RULES)
        run = ScoringRun(responses=ins.responses)
        errors = folder.errors()
        try:
            ins.problems.copy_to(errors)
            ins.problems.close()
            stale = _judge_all(folder, ins, split, run, errors, scorer, progress)
            if stale:  # drop the stale records (their replacements, when judged, carry the new hashes)
                rewrite(folder.file(VERDICTS_FILE), lambda number, key, rec: key not in stale or fingerprint(
                    rec.get("response_sha256"), rec.get("ground_truth_sha256")) == stale[key])
                errors.add("stale_verdicts", f"{len(stale)} record(s) in {VERDICTS_FILE} were made for another "
                           f"response or ground truth; judged again and replaced", count=len(stale))
            run.summary = summarize(folder.path, ins.comp_index.keys())
            run.summary["sandbox_errors_this_run"] = run.sandbox_errors
            run.summary["errors_this_run"] = errors.count
            folder.write_summary(run.summary)
        finally:
            run.errors = errors.count
    return run


__all__ = ["ScoringRun", "Scorer", "score_completions"]
