"""PIE / CodeNet test folders: ``<problem_id>/input.N.txt`` + ``output.N.txt``.

Sources: a directory (``<root>/<problem_id>/`` or, as in the PurdueDualityLab copy,
``<root>/<problem_id>/test_cases/``), a single problem folder, or a tar archive (``.tar.gz``,
``.tar``, ...) whose members are ``./<problem_id>/input.N.txt`` (pie-perf / bigcode
``public_test_cases``). Cases are ordered by N numerically (``input.10`` after ``input.9``) and
named ``input.N``. Other files in a folder (run logs such as ``output.json``) are ignored.

A compressed tar cannot be read at random offsets, so :class:`PieTestArchive` reads it **once**,
keeping every ``input.N.txt``/``output.N.txt`` in memory (the 21,918-file public-test archive is
0.7 MB uncompressed), and :func:`open_pie_archive` caches the result per file (path, size,
mtime): loading 17 problems scans the archive once, not 17 times. For multi-GB archives extract
them and use the directory form, or pass ``problems=`` to keep only the ones you need.
"""

from __future__ import annotations

import os
import re
import tarfile
import threading
from collections.abc import Iterable
from pathlib import Path

from arbiter.judge.encodings._common import fail, finish
from arbiter.judge.testsuite import StdioCase, TestCase, TestSuite

_FILE = re.compile(r"(input|output)\.([0-9]+)\.txt")
_MEMBER = re.compile(r"(?:\./)?(?:.*/)?([^/]+)/(input|output)\.([0-9]+)\.txt")

# problem files: {"input": {N: bytes}, "output": {N: bytes}}
_Files = dict[str, dict[int, bytes]]


def _case_ids(usable_case_ids: Iterable[int | str] | None, row: str) -> list[int] | None:
    if usable_case_ids is None:
        return None
    ids = []
    for value in usable_case_ids:
        text = str(value)
        if text.startswith("input."):
            text = text[len("input.") :]
        if isinstance(value, bool) or not text.isdigit():
            fail(row, "usable_case_ids", f"{value!r} is not a case number")
        ids.append(int(text))
    return ids


def _suite_from_files(files: _Files, row: str, where: str, usable_case_ids: Iterable[int | str] | None) -> TestSuite:
    inputs, outputs = files.get("input", {}), files.get("output", {})
    wanted = _case_ids(usable_case_ids, row)
    if wanted is None:
        numbers = sorted(inputs)
        orphans = sorted(set(outputs) - set(inputs))
        if orphans:
            fail(row, f"{where}/output.{orphans[0]}.txt", "has no matching input file")
    else:
        numbers = []
        for n in wanted:
            if n not in inputs:
                fail(row, "usable_case_ids", f"case {n} has no file {where}/input.{n}.txt")
            if n not in numbers:
                numbers.append(n)
        numbers.sort()
    cases: list[TestCase] = []
    for n in numbers:
        if n not in outputs:
            fail(row, f"{where}/output.{n}.txt", f"missing: input.{n}.txt has no expected output")
        cases.append(StdioCase(name=f"input.{n}", stdin=inputs[n], expected=(outputs[n],)))
    return finish(cases, row, "pie", where)


def _add(files: _Files, kind: str, number_text: str, data: bytes, row: str, where: str) -> None:
    n = int(number_text)
    slot = files.setdefault(kind, {})
    if n in slot:
        fail(row, f"{where}/{kind}.{number_text}.txt", f"case number {n} appears twice (e.g. 'input.01' and 'input.1')")
    slot[n] = data


def pie_suite_from_dir(directory: str | Path, *, row: str | None = None, usable_case_ids: Iterable[int | str] | None = None) -> TestSuite:
    """The suite of one problem folder holding ``input.N.txt`` / ``output.N.txt`` files.

    - ``row``: label for errors (default: the folder name, or its parent's name when the
      folder is called ``test_cases``).
    - ``usable_case_ids``: restrict to these case numbers (ints, digit strings or ``input.N``);
      each must exist.

    Raises :class:`InvalidTestSuite` naming the row and the file for: a missing folder, a
    missing ``output.N.txt`` for a selected input, an output without input (when not
    restricted), an unknown id in ``usable_case_ids``, a duplicated case number, or zero cases.
    """
    directory = Path(directory)
    if row is None:
        row = directory.parent.name if directory.name == "test_cases" else directory.name
    if not directory.is_dir():
        fail(row, str(directory), "not a directory")
    files: _Files = {}
    for entry in os.scandir(directory):
        match = _FILE.fullmatch(entry.name)
        if match and entry.is_file():
            with open(entry.path, "rb") as handle:
                _add(files, match.group(1), match.group(2), handle.read(), row, str(directory))
    return _suite_from_files(files, row, str(directory), usable_case_ids)


class PieTestArchive:
    """All PIE test files of one tar archive, read in a single pass.

    - ``path``: the archive (any compression ``tarfile`` understands).
    - ``problems``: keep only these problem ids (``None``: keep all).

    Member names ``[./][any/]<problem_id>/(input|output).N.txt`` are indexed; directories and
    other files are skipped. Raises :class:`InvalidTestSuite` when the archive cannot be read.
    """

    def __init__(self, path: str | Path, problems: Iterable[str] | None = None) -> None:
        self.path = Path(path)
        keep = None if problems is None else set(problems)
        self._problems: dict[str, _Files] = {}
        label = self.path.name
        try:
            with tarfile.open(self.path, mode="r|*") as archive:
                for member in archive:
                    if not member.isfile():
                        continue
                    match = _MEMBER.fullmatch(member.name)
                    if not match:
                        continue
                    problem, kind, number = match.groups()
                    if keep is not None and problem not in keep:
                        continue
                    handle = archive.extractfile(member)
                    data = handle.read() if handle is not None else b""
                    _add(self._problems.setdefault(problem, {}), kind, number, data, problem, f"{label}:{problem}")
        except (OSError, tarfile.TarError, EOFError) as exc:
            fail(label, str(self.path), f"cannot read the archive ({exc})")

    @property
    def problems(self) -> list[str]:
        """Problem ids present in the archive, sorted."""
        return sorted(self._problems)

    def __contains__(self, problem_id: object) -> bool:
        return problem_id in self._problems

    def suite(self, problem_id: str, usable_case_ids: Iterable[int | str] | None = None) -> TestSuite:
        """The suite of one problem (rules as :func:`pie_suite_from_dir`); a problem absent from
        the archive raises :class:`InvalidTestSuite`."""
        where = f"{self.path.name}:{problem_id}"
        if problem_id not in self._problems:
            fail(problem_id, where, "no test files for this problem in the archive")
        return _suite_from_files(self._problems[problem_id], problem_id, where, usable_case_ids)


_CACHE: dict[tuple[str, int, int], PieTestArchive] = {}
_CACHE_LOCK = threading.Lock()
_CACHE_SIZE = 4


def open_pie_archive(path: str | Path) -> PieTestArchive:
    """A :class:`PieTestArchive` for ``path``, cached by (real path, size, mtime): reading many
    problems from one archive scans it once. Up to 4 archives stay cached."""
    real = os.path.realpath(path)
    try:
        stat = os.stat(real)
    except OSError as exc:
        fail(Path(path).name, str(path), f"cannot read the archive ({exc.strerror or exc})")
    key = (real, stat.st_size, stat.st_mtime_ns)
    with _CACHE_LOCK:
        cached = _CACHE.get(key)
    if cached is not None:
        return cached
    archive = PieTestArchive(real)
    with _CACHE_LOCK:
        if len(_CACHE) >= _CACHE_SIZE:
            _CACHE.pop(next(iter(_CACHE)))
        _CACHE[key] = archive
    return archive


def load_pie_tests(source: str | Path, problem_id: str, usable_case_ids: Iterable[int | str] | None = None) -> TestSuite:
    """The suite of ``problem_id`` from ``source``: a tar archive (cached, see
    :func:`open_pie_archive`), or a directory holding ``<problem_id>/`` (or
    ``<problem_id>/test_cases/``). Case names ``input.N``, ordered by N; origin ``pie``.

    Raises :class:`InvalidTestSuite` naming the problem and the file, as
    :func:`pie_suite_from_dir`.
    """
    source = Path(source)
    if source.is_dir():
        folder = source / problem_id
        nested = folder / "test_cases"
        if nested.is_dir() and not any(_FILE.fullmatch(p.name) for p in folder.iterdir()):
            folder = nested
        if not folder.is_dir():
            fail(problem_id, str(folder), "no such test folder")
        return pie_suite_from_dir(folder, row=problem_id, usable_case_ids=usable_case_ids)
    return open_pie_archive(source).suite(problem_id, usable_case_ids)
