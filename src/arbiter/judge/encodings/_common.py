"""Helpers shared by the test-suite normalizers: errors that name the row, plain-data conversion,
text-to-bytes, JSON decoding and function-argument decoding."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, NoReturn

from arbiter.judge.testsuite import InvalidTestSuite, TestCase, TestSuite


def fail(row: str, field: str, message: str) -> NoReturn:
    """Raise :class:`InvalidTestSuite` as ``row '<row>': <field>: <message>``."""
    raise InvalidTestSuite(f"row {row!r}: {field}: {message}")


def type_name(value: Any) -> str:
    """A short name for a value's shape in error messages (``list``, ``dict``, ``str``, ...)."""
    return "null" if value is None else type(value).__name__


def to_plain(value: Any) -> Any:
    """Convert decoded-data containers to plain Python: dict, list, str, int, float, bool, None.

    verl hands ``reward_model.ground_truth`` from Parquet through pandas/HF datasets, so a
    ground truth that is not a JSON string can arrive as numpy arrays (also object arrays of
    dicts), numpy scalars, or pyarrow scalars/arrays. They are recognised by duck typing
    (``as_py`` for pyarrow scalars, ``to_pylist`` for pyarrow arrays, ``tolist`` for numpy
    arrays and scalars), so numpy is never imported. Tuples become lists; ``str``/``int``/
    ``float`` subclasses (``numpy.str_``, ``numpy.float64``) become the base type. Anything else
    is returned unchanged and rejected later by the normalizer's shape checks.
    """
    if value is None or type(value) in (str, bytes, bool, int, float):
        return value
    if isinstance(value, Mapping):
        return {to_plain(k): to_plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_plain(v) for v in value]
    if isinstance(value, bool):
        return bool(value)
    if isinstance(value, str):
        return str(value)
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return float(value)
    for method in ("as_py", "to_pylist", "tolist"):
        convert = getattr(value, method, None)
        if callable(convert):
            converted = convert()
            if converted is value:  # pragma: no cover - defensive
                return value
            return to_plain(converted)
    return value


def decode_json_text(value: Any, row: str, field: str) -> Any:
    """``json.loads`` a str/bytes value (errors name the row and field); other values pass through."""
    if isinstance(value, (bytes, bytearray)):
        value = bytes(value).decode("utf-8", "surrogateescape")
    if isinstance(value, str):
        try:
            return json.loads(value)
        except (ValueError, RecursionError) as exc:
            fail(row, field, f"not valid JSON ({exc})")
    return value


def str_to_bytes(text: str) -> bytes:
    """UTF-8 bytes of ``text``; lone surrogates (possible after JSON ``\\ud800`` escapes or
    ``surrogateescape`` decoding) are written back as the bytes they stand for, never an error."""
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-8", "surrogateescape" if _only_escapes(text) else "surrogatepass")


def _only_escapes(text: str) -> bool:
    return all(not (0xD800 <= ord(c) <= 0xDFFF) or 0xDC80 <= ord(c) <= 0xDCFF for c in text)


def text_to_bytes(value: Any, row: str, field: str) -> bytes:
    """Stdin or expected-stdout text as bytes.

    - ``str``: UTF-8 encoded as is.
    - ``bytes``: as is.
    - list of ``str`` (TACO sometimes stores a text as its list of lines): joined with ``"\\n"``
      plus a final ``"\\n"`` (the lines of a text file end with a newline; a program that drops
      the last character of ``readline()`` would otherwise lose a real character). An empty list
      is the empty text.

    Anything else raises :class:`InvalidTestSuite` naming ``field``.
    """
    if isinstance(value, str):
        return str_to_bytes(value)
    if isinstance(value, (bytes, bytearray)):
        return bytes(value)
    if isinstance(value, list) and all(isinstance(line, str) for line in value):
        return str_to_bytes("".join(line + "\n" for line in value))
    fail(row, field, f"expected a string or a list of lines, got {type_name(value)}")


def call_args(value: Any, row: str, field: str) -> tuple[Any, ...]:
    """Positional arguments of a function-call case.

    - a list: the arguments (APPS/TACO ``inputs`` entries, verl ``function_call`` ``input``);
    - a str: one JSON value per line (some TACO rows; LiveCodeBench functional tests), decoded
      with ``json.loads`` line by line. A blank line or a line that is not JSON is an error.

    Raises :class:`InvalidTestSuite` naming ``field`` for any other shape.
    """
    if isinstance(value, list):
        return tuple(value)
    if isinstance(value, str):
        args = []
        for number, line in enumerate(value.split("\n"), 1):
            try:
                args.append(json.loads(line))
            except (ValueError, RecursionError) as exc:
                fail(row, field, f"line {number} is not a JSON argument ({exc}): {line[:60]!r}")
        return tuple(args)
    fail(row, field, f"expected a list of arguments or newline-separated JSON arguments, got {type_name(value)}")


def finish(cases: list[TestCase], row: str, origin: str, field: str) -> TestSuite:
    """The suite, or :class:`InvalidTestSuite` when it has zero cases (zero tests is never a pass:
    DESIGN.md standing rule; olmo-eval PR 354 scored a vacuous suite 1.0)."""
    if not cases:
        fail(row, field, f"zero test cases ({origin}); a suite without tests is never scored")
    return TestSuite(tuple(cases), origin=origin)
