"""Vertical tab and form feed separate tokens, as Python's ``split()`` and DMOJ's ``standard`` do.

A red-team finding asked whether they should: testlib's ``wcmp`` separates tokens with space, tab,
CR and LF only, so there ``1\\x0b2`` is one token. The routes' own harnesses (TACO/APPS, prime_code,
LiveCodeBench: ``str.split``/``strip``/``splitlines``) and DMOJ (``iswhite``) treat VT and FF as
whitespace. It is a spelling of whitespace, never a wrong value: every token still has to match in
order (docs/checkers.md, "Whitespace"). Real public tests, through ``compute_score``.
"""

from __future__ import annotations

import pytest

from arbiter.verl.reward import compute_score
from test_zero_padded_tokens import PROGRAMS, ROUTES, _cases, _ground_truth

BITS = PROGRAMS["p02423"][0]  # prints four 32-bit binary strings, one a line


@pytest.mark.parametrize("separator", ["\\x0b", "\\x0c", "\\x0b\\x0c "])
def test_vt_and_ff_separate_tokens_on_every_route(separator):
    cases = _cases("p02423")
    spaced = BITS.replace("print(format(v,'032b'))", f"print(format(v,'032b'),end='{separator}')")
    glued = BITS.replace("print(format(v,'032b'))", "print(format(v,'032b'),end='')")
    assert spaced != BITS and glued != BITS
    for route in (*ROUTES, "leetcode", "my_code_source"):
        assert compute_score(route, f"```python\n{spaced}\n```", _ground_truth(route, cases))["verdict"] == "AC", route
        assert compute_score(route, f"```python\n{glued}\n```", _ground_truth(route, cases))["verdict"] == "WA", route
