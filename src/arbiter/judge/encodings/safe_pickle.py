"""Decoding LiveCodeBench's compressed private tests without trusting ``pickle``.

LiveCodeBench stores ``private_test_cases`` as ``base64(zlib(pickle.dumps(json_text)))``
(``lcb_runner/benchmarks/code_generation.py``: ``json.loads(pickle.loads(zlib.decompress(
base64.b64decode(...))))``). ``pickle.loads`` on downloaded data can run arbitrary code, so here:

1. the zlib stream is inflated with a size cap (no decompression bomb);
2. the pickle is scanned with :mod:`pickletools` and refused unless **every opcode** builds plain
   data (str, bytes, int, float, bool, None, list, tuple, dict, and the memo/frame/mark
   bookkeeping) — no ``GLOBAL``/``STACK_GLOBAL``/``REDUCE``/``BUILD``/``INST``/``OBJ``/``NEWOBJ``/
   ``EXT*``/``PERSID``, i.e. nothing that can import or call;
3. it is then loaded by an :class:`pickle.Unpickler` whose ``find_class`` refuses every global
   and whose ``persistent_load`` refuses every id (defence in depth).
"""

from __future__ import annotations

import base64
import binascii
import io
import pickle
import pickletools
import zlib
from typing import Any

#: Opcodes that only build plain data or do bookkeeping.
ALLOWED_OPCODES = frozenset(
    {
        "PROTO", "FRAME", "STOP", "MARK", "POP", "POP_MARK", "DUP",
        "MEMOIZE", "PUT", "BINPUT", "LONG_BINPUT", "GET", "BINGET", "LONG_BINGET",
        "NONE", "NEWTRUE", "NEWFALSE",
        "INT", "BININT", "BININT1", "BININT2", "LONG", "LONG1", "LONG4", "FLOAT", "BINFLOAT",
        "STRING", "BINSTRING", "SHORT_BINSTRING", "UNICODE", "SHORT_BINUNICODE", "BINUNICODE", "BINUNICODE8",
        "BINBYTES", "SHORT_BINBYTES", "BINBYTES8", "BYTEARRAY8",
        "EMPTY_LIST", "APPEND", "APPENDS", "LIST",
        "EMPTY_TUPLE", "TUPLE", "TUPLE1", "TUPLE2", "TUPLE3",
        "EMPTY_DICT", "DICT", "SETITEM", "SETITEMS",
    }
)  # fmt: skip

#: Default cap on the inflated size, bytes (LCB's largest private suites are tens of MB).
MAX_INFLATED_BYTES = 1 << 30


class UnsafePickle(ValueError):
    """The payload is not base64/zlib, too large, or a pickle that does more than build data."""


class _DataOnlyUnpickler(pickle.Unpickler):
    def find_class(self, module: str, name: str) -> Any:  # noqa: D401 - pickle API
        raise UnsafePickle(f"pickle refers to {module}.{name}; only plain data is accepted")

    def persistent_load(self, pid: Any) -> Any:
        raise UnsafePickle("pickle uses persistent ids; only plain data is accepted")


def inflate(data: bytes, max_bytes: int = MAX_INFLATED_BYTES) -> bytes:
    """zlib-decompress ``data``, refusing output larger than ``max_bytes`` bytes."""
    inflater = zlib.decompressobj()
    try:
        out = inflater.decompress(data, max_bytes)
    except zlib.error as exc:
        raise UnsafePickle(f"not zlib data ({exc})") from None
    if inflater.unconsumed_tail:
        raise UnsafePickle(f"inflates to more than {max_bytes} bytes")
    if not inflater.eof:
        raise UnsafePickle("truncated zlib data")
    return out


def loads_data_pickle(data: bytes) -> Any:
    """Unpickle ``data`` if it only builds plain data (see the module docstring); else raise
    :class:`UnsafePickle` naming the first forbidden opcode."""
    try:
        for opcode, _arg, position in pickletools.genops(data):
            if opcode.name not in ALLOWED_OPCODES:
                raise UnsafePickle(f"pickle opcode {opcode.name} at byte {position} is not allowed")
    except UnsafePickle:
        raise
    except Exception as exc:  # pickletools raises ValueError and others on malformed data
        raise UnsafePickle(f"not a valid pickle ({exc.__class__.__name__}: {exc})") from None
    try:
        return _DataOnlyUnpickler(io.BytesIO(data)).load()
    except UnsafePickle:
        raise
    except Exception as exc:
        raise UnsafePickle(f"not a valid pickle ({exc.__class__.__name__}: {exc})") from None


def decode_lcb_compressed(text: str | bytes, max_bytes: int = MAX_INFLATED_BYTES) -> Any:
    """Decode LCB's ``base64(zlib(pickle(x)))`` and return ``x`` (a str of JSON in LCB data).

    Raises :class:`UnsafePickle` for bad base64, bad zlib, an oversized payload, or a pickle that
    does anything but build plain data.
    """
    if isinstance(text, str):
        text = text.encode("ascii", "replace")
    try:
        raw = base64.b64decode(b"".join(text.split()), validate=True)
    except (binascii.Error, ValueError) as exc:
        raise UnsafePickle(f"not base64 ({exc})") from None
    return loads_data_pickle(inflate(raw, max_bytes))
