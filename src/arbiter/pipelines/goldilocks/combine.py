"""Several ``arbiter score`` folders of one model read as one (``--strong A --strong B``): shards of a
run (disjoint rows) are joined; a row scored in two folders from different completions files gets the
responses of both (the second's response indexes follow the first's). Folders made from another
dataset, split or options, or two folders that scored the same completions file, are refused.
See ``docs/goldilocks.md`` ("Score folders and the join").
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from arbiter.pipelines.goldilocks.errors import CurationInputError
from arbiter.pipelines.goldilocks.score_folders import ScoreFolder, RowScores

#: Options that differ between the shards of one run (``arbiter score --shard``).
PER_FOLDER_OPTIONS = ("shard",)


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


def load_folders(paths: str | os.PathLike | Sequence[str | os.PathLike], label: str) -> ScoreFolder:
    """One :class:`ScoreFolder` from one path or several (see the module). Its ``path`` and
    ``config`` are the first folder's (``config.completions`` dropped when the folders scored
    several files). Raises :class:`CurationInputError` naming ``label`` and the folders."""
    many = [paths] if isinstance(paths, (str, os.PathLike)) else list(paths)
    if not many:
        raise CurationInputError(f"{label}: no folder given")
    folders = [ScoreFolder.load(p, label) for p in many]
    first = folders[0]
    if len(folders) == 1:
        return first
    rows = {k: replace(r, passed=dict(r.passed), bad=dict(r.bad), truth=set(r.truth)) for k, r in first.rows.items()}
    completions = {((first.config or {}).get("completions") or {}).get("sha256"): first.path}
    sandbox, skipped, partial = first.sandbox_errors.copy(), first.skipped, first.partial
    for f in folders[1:]:
        if f.path.resolve() == first.path.resolve() or _identity(f) != _identity(first):
            raise CurationInputError(f"{label} {f.path} was scored from another dataset, split or options than "
                                     f"{label} {first.path} (or is the same folder); give folders of one model's "
                                     f"scoring of one dataset")
        sha = ((f.config or {}).get("completions") or {}).get("sha256")
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


__all__ = ["PER_FOLDER_OPTIONS", "load_folders"]
