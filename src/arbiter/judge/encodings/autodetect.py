"""Load a test suite from a path whose encoding is recognised by its shape (for ``arbiter judge``).

Recognised, in this order:

- a directory of ``input.N.txt`` / ``output.N.txt`` (PIE/CodeNet), or a directory holding
  ``input_output.json`` (an APPS/TACO problem folder);
- a ``.tar.gz`` of PIE folders (needs ``problem``);
- a JSON file: a dict with ``inputs``/``outputs`` (APPS/TACO, verl dict form), a list of
  ``{"type": ...}`` cases (verl list forms), a list of ``{"name", "stdin", "stdout"}`` cases (the
  oracle seed's ``visible_tests`` shape), or a dict with ``visible_tests``.

Anything else raises :class:`~arbiter.judge.testsuite.InvalidTestSuite` naming the path.
"""

from __future__ import annotations

from pathlib import Path

from arbiter.judge.encodings.apps import apps_input_output_to_suite
from arbiter.judge.encodings.oracle_seed import oracle_tests_to_suite
from arbiter.judge.encodings.pie import load_pie_tests, pie_suite_from_dir
from arbiter.judge.encodings.verl import verl_ground_truth_to_suite
from arbiter.judge.jsonvalues import loads as loads_json
from arbiter.judge.testsuite import InvalidTestSuite, TestSuite


def _holds_problem_folders(folder: Path) -> bool:
    """Whether ``folder`` is a PIE tests root (``<problem_id>/input.N.txt``) rather than one problem's."""
    if any(folder.glob("input.*.txt")):
        return False
    return any(child.is_dir() and any(child.glob("input.*.txt")) for child in folder.iterdir())


def load_suite(path: str | Path, *, problem: str | None = None) -> TestSuite:
    """Read the suite at ``path`` (see the module docstring).

    Raises :class:`InvalidTestSuite` naming the path (``<path>: <field>: <message>``) for an
    unrecognised or invalid file, and ``OSError`` when a file cannot be read (the caller names the
    option it came from).
    """
    row = str(Path(path))
    try:
        return _load(Path(path), row, problem)
    except InvalidTestSuite as exc:  # the normalizers name a dataset row; here it is a file
        message = str(exc)
        prefix = f"row {row!r}: "
        if message.startswith(prefix):
            raise InvalidTestSuite(f"{row}: {message[len(prefix):]}") from exc.__cause__
        raise


def _load(p: Path, row: str, problem: str | None) -> TestSuite:
    if p.is_dir():
        if (p / "input_output.json").is_file():
            return apps_input_output_to_suite((p / "input_output.json").read_bytes(), row=row)
        if problem and (p / problem).is_dir():
            return pie_suite_from_dir(p / problem, row=row)
        if not problem and _holds_problem_folders(p):
            raise InvalidTestSuite(f"row '{row}': a PIE tests folder of problem folders needs --problem <problem_id>")
        return pie_suite_from_dir(p, row=row)
    if not p.is_file():
        what = "not a regular file or directory" if p.exists() else "no such file or directory"
        raise InvalidTestSuite(f"row '{row}': {what}")
    if p.name.endswith((".tar.gz", ".tgz", ".tar")):
        if not problem:
            raise InvalidTestSuite(f"row '{row}': a PIE archive needs --problem <problem_id>")
        return load_pie_tests(p, problem)
    try:
        data = loads_json(p.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise InvalidTestSuite(f"row '{row}': not a JSON test file ({exc})") from exc
    if isinstance(data, dict) and "visible_tests" in data:
        return oracle_tests_to_suite(data["visible_tests"], row=row)
    if isinstance(data, dict) and "inputs" in data:
        return apps_input_output_to_suite(data, row=row)
    if isinstance(data, list) and not data:
        raise InvalidTestSuite(f"row '{row}': the test file holds zero cases (zero tests is never a pass)")
    if isinstance(data, list) and data and isinstance(data[0], dict):
        if "type" in data[0]:
            return verl_ground_truth_to_suite(data, row=row)
        if {"stdin", "stdout"} <= set(data[0]):
            return oracle_tests_to_suite(data, row=row)
    raise InvalidTestSuite(f"row '{row}': unrecognised test file shape "
                           f"({type(data).__name__}{' of ' + type(data[0]).__name__ if isinstance(data, list) and data else ''})")
