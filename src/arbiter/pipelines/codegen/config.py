"""What the verdicts of an ``arbiter score`` folder depend on (``config.json``), and how a rerun
is compared with it: inputs by content sha256 (moving or renaming a file is fine), the split and
the verdict-changing options. See ``docs/codegen.md`` ("Batch scoring").
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from arbiter.pipelines.runs import CONFIG_FILE, ConfigMismatch, ConfigRules
from arbiter.pipelines.runs import check_config as _check

VERDICTS_FILE = "verdicts.jsonl"


def _sha_file(path: Path, h: Any) -> int:
    size = 0
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
            size += len(chunk)
    return size


def input_identity(path: str | os.PathLike) -> dict[str, Any]:
    """``{"path", "bytes", "sha256"}`` of an input file, or of a folder (an HF ``datasets``
    folder): every regular file under it in sorted relative-path order, each hashed as its path,
    size and content. Streams (1 MiB at a time). Raises ``OSError`` for a missing path."""
    p = Path(path)
    h = hashlib.sha256()
    if p.is_dir():
        size = 0
        for f in sorted(q for q in p.rglob("*") if q.is_file()):
            rel = f.relative_to(p).as_posix()
            h.update(f"{rel}\0{f.stat().st_size}\0".encode("utf-8", "surrogateescape"))
            size += _sha_file(f, h)
    else:
        size = _sha_file(p, h)
    return {"path": str(p.resolve()), "bytes": size, "sha256": h.hexdigest()}


def config_fingerprint(dataset: str | os.PathLike, completions: str | os.PathLike, split: str | None,
                       options: Mapping[str, Any] | None) -> dict[str, Any]:
    """The content of ``config.json`` (``docs/codegen.md``) for these inputs and options."""
    return {"version": 1, "dataset": input_identity(dataset), "completions": input_identity(completions),
            "split": split, "options": dict(sorted((options or {}).items()))}


def _short(sha: Any) -> str:
    return f"{sha[:12]}..." if isinstance(sha, str) else repr(sha)


def _diffs(old: dict[str, Any], fingerprint: dict[str, Any]) -> list[str]:
    diffs: list[str] = []
    if old.get("version") != fingerprint["version"]:
        diffs.append(f"config version ({old.get('version')!r} -> {fingerprint['version']!r})")
    for name in ("dataset", "completions"):
        was = old.get(name) if isinstance(old.get(name), dict) else {}
        now = fingerprint[name]
        if was.get("sha256") != now["sha256"]:
            diffs.append(f"{name} file content (sha256 {_short(was.get('sha256'))} -> {_short(now['sha256'])}; "
                         f"was {was.get('path')}, now {now['path']})")
    if old.get("split") != fingerprint["split"]:
        diffs.append(f"split ({old.get('split')!r} -> {fingerprint['split']!r})")
    o = old.get("options") if isinstance(old.get("options"), dict) else {}
    n = fingerprint["options"]
    diffs += [f"option {k} ({o.get(k)!r} -> {n.get(k)!r})" for k in sorted(set(o) | set(n)) if o.get(k) != n.get(k)]
    return diffs


def _missing(out_dir: Path) -> str | None:
    verdicts = out_dir / VERDICTS_FILE
    if verdicts.exists() and verdicts.read_bytes().strip():
        return (f"{out_dir} holds {VERDICTS_FILE} but no {CONFIG_FILE} (made by an older arbiter, or the file was "
                f"deleted): cannot tell which dataset, completions and options its verdicts were made with; "
                f"use a new --out folder (or delete {out_dir})")
    return None


def _refuse(out: Path, diffs: list[str]) -> str:
    return (f"{out} holds verdicts made with other inputs or options; differs: {'; '.join(diffs)}. Its verdicts "
            f"would be kept for responses they were not made for: use a new --out folder (or delete {out})")


#: ``arbiter score``'s comparison: by content hash, every difference named, strict about a
#: missing or unreadable ``config.json``.
RULES = ConfigRules(what="verdicts", describe=_diffs, missing=_missing, refuse=_refuse,
                    unreadable=lambda path, out, exc: f"{path} is unreadable ({exc}); use a new --out folder "
                                                      f"(or delete {out})")


def check_config(out_dir: Path, fingerprint: dict[str, Any]) -> None:
    """Record ``fingerprint`` in ``out_dir/config.json`` on the first run; on a rerun, raise
    :class:`ConfigMismatch` naming every difference. Paths and sizes are informative only: the
    inputs are compared by content hash. Touches nothing else in ``out_dir``."""
    _check(out_dir, fingerprint, RULES)


def text_sha256(value: Any) -> str:
    """sha256 (hex) of a response or ground truth: a string's UTF-8 bytes (lone surrogates kept
    via ``surrogatepass``), anything else as canonical JSON (sorted keys, no spaces)."""
    if not isinstance(value, str):
        value = json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=str)
    return hashlib.sha256(value.encode("utf-8", "surrogatepass")).hexdigest()



__all__ = ["CONFIG_FILE", "ConfigMismatch", "RULES", "VERDICTS_FILE", "check_config", "config_fingerprint",
           "input_identity", "text_sha256"]
