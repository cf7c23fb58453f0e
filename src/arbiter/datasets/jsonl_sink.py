"""Moved to :mod:`arbiter.datasets.io.sink` (kept while importers move)."""

from arbiter.datasets.io.lines import read_jsonl  # noqa: F401
from arbiter.datasets.io.sink import JsonlSink, jsonl_to_parquet  # noqa: F401
