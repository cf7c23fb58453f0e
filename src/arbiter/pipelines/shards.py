"""Shards of a scoring run without Ray: ``arbiter score --shard i/N`` scores the completions rows
whose key falls in shard ``i`` (a stable hash of the row key, so a row's responses stay together),
and :func:`merge_score_shards` joins shard folders into one folder equal to a single run's: it
checks that every shard was made from the same dataset, completions and options, refuses keys
found in two shards, writes ``verdicts.jsonl`` in the completions' order and rebuilds
``problems.jsonl`` and ``summary.json``. See ``docs/cluster.md`` ("Shards").
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from arbiter.datasets.io import dumps_line, read_jsonl
from arbiter.pipelines.codegen.config import VERDICTS_FILE, config_fingerprint
from arbiter.pipelines.codegen.inputs import ScoringInputs, load_inputs
from arbiter.pipelines.codegen.summary import summarize
from arbiter.pipelines.outputs import holds_out_dirs
from arbiter.pipelines.runs import CONFIG_FILE, RunFolder, changed_fields

SHARD_OPTION = "shard"


class MergeRefused(ValueError):
    """The shard folders cannot be merged (other inputs or options, overlapping keys); names them."""


def shard_of(row_key: str, n: int) -> int:
    """The shard (0..n-1) of a row key: the first 8 bytes of its sha256, modulo ``n``."""
    return int.from_bytes(hashlib.sha256(row_key.encode("utf-8", "surrogateescape")).digest()[:8], "big") % n


def shard_inputs(ins: ScoringInputs, i: int, n: int) -> ScoringInputs:
    """``ins`` with only the completions rows of shard ``i`` of ``n``."""
    kept = {k: v for k, v in ins.comp_index.items() if shard_of(k, n) == i}
    return dataclasses.replace(ins, comp_index=kept, records=sum(len(v) for v in kept.values()),
                               responses=sum(c for v in kept.values() for _, c in v))


def _config(folder: Path) -> dict[str, Any]:
    try:
        return json.loads((folder / CONFIG_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise MergeRefused(f"{folder}: no readable {CONFIG_FILE} ({exc}); not an arbiter score folder") from None


def _common_config(shards: Sequence[Path]) -> dict[str, Any]:
    """The shards' config without the shard option; refuses shards made from anything else."""
    base: dict[str, Any] | None = None
    for folder in shards:
        cfg = _config(folder)
        cfg["options"] = {k: v for k, v in (cfg.get("options") or {}).items() if k != SHARD_OPTION}
        for name in ("dataset", "completions"):
            if isinstance(cfg.get(name), dict):
                cfg[name] = {"sha256": cfg[name].get("sha256"), "bytes": cfg[name].get("bytes"),
                             "path": cfg[name].get("path")}
        if base is None:
            base, first = cfg, folder
            continue
        diffs = changed_fields(_no_paths(base), _no_paths(cfg))
        if diffs:
            raise MergeRefused(f"{folder} was made with other inputs or options than {first} (changed: "
                               f"{', '.join(diffs)}); only shards of one run can be merged")
    assert base is not None
    return base


def _no_paths(cfg: dict[str, Any]) -> dict[str, Any]:
    return {**cfg, **{n: {**cfg[n], "path": None} for n in ("dataset", "completions") if isinstance(cfg.get(n), dict)}}


@holds_out_dirs
def merge_score_shards(out_dir: str | os.PathLike, shards: Sequence[str | os.PathLike], *,
                       dataset: str | os.PathLike | None = None, completions: str | os.PathLike | None = None,
                       split: str | None = None) -> dict[str, Any]:
    """Merge ``arbiter score`` shard folders into ``out_dir`` (a new or empty folder); returns the
    summary. ``dataset``/``completions``: the inputs (default: the paths in the shards' config;
    their content must match its sha256). Raises :class:`MergeRefused`, ``OutputDirError``."""
    folders = [Path(s) for s in shards]
    if not folders:
        raise MergeRefused("no shard folders given")
    if len({f.resolve() for f in folders}) != len(folders):
        raise MergeRefused("a shard folder is given twice: its keys would overlap")
    cfg = _common_config(folders)
    records: dict[str, dict[str, Any]] = {}
    for folder in folders:
        for rec in read_jsonl(folder / VERDICTS_FILE):
            if rec["key"] in records:
                raise MergeRefused(f"key {rec['key']!r} is in {folder} and in {records[rec['key']]['_from']}: "
                                   f"shards overlap; merge shards of one --shard i/N run only")
            records[rec["key"]] = {**rec, "_from": str(folder)}
    ins = load_inputs(dataset or cfg["dataset"]["path"], completions or cfg["completions"]["path"],
                      split=split if split is not None else cfg.get("split"))
    merged_cfg = config_fingerprint(ins.dataset, ins.completions, ins.split, cfg["options"])
    for name in ("dataset", "completions"):
        if merged_cfg[name]["sha256"] != cfg[name]["sha256"]:
            raise MergeRefused(f"{name} {merged_cfg[name]['path']} is not the file the shards were scored on "
                               f"(sha256 {merged_cfg[name]['sha256'][:12]}... != {cfg[name]['sha256'][:12]}...)")
    with RunFolder(out_dir) as folder:
        folder.check_config(merged_cfg)
        order = {k: n for n, k in enumerate(ins.comp_index)}
        ranked = sorted(records.values(), key=lambda r: (order.get(r["row_key"], len(order)), r["response_idx"]))
        with open(folder.file(VERDICTS_FILE), "w", encoding="utf-8") as f:
            for rec in ranked:
                rec.pop("_from")
                f.write(dumps_line(rec) + "\n")
        summary = summarize(folder.path, ins.comp_index.keys())
        summary.update({"sandbox_errors_this_run": 0, "errors_this_run": 0})
        folder.write_summary(summary)
    return summary


__all__ = ["MergeRefused", "SHARD_OPTION", "merge_score_shards", "shard_inputs", "shard_of"]
