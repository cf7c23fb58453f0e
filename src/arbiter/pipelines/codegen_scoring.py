"""Batch scoring of model completions on a verl code dataset (``arbiter score``).

Inputs:

- ``dataset``: verl rows (:mod:`arbiter.datasets.verl_rows`: Parquet, JSONL or an HF
  ``datasets`` folder), e.g. the codegen card's 14,927 rows.
- ``completions``: JSON Lines, one record per problem (several records for one problem are
  merged in file order): ``{"<key fields>", "responses": ["<markdown response>", ...]}`` where the
  key fields are, in order of preference:

  1. ``"key"`` (or ``"row_key"``): the data_source-qualified row key ``"<data_source>:<index>"``;
  2. ``"data_source"`` and ``"index"``;
  3. ``"index"`` alone (``extra_info.index``): accepted when exactly one dataset row has that
     index; an index shared by rows of several data sources is an error for that record (the
     card's 2026-08 fix: DeepCoder's per-subset indexes collided, and joining on them
     mis-attributed scores);
  4. ``"row"``: the 0-based row position in the dataset file.

Streaming and memory (the card: 14,927 rows x 8 responses): the dataset is read twice, both
times streamed: first only its key columns (Parquet reads just ``data_source`` and
``extra_info.index``), then row by row in file order while judging. The completions file is
read once to build an index ``row key -> byte offsets`` (one small tuple per record); each
row's responses are read back by seeking when that row comes up, so completions may be in any
order and are never all in memory. What stays in memory grows with the number of *rows*
(keys, offsets, per-problem counts: a few MB for the card), never with the text of the
responses or tests; at most ``2 x workers`` submissions are in flight.

Outputs in ``out_dir``:

- ``verdicts.jsonl``: one record per response, keyed ``"<row key>#<response index>"``
  (:class:`arbiter.datasets.jsonl_sink.JsonlSink`: flushed per record; a rerun after a kill
  skips every response already there and never duplicates one). Fields: ``key``, ``row_key``,
  ``response_idx``, ``data_source``, ``index`` and the reward's result fields (``score``,
  ``verdict``, ``passed``, ``total``, ``reason``, ``seconds``, ...).
- ``problems.jsonl``: per problem: ``n`` responses, ``c`` correct (score 1.0), ``pass_rate``
  (c / n), ``pass_at_k`` for k = 1..n (:func:`pass_at_k`), verdict counts; rewritten from
  ``verdicts.jsonl`` at the end of every run.
- ``summary.json``: the same by ``data_source`` and overall (mean pass rate and mean pass@k over
  problems), plus counts of invalid rows, errors and sandbox failures.
- ``errors.jsonl``: this run's problems: completion records that match no row, bad dataset rows,
  and responses that hit ``SANDBOX_ERROR`` (those are *not* written to ``verdicts.jsonl``, so a
  rerun judges them again; they are never counted as 0).

Rows whose suite is unusable (``INVALID_TASK``: unknown encoding, zero tests, a non-code
``data_source``) get their verdicts written but are left out of pass rates and pass@k, and
counted as ``invalid`` (a pass rate of 0 would be a claim about the model).

The pipeline does not judge by itself: ``scorer`` turns ``(data_source, solution_str,
ground_truth, extra_info)`` items into result dicts in input order, lazily. ``arbiter score``
passes the verl reward's :func:`arbiter.verl.reward.iter_scores`, so a response scores exactly
as it would in training (layers: entry points wire the adapter into the pipeline).
"""

from __future__ import annotations

import json
import os
from collections import Counter, defaultdict, deque
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from arbiter.datasets.jsonl_sink import JsonlSink, read_jsonl
from arbiter.datasets.verl_rows import RowError, iter_raw_rows, iter_row_keys, parse_row, row_key

Item = tuple[Any, Any, Any, Any]
Scorer = Callable[[Iterable[Item]], Iterator[Mapping[str, Any]]]

SANDBOX_ERROR = "SANDBOX_ERROR"
INVALID_TASK = "INVALID_TASK"


def pass_at_k(n: int, c: int, k: int) -> float:
    """The unbiased pass@k estimator of Chen et al. 2021 (Codex paper, eq. 1):
    ``1 - C(n - c, k) / C(n, k)``, the probability that at least one of k responses drawn
    without replacement from the n sampled is correct, given c of them are.

    Computed in the paper's numerically stable product form
    ``1 - prod_{i = n-c+1}^{n} (1 - k / i)`` (no huge binomials). Raises ``ValueError`` unless
    ``0 <= c <= n`` and ``1 <= k <= n``.
    """
    if not (0 <= c <= n) or not (1 <= k <= n):
        raise ValueError(f"pass_at_k needs 0 <= c <= n and 1 <= k <= n, got n={n}, c={c}, k={k}")
    if n - c < k:
        return 1.0
    prod = 1.0
    for i in range(n - c + 1, n + 1):
        prod *= 1.0 - k / i
    return 1.0 - prod


@dataclass
class ScoringRun:
    """What one run did (counts of this run; totals are in ``summary``).

    - ``rows``: dataset rows read; ``responses``: responses in the completions that match a row;
    - ``judged``: responses scored in this run; ``skipped_done``: already in ``verdicts.jsonl``;
    - ``sandbox_errors``: responses that hit SANDBOX_ERROR (not written; rerun to retry);
    - ``errors``: other problems (bad records/rows), also in ``errors.jsonl``;
    - ``summary``: the content of ``summary.json``.
    """

    rows: int = 0
    responses: int = 0
    judged: int = 0
    skipped_done: int = 0
    sandbox_errors: int = 0
    errors: int = 0
    summary: dict[str, Any] = field(default_factory=dict)


class _Errors:
    def __init__(self, path: Path):
        self.path = path
        self.count = 0
        self._f = open(path, "w", encoding="utf-8")

    def add(self, kind: str, message: str, **extra: Any) -> None:
        self.count += 1
        self._f.write(json.dumps({"kind": kind, "message": message, **extra}, ensure_ascii=False, default=str) + "\n")
        self._f.flush()

    def close(self) -> None:
        self._f.close()


def _record_key(rec: Mapping[str, Any], by_index: Mapping[str, list[str]], by_position: list[str]) -> str:
    """The row key a completions record names (module docstring); raises ``ValueError``."""
    for name in ("key", "row_key"):
        if isinstance(rec.get(name), str):
            return rec[name]
    if rec.get("data_source") is not None and rec.get("index") is not None:
        return f"{rec['data_source']}:{rec['index']}"
    if rec.get("index") is not None:
        keys = by_index.get(str(rec["index"]), [])
        if len(keys) == 1:
            return keys[0]
        if not keys:
            raise ValueError(f"index {rec['index']!r} matches no dataset row")
        raise ValueError(f"index {rec['index']!r} is shared by rows {keys[:5]}; give 'data_source' or 'key' "
                         f"(data_source-qualified keys, codegen card 2026-08)")
    if isinstance(rec.get("row"), int) and not isinstance(rec.get("row"), bool):
        if 0 <= rec["row"] < len(by_position):
            return by_position[rec["row"]]
        raise ValueError(f"row {rec['row']} is outside the dataset (0..{len(by_position) - 1})")
    raise ValueError("no key: expected 'key', 'data_source' + 'index', 'index' or 'row'")


def index_completions(path: Path, by_index: Mapping[str, list[str]], by_position: list[str], known: set[str],
                      errors: _Errors) -> dict[str, list[tuple[int, int]]]:
    """``row key -> [(byte offset, response count), ...]`` for a completions JSONL file (one
    pass, one line in memory at a time). Bad records go to ``errors`` and are left out."""
    index: dict[str, list[tuple[int, int]]] = defaultdict(list)
    with open(path, "rb") as f:
        offset = 0
        for number, line in enumerate(f, 1):
            start, offset = offset, offset + len(line)
            if not line.strip():
                continue
            try:
                try:
                    rec = json.loads(line)
                except ValueError as exc:
                    raise ValueError(f"not valid JSON ({exc})") from None
                if not isinstance(rec, dict):
                    raise ValueError(f"expected a JSON object, got {type(rec).__name__}")
                responses = rec.get("responses")
                if not isinstance(responses, list):
                    raise ValueError("'responses' must be a list of response strings")
                key = _record_key(rec, by_index, by_position)
                if key not in known:
                    raise ValueError(f"row key {key!r} is not in the dataset")
            except ValueError as exc:
                errors.add("completions", f"{path.name} line {number}: {exc}", line=number)
                continue
            index[key].append((start, len(responses)))
    return dict(index)


def _read_responses(f, entries: list[tuple[int, int]]) -> list[Any]:
    out: list[Any] = []
    for offset, _ in entries:
        f.seek(offset)
        out.extend(json.loads(f.readline())["responses"])
    return out


def score_completions(dataset: str | os.PathLike, completions: str | os.PathLike, out_dir: str | os.PathLike, *,
                      scorer: Scorer, split: str | None = None,
                      progress: Callable[[int, int], None] | None = None) -> ScoringRun:
    """Score every response in ``completions`` against its row of ``dataset``; write the outputs
    of the module docstring to ``out_dir``; resumable.

    - ``scorer``: items ``(data_source, solution_str, ground_truth, extra_info)`` -> result dicts
      with at least ``score`` and ``verdict``, lazily and in input order (e.g.
      ``functools.partial(arbiter.verl.reward.iter_scores, opts=..., raise_errors=False)``).
    - ``split``: the split of an HF ``DatasetDict`` folder.
    - ``progress(done, total)``: called as responses are finished (``done`` includes responses
      already scored by an earlier run).

    Returns a :class:`ScoringRun`. Raises ``ValueError`` for an unreadable dataset format;
    bad rows and records are reported in ``errors.jsonl`` and the run goes on.
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    run = ScoringRun()
    errors = _Errors(out / "errors.jsonl")
    try:
        by_position: list[str] = []
        by_index: dict[str, list[str]] = defaultdict(list)
        seen: set[str] = set()
        duplicate_positions: set[int] = set()
        for position, (ds, idx) in enumerate(iter_row_keys(dataset, split=split)):
            key = row_key(ds, idx, position)
            by_position.append(key)
            if key in seen:
                duplicate_positions.add(position)
                errors.add("dataset", f"row key {key!r} repeats at position {position}; only the first row is scored",
                           row=key, position=position)
                continue
            seen.add(key)
            if idx is not None:
                by_index[str(idx)].append(key)
        comp_index = index_completions(Path(completions), by_index, by_position, seen, errors)
        del by_index
        total = sum(n for entries in comp_index.values() for _, n in entries)
        run.responses = total

        with JsonlSink(out / "verdicts.jsonl", key="key") as sink:
            done = sum(1 for k in sink.keys if k.rsplit("#", 1)[0] in comp_index)
            run.skipped_done = done
            if progress is not None:
                progress(done, total)
            pending: deque[tuple[str, int, Any, Any]] = deque()  # (row key, i, data_source, index), item order

            def items() -> Iterator[Item]:
                with open(completions, "rb") as cf:
                    for position, raw in enumerate(iter_raw_rows(dataset, split=split, batch_size=16)):
                        run.rows += 1
                        if position in duplicate_positions:
                            continue
                        key = by_position[position]
                        entries = comp_index.get(key)
                        if not entries:
                            continue
                        try:
                            row = parse_row(raw, position)
                        except RowError as exc:
                            errors.add("dataset", str(exc), row=key, position=position)
                            continue
                        responses = _read_responses(cf, entries)
                        for i, response in enumerate(responses):
                            if f"{key}#{i}" in sink:
                                continue
                            pending.append((key, i, row.data_source, row.index))
                            yield row.data_source, response, row.ground_truth, row.extra_info

            finished = done
            for result in scorer(items()):
                key, i, ds, idx = pending.popleft()
                if result.get("verdict") == SANDBOX_ERROR:
                    run.sandbox_errors += 1
                    errors.add("sandbox_error", str(result.get("reason", "")), row=key, response_idx=i)
                else:
                    sink.write({"key": f"{key}#{i}", "row_key": key, "response_idx": i, "data_source": ds,
                                "index": idx, **dict(result)})
                    run.judged += 1
                finished += 1
                if progress is not None:
                    progress(finished, total)
        run.summary = summarize(out, comp_index.keys())
        run.summary["sandbox_errors_this_run"] = run.sandbox_errors
        run.summary["errors_this_run"] = errors.count
        (out / "summary.json").write_text(json.dumps(run.summary, indent=2, sort_keys=False) + "\n", encoding="utf-8")
    finally:
        run.errors = errors.count
        errors.close()
    return run


@dataclass
class _Problem:
    data_source: str
    index: Any
    n: int = 0
    c: int = 0
    invalid: bool = False
    verdicts: Counter = field(default_factory=Counter)


def _mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None


def _group_stats(problems: list[_Problem]) -> dict[str, Any]:
    valid = [p for p in problems if not p.invalid]
    verdicts: Counter = Counter()
    for p in problems:
        verdicts.update(p.verdicts)
    max_n = max((p.n for p in valid), default=0)
    pass_k: dict[str, float] = {}
    problems_k: dict[str, int] = {}
    for k in range(1, max_n + 1):
        vals = [pass_at_k(p.n, p.c, k) for p in valid if p.n >= k]
        if vals:
            pass_k[str(k)] = sum(vals) / len(vals)
            problems_k[str(k)] = len(vals)
    return {
        "problems": len(valid),
        "invalid_problems": len(problems) - len(valid),
        "responses": sum(p.n for p in problems),
        "correct": sum(p.c for p in valid),
        "mean_pass_rate": _mean([p.c / p.n for p in valid if p.n]),
        "solved_at_least_once": sum(1 for p in valid if p.c > 0),
        "pass_at_k": pass_k,
        "problems_at_k": problems_k,
        "verdicts": dict(sorted(verdicts.items())),
    }


def summarize(out_dir: str | os.PathLike, keys: Iterable[str] | None = None) -> dict[str, Any]:
    """Rebuild ``problems.jsonl`` from ``verdicts.jsonl`` (streamed) and return the summary
    (overall and by ``data_source``). ``keys``: only these row keys (default: all).

    A response counts as correct when its ``score`` is 1.0 (all-or-nothing; in parity mode a
    partial score is not a pass). INVALID_TASK rows are counted apart (module docstring).
    """
    out = Path(out_dir)
    wanted = set(keys) if keys is not None else None
    problems: dict[str, _Problem] = {}
    for rec in read_jsonl(out / "verdicts.jsonl"):
        key = rec["row_key"]
        if wanted is not None and key not in wanted:
            continue
        p = problems.get(key)
        if p is None:
            p = problems[key] = _Problem(rec.get("data_source", "?"), rec.get("index"))
        p.n += 1
        p.c += 1 if rec.get("score") == 1.0 else 0
        p.verdicts[rec.get("verdict", "?")] += 1
        if rec.get("verdict") == INVALID_TASK:
            p.invalid = True
    tmp = out / "problems.jsonl.partial"
    with open(tmp, "w", encoding="utf-8") as f:
        for key, p in problems.items():
            f.write(json.dumps({
                "row_key": key, "data_source": p.data_source, "index": p.index, "n": p.n, "c": p.c,
                "invalid": p.invalid, "pass_rate": None if p.invalid else p.c / p.n,
                "pass_at_k": {} if p.invalid else {str(k): pass_at_k(p.n, p.c, k) for k in range(1, p.n + 1)},
                "verdicts": dict(p.verdicts),
            }, ensure_ascii=False, default=str) + "\n")
    os.replace(tmp, out / "problems.jsonl")
    by_source: dict[str, list[_Problem]] = defaultdict(list)
    for p in problems.values():
        by_source[str(p.data_source)].append(p)
    return {
        "overall": _group_stats(list(problems.values())),
        "by_data_source": {ds: _group_stats(ps) for ds, ps in sorted(by_source.items())},
    }


__all__ = ["ScoringRun", "Scorer", "index_completions", "pass_at_k", "score_completions", "summarize"]
