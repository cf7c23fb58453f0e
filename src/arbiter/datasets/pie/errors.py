"""Errors of PIE rows: :class:`RowIssues` (one bad row, every bad column named) and :class:`PieRowError`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError


@dataclass(frozen=True)
class RowIssues:
    """One input row that could not be turned into a row model.

    ``index`` is the 0-based position of the row in its source (data rows only; blank JSONL lines are not
    counted). ``problem_id``/``src_id`` are taken from the raw row when readable. ``issues`` holds one
    ``(column, message)`` pair per problem found; ``column`` is ``"<row>"`` when the whole record is unreadable
    (invalid JSON line, not an object).
    """

    index: int | None
    problem_id: str | None
    src_id: str | None
    issues: tuple[tuple[str, str], ...]

    @property
    def columns(self) -> tuple[str, ...]:
        """The columns named by the issues, in order."""
        return tuple(c for c, _ in self.issues)

    @property
    def column(self) -> str:
        """The first column named (convenience for single-issue errors)."""
        return self.issues[0][0] if self.issues else "<row>"

    def where(self) -> str:
        """``row 3 (problem_id=p02915, src_id=s1)`` — the row part of messages."""
        return row_label(self.index, self.problem_id, self.src_id)

    def __str__(self) -> str:
        body = "; ".join(f"column {c!r}: {m}" if c != "<row>" else m for c, m in self.issues)
        return f"{self.where()}: {body}"


class PieRowError(ValueError):
    """A row failed validation. ``.error`` is the :class:`RowIssues` (row index, ids, columns, messages)."""

    def __init__(self, error: RowIssues):
        super().__init__(str(error))
        self.error = error


def row_label(index: int | None, problem_id: Any, src_id: Any) -> str:
    ids = ", ".join(f"{k}={v}" for k, v in (("problem_id", problem_id), ("src_id", src_id)) if v is not None)
    head = f"row {index}" if index is not None else "row"
    return f"{head} ({ids})" if ids else head


def id_or_none(raw: Any, key: str) -> str | None:
    if isinstance(raw, Mapping):
        v = raw.get(key)
        return None if v is None else str(v)
    return None


def issues_from_validation(e: ValidationError) -> tuple[tuple[str, str], ...]:
    out: list[tuple[str, str]] = []
    for err in e.errors():
        ctx = err.get("ctx") or {}
        if not err["loc"] and "issues" in ctx:
            out.extend(ctx["issues"])
            continue
        column = ".".join(str(p) for p in err["loc"]) if err["loc"] else "<row>"
        msg = err["msg"]
        if msg.startswith("Value error, "):
            msg = msg[len("Value error, "):]
        if err["type"] == "missing":
            msg = "is missing, but the card defines it for this dataset"
        out.append((column, msg))
    return tuple(out)
