"""The run folder's ``config.json``: what the verdicts depend on; a rerun with anything else is refused.
See ``docs/oracle.md``."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from arbiter.pipelines.oracle.options import VerifyOptions
from arbiter.pipelines import runs
from arbiter.pipelines.runs import CONFIG_FILE, ConfigMismatch, ConfigRules

__all__ = ["CONFIG_FILE", "ConfigMismatch", "check_config", "config_fingerprint"]


#: The oracle's wording of a refused rerun ("... holds verdicts made with other inputs or options ...").
RULES = ConfigRules(what="verdicts")


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
    change verdicts (``measure``, ``min_speedup``, ``measure_cases``, ``largest_fraction``, ``spot_checks``,
    ``gen_plan``)."""
    gens = None
    if generators is not None:
        gens = {p.name: _file_sha(p) for p in sorted(Path(generators).glob("*.py"))}
    # version 2: hidden cases the seed's source fails are dropped (pipelines.oracle.hidden_tests), which changes verdicts
    # version 3: the measured program must be the program that runs (code changes refused, native cross-check, spot
    # checks: docs/measurement.md), which changes the verdicts of answers that behave differently when measured
    return {"version": 3, "seeds": _file_sha(seeds), "hidden": _file_sha(hidden), "generators": gens,
            "options": {k: v for k, v in opts.to_dict().items() if k not in ("workers", "wall_repeats")}
            | ({"wall_repeats": opts.wall_repeats} if opts.measure == "wall" else {})}


def check_config(out_dir: Path, fingerprint: dict[str, Any]) -> None:
    """Record ``fingerprint`` in ``out_dir/config.json`` on the first run; on a rerun, raise
    :class:`~arbiter.pipelines.runs.ConfigMismatch` naming what changed (a rerun resumes the *same* job)."""
    runs.check_config(out_dir, fingerprint, RULES)
