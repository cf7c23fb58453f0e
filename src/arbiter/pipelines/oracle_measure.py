"""Measure an oracle answer against its seed's ``source_code``, measuring the source once per test.

Issue 5, step 5: "Measure the answer against ``source_code`` on the same tests: instruction counts with valgrind
(deterministic; the default) or wall time with interleaved repeats; record both programs' figures and the
speedup, with the toolchain fingerprint."

- ``method="wall"``: :func:`arbiter.timing.compare.compare` as is (source = ``a``, answer = ``b``): wall time must
  interleave the two programs' runs, so both are measured together every time.
- ``method="instructions"``: the same rules and the same :class:`~arbiter.timing.compare.Comparison` as
  ``compare``, but the source's counts are memoized. A count is a pure function of (executable, stdin, meter):
  :mod:`arbiter.timing.instructions` documents and tests that the same binary and input give the same count. The
  seed's source is the same executable for every answer to the task (same command, compile cache), so measuring it
  once per test instead of once per answer gives identical figures at a fraction of the cost (the demo's sources
  run 2e9-7e9 instructions per large test, ~2-6 s each under valgrind). Memo: in process, and on disk under
  ``<cache>/oracle_source_counts/`` (cache root ``$ARBITER_CACHE_DIR``, default ``~/.cache/arbiter``) keyed by
  sha256 of (executable, stdin, expected stdout, the valgrind meter fingerprint incl. CPU model and flags, the
  valgrind limits). Only successful counts are stored. The answer is always measured afresh.

Both paths: the toolchains must match (:func:`arbiter.languages.toolchain.assert_comparable`: raises
``ToolchainMismatch``), every measurement holds one core exclusively
(:func:`arbiter.timing.wallclock.core_lease`), a measured run must print the expected output (``same_output``),
and ``largest_speedup`` covers the costliest ``largest_fraction`` of the cases by the source's cost
(:func:`arbiter.timing.compare.largest_cases`).
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
import threading
from pathlib import Path
from typing import Any, Callable, Sequence

from arbiter.sandbox.limits import Limits

#: Bumped when the meaning of a stored count changes.
COUNT_CACHE_VERSION = 1
COUNT_CACHE_SUBDIR = "oracle_source_counts"

_memo: dict[str, int] = {}
_memo_lock = threading.Lock()
_flight: dict[str, threading.Lock] = {}


def _flight_lock(binary_sha: str) -> threading.Lock:
    """One lock per source executable: rows of the same task wait for the first one's source measurement
    instead of measuring the source concurrently (single flight)."""
    with _memo_lock:
        return _flight.setdefault(binary_sha, threading.Lock())


def _sha(b: bytes | None) -> str:
    return "" if b is None else hashlib.sha256(b).hexdigest()


def _count_key(binary_sha: str, stdin: bytes, expected: bytes | None, meter: dict[str, Any], vlim: Limits) -> str:
    raw = json.dumps([COUNT_CACHE_VERSION, binary_sha, _sha(stdin), _sha(expected), meter,
                      vlim.cpu_seconds, vlim.memory_bytes], sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(raw.encode()).hexdigest()


def _cache_dir(cache_dir: str | os.PathLike | None) -> Path:
    if cache_dir is not None:
        return Path(cache_dir)
    from arbiter.languages.compile_cache import cache_root

    return cache_root() / COUNT_CACHE_SUBDIR


def _load(root: Path, key: str) -> int | None:
    with _memo_lock:
        if key in _memo:
            return _memo[key]
    try:
        d = json.loads((root / f"{key}.json").read_text(encoding="utf-8"))
        n = d.get("instructions")
        if d.get("key") == key and isinstance(n, int) and n > 0:
            with _memo_lock:
                _memo[key] = n
            return n
    except (OSError, ValueError, AttributeError):
        pass
    return None


def _store(root: Path, key: str, n: int, case: str) -> None:
    with _memo_lock:
        _memo[key] = n
    try:
        root.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".tmp-", dir=root)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump({"key": key, "instructions": n, "case": case}, f)
        os.replace(tmp, root / f"{key}.json")
    except OSError:
        pass  # a cache that cannot be written only costs time


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
    - ``cache_dir`` / ``use_cache``: the on-disk memo of source counts (instructions only).

    Returns a :class:`~arbiter.timing.compare.Comparison`: per-case figures, ``a_total``/``b_total``,
    ``speedup = a_total / b_total``, ``largest_cases``/``largest_speedup``, the toolchain record and the meter.
    Raises ``ToolchainMismatch`` when the toolchains differ, ``ValueError`` for bad cases/options,
    ``ValgrindUnavailable`` without valgrind; a sandbox failure is reported in ``Comparison.failures`` with status
    ``sandbox_error`` (``Comparison.sandbox_error``), never as a figure.
    """
    from arbiter.timing.compare import compare

    if method == "wall":
        return compare(source, answer, cases, "wall", limits=limits, same_output=same_output,
                       largest_fraction=largest_fraction, repeats=repeats)
    if method != "instructions":
        raise ValueError(f"method must be 'instructions' or 'wall', got {method!r}")
    return _instructions(source, answer, cases, limits or Limits(), same_output, largest_fraction,
                         _cache_dir(cache_dir), use_cache)


def _instructions(src: Any, ans: Any, cases: Sequence[tuple[str, bytes, bytes | None]], native: Limits,
                  same_output: Callable[[bytes, bytes], bool] | None, fraction: float, root: Path,
                  use_cache: bool):
    from arbiter.languages.toolchain import assert_comparable
    from arbiter.timing.compare import CaseFigures, Comparison, largest_cases
    from arbiter.timing.instructions import find_valgrind, measure_instructions, valgrind_limits
    from arbiter.timing.wallclock import core_lease

    if not cases:
        raise ValueError("no cases to measure (zero tests is INVALID_TASK, never a measurement)")
    if len({c[0] for c in cases}) != len(cases):
        raise ValueError("case names must be unique")
    if not 0 < fraction <= 1:
        raise ValueError(f"largest_fraction must be in (0, 1], got {fraction}")
    assert_comparable(src.toolchain, ans.toolchain)
    vg = find_valgrind()
    vlim = valgrind_limits(native)
    meter_fp = vg.fingerprint()
    src_sha = _sha(src.binary)
    keys = [_count_key(src_sha, stdin, exp, meter_fp, vlim) for _, stdin, exp in cases]
    a: dict[str, int | None] = {}
    a_status: dict[str, str] = {}
    failures: list[dict[str, Any]] = []
    b: dict[str, int | None] = {}
    b_status: dict[str, str] = {}
    memo_hits = 0
    core = None
    with _flight_lock(src_sha):
        todo = []
        for (name, stdin, exp), key in zip(cases, keys):
            n = _load(root, key) if use_cache else None
            if n is not None:
                a[name], a_status[name] = n, "ok"
            else:
                todo.append((name, stdin, exp, key))
        memo_hits = len(cases) - len(todo)
        if todo:
            with core_lease() as core:
                run = measure_instructions(src.binary, [(n, s, e) for n, s, e, _ in todo], limits=native,
                                           same_output=same_output, stop_on_failure=True, valgrind=vg)
            for c, (name, _, _, key) in zip(run.counts, todo):
                a_status[name] = c.status.value
                a[name] = c.instructions if c.ok else None
                if c.ok and use_cache:
                    _store(root, key, int(c.instructions), name)
                elif not c.ok:
                    failures.append({"program": "a", "case": name, "status": c.status.value, "detail": c.detail})
    if not failures:
        with core_lease() as core:
            run = measure_instructions(ans.binary, list(cases), limits=native, same_output=same_output,
                                       stop_on_failure=True, valgrind=vg)
        for c in run.counts:
            b_status[c.case] = c.status.value
            b[c.case] = c.instructions if c.ok else None
            if not c.ok:
                failures.append({"program": "b", "case": c.case, "status": c.status.value, "detail": c.detail})
    figures = [CaseFigures(case=name, a=a.get(name), b=b.get(name), a_status=a_status.get(name, "not_run"),
                           b_status=b_status.get(name, "not_run")) for name, _, _ in cases]
    sa = sb = speedup = None
    big: list[str] = []
    big_speedup = None
    if all(f.a is not None for f in figures):
        big = largest_cases([(f.case, f.a) for f in figures], fraction)  # type: ignore[misc]
    if not failures and all(f.a is not None and f.b is not None for f in figures):
        sa, sb = sum(f.a for f in figures), sum(f.b for f in figures)  # type: ignore[misc]
        speedup = sa / sb if sb > 0 else None
        ba = sum(f.a for f in figures if f.case in big)  # type: ignore[misc]
        bb = sum(f.b for f in figures if f.case in big)  # type: ignore[misc]
        big_speedup = ba / bb if bb > 0 else None
    tc = src.toolchain.to_dict() if hasattr(src.toolchain, "to_dict") else src.toolchain
    meter = dict(meter_fp, core=core, limits={"cpu_seconds": vlim.cpu_seconds, "memory_bytes": vlim.memory_bytes},
                 source_memo_hits=memo_hits)
    fp = src.toolchain.fingerprint if hasattr(src.toolchain, "fingerprint") else str(src.toolchain)
    return Comparison(method="instructions", unit="instructions", a_name=getattr(src, "name", "") or "a",
                      b_name=getattr(ans, "name", "") or "b", fingerprint=fp, toolchain=tc, meter=meter,
                      cases=figures, a_total=sa, b_total=sb, speedup=speedup, largest_fraction=fraction,
                      largest_cases=big, largest_speedup=big_speedup, failures=failures, order=[], clock=None,
                      extra={})
