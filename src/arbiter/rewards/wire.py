"""The JSON form of a reward item on its way to ``arbiter serve`` (``/v1/score``).

A trainer hands ``compute_score`` whatever its data loader made: numpy scalars and arrays
(verl adds a numpy ``num_turns`` to ``extra_info``), pyarrow values, tuples, bytes, nested
dicts. :func:`to_wire` turns such a value into plain JSON data that :func:`from_wire` reads back
as a value the reward treats exactly as the original: numpy and pyarrow values become the plain
values they hold, tuples lists, and bytes travel as ``{"$bytes": "<base64>"}`` and come back as
bytes; Decimal and Fraction become floats and any other object its text (what the reward reads
of them). A dict key starting with ``$`` is sent with one more ``$``. See ``docs/serve.md``.
"""

from __future__ import annotations

import base64
import binascii
import numbers
from collections.abc import Mapping
from typing import Any

BYTES_KEY = "$bytes"
_SCALARS = (str, int, float, bool)


class _Bytes(bytes):
    """Bytes found by :func:`_leaf`, encoded by :func:`to_wire` (never walked as a dict)."""


def _leaf(value: Any) -> Any:
    """The plain form of a non-container value, or a container to walk further."""
    for _ in range(4):  # a pyarrow scalar's as_py() may give a numpy value, and so on
        if value is None or type(value) in _SCALARS:
            return value
        if isinstance(value, (bytes, bytearray, memoryview)):
            return _Bytes(value)
        if isinstance(value, bool):
            return bool(value)
        for kind in (str, int, float):  # numpy.str_, numpy.float64, IntEnum ...
            if isinstance(value, kind):
                return kind(value)
        if isinstance(value, (Mapping, list, tuple)):
            return value
        convert = next((getattr(value, m) for m in ("as_py", "to_pylist", "tolist") if callable(getattr(value, m, None))),
                       None)
        if convert is None:
            break
        value = convert()
    if isinstance(value, numbers.Number) and not isinstance(value, numbers.Complex) or isinstance(value, numbers.Real):
        # Decimal, Fraction: the reward reads them with float()
        return float(value)
    return str(value)  # any other object: the reward reads it (a row label) as its text


def to_wire(value: Any) -> Any:
    """``value`` as plain JSON data (dict, list, str, int, float, bool, None) for :func:`from_wire`."""
    value = _leaf(value)
    if isinstance(value, _Bytes):
        return {BYTES_KEY: base64.b64encode(value).decode("ascii")}
    if isinstance(value, Mapping):
        out = {}
        for key, child in value.items():
            if isinstance(key, bytes):  # JSON keys are text; the reward reads only text keys
                key = key.decode("utf-8", "replace")
            key = key if type(key) is str else str(_leaf(key))  # JSON's own rule for int keys
            out["$" + key if key.startswith("$") else key] = to_wire(child)
        return out
    if isinstance(value, (list, tuple)):
        return [to_wire(child) for child in value]
    return value


def from_wire(value: Any) -> Any:
    """The value :func:`to_wire` encoded (``{"$bytes": ...}`` back to bytes, ``$$key`` to
    ``$key``). Raises ``ValueError`` for a ``$bytes`` value that is not base64 text."""
    if isinstance(value, dict):
        if len(value) == 1 and BYTES_KEY in value:
            try:
                return base64.b64decode(value[BYTES_KEY], validate=True)
            except (binascii.Error, TypeError, ValueError):
                raise ValueError(f"{BYTES_KEY}: not base64 text") from None
        return {(k[1:] if k.startswith("$$") else k): from_wire(v) for k, v in value.items()}
    if isinstance(value, list):
        return [from_wire(v) for v in value]
    return value


ITEM_FIELDS = ("data_source", "solution_str", "ground_truth", "extra_info")


def item_to_wire(item: tuple) -> dict[str, Any]:
    """One ``(data_source, solution_str, ground_truth, extra_info)`` as the JSON object of
    ``/v1/score``'s ``items``."""
    return {name: to_wire(value) for name, value in zip(ITEM_FIELDS, item)}


__all__ = ["BYTES_KEY", "ITEM_FIELDS", "from_wire", "item_to_wire", "to_wire"]
