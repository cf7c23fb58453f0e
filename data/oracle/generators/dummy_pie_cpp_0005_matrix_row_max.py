#!/usr/bin/env python3
"""Test generator for ``dummy_pie_cpp_0005_matrix_row_max`` (print the maximum of each row).

Usage: ``python3 dummy_pie_cpp_0005_matrix_row_max.py SEED [SIZE]`` prints exactly one input on
stdout. Deterministic for a given (SEED, SIZE): all randomness comes from ``random.Random(SEED)``.
Standard library only. Exit status 2 on bad arguments.

Input format (from the seed's ``source_code``): ``n m`` then ``n`` rows of ``m`` ``int`` values. The
source prints the ``n`` row maxima separated by single spaces and ends the line with ``\\n``.

Constraints kept here (implied by the source, which is correct by contract):

- ``1 <= n`` and ``1 <= m``: with ``n = 0`` the source prints nothing at all and with ``m = 0`` it
  prints ``INT_MIN``; those are degenerate, never generated.
- Values fit in ``int``; ``INT_MIN`` and ``INT_MAX`` appear (a row made only of ``INT_MIN`` must print
  ``-2147483648``), as do all-negative rows and repeated maxima.

SIZE (default 1) selects the scale:

- ``0``: tiny edge cases, ``n, m`` in 1..4 (single cell, ``INT_MIN`` rows, ``INT_MAX``, ties).
- ``1``: small, ``n, m`` in 1..30.
- ``2``: medium, ``n, m`` in 30..100.
- ``3``: large, ``n = 100``, ``m = 3000``: the source's O(n m^2) redundant scan does 9 * 10**8
  comparisons (vectorised by GCC), about 0.25 s under ``g++ -std=c++20 -O2`` on the build host
  (measured, seeds 0-3: 0.25-0.26 s; 50 x 4000 -> 0.23 s, 100 x 2000 -> 0.13 s), within the
  2 s run limit, while the O(n m) answer is bound by reading the 3 * 10**5 numbers (about 3.4 MB
  of input; ~20 ms).
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


def generate(seed, size):
    """Return one input as a string (ends with a newline)."""
    rng = random.Random(seed)
    if size == 0:
        n, m = rng.randint(1, 4), rng.randint(1, 4)
        kind = rng.randrange(4)
        pool = {
            0: (INT_MIN,),
            1: (INT_MIN, INT_MAX, 0, -1),
            2: (-7, -7, -3),
            3: tuple(range(-5, 6)),
        }[kind]
        rows = [[rng.choice(pool) for _ in range(m)] for _ in range(n)]
    else:
        n, m = {
            1: (rng.randint(1, 30), rng.randint(1, 30)),
            2: (rng.randint(30, 100), rng.randint(30, 100)),
            3: (100, 3000),
        }[size]
        mode = rng.choice(("wide", "negative", "ties"))
        if mode == "wide":
            rows = [[rng.randint(INT_MIN, INT_MAX) for _ in range(m)] for _ in range(n)]
        elif mode == "negative":
            rows = [[rng.randint(INT_MIN, -1) for _ in range(m)] for _ in range(n)]
        else:
            rows = [[rng.randint(-3, 3) for _ in range(m)] for _ in range(n)]
        if n >= 2:  # one row of INT_MIN only
            rows[rng.randrange(n)] = [INT_MIN] * m
    body = "\n".join(" ".join(map(str, r)) for r in rows)
    return f"{n} {m}\n{body}\n"


if __name__ == "__main__":
    sys.stdout.write(generate(*_args(sys.argv)))
