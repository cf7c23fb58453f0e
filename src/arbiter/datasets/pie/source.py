"""The part of a PIE row the re-timing reward uses (:class:`PieSource`, :func:`as_source`) and the rows of a file
looked up by a candidate's ids (:class:`RowIndex`). See ``docs/pie.md`` ("Re-timing a candidate").
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from arbiter.datasets.pie.decode import decode_case_ids
from arbiter.datasets.pie.errors import PieRowError, RowIssues
from arbiter.datasets.pie.read import iter_raw_rows
from arbiter.datasets.pie.rows import PieBysrcRow, PiePair, PieRow, parse_pie_pair, parse_row


@dataclass(frozen=True)
class PieSource:
    """The part of a PIE row the re-timing reward uses.

    ``problem_id``/``src_id`` name the row; ``src_code`` is the C++ source program; ``usable_case_ids`` the card's
    usable case indices (``None`` for rows without a case manifest: every test of the problem is a candidate case);
    ``tgt_id``/``dataset_speedup`` are carried for reports only (never used in the reward); ``tgt_code`` (the
    row's fast program, ``None`` when the row has none) is only checked for correctness (:func:`pie_reward` step 4).
    """

    problem_id: str
    src_id: str
    src_code: str
    usable_case_ids: tuple[int, ...] | None = None
    tgt_id: str | None = None
    dataset_speedup: float | None = None
    tgt_code: str | None = None

    def label(self) -> str:
        """``problem_id/src_id`` (``/tgt_id`` when known), for messages and keys."""
        return f"{self.problem_id}/{self.src_id}" + (f"/{self.tgt_id}" if self.tgt_id else "")


def as_source(row: Any) -> PieSource:
    """A :class:`PieSource` from ``row``.

    Accepts a :class:`PieSource`; a :class:`~arbiter.datasets.pie.rows.PiePair`; a
    :class:`~arbiter.datasets.pie.rows.PieRow` (gem5 pairs: ``usable_case_ids``, ``our_speedup_usable``) or
    :class:`~arbiter.datasets.pie.rows.PieBysrcRow`; or a mapping: a gem5 row (has ``gem5_src_per_tc_ticks``;
    pairs if it has ``tgt_id``, else bysrc), a PIE release row (``src_id, tgt_id, problem_id, speedup, src_code,
    tgt_code``), or a minimal ``{problem_id, src_id, src_code[, usable_case_ids]}``. Raises
    :class:`~arbiter.datasets.pie.errors.PieRowError` (a ``ValueError``) naming the row and column for a bad
    mapping, ``TypeError`` for anything else.
    """
    if isinstance(row, PieSource):
        return row
    if isinstance(row, PiePair):
        ids = tuple(row.usable_case_ids) if row.usable_case_ids is not None else None
        return PieSource(row.problem_id, row.src_id, row.src_code, ids, row.tgt_id, row.speedup, row.tgt_code)
    if isinstance(row, PieRow):
        return PieSource(row.problem_id, row.src_id, row.src_code, tuple(row.usable_case_ids), row.tgt_id,
                         row.our_speedup_usable, row.tgt_code)
    if isinstance(row, PieBysrcRow):
        return PieSource(row.problem_id, row.src_id, row.src_code, tuple(row.usable_case_ids))
    if isinstance(row, Mapping):
        if "gem5_src_per_tc_ticks" in row:
            return as_source(parse_row(row, kind="pairs" if "tgt_id" in row else "bysrc"))
        if "tgt_code" in row and "speedup" in row:
            return as_source(parse_pie_pair(row))
        return _minimal_source(row)
    raise TypeError(f"cannot take a PIE source program from a {type(row).__name__}")


def _minimal_source(row: Mapping[str, Any]) -> PieSource:
    issues: list[tuple[str, str]] = []
    vals: dict[str, str] = {}
    for col in ("problem_id", "src_id", "src_code"):
        v = row.get(col)
        if not isinstance(v, str) or not v.strip():
            issues.append((col, "is missing" if v is None else "must be a non-empty string"))
        else:
            vals[col] = v
    usable = None
    if row.get("usable_case_ids") is not None:
        try:
            usable = tuple(decode_case_ids(row["usable_case_ids"]))
            if not usable:
                issues.append(("usable_case_ids", "is empty: no case to time"))
        except ValueError as e:
            issues.append(("usable_case_ids", str(e)))
    if issues:
        pid, sid = row.get("problem_id"), row.get("src_id")
        raise PieRowError(RowIssues(None, None if pid is None else str(pid), None if sid is None else str(sid),
                                   tuple(issues)))
    tgt_code = row.get("tgt_code")
    return PieSource(vals["problem_id"], vals["src_id"], vals["src_code"], usable,
                     str(row["tgt_id"]) if row.get("tgt_id") is not None else None,
                     tgt_code=tgt_code if isinstance(tgt_code, str) and tgt_code.strip() else None)


class RowIndex:
    """The rows of a PIE file, looked up by a candidate record's ``src_id`` (+ optional ``problem_id``/``tgt_id``)
    or ``row`` key (``problem_id/src_id[/tgt_id]``).

    Built from anything :func:`arbiter.datasets.pie.read.iter_raw_rows` reads (Parquet, JSONL, HF datasets);
    each raw row is turned into a :class:`PieSource` with :func:`as_source`. Bad rows are kept in ``errors``
    (``RowIssues`` or message strings) and never stop the load. Several rows may share a ``src_id`` (one source,
    several targets); a lookup by ``src_id`` alone is accepted only when those rows agree on problem, code and
    usable cases, otherwise it must name ``tgt_id``.
    """

    def __init__(self, source: Any, *, split: str | None = None):
        #: the rows source as given (a path for files and folders), for the input identity of a run's config
        self.origin = source
        self.split = split
        self.sources: list[PieSource] = []
        self.errors: list[str] = []
        self._by_src: dict[str, list[int]] = {}
        self._unusable: dict[str, str] = {}  # src_id -> why its (first) unusable row is unusable
        for i, raw in iter_raw_rows(source, split=split):
            if isinstance(raw, RowIssues):
                self._unusable_row(raw, str(raw))
                continue
            try:
                s = as_source(raw)
            except (PieRowError, TypeError) as e:
                err = getattr(e, "error", None)
                if err is not None:
                    err = RowIssues(i, err.problem_id, err.src_id, err.issues)
                self._unusable_row(err, str(err) if err is not None else f"row {i}: {e}")
                continue
            self._by_src.setdefault(s.src_id, []).append(len(self.sources))
            self.sources.append(s)

    def _unusable_row(self, issues: RowIssues | None, message: str) -> None:
        self.errors.append(message)
        if issues is not None and issues.src_id is not None:
            self._unusable.setdefault(str(issues.src_id), message)

    def __len__(self) -> int:
        return len(self.sources)

    def lookup(self, src_id: str, *, problem_id: str | None = None, tgt_id: str | None = None) -> PieSource:
        """The row for a candidate. Raises ``KeyError`` (unknown) or ``ValueError`` (ambiguous) with a message."""
        found = [self.sources[i] for i in self._by_src.get(src_id, [])]
        if problem_id is not None:
            found = [s for s in found if s.problem_id == problem_id]
        if tgt_id is not None:
            found = [s for s in found if s.tgt_id == tgt_id]
        if not found:
            what = f"src_id {src_id!r}" + (f", problem_id {problem_id!r}" if problem_id else "") + (
                f", tgt_id {tgt_id!r}" if tgt_id else "")
            if src_id in self._unusable and not self._by_src.get(src_id):
                raise KeyError(f"the row with src_id {src_id!r} is unusable: {self._unusable[src_id]}")
            raise KeyError(f"no row with {what}")
        first = found[0]
        for s in found[1:]:
            if (s.problem_id, s.src_code, s.usable_case_ids) != (first.problem_id, first.src_code,
                                                                 first.usable_case_ids):
                raise ValueError(f"src_id {src_id!r} matches {len(found)} rows that differ in problem, code or "
                                 "usable_case_ids; give tgt_id")
        return first
