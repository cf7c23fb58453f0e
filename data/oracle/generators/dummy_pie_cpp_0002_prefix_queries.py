#!/usr/bin/env python3
"""Test generator for ``dummy_pie_cpp_0002_prefix_queries`` (n values, q range-sum queries ``l r``).

Usage: ``python3 dummy_pie_cpp_0002_prefix_queries.py SEED [SIZE]`` prints exactly one input on
stdout. Deterministic for a given (SEED, SIZE): all randomness comes from ``random.Random(SEED)``.
Standard library only. Exit status 2 on bad arguments.

Input format (from the seed's ``source_code``): ``n q``, then ``n`` values read as ``long long``
into ``a[1..n]``, then ``q`` lines ``l r``; the source prints ``a[l] + ... + a[r]`` per query.

Constraints kept here (implied by the source, which is correct by contract):

- ``1 <= n``, ``1 <= q``, ``1 <= l <= r <= n`` (the source indexes ``a[l..r]`` of a 1-based array of
  size ``n + 1``; anything else is undefined behaviour, so it is never generated).
- ``|a_i| <= 10**12``: a range sum is at most ``n * 10**12 <= 3 * 10**16``, inside ``long long``.
  Some seeds use values beyond the ``int`` range on purpose: an answer keeping ``int`` prefix sums
  is wrong.

SIZE (default 1) selects the scale:

- ``0``: tiny edge cases: ``n`` in 1..5, single-element ranges, the full range, negative values,
  values beyond 2**31.
- ``1``: small, ``n, q`` in 1..100, uniform ranges.
- ``2``: medium, ``n, q`` in 1000..2000.
- ``3``: large, ``n = q = 30000`` with long ranges (``l`` in the first tenth, ``r`` in the last
  tenth): the source's O(n q) work is about 8 * 10**8 additions, about 0.22 s under
  ``g++ -std=c++20 -O2`` on the build host (measured, seeds 0-3: 0.22 s; n = q = 20000 full
  ranges -> 0.11 s, n = q = 50000 full ranges -> 0.71 s), within the 2 s run limit; an O(n + q) prefix-sum answer
  takes milliseconds.
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
    bound = 10**12 if rng.random() < (0.4 if size == 0 else 0.3) else 10**9
    if size == 0:
        n = rng.randint(1, 5)
        a = [rng.randint(-bound, bound) for _ in range(n)]
        queries = [(1, n), (1, 1), (n, n)]
        queries += [(i, i) for i in range(1, n + 1)]
        rng.shuffle(queries)
    else:
        n, q = {
            1: (rng.randint(1, 100), rng.randint(1, 100)),
            2: (rng.randint(1000, 2000), rng.randint(1000, 2000)),
            3: (30000, 30000),
        }[size]
        a = [rng.randint(-bound, bound) for _ in range(n)]
        queries = []
        for _ in range(q):
            if size == 3:
                l = rng.randint(1, max(1, n // 10))
                r = rng.randint(n - n // 10, n)
            else:
                l = rng.randint(1, n)
                r = rng.randint(l, n)
            queries.append((l, r))
    lines = [f"{n} {len(queries)}", " ".join(map(str, a))]
    lines += [f"{l} {r}" for l, r in queries]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.stdout.write(generate(*_args(sys.argv)))
