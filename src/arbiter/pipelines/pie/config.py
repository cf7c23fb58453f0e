"""The ``config.json`` of a PIE run folder: what its rewards depend on besides the candidates, and the refusal
(:class:`~arbiter.pipelines.runs.ConfigMismatch`) to resume into a folder made with other inputs or options.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Any

from arbiter.checkers.spec import CheckerSpec
from arbiter.datasets.io import write_json_atomic
from arbiter.datasets.pie.source import RowIndex
from arbiter.judge.task import CompileSpec
from arbiter.pipelines import runs
from arbiter.pipelines.runs import CONFIG_FILE, ConfigMismatch, ConfigRules
from arbiter.rewards.pie.options import DEFAULT_LIMITS, checker_key
from arbiter.rewards.pie.transforms import make_transform
from arbiter.timing.comparison import DEFAULT_METHOD
from arbiter.timing.cycles import DEFAULT_MODEL

__all__ = ["CONFIG_FILE", "CONFIG_RULES", "ConfigMismatch", "check_config", "reward_config"]


def _path_identity(obj: Any) -> Any:
    """The identity of an input given as a path: a file's sha256; a folder's sha256 over its listing (relative path,
    size, mtime in ns of every file; content hashing a PIE tests tree would read gigabytes); anything else (an
    in-memory ``TestSuite``, a mapping, a callable): ``None`` (not recorded)."""
    if not isinstance(obj, (str, os.PathLike)):
        return None
    p = Path(obj)
    h = hashlib.sha256()
    if p.is_file():
        with open(p, "rb") as f:
            for chunk in iter(lambda: f.read(1 << 20), b""):
                h.update(chunk)
        return {"file_sha256": h.hexdigest()}
    if p.is_dir():
        n = 0
        for root, dirs, files in os.walk(p):
            dirs.sort()
            for name in sorted(files):
                fp = Path(root, name)
                try:
                    st = fp.stat()
                except OSError:
                    continue
                h.update(f"{fp.relative_to(p).as_posix()}\0{st.st_size}\0{st.st_mtime_ns}\n".encode())
                n += 1
        return {"listing_sha256": h.hexdigest(), "files": n}
    return None


def reward_config(rows: Any, tests: Any, *, seed: int = 0, **reward_kw: Any) -> dict[str, Any]:
    """What a batch's rewards depend on besides the candidates (whose code is hashed into every key):

    - ``rows``: the identity of the rows file/folder (:class:`RowIndex` ``origin``; the split), ``tests``: of the
      tests folder/archive (:func:`_path_identity`);
    - ``options``: ``transform`` and ``transform_params``, ``method`` (default cycles) and for cycles the
      ``cycle_model`` (:meth:`~arbiter.timing.cycles.CycleModel.identity`), ``k`` (and ``seed`` when ``k > 0``: it
      picks the cases), ``checker``, the compile command, the native limits (CPU seconds, wall seconds, memory
      bytes), and ``repeats``/``warmup`` for the wall method. Not included: the cache switch and progress options
      (they do not change a reward)."""
    origin = rows.origin if isinstance(rows, RowIndex) else rows
    split = rows.split if isinstance(rows, RowIndex) else None
    chk = reward_kw.get("checker", "pie")
    chk = chk if isinstance(chk, CheckerSpec) else CheckerSpec(chk)
    spec = reward_kw.get("compile_spec") or CompileSpec()
    lim = reward_kw.get("limits") or DEFAULT_LIMITS
    method = reward_kw.get("method", DEFAULT_METHOD)
    k = reward_kw.get("k", -1)
    tf = make_transform(reward_kw.get("transform", "raw"), **dict(reward_kw.get("transform_params") or {}))
    options: dict[str, Any] = {
        "transform": tf.name, "transform_params": dict(sorted(tf.params.items())), "method": method, "k": k,
        "checker": checker_key(chk), "compile_command": spec.command,
        "limits": {"cpu_seconds": lim.cpu_seconds, "wall_seconds": lim.wall_seconds,
                   "memory_bytes": lim.memory_bytes},
    }
    if isinstance(k, int) and k > 0:
        options["seed"] = seed
    if method == "cycles":
        options["cycle_model"] = DEFAULT_MODEL.identity()
    if method == "wall":
        options["repeats"] = reward_kw.get("repeats", 5)
        options["warmup"] = reward_kw.get("warmup", 1)
    return {"version": 1, "rows": _path_identity(origin), "split": split, "tests": _path_identity(tests),
            "options": options}


def _write_config(path: Path, fingerprint: dict[str, Any]) -> None:
    write_json_atomic(path, fingerprint, indent=1, sort_keys=True, ensure_ascii=True)


#: How a PIE run folder's ``config.json`` is compared and written (:class:`~arbiter.pipelines.runs.ConfigRules`).
CONFIG_RULES = ConfigRules(
    what="rewards",
    refuse=lambda out, diffs: (f"{out} holds rewards computed with other inputs or options (changed: "
                               f"{', '.join(diffs)}); use another --out folder or delete it"),
    write=_write_config)


def check_config(out_dir: Path, fingerprint: dict[str, Any]) -> None:
    """Record ``fingerprint`` in ``out_dir/config.json`` on the first run; on a rerun, raise :class:`ConfigMismatch`
    naming what changed (inputs by name, options as ``option NAME (old -> new)``). A folder without a readable
    ``config.json`` object gets the current one."""
    runs.check_config(out_dir, fingerprint, CONFIG_RULES)
