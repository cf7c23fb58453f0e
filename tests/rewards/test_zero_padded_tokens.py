"""An expected digit string written as text (a zero-padded ID, a binary string) matches only itself.

``tokens_float`` compared every all-digit expected token as an integer, so a program that lost the
zero padding got AC on every route (red team, checkers: AtCoder ABC113 C's 12-digit IDs, AOJ's
32-bit binary strings, both real CodeNet tests). AtCoder, AOJ and testlib (``wcmp``; its integer
reader refuses leading zeros too) say WA. Real public tests, each route's row shape, through
``compute_score``.
"""

from __future__ import annotations

import json
import tarfile
from pathlib import Path

import pytest

from arbiter.checkers.compare import check_output
from arbiter.checkers.spec import CheckerSpec
from arbiter.verl.reward import compute_score

TESTS = Path(__file__).resolve().parents[3] / "shared/realdata/pie_public_tests/public_test_cases.tar.gz"
ID_HEAD = ("n,m=map(int,input().split())\nps=[tuple(map(int,input().split()))+(i,) for i in range(m)]\n"
           "ans=[None]*m\ncnt={}\nfor p,y,i in sorted(ps,key=lambda t:t[1]):\n    cnt[p]=cnt.get(p,0)+1\n")
PROGRAMS = {
    "p03221": (ID_HEAD + "    ans[i]=f'{p:06d}{cnt[p]:06d}'\nprint('\\n'.join(ans))",
               ID_HEAD + "    ans[i]=p*10**6+cnt[p]\nprint('\\n'.join(map(str,ans)))"),
    "p02423": ("x=int(input())\nM=(1<<32)-1\nfor v in (x, ~x&M, (x<<1)&M, x>>1):\n    print(format(v,'032b'))",
               "x=int(input())\nM=(1<<32)-1\nfor v in (x, ~x&M, (x<<1)&M, x>>1):\n    print(bin(v)[2:])"),
}
ROUTES = ("codeforces", "code_contests_o", "taco", "primeintellect", "livecodebench")


def _cases(problem: str) -> list[tuple[str, str]]:
    if not TESTS.is_file():
        pytest.skip(f"{TESTS} is not here")
    with tarfile.open(TESTS) as tar:
        files = {m.name.rsplit("/", 1)[-1]: tar.extractfile(m).read().decode() for m in tar.getmembers()
                 if m.isfile() and m.name.startswith(f"./{problem}/")}
    numbers = sorted(int(name.split(".")[1]) for name in files if name.startswith("input."))
    return [(files[f"input.{i}.txt"], files[f"output.{i}.txt"]) for i in numbers]


def _ground_truth(route: str, cases: list[tuple[str, str]]) -> str:
    if route in ("primeintellect", "livecodebench"):
        return json.dumps([{"type": "stdin_stdout", "input": i, "output": o} for i, o in cases])
    return json.dumps({"inputs": [i for i, _ in cases], "outputs": [o for _, o in cases]})


@pytest.mark.parametrize("problem", sorted(PROGRAMS))
def test_a_program_that_drops_the_padding_is_wrong_on_every_route(problem):
    cases = _cases(problem)
    correct, unpadded = PROGRAMS[problem]
    for route in ROUTES:
        truth = _ground_truth(route, cases)
        assert compute_score(route, f"```python\n{correct}\n```", truth)["verdict"] == "AC", route
        assert compute_score(route, f"```python\n{unpadded}\n```", truth)["verdict"] == "WA", route


@pytest.mark.parametrize("got, want, ok", [
    (b"11", b"0011", False), (b"1000002", b"000001000002", False), (b"5", b"+5", False), (b"42.0", b"0042", False),
    (b"0", b"000", False), (b"0", b"-0", False), (b"-5", b"-05", False),
    (b"0011", b"0011", True), (b"+5", b"+5", True),
    # an expected integer written as a number still takes its value in any number's spelling (docs/checkers.md)
    (b"6.0", b"6", True), (b"06", b"6", True), (b"6e0", b"6", True), (b"0", b"0", True), (b"-0", b"0", True),
    (b"6.0000001", b"6", True), (b"6.0000001", b"06", False),  # within 1e-6 of 6 (docs/checkers.md); 06 is text
    # a decimal with a padded integer part is text too (a clock's seconds, `15 00 00.000000`)
    (b"0", b"00.000000", False), (b"0.000000", b"00.000000", False), (b"00.000000", b"00.000000", True),
    (b"0.5000001", b"0.5", True), (b"+0.50", b"+0.5", True), (b"-0.0", b"0.0", True),
])
def test_the_tokens_float_rule_for_expected_integers(got, want, ok):
    assert check_output(CheckerSpec("tokens_float"), got + b"\n", (want + b"\n",)).ok is ok
