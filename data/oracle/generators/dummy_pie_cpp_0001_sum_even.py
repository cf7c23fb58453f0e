#!/usr/bin/env python3
"""Test generator for ``dummy_pie_cpp_0001_sum_even`` (read n integers, print the sum of the even ones).

Usage: ``python3 dummy_pie_cpp_0001_sum_even.py SEED [SIZE]`` prints exactly one input on stdout.
Deterministic for a given (SEED, SIZE): all randomness comes from ``random.Random(SEED)``.
Standard library only. Exit status 2 on bad arguments.

Input format (from the seed's ``source_code``): ``n`` then ``n`` integers read as ``long long``.

Constraints kept here (implied by the source, which is correct by contract):

- ``1 <= n``; values are read into ``long long`` and summed into a ``long long``, so every value
  satisfies ``|a_i| <= 10**12`` and ``n * 10**12 <= 3 * 10**16`` fits easily. Some seeds use values
  beyond the ``int`` range (up to 10**12) on purpose: an answer that reads into ``int`` is wrong.
- Negative values appear; C++ ``%`` keeps the sign, and ``-4 % 2 == 0`` / ``-3 % 2 == -1`` make
  negative evens count and negative odds not, in the source and in any correct answer alike.

SIZE (default 1) selects the scale:

- ``0``: tiny edge cases, ``n`` in 1..6 (all odd -> 0, all even, negatives, values > 2**31).
- ``1``: small, ``n`` in 1..100.
- ``2``: medium, ``n`` in 1000..2000.
- ``3``: large, ``n = 30000``. The source's redundant inner loop is O(n^2): n**2 = 9 * 10**8
  trivial iterations take about 0.24 s under ``g++ -std=c++20 -O2`` on the build host (measured,
  seeds 0-3: 0.23-0.24 s; n = 20000 -> 0.11 s, n = 50000 -> 0.70 s), well within the 2 s run limit, while an O(n) answer
  takes a few milliseconds.
"""

import random
import sys


def _args(argv):
    if not 2 <= len(argv) <= 3:
        sys.stderr.write("usage: gen.py SEED [SIZE]   (SIZE in 0..3, default 1)\n")
        sys.exit(2)
    try:
        seed = int(argv[1])
        size = int(argv[2]) if len(argv) == 3 else 1
    except ValueError:
        sys.stderr.write("SEED and SIZE must be integers\n")
        sys.exit(2)
    if size not in (0, 1, 2, 3):
        sys.stderr.write("SIZE must be 0, 1, 2 or 3\n")
        sys.exit(2)
    return seed, size


def generate(seed, size):
    """Return one input as a string (ends with a newline)."""
    rng = random.Random(seed)
    if size == 0:
        kind = rng.randrange(5)
        n = rng.randint(1, 6)
        if kind == 0:  # all odd: answer 0
            a = [rng.randrange(-99, 100, 2) for _ in range(n)]  # odd numbers
        elif kind == 1:  # all even
            a = [2 * rng.randint(-50, 50) for _ in range(n)]
        elif kind == 2:  # negatives only
            a = [-rng.randint(1, 1000) for _ in range(n)]
        elif kind == 3:  # beyond the int range
            a = [rng.choice((-1, 1)) * rng.randint(2**31, 10**12) for _ in range(n)]
        else:  # zeros and ones
            a = [rng.randint(0, 1) for _ in range(n)]
    else:
        n = {1: rng.randint(1, 100), 2: rng.randint(1000, 2000), 3: 30000}[size]
        bound = 10**12 if rng.random() < 0.3 else 10**9
        a = [rng.randint(-bound, bound) for _ in range(n)]
    return f"{n}\n{' '.join(map(str, a))}\n"


if __name__ == "__main__":
    sys.stdout.write(generate(*_args(sys.argv)))
