"""``arbiter report``: one report folder (``report.md``, ``report.json``, PNGs) over any mix of a verl
dataset with the goldilocks annotation and ``arbiter score`` / ``pie eval`` / ``pie reward`` / ``oracle verify``
folders, each recognised by its files. See ``docs/report.md``.
"""

from __future__ import annotations

import os
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from arbiter.datasets.io import write_json_atomic, write_text_atomic
from arbiter.datasets.verl_rows import dataset_format
from arbiter.pipelines.report.compare import score_comparison
from arbiter.pipelines.report.dataset import dataset_section
from arbiter.pipelines.report.draw import DRAW
from arbiter.pipelines.report.folders import SECTIONS, folder_kind
from arbiter.pipelines.report.markdown import render
from arbiter.pipelines.report.rows import count_candidates, iter_facts
from arbiter.pipelines.report.tokens import PromptMeter


@dataclass
class ReportOptions:
    """``candidates``: ``(source name or None, path)``: a named candidate dataset counts for that source,
    an unnamed one by data_source; ``tokenizer``: a local ``tokenizer.json`` (else characters);
    ``prompt_cap``: the prompt length whose excess the report counts; ``split``: of HF dataset folders."""

    candidates: Sequence[tuple[str | None, Path]] = ()
    tokenizer: Path | None = None
    prompt_cap: int = 2048
    split: str | None = None
    title: str = "arbiter report"


@dataclass
class Report:
    """What :func:`build_report` wrote: the folder, its files and the ``report.json`` content."""

    out: Path
    files: list[str] = field(default_factory=list)
    content: dict[str, Any] = field(default_factory=dict)


def input_kind(path: Path) -> str:
    """``score`` / ``pie`` / ``pie_reward`` / ``oracle`` for a run folder, ``dataset`` for verl rows; raises
    ``ValueError``."""
    if not path.exists():
        raise ValueError(f"{path}: not found")
    kind = folder_kind(path)
    if kind is not None:
        return kind
    try:
        dataset_format(path)
    except ValueError:
        raise ValueError(f"{path}: neither a verl dataset (.parquet, .jsonl, an HF folder) nor an arbiter score, "
                         "pie eval, pie reward or oracle verify folder") from None
    return "dataset"


def _candidates(opts: ReportOptions) -> tuple[dict[str, int], Counter[str]]:
    named: dict[str, int] = {}
    by_ds: Counter[str] = Counter()
    for name, path in opts.candidates:
        counts = count_candidates(path, opts.split)
        if name:
            named[name] = named.get(name, 0) + sum(counts.values())
        else:
            by_ds.update(counts)
    return named, by_ds


def _section(kind: str, path: Path, opts: ReportOptions, meter: PromptMeter) -> dict[str, Any]:
    if kind != "dataset":
        return SECTIONS[kind](path)
    named, by_ds = _candidates(opts)
    facts = list(iter_facts(path, meter, opts.split))
    if not facts:
        raise ValueError(f"{path}: no rows")
    return dataset_section(facts, meter, candidates=named, candidates_by_ds=by_ds, cap=opts.prompt_cap)


#: File endings a dataset's name loses in a section name (a folder keeps its whole name: ``lc30.weak``).
_DATA_SUFFIXES = (".parquet", ".jsonl.gz", ".jsonl", ".json.gz", ".json", ".arrow")


def _base_name(p: Path) -> str:
    name = p.name
    if not p.is_dir():
        name = next((name[:-len(s)] for s in _DATA_SUFFIXES if name.endswith(s) and len(name) > len(s)), name)
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", name) or "input"


def _names(paths: Sequence[Path]) -> list[str]:
    names: list[str] = []
    for p in paths:
        base = _base_name(p)
        name, i = base, 2
        while name in names:
            name, i = f"{base}_{i}", i + 1
        names.append(name)
    return names


def build_report(inputs: Sequence[str | os.PathLike], out_dir: str | os.PathLike,
                 opts: ReportOptions | None = None) -> Report:
    """Compute every section, draw its PNGs and write ``report.md`` and ``report.json`` into ``out_dir``.
    Raises ``ValueError`` naming the input for one that is not recognised or cannot be read (nothing written),
    :class:`~arbiter.pipelines.report.tokens.TokenizerError` for an unusable tokenizer."""
    opts = opts or ReportOptions()
    paths = [Path(p) for p in inputs]
    if not paths:
        raise ValueError("no input: give a dataset or a run folder")
    kinds = [input_kind(p) for p in paths]
    meter = PromptMeter(opts.tokenizer)
    sections = [{"kind": k, "name": n, "path": str(p), "data": _section(k, p, opts, meter)}
                for k, n, p in zip(kinds, _names(paths), paths)]
    out = Path(out_dir)
    if folder_kind(out) is not None or out.resolve() in {p.resolve() for p in paths}:
        raise ValueError(f"--out {out}: a run folder or an input; give a folder of its own for the report")
    out.mkdir(parents=True, exist_ok=True)
    report = Report(out)
    side = score_comparison(sections)
    if side is not None:
        sections.append({"kind": "score_compare", "name": "score_folders", "path": "", "data": side})
    for sec in sections:
        sec["plots"] = DRAW[sec["kind"]](sec, out / sec["name"])
        report.files += list(sec["plots"].values())
    report.content = {"title": opts.title, "sections": sections,
                      "options": {"candidates": [[n, str(p)] for n, p in opts.candidates],
                                  "tokenizer": str(opts.tokenizer) if opts.tokenizer else None,
                                  "prompt_cap": opts.prompt_cap, "split": opts.split}}
    write_json_atomic(out / "report.json", report.content)
    write_text_atomic(out / "report.md", render(opts.title, sections))
    report.files += ["report.json", "report.md"]
    return report


def parse_candidates(values: Sequence[str]) -> list[tuple[str | None, Path]]:
    """``NAME=PATH`` or ``PATH`` (``--candidates``); a path that exists as given is never split."""
    out: list[tuple[str | None, Path]] = []
    for v in values:
        name, sep, rest = v.partition("=")
        if sep and name and not Path(v).exists():
            out.append((name, Path(rest)))
        else:
            out.append((None, Path(v)))
    for _, p in out:
        if not p.exists():
            raise ValueError(f"--candidates {p}: not found")
    return out


def section_of(content: Mapping[str, Any], kind: str) -> dict[str, Any]:
    """The first section of ``kind`` of a ``report.json`` content; raises ``KeyError``."""
    for sec in content.get("sections") or []:
        if sec.get("kind") == kind:
            return sec
    raise KeyError(kind)


__all__ = ["Report", "ReportOptions", "build_report", "input_kind", "parse_candidates", "section_of"]
