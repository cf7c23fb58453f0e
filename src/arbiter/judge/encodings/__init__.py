"""Test-suite normalizers: every dataset's test encoding -> :class:`~arbiter.judge.testsuite.TestSuite`.

Each normalizer is convert-or-fail (codegen card: "unknown encodings fail loudly rather than
silently scoring 0"): an unknown shape, a missing field or zero cases raises
:class:`~arbiter.judge.testsuite.InvalidTestSuite` whose message starts with ``row '<label>':``
and names the field; the judge turns it into ``INVALID_TASK``. Every normalizer takes the row
label as the keyword argument ``row`` (the ``*_row_to_suite`` helpers take it from the row).

| source | function | module |
|---|---|---|
| verl ``reward_model.ground_truth`` (3 encodings) | :func:`verl_ground_truth_to_suite` | :mod:`.verl` |
| oracle seed ``visible_tests`` / hidden-test files | :func:`oracle_tests_to_suite`, :func:`oracle_visible_suite`, :func:`read_oracle_hidden_tests` | :mod:`.oracle_seed` |
| PIE / CodeNet ``input.N.txt`` folders or tarballs | :func:`load_pie_tests`, :func:`pie_suite_from_dir`, :class:`PieTestArchive`, :func:`open_pie_archive` | :mod:`.pie` |
| APPS / TACO ``input_output`` | :func:`apps_input_output_to_suite`, :func:`load_apps_problem` | :mod:`.apps` |
| LeetCodeDataset ``input_output`` | :func:`leetcode_to_suite`, :func:`leetcode_row_to_suite` | :mod:`.leetcode` |
| CodeScope ``testcases`` | :func:`codescope_testcases_to_suite`, :func:`codescope_row_to_suite` | :mod:`.codescope` |
| NeMo-Gym ``verifier_metadata.unit_tests`` | :func:`nemo_gym_unit_tests_to_suite`, :func:`nemo_gym_row_to_suite` | :mod:`.nemo_gym` |
| LiveCodeBench public/private tests | :func:`livecodebench_to_suite`, :func:`livecodebench_row_to_suite` | :mod:`.livecodebench` |
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
