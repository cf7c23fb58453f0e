"""Raw records of a JSONL or Parquet file, strictly parsed, and their JSON Schema checks. See ``docs/oracle.md``
("Input rows")."""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any, Iterable, Iterator, Mapping

from arbiter.datasets.io import iter_lines
from arbiter.datasets.oracle.rows import MAX_ANSWER_BYTES, RejectCode, RowIssue


# --------------------------------------------------------------------------------------------------
# Schemas


@lru_cache(maxsize=None)
def load_schema(name: str) -> dict[str, Any]:
    """The packaged JSON Schema ``name`` (``oracle_seed.schema.json`` or ``oracle_return.schema.json``).

    Raises ``FileNotFoundError`` for an unknown name.
    """
    text = resources.files("arbiter").joinpath("schemas", name).read_text(encoding="utf-8")
    return json.loads(text)


@lru_cache(maxsize=None)
def _validator(name: str):
    from jsonschema import Draft202012Validator

    schema = load_schema(name)
    Draft202012Validator.check_schema(schema)
    return Draft202012Validator(schema)


def json_path(parts: Iterable[Any]) -> str:
    """``["messages", 2, "role"]`` -> ``$.messages[2].role``; keys that are not identifiers are
    quoted: ``$["a b"]``."""
    out = "$"
    for p in parts:
        if isinstance(p, int):
            out += f"[{p}]"
        elif isinstance(p, str) and p.isidentifier():
            out += f".{p}"
        else:
            out += f"[{json.dumps(p, ensure_ascii=False)}]"
    return out


def _short(value: Any, limit: int = 80) -> str:
    s = json.dumps(value, ensure_ascii=False, default=str)
    return s if len(s) <= limit else s[: limit - 3] + "..."


def schema_issues(row: Any, schema_name: str) -> list[RowIssue]:
    """Every JSON Schema (Draft 2020-12) violation of ``row`` against the packaged schema
    ``schema_name``, sorted by path; empty when valid. A ``required`` violation points at the object
    missing the key and names it; other messages quote at most 80 characters of the bad value."""
    issues = []
    for err in _validator(schema_name).iter_errors(row):
        if err.validator == "required":
            msg = err.message.split(" is a required property")[0] + " is a required property (missing)"
        elif err.validator in ("type", "enum", "const", "minimum", "maximum", "exclusiveMinimum",
                               "minLength", "minItems"):
            msg = f"{_short(err.instance)} violates {err.validator}={_short(err.validator_value)}"
        else:
            msg = err.message if len(err.message) <= 200 else err.message[:197] + "..."
        issues.append(RowIssue(RejectCode.SCHEMA, json_path(err.absolute_path), msg))
    issues.sort(key=lambda i: (i.path, i.message))
    return issues


# --------------------------------------------------------------------------------------------------
# Raw record reading (JSONL / Parquet)


class DuplicateKey(ValueError):
    pass


class NonFinite(ValueError):
    pass


def _pairs_no_dup(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    d: dict[str, Any] = {}
    for k, v in pairs:
        if k in d:
            raise DuplicateKey(k)
        d[k] = v
    return d


def _reject_constant(name: str) -> Any:
    raise NonFinite(name)


def _finite_float(text: str) -> float:
    x = float(text)
    if not math.isfinite(x):  # 1e400 parses to inf
        raise NonFinite(text)
    return x


def parse_json_strict(text: str) -> Any:
    """``json.loads`` refusing duplicate keys, NaN/Infinity and overflowing floats such as ``1e400``
    (raises the private errors above or ``json.JSONDecodeError``)."""
    return json.loads(text, object_pairs_hook=_pairs_no_dup, parse_constant=_reject_constant,
                      parse_float=_finite_float)


@dataclass
class _RawRecord:
    line: int
    value: Any = None
    issue: RowIssue | None = None
    task_id_hint: str | None = None  # read from the text of a line that is not valid JSON


_TASK_ID_TEXT = re.compile(r'"task_id"\s*:\s*"((?:[^"\\]|\\.)*)"')


def _task_id_hint(text: str) -> str | None:
    """The ``task_id`` written in the text of a line that did not parse (first ``"task_id": "..."``)."""
    m = _TASK_ID_TEXT.search(text)
    if m is None:
        return None
    try:
        value = json.loads(f'"{m.group(1)}"')
    except ValueError:
        return None
    return value if isinstance(value, str) and value else None


def _is_parquet(path: Path) -> bool:
    if path.suffix.lower() in (".parquet", ".pq"):
        return True
    try:
        with open(path, "rb") as f:
            return f.read(4) == b"PAR1"
    except OSError:
        return False


def _iter_jsonl_lines(path: Path, max_line_bytes: int) -> Iterator[tuple[int, bytes | None, int]]:
    """``(line_no, line bytes or None when too long, length)`` for every non-blank line (the one JSONL reader,
    :func:`arbiter.datasets.io.iter_lines`, undecoded: the oracle parses strictly itself)."""
    for line in iter_lines(path, max_line_bytes=max_line_bytes, decode=None):
        yield line.number, (None if line.too_long else line.value), line.length


def jsonl_records(path: Path, max_line_bytes: int) -> Iterator[_RawRecord]:
    for line_no, data, length in _iter_jsonl_lines(path, max_line_bytes):
        if data is None:
            yield _RawRecord(line_no, issue=RowIssue(
                RejectCode.TOO_LARGE, "$",
                f"line is {length} bytes, above the {max_line_bytes}-byte row limit; skipped unparsed "
                f"(an answer may hold at most {MAX_ANSWER_BYTES} bytes)"))
            continue
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as e:
            yield _RawRecord(line_no, issue=RowIssue(
                RejectCode.NOT_UTF8, "$", f"not UTF-8 text (binary data?): invalid byte at offset {e.start}"))
            continue
        if text.startswith("\ufeff"):
            text = text[1:]  # a UTF-8 byte-order mark on the first line is not an error
        text = text.rstrip("\r\n")  # (an error at the end of the record is there, not on a "line 2")
        try:
            value = parse_json_strict(text)
        except DuplicateKey as e:
            yield _RawRecord(line_no, issue=RowIssue(
                RejectCode.DUPLICATE_JSON_KEY, "$", f"key {str(e)!r} appears twice in one object"),
                task_id_hint=_task_id_hint(text))
            continue
        except NonFinite as e:
            yield _RawRecord(line_no, issue=RowIssue(
                RejectCode.NON_FINITE_NUMBER, "$", f"{e} is not a JSON number"), task_id_hint=_task_id_hint(text))
            continue
        except (json.JSONDecodeError, RecursionError) as e:
            detail = f"{e.msg} at column {e.colno}" if isinstance(e, json.JSONDecodeError) else "nested too deeply"
            yield _RawRecord(line_no, issue=RowIssue(RejectCode.MALFORMED_JSON, "$", f"malformed JSON: {detail}"),
                             task_id_hint=_task_id_hint(text))
            continue
        yield _RawRecord(line_no, value=value)


def _schema_allows_null(schema: Mapping[str, Any] | None) -> bool:
    if not schema:
        return True
    t = schema.get("type")
    if t is None:
        return ("const" not in schema and "enum" not in schema) or None in schema.get("enum", [])
    return t == "null" or (isinstance(t, list) and "null" in t)


def _prune_nulls(value: Any, schema: Mapping[str, Any] | None) -> Any:
    """Parquet columns are the union of all rows' keys, so a key absent from one row reads back as
    ``None``. Drop such ``None`` values where the schema does not allow null, so that the row looks
    as it was written (a missing *required* key then fails validation as missing)."""
    if isinstance(value, dict):
        props = (schema or {}).get("properties", {})
        out = {}
        for k, v in value.items():
            sub = props.get(k)
            if v is None and not _schema_allows_null(sub):
                continue
            out[k] = _prune_nulls(v, sub)
        return out
    if isinstance(value, list):
        items = (schema or {}).get("items")
        return [_prune_nulls(v, items) for v in value]
    return value


def _parquet_records(path: Path, schema_name: str | None, batch_rows: int = 256) -> Iterator[_RawRecord]:
    import pyarrow.parquet as pq

    schema = load_schema(schema_name) if schema_name else None
    pf = pq.ParquetFile(path)
    row_no = 0
    for batch in pf.iter_batches(batch_size=batch_rows):
        for rec in batch.to_pylist():
            row_no += 1
            yield _RawRecord(row_no, value=_prune_nulls(rec, schema))


def raw_records(path: Path, *, max_line_bytes: int, schema_name: str | None) -> Iterator[_RawRecord]:
    if _is_parquet(path):
        return _parquet_records(path, schema_name)
    return jsonl_records(path, max_line_bytes)
