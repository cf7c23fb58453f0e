"""NeMo-Gym ``code_gen`` suites: ``verifier_metadata.unit_tests.{inputs, outputs}``.

Rows (``resources_servers/code_gen/data/example.jsonl``) hold stdin/stdout tests as two parallel
lists of strings. In the stored sample every level is already a JSON object; other NeMo-Gym
exports keep ``verifier_metadata`` or ``unit_tests`` as a *string* (JSON, or a Python literal with
single quotes), so both levels may be a string: JSON is tried first, then ``ast.literal_eval``
(literals only).

The expected outputs carry trailing spaces and blank lines (``'1\\n3 \\n-1\\n0\\n\\n2\\n1 2 \\n'``)
and some answers are printed on one line where a correct program prints one per line; these are
Codeforces problems, judged by tokens (checker ``tokens``), which accepts such programs
(docs/encodings.md). Choosing the checker is the dataset loader's job.
"""

from __future__ import annotations

import ast
from collections.abc import Mapping
from typing import Any

from arbiter.judge.encodings._common import fail, to_plain
from arbiter.judge.encodings.apps import inputs_outputs_to_suite
from arbiter.judge.jsonvalues import loads as loads_json
from arbiter.judge.testsuite import TestSuite


def _maybe_literal(value: Any, row: str, field: str) -> Any:
    if isinstance(value, (bytes, bytearray)):
        value = bytes(value).decode("utf-8", "surrogateescape")
    if not isinstance(value, str):
        return value
    try:
        return loads_json(value)
    except ValueError:
        pass
    try:
        return ast.literal_eval(value)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError) as exc:
        fail(row, field, f"a string that is neither JSON nor a Python literal ({exc.__class__.__name__})")


def nemo_gym_unit_tests_to_suite(unit_tests: Any, *, row: str) -> TestSuite:
    """Normalise ``unit_tests`` (``{"inputs": [str...], "outputs": [str...]}``, or that as a JSON /
    Python-literal string). Stdin/stdout cases named ``"0"``, ``"1"``, ...; origin ``nemo_gym``.

    A ``fn_name`` key is refused (this format is stdin-only). Raises :class:`InvalidTestSuite`
    naming the row and ``unit_tests`` for: a string that is neither JSON nor a Python literal, a
    missing key, non-list values, mismatched lengths, non-string items, or zero tests.
    """
    data = to_plain(_maybe_literal(to_plain(unit_tests), row, "unit_tests"))
    if isinstance(data, dict) and data.get("fn_name"):
        fail(row, "unit_tests.fn_name", "function-call tests are not part of the NeMo-Gym code_gen format")
    return inputs_outputs_to_suite(data, row=row, origin="nemo_gym", field="unit_tests")


def nemo_gym_row_to_suite(record: Mapping[str, Any]) -> TestSuite:
    """:func:`nemo_gym_unit_tests_to_suite` on a row; the label is ``hash_id``.
    ``verifier_metadata`` may itself be a JSON / Python-literal string."""
    row = str(record.get("hash_id", "?"))
    if "verifier_metadata" not in record:
        fail(row, "verifier_metadata", "missing")
    meta = to_plain(_maybe_literal(to_plain(record["verifier_metadata"]), row, "verifier_metadata"))
    if not isinstance(meta, dict) or "unit_tests" not in meta:
        fail(row, "verifier_metadata", "expected an object with 'unit_tests'")
    return nemo_gym_unit_tests_to_suite(meta["unit_tests"], row=row)
