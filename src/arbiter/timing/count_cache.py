"""A memo of a baseline program's instruction counts, so a program measured once per test case is not re-measured
for every candidate compared with it.

An instruction count is a pure function of what :func:`count_key` hashes: the executable, its stdin and expected
output, the output check's identity, the toolchain fingerprint, the meter's fingerprint and the run's limits.
:class:`CountCache` keeps counts in memory and optionally on disk (one JSON file per key, written atomically; an
unreadable file is a miss), remembers failures on request, and gives one single-flight lock per executable.
Used by :func:`arbiter.timing.measure.compare` (``baseline_cache=``). Details: ``docs/measurement.md``, "The
baseline cache".
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import os
import tempfile
import threading
from pathlib import Path
from typing import Any, Mapping

from arbiter.sandbox.limits import Limits

__all__ = ["COUNT_KEY_VERSION", "DEFAULT_SUBDIR", "CountCache", "count_key", "sha256_hex"]

#: Bumped when the meaning of a stored count changes (every older entry becomes a miss).
COUNT_KEY_VERSION = 1
#: The directory under the cache root used by :meth:`CountCache.shared` when none is named.
DEFAULT_SUBDIR = "instruction_counts"


def sha256_hex(data: bytes | str | None) -> str:
    """Hex sha256 of ``data`` (str as UTF-8); ``""`` for ``None``."""
    if data is None:
        return ""
    if isinstance(data, str):
        data = data.encode("utf-8", "surrogatepass")  # any str
    return hashlib.sha256(data).hexdigest()


def count_key(executable_sha: str, stdin: bytes, expected: bytes | None, *, toolchain: str,
              meter: Mapping[str, Any], limits: Limits, output_check: str = "") -> str:
    """The cache key (64 hex chars) of one measured run.

    - ``executable_sha``: :func:`sha256_hex` of the executable's bytes.
    - ``stdin`` / ``expected``: the case input and the expected stdout (``None``: output not checked), hashed.
    - ``toolchain``: the toolchain fingerprint (the executable's shared libraries, libc and link mode are not in
      its bytes: :func:`arbiter.timing.comparison.fingerprint_of`).
    - ``meter``: :meth:`Valgrind.fingerprint <arbiter.timing.instructions.Valgrind.fingerprint>` (canonical JSON).
    - ``limits``: the limits of the valgrind run itself (:func:`~arbiter.timing.instructions.valgrind_limits` of
      the native limits), every field: a limit decides whether a run counts.
    - ``output_check``: the identity of the output comparison (e.g. the checker's name and options, other accepted
      answers); ``""`` for the caller's one fixed check.

    Raises TypeError for values that are not JSON-serializable in ``meter``."""
    raw = json.dumps(["instruction-count", COUNT_KEY_VERSION, executable_sha, toolchain, sha256_hex(stdin),
                      sha256_hex(expected), output_check, dict(meter), dataclasses.asdict(limits)],
                     sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(raw.encode()).hexdigest()


class CountCache:
    """Baseline figures (instructions or model cycles) by :func:`count_key`, in memory and optionally on disk
    (``docs/measurement.md``, "The baseline cache").

    - ``directory``: where entries are stored (created on first write); ``None``: memory only.
    - ``remember_failures``: also remember failed runs, in memory (:meth:`put_failure`); off: only successful
      counts are ever reused.
    - ``enabled``: ``False`` makes a cache that never returns nor keeps anything (every lookup a miss) but still
      gives single flight; what "no cache" means to :func:`arbiter.timing.measure.compare`.

    Thread-safe.
    """

    _shared: dict[tuple[type, str, tuple[tuple[str, Any], ...]], "CountCache"] = {}
    _shared_lock = threading.Lock()

    def __init__(self, directory: str | os.PathLike | None = None, *, remember_failures: bool = False,
                 enabled: bool = True):
        self.directory = Path(directory) if directory is not None else None
        self.remember_failures = remember_failures
        self.enabled = enabled
        self._mem: dict[str, int] = {}
        self._failed: dict[str, tuple[str, str]] = {}
        self._lock = threading.Lock()
        self._flights: dict[str, threading.Lock] = {}

    @classmethod
    def shared(cls, directory: str | os.PathLike | None = None, *, subdir: str = DEFAULT_SUBDIR,
               **options: Any) -> "CountCache":
        """The process-wide instance for ``directory`` (default ``<cache root>/<subdir>``) and ``options`` (the
        constructor's keywords), so every caller in the process shares its memory and its single-flight locks."""
        if directory is None:
            from arbiter.languages.compile_cache import cache_root

            directory = cache_root() / subdir
        path = Path(directory).expanduser().absolute()
        key = (cls, str(path), tuple(sorted(options.items())))
        with cls._shared_lock:
            if key not in cls._shared:
                cls._shared[key] = cls(path, **options)
            return cls._shared[key]

    @classmethod
    def disabled(cls) -> "CountCache":
        """A cache that keeps nothing (``enabled=False``)."""
        return cls(enabled=False)

    def flight(self, executable_sha: str) -> threading.Lock:
        """The lock of one executable (single flight): hold it from the lookup to the store."""
        with self._lock:
            return self._flights.setdefault(executable_sha, threading.Lock())

    def get(self, key: str) -> int | None:
        """The stored count (instructions, an int > 0) for ``key``, from memory, then disk; ``None`` on a miss
        (including an unreadable or corrupt file)."""
        if not self.enabled:
            return None
        with self._lock:
            if key in self._mem:
                return self._mem[key]
        if self.directory is None:
            return None
        try:
            d = json.loads((self.directory / f"{key}.json").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        n = d.get("instructions") if isinstance(d, dict) else None
        if not (isinstance(d, dict) and d.get("key") == key and isinstance(n, int) and not isinstance(n, bool)
                and n > 0):
            return None
        with self._lock:
            self._mem[key] = n
        return n

    def put(self, key: str, instructions: int, case: str = "") -> None:
        """Store a successful count (memory, then disk when configured; a disk error only costs time). ``case``
        is recorded in the file for people reading the cache. Raises ValueError unless ``instructions`` is an int
        > 0."""
        if isinstance(instructions, bool) or not isinstance(instructions, int) or instructions <= 0:
            raise ValueError(f"instructions must be a positive int, got {instructions!r}")
        if not self.enabled:
            return
        with self._lock:
            self._mem[key] = instructions
        if self.directory is None:
            return
        tmp = None
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(prefix=".tmp-", dir=self.directory)
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                json.dump({"key": key, "instructions": instructions, "case": case}, f)
            os.replace(tmp, self.directory / f"{key}.json")
            tmp = None
        except OSError:
            pass
        finally:
            if tmp is not None:
                with contextlib.suppress(OSError):
                    os.unlink(tmp)

    def failure(self, key: str) -> tuple[str, str] | None:
        """``(status, detail)`` of a remembered failed run, or ``None``."""
        with self._lock:
            return self._failed.get(key)

    def put_failure(self, key: str, status: str, detail: str) -> None:
        """Remember a failed run (memory only); ignored unless ``remember_failures``."""
        if self.enabled and self.remember_failures:
            with self._lock:
                self._failed[key] = (status, detail)

    def __len__(self) -> int:
        """How many successful counts are held in memory."""
        with self._lock:
            return len(self._mem)
