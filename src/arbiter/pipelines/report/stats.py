"""Small statistics of the report: mean, median, percentiles, histograms in multiples of 1/k, and mean
pass@k over problems. Pure functions over lists of numbers. See ``docs/report.md``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from arbiter.pipelines.codegen.summary import pass_at_k


def mean(values: Sequence[float]) -> float | None:
    """Arithmetic mean, ``None`` for no values."""
    return sum(values) / len(values) if values else None


def median(values: Sequence[float]) -> float | None:
    """Median (the mean of the two middle values for an even count), ``None`` for no values."""
    if not values:
        return None
    s = sorted(values)
    mid = len(s) // 2
    return float(s[mid]) if len(s) % 2 else (s[mid - 1] + s[mid]) / 2


def percentile(values: Sequence[float], q: float) -> float | None:
    """The ``q``-th percentile (0..100), linear between closest ranks (numpy's default rule)."""
    if not values:
        return None
    s = sorted(values)
    pos = (len(s) - 1) * q / 100
    lo = math.floor(pos)
    hi = min(lo + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (pos - lo)


def spread(values: Sequence[float]) -> dict[str, Any]:
    """``n``, ``total``, ``mean``, ``median``, ``min``, ``max`` of ``values``."""
    return {"n": len(values), "total": sum(values), "mean": mean(values), "median": median(values),
            "min": min(values) if values else None, "max": max(values) if values else None}


def rate_histogram(rates: Sequence[float], k: int) -> list[int]:
    """Counts of ``rates`` (0..1) in the ``k + 1`` bins 0, 1/k, ..., 1: each rate goes to the nearest
    multiple of 1/k (exact for pass rates over k samples)."""
    counts = [0] * (k + 1)
    for r in rates:
        counts[min(k, max(0, round(r * k)))] += 1
    return counts


def edges_histogram(values: Sequence[float], edges: Sequence[float]) -> list[int]:
    """Counts of ``values`` in ``[edges[i], edges[i+1])``, the last bin closed (numpy's rule)."""
    counts = [0] * (len(edges) - 1)
    for v in values:
        if v < edges[0] or v > edges[-1]:
            continue
        i = next((j for j in range(len(edges) - 1) if v < edges[j + 1]), len(edges) - 2)
        counts[i] += 1
    return counts


def log_sizes(values: Sequence[float]) -> bool:
    """Whether sizes (test-case counts) are binned and drawn on a log scale: their range spans more
    than a factor 20."""
    return bool(values) and min(values) > 0 and max(values) / min(values) > 20


def size_edges(values: Sequence[float], bins: int = 20) -> list[float]:
    """Bin edges for sizes (test-case counts): log-spaced when :func:`log_sizes`, else linear;
    integers' bins end half-way between integers."""
    lo, hi = (min(values), max(values)) if values else (0, 1)
    if log_sizes(values):
        step = (math.log10(hi + 0.5) - math.log10(lo - 0.5 if lo > 1 else 0.5)) / bins
        start = math.log10(lo - 0.5 if lo > 1 else 0.5)
        return [10 ** (start + i * step) for i in range(bins + 1)]
    width = max(1.0, math.ceil((hi - lo + 1) / bins))
    n = max(1, math.ceil((hi - lo + 1) / width))
    return [lo - 0.5 + i * width for i in range(n + 1)]


def ratio_edges(values: Sequence[float], bins: int = 12, anchor: float | None = None) -> list[float]:
    """Log-spaced bin edges around positive ratios (speedups), always including 1.0 in the range. With ``anchor``
    (e.g. PIE's %Opt threshold 1.10) one edge is exactly ``anchor``, so no bin straddles it: the grid of about
    ``bins`` equal log-steps is shifted to pass through it (one bin more at most)."""
    lo = min([*values, 1.0, *([anchor] if anchor else [])]) if values or anchor else 1.0
    hi = max([*values, 1.0, *([anchor] if anchor else [])]) if values or anchor else 1.0
    lo, hi = lo / 1.05, hi * 1.05
    step = (math.log10(hi) - math.log10(lo)) / bins
    if anchor is None:
        return [10 ** (math.log10(lo) + i * step) for i in range(bins + 1)]
    a = math.log10(anchor)
    below = math.ceil((a - math.log10(lo)) / step - 1e-9)
    above = math.ceil((math.log10(hi) - a) / step - 1e-9)
    return [anchor if i == 0 else 10 ** (a + i * step) for i in range(-below, above + 1)]


def mean_pass_at_k(counts: Sequence[tuple[int, int]]) -> dict[str, float]:
    """Mean unbiased pass@k (Chen et al. 2021) over problems given as ``(n, c)``, for k = 1..max n; a
    problem enters pass@k only when ``n >= k``. Keys are ``str(k)``."""
    out: dict[str, float] = {}
    for k in range(1, max((n for n, _ in counts), default=0) + 1):
        vals = [pass_at_k(n, c, k) for n, c in counts if n >= k]
        if vals:
            out[str(k)] = sum(vals) / len(vals)
    return out


__all__ = ["edges_histogram", "log_sizes", "mean", "mean_pass_at_k", "median", "percentile", "rate_histogram", "ratio_edges",
           "size_edges", "spread"]
