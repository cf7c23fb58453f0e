"""Answers whose size the program decides (stdout, stderr, fetched files), written as JSON a piece
at a time into a spooled file and streamed from it: the server never holds an encoded copy. A
stream whose JSON text would be over :data:`MAX_TEXT_RATIO` times its bytes (control bytes are
6 each, invalid UTF-8 3) is sent as base64 instead (4/3). See ``docs/serve.md``, "Answer size"."""

from __future__ import annotations

import base64
import codecs
import json
import secrets
import tempfile
from typing import Any, AsyncIterator, BinaryIO, Iterator

#: Pieces encoded at a time (bytes of the program's output).
PIECE = 1 << 20
#: JSON text at most this many times the stream's bytes (plus :data:`SLACK`), else base64.
MAX_TEXT_RATIO = 4 / 3
SLACK = 64
#: Streams this short are always text (at most 6 times a few KiB).
SMALL = 4096
#: Answers larger than this are spooled to a temporary file rather than memory.
SPOOL_BYTES = 1 << 20
#: Bytes of a spooled answer sent at a time; an answer this short is sent in one piece.
CHUNK = 256 * 1024


class Raw:
    """Bytes to write into the answer: as a JSON string of their UTF-8 text (``text=True``, invalid
    bytes replaced) or of their base64."""

    def __init__(self, data: bytes, text: bool):
        self.data, self.text = data, text

    def pieces(self) -> Iterator[str]:
        yield '"'
        if self.text:
            dec = codecs.getincrementaldecoder("utf-8")("replace")
            for i in range(0, len(self.data), PIECE):
                yield json.dumps(dec.decode(self.data[i:i + PIECE]), ensure_ascii=False)[1:-1]
            yield json.dumps(dec.decode(b"", final=True), ensure_ascii=False)[1:-1]
        else:
            step = PIECE - PIECE % 3
            for i in range(0, len(self.data), step):
                yield base64.b64encode(self.data[i:i + step]).decode("ascii")
        yield '"'


def text_size(data: bytes) -> int:
    """Bytes of ``data``'s UTF-8 text as a JSON string (counted a piece at a time)."""
    return sum(len(p.encode("utf-8")) for p in Raw(data, True).pieces())


def fits_as_text(data: bytes) -> bool:
    """True when ``data`` as JSON text is at most :data:`MAX_TEXT_RATIO` times its size."""
    if len(data) <= SMALL:
        return True
    return text_size(data) <= MAX_TEXT_RATIO * len(data) + SLACK


def _swap(value: Any, token: str, raws: list[Raw]) -> Any:
    """``value`` with each :class:`Raw` replaced by a marker (``token``, its index in ``raws``).
    A plain function: a nested one that calls itself is a reference cycle, which would keep the
    raws (a run's whole stdout) alive until the garbage collector's next full pass."""
    if isinstance(value, Raw):
        raws.append(value)
        return f"{token}-{len(raws) - 1}@@"
    if isinstance(value, dict):
        return {k: _swap(v, token, raws) for k, v in value.items()}
    if isinstance(value, list):
        return [_swap(v, token, raws) for v in value]
    return value


def spool(answer: dict[str, Any]) -> BinaryIO:
    """``answer`` (whose values may hold :class:`Raw`) as UTF-8 JSON in a spooled file, rewound."""
    token = "@@arbiter-raw-" + secrets.token_hex(16)
    raws: list[Raw] = []
    skeleton = json.dumps(_swap(answer, token, raws))
    out = tempfile.SpooledTemporaryFile(max_size=SPOOL_BYTES)
    parts = skeleton.split(f'"{token}-')
    out.write(parts[0].encode("ascii"))
    for part in parts[1:]:
        index, _, rest = part.partition('@@"')
        for piece in raws[int(index)].pieces():
            out.write(piece.encode("utf-8"))
        out.write(rest.encode("ascii"))
    out.seek(0)
    return out


async def stream(f: BinaryIO, chunk: int = CHUNK) -> AsyncIterator[bytes]:
    """The spooled answer, a chunk at a time; the file is closed at the end."""
    try:
        while data := f.read(chunk):
            yield data
    finally:
        f.close()


def size(f: BinaryIO) -> int:
    """The spooled answer's length (the file stays where it was)."""
    here = f.tell()
    f.seek(0, 2)
    end = f.tell()
    f.seek(here)
    return end
