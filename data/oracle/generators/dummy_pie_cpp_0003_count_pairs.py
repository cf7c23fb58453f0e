#!/usr/bin/env python3
"""Test generator for ``dummy_pie_cpp_0003_count_pairs`` (count pairs ``i < j`` with ``a_i + a_j == k``).

Usage: ``python3 dummy_pie_cpp_0003_count_pairs.py SEED [SIZE]`` prints exactly one input on stdout.
Deterministic for a given (SEED, SIZE): all randomness comes from ``random.Random(SEED)``.
Standard library only. Exit status 2 on bad arguments.

Input format (from the seed's ``source_code``): ``n k`` (both ``int``), then ``n`` values read as
``int``. The source counts pairs with ``(long long)a[i] + a[j] == k`` into a ``long long``.

Constraints kept here (implied by the source, which is correct by contract):

- ``1 <= n``; ``k`` and every ``a_i`` fit in a 32-bit ``int`` (``-2**31 .. 2**31 - 1``). The source
  adds in ``long long``, so it has no overflow anywhere in that range: negative values, ``INT_MIN`` /
  ``INT_MAX`` and targets ``k`` near the ``int`` limits are all handled identically by the source
  and by any correct answer. They are generated on purpose: an answer computing ``k - a_i`` or
  ``a_i + a_j`` in ``int`` overflows and is wrong.
- Duplicates appear (some seeds draw from a tiny value range); the count can reach
  ``n (n - 1) / 2`` (about 8 * 10**8 at the large size), which needs a 64-bit counter.

SIZE (default 1) selects the scale:

- ``0``: tiny edge cases, ``n`` in 1..6: ``n = 1``, all equal values, ``INT_MIN`` / ``INT_MAX`` with
  ``k`` at the ``int`` limits, no pair at all.
- ``1``: small, ``n`` in 1..100.
- ``2``: medium, ``n`` in 1000..2000.
- ``3``: large, ``n = 40000``: the source's O(n^2) pair scan does 8 * 10**8 checks, about 0.32 s
  under ``g++ -std=c++20 -O2`` on the build host (measured, seeds 0-3: 0.32-0.33 s; n = 20000 -> 0.08 s, n = 30000 ->
  0.18 s, n = 50000 -> 0.49 s), within the 2 s run limit; a hash-map answer takes milliseconds.

Value modes for sizes 1..3 (chosen by the seed): wide (``|a_i| <= 10**9``, ``k`` the sum of two
drawn values, so pairs exist), narrow (values in -5..5: many duplicates, huge counts) and extreme
(values near the ``int`` limits, ``k`` near ``±(2**31 - 1)``).
"""

import random
import sys

INT_MIN, INT_MAX = -(2**31), 2**31 - 1


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


def _clamp_int(x):
    return max(INT_MIN, min(INT_MAX, x))


def generate(seed, size):
    """Return one input as a string (ends with a newline)."""
    rng = random.Random(seed)
    if size == 0:
        kind = rng.randrange(5)
        if kind == 0:  # a single element: no pair
            a, k = [rng.randint(-10, 10)], rng.randint(-20, 20)
        elif kind == 1:  # all equal: every pair counts
            v = rng.randint(-3, 3)
            a, k = [v] * rng.randint(2, 6), 2 * v
        elif kind == 2:  # int limits: k - a_i overflows int
            a = [INT_MAX, INT_MIN, -1, 0, INT_MAX, 1][: rng.randint(2, 6)]
            k = rng.choice((INT_MAX, INT_MIN, -1, 0))
        elif kind == 3:  # large positive values, k = INT_MAX
            a = [INT_MAX - rng.randint(0, 2) for _ in range(rng.randint(2, 6))] + [0, 1]
            k = INT_MAX
        else:  # no pair sums to k
            a = [2 * rng.randint(-5, 5) for _ in range(rng.randint(2, 6))]
            k = 2 * rng.randint(-5, 5) + 1
        rng.shuffle(a)
    else:
        n = {1: rng.randint(1, 100), 2: rng.randint(1000, 2000), 3: 40000}[size]
        mode = rng.choice(("wide", "wide", "narrow", "extreme"))
        if mode == "wide":
            a = [rng.randint(-10**9, 10**9) for _ in range(n)]
            k = a[rng.randrange(n)] + a[rng.randrange(n)]
        elif mode == "narrow":
            a = [rng.randint(-5, 5) for _ in range(n)]
            k = rng.randint(-6, 6)
        else:
            a = [rng.choice((INT_MAX - rng.randint(0, 3), INT_MIN + rng.randint(0, 3), rng.randint(-3, 3)))
                 for _ in range(n)]
            k = rng.choice((INT_MAX, INT_MAX - 1, INT_MIN, INT_MIN + 1, -1, 0))
        k = _clamp_int(k)
    return f"{len(a)} {k}\n{' '.join(map(str, a))}\n"


if __name__ == "__main__":
    sys.stdout.write(generate(*_args(sys.argv)))
