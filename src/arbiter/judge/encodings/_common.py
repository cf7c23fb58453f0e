"""Helpers shared by the test-suite normalizers: errors that name the row, plain-data conversion,
text-to-bytes, JSON decoding and function-argument decoding."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NoReturn

from arbiter.judge.jsonvalues import IntegerTooLong, JsonTooDeep
from arbiter.judge.jsonvalues import loads as loads_json
from arbiter.judge.testsuite import InvalidTestSuite, TestCase, TestSuite, str_to_bytes


def fail(row: str, field: str, message: str) -> NoReturn:
    """Raise :class:`InvalidTestSuite` as ``row '<row>': <field>: <message>``."""
    raise InvalidTestSuite(f"row {row!r}: {field}: {message}")


def type_name(value: Any) -> str:
    """A short name for a value's shape in error messages (``list``, ``dict``, ``str``, ...)."""
    return "null" if value is None else type(value).__name__


_LEAF, _LIST, _DICT = 0, 1, 2
_PLAIN_SCALARS = frozenset((str, bytes, bool, int, float))


def _shallow(value: Any) -> tuple[int, Any]:
    """One level of :func:`to_plain`: ``(_LEAF, plain value)``, ``(_LIST, items)`` or
    ``(_DICT, [(key, value), ...])``; duck-typed converters are applied until a plain shape."""
    while True:
        if value is None or type(value) in _PLAIN_SCALARS:
            return _LEAF, value
        if isinstance(value, Mapping):
            return _DICT, list(value.items())
        if isinstance(value, (list, tuple)):
            return _LIST, value
        if isinstance(value, bool):
            return _LEAF, bool(value)
        if isinstance(value, str):
            return _LEAF, str(value)
        if isinstance(value, int):
            return _LEAF, int(value)
        if isinstance(value, float):
            return _LEAF, float(value)
        for method in ("as_py", "to_pylist", "tolist"):
            convert = getattr(value, method, None)
            if callable(convert):
                converted = convert()
                if converted is value:  # pragma: no cover - defensive
                    return _LEAF, value
                value = converted
                break
        else:
            return _LEAF, value


def to_plain(value: Any) -> Any:
    """Convert decoded-data containers to plain Python: dict, list, str, int, float, bool, None.

    verl hands ``reward_model.ground_truth`` from Parquet through pandas/HF datasets, so a
    ground truth that is not a JSON string can arrive as numpy arrays (also object arrays of
    dicts), numpy scalars, or pyarrow scalars/arrays. They are recognised by duck typing
    (``as_py`` for pyarrow scalars, ``to_pylist`` for pyarrow arrays, ``tolist`` for numpy
    arrays and scalars), so numpy is never imported. Tuples become lists; ``str``/``int``/
    ``float`` subclasses (``numpy.str_``, ``numpy.float64``) become the base type. Anything else
    is returned unchanged and rejected later by the normalizer's shape checks.

    Iterative (an explicit stack), so any nesting depth that ``json.loads`` or a Parquet column
    can produce converts without ``RecursionError``. Dict keys are converted too (they are flat).
    """
    kind, payload = _shallow(value)
    if kind == _LEAF:
        return payload
    root: list[Any] = [None]
    stack: list[tuple[Any, Any, int, Any]] = [(root, 0, kind, payload)]
    while stack:
        parent, slot, kind, payload = stack.pop()
        if kind == _LIST:
            out_list: list[Any] = [None] * len(payload)
            parent[slot] = out_list
            for i, child in enumerate(payload):
                if child is None or type(child) in _PLAIN_SCALARS:
                    out_list[i] = child
                    continue
                child_kind, child_payload = _shallow(child)
                if child_kind == _LEAF:
                    out_list[i] = child_payload
                else:
                    stack.append((out_list, i, child_kind, child_payload))
        else:
            out_dict: dict[Any, Any] = {}
            parent[slot] = out_dict
            pending: dict[Any, tuple[int, Any]] = {}  # keys whose value is a container
            for key, child in payload:
                if type(key) is not str:
                    key = to_plain(key)
                if child is None or type(child) in _PLAIN_SCALARS:
                    child_kind, child_payload = _LEAF, child
                else:
                    child_kind, child_payload = _shallow(child)
                if child_kind == _LEAF:
                    out_dict[key] = child_payload
                    pending.pop(key, None)  # two keys equal after conversion: the last wins
                else:
                    out_dict[key] = None
                    pending[key] = (child_kind, child_payload)
            for key, (child_kind, child_payload) in pending.items():
                stack.append((out_dict, key, child_kind, child_payload))
    return root[0]


def decode_json_text(value: Any, row: str, field: str) -> Any:
    """Decode a str/bytes value as JSON (errors name the row and field); other values pass through.

    Decoded by :func:`arbiter.judge.jsonvalues.loads`: integers longer than the interpreter's
    4300-digit limit are read exactly (up to 1,000,000 digits). Raises :class:`InvalidTestSuite`
    for invalid JSON, nesting too deep to decode, or an integer over the cap.
    """
    if isinstance(value, (bytes, bytearray)):
        value = bytes(value).decode("utf-8", "surrogateescape")
    if isinstance(value, str):
        try:
            return loads_json(value)
        except (IntegerTooLong, JsonTooDeep) as exc:
            fail(row, field, f"cannot be decoded ({exc})")
        except (ValueError, RecursionError) as exc:
            fail(row, field, f"not valid JSON ({exc})")
    return value


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
      as JSON line by line (:func:`arbiter.judge.jsonvalues.loads`: integers of any length up to
      1,000,000 digits). A blank line or a line that is not JSON is an error.

    Raises :class:`InvalidTestSuite` naming ``field`` for any other shape.
    """
    if isinstance(value, list):
        return tuple(value)
    if isinstance(value, str):
        args = []
        for number, line in enumerate(value.split("\n"), 1):
            try:
                args.append(loads_json(line))
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
