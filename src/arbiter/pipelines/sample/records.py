"""What ``arbiter sample`` reads and writes: the prompts of a verl dataset (:func:`load_prompts`), the
completions records ``arbiter score`` reads (:func:`completion_record`), and what an existing output already
holds (:func:`scan_existing`, for resume without duplicates). See ``docs/codegen.md`` ("Sampling").
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from arbiter.datasets.io import read_jsonl
from arbiter.datasets.verl_rows import RowError, iter_raw_rows, parse_row

#: Record fields that must match between a resumed output and this run (else the samples would mix).
RUN_FIELDS = ("model", "temperature", "top_p", "max_tokens")


@dataclass(frozen=True)
class Prompt:
    """One dataset row to sample: its data_source-qualified ``key``, ``data_source``, ``index`` and the
    ``prompt`` messages exactly as stored."""

    key: str
    data_source: str
    index: Any
    messages: list[dict[str, Any]]


def load_prompts(dataset: str | os.PathLike, *, split: str | None = None) -> tuple[list[Prompt], list[str]]:
    """The rows of ``dataset`` to sample (in file order) and the problems found (a row that is not a verl row,
    a row without prompt messages, a repeated row key: each message names the row and the field; such rows are
    skipped). Raises ``ValueError`` naming the file when it cannot be read."""
    prompts: list[Prompt] = []
    problems: list[str] = []
    seen: set[str] = set()
    for position, raw in enumerate(iter_raw_rows(dataset, split=split)):
        try:
            row = parse_row(raw, position)
        except RowError as exc:
            problems.append(str(exc))
            continue
        if not row.prompt:
            problems.append(f"row {row.key!r} (position {position}): prompt: no messages")
            continue
        if row.key in seen:
            problems.append(f"row {row.key!r} (position {position}): repeats an earlier row key; sampled once")
            continue
        seen.add(row.key)
        messages = [m.model_dump(exclude_none=True) for m in row.prompt]
        prompts.append(Prompt(row.key, row.data_source, row.index, messages))
    return prompts, problems


def record_key(record: dict[str, Any]) -> str:
    """The sink key of a completions record: ``"<row key>#<first sample index>"``."""
    return f"{record['key']}#{record['sample_indices'][0]}"


def completion_record(prompt: Prompt, indices: list[int], choices: list[tuple[str, str | None]], *, model: str,
                      sampling: dict[str, Any], usage: dict[str, int] | None) -> dict[str, Any]:
    """One completions record (one request's answers), the shape ``arbiter score`` reads: ``key``,
    ``data_source``, ``index``, ``responses`` (in sample order), plus ``sample_indices``, ``finish_reasons``,
    ``usage`` (the request's token usage), ``model`` and the sampling parameters (``sampling``: temperature,
    top_p, max_tokens, seed, n as sent)."""
    return {"key": prompt.key, "data_source": prompt.data_source, "index": prompt.index,
            "sample_indices": indices, "responses": [c for c, _ in choices],
            "finish_reasons": [f for _, f in choices], "usage": usage, "model": model, "sampling": sampling}


def run_fields(model: str, sampling: dict[str, Any]) -> dict[str, Any]:
    """The fields of :data:`RUN_FIELDS` for a run (``model`` and the sampling parameters)."""
    return {"model": model, **{k: sampling.get(k) for k in RUN_FIELDS if k != "model"}}


def scan_existing(path: Path, fields: dict[str, Any]) -> dict[str, set[int]]:
    """``row key -> sample indices`` already in the output ``path`` (read after the sink has cut a torn last
    line). Raises ``ValueError`` when a record was made with another model or other sampling parameters
    (``fields``, :func:`run_fields`): resuming would mix the two runs' samples."""
    done: dict[str, set[int]] = {}
    if not path.exists():
        return done
    for number, rec in enumerate(read_jsonl(path, objects=True), 1):
        old = run_fields(rec.get("model"), rec.get("sampling") or {})
        if old != fields:
            diff = ", ".join(f"{k} {old[k]!r} -> {fields[k]!r}" for k in fields if old.get(k) != fields[k])
            raise ValueError(f"--out {path} line {number} was sampled with other settings ({diff}); "
                             f"use another --out file or delete it")
        done.setdefault(str(rec["key"]), set()).update(int(i) for i in rec["sample_indices"])
    return done


__all__ = ["Prompt", "RUN_FIELDS", "completion_record", "load_prompts", "record_key", "run_fields",
           "scan_existing"]
