"""Several ``arbiter score`` folders of one model read as one (``--strong A --strong B``): shards of a
run (disjoint rows) are joined; a row scored in two folders from different completions files gets the
responses of both (the second's response indexes follow the first's). Folders made from another
dataset, split or options are refused, and so are the folders of one completions file unless they
are the shards of one whole finished run, as ``arbiter merge`` checks them (:mod:`arbiter.pipelines.shards`).
See ``docs/goldilocks.md`` ("Score folders and the join").
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from arbiter.pipelines.codegen import CONFIG_FILE
from arbiter.pipelines.codegen.inputs import ScoringInputs
from arbiter.pipelines.goldilocks.errors import CurationInputError
from arbiter.pipelines.goldilocks.score_folders import ScoreFolder, RowScores
from arbiter.pipelines.shards import (
    SHARD_OPTION, MergeRefused, check_shard_set, load_shard_inputs, unfinished_shards,
)

#: Options that differ between the shards of one run (``arbiter score --shard``).
PER_FOLDER_OPTIONS = (SHARD_OPTION,)


def _identity(folder: ScoreFolder) -> dict[str, Any]:
    cfg = folder.config or {}
    options = {k: v for k, v in (cfg.get("options") or {}).items() if k not in PER_FOLDER_OPTIONS}
    return {"dataset": (cfg.get("dataset") or {}).get("sha256"), "split": cfg.get("split"), "options": options}


def _join(into: RowScores, more: RowScores) -> None:
    offset = len(into.passed)
    into.passed.update({offset + i: ok for i, ok in more.passed.items()})
    into.bad.update({offset + i: s for i, s in more.bad.items()})
    into.truth |= more.truth
    into.invalid |= more.invalid
    into.vacuous |= more.vacuous


def _completions_sha(folder: ScoreFolder) -> str | None:
    return ((folder.config or {}).get("completions") or {}).get("sha256")


def _is_shard(folder: ScoreFolder) -> bool:
    return bool(((folder.config or {}).get("options") or {}).get(SHARD_OPTION))


def _runs(folders: list[ScoreFolder]) -> list[list[ScoreFolder]]:
    """The folders that must be the shards of one run: per completions file, its folders when
    there are several or one is a shard."""
    by_file: dict[str, list[ScoreFolder]] = {}
    for f in folders:
        sha = _completions_sha(f)
        if sha is not None:
            by_file.setdefault(sha, []).append(f)
    return [group for group in by_file.values() if len(group) > 1 or _is_shard(group[0])]


def _scored_inputs(cfg: dict[str, Any]) -> ScoringInputs:
    """The dataset and completions the shards scored (the paths of their config)."""
    try:
        return load_shard_inputs(cfg)[0]
    except (ValueError, OSError) as exc:
        raise MergeRefused(f"{exc}; the inputs the shards scored (the paths in their {CONFIG_FILE}) are read to "
                           f"check that every shard finished") from None


def _shard_gaps(shards: list[ScoreFolder], allow_partial: bool) -> list[str]:
    """What the shards lack (for the report); refuses them, as ``arbiter merge`` does, unless they
    are one whole finished run (``allow_partial``: only a set of one N, each index once)."""
    cfg, parts, missing = check_shard_set([f.path for f in shards], allow_partial=allow_partial)
    judged = {f.path: Counter({key: len(r.passed) for key, r in f.rows.items()}) for f in shards}
    unfinished = unfinished_shards(_scored_inputs(cfg), judged, parts, allow_partial=allow_partial)
    gaps = [f"shard(s) {', '.join(missing)} not given"] if missing else []
    return gaps + [f"{folder} (shard {parts[folder][0]}/{parts[folder][1]}) did not finish: {n} of its {total} "
                   f"responses have no verdict" for folder, (n, total) in unfinished.items()]


def check_runs(folders: list[ScoreFolder], label: str, allow_partial: bool = False) -> list[str]:
    """Refuses folders of one completions file that are not the shards of one whole finished run
    (:func:`_shard_gaps`); returns what is missing when ``allow_partial``. Raises
    :class:`CurationInputError` naming ``label`` and the folder."""
    gaps: list[str] = []
    for shards in _runs(folders):
        try:
            gaps += _shard_gaps(shards, allow_partial)
        except (MergeRefused, ValueError, OSError) as exc:
            raise CurationInputError(f"{label}: {exc}") from None
    return [f"{label}: {gap}" for gap in gaps]


def load_folders(paths: str | os.PathLike | Sequence[str | os.PathLike], label: str,
                 allow_partial: bool = False) -> ScoreFolder:
    """One :class:`ScoreFolder` from one path or several (see the module). Its ``path`` and
    ``config`` are the first folder's (``config.completions`` dropped when the folders scored
    several files), ``shard_gaps`` what partial shards lack (``allow_partial``). Raises
    :class:`CurationInputError` naming ``label`` and the folders."""
    many = [paths] if isinstance(paths, (str, os.PathLike)) else list(paths)
    if not many:
        raise CurationInputError(f"{label}: no folder given")
    folders = [ScoreFolder.load(p, label) for p in many]
    first = folders[0]
    for f in folders[1:]:
        if f.path.resolve() == first.path.resolve() or _identity(f) != _identity(first):
            raise CurationInputError(f"{label} {f.path} was scored from another dataset, split or options than "
                                     f"{label} {first.path} (or is the same folder); give folders of one model's "
                                     f"scoring of one dataset")
    gaps = check_runs(folders, label, allow_partial)
    joined = first if len(folders) == 1 else _joined(folders, label)
    joined.shard_gaps = gaps
    return joined


def _joined(folders: list[ScoreFolder], label: str) -> ScoreFolder:
    """The folders' rows joined into one :class:`ScoreFolder` (see the module)."""
    first = folders[0]
    rows = {k: replace(r, passed=dict(r.passed), bad=dict(r.bad), truth=set(r.truth)) for k, r in first.rows.items()}
    completions = {_completions_sha(first): first.path}
    sandbox, skipped, partial = first.sandbox_errors.copy(), first.skipped, first.partial
    for f in folders[1:]:
        sha = _completions_sha(f)
        if sha is not None and sha in completions and set(f.rows) & set(rows):
            raise CurationInputError(f"{label} {f.path} and {completions[sha]} scored the same completions file: "
                                     f"their rows would be counted twice")
        completions.setdefault(sha, f.path)
        for key, r in f.rows.items():
            if key in rows:
                _join(rows[key], r)
            else:
                rows[key] = r
        sandbox.update(f.sandbox_errors)
        skipped, partial = skipped + f.skipped, partial + f.partial
    config = dict(first.config or {})
    if len(completions) > 1:
        config.pop("completions", None)
    return ScoreFolder(first.path, label, rows, sandbox, config or None, skipped=skipped, partial=partial)


__all__ = ["PER_FOLDER_OPTIONS", "check_runs", "load_folders"]
