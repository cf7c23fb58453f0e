"""``best.jsonl``: the fastest accepted answer per task. See ``docs/oracle.md``."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Mapping

from arbiter.datasets.io import read_jsonl, write_jsonl_atomic


def read_records(path: Path) -> list[dict[str, Any]]:
    return list(read_jsonl(path)) if path.exists() else []


def _best_rank(rec: Mapping[str, Any]) -> tuple:
    v = rec.get("verification") or {}
    ls = v.get("largest_speedup")
    sp = v.get("speedup")
    return (-(ls if ls is not None else 0.0), -(sp if sp is not None else 0.0), str(rec.get("key")))


def speedup_unit(rec: Mapping[str, Any]) -> str | None:
    """The unit of a verified/rejected record's speedups: ``verification.measurement.unit`` (``instructions`` or
    ``seconds``), ``None`` when the row was not measured."""
    return ((rec.get("verification") or {}).get("measurement") or {}).get("unit")


def write_best(out_dir: str | os.PathLike) -> dict[str, dict[str, Any]]:
    """Rewrite ``best.jsonl`` from ``verified.jsonl``: per task, the accepted row with the highest
    ``largest_speedup`` (then ``speedup``, then key) as ``{"task_id", "messages"}`` ("keep the best
    verified answer per task (fastest among full marks)"). Returns ``task_id -> {"key", "speedup",
    "largest_speedup", "unit", "units"}``: ``unit`` is the unit of the best row's speedups, ``units`` every unit
    among the task's accepted rows; more than one means the ranking compared instruction speedups with wall/CPU
    time speedups (a meter fallback), which the report warns about."""
    out = Path(out_dir)
    best: dict[str, dict[str, Any]] = {}
    units: dict[str, set[str]] = {}
    for rec in read_records(out / "verified.jsonl"):
        tid = rec.get("task_id")
        if speedup_unit(rec):
            units.setdefault(tid, set()).add(str(speedup_unit(rec)))
        if tid not in best or _best_rank(rec) < _best_rank(best[tid]):
            best[tid] = rec
    records = [{"task_id": tid, "messages": [{"role": m["role"], "content": m["content"]}
                                            for m in best[tid]["messages"]]} for tid in sorted(best)]
    write_jsonl_atomic(out / "best.jsonl", records)
    return {tid: {"key": r["key"], "demo_id": r.get("demo_id"),
                  "speedup": (r.get("verification") or {}).get("speedup"),
                  "largest_speedup": (r.get("verification") or {}).get("largest_speedup"),
                  "unit": speedup_unit(r), "units": sorted(units.get(tid, ()))}
            for tid, r in sorted(best.items())}
