"""Append-only JSONL outputs that survive interruption and resume without duplicates.

Every record carries a stable key (a field, e.g. ``task_id``, or a function of the record). A sink
reads the keys already in its file when opened; writing a key that is already there is a no-op, so
re-running an interrupted job never duplicates rows. A last line torn by a kill (no trailing
newline: a record is written with its newline in one write) is cut off when the file is opened; a
complete line that is not a record (an edit, a damaged disk, another file) is set aside, never
the records after it: moved to ``<file>.corrupt`` and named in a warning. Each record is flushed
as it is written.
"""

from __future__ import annotations

import json
import logging
import os
import threading
from pathlib import Path
from typing import Any, Callable

from arbiter.datasets.io.atomic import atomic_open, dumps_line
from arbiter.datasets.io.lines import read_jsonl


class JsonlSink:
    """One JSONL output file keyed by ``key`` (a field name or a function of the record).

    Thread-safe. ``fsync=True`` makes every write durable (slower); the default flushes to the OS,
    which survives SIGKILL of the writer.
    """

    def __init__(self, path: str | os.PathLike, key: str | Callable[[dict[str, Any]], str], *, fsync: bool = False):
        self.path = Path(path)
        self._key = (lambda r: str(r[key])) if isinstance(key, str) else key
        self._fsync = fsync
        self._lock = threading.Lock()
        self.keys: set[str] = set()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._repair_and_load()
        self._f = open(self.path, "a", encoding="utf-8")

    def _repair_and_load(self) -> None:
        if not self.path.exists():
            return
        with open(self.path, "rb") as f:
            data = f.read()
        lines = data.split(b"\n")
        torn = lines.pop()  # (after the last newline: empty unless a kill tore the line)
        bad: list[int] = []  # 0-based numbers of the lines that are not a record
        for number, line in enumerate(lines):
            if line.strip():
                try:
                    self.keys.add(self._key(json.loads(line)))
                except Exception:  # (not JSON, or a record its key cannot be read from)
                    bad.append(number)
        if bad:
            self._set_aside(lines, bad)
        elif torn:
            with open(self.path, "r+b") as f:
                f.truncate(sum(len(line) + 1 for line in lines))

    def _set_aside(self, lines: list[bytes], bad: list[int]) -> None:
        """Move the ``bad`` lines to ``<file>.corrupt`` (appended) and rewrite the file without
        them (and without a torn last line), atomically; warn naming them."""
        corrupt = self.path.with_name(self.path.name + ".corrupt")
        with open(corrupt, "ab") as f:
            f.write(b"".join(lines[i] + b"\n" for i in bad))
        skip = set(bad)
        with atomic_open(self.path, "wb") as f:
            f.write(b"".join(line + b"\n" for i, line in enumerate(lines) if i not in skip))
        shown = ", ".join(str(i + 1) for i in bad[:10]) + (f" and {len(bad) - 10} more" if len(bad) > 10 else "")
        logging.getLogger("arbiter").warning(
            "%s: line%s %s: not a record (not valid JSON, or without its key): moved to %s, the records after "
            "kept", self.path, "s" if len(bad) > 1 else "", shown, corrupt)

    def keep_only(self, keep: Callable[[str], bool]) -> list[str]:
        """Rewrite the file (atomically) without the records whose key ``keep`` refuses; returns
        those keys."""
        with self._lock:
            dropped = [k for k in self.keys if not keep(k)]
            if not dropped:
                return []
            self._f.close()
            with open(self.path, "rb") as f:
                lines = [line for line in f.read().split(b"\n") if line.strip()]
            with atomic_open(self.path, "wb") as f:
                f.write(b"".join(line + b"\n" for line in lines if keep(self._key(json.loads(line)))))
            self.keys.difference_update(dropped)
            self._f = open(self.path, "a", encoding="utf-8")
        return dropped

    def __contains__(self, key: str) -> bool:
        return key in self.keys

    def __len__(self) -> int:
        return len(self.keys)

    def write(self, record: dict[str, Any]) -> bool:
        """Append ``record`` unless its key is already present; returns True when written."""
        k = self._key(record)
        line = dumps_line(record) + "\n"
        with self._lock:
            if k in self.keys:
                return False
            self._f.write(line)
            self._f.flush()
            if self._fsync:
                os.fsync(self._f.fileno())
            self.keys.add(k)
        return True

    def close(self) -> None:
        with self._lock:
            if not self._f.closed:
                self._f.close()

    def __enter__(self) -> "JsonlSink":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def jsonl_to_parquet(jsonl_path: str | os.PathLike, parquet_path: str | os.PathLike,
                     schema_of: Callable[[Any], Any] | None = None) -> int:
    """Write a JSONL file as Parquet (pyarrow); nested values are kept as structs/lists.
    ``schema_of``: the schema to write given the one inferred from the records (the card's types).

    Returns the number of rows. Raises ``ValueError`` when the records cannot share one schema.
    """
    import pyarrow as pa
    import pyarrow.parquet as pq

    rows = list(read_jsonl(jsonl_path))
    table = pa.Table.from_pylist(rows) if rows else pa.table({})
    if rows and schema_of is not None:
        table = table.cast(schema_of(table.schema))
    pq.write_table(table, parquet_path)
    return len(rows)


__all__ = ["JsonlSink", "jsonl_to_parquet"]
