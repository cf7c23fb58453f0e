"""The one JSON Lines reader: lines decoded one at a time, errors naming the file and the line.

A bad line reads the same everywhere: ``not UTF-8 text (byte 0xff at column 12)``, ``not valid
JSON (...)``, ``line is N bytes, above the M-byte limit``. Values are decoded by
:func:`arbiter.judge.jsonvalues.loads` (integers of any length; too-deep nesting is an error,
never ``RecursionError``). See ``docs/codegen.md`` ("Files").
"""

from __future__ import annotations

import gzip
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO, Callable

from arbiter.judge import jsonvalues

BOM = b"\xef\xbb\xbf"
_CHUNK = 1 << 20


class JsonlError(ValueError):
    """A line of a JSONL file that cannot be read; the message names the file and the line."""


def decode_json_line(raw: bytes, number: int) -> Any:
    """The JSON value of line ``number`` (1-based) of a JSONL file, ``raw`` its bytes (with or
    without the newline); a UTF-8 byte order mark is skipped on line 1.

    Raises ``ValueError`` naming the problem (``"not UTF-8 text (byte 0xff at column 12)"``,
    ``"not valid JSON (<decoder message>)"``); callers add the file and the line number."""
    if number == 1 and raw.startswith(BOM):
        raw = raw[len(BOM):]
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ValueError(f"not UTF-8 text (byte {raw[exc.start]:#04x} at column {exc.start + 1})") from None
    try:
        return jsonvalues.loads(text)
    except ValueError as exc:
        raise ValueError(f"not valid JSON ({exc})") from None


@dataclass(frozen=True)
class Line:
    """One non-blank line: its 1-based ``number``, byte ``offset`` and ``length``, and either its
    ``value`` or the ``problem`` that kept it from being decoded (``too_long``: skipped unread)."""

    number: int
    offset: int
    length: int
    value: Any = None
    problem: str | None = None
    too_long: bool = False

    @property
    def ok(self) -> bool:
        return self.problem is None


def _open(path: Path) -> BinaryIO:
    return gzip.open(path, "rb") if path.suffix == ".gz" else open(path, "rb")  # type: ignore[return-value]


def _skip_rest(f: BinaryIO) -> int:
    skipped = 0
    while True:
        more = f.readline(_CHUNK)
        skipped += len(more)
        if not more or more.endswith(b"\n"):
            return skipped


def iter_lines(path: str | os.PathLike, *, max_line_bytes: int | None = None,
               decode: Callable[[bytes, int], Any] | None = decode_json_line) -> Iterator[Line]:
    """Every non-blank line of a JSONL file (``.gz``: gzip), never stopping at a bad one.

    ``decode(raw, number)`` makes the value (``ValueError``: the line's problem); ``None`` keeps
    the raw bytes (a caller with a stricter parser). A line over ``max_line_bytes`` is skipped unparsed in bounded chunks (memory stays below
    ``max_line_bytes`` + 1 MiB) and reported as a problem. Raises ``OSError`` when the file cannot
    be opened or read (a problem of the whole file, not of a line)."""
    path = Path(path)
    limit = -1 if max_line_bytes is None else max_line_bytes + 1
    with _open(path) as f:
        number = offset = 0
        while True:
            raw = f.readline(limit)
            if not raw:
                return
            number += 1
            start, length = offset, len(raw)
            if max_line_bytes is not None and length > max_line_bytes and not raw.endswith(b"\n"):
                length += _skip_rest(f)
                offset += length
                yield Line(number, start, length, problem=f"line is {length} bytes, above the "
                                                          f"{max_line_bytes}-byte limit", too_long=True)
                continue
            offset += length
            if not raw.strip():
                continue
            if decode is None:
                yield Line(number, start, length, value=raw)
                continue
            try:
                value = decode(raw, number)
            except ValueError as exc:
                yield Line(number, start, length, problem=str(exc))
                continue
            yield Line(number, start, length, value=value)


def read_jsonl(path: str | os.PathLike, *, objects: bool = False) -> Iterator[Any]:
    """The values of a JSONL file's non-blank lines, in order. Raises :class:`JsonlError`
    (``"<path> line <n>: <problem>"``) at the first bad line, or at a non-object line when
    ``objects``."""
    for line in iter_lines(path):
        if line.problem is not None:
            raise JsonlError(f"{path} line {line.number}: {line.problem}")
        if objects and not isinstance(line.value, dict):
            raise JsonlError(f"{path} line {line.number}: expected a JSON object, got {type(line.value).__name__}")
        yield line.value


__all__ = ["BOM", "JsonlError", "Line", "decode_json_line", "iter_lines", "read_jsonl"]
