"""One dataset row reduced to what the report counts (:class:`RowFacts`): its source, ``data_source``, the
goldilocks annotation, its test-suite size and its prompt length. Streams any verl dataset. See
``docs/report.md`` ("Dataset report").
"""

from __future__ import annotations

import os
import re
from collections import Counter
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from arbiter.datasets.verl_rows import iter_raw_rows, row_key
from arbiter.judge.encodings.verl import verl_ground_truth_to_suite
from arbiter.judge.testsuite import InvalidTestSuite
from arbiter.pipelines.report.tokens import PromptMeter

#: ``extra_info.index`` of a consolidated row: ``<source prefix>_<number>`` (``deepcoder_12``, ``cco_3``).
_INDEXED = re.compile(r"^(.+)_\d+$")


@dataclass
class RowFacts:
    """``source``: the index prefix of a re-indexed row, else its ``data_source``; ``cases``: test-suite
    size (``None`` when the ground truth does not convert); ``lower``/``upper``: per-completion scores of
    the weak and strong model (``None`` without the annotation); ``lower_rate``/``upper_rate``: their pass
    rates (from the scores when stored, else the stored rate); ``stored_rate_differs``: a stored rate
    disagrees with its scores (the scores are used); ``prompt``: prompt length."""

    key: str
    source: str
    data_source: str
    cases: int | None
    prompt: int
    lower: list[float] | None
    upper: list[float] | None
    lower_rate: float | None
    upper_rate: float | None
    stored_rate_differs: bool = False


def source_of(data_source: str, index: Any) -> str:
    """The row's source: the prefix of a consolidated index (``deepcoder_12`` -> ``deepcoder``), else its
    ``data_source``."""
    m = _INDEXED.match(str(index)) if index is not None else None
    return m.group(1) if m else data_source


def code_source(data_source: str) -> str:
    """``data_source`` as consolidation writes it: ``code_`` prefixed unless it contains ``code``."""
    return data_source if "code" in data_source else f"code_{data_source}"


def _scores(value: Any) -> list[float] | None:
    if value is None:
        return None
    try:
        return [float(x) for x in value]
    except (TypeError, ValueError):
        return None


def _rate(value: Any, scores: list[float] | None) -> float | None:
    """The pass rate: the fraction of ``scores`` equal to 1.0 (the card's definition), else the stored
    ``value``."""
    if scores:
        return sum(1 for s in scores if s == 1.0) / len(scores)
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    return None


def _differs(value: Any, scores: list[float] | None) -> bool:
    """A stored rate ``value`` that its ``scores`` do not give."""
    stored = _rate(value, None)
    return bool(scores) and stored is not None and abs(stored - _rate(None, scores)) > 1e-9


def facts_of(raw: Mapping[str, Any], position: int, meter: PromptMeter) -> RowFacts:
    """The facts of one raw row (as :func:`iter_raw_rows` yields it)."""
    ds = str(raw.get("data_source"))
    extra = raw.get("extra_info") or {}
    key = row_key(ds, extra.get("index"), position)
    try:
        cases: int | None = len(verl_ground_truth_to_suite((raw.get("reward_model") or {}).get("ground_truth"),
                                                           row=key))
    except (InvalidTestSuite, ValueError, TypeError):
        cases = None
    lower, upper = _scores(extra.get("lower_scores")), _scores(extra.get("upper_scores"))
    prompt = raw.get("prompt")
    messages = [m for m in prompt if isinstance(m, Mapping)] if isinstance(prompt, (list, tuple)) else []
    return RowFacts(key=key, source=source_of(ds, extra.get("index")), data_source=ds, cases=cases,
                    prompt=meter.measure(messages), lower=lower, upper=upper,
                    lower_rate=_rate(extra.get("lower_pass_rate"), lower),
                    upper_rate=_rate(extra.get("upper_pass_rate"), upper),
                    stored_rate_differs=(_differs(extra.get("lower_pass_rate"), lower)
                                         or _differs(extra.get("upper_pass_rate"), upper)))


def iter_facts(path: str | os.PathLike, meter: PromptMeter, split: str | None = None) -> Iterator[RowFacts]:
    """:class:`RowFacts` of every row of a verl dataset (Parquet, JSONL, HF folder), streamed."""
    for position, raw in enumerate(iter_raw_rows(path, split=split, batch_size=64)):
        yield facts_of(raw, position, meter)


def count_candidates(path: str | os.PathLike, split: str | None = None) -> Counter[str]:
    """Rows of a candidate dataset by ``data_source`` as consolidation writes it (:func:`code_source`)."""
    counts: Counter[str] = Counter()
    for raw in iter_raw_rows(path, columns=["data_source"], split=split, batch_size=1024):
        counts[code_source(str(raw.get("data_source")))] += 1
    return counts


__all__ = ["RowFacts", "code_source", "count_candidates", "facts_of", "iter_facts", "source_of"]
