"""Measure an oracle answer against its seed's ``source_code``, measuring the source once per test.

Issue 5, step 5: "Measure the answer against ``source_code`` on the same tests: instruction counts with valgrind
(deterministic; the default) or wall time with interleaved repeats; record both programs' figures and the
speedup, with the toolchain fingerprint."

- ``method="wall"``: :func:`arbiter.timing.compare.compare` as is (source = ``a``, answer = ``b``): wall time must
  interleave the two programs' runs, so both are measured together every time.
- ``method="instructions"``: :func:`~arbiter.timing.compare.compare` with the source's counts memoized
  (``baseline_cache``, :class:`arbiter.timing.count_cache.CountCache`). A count is a pure function of (executable,
  toolchain, stdin, meter): :mod:`arbiter.timing.instructions` documents and tests that the same binary and input
  give the same count. The seed's source is the same executable for every answer to the task (same command, compile
  cache), so measuring it once per test instead of once per answer gives identical figures at a fraction of the
  cost (the demo's sources run 2e9-7e9 instructions per large test, ~2-6 s each under valgrind). Memo: in process,
  and on disk under ``<cache>/oracle_source_counts/`` (cache root ``$ARBITER_CACHE_DIR``, default
  ``~/.cache/arbiter``) keyed by :func:`arbiter.timing.count_cache.count_key` (sha256 of the executable, its
  toolchain fingerprint, stdin, expected stdout, the valgrind meter fingerprint incl. CPU model and flags, the
  valgrind limits). Only successful counts are stored. Concurrent rows of one task wait for the first one's source
  measurement (single flight). The source's cases are looked up or measured first, then the answer's (the answer
  is always measured afresh, and not at all when the source failed).

Both paths: the toolchains must match (:func:`arbiter.timing.compare.check_comparable`: raises
``FingerprintMismatch``, a ``ToolchainMismatch``), every measurement holds one core exclusively
(:func:`arbiter.timing.wallclock.core_lease`), a measured run must print the expected output (``same_output``),
and ``largest_speedup`` covers the costliest ``largest_fraction`` of the cases by the source's cost
(:func:`arbiter.timing.compare.largest_cases`).
"""

from __future__ import annotations

import os
from typing import Any, Callable, Sequence

from arbiter.sandbox.limits import Limits

#: The directory of the on-disk memo of source counts, under the cache root (oracle_verify: under its ``cache_dir``).
COUNT_CACHE_SUBDIR = "oracle_source_counts"


def measure_against_source(source: Any, answer: Any, cases: Sequence[tuple[str, bytes, bytes | None]], *,
                           method: str = "instructions", limits: Limits | None = None,
                           same_output: Callable[[bytes, bytes], bool] | None = None,
                           largest_fraction: float = 0.2, repeats: int = 5,
                           cache_dir: str | os.PathLike | None = None, use_cache: bool = True):
    """Measure ``source`` (baseline ``a``) and ``answer`` (candidate ``b``) on ``cases``; see the module docstring.

    - ``source`` / ``answer``: :class:`arbiter.timing.compare.Program` (executable bytes + toolchain).
    - ``cases``: ``(name, stdin bytes, expected stdout bytes or None)``, names unique, at least one.
    - ``method``: ``"instructions"`` (counts; source memoized) or ``"wall"`` (seconds; ``repeats`` interleaved
      rounds after one warm-up, :func:`~arbiter.timing.compare.compare`).
    - ``limits``: the programs' native per-run limits (scaled for valgrind).
    - ``cache_dir`` / ``use_cache``: the directory of the on-disk memo of source counts (default
      ``<cache root>/oracle_source_counts``; one in-process :class:`~arbiter.timing.count_cache.CountCache` per
      directory); ``use_cache=False`` neither reads nor writes it (instructions only).

    Returns a :class:`~arbiter.timing.compare.Comparison`: per-case figures, ``a_total``/``b_total``,
    ``speedup = a_total / b_total``, ``largest_cases``/``largest_speedup``, the toolchain record and the meter
    (instructions: ``meter["source_memo_hits"]``, the source's figures taken from the memo; ``meter["limits"]``:
    the valgrind run's ``cpu_seconds`` and ``memory_bytes``). Raises ``ToolchainMismatch``
    (:class:`~arbiter.timing.compare.FingerprintMismatch`) when the toolchains differ, ``ValueError`` for bad
    cases/options, ``ValgrindUnavailable`` without valgrind; a sandbox failure is reported in
    ``Comparison.failures`` with status ``sandbox_error`` (``Comparison.sandbox_error``), never as a figure.
    """
    from arbiter.timing.compare import compare
    from arbiter.timing.count_cache import CountCache

    if method == "wall":
        return compare(source, answer, cases, "wall", limits=limits, same_output=same_output,
                       largest_fraction=largest_fraction, repeats=repeats)
    if method != "instructions":
        raise ValueError(f"method must be 'instructions' or 'wall', got {method!r}")
    cache = CountCache.shared(cache_dir, subdir=COUNT_CACHE_SUBDIR) if use_cache else CountCache.disabled()
    cmp = compare(source, answer, cases, "instructions", limits=limits, same_output=same_output,
                  largest_fraction=largest_fraction, baseline_cache=cache)
    # the record this pipeline has always written: meter limits without the stack, hits named source_memo_hits
    hits = cmp.extra.pop("baseline_cache_hits")
    cmp.meter["limits"] = {k: v for k, v in cmp.meter["limits"].items() if k != "stack_bytes"}
    cmp.meter["source_memo_hits"] = hits
    return cmp
