"""Oracle seed suites: ``visible_tests`` of a seed row and hidden-test files of the same shape.

Shape (``seed/schema/oracle_seed.schema.json``): a list of ``{"name": str, "stdin": str,
"stdout": str}``. The seed card's ``public_checker`` is ``exact_stdout`` with
``strip_trailing_whitespace`` (checker ``trailing_whitespace``); choosing it is the dataset
loader's job, this module only builds the cases.

Hidden tests (``metadata.hidden_tests_policy: not_in_seed``) come as a separate file, either

- a JSON object mapping ``task_id`` to a list of cases, or
- JSONL, one ``{"task_id": str, "tests": [cases...]}`` per line.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from arbiter.judge.encodings._common import fail, finish, str_to_bytes, to_plain, type_name
from arbiter.judge.jsonvalues import loads as loads_json
from arbiter.judge.testsuite import InvalidTestSuite, StdioCase, TestCase, TestSuite


def oracle_tests_to_suite(tests: Any, *, row: str, origin: str = "oracle_seed", field: str = "visible_tests") -> TestSuite:
    """Normalise a list of ``{"name", "stdin", "stdout"}`` cases (all strings).

    Case names are kept; they must be unique and non-empty. Extra keys are ignored. Raises
    :class:`InvalidTestSuite` naming ``row`` and ``field[i]`` for a non-list, a non-object item,
    a missing or non-string key, a duplicate name, or zero cases.
    """
    tests = to_plain(tests)
    if not isinstance(tests, list):
        fail(row, field, f"expected a list of {{name, stdin, stdout}} objects, got {type_name(tests)}")
    cases: list[TestCase] = []
    seen: set[str] = set()
    for i, item in enumerate(tests):
        where = f"{field}[{i}]"
        if not isinstance(item, dict):
            fail(row, where, f"expected an object with name, stdin, stdout, got {type_name(item)}")
        for key in ("name", "stdin", "stdout"):
            if key not in item:
                fail(row, where, f"missing {key!r}; keys present: {sorted(map(str, item))}")
            if not isinstance(item[key], str):
                fail(row, f"{where}.{key}", f"expected a string, got {type_name(item[key])}")
        name = item["name"]
        if not name or name in seen:
            fail(row, f"{where}.name", f"{'empty' if not name else 'duplicate'} case name {name!r}")
        seen.add(name)
        cases.append(StdioCase(name=name, stdin=str_to_bytes(item["stdin"]), expected=(str_to_bytes(item["stdout"]),)))
    return finish(cases, row, origin, field)


def oracle_visible_suite(seed_row: Mapping[str, Any]) -> TestSuite:
    """The ``visible_tests`` suite of one oracle seed row; the row label is its ``task_id``.

    Raises :class:`InvalidTestSuite` (row named) when ``visible_tests`` is missing or malformed.
    """
    row = str(seed_row.get("task_id", "?"))
    if "visible_tests" not in seed_row:
        fail(row, "visible_tests", "missing")
    return oracle_tests_to_suite(seed_row["visible_tests"], row=row)


def read_oracle_hidden_tests(path: str | Path) -> dict[str, list[Any]]:
    """Read a hidden-test file into ``{task_id: [raw case objects]}`` (not yet validated).

    Accepts a JSON object mapping task ids to case lists, or JSONL of
    ``{"task_id", "tests"}`` records (blank lines skipped). A file whose whole text is a single
    ``{"task_id": str, "tests": list}`` object is read as one JSONL record. Validate each task's
    list with :func:`oracle_tests_to_suite` (``origin="oracle_hidden"``), so one malformed task
    does not stop the others.

    Raises :class:`InvalidTestSuite` naming the file (and line) for unreadable files, invalid
    JSON, a record without ``task_id``/``tests``, a task id given twice, or a value that is not a
    list.
    """
    path = Path(path)
    label = path.name
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        fail(label, "hidden tests", f"cannot read {path} ({exc.strerror or exc})")
    try:
        whole = loads_json(text)
    except ValueError:
        whole = None
    if isinstance(whole, dict) and not _is_record(whole):
        out: dict[str, list[Any]] = {}
        for task_id, tests in whole.items():
            if not isinstance(tests, list):
                fail(label, f"hidden tests[{task_id!r}]", f"expected a list of cases, got {type_name(tests)}")
            out[task_id] = tests
        return out
    out = {}
    lines = [text] if isinstance(whole, dict) else text.splitlines()
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            record = loads_json(line)
        except ValueError as exc:
            raise InvalidTestSuite(f"row {label!r}: hidden tests line {number}: not valid JSON ({exc})") from None
        if not _is_record(record):
            fail(label, f"hidden tests line {number}", "expected an object with 'task_id' (string) and 'tests' (list)")
        task_id = record["task_id"]
        if task_id in out:
            fail(label, f"hidden tests line {number}", f"task_id {task_id!r} appears twice")
        out[task_id] = record["tests"]
    return out


def _is_record(value: Any) -> bool:
    return (
        isinstance(value, dict)
        and isinstance(value.get("task_id"), str)
        and isinstance(value.get("tests"), list)
    )
