"""Output folders and whole-file outputs shared by the pipelines (oracle verification, PIE reward
and eval, codegen scoring).

Row-by-row outputs go through :class:`arbiter.datasets.jsonl_sink.JsonlSink`; the files written
whole (``report.json``, ``config.json``, ``summary.json``) are replaced atomically here, so a run
killed mid-write leaves the previous version, never a torn file.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from pathlib import Path
from typing import Any


class OutputDirError(ValueError):
    """The output folder cannot be used: it exists and is not a folder, or it cannot be created."""


def ensure_out_dir(out_dir: str | os.PathLike) -> Path:
    """Create ``out_dir`` (and its parents) and return it. Raises :class:`OutputDirError` (a ``ValueError``, so
    the CLI reports it and exits 2) naming the path when it is an existing file, or when it cannot be created."""
    out = Path(out_dir)
    if out.exists() and not out.is_dir():
        raise OutputDirError(f"--out {out} exists and is not a folder; give a folder (it is created when missing)")
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise OutputDirError(f"--out {out}: cannot create the output folder: {e.strerror or e}") from None
    return out


def write_json_atomic(path: Path, data: Any) -> None:
    """Write ``data`` as JSON (indent 1, UTF-8, ``default=str``, trailing newline) to ``path`` through a
    temporary file in the same folder and a rename; the temporary file is removed on any error."""
    fd, tmp = tempfile.mkstemp(prefix=".tmp-", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(data, f, ensure_ascii=False, indent=1, default=str)
            f.write("\n")
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
