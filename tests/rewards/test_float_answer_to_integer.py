"""A float written for an expected answer that happens to be an integer is compared with the tolerance.

AOJ p02252 (fractional knapsack, "an error greater than 1e-6" not allowed) writes its answers as
``240`` and ``100``. A correct program whose floats are a few ulps off (``240.00000000000017``)
was WA on every route: an expected integer took only its exact value (red team, checkers). AOJ,
testlib's ``rcmp6``, DMOJ's ``floats`` and TACO/APPS' ``np.allclose`` accept it. The tolerance
never lets another integer through (docs/checkers.md). Real public tests, through ``compute_score``.
"""

from __future__ import annotations

import pytest

from arbiter.checkers.compare import check_output
from arbiter.checkers.spec import CheckerSpec
from arbiter.verl.reward import compute_score
from test_zero_padded_tokens import ROUTES, _cases, _ground_truth

READ = "n,W=map(int,input().split())\nit=[tuple(map(int,input().split())) for _ in range(n)]\n"
GREEDY = READ + ("it.sort(key=lambda t:t[0]/t[1],reverse=True)\nans=0\nfor v,w in it:\n"
                 "    t=min(w,W);ans+=v*t/w;W-=t\nprint(ans)")
# The LP dual, min over l of l*W + sum(max(0, v - l*w)), by ternary search: 240.00000000000017.
TERNARY = READ + ("f=lambda l:l*W+sum(max(0.0,v-l*w) for v,w in it)\nlo,hi=0.0,max(v/w for v,w in it)\n"
                  "for _ in range(80):\n    a=lo+(hi-lo)/3;b=hi-(hi-lo)/3\n"
                  "    if f(a)<f(b): hi=b\n    else: lo=a\nprint(f((lo+hi)/2))")
BY_VALUE = GREEDY.replace("t[0]/t[1]", "t[0]")  # wrong greedy: 220.0 for 240


def _verdict(route: str, program: str, cases: list[tuple[str, str]]) -> str:
    return compute_score(route, f"```python\n{program}\n```", _ground_truth(route, cases))["verdict"]


def test_a_correct_float_answer_to_an_integer_written_expected_is_accepted_on_every_route():
    cases = _cases("p02252")
    assert [o.strip() for _, o in cases] == ["240", "100", "240", "210.90909091"]
    for route in ROUTES:
        assert _verdict(route, GREEDY, cases) == "AC", route
        assert _verdict(route, TERNARY, cases) == "AC", route
        assert _verdict(route, BY_VALUE, cases) == "WA", route


@pytest.mark.parametrize("got, want, ok", [
    (b"239.99999999999997", b"240", True), (b"240.00000000000017", b"240", True), (b"2.4e2", b"240", True),
    (b"2.9999999", b"3", True), (b"2.9999999", b"3.0", True),  # as for an expected 3.0
    (b"239.9997", b"240", False), (b"241.0", b"240", False), (b"241", b"240", False),
    # another integer never passes, whatever the relative tolerance allows
    (b"12345679.0", b"12345678", False), (b"12345679.0", b"12345678.0", True),
    # beyond 2**53 an integer takes its exact value only: a double there has lost digits
    (b"5e+17", b"500000000000000000", True), (b"5.000000000000001e+17", b"500000000000000000", False),
    (b"50000000000000001", b"50000000000000000", False),
    # text stays text
    (b"11.0", b"0011", False), (b"5.0", b"+5", False), (b"0.0", b"-0", False),
])
def test_the_rule_for_a_float_against_an_expected_integer(got, want, ok):
    assert check_output(CheckerSpec("tokens_float"), got + b"\n", (want + b"\n",)).ok is ok
