"""CodeScope (``code_optimization_data.jsonl``, xCodeEval-derived Codeforces rows) suites.

``testcases`` is a string holding a **Python literal** (single quotes), not JSON: a list of
``{'input': str, 'output': [str, ...]}`` where ``output`` lists every accepted answer
(docs/encodings.md). It is parsed with ``ast.literal_eval`` (literals only, never
``eval``). Each test becomes a :class:`StdioCase` whose ``expected`` holds all the answers; the
checker accepts the output when any of them matches.
"""

from __future__ import annotations

import ast
from collections.abc import Mapping
from typing import Any

from arbiter.judge.encodings._common import fail, finish, str_to_bytes, to_plain, type_name
from arbiter.judge.testsuite import StdioCase, TestCase, TestSuite


def codescope_testcases_to_suite(testcases: Any, *, row: str) -> TestSuite:
    """Normalise a CodeScope ``testcases`` value (the Python-literal string, or the parsed list).

    ``output`` may also be a single string (one accepted answer). Case names ``"0"``, ``"1"``, ...;
    origin ``codescope``. Raises :class:`InvalidTestSuite` naming the row and ``testcases[i]`` for
    a string that is not a Python literal, a non-list, a non-object test, a missing or
    non-string ``input``, an ``output`` that is not a non-empty list of strings, or zero tests.
    """
    if isinstance(testcases, str):
        try:
            testcases = ast.literal_eval(testcases)
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError) as exc:
            fail(row, "testcases", f"not a Python literal ({exc.__class__.__name__}: {exc})")
    tests = to_plain(testcases)
    if not isinstance(tests, list):
        fail(row, "testcases", f"expected a list of {{'input', 'output'}} objects, got {type_name(tests)}")
    cases: list[TestCase] = []
    for i, test in enumerate(tests):
        where = f"testcases[{i}]"
        if not isinstance(test, dict):
            fail(row, where, f"expected an object with 'input' and 'output', got {type_name(test)}")
        if not isinstance(test.get("input"), str):
            fail(row, f"{where}.input", "missing" if "input" not in test else f"expected a string, got {type_name(test['input'])}")
        answers = test.get("output")
        if isinstance(answers, str):
            answers = [answers]
        if not isinstance(answers, list) or not answers or not all(isinstance(a, str) for a in answers):
            fail(row, f"{where}.output", f"expected a non-empty list of accepted answers (strings), got {answers!r:.60}")
        cases.append(
            StdioCase(name=str(i), stdin=str_to_bytes(test["input"]), expected=tuple(str_to_bytes(a) for a in answers))
        )
    return finish(cases, row, "codescope", "testcases")


def codescope_row_to_suite(record: Mapping[str, Any]) -> TestSuite:
    """:func:`codescope_testcases_to_suite` on a CodeScope row; the label is
    ``<id>:<src_uid>:<lang>``."""
    row = f"{record.get('id', '?')}:{record.get('src_uid', '?')}:{record.get('lang', '?')}"
    if "testcases" not in record:
        fail(row, "testcases", "missing")
    return codescope_testcases_to_suite(record["testcases"], row=row)
