"""Checks of the input files of a run (``--seeds``, ``--returns``, ``--hidden``, ``--generators``) before
anything is written. See ``docs/oracle.md``."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

from arbiter.datasets.oracle import HiddenTests, Rejection, load_hidden_tests
from arbiter.pipelines.oracle.options import MAX_CASES_LISTED


def count_rows(path: Path) -> int | None:
    try:
        head = path.open("rb").read(4)
        if head == b"PAR1" or path.suffix.lower() in (".parquet", ".pq"):
            import pyarrow.parquet as pq

            return pq.ParquetFile(path).metadata.num_rows
        n = 0
        with path.open("rb") as f:
            for line in f:
                if line.strip():
                    n += 1
        return n
    except Exception:  # noqa: BLE001 - only for the progress bar
        return None


class NoUsableSeeds(ValueError):
    """Every seed row was rejected (a malformed or empty seeds file): nothing can be verified. ``rejections``: the
    seed rejections (each names the line, the JSON path and the reason); the message lists the first ones."""

    def __init__(self, rejections: Sequence[Rejection], path: Any):
        self.rejections = list(rejections)
        lines = [f"  {r.message}" for r in self.rejections[:MAX_CASES_LISTED]]
        more = len(self.rejections) - len(lines)
        super().__init__(f"no usable seed row in {path}: " + (
            f"{len(self.rejections)} seed row(s) rejected:\n" + "\n".join(lines)
            + (f"\n  (+{more} more)" if more > 0 else "") if self.rejections else "the file holds no row"))


class InputFileError(ValueError):
    """An input given by path (``--hidden``, ``--generators``) cannot be used as a whole: missing, of the wrong kind
    (a folder for a file, or the reverse), unreadable, or not JSON/JSONL of the documented shape. Raised before
    anything is written: verifying without the hidden tests or generators asked for would accept answers on fewer
    tests than intended. The message names the option and the path; ``rejections``: the hidden-tests file's
    rejections when it was read (each names the line, the JSON path and the reason)."""

    def __init__(self, message: str, rejections: Sequence[Rejection] = ()):
        self.rejections = list(rejections)
        super().__init__(message)


def load_hidden_or_raise(path: str | os.PathLike, known_task_ids: Iterable[str] | None = None) -> HiddenTests:
    """Load ``--hidden`` (:func:`~arbiter.datasets.oracle.load_hidden_tests`), refusing a file that cannot be
    used as a whole with :class:`InputFileError` (a ``ValueError``: the CLI exits 2) naming the file: it does not
    exist, is not a regular file, cannot be read, is not UTF-8, is not JSON (a JSON document that does not parse, or
    a JSONL file none of whose lines is an entry), is JSON of another shape (e.g. a list), or none of its entries
    is usable or even names a task of ``known_task_ids`` (the seed tasks; a wrong file), or it holds no test case
    at all (an empty file, ``{}``, empty lists: every answer would be accepted on its visible tests). A bad *entry*
    (one seed
    task's tests of the wrong shape) is not fatal: it is rejected alone (``rejected.jsonl`` kind ``hidden``; its
    task becomes ``INVALID_TASK``) and the run goes on; so are entries for unknown tasks next to usable ones."""
    p = Path(path)
    if not p.exists():
        raise InputFileError(f"--hidden {p}: hidden tests file not found")
    if not p.is_file():
        raise InputFileError(f"--hidden {p}: " + ("is a folder; give the hidden tests file (JSON or JSONL)"
                                                 if p.is_dir() else "is not a regular file"))
    known = set(known_task_ids) if known_task_ids is not None else None
    loaded = load_hidden_tests(p, known_task_ids=known)
    whole = [r for r in loaded.rejections if r.task_id is None and r.line is None]
    concerned = loaded.invalid_tasks if known is None else loaded.invalid_tasks & known
    nothing = loaded.rejections and not loaded.tests and not concerned
    if not whole and not nothing and not concerned and not _has_a_case(loaded.tests, known):
        raise InputFileError(f"--hidden {p}: no hidden test case for any seed task (an empty file, {{}} or empty "
                             f"lists); give the hidden tests, or leave --hidden out to verify on the visible tests "
                             f"alone", loaded.rejections)
    if whole or nothing:
        first = (whole or loaded.rejections)[0]
        why = " (no usable entry for a seed task)" if not whole and first.task_id is not None else ""
        more = f" (and {len(loaded.rejections) - 1} more problem(s))" if len(loaded.rejections) > 1 else ""
        raise InputFileError(f"--hidden {p}: the hidden tests file cannot be used{why}: {first.message}{more}",
                             loaded.rejections)
    return loaded


def _has_a_case(tests: Mapping[str, Sequence[Any]], known: set[str] | None) -> bool:
    """Whether some task (a seed task, when they are ``known``) has at least one hidden case."""
    return any(cases for task, cases in tests.items() if known is None or task in known)


def check_generators_dir(path: str | os.PathLike, known_task_ids: Iterable[str] | None = None) -> Path:
    """``--generators``: an existing, readable folder of ``<task_id>.py`` generators, one of them at least for a
    task of ``known_task_ids`` when given (an empty folder, or one of other files, is a wrong path: no answer
    would get generated tests). Raises :class:`InputFileError` naming the path otherwise. Returns the path."""
    p = Path(path)
    if not p.exists():
        raise InputFileError(f"--generators {p}: generators folder not found")
    if not p.is_dir():
        raise InputFileError(f"--generators {p}: is a file; give the folder of <task_id>.py generators")
    try:
        with os.scandir(p) as entries:
            names = {e.name[:-3] for e in entries if e.name.endswith(".py")}
    except OSError as e:
        raise InputFileError(f"--generators {p}: cannot be read: {e.strerror or e}") from None
    wanted = set(known_task_ids) if known_task_ids is not None else None
    if not names or (wanted is not None and not names & wanted):
        raise InputFileError(f"--generators {p}: no <task_id>.py generator" + (" for any seed task" if names else "")
                             + "; give the generators folder, or leave --generators out")
    return p


def check_returns_not_empty(path: str | os.PathLike) -> Path:
    """``--returns``: refuse a return-rows file with no row at all (an empty or blank JSONL file, a Parquet file of
    0 rows) with :class:`InputFileError` naming the option and the path, before anything is written (as an empty
    seeds file is refused): verifying nothing and exiting 0 would hide a wrong path or a failed export. A file of
    bad rows (binary junk, malformed JSON) is not empty: each row is rejected with its reason and the run goes on.
    A missing file is left to :func:`verify_returns` (``FileNotFoundError``). Returns the path."""
    p = Path(path)
    if p.is_file() and count_rows(p) == 0:
        raise InputFileError(f"--returns {p}: empty (no rows): nothing to verify; give the oracle return rows "
                             "(JSONL, one {\"task_id\", \"messages\"} object per line, or Parquet)")
    return p
