"""Loading seed rows and return rows: every row becomes a typed row or a :class:`Rejection`. See
``docs/oracle.md`` ("Input rows")."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Generic, Iterable, Iterator, Mapping, TypeVar, Union

from pydantic import BaseModel

from arbiter.datasets.oracle.records import raw_records, json_path, schema_issues
from arbiter.datasets.oracle.rows import (
    MAX_ANSWER_BYTES,
    MAX_LINE_BYTES,
    RETURN_SCHEMA_NAME,
    SEED_SCHEMA_NAME,
    Rejection,
    RejectCode,
    ReturnRow,
    RowIssue,
    RowOrigin,
    SeedRow,
)


# --------------------------------------------------------------------------------------------------
# Loading seeds and returns


T = TypeVar("T")


@dataclass
class LoadResult(Generic[T]):
    """Rows that loaded (in file order) and rows that did not (in file order)."""

    rows: list[T] = field(default_factory=list)
    rejections: list[Rejection] = field(default_factory=list)

    @property
    def by_id(self) -> dict[str, T]:
        """Rows by ``task_id`` (meaningful for seeds, where ids are unique)."""
        return {r.task_id: r for r in self.rows}  # type: ignore[attr-defined]


def task_id_of(value: Any) -> str | None:
    if isinstance(value, dict) and isinstance(value.get("task_id"), str):
        return value["task_id"]
    return None


def demo_id_of(value: Any) -> str | None:
    if isinstance(value, dict) and isinstance(value.get("demo_id"), str):
        return value["demo_id"]
    return None


def unreadable_rejection(path: Path, kind: str, exc: Exception) -> Rejection:
    return Rejection(str(path), None, kind, None,
                     [RowIssue(RejectCode.UNREADABLE_FILE, "$", f"cannot read the file: {exc}")])


M = TypeVar("M", bound=BaseModel)


def _build(model: type[M], value: Any) -> M | RowIssue:
    """Build the pydantic model of a schema-valid row; a disagreement between the model and the
    schema becomes a SCHEMA issue instead of an exception."""
    from pydantic import ValidationError

    try:
        return model.model_validate(value)
    except ValidationError as e:
        err = e.errors()[0]
        return RowIssue(RejectCode.SCHEMA, json_path(err.get("loc", ())), str(err.get("msg", e)))


def load_seeds(path: str | os.PathLike, *, max_line_bytes: int = MAX_LINE_BYTES) -> LoadResult[SeedRow]:
    """Load and validate oracle seed rows from a JSONL or Parquet file.

    Returns a :class:`LoadResult` of :class:`SeedRow` (each with ``origin`` set) and
    :class:`Rejection` s: unreadable lines, schema violations (``oracle_seed.schema.json``), and
    ``DUPLICATE_TASK_ID`` for every row whose ``task_id`` already appeared (the first row is kept;
    the rejection names its line). A line that is not valid JSON gets the ``task_id`` written in its
    text as its rejection's ``task_id`` when one can be read (so that returns for it can say "seed
    row rejected", :func:`iter_returns`). A file that cannot be opened at all gives one
    ``UNREADABLE_FILE`` rejection. Raises nothing for bad content.
    """
    p = Path(path)
    out: LoadResult[SeedRow] = LoadResult()
    first_line: dict[str, int] = {}
    try:
        for rec in raw_records(p, max_line_bytes=max_line_bytes, schema_name=SEED_SCHEMA_NAME):
            tid = task_id_of(rec.value)
            if rec.issue is not None:
                out.rejections.append(Rejection(str(p), rec.line, "seed", rec.task_id_hint, [rec.issue]))
                continue
            issues = schema_issues(rec.value, SEED_SCHEMA_NAME)
            if issues:
                out.rejections.append(Rejection(str(p), rec.line, "seed", tid, issues))
                continue
            assert tid is not None
            if tid in first_line:
                out.rejections.append(Rejection(str(p), rec.line, "seed", tid, [RowIssue(
                    RejectCode.DUPLICATE_TASK_ID, "$.task_id",
                    f"task_id {tid!r} already defined at line {first_line[tid]}; this row is ignored")]))
                continue
            row = _build(SeedRow, rec.value)
            if isinstance(row, RowIssue):
                out.rejections.append(Rejection(str(p), rec.line, "seed", tid, [row]))
                continue
            row._origin = RowOrigin(str(p), rec.line)
            first_line[tid] = rec.line
            out.rows.append(row)
    except (OSError, ValueError) as e:  # unreadable file / corrupt Parquet footer
        out.rejections.append(unreadable_rejection(p, "seed", e))
    return out


def answer_size_issues(value: Mapping[str, Any], max_answer_bytes: int = MAX_ANSWER_BYTES) -> list[RowIssue]:
    """``ANSWER_TOO_LARGE`` for each assistant message of a (schema-valid) return row whose content
    is longer than ``max_answer_bytes`` bytes of UTF-8."""
    issues = []
    for i, m in enumerate(value.get("messages", [])):
        if m.get("role") == "assistant":
            content = m.get("content", "")
            # a str of n chars is at most 4n UTF-8 bytes: skip the encode when it cannot exceed
            n = len(content) if 4 * len(content) <= max_answer_bytes else len(content.encode("utf-8", "surrogatepass"))
            if n > max_answer_bytes:
                issues.append(RowIssue(RejectCode.ANSWER_TOO_LARGE, f"$.messages[{i}].content",
                                       f"assistant content is {n} bytes, above the {max_answer_bytes}-byte limit"))
    return issues


def iter_returns(
    path: str | os.PathLike,
    seeds: Mapping[str, SeedRow] | Iterable[SeedRow] | None = None,
    *,
    max_answer_bytes: int = MAX_ANSWER_BYTES,
    max_line_bytes: int = MAX_LINE_BYTES,
    seed_rejections: Iterable[Rejection] = (),
) -> Iterator[Union[ReturnRow, Rejection]]:
    """Stream oracle return rows from a JSONL or Parquet file: yields a :class:`ReturnRow` (with
    ``origin`` and ``raw`` set) or a :class:`Rejection` per row, in file order.

    Checks: readability, ``oracle_return.schema.json``, assistant content size, ``UNKNOWN_TASK_ID``
    (only when ``seeds`` is given: a mapping ``task_id -> SeedRow`` or an iterable of seed rows),
    ``DUPLICATE_ROW`` (same :attr:`ReturnRow.key` as an earlier row). ``seed_rejections``: the seed
    rows :func:`load_seeds` rejected; a return whose ``task_id`` is one of theirs (and not a loaded
    seed) is rejected as ``SEED_REJECTED`` ("seed row rejected", naming the seed row and its reason)
    instead of ``UNKNOWN_TASK_ID``; an unknown ``task_id`` while some rejected seed rows have no
    readable id says so in its message. Whether ``messages`` equals the
    seed's messages plus one assistant message is *not* checked here: see
    :func:`arbiter.pipelines.oracle.format.check_messages`. A file that cannot be opened yields one
    ``UNREADABLE_FILE`` rejection. Raises nothing for bad content.
    """
    p = Path(path)
    known: set[str] | None = None
    if seeds is not None:
        known = set(seeds.keys()) if isinstance(seeds, Mapping) else {s.task_id for s in seeds}
    rejected_seed: dict[str, Rejection] = {}
    anonymous_seed_rejections = 0
    for r in seed_rejections:
        if r.task_id and (known is None or r.task_id not in known):
            rejected_seed.setdefault(r.task_id, r)
        elif not r.task_id:
            anonymous_seed_rejections += 1
    seen: dict[str, int] = {}
    try:
        for rec in raw_records(p, max_line_bytes=max_line_bytes, schema_name=RETURN_SCHEMA_NAME):
            tid, demo = task_id_of(rec.value), demo_id_of(rec.value)
            if rec.issue is not None:
                yield Rejection(str(p), rec.line, "return", None, [rec.issue], demo)
                continue
            issues = schema_issues(rec.value, RETURN_SCHEMA_NAME)
            if not issues:
                issues = answer_size_issues(rec.value, max_answer_bytes)
            if not issues and tid in rejected_seed and (known is None or tid not in known):
                sr = rejected_seed[tid]
                where = f"line {sr.line}" if sr.line is not None else "the seeds file"
                issues = [RowIssue(RejectCode.SEED_REJECTED, "$.task_id",
                                   f"seed row rejected: the seed row of task_id {tid!r} ({where}) was rejected "
                                   f"({sr.issues[0].code.value} at {sr.issues[0].path}: {sr.issues[0].message}); "
                                   "this return cannot be verified until the seed row is fixed")]
            elif not issues and known is not None and tid not in known:
                more = (f" ({anonymous_seed_rejections} seed row(s) were rejected without a readable task_id; "
                        "see the seed rejections)" if anonymous_seed_rejections else "")
                issues = [RowIssue(RejectCode.UNKNOWN_TASK_ID, "$.task_id",
                                   f"task_id {tid!r} is not in the seed rows{more}")]
            if issues:
                yield Rejection(str(p), rec.line, "return", tid, issues, demo)
                continue
            row = _build(ReturnRow, rec.value)
            if isinstance(row, RowIssue):
                yield Rejection(str(p), rec.line, "return", tid, [row], demo)
                continue
            row._origin = RowOrigin(str(p), rec.line)
            row._raw = rec.value
            key = row.key
            if key in seen:
                yield Rejection(str(p), rec.line, "return", tid, [RowIssue(
                    RejectCode.DUPLICATE_ROW, "$.messages",
                    f"same task_id and messages as line {seen[key]} (key {key}); this row is ignored")], demo)
                continue
            seen[key] = rec.line
            yield row
    except (OSError, ValueError) as e:
        yield unreadable_rejection(p, "return", e)


def load_returns(
    path: str | os.PathLike,
    seeds: Mapping[str, SeedRow] | Iterable[SeedRow] | None = None,
    *,
    max_answer_bytes: int = MAX_ANSWER_BYTES,
    max_line_bytes: int = MAX_LINE_BYTES,
) -> LoadResult[ReturnRow]:
    """:func:`iter_returns` collected into a :class:`LoadResult` (rows and rejections in file order)."""
    out: LoadResult[ReturnRow] = LoadResult()
    for item in iter_returns(path, seeds, max_answer_bytes=max_answer_bytes, max_line_bytes=max_line_bytes):
        (out.rejections if isinstance(item, Rejection) else out.rows).append(item)
    return out
