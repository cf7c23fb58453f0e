"""Reading PIE rows from Parquet, JSONL (``.gz``), ``save_to_disk`` folders, HF datasets, pyarrow tables or
iterables of mappings: one validated row or one :class:`~arbiter.datasets.pie.errors.RowIssues` per input row,
so a bad row never stops a batch.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any, Literal

from arbiter.datasets.io import iter_lines
from arbiter.datasets.pie.errors import PieRowError, RowIssues
from arbiter.datasets.pie.rows import (
    MODELS,
    PIE_RELEASE_LACKS,
    AnyPieRow,
    PieBysrcRow,
    PiePair,
    PieRow,
    RowKind,
    is_pie_release_row,
    validate_row,
    parse_pie_pair,
)


class PieReleaseRows(UserWarning):
    """:func:`iter_rows` read a file of PIE's own schema (PIE release rows, e.g. its ``val.jsonl``) as
    :class:`PiePair` rows; the message says what such rows lack (:data:`PIE_RELEASE_LACKS`)."""


def _is_hf(obj: Any, name: str) -> bool:
    return any(c.__name__ == name and c.__module__.startswith("datasets") for c in type(obj).__mro__)


def _pick_split(dd: Any, split: str | None) -> Any:
    if split is None:
        if len(dd) == 1:
            return next(iter(dd.values()))
        raise ValueError(f"this DatasetDict has splits {sorted(dd)}; pass split=")
    if split not in dd:
        raise ValueError(f"split {split!r} not in this DatasetDict (has {sorted(dd)})")
    return dd[split]


def iter_jsonl_lines(path: str | os.PathLike) -> Iterator[tuple[int, Any, str | None]]:
    """Read a JSONL file (``.gz``: gzip) line by line, never stopping at a bad line.

    Yields ``(line number, value, None)`` for each non-blank line (1-based; lines end at a newline byte; a UTF-8 byte
    order mark on line 1 is ignored) and ``(line number, None, problem)`` for a line that is not UTF-8 text
    (``problem`` names the first invalid byte and its position in the line, e.g. ``"not UTF-8 text (byte 0xff at
    column 12)"``) or not one JSON value (``"not valid JSON (Expecting value at char 0)"``). Raises ``OSError`` when
    the file cannot be opened or read (a problem of the whole file, not of a line)."""
    for line in iter_lines(path):
        yield line.number, line.value, line.problem


def _iter_jsonl(path: Path) -> Iterator[Any]:
    for lineno, value, problem in iter_jsonl_lines(path):
        if problem is None:
            yield value
        else:
            yield RowIssues(None, None, None, (("<row>", f"{path.name}: line {lineno} is {problem}"),))


def _iter_parquet(path: Path) -> Iterator[dict[str, Any]]:
    import pyarrow.parquet as pq

    pf = pq.ParquetFile(path)
    for batch in pf.iter_batches(batch_size=512):
        yield from batch.to_pylist()


def _iter_source(source: Any, split: str | None) -> Iterator[Any]:
    if isinstance(source, (str, os.PathLike)):
        path = Path(source)
        if path.is_dir():
            markers = ("dataset_info.json", "state.json", "dataset_dict.json")
            if any((path / m).exists() for m in markers):
                import datasets  # optional dependency: arbiter[hf]

                ds = datasets.load_from_disk(str(path))
                if _is_hf(ds, "DatasetDict"):
                    ds = _pick_split(ds, split)
                yield from ds
                return
            files = sorted(p for p in path.rglob("*.parquet") if split is None or p.name.startswith(split))
            if not files:
                raise ValueError(f"{path}: neither a datasets.save_to_disk directory nor a folder of Parquet files")
            for p in files:
                yield from _iter_parquet(p)
            return
        if not path.exists():
            raise FileNotFoundError(f"{path}: no such file")
        name = path.name.lower()
        if name.endswith((".parquet", ".pq")):
            yield from _iter_parquet(path)
        elif name.endswith((".jsonl", ".jsonl.gz", ".json", ".ndjson")):
            yield from _iter_jsonl(path)
        else:
            raise ValueError(f"{path}: unknown format (expected .parquet, .jsonl[.gz], or a directory)")
        return
    if _is_hf(source, "DatasetDict"):
        yield from _pick_split(source, split)
        return
    if _is_hf(source, "Dataset"):
        yield from source
        return
    if type(source).__name__ == "Table" and type(source).__module__.startswith("pyarrow"):
        for batch in source.to_batches(max_chunksize=512):
            yield from batch.to_pylist()
        return
    if isinstance(source, Mapping):
        raise TypeError("pass an iterable of rows, not a single row (use parse_row for one row)")
    if isinstance(source, Iterable):
        yield from source
        return
    raise TypeError(f"cannot read PIE rows from a {type(source).__name__}")


def iter_raw_rows(source: Any, *, split: str | None = None) -> Iterator[tuple[int, Any]]:
    """Yield ``(index, raw_row)`` for every data row of ``source``, ``index`` 0-based.

    ``source``: a ``.parquet`` file; a ``.jsonl``/``.jsonl.gz``/``.json`` (one object per line) file; a directory
    written by ``datasets`` ``save_to_disk`` (``split=`` picks a split of a DatasetDict) or holding ``*.parquet``
    shards (``split=`` keeps files whose name starts with it); a ``datasets.Dataset``/``DatasetDict``; a
    ``pyarrow.Table``; or an iterable of mappings. ``raw_row`` is a dict, or a :class:`RowIssues` for an
    unreadable JSONL line. Raises ``FileNotFoundError``/``ValueError``/``TypeError`` for an unusable source.
    """
    for i, raw in enumerate(_iter_source(source, split)):
        if isinstance(raw, RowIssues):
            raw = RowIssues(i, None, None, raw.issues)
        yield i, raw


def iter_rows(source: Any, *, kind: RowKind = "auto",
              split: str | None = None) -> Iterator[AnyPieRow | PiePair | RowIssues]:
    """Yield one validated row or one :class:`RowIssues` per input row of ``source`` (see :func:`iter_raw_rows`).

    ``kind``: ``"pairs"`` (:class:`PieRow`), ``"bysrc"`` (:class:`PieBysrcRow`), ``"pie"`` (PIE's own schema, e.g.
    its ``val.jsonl``: :class:`PiePair`), or ``"auto"``, decided by the first readable row: ``"pie"`` for a PIE
    release row (:func:`~arbiter.datasets.pie.rows.is_pie_release_row`; a :class:`PieReleaseRows` warning then says
    what the file lacks), pairs when it has a ``tgt_id`` column (``[pairs only]`` in the card), else bysrc. A bad
    row never stops the iteration; the source itself being unreadable raises (see :func:`iter_raw_rows`).
    """
    if kind not in ("auto", "pie", *MODELS):
        raise ValueError(f"kind must be 'pairs', 'bysrc', 'pie' or 'auto', got {kind!r}")
    chosen: str | None = None if kind == "auto" else kind
    for i, raw in iter_raw_rows(source, split=split):
        if isinstance(raw, RowIssues):
            yield raw
            continue
        if chosen is None and isinstance(raw, Mapping):
            chosen = _kind_of(raw, source)
        try:
            if chosen == "pie":
                yield parse_pie_pair(raw, index=i)
            else:
                yield validate_row(MODELS.get(chosen or "pairs", PieRow), raw, i)
        except PieRowError as e:
            yield e.error


def _kind_of(raw: Mapping[str, Any], source: Any) -> str:
    """The kind of a file whose first readable row is ``raw`` (see :func:`iter_rows`)."""
    if is_pie_release_row(raw):
        name = Path(source).name if isinstance(source, (str, os.PathLike)) else "these rows"
        warnings.warn(f"{name}: PIE release rows (PIE's own schema), read as PiePair: {PIE_RELEASE_LACKS}",
                      PieReleaseRows, stacklevel=3)
        return "pie"
    return "pairs" if "tgt_id" in raw else "bysrc"


def load_rows(
    source: Any, *, kind: RowKind = "auto", split: str | None = None, on_error: Literal["raise", "skip"] = "raise"
) -> list[AnyPieRow | PiePair]:
    """All rows of ``source`` as a list. ``on_error="raise"`` raises :class:`PieRowError` at the first bad row;
    ``"skip"`` drops bad rows (use :func:`iter_rows` to see them)."""
    out: list[AnyPieRow | PiePair] = []
    for r in iter_rows(source, kind=kind, split=split):
        if isinstance(r, RowIssues):
            if on_error == "raise":
                raise PieRowError(r)
            continue
        out.append(r)
    return out


def iter_pie_pairs(source: Any, *, split: str | None = None) -> Iterator[PiePair | RowIssues]:
    """Yield one :class:`PiePair` or one :class:`RowIssues` per row of ``source`` (see :func:`parse_pie_pair` and
    :func:`iter_raw_rows`). Reads PIE release files such as PIE's ``val.jsonl`` and gem5 pairs."""
    for i, raw in iter_raw_rows(source, split=split):
        if isinstance(raw, RowIssues):
            yield raw
            continue
        try:
            yield parse_pie_pair(raw, index=i)
        except PieRowError as e:
            yield e.error


def load_pie_pairs(
    source: Any, *, split: str | None = None, on_error: Literal["raise", "skip"] = "raise"
) -> list[PiePair]:
    """All :class:`PiePair` rows of ``source``; ``on_error`` as in :func:`load_rows`."""
    out: list[PiePair] = []
    for r in iter_pie_pairs(source, split=split):
        if isinstance(r, RowIssues):
            if on_error == "raise":
                raise PieRowError(r)
            continue
        out.append(r)
    return out
