"""Rank statistics to set instruction speedups beside wall speedups (scipy is not a dependency).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence


def rankdata(values: Sequence[float]) -> list[float]:
    """1-based ranks of ``values``, ties given the mean of the ranks they span (scipy's ``rankdata`` "average").

    ``[10, 20, 20, 5]`` -> ``[2.0, 3.5, 3.5, 1.0]``. Raises ``ValueError`` for NaN."""
    xs = [float(v) for v in values]
    if any(math.isnan(x) for x in xs):
        raise ValueError("cannot rank NaN")
    order = sorted(range(len(xs)), key=lambda i: xs[i])
    ranks = [0.0] * len(xs)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and xs[order[j + 1]] == xs[order[i]]:
            j += 1
        for t in range(i, j + 1):
            ranks[order[t]] = (i + j) / 2 + 1
        i = j + 1
    return ranks


def spearman(x: Sequence[float], y: Sequence[float]) -> float | None:
    """Spearman's rank correlation: the Pearson correlation of :func:`rankdata` ranks (ties averaged), in [-1, 1].

    Returns ``None`` when undefined (fewer than 2 pairs, or either side constant). Raises ``ValueError`` when the
    lengths differ or a value is NaN."""
    if len(x) != len(y):
        raise ValueError(f"spearman needs paired samples, got {len(x)} and {len(y)} values")
    if len(x) < 2:
        return None
    rx, ry = rankdata(x), rankdata(y)
    mx, my = statistics.fmean(rx), statistics.fmean(ry)
    sxy = math.fsum((a - mx) * (b - my) for a, b in zip(rx, ry))
    sxx = math.fsum((a - mx) ** 2 for a in rx)
    syy = math.fsum((b - my) ** 2 for b in ry)
    if sxx == 0 or syy == 0:
        return None
    return sxy / math.sqrt(sxx * syy)


def reversals(pairs: Sequence[tuple[str, float, float]], *, margin: float = 0.0) -> list[tuple[str, float, float]]:
    """The pairs whose two speedups disagree on which program is faster: one > 1 + margin and the other
    < 1 - margin (e.g. instructions say the candidate is faster, wall time says slower). ``pairs``:
    ``(name, speedup_1, speedup_2)``, ratios > 0. ``margin`` (>= 0) ignores near-parity noise."""
    if margin < 0:
        raise ValueError("margin must be >= 0")
    out = []
    for name, a, b in pairs:
        if (a > 1 + margin and b < 1 - margin) or (a < 1 - margin and b > 1 + margin):
            out.append((name, a, b))
    return out
