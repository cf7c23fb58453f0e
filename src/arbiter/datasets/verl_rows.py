"""verl rule-reward rows (the codegen card's schema) and streaming loaders.

A row has ``data_source`` (the reward's routing key), ``prompt`` (chat messages), ``ability``,
``reward_model`` (``{style: "rule", ground_truth}``: the test suite as JSON text or decoded data)
and ``extra_info`` (``index``, ``reference_solutions``, ``prelude``, ``time_limit``, ...). Files:
Parquet, JSON Lines (``.jsonl``, ``.jsonl.gz``, ``.json``) or an HF ``datasets`` folder; every
loader streams. Rows are keyed ``"<data_source>:<extra_info.index>"`` (else by position).
The schema table and the rules: ``docs/codegen.md`` ("verl rows").
"""

from __future__ import annotations

import gzip
import os
import zlib
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Iterator

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from arbiter.datasets.io import BOM, decode_json_line
from arbiter.judge import jsonvalues
from arbiter.judge.encodings._common import to_plain
from arbiter.judge.testsuite import CallCase, StdioCase, TestSuite


class RowError(ValueError):
    """A dataset row that does not fit the verl schema; the message names the row and the field."""


class UnreadableRow(dict):
    """An empty row in the place of a JSONL line that is not a JSON object (``iter_raw_rows(...,
    unreadable=True)``); ``error`` names the file and line, and :func:`parse_row` raises it."""

    def __init__(self, error: RowError):
        super().__init__()
        self.error = error


class ChatMessage(BaseModel):
    """One chat message of ``prompt``."""

    model_config = ConfigDict(extra="allow")
    role: str
    content: str


class RewardModel(BaseModel):
    """``reward_model``: ``style`` (``rule``), ``ground_truth`` (JSON text or decoded data),
    ``method`` (legacy, often null)."""

    model_config = ConfigDict(extra="allow")
    style: str = "rule"
    ground_truth: Any = None
    method: Any = None


class VerlRow(BaseModel):
    """One verl rule-reward row (docs/codegen.md). ``position`` is the 0-based row number in
    its file (not a column)."""

    model_config = ConfigDict(extra="allow")
    data_source: str
    prompt: list[ChatMessage] = Field(default_factory=list)
    ability: str = "code"
    reward_model: RewardModel
    extra_info: dict[str, Any] = Field(default_factory=dict)
    position: int = Field(default=-1, exclude=True)

    @property
    def index(self) -> Any:
        """``extra_info.index`` or ``None``."""
        return self.extra_info.get("index")

    @property
    def key(self) -> str:
        """The row key (docs/codegen.md)."""
        return row_key(self.data_source, self.index, self.position)

    @property
    def ground_truth(self) -> Any:
        """``reward_model.ground_truth``."""
        return self.reward_model.ground_truth


def row_key(data_source: Any, index: Any, position: int) -> str:
    """``"<data_source>:<index>"``, or ``"<data_source>:#<position>"`` without an index."""
    if index is None or index == "":
        return f"{data_source}:#{position}"
    return f"{data_source}:{index}"


def parse_row(raw: Mapping[str, Any], position: int) -> VerlRow:
    """Validate one raw row (a dict from any loader). Raises :class:`RowError` naming the row
    (position and, when readable, the key) and the offending field, or the line of an
    :class:`UnreadableRow`."""
    if isinstance(raw, UnreadableRow):
        raise raw.error
    try:
        row = VerlRow.model_validate({**raw, "position": position})
    except ValidationError as exc:
        err = exc.errors()[0]
        field = ".".join(str(p) for p in err.get("loc", ())) or "?"
        ds = raw.get("data_source") if isinstance(raw, Mapping) else None
        ei = raw.get("extra_info") if isinstance(raw, Mapping) else None
        index = ei.get("index") if isinstance(ei, Mapping) else None
        raise RowError(f"row {row_key(ds, index, position)!r} (position {position}): {field}: {err.get('msg')}") from None
    return row


#: The start of the warning for a suite that any do-nothing program passes (:func:`vacuous_suite_warning`).
VACUOUS_SUITE = "vacuous test suite"


def _accepts_nothing(case: Any) -> bool:
    if isinstance(case, StdioCase):
        return any(not out.strip() for out in case.expected)
    if isinstance(case, CallCase):
        empty_node = case.node_return in ("ListNode", "TreeNode")  # (a `pass` body returns it: None is [])
        return any(value is None or (empty_node and value == []) for value in case.expected)
    return False


def vacuous_suite_warning(suite: TestSuite) -> str:
    """A one-line warning when *every* case of ``suite`` accepts the answer of a program that does
    nothing, else ``""``.

    - stdin/stdout case: an accepted output that is empty or whitespace only (the token checkers
      accept empty output for it, so a program that prints nothing passes);
    - function-call case: an accepted return value ``None`` (a function whose body is ``pass``), or
      ``[]`` where the row's ``node_return`` is a node (the harness returns a ``None`` node as ``[]``).

    One such case is a legitimate problem (the answer for that input is empty); only when all
    cases are is the suite vacuous: it cannot tell a solution from an empty program (olmo-eval PR
    354 scored a suite without tests 1.0; an all-empty suite is the same hole with tests in it).
    The warning starts with :data:`VACUOUS_SUITE`. Callers judge such rows as usual and carry the
    warning (the verl reward's ``warning`` field, ``arbiter score``'s report, ``arbiter convert``'s
    notes); it is not an error.
    """
    if not len(suite) or not all(_accepts_nothing(c) for c in suite.cases):
        return ""
    n = len(suite)
    kinds = {type(c) for c in suite.cases}
    if kinds == {StdioCase}:
        what = "every expected output is empty"
        who = "a program that prints nothing"
    elif kinds == {CallCase}:
        what = "every expected return value is None"
        who = "a function that returns nothing"
    else:
        what = "every expected output is empty or None"
        who = "a program that does nothing"
    return f"{VACUOUS_SUITE}: {what} ({n} case{'s' if n != 1 else ''}); {who} passes"


def dataset_format(path: str | os.PathLike) -> str:
    """``"parquet"``, ``"jsonl"`` or ``"hf"`` for a path; raises ``ValueError`` for anything else."""
    p = Path(path)
    if p.is_dir():
        if (p / "dataset_info.json").is_file() or (p / "state.json").is_file() or (p / "dataset_dict.json").is_file():
            return "hf"
        raise ValueError(f"{p}: a directory that is not an HF datasets save_to_disk folder")
    name = p.name.lower()
    if name.endswith(".parquet"):
        return "parquet"
    if name.endswith((".jsonl", ".jsonl.gz", ".json", ".ndjson")):
        return "jsonl"
    raise ValueError(f"{p}: unknown dataset format (expected .parquet, .jsonl[.gz] or an HF datasets folder)")




def _open_binary(path: Path):
    if path.name.lower().endswith(".gz"):
        return gzip.open(path, "rb")
    return open(path, "rb")


def _not_utf8(where: str, raw: bytes, exc: UnicodeDecodeError) -> RowError:
    return RowError(f"{where}: not UTF-8 text (byte {raw[exc.start]:#04x} at column {exc.start + 1}); "
                    f"a binary file? (JSON Lines must be UTF-8 text)")


def _iter_jsonl(p: Path, top: set[str] | None, unreadable: bool = False) -> Iterator[dict[str, Any]]:
    """Rows of a JSON Lines file (or a ``.json`` array), read as bytes and decoded per line so an
    error names the line; with ``unreadable``, a line or item that is not a JSON object is an
    :class:`UnreadableRow` (not raised)."""
    with _open_binary(p) as f:
        head = f.read(4096)
        f.seek(0)
        if head.startswith(BOM):
            head = head[len(BOM):]
        if head.lstrip().startswith(b"["):  # a .json file holding one JSON array: read whole (not streamed)
            data = f.read()
            try:
                records = jsonvalues.loads(data)
            except UnicodeDecodeError as exc:
                raise _not_utf8(str(p), data, exc) from None
            except ValueError as exc:
                raise RowError(f"{p}: not valid JSON ({exc})") from None
            for number, obj in enumerate(records):
                if not isinstance(obj, dict):
                    yield _unreadable(RowError(f"{p} item {number}: expected a JSON object, got {type(obj).__name__}"),
                                      unreadable)
                    continue
                yield obj if top is None else {k: v for k, v in obj.items() if k in top}
            return
        for number, raw in enumerate(f, 1):
            if not raw.strip():
                continue
            try:
                obj = decode_json_line(raw, number)
            except ValueError as exc:
                yield _unreadable(RowError(f"{p} line {number}: {exc}"), unreadable)
                continue
            if not isinstance(obj, dict):
                yield _unreadable(RowError(f"{p} line {number}: expected a JSON object, got {type(obj).__name__}"),
                                  unreadable)
                continue
            yield obj if top is None else {k: v for k, v in obj.items() if k in top}


def _unreadable(error: RowError, unreadable: bool) -> UnreadableRow:
    """The :class:`UnreadableRow` of ``error`` when ``unreadable``, else ``error`` raised."""
    if not unreadable:
        raise error from None
    return UnreadableRow(error)


def _hf_dataset(path: Path, split: str | None):
    try:
        import datasets  # noqa: F401
    except ImportError as exc:  # pragma: no cover - datasets is a test dependency
        raise ValueError(f"{path}: reading an HF datasets folder needs the 'datasets' package (pip install arbiter[hf])") from exc
    from datasets import DatasetDict, load_from_disk

    try:
        ds = load_from_disk(str(path))
    except Exception as exc:  # datasets raises FileNotFoundError, ValueError, pyarrow errors, ...
        raise ValueError(f"{path}: not a readable HF datasets folder ({type(exc).__name__}: {exc})") from None
    if isinstance(ds, DatasetDict):
        if split is None:
            if len(ds) != 1:
                raise ValueError(f"{path}: a DatasetDict with splits {sorted(ds)}; choose one with split=")
            split = next(iter(ds))
        if split not in ds:
            raise ValueError(f"{path}: no split {split!r}; splits: {sorted(ds)}")
        ds = ds[split]
    return ds


def _iter_parquet(p: Path, columns: list[str] | None, batch_size: int) -> Iterator[dict[str, Any]]:
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        pf = pq.ParquetFile(p)
    except (pa.ArrowException, OSError) as exc:
        raise ValueError(f"{p}: not a readable Parquet file ({exc})") from None
    with pf:
        try:
            for batch in pf.iter_batches(batch_size=batch_size, columns=columns):
                yield from batch.to_pylist()
        except (pa.ArrowException, OSError) as exc:
            raise ValueError(f"{p}: cannot read the Parquet data ({exc})") from None


def iter_raw_rows(path: str | os.PathLike, *, columns: list[str] | None = None, batch_size: int = 64,
                  split: str | None = None, unreadable: bool = False) -> Iterator[dict[str, Any]]:
    """Stream the rows of a verl dataset file as plain dicts (numpy/pyarrow values converted).

    - ``columns``: only these top-level columns (Parquet and HF read nothing else; JSONL parses
      each line whole and drops the rest). Nested paths such as ``extra_info.index`` work for
      Parquet.
    - ``batch_size``: rows per Parquet record batch (memory is about one batch of rows).
    - ``split``: the split of an HF ``DatasetDict`` folder.

    - ``unreadable``: a JSONL line that is not UTF-8 text or not a JSON object is yielded as an
      :class:`UnreadableRow` (one bad line never stops a batch) instead of raised.

    Raises ``ValueError`` naming the file for an unknown format or an unreadable file (not
    Parquet, not gzip, not an HF folder), and :class:`RowError` naming the file and line for a
    JSONL line that is not UTF-8 text or not a JSON object. An empty file yields no rows.
    """
    p = Path(path)
    fmt = dataset_format(p)
    if fmt == "parquet":
        yield from _iter_parquet(p, columns, batch_size)
        return
    if fmt == "jsonl":
        top = None if columns is None else {c.split(".")[0] for c in columns}
        try:
            yield from _iter_jsonl(p, top, unreadable)
        except (OSError, EOFError, zlib.error) as exc:  # gzip.BadGzipFile, a truncated .gz, an I/O error
            raise ValueError(f"{p}: cannot read ({type(exc).__name__}: {exc})") from None
        return
    ds = _hf_dataset(p, split)
    if columns is not None:
        ds = ds.select_columns(sorted({c.split(".")[0] for c in columns} & set(ds.column_names)))
    for start in range(0, len(ds), batch_size):
        batch = ds[start:start + batch_size]
        names = list(batch)
        for i in range(len(batch[names[0]]) if names else 0):
            yield {name: to_plain(batch[name][i]) for name in names}


def iter_rows(path: str | os.PathLike, *, batch_size: int = 64, split: str | None = None,
              errors: list[RowError] | None = None) -> Iterator[VerlRow]:
    """Stream :class:`VerlRow` objects. A row that does not validate raises :class:`RowError`,
    or, when ``errors`` is a list, is appended to it and skipped (one bad row never stops a
    batch)."""
    for position, raw in enumerate(iter_raw_rows(path, batch_size=batch_size, split=split)):
        try:
            yield parse_row(raw, position)
        except RowError as exc:
            if errors is None:
                raise
            errors.append(exc)


def parquet_key_columns(path: str | os.PathLike, also: Sequence[str] = ()) -> list[str]:
    """The columns of a verl Parquet file that hold its row keys: ``data_source``, plus the leaf
    ``extra_info.index`` when the file has it, plus each top-level column of ``also`` the file has
    (for :func:`iter_raw_rows` ``columns=``). Raises ``ValueError`` naming the file when it is not a
    readable Parquet file or has no ``data_source`` column (not a verl dataset)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        schema = pq.read_schema(path)
    except (pa.ArrowException, OSError) as exc:
        raise ValueError(f"{path}: not a readable Parquet file ({exc})") from None
    if "data_source" not in schema.names:
        raise ValueError(f"{path}: no 'data_source' column (columns: {', '.join(schema.names[:10]) or 'none'}); "
                         f"not a verl dataset")
    columns = ["data_source"]
    if "extra_info" in schema.names:
        ei = schema.field("extra_info").type
        if hasattr(ei, "get_field_index") and ei.get_field_index("index") >= 0:
            columns.append("extra_info.index")
    return columns + [c for c in also if c in schema.names]


def iter_row_keys(path: str | os.PathLike, *, split: str | None = None,
                  errors: list[tuple[int, RowError]] | None = None) -> Iterator[tuple[str, Any]]:
    """Stream ``(data_source, extra_info.index)`` per row, reading only those columns where the
    format allows (Parquet: the two leaf columns; HF: the two top-level columns). The index is
    ``None`` when a row has none. Cheap: the card's 14,927 rows take well under a second.
    Raises ``ValueError`` naming the file as :func:`iter_raw_rows` does, and for a Parquet file
    without a ``data_source`` column. With ``errors`` (a list), a JSONL line that is not a JSON
    object is appended to it as ``(position, error)`` and yields ``(None, None)`` in its place."""
    p = Path(path)
    columns = parquet_key_columns(p) if dataset_format(p) == "parquet" else ["data_source", "extra_info"]
    rows = iter_raw_rows(p, columns=columns, batch_size=4096, split=split, unreadable=errors is not None)
    for position, raw in enumerate(rows):
        if isinstance(raw, UnreadableRow) and errors is not None:
            errors.append((position, raw.error))
        ei = raw.get("extra_info")
        yield raw.get("data_source"), (ei.get("index") if isinstance(ei, Mapping) else None)


__all__ = [
    "VACUOUS_SUITE",
    "ChatMessage",
    "RewardModel",
    "RowError",
    "VerlRow",
    "dataset_format",
    "iter_raw_rows",
    "iter_row_keys",
    "iter_rows",
    "parse_row",
    "row_key",
    "vacuous_suite_warning",
]
