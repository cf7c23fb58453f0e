#!/usr/bin/env python3
"""Test generator for ``dummy_pie_cpp_0004_first_repeated`` (print the first word that has appeared
earlier in the list, or ``NONE``).

Usage: ``python3 dummy_pie_cpp_0004_first_repeated.py SEED [SIZE]`` prints exactly one input on
stdout. Deterministic for a given (SEED, SIZE): all randomness comes from ``random.Random(SEED)``.
Standard library only. Exit status 2 on bad arguments.

Input format (from the seed's ``source_code`` and its summary "Print the first word that has
appeared earlier in the list, or NONE"): ``n`` then ``n`` whitespace-separated words read with
``cin >> string``. The answer is ``s[i]`` for the smallest ``i`` such that ``s[i]`` equals some
``s[j]`` with ``j < i``; ``NONE`` when all words are distinct.

Constraints kept here: ``1 <= n``; words are 1..10 characters from ``[a-z]`` (``NONE`` itself never
appears as a word, so the two outcomes cannot be confused). Both outcomes are generated: the seed
picks "found" (one word repeated at a chosen position, later words may repeat anything, so the
word whose *second* occurrence comes first is not always the word whose first occurrence comes
first, as in the visible sample) or "NONE" (all distinct). Words share prefixes and lengths so that
comparisons are not decided by the first byte.

SIZE (default 1) selects the scale:

- ``0``: tiny edge cases, ``n`` in 1..6 (``n = 1`` -> NONE, immediate repeat, repeat of the first
  word at the end, several repeating words).
- ``1``: small, ``n`` in 1..100.
- ``2``: medium, ``n`` in 1000..2000.
- ``3``: large, ``n = 20000``; the first repeat, when there is one, is in the last 5 % of the list.
  The source's previous-item scan is O(n^2) string comparisons: about 0.35 s under
  ``g++ -std=c++20 -O2`` on the build host (measured, seeds 0-3: 0.33-0.36 s; 20000 distinct
  words -> 0.41 s, 30000 -> 0.97 s), within the 2 s run limit; an ``unordered_set`` answer takes
  milliseconds.
"""

import random
import string
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


def _distinct_words(rng, count):
    """``count`` distinct lowercase words, sharing prefixes (a few stems + suffixes)."""
    stems = ["".join(rng.choice("abc") for _ in range(rng.randint(0, 4))) for _ in range(8)]
    seen, words = set(), []
    while len(words) < count:
        stem = rng.choice(stems)
        w = (stem + "".join(rng.choice(string.ascii_lowercase) for _ in range(rng.randint(1, 6))))[:10]
        if w not in seen:
            seen.add(w)
            words.append(w)
    return words


def generate(seed, size):
    """Return one input as a string (ends with a newline)."""
    rng = random.Random(seed)
    if size == 0:
        kind = rng.randrange(5)
        if kind == 0:
            words = _distinct_words(rng, 1)
        elif kind == 1:  # immediate repeat at position 1
            w = _distinct_words(rng, 5)
            words = [w[0], w[0]] + w[1 : rng.randint(1, 5)]
        elif kind == 2:  # the first word comes back at the very end
            w = _distinct_words(rng, rng.randint(2, 5))
            words = w + [w[0]]
        elif kind == 3:  # several repeats: the earliest second occurrence wins
            w = _distinct_words(rng, 3)
            words = [w[0], w[1], w[2], w[1], w[0], w[2]]
        else:
            words = _distinct_words(rng, rng.randint(2, 6))
    else:
        n = {1: rng.randint(1, 100), 2: rng.randint(1000, 2000), 3: 20000}[size]
        found = rng.random() < 0.6 and n >= 2
        if not found:
            words = _distinct_words(rng, n)
        else:
            lo = max(1, n - n // 20) if size == 3 else 1
            i = rng.randint(lo, n - 1)  # position of the first repeat (0-based)
            words = _distinct_words(rng, n)
            words[i] = words[rng.randrange(i)]
            for t in range(i + 1, n):  # anything may repeat after the first repeat
                if rng.random() < 0.3:
                    words[t] = words[rng.randrange(t)]
    return f"{len(words)}\n{' '.join(words)}\n"


if __name__ == "__main__":
    sys.stdout.write(generate(*_args(sys.argv)))
