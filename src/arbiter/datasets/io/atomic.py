"""The one atomic writer: a temporary file in the same folder, fsync, rename over the target.

A run killed mid-write leaves the previous version of the file (or none), never a torn one; the
temporary file is removed on any error. See ``docs/codegen.md`` ("Files").
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import tempfile
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import IO, Any


@functools.cache
def _umask() -> int:
    """The process's umask, read once, on first use: from ``/proc/self/status`` (thread-safe),
    else by setting and restoring it (which is not)."""
    try:
        with open("/proc/self/status", "rb") as f:
            for line in f:
                if line.startswith(b"Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


@contextlib.contextmanager
def atomic_open(path: str | os.PathLike, mode: str = "w", *, fsync: bool = True) -> Iterator[IO[Any]]:
    """A file object whose content replaces ``path`` when the block ends without an error.

    ``mode``: ``"w"`` (UTF-8 text) or ``"wb"``. ``fsync``: make the content durable before the
    rename (the rename then never exposes an empty file after a power loss)."""
    path = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=".tmp-", dir=path.parent)
    try:
        os.fchmod(fd, 0o666 & ~_umask())  # as open() would make it (mkstemp makes 0600)
        with os.fdopen(fd, mode, **({} if "b" in mode else {"encoding": "utf-8"})) as f:
            yield f
            f.flush()
            if fsync:
                os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def write_text_atomic(path: str | os.PathLike, text: str, *, fsync: bool = True) -> None:
    """Replace ``path`` with ``text`` (UTF-8) atomically."""
    with atomic_open(path, fsync=fsync) as f:
        f.write(text)


def write_json_atomic(path: str | os.PathLike, data: Any, *, indent: int | None = 1, sort_keys: bool = False,
                      ensure_ascii: bool = False, fsync: bool = True) -> None:
    """Replace ``path`` with ``data`` as JSON (``default=str``, trailing newline) atomically."""
    write_text_atomic(path, json.dumps(data, ensure_ascii=ensure_ascii, indent=indent, sort_keys=sort_keys,
                                       default=str) + "\n", fsync=fsync)


def dumps_line(record: Any) -> str:
    """One compact JSONL line (no newline): UTF-8 kept, ``default=str``. A record holding a lone surrogate (a
    JSON ``"\\ud800"`` read back, a reply cut inside an emoji) has no UTF-8 form: its line is written with
    ``\\u`` escapes instead, which read back to the same strings."""
    line = json.dumps(record, ensure_ascii=False, separators=(",", ":"), default=str)
    if not line.isascii():
        try:
            line.encode("utf-8")
        except UnicodeEncodeError:
            return json.dumps(record, ensure_ascii=True, separators=(",", ":"), default=str)
    return line


def write_jsonl_atomic(path: str | os.PathLike, records: Iterable[Any], *, fsync: bool = True,
                       dumps=dumps_line) -> int:
    """Replace ``path`` with one line per record (``dumps(record)``) atomically; the count."""
    n = 0
    with atomic_open(path, fsync=fsync) as f:
        for record in records:
            f.write(dumps(record) + "\n")
            n += 1
    return n


__all__ = ["atomic_open", "dumps_line", "write_json_atomic", "write_jsonl_atomic", "write_text_atomic"]
