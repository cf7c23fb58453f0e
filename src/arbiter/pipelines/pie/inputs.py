"""Refusing inputs of a PIE batch that are unusable as a whole (a tests folder or archive, a candidates file),
before anything is scored or written.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from arbiter.datasets.pie.source import RowIndex
from arbiter.judge.encodings.pie import open_pie_archive
from arbiter.judge.testsuite import InvalidTestSuite
from arbiter.pipelines.pie.candidates import CandidateItem


class CandidatesInputError(ValueError):
    """The candidates (or generations) file cannot be used as a whole: empty, not JSON Lines (binary, a JSON list,
    text), or none of its records names a row of the rows file. Raised before anything is scored or written; the
    message names the option and the file. Single bad records next to usable ones are not this: they become
    ``INVALID_TASK`` records and the batch goes on."""


#: What one line of a candidates file looks like, for error messages.
CANDIDATE_SHAPE = '{"src_id" | "row", "candidates" | "code"}'


def _first_bytes(path: Path, n: int = 4) -> bytes:
    try:
        with open(path, "rb") as f:
            return f.read(n)
    except OSError:
        return b""


def check_candidates_usable(items: Sequence[CandidateItem], path: str | os.PathLike, rows: RowIndex, *,
                            option: str = "--candidates", shape: str = CANDIDATE_SHAPE) -> None:
    """Refuse a candidates file that is unusable as a whole (:class:`CandidatesInputError`, naming ``option`` and
    the file): no record at all (an empty or blank file), no line that is a JSON object (binary bytes, text, a JSON
    list: not JSON Lines; the first problem line is quoted), or no record naming a row of ``rows`` (e.g. every
    ``src_id`` unknown, or a rows file with no usable row). A file with at least one record matched to a row
    passes: its other records stay per-record ``INVALID_TASK`` (one bad record never stops a batch)."""
    p = Path(path)
    if not items:
        raise CandidatesInputError(f"{option} {p}: empty (no records); expected one {shape} object per line")
    if any(it.source is not None for it in items):
        return
    records = [it for it in items if not it.not_object]
    first = (records or items)[0].error
    if not records:
        head = _first_bytes(p)
        kind = ("a Parquet file" if head.startswith(b"PAR1") else
                "gzip-compressed" if head.startswith(b"\x1f\x8b") else "not JSON Lines")
        lists = sum(1 for it in items if it.error.endswith("expected a JSON object, got list"))
        hint = "; a JSON list: give one object per line (JSON Lines)" if lists else ""
        raise CandidatesInputError(
            f"{option} {p}: {kind}: none of its {len(items)} non-blank line(s) is a JSON object (first: {first})"
            f"{hint}; expected one {shape} object per line")
    origin = rows.origin if not isinstance(rows.origin, (str, os.PathLike)) else Path(rows.origin)
    read = f"{len(rows)} usable row(s) read" + (f", {len(rows.errors)} unusable (first: {rows.errors[0]})"
                                                 if rows.errors else "")
    raise CandidatesInputError(
        f"{option} {p}: none of its {len(records)} record(s) names a usable row of --rows {origin} ({read}); "
        f"first record: {first}")


_PIE_FILE_RE = re.compile(r"input\.[0-9]+\.txt")


def _has_pie_files(folder: Path) -> bool:
    try:
        with os.scandir(folder) as entries:
            return any(_PIE_FILE_RE.fullmatch(e.name) and e.is_file() for e in entries)
    except OSError:
        return False


def check_tests_source(tests: Any, *, option: str = "--tests") -> None:
    """Refuse a tests folder or archive that is unusable as a whole, before anything is scored (a ``ValueError``
    naming ``option`` and the path): an archive that cannot be read (an empty file, a truncated or corrupt tar, not
    a tar at all) or holds no ``<problem_id>/input.N.txt`` member; a folder without any ``<problem_id>/`` (or
    ``<problem_id>/test_cases/``) folder holding ``input.N.txt`` files (an empty folder, or one problem's own
    folder given instead of its parent). A usable folder or archive that lacks one row's problem is not this:
    that row's candidates become ``INVALID_TASK``. Anything but a path (a ``TestSuite``, mapping, callable) is
    not checked."""
    if not isinstance(tests, (str, os.PathLike)):
        return
    p = Path(tests)
    expected = "expected <problem_id>/input.N.txt and output.N.txt files"
    if p.is_file():
        try:
            archive = open_pie_archive(p)
        except InvalidTestSuite as e:
            msg = str(e)
            why = msg[msg.index("cannot read the archive"):] if "cannot read the archive" in msg else msg
            raise ValueError(f"{option} {p}: not a usable PIE tests archive: {why}; {expected} "
                             "(a .tar.gz of a PIE tests folder, or the folder itself)") from None
        if not archive.problems:
            raise ValueError(f"{option} {p}: the archive holds no PIE test files; {expected}")
        return
    if p.is_dir():
        try:
            with os.scandir(p) as entries:
                subdirs = [Path(e.path) for e in entries if e.is_dir()]
        except OSError as e:
            raise ValueError(f"{option} {p}: cannot be read: {e.strerror or e}") from None
        for d in subdirs:
            if _has_pie_files(d) or _has_pie_files(d / "test_cases"):
                return
        if _has_pie_files(p) or _has_pie_files(p / "test_cases"):
            raise ValueError(f"{option} {p}: is one problem's test folder; give the folder holding "
                             f"<problem_id>/ folders (its parent, {p.parent})")
        what = "an empty folder" if not subdirs and not any(p.iterdir()) else "no <problem_id>/input.N.txt found"
        raise ValueError(f"{option} {p}: no PIE test folder in it ({what}); {expected}")
