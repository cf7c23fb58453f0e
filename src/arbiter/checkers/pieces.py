"""The tokens and lines of a program's output, a block at a time, and where two sequences differ.

A checker compares an output of up to the output cap (64 MiB) in the judge process. A list of all
its tokens or lines costs about 50 bytes per piece (``bytes.split()`` of 63 MiB of ``b"ab\\n"``
takes 1.2 GB), so the checkers never build one. The generators here cut the text at a piece
boundary about every :data:`BLOCK_BYTES` bytes (found backwards from the block's end with
``rfind``, in C) and split each block in C (``bytes.split``, ``bytes.splitlines``); a piece longer
than a block is copied once, as a block of its own. Each yields exactly the pieces of the
whole-text operation it names, in order, and at most one block's pieces are alive at a time.
:func:`differences` compares two such streams in C (``itertools``), one pair at a time.
See docs/parsers.md, "Stdout checkers".
"""

from __future__ import annotations

import itertools
import operator
import re
from typing import Iterable, Iterator, TypeVar

T = TypeVar("T")

#: Bytes of text split at a time (a block's pieces take up to about 20 times as much, briefly).
#: Read at each call, so a test can make it small to put block boundaries everywhere.
BLOCK_BYTES = 1 << 16

#: ASCII whitespace: what ``bytes.split()`` splits on and ``bytes.strip()`` removes.
_WHITESPACE = tuple(bytes([c]) for c in b" \t\n\r\x0b\x0c")
_NEXT_WHITESPACE = re.compile(rb"[ \t\n\r\x0b\x0c]")
_NEXT_NON_WHITESPACE = re.compile(rb"[^ \t\n\r\x0b\x0c]")
_NEXT_LINE_BREAK = re.compile(rb"[\r\n]")


def differences(got: Iterable[T], want: Iterable[T]) -> Iterator[tuple[int, tuple[T | None, T | None]]]:
    """``(index, (got piece, wanted piece))`` at every position where two sequences differ, in
    order; a sequence that has ended shows as ``None`` (the pieces themselves are never ``None``).
    Lazy, and the loop runs in C: ``next(differences(a, b), None) is None`` when they are equal."""
    pairs, again = itertools.tee(itertools.zip_longest(got, want))
    return itertools.compress(zip(itertools.count(), pairs), itertools.starmap(operator.ne, again))


def count(blocks: Iterable[list[bytes]]) -> int:
    """The number of pieces in a stream of blocks (for a length diff)."""
    return sum(map(len, blocks))


def token_spans(data: bytes, block: int | None = None) -> Iterator[tuple[int, int]]:
    """Consecutive ``(start, end)`` spans of ``data`` that never cut a token, each about
    ``block`` bytes long or one long token: ``data.split()`` is the items of
    ``data[start:end].split()`` over the spans, in order."""
    block = block or BLOCK_BYTES
    start, n = 0, len(data)
    while n - start > block:
        limit = start + block
        cut = max(data.rfind(c, start, limit) for c in _WHITESPACE) + 1  # after the last whitespace
        if cut == 0:  # [start, limit) lies inside one long token: a span of its own
            space = _NEXT_WHITESPACE.search(data, limit)
            cut = space.start() if space else n
        yield start, cut
        start = cut
    yield start, n


def token_blocks(data: bytes, block: int | None = None) -> Iterator[list[bytes]]:
    """``data.split()`` (tokens: maximal runs of non-whitespace bytes), in consecutive blocks
    (a long token is copied once: ``split`` of a slice without whitespace returns the slice)."""
    return (data[start:end].split() for start, end in token_spans(data, block))


def tokens(data: bytes, block: int | None = None) -> Iterator[bytes]:
    """The items of ``data.split()``, one at a time."""
    return itertools.chain.from_iterable(token_blocks(data, block))


def strip_bounds(data: bytes, start: int, end: int) -> tuple[int, int]:
    """``(a, b)`` with ``data[a:b] == data[start:end].strip()``, without copying ``data``
    (``a == b`` when that is empty). The trailing whitespace is found a block at a time."""
    first = _NEXT_NON_WHITESPACE.search(data, start, end)
    if first is None:
        return start, start
    return first.start(), rstrip_end(data, first.start(), end)


def rstrip_end(data: bytes, start: int, end: int) -> int:
    """``b`` with ``data[start:b] == data[start:end].rstrip()``, without copying ``data``."""
    while end > start:
        piece = data[max(start, end - 4096):end]
        kept = len(piece.rstrip())
        if kept:
            return end - len(piece) + kept
        end -= len(piece)
    return start


def line_blocks(data: bytes, start: int, end: int, rstrip: bool = False,
                block: int | None = None) -> Iterator[list[bytes]]:
    """``data[start:end].split(b"\\n")`` in consecutive blocks, each line stripped of trailing
    whitespace when ``rstrip``."""
    block = block or BLOCK_BYTES
    while end - start > block:
        limit = start + block
        cut = data.rfind(b"\n", start, limit)
        if cut < 0:  # [start, limit) lies inside one long line: a block of its own
            cut = data.find(b"\n", limit, end)
            stop = end if cut < 0 else cut
            yield [data[start:rstrip_end(data, start, stop) if rstrip else stop]]
            if cut < 0:
                return
        else:
            lines = data[start:cut].split(b"\n")
            yield list(map(bytes.rstrip, lines)) if rstrip else lines
        start = cut + 1
    lines = data[start:end].split(b"\n")
    yield list(map(bytes.rstrip, lines)) if rstrip else lines


def stripped_line_blocks(data: bytes, start: int, end: int, block: int | None = None) -> Iterator[list[bytes]]:
    """``[line.strip() for line in data[start:end].splitlines()]`` (line breaks LF, CRLF or CR)
    in consecutive blocks."""
    block = block or BLOCK_BYTES
    while end - start > block:
        limit = start + block
        cut = max(data.rfind(b"\n", start, limit), data.rfind(b"\r", start, limit))
        if cut < 0:  # [start, limit) lies inside one long line: a block of its own
            brk = _NEXT_LINE_BREAK.search(data, limit, end)
            cut = brk.start() if brk else end
            a, b = strip_bounds(data, start, cut)
            yield [data[a:b]]
            if brk is None:
                return
            start = cut + (2 if data.startswith(b"\r\n", cut, end) else 1)
        else:  # whole lines, each with its line break (a CR LF pair is never cut)
            stop = cut + (2 if data.startswith(b"\r\n", cut, end) else 1)
            yield list(map(bytes.strip, data[start:stop].splitlines()))
            start = stop
    yield list(map(bytes.strip, data[start:end].splitlines()))
