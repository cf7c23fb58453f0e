"""Test cases and test suites: what a program is judged on.

A :class:`TestSuite` holds cases of two kinds:

- :class:`StdioCase`: bytes on stdin -> expected stdout (one or several accepted answers);
- :class:`CallCase`: a function call with JSON-decoded positional/keyword arguments -> expected
  return value (one or several accepted values, JSON-decoded).

Suites are built by the normalizers in :mod:`arbiter.judge.encodings`; a suite with zero cases is
never scored (the judge returns ``INVALID_TASK``, DESIGN.md standing rule).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Union


class InvalidTestSuite(ValueError):
    """A test payload that cannot be turned into a suite (unknown shape, zero cases, bad field).

    The message names the row and the offending shape or field; such a row is never scored.
    """


@dataclass(frozen=True)
class StdioCase:
    """One stdin/stdout test case.

    ``expected`` holds every accepted stdout (usually one). Bytes, compared by a checker.
    """

    name: str
    stdin: bytes
    expected: tuple[bytes, ...]

    def __post_init__(self) -> None:
        if not self.expected:
            raise InvalidTestSuite(f"case {self.name!r}: no expected output")


@dataclass(frozen=True)
class CallCase:
    """One function-call test case.

    ``fn_name`` is a top-level function or a method of ``class Solution``; ``args`` / ``kwargs``
    are JSON-compatible values passed to it; ``expected`` holds every accepted return value,
    JSON-compatible (tuples already lists).
    """

    name: str
    fn_name: str
    args: tuple[Any, ...] = ()
    kwargs: dict[str, Any] = field(default_factory=dict)
    expected: tuple[Any, ...] = ()

    def __post_init__(self) -> None:
        if not self.expected:
            raise InvalidTestSuite(f"case {self.name!r}: no expected return value")

    def __hash__(self) -> int:  # kwargs is a dict; cases are hashed by name only
        return hash((self.name, self.fn_name))


TestCase = Union[StdioCase, CallCase]


@dataclass(frozen=True)
class TestSuite:
    """An ordered tuple of cases plus where they came from (``origin``, e.g. ``verl:dict``)."""

    __test__ = False  # not a pytest test class

    cases: tuple[TestCase, ...]
    origin: str = ""

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
