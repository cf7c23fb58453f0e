"""Moved to :mod:`arbiter.datasets.io.lines` (kept while importers move)."""

from arbiter.datasets.io.lines import BOM, decode_json_line  # noqa: F401
