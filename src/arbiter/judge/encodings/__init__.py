"""Test-suite normalizers: every dataset's test encoding -> :class:`~arbiter.judge.testsuite.TestSuite`.

Convert-or-fail: an unknown shape, a missing field or zero cases raises
:class:`~arbiter.judge.testsuite.InvalidTestSuite` naming the row and the field (the judge's
``INVALID_TASK``). The table of sources, functions and modules: ``docs/encodings.md``.
"""

from arbiter.judge.encodings.apps import apps_input_output_to_suite, inputs_outputs_to_suite, load_apps_problem
from arbiter.judge.encodings.codescope import codescope_row_to_suite, codescope_testcases_to_suite
from arbiter.judge.encodings.leetcode import (
    LeetCodeSignature,
    LeetCodeSuite,
    leetcode_row_to_suite,
    leetcode_signature,
    leetcode_to_suite,
)
from arbiter.judge.encodings.livecodebench import (
    decode_lcb_private_tests,
    livecodebench_row_to_suite,
    livecodebench_to_suite,
)
from arbiter.judge.encodings.nemo_gym import nemo_gym_row_to_suite, nemo_gym_unit_tests_to_suite
from arbiter.judge.encodings.oracle_seed import oracle_tests_to_suite, oracle_visible_suite, read_oracle_hidden_tests
from arbiter.judge.encodings.pie import PieTestArchive, load_pie_tests, open_pie_archive, pie_suite_from_dir
from arbiter.judge.encodings.verl import verl_ground_truth_to_suite
from arbiter.judge.testsuite import InvalidTestSuite

__all__ = [
    "InvalidTestSuite",
    "LeetCodeSignature",
    "LeetCodeSuite",
    "PieTestArchive",
    "apps_input_output_to_suite",
    "codescope_row_to_suite",
    "codescope_testcases_to_suite",
    "decode_lcb_private_tests",
    "inputs_outputs_to_suite",
    "leetcode_row_to_suite",
    "leetcode_signature",
    "leetcode_to_suite",
    "livecodebench_row_to_suite",
    "livecodebench_to_suite",
    "load_apps_problem",
    "load_pie_tests",
    "nemo_gym_row_to_suite",
    "nemo_gym_unit_tests_to_suite",
    "open_pie_archive",
    "oracle_tests_to_suite",
    "oracle_visible_suite",
    "pie_suite_from_dir",
    "read_oracle_hidden_tests",
    "verl_ground_truth_to_suite",
]
