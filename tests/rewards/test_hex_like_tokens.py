"""An expected token of digits, ``e``, digits (``49e2``) is a hexadecimal string: only the same bytes match it.

``tokens_float`` read such a token as a float (``49e2`` = 4900), so ``49E2``, ``000049e2`` and ``4900``
passed for it on every route (red team, checkers). AOJ p00829 (Leaky Cryptography) prints a 32-bit
key in lowercase hexadecimal without leading zeros, and its real input holds ``49e2``: AOJ and
testlib's ``wcmp`` say WA to the upper-case and the zero-padded key. No float printer writes an
exponent without a sign or a point (docs/checkers.md). Real public tests, and a data set made the
problem's way (real plaintexts, encrypted with a key of that shape), through ``compute_score``.
"""

from __future__ import annotations

import pytest

from arbiter.checkers.compare import check_output
from arbiter.checkers.spec import CheckerSpec
from arbiter.verl.reward import compute_score
from test_zero_padded_tokens import ROUTES, _cases, _ground_truth

KEY = ("import sys\nd=sys.stdin.read().split()\nfor s in range(int(d[0])):\n"
       "    c=[int(x,16) for x in d[1+9*s:10+9*s]]\n    k=0\n    for b in range(32):\n"
       "        m=(1<<(b+1))-1\n        if (sum(x^k for x in c[:8])&m)!=((c[8]^k)&m): k|=1<<b\n"
       "    print(format(k,'FORMAT'))")
MASK = (1 << 32) - 1


def _encrypted_with(keys: list[int], cases: list[tuple[str, str]]) -> tuple[str, str]:
    """A data set of the problem: the plaintexts of the real cases' messages, each encrypted again
    with one of ``keys``; the answer is each key, written as the statement asks."""
    messages = []
    for stdin, stdout in cases:
        words = stdin.split()
        for s, key in enumerate(stdout.split()):
            messages.append([int(w, 16) ^ int(key, 16) for w in words[1 + 9 * s:10 + 9 * s]])
    assert all(sum(m[:8]) & MASK == m[8] for m in messages)  # the checksum the problem promises
    chosen = list(zip(messages, keys))
    stdin = f"{len(chosen)}\n" + "".join(" ".join(format(n ^ k, "x") for n in m) + "\n" for m, k in chosen)
    return stdin, "".join(format(k, "x") + "\n" for _, k in chosen)


def _verdict(route: str, fmt: str, cases: list[tuple[str, str]]) -> str:
    program = KEY.replace("FORMAT", fmt)
    return compute_score(route, f"```python\n{program}\n```", _ground_truth(route, cases))["verdict"]


def test_an_upper_case_or_zero_padded_hex_key_is_wrong_on_every_route():
    real = _cases("p00829")
    made = [_encrypted_with([0x49E2, 0x1E5, 0x3E8], real)]
    assert made[0][1] == "49e2\n1e5\n3e8\n"
    for route in ROUTES:
        assert _verdict(route, "x", real + made) == "AC", route
        assert _verdict(route, "X", made) == "WA", route  # 49E2, 1E5, 3E8
        assert _verdict(route, "08x", made) == "WA", route  # 000049e2


@pytest.mark.parametrize("got, want, ok", [
    (b"1E5", b"1e5", False), (b"01e5", b"1e5", False), (b"100000", b"1e5", False), (b"99999.99999", b"1e5", False),
    (b"1e05", b"1e5", False), (b"10e4", b"1e5", False), (b"1e5", b"1e5", True), (b"49E2", b"49E2", True),
    # an exponent as float printers write it keeps the tolerance
    (b"100000", b"1e+05", True), (b"99999.99999", b"1e+05", True), (b"0.0000001", b"1e-07", True),
    (b"100000", b"1.0E5", True), (b"6.0000001", b"6.0e0", True),
    # an answer of that shape is still a number for an expected number
    (b"1e5", b"100000", True), (b"1e5", b"100000.0", True),
])
def test_the_rule_for_hex_like_tokens(got, want, ok):
    assert check_output(CheckerSpec("tokens_float"), got + b"\n", (want + b"\n",)).ok is ok
