"""The error of the goldilocks pipeline (``arbiter curate``): :class:`CurationInputError`, an input
that cannot be curated or audited at all. Raised by every module of the package; ``arbiter curate``
exits 2 with its message.
"""

from __future__ import annotations


class CurationInputError(ValueError):
    """An input that cannot be curated at all: a dataset that cannot be read or holds no rows, a
    score folder that is not an ``arbiter score`` output folder (or whose ``verdicts.jsonl`` has a
    line that is not a verdict record), a folder scored with ``--parity`` (unless allowed), an
    unusable ``--out`` or one that would overwrite an input or another output, rows that cannot
    share one Parquet schema, a threshold outside [0, 1]. The message names the option, the file
    and the line where one decides it (``arbiter curate`` exits 2 with it). Found before any
    output is written, except a dataset line that breaks mid-stream (the partial output is
    removed then)."""
