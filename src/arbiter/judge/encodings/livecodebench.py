"""LiveCodeBench (``livecodebench/code_generation_lite``) suites.

Public and private tests (the private ones possibly ``base64(zlib(pickle(json)))``, decoded by
:mod:`arbiter.judge.encodings.safe_pickle`), stdin or functional (``metadata.func_name``); the
suite holds both, public first (``public.i``, ``private.i``). Row fields and rules:
``docs/encodings.md``, "LiveCodeBench".
"""

from __future__ import annotations

from typing import Any

from arbiter.judge.encodings._common import call_args, decode_json_text, fail, finish, str_to_bytes, to_plain, type_name
from arbiter.judge.encodings.safe_pickle import MAX_INFLATED_BYTES, UnsafePickle, decode_lcb_compressed
from arbiter.judge.jsonvalues import loads as loads_json
from arbiter.judge.testsuite import CallCase, StdioCase, TestCase, TestSuite

TEST_TYPES = ("stdin", "functional")


def decode_lcb_private_tests(private_test_cases: Any, *, row: str, max_bytes: int = MAX_INFLATED_BYTES) -> list[Any]:
    """The list inside ``private_test_cases``: JSON text, or base64(zlib(pickle(JSON text))), or
    an already-decoded list; ``None``/``""`` mean no private tests (``[]``).

    Raises :class:`InvalidTestSuite` naming the row when the value is neither JSON nor a safe
    compressed pickle, or does not decode to a list.
    """
    value = to_plain(private_test_cases)
    if value is None or value == "" or value == b"":
        return []
    if isinstance(value, (str, bytes)):
        text = value.decode("utf-8", "surrogateescape") if isinstance(value, bytes) else value
        try:
            value = loads_json(text)
        except ValueError:
            try:
                payload = decode_lcb_compressed(text, max_bytes)
            except UnsafePickle as exc:
                fail(row, "private_test_cases", f"neither JSON nor base64(zlib(pickle(json))): {exc}")
            if isinstance(payload, (bytes, bytearray)):
                payload = bytes(payload).decode("utf-8", "surrogateescape")
            value = decode_json_text(payload, row, "private_test_cases (decompressed)") if isinstance(payload, str) else payload
    if not isinstance(value, list):
        fail(row, "private_test_cases", f"expected a list of tests, got {type_name(value)}")
    return value


def _metadata(metadata: Any, row: str) -> dict:
    meta = to_plain(metadata)
    if meta is None or meta == "":
        return {}
    meta = decode_json_text(meta, row, "metadata")
    if not isinstance(meta, dict):
        fail(row, "metadata", f"expected an object, got {type_name(meta)}")
    return meta


def livecodebench_to_suite(public_test_cases: Any, private_test_cases: Any = None, metadata: Any = None, *, row: str) -> TestSuite:
    """Normalise one LiveCodeBench problem (fields: docs/encodings.md).

    - ``row``: label for errors (e.g. ``question_id``).

    Returns stdin cases (origin ``livecodebench:stdin``) or function-call cases
    (``livecodebench:functional``, ``fn_name`` = ``metadata.func_name``, arguments one JSON value
    per input line, ``expected`` the JSON-decoded output).

    Raises :class:`InvalidTestSuite` naming the row and field for: invalid JSON, an unsafe or
    corrupt compressed payload, a non-list, a non-object test, a missing or non-string
    ``input``/``output``, an unknown ``testtype``, mixed test types, functional tests without
    ``metadata.func_name``, an argument line or output that is not JSON, or zero tests.
    """
    public = decode_json_text(to_plain(public_test_cases), row, "public_test_cases")
    if public is None or public == "":
        public = []
    if not isinstance(public, list):
        fail(row, "public_test_cases", f"expected a list of tests, got {type_name(public)}")
    private = decode_lcb_private_tests(private_test_cases, row=row)
    meta = _metadata(metadata, row)
    kinds: set[str] = set()
    cases: list[TestCase] = []
    for group, tests in (("public", public), ("private", private)):
        field = f"{group}_test_cases"
        for i, test in enumerate(tests):
            where = f"{field}[{i}]"
            if not isinstance(test, dict):
                fail(row, where, f"expected an object with input, output, testtype, got {type_name(test)}")
            kind = test.get("testtype")
            if kind not in TEST_TYPES:
                fail(row, f"{where}.testtype", f"unknown test type {kind!r}; known: {', '.join(TEST_TYPES)}")
            kinds.add(kind)
            if len(kinds) > 1:
                fail(row, where, f"mixed test types {sorted(kinds)} in one problem")
            for key in ("input", "output"):
                if not isinstance(test.get(key), str):
                    fail(row, f"{where}.{key}", "missing" if key not in test else f"expected a string, got {type_name(test[key])}")
            name = f"{group}.{i}"
            if kind == "stdin":
                cases.append(StdioCase(name=name, stdin=str_to_bytes(test["input"]), expected=(str_to_bytes(test["output"]),)))
                continue
            fn_name = meta.get("func_name")
            if not isinstance(fn_name, str) or not fn_name:
                fail(row, "metadata.func_name", f"functional tests need a function name, got {fn_name!r}")
            expected = decode_json_text(test["output"], row, f"{where}.output")
            cases.append(
                CallCase(name=name, fn_name=fn_name, args=call_args(test["input"], row, f"{where}.input"), expected=(expected,))
            )
    origin = f"livecodebench:{next(iter(kinds))}" if kinds else "livecodebench"
    return finish(cases, row, origin, "public_test_cases + private_test_cases")


def livecodebench_row_to_suite(record: dict[str, Any]) -> TestSuite:
    """:func:`livecodebench_to_suite` on an LCB row dict; the label is ``question_id``."""
    row = str(record.get("question_id", "?"))
    return livecodebench_to_suite(
        record.get("public_test_cases"), record.get("private_test_cases"), record.get("metadata"), row=row
    )
