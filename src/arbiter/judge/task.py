"""A Task: everything needed to judge one program."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from arbiter.checkers.spec import CheckerSpec
from arbiter.judge.testsuite import TestSuite
from arbiter.languages.base import CompileSpec  # defined below the judge layer; re-exported here
from arbiter.sandbox.limits import Limits

#: A registry name (:data:`arbiter.languages.registry.LANGUAGES`: ``python``, ``cpp``, ``c``, ...).
Language = str
Scoring = Literal["all_or_nothing", "fraction"]


@dataclass(frozen=True)
class Task:
    """One program to judge.

    - ``language``: a registry name (:func:`arbiter.languages.registry.language_names`); the
      judge raises ``ValueError`` for any other.
    - ``source``: the program text.
    - ``suite``: the test cases (:class:`~arbiter.judge.testsuite.TestSuite`).
    - ``limits``: per-case limits.
    - ``checker``: how stdout is compared (ignored for function-call cases, which compare JSON
      values with ``checker.abs_tol`` / ``rel_tol`` for floats).
    - ``scoring``: ``all_or_nothing`` (the cards' reward: 1.0 only if every case passes) or
      ``fraction`` (passed / total).
    - ``run_all``: keep running after the first failing case (all-or-nothing mode stops there by
      default).
    - ``compile``: compile spec (compiled languages).
    - ``prelude``: Python code run before the program in the same namespace (e.g. LeetCodeDataset's
      import preamble that defines ``List``, ``ListNode``, ``TreeNode``).
    - ``task_id``: the row key, for messages.
    """

    language: Language
    source: str
    suite: TestSuite
    limits: Limits = field(default_factory=Limits)
    checker: CheckerSpec = field(default_factory=CheckerSpec)
    scoring: Scoring = "all_or_nothing"
    run_all: bool = False
    compile: CompileSpec = field(default_factory=CompileSpec)
    prelude: str = ""
    task_id: str = ""
