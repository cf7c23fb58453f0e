"""Shards of a scoring run without Ray: ``arbiter score --shard i/N`` scores the completions rows
whose key falls in shard ``i`` (a stable hash of the row key, so a row's responses stay together),
and :func:`merge_score_shards` joins shard folders into one folder equal to a single run's: it
checks that every shard was made from the same dataset, completions and options, that the folders
are shards 0..N-1 of one N, each once, and that every shard finished (a verdict for each response
of its rows: an interrupted or still running shard lacks some), refuses keys found in two shards,
writes ``verdicts.jsonl`` in the completions' order and rebuilds ``problems.jsonl`` and
``summary.json``. See ``docs/cluster.md`` ("Shards").
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from arbiter.datasets.io import dumps_line, read_jsonl
from arbiter.pipelines.codegen.config import VERDICTS_FILE, config_fingerprint
from arbiter.pipelines.codegen.inputs import ScoringInputs, load_inputs, printable_key
from arbiter.pipelines.codegen.summary import summarize
from arbiter.pipelines.outputs import holds_out_dirs
from arbiter.pipelines.runs import CONFIG_FILE, ERRORS_FILE, RunFolder, changed_fields

SHARD_OPTION = "shard"


class MergeRefused(ValueError):
    """The shard folders cannot be merged (other inputs or options, not one set of shards, an
    unfinished shard, overlapping keys); names them."""


def shard_of(row_key: str, n: int) -> int:
    """The shard (0..n-1) of a row key: the first 8 bytes of its sha256, modulo ``n``."""
    return int.from_bytes(hashlib.sha256(row_key.encode("utf-8", "surrogatepass")).digest()[:8], "big") % n


def shard_inputs(ins: ScoringInputs, i: int, n: int) -> ScoringInputs:
    """``ins`` with only the completions rows of shard ``i`` of ``n``."""
    kept = {k: v for k, v in ins.comp_index.items() if shard_of(k, n) == i}
    return dataclasses.replace(ins, comp_index=kept, records=sum(len(v) for v in kept.values()),
                               responses=sum(c for v in kept.values() for _, c in v))


def parse_part(text: str) -> tuple[int, int]:
    """``"i/N"`` -> ``(i, N)``; ``ValueError`` unless it is that with ``0 <= i < N``."""
    try:
        i, n = (int(x) for x in str(text).split("/"))
    except ValueError:
        raise ValueError(f"must be i/N (e.g. 0/4), got {text!r}") from None
    if not 0 <= i < n:
        raise ValueError(f"i/N needs 0 <= i < N, got {text!r}")
    return i, n


def _config(folder: Path) -> dict[str, Any]:
    try:
        return json.loads((folder / CONFIG_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise MergeRefused(f"{folder}: no readable {CONFIG_FILE} ({exc}); not an arbiter score folder") from None


def _common_config(shards: Sequence[Path]) -> tuple[dict[str, Any], dict[Path, tuple[int, int]]]:
    """The shards' config without the shard option, and each folder's ``(i, N)``; refuses a folder
    scored without ``--shard`` and shards made from anything else."""
    base: dict[str, Any] | None = None
    parts: dict[Path, tuple[int, int]] = {}
    for folder in shards:
        cfg = _config(folder)
        try:
            parts[folder] = parse_part((cfg.get("options") or {}).get(SHARD_OPTION))
        except ValueError:
            raise MergeRefused(f"{folder} is not a shard: its {CONFIG_FILE} records no --shard i/N; "
                               f"only the folders of one `arbiter score --shard i/N` run make a whole run") from None
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
                               f"{', '.join(diffs)}); only shards of one run make a whole run")
    assert base is not None
    return base, parts


def _missing_parts(parts: dict[Path, tuple[int, int]]) -> list[str]:
    """The shards ``"i/N"`` not given; refuses shards of different N and a shard given twice."""
    (first, (_, n)), *_ = parts.items()
    by_part: dict[tuple[int, int], Path] = {}
    for folder, (i, this_n) in parts.items():
        if this_n != n:
            raise MergeRefused(f"{folder} is shard {i}/{this_n} but {first} is shard {parts[first][0]}/{n}: "
                               f"shards of different N; give the shards of one --shard i/N run")
        if (i, n) in by_part:
            raise MergeRefused(f"shard {i}/{n} is given twice: {by_part[(i, n)]} and {folder}")
        by_part[(i, n)] = folder
    return [f"{i}/{n}" for i in range(n) if (i, n) not in by_part]


def _read_records(path: Path) -> list[dict[str, Any]]:
    """The records of a shard's JSONL output (none when it has not written the file yet)."""
    if not path.exists():
        return []
    try:
        return list(read_jsonl(path))
    except ValueError as exc:
        raise MergeRefused(f"{exc}: the shard did not finish writing it; rerun its `arbiter score` command "
                           f"(it resumes)") from None


def _unscorable_rows(folder: Path) -> set[str]:
    """The row keys the shard reported as rows it cannot score (``errors.jsonl`` kind ``dataset``:
    no verdict is ever written for their responses)."""
    return {str(e["row"]) for e in _read_records(folder / ERRORS_FILE) if e.get("kind") == "dataset" and "row" in e}


def _unjudged(ins: ScoringInputs, judged: Counter[str], part: tuple[int, int], unscorable: set[str]
              ) -> tuple[int, int]:
    """``(responses without a verdict, responses)`` of the rows of shard ``part`` of the inputs;
    ``judged``: the shard's verdicts per row key; ``unscorable``: rows it reported it cannot score
    (named as ``errors.jsonl`` names them: :func:`printable_key`)."""
    expected = {k: sum(c for _, c in v) for k, v in ins.comp_index.items()
                if shard_of(k, part[1]) == part[0] and printable_key(k) not in unscorable}
    missing = sum(max(0, n - judged[k]) for k, n in expected.items())
    return missing, sum(expected.values())


def _refuse_unfinished(unfinished: dict[Path, tuple[int, int]], parts: dict[Path, tuple[int, int]]) -> None:
    """Refuses the first shard with responses lacking a verdict (interrupted, still running, SANDBOX_ERROR)."""
    if not unfinished:
        return
    (folder, (missing, total)), *_ = unfinished.items()
    i, n = parts[folder]
    raise MergeRefused(f"{folder} (shard {i}/{n}) did not finish: {missing} of its {total} responses have no "
                       f"verdict (interrupted, still running, or SANDBOX_ERROR); rerun its `arbiter score ... "
                       f"--shard {i}/{n}` command (it resumes), or pass --allow-partial")


def _no_paths(cfg: dict[str, Any]) -> dict[str, Any]:
    return {**cfg, **{n: {**cfg[n], "path": None} for n in ("dataset", "completions") if isinstance(cfg.get(n), dict)}}


def check_shard_set(folders: Sequence[Path], *, allow_partial: bool = False
                    ) -> tuple[dict[str, Any], dict[Path, tuple[int, int]], list[str]]:
    """``(config, parts, missing)`` of folders that must be the shards of one run: their common
    config (without ``--shard``), each folder's ``(i, N)`` and the shards ``"i/N"`` not given.
    Refuses a folder given twice, a non-shard, other inputs or options, other N, a repeated index,
    and missing shards unless ``allow_partial``."""
    if not folders:
        raise MergeRefused("no shard folders given")
    if len({f.resolve() for f in folders}) != len(folders):
        raise MergeRefused("a shard folder is given twice: its keys would overlap")
    cfg, parts = _common_config(folders)
    missing_parts = _missing_parts(parts)
    if missing_parts and not allow_partial:
        raise MergeRefused(f"shard(s) {', '.join(missing_parts)} missing ({len(folders)} of "
                           f"{len(folders) + len(missing_parts)} given); pass every shard folder, or pass "
                           f"--allow-partial")
    return cfg, parts, missing_parts


def load_shard_inputs(cfg: dict[str, Any], *, dataset: str | os.PathLike | None = None,
                      completions: str | os.PathLike | None = None, split: str | None = None
                      ) -> tuple[ScoringInputs, dict[str, Any]]:
    """The inputs the shards with common config ``cfg`` were scored on (default: its paths), and
    their config as a single run records it; refuses files whose content is not the one scored."""
    ins = load_inputs(dataset or cfg["dataset"]["path"], completions or cfg["completions"]["path"],
                      split=split if split is not None else cfg.get("split"))
    found = config_fingerprint(ins.dataset, ins.completions, ins.split, cfg["options"])
    for name in ("dataset", "completions"):
        if found[name]["sha256"] != cfg[name]["sha256"]:
            raise MergeRefused(f"{name} {found[name]['path']} is not the file the shards were scored on "
                               f"(sha256 {found[name]['sha256'][:12]}... != {cfg[name]['sha256'][:12]}...)")
    return ins, found


def unfinished_shards(ins: ScoringInputs, judged: dict[Path, Counter[str]], parts: dict[Path, tuple[int, int]],
                      *, allow_partial: bool = False) -> dict[Path, tuple[int, int]]:
    """``folder -> (responses without a verdict, responses)`` of the shards that did not finish;
    ``judged``: each folder's verdicts per row key. Refuses the first unless ``allow_partial``."""
    unfinished = {f: counts for f in parts
                  if (counts := _unjudged(ins, judged[f], parts[f], _unscorable_rows(f)))[0]}
    if not allow_partial:
        _refuse_unfinished(unfinished, parts)
    return unfinished


@holds_out_dirs
def merge_score_shards(out_dir: str | os.PathLike, shards: Sequence[str | os.PathLike], *,
                       dataset: str | os.PathLike | None = None, completions: str | os.PathLike | None = None,
                       split: str | None = None, allow_partial: bool = False) -> dict[str, Any]:
    """Merge ``arbiter score`` shard folders into ``out_dir`` (a new or empty folder); returns the
    summary. ``dataset``/``completions``: the inputs (default: the paths in the shards' config;
    their content must match its sha256). ``allow_partial``: merge even when shards are missing or
    unfinished; the summary's ``partial`` then says what is missing. Raises :class:`MergeRefused`,
    ``OutputDirError``."""
    folders = [Path(s) for s in shards]
    cfg, parts, missing_parts = check_shard_set(folders, allow_partial=allow_partial)
    records: dict[str, dict[str, Any]] = {}
    judged: dict[Path, Counter[str]] = {}
    for folder in folders:
        judged[folder] = Counter()
        for rec in _read_records(folder / VERDICTS_FILE):
            judged[folder][rec["row_key"]] += 1
            if rec["key"] in records:
                raise MergeRefused(f"key {rec['key']!r} is in {folder} and in {records[rec['key']]['_from']}: "
                                   f"shards overlap; merge shards of one --shard i/N run only")
            records[rec["key"]] = {**rec, "_from": str(folder)}
    ins, merged_cfg = load_shard_inputs(cfg, dataset=dataset, completions=completions, split=split)
    unfinished = unfinished_shards(ins, judged, parts, allow_partial=allow_partial)
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
        if missing_parts or unfinished:
            summary["partial"] = {"missing_shards": missing_parts,
                                  "unfinished_shards": {str(f): n for f, (n, _) in unfinished.items()},
                                  "responses_without_verdict": ins.responses - len(ranked)}
        folder.write_summary(summary)
    return summary


__all__ = ["MergeRefused", "SHARD_OPTION", "check_shard_set", "load_shard_inputs", "merge_score_shards", "parse_part",
           "shard_inputs", "shard_of", "unfinished_shards"]
