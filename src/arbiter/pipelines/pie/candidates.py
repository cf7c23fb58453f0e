"""The candidates file of a PIE batch: one :class:`CandidateItem` per program, a bad record one item with its
error. Record format: ``docs/pie.md`` ("Candidates file").
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from arbiter.datasets.pie.read import iter_jsonl_lines
from arbiter.datasets.pie.source import PieSource, RowIndex
from arbiter.timing.count_cache import sha256_hex as _sha


@dataclass
class CandidateItem:
    """One candidate to score: ``key`` (stable, for resume), ``line`` (1-based in the candidates file), ``index``
    (position in its record's list), ``source`` (the row, or None when it could not be resolved), ``code``, and
    ``error`` (why the record is unusable, or ""); ``not_object``: the line is not a JSON object at all (not
    UTF-8, not JSON, or another JSON value such as a list)."""

    key: str
    line: int
    index: int
    source: PieSource | None
    code: str
    error: str = ""
    record_id: str = ""
    not_object: bool = False


def _read_jsonl_lines(path: str | os.PathLike) -> Iterator[tuple[int, Any]]:
    """``(line, value)`` per non-blank line; a line that is not UTF-8 or not JSON gives ``(line, ValueError)``
    naming the file and the line (:func:`arbiter.datasets.pie.read.iter_jsonl_lines`), so it becomes one rejected
    record and the batch goes on."""
    name = Path(path).name
    for n, value, problem in iter_jsonl_lines(path):
        yield n, (value if problem is None else ValueError(f"line {n} of {name}: {problem}"))


def iter_candidates(path: str | os.PathLike, rows: RowIndex, *, field_names: Sequence[str] = ("candidates", "code"),
                    skip_precomputed: bool = False) -> Iterator[CandidateItem]:
    """The candidates of a JSONL file, one :class:`CandidateItem` per program; a bad record (or line) gives one
    item with ``error`` set and never stops the batch. Format, keys and type rules: ``docs/pie.md``
    ("Candidates file"). ``skip_precomputed``: pass over ``arbiter pie eval``'s precomputed lines."""
    first_line_of_id: dict[str, int] = {}
    for line, rec in _read_jsonl_lines(path):
        if skip_precomputed and isinstance(rec, dict) and "runtimes" in rec and not any(f in rec for f in field_names):
            continue
        repeated = _repeated_id(rec, line, first_line_of_id)
        if repeated:
            yield CandidateItem(key=f"@{line}#error", line=line, index=0, source=None, code="", error=repeated)
            continue
        if isinstance(rec, Exception):
            yield CandidateItem(key=f"@{line}#error", line=line, index=0, source=None, code="", error=str(rec),
                                not_object=True)
        elif not isinstance(rec, dict):
            yield CandidateItem(key=f"@{line}#error", line=line, index=0, source=None, code="",
                                error=f"line {line}: expected a JSON object, got {type(rec).__name__}",
                                not_object=True)
        else:
            yield from _record_items(rec, line, rows, field_names)


def _repeated_id(rec: Any, line: int, first_line_of_id: dict[str, int]) -> str:
    """Why the record's ``id`` cannot name it (an earlier line has it: the id is its items' key, so a second
    record under it would get the first one's results), or ""; a new id is remembered."""
    if not isinstance(rec, dict) or rec.get("id") is None:
        return ""
    rid = str(rec["id"])
    first = first_line_of_id.setdefault(rid, line)
    return "" if first == line else (f"line {line}: field 'id': {rid!r} already names line {first}'s record "
                                     "(an id names one record)")


def _record_row(rec: dict[str, Any], line: int, rows: RowIndex
                ) -> tuple[PieSource | None, Any, Any, str]:
    """``(source, src_id, problem_id, error)`` of the row a record names by ``src_id`` (``problem_id``,
    ``tgt_id``) or ``row``."""
    src_id, problem_id, tgt_id = rec.get("src_id"), rec.get("problem_id"), rec.get("tgt_id")
    if rec.get("row") is not None:
        parts = str(rec["row"]).split("/")
        if len(parts) in (2, 3) and all(parts):
            problem_id, src_id = parts[0], parts[1]
            tgt_id = parts[2] if len(parts) == 3 else tgt_id
        else:
            src_id = None
    if not isinstance(src_id, str) or not src_id:
        return None, src_id, problem_id, (f"line {line}: field 'src_id' (or 'row' = problem_id/src_id[/tgt_id]) "
                                          "is missing or invalid")
    try:
        return rows.lookup(src_id, problem_id=problem_id, tgt_id=tgt_id), src_id, problem_id, ""
    except (KeyError, ValueError) as e:
        return None, src_id, problem_id, f"line {line}: field 'src_id': {e.args[0]}"


def _record_codes(rec: dict[str, Any], line: int, field_names: Sequence[str]
                  ) -> tuple[str | None, list[Any] | None, str]:
    """``(field, programs, error)`` of a record: the first of ``field_names`` it has, strictly typed."""
    fname = next((f for f in field_names if f in rec), None)
    if fname is None:
        return None, None, f"line {line}: no program: expected one of the fields {list(field_names)}"
    val = rec[fname]
    if fname == "code":
        if isinstance(val, str):
            return fname, [val], ""
        return fname, None, (f"line {line}: field 'code' must be one program (a string), got "
                             f"{type(val).__name__}; several programs go in a list field "
                             f"({', '.join(repr(f) for f in field_names if f != 'code')})")
    if isinstance(val, list):
        return fname, val, f"line {line}: field {fname!r} is an empty list" if not val else ""
    return fname, None, (f"line {line}: field {fname!r} must be a list of programs, got {type(val).__name__}"
                         + ("; one program may be given as a string in the field 'code'"
                            if "code" in field_names else ""))


def _record_items(rec: dict[str, Any], line: int, rows: RowIndex, field_names: Sequence[str]
                  ) -> Iterator[CandidateItem]:
    """The items of one JSON-object record: one per program, or one carrying the record's first error."""
    rid = str(rec["id"]) if rec.get("id") is not None else ""
    source, src_id, problem_id, err = _record_row(rec, line, rows)
    fname, codes, code_err = _record_codes(rec, line, field_names)
    err = err or code_err
    base = rid or (f"{source.label()}@{line}" if source else f"{problem_id or '?'}/{src_id or '?'}@{line}")
    if err:
        yield CandidateItem(key=f"{base}#error", line=line, index=0, source=source, code="", error=err,
                            record_id=rid)
        return
    for i, code in enumerate(codes or []):
        if not isinstance(code, str) or not code.strip():
            yield CandidateItem(key=f"{base}#{i}:error", line=line, index=i, source=source, code="",
                                error=f"line {line}: field {fname!r}[{i}] is not a non-empty string",
                                record_id=rid)
            continue
        yield CandidateItem(key=f"{base}#{i}:{_sha(code)[:16]}", line=line, index=i, source=source, code=code,
                            record_id=rid)
