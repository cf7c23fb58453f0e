"""The run folder's ``config.json``: what the verdicts depend on; a rerun with anything else is refused.
See ``docs/oracle.md``."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from arbiter.pipelines.oracle.options import VerifyOptions
from arbiter.pipelines.outputs import write_json_atomic


class ConfigMismatch(ValueError):
    """``out_dir`` holds verdicts made with other seeds, hidden tests, generators or verdict-changing options;
    resuming into it would mix verdicts. Use another output folder (or delete that one)."""


CONFIG_FILE = "config.json"


def _file_sha(path: str | os.PathLike | None) -> str | None:
    if path is None:
        return None
    import hashlib

    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def config_fingerprint(seeds: str | os.PathLike, hidden: str | os.PathLike | None,
                       generators: str | os.PathLike | None, opts: VerifyOptions) -> dict[str, Any]:
    """What the verdicts of a run depend on besides the return rows themselves (whose key is content-addressed):
    sha256 of the seeds file, of the hidden-tests file, of every ``*.py`` generator (by name), and the options that
    change verdicts (``measure``, ``min_speedup``, ``measure_cases``, ``largest_fraction``, ``gen_plan``)."""
    gens = None
    if generators is not None:
        gens = {p.name: _file_sha(p) for p in sorted(Path(generators).glob("*.py"))}
    # version 2: hidden cases the seed's source fails are dropped (oracle_hidden_tests), which changes verdicts
    return {"version": 2, "seeds": _file_sha(seeds), "hidden": _file_sha(hidden), "generators": gens,
            "options": {k: v for k, v in opts.to_dict().items() if k not in ("workers", "wall_repeats")}
            | ({"wall_repeats": opts.wall_repeats} if opts.measure == "wall" else {})}


def check_config(out_dir: Path, fingerprint: dict[str, Any]) -> None:
    """Record ``fingerprint`` in ``out_dir/config.json`` on the first run; on a rerun, raise
    :class:`ConfigMismatch` naming what changed (DESIGN.md "Reliability": a rerun resumes the *same* job)."""
    path = out_dir / CONFIG_FILE
    if path.exists():
        try:
            old = json.loads(path.read_text(encoding="utf-8"))
        except ValueError:
            old = None
        if isinstance(old, dict) and old != fingerprint:
            changed = sorted(k for k in set(old) | set(fingerprint) if old.get(k) != fingerprint.get(k))
            if "options" in changed:
                o, n = old.get("options") or {}, fingerprint.get("options") or {}
                changed = [c for c in changed if c != "options"] + [
                    f"option {k} ({o.get(k)!r} -> {n.get(k)!r})" for k in sorted(set(o) | set(n)) if o.get(k) != n.get(k)]
            raise ConfigMismatch(f"{out_dir} holds verdicts made with other inputs or options (changed: "
                                 f"{', '.join(changed)}); use another --out folder or delete it")
        if isinstance(old, dict):
            return
    write_json_atomic(path, fingerprint)
