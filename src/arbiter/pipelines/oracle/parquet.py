"""Parquet copies of the JSONL outputs. See ``docs/oracle.md``."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from arbiter.pipelines.oracle.best import read_records


def _jsonify(value: Any) -> str | None:
    return None if value is None else json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)


def write_parquet(out_dir: str | os.PathLike) -> dict[str, int]:
    """Write ``sft``/``best``/``verified``/``rejected`` ``.parquet`` next to their JSONL (pyarrow). ``messages``
    stays a list of ``{role, content}`` structs; every other nested value (dicts, lists) is stored as JSON text,
    since its shape varies between rows. Returns ``file name -> rows``."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    out = Path(out_dir)
    counts = {}
    msg_type = pa.list_(pa.struct([("role", pa.string()), ("content", pa.string())]))
    for name in ("sft", "best", "verified", "rejected"):
        recs = read_records(out / f"{name}.jsonl")
        cols: dict[str, list[Any]] = {}
        keys: list[str] = []
        for r in recs:
            for k in r:
                if k not in cols:
                    cols[k] = []
                    keys.append(k)
        arrays, fields = [], []
        for k in keys:
            vals = [r.get(k) for r in recs]
            if k == "messages":
                arrays.append(pa.array([None if v is None else [{"role": m.get("role"), "content": m.get("content")}
                                                                for m in v] for v in vals], type=msg_type))
                fields.append(pa.field(k, msg_type))
                continue
            kinds = {type(v) for v in vals if v is not None}
            if kinds <= {str}:
                t = pa.string()
            elif kinds <= {bool}:
                t = pa.bool_()
            elif kinds <= {int}:
                t = pa.int64()
            elif kinds <= {int, float}:
                t = pa.float64()
            else:
                t = pa.string()
                vals = [_jsonify(v) for v in vals]
            arrays.append(pa.array(vals, type=t))
            fields.append(pa.field(k, t))
        table = pa.Table.from_arrays(arrays, schema=pa.schema(fields)) if fields else pa.table({})
        pq.write_table(table, out / f"{name}.parquet")
        counts[f"{name}.parquet"] = len(recs)
    return counts
