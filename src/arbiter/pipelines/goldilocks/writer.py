"""Writing the outputs of :func:`arbiter.pipelines.goldilocks.curate_goldilocks`: the kept rows
(:class:`CuratedWriter`, ``.parquet`` or ``.jsonl``, through ``<path>.partial`` and a rename; the
Parquet schema with the annotation, :func:`annotated_schema`; lone surrogates kept as ``\\u``
escapes in JSON, :func:`json_line`, or replaced by U+FFFD in Parquet; a row that cannot be written
is an :class:`UnwritableRow`), the report (:func:`write_json_atomic`), and the check that no
output overwrites an input (:func:`check_output_paths`).

No output may overwrite an input: ``OUT``, the report and the rows log must differ from each
other, from the dataset (or lie inside it when it is a folder) and lie outside both score folders
(:func:`check_output_paths`, resolved paths); otherwise nothing is written.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from arbiter.datasets import io
from arbiter.datasets.convert import card_schema
from arbiter.judge import jsonvalues
from arbiter.pipelines.goldilocks.english import SURROGATE, lenient_text
from arbiter.pipelines.goldilocks.errors import CurationInputError
from arbiter.pipelines.goldilocks.flag import ANNOTATION_FIELDS


# ------------------------------------------------------------------ output


def _annotation_arrow_fields() -> list:
    import pyarrow as pa

    return [pa.field("lower_pass_rate", pa.float64()), pa.field("lower_scores", pa.list_(pa.float64())),
            pa.field("upper_pass_rate", pa.float64()), pa.field("upper_scores", pa.list_(pa.float64()))]


def annotated_schema(schema: Any) -> Any:
    """``schema`` (pyarrow, of the input rows) with the four annotation fields in the
    ``extra_info`` struct (added after its fields, or replacing fields of the same name; a new
    ``extra_info`` column when there is none) and the card's types
    (:func:`arbiter.datasets.convert.card_schema`), without schema metadata (an HF ``datasets``
    feature description would no longer match). ``None`` when ``extra_info`` is not a struct."""
    import pyarrow as pa

    ann = _annotation_arrow_fields()
    if "extra_info" not in schema.names:
        return card_schema(schema.append(pa.field("extra_info", pa.struct(ann))).remove_metadata())
    i = schema.get_field_index("extra_info")
    t = schema.field(i).type
    if pa.types.is_null(t):
        return card_schema(schema.set(i, pa.field("extra_info", pa.struct(ann))).remove_metadata())
    if not pa.types.is_struct(t):
        return None
    kept = [t.field(j) for j in range(t.num_fields) if t.field(j).name not in ANNOTATION_FIELDS]
    return card_schema(schema.set(i, pa.field("extra_info", pa.struct(kept + ann))).remove_metadata())


def final_schema(schema: Any) -> Any:
    """The schema of consolidated rows inferred from their values, with the card's types
    (:func:`arbiter.datasets.convert.card_schema`, annotation fields included)."""
    return card_schema(schema, {f.name: f.type for f in _annotation_arrow_fields()}).remove_metadata()


class UnwritableRow(ValueError):
    """A kept row that cannot be written to the output (a value Parquet cannot hold, a lone
    surrogate in its tests for Parquet, a value JSON cannot hold); :func:`curate_goldilocks`
    makes it a ``bad_row`` naming the row, and the batch goes on."""


def _surrogate_fields(value: Any, path: str = "") -> list[str]:
    """Dotted paths of the strings (and keys) in ``value`` that hold lone surrogates."""
    if isinstance(value, str):
        return [path or "."] if SURROGATE.search(value) else []
    out: list[str] = []
    if isinstance(value, Mapping):
        for k, v in value.items():
            p = f"{path}.{k}" if path else str(k)
            if isinstance(k, str) and SURROGATE.search(k):
                out.append(p)
            out += _surrogate_fields(v, p)
    elif isinstance(value, (list, tuple)):
        for i, v in enumerate(value):
            out += _surrogate_fields(v, f"{path}[{i}]")
    return out


def replace_surrogates(value: Any) -> Any:
    """``value`` with every lone surrogate in its strings (and keys) replaced by U+FFFD."""
    if isinstance(value, str):
        return lenient_text(value)
    if isinstance(value, Mapping):
        return {(lenient_text(k) if isinstance(k, str) else k): replace_surrogates(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [replace_surrogates(v) for v in value]
    return value


def json_line(value: Any, **kwargs: Any) -> bytes:
    """One JSON Lines record as UTF-8 bytes (:func:`arbiter.judge.jsonvalues.dumps`: integers of
    any size; non-ASCII text as is). A value holding lone surrogates (JSON ``"\\ud83d"`` read
    without its pair; not encodable as UTF-8) is written with ``\\u`` escapes instead, so it reads
    back identical. Raises what ``json.dumps`` raises for a value JSON cannot hold."""
    try:
        return (jsonvalues.dumps(value, ensure_ascii=False, **kwargs) + "\n").encode("utf-8")
    except UnicodeEncodeError:
        return (jsonvalues.dumps(value, ensure_ascii=True, **kwargs) + "\n").encode("ascii")


def write_json_atomic(path: str | os.PathLike, data: Any) -> None:
    """Write ``data`` as indented JSON to ``path`` atomically (:func:`arbiter.datasets.io.write_json_atomic`);
    lone surrogates become ``\\u`` escapes (:func:`json_line`)."""
    try:
        io.write_json_atomic(path, data, indent=1, ensure_ascii=False)
    except UnicodeEncodeError:
        io.write_json_atomic(path, data, indent=1, ensure_ascii=True)


def short_message(exc: BaseException, limit: int = 300) -> str:
    text = " ".join(str(exc).split())
    return text if len(text) <= limit else text[:limit] + " ..."


class CuratedWriter:
    """Streaming writer of the kept rows to ``.parquet`` or ``.jsonl``.

    JSONL: one row per line (:func:`json_line`: integers of any size, lone surrogates kept as
    ``\\u`` escapes). Parquet: ``schema`` is required (the input's Parquet schema through
    :func:`annotated_schema`, or the schema :func:`curate_goldilocks` infers from every row in its
    first pass), so every row is checked against it when it is kept, not at the end; rows are
    written in row groups of ``rows_per_group``. Each row is converted on its own
    (:meth:`encode`): a row that cannot be written raises :class:`UnwritableRow` before anything of
    it is written. Parquet strings are UTF-8: lone surrogates are replaced by U+FFFD (the fields are
    returned), except in ``reward_model`` (the tests that were scored would change:
    :class:`UnwritableRow`). Everything goes to ``<path>.partial`` first and is renamed on
    :meth:`close`.

    ``arbiter.datasets.convert.RowWriter`` is not reused: its Parquet schema is fixed to the
    converter's ``extra_info`` fields (other columns and the annotation would be dropped), and it
    refuses an ``extra_info.index`` seen before in the file, which two data sources may share
    (the card's collision: rows are keyed by data_source and index here).

    Raises ``ValueError`` for a Parquet path without ``schema``, and pyarrow's errors for a
    schema Parquet cannot store.
    """

    def __init__(self, path: str | os.PathLike, schema: Any = None, *, rows_per_group: int = 512):
        self.path = Path(path)
        self.tmp = self.path.with_name(self.path.name + ".partial")
        self.parquet = self.path.suffix.lower() == ".parquet"
        if self.parquet and schema is None:
            raise ValueError(f"{self.path}: a Parquet output needs its schema")
        self.schema = schema
        self.rows_per_group = rows_per_group
        self.count = 0
        self._buf: list[Any] = []
        self._writer = None
        self._file = None
        if self.parquet:
            import pyarrow.parquet as pq

            try:
                self._writer = pq.ParquetWriter(self.tmp, schema)
            except BaseException:
                self.tmp.unlink(missing_ok=True)
                raise
        else:
            self._file = open(self.tmp, "wb")

    def encode(self, row: Mapping[str, Any]) -> tuple[Any, list[str]]:
        """``(payload, replaced)``: the row ready for :meth:`write_encoded` and the fields whose
        lone surrogates were replaced by U+FFFD (Parquet only). Raises :class:`UnwritableRow`."""
        if not self.parquet:
            try:
                return json_line(row), []
            except (TypeError, ValueError, RecursionError) as exc:
                raise UnwritableRow(f"not JSON-serializable ({short_message(exc)})") from None
        import pyarrow as pa

        try:
            return pa.RecordBatch.from_pylist([dict(row)], schema=self.schema), []
        except UnicodeEncodeError:
            pass
        except (pa.ArrowException, ValueError, TypeError, OverflowError) as exc:
            raise UnwritableRow(f"does not fit the output's Parquet schema ({short_message(exc)}); write .jsonl "
                                f"instead") from None
        fields = _surrogate_fields(row)
        tests = [f for f in fields if f.startswith("reward_model")]
        if tests:
            raise UnwritableRow(f"{tests[0]} holds a lone surrogate, which a Parquet string (UTF-8) cannot hold, "
                                f"and replacing it would change the tests that were scored; write .jsonl instead")
        try:
            return pa.RecordBatch.from_pylist([replace_surrogates(dict(row))], schema=self.schema), fields
        except (pa.ArrowException, ValueError, TypeError, OverflowError) as exc:
            raise UnwritableRow(f"does not fit the output's Parquet schema ({short_message(exc)}); write .jsonl "
                                f"instead") from None

    def write_encoded(self, payload: Any) -> None:
        """Write one row encoded by :meth:`encode`."""
        self.count += 1
        if self._file is not None:
            self._file.write(payload)
            return
        self._buf.append(payload)
        if len(self._buf) >= self.rows_per_group:
            self._flush()

    def write(self, row: Mapping[str, Any]) -> None:
        """Write one row (a dict of columns). Raises :class:`UnwritableRow`."""
        self.write_encoded(self.encode(row)[0])

    def _flush(self) -> None:
        if self._buf and self._writer is not None:
            import pyarrow as pa

            self._writer.write_table(pa.Table.from_batches(self._buf, schema=self.schema).combine_chunks())
            self._buf = []

    def close(self, *, keep: bool = True) -> None:
        """Finish the file and rename it into place; with ``keep=False`` remove what was written."""
        try:
            if self._writer is not None:
                if keep:
                    self._flush()
                    if not self.count:
                        self._writer.write_table(self.schema.empty_table())
                self._writer.close()
                self._writer = None
            if self._file is not None:
                self._file.close()
                self._file = None
            if keep:
                os.replace(self.tmp, self.path)
        finally:
            if not keep and self.tmp.exists():
                self.tmp.unlink()


def _same_file(a: Path, b: Path) -> bool:
    if a.resolve() == b.resolve():
        return True
    try:
        return a.exists() and b.exists() and os.path.samefile(a, b)
    except OSError:
        return False


def _inside(path: Path, folder: Path) -> bool:
    resolved, top = path.resolve(), folder.resolve()
    if resolved == top or top in resolved.parents:
        return True
    for parent in resolved.parents:  # hard-linked or differently spelled folders
        try:
            if parent.exists() and os.path.samefile(parent, folder):
                return True
        except OSError:
            pass
    return False


def check_output_paths(outputs: Mapping[str, str | os.PathLike], inputs: Mapping[str, str | os.PathLike | None]) -> None:
    """Refuse outputs that would overwrite an input or each other, before anything is written.

    ``outputs``: option name -> path of a file to write (its ``<path>.partial`` temporary file is
    checked too); ``inputs``: option name -> an input file or folder (``None`` skipped). Every
    output must differ from every other output and from each input file, and must not lie inside
    an input folder (an HF dataset folder, an ``arbiter score`` folder). Paths are compared
    resolved (``..``, symlinks), and existing ones also by identity (``os.path.samefile``: hard
    links, case-insensitive file systems). Raises :class:`CurationInputError` naming both options.
    """
    written: list[tuple[str, Path]] = []
    for label, p in outputs.items():
        p = Path(p)
        written += [(label, p), (f"{label} (its temporary file)", p.with_name(p.name + ".partial"))]
    for label, p in written:
        for ilabel, i in inputs.items():
            if i is None:
                continue
            i = Path(i)
            if i.is_dir():
                if _inside(p, i):
                    raise CurationInputError(f"{label} {p} is inside {ilabel} {i}: writing it would change an input; "
                                             f"write it elsewhere")
            elif _same_file(p, i):
                raise CurationInputError(f"{label} {p} is {ilabel} ({i}): writing it would overwrite an input; "
                                         f"write it elsewhere")
    for n, (la, a) in enumerate(written):
        for lb, b in written[n + 1:]:
            if _same_file(a, b):
                raise CurationInputError(f"{la} and {lb} are the same file ({a}); one would overwrite the other")
