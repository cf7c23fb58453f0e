"""Test cases and test suites: what a program is judged on.

A :class:`TestSuite` holds cases of two kinds:

- :class:`StdioCase`: bytes on stdin -> expected stdout (one or several accepted answers);
- :class:`CallCase`: a function call with JSON-decoded positional/keyword arguments -> expected
  return value (one or several accepted values, JSON-decoded).

Suites are built by the normalizers in :mod:`arbiter.judge.encodings`; a suite with zero cases is
never scored (the judge returns ``INVALID_TASK``, DESIGN.md standing rule).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Union


class InvalidTestSuite(ValueError):
    """A test payload that cannot be turned into a suite (unknown shape, zero cases, bad field).

    The message names the row and the offending shape or field; such a row is never scored.
    """


def str_to_bytes(text: str) -> bytes:
    """UTF-8 bytes of ``text``; lone surrogates (possible after JSON ``\\ud800`` escapes or
    ``surrogateescape`` decoding) are written back as the bytes they stand for, never an error."""
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-8", "surrogateescape" if _only_escapes(text) else "surrogatepass")


def _only_escapes(text: str) -> bool:
    return all(not (0xD800 <= ord(c) <= 0xDFFF) or 0xDC80 <= ord(c) <= 0xDCFF for c in text)


def _what(value: Any) -> str:
    return "None" if value is None else type(value).__name__


def _text_field(value: Any, case: str, field: str, kind: str) -> bytes:
    """``bytes`` from ``bytes``/``bytearray``/``memoryview`` (copied) or ``str`` (UTF-8 via
    :func:`str_to_bytes`); anything else is a ``TypeError`` naming the case and the field."""
    if type(value) is bytes:
        return value
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value)
    if isinstance(value, str):
        return str_to_bytes(value)
    raise TypeError(f"{kind} {case!r}: {field} must be bytes or str, got {_what(value)}")


def _name_field(value: Any, kind: str) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    raise TypeError(f"{kind}: name must be a str (or an int, made a str), got {_what(value)}")


@dataclass(frozen=True)
class StdioCase:
    """One stdin/stdout test case.

    - ``name``: the case's label in verdicts (an ``int`` is turned into its ``str``).
    - ``stdin``: the bytes fed to the program (a ``str`` is UTF-8 encoded).
    - ``expected``: every accepted stdout (usually one), stored as a ``tuple`` of ``bytes`` and
      compared by the task's checker; the output passes when **any** of them matches. For
      convenience a single ``bytes``/``str`` answer is wrapped into a one-element tuple, a
      ``list``/``tuple`` is read as several accepted answers (each ``bytes`` or ``str``, ``str``
      UTF-8 encoded), so ``StdioCase("a", "1 2\\n", "3\\n")`` works.

    Raises ``TypeError`` naming the case and the field (``name``, ``stdin``, ``expected`` or
    ``expected[i]``) for any other type (``None``, a number, a dict, a list holding a non-text
    item), and :class:`InvalidTestSuite` for an empty ``expected``: a wrong type never reaches
    a checker, where ``str`` compared with ``bytes`` would be a silent WA.
    """

    name: str
    stdin: bytes
    expected: tuple[bytes, ...]

    def __post_init__(self) -> None:
        name = _name_field(self.name, "StdioCase")
        object.__setattr__(self, "name", name)
        object.__setattr__(self, "stdin", _text_field(self.stdin, name, "stdin", "StdioCase"))
        expected = self.expected
        if isinstance(expected, (bytes, bytearray, memoryview, str)):
            answers: tuple[bytes, ...] = (_text_field(expected, name, "expected", "StdioCase"),)
        elif isinstance(expected, (tuple, list)):
            answers = tuple(_text_field(a, name, f"expected[{i}]", "StdioCase") for i, a in enumerate(expected))
        else:
            raise TypeError(f"StdioCase {name!r}: expected must be bytes, str, or a tuple/list of accepted "
                            f"answers (bytes or str), got {_what(expected)}")
        if not answers:
            raise InvalidTestSuite(f"case {name!r}: no expected output")
        object.__setattr__(self, "expected", answers)


_NODE_TYPE = re.compile(r"(List\[)*(ListNode|TreeNode)\]*")


def node_type(text: Any) -> bool:
    """True for the LeetCode node types a harness builds from lists: ``ListNode``, ``TreeNode``,
    and either inside ``List[...]`` (any depth), e.g. ``List[ListNode]``."""
    return (isinstance(text, str) and _NODE_TYPE.fullmatch(text) is not None
            and text.count("[") == text.count("]"))


@dataclass(frozen=True)
class CallCase:
    """One function-call test case.

    - ``name``: the case's label (an ``int`` is turned into its ``str``).
    - ``fn_name``: a top-level function or a method of ``class Solution`` (non-empty ``str``).
    - ``args``: positional arguments, JSON-compatible values; a ``list`` is turned into a tuple.
    - ``kwargs``: keyword arguments, a mapping with ``str`` keys (copied into a ``dict``).
    - ``expected``: a **tuple** of every accepted return value (JSON-compatible, tuples already
      lists), usually ``(value,)``. A ``list`` is refused: ``expected=[1, 2]`` could mean the
      return value ``[1, 2]`` or the accepted values ``1`` and ``2``, and guessing would
      misjudge; pass ``expected=([1, 2],)`` or ``expected=(1, 2)``.
    - ``node_args``: LeetCode node arguments, as the dataset says: per positional argument a
      :func:`node_type` (built from its level-order list) or ``None`` (a plain value); a list is
      turned into a tuple. ``None`` (the default): the case does not say, and the harness reads
      the program's annotations. When given: one item per argument, no ``kwargs``.
    - ``node_return``: the :func:`node_type` of the return value (read with ``node_args`` only).
    - ``int_keys``: the harness calls the function with the first argument's keys made ``int(k)``
      (JSON object keys are strings; APPS/TACO ``testing_util`` undoes that). The row's route
      decides, never the program; the first argument must be a dict (docs/encodings.md).

    Raises ``TypeError`` naming the case and the field for a wrong type, and
    :class:`InvalidTestSuite` for an empty ``expected``.
    """

    name: str
    fn_name: str
    args: tuple[Any, ...] = ()
    kwargs: dict[str, Any] = field(default_factory=dict)
    expected: tuple[Any, ...] = ()
    node_args: tuple[str | None, ...] | None = None
    node_return: str | None = None
    int_keys: bool = False

    def __post_init__(self) -> None:
        name = _name_field(self.name, "CallCase")
        object.__setattr__(self, "name", name)
        if not isinstance(self.fn_name, str) or not self.fn_name:
            raise TypeError(f"CallCase {name!r}: fn_name must be a non-empty str, got {self.fn_name!r:.60}")
        if isinstance(self.args, list):
            object.__setattr__(self, "args", tuple(self.args))
        elif not isinstance(self.args, tuple):
            raise TypeError(f"CallCase {name!r}: args must be a tuple (or list) of positional arguments, "
                            f"got {_what(self.args)}")
        if not isinstance(self.kwargs, Mapping) or not all(isinstance(k, str) for k in self.kwargs):
            raise TypeError(f"CallCase {name!r}: kwargs must be a mapping with str keys, got {_what(self.kwargs)}")
        if type(self.kwargs) is not dict:
            object.__setattr__(self, "kwargs", dict(self.kwargs))
        if not isinstance(self.expected, tuple):
            hint = " (ambiguous: pass (value,) for one list-valued answer)" if isinstance(self.expected, list) else ""
            raise TypeError(f"CallCase {name!r}: expected must be a tuple of accepted return values, "
                            f"got {_what(self.expected)}{hint}")
        if not self.expected:
            raise InvalidTestSuite(f"case {name!r}: no expected return value")
        self._check_nodes(name)
        if not isinstance(self.int_keys, bool):
            raise TypeError(f"CallCase {name!r}: int_keys must be a bool, got {_what(self.int_keys)}")
        if self.int_keys and not (self.args and isinstance(self.args[0], dict)):
            raise TypeError(f"CallCase {name!r}: int_keys needs a dict first argument")

    def _check_nodes(self, name: str) -> None:
        if isinstance(self.node_args, list):
            object.__setattr__(self, "node_args", tuple(self.node_args))
        if self.node_args is None:
            if self.node_return is not None:
                raise TypeError(f"CallCase {name!r}: node_return without node_args")
            return
        if not isinstance(self.node_args, tuple) or len(self.node_args) != len(self.args) or self.kwargs:
            raise TypeError(f"CallCase {name!r}: node_args must give one item per positional argument "
                            f"(and no kwargs), got {self.node_args!r:.80}")
        for i, kind in enumerate(self.node_args + (self.node_return,)):
            if kind is not None and not node_type(kind):
                where = f"node_args[{i}]" if i < len(self.node_args) else "node_return"
                raise TypeError(f"CallCase {name!r}: {where} must be None or a node type "
                                f"(ListNode, TreeNode, List[...] of one), got {kind!r:.60}")

    def __hash__(self) -> int:  # kwargs is a dict; cases are hashed by name only
        return hash((self.name, self.fn_name))


TestCase = Union[StdioCase, CallCase]


@dataclass(frozen=True)
class TestSuite:
    """An ordered tuple of cases plus where they came from (``origin``, e.g. ``verl:dict``).

    ``cases`` may be given as any iterable (stored as a tuple); an item that is not a
    :class:`StdioCase` or :class:`CallCase` raises ``TypeError`` naming its index.
    """

    __test__ = False  # not a pytest test class

    cases: tuple[TestCase, ...]
    origin: str = ""

    def __post_init__(self) -> None:
        if not isinstance(self.cases, tuple):
            if isinstance(self.cases, (str, bytes, StdioCase, CallCase)):
                raise TypeError(f"TestSuite: cases must be a tuple of cases, got {_what(self.cases)}")
            object.__setattr__(self, "cases", tuple(self.cases))
        for i, case in enumerate(self.cases):
            if not isinstance(case, (StdioCase, CallCase)):
                raise TypeError(f"TestSuite: cases[{i}] must be a StdioCase or CallCase, got {_what(case)}")

    def __len__(self) -> int:
        return len(self.cases)

    def __iter__(self):
        return iter(self.cases)

    @property
    def is_call_based(self) -> bool:
        """True when the cases are function calls."""
        return bool(self.cases) and isinstance(self.cases[0], CallCase)

    def __add__(self, other: "TestSuite") -> "TestSuite":
        return TestSuite(self.cases + other.cases, origin=f"{self.origin}+{other.origin}")
