"""The first pass of :func:`arbiter.pipelines.goldilocks.curate_goldilocks` and
:func:`arbiter.pipelines.goldilocks.audit_annotations` over the dataset, streamed, before anything
is written: the rows and the rows keyed by position, the dataset's template lines for the English
filter (:class:`arbiter.pipelines.goldilocks.english.TemplateCounter`), and the Parquet schema of
the output (the input's Parquet schema with the annotation, or the one inferred from every row:
rows that cannot share one schema are refused then).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from arbiter.datasets.convert import parquet_schema
from arbiter.datasets.verl_rows import (RowError, UnreadableRow, dataset_format, iter_raw_rows, parquet_key_columns,
                                        parse_row)
from arbiter.pipelines.goldilocks.english import TEMPLATE_MIN_ROWS, TEMPLATE_MIN_SHARE, TemplateCounter, statement_text
from arbiter.pipelines.goldilocks.errors import CurationInputError
from arbiter.pipelines.goldilocks.flag import ANNOTATION_FIELDS
from arbiter.pipelines.goldilocks.writer import replace_surrogates, short_message, annotated_schema


# ------------------------------------------------------------------ first pass


def _arrow_index_type(types: set[str], int_in_range: bool) -> tuple[Any, bool]:
    """``(arrow type, as_string)`` for ``extra_info.index`` values of these Python types."""
    import pyarrow as pa

    single = {"int": pa.int64(), "str": pa.string(), "float": pa.float64(), "bool": pa.bool_()}
    if len(types) == 1:
        (t,) = types
        if t in single and (t != "int" or int_in_range):
            return single[t], False
    return pa.string(), True


class _SchemaBuilder:
    """The Parquet schema of the rows a curation may write, inferred (pyarrow) from every row that
    parses, before anything is written: the union of the rows' types, ``extra_info.index`` typed
    from its values (strings when they mix types, ``as_string``), the annotation fields added.
    Rows that pyarrow cannot convert on their own (an integer beyond int64, ...) are left out of
    the schema and listed in ``unwritable`` (position -> error): they become bad rows when kept
    (written against a schema that lacks their fields, they would lose them)."""

    BATCH = 256

    def __init__(self) -> None:
        self.schemas: list[Any] = []
        self.index_types: set[str] = set()
        self.int_in_range = True
        self.has_index = False
        self.unwritable: dict[int, str] = {}
        self._batch: list[tuple[int, dict[str, Any]]] = []

    def add(self, raw: Mapping[str, Any], position: int) -> None:
        ei = raw.get("extra_info")
        ei = {k: v for k, v in ei.items() if k not in ANNOTATION_FIELDS} if isinstance(ei, Mapping) else {}
        if "index" in ei:
            self.has_index = True
        index = ei.pop("index", None)
        if index is not None and index != "":
            self.index_types.add(type(index).__name__)
            if isinstance(index, int) and not isinstance(index, bool) and not -2 ** 63 <= index < 2 ** 63:
                self.int_in_range = False
        self._batch.append((position, {**raw, "extra_info": ei or None}))
        if len(self._batch) >= self.BATCH:
            self._infer()

    def _infer(self) -> None:
        import pyarrow as pa

        errors = (pa.ArrowException, ValueError, TypeError, OverflowError)
        try:
            self.schemas.append(pa.Table.from_pylist([r for _, r in self._batch]).schema)
        except errors:
            for position, r in self._batch:
                try:
                    self.schemas.append(pa.Table.from_pylist([r]).schema)
                except UnicodeEncodeError:
                    try:
                        self.schemas.append(pa.Table.from_pylist([replace_surrogates(r)]).schema)
                    except errors as exc:
                        self.unwritable[position] = short_message(exc)
                except errors as exc:
                    self.unwritable[position] = short_message(exc)
        self._batch = []

    def schema(self) -> tuple[Any, bool]:
        """``(schema, index_as_string)``. Raises pyarrow's error when the rows cannot share one
        schema (a column holding numbers in some rows and text in others, ...)."""
        import pyarrow as pa

        self._infer()
        if not self.schemas:  # nothing to write: the converter's verl schema, with the annotation
            return annotated_schema(parquet_schema()), False
        unified = pa.unify_schemas(self.schemas, promote_options="permissive")
        index_type, as_string = _arrow_index_type(self.index_types, self.int_in_range)
        fields = [pa.field("index", index_type)] if self.has_index else []
        if "extra_info" in unified.names:
            i = unified.get_field_index("extra_info")
            t = unified.field(i).type
            if pa.types.is_struct(t):
                fields += [t.field(j) for j in range(t.num_fields)]
            elif not pa.types.is_null(t):
                raise ValueError(f"extra_info is not a struct ({t})")
            unified = unified.set(i, pa.field("extra_info", pa.struct(fields)))
        else:
            unified = unified.append(pa.field("extra_info", pa.struct(fields)))
        return annotated_schema(unified), as_string


@dataclass
class Prescan:
    rows: int = 0
    positional: int = 0
    template: dict = field(default_factory=dict)
    schema: Any = None
    index_as_string: bool = False
    unwritable: dict = field(default_factory=dict)   # position -> why pyarrow cannot convert the row


def prescan_dataset(dataset: Path, split: str | None, *, statements: bool, infer_schema: bool,
                    template_min_rows: int = TEMPLATE_MIN_ROWS, template_min_share: float = TEMPLATE_MIN_SHARE) -> Prescan:
    """The first pass over the dataset, streamed, before anything is written: counts the rows and
    the rows keyed by position (no ``extra_info.index``), finds the template lines when
    ``statements`` (:class:`TemplateCounter`), and infers the Parquet output schema when
    ``infer_schema`` (:class:`_SchemaBuilder`). A Parquet dataset is read by the columns needed
    only. Raises :class:`CurationInputError` for an unreadable or empty dataset."""
    result = Prescan()
    counter = TemplateCounter(min_rows=template_min_rows, min_share=template_min_share) if statements else None
    builder = _SchemaBuilder() if infer_schema else None
    try:
        fmt = dataset_format(dataset)
        columns = None
        if fmt == "parquet" and builder is None:
            columns = parquet_key_columns(dataset, also=("prompt",) if statements else ())
        for position, raw in enumerate(iter_raw_rows(dataset, columns=columns, split=split, batch_size=256,
                                                     unreadable=True)):
            result.rows += 1
            if isinstance(raw, UnreadableRow):  # a bad_row of the second pass
                continue
            ei = raw.get("extra_info")
            index = ei.get("index") if isinstance(ei, Mapping) else None
            if index is None or index == "":
                result.positional += 1
            if counter is not None:
                prompt = raw.get("prompt")
                counter.add(statement_text(prompt) if isinstance(prompt, (list, tuple)) else "")
            if builder is not None:
                try:
                    parse_row(raw, position)
                except RowError:
                    continue
                builder.add(raw, position)
    except (ValueError, OSError) as exc:
        raise CurationInputError(f"--dataset: {exc}") from None
    if not result.rows:
        raise CurationInputError(f"--dataset {dataset}: no rows (an empty file or split)")
    if counter is not None:
        result.template = counter.lines()
    if builder is not None:
        import pyarrow as pa

        try:
            result.schema, result.index_as_string = builder.schema()
            result.unwritable = builder.unwritable
        except (pa.ArrowException, ValueError, TypeError) as exc:
            raise CurationInputError(f"--out: the rows of --dataset {dataset} cannot share one Parquet schema "
                                     f"({short_message(exc)}); write .jsonl instead") from None
    return result


def input_schema(dataset: Path) -> Any:
    if dataset_format(dataset) != "parquet":
        return None
    import pyarrow.parquet as pq

    return annotated_schema(pq.read_schema(dataset))
