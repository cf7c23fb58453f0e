"""The inputs of ``arbiter score``, read and checked before anything is judged or written.

The dataset's row keys are streamed (key columns only); the completions file is indexed in one
pass (``row key -> byte offsets``), so responses are read back by seeking and are never all in
memory. A completions record names its row by ``key``, ``data_source`` + ``index``, ``index``
alone (when unique) or ``row`` (position). See ``docs/codegen.md`` ("Batch scoring").
"""

from __future__ import annotations

import json
import os
import tempfile
from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from arbiter.datasets.io import decode_json_line
from arbiter.datasets.verl_rows import iter_row_keys, row_key


def _record_key(rec: Mapping[str, Any], by_index: Mapping[str, list[str]], by_position: list[str],
                unscored: Mapping[int, str] = {}) -> str:
    """The row key a completions record names (docs/codegen.md); raises ``ValueError``, also for a
    ``row`` position that is not scored (``unscored``: what to say of it; a key that repeats an
    earlier row's, whose tests its responses would be judged on, a line that is not a row)."""
    for name in ("key", "row_key"):
        if isinstance(rec.get(name), str):
            return rec[name]
    if rec.get("data_source") is not None and rec.get("index") is not None:
        return f"{rec['data_source']}:{rec['index']}"
    if rec.get("index") is not None:
        keys = by_index.get(str(rec["index"]), [])
        if len(keys) == 1:
            return keys[0]
        if not keys:
            raise ValueError(f"index {rec['index']!r} matches no dataset row")
        raise ValueError(f"index {rec['index']!r} is shared by rows {keys[:5]}; give 'data_source' or 'key' "
                         f"(data_source-qualified keys, codegen card 2026-08)")
    if isinstance(rec.get("row"), int) and not isinstance(rec.get("row"), bool):
        if rec["row"] in unscored:
            raise ValueError(f"row {rec['row']} {unscored[rec['row']]}")
        if 0 <= rec["row"] < len(by_position):
            return by_position[rec["row"]]
        raise ValueError(f"row {rec['row']} is outside the dataset (0..{len(by_position) - 1})")
    raise ValueError("no key: expected 'key', 'data_source' + 'index', 'index' or 'row'")


def _unusable(key: str, position: int, unreadable: list[tuple[int, Exception]]) -> str:
    """Why the row at ``position`` cannot be scored (its line is not a JSON object; its key is
    not UTF-8 text, which no output file can carry), or ``""``."""
    if unreadable and unreadable[-1][0] == position:
        return f"{unreadable[-1][1]}; the row is not scored"
    try:
        key.encode("utf-8")
    except UnicodeEncodeError:
        return (f"row key {key!r} (position {position}) is not UTF-8 text (a lone surrogate in data_source or "
                f"extra_info.index); the row is not scored")
    return ""


def printable_key(key: str) -> str:
    """``key`` as UTF-8 text can hold it (a lone surrogate as its escape): how ``errors.jsonl`` names
    a row."""
    return key.encode("utf-8", "backslashreplace").decode("utf-8")


class ScoringInputError(ValueError):
    """An input that cannot be scored at all, found by :func:`load_inputs` before anything is
    judged or written: a dataset or completions file that is empty, binary, not UTF-8, not JSON
    (Lines) or not Parquet (a dataset: not one of its lines a JSON object); a dataset without rows
    or without ``data_source``; a completions file none of whose records matches a dataset row. The message names the option and the file, and
    the line where one line decides it (``arbiter score`` exits 2 with it)."""


class InputProblems:
    """Problems with single records found while indexing the inputs (a completions line that is
    not JSON or names no dataset row, a repeated dataset key), kept for ``errors.jsonl``.

    Memory is bounded whatever the number of bad lines: records are spooled to a temporary file
    (in memory up to 1 MiB); ``first`` keeps the first 20 messages for display. ``add`` has the
    signature of the run's error log, so :func:`index_completions` writes to either.
    """

    KEEP = 20

    def __init__(self) -> None:
        self.count = 0
        self.first: list[str] = []
        self._spool = tempfile.SpooledTemporaryFile(max_size=1 << 20, mode="w+", encoding="utf-8")

    def add(self, kind: str, message: str, **extra: Any) -> None:
        self.count += 1
        if len(self.first) < self.KEEP:
            self.first.append(message)
        self._spool.write(json.dumps({"kind": kind, "message": message, **extra}, ensure_ascii=False, default=str) + "\n")

    def copy_to(self, errors: Any) -> None:
        """Add every problem to ``errors`` (the run's ``errors.jsonl``), in order."""
        self._spool.seek(0)
        for line in self._spool:
            rec = json.loads(line)
            errors.add(rec.pop("kind"), rec.pop("message"), **rec)

    def close(self) -> None:
        self._spool.close()


def _first_bytes(path: Path, n: int = 8) -> bytes:
    with open(path, "rb") as f:
        return f.read(n)


def _scan_completions(path: Path, by_index: Mapping[str, list[str]], by_position: list[str], known: set[str],
                      errors: Any, unscored: Mapping[int, str] = {}
                      ) -> tuple[dict[str, list[tuple[int, int]]], int, int, str]:
    """:func:`index_completions` plus the number of non-blank lines, of JSON object records, and
    the first problem's message (``""`` when none)."""
    index: dict[str, list[tuple[int, int]]] = defaultdict(list)
    lines = objects = 0
    first = ""
    with open(path, "rb") as f:
        offset = 0
        for number, line in enumerate(f, 1):
            start, offset = offset, offset + len(line)
            if not line.strip():
                continue
            lines += 1
            try:
                rec = decode_json_line(line, number)
                if not isinstance(rec, dict):
                    raise ValueError(f"expected a JSON object, got {type(rec).__name__}")
                objects += 1
                responses = rec.get("responses")
                if not isinstance(responses, list):
                    raise ValueError("'responses' must be a list of response strings")
                key = _record_key(rec, by_index, by_position, unscored)
                if key not in known:
                    raise ValueError(f"row key {key!r} is not in the dataset")
            except ValueError as exc:
                message = f"{path.name} line {number}: {exc}"
                first = first or message
                errors.add("completions", message, line=number)
                continue
            index[key].append((start, len(responses)))  # json.loads reads a leading BOM on bytes
    return dict(index), lines, objects, first


def index_completions(path: Path, by_index: Mapping[str, list[str]], by_position: list[str], known: set[str],
                      errors: Any, unscored: Mapping[int, str] = {}) -> dict[str, list[tuple[int, int]]]:
    """``row key -> [(byte offset, response count), ...]`` for a completions JSONL file (one
    pass, one line in memory at a time). Bad records go to ``errors`` (anything with
    ``add(kind, message, **extra)``), each naming its line, and are left out (a ``row`` in
    ``unscored`` among them)."""
    return _scan_completions(path, by_index, by_position, known, errors, unscored)[0]


class _DatasetKeys:
    """The dataset's row keys as :func:`load_inputs` reads them (:meth:`scan`): ``by_position``,
    ``by_index`` (``extra_info.index`` -> keys), ``seen`` (the keys scored), ``unscored``
    (position -> what to say of a row that is not scored), ``duplicates`` (positions whose key
    repeats an earlier row's)."""

    def __init__(self) -> None:
        self.by_position: list[str] = []
        self.by_index: dict[str, list[str]] = defaultdict(list)
        self.seen: set[str] = set()
        self.unscored: dict[int, str] = {}
        self.duplicates: set[int] = set()

    def scan(self, dpath: Path, split: str | None, problems: InputProblems) -> None:
        """Read the keys; each row that cannot be scored is one of ``problems``. Raises
        :class:`ScoringInputError` for a dataset that is unreadable, empty, not one of whose lines
        is a JSON object, or without a ``data_source``."""
        unreadable: list[tuple[int, Exception]] = []
        with_source = 0
        try:
            for position, (ds, idx) in enumerate(iter_row_keys(dpath, split=split, errors=unreadable)):
                with_source += ds is not None and ds != ""
                self._add(row_key(ds, idx, position), idx, position, unreadable, problems)
        except (ValueError, OSError) as exc:
            raise ScoringInputError(f"--dataset: {exc}") from None
        if not self.by_position:
            raise ScoringInputError(f"--dataset {dpath}: no rows (an empty file or split)")
        if len(unreadable) == len(self.by_position):  # (not one row: not a dataset, rather than bad rows)
            raise ScoringInputError(f"--dataset: {unreadable[0][1]}")
        if not with_source:
            raise ScoringInputError(f"--dataset {dpath}: none of its {len(self.by_position)} row(s) has a "
                                    f"'data_source'; not a verl dataset")

    def _add(self, key: str, idx: Any, position: int, unreadable: list[tuple[int, Exception]],
             problems: InputProblems) -> None:
        self.by_position.append(key)
        why = _unusable(key, position, unreadable)
        if why:
            self.unscored[position] = f"is not scored: {why}"
            problems.add("dataset", why, row=printable_key(key), position=position)
        elif key in self.seen:
            self.duplicates.add(position)
            self.unscored[position] = f"repeats the key {key!r} of an earlier row and is not scored"
            problems.add("dataset", f"row key {key!r} repeats at position {position}; only the first row is scored",
                         row=key, position=position)
            return
        self.seen.add(key)
        if idx is not None:
            self.by_index[str(idx)].append(key)


@dataclass
class ScoringInputs:
    """The validated, indexed inputs of a run (:func:`load_inputs`).

    - ``dataset``, ``completions``, ``split``: as given;
    - ``rows``: dataset rows; ``by_position``: the row key of each row position;
      ``duplicate_positions``: positions whose key repeats an earlier row (not scored: its
      responses are the earlier row's); ``unusable_positions``: rows that cannot be scored (a line
      that is not a JSON object, a key that is not UTF-8 text), each reported in ``problems``;
    - ``comp_index``: ``row key -> [(byte offset, response count), ...]`` of the completions;
    - ``records``: completions records matched to a row; ``responses``: their responses;
    - ``problems``: bad completions records and repeated dataset keys (:class:`InputProblems`),
      written to ``errors.jsonl`` when the run starts.
    """

    dataset: Path
    completions: Path
    split: str | None
    rows: int
    by_position: list[str]
    duplicate_positions: set[int]
    unusable_positions: set[int]
    comp_index: dict[str, list[tuple[int, int]]]
    records: int
    responses: int
    problems: InputProblems


def load_inputs(dataset: str | os.PathLike, completions: str | os.PathLike, *, split: str | None = None) -> ScoringInputs:
    """Read and check both inputs before anything is judged or written (``arbiter score`` calls
    it before its progress bar starts): the dataset's row keys (streamed, key columns only) and
    the completions index (one pass). Problems with single records (a line that is not JSON, an
    index that names no row, a repeated row key) are collected in ``problems`` with their line
    or position; the run goes on without them.

    Raises :class:`ScoringInputError` (naming the option and file, and the line where one
    decides it) when the dataset cannot be read (unknown format, not Parquet, no line of it a
    JSON object: the file and first line), has no rows, or no row with a ``data_source``; or when the
    completions file is empty, is Parquet or gzip instead of JSON Lines, or none of its records
    matches a dataset row (the message quotes the first problem line: not UTF-8, not JSON, an
    index not in the dataset, ...).
    """
    dpath, cpath = Path(dataset), Path(completions)
    problems = InputProblems()
    keys = _DatasetKeys()
    keys.scan(dpath, split, problems)
    by_position, by_index, seen, unscored = keys.by_position, keys.by_index, keys.seen, keys.unscored

    if not cpath.is_file():
        raise ScoringInputError(f"--completions {cpath}: not a file")
    head = _first_bytes(cpath)
    if head.startswith(b"PAR1"):
        raise ScoringInputError(f"--completions {cpath}: a Parquet file; completions must be JSON Lines "
                                f"(one {{\"index\" | \"key\", \"responses\": [...]}} object per line)")
    if head.startswith(b"\x1f\x8b"):
        raise ScoringInputError(f"--completions {cpath}: gzip-compressed; decompress it (completions must be "
                                f"plain JSON Lines, read by byte offset)")
    try:
        comp_index, lines, objects, first = _scan_completions(cpath, by_index, by_position, seen, problems,
                                                               unscored)
    except OSError as exc:
        raise ScoringInputError(f"--completions {cpath}: cannot read ({exc})") from None
    if not lines:
        raise ScoringInputError(f"--completions {cpath}: empty (no records)")
    if not comp_index:
        if not objects:
            raise ScoringInputError(
                f"--completions {cpath}: not JSON Lines: none of its {lines} non-blank line(s) is a JSON object "
                f"(first: {first}); expected one {{\"index\" | \"key\", \"responses\": [...]}} "
                f"object per line")
        raise ScoringInputError(
            f"--completions {cpath}: none of its {objects} record(s) matches a row of --dataset {dpath} "
            f"(first: {first})")
    return ScoringInputs(dataset=dpath, completions=cpath, split=split, rows=len(by_position), by_position=by_position,
                         duplicate_positions=keys.duplicates,
                         unusable_positions=set(unscored) - keys.duplicates, comp_index=comp_index,
                         records=sum(len(v) for v in comp_index.values()),
                         responses=sum(n for entries in comp_index.values() for _, n in entries), problems=problems)


__all__ = ["InputProblems", "ScoringInputError", "ScoringInputs", "index_completions", "load_inputs", "printable_key"]
