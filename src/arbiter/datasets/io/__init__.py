"""JSONL and whole-file I/O shared by every job: the one reader (:mod:`.lines`), the one atomic
writer (:mod:`.atomic`) and the resumable append-only sink (:mod:`.sink`).
See ``docs/codegen.md`` ("Files")."""

from arbiter.datasets.io.atomic import (atomic_open, dumps_line, write_json_atomic, write_jsonl_atomic,
                                        write_text_atomic)
from arbiter.datasets.io.lines import BOM, JsonlError, Line, decode_json_line, iter_lines, read_jsonl
from arbiter.datasets.io.sink import JsonlSink, jsonl_to_parquet

__all__ = ["BOM", "JsonlError", "JsonlSink", "Line", "atomic_open", "decode_json_line", "dumps_line", "iter_lines",
           "jsonl_to_parquet", "read_jsonl", "write_json_atomic", "write_jsonl_atomic", "write_text_atomic"]
