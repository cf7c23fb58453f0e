"""Decoding of the PIE card's JSON-string columns (``*_per_tc_ticks``, ``*_tc2time``, ``*_case_ids``) and the
annotated field types of the row models. Rules: ``docs/pie.md`` ("Rows").
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from typing import Annotated, Any, Union

from pydantic import BeforeValidator


_NEVER_NULL = (
    "is null, but the card populates this column in every split "
    "('None of the gem5_* / our_* / *_case_ids / n_* columns are ever null')"
)


_DIGITS = re.compile(r"[0-9]+")


def _no_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in pairs:
        if k in out:
            raise ValueError(f"JSON object repeats key {k!r}")
        out[k] = v
    return out


def _load_json(value: Any) -> Any:
    if isinstance(value, (bytes, bytearray)):
        value = value.decode("utf-8")
    if isinstance(value, str):
        try:
            return json.loads(value, object_pairs_hook=_no_duplicate_keys)
        except json.JSONDecodeError as e:
            snippet = value if len(value) <= 60 else value[:57] + "..."
            raise ValueError(f"is not valid JSON ({e.msg} at char {e.pos}): {snippet!r}") from None
    return value


def _case_id(x: Any) -> int:
    """One case index: a non-negative int, or its decimal string (JSON object keys are strings)."""
    if isinstance(x, bool):
        raise ValueError(f"case id {x!r} is a boolean, not an integer")
    if isinstance(x, int):
        if x < 0:
            raise ValueError(f"case id {x} is negative")
        return x
    if isinstance(x, str) and _DIGITS.fullmatch(x):
        return int(x)
    if isinstance(x, float) and x.is_integer() and x >= 0:
        return int(x)
    raise ValueError(f"case id {x!r} is not a non-negative integer")


def _as_mapping(value: Any) -> Mapping[Any, Any]:
    value = _load_json(value)
    if isinstance(value, list) and all(isinstance(p, tuple) and len(p) == 2 for p in value):
        value = dict(value)  # pyarrow map<k, v> columns come back as a list of (key, value) tuples
    if not isinstance(value, Mapping):
        raise ValueError(f"must be a JSON object {{case_idx: value}}, got {type(value).__name__}")
    return value


def _keyed(value: Any, convert) -> dict[int, Any]:
    out: dict[int, Any] = {}
    for k, v in _as_mapping(value).items():
        c = _case_id(k)
        if c in out:
            raise ValueError(f"case id {c} appears twice among the keys")
        out[c] = convert(c, v)
    return out


def _tick_value(case: int, v: Any) -> int:
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise ValueError(f"ticks for case {case} must be a non-negative integer (gem5 picoseconds), got {v!r}")
    if isinstance(v, float):
        if not (math.isfinite(v) and v.is_integer()):
            raise ValueError(f"ticks for case {case} must be a whole number of picoseconds, got {v!r}")
        v = int(v)
    if v < 0:
        raise ValueError(f"ticks for case {case} are negative ({v})")
    return v


def _seconds_value(case: int, v: Any) -> float | None:
    if v is None:
        return None
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise ValueError(f"time for case {case} must be a number of seconds, got {v!r}")
    v = float(v)
    if math.isnan(v) or v < 0:
        raise ValueError(f"time for case {case} must be >= 0 seconds, got {v!r}")
    return v


def decode_ticks(value: Any) -> dict[int, int]:
    """Decode a ``*_per_tc_ticks`` cell into ``{case_idx: ticks}`` (ints; ticks are gem5 picoseconds).

    Accepts the card's JSON string (``'{"0": 123, "1": 456}'``), an already-decoded dict with int or decimal-string
    keys, or pyarrow's list of (key, value) tuples. Raises ``ValueError`` on null, invalid JSON, a non-object, a
    negative/non-integer case id or tick count, or a case id given twice. Source: card, "TL;DR units & encoding".
    """
    if value is None:
        raise ValueError(_NEVER_NULL)
    return _keyed(value, _tick_value)


def decode_case_ids(value: Any) -> list[int]:
    """Decode a ``*_case_ids`` / ``*_excluded`` cell into a list of case indices, order kept.

    Accepts a JSON list string or a list. Raises ``ValueError`` on null, invalid JSON, a non-list, a negative or
    non-integer id, or a repeated id (the lists are sets of cases). Source: card, "TL;DR units & encoding".
    """
    if value is None:
        raise ValueError(_NEVER_NULL)
    value = _load_json(value)
    if isinstance(value, tuple):
        value = list(value)
    if not isinstance(value, list):
        raise ValueError(f"must be a JSON list of case indices, got {type(value).__name__}")
    out = [_case_id(x) for x in value]
    if len(set(out)) != len(out):
        dups = sorted({c for c in out if out.count(c) > 1})
        raise ValueError(f"repeats case id(s) {dups}")
    return out


def _decode_tc2time(value: Any) -> dict[int, float | None] | None:
    if value is None:
        return None
    return _keyed(value, _seconds_value)


def _not_null(value: Any) -> Any:
    if value is None:
        raise ValueError(_NEVER_NULL)
    if isinstance(value, float) and math.isnan(value):
        raise ValueError("is NaN (null), but the card populates this column in every split")
    return value


def _nan_to_none(value: Any) -> Any:
    if isinstance(value, float) and math.isnan(value):
        return None
    return value


def _optional_case_ids(value: Any) -> list[int] | None:
    return None if value is None else decode_case_ids(value)


Ticks = Annotated[dict[int, int], BeforeValidator(decode_ticks)]


CaseIds = Annotated[list[int], BeforeValidator(decode_case_ids)]


OptCaseIds = Annotated[Union[list[int], None], BeforeValidator(_optional_case_ids)]


OptTc2Time = Annotated[Union[dict[int, Union[float, None]], None], BeforeValidator(_decode_tc2time)]


ReqStr = Annotated[str, BeforeValidator(_not_null)]


ReqInt = Annotated[int, BeforeValidator(_not_null)]


ReqFloat = Annotated[float, BeforeValidator(_not_null)]


ReqBool = Annotated[bool, BeforeValidator(_not_null)]


OptFloat = Annotated[Union[float, None], BeforeValidator(_nan_to_none)]


OptInt = Annotated[Union[int, None], BeforeValidator(_nan_to_none)]


OptStr = Annotated[Union[str, None], BeforeValidator(_nan_to_none)]
